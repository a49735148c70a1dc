import { describe, expect, it } from "vitest";
import type { TraceEvent } from "./api";
import {
  busyProfile,
  cyclesChange,
  describeDifference,
  dmaOverlapsPt,
  encodeCompare,
  NO_CHANGE,
  sanitizeCompare,
  specLabel,
  specOptions,
  type RunFigures,
} from "./compare";
import { EventTable } from "./events";

const T = EventTable.from;

function ev(unit: TraceEvent["unit"], core: number, start: number, end: number): TraceEvent {
  return {
    unit,
    core,
    start,
    end,
    bytes: 0,
    srcStop: null,
    dstStop: null,
    route: [],
    op: "",
  } as unknown as TraceEvent;
}

describe("compare specs", () => {
  it("keep only what they change, and round-trip through a link", () => {
    expect(sanitizeCompare(null)).toBeNull();
    expect(sanitizeCompare({})).toBeNull();
    expect(sanitizeCompare({ doubleBuffer: "no", allocator: "worst-fit" })).toBeNull();
    const s = sanitizeCompare({ doubleBuffer: false, attentionBlock: 64, seed: 3 });
    expect(s).toEqual({ ...NO_CHANGE, doubleBuffer: false, attentionBlock: 64 });
    expect(sanitizeCompare(JSON.parse(JSON.stringify(encodeCompare(s!))))).toEqual(s);
    expect(encodeCompare(s!)).toEqual({ doubleBuffer: false, attentionBlock: 64 });
    // A KTIR-edit comparison changes nothing else.
    expect(sanitizeCompare({ ktirEdit: true, machine: "tiny4" })).toEqual({
      ...NO_CHANGE,
      ktirEdit: true,
    });
    expect(sanitizeCompare({ attentionBlock: -1 })).toBeNull();
    expect(sanitizeCompare({ machine: "x".repeat(65) })).toBeNull();
    // Tensor parallelism: only the degrees the page offers; 1 (one card) is a change too.
    expect(sanitizeCompare({ tp: 2 })).toEqual({ ...NO_CHANGE, tp: 2 });
    expect(sanitizeCompare({ tp: 1 })).toEqual({ ...NO_CHANGE, tp: 1 });
    expect(sanitizeCompare({ tp: 3 })).toBeNull();
    expect(sanitizeCompare({ tp: "4" })).toBeNull();
  });

  it("apply their changes to the run on screen's options", () => {
    const base = { machine: "spyre32", allocator: "best-fit", ktir: "func.func @k() {}" };
    expect(specOptions(base, { ...NO_CHANGE, doubleBuffer: false })).toEqual({
      ...base,
      doubleBuffer: false,
    });
    expect(
      specOptions(
        { ...base, attentionBlock: 32 },
        { ...NO_CHANGE, allocator: "greedy", attentionBlock: 0 },
      ),
    ).toEqual({ machine: "spyre32", ktir: base.ktir });
    expect(specOptions(base, { ...NO_CHANGE, ktirEdit: true })).toEqual({
      machine: "spyre32",
      allocator: "best-fit",
    });
    expect(specLabel({ ...NO_CHANGE, machine: "tiny4", doubleBuffer: false })).toBe(
      "machine tiny4, double buffering off",
    );
    expect(specLabel({ ...NO_CHANGE, ktirEdit: true })).toBe("the KTIR edit");
    expect(specOptions(base, { ...NO_CHANGE, tp: 4 })).toEqual({ ...base, tp: 4 });
    expect(specOptions({ ...base, tp: 2 }, { ...NO_CHANGE, tp: 1 })).toEqual(base);
    expect(specLabel({ ...NO_CHANGE, tp: 2 })).toBe("TP 2");
    expect(specLabel({ ...NO_CHANGE, tp: 1 })).toBe("one card");
  });
});

describe("run figures", () => {
  it("find a core's DMA running while its PT unit works, and only on the same core", () => {
    expect(dmaOverlapsPt(T([ev("dma", 0, 0, 10), ev("pt", 0, 10, 20)]))).toBe(false);
    expect(dmaOverlapsPt(T([ev("dma", 0, 0, 10), ev("pt", 1, 5, 20)]))).toBe(false);
    expect(dmaOverlapsPt(T([ev("dma", 0, 0, 4), ev("dma", 0, 3, 12), ev("pt", 0, 11, 20)]))).toBe(
      true,
    );
    expect(dmaOverlapsPt(T([ev("sfp", 0, 0, 10), ev("pt", 0, 0, 10)]))).toBe(false);
  });

  it("say the difference in words", () => {
    const figures = (cycles: number, bottleneck: string, overlapped: string[]): RunFigures => ({
      cycles,
      bottleneck,
      overlapped: new Set(overlapped),
      kernels: 3,
    });
    expect(cyclesChange(1000, 1120)).toBe("12% more cycles");
    expect(cyclesChange(1000, 950)).toBe("5.0% fewer cycles");
    expect(cyclesChange(1000, 1000)).toBe("the same cycles");
    expect(
      describeDifference(
        "double buffering off",
        figures(1000, "memory", ["a", "b", "c"]),
        figures(1120, "memory", ["c"]),
      ),
    ).toBe("double buffering off: 12% more cycles; DMA no longer overlaps PT in 2 kernels");
    expect(
      describeDifference(
        "machine tiny4",
        figures(100, "compute", []),
        figures(400, "memory", ["a"]),
      ),
    ).toBe(
      "machine tiny4: 300% more cycles; the bottleneck moves from compute to memory; DMA now overlaps PT in 1 kernel",
    );
  });

  it("profile a unit's busy time on a shared axis", () => {
    const p = busyProfile(
      T([ev("pt", 0, 0, 50), ev("pt", 1, 25, 50), ev("dma", 0, 0, 100)]),
      "pt",
      100,
      2,
      4,
    );
    expect([...p]).toEqual([0.5, 1, 0, 0]);
    expect([...busyProfile(T([]), "pt", 0, 2, 3)]).toEqual([0, 0, 0]);
  });
});
