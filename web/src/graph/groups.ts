// Groups of graph nodes by name: `layer3.attn.q_proj` belongs to `layer3`, as in the
// driver's per-layer breakdown (crates/driver/src/layers.rs), so a big model folds into its
// blocks and layers.

import type { GraphInfo } from "../api";

/** Graphs with more nodes than this open with their groups collapsed. */
export const COLLAPSE_ABOVE = 300;

/** The group of a node: its name up to the first `.` or `/`. */
export function groupOf(name: string): string {
  const i = name.search(/[./]/);
  return i < 0 ? name : name.slice(0, i);
}

/** Groups of two or more nodes, with their sizes, in the order they first appear. */
export function graphGroups(graph: GraphInfo): Map<string, number> {
  const count = new Map<string, number>();
  for (const n of graph.nodes) {
    const g = groupOf(n.name);
    count.set(g, (count.get(g) ?? 0) + 1);
  }
  for (const [g, n] of count) if (n < 2) count.delete(g);
  return count;
}

/** The groups a graph opens with collapsed: all of them when the graph is big, else none. */
export function defaultCollapsed(graph: GraphInfo): Set<string> {
  return graph.nodes.length > COLLAPSE_ABOVE ? new Set(graphGroups(graph).keys()) : new Set();
}
