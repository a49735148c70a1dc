import { describe, expect, it } from "vitest";
import type { TraceEvent } from "./api";
import { eventDetails, kernelOfLine, sliceAt, stopName } from "./eventDetails";

const KTIR = `func.func @mm(%a: index, %c: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %av = ktdp.construct_memory_view %a, sizes: [64, 64], strides: [64, 1] {
  } : memref<64x64xf16>
  %at = ktdp.construct_access_tile %av[%c32, %k] {
  } : memref<64x64xf16> -> !ktdp.access_tile<32x16xindex>
  %x = ktdp.load %at : !ktdp.access_tile<32x16xindex> -> tensor<32x16xf16>
  ktdp.store %x, %at : tensor<32x16xf16>, !ktdp.access_tile<32x16xindex>
  %y = arith.addf %x, %x : tensor<32x16xf16>
  return
}`;

const STOPS = [
  { kind: "memory" as const, index: 0, label: "mem0" },
  { kind: "core" as const, index: 0, label: "c0" },
  { kind: "core" as const, index: 1, label: "c1" },
];

const MAP = {
  nodes: [],
  ops: [],
  kernels: [{ func: "mm", lines: { from: 1, to: 12 }, op: null, events: [] }],
};

describe("event details", () => {
  it("follow a load or store to its buffer and index ranges", () => {
    expect(sliceAt(KTIR, 8)).toEqual({
      tensor: "a",
      ranges: ["32:64", "%k:%k+16"],
      shape: [32, 16],
    });
    expect(sliceAt(KTIR, 9)?.tensor).toBe("a");
    expect(sliceAt(KTIR, 10)).toBeNull();
    expect(sliceAt(KTIR, 99)).toBeNull();
  });

  it("name stops and kernels", () => {
    expect(stopName(STOPS, 0)).toBe("mem0");
    expect(stopName(STOPS, 2)).toBe("core 1");
    expect(stopName(STOPS, 7)).toBe("stop 7");
    expect(stopName(STOPS, null)).toBe("–");
    expect(kernelOfLine(MAP, 5)).toBe("mm");
    expect(kernelOfLine(MAP, 50)).toBeNull();
  });

  it("list the slice, bytes, route, kernel, line and time", () => {
    const e: TraceEvent = {
      unit: "dma",
      core: 1,
      start: 100,
      end: 1100,
      bytes: 1024,
      srcStop: 0,
      dstStop: 2,
      route: [0, 1, 2],
      op: "ktdp.load",
      line: 8,
    };
    const rows = Object.fromEntries(
      eventDetails(e, { stops: STOPS, map: MAP, ktir: KTIR, clockGhz: 1 }),
    );
    expect(rows["tensor slice"]).toBe("a[32:64, %k:%k+16] (32×16 tile)");
    expect(rows["bytes"]).toBe("1,024 B");
    expect(rows["from → to"]).toBe("mem0 → core 1 (2 hops)");
    expect(rows["kernel"]).toBe("@mm");
    expect(rows["KTIR line 8"]).toContain("ktdp.load %at");
    expect(rows["time"]).toBe("cycles 100–1,100 (1,000 cycles, 1 µs)");
  });
});
