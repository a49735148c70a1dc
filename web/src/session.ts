// Pure helpers over one run: lookups in its source map (kernels, lines, device ops, graph
// nodes), kernel time spans, and the structured snapshot data (work division, scratchpad plan, layouts) with type guards.

import type { KernelLink, OpLink, PassSnapshot, PipelineResult, SourceMap } from "./api";
import type { PassTexts } from "./protocol";
import type { EventTable } from "./events";

// ---- the run's source map (computed in Rust): lines, kernels, device ops, graph nodes ----

/** The kernel (KTIR function) whose lines hold `line`. */
export function kernelAt(map: SourceMap, line: number): KernelLink | null {
  return map.kernels.find((k) => line >= k.lines.from && line <= k.lines.to) ?? null;
}

/** The device op a kernel runs (graphs only). */
export function opOfKernel(map: SourceMap, k: KernelLink | null): OpLink | null {
  return k && k.op !== null ? (map.ops[k.op] ?? null) : null;
}

/** The device op named `name`. */
export function opNamed(map: SourceMap, name: string): OpLink | null {
  return map.ops.find((o) => o.name === name) ?? null;
}

/** The kernel that runs device op `name`. */
export function kernelOfOp(map: SourceMap, name: string): KernelLink | null {
  const op = opNamed(map, name);
  return op && op.kernel !== null ? (map.kernels[op.kernel] ?? null) : null;
}

/** The graph node device op `name` came from. */
export function nodeOfOp(map: SourceMap, name: string): string | null {
  const op = opNamed(map, name);
  return op && op.node !== null ? (map.nodes[op.node]?.name ?? null) : null;
}

/** The device ops made of graph node `node`, in execution order. */
export function opsOfNode(map: SourceMap, node: string): OpLink[] {
  const n = map.nodes.find((x) => x.name === node);
  return (n?.ops ?? []).flatMap((i) => map.ops[i] ?? []);
}

/** The device op whose SDSC entry holds line `line` of the SDSC text. */
export function sdscOpAt(map: SourceMap, line: number): OpLink | null {
  return (
    map.ops.find((o) => o.sdscLines && line >= o.sdscLines.from && line <= o.sdscLines.to) ?? null
  );
}

export interface Span {
  start: number;
  end: number;
}

function spanOf(events: EventTable, k: KernelLink | undefined): Span {
  let start = Infinity;
  let end = -Infinity;
  for (const i of k?.events ?? []) {
    if (!(i >= 0 && i < events.length)) continue;
    start = Math.min(start, events.start(i));
    end = Math.max(end, events.end(i));
  }
  return start <= end ? { start, end } : { start: 0, end: 0 };
}

/**
 * Time span of each device op's kernel, in op order (for a KTIR module, which has no device
 * ops: of each function, in module order).
 */
export function kernelSpans(events: EventTable, map: SourceMap): Span[] {
  if (map.ops.length === 0) return map.kernels.map((k) => spanOf(events, k));
  return map.ops.map((o) => spanOf(events, o.kernel === null ? undefined : map.kernels[o.kernel]));
}

export interface Division {
  op: string;
  splits: number[];
  coresUsed: number;
  /** Slice coordinates of each core (index = core id). */
  coreToSlice: number[][];
  rule: string;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

function numList(v: unknown): number[] {
  return Array.isArray(v) ? v.map(Number).filter(Number.isFinite) : [];
}

export function passData(passes: readonly PassSnapshot[], name: string): unknown {
  return passes.find((p) => p.name === name)?.data ?? null;
}

export function divisions(data: unknown): Division[] {
  if (!isObj(data) || !Array.isArray(data.divisions)) return [];
  return data.divisions.filter(isObj).map((d) => ({
    op: String(d.op ?? ""),
    splits: numList(d.splits),
    coresUsed: Number(d.coresUsed ?? 0),
    coreToSlice: Array.isArray(d.coreToSlice) ? d.coreToSlice.map(numList) : [],
    rule: String(d.rule ?? ""),
  }));
}

/** Iteration labels of each device op (for naming slice coordinates). */
export function opLabels(data: unknown): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (!isObj(data) || !Array.isArray(data.ops)) return out;
  for (const op of data.ops.filter(isObj)) {
    const it = Array.isArray(op.iteration) ? op.iteration.filter(isObj) : [];
    out.set(
      String(op.name ?? ""),
      it.map((d) => String(d.label ?? "")),
    );
  }
  return out;
}

export interface ScratchBuffer {
  tensor: string;
  bytesPerCore: number;
  /** Offset in the scratchpad; null when the buffer went to DRAM. */
  offset: number | null;
  /** Device op range [start, end). */
  start: number;
  end: number;
  dramReason: string;
}

export interface ScratchPlan {
  capacity: number;
  peak: number;
  buffers: ScratchBuffer[];
}

