// The Compare tab: the run on screen beside a second run that changes one thing (the machine,
// the allocator, the attention block, double buffering, or the program before its KTIR edit).
// It shows both runs' cycles and bottleneck, their kernels on one roofline chart, their unit
// activity on one time axis, and the difference in a sentence. The page runs the second
// configuration (asked for through the context) and keeps it in the link.

import {
  busyProfile,
  changesSomething,
  describeDifference,
  NO_CHANGE,
  runFigures,
  specLabel,
  type CompareSpec,
  type RunFigures,
} from "../compare";
import { el, formatInt, svg } from "../dom";
import type { PipelineResult, Roofline } from "../api";
import { ALLOCATORS, type Allocator, MAX_ATTENTION_BLOCK, TP_DEGREES } from "../runSettings";
import { tickStep } from "../timeline/model";
import { project, rooflineModel } from "./roofline";
import type { Change, PageState, View, ViewContext } from "./view";

const UNITS = ["dma", "pt", "sfp"] as const;
const UNIT_LABEL: Record<(typeof UNITS)[number], string> = { dma: "DMA", pt: "PT", sfp: "SFP" };
/** Columns of the aligned timelines' busy profiles. */
const BUCKETS = 240;

/** One side of the comparison, in the order the sentence reads them (before, then after). */
interface Side {
  label: string;
  run: PipelineResult;
  figures: RunFigures;
}

/** The Compare tab. */
export class CompareTab implements View {
  readonly id = "compare";
  readonly title = "Compare";
  readonly key = "c";
  private ctx: ViewContext | null = null;
  private machine!: HTMLSelectElement;
  private allocator!: HTMLSelectElement;
  private block!: HTMLInputElement;
  private doubleBuffer!: HTMLSelectElement;
  private tp!: HTMLSelectElement;
  private ktirEdit!: HTMLInputElement;
  private runButton!: HTMLButtonElement;
  private status!: HTMLElement;
  private body!: HTMLElement;
  private machines: readonly string[] = [];
  /** Figures of the run on screen, kept while only the second run changes. */
  private figures: { run: PipelineResult; figures: RunFigures } | null = null;

