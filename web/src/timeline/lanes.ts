// The timeline's shared-resource lanes: DRAM (transfers to and from memory stops) and the
// busiest ring links (every hop of every routed transfer), each with its bandwidth use over
// time. Pure and computed once per run; the view only maps buckets to pixels.

import type { RingStop, TraceEvent } from "../api";

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
  /** The transfers that used it, sorted by start. */
  events: TraceEvent[];
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
export function routeLinks(route: readonly number[], count: number): number[] {
  const out: number[] = [];
  for (let i = 1; i < route.length; i++) {
    const l = linkIndex(route[i - 1] as number, route[i] as number, count);
    if (l !== null) out.push(l);
  }
  return out;
}

/** Whether a transfer reads from or writes to DRAM (one end at a memory stop). */
export function touchesDram(e: TraceEvent, stops: readonly RingStop[]): boolean {
  if (e.unit !== "dma") return false;
  const at = (s: number | null): boolean => s !== null && stops[s]?.kind === "memory";
  return at(e.srcStop) || at(e.dstStop);
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
  const n = Math.max(1, Math.floor(buckets));
  const out = new Float64Array(n);
  if (!(total > 0)) return out;
  const width = total / n;
  for (const e of events) {
    if (!(e.bytes > 0)) continue;
    const a = Math.max(0, Math.min(total, e.start));
    const b = Math.max(0, Math.min(total, e.end));
    if (b <= a) {
      const i = Math.min(n - 1, Math.floor(a / width));
      out[i] = (out[i] as number) + e.bytes / width;
      continue;
    }
    const rate = e.bytes / (e.end - e.start);
    const first = Math.floor(a / width);
    const last = Math.min(n - 1, Math.floor((b - 1e-9) / width));
    for (let i = first; i <= last; i++) {
      const lo = Math.max(a, i * width);
      const hi = Math.min(b, (i + 1) * width);
      if (hi > lo) out[i] = (out[i] as number) + (rate * (hi - lo)) / width;
    }
  }
  return out;
}

function peak(profile: Float64Array): number {
  let m = 0;
  for (const v of profile) m = Math.max(m, v);
  return m;
}

function lane(
  kind: SharedLane["kind"],
  label: string,
  title: string,
  events: TraceEvent[],
  total: number,
  capacity: number | null,
): SharedLane {
  events.sort((a, b) => a.start - b.start || a.end - b.end);
  const profile = bandwidthProfile(events, total);
  const bytes = events.reduce((s, e) => s + Math.max(0, e.bytes), 0);
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
  events: TraceEvent[];
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
  const dram: TraceEvent[] = [];
  const byLink = new Map<number, TraceEvent[]>();
  for (const e of run.events) {
    if (e.unit !== "dma") continue;
    if (touchesDram(e, stops)) dram.push(e);
    for (const l of new Set(routeLinks(e.route, count))) {
      const list = byLink.get(l) ?? [];
      list.push(e);
      byLink.set(l, list);
    }
  }
  const out: SharedLane[] = [
    lane(
      "dram",
      "DRAM",
      "DRAM: transfers to and from memory stops, and the bandwidth they use",
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
    .map(([index, events]) => ({
      index,
      events,
      bytes: events.reduce((s, e) => s + Math.max(0, e.bytes), 0),
    }))
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
