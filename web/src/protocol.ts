// Typed messages between the page and the worker that owns the wasm module.
// Every request carries an id; the worker answers each request exactly once with
// either a result or an error (errors are values, never a silent failure).

import type {
  CompileCacheReport,
  Diagnostic,
  ExampleInfo,
  KernelLink,
  KtirInputs,
  NamedBytes,
  OpSdscLines,
  PackedLists,
  PassSnapshot,
  PassText,
  PipelineResult,
  RunOptions,
  RunProgress,
  SourceMap,
  TensorView,
  WirePassView,
  WirePipelineResult,
  WireSourceMap,
} from "./api";
import { digestBuffers, digestRun, isDigest, type RunDigest } from "./digest";
import { columnBuffers, EventTable, isColumns } from "./events";
import type { GraphLayout } from "./graph/layout";

export interface InitResult {
  version: string;
  examples: ExampleInfo[];
  machines: string[];
}

/**
 * What to run: a gallery example, or a file's bytes (.json / .onnx graph, .mlir KTIR), with
 * the files opened with it (`extra`: an ONNX model's external data).
 */
export type SourceRef =
  | { kind: "example"; name: string }
  | { kind: "file"; bytes: Uint8Array; fileName: string; extra?: NamedBytes[] };

/** The user's data for a run: tensors by input name, expected outputs (graphs), scalars (KTIR). */
export interface RunData {
  /** `.npy` (or ONNX `.pb`, graphs) contents, named by the input they fill. */
  inputs: NamedBytes[];
  /** Graphs: values the outputs are compared with, named by output. */
  expected: NamedBytes[];
}

/** What a run of the source takes (and, for graphs, gives). */
export type RunIo =
  | { kind: "ktir"; inputs: KtirInputs }
  | { kind: "graph"; inputs: TensorView[]; outputs: TensorView[] };

/** A loaded and simulated source. */
export interface RunResult {
  /** "graph": a model graph through every pass; "ktir": a standalone KTIR module. */
  kind: "graph" | "ktir";
  fileName: string;
  /** The source text (an example's text, or a file decoded as UTF-8; "" for binary). */
  source: string;
  result: PipelineResult;
  /** The graph drawn in the worker (node boxes and edges). */
  layout: GraphLayout;
  /** The timeline's lanes, the ring's indexes and the kernels' spans, made in the worker. */
  digest: RunDigest;
  /** What a run takes, for the Run inputs panel (null when it could not be listed). */
  io: RunIo | null;
  /**
   * Model graphs: what the compile cache did; `note` says why the cache was not used or
   * not written (IndexedDB failing), the run having gone on without it.
   */
  compileCache?: CompileCacheReport & { note?: string };
}

/**
 * A run as the worker sends it: its events as columns and its digest, moved by transfer (a
 * run without a digest has it made on the page).
 */
export type WireRunResult = Omit<RunResult, "result" | "digest"> & {
  result: WirePipelineResult;
  digest?: RunDigest;
};

/**
 * The buffers of a worker answer to transfer rather than copy (a run's event columns and its
 * digest's arrays).
 */
export function transferables(response: WorkerResponse): ArrayBuffer[] {
  if (!response.ok || !response.result || typeof response.result !== "object") return [];
  const res = response.result as {
    result?: { run?: { events?: unknown }; sourceMap?: Partial<WireSourceMap> };
    digest?: unknown;
  };
  const events = res.result?.run?.events;
  if (!isColumns(events)) return [];
  const digest = isDigest(res.digest, events.count) ? digestBuffers(res.digest) : [];
  const map = res.result?.sourceMap;
  const packed = map?.kernelEvents;
  const kernels =
    Array.isArray(map?.kernels) && isPacked(packed, map.kernels.length)
      ? [packed.starts.buffer as ArrayBuffer, packed.items.buffer as ArrayBuffer]
      : [];
  return [...columnBuffers(events), ...digest, ...kernels];
}

/**
 * The page's run from the worker's: its event columns wrapped for reading by index, and its
 * digest as sent (made here when it is missing or does not fit the events).
 */
export function hydrateRun(wire: WireRunResult): RunResult {
  const events = isColumns(wire.result.run.events)
    ? new EventTable(wire.result.run.events)
    : EventTable.from([]);
  const passes = wire.result.passes.map(readPass);
  const sourceMap = readKernels(wire.result.sourceMap);
  const result = { ...wire.result, passes, sourceMap, run: { ...wire.result.run, events } };
  const digest = isDigest(wire.digest, events.length) ? wire.digest : digestRun(result);
  return { ...wire, result, digest };
}

