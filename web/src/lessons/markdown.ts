// The Markdown subset lessons are written in, parsed to a small tree (no DOM: unit-tested).
//
// Why not a Markdown library: the lessons are our own files and use a handful of constructs
// (headings, paragraphs, lists, fenced blocks, code spans, emphasis, links), the page's rule is
// that no text is ever inserted as HTML, and every general renderer emits an HTML string that
// would then need a sanitiser. This parser emits a tree that `render.ts` turns into DOM nodes
// with textContent only, so raw HTML in a lesson shows as text and cannot run.

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

const FENCE = /^(`{3,}|~{3,})\s*([\w-]*)\s*$/;
const HEADING = /^(#{1,4})\s+(.*?)\s*#*\s*$/;
const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
const NUMBERED = /^\s{0,3}\d{1,3}[.)]\s+(.*)$/;

/** Parses Markdown text into blocks. Never throws: anything unrecognised is paragraph text. */
export function parseMarkdown(text: string): Block[] {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const out: Block[] = [];
  let para: string[] = [];
  let list: { ordered: boolean; items: string[] } | null = null;
  let quote: string[] = [];
  const flush = (): void => {
    if (para.length > 0) out.push({ kind: "para", children: parseInline(para.join(" ")) });
    para = [];
    if (list) {
      out.push({ kind: "list", ordered: list.ordered, items: list.items.map(parseInline) });
    }
    list = null;
    if (quote.length > 0) out.push({ kind: "quote", children: parseInline(quote.join(" ")) });
    quote = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = FENCE.exec(line);
    if (fence) {
      flush();
      const close = fence[1]!;
      const body: string[] = [];
      const start = i + 1;
      for (i++; i < lines.length; i++) {
        const l = lines[i]!;
        if (
          l.trim().startsWith(close[0]!.repeat(close.length)) &&
          l.trim().length >= close.length
        ) {
          break;
        }
        body.push(l);
      }
      out.push({ kind: "code", info: fence[2] ?? "", text: body.join("\n"), line: start + 1 });
      continue;
    }
    if (line.trim() === "") {
      flush();
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flush();
      out.push({
        kind: "heading",
        level: heading[1]!.length,
        children: parseInline(heading[2] ?? ""),
      });
      continue;
    }
    const bullet = BULLET.exec(line);
    const numbered = bullet ? null : NUMBERED.exec(line);
    if (bullet || numbered) {
      const ordered = numbered !== null;
      if (para.length > 0 || quote.length > 0 || (list && list.ordered !== ordered)) flush();
      list ??= { ordered, items: [] };
      list.items.push((bullet ?? numbered)![1]!);
      continue;
    }
    if (line.startsWith(">")) {
      if (para.length > 0 || list) flush();
      quote.push(line.replace(/^>\s?/, ""));
      continue;
    }
    if (list && /^\s+\S/.test(line)) {
      // A continuation line of the last item.
      const items = list.items;
      items[items.length - 1] += ` ${line.trim()}`;
      continue;
    }
    if (list || quote.length > 0) flush();
    para.push(line.trim());
  }
  flush();
  return out;
}

/** Parses inline Markdown: code spans, links, strong and emphasis; the rest is text. */
export function parseInline(text: string): Inline[] {
  const out: Inline[] = [];
  let buf = "";
  const push = (node: Inline): void => {
    if (buf) out.push({ kind: "text", text: buf });
    buf = "";
    out.push(node);
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === "\\" && i + 1 < text.length && /[\\`*_[\]()#>-]/.test(text[i + 1]!)) {
      buf += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "`") {
      const end = text.indexOf("`", i + 1);
      if (end > i) {
        push({ kind: "code", text: text.slice(i + 1, end) });
        i = end + 1;
        continue;
      }
    }
    if (c === "[") {
      const m = /^\[([^\]]+)\]\(([^)\s]+)\)/.exec(text.slice(i));
      if (m) {
        push({ kind: "link", href: m[2]!, children: parseInline(m[1]!) });
        i += m[0].length;
        continue;
      }
    }
    if ((c === "*" || c === "_") && text[i + 1] === c) {
      const end = text.indexOf(c + c, i + 2);
      if (end > i + 2) {
        push({ kind: "strong", children: parseInline(text.slice(i + 2, end)) });
        i = end + 2;
        continue;
      }
    }
    if (c === "*" || (c === "_" && (i === 0 || /\W/.test(text[i - 1]!)))) {
      const end = text.indexOf(c, i + 1);
      if (end > i + 1 && text[i + 1] !== " ") {
        push({ kind: "em", children: parseInline(text.slice(i + 1, end)) });
        i = end + 1;
        continue;
      }
    }
    buf += c;
    i++;
  }
  if (buf) out.push({ kind: "text", text: buf });
  return out;
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
