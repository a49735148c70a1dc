import { describe, expect, it } from "vitest";
import type { TraceEvent } from "../api";
import {
  EventIndex,
  advanceTime,
  buildScene,
  coreActivityAt,
  coreStopPositions,
  pointAt,
  ringDigest,
  positionAngle,
  progress,
  routeDirection,
  routePosition,
  stopPositions,
  tileKind,
  tilesAt,
  validRoute,
  wrap,
} from "./model";
import { EventTable } from "../events";
import { stops } from "./testStops";

const circle = { cx: 100, cy: 100, r: 50 };

function ev(partial: Partial<TraceEvent>): TraceEvent {
  return {
    unit: "dma",
    core: 0,
    start: 0,
    end: 10,
    bytes: 128,
    srcStop: null,
    dstStop: null,
    route: [],
    op: "ktdp.load",
    line: 1,
    ...partial,
  };
}

describe("ring geometry", () => {
  it("wraps positions into [0, count)", () => {
    expect(wrap(5, 5)).toBe(0);
    expect(wrap(-1, 5)).toBe(4);
    expect(wrap(-0.5, 4)).toBe(3.5);
    expect(wrap(12.25, 4)).toBe(0.25);
    expect(wrap(3, 0)).toBe(0);
  });

  it("puts stop 0 at the top and goes clockwise", () => {
    const pts = stopPositions(4, circle);
    expect(pts).toHaveLength(4);
    expect(pts[0]!.x).toBeCloseTo(100);
    expect(pts[0]!.y).toBeCloseTo(50);
    expect(pts[1]!.x).toBeCloseTo(150); // right (y grows downwards on a canvas)
    expect(pts[1]!.y).toBeCloseTo(100);
    expect(pts[2]!.y).toBeCloseTo(150);
    expect(pts[3]!.x).toBeCloseTo(50);
  });

  it("places every stop on the circle, evenly spaced", () => {
    const n = 34;
    const pts = stopPositions(n, circle);
    for (const p of pts) expect(Math.hypot(p.x - 100, p.y - 100)).toBeCloseTo(50);
    const d = (i: number) =>
      Math.hypot(pts[i]!.x - pts[(i + 1) % n]!.x, pts[i]!.y - pts[(i + 1) % n]!.y);
    for (let i = 1; i < n; i++) expect(d(i)).toBeCloseTo(d(0));
  });

  it("offsets points radially", () => {
    const p = pointAt(0, 4, circle, 10);
    expect(p.y).toBeCloseTo(40);
    const q = pointAt(0, 4, circle, -10);
    expect(q.y).toBeCloseTo(60);
    expect(positionAngle(0.5, 4)).toBeCloseTo(-Math.PI / 4);
  });

  it("follows a route stop by stop, across the wrap point", () => {
    expect(routePosition([0, 1, 2, 3, 4], 34, 0)).toBe(0);
    expect(routePosition([0, 1, 2, 3, 4], 34, 0.5)).toBeCloseTo(2);
    expect(routePosition([0, 1, 2, 3, 4], 34, 1)).toBeCloseTo(4);
    expect(routePosition([1, 0, 33, 32, 31], 34, 0.5)).toBeCloseTo(33);
    expect(routePosition([32, 33, 0, 1, 2], 34, 0.75)).toBeCloseTo(1);
    expect(routePosition([0, 1, 2, 3, 4], 34, 2)).toBeCloseTo(4); // clamped
    expect(routePosition([0, 1, 2, 3, 4], 34, -1)).toBe(0);
    // The route decides the way round, even the longer one (the scheduler's choice).
    expect(routePosition([0, 33, 32], 34, 0.5)).toBeCloseTo(33);
    expect(routeDirection([0, 33, 32], 34)).toBe(-1);
    expect(routeDirection([17, 18], 34)).toBe(1);
    expect(routeDirection([5], 34)).toBe(0);
    expect(routePosition([5], 34, 0.5)).toBe(5);
  });

  it("accepts only walks of neighbouring stops", () => {
    expect(validRoute([2, 1, 0], 5)).toBe(true);
    expect(validRoute([4, 0, 1], 5)).toBe(true);
    expect(validRoute([3], 5)).toBe(true);
    expect(validRoute([], 5)).toBe(false);
    expect(validRoute([0, 2], 5)).toBe(false);
    expect(validRoute([0, 99], 5)).toBe(false);
  });
});

