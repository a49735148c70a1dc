// The whole session in the URL fragment, versioned and compressed.
//
//   v=1 (old links):  #v=1&example=NAME&pass=NAME            (plain parameters)
//   v=2:              #v=2&s=BASE64URL(deflate-raw(JSON))   (everything below)
//
// Plain `embed=1`, `view=` and `t=` parameters are also read with any version, so a
// hand-written link (or the <spyre-playground> element) stays short and readable.
//
// The state is one flat object: the page's fields below, plus each view's own fields (its
// `url` part in views/registry.ts, e.g. the Passes view's `pass`).

import { type CompareSpec, encodeCompare, sanitizeCompare } from "./compare";
import { DEFAULT_SETTINGS, type RunSettings, sanitizeSettings } from "./runSettings";
import { isView, VIEWS } from "./views/registry";

export const URL_STATE_VERSION = 2;

/**
 * An opened file carried in a link or a session file: its text, or for a binary file (.onnx)
 * its bytes as base64url text with `base64` set.
 */
export interface UrlFile {
  name: string;
  text: string;
  base64?: true;
}

/** The bytes of a carried file. Throws [UrlStateError] for base64 that does not decode. */
export function urlFileBytes(f: UrlFile): Uint8Array {
  return f.base64 ? base64UrlToBytes(f.text) : new TextEncoder().encode(f.text);
}

/** A file as a link carries it: text for a text file, base64url for a binary one. */
export function toUrlFile(name: string, bytes: Uint8Array, binary: boolean): UrlFile {
  return binary
    ? { name, text: bytesToBase64Url(bytes), base64: true }
    : { name, text: new TextDecoder().decode(bytes) };
}

/** The fields the page itself keeps in the URL (with the run settings, see runSettings.ts). */
export interface PageUrlState extends RunSettings {
  example: string | null;
  /** Id of the tab shown. */
  view: string | null;
  /** Simulated time shown, in cycles. */
  t: number | null;
  machine: string | null;
  /** An edited KTIR module (null: the compiled one). */
  ktir: string | null;
  /** A small opened file (large files are not kept in the URL; see [UrlFile]). */
  file: UrlFile | null;
  /** Selected KTIR line. */
  line: number | null;
  /** Selected core. */
  core: number | null;
  /** Shown inside another page (<spyre-playground>): one view, no chrome. */
  embed: boolean;
  /** The second run of compare mode, as changes from the run on screen (null: none). */
  compare: CompareSpec | null;
}

/** The page's fields and every view's fields. */
export type UrlState = PageUrlState & Record<string, unknown>;

const EMPTY_PAGE: PageUrlState = {
  example: null,
  view: null,
  t: null,
  machine: null,
  ktir: null,
  file: null,
  line: null,
  core: null,
  embed: false,
  compare: null,
  ...DEFAULT_SETTINGS,
};

/** Names of the page's own fields (view fields must not reuse them). */
export const PAGE_FIELDS: readonly string[] = Object.keys(EMPTY_PAGE);

export const EMPTY_STATE: UrlState = Object.assign(
  {},
  EMPTY_PAGE,
  ...VIEWS.map((v) => v.url?.empty ?? {}),
) as UrlState;

/** Files up to this many characters travel in the URL. */
export const MAX_URL_FILE_CHARS = 64 * 1024;

/** Longest compressed state (`s=`, base64url characters) read from a link; see docs/limits.md. */
export const MAX_URL_STATE_CHARS = 2 * 1024 * 1024;
/** Largest inflated state (bytes of JSON) read from a link; see docs/limits.md. */
export const MAX_INFLATED_STATE_BYTES = 4 * 1024 * 1024;
/** Longest edited KTIR a link may run; see docs/limits.md. */
export const MAX_URL_KTIR_CHARS = 1024 * 1024;

/** A reason a link's state could not be read in full, as text for the page's message. */
export class UrlStateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UrlStateError";
  }
}

