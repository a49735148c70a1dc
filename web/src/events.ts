// A run's timed events as columns. A full model's run has some 200,000 events: sent from the
// worker as objects, the page spent seconds rebuilding them (structured clone) and holding
// them. As typed arrays they move by transfer, and the views read them by index.

import type { EventUnit, TraceEvent } from "./api";

/** The units in column code order (`EventColumns.unit` holds indexes into this list). */
export const UNIT_CODES: readonly EventUnit[] = ["dma", "pt", "sfp"];

/** Marks a missing ring stop in `srcStop` / `dstStop`. */
const NO_STOP = -1;

/**
 * The events of a run, one typed array per field of the generated `EventView` (the Rust
 * side's struct stays the source of truth); plain data, so it crosses `postMessage`.
 */
export interface EventColumns {
  count: number;
  /** Index into `UNIT_CODES`. */
  unit: Uint8Array;
  core: Int32Array;
  start: Float64Array;
  end: Float64Array;
  bytes: Float64Array;
  /** -1: none (compute). */
  srcStop: Int32Array;
  /** -1: none (compute). */
  dstStop: Int32Array;
  /** Event i's route is `route[routeStart[i] .. routeStart[i + 1]]`. */
  routeStart: Uint32Array;
  route: Int32Array;
  /** Index into `ops`. */
  op: Uint32Array;
  /** The distinct op texts. */
  ops: string[];
  line: Int32Array;
}

/** Packs events into columns (in the worker, or from a test's list). */
export function toColumns(events: readonly TraceEvent[]): EventColumns {
  const n = events.length;
  const unit = new Uint8Array(n);
  const core = new Int32Array(n);
  const start = new Float64Array(n);
  const end = new Float64Array(n);
  const bytes = new Float64Array(n);
  const srcStop = new Int32Array(n);
  const dstStop = new Int32Array(n);
  const routeStart = new Uint32Array(n + 1);
  const op = new Uint32Array(n);
  const line = new Int32Array(n);
  const ops: string[] = [];
  const opIndex = new Map<string, number>();
  let hops = 0;
  for (const e of events) hops += e.route.length;
  const route = new Int32Array(hops);
  let r = 0;
  for (let i = 0; i < n; i++) {
    const e = events[i] as TraceEvent;
    unit[i] = Math.max(0, UNIT_CODES.indexOf(e.unit));
    core[i] = e.core;
    start[i] = e.start;
    end[i] = e.end;
    bytes[i] = e.bytes;
    srcStop[i] = e.srcStop ?? NO_STOP;
    dstStop[i] = e.dstStop ?? NO_STOP;
    routeStart[i] = r;
    for (const s of e.route) route[r++] = s;
    let o = opIndex.get(e.op);
    if (o === undefined) {
      o = ops.length;
      ops.push(e.op);
      opIndex.set(e.op, o);
    }
    op[i] = o;
    line[i] = e.line;
  }
  routeStart[n] = r;
  return {
    count: n,
    unit,
    core,
    start,
    end,
    bytes,
    srcStop,
    dstStop,
    routeStart,
    route,
    op,
    ops,
    line,
  };
}

/** The buffers of `c`, to transfer rather than copy. */
export function columnBuffers(c: EventColumns): ArrayBuffer[] {
  const arrays = [c.unit, c.core, c.start, c.end, c.bytes, c.srcStop, c.dstStop];
  const more = [c.routeStart, c.route, c.op, c.line];
  return [...arrays, ...more].map((a) => a.buffer as ArrayBuffer);
}

/** Whether `v` has the outline of `EventColumns` (arrays of the right kinds and length). */
export function isColumns(v: unknown): v is EventColumns {
  if (!v || typeof v !== "object") return false;
  const c = v as Record<string, unknown>;
  const n = c.count;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0) return false;
  const sized = (a: unknown, kind: { new (n: number): ArrayLike<number> }, len: number): boolean =>
    a instanceof kind && (a as ArrayLike<number>).length === len;
  return (
    sized(c.unit, Uint8Array, n) &&
    sized(c.core, Int32Array, n) &&
    sized(c.start, Float64Array, n) &&
    sized(c.end, Float64Array, n) &&
    sized(c.bytes, Float64Array, n) &&
    sized(c.srcStop, Int32Array, n) &&
    sized(c.dstStop, Int32Array, n) &&
    sized(c.routeStart, Uint32Array, n + 1) &&
    c.route instanceof Int32Array &&
    sized(c.op, Uint32Array, n) &&
    sized(c.line, Int32Array, n) &&
    Array.isArray(c.ops)
  );
}

