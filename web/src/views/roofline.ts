// The roofline view: each kernel's arithmetic intensity (MACs, or element operations for a
// kernel without MACs, per DRAM byte) against the throughput it achieved, on log-log axes
// under the machine's roofs (DRAM bandwidth, and the PT and SFP peaks of all cores).
// The chart's geometry is a pure function (`rooflineModel`); the figures come from the
// run's roofline report, computed in Rust. Clicking a dot selects the kernel's KTIR lines,
// which the editor and the timeline follow.

import { el, formatInt, svg } from "../dom";
import type {
  KernelLatency,
  KernelLink,
  KernelRoofline,
  LatencyModelReport,
  Roofline,
} from "../generated/types";
import type { Change, PageState, View, ViewContext } from "./view";

/** The report of a run that computed none (synthetic runs, tests). */
export function emptyRoofline(): Roofline {
  return {
    rates: null,
    kernels: [],
    program: {
      macs: 0,
      elementwise: 0,
      dramReadBytes: 0,
      dramWriteBytes: 0,
      uniqueDramBytes: 0,
      ringBytes: 0,
      bounds: null,
      achievedCycles: 0,
      ratio: 0,
      rereadFactor: 0,
    },
    assumptions: [],
  };
}

/** The second timing model's report of a run that computed none (synthetic runs, tests). */
export function emptyLatencyModel(): LatencyModelReport {
  return {
    params: [],
    kernels: [],
    sequentialCycles: 0,
    overlappedCycles: 0,
    eventCycles: 0,
    notes: [],
  };
}

/** One row of the timing-model comparison: a kernel (or the program) under both models. */
export interface TimingRow {
  name: string;
  /** Cycles of the event-level schedule. */
  event: string;
  /** Cycles of the per-unit roofline latency model (sequential mode). */
  model: string;
  /** `model - event`, signed. */
  difference: string;
  /** The model's bottleneck category ("" for the program line). */
  bound: string;
}

function signed(v: number): string {
  const r = Math.round(v);
  return r > 0 ? `+${formatInt(r)}` : r < 0 ? `-${formatInt(-r)}` : "0";
}

/** The comparison rows: one per kernel, then the program. Empty when the run has none. */
export function timingRows(m: LatencyModelReport): TimingRow[] {
  if (m.kernels.length === 0) return [];
  const row = (k: KernelLatency): TimingRow => ({
    name: k.func,
    event: formatInt(Math.round(k.eventCycles)),
    model: formatInt(Math.round(k.sequentialCycles)),
    difference: signed(k.differenceCycles),
    bound: k.bottleneck,
  });
  return [
    ...m.kernels.map(row),
    {
      name: "program",
      event: formatInt(Math.round(m.eventCycles)),
      model: formatInt(Math.round(m.sequentialCycles)),
      difference: signed(m.sequentialCycles - m.eventCycles),
      bound: "",
    },
  ];
}

/** A logarithmic axis: a value range in decades mapped onto a pixel range. */
export interface LogScale {
  /** Smallest value shown (a power of ten). */
  min: number;
  /** Largest value shown (a power of ten). */
  max: number;
  /** Pixel of `min`. */
  from: number;
  /** Pixel of `max`. */
  to: number;
}

/** The pixel of `v` on `s` (values at or below 0 sit at `min`). */
export function project(s: LogScale, v: number): number {
  const lo = Math.log10(s.min);
  const hi = Math.log10(s.max);
  const x = v > 0 ? Math.log10(v) : lo;
  const t = hi > lo ? (Math.min(Math.max(x, lo), hi) - lo) / (hi - lo) : 0;
  return s.from + t * (s.to - s.from);
}

