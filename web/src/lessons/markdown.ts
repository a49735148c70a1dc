// Lessons' Markdown as a small tree of blocks and inline nodes (no DOM: unit-tested).
//
// CommonMark is parsed by micromark (through mdast-util-from-markdown) into a syntax tree,
// which is mapped here onto the few constructs lessons use (headings, paragraphs, lists,
// quotes, fenced blocks, code spans, emphasis, links). No text is ever inserted as HTML:
// `render.ts` turns this tree into DOM nodes with text nodes only, and raw HTML in a lesson
// (an html node of the syntax tree) is kept as text, so it shows and cannot run.

import { fromMarkdown } from "mdast-util-from-markdown";

/** The syntax tree's node types, as the parser declares them. */
type RootContent = ReturnType<typeof fromMarkdown>["children"][number];
type PhrasingContent = Extract<RootContent, { type: "paragraph" }>["children"][number];

/** Inline content. */
export type Inline =
  | { kind: "text"; text: string }
  | { kind: "code"; text: string }
  | { kind: "strong"; children: Inline[] }
  | { kind: "em"; children: Inline[] }
  | { kind: "link"; href: string; children: Inline[] };

/** Block content, in document order. */
export type Block =
  | { kind: "heading"; level: number; children: Inline[] }
  | { kind: "para"; children: Inline[] }
  | { kind: "list"; ordered: boolean; items: Inline[][] }
  | { kind: "quote"; children: Inline[] }
  /** A fenced block; `line` is the 1-based line of its first content line. */
  | { kind: "code"; info: string; text: string; line: number };

/** `list` with adjacent text nodes joined, and soft line breaks read as spaces. */
function joinText(list: readonly Inline[]): Inline[] {
  const out: Inline[] = [];
  for (const n of list) {
    const last = out[out.length - 1];
    if (n.kind !== "text") out.push(n);
    else if (n.text === "") continue;
    else if (last?.kind === "text") last.text += n.text.replace(/\n/g, " ");
    else out.push({ kind: "text", text: n.text.replace(/\n/g, " ") });
  }
  return out;
}

/** Inline content of mdast nodes; raw HTML, images and breaks become text. */
function inlineOf(nodes: readonly PhrasingContent[]): Inline[] {
  return joinText(
    nodes.flatMap((n): Inline[] => {
      switch (n.type) {
        case "text":
        case "html":
          return [{ kind: "text", text: n.value }];
        case "inlineCode":
          // A code span's line endings read as spaces (CommonMark).
          return [{ kind: "code", text: n.value.replace(/\n/g, " ") }];
        case "strong":
          return [{ kind: "strong", children: inlineOf(n.children) }];
        case "emphasis":
          return [{ kind: "em", children: inlineOf(n.children) }];
        case "link":
          return [{ kind: "link", href: n.url, children: inlineOf(n.children) }];
        case "linkReference":
        case "delete":
          return inlineOf(n.children);
        case "image":
        case "imageReference":
          return [{ kind: "text", text: n.alt ?? "" }];
        case "break":
          return [{ kind: "text", text: " " }];
        default:
          return [];
      }
    }),
  );
}

/** The inline content of block nodes (a list item's or a quote's paragraphs), run together. */
function flatInline(nodes: readonly RootContent[]): Inline[] {
  const out: Inline[] = [];
  for (const n of nodes) {
    const part: Inline[] =
      n.type === "paragraph" || n.type === "heading"
        ? inlineOf(n.children)
        : n.type === "html" || n.type === "code"
          ? [{ kind: "text", text: n.value }]
          : n.type === "list"
            ? n.children.flatMap((item) => flatInline(item.children))
            : n.type === "blockquote"
              ? flatInline(n.children)
              : [];
    if (part.length === 0) continue;
    if (out.length > 0) out.push({ kind: "text", text: " " });
    out.push(...part);
  }
  return joinText(out);
}

/** Parses Markdown (CommonMark) into blocks. Never throws: what lessons do not use is left out. */
export function parseMarkdown(text: string): Block[] {
  const source = text.replace(/\r\n?/g, "\n");
  const lines = source.split("\n");
  const out: Block[] = [];
  for (const n of fromMarkdown(source).children) {
    switch (n.type) {
      case "heading":
        out.push({ kind: "heading", level: n.depth, children: inlineOf(n.children) });
        break;
      case "paragraph":
        out.push({ kind: "para", children: inlineOf(n.children) });
        break;
      case "html":
        // Raw HTML stays text.
        out.push({ kind: "para", children: [{ kind: "text", text: n.value }] });
        break;
      case "list":
        out.push({
          kind: "list",
          ordered: n.ordered === true,
          items: n.children.map((item) => flatInline(item.children)),
        });
        break;
      case "blockquote":
        out.push({ kind: "quote", children: flatInline(n.children) });
        break;
      case "code": {
        const at = n.position?.start.line ?? 1;
        // A fenced block's content starts on the line after its fence.
        const fenced = /^\s{0,3}(`{3,}|~{3,})/.test(lines[at - 1] ?? "");
        out.push({ kind: "code", info: n.lang ?? "", text: n.value, line: fenced ? at + 1 : at });
        break;
      }
      default:
        break;
    }
  }
  return out;
}

/** Parses inline Markdown (one paragraph's worth): code spans, links, strong and emphasis. */
export function parseInline(text: string): Inline[] {
  const first = fromMarkdown(text).children[0];
  return first?.type === "paragraph" ? inlineOf(first.children) : plainParagraph(text);
}

function plainParagraph(text: string): Inline[] {
  return text === "" ? [] : [{ kind: "text", text }];
}

/** The plain text of inline content (for titles and summaries). */
export function plainText(nodes: readonly Inline[]): string {
  return nodes.map((n) => ("text" in n ? n.text : plainText(n.children))).join("");
}

/**
 * Whether a link target may be followed: relative addresses and http(s) only, never
 * `javascript:` or `data:`.
 */
export function safeHref(href: string): boolean {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(href)?.[1]?.toLowerCase();
  return scheme === undefined || scheme === "http" || scheme === "https";
}