/**
 * Read access to a run's events by index. Views keep indexes (into this table) rather than
 * event objects; `get` builds one event object for the few places that show one.
 */
export class EventTable {
  readonly length: number;
  private readonly made = new Map<number, TraceEvent>();

  constructor(readonly cols: EventColumns) {
    this.length = cols.count;
  }

  /** A table of `events` (tests, and runs built on the page). */
  static from(events: readonly TraceEvent[]): EventTable {
    return new EventTable(toColumns(events));
  }

  /** The unit's code (index into `UNIT_CODES`: 0 dma, 1 pt, 2 sfp). */
  unitCode(i: number): number {
    return this.cols.unit[i] ?? 0;
  }
  unit(i: number): EventUnit {
    return UNIT_CODES[this.unitCode(i)] ?? "dma";
  }
  core(i: number): number {
    return this.cols.core[i] ?? 0;
  }
  start(i: number): number {
    return this.cols.start[i] ?? 0;
  }
  end(i: number): number {
    return this.cols.end[i] ?? 0;
  }
  bytes(i: number): number {
    return this.cols.bytes[i] ?? 0;
  }
  srcStop(i: number): number | null {
    const s = this.cols.srcStop[i] ?? NO_STOP;
    return s === NO_STOP ? null : s;
  }
  dstStop(i: number): number | null {
    const s = this.cols.dstStop[i] ?? NO_STOP;
    return s === NO_STOP ? null : s;
  }
  /** The stops event i's route passes (a view on the column, not a copy). */
  route(i: number): Int32Array {
    const a = this.cols.routeStart[i] ?? 0;
    const b = this.cols.routeStart[i + 1] ?? a;
    return this.cols.route.subarray(a, b);
  }
  op(i: number): string {
    return this.cols.ops[this.cols.op[i] ?? 0] ?? "";
  }
  line(i: number): number {
    return this.cols.line[i] ?? 0;
  }

  /** Event i as an object; the same object each time it is asked for. */
  get(i: number): TraceEvent {
    let e = this.made.get(i);
    if (!e) {
      e = {
        unit: this.unit(i),
        core: this.core(i),
        start: this.start(i),
        end: this.end(i),
        bytes: this.bytes(i),
        srcStop: this.srcStop(i),
        dstStop: this.dstStop(i),
        route: Array.from(this.route(i)),
        op: this.op(i),
        line: this.line(i),
      };
      this.made.set(i, e);
    }
    return e;
  }
}

/**
 * The events `which` (indexes into `starts`) ordered by start, ties by index. Whole-cycle
 * starts sort as packed numbers (start and index in one float64, sorted natively: a full
 * model's 200,000 events in milliseconds); others go through a comparator.
 */
export function orderByStart(starts: Float64Array, which: ArrayLike<number>): Int32Array {
  const n = which.length;
  let bits = 1;
  while (2 ** bits <= starts.length) bits++;
  const scale = 2 ** bits;
  let packable = true;
  for (let k = 0; k < n && packable; k++) {
    const s = starts[which[k] as number] as number;
    packable = Number.isInteger(s) && s >= 0 && s * scale < Number.MAX_SAFE_INTEGER;
  }
  if (!packable) {
    const out = Int32Array.from(which);
    return out.sort((a, b) => (starts[a] as number) - (starts[b] as number) || a - b);
  }
  const keys = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const i = which[k] as number;
    keys[k] = (starts[i] as number) * scale + i;
  }
  keys.sort();
  const out = new Int32Array(n);
  for (let k = 0; k < n; k++) {
    const key = keys[k] as number;
    out[k] = key - Math.floor(key / scale) * scale;
  }
  return out;
}
