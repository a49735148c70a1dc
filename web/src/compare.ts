// Compare mode: what a second run changes from the run on screen (a machine, a compiler
// setting, or the program before its KTIR edit), and what the two runs' figures say about
// each other: cycles, the bottleneck, which kernels overlap their DMA with PT work, and a
// busy profile per unit on a shared time axis. Pure functions over runs; the Compare view
// draws them.

import type { PipelineResult, RunOptions, TraceEvent } from "./api";
import { UNIT_CODES, type EventTable } from "./events";
import { ALLOCATORS, type Allocator, MAX_ATTENTION_BLOCK, TP_DEGREES } from "./runSettings";

/**
 * The second run of a comparison, as changes from the run on screen (null: as on screen).
 * With `ktirEdit`, the second run is the same program as compiled, without the KTIR edit
 * the run on screen carries, and the other fields are not used.
 */
export interface CompareSpec {
  machine: string | null;
  allocator: Allocator | null;
  /** Keys per attention block; 0: one softmax over all keys. */
  attentionBlock: number | null;
  doubleBuffer: boolean | null;
  /** Cards of a tensor-parallel run (`--tp`); 1: one card. */
  tp: number | null;
  ktirEdit: boolean;
}

/** A spec that changes nothing (no comparison to run). */
export const NO_CHANGE: CompareSpec = {
  machine: null,
  allocator: null,
  attentionBlock: null,
  doubleBuffer: null,
  tp: null,
  ktirEdit: false,
};

/** Whether `s` changes anything from the run on screen. */
export function changesSomething(s: CompareSpec): boolean {
  return (
    s.ktirEdit ||
    s.machine !== null ||
    s.allocator !== null ||
    s.attentionBlock !== null ||
    s.doubleBuffer !== null ||
    s.tp !== null
  );
}

/** Longest machine name a link may carry. */
const MAX_NAME = 64;

/** Reads a spec from a link's state; null for anything that is not one or changes nothing. */
export function sanitizeCompare(v: unknown): CompareSpec | null {
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  if (o.ktirEdit === true) return { ...NO_CHANGE, ktirEdit: true };
  const block = o.attentionBlock;
  const s: CompareSpec = {
    machine:
      typeof o.machine === "string" && o.machine !== "" && o.machine.length <= MAX_NAME
        ? o.machine
        : null,
    allocator:
      typeof o.allocator === "string" && (ALLOCATORS as readonly string[]).includes(o.allocator)
        ? (o.allocator as Allocator)
        : null,
    attentionBlock:
      typeof block === "number" &&
      Number.isInteger(block) &&
      block >= 0 &&
      block <= MAX_ATTENTION_BLOCK
        ? block
        : null,
    doubleBuffer: typeof o.doubleBuffer === "boolean" ? o.doubleBuffer : null,
    tp: typeof o.tp === "number" && (TP_DEGREES as readonly number[]).includes(o.tp) ? o.tp : null,
    ktirEdit: false,
  };
  return changesSomething(s) ? s : null;
}

/** The spec as a link keeps it: only the fields it changes. */
export function encodeCompare(s: CompareSpec): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) if (v !== null) out[k] = v;
  if (!s.ktirEdit) delete out.ktirEdit;
  return out;
}

/** The second run's options: those of the run on screen (`base`) with the spec's changes. */
export function specOptions(base: RunOptions, s: CompareSpec): RunOptions {
  const o: RunOptions = { ...base };
  if (s.ktirEdit) {
    delete o.ktir;
    return o;
  }
  if (s.machine !== null) o.machine = s.machine;
  if (s.allocator !== null) {
    if (s.allocator === ALLOCATORS[0]) delete o.allocator;
    else o.allocator = s.allocator;
  }
  if (s.attentionBlock !== null) {
    if (s.attentionBlock === 0) delete o.attentionBlock;
    else o.attentionBlock = s.attentionBlock;
  }
  if (s.doubleBuffer !== null) {
    if (s.doubleBuffer) delete o.doubleBuffer;
    else o.doubleBuffer = false;
  }
  if (s.tp !== null) {
    if (s.tp === 1) delete o.tp;
    else o.tp = s.tp;
  }
  return o;
}

/** What the spec changes, in words ("double buffering off", "machine tiny4"). */
export function specLabel(s: CompareSpec): string {
  if (s.ktirEdit) return "the KTIR edit";
  const parts: string[] = [];
  if (s.machine !== null) parts.push(`machine ${s.machine}`);
  if (s.allocator !== null) parts.push(`allocator ${s.allocator}`);
  if (s.attentionBlock !== null)
    parts.push(
      s.attentionBlock === 0 ? "no attention blocks" : `attention block ${s.attentionBlock}`,
    );
  if (s.doubleBuffer !== null) parts.push(`double buffering ${s.doubleBuffer ? "on" : "off"}`);
  if (s.tp !== null) parts.push(s.tp === 1 ? "one card" : `TP ${s.tp}`);
  return parts.length > 0 ? parts.join(", ") : "no change";
}

/** The figures of one run a comparison reads. */
export interface RunFigures {
  cycles: number;
  bottleneck: string;
  /** Kernels (by function name) in which some core's DMA runs while its PT unit works. */
  overlapped: Set<string>;
  /** Kernels that have both DMA and PT work (where overlap could happen at all). */
  kernels: number;
}

