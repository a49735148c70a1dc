// The timeline's shared-resource lanes: DRAM (transfers to and from memory stops) and the
// busiest ring links (every hop of every routed transfer), each with its bandwidth use over
// time. Pure and computed once per run; the view only maps buckets to pixels.

import type { RingStop, TraceEvent } from "../api";
import { orderByStart, UNIT_CODES, type EventTable } from "../events";

/** Buckets a lane's bandwidth profile has over the whole run. */
export const PROFILE_BUCKETS = 1024;

/** Link lanes shown at most (the busiest ones). */
export const MAX_LINK_LANES = 4;

/** One lane of a shared resource. */
export interface SharedLane {
  kind: "dram" | "link";
  /** Short label drawn at the lane's left ("DRAM", "s3→4"). */
  label: string;
  /** A longer description for hover. */
  title: string;
  /** The transfers that used it (indexes into the run's event table), sorted by start. */
  events: Int32Array;
  /** Bytes per cycle, averaged over each of `PROFILE_BUCKETS` equal slices of the run. */
  profile: Float64Array;
  /** Bytes per cycle the resource can carry (the profile's maximum when unknown). */
  capacity: number;
  /** Bytes it carried. */
  bytes: number;
  /** `bytes / (capacity * totalCycles)`. */
  utilisation: number;
}

/** Dense link index as the simulator names links: `2 * fromStop`, +1 counter-clockwise. */
export function linkIndex(from: number, to: number, count: number): number | null {
  if (count <= 1 || from === to) return null;
  if ((((to - from) % count) + count) % count === 1) return 2 * from;
  if ((((from - to) % count) + count) % count === 1) return 2 * from + 1;
  return null;
}

/** The simulator's name of a link (`s3-cw`, `s3-ccw`). */
export function linkName(index: number): string {
  return `s${Math.floor(index / 2)}-${index % 2 === 0 ? "cw" : "ccw"}`;
}

/** Links a route crosses, in order (hops between non-neighbours are skipped). */
export function routeLinks(route: ArrayLike<number>, count: number): number[] {
  const out: number[] = [];
  for (let i = 1; i < route.length; i++) {
    const l = linkIndex(route[i - 1] as number, route[i] as number, count);
    if (l !== null) out.push(l);
  }
  return out;
}

/** Whether a transfer reads from or writes to DRAM (one end at a memory stop). */
export function touchesDram(events: EventTable, i: number, stops: readonly RingStop[]): boolean {
  if (events.unit(i) !== "dma") return false;
  const at = (s: number | null): boolean => s !== null && stops[s]?.kind === "memory";
  return at(events.srcStop(i)) || at(events.dstStop(i));
}

/**
 * Bytes per cycle over `buckets` equal slices of `[0, total)`: each transfer's bytes spread
 * evenly over its duration (zero-length transfers count in the slice they sit in).
 */
export function bandwidthProfile(
  events: readonly Pick<TraceEvent, "start" | "end" | "bytes">[],
  total: number,
  buckets = PROFILE_BUCKETS,
): Float64Array {
  const out = new Float64Array(Math.max(1, Math.floor(buckets)));
  for (const e of events) spread(out, total, e.start, e.end, e.bytes);
  return out;
}

/** `bandwidthProfile` of the events `which` of a table. */
export function tableProfile(
  events: EventTable,
  which: ArrayLike<number>,
  total: number,
  buckets = PROFILE_BUCKETS,
): Float64Array {
  const out = new Float64Array(Math.max(1, Math.floor(buckets)));
  for (let k = 0; k < which.length; k++) {
    const i = which[k] as number;
    spread(out, total, events.start(i), events.end(i), events.bytes(i));
  }
  return out;
}

/** Adds one transfer's bytes per cycle to the buckets `out` of `[0, total)`. */
function spread(out: Float64Array, total: number, start: number, end: number, bytes: number) {
  const n = out.length;
  if (!(total > 0) || !(bytes > 0)) return;
  const width = total / n;
  const a = Math.max(0, Math.min(total, start));
  const b = Math.max(0, Math.min(total, end));
  if (b <= a) {
    const i = Math.min(n - 1, Math.floor(a / width));
    out[i] = (out[i] as number) + bytes / width;
    return;
  }
  const rate = bytes / (end - start);
  const first = Math.floor(a / width);
  const last = Math.min(n - 1, Math.floor((b - 1e-9) / width));
  for (let i = first; i <= last; i++) {
    const lo = Math.max(a, i * width);
    const hi = Math.min(b, (i + 1) * width);
    if (hi > lo) out[i] = (out[i] as number) + (rate * (hi - lo)) / width;
  }
}