/** One kernel on the chart. */
export interface Dot {
  /** Index into `sourceMap.kernels`. */
  kernel: number;
  func: string;
  /** Work per DRAM byte (the right edge when the kernel moved no DRAM bytes). */
  intensity: number;
  /** Work per cycle achieved. */
  throughput: number;
  /** Whether the work is MACs (else element operations). */
  macs: boolean;
  x: number;
  y: number;
  /** Tooltip text. */
  label: string;
}

/** A roof: a segment in pixels, with its name. */
export interface Roof {
  name: string;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** The chart's geometry. */
export interface RooflineModel {
  width: number;
  height: number;
  x: LogScale;
  y: LogScale;
  dots: Dot[];
  roofs: Roof[];
  /** Powers of ten for the axis ticks. */
  xTicks: number[];
  yTicks: number[];
}

/** Plot margins, in pixels. */
const MARGIN = { left: 64, right: 16, top: 12, bottom: 40 };

function decadeBelow(v: number): number {
  return 10 ** Math.floor(Math.log10(v));
}

function decadeAbove(v: number): number {
  return 10 ** Math.ceil(Math.log10(v));
}

function decades(min: number, max: number): number[] {
  const out: number[] = [];
  for (let e = Math.round(Math.log10(min)); e <= Math.round(Math.log10(max)); e++)
    out.push(10 ** e);
  return out;
}

/** The work a kernel is plotted with: MACs, or element operations when it has none. */
function workOf(k: KernelRoofline): { work: number; macs: boolean } {
  return k.macs > 0 ? { work: k.macs, macs: true } : { work: k.elementwise, macs: false };
}

/**
 * The chart of `r` in a `width` x `height` box: log scales spanning every dot and the ridge
 * points, the DRAM roof (throughput = intensity x DRAM bytes per cycle) up to the matmul
 * and vector ceilings of all cores, and one dot per kernel that did work in some time.
 */
export function rooflineModel(
  r: Roofline,
  width: number,
  height: number,
  also: readonly Roofline["rates"][] = [],
): RooflineModel {
  const rates = r.rates;
  const dram = rates?.dramBytesPerCycle ?? 0;
  const cores = rates?.cores ?? 1;
  const macPeak = (rates?.macsPerCyclePerCore ?? 0) * cores;
  const vecPeak = (rates?.elementwisePerCyclePerCore ?? 0) * cores;
  const raw = r.kernels
    .map((k) => ({ k, ...workOf(k) }))
    .filter((d) => d.work > 0 && d.k.achievedCycles > 0);
  const bytes = (k: KernelRoofline): number => k.dramReadBytes + k.dramWriteBytes;
  const finite = raw.filter((d) => bytes(d.k) > 0).map((d) => d.work / bytes(d.k));
  // The scales span every machine's roofs: this one's and those of `also` (compare mode).
  const machines = [rates, ...also].map((m) => ({
    dram: m?.dramBytesPerCycle ?? 0,
    peaks: [m?.macsPerCyclePerCore ?? 0, m?.elementwisePerCyclePerCore ?? 0].map(
      (p) => p * (m?.cores ?? 1),
    ),
  }));
  const ridges = machines.flatMap((m) =>
    m.peaks.filter((p) => p > 0 && m.dram > 0).map((p) => p / m.dram),
  );
  const xs = [...finite, ...ridges];
  const xMin = decadeBelow(Math.min(...xs, 1) / 2);
  const xMax = decadeAbove(Math.max(...xs, 1) * 4);
  const ys = raw.map((d) => d.work / d.k.achievedCycles);
  const slopes = machines.map((m) => m.dram * xMin).filter((v) => v > 0);
  const yMin = decadeBelow(Math.min(...ys, ...slopes, dram * xMin, 1));
  const yMax = decadeAbove(Math.max(...ys, ...machines.flatMap((m) => m.peaks), 1) * 1.5);
  const x: LogScale = { min: xMin, max: xMax, from: MARGIN.left, to: width - MARGIN.right };
  const y: LogScale = { min: yMin, max: yMax, from: height - MARGIN.bottom, to: MARGIN.top };
  const dots: Dot[] = raw.map(({ k, work, macs }) => {
    const intensity = bytes(k) > 0 ? work / bytes(k) : xMax;
    const throughput = work / k.achievedCycles;
    const unit = macs ? "MAC" : "op";
    return {
      kernel: k.kernel,
      func: k.func,
      intensity,
      throughput,
      macs,
      x: project(x, intensity),
      y: project(y, throughput),
      label:
        `${k.func}: ${formatInt(work)} ${unit}s, ${formatInt(bytes(k))} DRAM B, ` +
        `${formatInt(Math.round(k.achievedCycles))} cycles (${k.ratio.toFixed(2)}x its ${k.bounds.bound} bound)`,
    };
  });
  const roofs: Roof[] = [];
  for (const [name, peak] of [
    ["matmul peak", macPeak],
    ["vector peak", vecPeak],
  ] as const) {
    if (peak <= 0) continue;
    // The DRAM slope meets this ceiling at the ridge point.
    const ridge = dram > 0 ? peak / dram : xMin;
    const start = Math.max(ridge, xMin);
    roofs.push({
      name,
      x1: project(x, start),
      y1: project(y, peak),
      x2: project(x, xMax),
      y2: project(y, peak),
    });
  }
  if (dram > 0) {
    const end = Math.min(xMax, Math.max(macPeak, vecPeak) / dram);
    roofs.push({
      name: `DRAM ${dram.toFixed(1)} B/cycle`,
      x1: project(x, xMin),
      y1: project(y, xMin * dram),
      x2: project(x, end),
      y2: project(y, end * dram),
    });
  }
  return {
    width,
    height,
    x,
    y,
    dots,
    roofs,
    xTicks: decades(xMin, xMax),
    yTicks: decades(yMin, yMax),
  };
}

function tick(v: number): string {
  return v >= 1e4 || v < 1e-2 ? `1e${Math.round(Math.log10(v))}` : String(v);
}

/** The Roofline tab. */
export class RooflineTab implements View {
  readonly id = "roofline";
  readonly title = "Roofline";
  readonly key = "7";
  private root: HTMLElement | null = null;
  private ctx: ViewContext | null = null;
  private kernels: readonly KernelLink[] = [];
  private selected: number | null = null;

