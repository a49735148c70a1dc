// The tensor-parallel parts of the page that need no DOM: pass diffs, shard classes, lanes,
// the system drawing's layout and the results' phrases.

import { describe, expect, it } from "vitest";
import type { HostView, PassSnapshot, SystemView, TpRun } from "../api";
import { shardClass } from "./graph";
import { previousPass } from "./passes";
import { tpPhrases } from "./results";
import { formatBytes, systemLayout } from "./system";
import { cardLanes, hostLanes } from "./tpLanes";

const pass = (name: string): PassSnapshot => ({
  name,
  title: name,
  text: `program ${name}`,
  data: null,
});

function host(grouping: string, overhead: number): HostView {
  return {
    grouping,
    note: "grouped",
    launches: grouping === "per-block" ? 1 : 3,
    endToEndCycles: 100,
    deviceBusyCycles: 60,
    overhead,
    under5Percent: overhead < 0.05,
    setupCycles: 5,
    events: [
      { lane: "host-link", what: "copy in 8 B", start: 0, end: 2 },
      { lane: "host", what: "launch (2 item(s))", start: 2, end: 10 },
      { lane: "device", what: "k0", start: 10, end: 40 },
      { lane: "device", what: "all-reduce y", start: 40, end: 60 },
    ],
  };
}

const system: SystemView = {
  topology: "pcie_switch",
  cards: [0, 1, 2].map((i) => ({ name: `card${i}`, machine: "spyre32", cores: 32, used: i < 2 })),
  cardLinks: [],
  hostLinks: [],
};

const tp = {
  degree: 2,
  system: "drawer8",
  kv: "key/value heads split: 1 per card",
  segments: [{ nodes: 3, kernels: 2, start: 0, cycles: 40, simulated: 2 }],
  collectives: [
    {
      tensor: "y",
      kind: "all-reduce",
      algorithm: "ring",
      reason: "cheaper",
      bytes: 64,
      start: 40,
      cycles: 20,
      estimateRing: 20,
      estimateTree: 30,
      reductionOrder: "ring",
    },
  ],
  linkEvents: [
    { channel: "card0->switch", start: 40, end: 45, bytes: 32 },
    { channel: "switch->card1", start: 41, end: 46, bytes: 32 },
    { channel: "card0->switch", start: 50, end: 55, bytes: 32 },
  ],
  totalCycles: 60,
  collectiveCycles: 20,
  collectiveShare: 1 / 3,
  outputsChecked: true,
  passed: true,
  host: [host("per-kernel", 0.5), host("per-block", 0.01)],
} as unknown as TpRun;

describe("tensor-parallel views", () => {
  it("diff the pass after the tensor-parallel pass against the one before it", () => {
    const passes = ["canonicalize", "tensor-parallel", "decompose"].map(pass);
    expect(previousPass(passes, 1)?.name).toBe("canonicalize");
    expect(previousPass(passes, 2)?.name).toBe("canonicalize");
    expect(previousPass(passes, 0)).toBeNull();
  });

  it("colour nodes by the pass's roles", () => {
    expect(shardClass("column-parallel")).toBe("column");
    expect(shardClass("row-parallel, then all-reduce")).toBe("row");
    expect(shardClass("sharded")).toBe("part");
    expect(shardClass("replicated")).toBe("replicated");
    expect(shardClass(3)).toBeNull();
  });

  it("lay out host lanes per regime and one lane per card-link direction", () => {
    const lanes = hostLanes(host("per-block", 0.01));
    expect(lanes.map((l) => l.label)).toEqual([
      "host · per block",
      "host link · per block",
      "device · per block",
    ]);
    expect(lanes[2]!.bars.map((b) => b.kind)).toEqual(["kernel", "collective"]);
    const cards = cardLanes(tp);
    expect(cards.map((l) => l.label)).toEqual(["every card (2)", "card0→switch", "switch→card1"]);
    expect(cards[1]!.bars).toHaveLength(2);
  });

  it("name the collective share and say which overhead is under 5%", () => {
    const p = tpPhrases(tp);
    expect(p.find((x) => x.testid === "tp-collective-share")?.text).toMatch(/33\.3% of the time/);
    expect(p.find((x) => x.testid === "tp-overhead-per-block")?.text).toMatch(
      /under the roadmap's 5%/,
    );
    expect(p.find((x) => x.testid === "tp-overhead-per-kernel")?.text).toMatch(/not under 5%/);
    expect(p[0]!.text).toMatch(/matches the TP-1 reference/);
  });

  it("place the cards under a switch and on a ring", () => {
    const a = systemLayout(system);
    expect(a.switch).not.toBeNull();
    expect(new Set(a.cards.map((c) => c.y)).size).toBe(1);
    const r = systemLayout({ ...system, topology: "ring" });
    expect(r.switch).toBeNull();
    expect(formatBytes(1_048_576)).toBe("1.0 MB");
    expect(formatBytes(512)).toBe("512 B");
  });
});