/** A source map for the wire: its kernels' events packed (`readKernels` unpacks them). */
export function sendKernels(map: SourceMap): WireSourceMap {
  const starts = new Uint32Array(map.kernels.length + 1);
  map.kernels.forEach((k, i) => (starts[i + 1] = (starts[i] as number) + k.events.length));
  const items = new Int32Array(starts[map.kernels.length] as number);
  map.kernels.forEach((k, i) => items.set(k.events, starts[i]));
  return {
    ...map,
    kernels: map.kernels.map(({ events: _, ...k }) => k),
    kernelEvents: { starts, items },
  };
}

/** Whether `p` packs `count` lists (offsets in order, within its items). */
function isPacked(p: unknown, count: number): p is PackedLists {
  if (!p || typeof p !== "object") return false;
  const { starts, items } = p as Partial<PackedLists>;
  if (!(starts instanceof Uint32Array) || !(items instanceof Int32Array)) return false;
  if (starts.length !== count + 1 || starts[0] !== 0 || starts[count] !== items.length)
    return false;
  for (let i = 0; i < count; i++)
    if ((starts[i] as number) > (starts[i + 1] as number)) return false;
  return true;
}

/**
 * The page's source map from the wire's: each kernel's events read from the packed lists the
 * first time they are read (an own property, as a list). A kernel that came without a list
 * and without packed lists that fit has none.
 */
export function readKernels(map: WireSourceMap): SourceMap {
  const { kernelEvents: packed, ...rest } = map;
  const fits = isPacked(packed, map.kernels.length);
  const kernels = map.kernels.map((k, i): KernelLink => {
    if ("events" in k) return k;
    if (!fits) return { ...k, events: [] };
    let list: number[] | null = null;
    return Object.defineProperty({ ...k }, "events", {
      enumerable: true,
      get: (): number[] =>
        (list ??= Array.from(packed.items.subarray(packed.starts[i], packed.starts[i + 1]))),
    }) as KernelLink;
  });
  return { ...rest, kernels };
}

/** A pass's data as JSON text, for the wire (`readPass` reads it back). */
export function sendPass({ data, ...pass }: PassSnapshot): WirePassView {
  return { ...pass, dataJson: JSON.stringify(data ?? null) };
}

/**
 * The page's pass from the wire's: its data parsed from the text the first time it is read
 * (an own property, so a copy of the pass reads it too). Text that does not parse reads as
 * no data.
 */
export function readPass(p: PassSnapshot | WirePassView): PassSnapshot {
  if (!("dataJson" in p)) return p;
  const { dataJson, ...rest } = p;
  let parsed: { value: unknown } | null = null;
  return Object.defineProperty(rest, "data", {
    enumerable: true,
    get: (): unknown => {
      if (!parsed) {
        try {
          parsed = { value: JSON.parse(dataJson) as unknown };
        } catch {
          parsed = { value: null };
        }
      }
      return parsed.value;
    },
  }) as PassSnapshot;
}

/** Method name -> parameters and result. Add a method here and the types follow. */
export interface Methods {
  init: { params: Record<string, never>; result: InitResult };
  /**
   * Runs a source. `aside`: a second run for a comparison, which leaves the run kept for
   * trace export and output downloads (the one on screen) in place.
   */
  run: {
    params: { target: SourceRef; options: RunOptions; data?: RunData; aside?: true };
    result: WireRunResult;
  };
  /** An output (graph) or buffer (KTIR) of the last run as `.npy` bytes. */
  outputNpy: { params: { name: string }; result: { bytes: Uint8Array } };
  verifyKtir: { params: { text: string }; result: Diagnostic[] };
  trace: { params: { target: SourceRef; options: RunOptions }; result: { json: string } };
  /** Empties the compile cache; `note` says why it could not be (no IndexedDB). */
  clearCache: { params: Record<string, never>; result: { note: string | null } };
  /**
   * The pass snapshot texts (and each device op's SDSC lines) of the run on screen: a run
   * from the compile cache brings its passes without them (`passesApart`), read from the
   * store only when a view shows one; a big run's texts wait in the worker likewise.
   * `names`: the passes whose texts are wanted (absent: all); a run's small texts come all
   * together whatever is named. A full model's SDSC text alone is 73 MB, which a view
   * showing another pass should not wait for.
   */
  passTexts: { params: { names?: string[] }; result: PassTexts };
}

