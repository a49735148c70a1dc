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

import { isView, VIEWS } from "./views/registry";

export const URL_STATE_VERSION = 2;

/** The fields the page itself keeps in the URL. */
export interface PageUrlState {
  example: string | null;
  /** Id of the tab shown. */
  view: string | null;
  /** Simulated time shown, in cycles. */
  t: number | null;
  machine: string | null;
  /** An edited KTIR module (null: the compiled one). */
  ktir: string | null;
  /** A small opened text file (large files are not kept in the URL). */
  file: { name: string; text: string } | null;
  /** Selected KTIR line. */
  line: number | null;
  /** Selected core. */
  core: number | null;
  /** Shown inside another page (<spyre-playground>): one view, no chrome. */
  embed: boolean;
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

function bytesToBase64Url(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function base64UrlToBytes(s: string): Uint8Array {
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

export async function compress(text: string): Promise<string> {
  const deflated = await pipe(new TextEncoder().encode(text), new CompressionStream("deflate-raw"));
  return bytesToBase64Url(deflated);
}

export async function decompress(s: string): Promise<string> {
  const inflated = await pipe(base64UrlToBytes(s), new DecompressionStream("deflate-raw"));
  return new TextDecoder().decode(inflated);
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
  const f = o.file as { name?: unknown; text?: unknown } | null | undefined;
  const page: PageUrlState = {
    example: str(o.example),
    view: isView(o.view) ? o.view : null,
    t: num(o.t),
    machine: str(o.machine),
    ktir: typeof o.ktir === "string" ? o.ktir : null,
    file:
      f && typeof f === "object" && typeof f.name === "string" && typeof f.text === "string"
        ? { name: f.name, text: f.text }
        : null,
    line: num(o.line),
    core: num(o.core),
    embed: o.embed === true || o.embed === "1",
  };
  return Object.assign({}, page, ...VIEWS.map((v) => v.url?.decode(o) ?? {})) as UrlState;
}

export async function parseUrlState(hash: string): Promise<UrlState> {
  const params = new URLSearchParams(hash.startsWith("#") ? hash.slice(1) : hash);
  const v = Number(params.get("v") ?? "1");
  const plain: Record<string, unknown> = {};
  for (const [k, val] of params) plain[k] = val;
  let state: UrlState;
  if (v === 1) {
    state = sanitize(plain);
    // v1 only had example and pass; the plain extras are read below.
  } else if (v === 2) {
    const s = params.get("s");
    let obj: Record<string, unknown> = {};
    if (s) {
      try {
        const parsed: unknown = JSON.parse(await decompress(s));
        if (parsed && typeof parsed === "object") obj = parsed as Record<string, unknown>;
      } catch {
        obj = {};
      }
    }
    state = sanitize({ ...plain, ...obj });
  } else {
    return { ...EMPTY_STATE };
  }
  if (params.get("embed") === "1") state.embed = true;
  const view = params.get("view");
  if (isView(view)) state.view = view;
  const t = num(params.get("t"));
  if (t !== null) state.t = t;
  return state;
}

export async function formatUrlState(state: UrlState): Promise<string> {
  const fields: Record<string, unknown> = {};
  for (const k of PAGE_FIELDS) if (k !== "embed") fields[k] = state[k];
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
