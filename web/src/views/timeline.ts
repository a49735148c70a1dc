// The timeline: one lane per core and unit (DMA, PT, SFP), zoom (wheel, + / -) and pan
// (drag), a time cursor shared with the ring, and the utilisation summary beside it.

import type { RunInfo, TraceEvent } from "../api";
import type { DetailsContext } from "../eventDetails";
import { byId, el, formatInt } from "../dom";
import { inRange, readPalette, type LineRange, type Palette } from "../ring/draw";
import {
  clampWindow,
  cycleAt,
  eventAt,
  panBy,
  pinchWindow,
  tickStep,
  UNITS,
  xOf,
  zoomAt,
  type Window,
} from "../timeline/model";
import { laneLists, loadAt, type SharedLane, type TimelineLanes } from "../timeline/lanes";
import { EventBox } from "./eventBox";
import { formatDuration } from "./results";
import { detailsContext } from "./ring";
import { tpStrip } from "./tpLanes";
import type { Change, PageState, Shortcut, View, ViewContext } from "./view";

const LABEL_W = 58;
const AXIS_H = 20;
/** Gap between the core lanes and the DRAM and link lanes below them. */
const SHARED_GAP = 5;

export interface TimelineEvents {
  /** Click on empty space: set the time. */
  time(t: number): void;
  /** Click on an event: select its KTIR line (and core). */
  event(e: TraceEvent): void;
  /** "Show in KTIR" in an event's details box. */
  open(e: TraceEvent): void;
}

export class TimelineView {
  private readonly stage = byId<HTMLDivElement>("timeline-stage");
  private readonly canvas = byId<HTMLCanvasElement>("timeline-canvas");
  private readonly hover = byId<HTMLSpanElement>("tl-hover");
  private readonly summary = byId<HTMLElement>("util-summary");
  private readonly ctx: CanvasRenderingContext2D;
  /**
   * Everything drawn but the time cursor, kept apart: while the clock plays only the cursor
   * moves, and a full model's 200,000 bars took most of each frame to draw again.
   */
  private readonly scene = document.createElement("canvas");
  private readonly sceneCtx: CanvasRenderingContext2D;
  /** The scene needs drawing again (the run, window, size, lines or colours changed). */
  private sceneStale = true;
  private palette: Palette;
  private run: RunInfo | null = null;
  /** Each lane's events, as indexes into the run's event table. */
  private byLane = new Map<number, Int32Array>();
  /** DRAM and busiest-link lanes, below the cores (computed once per run). */
  private shared: SharedLane[] = [];
  private sharedByLane = new Map<number, Int32Array>();
  private cores = 0;
  private win: Window = { start: 0, end: 1 };
  private t = 0;
  private lines: LineRange | null = null;
  private visible = false;
  private frame = 0;
  private w = 0;
  private h = 0;
  private drag: { x: number; start: Window; moved: boolean } | null = null;
  private readonly box: EventBox;
  /** Pointers down on the canvas (id -> x), for a two-finger pinch. */
  private readonly pointers = new Map<number, number>();
  private pinch: { dist: number; start: Window; at: number } | null = null;

