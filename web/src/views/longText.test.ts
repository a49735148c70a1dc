import { describe, expect, it } from "vitest";
import { lineStarts } from "./longText";

/** The lines `lineStarts` marks, cut as the long text cuts them. */
function cut(text: string): string[] {
  const s = lineStarts(text);
  return Array.from({ length: s.length - 1 }, (_, i) =>
    text.slice(s[i]!, Math.max(s[i]!, s[i + 1]! - 1)),
  );
}

describe("lineStarts", () => {
  it("marks the lines as a split would, a trailing newline starting none", () => {
    for (const text of ["", "a", "a\n", "a\nb", "a\nb\n", "\n", "\n\nx", "ab\n\ncd\n"]) {
      const lines = text === "" ? [] : text.split("\n");
      if (text.endsWith("\n")) lines.pop();
      expect(cut(text)).toEqual(lines);
    }
  });

  it("marks every line of a text longer than its first array", () => {
    const lines = Array.from({ length: 5000 }, (_, i) => "x".repeat(i % 7));
    for (const end of ["", "\n"]) expect(cut(lines.join("\n") + end)).toEqual(lines);
  });
});
