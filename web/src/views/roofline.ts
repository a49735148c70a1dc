// The roofline view: each kernel's arithmetic intensity (MACs, or element operations for a
// kernel without MACs, per DRAM byte) against the throughput it achieved, on log-log axes
// under the machine's roofs (DRAM bandwidth, and the PT and SFP peaks of all cores).
// The chart's geometry is a pure function (`rooflineModel`); the figures come from the
// run's roofline report, computed in Rust. Clicking a dot selects the kernel's KTIR lines,
// which the editor and the timeline follow.

import { el, formatInt, svg } from "../dom";
import type { KernelLink, KernelRoofline, LatencyModelReport, Roofline } from "../generated/types";
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

/** One kernel of the table, in figures (formatted by `timingRow`). */
export interface KernelRow {
  /** Index into `sourceMap.kernels`. */
  kernel: number;
  name: string;
  /** Cycles of the event-level schedule. */
  event: number;
  /** Cycles of the roofline latency model (sequential mode). */
  model: number;
  /** `model - event`. */
  difference: number;
  /** The latency model's bottleneck category. */
  bound: string;
  /** Achieved cycles over the roofline's lower bound (null: the run has no bound for it). */
  ratio: number | null;
}

/** The kernels of `m`, each with its ratio to its roofline bound from `r` when it has one. */
export function kernelRows(m: LatencyModelReport, r: Roofline): KernelRow[] {
  const ratios = new Map<number, number>();
  for (const k of r.kernels) if (k.achievedCycles > 0 && k.ratio > 0) ratios.set(k.kernel, k.ratio);
  return m.kernels.map((k) => ({
    kernel: k.kernel,
    name: k.func,
    event: k.eventCycles,
    model: k.sequentialCycles,
    difference: k.differenceCycles,
    bound: k.bottleneck,
    ratio: ratios.get(k.kernel) ?? null,
  }));
}

/** A kernel row as the table shows it. */
export function timingRow(k: KernelRow): TimingRow {
  return {
    name: k.name,
    event: formatInt(Math.round(k.event)),
    model: formatInt(Math.round(k.model)),
    difference: signed(k.difference),
    bound: k.bound,
  };
}

/** The comparison rows: one per kernel, then the program. Empty when the run has none. */
export function timingRows(m: LatencyModelReport): TimingRow[] {
  if (m.kernels.length === 0) return [];
  return [
    ...kernelRows(m, emptyRoofline()).map(timingRow),
    {
      name: "program",
      event: formatInt(Math.round(m.eventCycles)),
      model: formatInt(Math.round(m.sequentialCycles)),
      difference: signed(m.sequentialCycles - m.eventCycles),
      bound: "",
    },
  ];
}

/** A column of the kernel table the reader can sort by. */
export type SortKey = "name" | "event" | "model" | "difference" | "ratio" | "bound";

/** How the kernel table is ordered. */
export interface SortOrder {
  key: SortKey;
  descending: boolean;
}

/**
 * The table's first order: furthest from its roofline bound first (what a reader looks for),
 * or by the two models' difference when the run has no bounds.
 */
export function defaultOrder(rows: readonly KernelRow[]): SortOrder {
  return rows.some((r) => r.ratio !== null)
    ? { key: "ratio", descending: true }
    : { key: "difference", descending: true };
}

/**
 * `rows` in `order`: numbers by value (the difference by its size, either sign), text in
 * alphabetical order; rows without a value last either way; ties in kernel order.
 */
export function sortRows(rows: readonly KernelRow[], order: SortOrder): KernelRow[] {
  const dir = order.descending ? -1 : 1;
  const value = (r: KernelRow): number | string | null => {
    switch (order.key) {
      case "name":
        return r.name;
      case "bound":
        return r.bound;
      case "difference":
        return Math.abs(r.difference);
      default:
        return r[order.key];
    }
  };
  return rows
    .map((r) => ({ r, v: value(r) }))
    .sort((a, b) => {
      if (a.v === null || b.v === null)
        return a.v === b.v ? a.r.kernel - b.r.kernel : a.v === null ? 1 : -1;
      const c =
        typeof a.v === "string" || typeof b.v === "string"
          ? String(a.v).localeCompare(String(b.v))
          : a.v - b.v;
      return c !== 0 ? dir * c : a.r.kernel - b.r.kernel;
    })
    .map((x) => x.r);
}

/** The kernels whose name holds `filter` (case aside; all for an empty filter). */
export function filterRows(rows: readonly KernelRow[], filter: string): KernelRow[] {
  const f = filter.trim().toLowerCase();
  return f === "" ? [...rows] : rows.filter((r) => r.name.toLowerCase().includes(f));
}

/** Rows per page of the kernel table: a full model's thousand rows cost the page its layout. */
export const PAGE_ROWS = 50;

