// A lesson file (lessons/NN-name.md): Markdown prose with two kinds of fenced blocks the page
// understands (no DOM: unit-tested, and read by the lesson tests for every file).
//
//   ```spyre-example            the live example, one `key: value` per line:
//   example: swiglu_mlp           a gallery example (graph or KTIR program), required
//   view: timeline                the tab shown (graph, passes, ir, ring, timeline, cores, ...)
//   pass: work-division           the pass selected in the Passes tab
//   machine: tiny4                spyre32 or tiny4 (default spyre32)
//   allocator: first-fit          greedy, first-fit or best-fit
//   attentionBlock: 32            online-softmax block size in keys (default: all keys)
//   doubleBuffer: off             on or off (default on)
//   controls: machine, doubleBuffer   the settings the reader may change on the page
//   choices: matmul, softmax      other gallery examples the example control offers
//   show: dramBytes               quantities the readout shows besides those the checks read
//   ```
//
//   ```spyre-check              one check per block:
//   task: Turn double buffering on.     what the reader is asked to do
//   expect: cycles <= 0.9 * baseline.cycles   when it counts as done (check.ts)
//   says: cycles fell by at least 10%   the check in words, shown beside its status
//   solution: doubleBuffer=on           settings that do the task (the browser test applies
//   ```                                 them and expects the check to pass)

import { parseExpr, quantitiesOf, type Expr } from "./check";
import { parseMarkdown, plainText, type Block } from "./markdown";
import { isQuantity, type Quantity } from "./metrics";

/** The tabs an example may open on (the playground's view ids; a unit test keeps them in step). */
export const VIEW_IDS = [
  "graph",
  "passes",
  "ir",
  "ring",
  "timeline",
  "cores",
  "roofline",
  "inputs",
  "system",
  "serving",
  "compare",
] as const;

/** The machine presets of the playground. */
export const MACHINES = ["spyre32", "tiny4"] as const;
/** The scratchpad allocators, the first the default. */
export const ALLOCATOR_NAMES = ["greedy", "first-fit", "best-fit"] as const;
/** Settings a reader may be given a control for. */
export const CONTROLS = [
  "example",
  "machine",
  "allocator",
  "attentionBlock",
  "doubleBuffer",
] as const;
export type Control = (typeof CONTROLS)[number];

/** The run settings of a lesson's example, as the reader has them. */
export interface ExampleSettings {
  example: string;
  machine: string;
  allocator: string;
  /** Keys per online-softmax block (null: one softmax over all keys). */
  attentionBlock: number | null;
  doubleBuffer: boolean;
}

/** A lesson's live example. */
export interface LessonExample {
  settings: ExampleSettings;
  view: string | null;
  pass: string | null;
  controls: Control[];
  /** Other gallery examples the example control offers (besides `settings.example`). */
  choices: string[];
  /** Quantities the readout shows besides those the checks read. */
  show: Quantity[];
}

/** One check. */
export interface LessonCheck {
  /** Settings that complete the task, by control (values as the controls take them). */
  solution: Partial<Record<Control, string>>;
  task: string;
  says: string;
  source: string;
  expr: Expr;
  /** The quantities it reads. */
  quantities: string[];
}

/** A parsed lesson. */
export interface Lesson {
  /** The file name without `.md` (`05-double-buffering`): its address on the lessons page. */
  id: string;
  title: string;
  /** The first paragraph, for the list. */
  summary: string;
  /** The prose, with the example and check blocks in place (rendered by the page). */
  blocks: Block[];
  example: LessonExample | null;
  checks: LessonCheck[];
  /** What is wrong with the file, one line each (empty for a good lesson). */
  problems: string[];
}

function fields(text: string, line: number, problems: string[]): Map<string, string> {
  const out = new Map<string, string>();
  text.split("\n").forEach((l, i) => {
    if (l.trim() === "" || l.trim().startsWith("#")) return;
    const m = /^\s*([A-Za-z]+)\s*:\s*(.*?)\s*$/.exec(l);
    if (!m) {
      problems.push(`line ${line + i}: "${l.trim()}" is not "key: value"`);
      return;
    }
    out.set(m[1]!, m[2]!);
  });
  return out;
}

