import { describe, expect, it } from "vitest";
import { formatSessionFile, readSessionFile, sessionFileName } from "./sessionFile";
import {
  EMPTY_STATE,
  MAX_URL_FILE_CHARS,
  toUrlFile,
  urlFileBytes,
  UrlStateError,
} from "./urlState";
import { fitLabel, splitCoords } from "./views/cores";
import { toleranceText } from "./views/results";

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

describe("session files", () => {
  it("round-trip a state with a file of any size, binary included", () => {
    const bytes = new Uint8Array(MAX_URL_FILE_CHARS + 1000).map((_, i) => (i * 7) & 255);
    const state = {
      ...EMPTY_STATE,
      view: "ring",
      core: 3,
      file: toUrlFile("big.onnx", bytes, true),
      embed: true,
    };
    const text = formatSessionFile(state);
    const back = readSessionFile(enc(text));
    expect(back).toEqual({ ...state, embed: false });
    expect(urlFileBytes(back!.file!)).toEqual(bytes);
  });

  it("leave other JSON files alone and reject unreadable sessions", () => {
    expect(readSessionFile(enc('{"name":"g","nodes":[]}'))).toBeNull();
    expect(readSessionFile(enc("func.func @k() {}"))).toBeNull();
    expect(() =>
      readSessionFile(enc('{"format":"spyre-playground-session","version":9,"state":{}}')),
    ).toThrow(UrlStateError);
    expect(() =>
      readSessionFile(enc('{"format":"spyre-playground-session","version":1,"state":[]}')),
    ).toThrow(UrlStateError);
  });

  it("are named after the file", () => {
    expect(sessionFileName("model.onnx")).toBe("model.spyre-session.json");
    expect(sessionFileName("")).toBe("session.spyre-session.json");
  });

  it("carry text files as text", () => {
    const f = toUrlFile("k.mlir", enc("func.func @k() {}"), false);
    expect(f).toEqual({ name: "k.mlir", text: "func.func @k() {}" });
    expect(new TextDecoder().decode(urlFileBytes(f))).toBe("func.func @k() {}");
  });
});

describe("labels and verdicts", () => {
  it("cut labels to the room they have", () => {
    expect(fitLabel("matmul", 10)).toBe("matmul");
    expect(fitLabel("attention/softmax", 8)).toBe("attenti…");
    expect(fitLabel("abc", 1)).toBe("");
  });

  it("show a slice by its split dimensions", () => {
    expect(splitCoords([0, 0, 0, 7, 0], [1, 1, 1, 32, 1])).toBe("7");
    expect(splitCoords([1, 0, 3], [2, 1, 4])).toBe("1,3");
    expect(splitCoords([0, 0], [1, 1])).toBe("0");
  });

  it("say which tolerance passed", () => {
    const o = { maxAbsError: 3e-4, maxRelError: 5.5, atol: 1e-3, rtol: 1e-2, passed: true };
    expect(toleranceText(o)).toBe("max rel 5.5, max abs 3.00e-4 ≤ atol 0.001: ok");
    expect(toleranceText({ ...o, maxAbsError: 0.5, maxRelError: 0.001 })).toBe(
      "max abs 0.5, max rel 0.001 ≤ rtol 0.01: ok",
    );
    expect(toleranceText({ ...o, maxAbsError: 0.5 })).toContain("atol 0.001 + rtol 0.01·|ref|: ok");
    expect(toleranceText({ ...o, maxAbsError: 0.5, passed: false })).toBe(
      "max abs 0.5 > atol 0.001, max rel 5.5 > rtol 0.01: off",
    );
  });
});
