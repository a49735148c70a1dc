// The program-state diff: entities matched by kind and name, each diffed on its own, and
// the changes stated in words.

import { describe, expect, it } from "vitest";
import {
  diffEntities,
  entityAt,
  entityRanges,
  isStateText,
  parseEntities,
  summarize,
} from "./stateDiff";
import { passChanged } from "./passes";

const DECOMPOSE = `program t: 1 inputs, 0 initializers, 1 nodes, outputs y
  target: 32 cores, 128 B sticks
  canonicalize: no changes
tensor x: f16[4,130] (input)
tensor y: f16[4,130] (output)
node r: Relu(x) -> y
op r: relu(x) -> y  iter [d0=4, d1=130 sticks]
`;

const LAYOUT = `program t: 1 inputs, 0 initializers, 1 nodes, outputs y
  target: 32 cores, 128 B sticks
  canonicalize: no changes
tensor x: f16[4,130] (input)
  layout: f16[4,130] -> [3, 4, 64] strides [64, 130, 1], 1536 B
tensor x@restick: f16[4,130] (intermediate)
  layout: f16[4,130] -> [3, 128, 64] strides [64, 130, 1], 49152 B
tensor y: f16[4,130] (output)
  layout: f16[4,130] -> [3, 4, 64] strides [64, 130, 1], 1536 B
node r: Relu(x) -> y
op r/restickify_1: restickify(x) -> x@restick  iter [d0=4]
  restickify: x -> x@restick (padded)
op r: relu(x@restick) -> y  iter [d0=4, d1=130 sticks]
`;

const DIVIDED = LAYOUT.replace(
  "iter [d0=4, d1=130 sticks]\n",
  "iter [d0=4, d1=130 sticks]\n  split: d0=4 d1=1 -> 4 cores\n  rule: default\n",
);

describe("program state diffs", () => {
  it("find the lines of each entity, for linking them across passes", () => {
    const r = entityRanges(LAYOUT);
    expect(r.map((e) => `${e.key}:${e.from}-${e.to}`)).toEqual([
      "program t:1-3",
      "tensor x:4-5",
      "tensor x@restick:6-7",
      "tensor y:8-9",
      "node r:10-10",
      "op r/restickify_1:11-12",
      "op r:13-13",
    ]);
    expect(entityAt(r, 5)?.key).toBe("tensor x");
    expect(entityAt(r, 13)?.key).toBe("op r");
    expect(entityAt(r, 14)).toBeNull();
    expect(entityAt([], 1)).toBeNull();
  });

  it("split a state text into entities", () => {
    expect(isStateText(DECOMPOSE)).toBe(true);
    expect(isStateText("{}")).toBe(false);
    const es = parseEntities(LAYOUT);
    expect(es.map((e) => `${e.kind} ${e.name}`)).toEqual([
      "program t",
      "tensor x",
      "tensor x@restick",
      "tensor y",
      "node r",
      "op r/restickify_1",
      "op r",
    ]);
    expect(es[1]!.lines).toHaveLength(2);
  });

  it("diff entity by entity and say what changed", () => {
    const changes = diffEntities(DECOMPOSE, LAYOUT);
    expect(changes.map((c) => `${c.change} ${c.kind} ${c.name}`)).toEqual([
      "changed tensor x",
      "added tensor x@restick",
      "changed tensor y",
      "added op r/restickify_1",
      "changed op r",
    ]);
    // A changed entity shows its header as context and only its changed lines.
    expect(changes[0]!.lines.map((l) => l.kind)).toEqual(["same", "add"]);
    expect(summarize(changes)).toEqual([
      "1 tensor re-sticked (1 restickify op)",
      "1 tensor added",
      "3 tensors laid out",
    ]);
    expect(summarize(diffEntities(LAYOUT, DIVIDED))).toEqual([
      "1 op divided, 1 split over up to 4 cores",
    ]);
    expect(diffEntities(LAYOUT, LAYOUT)).toEqual([]);
    expect(summarize([])).toEqual([]);
  });

  it("find removed entities and layouts that changed", () => {
    const changes = diffEntities(LAYOUT, DECOMPOSE.replace("[3, 4, 64]", "[3, 8, 64]"));
    expect(changes.filter((c) => c.change === "removed").map((c) => c.name)).toEqual([
      "x@restick",
      "r/restickify_1",
    ]);
  });

  it("diff large states in time proportional to the entities", () => {
    const big = (n: number, extra: string): string =>
      `program big: 0 inputs\n${Array.from({ length: n }, (_, i) => `tensor t${i}: f16[4] (intermediate)\n${i === n - 1 ? extra : ""}`).join("")}`;
    const t0 = performance.now();
    const changes = diffEntities(big(50_000, ""), big(50_000, "  layout: f16[4] -> [1, 64]\n"));
    // A quadratic diff of 50,000 entities would take minutes; this is a loose bound under load.
    expect(performance.now() - t0).toBeLessThan(15_000);
    expect(changes).toHaveLength(1);
    expect(summarize(changes)).toEqual(["1 tensor laid out"]);
  });

  it("mark passes that changed nothing", () => {
    const pass = (name: string, text: string) => ({ name, title: name, text, data: null });
    expect(
      passChanged([
        pass("canonicalize", DECOMPOSE),
        pass("decompose", DECOMPOSE),
        pass("layout", LAYOUT),
        pass("sdsc", "{}"),
        pass("ktir", "module {}"),
      ]),
    ).toEqual([true, false, true, true, true]);
  });
});
