// MLIR (KTIR, the ktdp dialect) syntax colours for CodeMirror: a small stream tokenizer.

import { HighlightStyle, StreamLanguage, type StringStream } from "@codemirror/language";
import { tags as t } from "@lezer/highlight";

const KEYWORDS = new Set([
  "module",
  "func.func",
  "return",
  "attributes",
  "ins",
  "outs",
  "sizes",
  "strides",
  "dimensions",
  "to",
  "step",
  "iter_args",
  "affine_set",
  "affine_map",
  "mod",
  "floordiv",
  "ceildiv",
]);

const TYPE_WORD = /^(index|i1|i8|i16|i32|i64|f16|bf16|f32|f64|f8E4M3|f8E5M2|none)$/;

/** Token name for the next token of `stream` ("" to skip one character). */
export function mlirToken(stream: StringStream): string | null {
  if (stream.eatSpace()) return null;
  if (stream.match("//")) {
    stream.skipToEnd();
    return "comment";
  }
  if (stream.match(/^"(?:[^"\\]|\\.)*"?/)) return "string";
  if (stream.match(/^%[\w$.-]+(?:#\d+)?/)) return "variableName";
  if (stream.match(/^@[\w$.-]+/)) return "function";
  if (stream.match(/^#[\w.]+/)) return "attr";
  if (stream.match(/^!?(memref|tensor|vector)(?=<)/)) return "type";
  if (stream.match(/^![\w.]+/)) return "type";
  if (stream.match(/^-?\d+(\.\d+)?(e[+-]?\d+)?(?=\b|x)/i)) return "number";
  const word = stream.match(/^[A-Za-z_][\w.$]*/) as RegExpMatchArray | null;
  if (word) {
    const w = word[0];
    if (w === "func.func" || KEYWORDS.has(w)) return "keyword";
    if (TYPE_WORD.test(w)) return "type";
    if (w.includes(".")) return "op";
    if (/^x?\d/.test(w)) return "number";
    return null;
  }
  stream.next();
  return null;
}

export const mlirLanguage = StreamLanguage.define<null>({
  name: "mlir",
  startState: () => null,
  token: (stream) => mlirToken(stream),
  tokenTable: {
    op: t.special(t.keyword),
    attr: t.meta,
    type: t.typeName,
    function: t.function(t.definition(t.variableName)),
  },
  languageData: { commentTokens: { line: "//" } },
});

/** Colours from the page's CSS variables, so both themes apply. */
export const mlirHighlight = HighlightStyle.define([
  { tag: t.keyword, color: "var(--hl-keyword)" },
  { tag: t.special(t.keyword), color: "var(--hl-op)" },
  { tag: t.variableName, color: "var(--hl-var)" },
  { tag: t.function(t.definition(t.variableName)), color: "var(--hl-func)", fontWeight: "600" },
  { tag: t.typeName, color: "var(--hl-type)" },
  { tag: t.number, color: "var(--hl-number)" },
  { tag: t.comment, color: "var(--hl-comment)", fontStyle: "italic" },
  { tag: t.meta, color: "var(--hl-attr)" },
  { tag: t.string, color: "var(--hl-string)" },
  { tag: t.propertyName, color: "var(--hl-op)" },
  { tag: t.bool, color: "var(--hl-number)" },
  { tag: t.null, color: "var(--hl-number)" },
]);
