// Pure helpers over one run: KTIR functions and their lines, kernel time spans, and the
// structured snapshot data (work division, scratchpad plan, layouts) with type guards.

import type { PassSnapshot, TraceEvent } from "./api";

export interface KtirFunction {
  name: string;
  /** 1-based line of `func.func`. */
  line: number;
  /** Last line that belongs to it. */
  endLine: number;
}

export function ktirFunctions(text: string): KtirFunction[] {
  const out: KtirFunction[] = [];
  const lines = text.split("\n");
  lines.forEach((l, i) => {
    const m = /func\.func\s+@([\w$.-]+)/.exec(l);
    if (m?.[1]) {
      const prev = out[out.length - 1];
      if (prev) prev.endLine = i;
      out.push({ name: m[1], line: i + 1, endLine: lines.length });
    }
  });
  return out;
}

export function functionAt(funcs: readonly KtirFunction[], line: number): KtirFunction | null {
  for (const f of funcs) if (line >= f.line && line <= f.endLine) return f;
  return null;
}

/** The device op a lowered kernel runs: `k3_matmul` -> `matmul`. */
export function kernelOp(funcName: string): string {
  return funcName.replace(/^k\d+_/, "");
}

export interface Span {
  start: number;
  end: number;
}

/** Time span of each KTIR function, from the events whose lines fall inside it. */
export function kernelSpans(events: readonly TraceEvent[], funcs: readonly KtirFunction[]): Span[] {
  const spans: Span[] = funcs.map(() => ({ start: Infinity, end: -Infinity }));
  for (const e of events) {
    const i = funcs.findIndex((f) => e.line >= f.line && e.line <= f.endLine);
    const s = spans[i];
    if (!s) continue;
    s.start = Math.min(s.start, e.start);
    s.end = Math.max(s.end, e.end);
  }
  return spans.map((s) => (s.start <= s.end ? s : { start: 0, end: 0 }));
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
    coresUsed: Number(d.cores_used ?? 0),
    coreToSlice: Array.isArray(d.core_to_slice) ? d.core_to_slice.map(numList) : [],
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
    capacity: Number(p.capacity_bytes ?? 0),
    peak: Number(p.peak_bytes ?? 0),
    buffers: buffers.map((b) => ({
      tensor: String(b.tensor ?? ""),
      bytesPerCore: Number(b.bytes_per_core ?? 0),
      offset: typeof b.offset === "number" ? b.offset : null,
      start: Number(b.start ?? 0),
      end: Number(b.end ?? 0),
      dramReason: typeof b.dram_reason === "string" ? b.dram_reason : "",
    })),
  };
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
    out.set(name, `${kind}${off}`);
  }
  return out;
}

/** A stable, readable colour for slice `i` of `n` (hue wheel). */
export function sliceColour(i: number, n: number): string {
  const hue = n > 0 ? Math.round((360 * i) / n + 15) % 360 : 0;
  return `hsl(${hue} 62% 62%)`;
}
