// Layered layout of a model graph (runs in the worker). Pure: graph in, boxes and edges out.
// Ops and graph inputs/outputs are nodes; tensors are edges. Layers follow the longest path
// from the inputs; each layer is ordered by the mean position of its predecessors.

import type { GraphInfo, TensorInfo } from "../api";

export type LayoutNodeKind = "op" | "input" | "output";

export interface LayoutNode {
  /** "op:NAME", "in:TENSOR" or "out:TENSOR". */
  id: string;
  kind: LayoutNodeKind;
  /** Op node: the node name; input/output: the tensor name. */
  name: string;
  /** Op type, or "input" / "output". */
  label: string;
  /** Shape and dtype of the (first) output tensor. */
  detail: string;
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

export function layoutGraph(graph: GraphInfo, types: Map<string, TensorInfo>): GraphLayout {
  const ops = graph.nodes.slice(0, MAX_LAYOUT_NODES);
  const omitted = graph.nodes.length - ops.length;
  const nodes: LayoutNode[] = [];
  const byId = new Map<string, LayoutNode>();
  const add = (n: Omit<LayoutNode, "layer" | "x" | "y" | "w" | "h">): LayoutNode => {
    const full: LayoutNode = { ...n, layer: 0, x: 0, y: 0, w: NODE_W, h: NODE_H };
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
    });
    producer.set(t.name, `in:${t.name}`);
  }
  for (const op of ops) {
    add({
      id: `op:${op.name}`,
      kind: "op",
      name: op.name,
      label: op.op,
      detail: tensorLabel(types.get(op.outputs[0] ?? "")),
    });
    for (const o of op.outputs) producer.set(o, `op:${op.name}`);
  }
  for (const t of graph.outputs) {
    add({
      id: `out:${t.name}`,
      kind: "output",
      name: t.name,
      label: "output",
      detail: tensorLabel(t),
    });
  }
  const edges: LayoutEdge[] = [];
  for (const op of ops) {
    for (const i of op.inputs) {
      const from = producer.get(i);
      if (from) edges.push({ from, to: `op:${op.name}`, tensor: i });
    }
  }
  for (const t of graph.outputs) {
    const from = producer.get(t.name);
    if (from) edges.push({ from, to: `out:${t.name}`, tensor: t.name });
  }

  // Longest-path layers (graph nodes are in topological order; inputs first).
  const preds = new Map<string, string[]>();
  for (const e of edges) {
    const list = preds.get(e.to) ?? [];
    list.push(e.from);
    preds.set(e.to, list);
  }
  for (const n of nodes) {
    let layer = 0;
    for (const p of preds.get(n.id) ?? []) layer = Math.max(layer, (byId.get(p)?.layer ?? 0) + 1);
    n.layer = n.kind === "input" ? 0 : layer;
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
