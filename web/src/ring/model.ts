// Pure ring geometry and "what is where at time t". No DOM, no canvas: unit-tested.
//
// Positions along the ring are fractional stop indexes in [0, count): stop i sits at
// position i, and position i + 0.5 is half-way along the link from stop i to i + 1.
// Stop 0 is at the top and positions increase clockwise.

import type { RingStop, TraceEvent } from "../api";
import { orderByStart, type EventTable } from "../events";
import { coreUtilisation, type CoreUtil } from "./heat";

export interface Point {
  x: number;
  y: number;
}

export interface Circle {
  cx: number;
  cy: number;
  r: number;
}

/** +1: increasing stop index (clockwise), -1: decreasing, 0: no movement. */
export type Direction = 1 | -1 | 0;

/** Wraps any real position into [0, count). */
export function wrap(pos: number, count: number): number {
  if (count <= 0) return 0;
  const w = pos % count;
  return w < 0 ? w + count : w;
}

/** Angle (radians, canvas convention: y down) of a ring position; stop 0 at the top. */
export function positionAngle(pos: number, count: number): number {
  if (count <= 0) return -Math.PI / 2;
  return -Math.PI / 2 + (2 * Math.PI * wrap(pos, count)) / count;
}

/** Point on a circle for a ring position; `radialOffset` moves it outward (+) or inward (-). */
export function pointAt(pos: number, count: number, circle: Circle, radialOffset = 0): Point {
  const a = positionAngle(pos, count);
  const r = circle.r + radialOffset;
  return { x: circle.cx + r * Math.cos(a), y: circle.cy + r * Math.sin(a) };
}

/** Centre of every stop, in ring order. */
export function stopPositions(count: number, circle: Circle): Point[] {
  const out: Point[] = [];
  for (let i = 0; i < count; i++) out.push(pointAt(i, count, circle));
  return out;
}

/** +1 when ring stop `b` follows `a` clockwise, -1 when it precedes it, 0 otherwise. */
function stepDirection(a: number, b: number, count: number): Direction {
  if (count <= 1 || a === b) return 0;
  if (wrap(b - a, count) === 1) return 1;
  if (wrap(a - b, count) === 1) return -1;
  return 0;
}

/** Whether `route` is a walk of neighbouring stops of a ring of `count` stops. */
export function validRoute(route: ArrayLike<number>, count: number): boolean {
  if (route.length === 0) return false;
  for (let i = 0; i < route.length; i++) {
    const s = route[i] as number;
    if (!(Number.isInteger(s) && s >= 0 && s < count)) return false;
  }
  for (let i = 1; i < route.length; i++)
    if (stepDirection(route[i - 1] as number, route[i] as number, count) === 0) return false;
  return true;
}

/** The way a route goes round the ring (from its first hop). */
export function routeDirection(route: ArrayLike<number>, count: number): Direction {
  return route.length < 2 ? 0 : stepDirection(route[0] as number, route[1] as number, count);
}

/**
 * Ring position after a fraction `frac` (clamped to [0, 1]) of a route: the stops a
 * transfer passes, in order, as the Rust scheduler routed it.
 */
export function routePosition(route: ArrayLike<number>, count: number, frac: number): number {
  const first = route[0];
  if (first === undefined) return 0;
  const hops = route.length - 1;
  const f = Math.min(1, Math.max(0, frac)) * hops;
  const i = Math.min(Math.floor(f), Math.max(0, hops - 1));
  const a = route[i] as number;
  const b = route[i + 1] ?? a;
  return wrap(a + stepDirection(a, b, count) * (f - i), count);
}

/** Fraction of an event done at time t, or null when it is not in flight at t. */
export function progress(event: Pick<TraceEvent, "start" | "end">, t: number): number | null {
  if (!(event.end > event.start)) return null;
  if (t < event.start || t >= event.end) return null;
  return (t - event.start) / (event.end - event.start);
}

export type TileKind = "load" | "store" | "move";

export interface Tile {
  /** Fractional ring position. */
  pos: number;
  direction: Direction;
  kind: TileKind;
  /** The transfer's index in the run's event table. */
  index: number;
  /** Its KTIR line. */
  line: number;
}

/** load: memory -> core, store: core -> memory, move: anything else (core -> core). */
export function tileKind(stops: readonly RingStop[], src: number, dst: number): TileKind {
  const s = stops[src]?.kind;
  const d = stops[dst]?.kind;
  if (s === "memory" && d === "core") return "load";
  if (s === "core" && d === "memory") return "store";
  return "move";
}

/**
 * Events (indexes into a run's table) sorted by start, with the longest duration, so "what
 * is active at t" only scans the events that could overlap t.
 */
