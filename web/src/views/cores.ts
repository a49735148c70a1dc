// Work division (each op's cores coloured by the slice they own) and the scratchpad plan
// (address against time for the chosen core).

import { byId, el, formatInt, svg } from "../dom";
import {
  divisionAt,
  sliceColour,
  slicedCores,
  type CoresDigest,
  type Division,
  type ScratchPlan,
  type Span,
} from "../session";
import type { Change, PageState, View, ViewContext } from "./view";

/**
 * Ops whose grids are drawn at first, and added each time the reader nears the end of those
 * drawn (or asks). A full model has some 2,000 device ops, 64,000 cells: drawn whole, their
 * layout and paint held the page's thread for 250-400 ms, and few readers scroll through them.
 */
export const GRID_BATCH = 24;

/** How far below the view (px) the end of the drawn grids starts the next batch. */
const GRID_AHEAD_PX = 800;

/** Buffers in DRAM listed open under the scratchpad chart; a longer list starts folded. */
const DRAM_LIST_OPEN = 20;

/** Rough width of one character of the chart's 10px monospace labels. */
const CHAR_W = 6.2;

/** `text` cut to `maxChars` with an ellipsis (the full text goes in a title). */
export function fitLabel(text: string, maxChars: number): string {
  const n = Math.floor(maxChars);
  if (text.length <= n) return text;
  if (n <= 1) return "";
  return `${text.slice(0, n - 1)}…`;
}

/**
 * A core's slice in a cell: the coordinates along the split dimensions only (a 4-D op split
 * along one dimension shows one number); the cell's title has them all.
 */
export function splitCoords(slice: readonly number[], splits: readonly number[]): string {
  const split = slice.filter((_, i) => (splits[i] ?? 1) > 1);
  return (split.length ? split : slice.slice(0, 1)).join(",");
}

/** An SVG label cut to `width` pixels, with the full text as its tooltip. */
function svgLabel(x: number, y: number, text: string, width: number): SVGTextElement | null {
  const shown = fitLabel(text, width / CHAR_W);
  if (shown === "") return null;
  const t = svg("text", { x, y }, shown);
  t.append(svg("title", {}, text));
  return t;
}

/** Runs `fn` in a task after the next frame (soon, where there are no frames). */
function afterFrame(fn: () => void): void {
  if (typeof requestAnimationFrame === "function") requestAnimationFrame(() => setTimeout(fn, 0));
  else setTimeout(fn, 0);
}

export class CoresView {
  private readonly wd = byId<HTMLDivElement>("work-division");
  private readonly sp = byId<HTMLDivElement>("scratchpad");
  private readonly corePicker = byId<HTMLSelectElement>("scratch-core");
  private spans: Span[] = [];
  /** The run's work division and scratchpad plan, read in the worker. */
  private digest: CoresDigest | null = null;
  /** The first division of each op, by op name (for the scratchpad: whether a core has it). */
  private divisionOf = new Map<string, number>();
  private plan: ScratchPlan | null = null;
  private ops: string[] = [];
  private cores = 0;
  private selected: number | null = null;
  /** Divisions whose grids are drawn (the first ones). */
  private drawn = 0;
  /** Draws the next batch of grids; last in the grids while ops remain. */
  private readonly more = el("button", {
    type: "button",
    className: "wd-more",
    "data-testid": "work-division-more",
  });
  /** Counts the runs set: a chart waiting for the next frame draws only for the latest. */
  private generation = 0;
  /** Draws the next batch when `more` nears the view (none where the browser lacks it). */
  private readonly ahead: IntersectionObserver | null;

  constructor(private readonly onCore: (core: number) => void) {
    this.more.addEventListener("click", () => this.drawMore());
    this.ahead =
      typeof IntersectionObserver === "function"
        ? new IntersectionObserver(
            (seen) => {
              if (seen.some((e) => e.isIntersecting)) this.drawMore();
            },
            {
              root: this.wd.closest(".cores-body"),
              rootMargin: `0px 0px ${GRID_AHEAD_PX}px 0px`,
            },
          )
        : null;
    this.corePicker.addEventListener("change", () => {
      const c = Number(this.corePicker.value);
      if (Number.isInteger(c)) this.onCore(c);
    });
    // One listener for every cell: a full model has thousands.
    this.wd.addEventListener("click", (ev) => {
      const cell = (ev.target as Element | null)?.closest<HTMLElement>(".wd-cell[data-core]");
      const c = Number(cell?.dataset.core);
      if (cell && Number.isInteger(c)) this.onCore(c);
    });
  }