/** The page (0-based) of `rows` that holds `kernel`, or null when it is not among them. */
export function pageHolding(
  rows: readonly KernelRow[],
  kernel: number,
  size = PAGE_ROWS,
): number | null {
  const i = rows.findIndex((r) => r.kernel === kernel);
  return i < 0 ? null : Math.floor(i / size);
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

/** The kernel table's columns, in order. */
const COLUMNS: readonly { key: SortKey; label: string; text: boolean }[] = [
  { key: "name", label: "kernel", text: true },
  { key: "event", label: "event-level cycles", text: false },
  { key: "model", label: "roofline model cycles", text: false },
  { key: "difference", label: "difference", text: false },
  { key: "bound", label: "bound", text: true },
  { key: "ratio", label: "× its roofline bound", text: false },
];

/**
 * Both timing models side by side, per kernel, with the model's parameters on hover: a page
 * of `PAGE_ROWS` kernels at a time (first those furthest from their bound), sortable by any
 * column and filtered by name, with the program's line below. A full model has some 1,300
 * kernels, and the browser's layout of them all held the page's thread for 200-300 ms.
 */
export class KernelTable {
  readonly root: HTMLElement;
  private order: SortOrder;
  private filter = "";
  private page = 0;
  /** The rows in order, filtered. */
  private shown: KernelRow[] = [];
  private selected: number | null = null;
  private readonly body = el("tbody");
  private readonly heads: HTMLTableCellElement[] = [];
  private readonly status = el("span", { className: "muted", "aria-live": "polite" });
  private readonly input = el("input", {
    type: "search",
    placeholder: "filter kernels by name",
    "aria-label": "Filter kernels by name",
    "data-testid": "roofline-filter",
  });
  private readonly pager: Record<"first" | "prev" | "next" | "last", HTMLButtonElement>;

  constructor(
    private readonly rows: readonly KernelRow[],
    program: TimingRow,
    params: string,
    /** A kernel's name was clicked (its index into `sourceMap.kernels`). */
    onPick: (kernel: number) => void,
  ) {
    this.order = defaultOrder(rows);
    const button = (text: string, label: string): HTMLButtonElement =>
      el("button", { type: "button", text, "aria-label": label });
    this.pager = {
      first: button("«", "First page of kernels"),
      prev: button("‹", "Previous page of kernels"),
      next: button("›", "Next page of kernels"),
      last: button("»", "Last page of kernels"),
    };
    const pages = (): number => Math.max(1, Math.ceil(this.shown.length / PAGE_ROWS));
    const go = (page: number): void => {
      this.page = Math.min(Math.max(0, page), pages() - 1);
      this.renderBody();
    };
    this.pager.first.addEventListener("click", () => go(0));
    this.pager.prev.addEventListener("click", () => go(this.page - 1));
    this.pager.next.addEventListener("click", () => go(this.page + 1));
    this.pager.last.addEventListener("click", () => go(pages() - 1));
    this.input.addEventListener("input", () => {
      this.filter = this.input.value;
      this.page = 0;
      this.reorder();
    });
    const head = el(
      "tr",
      {},
      ...COLUMNS.map((c) => {
        const b = el("button", { type: "button", className: "rl-sort", text: c.label });
        b.addEventListener("click", () => {
          // A new column starts with its most telling end: text A to Z, figures largest first.
          this.order =
            this.order.key === c.key
              ? { key: c.key, descending: !this.order.descending }
              : { key: c.key, descending: !c.text };
          this.page = 0;
          this.reorder();
        });
        const th = el("th", { scope: "col", "data-key": c.key }, b);
        this.heads.push(th);
        return th;
      }),
    );
    // One listener for every row's kernel button.
    this.body.addEventListener("click", (ev) => {
      const b = (ev.target as Element | null)?.closest<HTMLElement>("button[data-kernel]");
      const k = Number(b?.dataset.kernel);
      if (b && Number.isInteger(k)) onPick(k);
    });
    const foot = el(
      "tfoot",
      {},
      el(
        "tr",
        {},
        ...[program.name, program.event, program.model, program.difference, program.bound, ""].map(
          (t) => el("td", { text: t }),
        ),
      ),
    );
    const controls = el(
      "div",
      { className: "rl-table-controls", "data-testid": "roofline-pager" },
      this.input,
      this.pager.first,
      this.pager.prev,
      this.status,
      this.pager.next,
      this.pager.last,
    );
    this.root = el(
      "div",
      { className: "rl-table" },
      controls,
      el(
        "table",
        { className: "rl-timing muted", "data-testid": "roofline-timing", title: params },
        el("thead", {}, head),
        this.body,
        foot,
      ),
    );
    this.reorder();
  }

  /**
   * Marks kernel `kernel` (null: none). With `reveal`, its row is brought into the table: the
   * page that holds it, the filter cleared if the filter hides it.
   */
  select(kernel: number | null, reveal: boolean): void {
    this.selected = kernel;
    if (reveal && kernel !== null && this.rows.some((r) => r.kernel === kernel)) {
      if (pageHolding(this.shown, kernel) === null) {
        this.filter = "";
        this.input.value = "";
        this.shown = filterRows(sortRows(this.rows, this.order), "");
      }
      const page = pageHolding(this.shown, kernel);
      if (page !== null && page !== this.page) {
        this.page = page;
        this.renderBody();
      }
    }
    for (const tr of this.body.rows)
      tr.classList.toggle("selected", Number(tr.dataset.kernel) === kernel);
  }

  /** The row of `kernel` on the page shown, if it is. */
  rowOf(kernel: number): HTMLTableRowElement | null {
    for (const tr of this.body.rows) if (Number(tr.dataset.kernel) === kernel) return tr;
    return null;
  }

  private reorder(): void {
    this.shown = filterRows(sortRows(this.rows, this.order), this.filter);
    for (const th of this.heads) {
      const key = th.dataset.key;
      th.setAttribute(
        "aria-sort",
        key === this.order.key ? (this.order.descending ? "descending" : "ascending") : "none",
      );
    }
    this.renderBody();
  }

  private renderBody(): void {
    const from = this.page * PAGE_ROWS;
    const page = this.shown.slice(from, from + PAGE_ROWS);
    this.body.replaceChildren(
      ...page.map((k) => {
        const t = timingRow(k);
        return el(
          "tr",
          {
            "data-kernel": k.kernel,
            className: k.kernel === this.selected ? "selected" : undefined,
          },
          el(
            "td",
            {},
            el("button", {
              type: "button",
              className: "rl-kernel",
              "data-kernel": k.kernel,
              title: "select its KTIR lines",
              text: t.name,
            }),
          ),
          el("td", { text: t.event }),
          el("td", { text: t.model }),
          el("td", { text: t.difference }),
          el("td", { text: t.bound }),
          el("td", { text: k.ratio === null ? "–" : `${k.ratio.toFixed(2)}x` }),
        );
      }),
    );
    const n = this.shown.length;
    const column = COLUMNS.find((c) => c.key === this.order.key);
    const down = this.order.descending;
    const direction = column?.text
      ? down
        ? "Z to A"
        : "A to Z"
      : down
        ? "largest first"
        : "smallest first";
    const what =
      this.filter.trim() === ""
        ? `${formatInt(n)} kernels`
        : `${formatInt(n)} of ${formatInt(this.rows.length)} kernels matching`;
    this.status.textContent =
      n === 0
        ? "no kernel matches"
        : `${formatInt(from + 1)}–${formatInt(from + page.length)} of ${what}, by ${column?.label ?? ""} (${direction})`;
    const last = Math.max(0, Math.ceil(n / PAGE_ROWS) - 1);
    this.pager.first.disabled = this.pager.prev.disabled = this.page === 0;
    this.pager.next.disabled = this.pager.last.disabled = this.page >= last;
  }
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
  private table: KernelTable | null = null;
  /** Whether the next selection came from this view (its row is scrolled to). */
  private revealRow = false;

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
      // The selected kernel's row is brought into the table (whoever selected it); scrolled
      // to when this view's dot or row was clicked.
      this.table?.select(this.selected, true);
      const row = this.selected !== null ? this.table?.rowOf(this.selected) : null;
      if (this.revealRow && row) row.scrollIntoView({ block: "nearest" });
      this.revealRow = false;
    }
    if (!changed.has("run")) return;
    if (!s.loaded) {
      this.table = null;
      this.root.replaceChildren();
      return;
    }
    const run = s.loaded.res.result;
    this.kernels = run.sourceMap.kernels;
    this.render(run.run.roofline, run.run.latencyModel);
  }

  /** The kernel table (null: the run has no latency model). */
  private timingTable(r: Roofline, m: LatencyModelReport): KernelTable | null {
    const rows = timingRows(m);
    const program = rows.at(-1);
    if (!program) return null;
    const params = m.params.map((p) => `${p.label} = ${p.value} (from ${p.from})`).join("\n");
    return new KernelTable(kernelRows(m, r), program, params, (kernel) => this.pick(kernel));
  }

  /** Selects kernel `kernel`'s KTIR lines (a dot or a row was clicked), its row brought into view. */
  private pick(kernel: number): void {
    const k = this.kernels[kernel];
    if (!k) return;
    this.revealRow = true;
    this.ctx?.selectLine("ktir", k.lines.from);
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
      if (dot) this.pick(Number(dot.dataset.kernel));
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
    this.table = this.timingTable(r, latency);
    this.table?.select(this.selected, true);
    root.replaceChildren(
      el("div", { className: "muted", "data-testid": "roofline-program", text: line }),
      chart,
      ...(this.table ? [this.table.root] : []),
      el(
        "ul",
        { className: "muted" },
        ...r.assumptions.map((a) => el("li", { text: `assumption: ${a}` })),
      ),
    );
  }
}
