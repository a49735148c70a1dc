// The Serving tab: a program with paged attention, as a serving stack sees one step of it.
// The batch (each sequence's length as a bar, with what the public alignment would pad it
// to), its block tables (each sequence's pages as a row of cells), which cores read each
// KV-cache page (from the compiled plan the driver reports, not recomputed here) and what
// the padding rules would cost against alignment 1.

import type { PaddingCost, PagedPlan } from "../api";
import { el, formatInt, svg } from "../dom";
import type { Change, PageState, View } from "./view";

/** Cycles the padding would add without the decode exception: cycles scale with the work. */
export function wastedWithoutDecode(c: PaddingCost): number {
  const w = c.wastePercentWithoutDecodeAlignment / 100;
  return w >= 1 ? Infinity : c.cycles * (1 / (1 - w) - 1);
}

/** "1.2%" with one decimal. */
function pct(n: number): string {
  return `${n.toFixed(1)}%`;
}

/** Per core, the cache pages it reads and the pages it attends over (sorted, distinct). */
export function pagesByCore(plan: PagedPlan): { reads: number[][]; uses: number[][] } {
  const reads: Set<number>[] = Array.from({ length: plan.cores }, () => new Set());
  const uses: Set<number>[] = Array.from({ length: plan.cores }, () => new Set());
  for (const seq of plan.sequences)
    for (const p of seq) {
      for (const c of p.readers) reads[c]?.add(p.page);
      for (const c of p.users) uses[c]?.add(p.page);
    }
  const sorted = (s: Set<number>): number[] => [...s].sort((a, b) => a - b);
  return { reads: reads.map(sorted), uses: uses.map(sorted) };
}

const BAR_W = 600;
const BAR_H = 16;
const LABEL_W = 150;

/**
 * The batch: a bar per sequence, its length against the longest padded length, its new
 * tokens (one for decode, a chunk for prefill; in a mixed batch both) as the bar's end.
 */
function batch(cost: PaddingCost | undefined, plan: PagedPlan): SVGSVGElement {
  const lens = plan.sequences.map((s) => s.reduce((a, p) => a + p.tokens, 0));
  const padded = plan.sequences.map((_, i) => cost?.sequences[i]?.paddedKv ?? lens[i] ?? 0);
  const longest = Math.max(1, ...lens, ...padded);
  const h = lens.length * (BAR_H + 6) + 4;
  const root = svg("svg", {
    viewBox: `0 0 ${LABEL_W + BAR_W + 10} ${h}`,
    class: "srv-batch",
    role: "img",
    "aria-label": `The batch: ${lens.length} sequences of ${lens.join(", ")} tokens`,
  });
  lens.forEach((len, i) => {
    const y = 2 + i * (BAR_H + 6);
    const seq = cost?.sequences[i];
    const g = svg("g", { class: "srv-seq", "data-seq": i, "data-tokens": len });
    const scale = BAR_W / longest;
    const pad = padded[i] ?? len;
    g.append(
      svg(
        "title",
        {},
        `sequence ${i}: ${formatInt(len)} tokens (${seq?.qLen ?? 1} new); padded to ${formatInt(pad)} at the rules shown`,
      ),
      svg(
        "text",
        { x: LABEL_W - 6, y: y + BAR_H - 4, "text-anchor": "end", class: "srv-label" },
        `seq ${i} · ${formatInt(len)}${(seq?.qLen ?? 1) > 1 ? ` (+${formatInt(seq?.qLen ?? 1)})` : ""}`,
      ),
    );
    if (pad > len)
      g.append(
        svg("rect", {
          x: LABEL_W,
          y,
          width: pad * scale,
          height: BAR_H,
          class: "srv-pad",
        }),
      );
    g.append(svg("rect", { x: LABEL_W, y, width: len * scale, height: BAR_H, class: "srv-len" }));
    const fresh = Math.min(len, seq?.qLen ?? 1);
    g.append(
      svg("rect", {
        x: LABEL_W + (len - fresh) * scale,
        y,
        // At least a hairline, so a decode step's one new token shows.
        width: Math.max(2, fresh * scale),
        height: BAR_H,
        class: "srv-new",
      }),
    );
    root.append(g);
  });
  return root;
}