/**
 * What `passTexts` answers: the texts by pass, each device op's SDSC lines, and a `note`
 * when the stored texts could not be used (compiled again) or not stored.
 */
export interface PassTexts {
  texts: PassText[];
  sdscLines: OpSdscLines[];
  note?: string;
}

export type Method = keyof Methods;
export type Params<M extends Method> = Methods[M]["params"];
export type Result<M extends Method> = Methods[M]["result"];

export type WorkerRequest = {
  [M in Method]: { id: number; method: M; params: Params<M> };
}[Method];

/** A failure: its message and, for the driver's errors, where it happened. */
export interface ErrorInfo {
  message: string;
  /** Pipeline stage ("load", "compile", "ktir", "simulate", "machine"). */
  stage?: string;
  file?: string;
  /** 1-based line in the source (graph JSON or KTIR text). */
  line?: number;
  /** 1-based column. */
  column?: number;
  /** The graph node. */
  node?: string;
  /** The input (or output, for expected values) a file given for a run failed to fill. */
  input?: string;
  /** "input" or "expected": what that file was given as. */
  role?: string;
  /**
   * What a run of the source takes, when the source opened but did not run (a KTIR
   * module missing scalar values): the Run inputs panel lists it so they can be given.
   */
  io?: RunIo;
}

/** The location fields of a thrown value (the wasm session's errors carry them). */
export function errorLocation(err: unknown): Omit<ErrorInfo, "message" | "io"> {
  if (!err || typeof err !== "object") return {};
  const e = err as Record<string, unknown>;
  const out: Omit<ErrorInfo, "message" | "io"> = {};
  if (typeof e.stage === "string") out.stage = e.stage;
  if (typeof e.file === "string") out.file = e.file;
  if (typeof e.line === "number" && e.line > 0) out.line = e.line;
  if (typeof e.column === "number" && e.column > 0) out.column = e.column;
  if (typeof e.node === "string") out.node = e.node;
  if (typeof e.input === "string") out.input = e.input;
  if (typeof e.role === "string") out.role = e.role;
  return out;
}

/** An Error carrying a failure's location fields (and what the source takes, when known). */
export class LocatedError extends Error {
  readonly location: Omit<ErrorInfo, "message" | "io">;
  readonly io: RunIo | null;
  constructor(info: ErrorInfo) {
    super(info.message);
    this.location = errorLocation(info);
    this.io = info.io ?? null;
  }
}

/**
 * Reads what a run takes from a worker message; null when `v` is not one. Only the outline
 * is checked: the lists come from the driver's typed structs.
 */
export function parseIo(v: unknown): RunIo | null {
  if (!v || typeof v !== "object") return null;
  const o = v as Record<string, unknown>;
  if (o.kind === "graph") {
    return Array.isArray(o.inputs) && Array.isArray(o.outputs) ? (v as RunIo) : null;
  }
  if (o.kind !== "ktir" || !o.inputs || typeof o.inputs !== "object") return null;
  const k = o.inputs as Record<string, unknown>;
  const lists = ["buffers", "scratchpads", "scalars", "tensors", "missing"];
  return lists.every((l) => Array.isArray(k[l])) ? (v as RunIo) : null;
}

/** "line 3, column 7" (or just the line) when a failure says where; "" otherwise. */
export function describeLocation(err: unknown): string {
  const l = err instanceof LocatedError ? err.location : errorLocation(err);
  if (l.line === undefined) return "";
  return l.column === undefined ? `line ${l.line}` : `line ${l.line}, column ${l.column}`;
}

export type WorkerResponse =
  { id: number; ok: true; result: unknown } | { id: number; ok: false; error: ErrorInfo };

/** How far the work for request `id` has come; sent any number of times before its answer. */
export interface ProgressMessage {
  id: number;
  progress: RunProgress;
}

/** Everything the worker posts. */
export type WorkerMessage = WorkerResponse | ProgressMessage;

const METHODS: readonly Method[] = [
  "init",
  "run",
  "verifyKtir",
  "trace",
  "outputNpy",
  "clearCache",
  "passTexts",
];