describe("events in time", () => {
  it("reports progress only while an event is in flight", () => {
    const e = { start: 10, end: 30 };
    expect(progress(e, 9)).toBeNull();
    expect(progress(e, 10)).toBe(0);
    expect(progress(e, 20)).toBe(0.5);
    expect(progress(e, 30)).toBeNull();
    expect(progress({ start: 5, end: 5 }, 5)).toBeNull();
  });

  it("finds exactly the active events, whatever their order", () => {
    const events = [
      ev({ start: 50, end: 60 }),
      ev({ start: 0, end: 100 }),
      ev({ start: 10, end: 20 }),
      ev({ start: 15, end: 16 }),
      ev({ start: 70, end: 80 }),
    ];
    const idx = new EventIndex(EventTable.from(events));
    const brute = (t: number) => events.flatMap((e, i) => (e.start <= t && t < e.end ? [i] : []));
    for (let t = -5; t <= 105; t += 0.5) {
      const got = idx.activeAt(t);
      expect(got.length).toBe(brute(t).length);
      for (const i of brute(t)) expect(got).toContain(i);
    }
  });

  it("classifies tiles by the kinds of their stops", () => {
    expect(tileKind(stops, 2, 0)).toBe("load");
    expect(tileKind(stops, 4, 2)).toBe("store");
    expect(tileKind(stops, 0, 4)).toBe("move");
  });

  it("places DMA tiles at time t along their routes", () => {
    const events = [
      ev({ start: 0, end: 10, srcStop: 2, dstStop: 0, route: [2, 1, 0] }), // load mem -> core0, ccw
      ev({ start: 5, end: 15, srcStop: 4, dstStop: 2, route: [4, 3, 2] }), // store core3 -> mem, ccw
      ev({ start: 0, end: 20, srcStop: 4, dstStop: 1, route: [4, 0, 1] }), // core3 -> core1, cw
      ev({ unit: "pt", start: 0, end: 20 }), // compute: never a tile
      ev({ start: 0, end: 20, srcStop: 0, dstStop: 99, route: [0, 99] }), // bad stop: ignored
      ev({ start: 0, end: 20, srcStop: 0, dstStop: 2 }), // no route: ignored
    ];
    const idx = new EventIndex(EventTable.from(events));
    const at5 = tilesAt(idx, stops, 5);
    expect(at5).toHaveLength(3);
    const load = at5.find((t) => t.kind === "load")!;
    expect(load.direction).toBe(-1);
    expect(load.pos).toBeCloseTo(1);
    const store = at5.find((t) => t.kind === "store")!;
    expect(store.pos).toBeCloseTo(4);
    const move = at5.find((t) => t.kind === "move")!;
    expect(move.direction).toBe(1);
    expect(move.pos).toBeCloseTo(wrap(4 + 2 * 0.25, 5));
    const at12 = tilesAt(idx, stops, 12);
    expect(at12.map((t) => t.kind).sort()).toEqual(["move", "store"]);
    expect(tilesAt(idx, stops, 25)).toHaveLength(0);
  });

  it("reports per-core PT/SFP activity at t", () => {
    const idx = new EventIndex(
      EventTable.from([
        ev({ unit: "pt", core: 1, start: 0, end: 10 }),
        ev({ unit: "sfp", core: 1, start: 5, end: 8 }),
        ev({ unit: "sfp", core: 3, start: 9, end: 12 }),
        ev({ unit: "pt", core: 77, start: 0, end: 100 }), // unknown core: ignored
      ]),
    );
    const a = coreActivityAt(idx, 4, 6);
    expect(a[1]).toEqual({ pt: true, sfp: true, dma: false });
    expect(a[3]).toEqual({ pt: false, sfp: false, dma: false });
    expect(coreActivityAt(idx, 4, 10)[3]!.sfp).toBe(true);
    expect(coreActivityAt(idx, 4, 10)[1]!.pt).toBe(false);
  });

  it("maps core ids to ring positions", () => {
    expect(coreStopPositions(stops, 4)).toEqual([0, 1, 3, 4]);
    expect(coreStopPositions(stops, 5)[4]).toBe(-1);
  });

  it("builds a scene that separates transfers from compute", () => {
    const scene = buildScene({
      machine: { name: "m", cores: 4, stops },
      totalCycles: 0,
      events: EventTable.from([
        ev({ start: 0, end: 10, srcStop: 2, dstStop: 0, route: [2, 1, 0] }),
        ev({ start: 0, end: 10, srcStop: null, dstStop: 0 }),
        ev({ unit: "sfp", start: 3, end: 42 }),
      ]),
    });
    expect(scene.transfers.length).toBe(1);
    expect(scene.compute.length).toBe(1);
    expect(scene.totalCycles).toBe(42); // falls back to the last event end
    expect(scene.coreStops).toEqual([0, 1, 3, 4]);
  });
});

