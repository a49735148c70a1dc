// What the views need of a run beyond the run itself, computed once per run in the worker: the
// timeline's lanes, the ring's indexes and heatmap, each kernel's time span. For a full model
// (some 200,000 events) each took the page's thread a few hundred milliseconds when its tab
// was first shown; the worker makes them beside the run, and the page receives typed arrays
// by transfer.

import type { PipelineResult } from "./api";
import { ringBuffers, ringDigest, type RingDigest } from "./ring/model";
import { coresDigest, isCoresDigest, kernelSpans, type CoresDigest, type Span } from "./session";
import { lanesBuffers, timelineLanes, type TimelineLanes } from "./timeline/lanes";

/** The views' precomputed figures of one run. */
export interface RunDigest {
  /** The timeline's lanes. */
  lanes: TimelineLanes;
  /** The ring's transfers and compute events by start, and its heatmap. */
  ring: RingDigest;
  /** Time span of each device op's kernel, in op order (`kernelSpans`). */
  spans: Span[];
  /** The Cores view's work division and scratchpad plan. */
  cores: CoresDigest;
}

/** The digest of `r` (in the worker; on the page only for a run that came without one). */
export function digestRun(r: PipelineResult): RunDigest {
  const run = r.run;
  return {
    lanes: timelineLanes({
      machine: run.machine,
      totalCycles: run.totalCycles,
      events: run.events,
      dramBytesPerCycle: run.roofline?.rates?.dramBytesPerCycle ?? null,
      links: run.summary?.links ?? [],
    }),
    ring: ringDigest(run),
    spans: kernelSpans(run.events, r.sourceMap),
    cores: coresDigest(r.passes),
  };
}

/** The buffers of `d`, to transfer rather than copy. */
export function digestBuffers(d: RunDigest): ArrayBuffer[] {
  const c = d.cores;
  const cores = [
    c.coresUsed,
    c.splitStart,
    c.splits,
    c.labelStart,
    c.divCells,
    c.cellStart,
    c.coords,
  ];
  return [
    ...lanesBuffers(d.lanes),
    ...ringBuffers(d.ring),
    ...cores.map((a) => a.buffer as ArrayBuffer),
  ];
}

/** Elements of an index array `isDigest` looks at: its ends and evenly spaced ones between. */
const SAMPLES = 32;

/**
 * Whether `a` is an index array of at most `events` entries whose sampled entries (its ends and
 * `SAMPLES` evenly spaced ones) name events of the run. Looking at every entry walked a full
 * model's million indexes on the page's thread for each run; a digest made for another run
 * (the one way a sound worker sends a wrong one) differs in its lengths or at its ends.
 */
function indexesWithin(a: unknown, events: number): boolean {
  if (!(a instanceof Int32Array) || a.length > events) return false;
  const n = a.length;
  if (n === 0) return true;
  const step = Math.max(1, Math.floor(n / SAMPLES));
  const inRange = (k: number): boolean => {
    const v = a[k] as number;
    return v >= 0 && v < events;
  };
  for (let k = 0; k < n; k += step) if (!inRange(k)) return false;
  return inRange(n - 1);
}

/**
 * Whether `v` has the outline of a `RunDigest` for a run of `events` events: its arrays of the
 * right kinds and lengths, the lanes' bounds in order, and sampled indexes within the run's
 * events. Its cost does not grow with the run's events (it runs on the page for each run).
 */
export function isDigest(v: unknown, events: number): v is RunDigest {
  if (!v || typeof v !== "object") return false;
  const d = v as Partial<RunDigest>;
  const l = d.lanes;
  const r = d.ring;
  if (!l || !r || !Number.isInteger(l.cores) || l.cores < 0) return false;
  const starts = l.laneStart;
  if (!(starts instanceof Uint32Array) || starts.length !== l.cores * 3 + 1) return false;
  // One entry per lane (a few hundred): the lanes' slices must not overlap or run past the end.
  for (let k = 1; k < starts.length; k++)
    if ((starts[k] as number) < (starts[k - 1] as number)) return false;
  if (starts[0] !== 0 || !indexesWithin(l.laneEvents, events)) return false;
  if (starts[starts.length - 1] !== l.laneEvents.length) return false;
  const within = (a: unknown): boolean => indexesWithin(a, events);
  return (
    Array.isArray(l.shared) &&
    l.shared.every((s) => within(s.events) && s.profile instanceof Float64Array) &&
    within(r.transfers) &&
    within(r.compute) &&
    (r.transfers as Int32Array).length + (r.compute as Int32Array).length <= events &&
    Array.isArray(r.util) &&
    Array.isArray(d.spans) &&
    isCoresDigest(d.cores)
  );
}
