// The ring view: 32 cores and the memory stops on a canvas (devicePixelRatio-aware), tiles
// moving as the shared clock advances, and the selected core's details beside it.
// Geometry lives in ring/model.ts, pixels in ring/draw.ts, the clock in transport.ts.

import type { PipelineResult, RunInfo, TraceEvent } from "../api";
import type { DetailsContext } from "../eventDetails";
import { byId } from "../dom";
import {
  coreAt,
  drawRing,
  readPalette,
  tileAt,
  type LineRange,
  type Palette,
  type RingMarks,
} from "../ring/draw";
import { describeCore, heatGradient, heatPaint, HEAT_STOPS, type HeatMetric } from "../ring/heat";
import { buildScene, type RingDigest, type RingScene } from "../ring/model";
import { CoreDetails } from "./coreDetails";
import { EventBox } from "./eventBox";
import type { Change, PageState, View, ViewContext } from "./view";

/** Shortest interval between core-detail refreshes while playing. */
const CORE_DETAILS_MS = 120;

/** The ring canvas; draws whenever the clock moves or the marks change. */
export class RingView {
  private readonly stage = byId<HTMLDivElement>("ring-stage");
  private readonly canvas = byId<HTMLCanvasElement>("ring-canvas");
  private readonly machineMeta = byId<HTMLSpanElement>("machine-meta");
  private readonly heatLegend = byId<HTMLDivElement>("heat-legend");
  private readonly heatPick = byId<HTMLSelectElement>("heat-metric");
  private readonly heatReadout = byId<HTMLSpanElement>("heat-readout");
  private readonly heatBar = byId<HTMLSpanElement>("heat-bar");
  private readonly ctx: CanvasRenderingContext2D;
  private palette: Palette;
  private scene: RingScene | null = null;
  private t = 0;
  private frame = 0;
  private cssWidth = 0;
  private cssHeight = 0;
  /** Whether the ring canvas is on screen (hidden canvases are not drawn). */
  private visible = false;
  private marks: RingMarks = { core: null, lines: null, heat: null };
  private heatMetric: HeatMetric = "compute";
  /** The core under the mouse, whose figures the readout shows (else the selected one). */
  private hoverCore: number | null = null;
  /** Frames drawn (for the benchmark and tests). */
  framesDrawn = 0;
  /** Time spent drawing them, in ms (for the benchmark: the cost apart from the machine's load). */
  drawMs = 0;

  private readonly box: EventBox;
  private down: { x: number; y: number } | null = null;

  /**
   * `onCore`: a core was clicked or tapped (null: the selected core again); `onOpen`: show a
   * tile's KTIR line.
   */
  constructor(onCore: (core: number | null) => void, onOpen: (e: TraceEvent) => void) {
    const ctx = this.canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("this browser cannot draw on a 2D canvas");
    this.ctx = ctx;
    this.palette = readPalette(document.documentElement);
    this.box = new EventBox(this.stage, "tile-details", onOpen);
    this.heatPick.addEventListener("change", () => {
      this.heatMetric = this.heatPick.value as HeatMetric;
      this.heatLegend.dataset.metric = this.heatMetric;
      this.repaintHeat();
    });
    // Pointer events: a mouse click, a pen or a finger's tap all pick a tile or a core.
    this.canvas.addEventListener("pointerdown", (ev) => {
      this.down = { x: ev.clientX, y: ev.clientY };
    });
    this.canvas.addEventListener("pointerup", (ev) => {
      const down = this.down;
      this.down = null;
      if (!down || Math.hypot(ev.clientX - down.x, ev.clientY - down.y) > 10) return;
      const { x, y } = this.local(ev);
      const tile = tileAt(this.cssWidth, this.cssHeight, this.scene, this.t, x, y);
      if (tile) {
        if (this.scene) this.box.show(this.scene.events.get(tile.index), x, y, true);
        return;
      }
      this.box.hide(true);
      const core = coreAt(this.cssWidth, this.cssHeight, this.scene, x, y);
      onCore(core === this.marks.core ? null : core);
    });
    this.canvas.addEventListener("pointermove", (ev) => {
      if (ev.pointerType !== "mouse" || this.box.pinned) return;
      const { x, y } = this.local(ev);
      const tile = tileAt(this.cssWidth, this.cssHeight, this.scene, this.t, x, y);
      if (tile && this.scene) this.box.show(this.scene.events.get(tile.index), x, y, false);
      else this.box.hide();
      const core = tile ? null : coreAt(this.cssWidth, this.cssHeight, this.scene, x, y);
      if (core !== this.hoverCore) {
        this.hoverCore = core;
        this.renderReadout();
      }
    });
    this.canvas.addEventListener("pointerleave", () => {
      this.box.hide();
      this.hoverCore = null;
      this.renderReadout();
    });
    new ResizeObserver(() => this.resize()).observe(this.stage);
    this.resize();
    this.repaintHeat();
  }

  private local(ev: MouseEvent): { x: number; y: number } {
    const r = this.canvas.getBoundingClientRect();
    return { x: ev.clientX - r.left, y: ev.clientY - r.top };
  }

  /** What the details box reads besides the event. */
  setDetails(ctx: DetailsContext): void {
    this.box.setContext(ctx);
  }

