// Typed messages between the page and the worker that owns the wasm module.
// Every request carries an id; the worker answers each request exactly once with
// either a result or an error (errors are values, never a silent failure).

import type { ExampleInfo, PipelineResult } from "./api";

export interface InitResult {
  version: string;
  examples: ExampleInfo[];
}

export interface RunResult {
  /** The source that was run (for an example, the example's text). */
  source: string;
  fileName: string;
  result: PipelineResult;
}

/** Method name -> parameters and result. Add a method here and the types follow. */
export interface Methods {
  init: { params: Record<string, never>; result: InitResult };
  runExample: { params: { name: string }; result: RunResult };
  runSource: { params: { source: string; fileName: string }; result: RunResult };
}

export type Method = keyof Methods;
export type Params<M extends Method> = Methods[M]["params"];
export type Result<M extends Method> = Methods[M]["result"];

export type WorkerRequest = {
  [M in Method]: { id: number; method: M; params: Params<M> };
}[Method];

export interface ErrorInfo {
  message: string;
}

export type WorkerResponse =
  { id: number; ok: true; result: unknown } | { id: number; ok: false; error: ErrorInfo };

const METHODS: readonly Method[] = ["init", "runExample", "runSource"];

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
    case "runExample":
      if (typeof p.name !== "string") return null;
      return { id: d.id, method: "runExample", params: { name: p.name } };
    case "runSource":
      if (typeof p.source !== "string" || typeof p.fileName !== "string") return null;
      return {
        id: d.id,
        method: "runSource",
        params: { source: p.source, fileName: p.fileName },
      };
  }
}

/** Validates an incoming message on the page side; returns null if it is not a response. */
export function parseResponse(data: unknown): WorkerResponse | null {
  if (!data || typeof data !== "object") return null;
  const d = data as Record<string, unknown>;
  if (typeof d.id !== "number" || typeof d.ok !== "boolean") return null;
  if (d.ok) return { id: d.id, ok: true, result: d.result };
  const e = d.error as Record<string, unknown> | undefined;
  const message = e && typeof e.message === "string" ? e.message : "unknown worker error";
  return { id: d.id, ok: false, error: { message } };
}
