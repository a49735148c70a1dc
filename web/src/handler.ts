// Worker-side request handling, kept free of the worker global and of the wasm
// import so it can be unit-tested with any SpyreModule.

import type {
  CompileCacheReport,
  Diagnostic,
  KtirInputs,
  NamedBytes,
  RunOptions,
  RunProgress,
  SpyreModule,
  SpyreSession,
  TensorView,
  WasmRun,
} from "./api";
import { digestRun } from "./digest";
import { EventTable, isColumns, toColumns } from "./events";
import { type CompileCache, passesKey } from "./compileCache";
import { defaultCollapsed } from "./graph/groups";
import { layoutGraph, tensorTypes } from "./graph/layout";
import { splitKtirBuffers } from "./ktirBuffers";
import {
  errorLocation,
  errorMessage,
  parsePassTexts,
  parseProgress,
  parseRequest,
  sendKernels,
  sendPass,
  type PassTexts,
  type ProgressMessage,
  type RunData,
  type RunIo,
  type SourceRef,
  type WireRunResult,
  type WorkerResponse,
} from "./protocol";

/** Deep-converts what wasm-bindgen hands over (Maps, BigInts) into plain JSON-like data. */
export function toPlain(value: unknown): unknown {
  if (typeof value === "bigint") return Number(value);
  // Typed arrays (the events' columns) are plain data already.
  if (ArrayBuffer.isView(value)) return value;
  if (value instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of value) out[String(k)] = toPlain(v);
    return out;
  }
  if (Array.isArray(value)) return value.map(toPlain);
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = toPlain(v);
    return out;
  }
  return value;
}

function need(cond: unknown, what: string): asserts cond {
  if (!cond) throw new Error(`unexpected result from the wasm module: ${what}`);
}

/**
 * The session's run, typed by the generated declarations. Only the outline is checked: the
 * shape comes from the Rust types, and a drift between the two fails the driver's tests.
 */
export function checkRun(raw: unknown): WasmRun {
  const r = toPlain(raw) as WasmRun | null;
  need(r && typeof r === "object", "not an object");
  need(r.graph && typeof r.graph === "object", "graph is missing");
  need(Array.isArray(r.passes), "passes is not a list");
  need(typeof r.ktir === "string", "ktir is not text");
  need(r.run && typeof r.run === "object", "run is missing");
  need(r.run.machine && Array.isArray(r.run.machine.stops), "run.machine.stops is missing");
  need(
    Array.isArray(r.run.events) || isColumns(r.run.events),
    "run.events is neither a list nor columns",
  );
  need(r.run.summary && typeof r.run.summary === "object", "run.summary is missing");
  return r;
}

export function normalizeDiagnostics(raw: unknown): Diagnostic[] {
  const list = toPlain(raw);
  if (!Array.isArray(list)) return [];
  return (list as Partial<Diagnostic>[]).map((d) => ({
    severity: d.severity === "warning" ? "warning" : "error",
    message: String(d.message ?? ""),
    line: Math.max(1, Number(d.line ?? 1)),
    column: Math.max(1, Number(d.column ?? 1)),
    start: Number(d.start ?? 0),
    end: Number(d.end ?? 0),
  }));
}

/** A trap inside wasm (a Rust panic) leaves the module unusable: say so plainly. */
export function describeFailure(err: unknown): string {
  const message = errorMessage(err);
  return isTrap(err)
    ? `the wasm module crashed (${message}); this is a bug, please report it. Reload the page to continue.`
    : message;
}

/** Runs an opened session with the user's data (the wasm call that fits its kind). */
function runWithData(
  session: SpyreSession,
  options: RunOptions,
  data: RunData,
  progress: (p: RunProgress) => void,
): unknown {
  const names = (list: NamedBytes[]): string[] => list.map((f) => f.name);
  const files = (list: NamedBytes[]): Uint8Array[] => list.map((f) => f.bytes);
  if (session.kind === "ktir") {
    if (data.expected.length > 0) throw new Error("expected outputs apply to model graphs");
    return session.runWithInputs(options, names(data.inputs), files(data.inputs), progress);
  }
  return session.runGraphWithInputs(
    options,
    names(data.inputs),
    files(data.inputs),
    names(data.expected),
    files(data.expected),
    progress,
  );
}

/** What a run of the session's source takes; null when it cannot be listed. */
export function listIo(
  session: SpyreSession,
  kind: "ktir" | "graph",
  options: RunOptions,
): RunIo | null {
  try {
    if (kind === "ktir") {
      const inputs = toPlain(session.ktirInputs(options)) as KtirInputs | null;
      if (!inputs || !Array.isArray(inputs.buffers)) return null;
      return { kind: "ktir", inputs };
    }
    const io = toPlain(session.graphIo()) as { inputs?: unknown; outputs?: unknown } | null;
    if (!io || !Array.isArray(io.inputs) || !Array.isArray(io.outputs)) return null;
    return {
      kind: "graph",
      inputs: io.inputs as TensorView[],
      outputs: io.outputs as TensorView[],
    };
  } catch {
    return null;
  }
}