  /** `spans`: time span of each device op's kernel, in op order. */
  set(digest: CoresDigest, cores: number, spans: Span[]): void {
    this.digest = digest;
    this.divisionOf = new Map();
    digest.ops.forEach((op, i) => {
      if (!this.divisionOf.has(op)) this.divisionOf.set(op, i);
    });
    this.plan = digest.plan;
    this.ops = digest.deviceOps;
    this.cores = cores;
    this.spans = spans;
    this.corePicker.replaceChildren(
      ...Array.from({ length: cores }, (_, i) => el("option", { value: i, text: `core ${i}` })),
    );
    this.renderDivision();
    // The chart is drawn after the grids' frame, so the two layouts are two short tasks, not
    // one long one (a full model's chart has some 3,000 elements).
    this.sp.replaceChildren();
    const generation = ++this.generation;
    afterFrame(() => {
      if (generation === this.generation) this.renderScratchpad();
    });
  }

  selectCore(core: number | null): void {
    if (core === this.selected) return;
    this.selected = core;
    if (core !== null) this.corePicker.value = String(core);
    // The division grids stay; only the marked cell moves (a full model has thousands).
    for (const cell of this.wd.querySelectorAll<HTMLElement>(".wd-cell[data-core]"))
      cell.classList.toggle("selected", cell.dataset.core === String(core));
    this.renderScratchpad();
  }

  private renderDivision(): void {
    this.drawn = 0;
    this.ahead?.unobserve(this.more);
    if (!this.digest || this.digest.ops.length === 0) {
      this.wd.replaceChildren(
        el("p", { className: "muted", text: "No work-division snapshot for this source." }),
      );
      return;
    }
    this.wd.replaceChildren();
    this.drawMore();
  }

  /** Draws the next `GRID_BATCH` ops' grids, and the control for those after them. */
  private drawMore(): void {
    const digest = this.digest;
    const count = digest?.ops.length ?? 0;
    if (!digest || this.drawn >= count) return;
    const end = Math.min(count, this.drawn + GRID_BATCH);
    const frag = document.createDocumentFragment();
    for (let i = this.drawn; i < end; i++) {
      const { division, labels } = divisionAt(digest, i);
      frag.append(this.grid(division, labels));
    }
    this.drawn = end;
    this.more.remove();
    this.wd.append(frag);
    this.ahead?.unobserve(this.more);
    if (end >= count) return;
    const rest = count - end;
    this.more.textContent = `show ${Math.min(GRID_BATCH, rest)} more ops (${formatInt(end)} of ${formatInt(count)} shown)`;
    this.wd.append(this.more);
    // Observed anew, so a button still near the view after this batch draws the next.
    this.ahead?.observe(this.more);
  }

  /** One op's grid: its cores coloured by the slice each owns. */
  private grid(d: Division, names: readonly string[]): HTMLElement {
    const total = d.splits.reduce((a, b) => a * Math.max(1, b), 1);
    const sliceIndex = (s: number[]): number =>
      s.reduce((acc, v, i) => acc * Math.max(1, d.splits[i] ?? 1) + v, 0);
    const cells = Array.from({ length: this.cores }, (_, core) => {
      const slice = d.coreToSlice[core];
      // The selection read when the cell is drawn: a core picked before shows.
      const cls = `wd-cell${slice ? "" : " idle"}${core === this.selected ? " selected" : ""}`;
      const title = slice
        ? `core ${core} owns slice ${names.map((n, i) => `${n}=${slice[i] ?? 0}`).join(" ")}`
        : `core ${core}: idle for this op`;
      const cell = el(
        "div",
        { className: cls, title, "data-core": core },
        el("span", { text: String(core) }),
        el("span", { className: "wd-slice", text: slice ? splitCoords(slice, d.splits) : "–" }),
      );
      if (slice) cell.style.background = sliceColour(sliceIndex(slice), total);
      return cell;
    });
    return el(
      "div",
      { className: "wd-op", "data-op": d.op },
      el("div", {
        className: "wd-head",
        text: `${d.op}: ${names.map((n, i) => `${n}=${d.splits[i] ?? 1}`).join(" ")} → ${d.coresUsed} cores`,
      }),
      el("div", { className: "wd-grid" }, ...cells),
      el("div", { className: "wd-rule", text: d.rule }),
    );
  }

