// The address of the page a <spyre-playground> element embeds (no DOM: unit-tested).

export const ATTRS = ["example", "view", "pass", "t", "src", "height"] as const;

export type EmbedAttrs = Partial<Record<(typeof ATTRS)[number], string | null>>;

/** The iframe address for a set of attributes. */
export function embedUrl(base: string, attrs: EmbedAttrs): string {
  const params = new URLSearchParams();
  params.set("v", "1");
  for (const k of ["example", "view", "pass", "t"] as const) {
    const v = attrs[k];
    if (v) params.set(k, v);
  }
  params.set("embed", "1");
  const url = new URL(attrs.src || "./index.html", base);
  url.hash = params.toString();
  return url.toString();
}
