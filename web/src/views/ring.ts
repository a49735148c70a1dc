// The ring view and the transport shared with the timeline: canvas sizing
// (devicePixelRatio), the animation loop, play/pause, speed and the time scrubber.
// Geometry lives in ring/model.ts, pixels in ring/draw.ts.

import type { RunInfo } from "../api";
import { byId, formatInt } from "../dom";
import {
  coreAt,
  drawRing,
  readPalette,
  type LineRange,
  type Palette,
  type RingMarks,
} from "../ring/draw";
import { advanceTime, buildScene, type RingScene } from "../ring/model";

/** Wall time for one pass over the whole run at 1x speed. */
export const RUN_PERIOD_MS = 6000;
/** Longest wall-clock step taken in one frame (after a background tab, for example). */
const MAX_FRAME_MS = 100;

export const SPEEDS = [0.1, 0.25, 0.5, 1, 2, 4];

export class RingView {
  private readonly stage = byId<HTMLDivElement>("ring-stage");
  private readonly canvas = byId<HTMLCanvasElement>("ring-canvas");
  private readonly playButton = byId<HTMLButtonElement>("play-toggle");
  private readonly scrubber = byId<HTMLInputElement>("time-scrubber");
  private readonly readout = byId<HTMLOutputElement>("time-readout");
  private readonly speedPicker = byId<HTMLSelectElement>("speed-picker");
  private readonly machineMeta = byId<HTMLSpanElement>("machine-meta");
  private readonly ctx: CanvasRenderingContext2D;
  private palette: Palette;
  private scene: RingScene | null = null;
  private t = 0;
  private playing = true;
  private speed = 1;
  private frame = 0;
  private lastFrameAt: number | null = null;
  private cssWidth = 0;
  private cssHeight = 0;
  /** Whether the ring canvas is on screen (hidden canvases are not drawn). */
  private visible = false;
  /** Whether anything is watching the time (ring or timeline on screen). */
  private running = false;
  private marks: RingMarks = { core: null, lines: null };
  private timeListeners: ((t: number) => void)[] = [];
  private coreListeners: ((core: number | null) => void)[] = [];
  private pauseListeners: ((t: number) => void)[] = [];
  /** Frames drawn (for the benchmark and tests). */
  framesDrawn = 0;

  constructor() {
    const ctx = this.canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("this browser cannot draw on a 2D canvas");
    this.ctx = ctx;
    this.palette = readPalette(document.documentElement);
    this.playButton.addEventListener("click", () => this.setPlaying(!this.playing));
    this.scrubber.addEventListener("input", () => {
      this.setPlaying(false);
      this.setTime(Number(this.scrubber.value));
    });
    this.speedPicker.addEventListener("change", () => {
      const s = Number(this.speedPicker.value);
      this.speed = s > 0 ? s : 1;
    });
    this.canvas.addEventListener("click", (ev) => {
      const r = this.canvas.getBoundingClientRect();
      const core = coreAt(
        this.cssWidth,
        this.cssHeight,
        this.scene,
        ev.clientX - r.left,
        ev.clientY - r.top,
      );
      this.selectCore(core === this.marks.core ? null : core);
    });
    new ResizeObserver(() => this.resize()).observe(this.stage);
    this.resize();
  }

  get time(): number {
    return this.t;
  }

  get isPlaying(): boolean {
    return this.playing;
  }

  get totalCycles(): number {
    return this.scene?.totalCycles ?? 0;
  }

  get selectedCore(): number | null {
    return this.marks.core;
  }

  onTime(fn: (t: number) => void): void {
    this.timeListeners.push(fn);
  }

  onCore(fn: (core: number | null) => void): void {
    this.coreListeners.push(fn);
  }

  /** Called when playback stops (pause or scrub), to save the time in the URL. */
  onPause(fn: (t: number) => void): void {
    this.pauseListeners.push(fn);
  }

  setRun(run: RunInfo, t = 0): void {
    this.scene = buildScene(run);
    this.scrubber.max = String(Math.max(0, Math.ceil(this.scene.totalCycles)));
    const m = run.machine;
    this.machineMeta.textContent = `${m.name} · ${m.cores} cores · ${m.stops.length} stops · ${m.clockGhz} GHz`;
    if (this.marks.core !== null && this.marks.core >= this.scene.coreCount) this.selectCore(null);
    this.setTime(t);
    this.lastFrameAt = null;
    this.requestDraw();
  }

  /** Marks tiles of KTIR lines. */
  setLines(lines: LineRange | null): void {
    this.marks = { ...this.marks, lines };
    this.requestDraw();
  }

  selectCore(core: number | null): void {
    this.marks = { ...this.marks, core };
    for (const fn of this.coreListeners) fn(core);
    this.requestDraw();
  }

  setTime(t: number): void {
    const total = this.scene?.totalCycles ?? 0;
    this.t = Math.min(Math.max(0, Number.isFinite(t) ? t : 0), total);
    this.scrubber.value = String(Math.floor(this.t));
    this.updateReadout();
    for (const fn of this.timeListeners) fn(this.t);
    if (!this.playing) for (const fn of this.pauseListeners) fn(this.t);
    this.requestDraw();
  }

  /** Re-reads colours after a theme change. */
  refreshPalette(): void {
    this.palette = readPalette(document.documentElement);
    this.requestDraw();
  }

  setPlaying(playing: boolean): void {
    const was = this.playing;
    this.playing = playing;
    this.playButton.textContent = playing ? "Pause" : "Play";
    this.playButton.setAttribute("aria-pressed", String(playing));
    this.lastFrameAt = null;
    if (was && !playing) for (const fn of this.pauseListeners) fn(this.t);
    this.requestDraw();
  }

  stepSpeed(delta: number): void {
    const i = SPEEDS.indexOf(this.speed);
    const next = SPEEDS[Math.min(SPEEDS.length - 1, Math.max(0, (i < 0 ? 3 : i) + delta))] ?? 1;
    this.speed = next;
    this.speedPicker.value = String(next);
  }

  /** Which views watch the clock: the ring draws only when visible; time runs when either is. */
  setActive(ringVisible: boolean, running: boolean): void {
    this.visible = ringVisible;
    this.running = running;
    this.lastFrameAt = null;
    if (ringVisible) this.resize();
    this.requestDraw();
  }

  private updateReadout(): void {
    const total = this.scene?.totalCycles ?? 0;
    this.readout.value = `${formatInt(Math.floor(this.t))} / ${formatInt(total)} cycles`;
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
    if (this.frame === 0) this.frame = requestAnimationFrame((now) => this.onFrame(now));
  }

  private onFrame(now: number): void {
    this.frame = 0;
    const scene = this.scene;
    const animate = this.running && this.playing && scene !== null && scene.totalCycles > 0;
    if (animate) {
      const dt = this.lastFrameAt === null ? 0 : Math.min(MAX_FRAME_MS, now - this.lastFrameAt);
      this.lastFrameAt = now;
      this.t = advanceTime(this.t, dt, scene.totalCycles, RUN_PERIOD_MS / this.speed);
      this.scrubber.value = String(Math.floor(this.t));
      this.updateReadout();
      for (const fn of this.timeListeners) fn(this.t);
    } else {
      this.lastFrameAt = null;
    }
    if (this.visible && this.cssWidth > 0) {
      drawRing(this.ctx, this.cssWidth, this.cssHeight, scene, this.t, this.palette, this.marks);
      this.framesDrawn++;
    }
    if (animate) this.requestDraw();
  }
}