type Interval = readonly [number, number];

/** Whether two lists of intervals, each sorted by start, share any stretch of time. */
function intersects(a: Interval[], b: Interval[]): boolean {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (Math.max(x[0], y[0]) < Math.min(x[1], y[1])) return true;
    if (x[1] <= y[1]) i++;
    else j++;
  }
  return false;
}

/**
 * Whether some core runs a DMA transfer while its PT unit works, among the events `which`
 * (indexes into `events`; all of them when left out).
 */
export function dmaOverlapsPt(events: EventTable, which?: readonly number[]): boolean {
  const byCore = new Map<number, { dma: Interval[]; pt: Interval[] }>();
  const n = which ? which.length : events.length;
  for (let k = 0; k < n; k++) {
    const i = which ? (which[k] as number) : k;
    if (!(i >= 0 && i < events.length)) continue;
    const unit = events.unit(i);
    if (unit !== "dma" && unit !== "pt") continue;
    const start = events.start(i);
    const end = events.end(i);
    if (end <= start) continue;
    const core = events.core(i);
    let c = byCore.get(core);
    if (!c) byCore.set(core, (c = { dma: [], pt: [] }));
    c[unit].push([start, end]);
  }
  for (const { dma, pt } of byCore.values()) {
    if (dma.length === 0 || pt.length === 0) continue;
    // Merging each unit's intervals keeps the sweep linear and its answer exact.
    if (intersects(merged(dma), merged(pt))) return true;
  }
  return false;
}

function merged(list: Interval[]): Interval[] {
  list.sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [s, e] of list) {
    const last = out[out.length - 1];
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else out.push([s, e]);
  }
  return out;
}

/** The figures of a run. */
export function runFigures(r: PipelineResult): RunFigures {
  const events = r.run.events;
  const overlapped = new Set<string>();
  let kernels = 0;
  const has = (list: readonly number[], unit: TraceEvent["unit"]): boolean =>
    list.some((i) => i >= 0 && i < events.length && events.unit(i) === unit);
  for (const k of r.sourceMap.kernels) {
    if (!has(k.events, "dma") || !has(k.events, "pt")) continue;
    kernels++;
    if (dmaOverlapsPt(events, k.events)) overlapped.add(k.func);
  }
  return {
    // A tensor-parallel run's cycles are its cards' (segments and collectives), not the
    // one-card run it was derived from.
    cycles: r.tp?.totalCycles ?? r.run.totalCycles,
    bottleneck: r.run.summary.bottleneck,
    overlapped,
    kernels,
  };
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** The change in cycles from `before` to `after`, in words ("12% more cycles"). */
export function cyclesChange(before: number, after: number): string {
  if (before <= 0) return after > 0 ? `${after} cycles where there were none` : "no cycles";
  const pct = ((after - before) / before) * 100;
  if (Math.abs(pct) < 0.5)
    return after === before ? "the same cycles" : "the same cycles (within 0.5%)";
  const shown = Math.abs(pct) >= 10 ? Math.round(Math.abs(pct)) : Math.abs(pct).toFixed(1);
  return `${shown}% ${pct > 0 ? "more" : "fewer"} cycles`;
}

/**
 * The difference from `before` to `after` in one sentence, led by what changed:
 * "double buffering off: 12% more cycles; DMA no longer overlaps PT in 14 kernels".
 */
export function describeDifference(label: string, before: RunFigures, after: RunFigures): string {
  const parts = [cyclesChange(before.cycles, after.cycles)];
  if (before.bottleneck !== after.bottleneck)
    parts.push(`the bottleneck moves from ${before.bottleneck} to ${after.bottleneck}`);
  const lost = [...before.overlapped].filter((k) => !after.overlapped.has(k)).length;
  const gained = [...after.overlapped].filter((k) => !before.overlapped.has(k)).length;
  if (lost > 0) parts.push(`DMA no longer overlaps PT in ${plural(lost, "kernel")}`);
  if (gained > 0) parts.push(`DMA now overlaps PT in ${plural(gained, "kernel")}`);
  return `${label}: ${parts.join("; ")}`;
}

/**
 * How busy `unit` is over time: `buckets` values over [0, `axis`) cycles, each the fraction
 * of the `cores` units' time in that stretch spent on events.
 */
export function busyProfile(
  events: EventTable,
  unit: TraceEvent["unit"],
  axis: number,
  cores: number,
  buckets: number,
): Float64Array {
  const out = new Float64Array(Math.max(0, buckets));
  if (axis <= 0 || buckets <= 0 || cores <= 0) return out;
  const width = axis / buckets;
  const code = UNIT_CODES.indexOf(unit);
  for (let i = 0; i < events.length; i++) {
    const start = events.start(i);
    const end = events.end(i);
    if (events.unitCode(i) !== code || end <= start) continue;
    const s = Math.max(0, start);
    const t = Math.min(axis, end);
    for (let b = Math.floor(s / width); b < buckets && b * width < t; b++) {
      const lo = Math.max(s, b * width);
      const hi = Math.min(t, (b + 1) * width);
      if (hi > lo) out[b]! += hi - lo;
    }
  }
  for (let b = 0; b < buckets; b++) out[b] = Math.min(1, out[b]! / (width * cores));
  return out;
}
