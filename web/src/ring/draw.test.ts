import { describe, expect, it } from "vitest";
import type { TraceEvent } from "../api";
import { EventTable } from "../events";
import { stops } from "./testStops";
import { drawRing, layoutRing, type Palette } from "./draw";
import { buildScene } from "./model";

const palette: Palette = {
  bg: "#000",
  link: "#111",
  core: "#222",
  coreBorder: "#333",
  memory: "#444",
  memoryBorder: "#555",
  label: "#666",
  muted: "#777",
  load: "load",
  store: "store",
  move: "move",
  pt: "#888",
  sfp: "#999",
  font: "monospace",
  accent: "#aaa",
};

/** A 2D context that records the squares each fill draws, by fill style. */
function recordingContext(): { ctx: CanvasRenderingContext2D; squares: Map<string, number[][]> } {
  const squares = new Map<string, number[][]>();
  let path: number[][] = [];
  const ctx = new Proxy(
    {
      fillStyle: "",
      beginPath: () => {
        path = [];
      },
      rect: (x: number, y: number, w: number, h: number) => path.push([x, y, w, h]),
      fill: () => {
        const style = String(ctx.fillStyle);
        squares.set(style, [...(squares.get(style) ?? []), ...path]);
      },
      measureText: () => ({ width: 10 }),
    } as Record<string, unknown>,
    {
      get: (target, key) => (key in target ? target[key as string] : () => {}),
      set: (target, key, value) => {
        target[key as string] = value;
        return true;
      },
    },
  ) as unknown as CanvasRenderingContext2D;
  return { ctx, squares };
}

function transfer(start: number, route: number[]): TraceEvent {
  return {
    unit: "dma",
    core: 0,
    start,
    end: start + 100,
    bytes: 128,
    srcStop: route[0] ?? null,
    dstStop: route[route.length - 1] ?? null,
    route,
    op: "ktdp.load",
    line: 1,
  };
}

describe("drawing the ring's tiles", () => {
  it("draws tiles at one pixel once, and every tile elsewhere, on whole pixels", () => {
    // Three loads from the memory stop to core 1, two of them at the same point of their walk,
    // and one store the other way at that point.
    const events = [
      transfer(0, [2, 1]),
      transfer(0, [2, 1]),
      transfer(40, [2, 1]),
      transfer(0, [1, 2]),
    ];
    const scene = buildScene({
      machine: { name: "m", cores: 4, stops },
      totalCycles: 200,
      events: EventTable.from(events),
    });
    const { ctx, squares } = recordingContext();
    drawRing(ctx, 400, 300, scene, 50, palette);
    const loads = squares.get("load") ?? [];
    const stores = squares.get("store") ?? [];
    expect(loads).toHaveLength(2);
    expect(stores).toHaveLength(1);
    const size = layoutRing(400, 300, stops.length).tileSize;
    for (const [x, y, w, h] of [...loads, ...stores]) {
      expect(Number.isInteger(x)).toBe(true);
      expect(Number.isInteger(y)).toBe(true);
      expect([w, h]).toEqual([size, size]);
    }
    // The next frame starts afresh: the same tiles are drawn again.
    const again = recordingContext();
    drawRing(again.ctx, 400, 300, scene, 50, palette);
    expect(again.squares.get("load")).toEqual(loads);
  });
});
