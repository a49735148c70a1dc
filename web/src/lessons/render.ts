// Markdown trees (markdown.ts) as DOM nodes. Text only ever goes in through text nodes, and a
// link whose address is not relative or http(s) is shown as plain text.

import { el } from "../dom";
import { safeHref, type Block, type Inline } from "./markdown";

/** Inline nodes as DOM nodes. */
export function renderInline(nodes: readonly Inline[]): Node[] {
  return nodes.map((n): Node => {
    switch (n.kind) {
      case "text":
        return document.createTextNode(n.text);
      case "code":
        return el("code", { text: n.text });
      case "strong":
        return el("strong", {}, ...renderInline(n.children));
      case "em":
        return el("em", {}, ...renderInline(n.children));
      case "link":
        return safeHref(n.href)
          ? el("a", { href: n.href }, ...renderInline(n.children))
          : el("span", {}, ...renderInline(n.children));
    }
  });
}

/**
 * A block as DOM. `special` renders the fenced blocks the page understands (it returns null
 * for the others, which show as code).
 */
export function renderBlock(b: Block, special: (b: Block) => HTMLElement | null): HTMLElement {
  switch (b.kind) {
    case "heading": {
      // The lesson's title is the page's h1; its sections start at h2.
      const tag = (["h1", "h2", "h3", "h4"] as const)[Math.min(3, b.level - 1)]!;
      return el(tag, {}, ...renderInline(b.children));
    }
    case "para":
      return el("p", {}, ...renderInline(b.children));
    case "quote":
      return el("blockquote", {}, ...renderInline(b.children));
    case "list":
      return el(
        b.ordered ? "ol" : "ul",
        {},
        ...b.items.map((item) => el("li", {}, ...renderInline(item))),
      );
    case "code":
      return special(b) ?? el("pre", {}, el("code", { text: b.text }));
  }
}