  mount(container: HTMLElement, ctx: ViewContext): void {
    this.root = container;
    this.ctx = ctx;
  }

  update(s: PageState, changed: ReadonlySet<Change>): void {
    if (!this.root) return;
    if (changed.has("lines")) {
      const l = s.lines;
      const i = l
        ? this.kernels.findIndex((k) => k.lines.from <= l.from && l.to <= k.lines.to)
        : -1;
      this.selected = i >= 0 ? i : null;
      this.root
        .querySelectorAll<SVGCircleElement>("circle.rl-dot")
        .forEach((c) => c.classList.toggle("selected", Number(c.dataset.kernel) === this.selected));
    }
    if (!changed.has("run")) return;
    if (!s.loaded) {
      this.root.replaceChildren();
      return;
    }
    const run = s.loaded.res.result;
    this.kernels = run.sourceMap.kernels;
    this.render(run.run.roofline, run.run.latencyModel);
  }

  /**
   * Both timing models side by side, per kernel, with the model's parameters on hover. Built
   * in one go: the table's layout, not its building, is what a full model's thousand rows
   * cost, and a table laid out again for each slice of rows (or of the chart beside it, in
   * the same column) costs more.
   */
  private timingTable(m: LatencyModelReport): HTMLElement | null {
    const rows = timingRows(m);
    if (rows.length === 0) return null;
    const cell = (tag: "td" | "th", text: string) => el(tag, { text });
    const params = m.params.map((p) => `${p.label} = ${p.value} (from ${p.from})`).join("\n");
    const headers = [
      "kernel",
      "event-level cycles",
      "roofline model cycles",
      "difference",
      "bound",
    ];
    return el(
      "table",
      { className: "rl-timing muted", "data-testid": "roofline-timing", title: params },
      el("tr", {}, ...headers.map((h) => cell("th", h))),
      ...rows.map((r) =>
        el(
          "tr",
          {},
          cell("td", r.name),
          cell("td", r.event),
          cell("td", r.model),
          cell("td", r.difference),
          cell("td", r.bound),
        ),
      ),
    );
  }