export class EventIndex {
  /** The indexes, by start then end. */
  readonly order: Int32Array;
  private readonly starts: Float64Array;
  private readonly ends: Float64Array;
  private readonly maxDuration: number;

  /**
   * Indexes `which` (all the table's events when left out); `ordered`: `which` already is in
   * `orderByStart` order (computed in the worker), so it is not sorted again.
   */
  constructor(
    readonly table: EventTable,
    which?: ArrayLike<number>,
    ordered = false,
  ) {
    const all = which ?? Int32Array.from({ length: table.length }, (_, i) => i);
    const order = ordered ? Int32Array.from(all) : orderByStart(table.cols.start, all);
    this.order = order;
    this.starts = new Float64Array(order.length);
    this.ends = new Float64Array(order.length);
    let m = 0;
    for (let k = 0; k < order.length; k++) {
      const i = order[k] as number;
      const a = table.start(i);
      const b = table.end(i);
      this.starts[k] = a;
      this.ends[k] = b;
      m = Math.max(m, b - a);
    }
    this.maxDuration = m;
  }

  get length(): number {
    return this.order.length;
  }

  /** First position whose start is >= value. */
  private lowerBound(value: number): number {
    let lo = 0;
    let hi = this.starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.starts[mid] as number) < value) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Calls `fn(index, frac)` for every event with start <= t < end. */
  forEachActive(t: number, fn: (index: number, frac: number) => void): void {
    const from = this.lowerBound(t - this.maxDuration);
    for (let k = from; k < this.starts.length; k++) {
      const a = this.starts[k] as number;
      if (a > t) break;
      const b = this.ends[k] as number;
      if (!(b > a) || t < a || t >= b) continue;
      fn(this.order[k] as number, (t - a) / (b - a));
    }
  }

  /** The indexes of the events active at t. */
  activeAt(t: number): number[] {
    const out: number[] = [];
    this.forEachActive(t, (i) => out.push(i));
    return out;
  }
}

/** Tile kinds by code (`TileWalk` passes the code). */
export const TILE_KINDS: readonly TileKind[] = ["load", "store", "move"];

/** Receives one tile in flight: ring position, direction, kind code, event index, KTIR line. */
export type TileWalk = (
  pos: number,
  direction: Direction,
  kind: number,
  index: number,
  line: number,
) => void;

/**
 * Calls `fn` for every DMA transfer in flight at t, placed on the ring along its route,
 * without building an object per tile (the ring draws thousands a frame).
 */
export function forEachTile(
  dma: EventIndex,
  stops: readonly RingStop[],
  t: number,
  fn: TileWalk,
): void {
  const count = stops.length;
  const ev = dma.table;
  const { route, routeStart, unit, line } = ev.cols;
  dma.forEachActive(t, (i, frac) => {
    const a = routeStart[i] as number;
    const b = routeStart[i + 1] as number;
    if (unit[i] !== 0 || b <= a) return;
    // A walk of neighbouring stops (checked here, a few hops each, without a copy).
    for (let k = a; k < b; k++) {
      const s = route[k] as number;
      if (!(s >= 0 && s < count)) return;
      if (k > a && stepDirection(route[k - 1] as number, s, count) === 0) return;
    }
    const src = route[a] as number;
    const dst = route[b - 1] as number;
    const hops = b - a - 1;
    let pos = src;
    let direction: Direction = 0;
    if (hops > 0) {
      const f = Math.min(1, Math.max(0, frac)) * hops;
      const k = Math.min(Math.floor(f), hops - 1);
      const from = route[a + k] as number;
      const to = route[a + k + 1] as number;
      pos = wrap(from + stepDirection(from, to, count) * (f - k), count);
      direction = stepDirection(src, route[a + 1] as number, count);
    }
    fn(pos, direction, TILE_KINDS.indexOf(tileKind(stops, src, dst)), i, line[i] as number);
  });
}

/** Every DMA transfer in flight at t, placed on the ring along its route. */
export function tilesAt(dma: EventIndex, stops: readonly RingStop[], t: number): Tile[] {
  const out: Tile[] = [];
  forEachTile(dma, stops, t, (pos, direction, kind, index, line) => {
    out.push({ pos, direction, kind: TILE_KINDS[kind] ?? "move", index, line });
  });
  return out;
}

export interface CoreActivity {
  pt: boolean;
  sfp: boolean;
  dma: boolean;
}

/** What each core (by core id) is doing at t. */
export function coreActivityAt(index: EventIndex, coreCount: number, t: number): CoreActivity[] {
  const out: CoreActivity[] = Array.from({ length: coreCount }, () => ({
    pt: false,
    sfp: false,
    dma: false,
  }));
  const ev = index.table;
  index.forEachActive(t, (i) => {
    const a = out[ev.core(i)];
    if (!a) return;
    const unit = ev.unit(i);
    if (unit === "pt") a.pt = true;
    else if (unit === "sfp") a.sfp = true;
    else a.dma = true;
  });
  return out;
}

