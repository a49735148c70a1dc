// Pure timeline geometry: the visible window of cycles, zoom around a point, pan, lanes.

import type { EventUnit, TraceEvent } from "../api";
import type { EventTable } from "../events";

export interface Window {
  start: number;
  end: number;
}

export const UNITS: readonly EventUnit[] = ["dma", "pt", "sfp"];

/** Smallest window shown (cycles). */
export const MIN_SPAN = 4;

export function clampWindow(w: Window, total: number): Window {
  const full = Math.max(total, MIN_SPAN);
  let span = Math.min(Math.max(w.end - w.start, MIN_SPAN), full);
  let start = Math.min(Math.max(0, w.start), full - span);
  if (!Number.isFinite(start)) start = 0;
  if (!Number.isFinite(span)) span = full;
  return { start, end: start + span };
}

/** Zooms by `factor` (< 1 zooms in) keeping cycle `at` under the same pixel. */
export function zoomAt(w: Window, factor: number, at: number, total: number): Window {
  const span = w.end - w.start;
  const next = span * factor;
  const frac = span > 0 ? (at - w.start) / span : 0.5;
  return clampWindow({ start: at - frac * next, end: at - frac * next + next }, total);
}

export function panBy(w: Window, cycles: number, total: number): Window {
  return clampWindow({ start: w.start + cycles, end: w.end + cycles }, total);
}

export function laneOf(e: Pick<TraceEvent, "core" | "unit">): number {
  return e.core * UNITS.length + Math.max(0, UNITS.indexOf(e.unit));
}

/** x (pixels from the plot's left edge) of a cycle. */
export function xOf(cycle: number, w: Window, plotWidth: number): number {
  return ((cycle - w.start) / (w.end - w.start)) * plotWidth;
}

export function cycleAt(x: number, w: Window, plotWidth: number): number {
  return w.start + (x / Math.max(1, plotWidth)) * (w.end - w.start);
}

/**
 * The event in `lane` covering `cycle` (within `slack` cycles), as an index into `events`
 * (the shortest when several do), or null.
 */
export function eventAt(
  events: EventTable,
  byLane: ReadonlyMap<number, ArrayLike<number>>,
  lane: number,
  cycle: number,
  slack = 0,
): number | null {
  const list = byLane.get(lane);
  if (!list) return null;
  let best: number | null = null;
  let bestLength = Infinity;
  for (let k = 0; k < list.length; k++) {
    const i = list[k] as number;
    const start = events.start(i);
    const end = events.end(i);
    if (start - slack <= cycle && cycle <= end + slack && end - start < bestLength) {
      best = i;
      bestLength = end - start;
    }
  }
  return best;
}

/** Round tick step (1, 2, 5 x 10^k) giving about `count` ticks over `span`. */
export function tickStep(span: number, count: number): number {
  if (!(span > 0) || !(count > 0)) return 1;
  const raw = span / count;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/**
 * The window after a two-finger pinch: fingers `startDist` pixels apart on `start` are now
 * `dist` apart, zoomed about cycle `at` (wider apart zooms in).
 */
export function pinchWindow(
  start: Window,
  startDist: number,
  dist: number,
  at: number,
  total: number,
): Window {
  const factor = Math.max(1, startDist) / Math.max(1, dist);
  return zoomAt(start, factor, at, total);
}
