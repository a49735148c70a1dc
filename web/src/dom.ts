// Tiny DOM helpers. Text always goes in through textContent, never as HTML.

type Attrs = Record<string, string | number | boolean | undefined>;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === "text") node.textContent = String(v);
    else if (k === "className") node.className = String(v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) node.append(typeof c === "string" ? document.createTextNode(c) : c);
  return node;
}

export function byId<T extends HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`page is missing #${id}`);
  return node as T;
}

/** True when keyboard input belongs to a control (text field, select, slider, editor). */
export function isEditableTarget(target: EventTarget | null): boolean {
  if (!target || typeof (target as { tagName?: unknown }).tagName !== "string") return false;
  const t = target as HTMLElement;
  const tag = t.tagName.toLowerCase();
  if (tag === "textarea" || tag === "select") return true;
  if (tag === "input") {
    const type = ((t as HTMLInputElement).type || "text").toLowerCase();
    return !["button", "submit", "reset", "checkbox", "radio", "file", "color"].includes(type);
  }
  return t.isContentEditable === true;
}

const INT_FORMAT = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** Formats a number with thousands separators (cycle counts). */
export function formatInt(n: number): string {
  // One formatter for every call: `toLocaleString` builds one each time, which is slow when
  // a full model's views format tens of thousands of figures.
  return INT_FORMAT.format(Math.round(n));
}

/** Compact scientific-ish format for errors and tolerances. */
export function formatSci(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (n === 0) return "0";
  const a = Math.abs(n);
  if (a >= 1e-3 && a < 1e4) return Number(n.toPrecision(3)).toString();
  return n.toExponential(2);
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** Creates an SVG element with string attributes and optional text (the SVG views' `el`). */
export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const n = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = text;
  return n;
}