/** The block tables: each sequence's pages as cells, filled by the tokens they hold. */
function blockTables(plan: PagedPlan): HTMLElement {
  const rows = plan.sequences.map((seq, i) =>
    el(
      "div",
      { className: "srv-table-row", "data-seq": i },
      el("span", { className: "srv-table-label", text: `seq ${i}` }),
      el(
        "span",
        { className: "srv-pages" },
        ...seq.map((p) => {
          const cell = el("span", {
            className: "srv-page",
            "data-page": p.page,
            title: `page ${p.page}: ${p.tokens} of ${plan.blockSize} slots; read by core ${p.readers.join(", ")}; attended on core ${p.users.join(", ")}`,
            text: String(p.page),
          });
          cell.style.setProperty("--fill", String(p.tokens / Math.max(1, plan.blockSize)));
          return cell;
        }),
      ),
    ),
  );
  return el(
    "div",
    {
      className: "srv-tables",
      "data-testid": "serving-block-tables",
      role: "table",
      "aria-label": "Block tables: each sequence's cache pages in order",
    },
    ...rows,
  );
}

const CELL = 10;

/** Cores against cache pages: which core reads (and attends over) which page. */
function coreGrid(plan: PagedPlan): SVGSVGElement {
  const { reads, uses } = pagesByCore(plan);
  const left = 56;
  const top = 14;
  const w = left + plan.cachePages * CELL + 4;
  const h = top + plan.cores * CELL + 4;
  const root = svg("svg", {
    viewBox: `0 0 ${w} ${h}`,
    class: "srv-grid",
    role: "img",
    "aria-label": `Which cores read which of the ${plan.cachePages} cache pages`,
  });
  for (let p = 0; p < plan.cachePages; p += 8)
    root.append(svg("text", { x: left + p * CELL, y: 10, class: "srv-axis" }, `p${p}`));
  for (let c = 0; c < plan.cores; c++) {
    const y = top + c * CELL;
    const read = new Set(reads[c]);
    const used = new Set(uses[c]);
    const g = svg("g", {
      class: "srv-core",
      "data-core": c,
      "data-reads": read.size,
      "data-uses": used.size,
    });
    g.append(
      svg(
        "title",
        {},
        `core ${c}: reads ${read.size} page(s) out of the cache, attends over ${used.size}`,
      ),
      svg(
        "text",
        { x: left - 4, y: y + CELL - 2, "text-anchor": "end", class: "srv-axis" },
        `core ${c}`,
      ),
      svg("rect", {
        x: left,
        y,
        width: plan.cachePages * CELL,
        height: CELL,
        class: "srv-grid-row",
      }),
    );
    for (let p = 0; p < plan.cachePages; p++) {
      const cls = read.has(p) ? "srv-read" : used.has(p) ? "srv-use" : null;
      if (cls)
        g.append(
          svg("rect", {
            x: left + p * CELL + 1,
            y: y + 1,
            width: CELL - 2,
            height: CELL - 2,
            class: cls,
          }),
        );
    }
    root.append(g);
  }
  return root;
}

/** The padding rules' cost against alignment 1. */
function paddingTable(c: PaddingCost): HTMLTableElement {
  const row = (what: string, waste: string, cycles: string): HTMLTableRowElement =>
    el(
      "tr",
      {},
      el("td", { text: what }),
      el("td", { className: "num", text: waste }),
      el("td", { className: "num", text: cycles }),
    );
  return el(
    "table",
    { className: "srv-padding", "data-testid": "serving-padding" },
    el(
      "tr",
      {},
      ...["alignment", "padding waste", "wasted cycles"].map((h) => el("th", { text: h })),
    ),
    row("1 (ragged, as compiled)", pct(0), "0"),
    row(
      `public: query ${c.queryAlign}, KV ${c.kvAlign}, decode ${c.decodeAlign}${c.decodeOnly ? " (decode-only batch)" : ""}`,
      pct(c.wastePercent),
      formatInt(c.wastedCycles),
    ),
    row(
      `without the decode exception: query ${c.queryAlign}, KV ${c.kvAlign}`,
      pct(c.wastePercentWithoutDecodeAlignment),
      formatInt(wastedWithoutDecode(c)),
    ),
  );
}

