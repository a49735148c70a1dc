// The model graph: boxes laid out in the worker, drawn as SVG; a filter dims what does not
// match; a selected node shows its layout, core split and scratchpad placement, with links to
// its SDSC and KTIR.

import type { PipelineResult } from "../api";
import { byId, el, formatInt } from "../dom";
import type { GraphLayout, LayoutNode } from "../graph/layout";
import {
  divisions,
  layouts,
  nodeOfOp,
  opLabels,
  opsOfNode,
  passData,
  placements,
} from "../session";
import { table } from "./timeline";
import type { Change, PageState, Shortcut, View, ViewContext } from "./view";

const SVG = "http://www.w3.org/2000/svg";
const PAD = 16;

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = text;
  return n;
}

/** The shard classes the graph colours nodes by (a tensor-parallel run), with legend text. */
export const SHARD_CLASSES = [
  ["column", "column-parallel (weights cut by columns)"],
  ["row", "row-parallel (weights cut by rows)"],
  ["part", "sharded (per-card heads)"],
  ["replicated", "replicated (whole on every card)"],
  ["collective", "collective: all-reduce of its output"],
] as const;

/** A node's shard class from the tensor-parallel pass's role text, or null. */
export function shardClass(role: unknown): string | null {
  if (typeof role !== "string") return null;
  if (role.startsWith("column")) return "column";
  if (role.startsWith("row")) return "row";
  if (role === "sharded") return "part";
  if (role === "replicated") return "replicated";
  return null;
}

/** The roles by node name, from a run's tensor-parallel pass data. */
function shardRoles(result: PipelineResult): Map<string, string> {
  const nodes = (result.tp?.pass.data as { nodes?: Record<string, unknown> } | null)?.nodes;
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(nodes ?? {})) if (typeof v === "string") out.set(k, v);
  return out;
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

export interface GraphEvents {
  select(node: string | null): void;
  ktir(op: string): void;
  sdsc(op: string): void;
}

export class GraphView {
  private readonly scroll = byId<HTMLDivElement>("graph-scroll");
  private readonly details = byId<HTMLElement>("node-details");
  private readonly filter = byId<HTMLInputElement>("graph-filter");
  private readonly meta = byId<HTMLSpanElement>("graph-meta");
  private result: PipelineResult | null = null;
  private layout: GraphLayout | null = null;
  private groups = new Map<string, SVGGElement>();
  private selected: string | null = null;
  /** Shard roles of the nodes (a tensor-parallel run), by node name. */
  private roles = new Map<string, string>();
  private readonly legend = el("div", {
    className: "legend graph-shards",
    "data-testid": "graph-shard-legend",
    "aria-label": "Shard colours",
    hidden: true,
  });

  constructor(private readonly events: GraphEvents) {
    this.filter.addEventListener("input", () => this.applyFilter());
    const split = this.scroll.parentElement;
    split?.parentElement?.insertBefore(this.legend, split);
  }

  focusFilter(): void {
    this.filter.focus();
  }

  get selectedNode(): string | null {
    return this.selected;
  }