  private render(r: Roofline, latency: LatencyModelReport): void {
    const root = this.root;
    if (!root) return;
    const m = rooflineModel(r, 760, 380);
    const chart = svg("svg", {
      // Scales down to the pane's width (phones) and never above its drawn size.
      viewBox: `0 0 ${m.width} ${m.height}`,
      width: "100%",
      style: `max-width:${m.width}px`,
      role: "img",
      class: "rl-chart",
      "aria-label": "roofline: arithmetic intensity against achieved throughput",
    });
    const bottom = m.y.from;
    for (const t of m.xTicks) {
      const px = project(m.x, t);
      chart.append(svg("line", { x1: px, y1: m.y.to, x2: px, y2: bottom, class: "rl-grid" }));
      chart.append(svg("text", { x: px - 8, y: bottom + 14 }, tick(t)));
    }
    for (const t of m.yTicks) {
      const py = project(m.y, t);
      chart.append(svg("line", { x1: m.x.from, y1: py, x2: m.x.to, y2: py, class: "rl-grid" }));
      chart.append(svg("text", { x: 4, y: py + 4 }, tick(t)));
    }
    chart.append(
      svg("text", { x: m.x.from, y: m.height - 6 }, "work per DRAM byte (MAC/B, or op/B)"),
    );
    chart.append(svg("text", { x: m.x.from + 4, y: m.y.to + 12 }, "work per cycle"));
    for (const roof of m.roofs) {
      const { name, ...line } = roof;
      chart.append(svg("line", { ...line, class: "rl-roof" }));
      chart.append(svg("text", { x: roof.x2 - 120, y: roof.y2 - 4, class: "rl-roof-label" }, name));
    }
    // One listener for every dot: a full model has a thousand.
    chart.addEventListener("click", (ev) => {
      const dot = (ev.target as Element | null)?.closest<SVGElement>("circle.rl-dot");
      const k = dot ? this.kernels[Number(dot.dataset.kernel)] : undefined;
      if (k) this.ctx?.selectLine("ktir", k.lines.from);
    });
    for (const d of m.dots) {
      const c = svg("circle", {
        cx: d.x,
        cy: d.y,
        r: 6,
        class: `rl-dot ${d.macs ? "rl-mac" : "rl-op"}${d.kernel === this.selected ? " selected" : ""}`,
        "data-kernel": d.kernel,
        "data-testid": `roofline-dot-${d.func}`,
      });
      c.append(svg("title", {}, d.label));
      chart.append(c);
    }
    const p = r.program;
    const b = p.bounds;
    const line = b
      ? `program: ${formatInt(Math.round(p.achievedCycles))} cycles, bound ${formatInt(Math.round(b.lowerBoundCycles))} (${b.bound}), ratio ${p.ratio.toFixed(2)} · DRAM ${formatInt(p.dramReadBytes + p.dramWriteBytes)} B moved for ${formatInt(p.uniqueDramBytes)} B unique (x${p.rereadFactor.toFixed(2)})`
      : "No roofline for this run.";
    root.replaceChildren(
      el("div", { className: "muted", "data-testid": "roofline-program", text: line }),
      chart,
      ...[this.timingTable(latency)].filter((t): t is HTMLElement => t !== null),
      el(
        "ul",
        { className: "muted" },
        ...r.assumptions.map((a) => el("li", { text: `assumption: ${a}` })),
      ),
    );
  }
}
