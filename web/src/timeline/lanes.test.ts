import { describe, expect, it } from "vitest";
import type { RingStop, TraceEvent } from "../api";
import {
  bandwidthProfile,
  laneLists,
  linkIndex,
  linkName,
  loadAt,
  routeLinks,
  sharedLanes,
  timelineLanes,
  touchesDram,
} from "./lanes";
import { EventTable } from "../events";

function ev(partial: Partial<TraceEvent>): TraceEvent {
  return {
    unit: "dma",
    core: 0,
    start: 0,
    end: 10,
    bytes: 100,
    srcStop: null,
    dstStop: null,
    route: [],
    op: "op",
    line: 1,
    ...partial,
  };
}

// Stop 0 is memory, stops 1..3 are cores 0..2.
const stops: RingStop[] = [
  { kind: "memory", index: 0, label: "mem0" },
  { kind: "core", index: 0, label: "c0" },
  { kind: "core", index: 1, label: "c1" },
  { kind: "core", index: 2, label: "c2" },
];

describe("links", () => {
  it("names links as the simulator does", () => {
    expect(linkIndex(0, 1, 4)).toBe(0);
    expect(linkIndex(1, 0, 4)).toBe(3);
    expect(linkIndex(3, 0, 4)).toBe(6);
    expect(linkIndex(0, 3, 4)).toBe(1);
    expect(linkIndex(0, 2, 4)).toBeNull();
    expect(linkName(6)).toBe("s3-cw");
    expect(linkName(3)).toBe("s1-ccw");
    expect(routeLinks([0, 1, 2], 4)).toEqual([0, 2]);
    expect(routeLinks([0, 3, 2], 4)).toEqual([1, 7]);
  });

  it("tells DRAM transfers from core-to-core ones", () => {
    expect(touchesDram(EventTable.from([ev({ srcStop: 0, dstStop: 2 })]), 0, stops)).toBe(true);
    expect(touchesDram(EventTable.from([ev({ srcStop: 2, dstStop: 0 })]), 0, stops)).toBe(true);
    expect(touchesDram(EventTable.from([ev({ srcStop: 1, dstStop: 2 })]), 0, stops)).toBe(false);
    expect(touchesDram(EventTable.from([ev({ unit: "pt", srcStop: 0 })]), 0, stops)).toBe(false);
  });
});

describe("bandwidthProfile", () => {
  it("spreads each transfer's bytes over its duration", () => {
    // 100 bytes over cycles 0..10 and 50 bytes over 5..10, in 4 buckets of 5 cycles.
    const p = bandwidthProfile(
      [
        { start: 0, end: 10, bytes: 100 },
        { start: 5, end: 10, bytes: 50 },
      ],
      20,
      4,
    );
    expect([...p]).toEqual([10, 20, 0, 0]);
    // Bytes are conserved: sum of rate x width.
    expect([...p].reduce((a, b) => a + b * 5, 0)).toBe(150);
  });

  it("handles partial buckets, zero-length transfers and an empty run", () => {
    const p = bandwidthProfile([{ start: 2, end: 7, bytes: 50 }], 10, 2);
    expect([...p]).toEqual([6, 4]);
    expect([...bandwidthProfile([{ start: 3, end: 3, bytes: 10 }], 10, 2)]).toEqual([2, 0]);
    expect([...bandwidthProfile([{ start: 0, end: 5, bytes: 10 }], 0, 2)]).toEqual([0, 0]);
  });
});

describe("sharedLanes", () => {
  const events = EventTable.from([
    ev({ srcStop: 0, dstStop: 2, route: [0, 1, 2], start: 0, end: 10, bytes: 400 }),
    ev({ srcStop: 3, dstStop: 0, route: [3, 0], start: 10, end: 20, bytes: 200 }),
    ev({ srcStop: 1, dstStop: 2, route: [1, 2], start: 0, end: 20, bytes: 100 }),
    ev({ unit: "pt", start: 0, end: 20, bytes: 0 }),
  ]);

  it("gives a DRAM lane and the busiest links, busiest first", () => {
    const lanes = sharedLanes(
      { machine: { stops }, totalCycles: 20, events, dramBytesPerCycle: 60 },
      2,
    );
    expect(lanes.map((l) => l.label)).toEqual(["DRAM", "s1→2", "s0→1"]);
    const dram = lanes[0]!;
    expect(dram.events).toHaveLength(2);
    expect(dram.bytes).toBe(600);
    expect(dram.capacity).toBe(60);
    expect(dram.utilisation).toBeCloseTo(0.5);
    // 40 B/cycle of 60 in the first half, 20 of 60 in the second.
    expect(loadAt(dram, 5, 20)).toBeCloseTo(40 / 60);
    expect(loadAt(dram, 15, 20)).toBeCloseTo(20 / 60);
    expect(lanes[1]!.bytes).toBe(500);
    expect(lanes[1]!.events).toHaveLength(2);
  });

  it("takes a link's bandwidth from the summary, else its peak", () => {
    const lanes = sharedLanes({
      machine: { stops },
      totalCycles: 20,
      events,
      links: [{ index: 2, bytes: 500, utilisation: 0.5 }],
    });
    const l = lanes.find((x) => x.label === "s1→2")!;
    expect(l.capacity).toBe(50);
    expect(l.utilisation).toBeCloseTo(0.5);
    // No DRAM rate: the lane's own peak is its scale.
    expect(lanes[0]!.capacity).toBeCloseTo(40);
    expect(lanes.length).toBe(4);
  });

  it("has a DRAM lane even for a run without transfers", () => {
    const lanes = sharedLanes({ machine: { stops }, totalCycles: 0, events: EventTable.from([]) });
    expect(lanes).toHaveLength(1);
    expect(lanes[0]!.utilisation).toBe(0);
    expect(loadAt(lanes[0]!, 0, 0)).toBe(0);
  });
});

describe("timelineLanes", () => {
  it("lists each core and unit's events by start, ties by index, cores beyond the machine's too", () => {
    let x = 5;
    const next = (m: number): number => {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      return x % m;
    };
    const units = ["dma", "pt", "sfp"] as const;
    const events = EventTable.from(
      Array.from({ length: 300 }, () => {
        const start = next(40);
        return ev({ unit: units[next(3)], core: next(5), start, end: start + next(9) });
      }),
    );
    const t = timelineLanes({ machine: { cores: 3, stops }, totalCycles: 50, events });
    expect(t.cores).toBe(5);
    const lists = laneLists(t);
    for (let lane = 0; lane < t.cores * 3; lane++) {
      const want = Array.from({ length: events.length }, (_, i) => i)
        .filter((i) => events.core(i) * 3 + units.indexOf(events.unit(i) as never) === lane)
        .sort((a, b) => events.start(a) - events.start(b) || a - b);
      expect([...(lists.get(lane) ?? [])]).toEqual(want);
    }
    expect(t.shared.map((l) => l.label)).toEqual(
      sharedLanes({ machine: { stops }, totalCycles: 50, events }).map((l) => l.label),
    );
  });

  it("has no lanes' events for a run without events", () => {
    const t = timelineLanes({
      machine: { cores: 2, stops },
      totalCycles: 0,
      events: EventTable.from([]),
    });
    expect(t.cores).toBe(2);
    expect([...t.laneStart]).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(laneLists(t).size).toBe(0);
  });
});
