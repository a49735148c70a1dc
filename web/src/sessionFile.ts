// A session file: the page's state (as in a link) with the opened file whatever its size, for
// sessions too large for a link. Share offers it for download; opening or dropping it on the
// page restores the session. It is JSON, so it opens through the page's ordinary file input.

import { EMPTY_STATE, sanitize, UrlStateError, type UrlState } from "./urlState";

/** The `format` field that marks a JSON file as a session file (not a model graph). */
export const SESSION_FORMAT = "spyre-playground-session";
export const SESSION_VERSION = 1;

/** The session file's text for a state (the embed flag is not kept). */
export function formatSessionFile(state: UrlState): string {
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(state)) {
    if (v === null || v === false || v === undefined || k === "embed") continue;
    fields[k] = v;
  }
  return JSON.stringify({ format: SESSION_FORMAT, version: SESSION_VERSION, state: fields });
}

/** A download name for a session about `name` ("model.onnx" -> "model.spyre-session.json"). */
export function sessionFileName(name: string): string {
  const stem = name.replace(/\.[^.]*$/, "") || "session";
  return `${stem}.spyre-session.json`;
}

/**
 * The state in a session file; null when `bytes` is not one (so it is opened as a model or a
 * KTIR module). Throws [UrlStateError] for a session file that cannot be read.
 */
export function readSessionFile(bytes: Uint8Array): UrlState | null {
  // A cheap look before parsing: graphs can be large JSON files.
  const head = new TextDecoder().decode(bytes.subarray(0, 256));
  if (!head.trimStart().startsWith("{") || !head.includes(SESSION_FORMAT)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return null;
  const o = parsed as Record<string, unknown>;
  if (o.format !== SESSION_FORMAT) return null;
  if (o.version !== SESSION_VERSION) {
    throw new UrlStateError(
      `session file version ${JSON.stringify(o.version)} is not one this page reads (${SESSION_VERSION})`,
    );
  }
  const state = o.state;
  if (!state || typeof state !== "object" || Array.isArray(state)) {
    throw new UrlStateError("the session file holds no state object");
  }
  return { ...EMPTY_STATE, ...sanitize(state as Record<string, unknown>), embed: false };
}
