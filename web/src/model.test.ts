import { describe, expect, it } from "vitest";
import type { GraphInfo, SourceMap, TraceEvent } from "./api";
import { embedUrl } from "./embed/url";
import { layoutGraph, tensorTypes } from "./graph/layout";
import {
  divisions,
  kernelAt,
  kernelOfOp,
  kernelSpans,
  nodeOfOp,
  opOfKernel,
  opsOfNode,
  placements,
  scratchPlan,
} from "./session";
import {
  clampWindow,
  eventAt,
  laneOf,
  panBy,
  pinchWindow,
  tickStep,
  zoomAt,
} from "./timeline/model";
import { lineDiff } from "./views/diff";
import { diagnosticRange } from "./views/ir";
import { EventTable } from "./events";

describe("pass diff", () => {
  it("marks added and removed lines and collapses long unchanged runs", () => {
    const a = ["x", ...Array.from({ length: 20 }, (_, i) => `same ${i}`), "old"].join("\n");
    const b = ["y", ...Array.from({ length: 20 }, (_, i) => `same ${i}`), "new"].join("\n");
    const d = lineDiff(a, b, 2);
    expect(d.added).toBe(2);
    expect(d.removed).toBe(2);
    expect(d.lines[0]).toEqual({ kind: "del", text: "x" });
    expect(d.lines[1]).toEqual({ kind: "add", text: "y" });
    expect(d.lines.some((l) => l.kind === "skip" && l.text.includes("16 unchanged"))).toBe(true);
    expect(lineDiff("a\nb", "a\nb").lines.every((l) => l.kind === "same")).toBe(true);
  });
});

describe("timeline geometry", () => {
  it("zooms around a point, pans and clamps to the run", () => {
    const w = zoomAt({ start: 0, end: 1000 }, 0.5, 250, 1000);
    expect(w).toEqual({ start: 125, end: 625 });
    expect(panBy(w, 1000, 1000)).toEqual({ start: 500, end: 1000 });
    expect(panBy(w, -1000, 1000)).toEqual({ start: 0, end: 500 });
    expect(clampWindow({ start: -5, end: 5000 }, 1000)).toEqual({ start: 0, end: 1000 });
    expect(
      zoomAt({ start: 0, end: 10 }, 0.01, 5, 1000).end -
        zoomAt({ start: 0, end: 10 }, 0.01, 5, 1000).start,
    ).toBeCloseTo(4);
  });

  it("finds lanes and events, and picks round ticks", () => {
    const e = (core: number, unit: TraceEvent["unit"], start: number, end: number): TraceEvent => ({
      unit,
      core,
      start,
      end,
      bytes: 0,
      srcStop: null,
      dstStop: null,
      route: [],
      op: "x",
      line: 1,
    });
    expect(laneOf(e(0, "dma", 0, 1))).toBe(0);
    expect(laneOf(e(2, "sfp", 0, 1))).toBe(8);
    const table = EventTable.from([e(0, "pt", 0, 100), e(0, "pt", 40, 50)]);
    const byLane = new Map([[1, [0, 1]]]);
    expect(eventAt(table, byLane, 1, 45)).toBe(1);
    expect(eventAt(table, byLane, 1, 70)).toBe(0);
    expect(eventAt(table, byLane, 1, 150)).toBeNull();
    expect(eventAt(table, byLane, 2, 10)).toBeNull();
    expect(tickStep(3454, 8)).toBe(500);
    expect(tickStep(10, 10)).toBe(1);
  });
});

describe("graph layout", () => {
  const graph: GraphInfo = {
    name: "g",
    description: "",
    inputs: [{ name: "A", dtype: "f16", shape: [4, 8] }],
    outputs: [{ name: "C", dtype: "f16", shape: [4, 8] }],
    nodes: [
      { name: "m", op: "MatMul", inputs: ["A", "W"], outputs: ["B"] },
      { name: "r", op: "Relu", inputs: ["B"], outputs: ["R"] },
      { name: "a", op: "Add", inputs: ["B", "R"], outputs: ["C"] },
    ],
    initializers: [],
  };

  it("places nodes in layers by longest path and links tensors", () => {
    const types = tensorTypes(graph, { types: { B: { dtype: "f16", shape: [4, 8] } } });
    const l = layoutGraph(graph, types);
    const layer = (id: string): number | undefined => l.nodes.find((n) => n.id === id)?.layer;
    expect(layer("in:A")).toBe(0);
    expect(layer("op:m")).toBe(1);
    expect(layer("op:r")).toBe(2);
    expect(layer("op:a")).toBe(3);
    expect(layer("out:C")).toBe(4);
    expect(l.edges).toContainEqual({ from: "op:m", to: "op:a", tensor: "B" });
    expect(l.nodes.find((n) => n.id === "op:m")?.detail).toBe("f16[4×8]");
    // No two nodes overlap.
    for (const a of l.nodes)
      for (const b of l.nodes) if (a !== b) expect(a.x === b.x && a.y === b.y).toBe(false);
    expect(l.height).toBeGreaterThan(0);
    expect(layoutGraph({ ...graph, nodes: [], inputs: [], outputs: [] }, new Map()).nodes).toEqual(
      [],
    );
  });
});

