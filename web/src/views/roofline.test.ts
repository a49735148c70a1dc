import { describe, expect, it } from "vitest";
import type { KernelRoofline, Roofline } from "../generated/types";
import {
  defaultOrder,
  emptyLatencyModel,
  filterRows,
  kernelRows,
  pageHolding,
  project,
  rooflineModel,
  sortRows,
  timingRows,
  type KernelRow,
  type SortKey,
} from "./roofline";

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

describe("the kernel table", () => {
  /** Kernel `i` with a model-minus-event difference and a ratio to its bound. */
  const row = (i: number, name: string, difference: number, ratio: number | null): KernelRow => ({
    kernel: i,
    name,
    event: 1000 + i,
    model: 1000 + i + difference,
    difference,
    bound: i % 2 === 0 ? "memory" : "compute",
    ratio,
  });

  it("joins each kernel's ratio to its roofline bound by kernel index", () => {
    const latency = (i: number) => ({
      kernel: i,
      func: `k${i}`,
      computeCycles: 1,
      memoryCycles: 1,
      commCycles: 0,
      sequentialCycles: 10,
      overlappedCycles: 1,
      bottleneck: "memory",
      eventCycles: 8,
      differenceCycles: 2,
    });
    const roof = { ...R, kernels: [kernel(1, 0, 5, 5, 50), kernel(0, 0, 5, 5, 0)] };
    roof.kernels[0] = { ...roof.kernels[0]!, ratio: 3.5 };
    const rows = kernelRows({ ...emptyLatencyModel(), kernels: [latency(0), latency(1)] }, roof);
    // Kernel 0 did no work in any time: no ratio.
    expect(rows.map((r) => [r.kernel, r.ratio])).toEqual([
      [0, null],
      [1, 3.5],
    ]);
    expect(rows[1]).toMatchObject({ name: "k1", event: 8, model: 10, difference: 2 });
  });

  const rows = [
    row(0, "b_add", -40, 1.5),
    row(1, "a_matmul", 10, 9),
    row(2, "c_softmax", 300, null),
    row(3, "d_norm", -40, 9),
  ];

  it("starts with the kernels furthest from their bound, or the largest difference", () => {
    const order = defaultOrder(rows);
    expect(order).toEqual({ key: "ratio", descending: true });
    // Ties keep kernel order; kernels without a ratio come last.
    expect(sortRows(rows, order).map((r) => r.kernel)).toEqual([1, 3, 0, 2]);
    const noBounds = rows.map((r) => ({ ...r, ratio: null }));
    expect(defaultOrder(noBounds)).toEqual({ key: "difference", descending: true });
  });

  it("sorts by any column either way; the difference by its size", () => {
    const by = (key: SortKey, descending: boolean): number[] =>
      sortRows(rows, { key, descending }).map((r) => r.kernel);
    expect(by("name", false)).toEqual([1, 0, 2, 3]);
    expect(by("name", true)).toEqual([3, 2, 0, 1]);
    expect(by("difference", true)).toEqual([2, 0, 3, 1]);
    expect(by("difference", false)).toEqual([1, 0, 3, 2]);
    expect(by("event", true)).toEqual([3, 2, 1, 0]);
    expect(by("ratio", false)).toEqual([0, 1, 3, 2]);
    expect(by("bound", false)).toEqual([1, 3, 0, 2]);
    // The rows given are left in their order.
    expect(rows.map((r) => r.kernel)).toEqual([0, 1, 2, 3]);
  });

  it("filters by name, case aside, and finds the page that holds a kernel", () => {
    expect(filterRows(rows, " MAT ").map((r) => r.kernel)).toEqual([1]);
    expect(filterRows(rows, "").length).toBe(4);
    const many = Array.from({ length: 130 }, (_, i) => row(i, `k${i}`, i, 130 - i));
    const sorted = sortRows(many, defaultOrder(many));
    expect(pageHolding(sorted, 0)).toBe(0);
    expect(pageHolding(sorted, 79)).toBe(1);
    expect(pageHolding(sorted, 129)).toBe(2);
    expect(pageHolding(sorted, 129, 10)).toBe(12);
    expect(pageHolding(filterRows(sorted, "k12"), 5)).toBeNull();
  });
});