  constructor(private readonly events: TimelineEvents) {
    const ctx = this.canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("this browser cannot draw on a 2D canvas");
    this.ctx = ctx;
    const sceneCtx = this.scene.getContext("2d", { alpha: false });
    if (!sceneCtx) throw new Error("this browser cannot draw on a 2D canvas");
    this.sceneCtx = sceneCtx;
    this.palette = readPalette(document.documentElement);
    this.box = new EventBox(this.stage, "bar-details", (e) => events.open(e));
    new ResizeObserver(() => this.resize()).observe(this.stage);
    byId("tl-zoom-in").addEventListener("click", () => this.zoom(0.5));
    byId("tl-zoom-out").addEventListener("click", () => this.zoom(2));
    byId("tl-fit").addEventListener("click", () => this.fit());
    this.canvas.addEventListener(
      "wheel",
      (ev) => {
        ev.preventDefault();
        const x = this.plotX(ev);
        if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
          const d = ev.shiftKey ? ev.deltaY : ev.deltaX;
          this.setWindow(panBy(this.win, (d / this.plotW) * this.span, this.total));
        } else {
          const at = cycleAt(x, this.win, this.plotW);
          this.setWindow(zoomAt(this.win, Math.exp(ev.deltaY * 0.002), at, this.total));
        }
      },
      { passive: false },
    );
    this.canvas.addEventListener("pointerdown", (ev) => {
      try {
        this.canvas.setPointerCapture(ev.pointerId);
      } catch {
        // a pointer the browser does not track (synthetic events): no capture needed
      }
      this.pointers.set(ev.pointerId, ev.clientX);
      if (this.pointers.size === 2) {
        // Two fingers: pinch to zoom about their midpoint, no drag and no click.
        const [a = 0, b = 0] = [...this.pointers.values()];
        const mid = (a + b) / 2 - this.canvas.getBoundingClientRect().left - LABEL_W;
        this.pinch = {
          dist: Math.abs(a - b),
          start: this.win,
          at: cycleAt(mid, this.win, this.plotW),
        };
        this.drag = null;
        this.box.hide();
        return;
      }
      this.drag = { x: ev.clientX, start: this.win, moved: false };
    });
    const lift = (ev: PointerEvent): boolean => {
      this.pointers.delete(ev.pointerId);
      if (!this.pinch) return false;
      if (this.pointers.size < 2) this.pinch = null;
      this.drag = null;
      return true;
    };
    this.canvas.addEventListener("pointercancel", (ev) => {
      lift(ev);
      this.drag = null;
    });
    this.canvas.addEventListener("pointermove", (ev) => {
      if (this.pointers.has(ev.pointerId)) this.pointers.set(ev.pointerId, ev.clientX);
      if (this.pinch && this.pointers.size === 2) {
        const [a = 0, b = 0] = [...this.pointers.values()];
        const p = this.pinch;
        this.setWindow(pinchWindow(p.start, p.dist, Math.abs(a - b), p.at, this.total));
        return;
      }
      if (this.drag) {
        const dx = ev.clientX - this.drag.x;
        if (Math.abs(dx) > 3) this.drag.moved = true;
        if (this.drag.moved) {
          this.box.hide();
          const cycles = (-dx / this.plotW) * (this.drag.start.end - this.drag.start.start);
          this.setWindow(panBy(this.drag.start, cycles, this.total));
        }
        return;
      }
      const e = this.hit(ev);
      const lane = this.sharedHover(ev);
      this.hover.textContent = e
        ? `core ${e.core} ${e.unit.toUpperCase()} · ${e.op} (line ${e.line}) · ${formatInt(e.start)}–${formatInt(e.end)} cycles` +
          (e.bytes ? ` · ${formatInt(e.bytes)} B` : "") +
          (lane ? ` · ${lane}` : "")
        : (lane ?? "");
      if (ev.pointerType === "mouse") {
        const r = this.stage.getBoundingClientRect();
        if (e) this.box.show(e, ev.clientX - r.left, ev.clientY - r.top, false);
        else this.box.hide();
      }
    });
    this.canvas.addEventListener("pointerleave", () => this.box.hide());
    this.canvas.addEventListener("pointerup", (ev) => {
      if (lift(ev)) return;
      const drag = this.drag;
      this.drag = null;
      if (!drag || drag.moved) return;
      const e = this.hit(ev);
      if (e) {
        const r = this.stage.getBoundingClientRect();
        this.box.show(e, ev.clientX - r.left, ev.clientY - r.top, true);
        this.events.event(e);
      } else this.box.hide(true);
      if (e) return;
      if (this.plotX(ev) >= 0) this.events.time(cycleAt(this.plotX(ev), this.win, this.plotW));
    });
  }

  private get total(): number {
    return this.run?.totalCycles ?? 0;
  }

  private get span(): number {
    return this.win.end - this.win.start;
  }

  private get plotW(): number {
    return Math.max(1, this.w - LABEL_W);
  }

  /** Height of one DRAM or link lane. */
  private get sharedLaneH(): number {
    return Math.round(Math.max(14, Math.min(22, (this.h - AXIS_H) * 0.05)));
  }

  /** Top of the DRAM and link lanes (the core lanes end above it). */
  private get sharedTop(): number {
    if (this.shared.length === 0) return this.h;
    return this.h - this.shared.length * this.sharedLaneH;
  }

  private get laneH(): number {
    const rows = Math.max(1, this.cores * UNITS.length);
    const gap = this.shared.length ? SHARED_GAP : 0;
    return Math.max(2, (this.sharedTop - gap - AXIS_H) / rows);
  }

  private plotX(ev: MouseEvent): number {
    return ev.clientX - this.canvas.getBoundingClientRect().left - LABEL_W;
  }

  /** The shared lane (index into `shared`) under a canvas y, or null. */
  private sharedLaneAt(canvasY: number): number | null {
    if (canvasY < this.sharedTop) return null;
    const i = Math.floor((canvasY - this.sharedTop) / this.sharedLaneH);
    return i >= 0 && i < this.shared.length ? i : null;
  }

  private hit(ev: MouseEvent): TraceEvent | null {
    const cy = ev.clientY - this.canvas.getBoundingClientRect().top;
    const y = cy - AXIS_H;
    if (y < 0) return null;
    const x = this.plotX(ev);
    if (x < 0) return null;
    const slack = (3 / this.plotW) * this.span;
    const cycle = cycleAt(x, this.win, this.plotW);
    const events = this.run?.events;
    if (!events) return null;
    const s = this.sharedLaneAt(cy);
    const lane = Math.floor(y / this.laneH);
    const i =
      s !== null
        ? eventAt(events, this.sharedByLane, s, cycle, slack)
        : lane < this.cores * UNITS.length
          ? eventAt(events, this.byLane, lane, cycle, slack)
          : null;
    return i === null ? null : events.get(i);
  }

  /** A hover line for the DRAM or link lane under the pointer, or null. */
  private sharedHover(ev: MouseEvent): string | null {
    const s = this.sharedLaneAt(ev.clientY - this.canvas.getBoundingClientRect().top);
    const x = this.plotX(ev);
    const l = s === null ? undefined : this.shared[s];
    if (!l || x < 0) return null;
    const cycle = cycleAt(x, this.win, this.plotW);
    const used = loadAt(l, cycle, this.total);
    return `${l.label}: ${(used * 100).toFixed(0)}% of ${l.capacity.toFixed(1)} B/cycle at cycle ${formatInt(cycle)} · ${(l.utilisation * 100).toFixed(0)}% over the run`;
  }

  get window(): Window {
    return this.win;
  }

  /** What the details box reads besides the event. */
  setDetails(ctx: DetailsContext): void {
    this.box.setContext(ctx);
  }

  /** `lanes`: the run's `timelineLanes` (made in the worker, with the run). */
  setRun(run: RunInfo, lanes: TimelineLanes): void {
    this.run = run;
    this.cores = lanes.cores;
    this.byLane = laneLists(lanes);
    this.shared = lanes.shared;
    this.sharedByLane = new Map(this.shared.map((l, i) => [i, l.events]));
    // The lanes' figures, for scripts and tests.
    this.canvas.dataset.lanes = this.shared
      .map((l) => `${l.label}:${Math.round(l.utilisation * 100)}:${l.events.length}`)
      .join(",");
    this.win = clampWindow({ start: 0, end: run.totalCycles }, run.totalCycles);
    this.renderSummary(run);
    this.requestDraw();
  }

  setTime(t: number): void {
    this.t = t;
    // Only the cursor moves.
    if (this.visible) this.requestDraw(false);
  }

  setLines(lines: LineRange | null): void {
    this.lines = lines;
    this.requestDraw();
  }

  setVisible(v: boolean): void {
    this.visible = v;
    if (v) this.resize();
  }

  refreshPalette(): void {
    this.palette = readPalette(document.documentElement);
    this.requestDraw();
  }

  zoom(factor: number): void {
    const at =
      this.t >= this.win.start && this.t <= this.win.end
        ? this.t
        : (this.win.start + this.win.end) / 2;
    this.setWindow(zoomAt(this.win, factor, at, this.total));
  }

  pan(fraction: number): void {
    this.setWindow(panBy(this.win, fraction * this.span, this.total));
  }

  fit(): void {
    this.setWindow({ start: 0, end: this.total });
  }

  private setWindow(w: Window): void {
    this.win = clampWindow(w, this.total);
    this.canvas.dataset.window = `${Math.round(this.win.start)}-${Math.round(this.win.end)}`;
    this.requestDraw();
  }

  private resize(): void {
    const r = this.stage.getBoundingClientRect();
    if (r.width < 2 || r.height < 2) return;
    const dpr = window.devicePixelRatio || 1;
    const same =
      r.width === this.w &&
      r.height === this.h &&
      this.canvas.width === Math.round(r.width * dpr) &&
      this.canvas.height === Math.round(r.height * dpr);
    // The same size again (shown again, or observed after being set): the scene drawn stays.
    if (same) {
      this.requestDraw(false);
      return;
    }
    this.w = r.width;
    this.h = r.height;
    this.canvas.width = Math.round(r.width * dpr);
    this.canvas.height = Math.round(r.height * dpr);
    this.scene.width = this.canvas.width;
    this.scene.height = this.canvas.height;
    for (const ctx of [this.ctx, this.sceneCtx])
      ctx.setTransform(this.canvas.width / r.width, 0, 0, this.canvas.height / r.height, 0, 0);
    this.requestDraw();
  }

  /** Draws at the next frame; `stale`: the scene changed too (else only the cursor moved). */
  private requestDraw(stale = true): void {
    if (stale) this.sceneStale = true;
    if (this.frame === 0 && this.visible)
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.draw();
      });
  }

  /** The scene (drawn again only when stale), then the time cursor over it. */
  private draw(): void {
    const { ctx, palette: pal, w, h } = this;
    if (w < 2) return;
    if (this.sceneStale) {
      this.drawScene();
      this.sceneStale = false;
    }
    ctx.drawImage(this.scene, 0, 0, w, h);
    if (this.run && this.t >= this.win.start && this.t <= this.win.end) {
      const x = LABEL_W + xOf(this.t, this.win, this.plotW);
      ctx.strokeStyle = pal.accent;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.moveTo(x, 0);
      ctx.lineTo(x, h);
      ctx.stroke();
    }
  }

  /** Lanes, bars, the DRAM and link lanes and the axis: all but the cursor. */
  private drawScene(): void {
    const { sceneCtx: ctx, palette: pal, w, h } = this;
    ctx.fillStyle = pal.bg;
    ctx.fillRect(0, 0, w, h);
    const run = this.run;
    if (!run) return;
    const laneH = this.laneH;
    const pw = this.plotW;
    const colours: Record<string, string> = { dma: pal.load, pt: pal.pt, sfp: pal.sfp };
    ctx.font = `10px ${pal.font}`;
    ctx.textBaseline = "middle";
    // Core bands and labels.
    for (let c = 0; c < this.cores; c++) {
      const y = AXIS_H + c * UNITS.length * laneH;
      if (c % 2 === 1) {
        ctx.fillStyle = pal.core;
        ctx.fillRect(0, y, w, UNITS.length * laneH);
      }
      if (laneH * UNITS.length >= 9) {
        ctx.fillStyle = pal.muted;
        ctx.textAlign = "left";
        ctx.fillText(`c${c}`, 4, y + (UNITS.length * laneH) / 2);
        if (laneH >= 9) {
          UNITS.forEach((u, i) => {
            ctx.fillStyle = colours[u] ?? pal.muted;
            ctx.fillText(u, 28, y + (i + 0.5) * laneH);
          });
        }
      }
    }
    // Events, batched per unit colour.
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, AXIS_H, pw, this.cores * UNITS.length * laneH);
    ctx.clip();
    const gap = laneH > 4 ? 1 : 0;
    const starts = run.events.cols.start;
    const ends = run.events.cols.end;
    const lineOf = run.events.cols.line;
    for (const [ui, u] of UNITS.entries()) {
      ctx.fillStyle = colours[u] ?? pal.muted;
      ctx.beginPath();
      for (let c = 0; c < this.cores; c++) {
        const list = this.byLane.get(c * UNITS.length + ui);
        if (!list) continue;
        const y = AXIS_H + (c * UNITS.length + ui) * laneH;
        // Bars closer than a pixel merge into one: a full model has some 200,000.
        let runX0 = 0;
        let runX1 = -Infinity;
        for (const i of list) {
          const start = starts[i] as number;
          const end = ends[i] as number;
          if (end < this.win.start || start > this.win.end) continue;
          const x0 = LABEL_W + xOf(start, this.win, pw);
          const x1 = Math.max(x0 + 1, LABEL_W + xOf(end, this.win, pw) - 0.5);
          if (x0 < runX1 + 0.5) {
            if (x1 > runX1) runX1 = x1;
            continue;
          }
          if (runX1 > runX0) ctx.rect(runX0, y + gap / 2, runX1 - runX0, laneH - gap);
          runX0 = x0;
          runX1 = x1;
        }
        if (runX1 > runX0) ctx.rect(runX0, y + gap / 2, runX1 - runX0, laneH - gap);
      }
      ctx.fill();
    }
    if (this.lines !== null) {
      ctx.strokeStyle = pal.accent;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      for (const [lane, list] of this.byLane) {
        const y = AXIS_H + lane * laneH;
        for (const i of list) {
          const start = starts[i] as number;
          const end = ends[i] as number;
          if (!inRange(lineOf[i] as number, this.lines) || end < this.win.start) continue;
          if (start > this.win.end) continue;
          const x0 = LABEL_W + xOf(start, this.win, pw);
          const x1 = LABEL_W + xOf(end, this.win, pw);
          ctx.rect(x0, y, Math.max(2, x1 - x0), laneH);
        }
      }
      ctx.stroke();
    }
    ctx.restore();
    this.drawShared();
    // Axis.
    ctx.fillStyle = pal.bg;
    ctx.fillRect(0, 0, w, AXIS_H);
    ctx.strokeStyle = pal.link;
    ctx.fillStyle = pal.muted;
    ctx.textAlign = "center";
    const step = tickStep(this.span, Math.max(2, Math.floor(pw / 90)));
    ctx.beginPath();
    for (let c = Math.ceil(this.win.start / step) * step; c <= this.win.end; c += step) {
      const x = LABEL_W + xOf(c, this.win, pw);
      ctx.moveTo(x, AXIS_H - 4);
      ctx.lineTo(x, AXIS_H);
      ctx.fillText(formatInt(c), x, AXIS_H / 2 - 1);
    }
    ctx.stroke();
    ctx.textAlign = "left";
    ctx.fillText("cycles", 4, AXIS_H / 2 - 1);
  }

  /** DRAM and link lanes: transfers as faint bars, bandwidth use as a filled profile. */
  private drawShared(): void {
    const { sceneCtx: ctx, palette: pal, w } = this;
    if (this.shared.length === 0) return;
    const lh = this.sharedLaneH;
    const top = this.sharedTop;
    const pw = this.plotW;
    const total = this.total;
    ctx.fillStyle = pal.bg;
    ctx.fillRect(0, top - SHARED_GAP, w, SHARED_GAP + lh * this.shared.length);
    ctx.strokeStyle = pal.link;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(0, top - SHARED_GAP / 2);
    ctx.lineTo(w, top - SHARED_GAP / 2);
    ctx.stroke();
    this.shared.forEach((l, i) => {
      const y = top + i * lh;
      const colour = l.kind === "dram" ? pal.memoryBorder : pal.move;
      ctx.fillStyle = pal.core;
      ctx.fillRect(LABEL_W, y + 1, pw, lh - 2);
      ctx.fillStyle = colour;
      ctx.textAlign = "left";
      ctx.fillText(l.label, 4, y + lh / 2);
      ctx.save();
      ctx.beginPath();
      ctx.rect(LABEL_W, y, pw, lh);
      ctx.clip();
      // Transfers: faint bars over the lane's height.
      ctx.globalAlpha = 0.28;
      ctx.beginPath();
      const starts = this.run?.events.cols.start;
      const ends = this.run?.events.cols.end;
      for (const k of starts && ends ? l.events : []) {
        const start = starts?.[k] ?? 0;
        const end = ends?.[k] ?? 0;
        if (end < this.win.start || start > this.win.end) continue;
        const x0 = LABEL_W + xOf(start, this.win, pw);
        const x1 = LABEL_W + xOf(end, this.win, pw);
        ctx.rect(x0, y + 1, Math.max(1, x1 - x0), lh - 2);
      }
      ctx.fill();
      // Bandwidth use: one column per pixel, as high as the share of capacity in use.
      ctx.globalAlpha = 1;
      ctx.beginPath();
      if (total > 0)
        for (let px = 0; px < pw; px += 1) {
          const c = cycleAt(px + 0.5, this.win, pw);
          if (c < 0 || c >= total) continue;
          const f = loadAt(l, c, total);
          if (f <= 0) continue;
          const bh = f * (lh - 3);
          ctx.rect(LABEL_W + px, y + lh - 1.5 - bh, 1, bh);
        }
      ctx.fill();
      ctx.restore();
    });
  }

  private renderSummary(run: RunInfo): void {
    const s = run.summary;
    if (!s) {
      this.summary.replaceChildren(el("p", { className: "muted", text: "no summary" }));
      return;
    }
    const pct = (x: number): string => `${(x * 100).toFixed(0)}%`;
    const mean = (k: "dma" | "pt" | "sfp"): number =>
      s.cores.length ? s.cores.reduce((a, c) => a + c[k].utilisation, 0) / s.cores.length : 0;
    const max = (k: "dma" | "pt" | "sfp"): number =>
      s.cores.reduce((a, c) => Math.max(a, c[k].utilisation), 0);
    const bar = (k: string, x: number): HTMLElement =>
      el(
        "span",
        { className: "bar-track", title: pct(x) },
        el("span", { className: `bar ${k}`, style: `width:${Math.round(x * 100)}%` }),
      );
    const rows: [string, string | Node][] = [
      ["cycles", `${formatInt(s.totalCycles)} (${formatDuration(s.totalCycles, s.clockGhz)})`],
      ["DRAM", `${pct(s.dramUtilisation)} busy`],
      ["read / written", `${formatInt(s.dramReadBytes)} / ${formatInt(s.dramWriteBytes)} B`],
    ];
    const busiest = [...s.links].sort((a, b) => b.utilisation - a.utilisation).slice(0, 4);
    this.summary.replaceChildren(
      el("h3", { text: "Bottleneck" }),
      el(
        "p",
        {},
        el("span", { className: "bottleneck", "data-testid": "bottleneck", text: s.bottleneck }),
      ),
      el("p", { className: "muted", text: s.bottleneckReason }),
      el("h3", { text: "Run" }),
      table(rows),
      el("h3", { text: "Unit utilisation (mean / max over cores)" }),
      table(
        (["dma", "pt", "sfp"] as const).map((k): [string, Node] => [
          k.toUpperCase(),
          el("span", {}, bar(k, mean(k)), ` ${pct(mean(k))} / ${pct(max(k))}`),
        ]),
      ),
      el("h3", { text: "Busiest links" }),
      table(
        busiest.map((l): [string, string] => [
          l.name,
          `${pct(l.utilisation)} · ${formatInt(l.bytes)} B`,
        ]),
      ),
      el("h3", { text: "Per core (PT busy)" }),
      table(
        s.cores.map((c): [string, Node] => [
          `core ${c.core}`,
          el(
            "span",
            {
              title: `DMA ${pct(c.dma.utilisation)}, PT ${pct(c.pt.utilisation)}, SFP ${pct(c.sfp.utilisation)}`,
            },
            bar("pt", c.pt.utilisation),
            ` ${pct(c.pt.utilisation)}`,
          ),
        ]),
      ),
    );
  }
}

