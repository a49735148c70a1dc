// Details of the selected core beside the ring: unit activity now and over the run, and its
// scratchpad use.

import type { RunInfo, TraceEvent } from "../api";
import { byId, el, formatInt } from "../dom";
import { EventIndex } from "../ring/model";
import type { ScratchPlan, Span } from "../session";
import { table } from "./timeline";

export class CoreDetails {
  private readonly root = byId<HTMLElement>("core-details");
  private run: RunInfo | null = null;
  private index: EventIndex | null = null;
  private plan: ScratchPlan | null = null;
  private spans: Span[] = [];
  private core: number | null = null;
  private lastT = -1;

  constructor(private readonly onLine: (e: TraceEvent) => void) {}

  /** A new run: its events, its scratchpad plan (read once, in the worker) and kernel spans. */
  set(run: RunInfo, plan: ScratchPlan | null, spans: Span[]): void {
    this.run = run;
    // Built when a core is first picked: most visits to the ring pick none.
    this.index = null;
    this.plan = plan;
    this.spans = spans;
    this.lastT = -1;
  }

  select(core: number | null, t: number): void {
    this.core = core;
    this.lastT = -1;
    this.update(t);
  }

  update(t: number): void {
    if (Math.floor(t) === this.lastT) return;
    this.lastT = Math.floor(t);
    const run = this.run;
    if (!run || this.core === null) {
      this.root.replaceChildren(
        el("h3", { text: "Core details" }),
        el("p", {
          className: "muted",
          text: "Click a core on the ring to see its DMA / PT / SFP activity and scratchpad use.",
        }),
      );
      this.root.dataset.core = "";
      return;
    }
    const core = this.core;
    this.root.dataset.core = String(core);
    const pct = (x: number): string => `${(x * 100).toFixed(0)}%`;
    const s = run.summary?.cores.find((c) => c.core === core);
    const now: TraceEvent[] = [];
    this.index ??= new EventIndex(run.events);
    this.index.forEachActive(t, (i) => {
      if (run.events.core(i) === core) now.push(run.events.get(i));
    });
    const parts: Node[] = [el("h3", { text: `Core ${core} at cycle ${formatInt(t)}` })];
    if (now.length === 0) parts.push(el("p", { className: "muted", text: "idle" }));
    for (const e of now) {
      const b = el("button", {
        type: "button",
        className: "link",
        text: `line ${e.line}`,
        title: "Show this line in the KTIR editor",
      });
      b.addEventListener("click", () => this.onLine(e));
      parts.push(
        el(
          "div",
          { className: "mono" },
          `${e.unit.toUpperCase()} ${e.op} `,
          b,
          e.bytes ? ` ${formatInt(e.bytes)} B` : "",
        ),
      );
    }
    if (s) {
      parts.push(el("h3", { text: "Over the run" }));
      parts.push(
        table([
          ["DMA", `${pct(s.dma.utilisation)} · ${s.dma.tasks} tasks · ${formatInt(s.dmaBytes)} B`],
          ["PT", `${pct(s.pt.utilisation)} · ${s.pt.tasks} tasks`],
          ["SFP", `${pct(s.sfp.utilisation)} · ${s.sfp.tasks} tasks`],
        ]),
      );
    }
    const plan = this.plan;
    parts.push(el("h3", { text: "Scratchpad" }));
    if (!plan) {
      parts.push(el("p", { className: "muted", text: "no plan (KTIR module)" }));
    } else {
      const live = plan.buffers.filter((b) => {
        if (b.offset === null) return false;
        const t0 = this.spans[b.start]?.start ?? 0;
        const t1 = this.spans[Math.max(b.start, b.end - 1)]?.end ?? 0;
        return t >= t0 && t < t1;
      });
      const used = live.reduce((a, b) => a + b.bytesPerCore, 0);
      parts.push(
        table([
          ["now", `${formatInt(used)} B in ${live.length} buffer(s)`],
          ["peak", `${formatInt(plan.peak)} B`],
          ["capacity", `${formatInt(plan.capacity)} B`],
        ]),
      );
      for (const b of live)
        parts.push(
          el("div", {
            className: "mono",
            text: `${b.tensor} @${b.offset} ${formatInt(b.bytesPerCore)} B`,
          }),
        );
    }
    this.root.replaceChildren(...parts);
  }
}
