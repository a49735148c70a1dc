// A lesson's check: a small expression over the quantities of a run (metrics.ts), such as
// `cycles <= 0.9 * baseline.cycles` or `bound == "matmul"`. `NAME` is the reader's latest
// run, `baseline.NAME` the run the lesson started with. Comparisons join with `and`.
// Parsed once, evaluated on every run; errors are values, never exceptions.

import { isQuantity, type Metrics } from "./metrics";

/** An expression node. */
export type Expr =
  | { kind: "num"; value: number }
  | { kind: "str"; value: string }
  | { kind: "ref"; name: string; baseline: boolean }
  | { kind: "bin"; op: "+" | "-" | "*" | "/"; left: Expr; right: Expr }
  | { kind: "cmp"; op: CmpOp; left: Expr; right: Expr }
  | { kind: "and"; parts: Expr[] };

type CmpOp = "<" | "<=" | ">" | ">=" | "==" | "!=";

type Token =
  | { t: "num"; v: number }
  | { t: "str"; v: string }
  | { t: "id"; v: string }
  | { t: "op"; v: string };

const TOKEN =
  /\s*(?:(\d+(?:\.\d+)?%?)|"([^"]*)"|([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)|(<=|>=|==|!=|<|>|\*|\/|\+|-|\(|\)))/y;

function tokenize(src: string): Token[] | string {
  const out: Token[] = [];
  TOKEN.lastIndex = 0;
  let at = 0;
  while (at < src.length) {
    if (src.slice(at).trim() === "") break;
    TOKEN.lastIndex = at;
    const m = TOKEN.exec(src);
    if (!m) return `unexpected text at "${src.slice(at).trim().slice(0, 12)}"`;
    at = TOKEN.lastIndex;
    if (m[1] !== undefined) {
      const pct = m[1].endsWith("%");
      const n = Number(pct ? m[1].slice(0, -1) : m[1]);
      out.push({ t: "num", v: pct ? n / 100 : n });
    } else if (m[2] !== undefined) out.push({ t: "str", v: m[2] });
    else if (m[3] !== undefined) out.push({ t: "id", v: m[3] });
    else out.push({ t: "op", v: m[4]! });
  }
  return out;
}

/** Parses a check expression; a message for text that is not one. */
export function parseExpr(src: string): Expr | string {
  const toks = tokenize(src);
  if (typeof toks === "string") return toks;
  let i = 0;
  const peek = (): Token | undefined => toks[i];
  const fail = (what: string): string => {
    const t = peek();
    return `expected ${what}${t ? ` at "${String(t.v)}"` : " at the end"}`;
  };
  const atom = (): Expr | string => {
    const t = peek();
    if (!t) return fail("a value");
    if (t.t === "num") {
      i++;
      return { kind: "num", value: t.v };
    }
    if (t.t === "str") {
      i++;
      return { kind: "str", value: t.v };
    }
    if (t.t === "op" && t.v === "(") {
      i++;
      const e = sum();
      if (typeof e === "string") return e;
      if (peek()?.v !== ")") return fail(")");
      i++;
      return e;
    }
    if (t.t === "id") {
      i++;
      const [a, b] = t.v.split(".");
      if (b !== undefined) {
        if (a !== "baseline") return `"${t.v}": only baseline.NAME has a dot`;
        if (!isQuantity(b)) return `unknown quantity "${b}"`;
        return { kind: "ref", name: b, baseline: true };
      }
      if (!isQuantity(a!)) return `unknown quantity "${a}"`;
      return { kind: "ref", name: a!, baseline: false };
    }
    return fail("a value");
  };
  const product = (): Expr | string => {
    let left = atom();
    while (typeof left !== "string" && (peek()?.v === "*" || peek()?.v === "/")) {
      const op = toks[i++]!.v as "*" | "/";
      const right = atom();
      if (typeof right === "string") return right;
      left = { kind: "bin", op, left, right };
    }
    return left;
  };
  const sum = (): Expr | string => {
    let left = product();
    while (typeof left !== "string" && (peek()?.v === "+" || peek()?.v === "-")) {
      const op = toks[i++]!.v as "+" | "-";
      const right = product();
      if (typeof right === "string") return right;
      left = { kind: "bin", op, left, right };
    }
    return left;
  };
  const cmp = (): Expr | string => {
    const left = sum();
    if (typeof left === "string") return left;
    const t = peek();
    if (!t || t.t !== "op" || !["<", "<=", ">", ">=", "==", "!="].includes(t.v)) {
      return fail("a comparison (<, <=, >, >=, ==, !=)");
    }
    i++;
    const right = sum();
    if (typeof right === "string") return right;
    return { kind: "cmp", op: t.v as CmpOp, left, right };
  };
  const parts: Expr[] = [];
  for (;;) {
    const c = cmp();
    if (typeof c === "string") return c;
    parts.push(c);
    const t = peek();
    if (!t) break;
    if (t.t === "id" && t.v === "and") {
      i++;
      continue;
    }
    return fail('"and" or the end');
  }
  return parts.length === 1 ? parts[0]! : { kind: "and", parts };
}