describe("the ring's digest", () => {
  /** A seeded pseudo-random run: transfers (some with broken routes) and compute, any order. */
  function randomEvents(seed: number, n: number): TraceEvent[] {
    let x = seed;
    const next = (m: number): number => {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      return x % m;
    };
    const routes = [[2, 1, 0], [0, 1], [3, 4, 0], [1, 3], [], [4, 3, 2, 1]];
    return Array.from({ length: n }, () => {
      const start = next(50);
      const unit = (["dma", "dma", "pt", "sfp"] as const)[next(4)] ?? "dma";
      return ev({
        unit,
        core: next(4),
        start,
        end: start + next(20),
        route: unit === "dma" ? (routes[next(routes.length)] ?? []) : [],
      });
    });
  }

  it("lists valid transfers and compute events by start (ties by index), as the scene used to", () => {
    for (const seed of [1, 7, 42]) {
      const events = EventTable.from(randomEvents(seed, 200));
      const run = { machine: { name: "m", cores: 4, stops }, totalCycles: 80, events };
      const d = ringDigest(run);
      const all = Array.from({ length: events.length }, (_, i) => i);
      const byStart = (list: number[]): number[] =>
        list.sort((a, b) => events.start(a) - events.start(b) || a - b);
      const transfers = byStart(
        all.filter((i) => events.unit(i) === "dma" && validRoute(events.route(i), stops.length)),
      );
      const compute = byStart(all.filter((i) => events.unit(i) !== "dma"));
      expect([...d.transfers]).toEqual(transfers);
      expect([...d.compute]).toEqual(compute);
      // A scene built from the digest finds what one built from scratch finds.
      const given = buildScene(run, d);
      const fresh = buildScene(run);
      for (const t of [0, 13, 37, 55])
        expect(given.transfers.activeAt(t)).toEqual(fresh.transfers.activeAt(t));
      expect(given.util).toEqual(fresh.util);
    }
  });
});

describe("playback clock", () => {
  it("advances simulated time with wall time and loops", () => {
    expect(advanceTime(0, 1000, 4000, 4000)).toBe(1000);
    expect(advanceTime(3500, 1000, 4000, 4000)).toBe(500);
    expect(advanceTime(0, 500, 1000, 4000)).toBe(125);
    expect(advanceTime(10, -5, 1000, 4000)).toBe(10);
    expect(advanceTime(10, 16, 0, 4000)).toBe(0);
    expect(advanceTime(10, 16, 100, 0)).toBe(0);
  });
});
