// The address of the page a <spyre-playground> element embeds (no DOM: unit-tested).

export const ATTRS = ["example", "view", "pass", "t", "src", "height"] as const;

export type EmbedAttrs = Partial<Record<(typeof ATTRS)[number], string | null>>;

/** Schemes an embedded page may be loaded from: the web's, never `javascript:` or `data:`. */
const ALLOWED_SCHEMES = new Set(["http:", "https:"]);

/**
 * The iframe address for a set of attributes. Throws when `src` (or the page's own base)
 * resolves to a scheme other than http(s), so markup cannot smuggle a script into the frame.
 */
export function embedUrl(base: string, attrs: EmbedAttrs): string {
  const params = new URLSearchParams();
  params.set("v", "1");
  for (const k of ["example", "view", "pass", "t"] as const) {
    const v = attrs[k];
    if (v) params.set(k, v);
  }
  params.set("embed", "1");
  const url = new URL(attrs.src || "./index.html", base);
  if (!ALLOWED_SCHEMES.has(url.protocol)) {
    throw new Error(`src must be an http(s) or relative address, not ${url.protocol}`);
  }
  url.hash = params.toString();
  return url.toString();
}
