// What a timeline bar or a ring tile stands for, read from the run's own data: the event
// (unit, core, cycles, bytes, route), the machine's stops, the source map and the KTIR text.
// The tensor slice comes from the KTIR line the event points at: the access tile it loads or
// stores, the memory view under it and the buffer under that, with its offsets and extents
// where the text states them. Pure (no DOM): unit-tested.

import type { RingStop, SourceMap, TraceEvent } from "./api";
import { formatInt } from "./dom";
import { formatDuration } from "./views/results";

/** What the details need besides the event. */
export interface DetailsContext {
  stops: readonly RingStop[];
  map: SourceMap;
  /** The KTIR text the run carries (its lines are the events' lines). */
  ktir: string;
  clockGhz: number;
}

/** A tensor slice named by a KTIR load or store: buffer and per-dimension index ranges. */
export interface Slice {
  /** The buffer (function argument), or the tile's SSA name when the buffer is not found. */
  tensor: string;
  /** One "from:to" (or "offset +extent") per dimension, as far as the text tells. */
  ranges: string[];
  /** Elements per dimension of the tile. */
  shape: number[];
}

/** One row of the details box. */
export type DetailRow = [label: string, value: string];

/** A stop's name ("core 3", "mem0"); "stop N" when the machine does not list it. */
export function stopName(stops: readonly RingStop[], i: number | null): string {
  if (i === null) return "–";
  const s = stops[i];
  if (!s) return `stop ${i}`;
  return s.kind === "core" ? `core ${s.index}` : s.label || `mem${s.index}`;
}

/** The def line of SSA value `name` nearest above line `before` (1-based), or null. */
function defOf(lines: readonly string[], name: string, before: number): string | null {
  const re = new RegExp(`^\\s*%${escapeRe(name)}(?::\\d+)?\\s*=\\s*(.*)$`);
  for (let i = Math.min(before, lines.length) - 1; i >= 0; i--) {
    const m = re.exec(lines[i] ?? "");
    if (m) {
      // An op's attributes may run over several lines; enough for the tile type.
      return [m[1] ?? "", ...lines.slice(i + 1, i + 8)].join(" ");
    }
  }
  return null;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** An index operand as text: a constant's value, or the SSA name. */
function indexText(lines: readonly string[], operand: string, before: number): string {
  const v = operand.trim();
  const m = /^%([\w.$-]+)$/.exec(v);
  if (!m) return v;
  const def = defOf(lines, m[1] ?? "", before);
  const c = def && /^arith\.constant\s+(-?\d+)\s*:\s*index/.exec(def);
  return c ? (c[1] ?? v) : v;
}

/**
 * The slice a KTIR load or store at `line` (1-based) moves, or null when the line is not one
 * or its tile cannot be followed.
 */
export function sliceAt(ktir: string, line: number): Slice | null {
  const lines = ktir.split("\n");
  const text = lines[line - 1] ?? "";
  const tileName =
    /ktdp\.load\s+%([\w.$-]+)/.exec(text)?.[1] ??
    /ktdp\.store\s+%[\w.$-]+\s*,\s*%([\w.$-]+)/.exec(text)?.[1];
  if (!tileName) return null;
  const tileDef = defOf(lines, tileName, line - 1);
  const shape = (/!ktdp\.access_tile<([\dx]+)xindex>/.exec(text)?.[1] ?? "")
    .split("x")
    .filter((d) => d !== "")
    .map(Number);
  if (!tileDef) return { tensor: tileName, ranges: [], shape };
  const at = /^ktdp\.construct(?:_indirect)?_access_tile\s+%([\w.$-]+)\s*\[([^\]]*)\]/.exec(
    tileDef,
  );
  if (!at) return { tensor: tileName, ranges: [], shape };
  const viewName = at[1] ?? "";
  const offsets = (at[2] ?? "").split(",").filter((o) => o.trim() !== "");
  const ranges = offsets.map((o, i) => {
    const from = indexText(lines, o, line - 1);
    const n = shape[i];
    if (n === undefined) return from;
    const start = Number(from);
    return Number.isInteger(start) ? `${start}:${start + n}` : `${from}:${from}+${n}`;
  });
  let tensor = viewName;
  const viewDef = defOf(lines, viewName, line - 1);
  const buf =
    viewDef && /^ktdp\.construct_(?:distributed_)?memory_view\s+%([\w.$-]+)/.exec(viewDef);
  if (buf) tensor = buf[1] ?? viewName;
  return { tensor, ranges, shape };
}

/** The kernel (KTIR function) whose lines hold `line`, or null. */
export function kernelOfLine(map: SourceMap, line: number): string | null {
  const k = map.kernels.find((k) => k.lines.from <= line && line <= k.lines.to);
  return k ? k.func : null;
}

const UNIT_NAMES: Record<string, string> = {
  dma: "DMA transfer",
  pt: "PT (systolic array) compute",
  sfp: "SFP (vector unit) compute",
};

/** The rows of the details box for one event. */
export function eventDetails(e: TraceEvent, ctx: DetailsContext): DetailRow[] {
  const rows: DetailRow[] = [[UNIT_NAMES[e.unit] ?? e.unit, `core ${e.core} · ${e.op}`]];
  const slice = sliceAt(ctx.ktir, e.line);
  if (slice) {
    const idx = slice.ranges.length ? `[${slice.ranges.join(", ")}]` : "";
    const shape = slice.shape.length ? ` (${slice.shape.join("×")} tile)` : "";
    rows.push(["tensor slice", `${slice.tensor}${idx}${shape}`]);
  }
  if (e.bytes > 0) rows.push(["bytes", `${formatInt(e.bytes)} B`]);
  if (e.srcStop !== null || e.dstStop !== null) {
    const hops = e.route.length > 1 ? ` (${e.route.length - 1} hops)` : "";
    rows.push([
      "from → to",
      `${stopName(ctx.stops, e.srcStop)} → ${stopName(ctx.stops, e.dstStop)}${hops}`,
    ]);
  }
  const kernel = kernelOfLine(ctx.map, e.line);
  const lineText = (ctx.ktir.split("\n")[e.line - 1] ?? "").trim();
  rows.push(["kernel", kernel ? `@${kernel}` : "–"]);
  rows.push([`KTIR line ${e.line}`, lineText.length > 90 ? `${lineText.slice(0, 89)}…` : lineText]);
  const dur = e.end - e.start;
  rows.push([
    "time",
    `cycles ${formatInt(e.start)}–${formatInt(e.end)} (${formatInt(dur)} cycles, ${formatDuration(dur, ctx.clockGhz)})`,
  ]);
  return rows;
}
