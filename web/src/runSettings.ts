// The compiler and simulator settings the page offers, one for each flag of `spyre compile`
// and `spyre run` that changes what runs: the scratchpad allocator, the attention block,
// double buffering, timing-only, the seed, for KTIR modules the out-of-bounds mode and
// fixed buffer places, and for model graphs the tensor-parallel degree, system and
// all-reduce algorithm, and the serving stack's padding rules whose cost PagedAttention
// reports. They live in the URL state (flat fields, defaults left out) and go
// to the worker as run options.

import type { RunOptions } from "./api";

/** The scratchpad allocators (`--allocator`), the first being the default. */
export const ALLOCATORS = ["greedy", "first-fit", "best-fit"] as const;
export type Allocator = (typeof ALLOCATORS)[number];

/** What a point outside its view is (`--out-of-bounds`), the first being the default. */
export const OUT_OF_BOUNDS = ["error", "mask"] as const;
export type OutOfBounds = (typeof OUT_OF_BOUNDS)[number];

/** Tensor-parallel degrees offered (`--tp`); 1 is the default (one card). */
export const TP_DEGREES = [1, 2, 4, 8] as const;
/** The system presets (`--system`); none: `--tp` cards of the machine behind a PCIe switch. */
export const SYSTEM_PRESETS = ["drawer8", "ring4"] as const;
/** The all-reduce algorithms that override the cost estimate (`--allreduce`). */
export const ALLREDUCE = ["ring", "tree"] as const;
export type Allreduce = (typeof ALLREDUCE)[number];
/** Longest system description text a link may carry. */
export const MAX_SYSTEM_TEXT = 64 * 1024;

/** The public serving stack's padding rules (the compiler's defaults). */
export const PUBLIC_PADDING = { queryAlign: 32, kvAlign: 256, decodeAlign: 1 } as const;
export type PaddingRule = keyof typeof PUBLIC_PADDING;
export const PADDING_RULES = Object.keys(PUBLIC_PADDING) as PaddingRule[];
/** Largest alignment the page accepts, in tokens. */
export const MAX_ALIGN = 1 << 16;

/** Largest attention block, seed and place the page accepts (beyond, a link is garbage). */
export const MAX_ATTENTION_BLOCK = 1 << 24;
export const MAX_SEED = Number.MAX_SAFE_INTEGER;
export const MAX_PLACE = Number.MAX_SAFE_INTEGER;
/** Most buffer places a link may carry. */
export const MAX_PLACES = 256;

/**
 * The settings as the URL keeps them: each field null or false at its default, so a link
 * that sets nothing stays short and old links mean what they meant.
 */
export interface RunSettings {
  /** `--allocator` (null: greedy). */
  allocator: Allocator | null;
  /** `--attention-block KEYS` (null: one softmax over all keys). */
  attentionBlock: number | null;
  /** `--no-double-buffer`. */
  noDoubleBuffer: boolean;
  /** `--no-fuse`. */
  noFuse: boolean;
  /** `--timing-only`. */
  timingOnly: boolean;
  /** `--seed` (null: 0). */
  seed: number | null;
  /** `--out-of-bounds` for KTIR modules (null: error). */
  outOfBounds: OutOfBounds | null;
  /** `--place NAME=ADDR` for KTIR modules (null: none). */
  places: Record<string, number> | null;
  /** `--tp N` for model graphs (null: 1, one card). */
  tp: number | null;
  /** `--system`: a preset name or a system description's JSON text (null: the default). */
  system: string | null;
  /** `--allreduce` (null: auto, by the cost estimate). */
  allreduce: Allreduce | null;
  /** Padding rule: queries padded to this many tokens (null: the public 32). */
  queryAlign: number | null;
  /** Padding rule: KV length aligned to this many tokens (null: the public 256). */
  kvAlign: number | null;
  /** Padding rule: decode-only batches aligned to this (null: the public 1). */
  decodeAlign: number | null;
}

export const DEFAULT_SETTINGS: RunSettings = {
  allocator: null,
  attentionBlock: null,
  noDoubleBuffer: false,
  noFuse: false,
  timingOnly: false,
  seed: null,
  outOfBounds: null,
  places: null,
  tp: null,
  system: null,
  allreduce: null,
  queryAlign: null,
  kvAlign: null,
  decodeAlign: null,
};

/** Names of the settings' fields (in the URL state, beside the page's own). */
export const SETTINGS_FIELDS = Object.keys(DEFAULT_SETTINGS) as (keyof RunSettings)[];

function intIn(v: unknown, lo: number, hi: number): number | null {
  const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
  return typeof n === "number" && Number.isInteger(n) && n >= lo && n <= hi ? n : null;
}

function flag(v: unknown): boolean {
  return v === true || v === "1" || v === "true";
}

/** A buffer name as `--place` takes it: no separators, not empty. */
function placeName(k: string): boolean {
  return k.length > 0 && k.length <= 256 && !/[\s=,]/.test(k);
}

function places(v: unknown): Record<string, number> | null {
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const out: Record<string, number> = {};
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length === 0 || entries.length > MAX_PLACES) return null;
  for (const [k, a] of entries) {
    const addr = intIn(a, 0, MAX_PLACE);
    if (!placeName(k) || addr === null || k === "__proto__") return null;
    out[k] = addr;
  }
  return out;
}