  mount(container: HTMLElement, ctx: ViewContext): void {
    this.ctx = ctx;
    const select = (id: string, label: string, options: [string, string][]) =>
      el(
        "select",
        { "data-testid": id, "aria-label": label },
        ...options.map(([value, text]) => el("option", { value, text })),
      );
    this.machine = select("cmp-machine", "machine of the second run", [["", "as on screen"]]);
    this.allocator = select("cmp-allocator", "allocator of the second run", [
      ["", "as on screen"],
      ...ALLOCATORS.map((a): [string, string] => [a, a]),
    ]);
    this.block = el("input", {
      type: "number",
      min: "0",
      step: "1",
      placeholder: "as on screen",
      "data-testid": "cmp-attention-block",
      "aria-label": "attention block of the second run (0: none)",
    });
    this.doubleBuffer = select("cmp-double-buffer", "double buffering of the second run", [
      ["", "as on screen"],
      ["on", "on"],
      ["off", "off"],
    ]);
    this.tp = select("cmp-tp", "cards of the second run (tensor parallelism)", [
      ["", "as on screen"],
      ...TP_DEGREES.map((n): [string, string] => [String(n), n === 1 ? "one card" : `TP ${n}`]),
    ]);
    this.ktirEdit = el("input", {
      type: "checkbox",
      "data-testid": "cmp-ktir-edit",
      "aria-label": "compare the program as compiled with the KTIR edit",
    });
    this.runButton = el("button", {
      type: "button",
      text: "Compare",
      "data-testid": "cmp-run",
      "aria-label": "run the second configuration and compare",
    });
    const clear = el("button", {
      type: "button",
      text: "Clear",
      "data-testid": "cmp-clear",
      "aria-label": "stop comparing",
    });
    this.ktirEdit.addEventListener("change", () => this.syncControls());
    this.runButton.addEventListener("click", () => this.ctx?.compare(this.readSpec()));
    clear.addEventListener("click", () => {
      this.setControls(null);
      this.ctx?.compare(null);
    });
    const field = (label: string, control: HTMLElement) =>
      el("label", { className: "cmp-field" }, el("span", { text: label }), control);
    this.status = el("p", { className: "muted", "data-testid": "compare-status" });
    this.body = el("div", { className: "cmp-body" });
    container.classList.add("cmp");
    container.append(
      el(
        "form",
        { className: "cmp-form", "aria-label": "second configuration" },
        el("p", { className: "muted", text: "Compare the run on screen with a second run:" }),
        field("machine", this.machine),
        field("allocator", this.allocator),
        field("attention block", this.block),
        field("double buffering", this.doubleBuffer),
        field("cards", this.tp),
        el(
          "label",
          { className: "cmp-field cmp-check" },
          this.ktirEdit,
          el("span", { text: "before and after the KTIR edit" }),
        ),
        el("div", { className: "cmp-buttons" }, this.runButton, clear),
      ),
      this.status,
      this.body,
    );
    container.querySelector("form")?.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.ctx?.compare(this.readSpec());
    });
  }

  /** The spec the controls describe (the KTIR edit excludes the other changes). */
  private readSpec(): CompareSpec | null {
    if (this.ktirEdit.checked) return { ...NO_CHANGE, ktirEdit: true };
    const block = this.block.value.trim();
    const n = block === "" ? null : Number(block);
    const s: CompareSpec = {
      machine: this.machine.value || null,
      allocator: (this.allocator.value || null) as Allocator | null,
      attentionBlock:
        n !== null && Number.isInteger(n) && n >= 0 && n <= MAX_ATTENTION_BLOCK ? n : null,
      doubleBuffer: this.doubleBuffer.value === "" ? null : this.doubleBuffer.value === "on",
      tp: this.tp.value === "" ? null : Number(this.tp.value),
      ktirEdit: false,
    };
    return changesSomething(s) ? s : null;
  }

  private setControls(s: CompareSpec | null): void {
    const spec = s ?? NO_CHANGE;
    this.machine.value = spec.machine ?? "";
    this.allocator.value = spec.allocator ?? "";
    this.block.value = spec.attentionBlock === null ? "" : String(spec.attentionBlock);
    this.doubleBuffer.value = spec.doubleBuffer === null ? "" : spec.doubleBuffer ? "on" : "off";
    this.tp.value = spec.tp === null ? "" : String(spec.tp);
    this.ktirEdit.checked = spec.ktirEdit;
    this.syncControls();
  }

  private syncControls(): void {
    const edit = this.ktirEdit.checked;
    for (const c of [this.machine, this.allocator, this.block, this.doubleBuffer, this.tp])
      c.disabled = edit;
  }

  private setMachines(list: readonly string[]): void {
    if (list.join() === this.machines.join()) return;
    this.machines = list;
    const value = this.machine.value;
    this.machine.replaceChildren(
      el("option", { value: "", text: "as on screen" }),
      ...list.map((m) => el("option", { value: m, text: m })),
    );
    this.machine.value = list.includes(value) ? value : "";
  }

  update(s: PageState, changed: ReadonlySet<Change>): void {
    if (!this.ctx) return;
    if (changed.has("run") || changed.has("compare")) this.setMachines(s.machines);
    if (changed.has("busy")) this.runButton.disabled = s.busy;
    if (changed.has("compare")) this.setControls(s.compare?.spec ?? null);
    if (!changed.has("run") && !changed.has("compare")) return;
    this.render(s);
  }

  private render(s: PageState): void {
    const c = s.compare;
    const loaded = s.loaded;
    if (!c || !loaded) {
      this.status.textContent = loaded
        ? "Pick what the second run changes, then Compare."
        : "Nothing is loaded.";
      this.body.replaceChildren();
      return;
    }
    const label = specLabel(c.spec);
    if (c.spec.ktirEdit && loaded.ktir === null) {
      this.status.textContent =
        "The run on screen has no KTIR edit: edit the KTIR in the IR tab and run it, then compare.";
      this.body.replaceChildren();
      return;
    }
    if (c.running || !c.other) {
      this.status.textContent = c.error
        ? `The second run (${label}) did not finish: ${c.error}`
        : `Running the second configuration (${label})…`;
      this.body.replaceChildren();
      return;
    }
    const here = loaded.res.result;
    if (this.figures?.run !== here) this.figures = { run: here, figures: runFigures(here) };
    const screen: Side = { label: "on screen", run: here, figures: this.figures.figures };
    const other = c.other.result;
    const second: Side = { label, run: other, figures: runFigures(other) };
    // The sentence reads from the first configuration to the changed one; a KTIR edit's
    // comparison runs the program as compiled, which is the "before".
    const [before, after] = c.spec.ktirEdit
      ? [
          { ...second, label: "as compiled" },
          { ...screen, label: "edited" },
        ]
      : [screen, second];
    this.status.textContent = "";
    this.body.replaceChildren(
      el("p", {
        className: "cmp-sentence",
        "data-testid": "compare-sentence",
        text: `${describeDifference(label, before.figures, after.figures)}.`,
      }),
      this.table(before, after),
      el("h3", { text: "Kernels on the roofline" }),
      this.roofline(before, after),
      el("h3", { text: "Unit activity on one time axis" }),
      this.timelines(before, after),
    );
  }

  private table(a: Side, b: Side): HTMLTableElement {
    const row = (name: string, f: (s: Side) => string) =>
      el("tr", {}, el("th", { text: name }), el("td", { text: f(a) }), el("td", { text: f(b) }));
    const overlap = (s: Side) =>
      `${s.figures.overlapped.size} of ${s.figures.kernels} kernel${s.figures.kernels === 1 ? "" : "s"}`;
    return el(
      "table",
      { className: "cmp-table", "data-testid": "compare-table" },
      el("tr", {}, el("th", {}), el("th", { text: a.label }), el("th", { text: b.label })),
      row("machine", (s) => s.run.run.machine.name),
      row("cycles", (s) => formatInt(Math.round(s.figures.cycles))),
      // The clock is fixed per machine: a tensor-parallel run's time scales with its cycles.
      row(
        "time",
        (s) =>
          `${((s.run.run.summary.timeUs * s.figures.cycles) / Math.max(1, s.run.run.totalCycles)).toFixed(2)} µs`,
      ),
      row("bottleneck", (s) => s.run.run.summary.bottleneck),
      row("DMA overlaps PT in", overlap),
    );
  }

  /** Both runs' kernels on one chart: a line from each kernel's first dot to its second. */
  private roofline(a: Side, b: Side): SVGSVGElement {
    const ra = a.run.run.roofline;
    const rb = b.run.run.roofline;
    // One set of scales spanning both runs' kernels and roofs.
    const both: Roofline = { ...ra, kernels: [...ra.kernels, ...rb.kernels] };
    const machineA = a.run.run.machine.name;
    const machineB = b.run.run.machine.name;
    // Runs on two machines: both machines' roofs, on scales that hold them both.
    const twoMachines = machineA !== machineB && rb.rates !== null;
    const also = twoMachines ? [rb.rates] : [];
    const m = rooflineModel(both, 760, 320, also);
    const chart = svg("svg", {
      viewBox: `0 0 ${m.width} ${m.height}`,
      width: "100%",
      style: `max-width:${m.width}px`,
      role: "img",
      class: "rl-chart cmp-roofline",
      "data-testid": "compare-roofline",
      "aria-label":
        `roofline of both runs: ${a.label} (filled) and ${b.label} (hollow)` +
        (twoMachines ? `; roofs of ${machineA} (solid) and ${machineB} (dashed)` : ""),
    });
    const tick = (v: number) =>
      v >= 1e4 || v < 1e-2 ? `1e${Math.round(Math.log10(v))}` : String(v);
    for (const t of m.xTicks) {
      const px = project(m.x, t);
      chart.append(svg("line", { x1: px, y1: m.y.to, x2: px, y2: m.y.from, class: "rl-grid" }));
      chart.append(svg("text", { x: px - 8, y: m.y.from + 14 }, tick(t)));
    }
    for (const t of m.yTicks) {
      const py = project(m.y, t);
      chart.append(svg("line", { x1: m.x.from, y1: py, x2: m.x.to, y2: py, class: "rl-grid" }));
      chart.append(svg("text", { x: 4, y: py + 4 }, tick(t)));
    }
    // Each machine's roofs on the shared scales (dashed for the second run's other machine),
    // labelled with the machine's name where its highest ceiling ends.
    const roofsOf = (r: Roofline, cls: string, machine: string, side: "a" | "b") => {
      const rates = r.rates;
      if (!rates) return;
      const dram = rates.dramBytesPerCycle;
      const peaks = [
        rates.macsPerCyclePerCore * rates.cores,
        rates.elementwisePerCyclePerCore * rates.cores,
      ].filter((p) => p > 0);
      const seg = (x1: number, y1: number, x2: number, y2: number, name: string) => {
        const l = svg("line", {
          x1: project(m.x, x1),
          y1: project(m.y, y1),
          x2: project(m.x, x2),
          y2: project(m.y, y2),
          class: `rl-roof ${cls}`,
          "data-testid": `cmp-roof-${side}`,
        });
        l.append(svg("title", {}, `${machine}: ${name}`));
        chart.append(l);
      };
      for (const peak of peaks) {
        const start = dram > 0 ? Math.max(peak / dram, m.x.min) : m.x.min;
        seg(start, peak, m.x.max, peak, `${peak} per cycle`);
      }
      if (dram > 0 && peaks.length > 0) {
        const end = Math.min(m.x.max, Math.max(...peaks) / dram);
        seg(m.x.min, m.x.min * dram, end, end * dram, `DRAM ${dram.toFixed(1)} B/cycle`);
      }
      if (twoMachines && peaks.length > 0) {
        const top = project(m.y, Math.max(...peaks));
        chart.append(
          svg(
            "text",
            {
              x: m.x.to - 4,
              y: side === "a" ? top - 4 : top + 12,
              "text-anchor": "end",
              class: `cmp-roof-label ${cls}`,
              "data-testid": `cmp-roof-label-${side}`,
            },
            `${machine} roofs`,
          ),
        );
      }
    };
    roofsOf(ra, "", machineA, "a");
    if (twoMachines) roofsOf(rb, "cmp-roof-b", machineB, "b");
    const place = (r: Roofline) =>
      new Map(
        rooflineModel({ ...both, kernels: r.kernels }, 760, 320, also).dots.map((d) => [
          d.func,
          {
            ...d,
            x: project(m.x, d.intensity),
            y: project(m.y, d.throughput),
          },
        ]),
      );
    const da = place(ra);
    const db = place(rb);
    for (const [func, p] of da) {
      const q = db.get(func);
      if (q) chart.append(svg("line", { x1: p.x, y1: p.y, x2: q.x, y2: q.y, class: "cmp-move" }));
    }
    const dots = (map: typeof da, side: "a" | "b", s: Side) => {
      for (const d of map.values()) {
        const c = svg("circle", {
          cx: d.x,
          cy: d.y,
          r: 5,
          class: `cmp-dot cmp-dot-${side}`,
          "data-testid": `cmp-dot-${side}-${d.func}`,
        });
        c.append(svg("title", {}, `${s.label} · ${d.label}`));
        chart.append(c);
      }
    };
    dots(da, "a", a);
    dots(db, "b", b);
    chart.append(
      svg("circle", { cx: m.x.from + 10, cy: m.y.to + 8, r: 5, class: "cmp-dot cmp-dot-a" }),
    );
    chart.append(svg("text", { x: m.x.from + 20, y: m.y.to + 12 }, a.label));
    chart.append(
      svg("circle", { cx: m.x.from + 10, cy: m.y.to + 24, r: 5, class: "cmp-dot cmp-dot-b" }),
    );
    chart.append(svg("text", { x: m.x.from + 20, y: m.y.to + 28 }, b.label));
    chart.append(
      svg("text", { x: m.x.from, y: m.height - 6 }, "work per DRAM byte → · work per cycle ↑"),
    );
    return chart;
  }

  /** Each run's DMA, PT and SFP activity (fraction of cores busy) on one cycle axis. */
  private timelines(a: Side, b: Side): SVGSVGElement {
    const width = 760;
    const left = 92;
    const plot = width - left - 12;
    const rowH = 14;
    const headH = 16;
    const sideH = headH + UNITS.length * rowH + 8;
    const height = 2 * sideH + 24;
    const axis = Math.max(a.run.run.totalCycles, b.run.run.totalCycles, 1);
    const chart = svg("svg", {
      viewBox: `0 0 ${width} ${height}`,
      width: "100%",
      style: `max-width:${width}px`,
      role: "img",
      class: "cmp-timeline",
      "data-testid": "compare-timeline",
      "data-axis": Math.round(axis),
      "data-ends": [a, b].map((s) => Math.round(s.run.run.totalCycles)).join(","),
      "aria-label": `unit activity of both runs on one time axis of ${formatInt(Math.round(axis))} cycles`,
    });
    const xOf = (cycle: number) => left + (cycle / axis) * plot;
    [a, b].forEach((s, i) => {
      const top = i * sideH;
      const total = s.run.run.totalCycles;
      chart.append(
        svg(
          "text",
          { x: 0, y: top + 12, class: "cmp-side-label" },
          `${s.label} · ${formatInt(Math.round(total))} cycles${s.run.tp ? " (one card's program)" : ""}`,
        ),
      );
      const cores = Math.max(1, s.run.run.summary.cores.length);
      UNITS.forEach((unit, r) => {
        const y = top + headH + r * rowH;
        chart.append(svg("text", { x: 0, y: y + rowH - 3, class: "cmp-unit" }, UNIT_LABEL[unit]));
        chart.append(
          svg("rect", {
            x: left,
            y,
            width: xOf(total) - left,
            height: rowH - 2,
            class: "cmp-lane",
          }),
        );
        const p = busyProfile(s.run.run.events, unit, axis, cores, BUCKETS);
        const w = plot / BUCKETS;
        p.forEach((v, k) => {
          if (v <= 0) return;
          chart.append(
            svg("rect", {
              x: left + k * w,
              y,
              width: w + 0.3,
              height: rowH - 2,
              class: `cmp-busy cmp-${unit}`,
              "fill-opacity": Math.max(0.15, v).toFixed(2),
            }),
          );
        });
      });
      // Where this run ends on the shared axis.
      const end = xOf(total);
      chart.append(
        svg("line", {
          x1: end,
          y1: top + headH - 2,
          x2: end,
          y2: top + headH + UNITS.length * rowH,
          class: "cmp-end",
        }),
      );
    });
    const base = 2 * sideH;
    chart.append(svg("line", { x1: left, y1: base, x2: left + plot, y2: base, class: "rl-grid" }));
    const step = tickStep(axis, 5);
    for (let t = 0; t <= axis; t += step) {
      const x = xOf(t);
      chart.append(svg("line", { x1: x, y1: base, x2: x, y2: base + 4, class: "rl-grid" }));
      chart.append(svg("text", { x: x - 10, y: base + 16, class: "cmp-unit" }, formatInt(t)));
    }
    return chart;
  }
}
