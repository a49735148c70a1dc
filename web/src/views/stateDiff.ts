// Diffs of the compiler's program state, entity by entity (see crates/compiler/src/state.rs
// for the text form): a header line at column 0 ("tensor A: f16[4] (input)") and its
// indented attribute lines. Each entity is diffed on its own, so a snapshot of any size
// diffs in time proportional to what changed, and the changes can be summarised in words.

import { lineDiff, type DiffLine } from "./diff";

/** One entity of a state text: its kind ("tensor"), name, and lines (header first). */
export interface Entity {
  kind: string;
  name: string;
  lines: string[];
}

/** The key an entity is matched by across passes. */
export function entityKey(e: Entity): string {
  return `${e.kind} ${e.name}`;
}

/** True when `text` is in the state form (it starts with a `program` entity). */
export function isStateText(text: string): boolean {
  return text.startsWith("program ");
}

/** Splits a state text into entities, in order. Lines before the first header are dropped. */
export function parseEntities(text: string): Entity[] {
  const out: Entity[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith(" ")) {
      out[out.length - 1]?.lines.push(line);
      continue;
    }
    const space = line.indexOf(" ");
    const kind = space < 0 ? line : line.slice(0, space);
    const rest = space < 0 ? "" : line.slice(space + 1);
    // The name ends at the header's first ": " (an op's header is "NAME: KIND(...)").
    const colon = rest.indexOf(": ");
    const name = colon < 0 ? rest : rest.slice(0, colon);
    out.push({ kind, name, lines: [line] });
  }
  return out;
}

/** Where an entity sits in a state text: its key and its first and last lines (1-based). */
export interface EntityRange {
  key: string;
  from: number;
  to: number;
}

/**
 * The line range of each entity of a state text, in order (lines before the first header
 * and blank lines belong to no entity; blank lines inside one are kept in its range).
 */
export function entityRanges(text: string): EntityRange[] {
  const out: EntityRange[] = [];
  const lines = text.split("\n");
  lines.forEach((line, i) => {
    if (line === "") return;
    if (line.startsWith(" ")) {
      const last = out[out.length - 1];
      if (last) last.to = i + 1;
      return;
    }
    const [e] = parseEntities(line);
    if (e) out.push({ key: entityKey(e), from: i + 1, to: i + 1 });
  });
  return out;
}

/** The entity whose lines hold `line` (1-based), or null. */
export function entityAt(ranges: readonly EntityRange[], line: number): EntityRange | null {
  // Ranges are in line order: a binary search keeps hovering cheap on large snapshots.
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = ranges[mid]!;
    if (line < r.from) hi = mid - 1;
    else if (line > r.to) lo = mid + 1;
    else return r;
  }
  return null;
}

/** How one entity changed between two passes. */
export interface EntityChange {
  kind: string;
  name: string;
  change: "added" | "removed" | "changed";
  /** The entity's diff lines (added / removed lines, unchanged ones as context). */
  lines: DiffLine[];
  /** Attribute names of the lines added ("layout", "split"), and of those removed. */
  addedAttrs: string[];
  removedAttrs: string[];
}

/** The attribute an entity line sets ("  layout: ..." -> "layout"); "" for the header. */
function attrOf(line: string): string {
  if (!line.startsWith("  ") || line.startsWith("   ")) return "";
  const t = line.trim();
  const colon = t.indexOf(":");
  const word = colon < 0 ? t : t.slice(0, colon);
  // "core -> (mb,out)" and the like: the first word names it.
  return word.split(" ")[0] ?? "";
}