function list(v: string | undefined): string[] {
  return (v ?? "")
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function parseExample(text: string, line: number, problems: string[]): LessonExample | null {
  const f = fields(text, line, problems);
  const known = ["example", "view", "pass", "machine", "allocator", "attentionBlock"];
  for (const k of f.keys()) {
    if (![...known, "doubleBuffer", "controls", "choices", "show"].includes(k)) {
      problems.push(`line ${line}: the example has an unknown key "${k}"`);
    }
  }
  const example = f.get("example");
  if (!example) {
    problems.push(`line ${line}: the example names no gallery example ("example: NAME")`);
    return null;
  }
  const view = f.get("view") ?? null;
  if (view !== null && !(VIEW_IDS as readonly string[]).includes(view)) {
    problems.push(`line ${line}: there is no view "${view}"`);
  }
  const machine = f.get("machine") ?? "spyre32";
  if (!(MACHINES as readonly string[]).includes(machine)) {
    problems.push(`line ${line}: there is no machine "${machine}"`);
  }
  const allocator = f.get("allocator") ?? "greedy";
  if (!(ALLOCATOR_NAMES as readonly string[]).includes(allocator)) {
    problems.push(`line ${line}: there is no allocator "${allocator}"`);
  }
  const blockText = f.get("attentionBlock");
  const block = blockText === undefined ? null : Number(blockText);
  if (block !== null && !(Number.isInteger(block) && block > 0)) {
    problems.push(`line ${line}: attentionBlock must be a whole number of keys`);
  }
  const db = f.get("doubleBuffer") ?? "on";
  if (db !== "on" && db !== "off") problems.push(`line ${line}: doubleBuffer is on or off`);
  const controls = list(f.get("controls"));
  for (const c of controls) {
    if (!(CONTROLS as readonly string[]).includes(c)) {
      problems.push(`line ${line}: there is no control "${c}" (${CONTROLS.join(", ")})`);
    }
  }
  const show = list(f.get("show"));
  for (const q of show) {
    if (!isQuantity(q)) problems.push(`line ${line}: the readout shows an unknown quantity "${q}"`);
  }
  return {
    show: show.filter(isQuantity),
    settings: {
      example,
      machine,
      allocator,
      attentionBlock: block !== null && Number.isInteger(block) && block > 0 ? block : null,
      doubleBuffer: db !== "off",
    },
    view,
    pass: f.get("pass") ?? null,
    controls: controls.filter((c): c is Control => (CONTROLS as readonly string[]).includes(c)),
    choices: list(f.get("choices")),
  };
}

function parseCheck(text: string, line: number, problems: string[]): LessonCheck | null {
  const f = fields(text, line, problems);
  const task = f.get("task") ?? "";
  const says = f.get("says") ?? "";
  const source = f.get("expect") ?? "";
  if (!task || !says || !source) {
    problems.push(`line ${line}: a check needs task, expect and says`);
    return null;
  }
  const solution: Partial<Record<Control, string>> = {};
  for (const pair of list(f.get("solution"))) {
    const m = /^([A-Za-z]+)=(.+)$/.exec(pair);
    if (!m || !(CONTROLS as readonly string[]).includes(m[1]!)) {
      problems.push(`line ${line}: the solution "${pair}" is not CONTROL=VALUE`);
      continue;
    }
    solution[m[1] as Control] = m[2]!;
  }
  const expr = parseExpr(source);
  if (typeof expr === "string") {
    problems.push(`line ${line}: the check "${source}" does not parse: ${expr}`);
    return null;
  }
  return { task, says, source, expr, quantities: quantitiesOf(expr), solution };
}

/** The opening sentences of a paragraph, enough for a line in the list (about 60+ characters). */
export function leadSentences(text: string): string {
  const re = /[.!?](\s|$)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m.index >= 60) return text.slice(0, m.index + 1);
  }
  return text;
}

/** Parses a lesson file. Never throws: problems are listed in the result. */
export function parseLesson(id: string, text: string): Lesson {
  const problems: string[] = [];
  const blocks = parseMarkdown(text);
  const title = blocks.find((b) => b.kind === "heading" && b.level === 1);
  const first = blocks.find((b) => b.kind === "para");
  let example: LessonExample | null = null;
  const checks: LessonCheck[] = [];
  for (const b of blocks) {
    if (b.kind !== "code") continue;
    if (b.info === "spyre-example") {
      if (example) problems.push(`line ${b.line}: a lesson has one example`);
      else example = parseExample(b.text, b.line, problems);
    } else if (b.info === "spyre-check") {
      const c = parseCheck(b.text, b.line, problems);
      if (c) checks.push(c);
    }
  }
  if (!title) problems.push("the lesson has no title (a first-level heading)");
  if (!example) problems.push("the lesson has no spyre-example block");
  for (const c of checks) {
    for (const k of Object.keys(c.solution)) {
      if (example && !example.controls.includes(k as Control)) {
        problems.push(`the solution of "${c.task}" sets ${k}, which the reader has no control for`);
      }
    }
  }
  if (checks.length === 0) problems.push("the lesson has no spyre-check block");
  return {
    id,
    title: title && title.kind === "heading" ? plainText(title.children) : id,
    summary: first && first.kind === "para" ? leadSentences(plainText(first.children)) : "",
    blocks,
    example,
    checks,
    problems,
  };
}

/** The lesson id of a lesson file's path (`../../lessons/01-sticks.md` -> `01-sticks`). */
export function lessonId(path: string): string {
  return (path.split("/").pop() ?? path).replace(/\.md$/, "");
}