  private renderScratchpad(): void {
    const plan = this.plan;
    if (!plan) {
      this.sp.replaceChildren(
        el("p", { className: "muted", text: "No scratchpad snapshot for this source." }),
      );
      return;
    }
    const core = this.selected ?? 0;
    const ops = this.ops;
    const digest = this.digest;
    const usedBy = (opIndex: number): boolean => {
      const name = ops[opIndex];
      const d = name === undefined ? undefined : this.divisionOf.get(name);
      return d === undefined || !digest || core < slicedCores(digest, d);
    };
    const inPad = plan.buffers.filter((b) => b.offset !== null);
    const inDram = plan.buffers.filter((b) => b.offset === null);
    const total = Math.max(1, ...this.spans.map((s) => s.end));
    const W = 760;
    const H = 190;
    const L = 70;
    const B = 22;
    const pw = W - L - 10;
    const ph = H - B - 8;
    const top = Math.max(plan.peak, ...inPad.map((b) => (b.offset ?? 0) + b.bytesPerCore), 1);
    const yMax = Math.min(plan.capacity || top, top * 1.15);
    const x = (c: number): number => L + (c / total) * pw;
    const y = (a: number): number => 8 + ph - (a / yMax) * ph;
    const s = svg("svg", {
      viewBox: `0 0 ${W} ${H}`,
      width: "100%",
      style: `max-width:${W}px`,
      role: "img",
      "aria-label": `scratchpad of core ${core}`,
    });
    s.append(svg("line", { x1: L, y1: 8 + ph, x2: L + pw, y2: 8 + ph, class: "sp-axis" }));
    s.append(svg("line", { x1: L, y1: 8, x2: L, y2: 8 + ph, class: "sp-axis" }));
    s.append(svg("text", { x: 4, y: 14 }, `${formatInt(yMax)} B`));
    s.append(svg("text", { x: 4, y: 8 + ph }, "0"));
    s.append(svg("text", { x: L, y: H - 6 }, "0"));
    s.append(svg("text", { x: L + pw - 70, y: H - 6 }, `${formatInt(total)} cycles`));
    // Op names sit under their span, cut to it (and clear of the total on the right).
    const live = this.spans
      .map((sp, i) => ({ sp, i }))
      .filter(({ sp }) => sp.end > sp.start)
      .sort((a, b) => a.sp.start - b.sp.start);
    live.forEach(({ sp, i }, k) => {
      const next = live[k + 1];
      const right = Math.min(next ? x(next.sp.start) : L + pw - 74, L + pw - 74);
      const label = svgLabel(x(sp.start) + 2, H - 6, ops[i] ?? `op${i}`, right - x(sp.start) - 4);
      if (label) s.append(label);
    });
    inPad.forEach((b, i) => {
      if (!usedBy(b.start)) return;
      const t0 = this.spans[b.start]?.start ?? 0;
      const t1 = this.spans[Math.max(b.start, b.end - 1)]?.end ?? total;
      const r = svg("rect", {
        x: x(t0),
        y: y((b.offset ?? 0) + b.bytesPerCore),
        width: Math.max(2, x(t1) - x(t0)),
        height: Math.max(2, y(b.offset ?? 0) - y((b.offset ?? 0) + b.bytesPerCore)),
        fill: sliceColour(i, Math.max(1, inPad.length)),
        class: "sp-buf",
      });
      r.append(
        svg(
          "title",
          {},
          `${b.tensor}: ${formatInt(b.bytesPerCore)} B at offset ${b.offset}, ops [${b.start}, ${b.end})`,
        ),
      );
      s.append(r);
      const label = svgLabel(
        x(t0) + 3,
        y((b.offset ?? 0) + b.bytesPerCore) + 11,
        b.tensor,
        Math.min(L + pw, x(t1)) - x(t0) - 6,
      );
      if (label) s.append(label);
    });
    const rows: Element[] = [
      el("div", {
        className: "muted",
        text: `core ${core} · capacity ${formatInt(plan.capacity)} B · peak ${formatInt(plan.peak)} B per core · ${inPad.length} buffer(s) in scratchpad`,
      }),
      s,
    ];
    // A long list (a full model sends some 1,500 buffers to DRAM, 20,000 px of it) starts
    // folded: laid out, it doubled the cost of drawing the chart.
    if (inDram.length)
      rows.push(
        el(
          "details",
          { className: "sp-dram muted", open: inDram.length <= DRAM_LIST_OPEN },
          el("summary", { text: `${formatInt(inDram.length)} buffer(s) in DRAM` }),
          el(
            "ul",
            {},
            ...inDram.map((b) =>
              el("li", {
                text: `${b.tensor} (${formatInt(b.bytesPerCore)} B/core) in DRAM: ${b.dramReason}`,
              }),
            ),
          ),
        ),
      );
    this.sp.replaceChildren(...rows);
  }
}

/** The Cores tab: work division and the scratchpad plan. */
export class CoresTab implements View {
  readonly id = "cores";
  readonly title = "Cores";
  readonly key = "6";
  private view: CoresView | null = null;

  mount(_container: HTMLElement, ctx: ViewContext): void {
    this.view = new CoresView((core) => ctx.selectCore(core));
  }

  update(s: PageState, changed: ReadonlySet<Change>): void {
    const v = this.view;
    if (!v) return;
    if (changed.has("run") && s.loaded) {
      const r = s.loaded.res.result;
      v.set(s.loaded.res.digest.cores, r.run.machine.cores, s.loaded.res.digest.spans);
    }
    if (changed.has("core")) v.selectCore(s.core);
  }
}