/** Turns anything thrown (Error, string, wasm-bindgen JsValue) into a readable message. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name || "Error";
  if (typeof err === "string") return err;
  if (err && typeof err === "object" && "message" in err) {
    const m = (err as { message: unknown }).message;
    if (typeof m === "string") return m;
  }
  try {
    const s = JSON.stringify(err);
    if (s !== undefined) return s;
  } catch {
    // fall through
  }
  return String(err);
}

function parseTarget(v: unknown): SourceRef | null {
  if (!v || typeof v !== "object") return null;
  const t = v as Record<string, unknown>;
  if (t.kind === "example" && typeof t.name === "string") return { kind: "example", name: t.name };
  if (t.kind === "file" && t.bytes instanceof Uint8Array && typeof t.fileName === "string") {
    if (t.extra === undefined) return { kind: "file", bytes: t.bytes, fileName: t.fileName };
    const extra = parseNamedBytes(t.extra);
    return extra ? { kind: "file", bytes: t.bytes, fileName: t.fileName, extra } : null;
  }
  return null;
}

function parseNamedBytes(v: unknown): NamedBytes[] | null {
  if (!Array.isArray(v)) return null;
  const out: NamedBytes[] = [];
  for (const f of v as unknown[]) {
    if (!f || typeof f !== "object") return null;
    const { name, bytes } = f as Record<string, unknown>;
    if (typeof name !== "string" || !(bytes instanceof Uint8Array)) return null;
    out.push({ name, bytes });
  }
  return out;
}

function parseData(v: unknown): RunData | null {
  if (!v || typeof v !== "object") return null;
  const d = v as Record<string, unknown>;
  const inputs = parseNamedBytes(d.inputs);
  const expected = parseNamedBytes(d.expected);
  return inputs && expected ? { inputs, expected } : null;
}

function parseOptions(v: unknown): RunOptions | null {
  if (v === undefined) return {};
  if (!v || typeof v !== "object") return null;
  const o = v as Record<string, unknown>;
  const out: RunOptions = {};
  if (o.machine !== undefined) {
    if (typeof o.machine !== "string") return null;
    out.machine = o.machine;
  }
  if (o.seed !== undefined) {
    if (typeof o.seed !== "number" || !Number.isInteger(o.seed) || o.seed < 0) return null;
    out.seed = o.seed;
  }
  if (o.ktir !== undefined) {
    if (typeof o.ktir !== "string") return null;
    out.ktir = o.ktir;
  }
  if (o.timingOnly !== undefined) {
    if (typeof o.timingOnly !== "boolean") return null;
    out.timingOnly = o.timingOnly;
  }
  if (o.args !== undefined) {
    if (!o.args || typeof o.args !== "object") return null;
    const args: Record<string, string> = {};
    for (const [k, v] of Object.entries(o.args)) {
      if (typeof v !== "string") return null;
      args[k] = v;
    }
    out.args = args;
  }
  if (o.allocator !== undefined) {
    if (typeof o.allocator !== "string") return null;
    out.allocator = o.allocator;
  }
  if (o.attentionBlock !== undefined) {
    const b = o.attentionBlock;
    if (typeof b !== "number" || !Number.isInteger(b) || b < 1) return null;
    out.attentionBlock = b;
  }
  if (o.doubleBuffer !== undefined) {
    if (typeof o.doubleBuffer !== "boolean") return null;
    out.doubleBuffer = o.doubleBuffer;
  }
  if (o.fuse !== undefined) {
    if (typeof o.fuse !== "boolean") return null;
    out.fuse = o.fuse;
  }
  if (o.outOfBounds !== undefined) {
    if (o.outOfBounds !== "error" && o.outOfBounds !== "mask") return null;
    out.outOfBounds = o.outOfBounds;
  }
  if (o.places !== undefined) {
    if (!o.places || typeof o.places !== "object") return null;
    const places: Record<string, number> = {};
    for (const [k, v] of Object.entries(o.places)) {
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) return null;
      places[k] = v;
    }
    out.places = places;
  }
  if (o.tp !== undefined) {
    if (typeof o.tp !== "number" || !Number.isInteger(o.tp) || o.tp < 1 || o.tp > 8) return null;
    out.tp = o.tp;
  }
  if (o.system !== undefined) {
    if (typeof o.system !== "string") return null;
    out.system = o.system;
  }
  if (o.allreduce !== undefined) {
    const a = o.allreduce;
    if (a !== "auto" && a !== "ring" && a !== "tree") return null;
    out.allreduce = a;
  }
  for (const k of ["queryAlign", "kvAlign", "decodeAlign"] as const) {
    const v = o[k];
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1) return null;
    out[k] = v;
  }
  return out;
}

/** Validates an incoming message on the worker side; returns null if it is not a request. */
export function parseRequest(data: unknown): WorkerRequest | null {
  if (!data || typeof data !== "object") return null;
  const d = data as Record<string, unknown>;
  if (typeof d.id !== "number" || typeof d.method !== "string") return null;
  if (!METHODS.includes(d.method as Method)) return null;
  if (!d.params || typeof d.params !== "object") return null;
  const p = d.params as Record<string, unknown>;
  switch (d.method as Method) {
    case "init":
      return { id: d.id, method: "init", params: {} };
    case "clearCache":
      return { id: d.id, method: "clearCache", params: {} };
    case "passTexts": {
      if (p.names === undefined) return { id: d.id, method: "passTexts", params: {} };
      if (!Array.isArray(p.names) || !p.names.every((n) => typeof n === "string")) return null;
      return { id: d.id, method: "passTexts", params: { names: p.names as string[] } };
    }
    case "run": {
      const target = parseTarget(p.target);
      const options = parseOptions(p.options);
      if (!target || !options) return null;
      const aside = p.aside === true ? { aside: true as const } : {};
      if (p.data === undefined)
        return { id: d.id, method: "run", params: { target, options, ...aside } };
      const data = parseData(p.data);
      if (!data) return null;
      return { id: d.id, method: "run", params: { target, options, data, ...aside } };
    }
    case "trace": {
      const target = parseTarget(p.target);
      const options = parseOptions(p.options);
      if (!target || !options) return null;
      return { id: d.id, method: "trace", params: { target, options } };
    }
    case "outputNpy":
      if (typeof p.name !== "string") return null;
      return { id: d.id, method: "outputNpy", params: { name: p.name } };
    case "verifyKtir":
      if (typeof p.text !== "string") return null;
      return { id: d.id, method: "verifyKtir", params: { text: p.text } };
  }
}

