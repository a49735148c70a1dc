// What the views need of a run beyond the run itself, computed once per run in the worker: the
// timeline's lanes, the ring's indexes and heatmap, each kernel's time span. For a full model
// (some 200,000 events) each took the page's thread a few hundred milliseconds when its tab
// was first shown; the worker makes them beside the run, and the page receives typed arrays
// by transfer.

import type { PipelineResult } from "./api";
import { ringBuffers, ringDigest, type RingDigest } from "./ring/model";
import { kernelSpans, type Span } from "./session";
import { lanesBuffers, timelineLanes, type TimelineLanes } from "./timeline/lanes";

/** The views' precomputed figures of one run. */
export interface RunDigest {
  /** The timeline's lanes. */
  lanes: TimelineLanes;
  /** The ring's transfers and compute events by start, and its heatmap. */
  ring: RingDigest;
  /** Time span of each device op's kernel, in op order (`kernelSpans`). */
  spans: Span[];
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
  };
}

/** The buffers of `d`, to transfer rather than copy. */
export function digestBuffers(d: RunDigest): ArrayBuffer[] {
  return [...lanesBuffers(d.lanes), ...ringBuffers(d.ring)];
}

/**
 * Whether `v` has the outline of a `RunDigest` for a run of `events` events: its index arrays
 * of the right kinds, none pointing past the run's events.
 */
export function isDigest(v: unknown, events: number): v is RunDigest {
  if (!v || typeof v !== "object") return false;
  const d = v as Partial<RunDigest>;
  const l = d.lanes;
  const r = d.ring;
  const within = (a: unknown): boolean => {
    if (!(a instanceof Int32Array)) return false;
    for (let k = 0; k < a.length; k++)
      if (!((a[k] as number) >= 0 && (a[k] as number) < events)) return false;
    return true;
  };
  return (
    !!l &&
    !!r &&
    Number.isInteger(l.cores) &&
    l.laneStart instanceof Uint32Array &&
    l.laneStart.length === l.cores * 3 + 1 &&
    within(l.laneEvents) &&
    l.laneStart[l.laneStart.length - 1] === l.laneEvents.length &&
    Array.isArray(l.shared) &&
    l.shared.every((s) => within(s.events) && s.profile instanceof Float64Array) &&
    within(r.transfers) &&
    within(r.compute) &&
    Array.isArray(r.util) &&
    Array.isArray(d.spans)
  );
}
