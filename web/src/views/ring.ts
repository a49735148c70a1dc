// The ring view: 32 cores and the memory stops on a canvas (devicePixelRatio-aware), tiles
// moving as the shared clock advances, and the selected core's details beside it.
// Geometry lives in ring/model.ts, pixels in ring/draw.ts, the clock in transport.ts.

import type { RunInfo } from "../api";
import { byId } from "../dom";
import {
  coreAt,
  drawRing,
  readPalette,
  type LineRange,
  type Palette,
  type RingMarks,
} from "../ring/draw";
import { buildScene, type RingScene } from "../ring/model";
import { CoreDetails } from "./coreDetails";
import type { Change, PageState, View, ViewContext } from "./view";

/** Shortest interval between core-detail refreshes while playing. */
const CORE_DETAILS_MS = 120;

/** The ring canvas; draws whenever the clock moves or the marks change. */
export class RingView {
  private readonly stage = byId<HTMLDivElement>("ring-stage");
  private readonly canvas = byId<HTMLCanvasElement>("ring-canvas");
  private readonly machineMeta = byId<HTMLSpanElement>("machine-meta");
  private readonly ctx: CanvasRenderingContext2D;
  private palette: Palette;
  private scene: RingScene | null = null;
  private t = 0;
  private frame = 0;
  private cssWidth = 0;
  private cssHeight = 0;
  /** Whether the ring canvas is on screen (hidden canvases are not drawn). */
  private visible = false;
  private marks: RingMarks = { core: null, lines: null };
  /** Frames drawn (for the benchmark and tests). */
  framesDrawn = 0;

  /** `onCore`: a core was clicked (null: the selected core was clicked again). */
  constructor(onCore: (core: number | null) => void) {
    const ctx = this.canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("this browser cannot draw on a 2D canvas");
    this.ctx = ctx;
    this.palette = readPalette(document.documentElement);
    this.canvas.addEventListener("click", (ev) => {
      const r = this.canvas.getBoundingClientRect();
      const core = coreAt(
        this.cssWidth,
        this.cssHeight,
        this.scene,
        ev.clientX - r.left,
        ev.clientY - r.top,
      );
      onCore(core === this.marks.core ? null : core);
    });
    new ResizeObserver(() => this.resize()).observe(this.stage);
    this.resize();
  }

  setRun(run: RunInfo): void {
    this.scene = buildScene(run);
    const m = run.machine;
    this.machineMeta.textContent = `${m.name} · ${m.cores} cores · ${m.stops.length} stops · ${m.clockGhz} GHz`;
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
    this.requestDraw();
  }

  /** Re-reads colours after a theme change. */
  refreshPalette(): void {
    this.palette = readPalette(document.documentElement);
    this.requestDraw();
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
    drawRing(this.ctx, this.cssWidth, this.cssHeight, this.scene, this.t, this.palette, this.marks);
    this.framesDrawn++;
  }
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
    this.ring = new RingView((core) => ctx.selectCore(core));
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
      ring.setRun(r.run);
      details.set(r.run, r.passes, s.loaded.spans);
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
