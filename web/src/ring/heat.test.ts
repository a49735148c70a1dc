import { describe, expect, it } from "vitest";
import type { TraceEvent } from "../api";
import {
  coreUtilisation,
  describeCore,
  heatColour,
  heatPaint,
  HEAT_STOPS,
  luminance,
  unionLength,
} from "./heat";
import { buildScene } from "./model";
import { EventTable } from "../events";

function ev(partial: Partial<TraceEvent>): TraceEvent {
  return {
    unit: "pt",
    core: 0,
    start: 0,
    end: 10,
    bytes: 0,
    srcStop: null,
    dstStop: null,
    route: [],
    op: "op",
    line: 1,
    ...partial,
  };
}

describe("unionLength", () => {
  it("counts overlaps once and skips empty spans", () => {
    expect(unionLength([])).toBe(0);
    expect(
      unionLength([
        [0, 10],
        [5, 15],
        [20, 30],
        [25, 25],
      ]),
    ).toBe(25);
    expect(
      unionLength([
        [20, 30],
        [0, 40],
      ]),
    ).toBe(40);
  });
});

describe("coreUtilisation", () => {
  it("gives each core its busy fractions over the run", () => {
    const u = coreUtilisation(
      EventTable.from([
        ev({ core: 0, unit: "pt", start: 0, end: 50 }),
        ev({ core: 0, unit: "sfp", start: 25, end: 75 }),
        ev({ core: 1, unit: "dma", start: 0, end: 20 }),
        ev({ core: 1, unit: "dma", start: 10, end: 30 }),
        ev({ core: 7, unit: "pt", start: 0, end: 100 }),
      ]),
      2,
      100,
    );
    expect(u).toHaveLength(2);
    expect(u[0]).toEqual({ core: 0, pt: 0.5, sfp: 0.5, compute: 0.75, dma: 0 });
    expect(u[1]).toEqual({ core: 1, pt: 0, sfp: 0, compute: 0, dma: 0.3 });
    expect(describeCore(u[0]!)).toBe("core 0: compute 75% (PT 50%, SFP 50%) · DMA 0%");
  });

  it("clamps to the run and handles an empty run", () => {
    const u = coreUtilisation(EventTable.from([ev({ start: -5, end: 500 })]), 1, 100);
    expect(u[0]!.pt).toBe(1);
    expect(coreUtilisation(EventTable.from([ev({})]), 1, 0)[0]!.pt).toBe(0);
  });
});

describe("heatColour", () => {
  it("runs from the first stop to the last and clamps", () => {
    expect(heatColour(0)).toBe(HEAT_STOPS[0]);
    expect(heatColour(1)).toBe(HEAT_STOPS[HEAT_STOPS.length - 1]);
    expect(heatColour(-3)).toBe(HEAT_STOPS[0]);
    expect(heatColour(Number.NaN)).toBe(HEAT_STOPS[0]);
    expect(heatColour(0.5, ["#000000", "#ffffff"])).toBe("#808080");
    expect(heatColour(0.3)).toMatch(/^#[0-9a-f]{6}$/);
  });
});

describe("heatPaint", () => {
  const util = [
    { core: 0, pt: 0, sfp: 0, compute: 0, dma: 1 },
    { core: 1, pt: 1, sfp: 0, compute: 1, dma: 0 },
  ];

  it("starts at the idle-core colour and keeps labels readable", () => {
    const p = heatPaint(util, "compute", "#eeeeee", "#333333")!;
    expect(p.fill).toEqual(["#eeeeee", HEAT_STOPS[HEAT_STOPS.length - 1]]);
    // Idle: the usual label; hot (light yellow): dark text.
    expect(p.text).toEqual(["#333333", "#1a1a1a"]);
    expect(heatPaint(util, "dma", "#eeeeee", "#333333")!.fill[0]).toBe(
      HEAT_STOPS[HEAT_STOPS.length - 1],
    );
    expect(heatPaint(util, "off", "#eeeeee", "#333333")).toBeNull();
    // A colour the scale cannot parse falls back to its own first stop.
    expect(heatPaint(util, "pt", "rgb(1, 2, 3)", "#333333")!.fill[0]).toBe(HEAT_STOPS[0]);
    expect(luminance("#ffffff")).toBeCloseTo(1);
    expect(luminance("#000000")).toBe(0);
  });
});

describe("buildScene", () => {
  it("computes the busy fractions once, with the scene", () => {
    const scene = buildScene({
      machine: {
        name: "m",
        cores: 2,
        stops: [
          { kind: "core", index: 0, label: "c0" },
          { kind: "core", index: 1, label: "c1" },
        ],
      },
      totalCycles: 100,
      events: EventTable.from([ev({ core: 1, start: 0, end: 100 })]),
    });
    expect(scene.util.map((u) => u.compute)).toEqual([0, 1]);
    expect(scene.util.map((u) => u.dma)).toEqual([0, 0]);
  });
});

describe("coreUtilisation on many events", () => {
  it("agrees with unionLength over each core's spans", () => {
    let seed = 7;
    const rand = (m: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % m;
    };
    const units = ["dma", "pt", "sfp"] as const;
    const list = Array.from({ length: 400 }, () => {
      const start = rand(1000) - 50;
      return ev({ core: rand(3), unit: units[rand(3)], start, end: start + rand(80) });
    });
    const u = coreUtilisation(EventTable.from(list), 3, 1000);
    for (let core = 0; core < 3; core++) {
      const spans = (want: readonly string[]): [number, number][] =>
        list
          .filter((e) => e.core === core && want.includes(e.unit))
          .map((e) => [Math.max(0, e.start), Math.min(1000, e.end)]);
      expect(u[core]!.pt).toBeCloseTo(unionLength(spans(["pt"])) / 1000, 12);
      expect(u[core]!.sfp).toBeCloseTo(unionLength(spans(["sfp"])) / 1000, 12);
      expect(u[core]!.compute).toBeCloseTo(unionLength(spans(["pt", "sfp"])) / 1000, 12);
      expect(u[core]!.dma).toBeCloseTo(unionLength(spans(["dma"])) / 1000, 12);
    }
  });
});
