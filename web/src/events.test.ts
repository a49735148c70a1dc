import { describe, expect, it } from "vitest";
import type { TraceEvent } from "./api";
import { columnBuffers, EventTable, isColumns, orderByStart, toColumns } from "./events";
import { hydrateRun, transferables, type WireRunResult } from "./protocol";
import { minimalResult } from "./testResult";

const events: TraceEvent[] = [
  {
    unit: "dma",
    core: 2,
    start: 10,
    end: 30,
    bytes: 4096,
    srcStop: 0,
    dstStop: 3,
    route: [0, 1, 2, 3],
    op: "ktdp.load",
    line: 12,
  },
  {
    unit: "pt",
    core: 1,
    start: 0,
    end: 5,
    bytes: 0,
    srcStop: null,
    dstStop: null,
    route: [],
    op: "linalg.matmul",
    line: 20,
  },
  {
    unit: "sfp",
    core: 0,
    start: 5,
    end: 6,
    bytes: 0,
    srcStop: null,
    dstStop: null,
    route: [],
    op: "ktdp.load",
    line: 7,
  },
];

describe("event columns", () => {
  it("round-trip every field, with op texts kept once", () => {
    const cols = toColumns(events);
    expect(isColumns(cols)).toBe(true);
    expect(cols.ops).toEqual(["ktdp.load", "linalg.matmul"]);
    const t = new EventTable(cols);
    expect(t.length).toBe(3);
    for (let i = 0; i < events.length; i++) expect(t.get(i)).toEqual(events[i]);
    expect([...t.route(0)]).toEqual([0, 1, 2, 3]);
    expect(t.route(1)).toHaveLength(0);
    expect(t.srcStop(1)).toBeNull();
    expect(t.get(0)).toBe(t.get(0));
  });

  it("reject what is not a set of columns", () => {
    const cols = toColumns(events);
    expect(isColumns(null)).toBe(false);
    expect(isColumns({ ...cols, start: [10, 0, 5] })).toBe(false);
    expect(isColumns({ ...cols, count: 4 })).toBe(false);
    expect(isColumns({ ...cols, routeStart: new Uint32Array(3) })).toBe(false);
  });

  it("go by transfer and come back as a table", () => {
    const r = minimalResult();
    const cols = toColumns(events);
    const wire: WireRunResult = {
      kind: "graph",
      fileName: "g.json",
      source: "",
      result: { ...r, run: { ...r.run, events: cols } },
      layout: { nodes: [], edges: [], width: 0, height: 0 } as never,
      io: null,
    };
    const buffers = transferables({ id: 1, ok: true, result: wire });
    expect(buffers).toEqual(columnBuffers(cols));
    expect(buffers).toHaveLength(11);
    expect(transferables({ id: 1, ok: true, result: { version: "x" } })).toEqual([]);
    expect(transferables({ id: 1, ok: false, error: { message: "no" } })).toEqual([]);
    const page = hydrateRun(wire);
    expect(page.result.run.events.length).toBe(3);
    expect(page.result.run.events.op(1)).toBe("linalg.matmul");
  });
});

describe("orderByStart", () => {
  it("orders by start, ties by index, packed or not", () => {
    const starts = Float64Array.from([30, 10, 20, 10, 0]);
    expect([...orderByStart(starts, [0, 1, 2, 3, 4])]).toEqual([4, 1, 3, 2, 0]);
    expect([...orderByStart(starts, [2, 0, 3])]).toEqual([3, 2, 0]);
    const fractional = Float64Array.from([2.5, 1.5, 1.5, -1]);
    expect([...orderByStart(fractional, [0, 1, 2, 3])]).toEqual([3, 1, 2, 0]);
    const huge = Float64Array.from([2 ** 52, 1]);
    expect([...orderByStart(huge, [0, 1])]).toEqual([1, 0]);
    expect(orderByStart(starts, [])).toHaveLength(0);
  });
});