export function scratchPlan(data: unknown): ScratchPlan | null {
  if (!isObj(data) || !isObj(data.plan)) return null;
  const p = data.plan;
  const buffers = Array.isArray(p.buffers) ? p.buffers.filter(isObj) : [];
  return {
    capacity: Number(p.capacityBytes ?? 0),
    peak: Number(p.peakBytes ?? 0),
    buffers: buffers.map((b) => ({
      tensor: String(b.tensor ?? ""),
      bytesPerCore: Number(b.bytesPerCore ?? 0),
      offset: typeof b.offset === "number" ? b.offset : null,
      start: Number(b.start ?? 0),
      end: Number(b.end ?? 0),
      dramReason: typeof b.dramReason === "string" ? b.dramReason : "",
    })),
  };
}

/**
 * The Cores view's figures of a run, read from its snapshots in the worker and packed in typed
 * arrays: a full model's work division lists some 60,000 slices, and reading them from the
 * snapshot's text held the page's thread for about 100 ms when the view was first shown.
 * Division `i` (in the snapshot's order) lists `cellStart` entries
 * `divCells[i] .. divCells[i + 1]`, one per core that owns a slice (cores 0, 1, ...); core
 * `c`'s coordinates are `coords[cellStart[divCells[i] + c] .. cellStart[divCells[i] + c + 1]]`.
 */
export interface CoresDigest {
  /** Each division's op, rule and cores used. */
  ops: string[];
  rules: string[];
  coresUsed: Float64Array;
  /** Division `i`'s splits: `splits[splitStart[i] .. splitStart[i + 1]]`. */
  splitStart: Uint32Array;
  splits: Float64Array;
  /** Division `i`'s op's iteration labels: `labels[labelStart[i] .. labelStart[i + 1]]`. */
  labelStart: Uint32Array;
  labels: string[];
  divCells: Uint32Array;
  cellStart: Uint32Array;
  coords: Float64Array;
  /** The scratchpad plan (null: the run has no scratchpad snapshot). */
  plan: ScratchPlan | null;
  /** Device op names in order (the decompose snapshot). */
  deviceOps: string[];
}

/** The Cores view's figures of `passes`, packed (`CoresDigest`). */
export function coresDigest(passes: readonly PassSnapshot[]): CoresDigest {
  const wd = passData(passes, "work-division");
  const divs = divisions(wd);
  const names = opLabels(wd);
  const splitStart = new Uint32Array(divs.length + 1);
  const labelStart = new Uint32Array(divs.length + 1);
  const divCells = new Uint32Array(divs.length + 1);
  const splits: number[] = [];
  const labels: string[] = [];
  const cellStart: number[] = [0];
  const coords: number[] = [];
  divs.forEach((d, i) => {
    splits.push(...d.splits);
    labels.push(...(names.get(d.op) ?? []));
    for (const slice of d.coreToSlice) {
      coords.push(...slice);
      cellStart.push(coords.length);
    }
    splitStart[i + 1] = splits.length;
    labelStart[i + 1] = labels.length;
    divCells[i + 1] = cellStart.length - 1;
  });
  return {
    ops: divs.map((d) => d.op),
    rules: divs.map((d) => d.rule),
    coresUsed: Float64Array.from(divs, (d) => d.coresUsed),
    splitStart,
    splits: Float64Array.from(splits),
    labelStart,
    labels,
    divCells,
    cellStart: Uint32Array.from(cellStart),
    coords: Float64Array.from(coords),
    plan: scratchPlan(passData(passes, "scratchpad")),
    deviceOps: deviceOps(passData(passes, "decompose")),
  };
}

/** Division `i` of `c`, with its op's iteration labels (as `divisions` and `opLabels` read it). */
export function divisionAt(c: CoresDigest, i: number): { division: Division; labels: string[] } {
  const first = c.divCells[i] ?? 0;
  const last = c.divCells[i + 1] ?? first;
  const coreToSlice: number[][] = [];
  for (let k = first; k < last; k++)
    coreToSlice.push(Array.from(c.coords.subarray(c.cellStart[k], c.cellStart[k + 1])));
  return {
    division: {
      op: c.ops[i] ?? "",
      splits: Array.from(c.splits.subarray(c.splitStart[i], c.splitStart[i + 1])),
      coresUsed: c.coresUsed[i] ?? 0,
      coreToSlice,
      rule: c.rules[i] ?? "",
    },
    labels: c.labels.slice(c.labelStart[i], c.labelStart[i + 1]),
  };
}

/** How many cores own a slice of division `i` (cores 0 .. that - 1). */
export function slicedCores(c: CoresDigest, i: number): number {
  return (c.divCells[i + 1] ?? 0) - (c.divCells[i] ?? 0);
}

