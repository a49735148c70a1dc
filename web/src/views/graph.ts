// The model graph: boxes laid out in the worker (again here when a group is collapsed or
// expanded), drawn as SVG under a camera that zooms and pans. Only what is near the viewport
// is in the DOM, so a 32-layer model stays light; a canvas minimap shows the whole graph and
// the visible area. Big graphs open with each block or layer folded into one node. The search
// box dims what does not match and Enter jumps to the next node whose name or tensors match,
// expanding its group. A selected node shows its layout, core split, scratchpad placement and
// weights, with links to its SDSC and KTIR.

import type { GraphNode, InitializerView, PipelineResult, TensorInfo } from "../api";
import { byId, el, formatInt, svg } from "../dom";
import { defaultCollapsed, graphGroups, groupOf } from "../graph/groups";
import type { GraphLayout, LayoutNode } from "../graph/layout";
import { layoutGraph, tensorTypes } from "../graph/layout";
import type { Camera, Rect } from "../graph/viewport";
import {
  centreOn,
  contains,
  fit,
  grow,
  intersects,
  opening,
  visible,
  wheelPan,
  zoomAt,
} from "../graph/viewport";
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

/** Below this scale nodes are drawn as plain boxes: text too small to read costs the most. */
const TEXT_SCALE = 0.45;
/** Pointer travel (px) that makes a press a drag rather than a click. */
const DRAG_PX = 4;

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

