// Worker-side request handling, kept free of the worker global and of the wasm
// import so it can be unit-tested with any SpyreModule.

import type { PipelineResult, SpyreModule, TraceEvent } from "./api";
import { errorMessage, parseRequest, type WorkerResponse } from "./protocol";

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
  const events: TraceEvent[] = run.events.map((e) => ({
    unit: e.unit,
    core: Number(e.core),
    start: Number(e.start),
    end: Number(e.end),
    bytes: Number(e.bytes ?? 0),
    srcStop: stopOrNull(e.srcStop),
    dstStop: stopOrNull(e.dstStop),
    op: String(e.op ?? ""),
    line: Number(e.line ?? 0),
  }));
  return {
    graph: r.graph,
    passes: r.passes,
    ktir: typeof r.ktir === "string" ? r.ktir : "",
    run: { ...run, totalCycles: Number(run.totalCycles), events },
  };
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
            },
          };
        case "runExample": {
          const source = m.exampleSource(req.params.name);
          const fileName = `${req.params.name}.json`;
          const result = normalizeResult(m.runPipeline(source, fileName));
          return { id: req.id, ok: true, result: { source, fileName, result } };
        }
        case "runSource": {
          const { source, fileName } = req.params;
          const result = normalizeResult(m.runPipeline(source, fileName));
          return { id: req.id, ok: true, result: { source, fileName, result } };
        }
      }
    } catch (err) {
      return { id: req.id, ok: false, error: { message: describeFailure(err) } };
    }
  };
}
