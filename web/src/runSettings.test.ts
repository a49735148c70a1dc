// The run settings: what reaches the worker, the flags shown, and typed places.

import { describe, expect, it } from "vitest";
import {
  DEFAULT_SETTINGS,
  formatPlaces,
  parsePlaces,
  sanitizeSettings,
  settingsFlags,
  settingsOptions,
  systemLabel,
} from "./runSettings";

describe("run settings", () => {
  it("send nothing for the defaults", () => {
    expect(settingsOptions(DEFAULT_SETTINGS)).toEqual({});
    expect(settingsFlags(DEFAULT_SETTINGS)).toEqual([]);
  });

  it("map each setting to its run option and CLI flag", () => {
    const s = {
      allocator: "first-fit" as const,
      attentionBlock: 16,
      noDoubleBuffer: true,
      noFuse: true,
      timingOnly: true,
      seed: 3,
      outOfBounds: "mask" as const,
      places: { x: 128 },
      tp: null,
      system: null,
      allreduce: null,
      queryAlign: null,
      kvAlign: null,
      decodeAlign: null,
    };
    expect(settingsOptions(s)).toEqual({
      allocator: "first-fit",
      attentionBlock: 16,
      doubleBuffer: false,
      fuse: false,
      timingOnly: true,
      seed: 3,
      outOfBounds: "mask",
      places: { x: 128 },
    });
    expect(settingsFlags(s).join(" ")).toBe(
      "--allocator first-fit --attention-block 16 --no-double-buffer --no-fuse --timing-only --seed 3 --out-of-bounds mask --place x=128",
    );
  });

  it("map the padding rules to run options, the public values being the defaults", () => {
    const s = { ...DEFAULT_SETTINGS, queryAlign: 16, kvAlign: 64, decodeAlign: 8 };
    expect(settingsOptions(s)).toEqual({ queryAlign: 16, kvAlign: 64, decodeAlign: 8 });
    expect(settingsFlags(s).join(" ")).toBe("--query-align 16 --kv-align 64 --decode-align 8");
    const read = sanitizeSettings({ queryAlign: 32, kvAlign: "64", decodeAlign: 0 });
    expect([read.queryAlign, read.kvAlign, read.decodeAlign]).toEqual([null, 64, null]);
  });

  it("parse typed places, and say what is wrong", () => {
    expect(parsePlaces("")).toBeNull();
    expect(parsePlaces("a=1, b=20\nc=3")).toEqual({ a: 1, b: 20, c: 3 });
    expect(formatPlaces({ a: 1, b: 20 })).toBe("a=1, b=20");
    expect(parsePlaces("a=1 b")).toMatch(/"b" is not NAME=ADDR/);
    expect(parsePlaces("a=-1")).toMatch(/not NAME=ADDR/);
    expect(parsePlaces("__proto__=1")).toMatch(/not NAME=ADDR/);
  });

  it("keep only well-typed values", () => {
    expect(
      sanitizeSettings({
        allocator: 3,
        attentionBlock: 1.5,
        noDoubleBuffer: "yes",
        noFuse: 1,
        timingOnly: {},
        seed: Number.MAX_VALUE,
        outOfBounds: ["mask"],
        places: [1],
        tp: 3,
        system: "<script>",
        allreduce: "star",
      }),
    ).toEqual(DEFAULT_SETTINGS);
  });

  it("send the tensor-parallel settings only with a degree above 1", () => {
    const s = { ...DEFAULT_SETTINGS, tp: 2, system: "ring4", allreduce: "tree" as const };
    expect(settingsOptions(s)).toEqual({ tp: 2, system: "ring4", allreduce: "tree" });
    expect(settingsFlags(s).join(" ")).toBe("--tp 2 --system ring4 --allreduce tree");
    expect(settingsOptions({ ...s, tp: null })).toEqual({});
    expect(sanitizeSettings({ tp: "4", system: '{"name": "mine"}' })).toMatchObject({
      tp: 4,
      system: '{"name": "mine"}',
    });
    expect(sanitizeSettings({ tp: 1 }).tp).toBeNull();
    expect(systemLabel('{"name": "mine"}')).toBe("file (mine)");
    expect(systemLabel(null)).toBe("default");
  });
});