/**
 * Reads the texts of a `passTexts` answer (or the wasm session's `fillPasses`); null when
 * `v` is not one. Entries of the wrong shape are dropped.
 */
export function parsePassTexts(v: unknown): PassTexts | null {
  if (!v || typeof v !== "object") return null;
  const o = v as Record<string, unknown>;
  if (!Array.isArray(o.texts) || !Array.isArray(o.sdscLines)) return null;
  const texts: PassText[] = [];
  for (const t of o.texts as unknown[]) {
    const e = t as Record<string, unknown> | null;
    if (e && typeof e.name === "string" && typeof e.text === "string")
      texts.push({ name: e.name, text: e.text });
  }
  const sdscLines: OpSdscLines[] = [];
  for (const l of o.sdscLines as unknown[]) {
    const e = l as { op?: unknown; lines?: { from?: unknown; to?: unknown } } | null;
    const from = Number(e?.lines?.from);
    const to = Number(e?.lines?.to);
    if (e && typeof e.op === "string" && Number.isInteger(from) && Number.isInteger(to))
      sdscLines.push({ op: e.op, lines: { from, to } });
  }
  return {
    texts,
    sdscLines,
    ...(typeof o.note === "string" ? { note: o.note } : {}),
  };
}

/** Validates an incoming message on the page side; returns null if it is not a response. */
export function parseResponse(data: unknown): WorkerResponse | null {
  if (!data || typeof data !== "object") return null;
  const d = data as Record<string, unknown>;
  if (typeof d.id !== "number" || typeof d.ok !== "boolean") return null;
  if (d.ok) return { id: d.id, ok: true, result: d.result };
  const e = d.error as Record<string, unknown> | undefined;
  const message = e && typeof e.message === "string" ? e.message : "unknown worker error";
  const io = parseIo(e?.io);
  return { id: d.id, ok: false, error: { message, ...errorLocation(e), ...(io ? { io } : {}) } };
}

/** Reads a progress report (a `run` or `trace` under way); null if `data` is not one. */
export function parseProgress(data: unknown): ProgressMessage | null {
  if (!data || typeof data !== "object") return null;
  const d = data as Record<string, unknown>;
  if (typeof d.id !== "number" || !d.progress || typeof d.progress !== "object") return null;
  const p = d.progress as Record<string, unknown>;
  if (p.phase !== "compile" && p.phase !== "execute" && p.phase !== "schedule") return null;
  const done = Number(p.done);
  const total = Number(p.total);
  if (!Number.isFinite(done) || !Number.isFinite(total) || done < 0 || total < 0) return null;
  // A compile names its pass; a name that is not short text is left out.
  const pass =
    p.phase === "compile" && typeof p.pass === "string" && p.pass.length <= 40 ? p.pass : null;
  const progress: RunProgress = { phase: p.phase, done, total, ...(pass ? { pass } : {}) };
  return { id: d.id, progress };
}
