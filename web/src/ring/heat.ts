// Per-core utilisation over a whole run, for the ring's heatmap: computed once per run from
// its events (never per frame), and the colour scale that paints it.

import { UNIT_CODES, type EventTable } from "../events";

/** What the heatmap colours the cores by. */
export type HeatMetric = "compute" | "pt" | "dma" | "off";

/** One core's busy fractions over the run, each in [0, 1]. */
export interface CoreUtil {
  core: number;
  /** PT (matrix array) busy. */
  pt: number;
  /** SFP (vector unit) busy. */
  sfp: number;
  /** PT or SFP busy (overlap counted once). */
  compute: number;
  /** DMA engine busy. */
  dma: number;
}

/** Length covered by a set of [start, end) intervals, overlaps counted once. */
export function unionLength(intervals: readonly (readonly [number, number])[]): number {
  const sorted = intervals
    .filter(([a, b]) => Number.isFinite(a) && Number.isFinite(b) && b > a)
    .slice()
    .sort((x, y) => x[0] - y[0]);
  let total = 0;
  let curA = -Infinity;
  let curB = -Infinity;
  for (const [a, b] of sorted) {
    if (a > curB) {
      if (curB > curA) total += curB - curA;
      curA = a;
      curB = b;
    } else if (b > curB) curB = b;
  }
  if (curB > curA) total += curB - curA;
  return total;
}

/**
 * Length covered by intervals given as their starts and ends (each `a < b`), overlaps
 * counted once: the two lists sorted apart (natively, in place) and swept together, which
 * needs no interval objects.
 */
function sweptLength(starts: Float64Array, ends: Float64Array): number {
  starts.sort();
  ends.sort();
  let i = 0;
  let j = 0;
  let open = 0;
  let from = 0;
  let total = 0;
  while (j < ends.length) {
    if (i < starts.length && (starts[i] as number) <= (ends[j] as number)) {
      if (open === 0) from = starts[i] as number;
      open++;
      i++;
    } else {
      open--;
      if (open === 0) total += (ends[j] as number) - from;
      j++;
    }
  }
  return total;
}

/** Busy fractions of every core `0..coreCount` over `totalCycles`. */
export function coreUtilisation(
  events: EventTable,
  coreCount: number,
  totalCycles: number,
): CoreUtil[] {
  const n = Math.max(0, Math.floor(coreCount));
  // Spans by core and unit (group `core * 3 + unit code`), clamped to the run.
  const span = (i: number): [number, number] => [
    Math.max(0, events.start(i)),
    Math.min(totalCycles, events.end(i)),
  ];
  const groupOf = (i: number): number => {
    const core = events.core(i);
    if (core < 0 || core >= n) return -1;
    const [a, b] = span(i);
    return Number.isFinite(a) && Number.isFinite(b) && b > a ? core * 3 + events.unitCode(i) : -1;
  };
  const sizes = new Int32Array(n * 3);
  for (let i = 0; i < events.length; i++) {
    const g = groupOf(i);
    if (g >= 0) sizes[g] = (sizes[g] as number) + 1;
  }
  const starts = Array.from(sizes, (m) => new Float64Array(m));
  const ends = Array.from(sizes, (m) => new Float64Array(m));
  const filled = new Int32Array(n * 3);
  for (let i = 0; i < events.length; i++) {
    const g = groupOf(i);
    if (g < 0) continue;
    const k = filled[g] as number;
    const [a, b] = span(i);
    (starts[g] as Float64Array)[k] = a;
    (ends[g] as Float64Array)[k] = b;
    filled[g] = k + 1;
  }
  const frac = (x: number): number =>
    totalCycles > 0 ? Math.min(1, Math.max(0, x / totalCycles)) : 0;
  const joined = (x: Float64Array, y: Float64Array): Float64Array => {
    const out = new Float64Array(x.length + y.length);
    out.set(x);
    out.set(y, x.length);
    return out;
  };
  const [DMA, PT, SFP] = (["dma", "pt", "sfp"] as const).map((u) => UNIT_CODES.indexOf(u));
  return Array.from({ length: n }, (_, core) => {
    const s = (u: number | undefined): Float64Array =>
      starts[core * 3 + (u ?? 0)] ?? new Float64Array(0);
    const e = (u: number | undefined): Float64Array =>
      ends[core * 3 + (u ?? 0)] ?? new Float64Array(0);
    return {
      core,
      pt: frac(sweptLength(s(PT), e(PT))),
      sfp: frac(sweptLength(s(SFP), e(SFP))),
      compute: frac(sweptLength(joined(s(PT), s(SFP)), joined(e(PT), e(SFP)))),
      dma: frac(sweptLength(s(DMA), e(DMA))),
    };
  });
}

/** The figure a metric reads from a core (0 for "off"). */
export function heatValue(u: CoreUtil, metric: HeatMetric): number {
  return metric === "off" ? 0 : u[metric];
}

/**
 * Colour scale stops (dark, through purple and orange, to yellow): kept clear of the tile
 * colours (blue, green) so tiles stay visible over hot cores.
 */
export const HEAT_STOPS: readonly string[] = [
  "#262b33",
  "#4b2a6b",
  "#a8326e",
  "#ef7a3a",
  "#f7df6a",
];

function rgb(hex: string): [number, number, number] {
  const v = /^#[0-9a-f]{6}$/i.test(hex) ? parseInt(hex.slice(1), 16) : 0;
  return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
}

/** Relative luminance (0 dark .. 1 light) of a `#rrggbb` colour. */
export function luminance(hex: string): number {
  const [r, g, b] = rgb(hex);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}

/** The scale's colour for a fraction in [0, 1] (clamped), as `#rrggbb`. */
export function heatColour(x: number, stops: readonly string[] = HEAT_STOPS): string {
  if (stops.length === 0) return "#000000";
  const f = Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0;
  const pos = f * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(pos));
  if (i < 0) return stops[0] as string;
  const t = pos - i;
  const a = rgb(stops[i] as string);
  const b = rgb(stops[i + 1] as string);
  const mix = a.map((v, k) => Math.round(v + ((b[k] as number) - v) * t));
  return `#${mix.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
}

/** The cores' fill and label colours for one metric, computed once per run and theme. */
export interface HeatPaint {
  fill: string[];
  text: string[];
}

/**
 * Paint for every core: the scale starts at the theme's idle-core colour (so an idle core
 * looks as it does without the heatmap), and labels are dark on light fills.
 */
export function heatPaint(
  util: readonly CoreUtil[],
  metric: HeatMetric,
  idle: string,
  label: string,
): HeatPaint | null {
  if (metric === "off") return null;
  const base = /^#[0-9a-f]{6}$/i.test(idle) ? idle : (HEAT_STOPS[0] as string);
  const stops = [base, ...HEAT_STOPS.slice(1)];
  const fill = util.map((u) => heatColour(heatValue(u, metric), stops));
  const text = util.map((u, i) =>
    heatValue(u, metric) <= 0 ? label : luminance(fill[i] as string) > 0.55 ? "#1a1a1a" : "#f2f2f2",
  );
  return { fill, text };
}

/** A CSS gradient of the scale, for the legend. */
export function heatGradient(stops: readonly string[] = HEAT_STOPS): string {
  return `linear-gradient(to right, ${stops.join(", ")})`;
}

/** One line of a core's figures, for hover and tap. */
export function describeCore(u: CoreUtil): string {
  const pct = (x: number): string => `${Math.round(x * 100)}%`;
  return `core ${u.core}: compute ${pct(u.compute)} (PT ${pct(u.pt)}, SFP ${pct(u.sfp)}) · DMA ${pct(u.dma)}`;
}
