// Worker-side request handling, kept free of the worker global and of the wasm
// import so it can be unit-tested with any SpyreModule.

import type {
  Diagnostic,
  KtirRunRaw,
  OutputCheck,
  PipelineResult,
  RunSummary,
  SpyreModule,
  TraceEvent,
} from "./api";
import { layoutGraph, tensorTypes } from "./graph/layout";
import {
  errorMessage,
  parseRequest,
  type RunResult,
  type SourceRef,
  type WorkerResponse,
} from "./protocol";

/** Deep-converts what wasm-bindgen hands over (Maps, BigInts) into plain JSON-like data. */
export function toPlain(value: unknown): unknown {
  if (typeof value === "bigint") return Number(value);
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

function stopOrNull(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

function normalizeEvents(events: unknown[]): TraceEvent[] {
  return (events as Partial<TraceEvent>[]).map((e) => ({
    unit: e.unit === "pt" || e.unit === "sfp" ? e.unit : "dma",
    core: Number(e.core),
    start: Number(e.start),
    end: Number(e.end),
    bytes: Number(e.bytes ?? 0),
    srcStop: stopOrNull(e.srcStop),
    dstStop: stopOrNull(e.dstStop),
    op: String(e.op ?? ""),
    line: Number(e.line ?? 0),
  }));
}

function normalizeSummary(s: unknown): RunSummary | null {
  if (!s || typeof s !== "object") return null;
  const r = s as Partial<RunSummary>;
  if (!Array.isArray(r.cores) || !Array.isArray(r.links)) return null;
  return r as RunSummary;
}

/**
 * Checks the shape of a pipeline result and fills optional fields (serde may send
 * `undefined` instead of `null` for a missing stop), so views can trust the types.
 */
export function normalizeResult(raw: unknown): PipelineResult {
  const r = toPlain(raw) as Partial<PipelineResult> | null;
  need(r && typeof r === "object", "not an object");
  need(Array.isArray(r.passes), "passes is not a list");
  need(r.graph && typeof r.graph === "object", "graph is missing");
  need(r.run && typeof r.run === "object", "run is missing");
  const run = r.run;
  need(run.machine && Array.isArray(run.machine.stops), "run.machine.stops is missing");
  need(Array.isArray(run.events), "run.events is not a list");
  need(Array.isArray(run.outputs), "run.outputs is not a list");
  return {
    graph: r.graph,
    passes: r.passes.map((p) => ({ ...p, data: p.data ?? null })),
    ktir: typeof r.ktir === "string" ? r.ktir : "",
    run: {
      machine: run.machine,
      totalCycles: Number(run.totalCycles),
      passed: typeof run.passed === "boolean" ? run.passed : null,
      outputs: run.outputs as OutputCheck[],
      events: normalizeEvents(run.events),
      summary: normalizeSummary(run.summary),
      timingOnly: run.timingOnly === true,
      assumptions: Array.isArray(run.assumptions)
        ? run.assumptions.filter((a): a is string => typeof a === "string")
        : [],
    },
  };
}

/** A standalone KTIR run as a pipeline result with no graph and no passes. */
export function ktirResult(raw: unknown, text: string, fileName: string): PipelineResult {
  const r = toPlain(raw) as Partial<KtirRunRaw> | null;
  need(r && typeof r === "object", "not an object");
  need(r.machine && Array.isArray(r.machine.stops), "machine.stops is missing");
  need(Array.isArray(r.events), "events is not a list");
  const name = fileName.replace(/\.[^.]*$/, "") || fileName;
  const buffers = Array.isArray(r.buffers) ? r.buffers : [];
  return {
    graph: {
      name,
      description: `KTIR module: ${(r.functions ?? []).map((f) => `@${f}`).join(", ")}`,
      inputs: [],
      outputs: buffers.map(([spec]) => ({ name: spec.name, dtype: spec.elem, shape: spec.shape })),
      nodes: [],
    },
    passes: [],
    ktir: text,
    run: {
      machine: r.machine,
      totalCycles: Number(r.totalCycles),
      passed: null,
      outputs: [],
      events: normalizeEvents(r.events),
      summary: normalizeSummary(r.summary),
    },
  };
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
  const isTrap =
    typeof WebAssembly !== "undefined" &&
    typeof WebAssembly.RuntimeError === "function" &&
    err instanceof WebAssembly.RuntimeError;
  const message = errorMessage(err);
  return isTrap
    ? `the wasm module crashed (${message}); this is a bug, please report it. Reload the page to continue.`
    : message;
}

export function isKtirFile(fileName: string): boolean {
  return /\.mlir$/i.test(fileName);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: false });

export type Handler = (data: unknown) => Promise<WorkerResponse>;

/** Builds the request handler; `load` is called once, on the first request. */
export function createHandler(load: () => Promise<SpyreModule>): Handler {
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

  const resolveTarget = (
    m: SpyreModule,
    target: SourceRef,
  ): { bytes: Uint8Array; fileName: string; source: string } => {
    if (target.kind === "example") {
      const source = m.exampleSource(target.name);
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
    };
  };

  return async (data: unknown): Promise<WorkerResponse> => {
    const req = parseRequest(data);
    if (!req) {
      const id =
        data && typeof data === "object" && typeof (data as { id?: unknown }).id === "number"
          ? (data as { id: number }).id
          : -1;
      return { id, ok: false, error: { message: "malformed request to the worker" } };
    }
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
          const { bytes, fileName, source } = resolveTarget(m, req.params.target);
          const options = req.params.options;
          let result: PipelineResult;
          let kind: RunResult["kind"];
          if (isKtirFile(fileName)) {
            const text = options.ktir ?? source;
            const { ktir: _ignored, ...rest } = options;
            void _ignored;
            result = ktirResult(m.runKtir(text, rest), text, fileName);
            kind = "ktir";
          } else {
            result = normalizeResult(m.runPipelineWith(bytes, fileName, options));
            kind = "graph";
          }
          const canon = result.passes.find((p) => p.name === "canonicalize")?.data ?? null;
          const layout = layoutGraph(result.graph, tensorTypes(result.graph, canon));
          const res: RunResult = { kind, fileName, source, result, layout };
          return { id: req.id, ok: true, result: res };
        }
        case "verifyKtir":
          return {
            id: req.id,
            ok: true,
            result: normalizeDiagnostics(m.verifyKtir(req.params.text)),
          };
        case "trace": {
          const { bytes, fileName, source } = resolveTarget(m, req.params.target);
          const options = req.params.options;
          let json: string;
          if (isKtirFile(fileName)) {
            const { ktir, ...rest } = options;
            json = m.ktirTrace(ktir ?? source, rest);
          } else {
            json = m.pipelineTrace(bytes, fileName, options);
          }
          return { id: req.id, ok: true, result: { json } };
        }
      }
    } catch (err) {
      return { id: req.id, ok: false, error: { message: describeFailure(err) } };
    }
  };
}