function svgById<T extends SVGElement>(id: string): T {
  const n = document.getElementById(id);
  if (!n) throw new Error(`page is missing #${id}`);
  return n as unknown as T;
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/** A number short enough for a table cell. */
function num(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return "0";
  const a = Math.abs(v);
  return a >= 1e4 || a < 1e-3 ? v.toExponential(3) : String(Number(v.toPrecision(4)));
}

/** The rows describing a weight: its type, then a few values and their range, if held. */
export function initializerRows(i: InitializerView): [string, string][] {
  const count = i.shape.reduce((a, b) => a * b, 1);
  const rows: [string, string][] = [
    ["type", `${i.dtype}[${i.shape.join("×")}]`],
    ["elements", formatInt(count)],
  ];
  const v = i.values;
  if (!v) {
    rows.push(["values", "values not held (timing-only run)"]);
    return rows;
  }
  rows.push(["first", `${v.samples.map(num).join(", ")}${count > v.samples.length ? ", …" : ""}`]);
  rows.push(["min", num(v.min)], ["max", num(v.max)], ["mean", num(v.mean)]);
  if (v.nans) rows.push(["NaN", formatInt(v.nans)]);
  return rows;
}

export interface GraphEvents {
  select(node: string | null): void;
  ktir(op: string): void;
  sdsc(op: string): void;
}

/** What a search compares against: a node's op, name and tensor names, lower-cased. */
function searchText(n: LayoutNode, node: GraphNode | undefined): string {
  if (!node) return `${n.label} ${n.name}`.toLowerCase();
  return `${node.op} ${node.name} ${node.inputs.join(" ")} ${node.outputs.join(" ")}`.toLowerCase();
}

export class GraphView {
  private readonly scroll = byId<HTMLDivElement>("graph-scroll");
  private readonly svgRoot = svgById<SVGSVGElement>("graph-svg");
  private readonly world = svgById<SVGGElement>("graph-world");
  private readonly framesLayer = svgById<SVGGElement>("graph-frames");
  private readonly edgesLayer = svgById<SVGGElement>("graph-edges");
  private readonly nodesLayer = svgById<SVGGElement>("graph-nodes");
  private readonly empty = byId<HTMLParagraphElement>("graph-empty");
  private readonly minimap = byId<HTMLCanvasElement>("graph-minimap");
  private readonly details = byId<HTMLElement>("node-details");
  private readonly filter = byId<HTMLInputElement>("graph-filter");
  private readonly found = byId<HTMLSpanElement>("graph-found");
  private readonly meta = byId<HTMLSpanElement>("graph-meta");
  private readonly collapseAll = byId<HTMLButtonElement>("graph-collapse");
  private readonly expandAll = byId<HTMLButtonElement>("graph-expand");
  private result: PipelineResult | null = null;
  private types = new Map<string, TensorInfo>();
  private layout: GraphLayout | null = null;
  /** Layout nodes by id, and graph nodes by name. */
  private pos = new Map<string, LayoutNode>();
  private graphNodes = new Map<string, GraphNode>();
  private inits = new Map<string, InitializerView>();
  /** Groups of two or more nodes, and those drawn as one node. */
  private groupSizes = new Map<string, number>();
  private collapsed = new Set<string>();
  /** Lower-cased search text of each layout node. */
  private texts = new Map<string, string>();
  /** Layout nodes that do not match the search (none when it is empty). */
  private dimmed = new Set<string>();
  private hit = -1;
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
  private cam: Camera = { k: 1, tx: 0, ty: 0 };
  /** The camera has been placed for the current graph (needs a sized viewport). */
  private placed = false;
  /** The world area whose nodes are in the DOM, and the scale they were drawn for. */
  private drawn: Rect | null = null;
  private drawnText = true;
  private frame = 0;
  /** The minimap's nodes, drawn once per layout. */
  private miniNodes: HTMLCanvasElement | null = null;
  private pointers = new Map<number, { x: number; y: number }>();
  private press: { x: number; y: number; dragged: boolean } | null = null;
  private pinch: { dist: number; mx: number; my: number } | null = null;
  /** A drag just ended: the click that follows it is not a selection. */
  private swallowClick = false;
  /** When the last graph arrived, until it is first drawn (for the time to first draw). */
  private setAt = 0;

  constructor(private readonly events: GraphEvents) {
    const split = this.scroll.parentElement;
    split?.parentElement?.insertBefore(this.legend, split);
    this.filter.addEventListener("input", () => {
      this.hit = -1;
      this.applyFilter();
    });
    this.filter.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") {
        ev.preventDefault();
        this.jump(ev.shiftKey ? -1 : 1);
      }
    });
    byId("graph-zoom-in").addEventListener("click", () => this.zoomBy(1.25));
    byId("graph-zoom-out").addEventListener("click", () => this.zoomBy(0.8));
    byId("graph-fit").addEventListener("click", () => this.fitAll());
    this.collapseAll.addEventListener("click", () =>
      this.setCollapsed(new Set(this.groupSizes.keys())),
    );
    this.expandAll.addEventListener("click", () => this.setCollapsed(new Set()));
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
    this.svgRoot.prepend(defs);
    this.bindPointer();
    this.bindMinimap();
    this.scroll.addEventListener("keydown", (ev) => this.onKey(ev));
    new ResizeObserver(() => this.schedule(true)).observe(this.scroll);
  }

  focusFilter(): void {
    this.filter.focus();
  }

  get selectedNode(): string | null {
    return this.selected;
  }

  /** The camera, for tests and measurements. */
  get camera(): Camera {
    return { ...this.cam };
  }

  set(result: PipelineResult, layout: GraphLayout): void {
    const prev = this.result?.graph;
    const g = result.graph;
    const same = prev !== undefined && prev.name === g.name && prev.nodes.length === g.nodes.length;
    this.setAt = performance.now();
    this.result = result;
    // On one card nothing is cut or reduced across cards: no roles, no legend.
    this.roles = (result.tp?.degree ?? 1) > 1 ? shardRoles(result) : new Map();
    this.legend.hidden = this.roles.size === 0;
    // Only nodes near the viewport are drawn: the counts per shard class say what the whole
    // graph holds (for readers of the legend's figures and for tests).
    const counts = new Map<string, number>();
    for (const role of this.roles.values()) {
      const k = shardClass(role);
      if (k) counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    this.scroll.dataset.shards = [...counts].map(([k, n]) => `${k}:${n}`).join(" ");
    this.legend.replaceChildren(
      el("span", { className: "legend-item", text: `TP ${result.tp?.degree ?? 1} shards:` }),
      ...SHARD_CLASSES.map(([k, t]) =>
        el("span", { className: "legend-item" }, el("span", { className: `swatch shard-${k}` }), t),
      ),
    );
    this.types = tensorTypes(g, passData(result.passes, "canonicalize"));
    this.graphNodes = new Map(g.nodes.map((n) => [n.name, n]));
    this.inits = new Map((g.initializers ?? []).map((i) => [i.name, i]));
    this.groupSizes = graphGroups(g);
    const fresh = defaultCollapsed(g);
    // The same graph run again keeps its folds and camera.
    const keep = same && !sameSet(this.collapsed, fresh);
    if (keep) layout = layoutGraph(g, this.types, this.collapsed);
    else this.collapsed = fresh;
    if (!same) this.placed = false;
    this.useLayout(layout);
    const sel = this.selected && this.pos.has(this.selected) ? this.selected : null;
    this.select(sel, false);
  }

  private useLayout(layout: GraphLayout): void {
    const g = this.result?.graph;
    this.layout = layout;
    this.pos = new Map(layout.nodes.map((n) => [n.id, n]));
    // A group matches what any of its nodes matches.
    const members = new Map<string, string[]>();
    for (const x of g?.nodes ?? []) {
      const gr = groupOf(x.name);
      if (!this.collapsed.has(gr)) continue;
      const list = members.get(gr) ?? [];
      list.push(searchText({ label: x.op, name: x.name } as LayoutNode, x));
      members.set(gr, list);
    }
    this.texts = new Map(
      layout.nodes.map((n) =>
        n.kind === "group"
          ? [n.id, (members.get(n.name) ?? []).join(" ")]
          : [n.id, searchText(n, this.graphNodes.get(n.name))],
      ),
    );
    this.drawn = null;
    this.miniNodes = null;
    const groupsCount = this.groupSizes.size;
    this.collapseAll.disabled = groupsCount === 0 || this.collapsed.size === groupsCount;
    this.expandAll.disabled = this.collapsed.size === 0;
    if (g) {
      const folds = groupsCount
        ? ` · ${this.collapsed.size} of ${groupsCount} groups collapsed`
        : "";
      this.meta.textContent = `${g.name} · ${g.nodes.length} nodes · ${g.inputs.length} inputs · ${g.outputs.length} outputs${folds}${layout.omitted ? ` · ${layout.omitted} not drawn` : ""}`;
    }
    const none = layout.nodes.length === 0;
    this.empty.hidden = !none;
    this.svgRoot.style.display = none ? "none" : "";
    this.minimap.hidden = none;
    if (none) {
      this.empty.textContent =
        "A KTIR module has no model graph; see the IR, ring and timeline views.";
      this.groups.clear();
      this.nodesLayer.replaceChildren();
      this.edgesLayer.replaceChildren();
      this.framesLayer.replaceChildren();
      this.showDetails(null);
    }
    this.applyFilter();
    this.schedule(true);
  }

  private setCollapsed(next: Set<string>, focus?: string): void {
    if (!this.result) return;
    this.collapsed = next;
    const t = performance.now();
    this.useLayout(layoutGraph(this.result.graph, this.types, next));
    this.scroll.dataset.layoutMs = (performance.now() - t).toFixed(1);
    if (this.selected && !this.pos.has(this.selected)) this.select(null, false);
    if (focus && this.pos.has(focus)) this.centre(focus);
    else if (focus === undefined) this.fitOrOpen();
  }

  /** Expands `group` and centres its first node. */
  expand(group: string): void {
    if (!this.collapsed.has(group)) return;
    const next = new Set(this.collapsed);
    next.delete(group);
    const first = this.result?.graph.nodes.find((n) => groupOf(n.name) === group);
    this.setCollapsed(next, first ? `op:${first.name}` : "");
  }

  /** Collapses `group` into one node and centres it. */
  collapse(group: string): void {
    if (this.collapsed.has(group) || !this.groupSizes.has(group)) return;
    const next = new Set(this.collapsed);
    next.add(group);
    this.setCollapsed(next, `grp:${group}`);
  }

  // ---- camera ----

  private size(): { w: number; h: number } {
    return { w: this.scroll.clientWidth, h: this.scroll.clientHeight };
  }

  private worldRect(): Rect {
    const l = this.layout;
    return { x: 0, y: 0, w: l?.width ?? 0, h: l?.height ?? 0 };
  }

  private fitOrOpen(): void {
    const { w, h } = this.size();
    if (w === 0 || h === 0) return;
    this.cam = opening(this.worldRect(), w, h);
    this.schedule();
  }

  private fitAll(): void {
    const { w, h } = this.size();
    if (w === 0 || h === 0) return;
    this.cam = fit(this.worldRect(), w, h);
    this.schedule();
  }

  private zoomBy(f: number): void {
    const { w, h } = this.size();
    this.cam = zoomAt(this.cam, f, w / 2, h / 2);
    this.schedule();
  }

  private panBy(dx: number, dy: number): void {
    this.cam = { ...this.cam, tx: this.cam.tx + dx, ty: this.cam.ty + dy };
    this.schedule();
  }

  /** Centres node `id`, zooming in to a readable scale if needed. */
  private centre(id: string): void {
    const n = this.pos.get(id);
    const { w, h } = this.size();
    if (!n || w === 0) return;
    this.cam = centreOn(n.x + n.w / 2, n.y + n.h / 2, w, h, Math.max(this.cam.k, 0.8));
    this.placed = true;
    this.schedule();
  }

  /** Brings node `id` into view if it is not. */
  private reveal(id: string): void {
    const n = this.pos.get(id);
    const { w, h } = this.size();
    if (!n || w === 0) return;
    const v = visible(this.cam, w, h);
    if (!contains(v, { x: n.x, y: n.y, w: n.w, h: n.h }) || this.cam.k < TEXT_SCALE)
      this.centre(id);
  }

  /** The view has just been shown: draws now, so its nodes are there at once. */
  shown(): void {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.drawn = null;
    this.draw();
  }

  /** Draws on the next animation frame; `relayout` also redraws the nodes. */
  private schedule(relayout = false): void {
    if (relayout) this.drawn = null;
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  private draw(): void {
    const { w, h } = this.size();
    if (!this.layout || w === 0 || h === 0) return;
    if (!this.placed) {
      this.placed = true;
      this.cam = opening(this.worldRect(), w, h);
      if (this.selected) {
        const n = this.pos.get(this.selected);
        if (n) this.cam = centreOn(n.x + n.w / 2, n.y + n.h / 2, w, h, this.cam.k);
      }
    }
    const c = this.cam;
    this.world.setAttribute("transform", `translate(${c.tx},${c.ty}) scale(${c.k})`);
    const view = visible(c, w, h);
    const text = c.k >= TEXT_SCALE;
    if (!this.drawn || !contains(this.drawn, view) || text !== this.drawnText) {
      this.drawnText = text;
      this.drawn = grow(view, 0.5);
      this.renderContent(this.drawn, text);
    }
    this.drawMinimap(view);
    if (this.setAt) {
      this.scroll.dataset.firstDrawMs = (performance.now() - this.setAt).toFixed(1);
      this.setAt = 0;
      performance.mark("spyre:graph-drawn");
    }
  }

  /** Puts the nodes, edges and group frames that meet `area` in the DOM. */
  private renderContent(area: Rect, text: boolean): void {
    const l = this.layout;
    if (!l) return;
    const t = performance.now();
    this.groups.clear();
    const nodes: SVGGElement[] = [];
    for (const n of l.nodes) {
      if (intersects(area, { x: n.x, y: n.y, w: n.w, h: n.h })) nodes.push(this.nodeGroup(n, text));
    }
    const edges: SVGElement[] = [];
    const labels = text && l.edges.length <= 200;
    for (const e of l.edges) {
      const a = this.pos.get(e.from);
      const b = this.pos.get(e.to);
      if (!a || !b) continue;
      const x1 = a.x + a.w / 2;
      const y1 = a.y + a.h;
      const x2 = b.x + b.w / 2;
      const y2 = b.y;
      const box = {
        x: Math.min(x1, x2),
        y: Math.min(y1, y2),
        w: Math.abs(x2 - x1) + 1,
        h: Math.abs(y2 - y1) + 1,
      };
      if (!intersects(area, box)) continue;
      const my = (y1 + y2) / 2;
      const fromRole = this.roles.get(a.name);
      const p = svg("path", {
        d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`,
        class: shardClass(fromRole) === "row" ? "gedge collective" : "gedge",
        "marker-end": "url(#arrow)",
      });
      p.append(svg("title", {}, e.tensor));
      edges.push(p);
      if (labels)
        edges.push(
          svg("text", { x: (x1 + x2) / 2 + 4, y: my, class: "gedge-label" }, clip(e.tensor, 18)),
        );
    }
    this.edgesLayer.replaceChildren(...edges);
    this.nodesLayer.replaceChildren(...nodes);
    this.framesLayer.replaceChildren(...this.frames(area));
    this.scroll.dataset.drawn = String(nodes.length);
    this.scroll.dataset.renderMs = (performance.now() - t).toFixed(1);
  }

  /** A labelled frame around each expanded group; its label collapses the group. */
  private frames(area: Rect): SVGElement[] {
    const l = this.layout;
    if (!l || this.groupSizes.size === 0) return [];
    const boxes = new Map<string, Rect>();
    for (const n of l.nodes) {
      if (n.kind !== "op" || !this.groupSizes.has(n.group)) continue;
      const b = boxes.get(n.group);
      if (!b) boxes.set(n.group, { x: n.x, y: n.y, w: n.w, h: n.h });
      else {
        const x2 = Math.max(b.x + b.w, n.x + n.w);
        const y2 = Math.max(b.y + b.h, n.y + n.h);
        b.x = Math.min(b.x, n.x);
        b.y = Math.min(b.y, n.y);
        b.w = x2 - b.x;
        b.h = y2 - b.y;
      }
    }
    const out: SVGElement[] = [];
    for (const [group, b] of boxes) {
      const r = { x: b.x - 10, y: b.y - 22, w: b.w + 20, h: b.h + 30 };
      if (!intersects(area, r)) continue;
      const f = svg("g", {
        class: "gframe",
        "data-group": group,
        tabindex: 0,
        role: "button",
        "aria-label": `Collapse group ${group} (${this.groupSizes.get(group) ?? 0} nodes)`,
      });
      f.append(svg("rect", { x: r.x, y: r.y, width: r.w, height: r.h, rx: 8 }));
      f.append(svg("text", { x: r.x + 8, y: r.y + 14 }, `▾ ${group}`));
      f.append(svg("title", {}, `collapse ${group}`));
      const go = (): void => this.collapse(group);
      f.addEventListener("click", (ev) => {
        if (this.swallow()) return;
        // Only the label collapses: a click inside the frame is a click on the background.
        if ((ev.target as Element).tagName !== "text") return;
        go();
      });
      f.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") {
          ev.preventDefault();
          go();
        }
      });
      out.push(f);
    }
    return out;
  }

  private nodeGroup(n: LayoutNode, text: boolean): SVGGElement {
    const label =
      n.kind === "group"
        ? `group ${n.name}: ${n.count} nodes, collapsed; Enter expands it`
        : `${n.kind === "op" ? `${n.label} node` : `graph ${n.kind}`} ${n.name}${n.detail ? `: ${n.detail}` : ""}`;
    const shard = n.kind === "op" ? shardClass(this.roles.get(n.name)) : null;
    const cls = [
      "gnode",
      n.kind,
      shard ? `shard-${shard}` : "",
      this.dimmed.has(n.id) ? "dim" : "",
      n.id === this.selected ? "selected" : "",
      this.hitId() === n.id ? "found" : "",
    ]
      .filter(Boolean)
      .join(" ");
    const g = svg("g", {
      class: cls,
      ...(shard ? { "data-shard": shard } : {}),
      transform: `translate(${n.x},${n.y})`,
      "data-node": n.id,
      tabindex: 0,
      role: "button",
      "aria-label": label,
    });
    g.append(
      svg("rect", {
        width: n.w,
        height: n.h,
        rx: n.kind === "op" ? 4 : n.kind === "group" ? 6 : 12,
      }),
    );
    if (shard === "row")
      g.append(
        svg(
          "text",
          { x: n.w - 6, y: 15, class: "shard-badge", "text-anchor": "end" },
          "∑ all-reduce",
        ),
      );
    if (text) {
      const title = n.kind === "op" ? n.label : n.kind === "group" ? `▸ ${n.name}` : n.name;
      g.append(svg("text", { x: 8, y: 15, class: "title" }, clip(title, 22)));
      g.append(
        svg(
          "text",
          { x: 8, y: 31 },
          clip(n.kind === "op" ? `${n.name} ${n.detail}` : n.detail, 24),
        ),
      );
    }
    g.append(
      svg(
        "title",
        {},
        n.kind === "group"
          ? `${n.name}: ${n.detail} (click to expand)`
          : `${n.label} ${n.name} ${n.detail}`,
      ),
    );
    const activate = (): void => {
      if (n.kind === "group") this.expand(n.name);
      else this.select(n.id);
    };
    g.addEventListener("click", () => {
      if (!this.swallow()) activate();
    });
    g.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        ev.stopPropagation();
        activate();
      }
    });
    this.groups.set(n.id, g);
    return g;
  }

  private swallow(): boolean {
    const s = this.swallowClick;
    this.swallowClick = false;
    return s;
  }

  // ---- minimap ----

  /** World to minimap pixels: scale and offset, fitting the whole graph. */
  private miniScale(): { m: number; ox: number; oy: number; w: number; h: number } {
    const w = this.minimap.clientWidth;
    const h = this.minimap.clientHeight;
    const r = this.worldRect();
    const m = Math.min((w - 4) / Math.max(r.w, 1), (h - 4) / Math.max(r.h, 1));
    return { m, ox: (w - r.w * m) / 2, oy: (h - r.h * m) / 2, w, h };
  }

  private drawMinimap(view: Rect): void {
    const cv = this.minimap;
    const { m, ox, oy, w, h } = this.miniScale();
    if (w === 0 || h === 0 || !this.layout) return;
    const dpr = window.devicePixelRatio || 1;
    if (cv.width !== Math.round(w * dpr) || cv.height !== Math.round(h * dpr)) {
      cv.width = Math.round(w * dpr);
      cv.height = Math.round(h * dpr);
      this.miniNodes = null;
    }
    if (!this.miniNodes) {
      const off = document.createElement("canvas");
      off.width = cv.width;
      off.height = cv.height;
      const o = off.getContext("2d");
      if (!o) return;
      o.scale(dpr, dpr);
      const css = getComputedStyle(this.scroll);
      const fill = css.getPropertyValue("--ring-core-border").trim() || "#888";
      const group = css.getPropertyValue("--accent").trim() || "#48f";
      for (const n of this.layout.nodes) {
        o.fillStyle = n.kind === "group" ? group : fill;
        o.fillRect(ox + n.x * m, oy + n.y * m, Math.max(1, n.w * m), Math.max(1, n.h * m));
      }
      this.miniNodes = off;
    }
    const ctx = cv.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, cv.width, cv.height);
    ctx.drawImage(this.miniNodes, 0, 0);
    ctx.scale(dpr, dpr);
    ctx.strokeStyle = getComputedStyle(this.scroll).getPropertyValue("--accent").trim() || "#48f";
    ctx.lineWidth = 1.5;
    const x = Math.max(0, ox + view.x * m);
    const y = Math.max(0, oy + view.y * m);
    const x2 = Math.min(w, ox + (view.x + view.w) * m);
    const y2 = Math.min(h, oy + (view.y + view.h) * m);
    ctx.strokeRect(x, y, Math.max(2, x2 - x), Math.max(2, y2 - y));
    cv.dataset.view = [x, y, x2 - x, y2 - y].map((v) => v.toFixed(1)).join(",");
  }

  private bindMinimap(): void {
    const mm = this.minimap;
    const to = (ev: PointerEvent): void => {
      const r = mm.getBoundingClientRect();
      const { m, ox, oy } = this.miniScale();
      const { w, h } = this.size();
      const wx = (ev.clientX - r.left - ox) / m;
      const wy = (ev.clientY - r.top - oy) / m;
      this.cam = centreOn(wx, wy, w, h, this.cam.k);
      this.schedule();
    };
    mm.addEventListener("pointerdown", (ev) => {
      ev.stopPropagation();
      ev.preventDefault();
      mm.setPointerCapture?.(ev.pointerId);
      to(ev);
    });
    mm.addEventListener("pointermove", (ev) => {
      if (mm.hasPointerCapture?.(ev.pointerId)) to(ev);
    });
    mm.addEventListener("pointerup", (ev) => mm.releasePointerCapture?.(ev.pointerId));
    mm.addEventListener("wheel", (ev) => ev.stopPropagation(), { passive: true });
  }

  // ---- pointer and keys ----

  private bindPointer(): void {
    const s = this.scroll;
    s.addEventListener(
      "wheel",
      (ev) => {
        if (!this.layout) return;
        const r = s.getBoundingClientRect();
        // deltaMode 1 is lines, 2 pages.
        const unit = ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? r.height : 1;
        // As map-like views do: ctrl/cmd + wheel zooms (a trackpad pinch arrives as a wheel
        // with ctrlKey); a plain wheel pans, and scrolls the page once the graph's edge is in
        // view, so the wheel never traps the page.
        if (ev.ctrlKey || ev.metaKey) {
          ev.preventDefault();
          const d = ev.deltaY * unit * (ev.ctrlKey ? 4 : 1);
          this.cam = zoomAt(
            this.cam,
            Math.exp(-d * 0.0015),
            ev.clientX - r.left,
            ev.clientY - r.top,
          );
          this.schedule();
          return;
        }
        const dx = (ev.shiftKey && ev.deltaX === 0 ? ev.deltaY : ev.deltaX) * unit;
        const dy = (ev.shiftKey && ev.deltaX === 0 ? 0 : ev.deltaY) * unit;
        const next = wheelPan(this.cam, this.worldRect(), r.width, r.height, dx, dy);
        if (!next) return;
        ev.preventDefault();
        this.cam = next;
        this.schedule();
      },
      { passive: false },
    );
    s.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0 && ev.pointerType === "mouse") return;
      this.pointers.set(ev.pointerId, { x: ev.clientX, y: ev.clientY });
      if (this.pointers.size === 1) this.press = { x: ev.clientX, y: ev.clientY, dragged: false };
      if (this.pointers.size === 2) {
        this.pinch = this.pinchOf();
        s.setPointerCapture?.(ev.pointerId);
      }
    });
    s.addEventListener("pointermove", (ev) => {
      const p = this.pointers.get(ev.pointerId);
      if (!p) return;
      const dx = ev.clientX - p.x;
      const dy = ev.clientY - p.y;
      p.x = ev.clientX;
      p.y = ev.clientY;
      if (this.pointers.size >= 2 && this.pinch) {
        const now = this.pinchOf();
        if (now && now.dist > 0) {
          const r = s.getBoundingClientRect();
          this.cam = zoomAt(this.cam, now.dist / this.pinch.dist, now.mx - r.left, now.my - r.top);
          this.cam = {
            ...this.cam,
            tx: this.cam.tx + now.mx - this.pinch.mx,
            ty: this.cam.ty + now.my - this.pinch.my,
          };
          this.pinch = now;
          if (this.press) this.press.dragged = true;
          this.schedule();
        }
        return;
      }
      const press = this.press;
      if (!press) return;
      if (!press.dragged && Math.hypot(ev.clientX - press.x, ev.clientY - press.y) < DRAG_PX)
        return;
      if (!press.dragged) {
        press.dragged = true;
        // Captured only once it is a drag, so a plain click still reaches its node.
        s.setPointerCapture?.(ev.pointerId);
        s.classList.add("dragging");
      }
      this.panBy(dx, dy);
    });
    const end = (ev: PointerEvent): void => {
      if (!this.pointers.delete(ev.pointerId)) return;
      if (this.pointers.size < 2) this.pinch = null;
      if (this.pointers.size === 0) {
        if (this.press?.dragged) this.swallowClick = ev.type === "pointerup";
        this.press = null;
        s.classList.remove("dragging");
      }
    };
    s.addEventListener("pointerup", end);
    s.addEventListener("pointercancel", end);
    // A drag that ends over empty space produces no click to swallow.
    s.addEventListener("pointerdown", () => (this.swallowClick = false), { capture: true });
  }

  private pinchOf(): { dist: number; mx: number; my: number } | null {
    const [a, b] = [...this.pointers.values()];
    if (!a || !b) return null;
    return { dist: Math.hypot(a.x - b.x, a.y - b.y), mx: (a.x + b.x) / 2, my: (a.y + b.y) / 2 };
  }

  private onKey(ev: KeyboardEvent): void {
    if (ev.target !== this.scroll || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const step = 60;
    const act: Record<string, () => void> = {
      ArrowLeft: () => this.panBy(step, 0),
      ArrowRight: () => this.panBy(-step, 0),
      ArrowUp: () => this.panBy(0, step),
      ArrowDown: () => this.panBy(0, -step),
      "+": () => this.zoomBy(1.25),
      "=": () => this.zoomBy(1.25),
      "-": () => this.zoomBy(0.8),
      "0": () => this.fitAll(),
    };
    const f = act[ev.key];
    if (!f) return;
    ev.preventDefault();
    ev.stopPropagation();
    f();
  }

  // ---- search ----

  private matches(): string[] {
    const q = this.filter.value.trim().toLowerCase();
    if (!q || !this.result) return [];
    const exact: string[] = [];
    const partial: string[] = [];
    const add = (id: string, names: readonly string[], text: string): void => {
      if (names.some((x) => x.toLowerCase() === q)) exact.push(id);
      else if (text.includes(q)) partial.push(id);
    };
    const g = this.result.graph;
    for (const t of g.inputs) add(`in:${t.name}`, [t.name], `input ${t.name}`.toLowerCase());
    for (const n of g.nodes)
      add(
        `op:${n.name}`,
        [n.name, ...n.inputs, ...n.outputs],
        searchText({ label: n.op, name: n.name } as LayoutNode, n),
      );
    for (const t of g.outputs) add(`out:${t.name}`, [t.name], `output ${t.name}`.toLowerCase());
    return [...exact, ...partial];
  }

  private hitId(): string | null {
    const all = this.lastMatches;
    const id = all[this.hit];
    return id ? this.drawnId(id) : null;
  }

  private lastMatches: string[] = [];

  /** The layout node showing graph node `id`: itself, or its collapsed group. */
  private drawnId(id: string): string {
    if (!id.startsWith("op:")) return id;
    const g = groupOf(id.slice(3));
    return this.collapsed.has(g) ? `grp:${g}` : id;
  }

  private applyFilter(): void {
    const q = this.filter.value.trim().toLowerCase();
    this.dimmed.clear();
    let shown = 0;
    for (const n of this.layout?.nodes ?? []) {
      const match = q === "" || (this.texts.get(n.id) ?? "").includes(q);
      if (match) shown++;
      else this.dimmed.add(n.id);
    }
    for (const [id, g] of this.groups) g.classList.toggle("dim", this.dimmed.has(id));
    this.lastMatches = this.matches();
    if (q) {
      this.filter.title = `${shown} matching`;
      this.found.textContent = this.lastMatches.length
        ? `${this.hit >= 0 ? this.hit + 1 : 0}/${this.lastMatches.length}`
        : "no match";
    } else this.found.textContent = "";
  }

  /** Jumps to the next (or previous) match, expanding its group, and selects it. */
  jump(dir: 1 | -1 = 1): void {
    const all = this.lastMatches.length ? this.lastMatches : this.matches();
    this.lastMatches = all;
    if (all.length === 0) {
      this.found.textContent = this.filter.value.trim() ? "no match" : "";
      return;
    }
    this.hit = (this.hit + dir + all.length) % all.length;
    const id = all[this.hit] ?? "";
    const g = id.startsWith("op:") ? groupOf(id.slice(3)) : "";
    if (g && this.collapsed.has(g)) {
      const next = new Set(this.collapsed);
      next.delete(g);
      this.setCollapsed(next, id);
    }
    this.select(id, false);
    this.centre(id);
    this.events.select(this.selected);
    this.found.textContent = `${this.hit + 1}/${all.length}`;
    this.schedule(true);
  }

  /** Selects a node by id ("op:NAME", ...); brings it into view. */
  select(id: string | null, notify = true): void {
    if (this.selected) this.groups.get(this.selected)?.classList.remove("selected");
    this.selected = id && this.pos.has(id) ? id : null;
    if (this.selected) this.groups.get(this.selected)?.classList.add("selected");
    if (this.selected && notify) this.reveal(this.selected);
    this.showDetails(this.selected);
    if (notify) this.events.select(this.selected);
  }

  /** Selects the graph node a device op came from, expanding its group. */
  selectOp(op: string): void {
    const r = this.result;
    const name = r ? nodeOfOp(r.sourceMap, op) : null;
    const hit = name ? this.graphNodes.get(name) : undefined;
    if (!hit) return;
    const id = `op:${hit.name}`;
    const g = groupOf(hit.name);
    if (this.collapsed.has(g)) {
      const next = new Set(this.collapsed);
      next.delete(g);
      this.setCollapsed(next, id);
    }
    this.select(id, false);
    this.reveal(id);
  }

  private showDetails(id: string | null): void {
    const r = this.result;
    const n = id ? this.pos.get(id) : undefined;
    if (!r || !n) {
      this.details.replaceChildren(
        el("p", {
          className: "muted",
          text: "Select a node to see its layout, core split, scratchpad placement and weights.",
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
    const node = this.graphNodes.get(n.name);
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
    for (const w of node?.inputs ?? []) {
      const i = this.inits.get(w);
      if (!i) continue;
      const box = el("div", { className: "weight", "data-weight": w });
      box.append(el("h3", { text: `weight ${w}` }), table(initializerRows(i)));
      parts.push(box);
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
      if (this.groupSizes.has(n.group)) {
        const fold = el("button", {
          type: "button",
          className: "link",
          "data-link": "collapse",
          text: `Collapse ${n.group}`,
        });
        fold.addEventListener("click", () => this.collapse(n.group));
        parts.push(el("p", {}, fold));
      }
    }
    this.details.replaceChildren(...parts);
  }
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x));
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
    if (changed.has("view") && s.view === this.id) this.view.shown();
  }
}