  set(result: PipelineResult, layout: GraphLayout): void {
    this.result = result;
    this.layout = layout;
    this.groups.clear();
    this.roles = shardRoles(result);
    this.legend.hidden = this.roles.size === 0;
    this.legend.replaceChildren(
      el("span", { className: "legend-item", text: `TP ${result.tp?.degree ?? 1} shards:` }),
      ...SHARD_CLASSES.map(([k, t]) =>
        el("span", { className: "legend-item" }, el("span", { className: `swatch shard-${k}` }), t),
      ),
    );
    const g = result.graph;
    this.meta.textContent = `${g.name} · ${g.nodes.length} nodes · ${g.inputs.length} inputs · ${g.outputs.length} outputs${layout.omitted ? ` · ${layout.omitted} not drawn` : ""}`;
    if (layout.nodes.length === 0) {
      this.scroll.replaceChildren(
        el("p", {
          className: "muted",
          style: "padding: 12px",
          text: "A KTIR module has no model graph; see the IR, ring and timeline views.",
        }),
      );
      this.showDetails(null);
      return;
    }
    const W = layout.width + 2 * PAD;
    const H = layout.height + 2 * PAD;
    const root = svg("svg", {
      width: W,
      height: H,
      viewBox: `0 0 ${W} ${H}`,
      "data-testid": "graph-svg",
    });
    const defs = svg("defs", {});
    const marker = svg("marker", {
      id: "arrow",
      viewBox: "0 0 8 8",
      refX: 8,
      refY: 4,
      markerWidth: 7,
      markerHeight: 7,
      orient: "auto",
    });
    marker.append(
      svg("path", { d: "M0,0 L8,4 L0,8 z", fill: "currentColor", class: "gedge-head" }),
    );
    defs.append(marker);
    root.append(defs);
    const pos = new Map(layout.nodes.map((n) => [n.id, n]));
    const edges = svg("g", {});
    for (const e of layout.edges) {
      const a = pos.get(e.from);
      const b = pos.get(e.to);
      if (!a || !b) continue;
      const x1 = PAD + a.x + a.w / 2;
      const y1 = PAD + a.y + a.h;
      const x2 = PAD + b.x + b.w / 2;
      const y2 = PAD + b.y;
      const my = (y1 + y2) / 2;
      const fromRole = this.roles.get(a.name);
      const p = svg("path", {
        d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`,
        class: shardClass(fromRole) === "row" ? "gedge collective" : "gedge",
        "marker-end": "url(#arrow)",
      });
      p.append(svg("title", {}, e.tensor));
      edges.append(p);
      if (layout.edges.length <= 200)
        edges.append(
          svg("text", { x: (x1 + x2) / 2 + 4, y: my, class: "gedge-label" }, clip(e.tensor, 18)),
        );
    }
    root.append(edges);
    for (const n of layout.nodes) root.append(this.nodeGroup(n));
    this.scroll.replaceChildren(root);
    this.applyFilter();
    const keep = this.selected && pos.has(this.selected) ? this.selected : null;
    this.select(keep, false);
  }

  private nodeGroup(n: LayoutNode): SVGGElement {
    const shard = n.kind === "op" ? shardClass(this.roles.get(n.name)) : null;
    const g = svg("g", {
      class: `gnode ${n.kind}${shard ? ` shard-${shard}` : ""}`,
      ...(shard ? { "data-shard": shard } : {}),
      transform: `translate(${PAD + n.x},${PAD + n.y})`,
      "data-node": n.id,
      tabindex: 0,
      role: "button",
      "aria-label": `${n.kind === "op" ? `${n.label} node` : `graph ${n.kind}`} ${n.name}${n.detail ? `: ${n.detail}` : ""}`,
    });
    g.append(svg("rect", { width: n.w, height: n.h, rx: n.kind === "op" ? 4 : 12 }));
    if (shard === "row")
      g.append(
        svg(
          "text",
          { x: n.w - 6, y: 15, class: "shard-badge", "text-anchor": "end" },
          "∑ all-reduce",
        ),
      );
    g.append(
      svg("text", { x: 8, y: 15, class: "title" }, clip(n.kind === "op" ? n.label : n.name, 22)),
    );
    g.append(
      svg("text", { x: 8, y: 31 }, clip(n.kind === "op" ? `${n.name} ${n.detail}` : n.detail, 24)),
    );
    g.append(svg("title", {}, `${n.label} ${n.name} ${n.detail}`));
    g.addEventListener("click", () => this.select(n.id));
    g.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        this.select(n.id);
      }
    });
    this.groups.set(n.id, g);
    return g;
  }

  private applyFilter(): void {
    const q = this.filter.value.trim().toLowerCase();
    let shown = 0;
    for (const n of this.layout?.nodes ?? []) {
      const match = q === "" || `${n.label} ${n.name}`.toLowerCase().includes(q);
      if (match) shown++;
      this.groups.get(n.id)?.classList.toggle("dim", !match);
    }
    if (q) this.filter.title = `${shown} matching`;
  }

  /** Selects a node by id ("op:NAME", ...); scrolls it into view. */
  select(id: string | null, notify = true): void {
    if (this.selected) this.groups.get(this.selected)?.classList.remove("selected");
    this.selected = id && this.groups.has(id) ? id : null;
    const g = this.selected ? this.groups.get(this.selected) : undefined;
    g?.classList.add("selected");
    if (g && notify) g.scrollIntoView?.({ block: "nearest", inline: "nearest" });
    this.showDetails(this.selected);
    if (notify) this.events.select(this.selected);
  }

  /** Selects the graph node a device op came from. */
  selectOp(op: string): void {
    const r = this.result;
    const name = r ? nodeOfOp(r.sourceMap, op) : null;
    const hit = r?.graph.nodes.find((n) => n.name === name);
    if (hit) this.select(`op:${hit.name}`, false);
    const g = hit ? this.groups.get(`op:${hit.name}`) : undefined;
    g?.scrollIntoView?.({ block: "nearest", inline: "nearest" });
  }

  private showDetails(id: string | null): void {
    const r = this.result;
    const n = id ? this.layout?.nodes.find((x) => x.id === id) : undefined;
    if (!r || !n) {
      this.details.replaceChildren(
        el("p", {
          className: "muted",
          text: "Select a node to see its layout, core split and scratchpad placement.",
        }),
      );
      return;
    }
    const lays = layouts(passData(r.passes, "layout"));
    const place = placements(passData(r.passes, "scratchpad"));
    const wdData = passData(r.passes, "work-division");
    const divs = divisions(wdData);
    const labels = opLabels(wdData);
    const parts: Node[] = [el("h3", { text: `${n.label} ${n.name}` })];
    const node = r.graph.nodes.find((x) => x.name === n.name);
    const tensors = n.kind === "op" && node ? [...node.outputs] : [n.name];
    if (node) {
      const role = this.roles.get(node.name);
      parts.push(
        table([
          ["inputs", node.inputs.join(", ")],
          ["outputs", node.outputs.join(", ")],
          ...(role ? [["shard", role] as [string, string]] : []),
        ]),
      );
    }
    for (const t of tensors) {
      const l = lays.get(t);
      parts.push(el("h3", { text: `tensor ${t}` }));
      const rows: [string, string][] = [];
      if (l) {
        rows.push(["host", `${l.dtype}[${l.hostShape.join("×")}]`]);
        rows.push(["device", `[${l.deviceSize.join("×")}] · ${formatInt(l.deviceBytes)} B`]);
        rows.push(["stick", `${l.elemsPerStick} elements`]);
      }
      const p = place.get(t);
      if (p) rows.push(["placed", p]);
      parts.push(rows.length ? table(rows) : el("p", { className: "muted", text: "no layout" }));
    }
    if (n.kind === "op") {
      const ops = opsOfNode(r.sourceMap, n.name).map((o) => o.name);
      for (const op of ops) {
        const d = divs.find((x) => x.op === op);
        if (!d) continue;
        const names = labels.get(op) ?? [];
        parts.push(el("h3", { text: `core split of ${op}` }));
        parts.push(
          table([
            ["splits", names.map((nm, i) => `${nm}=${d.splits[i] ?? 1}`).join(" ")],
            ["cores", String(d.coresUsed)],
          ]),
        );
        parts.push(el("p", { className: "muted", text: d.rule }));
      }
      const links = el("p", {});
      const target = ops[0] ?? n.name;
      const ktir = el("button", {
        type: "button",
        className: "link",
        "data-link": "ktir",
        text: "KTIR ↗",
      });
      ktir.addEventListener("click", () => this.events.ktir(target));
      const sdsc = el("button", {
        type: "button",
        className: "link",
        "data-link": "sdsc",
        text: "SDSC ↗",
      });
      sdsc.addEventListener("click", () => this.events.sdsc(target));
      links.append(ktir, "  ", sdsc);
      parts.push(links);
    }
    this.details.replaceChildren(...parts);
  }
}

/** The Graph tab: the model graph and the selected node's details. */
export class GraphTab implements View {
  readonly id = "graph";
  readonly title = "Graph";
  readonly key = "1";
  private view: GraphView | null = null;
  private ctx: ViewContext | null = null;

  readonly shortcuts: readonly Shortcut[] = [
    {
      keys: ["/"],
      label: "/",
      does: "filter graph nodes",
      run: () => {
        if (!this.view || !this.ctx) return false;
        this.ctx.setView(this.id);
        this.view.focusFilter();
        return true;
      },
    },
  ];

  mount(_container: HTMLElement, ctx: ViewContext): void {
    this.ctx = ctx;
    this.view = new GraphView({
      select: (id) => ctx.selectNode(id),
      ktir: (op) => ctx.openOp("ktir", op),
      sdsc: (op) => ctx.openOp("sdsc", op),
    });
  }

  update(s: PageState, changed: ReadonlySet<Change>): void {
    if (!this.view) return;
    if (changed.has("run") && s.loaded) this.view.set(s.loaded.res.result, s.loaded.res.layout);
    if (changed.has("op") && s.op !== null) this.view.selectOp(s.op);
  }
}
