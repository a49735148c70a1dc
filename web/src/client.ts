// Page-side client for the worker: typed calls that resolve with the worker's answer.

import type { RunProgress } from "./api";
import {
  errorMessage,
  LocatedError,
  parseProgress,
  parseResponse,
  type Method,
  type Params,
  type Result,
  type WorkerRequest,
} from "./protocol";

/** The part of a Worker the client uses (a MessagePort-like object; easy to stub). */
export interface Port {
  postMessage(message: WorkerRequest): void;
  addEventListener(type: "message", listener: (ev: { data: unknown }) => void): void;
  addEventListener(type: "error", listener: (ev: { message?: string }) => void): void;
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: ReturnType<typeof setTimeout> | null;
  onProgress?: (p: RunProgress) => void;
}

export class WorkerClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly port: Port,
    private readonly timeoutMs = 60_000,
  ) {
    port.addEventListener("message", (ev) => this.onMessage(ev.data));
    port.addEventListener("error", (ev) => {
      const msg = ev.message ? `worker failed: ${ev.message}` : "worker failed to start";
      this.failAll(new Error(msg));
    });
  }

  /** Number of requests still waiting for an answer. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Sends a request; `onProgress` receives the progress the worker reports on the way. */
  call<M extends Method>(
    method: M,
    params: Params<M>,
    onProgress?: (p: RunProgress) => void,
  ): Promise<Result<M>> {
    const id = this.nextId++;
    return new Promise<Result<M>>((resolve, reject) => {
      const timer =
        this.timeoutMs > 0
          ? setTimeout(() => {
              this.pending.delete(id);
              reject(new Error(`worker did not answer "${method}" within ${this.timeoutMs} ms`));
            }, this.timeoutMs)
          : null;
      this.pending.set(id, {
        resolve: resolve as (v: unknown) => void,
        reject,
        timer,
        ...(onProgress ? { onProgress } : {}),
      });
      try {
        this.port.postMessage({ id, method, params } as WorkerRequest);
      } catch (err) {
        this.settle(id);
        reject(new Error(errorMessage(err)));
      }
    });
  }

  private settle(id: number): Pending | undefined {
    const p = this.pending.get(id);
    if (!p) return undefined;
    this.pending.delete(id);
    if (p.timer !== null) clearTimeout(p.timer);
    return p;
  }

  private onMessage(data: unknown): void {
    const progress = parseProgress(data);
    if (progress) {
      const p = this.pending.get(progress.id);
      try {
        p?.onProgress?.(progress.progress);
      } catch {
        // a failing progress display must not lose the answer
      }
      return;
    }
    const res = parseResponse(data);
    if (!res) return;
    const p = this.settle(res.id);
    if (!p) return;
    if (res.ok) p.resolve(res.result);
    else p.reject(new LocatedError(res.error));
  }

  /** Rejects every pending request (used when the worker is stopped). */
  failAll(err: Error): void {
    for (const id of [...this.pending.keys()]) this.settle(id)?.reject(err);
  }
}

/** Why a request was stopped: the user cancelled it, or it ran past its time budget. */
export type StopReason = "cancelled" | "budget";

/** Raised for requests that were pending when the worker was restarted. */
export class CancelledError extends Error {
  constructor(
    message = "cancelled",
    readonly reason: StopReason = "cancelled",
  ) {
    super(message);
    this.name = "CancelledError";
  }
}

export interface TerminablePort extends Port {
  terminate(): void;
}

/**
 * Owns the worker: calls go through the current client; `restart` stops a long run by
 * terminating the worker (the only way to interrupt wasm) and starts a fresh one.
 */
export class WorkerHost {
  private port: TerminablePort;
  private client: WorkerClient;

  constructor(
    private readonly spawn: () => TerminablePort,
    private readonly timeoutMs = 0,
  ) {
    this.port = spawn();
    this.client = new WorkerClient(this.port, timeoutMs);
  }

  get inFlight(): number {
    return this.client.inFlight;
  }

  call<M extends Method>(
    method: M,
    params: Params<M>,
    onProgress?: (p: RunProgress) => void,
  ): Promise<Result<M>> {
    return this.client.call(method, params, onProgress);
  }

  /** Stops whatever the worker is doing and starts a fresh one; pending calls reject. */
  restart(message = "cancelled", reason: StopReason = "cancelled"): void {
    const old = this.client;
    try {
      this.port.terminate();
    } catch {
      // already gone
    }
    this.port = this.spawn();
    this.client = new WorkerClient(this.port, this.timeoutMs);
    old.failAll(new CancelledError(message, reason));
  }
}