/** A run that failed after its source opened: the session can still list what a run takes. */
class OpenedButFailed {
  constructor(
    readonly cause: unknown,
    readonly session: SpyreSession,
  ) {}
}

/** The kind `listIo` lists by, from a session's kind ("onnx" models list as graphs). */
function ioKind(session: SpyreSession): "ktir" | "graph" {
  return session.kind === "ktir" ? "ktir" : "graph";
}

function isTrap(err: unknown): boolean {
  return (
    typeof WebAssembly !== "undefined" &&
    typeof WebAssembly.RuntimeError === "function" &&
    err instanceof WebAssembly.RuntimeError
  );
}

/** What a run's compile cache did, with a note when the store failed. */
type CacheUse = CompileCacheReport & { note?: string };

/** The report the wasm session gives of its last compile; null when it gives none. */
function readCacheReport(session: SpyreSession): CompileCacheReport | null {
  const r = toPlain(session.compileCache?.()) as Partial<CompileCacheReport> | null;
  if (!r || typeof r !== "object" || typeof r.outcome !== "string") return null;
  const outcomes = ["hit", "miss", "rebuilt", "bypassed", "off"];
  if (!outcomes.includes(r.outcome)) return null;
  return {
    outcome: r.outcome,
    compileMs: Number(r.compileMs ?? 0),
    ...(typeof r.reason === "string" ? { reason: r.reason } : {}),
  };
}

/**
 * Arms the session's compile cache with what the store holds under the compile's key; the
 * key, or null when the source is not cached. A failing store gives a note and a run
 * without the cache.
 */
async function armCache(
  session: SpyreSession,
  options: RunOptions,
  cache: CompileCache,
  notes: string[],
): Promise<string | null> {
  if (!session.compileKey || !session.useArtifacts) return null;
  let key: string | undefined;
  try {
    key = session.compileKey(options);
  } catch {
    // The run reports bad options itself.
    return null;
  }
  if (!key) return null;
  let stored: Uint8Array | null;
  let storedPasses: Uint8Array | null;
  try {
    stored = await cache.get(key);
    // The snapshot texts are read when a view shows them (`passTexts`), but for a
    // tensor-parallel run, whose pass is built on the canonical state's text.
    storedPasses = stored && options.tp !== undefined ? await cache.get(passesKey(key)) : null;
  } catch (err) {
    notes.push(`compile cache unavailable (${errorMessage(err)}): compiled without it`);
    return null;
  }
  session.useArtifacts(stored ?? undefined, storedPasses ?? undefined);
  return key;
}

/**
 * The last run's pass texts: from the store under `passesKey(key)` when the run went through
 * it (`key`: its compile key). Whether the run left its texts there is the session's to know
 * (the run's `passesApart`): a run that has them gives them and leaves the stored entry
 * unread. The page asks only for a run whose passes came without texts. A store that fails to
 * read leaves the session to compile the texts again; one that fails to write gives a note.
 */
export async function fillPassTexts(
  session: SpyreSession,
  key: string | null,
  cache: CompileCache | null,
): Promise<PassTexts> {
  if (!session.fillPasses) throw new Error("this wasm module keeps no pass texts apart");
  const notes: string[] = [];
  let stored: Uint8Array | null = null;
  if (key !== null && cache) {
    try {
      stored = await cache.get(passesKey(key));
    } catch (err) {
      notes.push(`compile cache unavailable (${errorMessage(err)}): pass texts compiled again`);
    }
  }
  const raw = toPlain(session.fillPasses(stored ?? undefined)) as {
    outcome?: unknown;
    reason?: unknown;
  } | null;
  const texts = parsePassTexts(raw);
  if (!texts) throw new Error("unexpected result from the wasm module: no pass texts");
  if (raw?.outcome === "rebuilt" && typeof raw.reason === "string")
    notes.push(`the stored pass texts were ${raw.reason}: compiled again`);
  const made = session.takePassesArtifact?.();
  if (made && key !== null && cache) {
    try {
      await cache.put(passesKey(key), made);
    } catch (err) {
      notes.push(`compile cache not written (${errorMessage(err)})`);
    }
  }
  return notes.length > 0 ? { ...texts, note: notes.join("; ") } : texts;
}

/**
 * Stores the artifact the run's compile made under `key`, and its snapshots apart; a failing
 * store gives a note.
 */
async function storeArtifact(
  session: SpyreSession,
  key: string,
  cache: CompileCache,
  notes: string[],
): Promise<void> {
  const made = session.takeArtifact?.();
  const passes = session.takePassesArtifact?.();
  try {
    if (made) await cache.put(key, made);
    if (passes) await cache.put(passesKey(key), passes);
  } catch (err) {
    notes.push(`compile cache not written (${errorMessage(err)})`);
  }
}

