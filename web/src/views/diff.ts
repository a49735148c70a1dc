// Line diff of two snapshots, with unchanged runs collapsed around the changes.

import { diffLines } from "diff";

export type DiffKind = "add" | "del" | "same" | "skip";

export interface DiffLine {
  kind: DiffKind;
  text: string;
}

export interface DiffResult {
  lines: DiffLine[];
  added: number;
  removed: number;
}

function splitLines(value: string): string[] {
  const lines = value.split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** The diff of `before` -> `after`; unchanged runs longer than 2 * context are collapsed. */
export function lineDiff(before: string, after: string, context = 3): DiffResult {
  const parts = diffLines(before, after);
  const lines: DiffLine[] = [];
  let added = 0;
  let removed = 0;
  parts.forEach((part, i) => {
    const ls = splitLines(part.value);
    if (part.added) {
      added += ls.length;
      for (const text of ls) lines.push({ kind: "add", text });
    } else if (part.removed) {
      removed += ls.length;
      for (const text of ls) lines.push({ kind: "del", text });
    } else {
      const first = i === 0;
      const last = i === parts.length - 1;
      const only = first && last;
      const head = first && !only ? 0 : context;
      const tail = last && !only ? 0 : context;
      if (ls.length <= head + tail + 1) {
        for (const text of ls) lines.push({ kind: "same", text });
      } else {
        for (const text of ls.slice(0, head)) lines.push({ kind: "same", text });
        lines.push({ kind: "skip", text: `⋯ ${ls.length - head - tail} unchanged lines` });
        for (const text of ls.slice(ls.length - tail)) lines.push({ kind: "same", text });
      }
    }
  });
  return { lines, added, removed };
}
