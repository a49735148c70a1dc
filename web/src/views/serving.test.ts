import { describe, expect, it } from "vitest";
import type { PaddingCost, PagedPlan } from "../api";
import { pagesByCore, wastedWithoutDecode } from "./serving";

describe("serving view", () => {
  it("lists per core the pages the plan has it read and attend over", () => {
    const plan: PagedPlan = {
      node: "n",
      cachePages: 4,
      blockSize: 64,
      cores: 3,
      sequences: [
        [
          { page: 2, tokens: 64, readers: [0], users: [0, 1] },
          { page: 0, tokens: 5, readers: [0], users: [1] },
        ],
        [{ page: 3, tokens: 17, readers: [2], users: [2] }],
      ],
    };
    expect(pagesByCore(plan)).toEqual({
      reads: [[0, 2], [], [3]],
      uses: [[2], [0, 2], [3]],
    });
  });

  it("costs the padding without the decode exception from the driver's figures", () => {
    const c = { cycles: 1000, wastePercentWithoutDecodeAlignment: 75 } as PaddingCost;
    expect(wastedWithoutDecode(c)).toBeCloseTo(3000);
  });
});