function bytesToBase64Url(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function base64UrlToBytes(s: string): Uint8Array<ArrayBuffer> {
  if (!/^[A-Za-z0-9_-]*$/.test(s) || s.length % 4 === 1) {
    throw new UrlStateError("the state is not base64url text");
  }
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/");
  const bin = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

async function pipe(bytes: Uint8Array, stream: GenericTransformStream): Promise<Uint8Array> {
  const body = new Blob([bytes as BlobPart]).stream().pipeThrough(stream);
  return new Uint8Array(await new Response(body).arrayBuffer());
}

/** Input fed to the inflater at a time: bounds what one step can produce (deflate expands ~1000x). */
const INFLATE_SLICE = 1024;

/**
 * Inflates deflate-raw `bytes`, reading the output chunk by chunk and stopping as soon as it
 * grows past `cap` bytes, so a small link cannot make the page allocate without bound.
 */
export async function inflateCapped(
  bytes: Uint8Array<ArrayBuffer>,
  cap: number,
): Promise<Uint8Array> {
  const ds = new DecompressionStream("deflate-raw");
  const writer = ds.writable.getWriter();
  const reader = ds.readable.getReader();
  let stopped = false;
  // Slices go in as the reader takes output out (the stream's backpressure), never all at once.
  const feeding = (async () => {
    for (let i = 0; i < bytes.length && !stopped; i += INFLATE_SLICE) {
      await writer.ready;
      if (stopped) return;
      void writer.write(bytes.subarray(i, i + INFLATE_SLICE)).catch(() => {});
    }
    if (!stopped) await writer.close();
  })().catch(() => {});
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch {
        throw new UrlStateError("the state is not deflate-compressed data");
      }
      if (next.done) break;
      total += next.value.length;
      if (total > cap) {
        throw new UrlStateError(`the state inflates to more than ${formatBytes(cap)}`);
      }
      chunks.push(next.value);
    }
  } finally {
    stopped = true;
    await reader.cancel().catch(() => {});
    await writer.abort().catch(() => {});
    await feeding;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function formatBytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

export async function compress(text: string): Promise<string> {
  const deflated = await pipe(new TextEncoder().encode(text), new CompressionStream("deflate-raw"));
  return bytesToBase64Url(deflated);
}

/** Inflates a link's `s=` value; throws a [UrlStateError] saying what was wrong. */
export async function decompress(s: string): Promise<string> {
  if (s.length > MAX_URL_STATE_CHARS) {
    throw new UrlStateError(
      `the state is ${s.length} characters long; links hold at most ${MAX_URL_STATE_CHARS}`,
    );
  }
  const inflated = await inflateCapped(base64UrlToBytes(s), MAX_INFLATED_STATE_BYTES);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(inflated);
  } catch {
    throw new UrlStateError("the state is not UTF-8 text");
  }
}

function num(v: unknown): number | null {
  const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
  return typeof n === "number" && Number.isFinite(n) ? n : null;
}

function str(v: unknown): string | null {
  return typeof v === "string" && v !== "" ? v : null;
}

/** Reads a state object (from JSON), keeping only well-typed fields. */
export function sanitize(o: Record<string, unknown>): UrlState {
  const f = o.file as { name?: unknown; text?: unknown; base64?: unknown } | null | undefined;
  const page: PageUrlState = {
    example: str(o.example),
    view: isView(o.view) ? o.view : null,
    t: num(o.t),
    machine: str(o.machine),
    ktir: typeof o.ktir === "string" ? o.ktir : null,
    file:
      f && typeof f === "object" && typeof f.name === "string" && typeof f.text === "string"
        ? f.base64 === true
          ? { name: f.name, text: f.text, base64: true }
          : { name: f.name, text: f.text }
        : null,
    line: num(o.line),
    core: num(o.core),
    embed: o.embed === true || o.embed === "1",
    compare: sanitizeCompare(o.compare),
    ...sanitizeSettings(o),
  };
  return Object.assign({}, page, ...VIEWS.map((v) => v.url?.decode(o) ?? {})) as UrlState;
}

/** A short, safe rendering of a value found in a link, for a message. */
function shown(v: unknown): string {
  let s: string;
  try {
    s = typeof v === "string" ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  } catch {
    s = String(v);
  }
  return s.length > 40 ? `${s.slice(0, 37)}…` : s;
}

/** Values a link may spell out that mean the default (kept as null). */
const DEFAULT_SPELLINGS: Record<string, unknown> = {
  allocator: "greedy",
  outOfBounds: "error",
  seed: 0,
  queryAlign: 32,
  kvAlign: 256,
  decodeAlign: 1,
};

/** The fields of `o` that `sanitize` had to drop (present, but of the wrong type or value). */
function droppedFields(o: Record<string, unknown>, state: UrlState): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(o)) {
    if (v === null || v === undefined || k === "embed" || k === "v" || k === "s") continue;
    if (!(k in EMPTY_STATE)) continue; // unknown fields are left for newer pages
    const got = state[k];
    const empty = EMPTY_STATE[k];
    if (
      JSON.stringify(got) === JSON.stringify(empty) &&
      JSON.stringify(v) !== JSON.stringify(got)
    ) {
      if (k === "example" && v === "") continue;
      if (DEFAULT_SPELLINGS[k] !== undefined && DEFAULT_SPELLINGS[k] === v) continue;
      out.push(`field ${k} has an unusable value ${shown(v)}`);
    }
  }
  return out;
}

