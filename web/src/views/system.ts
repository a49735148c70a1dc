// The System tab: the cards of a tensor-parallel run, each card's ring of cores drawn small,
// the card-to-card links and the host links with their bandwidth and latency (public or
// assumed, as the system file labels them), and the bytes the run moved on each link.

import type { SystemLinkView, SystemView, TpRun } from "../api";
import { el, formatInt, svg } from "../dom";
import type { Change, PageState, View } from "./view";

const W = 800;
const H = 520;
const CARD = 96;

/** Bytes as text: "1.0 MB", "512 B". */
export function formatBytes(b: number): string {
  if (b >= 1e9) return `${(b / 1e9).toFixed(1)} GB`;
  if (b >= 1e6) return `${(b / 1e6).toFixed(1)} MB`;
  if (b >= 1e3) return `${(b / 1e3).toFixed(1)} kB`;
  return `${formatInt(b)} B`;
}

/** A link's figures as one line: "48 B/cycle (assumed), 1,500 cycles (assumed)". */
export function linkFigures(l: SystemLinkView): string {
  return `${l.bytesPerCycle} B/cycle (${l.bandwidthStatus}), ${formatInt(l.latencyCycles)} cycles latency (${l.latencyStatus})`;
}

/** Where each card, the switch and the host sit in the drawing. */
export function systemLayout(s: SystemView): {
  cards: { x: number; y: number }[];
  switch: { x: number; y: number } | null;
  host: { x: number; y: number };
} {
  const n = s.cards.length;
  if (s.topology === "ring") {
    const r = 170;
    return {
      cards: s.cards.map((_, i) => {
        const a = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(1, n);
        return { x: W / 2 + r * Math.cos(a), y: H / 2 + r * Math.sin(a) };
      }),
      switch: null,
      host: { x: W / 2, y: H / 2 },
    };
  }
  const step = (W - 40) / Math.max(1, n);
  return {
    cards: s.cards.map((_, i) => ({ x: 20 + step * (i + 0.5), y: 270 })),
    switch: { x: W / 2, y: 70 },
    host: { x: W / 2, y: 470 },
  };
}

/** The drawing: cards with their core rings, links and their traffic. */
function drawing(s: SystemView): SVGSVGElement {
  const root = svg("svg", {
    viewBox: `0 0 ${W} ${H}`,
    class: "sys-drawing",
    role: "img",
    "aria-label": `System: ${s.cards.length} cards, ${s.topology === "ring" ? "a ring of card links" : "a PCIe switch"}, and the host links`,
  });
  const at = systemLayout(s);
  const index = new Map(s.cards.map((c, i) => [c.name, i]));
  const place = (name: string): { x: number; y: number } | null => {
    if (name === "switch") return at.switch;
    if (name === "host") return at.host;
    const i = index.get(name);
    return i === undefined ? null : (at.cards[i] ?? null);
  };
  const links = svg("g", { class: "sys-links" });
  const line = (l: SystemLinkView, kind: "card" | "host"): void => {
    const a = place(l.from);
    const b = place(l.to);
    if (!a || !b) return;
    const moved = l.bytesForward + l.bytesBack;
    const g = svg("g", {
      class: `sys-link ${kind}${moved > 0 ? " busy" : ""}`,
      "data-link": `${l.from}-${l.to}`,
      "data-bytes": moved,
    });
    g.append(
      svg(
        "title",
        {},
        `${l.from} ↔ ${l.to}: ${linkFigures(l)}; moved ${formatBytes(l.bytesForward)} → and ${formatBytes(l.bytesBack)} ←`,
      ),
      svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y }),
    );
    if (moved > 0) {
      // Partway along, so labels of links into the same switch or host do not overlap.
      const f = kind === "host" ? 0.7 : 0.6;
      const x = a.x + (b.x - a.x) * f;
      const y = a.y + (b.y - a.y) * f;
      g.append(
        svg("text", { x, y, class: "sys-bytes", "text-anchor": "middle" }, formatBytes(moved)),
      );
    }
    links.append(g);
  };
  for (const l of s.hostLinks) line(l, "host");
  for (const l of s.cardLinks) line(l, "card");
  root.append(links);
  const hub = (p: { x: number; y: number }, label: string, cls: string): void => {
    root.append(
      svg("rect", { x: p.x - 60, y: p.y - 16, width: 120, height: 32, rx: 6, class: cls }),
      svg("text", { x: p.x, y: p.y + 5, "text-anchor": "middle", class: "sys-label" }, label),
    );
  };
  if (at.switch) hub(at.switch, "PCIe switch", "sys-switch");
  hub(at.host, "host", "sys-host");
  s.cards.forEach((c, i) => {
    const p = at.cards[i];
    if (!p) return;
    const size = Math.min(CARD, ((W - 40) / s.cards.length) * 0.8);
    const g = svg("g", {
      class: `sys-card${c.used ? " used" : ""}`,
      "data-card": c.name,
    });
    g.append(
      svg(
        "title",
        {},
        `${c.name}: ${c.machine}, ${c.cores} cores${c.used ? "" : " (not used by this run)"}`,
      ),
      svg("rect", { x: p.x - size / 2, y: p.y - size / 2, width: size, height: size, rx: 8 }),
    );
    // The card's ring of cores, drawn small.
    const r = size * 0.3;
    g.append(svg("circle", { cx: p.x, cy: p.y - 4, r, class: "sys-ring" }));
    for (let k = 0; k < c.cores; k++) {
      const a = -Math.PI / 2 + (2 * Math.PI * k) / c.cores;
      g.append(
        svg("circle", {
          cx: p.x + r * Math.cos(a),
          cy: p.y - 4 + r * Math.sin(a),
          r: Math.max(1, Math.min(3, (Math.PI * r) / c.cores / 1.5)),
          class: "sys-core",
        }),
      );
    }
    g.append(
      svg(
        "text",
        { x: p.x, y: p.y + size / 2 - 6, "text-anchor": "middle", class: "sys-label small" },
        c.name,
      ),
    );
    root.append(g);
  });
  return root;
}

