// Which buffers of a KTIR module the program writes. A module's buffers are its functions'
// arguments; memory views and access tiles are built over them, and `ktdp.store` writes
// through a tile. A buffer that is only ever loaded is an input of the module's graph, not
// an output. Pure text analysis (no wasm), so the page can label the graph without a new
// field from the run.

/** Ops whose result is a view of (part of) the buffer named by their first `%` operand. */
const VIEW_OPS =
  /^ktdp\.(construct_memory_view|construct_distributed_memory_view|construct_access_tile|construct_indirect_access_tile)\b/;

/** The function arguments a module loads from and stores to. */
export interface BufferUse {
  loaded: Set<string>;
  written: Set<string>;
}

/**
 * The arguments of `text`'s functions that some `ktdp.load` reads through and some
 * `ktdp.store` writes through, or null when a store's target cannot be traced back to an
 * argument (then every buffer may be written).
 */
export function bufferUse(text: string): BufferUse | null {
  // SSA value -> the function argument it is a view of.
  const root = new Map<string, string>();
  const written = new Set<string>();
  const loaded = new Set<string>();
  let untraced = false;
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\/\/.*$/, "").trim();
    const fn = /^func\.func\s+@[\w.$-]+\s*\(([^)]*)\)/.exec(line);
    if (fn) {
      root.clear();
      for (const m of (fn[1] ?? "").matchAll(/%([\w.$-]+)\s*:/g)) {
        const name = m[1] ?? "";
        root.set(name, name);
      }
      continue;
    }
    const def = /^%([\w.$-]+)(?::\d+)?\s*=\s*(.*)$/.exec(line);
    if (def) {
      const [, name = "", rhs = ""] = def;
      const first = /%([\w.$-]+)/.exec(rhs);
      const r = first ? root.get(first[1] ?? "") : undefined;
      if (VIEW_OPS.test(rhs)) {
        if (r !== undefined) root.set(name, r);
      } else if (/^ktdp\.load\b/.test(rhs) && r !== undefined) {
        loaded.add(r);
      }
      continue;
    }
    const store = /^ktdp\.store\s+%[\w.$-]+\s*,\s*%([\w.$-]+)/.exec(line);
    if (store) {
      const r = root.get(store[1] ?? "");
      if (r === undefined) untraced = true;
      else written.add(r);
    } else if (/^ktdp\.store\b/.test(line)) {
      untraced = true;
    }
  }
  return untraced ? null : { loaded, written };
}

/** A graph's input and output tensor lists (only the fields this module needs). */
export interface BufferLists<T extends { name: string }> {
  inputs: T[];
  outputs: T[];
}

/**
 * A KTIR module's graph with its loaded-only buffers moved from the outputs to the inputs.
 * Unchanged when the stores cannot all be traced; a buffer neither loaded nor stored stays.
 */
export function splitKtirBuffers<T extends { name: string }, G extends BufferLists<T>>(
  graph: G,
  ktir: string,
): G {
  const use = bufferUse(ktir);
  if (use === null) return graph;
  const readOnly = (t: T): boolean => use.loaded.has(t.name) && !use.written.has(t.name);
  const inputs = [...graph.inputs, ...graph.outputs.filter(readOnly)];
  const outputs = graph.outputs.filter((t) => !readOnly(t));
  return { ...graph, inputs, outputs };
}