/** The entities that changed from `before` to `after`, in `after`'s order (removed ones last). */
export function diffEntities(before: string, after: string): EntityChange[] {
  const old = new Map(parseEntities(before).map((e) => [entityKey(e), e]));
  const out: EntityChange[] = [];
  const seen = new Set<string>();
  for (const e of parseEntities(after)) {
    const key = entityKey(e);
    seen.add(key);
    const prev = old.get(key);
    if (!prev) {
      out.push({
        kind: e.kind,
        name: e.name,
        change: "added",
        lines: e.lines.map((text) => ({ kind: "add", text })),
        addedAttrs: e.lines.map(attrOf).filter((a) => a !== ""),
        removedAttrs: [],
      });
      continue;
    }
    if (prev.lines.length === e.lines.length && prev.lines.every((l, i) => l === e.lines[i]))
      continue;
    const d = lineDiff(`${prev.lines.join("\n")}\n`, `${e.lines.join("\n")}\n`, 1);
    // The header is the entity's name: always shown, as context when unchanged.
    const lines =
      d.lines[0]?.kind === "same"
        ? d.lines
        : [{ kind: "same" as const, text: e.lines[0]! }, ...d.lines];
    out.push({
      kind: e.kind,
      name: e.name,
      change: "changed",
      lines,
      addedAttrs: d.lines.filter((l) => l.kind === "add").map((l) => attrOf(l.text)),
      removedAttrs: d.lines.filter((l) => l.kind === "del").map((l) => attrOf(l.text)),
    });
  }
  for (const [key, e] of old) {
    if (seen.has(key)) continue;
    out.push({
      kind: e.kind,
      name: e.name,
      change: "removed",
      lines: e.lines.map((text) => ({ kind: "del", text })),
      addedAttrs: [],
      removedAttrs: e.lines.map(attrOf).filter((a) => a !== ""),
    });
  }
  return out;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The largest "-> N cores" among an op's split lines. */
function coresOf(c: EntityChange): number {
  let most = 0;
  for (const l of c.lines) {
    const m = /^ {2}split: .* -> (\d+) cores$/.exec(l.text);
    if (m && l.kind !== "del") most = Math.max(most, Number(m[1]));
  }
  return most;
}

/**
 * The changes in words, most telling first: "3 tensors re-sticked", "2 ops split over up to
 * 32 cores", "5 tensors placed in DRAM". Empty for no change.
 */
export function summarize(changes: readonly EntityChange[]): string[] {
  const out: string[] = [];
  const count = (f: (c: EntityChange) => boolean): EntityChange[] => changes.filter(f);
  const has = (xs: string[], a: string): boolean => xs.includes(a);
  const tensors = (c: EntityChange): boolean => c.kind === "tensor";
  const ops = (c: EntityChange): boolean => c.kind === "op";
  const added = count((c) => c.change === "added" && c.kind !== "program");
  const removed = count((c) => c.change === "removed" && c.kind !== "program");
  const byKind = (xs: EntityChange[]): Map<string, number> => {
    const m = new Map<string, number>();
    for (const c of xs) m.set(c.kind, (m.get(c.kind) ?? 0) + 1);
    return m;
  };
  const restick = count((c) => ops(c) && has(c.addedAttrs, "restickify"));
  if (restick.length > 0)
    out.push(
      `${plural(restick.length, "tensor")} re-sticked (${plural(restick.length, "restickify op")})`,
    );
  for (const [kind, n] of byKind(added.filter((c) => !has(c.addedAttrs, "restickify"))))
    out.push(`${plural(n, kind)} added`);
  for (const [kind, n] of byKind(removed)) out.push(`${plural(n, kind)} removed`);
  const laid = count((c) => tensors(c) && has(c.addedAttrs, "layout"));
  const relaid = laid.filter((c) => has(c.removedAttrs, "layout"));
  if (laid.length - relaid.length > 0)
    out.push(`${plural(laid.length - relaid.length, "tensor")} laid out`);
  if (relaid.length > 0) out.push(`${plural(relaid.length, "tensor")} laid out differently`);
  const split = count((c) => ops(c) && has(c.addedAttrs, "split"));
  if (split.length > 0) {
    const most = Math.max(...split.map(coresOf));
    const many = split.filter((c) => coresOf(c) > 1).length;
    out.push(
      `${plural(split.length, "op")} divided, ${many} split over up to ${plural(most, "core")}`,
    );
  }
  const dram = count((c) => tensors(c) && has(c.addedAttrs, "dram"));
  if (dram.length > 0) out.push(`${plural(dram.length, "tensor")} placed in DRAM`);
  const lx = count((c) => tensors(c) && has(c.addedAttrs, "scratchpad"));
  if (lx.length > 0) out.push(`${plural(lx.length, "tensor")} placed in scratchpad`);
  const program = changes.find((c) => c.kind === "program");
  if (program && has(program.addedAttrs, "allocator")) {
    const line = program.lines.find((l) => l.kind === "add" && attrOf(l.text) === "allocator");
    const peak = /peak (\d+) B per core/.exec(line?.text ?? "")?.[1];
    if (peak !== undefined)
      out.push(`scratchpad peak ${Number(peak).toLocaleString("en-US")} B per core`);
  }
  if (out.length === 0 && changes.length > 0)
    out.push(`${plural(changes.length, "entity", "entities")} changed`);
  return out;
}