/**
 * A `passTexts` answer whose texts together are no longer than this (characters) gives every
 * text of the run, so the next pass shown needs no second trip; a longer one (a full model's
 * snapshots run to some 100 MB, the SDSC bundle alone 73 MB) gives only those asked for.
 */
export const KEEP_TEXTS_ABOVE = 4_000_000;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: false });

/**
 * Answers one request; `post`, when given, receives the progress of a run (or of the run a
 * trace export needs) before the answer.
 */
export type Handler = (
  data: unknown,
  post?: (message: ProgressMessage) => void,
) => Promise<WorkerResponse>;

/**
 * Builds the request handler; `load` is called once, on the first request. `openCache`,
 * when given, opens the compile cache for the loaded module (null: none).
 */
export function createHandler(
  load: () => Promise<SpyreModule>,
  openCache?: (m: SpyreModule) => CompileCache | null,
): Handler {
  let cache: CompileCache | null | undefined;
  const cacheFor = (m: SpyreModule): CompileCache | null => {
    if (cache === undefined) cache = openCache ? openCache(m) : null;
    return cache;
  };
  let module: Promise<SpyreModule> | null = null;
  const getModule = (): Promise<SpyreModule> => {
    if (!module) {
      module = load().catch((err: unknown) => {
        module = null;
        throw new Error(`could not load the wasm module: ${errorMessage(err)}`);
      });
    }
    return module;
  };

  // The last opened session, kept so a trace of what just ran reads its stored schedule
  // and its pass texts can be read when a view shows them (`cacheKey`: the compile key
  // they are stored under).
  let last: {
    key: string;
    bytes: Uint8Array;
    session: SpyreSession;
    cacheKey: string | null;
  } | null = null;
  const runSession = async (
    m: SpyreModule,
    bytes: Uint8Array,
    fileName: string,
    options: RunOptions,
    progress: (p: RunProgress) => void,
    extra: readonly NamedBytes[] = [],
    data?: RunData,
    aside = false,
    store: CompileCache | null = null,
  ): Promise<{ session: SpyreSession; raw: unknown; cacheUse: CacheUse | null }> => {
    const session = m.open(bytes, fileName, extra);
    const notes: string[] = [];
    try {
      // The read from the store counts in the compile's time: it is what a warm start waits.
      const reading = performance.now();
      const key = store ? await armCache(session, options, store, notes) : null;
      const readMs = performance.now() - reading;
      // The run on screen leaves its pass texts in the session until a view asks for them
      // (`passTexts`): most runs are never read pass by pass, and copying the texts out was
      // a tenth of handing the result over. A run aside (compare mode) carries its own.
      const given: RunOptions = aside ? options : { ...options, textsApart: true };
      const raw = data ? runWithData(session, given, data, progress) : session.run(given, progress);
      if (!aside)
        last = {
          key: JSON.stringify([fileName, options]),
          bytes,
          session,
          cacheKey: key,
        };
      if (key !== null && store) await storeArtifact(session, key, store, notes);
      const report = store ? readCacheReport(session) : null;
      const cacheUse: CacheUse | null = report
        ? {
            ...report,
            compileMs: report.compileMs + (key !== null ? readMs : 0),
            ...(notes.length > 0 ? { note: notes.join("; ") } : {}),
          }
        : null;
      return { session, raw, cacheUse };
    } catch (err) {
      throw new OpenedButFailed(err, session);
    }
  };
  const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
    a === b || (a.length === b.length && a.every((x, i) => x === b[i]));

  const resolveTarget = (
    m: SpyreModule,
    target: SourceRef,
  ): { bytes: Uint8Array; fileName: string; source: string; extra?: NamedBytes[] } => {
    if (target.kind === "example") {
      const source = m.exampleSource(target.name);
      // The kind comes from the content; the name labels the run.
      const fileName = /\.(mlir|json|onnx)$/i.test(target.name)
        ? target.name
        : `${target.name}.json`;
      return { bytes: encoder.encode(source), fileName, source };
    }
    const binary = /\.onnx$/i.test(target.fileName);
    return {
      bytes: target.bytes,
      fileName: target.fileName,
      source: binary ? "" : decoder.decode(target.bytes),
      ...(target.extra ? { extra: target.extra } : {}),
    };
  };

  return async (data, post): Promise<WorkerResponse> => {
    const req = parseRequest(data);
    if (!req) {
      const id =
        data && typeof data === "object" && typeof (data as { id?: unknown }).id === "number"
          ? (data as { id: number }).id
          : -1;
      return { id, ok: false, error: { message: "malformed request to the worker" } };
    }
    const progress = (raw: unknown): void => {
      // The wasm side hands over a plain object or a Map; only well-formed reports go out.
      const msg = parseProgress({ id: req.id, progress: toPlain(raw) });
      if (msg && post) post(msg);
    };
    try {
      const m = await getModule();
      switch (req.method) {
        case "init":
          return {
            id: req.id,
            ok: true,
            result: {
              version: m.version(),
              examples: toPlain(m.listExamples()),
              machines: toPlain(m.machinePresets()),
            },
          };
        case "run": {
          const { bytes, fileName, source, extra } = resolveTarget(m, req.params.target);
          const { session, raw, cacheUse } = await runSession(
            m,
            bytes,
            fileName,
            req.params.options,
            progress,
            extra,
            req.params.data,
            req.params.aside === true,
            cacheFor(m),
          );
          const result = checkRun(raw);
          const kind: WireRunResult["kind"] = result.kind === "ktir" ? "ktir" : "graph";
          // A module's buffers all come back as outputs; those it only loads are inputs.
          if (kind === "ktir") result.graph = splitKtirBuffers(result.graph, result.ktir);
          const canon = result.passes.find((p) => p.name === "canonicalize")?.data ?? null;
          const layout = layoutGraph(
            result.graph,
            tensorTypes(result.graph, canon),
            defaultCollapsed(result.graph),
          );
          const io = listIo(session, kind, req.params.options);
          // The events go as columns: a full model's 200,000 event objects would take the
          // page seconds to rebuild.
          // The passes' data goes as text and the kernels' events packed, read on the page when
          // a view first reads them.
          const wire = {
            ...result,
            passes: result.passes.map(sendPass),
            sourceMap: sendKernels(result.sourceMap),
            run: {
              ...result.run,
              events: isColumns(result.run.events)
                ? result.run.events
                : toColumns(result.run.events),
            },
          };
          // What the timeline, the ring and the Cores view need is made here, beside the run,
          // not on the page's thread when their tab is first shown.
          const digest = digestRun({
            ...result,
            run: { ...wire.run, events: new EventTable(wire.run.events) },
          });
          const res: WireRunResult = { kind, fileName, source, result: wire, layout, io, digest };
          if (cacheUse) res.compileCache = cacheUse;
          return { id: req.id, ok: true, result: res };
        }
        case "outputNpy": {
          if (!last) throw new Error("nothing has run yet");
          const s = last.session;
          const name = req.params.name;
          const bytes = s.kind === "ktir" ? s.bufferNpy(name) : s.outputNpy(name);
          return { id: req.id, ok: true, result: { bytes } };
        }
        case "clearCache": {
          const c = cacheFor(m);
          if (!c) return { id: req.id, ok: true, result: { note: "no compile cache" } };
          try {
            await c.clear();
            return { id: req.id, ok: true, result: { note: null } };
          } catch (err) {
            return {
              id: req.id,
              ok: true,
              result: { note: `the compile cache could not be cleared (${errorMessage(err)})` },
            };
          }
        }
        case "passTexts": {
          if (!last) throw new Error("nothing has run yet");
          const names = req.params.names;
          const wanted = (name: string): boolean => names === undefined || names.includes(name);
          const all = await fillPassTexts(last.session, last.cacheKey, cacheFor(m));
          // Small texts go together (as with a run), so the next pass shown needs no trip.
          const size = all.texts.reduce((n, t) => n + t.text.length, 0);
          if (size <= KEEP_TEXTS_ABOVE) return { id: req.id, ok: true, result: all };
          const texts = { ...all, texts: all.texts.filter((t) => wanted(t.name)) };
          return { id: req.id, ok: true, result: texts };
        }
        case "verifyKtir":
          return {
            id: req.id,
            ok: true,
            result: normalizeDiagnostics(m.verifyKtir(req.params.text)),
          };
        case "trace": {
          const { bytes, fileName } = resolveTarget(m, req.params.target);
          const options = req.params.options;
          const key = JSON.stringify([fileName, options]);
          const session =
            last && last.key === key && sameBytes(last.bytes, bytes)
              ? last.session
              : (await runSession(m, bytes, fileName, options, progress)).session;
          return { id: req.id, ok: true, result: { json: session.traceJson() } };
        }
      }
    } catch (thrown) {
      const err = thrown instanceof OpenedButFailed ? thrown.cause : thrown;
      // A source that opened but did not run (a KTIR module missing scalar values) still
      // says what a run takes, so the page can ask for it. A trapped module is not asked.
      const io =
        thrown instanceof OpenedButFailed && req.method === "run" && !isTrap(err)
          ? listIo(thrown.session, ioKind(thrown.session), req.params.options)
          : null;
      return {
        id: req.id,
        ok: false,
        error: { message: describeFailure(err), ...errorLocation(err), ...(io ? { io } : {}) },
      };
    }
  };
}
