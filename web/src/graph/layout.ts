// Layered layout of a model graph (runs in the worker, and again on the page when a group is
// collapsed or expanded). Pure: graph in, boxes and edges out. Ops and graph inputs/outputs
// are nodes; tensors are edges; the ops of a collapsed group are one node. Layers follow the
// longest path from the inputs; each layer is ordered by the mean position of its
// predecessors. Linear in nodes and edges, plus a sort per layer.

import type { GraphInfo, TensorInfo } from "../api";
import { groupOf } from "./groups";

export type LayoutNodeKind = "op" | "input" | "output" | "group";

export interface LayoutNode {
  /** "op:NAME", "in:TENSOR" or "out:TENSOR". */
  id: string;
  kind: LayoutNodeKind;
  /** Op node: the node name; input/output: the tensor name; group: the group name. */
  name: string;
  /** Op type, or "input" / "output" / "group". */
  label: string;
  /** Shape and dtype of the (first) output tensor; a group: how many nodes it holds. */
  detail: string;
  /** The group an op belongs to (see `groupOf`), "" for inputs and outputs. */
  group: string;
  /** A group node: how many ops it stands for; 1 otherwise. */
  count: number;
  layer: number;
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface LayoutEdge {
  from: string;
  to: string;
  tensor: string;
}

export interface GraphLayout {
  nodes: LayoutNode[];
  edges: LayoutEdge[];
  width: number;
  height: number;
  /** Nodes left out because the graph is larger than the layout limit. */
  omitted: number;
}

export const NODE_W = 168;
export const NODE_H = 40;
const GAP_X = 28;
const GAP_Y = 44;
export const MAX_LAYOUT_NODES = 3000;

export function tensorLabel(t: TensorInfo | undefined): string {
  if (!t) return "";
  return `${t.dtype}[${t.shape.join("×")}]`;
}

/**
 * Lays out `graph`; the ops of each group named in `collapsed` become one node
 * (`grp:NAME`), and the tensors between two drawn nodes one edge.
 */
export function layoutGraph(
  graph: GraphInfo,
  types: Map<string, TensorInfo>,
  collapsed: ReadonlySet<string> = new Set(),
): GraphLayout {
  const ops = graph.nodes.slice(0, MAX_LAYOUT_NODES);
  const omitted = graph.nodes.length - ops.length;
  const nodes: LayoutNode[] = [];
  const byId = new Map<string, LayoutNode>();
  const add = (n: Omit<LayoutNode, "layer" | "x" | "y" | "w" | "h" | "count">): LayoutNode => {
    const full: LayoutNode = { ...n, count: 1, layer: 0, x: 0, y: 0, w: NODE_W, h: NODE_H };
    nodes.push(full);
    byId.set(full.id, full);
    return full;
  };
  const producer = new Map<string, string>();
  for (const t of graph.inputs) {
    add({
      id: `in:${t.name}`,
      kind: "input",
      name: t.name,
      label: "input",
      detail: tensorLabel(t),
      group: "",
    });
    producer.set(t.name, `in:${t.name}`);
  }
  // The drawn node of each op: itself, or its collapsed group.
  const drawnOf = (op: { name: string }): string => {
    const g = groupOf(op.name);
    return collapsed.has(g) ? `grp:${g}` : `op:${op.name}`;
  };
  for (const op of ops) {
    const id = drawnOf(op);
    const group = groupOf(op.name);
    const seen = byId.get(id);
    if (seen) {
      seen.count++;
      seen.detail = `${seen.count} nodes`;
    } else if (id.startsWith("grp:")) {
      add({ id, kind: "group", name: group, label: "group", detail: "1 node", group });
    } else {
      add({
        id,
        kind: "op",
        name: op.name,
        label: op.op,
        detail: tensorLabel(types.get(op.outputs[0] ?? "")),
        group,
      });
    }
    for (const o of op.outputs) producer.set(o, id);
  }
  for (const t of graph.outputs) {
    add({
      id: `out:${t.name}`,
      kind: "output",
      name: t.name,
      label: "output",
      detail: tensorLabel(t),
      group: "",
    });
  }
  // One edge per pair of drawn nodes (the first tensor names it); none inside a group.
  const edges: LayoutEdge[] = [];
  const linked = new Set<string>();
  const link = (from: string | undefined, to: string, tensor: string): void => {
    if (!from || from === to) return;
    const key = `${from}\u0000${to}`;
    if (linked.has(key)) return;
    linked.add(key);
    edges.push({ from, to, tensor });
  };
  for (const op of ops) {
    const to = drawnOf(op);
    for (const i of op.inputs) link(producer.get(i), to, i);
  }
  for (const t of graph.outputs) link(producer.get(t.name), `out:${t.name}`, t.name);

  // Longest-path layers, visiting nodes in a topological order (Kahn's); graph order
  // already is one, but a collapsed group can sit before an op it depends on, and a
  // group that feeds itself through an op outside it makes a cycle, whose nodes are then
  // taken in graph order.
  const preds = new Map<string, string[]>();
  const succs = new Map<string, string[]>();
  const indegree = new Map<string, number>();
  for (const e of edges) {
    (preds.get(e.to) ?? preds.set(e.to, []).get(e.to)!).push(e.from);
    (succs.get(e.from) ?? succs.set(e.from, []).get(e.from)!).push(e.to);
    indegree.set(e.to, (indegree.get(e.to) ?? 0) + 1);
  }
  const visited = new Set<string>();
  const visit = (n: LayoutNode): void => {
    let layer = 0;
    for (const p of preds.get(n.id) ?? []) {
      if (visited.has(p)) layer = Math.max(layer, (byId.get(p)?.layer ?? 0) + 1);
    }
    n.layer = n.kind === "input" ? 0 : layer;
    visited.add(n.id);
  };
  const ready: LayoutNode[] = nodes.filter((n) => !indegree.get(n.id));
  let next = 0;
  for (let head = 0; visited.size < nodes.length;) {
    if (head === ready.length) {
      // A cycle: take the first node not yet visited, in graph order.
      while (next < nodes.length && visited.has(nodes[next]!.id)) next++;
      const n = nodes[next];
      if (!n) break;
      ready.push(n);
      indegree.set(n.id, 0);
    }
    const n = ready[head++]!;
    if (visited.has(n.id)) continue;
    visit(n);
    for (const s of succs.get(n.id) ?? []) {
      const d = (indegree.get(s) ?? 0) - 1;
      indegree.set(s, d);
      const sn = byId.get(s);
      if (d === 0 && sn && !visited.has(s)) ready.push(sn);
    }
  }
  const layers: LayoutNode[][] = [];
  for (const n of nodes) (layers[n.layer] ??= []).push(n);

  // Order each layer by the mean x of its predecessors, then place.
  let width = 0;
  const order = new Map<string, number>();
  layers.forEach((layer, li) => {
    if (li > 0) {
      const key = (n: LayoutNode): number => {
        const ps = preds.get(n.id) ?? [];
        if (ps.length === 0) return Number.MAX_SAFE_INTEGER;
        return ps.reduce((s, p) => s + (order.get(p) ?? 0), 0) / ps.length;
      };
      const keyed = layer.map((n, i) => ({ n, k: key(n), i }));
      keyed.sort((a, b) => a.k - b.k || a.i - b.i);
      layer.splice(0, layer.length, ...keyed.map((x) => x.n));
    }
    layer.forEach((n, i) => {
      order.set(n.id, i);
      n.x = i * (NODE_W + GAP_X);
      n.y = li * (NODE_H + GAP_Y);
    });
    width = Math.max(width, layer.length * (NODE_W + GAP_X) - GAP_X);
  });
  // Centre each layer.
  for (const layer of layers) {
    const w = layer.length * (NODE_W + GAP_X) - GAP_X;
    const shift = (width - w) / 2;
    for (const n of layer) n.x += shift;
  }
  const height = Math.max(0, layers.length * (NODE_H + GAP_Y) - GAP_Y);
  return { nodes, edges, width: Math.max(width, 0), height, omitted };
}

/** Tensor types: graph inputs and outputs, plus every type the canonicalize snapshot lists. */
export function tensorTypes(graph: GraphInfo, canonicalizeData: unknown): Map<string, TensorInfo> {
  const out = new Map<string, TensorInfo>();
  const types = (canonicalizeData as { types?: Record<string, unknown> } | null)?.types;
  if (types && typeof types === "object") {
    for (const [name, v] of Object.entries(types)) {
      const t = v as { dtype?: unknown; shape?: unknown };
      if (typeof t.dtype === "string" && Array.isArray(t.shape))
        out.set(name, { name, dtype: t.dtype, shape: t.shape.map(Number) });
    }
  }
  for (const t of [...graph.inputs, ...graph.outputs]) out.set(t.name, t);
  return out;
}