  /** `digest`: the run's `ringDigest` (made in the worker; computed here when left out). */
  setRun(run: RunInfo, digest?: RingDigest): void {
    this.scene = buildScene(run, digest);
    const m = run.machine;
    this.machineMeta.textContent = `${m.name} · ${m.cores} cores · ${m.stops.length} stops · ${m.clockGhz} GHz`;
    // The per-core figures, for scripts and tests: compute and DMA busy in percent.
    this.heatLegend.dataset.compute = this.scene.util
      .map((u) => Math.round(u.compute * 100))
      .join(",");
    this.heatLegend.dataset.dma = this.scene.util.map((u) => Math.round(u.dma * 100)).join(",");
    this.renderReadout();
    this.repaintHeat();
  }

  /** Recolours the cores (once per run, theme or metric; never per frame). */
  private repaintHeat(): void {
    const util = this.scene?.util ?? [];
    const heat = heatPaint(util, this.heatMetric, this.palette.core, this.palette.label);
    this.marks = { ...this.marks, heat };
    this.heatBar.style.background = heatGradient([this.palette.core, ...HEAT_STOPS.slice(1)]);
    this.requestDraw();
  }

  /** The simulated time drawn. */
  setTime(t: number): void {
    this.t = t;
    this.requestDraw();
  }

  /** Marks tiles of KTIR lines. */
  setLines(lines: LineRange | null): void {
    this.marks = { ...this.marks, lines };
    this.requestDraw();
  }

  setCore(core: number | null): void {
    this.marks = { ...this.marks, core };
    this.renderReadout();
    this.requestDraw();
  }

  /** The hovered (else the selected) core's busy figures over the run. */
  private renderReadout(): void {
    const core = this.hoverCore ?? this.marks.core;
    const u = core === null ? undefined : this.scene?.util[core];
    this.heatReadout.textContent = u ? describeCore(u) : "hover or tap a core for its figures";
    this.heatReadout.dataset.core = u ? String(u.core) : "";
  }

  /** Re-reads colours after a theme change. */
  refreshPalette(): void {
    this.palette = readPalette(document.documentElement);
    this.repaintHeat();
  }

  setVisible(visible: boolean): void {
    this.visible = visible;
    if (visible) this.resize();
    this.requestDraw();
  }

  private resize(): void {
    const rect = this.stage.getBoundingClientRect();
    if (rect.width < 2 || rect.height < 2) return;
    const dpr = window.devicePixelRatio || 1;
    this.cssWidth = rect.width;
    this.cssHeight = rect.height;
    const w = Math.max(1, Math.round(this.cssWidth * dpr));
    const h = Math.max(1, Math.round(this.cssHeight * dpr));
    if (this.canvas.width !== w || this.canvas.height !== h) {
      this.canvas.width = w;
      this.canvas.height = h;
    }
    this.ctx.setTransform(
      this.canvas.width / this.cssWidth,
      0,
      0,
      this.canvas.height / this.cssHeight,
      0,
      0,
    );
    this.requestDraw();
  }

  private requestDraw(): void {
    if (this.frame === 0) this.frame = requestAnimationFrame(() => this.draw());
  }

  private draw(): void {
    this.frame = 0;
    if (!this.visible || this.cssWidth <= 0) return;
    const t0 = performance.now();
    drawRing(this.ctx, this.cssWidth, this.cssHeight, this.scene, this.t, this.palette, this.marks);
    this.drawMs += performance.now() - t0;
    this.framesDrawn++;
  }
}

/** What the details box of a run's tiles and bars reads. */
export function detailsContext(r: PipelineResult): DetailsContext {
  return {
    stops: r.run.machine.stops,
    map: r.sourceMap,
    ktir: r.ktir,
    clockGhz: r.run.machine.clockGhz,
  };
}

/** The Ring tab: the ring canvas and the selected core's details. */
export class RingTab implements View {
  readonly id = "ring";
  readonly title = "Ring";
  readonly key = "4";
  readonly usesClock = true;
  private ring: RingView | null = null;
  private details: CoreDetails | null = null;
  private lastCoreUpdate = 0;

  mount(_container: HTMLElement, ctx: ViewContext): void {
    this.ring = new RingView(
      (core) => ctx.selectCore(core),
      (e) => ctx.selectEvent(e, true),
    );
    this.details = new CoreDetails((e) => ctx.selectEvent(e, true));
    this.details.select(null, 0);
  }

  update(s: PageState, changed: ReadonlySet<Change>): void {
    const ring = this.ring;
    const details = this.details;
    if (!ring || !details) return;
    if (changed.has("theme")) ring.refreshPalette();
    if (changed.has("view")) ring.setVisible(s.view === this.id);
    if (changed.has("lines")) ring.setLines(s.lines);
    if (changed.has("time")) ring.setTime(s.time);
    if (changed.has("run") && s.loaded) {
      const r = s.loaded.res.result;
      ring.setRun(r.run, s.loaded.res.digest.ring);
      ring.setDetails(detailsContext(r));
      details.set(r.run, s.loaded.res.digest.cores.plan, s.loaded.res.digest.spans);
    }
    if (changed.has("core")) ring.setCore(s.core);
    if (changed.has("run") || changed.has("core")) {
      details.select(s.core, s.time);
      return;
    }
    if (changed.has("time")) {
      const now = performance.now();
      if (now - this.lastCoreUpdate > CORE_DETAILS_MS || !s.playing) {
        this.lastCoreUpdate = now;
        details.update(s.time);
      }
    }
  }
}
