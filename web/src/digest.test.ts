import { describe, expect, it } from "vitest";
import type { TraceEvent } from "./api";
import { digestRun, isDigest, type RunDigest } from "./digest";
import { coresDigest, divisionAt, divisions, isCoresDigest, slicedCores } from "./session";
import { minimalResult, pageResult } from "./testResult";

/** A run of `n` events spread over `cores` cores, alternating DMA (routed) and PT. */
function digestOf(n: number, cores = 2): RunDigest {
  const events: TraceEvent[] = Array.from({ length: n }, (_, i) => ({
    unit: i % 2 === 0 ? "dma" : "pt",
    core: i % cores,
    start: i,
    end: i + 2,
    bytes: 8,
    srcStop: null,
    dstStop: null,
    route: [0],
    op: "op",
    line: 1,
  }));
  const r = minimalResult();
  return digestRun(
    pageResult({ ...r, run: { ...r.run, machine: { ...r.run.machine, cores }, events } }),
  );
}

describe("isDigest", () => {
  const n = 2000;
  const good = digestOf(n);

  it("accepts the digest of the run it was made for", () => {
    expect(good.lanes.laneEvents.length).toBe(n);
    expect(good.ring.transfers.length + good.ring.compute.length).toBe(n);
    expect(isDigest(good, n)).toBe(true);
  });

  it("rejects a digest of a longer run, whichever of its indexes goes past the events", () => {
    expect(isDigest(good, n - 1)).toBe(false);
    expect(isDigest(digestOf(n + 500), n)).toBe(false);
    // One index past the run's events at either end of any index array.
    const arrays = (d: RunDigest): Int32Array[] => [
      d.lanes.laneEvents,
      d.ring.transfers,
      d.ring.compute,
      ...d.lanes.shared.map((s) => s.events),
    ];
    for (let a = 0; a < arrays(good).length; a++) {
      for (const at of ["first", "last"] as const) {
        const d = digestOf(n);
        const arr = arrays(d)[a] as Int32Array;
        if (arr.length === 0) continue;
        arr[at === "first" ? 0 : arr.length - 1] = n + 7;
        expect(isDigest(d, n), `array ${a}, ${at}`).toBe(false);
        arr[at === "first" ? 0 : arr.length - 1] = -1;
        expect(isDigest(d, n), `array ${a}, ${at}, negative`).toBe(false);
      }
    }
  });

  it("rejects lanes whose bounds are out of order or do not end at the lanes' events", () => {
    const d = digestOf(n);
    const starts = d.lanes.laneStart;
    const k = Math.floor(starts.length / 2);
    const keep = starts[k] as number;
    starts[k] = (starts[k + 1] as number) + 1;
    expect(isDigest(d, n)).toBe(false);
    starts[k] = keep;
    expect(isDigest(d, n)).toBe(true);
    const shorter = { ...d, lanes: { ...d.lanes, laneEvents: d.lanes.laneEvents.slice(1) } };
    expect(isDigest(shorter, n)).toBe(false);
    const fewerLanes = { ...d, lanes: { ...d.lanes, cores: d.lanes.cores + 1 } };
    expect(isDigest(fewerLanes, n)).toBe(false);
  });

  it("rejects values of the wrong kinds", () => {
    expect(isDigest(null, n)).toBe(false);
    expect(isDigest({}, n)).toBe(false);
    const asList = { ...good, ring: { ...good.ring, transfers: [...good.ring.transfers] } };
    expect(isDigest(asList, n)).toBe(false);
    const noSpans = { ...good, spans: undefined };
    expect(isDigest(noSpans, n)).toBe(false);
  });
});

describe("the Cores view's digest", () => {
  const wd = {
    ops: [
      { name: "mm", iteration: [{ label: "m" }, { label: "n" }] },
      { name: "add", iteration: [{ label: "i" }] },
    ],
    divisions: [
      {
        op: "mm",
        splits: [2, 2],
        coresUsed: 4,
        coreToSlice: [
          [0, 0],
          [0, 1],
          [1, 0],
          [1, 1],
        ],
        rule: "r1",
      },
      { op: "add", splits: [3], coresUsed: 3, coreToSlice: [[0], [1], [2]], rule: "r2" },
      { op: "idle", splits: [], coresUsed: 0, coreToSlice: [], rule: "" },
    ],
  };
  const plan = { plan: { capacityBytes: 100, peakBytes: 40, buffers: [] } };
  const passes = [
    { name: "decompose", title: "", text: null, data: { ops: [{ name: "mm" }, { name: "add" }] } },
    { name: "work-division", title: "", text: null, data: wd },
    { name: "scratchpad", title: "", text: null, data: plan },
  ];

  it("packs each division and gives it back as the snapshot reads", () => {
    const c = coresDigest(passes);
    expect(isCoresDigest(c)).toBe(true);
    expect([0, 1, 2].map((i) => divisionAt(c, i).division)).toEqual(divisions(wd));
    expect(divisionAt(c, 0).labels).toEqual(["m", "n"]);
    expect(divisionAt(c, 2).labels).toEqual([]);
    expect([0, 1, 2].map((i) => slicedCores(c, i))).toEqual([4, 3, 0]);
    expect(c.deviceOps).toEqual(["mm", "add"]);
    expect(c.plan?.capacity).toBe(100);
  });

  it("is empty for a run without snapshots, and rejects arrays whose bounds disagree", () => {
    const none = coresDigest([]);
    expect(isCoresDigest(none)).toBe(true);
    expect(none.ops).toEqual([]);
    expect(none.plan).toBeNull();
    const c = coresDigest(passes);
    expect(isCoresDigest({ ...c, coords: c.coords.subarray(1) })).toBe(false);
    expect(isCoresDigest({ ...c, rules: ["r1"] })).toBe(false);
    expect(isCoresDigest({ ...c, splits: [...c.splits] })).toBe(false);
    expect(isCoresDigest({ ...c, divCells: c.divCells.subarray(1) })).toBe(false);
    // A run digest with a malformed Cores part is made again.
    const d = digestOf(10);
    expect(isDigest({ ...d, cores: { ...c, labels: null } }, 10)).toBe(false);
  });
});
