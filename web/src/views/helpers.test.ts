import { describe, expect, it } from "vitest";
import { formatSci, isEditableTarget } from "../dom";
import { EMPTY_STATE, formatUrlState, parseUrlState, type UrlState } from "../urlState";
import { displayText, lineNumbers, passChanged, stepIndex, textsShown } from "./passes";
import { formatDuration } from "./results";

describe("pass stepping", () => {
  it("clamps at both ends", () => {
    expect(stepIndex(0, 1, 6)).toBe(1);
    expect(stepIndex(5, 1, 6)).toBe(5);
    expect(stepIndex(0, -1, 6)).toBe(0);
    expect(stepIndex(3, -1, 6)).toBe(2);
    expect(stepIndex(-1, 1, 6)).toBe(0);
    expect(stepIndex(-1, -1, 6)).toBe(5);
    expect(stepIndex(0, 1, 0)).toBe(-1);
  });
});

describe("pass texts still in the compile store", () => {
  const pass = (name: string, text: string | null) => ({ name, title: name, text, data: null });
  it("count as changes and are named when a pass shows them", () => {
    const state = "program g\n  tensor x: f32[4]\n";
    const passes = [
      pass("canonicalize", state),
      pass("decompose", null),
      pass("layout", state),
      pass("sdsc", null),
      pass("ktir", "func.func @k() {}"),
    ];
    expect(passChanged(passes)).toEqual([true, true, true, true, true]);
    expect(textsShown(passes, 2).map((p) => p.name)).toEqual(["layout", "decompose"]);
    // The IRs are shown side by side: each needs the other.
    expect(textsShown(passes, 4).map((p) => p.name)).toEqual(["ktir", "sdsc"]);
    expect(textsShown(passes, 0).map((p) => p.name)).toEqual(["canonicalize"]);
    expect(textsShown(passes, 9)).toEqual([]);
    const loaded = passes.map((p) => (p.text === null ? { ...p, text: state } : p));
    expect(passChanged(loaded)[1]).toBe(false);
  });
});

describe("snapshot text", () => {
  it("numbers lines", () => {
    expect(lineNumbers("")).toBe("");
    expect(lineNumbers("a")).toBe("1");
    expect(lineNumbers("a\nb\n")).toBe("1\n2");
    expect(lineNumbers("a\n\nb")).toBe("1\n2\n3");
  });

  it("pretty-prints single-line JSON only", () => {
    expect(displayText('{"a":[1,2]}')).toBe('{\n  "a": [\n    1,\n    2\n  ]\n}');
    expect(displayText('{\n  "a": 1\n}')).toBe('{\n  "a": 1\n}');
    expect(displayText("{not json")).toBe("{not json");
    expect(displayText("func.func @k()")).toBe("func.func @k()");
  });
});

describe("formatting", () => {
  it("formats errors and durations", () => {
    expect(formatSci(0)).toBe("0");
    expect(formatSci(0.0123)).toBe("0.0123");
    expect(formatSci(1.5e-6)).toBe("1.50e-6");
    expect(formatDuration(1500, 1)).toBe("1.5 µs");
    expect(formatDuration(500, 1)).toBe("500 ns");
    expect(formatDuration(3e6, 1)).toBe("3 ms");
    expect(formatDuration(100, 0)).toBe("");
  });

  it("recognises text fields without a DOM", () => {
    expect(isEditableTarget(null)).toBe(false);
    expect(isEditableTarget({ tagName: "TEXTAREA" } as unknown as EventTarget)).toBe(true);
    expect(isEditableTarget({ tagName: "SELECT" } as unknown as EventTarget)).toBe(true);
    expect(isEditableTarget({ tagName: "INPUT", type: "range" } as unknown as EventTarget)).toBe(
      true,
    );
    expect(isEditableTarget({ tagName: "INPUT", type: "file" } as unknown as EventTarget)).toBe(
      false,
    );
    expect(isEditableTarget({ tagName: "BUTTON" } as unknown as EventTarget)).toBe(false);
    expect(
      isEditableTarget({ tagName: "DIV", isContentEditable: true } as unknown as EventTarget),
    ).toBe(true);
  });
});

describe("url state", () => {
  it("round-trips the whole session, compressed", async () => {
    const s: UrlState = {
      ...EMPTY_STATE,
      example: "matmul add",
      pass: "ktir",
      view: "timeline",
      t: 1234,
      machine: "tiny4",
      ktir: "module {\n  // é ✓\n}\n".repeat(50),
      line: 31,
      core: 5,
    };
    const hash = await formatUrlState(s);
    expect(hash).toMatch(/^#v=2&s=[\w-]+$/);
    expect(hash.length).toBeLessThan(300);
    expect(await parseUrlState(hash)).toEqual(s);
  });

  it("reads old v1 links and plain parameters, and ignores unknown versions", async () => {
    expect(await parseUrlState("#v=1&example=x&pass=layout")).toEqual({
      ...EMPTY_STATE,
      example: "x",
      pass: "layout",
    });
    expect(await parseUrlState("")).toEqual(EMPTY_STATE);
    expect(await parseUrlState("#v=99&example=x")).toEqual(EMPTY_STATE);
    expect(await parseUrlState("#example=x")).toMatchObject({ example: "x", pass: null });
    expect(await parseUrlState("#v=1&example=x&view=ring&t=50&embed=1")).toMatchObject({
      example: "x",
      view: "ring",
      t: 50,
      embed: true,
    });
    expect(await parseUrlState("#v=1&view=bogus")).toMatchObject({ view: null });
    // A corrupt blob falls back to nothing rather than failing.
    expect(await parseUrlState("#v=2&s=%%%")).toEqual(EMPTY_STATE);
  });
});