/** Ring position of each core id (cores whose stop is missing map to -1). */
export function coreStopPositions(stops: readonly RingStop[], coreCount: number): number[] {
  const out = new Array<number>(coreCount).fill(-1);
  stops.forEach((s, i) => {
    if (s.kind === "core" && s.index >= 0 && s.index < coreCount) out[s.index] = i;
  });
  return out;
}

/**
 * Advances simulated time by a wall-clock step, looping: the whole run takes
 * `periodMs` of wall time. Returns a time in [0, totalCycles).
 */
export function advanceTime(
  t: number,
  dtMs: number,
  totalCycles: number,
  periodMs: number,
): number {
  if (!(totalCycles > 0) || !(periodMs > 0)) return 0;
  const next = t + (Math.max(0, dtMs) * totalCycles) / periodMs;
  return next >= totalCycles ? next % totalCycles : next;
}

/** Everything the ring view needs for one run, precomputed once. */
export interface RingScene {
  machineName: string;
  /** The run's events. */
  events: EventTable;
  stops: readonly RingStop[];
  coreCount: number;
  /** Ring position of each core id. */
  coreStops: number[];
  /** DMA transfers with a valid route. */
  transfers: EventIndex;
  /** PT and SFP events. */
  compute: EventIndex;
  totalCycles: number;
  /** Busy fractions per core id over the whole run. */
  util: CoreUtil[];
}

/** Cores drawn for a run: the machine's, or more if a stop names a higher core. */
export function sceneCores(run: { machine: { cores: number; stops: RingStop[] } }): number {
  return Math.max(
    run.machine.cores,
    ...run.machine.stops.filter((s) => s.kind === "core").map((s) => s.index + 1),
  );
}

/** Length of a run in cycles: its total, or the last event's end when that is missing. */
export function sceneCycles(run: { totalCycles: number; events: EventTable }): number {
  if (run.totalCycles > 0) return run.totalCycles;
  let lastEnd = 0;
  for (let i = 0; i < run.events.length; i++) lastEnd = Math.max(lastEnd, run.events.end(i));
  return lastEnd;
}

/**
 * What the ring needs of a run's events beyond the events themselves, computed once per run
 * (in the worker: a full model's 200,000 events took the page's thread a third of a second
 * when the ring was first shown). Plain data of typed arrays, moved to the page by transfer.
 */
export interface RingDigest {
  /** DMA transfers with a valid route, in `orderByStart` order. */
  transfers: Int32Array;
  /** PT and SFP events, in `orderByStart` order. */
  compute: Int32Array;
  /** Busy fractions per core id over the whole run. */
  util: CoreUtil[];
}

/** What `ringDigest` and `buildScene` read from a run. */
export interface SceneInput {
  machine: { name: string; cores: number; stops: RingStop[] };
  totalCycles: number;
  events: EventTable;
}

/** The ring's digest of a run: its transfers and compute events by start, and the heatmap. */
export function ringDigest(run: SceneInput): RingDigest {
  const count = run.machine.stops.length;
  const ev = run.events;
  const { unit, route, routeStart } = ev.cols;
  const transfers: number[] = [];
  const compute: number[] = [];
  for (let i = 0; i < ev.length; i++) {
    if (unit[i] !== 0) compute.push(i);
    else if (validRoute(route.subarray(routeStart[i], routeStart[i + 1]), count)) transfers.push(i);
  }
  return {
    transfers: orderByStart(ev.cols.start, transfers),
    compute: orderByStart(ev.cols.start, compute),
    util: coreUtilisation(ev, sceneCores(run), sceneCycles(run)),
  };
}

/** The buffers of `d`, to transfer rather than copy. */
export function ringBuffers(d: RingDigest): ArrayBuffer[] {
  return [d.transfers.buffer as ArrayBuffer, d.compute.buffer as ArrayBuffer];
}

/** The ring's precomputed view of a run (`digest`: its `ringDigest`, when already made). */
export function buildScene(run: SceneInput, digest: RingDigest = ringDigest(run)): RingScene {
  const stops = run.machine.stops;
  const coreCount = sceneCores(run);
  const ev = run.events;
  return {
    machineName: run.machine.name,
    events: ev,
    stops,
    coreCount,
    coreStops: coreStopPositions(stops, coreCount),
    transfers: new EventIndex(ev, digest.transfers, true),
    compute: new EventIndex(ev, digest.compute, true),
    totalCycles: sceneCycles(run),
    util: digest.util,
  };
}
