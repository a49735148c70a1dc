import { describe, expect, it } from "vitest";
import type { RunIo } from "../protocol";
import { inputRows, missingName, missingText, outputRows } from "./runInputs";

const ktir: RunIo = {
  kind: "ktir",
  inputs: {
    buffers: [
      { name: "a", elem: "f16", elements: 8, shape: [2, 4], address: null, role: "in" },
      { name: "c", elem: "f16", elements: 8, shape: [2, 4], address: 64, role: "out" },
      { name: "acc", elem: "f32", elements: 4, shape: [4], address: null, role: "inOut" },
    ],
    scratchpads: [
      {
        name: "tile",
        function: "k",
        elem: "f16",
        shape: [4],
        address: 128,
        strides: [1],
        cores: [0],
        role: "in",
      },
    ],
    scalars: [{ name: "scale", dtype: "f32", functions: ["k"], value: "0.5" }],
    tensors: [],
    missing: [],
  },
};

describe("run inputs rows", () => {
  it("lists a KTIR module's buffers, scratchpad views and scalars, and offers what it stores", () => {
    const rows = inputRows(ktir);
    expect(rows.map((r) => [r.name, r.kind, r.address])).toEqual([
      ["a", "buffer", ""],
      ["c", "buffer", "DRAM 64"],
      ["acc", "buffer", ""],
      ["tile", "scratchpad", "scratchpad 128"],
      ["scale", "scalar", ""],
    ]);
    expect(rows.find((r) => r.name === "scale")?.value).toBe("0.5");
    expect(outputRows(ktir).map((o) => o.name)).toEqual(["c", "acc"]);
  });

  it("lists a graph's inputs and outputs", () => {
    const io: RunIo = {
      kind: "graph",
      inputs: [{ name: "x", dtype: "f32", shape: [4, 64] }],
      outputs: [{ name: "y", dtype: "f32", shape: [4, 32] }],
    };
    expect(inputRows(io).map((r) => [r.name, r.role, r.shape])).toEqual([["x", "input", [4, 64]]]);
    expect(outputRows(io)).toEqual(io.outputs);
  });

  it("marks the scalars a run cannot start without, in the page's words", () => {
    const io: RunIo = {
      kind: "ktir",
      inputs: {
        buffers: [{ name: "x", elem: "f32", elements: 8, shape: [8], address: null, role: "in" }],
        scratchpads: [],
        scalars: [
          { name: "n", dtype: "index", functions: ["k"], value: null },
          { name: "s", dtype: "f32", functions: ["k"], value: "0.5" },
        ],
        tensors: [],
        missing: ["--arg n=VALUE (index; an argument of @k)"],
      },
    };
    expect(inputRows(io).map((r) => [r.name, r.missing])).toEqual([
      ["x", false],
      ["n", true],
      ["s", false],
    ]);
    expect(missingName(io.inputs.missing[0]!)).toBe("n");
    expect(missingText(io.inputs.missing[0]!)).toBe("a value for n (index; an argument of @k)");
    expect(missingName("size %d0 of a view depends on n")).toBeNull();
    expect(missingText("size %d0 of a view depends on n")).toBe("size %d0 of a view depends on n");
  });
});
