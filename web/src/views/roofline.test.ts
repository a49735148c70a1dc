import { describe, expect, it } from "vitest";
import type { KernelRoofline, Roofline } from "../generated/types";
import { emptyLatencyModel, project, rooflineModel, timingRows } from "./roofline";

function kernel(
  i: number,
  macs: number,
  elementwise: number,
  dramBytes: number,
  cycles: number,
): KernelRoofline {
  const bound = { dramCycles: 0, matmulCycles: 0, vectorCycles: 0, lowerBoundCycles: 1 };
  return {
    kernel: i,
    func: `k${i}`,
    macs,
    elementwise,
    dramReadBytes: dramBytes,
    dramWriteBytes: 0,
    ringBytes: 0,
    coresUsed: 32,
    bounds: { ...bound, bound: "dram" },
    achievedCycles: cycles,
    ratio: 1,
  };
}

// spyre32's rates: 150 B/cycle, 32 x 1536 MAC/cycle, 32 x 64 lanes.
const R: Roofline = {
  rates: {
    dramBytesPerCycle: 150,
    macsPerCyclePerCore: 1536,
    elementwisePerCyclePerCore: 64,
    cores: 32,
  },
  kernels: [
    // 1,000 MAC/B at 10,000 MAC/cycle; 0.1 op/B at 10 op/cycle; one that did nothing.
    kernel(0, 1e9, 0, 1e6, 1e5),
    kernel(1, 0, 1e5, 1e6, 1e4),
    kernel(2, 0, 0, 0, 0),
  ],
  program: {
    macs: 1e9,
    elementwise: 1e5,
    dramReadBytes: 2e6,
    dramWriteBytes: 0,
    uniqueDramBytes: 2e6,
    ringBytes: 0,
    bounds: null,
    achievedCycles: 1.1e5,
    ratio: 0,
    rereadFactor: 1,
  },
  assumptions: [],
};

describe("roofline chart model", () => {
  it("maps decades linearly in pixels", () => {
    const s = { min: 1, max: 1000, from: 0, to: 300 };
    expect(project(s, 1)).toBe(0);
    expect(project(s, 10)).toBeCloseTo(100);
    expect(project(s, 1000)).toBe(300);
    // Out of range and non-positive values stay on the axis.
    expect(project(s, 1e6)).toBe(300);
    expect(project(s, 0)).toBe(0);
  });

  it("spans every dot and the ridge points in whole decades", () => {
    const m = rooflineModel(R, 760, 380);
    // Intensities 0.1 and 1000, ridges 49152/150 = 327.7 and 2048/150 = 13.65.
    expect(m.x.min).toBe(0.01);
    expect(m.x.max).toBe(1e4);
    // Throughputs 10 and 1e4, peaks 49152 and 2048; the DRAM roof at x = 0.01 is 1.5.
    expect(m.y.min).toBe(1);
    expect(m.y.max).toBe(1e5);
    expect(m.xTicks).toEqual([0.01, 0.1, 1, 10, 100, 1000, 1e4]);
    expect(m.y.from).toBeGreaterThan(m.y.to);
  });

  it("places one dot per kernel that did work, at its intensity and throughput", () => {
    const m = rooflineModel(R, 760, 380);
    expect(m.dots.map((d) => d.func)).toEqual(["k0", "k1"]);
    const [mm, add] = m.dots;
    expect(mm?.intensity).toBe(1000);
    expect(mm?.throughput).toBe(1e4);
    expect(mm?.macs).toBe(true);
    expect(add?.intensity).toBeCloseTo(0.1);
    expect(add?.throughput).toBe(10);
    expect(add?.macs).toBe(false);
    // x: 5 of 6 decades from 0.01 to 1e4 across [64, 744].
    expect(mm?.x).toBeCloseTo(64 + (5 / 6) * 680);
    // y: 4 of 5 decades from 1 to 1e5, upwards from 340 to 12.
    expect(mm?.y).toBeCloseTo(340 - (4 / 5) * 328);
  });

  it("draws the DRAM slope up to the highest ceiling and each ceiling from its ridge", () => {
    const m = rooflineModel(R, 760, 380);
    const dram = m.roofs.find((r) => r.name.startsWith("DRAM"));
    const mac = m.roofs.find((r) => r.name === "matmul peak");
    expect(dram?.x1).toBe(m.x.from);
    expect(dram?.x2).toBeCloseTo(project(m.x, 49152 / 150));
    expect(dram?.y2).toBeCloseTo(project(m.y, 49152));
    expect(mac?.x1).toBeCloseTo(dram?.x2 ?? NaN);
    expect(mac?.y1).toBe(mac?.y2);
    expect(m.roofs.map((r) => r.name)).toContain("vector peak");
  });
});

describe("timingRows", () => {
  it("puts both models side by side per kernel, then the program, with signed differences", () => {
    const k = (i: number, event: number, model: number) => ({
      kernel: i,
      func: `k${i}`,
      computeCycles: 1,
      memoryCycles: model - 1,
      commCycles: 0,
      sequentialCycles: model,
      overlappedCycles: model - 1,
      bottleneck: "memory",
      eventCycles: event,
      differenceCycles: model - event,
    });
    const rows = timingRows({
      params: [],
      kernels: [k(0, 1000, 1500), k(1, 800, 500)],
      sequentialCycles: 2000,
      overlappedCycles: 1998,
      eventCycles: 1800,
      notes: [],
    });
    expect(rows.map((r) => r.name)).toEqual(["k0", "k1", "program"]);
    expect(rows[0]?.difference).toBe("+500");
    expect(rows[1]?.difference).toBe("-300");
    expect(rows[2]?.difference).toBe("+200");
    expect(rows[0]?.bound).toBe("memory");
    expect(timingRows(emptyLatencyModel())).toEqual([]);
  });
});