/** The quantities an expression reads (for the lesson tests and the page's readout). */
export function quantitiesOf(e: Expr): string[] {
  const out = new Set<string>();
  const walk = (x: Expr): void => {
    if (x.kind === "ref") out.add(x.name);
    else if (x.kind === "bin" || x.kind === "cmp") {
      walk(x.left);
      walk(x.right);
    } else if (x.kind === "and") x.parts.forEach(walk);
  };
  walk(e);
  return [...out];
}

/** Whether the expression refers to the baseline run. */
export function usesBaseline(e: Expr): boolean {
  if (e.kind === "ref") return e.baseline;
  if (e.kind === "bin" || e.kind === "cmp") return usesBaseline(e.left) || usesBaseline(e.right);
  if (e.kind === "and") return e.parts.some(usesBaseline);
  return false;
}

type Value = number | string;

/** A check's verdict on a run: passed, or not and why (a value missing, a type mismatch). */
export interface Verdict {
  passed: boolean;
  /** Why it could not be decided (empty when it was). */
  problem: string;
}

/** Evaluates a check expression on the latest run and the baseline run. */
export function evaluate(e: Expr, current: Metrics, baseline: Metrics | null): Verdict {
  const value = (x: Expr): Value | string[] => {
    switch (x.kind) {
      case "num":
        return x.value;
      case "str":
        return x.value;
      case "ref": {
        const m = x.baseline ? baseline : current;
        if (!m) return ["the baseline run has not finished"];
        const v = m[x.name as keyof Metrics];
        return v === null || v === undefined ? [`this run has no ${x.name}`] : v;
      }
      case "bin": {
        const a = value(x.left);
        const b = value(x.right);
        if (Array.isArray(a)) return a;
        if (Array.isArray(b)) return b;
        if (typeof a !== "number" || typeof b !== "number") return ["arithmetic on text"];
        if (x.op === "+") return a + b;
        if (x.op === "-") return a - b;
        if (x.op === "*") return a * b;
        return b === 0 ? ["division by zero"] : a / b;
      }
      default:
        return ["a comparison inside arithmetic"];
    }
  };
  const test = (x: Expr): Verdict => {
    if (x.kind === "and") {
      for (const p of x.parts) {
        const v = test(p);
        if (!v.passed) return v;
      }
      return { passed: true, problem: "" };
    }
    if (x.kind !== "cmp") return { passed: false, problem: "not a comparison" };
    const a = value(x.left);
    const b = value(x.right);
    if (Array.isArray(a)) return { passed: false, problem: a[0]! };
    if (Array.isArray(b)) return { passed: false, problem: b[0]! };
    if (typeof a !== typeof b) return { passed: false, problem: "compares a number with text" };
    const passed =
      x.op === "<"
        ? a < b
        : x.op === "<="
          ? a <= b
          : x.op === ">"
            ? a > b
            : x.op === ">="
              ? a >= b
              : x.op === "=="
                ? a === b
                : a !== b;
    return { passed, problem: "" };
  };
  return test(e);
}
