// The ring view: canvas sizing (devicePixelRatio), the animation loop, play/pause,
// speed and the time scrubber. Geometry lives in ring/model.ts, pixels in ring/draw.ts.

import type { RunInfo } from "../api";
import { byId, formatInt } from "../dom";
import { drawRing, readPalette, type Palette } from "../ring/draw";
import { advanceTime, buildScene, type RingScene } from "../ring/model";

/** Wall time for one pass over the whole run at 1x speed. */
export const RUN_PERIOD_MS = 4000;
/** Longest wall-clock step taken in one frame (after a background tab, for example). */
const MAX_FRAME_MS = 100;

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

  constructor() {
    const ctx = this.canvas.getContext("2d");
    if (!ctx) throw new Error("this browser cannot draw on a 2D canvas");
    this.ctx = ctx;
    this.palette = readPalette(document.documentElement);
    this.playButton.addEventListener("click", () => this.setPlaying(!this.playing));
    this.scrubber.addEventListener("input", () => {
      this.setPlaying(false);
      this.t = Number(this.scrubber.value);
      this.updateReadout();
      this.requestDraw();
    });
    this.speedPicker.addEventListener("change", () => {
      const s = Number(this.speedPicker.value);
      this.speed = s > 0 ? s : 1;
    });
    new ResizeObserver(() => this.resize()).observe(this.stage);
    window.matchMedia?.("(resolution: 1dppx)").addEventListener?.("change", () => this.resize());
    this.resize();
  }

  setRun(run: RunInfo): void {
    this.scene = buildScene(run);
    this.t = 0;
    this.scrubber.max = String(Math.max(0, Math.ceil(this.scene.totalCycles)));
    this.scrubber.value = "0";
    const m = run.machine;
    this.machineMeta.textContent = `${m.name} · ${m.cores} cores · ${m.stops.length} stops · ${m.clockGhz} GHz`;
    this.setPlaying(this.playing);
    this.requestDraw();
  }

  clear(): void {
    this.scene = null;
    this.t = 0;
    this.scrubber.max = "0";
    this.machineMeta.textContent = "";
    this.requestDraw();
  }

  /** Re-reads colours after a theme change. */
  refreshPalette(): void {
    this.palette = readPalette(document.documentElement);
    this.requestDraw();
  }

  setPlaying(playing: boolean): void {
    this.playing = playing;
    this.playButton.textContent = playing ? "Pause" : "Play";
    this.playButton.setAttribute("aria-pressed", String(playing));
    this.lastFrameAt = null;
    this.requestDraw();
  }

  private updateReadout(): void {
    const total = this.scene?.totalCycles ?? 0;
    this.readout.value = `${formatInt(Math.floor(this.t))} / ${formatInt(total)} cycles`;
  }

  private resize(): void {
    const rect = this.stage.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    this.cssWidth = Math.max(1, rect.width);
    this.cssHeight = Math.max(1, rect.height);
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
    const animate = this.playing && scene !== null && scene.totalCycles > 0;
    if (animate) {
      const dt = this.lastFrameAt === null ? 0 : Math.min(MAX_FRAME_MS, now - this.lastFrameAt);
      this.lastFrameAt = now;
      this.t = advanceTime(this.t, dt, scene.totalCycles, RUN_PERIOD_MS / this.speed);
      this.scrubber.value = String(Math.floor(this.t));
    } else {
      this.lastFrameAt = null;
    }
    this.updateReadout();
    drawRing(this.ctx, this.cssWidth, this.cssHeight, scene, this.t, this.palette);
    if (animate) this.requestDraw();
  }
}
