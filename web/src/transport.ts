// The transport bar shared by the views that follow simulated time (ring, timeline): the
// clock, play / pause, speed and the time scrubber, advanced once per animation frame.

import { byId, formatInt } from "./dom";
import { advanceTime } from "./ring/model";
import type { Clock, Shortcut } from "./views/view";

/** Wall time for one pass over the whole run at 1x speed. */
export const RUN_PERIOD_MS = 6000;
/** Longest wall-clock step taken in one frame (after a background tab, for example). */
const MAX_FRAME_MS = 100;

export const SPEEDS = [0.1, 0.25, 0.5, 1, 2, 4];

export class Transport implements Clock {
  private readonly playButton = byId<HTMLButtonElement>("play-toggle");
  private readonly scrubber = byId<HTMLInputElement>("time-scrubber");
  private readonly readout = byId<HTMLOutputElement>("time-readout");
  private readonly speedPicker = byId<HTMLSelectElement>("speed-picker");
  private total = 0;
  private t = 0;
  private playing = true;
  private speed = 1;
  private frame = 0;
  private lastFrameAt: number | null = null;
  /** Whether anything is watching the time (a view that uses the clock is on screen). */
  private running = false;
  private timeListeners: ((t: number) => void)[] = [];
  private playListeners: ((playing: boolean) => void)[] = [];
  private pauseListeners: ((t: number) => void)[] = [];

  constructor() {
    this.playButton.addEventListener("click", () => this.setPlaying(!this.playing));
    this.scrubber.addEventListener("input", () => {
      this.setPlaying(false);
      this.setTime(Number(this.scrubber.value));
    });
    this.speedPicker.addEventListener("change", () => {
      const s = Number(this.speedPicker.value);
      this.speed = s > 0 ? s : 1;
    });
  }

  get time(): number {
    return this.t;
  }

  get isPlaying(): boolean {
    return this.playing;
  }

  get totalCycles(): number {
    return this.total;
  }

  /** Called on every time change (each frame while playing). */
  onTime(fn: (t: number) => void): void {
    this.timeListeners.push(fn);
  }

  onPlaying(fn: (playing: boolean) => void): void {
    this.playListeners.push(fn);
  }

  /** Called when playback stops (pause or scrub), to save the time in the URL. */
  onPause(fn: (t: number) => void): void {
    this.pauseListeners.push(fn);
  }

  /** A new run of `totalCycles`, shown from `t`. */
  setRun(totalCycles: number, t = 0): void {
    this.total = totalCycles;
    this.scrubber.max = String(Math.max(0, Math.ceil(totalCycles)));
    this.setTime(t);
    this.lastFrameAt = null;
    this.requestFrame();
  }

  setTime(t: number): void {
    this.t = Math.min(Math.max(0, Number.isFinite(t) ? t : 0), this.total);
    this.scrubber.value = String(Math.floor(this.t));
    this.updateReadout();
    for (const fn of this.timeListeners) fn(this.t);
    if (!this.playing) for (const fn of this.pauseListeners) fn(this.t);
    this.requestFrame();
  }

  setPlaying(playing: boolean): void {
    const was = this.playing;
    this.playing = playing;
    this.playButton.textContent = playing ? "Pause" : "Play";
    this.playButton.setAttribute("aria-pressed", String(playing));
    this.lastFrameAt = null;
    for (const fn of this.playListeners) fn(playing);
    if (was && !playing) for (const fn of this.pauseListeners) fn(this.t);
    this.requestFrame();
  }

  stepSpeed(delta: number): void {
    const i = SPEEDS.indexOf(this.speed);
    const next = SPEEDS[Math.min(SPEEDS.length - 1, Math.max(0, (i < 0 ? 3 : i) + delta))] ?? 1;
    this.speed = next;
    this.speedPicker.value = String(next);
  }

  /** Time runs only while a view that follows it is on screen. */
  setRunning(running: boolean): void {
    this.running = running;
    this.lastFrameAt = null;
    this.requestFrame();
  }

  private updateReadout(): void {
    this.readout.value = `${formatInt(Math.floor(this.t))} / ${formatInt(this.total)} cycles`;
  }

  private requestFrame(): void {
    if (this.frame === 0) this.frame = requestAnimationFrame((now) => this.onFrame(now));
  }

  private onFrame(now: number): void {
    this.frame = 0;
    const animate = this.running && this.playing && this.total > 0;
    if (!animate) {
      this.lastFrameAt = null;
      return;
    }
    const dt = this.lastFrameAt === null ? 0 : Math.min(MAX_FRAME_MS, now - this.lastFrameAt);
    this.lastFrameAt = now;
    this.t = advanceTime(this.t, dt, this.total, RUN_PERIOD_MS / this.speed);
    this.scrubber.value = String(Math.floor(this.t));
    this.updateReadout();
    for (const fn of this.timeListeners) fn(this.t);
    this.requestFrame();
  }
}

/** The clock's keys; Space plays only while `active()` (a view following time is shown). */
export function clockShortcuts(clock: Clock, active: () => boolean): Shortcut[] {
  return [
    {
      keys: [" "],
      label: "Space",
      does: "play / pause",
      run: () => {
        if (!active()) return false;
        clock.setPlaying(!clock.isPlaying);
        return true;
      },
    },
    {
      keys: [",", "."],
      label: ", / .",
      does: "step time back / forward",
      run: (ev) => {
        clock.setPlaying(false);
        const step = Math.max(1, clock.totalCycles / 100);
        clock.setTime(clock.time + (ev.key === "." ? 1 : -1) * step);
        return true;
      },
    },
    {
      keys: ["[", "]"],
      label: "[ / ]",
      does: "slower / faster",
      run: (ev) => {
        clock.stepSpeed(ev.key === "]" ? 1 : -1);
        return true;
      },
    },
  ];
}