/** Whether `v` has the outline of a `CoresDigest`: its arrays of the right kinds, their bounds consistent. */
export function isCoresDigest(v: unknown): v is CoresDigest {
  if (!isObj(v)) return false;
  const c = v as Partial<CoresDigest>;
  const n = Array.isArray(c.ops) ? c.ops.length : -1;
  const bounds = (a: unknown, end: number): boolean =>
    a instanceof Uint32Array && a.length === n + 1 && a[0] === 0 && a[n] === end;
  return (
    n >= 0 &&
    Array.isArray(c.rules) &&
    c.rules.length === n &&
    c.coresUsed instanceof Float64Array &&
    c.coresUsed.length === n &&
    c.splits instanceof Float64Array &&
    bounds(c.splitStart, c.splits.length) &&
    Array.isArray(c.labels) &&
    bounds(c.labelStart, c.labels.length) &&
    c.cellStart instanceof Uint32Array &&
    bounds(c.divCells, c.cellStart.length - 1) &&
    c.coords instanceof Float64Array &&
    c.cellStart[0] === 0 &&
    c.cellStart[c.cellStart.length - 1] === c.coords.length &&
    (c.plan === null || isObj(c.plan)) &&
    Array.isArray(c.deviceOps)
  );
}

/** Device op names in order (the decompose snapshot), to index the scratchpad plan. */
export function deviceOps(data: unknown): string[] {
  if (!isObj(data) || !Array.isArray(data.ops)) return [];
  return data.ops.filter(isObj).map((o) => String(o.name ?? ""));
}

export interface LayoutInfo {
  dtype: string;
  hostShape: number[];
  deviceSize: number[];
  deviceBytes: number;
  elemsPerStick: number;
}

export function layouts(data: unknown): Map<string, LayoutInfo> {
  const out = new Map<string, LayoutInfo>();
  if (!isObj(data) || !isObj(data.layouts)) return out;
  for (const [name, l] of Object.entries(data.layouts)) {
    if (!isObj(l)) continue;
    out.set(name, {
      dtype: String(l.dtype ?? ""),
      hostShape: numList(l.hostShape),
      deviceSize: numList(l.deviceSize),
      deviceBytes: Number(l.deviceBytes ?? 0),
      elemsPerStick: Number(l.elemsPerStick ?? 0),
    });
  }
  return out;
}

/** Where the scratchpad pass placed each tensor: "DRAM @ offset" or "scratchpad @ offset". */
export function placements(data: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (!isObj(data) || !isObj(data.placements)) return out;
  for (const [name, p] of Object.entries(data.placements)) {
    if (!isObj(p)) continue;
    const [kind, v] = Object.entries(p)[0] ?? [];
    if (!kind) continue;
    const off = isObj(v) && typeof v.offset === "number" ? ` @ ${v.offset}` : "";
    // Variants arrive camelCase ("dram", "scratchpad"); shown capitalised.
    out.set(name, `${kind.charAt(0).toUpperCase()}${kind.slice(1)}${off}`);
  }
  return out;
}

/** Whether a run still waits for pass texts kept in the compile store (a cache hit). */
export function textsPending(r: PipelineResult): boolean {
  return r.passes.some((p) => p.text === null);
}

/** Whether the run's pass `name` still waits for its text (false when it has no such pass). */
export function textPending(r: PipelineResult, name: string): boolean {
  return r.passes.some((p) => p.name === name && p.text === null);
}

/**
 * The run with the pass texts read from the compile store: each pass without a text takes
 * the one of its name, and each device op its SDSC lines (kept when the answer has none).
 */
export function withPassTexts(r: PipelineResult, t: PassTexts): PipelineResult {
  const texts = new Map(t.texts.map((x) => [x.name, x.text]));
  const lines = new Map(t.sdscLines.map((l) => [l.op, l.lines]));
  return {
    ...r,
    passesApart: false,
    passes: r.passes.map((p) => (p.text === null ? withText(p, texts.get(p.name) ?? null) : p)),
    sourceMap: {
      ...r.sourceMap,
      ops: r.sourceMap.ops.map((o) => ({ ...o, sdscLines: lines.get(o.name) ?? o.sdscLines })),
    },
  };
}

/**
 * `p` with its text: a copy of its properties as they are, so data the page reads only when
 * a view first asks (`readPass`) is not read here.
 */
function withText(p: PassSnapshot, text: string | null): PassSnapshot {
  const out = Object.defineProperties({}, Object.getOwnPropertyDescriptors(p)) as PassSnapshot;
  out.text = text;
  return out;
}

/** A stable, readable colour for slice `i` of `n` (hue wheel). */
export function sliceColour(i: number, n: number): string {
  const hue = n > 0 ? Math.round((360 * i) / n + 15) % 360 : 0;
  return `hsl(${hue} 62% 62%)`;
}
