// The address of the page a <spyre-playground> element embeds (no DOM: unit-tested).

export const ATTRS = [
  "example",
  "view",
  "pass",
  "t",
  "machine",
  "allocator",
  "attention-block",
  "double-buffer",
  "lesson",
  "src",
  "height",
] as const;

/** The message type an embedded page posts to its parent after each run. */
export const RUN_MESSAGE = "spyre-playground:run";

/**
 * What an embedded page posts to its parent after each run: the run's quantities
 * (lessons/metrics.ts, by name) and the settings it ran with. The element re-dispatches it as
 * a `spyre-run` event whose `detail` is `{ metrics, settings }`.
 */
export interface RunReport {
  type: typeof RUN_MESSAGE;
  metrics: Record<string, number | string | null>;
  settings: {
    example: string | null;
    machine: string;
    allocator: string;
    attentionBlock: number | null;
    doubleBuffer: boolean;
  };
}

/** The message type an embedded page posts to its parent when a run fails. */
export const RUN_FAILED_MESSAGE = "spyre-playground:run-failed";

/** What an embedded page posts when a run fails (a `spyre-run-failed` event on the element). */
export interface RunFailure {
  type: typeof RUN_FAILED_MESSAGE;
  message: string;
}

export type EmbedAttrs = Partial<Record<(typeof ATTRS)[number], string | null>>;

/** Schemes an embedded page may be loaded from: the web's, never `javascript:` or `data:`. */
const ALLOWED_SCHEMES = new Set(["http:", "https:"]);

/** A lesson id as the lessons page takes it (the file name without `.md`). */
const LESSON_ID = /^[A-Za-z0-9_-]{1,80}$/;

/**
 * The iframe address for a set of attributes. Throws when `src` (or the page's own base)
 * resolves to a scheme other than http(s), so markup cannot smuggle a script into the frame.
 * With `lesson`, the frame shows that lesson from the lessons page beside the playground.
 */
export function embedUrl(base: string, attrs: EmbedAttrs): string {
  const params = new URLSearchParams();
  const lesson = attrs.lesson;
  if (lesson) {
    if (!LESSON_ID.test(lesson)) throw new Error(`lesson must be a lesson id, not "${lesson}"`);
    params.set("lesson", lesson);
  } else {
    params.set("v", "1");
    for (const k of ["example", "view", "pass", "t", "machine", "allocator"] as const) {
      const v = attrs[k];
      if (v) params.set(k, v);
    }
    // The run settings go by their URL-state names (runSettings.ts).
    if (attrs["attention-block"]) params.set("attentionBlock", attrs["attention-block"]);
    if (attrs["double-buffer"] === "off") params.set("noDoubleBuffer", "1");
  }
  params.set("embed", "1");
  const page = lesson ? "./lessons.html" : "./index.html";
  const src = attrs.src ? new URL(attrs.src, base) : null;
  // A lesson is framed from the lessons page beside the playground page `src` names.
  const url = src ? (lesson ? new URL(page, src) : src) : new URL(page, base);
  if (!ALLOWED_SCHEMES.has(url.protocol)) {
    throw new Error(`src must be an http(s) or relative address, not ${url.protocol}`);
  }
  url.hash = params.toString();
  return url.toString();
}
