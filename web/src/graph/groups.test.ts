import { describe, expect, it } from "vitest";
import type { GraphInfo } from "../api";
import { COLLAPSE_ABOVE, defaultCollapsed, graphGroups, groupOf } from "./groups";
import { layoutGraph } from "./layout";

/** A chain of `layers` layers of `per` ops each, named `layerI.opJ`, with a head. */
function chain(layers: number, per: number): GraphInfo {
  const nodes = [];
  let prev = "x";
  for (let l = 0; l < layers; l++) {
    for (let j = 0; j < per; j++) {
      const out = `layer${l}.op${j}`;
      nodes.push({ name: out, op: "Relu", inputs: [prev], outputs: [out] });
      prev = out;
    }
  }
  nodes.push({ name: "head", op: "Relu", inputs: [prev], outputs: ["y"] });
  return {
    name: "chain",
    description: "",
    inputs: [{ name: "x", dtype: "f16", shape: [4] }],
    outputs: [{ name: "y", dtype: "f16", shape: [4] }],
    nodes,
    initializers: [],
  };
}

describe("graph groups", () => {
  it("groups a node by its name up to the first dot or slash, as the driver does", () => {
    expect(groupOf("layer12.attn.q_proj")).toBe("layer12");
    expect(groupOf("lm_head")).toBe("lm_head");
    expect(groupOf("embed/1")).toBe("embed");
  });

  it("collapses a big graph's groups by default and leaves a small one open", () => {
    const small = chain(2, 3);
    expect([...graphGroups(small)]).toEqual([
      ["layer0", 3],
      ["layer1", 3],
    ]);
    expect(defaultCollapsed(small).size).toBe(0);
    const big = chain(32, 12);
    expect(big.nodes.length).toBeGreaterThan(COLLAPSE_ABOVE);
    expect(defaultCollapsed(big).size).toBe(32);
  });

  it("draws a collapsed group as one node, linked once to its neighbours", () => {
    const g = chain(3, 4);
    const l = layoutGraph(g, new Map(), new Set(["layer1"]));
    const grp = l.nodes.find((n) => n.id === "grp:layer1");
    expect(grp?.count).toBe(4);
    expect(grp?.kind).toBe("group");
    expect(l.nodes.filter((n) => n.group === "layer1")).toEqual([grp]);
    expect(l.edges.filter((e) => e.to === "grp:layer1")).toEqual([
      { from: "op:layer0.op3", to: "grp:layer1", tensor: "layer0.op3" },
    ]);
    expect(l.edges.filter((e) => e.from === "grp:layer1").map((e) => e.to)).toEqual([
      "op:layer2.op0",
    ]);
    // Layers still follow the chain.
    const layer = (id: string): number => l.nodes.find((n) => n.id === id)?.layer ?? -1;
    expect(layer("grp:layer1")).toBe(layer("op:layer0.op3") + 1);
    expect(layer("op:layer2.op0")).toBe(layer("grp:layer1") + 1);
  });

  it("lays out a group that feeds itself through an op outside it", () => {
    const g: GraphInfo = {
      ...chain(0, 0),
      nodes: [
        { name: "b.0", op: "Relu", inputs: ["x"], outputs: ["t0"] },
        { name: "mid", op: "Relu", inputs: ["t0"], outputs: ["t1"] },
        { name: "b.1", op: "Relu", inputs: ["t1"], outputs: ["y"] },
      ],
    };
    const l = layoutGraph(g, new Map(), new Set(["b"]));
    expect(l.nodes.map((n) => n.id).sort()).toEqual(["grp:b", "in:x", "op:mid", "out:y"]);
    for (const n of l.nodes) expect(Number.isFinite(n.x) && Number.isFinite(n.y)).toBe(true);
  });

  it("lays out a 32-layer model, collapsed or not", () => {
    const g = chain(32, 40);
    for (const collapsed of [defaultCollapsed(g), new Set<string>()]) {
      const l = layoutGraph(g, new Map(), collapsed);
      expect(l.nodes.length).toBe(collapsed.size ? 32 + 3 : g.nodes.length + 2);
    }
  });
});