/** One PagedAttention node. */
function section(plan: PagedPlan, cost: PaddingCost | undefined): HTMLElement {
  const { reads } = pagesByCore(plan);
  const readers = reads.map((r, c) => [c, r.length] as const).filter(([, n]) => n > 0);
  const pages = plan.sequences.reduce((a, s) => a + s.length, 0);
  const newTokens = cost?.sequences.map((s) => s.qLen) ?? [];
  const step = cost?.decodeOnly
    ? " in one decode step"
    : newTokens.some((q) => q === 1) && newTokens.some((q) => q > 1)
      ? ` in one mixed step (${newTokens.filter((q) => q === 1).length} decoding, ${newTokens.filter((q) => q > 1).length} prefilling; ${formatInt(newTokens.reduce((a, q) => a + q, 0))} new tokens packed)`
      : "";
  return el(
    "section",
    { className: "srv-node", "data-node": plan.node },
    el(
      "p",
      { className: "srv-heading", "data-testid": "serving-heading" },
      `${plan.node}: ${plan.sequences.length} sequences${step}, ${pages} pages of ${plan.blockSize} tokens in a cache of ${plan.cachePages}; ${plan.cores} cores.`,
    ),
    el("h3", {
      text: "Batch (tokens per sequence, the new ones at the end; hatched: padded at the public rules)",
    }),
    el("div", { className: "srv-stage", "data-testid": "serving-batch" }, batch(cost, plan)),
    el("h3", { text: "Block tables (cache pages per sequence; fill: tokens held)" }),
    blockTables(plan),
    el("h3", { text: "Pages each core reads (from the compiled plan)" }),
    el(
      "div",
      { className: "legend", "aria-label": "Page grid legend" },
      el(
        "span",
        { className: "legend-item" },
        el("span", { className: "swatch srv-read" }),
        "reads the page out of the cache",
      ),
      el(
        "span",
        { className: "legend-item" },
        el("span", { className: "swatch srv-use" }),
        "attends over it",
      ),
    ),
    el("div", { className: "srv-stage", "data-testid": "serving-cores" }, coreGrid(plan)),
    el("p", {
      className: "muted srv-note",
      text: `Read out of the cache by ${readers.map(([c, n]) => `core ${c} (${n} pages)`).join(", ") || "no core"}; a block of pages is gathered at once, its pages and their sticks shared out over the cores, and its attention steps split by the work division.`,
    }),
    el("h3", { text: "Padding waste against alignment 1" }),
    cost
      ? paddingTable(cost)
      : el("p", { className: "muted", text: "No padding report for this node." }),
    cost
      ? el("p", {
          className: "muted srv-note",
          text: `Attention took ${formatInt(cost.cycles)} cycles ragged; head ${cost.headDim} → ${cost.paddedHeadDim}, page ${cost.blockSize} → ${cost.paddedBlockSize} under the multiples of ${cost.headMultiple} and ${cost.blockMultiple}. Set the rules in Options.`,
        })
      : el("span"),
  );
}

/** The Serving tab. */
export class ServingTab implements View {
  readonly id = "serving";
  readonly title = "Serving";
  readonly key = "b";
  private root: HTMLElement | null = null;

  mount(container: HTMLElement): void {
    this.root = container;
    container.classList.add("srv-view");
    this.empty();
  }

  private empty(): void {
    this.root?.replaceChildren(
      el("p", {
        className: "muted srv-empty",
        text: "No paged attention in this program. Pick paged_decode in the gallery to see a ragged batch, its block tables and the padding the public rules would add.",
      }),
    );
  }

  update(s: PageState, changed: ReadonlySet<Change>): void {
    if (!this.root || !changed.has("run")) return;
    const run = s.loaded?.res.result.run;
    const plans = run?.paged ?? [];
    if (!run || plans.length === 0) {
      this.empty();
      return;
    }
    this.root.replaceChildren(
      ...plans.map((p) =>
        section(
          p,
          run.padding.find((c) => c.node === p.node),
        ),
      ),
    );
  }
}
