import { describe, expect, it } from "vitest";
import { bufferUse, splitKtirBuffers } from "./ktirBuffers";

const MODULE = `module {
  func.func @copy(%a: index, %b: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %av = ktdp.construct_memory_view %a, sizes: [4], strides: [1] {
      memory_space = #ktdp.memory_space<global>
    } : memref<4xf16>
    %bv = ktdp.construct_memory_view %b, sizes: [4], strides: [1] {
      memory_space = #ktdp.memory_space<global>
    } : memref<4xf16>
    %at = ktdp.construct_access_tile %av[%c0] {
    } : memref<4xf16> -> !ktdp.access_tile<4xindex>
    %bt = ktdp.construct_access_tile %bv[%c0] {
    } : memref<4xf16> -> !ktdp.access_tile<4xindex>
    %x = ktdp.load %at : !ktdp.access_tile<4xindex> -> tensor<4xf16>
    ktdp.store %x, %bt : tensor<4xf16>, !ktdp.access_tile<4xindex> // copy a to b
    return
  }
}
`;

describe("KTIR buffers", () => {
  it("finds the buffers a module stores to", () => {
    const use = bufferUse(MODULE);
    expect([...(use?.written ?? [])]).toEqual(["b"]);
    expect([...(use?.loaded ?? [])]).toEqual(["a"]);
  });

  it("gives up when a store cannot be traced to an argument", () => {
    expect(bufferUse(MODULE.replace("%x, %bt", "%x, %other"))).toBeNull();
  });

  it("moves loaded-only buffers to the inputs", () => {
    type T = { name: string; dtype: string; shape: number[] };
    const t = (name: string): T => ({ name, dtype: "f16", shape: [4] });
    const none: T[] = [];
    const g = splitKtirBuffers({ name: "copy", inputs: none, outputs: [t("a"), t("b")] }, MODULE);
    expect(g.inputs.map((x) => x.name)).toEqual(["a"]);
    expect(g.outputs.map((x) => x.name)).toEqual(["b"]);
    const same = { name: "x", inputs: none, outputs: [t("a")] };
    expect(splitKtirBuffers(same, "ktdp.store %x, %y : t")).toBe(same);
    // A buffer the module never touches is left where the run put it.
    expect(splitKtirBuffers(same, "func.func @k() {}").outputs).toEqual([t("a")]);
  });
});
