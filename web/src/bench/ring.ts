// The ring frame-rate benchmark page (bench.html, driven by `npm run bench:ring`): the real
// RingView on the spyre32 machine with N synthetic transfers in flight at once, timed with
// requestAnimationFrame timestamps (the browser's frame timing).

import type { RunInfo, TraceEvent } from "../api";
import { EventTable } from "../events";
import { WorkerHost } from "../client";
import { Transport } from "../transport";
import { RingView } from "../views/ring";
import { minimalResult, pageResult, summary } from "../testResult";

export interface BenchResult {
  tiles: number;
  machine: string;
  frames: number;
  seconds: number;
  fps: number;
  meanMs: number;
  p95Ms: number;
  worstMs: number;
  /** Frames that took longer than 1.5 frame periods at 60 Hz. */
  slowFrames: number;
  /** Mean time the ring took to draw a frame: what a 60 Hz frame must fit, whatever the load. */
  drawMs: number;
}

/** Synthetic route data: the stops from `src` clockwise to `dst`. */
function clockwise(src: number, dst: number, count: number): number[] {
  const out = [src];
  for (let s = src; s !== dst;) {
    s = (s + 1) % count;
    out.push(s);
  }
  return out;
}

/** `tiles` transfers all in flight for the middle 98% of the run, plus compute on every core. */
export function syntheticRun(machine: RunInfo["machine"], tiles: number): RunInfo {
  const total = 100_000;
  const stops = machine.stops.length;
  const events: TraceEvent[] = [];
  for (let i = 0; i < tiles; i++) {
    const start = (((i * 7919) % tiles) / tiles) * 1000;
    const src = (i * 31) % stops;
    const dst = (src + 1 + ((i * 17) % (stops - 1))) % stops;
    events.push({
      unit: "dma",
      core: machine.stops[src]?.kind === "core" ? (machine.stops[src]?.index ?? 0) : 0,
      start,
      end: total - 1000 + start,
      bytes: 128,
      srcStop: src,
      dstStop: dst,
      route: clockwise(src, dst, stops),
      op: "ktdp.load",
      line: 1 + (i % 40),
    });
  }
  for (let c = 0; c < machine.cores; c++) {
    for (let k = 0; k < 50; k++) {
      events.push({
        unit: k % 2 ? "pt" : "sfp",
        core: c,
        start: k * 2000,
        end: k * 2000 + 1500,
        bytes: 0,
        srcStop: null,
        dstStop: null,
        route: [],
        op: "linalg.matmul",
        line: 50,
      });
    }
  }
  const base = pageResult(minimalResult()).run;
  return {
    ...base,
    machine,
    totalCycles: total,
    timingOnly: true,
    outputsChecked: false,
    passed: false,
    events: EventTable.from(events),
    eventsTotal: events.length,
    summary: {
      ...summary,
      machine: machine.name,
      totalCycles: total,
      clockGhz: machine.clockGhz,
      timeUs: total / (machine.clockGhz * 1000),
      bottleneck: "communication",
      bottleneckReason: "synthetic transfers",
    },
    steps: 0,
  };
}

async function main(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const tiles = Number(params.get("tiles") ?? 5000);
  const seconds = Number(params.get("seconds") ?? 5);
  const host = new WorkerHost(
    () => new Worker(new URL("../worker.ts", import.meta.url), { type: "module" }),
  );
  const info = await host.call("init", {});
  const first = info.examples[0]?.name;
  if (!first) throw new Error("no examples");
  const res = await host.call("run", {
    target: { kind: "example", name: first },
    options: { machine: "spyre32" },
  });
  const clock = new Transport();
  const ring = new RingView(
    () => {},
    () => {},
  );
  clock.onTime((t) => ring.setTime(t));
  const run = syntheticRun(res.result.run.machine, tiles);
  ring.setRun(run);
  ring.setVisible(true);
  clock.setRun(run.totalCycles, 1000);
  clock.setRunning(true);
  clock.setPlaying(true);
  // Warm up, then time frames.
  await new Promise((r) => setTimeout(r, 500));
  const times: number[] = [];
  const [drawn0, drawMs0] = [ring.framesDrawn, ring.drawMs];
  const end = performance.now() + seconds * 1000;
  await new Promise<void>((done) => {
    const tick = (now: number): void => {
      times.push(now);
      if (now < end) requestAnimationFrame(tick);
      else done();
    };
    requestAnimationFrame(tick);
  });
  const deltas = times.slice(1).map((t, i) => t - (times[i] ?? t));
  const sorted = [...deltas].sort((a, b) => a - b);
  const span = ((times[times.length - 1] ?? 0) - (times[0] ?? 0)) / 1000;
  const result: BenchResult = {
    tiles,
    machine: res.result.run.machine.name,
    frames: deltas.length,
    seconds: span,
    fps: deltas.length / span,
    meanMs: deltas.reduce((a, b) => a + b, 0) / Math.max(1, deltas.length),
    p95Ms: sorted[Math.floor(sorted.length * 0.95)] ?? 0,
    worstMs: sorted[sorted.length - 1] ?? 0,
    slowFrames: deltas.filter((d) => d > 25).length,
    drawMs: (ring.drawMs - drawMs0) / Math.max(1, ring.framesDrawn - drawn0),
  };
  document.getElementById("bench-result")!.textContent = JSON.stringify(result, null, 2);
  (window as unknown as { benchResult: BenchResult }).benchResult = result;
}

main().catch((err: unknown) => {
  document.getElementById("bench-result")!.textContent = `error: ${String(err)}`;
  (window as unknown as { benchError: string }).benchError = String(err);
});