/** Reads the settings' fields of a state object, keeping only well-typed values. */
export function sanitizeSettings(o: Record<string, unknown>): RunSettings {
  return {
    allocator:
      typeof o.allocator === "string" && (ALLOCATORS as readonly string[]).includes(o.allocator)
        ? o.allocator === "greedy"
          ? null
          : (o.allocator as Allocator)
        : null,
    attentionBlock: intIn(o.attentionBlock, 1, MAX_ATTENTION_BLOCK),
    noDoubleBuffer: flag(o.noDoubleBuffer),
    noFuse: flag(o.noFuse),
    timingOnly: flag(o.timingOnly),
    seed: intIn(o.seed, 0, MAX_SEED) || null,
    outOfBounds: o.outOfBounds === "mask" ? "mask" : null,
    places: places(o.places),
    tp: tpDegree(o.tp),
    system: systemSpec(o.system),
    allreduce:
      typeof o.allreduce === "string" && (ALLREDUCE as readonly string[]).includes(o.allreduce)
        ? (o.allreduce as Allreduce)
        : null,
    queryAlign: alignment(o.queryAlign, "queryAlign"),
    kvAlign: alignment(o.kvAlign, "kvAlign"),
    decodeAlign: alignment(o.decodeAlign, "decodeAlign"),
  };
}

/** A padding rule's alignment; null at the public value. */
function alignment(v: unknown, rule: PaddingRule): number | null {
  const n = intIn(v, 1, MAX_ALIGN);
  return n === PUBLIC_PADDING[rule] ? null : n;
}

function tpDegree(v: unknown): number | null {
  const n = intIn(v, 1, 8);
  return n !== null && n > 1 && (TP_DEGREES as readonly number[]).includes(n) ? n : null;
}

/** A preset name, or a JSON object's text (checked by the run, not here). */
function systemSpec(v: unknown): string | null {
  if (typeof v !== "string") return null;
  if ((SYSTEM_PRESETS as readonly string[]).includes(v)) return v;
  return v.trimStart().startsWith("{") && v.length <= MAX_SYSTEM_TEXT ? v : null;
}

/** How the options panel and flags name a system setting. */
export function systemLabel(system: string | null): string {
  if (system === null) return "default";
  if ((SYSTEM_PRESETS as readonly string[]).includes(system)) return system;
  const m = /"name"\s*:\s*"([^"]{1,64})"/.exec(system);
  return m ? `file (${m[1]})` : "file";
}

/** The run options the settings give (defaults left out). */
export function settingsOptions(s: RunSettings): RunOptions {
  const o: RunOptions = {};
  if (s.allocator !== null) o.allocator = s.allocator;
  if (s.attentionBlock !== null) o.attentionBlock = s.attentionBlock;
  if (s.noDoubleBuffer) o.doubleBuffer = false;
  if (s.noFuse) o.fuse = false;
  if (s.timingOnly) o.timingOnly = true;
  if (s.seed !== null) o.seed = s.seed;
  if (s.outOfBounds !== null) o.outOfBounds = s.outOfBounds;
  if (s.places !== null) o.places = { ...s.places };
  if (s.tp !== null) {
    o.tp = s.tp;
    if (s.system !== null) o.system = s.system;
    if (s.allreduce !== null) o.allreduce = s.allreduce;
  }
  for (const r of PADDING_RULES) {
    const v = s[r];
    if (v !== null) o[r] = v;
  }
  return o;
}

/** The settings as CLI flags, for the options panel to show what a run matches. */
export function settingsFlags(s: RunSettings): string[] {
  const f: string[] = [];
  if (s.allocator !== null) f.push(`--allocator ${s.allocator}`);
  if (s.attentionBlock !== null) f.push(`--attention-block ${s.attentionBlock}`);
  if (s.noDoubleBuffer) f.push("--no-double-buffer");
  if (s.noFuse) f.push("--no-fuse");
  if (s.timingOnly) f.push("--timing-only");
  if (s.seed !== null) f.push(`--seed ${s.seed}`);
  if (s.outOfBounds !== null) f.push(`--out-of-bounds ${s.outOfBounds}`);
  for (const [k, a] of Object.entries(s.places ?? {})) f.push(`--place ${k}=${a}`);
  if (s.tp !== null) {
    f.push(`--tp ${s.tp}`);
    if (s.system !== null)
      f.push(`--system ${SYSTEM_PRESETS.includes(s.system as never) ? s.system : "FILE.json"}`);
    if (s.allreduce !== null) f.push(`--allreduce ${s.allreduce}`);
  }
  if (s.queryAlign !== null) f.push(`--query-align ${s.queryAlign}`);
  if (s.kvAlign !== null) f.push(`--kv-align ${s.kvAlign}`);
  if (s.decodeAlign !== null) f.push(`--decode-align ${s.decodeAlign}`);
  return f;
}

/**
 * Reads `NAME=ADDR` pairs (separated by commas or white space) as typed in the options
 * panel; an error message for text that is not such a list.
 */
export function parsePlaces(text: string): Record<string, number> | null | string {
  const parts = text.split(/[\s,]+/).filter((p) => p !== "");
  if (parts.length === 0) return null;
  if (parts.length > MAX_PLACES) return `at most ${MAX_PLACES} places`;
  const out: Record<string, number> = {};
  for (const p of parts) {
    const m = /^([^=]+)=(\d+)$/.exec(p);
    const addr = m ? intIn(m[2], 0, MAX_PLACE) : null;
    if (!m || addr === null || !placeName(m[1]!) || m[1] === "__proto__") {
      return `"${p.length > 30 ? `${p.slice(0, 27)}…` : p}" is not NAME=ADDR`;
    }
    out[m[1]!] = addr;
  }
  return out;
}

/** The places as the options panel shows them. */
export function formatPlaces(p: Record<string, number> | null): string {
  return Object.entries(p ?? {})
    .map(([k, a]) => `${k}=${a}`)
    .join(", ");
}