function peak(profile: Float64Array): number {
  let m = 0;
  for (const v of profile) m = Math.max(m, v);
  return m;
}

/** Bytes the events `which` of a table moved. */
function bytesOf(events: EventTable, which: ArrayLike<number>): number {
  let sum = 0;
  for (let k = 0; k < which.length; k++) sum += Math.max(0, events.bytes(which[k] as number));
  return sum;
}

function lane(
  kind: SharedLane["kind"],
  label: string,
  title: string,
  table: EventTable,
  list: readonly number[],
  total: number,
  capacity: number | null,
): SharedLane {
  const events = orderByStart(table.cols.start, list);
  const profile = tableProfile(table, events, total);
  const bytes = bytesOf(table, events);
  const cap = capacity !== null && capacity > 0 ? capacity : peak(profile);
  return {
    kind,
    label,
    title,
    events,
    profile,
    capacity: cap,
    bytes,
    utilisation: cap > 0 && total > 0 ? Math.min(1, bytes / (cap * total)) : 0,
  };
}

/** What the shared lanes read from a run. */
export interface LaneInput {
  machine: { stops: RingStop[] };
  totalCycles: number;
  events: EventTable;
  /** DRAM bytes per cycle (the roofline's rates), when known. */
  dramBytesPerCycle?: number | null;
  /** The summary's links (their utilisation gives each link's bandwidth), when known. */
  links?: readonly { index: number; bytes: number; utilisation: number }[];
}

/** The DRAM lane, then up to `maxLinks` lanes of the links that carried the most bytes. */
export function sharedLanes(run: LaneInput, maxLinks = MAX_LINK_LANES): SharedLane[] {
  const stops = run.machine.stops;
  const count = stops.length;
  const total = run.totalCycles;
  const ev = run.events;
  const dram: number[] = [];
  const byLink = new Map<number, number[]>();
  const { route, routeStart } = ev.cols;
  for (let i = 0; i < ev.length; i++) {
    if (ev.unit(i) !== "dma") continue;
    if (touchesDram(ev, i, stops)) dram.push(i);
    const a = routeStart[i] as number;
    const b = routeStart[i + 1] as number;
    for (let k = a + 1; k < b; k++) {
      const l = linkIndex(route[k - 1] as number, route[k] as number, count);
      if (l === null) continue;
      let list = byLink.get(l);
      if (!list) byLink.set(l, (list = []));
      // A route crossing a link twice lists the transfer once (lists grow in event order).
      if (list[list.length - 1] !== i) list.push(i);
    }
  }
  const out: SharedLane[] = [
    lane(
      "dram",
      "DRAM",
      "DRAM: transfers to and from memory stops, and the bandwidth they use",
      ev,
      dram,
      total,
      run.dramBytesPerCycle ?? null,
    ),
  ];
  const linkBw = (index: number): number | null => {
    const l = run.links?.find((x) => x.index === index);
    return l && l.utilisation > 0 && total > 0 ? l.bytes / (l.utilisation * total) : null;
  };
  const ranked = [...byLink.entries()]
    .map(([index, events]) => ({ index, events, bytes: bytesOf(ev, events) }))
    .sort((a, b) => b.bytes - a.bytes || a.index - b.index)
    .slice(0, Math.max(0, maxLinks));
  for (const r of ranked) {
    const from = Math.floor(r.index / 2);
    const to = r.index % 2 === 0 ? (from + 1) % count : (from - 1 + count) % count;
    out.push(
      lane(
        "link",
        `s${from}→${to}`,
        `ring link ${linkName(r.index)} (stop ${from} → ${to}): transfers crossing it`,
        ev,
        r.events,
        total,
        linkBw(r.index),
      ),
    );
  }
  return out;
}