/** Every link as a table row: figures with their status, and the bytes moved each way. */
function linkTable(s: SystemView, clockGhz: number): HTMLTableElement {
  const us = (cycles: number) =>
    clockGhz > 0 ? ` (${(cycles / clockGhz / 1e3).toPrecision(2)} µs)` : "";
  const row = (l: SystemLinkView, kind: string) =>
    el(
      "tr",
      { "data-link": `${l.from}-${l.to}` },
      el("td", { text: `${l.from} ↔ ${l.to}` }),
      el("td", { text: kind }),
      el(
        "td",
        {},
        `${l.bytesPerCycle} B/cycle `,
        el("span", { className: `status ${l.bandwidthStatus}`, text: l.bandwidthStatus }),
      ),
      el(
        "td",
        {},
        `${formatInt(l.latencyCycles)} cycles${us(l.latencyCycles)} `,
        el("span", { className: `status ${l.latencyStatus}`, text: l.latencyStatus }),
      ),
      el("td", { className: "num", text: formatBytes(l.bytesForward) }),
      el("td", { className: "num", text: formatBytes(l.bytesBack) }),
    );
  return el(
    "table",
    { className: "sys-table", "data-testid": "system-links" },
    el(
      "tr",
      {},
      ...["link", "kind", "bandwidth per direction", "latency", "moved →", "moved ←"].map((h) =>
        el("th", { text: h }),
      ),
    ),
    ...s.cardLinks.map((l) => row(l, "card link")),
    ...s.hostLinks.map((l) => row(l, "host link (PCIe)")),
  );
}

/** The System tab. */
export class SystemTab implements View {
  readonly id = "system";
  readonly title = "System";
  readonly key = "9";
  private root: HTMLElement | null = null;

  mount(container: HTMLElement): void {
    this.root = container;
    container.classList.add("sys-view");
    this.empty();
  }

  private empty(): void {
    this.root?.replaceChildren(
      el("p", {
        className: "muted sys-empty",
        text: "One card. Pick a tensor-parallel degree in Options (model graphs) to run over several cards and see them here.",
      }),
    );
  }

  update(s: PageState, changed: ReadonlySet<Change>): void {
    if (!this.root || !changed.has("run")) return;
    const tp: TpRun | null | undefined = s.loaded?.res.result.tp;
    if (!s.loaded || !tp) {
      this.empty();
      return;
    }
    const sys = tp.systemView;
    const moved = sys.cardLinks.reduce((a, l) => a + l.bytesForward + l.bytesBack, 0);
    this.root.replaceChildren(
      el(
        "p",
        { className: "sys-heading", "data-testid": "system-heading" },
        `System ${tp.system}: ${sys.cards.length} card(s) on ${sys.topology === "ring" ? "a ring of direct links" : "a PCIe switch"}, TP ${tp.degree} uses ${sys.cards.filter((c) => c.used).length}; ${tp.kv}. Card links moved ${formatBytes(moved)} in the run.`,
      ),
      el(
        "div",
        { className: "legend", "aria-label": "System legend" },
        el(
          "span",
          { className: "legend-item" },
          el("span", { className: "swatch sys-used" }),
          "card in the run",
        ),
        el(
          "span",
          { className: "legend-item" },
          el("span", { className: "swatch sys-idle" }),
          "card not used",
        ),
        el(
          "span",
          { className: "legend-item" },
          el("span", { className: "swatch sys-card-link" }),
          "card link (bytes moved)",
        ),
        el(
          "span",
          { className: "legend-item" },
          el("span", { className: "swatch sys-host-link" }),
          "host link, PCIe Gen5 x16",
        ),
      ),
      el("div", { className: "sys-stage", "data-testid": "system-drawing" }, drawing(sys)),
      linkTable(sys, s.loaded.res.result.run.machine.clockGhz),
      el(
        "ul",
        { className: "muted sys-assumed" },
        ...tp.assumptions.map((a) => el("li", { text: `assumed: ${a}` })),
      ),
    );
  }
}