export function table(rows: [string, string | Node][]): HTMLTableElement {
  return el(
    "table",
    {},
    ...rows.map(([k, v]) => el("tr", {}, el("th", { text: k }), el("td", {}, v))),
  );
}

/** The Timeline tab: one lane per core and unit, and the utilisation summary. */
export class TimelineTab implements View {
  readonly id = "timeline";
  readonly title = "Timeline";
  readonly key = "5";
  readonly usesClock = true;
  private view: TimelineView | null = null;
  private shown = false;
  /** The host and card-link lanes of a tensor-parallel run, under the core lanes. */
  private strip: HTMLElement | null = null;

  readonly shortcuts: readonly Shortcut[] = [
    {
      keys: ["+", "=", "-", "0"],
      label: "+ / − / 0",
      does: "timeline zoom in / out / fit",
      run: (ev) => {
        const v = this.view;
        if (!v) return false;
        if (ev.key === "0") v.fit();
        else v.zoom(ev.key === "-" ? 2 : 0.5);
        return true;
      },
    },
    {
      keys: ["ArrowLeft", "ArrowRight"],
      label: "← / →",
      does: "timeline pan (Timeline view)",
      run: (ev) => {
        if (!this.view || !this.shown) return false;
        this.view.pan(ev.key === "ArrowLeft" ? -0.2 : 0.2);
        return true;
      },
    },
  ];

  mount(container: HTMLElement, ctx: ViewContext): void {
    this.strip = tpStrip(null, 0);
    container.append(this.strip);
    this.view = new TimelineView({
      time: (t) => {
        ctx.clock.setPlaying(false);
        ctx.clock.setTime(t);
      },
      event: (e) => ctx.selectEvent(e),
      open: (e) => ctx.selectEvent(e, true),
    });
  }

  update(s: PageState, changed: ReadonlySet<Change>): void {
    const v = this.view;
    if (!v) return;
    if (changed.has("theme")) v.refreshPalette();
    if (changed.has("run") && s.loaded) {
      v.setRun(s.loaded.res.result.run, s.loaded.res.digest.lanes);
      v.setDetails(detailsContext(s.loaded.res.result));
      const strip = tpStrip(s.loaded.res.result.tp, s.loaded.res.result.run.machine.clockGhz);
      this.strip?.replaceWith(strip);
      this.strip = strip;
    }
    if (changed.has("lines")) v.setLines(s.lines);
    if (changed.has("view")) {
      this.shown = s.view === this.id;
      v.setVisible(this.shown);
    }
    if (changed.has("time") || changed.has("run") || (changed.has("view") && this.shown))
      v.setTime(s.time);
  }
}