/** The lane's bandwidth use (fraction of its capacity, clamped to [0, 1]) at a cycle. */
export function loadAt(l: SharedLane, cycle: number, total: number): number {
  if (!(total > 0) || !(l.capacity > 0)) return 0;
  const n = l.profile.length;
  const i = Math.min(n - 1, Math.max(0, Math.floor((cycle / total) * n)));
  return Math.min(1, (l.profile[i] as number) / l.capacity);
}

/**
 * Every lane of a run's timeline, computed once per run (in the worker: for a full model the
 * page's thread would spend a third of a second on it when the tab is first shown). Plain data
 * of typed arrays, so it moves to the page by transfer.
 */
export interface TimelineLanes {
  /** Cores drawn: the machine's, or more when an event names a higher core. */
  cores: number;
  /**
   * Lane `l` (`core * UNITS.length + unit code`) holds the events
   * `laneEvents[laneStart[l] .. laneStart[l + 1]]`, by start (ties by index).
   */
  laneStart: Uint32Array;
  laneEvents: Int32Array;
  /** The DRAM and busiest-link lanes (`sharedLanes`). */
  shared: SharedLane[];
}

/** What `timelineLanes` reads from a run. */
export type LanesInput = LaneInput & { machine: { cores: number } };

/** The timeline's lanes of a run: each core and unit's events by start, and the shared lanes. */
export function timelineLanes(run: LanesInput, maxLinks = MAX_LINK_LANES): TimelineLanes {
  const ev = run.events;
  const core = ev.cols.core;
  const unit = ev.cols.unit;
  const units = UNIT_CODES.length;
  let cores = run.machine.cores;
  for (let i = 0; i < ev.length; i++) cores = Math.max(cores, (core[i] as number) + 1);
  // Two passes over the columns: count each lane's events, then place them.
  const laneCount = cores * units;
  const laneStart = new Uint32Array(laneCount + 1);
  const laneOf = (i: number): number => (core[i] as number) * units + (unit[i] as number);
  for (let i = 0; i < ev.length; i++) {
    const lane = laneOf(i);
    if (lane >= 0 && lane < laneCount) laneStart[lane + 1] = (laneStart[lane + 1] as number) + 1;
  }
  for (let l = 0; l < laneCount; l++)
    laneStart[l + 1] = (laneStart[l + 1] as number) + (laneStart[l] as number);
  const laneEvents = new Int32Array(laneStart[laneCount] as number);
  const filled = laneStart.slice(0, laneCount);
  for (let i = 0; i < ev.length; i++) {
    const lane = laneOf(i);
    if (!(lane >= 0 && lane < laneCount)) continue;
    laneEvents[filled[lane] as number] = i;
    filled[lane] = (filled[lane] as number) + 1;
  }
  // By start, so a draw can merge the bars that fall on the same pixels.
  const starts = ev.cols.start;
  for (let l = 0; l < laneCount; l++) {
    const list = laneEvents.subarray(laneStart[l] as number, laneStart[l + 1] as number);
    if (!sortedByStart(list, starts)) list.set(orderByStart(starts, list));
  }
  return { cores, laneStart, laneEvents, shared: sharedLanes(run, maxLinks) };
}

/** Whether the events `list` already are in start order (the usual case). */
function sortedByStart(list: Int32Array, starts: Float64Array): boolean {
  for (let k = 1; k < list.length; k++)
    if ((starts[list[k - 1] as number] as number) > (starts[list[k] as number] as number))
      return false;
  return true;
}

/** Each non-empty lane's events (views on `laneEvents`, not copies), by lane. */
export function laneLists(t: TimelineLanes): Map<number, Int32Array> {
  const out = new Map<number, Int32Array>();
  for (let l = 0; l + 1 < t.laneStart.length; l++) {
    const a = t.laneStart[l] as number;
    const b = t.laneStart[l + 1] as number;
    if (b > a) out.set(l, t.laneEvents.subarray(a, b));
  }
  return out;
}

/** The buffers of `t`, to transfer rather than copy. */
export function lanesBuffers(t: TimelineLanes): ArrayBuffer[] {
  return [
    t.laneStart.buffer as ArrayBuffer,
    t.laneEvents.buffer as ArrayBuffer,
    ...t.shared.flatMap((l) => [l.events.buffer as ArrayBuffer, l.profile.buffer as ArrayBuffer]),
  ];
}