describe("session helpers", () => {
  // As the driver maps a graph whose node "mm" became two device ops, run by two kernels.
  const map: SourceMap = {
    nodes: [
      { name: "mm", ops: [0, 1] },
      { name: "id", ops: [] },
    ],
    ops: [
      { name: "mm", kind: "batchmatmul", node: 0, kernel: 0, sdscLines: { from: 10, to: 40 } },
      { name: "mm/bias", kind: "add", node: 0, kernel: 1, sdscLines: { from: 41, to: 60 } },
    ],
    kernels: [
      { func: "k0_mm", lines: { from: 2, to: 4 }, op: 0, events: [0, 1] },
      { func: "k1_mm_bias", lines: { from: 5, to: 7 }, op: 1, events: [2] },
    ],
  };

  it("follows the source map between lines, kernels, ops and nodes, and times kernels", () => {
    expect(kernelAt(map, 3)?.func).toBe("k0_mm");
    expect(kernelAt(map, 1)).toBeNull();
    expect(opOfKernel(map, kernelAt(map, 6))?.name).toBe("mm/bias");
    expect(kernelOfOp(map, "mm/bias")?.lines).toEqual({ from: 5, to: 7 });
    expect(nodeOfOp(map, "mm/bias")).toBe("mm");
    expect(opsOfNode(map, "mm").map((o) => o.name)).toEqual(["mm", "mm/bias"]);
    expect(opsOfNode(map, "id")).toEqual([]);
    const ev = (line: number, start: number, end: number): TraceEvent => ({
      unit: "dma",
      core: 0,
      start,
      end,
      bytes: 1,
      srcStop: 0,
      dstStop: 1,
      route: [0, 1],
      op: "ktdp.load",
      line,
    });
    expect(kernelSpans(EventTable.from([ev(3, 0, 10), ev(3, 5, 20), ev(6, 20, 30)]), map)).toEqual([
      { start: 0, end: 20 },
      { start: 20, end: 30 },
    ]);
  });

  it("reads snapshot data defensively", () => {
    expect(divisions(null)).toEqual([]);
    expect(
      divisions({
        divisions: [
          {
            op: "m",
            splits: [2, 1],
            coresUsed: 2,
            coreToSlice: [
              [0, 0],
              [1, 0],
            ],
            rule: "r",
          },
        ],
      }),
    ).toEqual([
      {
        op: "m",
        splits: [2, 1],
        coresUsed: 2,
        coreToSlice: [
          [0, 0],
          [1, 0],
        ],
        rule: "r",
      },
    ]);
    expect(
      scratchPlan({
        plan: {
          capacityBytes: 10,
          peakBytes: 4,
          buffers: [{ tensor: "t", bytesPerCore: 4, offset: 0, start: 0, end: 1 }],
        },
      }),
    ).toEqual({
      capacity: 10,
      peak: 4,
      buffers: [{ tensor: "t", bytesPerCore: 4, offset: 0, start: 0, end: 1, dramReason: "" }],
    });
    expect(scratchPlan("nope")).toBeNull();
    expect(
      placements({ placements: { A: { dram: { offset: 64 } }, B: { scratchpad: { offset: 0 } } } }),
    ).toEqual(
      new Map([
        ["A", "Dram @ 64"],
        ["B", "Scratchpad @ 0"],
      ]),
    );
  });
});

describe("editor diagnostics", () => {
  it("maps a 1-based line and column to an editor range on that line", () => {
    const text = "module {\n  ktdp.lod %x\n}";
    const lines = text.split("\n");
    const starts = lines.map((_, i) => lines.slice(0, i).join("\n").length + (i ? 1 : 0));
    const doc = {
      lines: lines.length,
      line: (n: number) => ({ from: starts[n - 1]!, to: starts[n - 1]! + lines[n - 1]!.length }),
    };
    expect(diagnosticRange(doc, { line: 2, column: 3, start: 11, end: 19 })).toEqual({
      from: 11,
      to: 19,
    });
    // Out-of-range positions are clamped to the text.
    expect(diagnosticRange(doc, { line: 9, column: 99, start: 0, end: 0 })).toEqual({
      from: 24,
      to: 24,
    });
  });
});

describe("custom element", () => {
  it("builds the embed address from its attributes", () => {
    expect(
      embedUrl("https://docs.example/guide/page.html", { example: "softmax", view: "ring" }),
    ).toBe("https://docs.example/guide/index.html#v=1&example=softmax&view=ring&embed=1");
    expect(
      embedUrl("https://docs.example/a/", { src: "/play/index.html", example: "x y", t: "10" }),
    ).toBe("https://docs.example/play/index.html#v=1&example=x+y&t=10&embed=1");
  });

  it("refuses a src that is not http(s) or relative", () => {
    const base = "https://docs.example/a/";
    for (const src of ["javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,hi"]) {
      expect(() => embedUrl(base, { src })).toThrow(/http\(s\) or relative/);
    }
    expect(embedUrl(base, { src: "play/" })).toBe("https://docs.example/a/play/#v=1&embed=1");
    expect(embedUrl(base, { src: "http://other.example/p" })).toMatch(/^http:/);
  });
});

describe("timeline pinch", () => {
  it("zooms in as the fingers part and out as they close, about the midpoint", () => {
    const w = { start: 0, end: 1000 };
    expect(pinchWindow(w, 100, 200, 500, 1000)).toEqual({ start: 250, end: 750 });
    expect(pinchWindow({ start: 250, end: 750 }, 200, 100, 500, 1000)).toEqual(w);
    expect(pinchWindow(w, 0, 0, 0, 1000)).toEqual(w);
  });
});