/** The limits on what a link may run, applied to a parsed state; problems say what was dropped. */
function limitSources(state: UrlState, problems: string[]): void {
  if (state.ktir !== null && state.ktir.length > MAX_URL_KTIR_CHARS) {
    problems.push(
      `its KTIR is ${state.ktir.length} characters; a link runs at most ${MAX_URL_KTIR_CHARS}`,
    );
    state.ktir = null;
  }
  if (state.file !== null && state.file.text.length > MAX_URL_FILE_CHARS) {
    problems.push(
      `its file ${shown(state.file.name)} is ${state.file.text.length} characters; a link carries at most ${MAX_URL_FILE_CHARS}`,
    );
    state.file = null;
  }
}

/** A link's state, and what in it could not be used (empty when everything was read). */
export interface ReadUrlState {
  state: UrlState;
  problems: string[];
}

/**
 * Reads a link's fragment. Never throws: whatever cannot be read is left out of the state and
 * described in `problems`, so the page can say what it loaded instead.
 */
export async function readUrlState(hash: string): Promise<ReadUrlState> {
  const problems: string[] = [];
  try {
    const state = await readUnchecked(hash, problems);
    limitSources(state, problems);
    return { state, problems };
  } catch (err) {
    problems.push(err instanceof Error ? err.message : String(err));
    return { state: { ...EMPTY_STATE }, problems };
  }
}

async function readUnchecked(hash: string, problems: string[]): Promise<UrlState> {
  if (hash.length > MAX_URL_STATE_CHARS + 4096) {
    throw new UrlStateError(
      `the link is ${hash.length} characters long; links hold at most ${MAX_URL_STATE_CHARS}`,
    );
  }
  const params = new URLSearchParams(hash.startsWith("#") ? hash.slice(1) : hash);
  const version = params.get("v") ?? "1";
  const v = Number(version);
  const plain: Record<string, unknown> = {};
  for (const [k, val] of params) plain[k] = val;
  let state: UrlState;
  if (v === 1) {
    state = sanitize(plain);
    problems.push(...droppedFields(plain, state));
    // v1 only had example and pass; the plain extras are read below.
  } else if (v === 2) {
    const s = params.get("s");
    let obj: Record<string, unknown> = {};
    if (s !== null) {
      try {
        const text = await decompress(s);
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          throw new UrlStateError("the state is not JSON");
        }
        if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
          throw new UrlStateError("the state is not a JSON object");
        }
        obj = parsed as Record<string, unknown>;
      } catch (err) {
        problems.push(err instanceof Error ? err.message : String(err));
        obj = {};
      }
    }
    const all = { ...plain, ...obj };
    state = sanitize(all);
    problems.push(...droppedFields(all, state));
  } else {
    problems.push(
      `its version ${shown(version)} is not one this page reads (1 to ${URL_STATE_VERSION})`,
    );
    return { ...EMPTY_STATE };
  }
  if (params.get("embed") === "1") state.embed = true;
  const view = params.get("view");
  if (isView(view)) state.view = view;
  const t = num(params.get("t"));
  if (t !== null) state.t = t;
  return state;
}

/** A link's state; what cannot be read is left out (see [readUrlState] for why). */
export async function parseUrlState(hash: string): Promise<UrlState> {
  return (await readUrlState(hash)).state;
}

/**
 * Checks a link's example and machine against those the wasm module offers; an unknown name
 * is removed from `state` and described in the returned problems.
 */
export function checkNames(
  state: UrlState,
  examples: readonly string[],
  machines: readonly string[],
): string[] {
  const problems: string[] = [];
  if (state.example !== null && !examples.includes(state.example)) {
    problems.push(`there is no example named ${shown(state.example)}`);
    state.example = null;
  }
  if (state.machine !== null && !machines.includes(state.machine)) {
    problems.push(`there is no machine named ${shown(state.machine)}`);
    state.machine = null;
  }
  return problems;
}

/**
 * The message shown for a link that could not be read in full: what was wrong, and what the
 * page shows instead. Empty when there were no problems.
 */
export function describeLinkProblems(problems: readonly string[], instead: string): string {
  if (problems.length === 0) return "";
  return `This link's state could not be read (${problems.join("; ")}); showing ${instead} instead.`;
}

export async function formatUrlState(state: UrlState): Promise<string> {
  const fields: Record<string, unknown> = {};
  for (const k of PAGE_FIELDS) if (k !== "embed") fields[k] = state[k];
  fields.compare = state.compare ? encodeCompare(state.compare) : null;
  for (const v of VIEWS) if (v.url) Object.assign(fields, v.url.encode(v.url.decode(state)));
  const obj: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(fields)) {
    if (val === null || val === false || val === undefined) continue;
    obj[k] = val;
  }
  const params = new URLSearchParams();
  params.set("v", String(URL_STATE_VERSION));
  params.set("s", await compress(JSON.stringify(obj)));
  if (state.embed) params.set("embed", "1");
  return `#${params.toString()}`;
}
