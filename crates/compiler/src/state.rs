//! The program state as one canonical text, the same form after every pass up to
//! `scratchpad`, so that the diff of two consecutive snapshots is exactly what the later
//! pass changed.
//!
//! The text is a list of entities, each a header line at column 0 followed by its
//! attribute lines (indented two spaces, continuation lines four):
//!
//! ```text
//! program NAME: ...            the graph's interface, the target, canonicalize's changes,
//!                              and (after scratchpad) the allocator's totals
//! tensor NAME: TYPE (ROLE)     then `layout:`, `dram:` and `scratchpad:` as passes add them
//! node NAME: OP(INPUTS) -> OUTPUTS
//! op NAME: KIND(INPUTS) -> OUTPUTS  iter [...]
//!                              then `restickify:`, `split:`, `rule:` and `core ->` lines
//! ```
//!
//! Tensors are sorted by name, nodes and ops kept in order. A pass only adds or rewrites the
//! lines of the entities it touches, so a reader (or the page) can diff per entity.

use crate::layout::LayoutNotes;
use crate::passes::CanonicalizeReport;
use crate::scratchpad::ScratchpadPlan;
use crate::Compilation;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// What the passes found out besides the [`Compilation`] itself, kept so each later
/// snapshot still shows it.
#[derive(Debug, Clone, Default)]
pub struct PassNotes {
    /// Canonicalize's changes, as lines.
    pub canonicalize: Vec<String>,
    /// Layout notes by tensor (why a layout is not the default).
    pub layout: LayoutNotes,
    /// Restickify ops by name: what they move and why.
    pub restick: BTreeMap<String, String>,
    /// The scratchpad plan, once made.
    pub plan: Option<ScratchpadPlan>,
}

impl PassNotes {
    /// Records canonicalize's report.
    pub fn set_canonicalize(&mut self, r: &CanonicalizeReport) {
        let mut out = Vec::new();
        let mut add = |what: &str, xs: &[String]| {
            if !xs.is_empty() {
                out.push(format!("{what} {}", xs.join(", ")));
            }
        };
        add("folded Identity", &r.folded_identities);
        add("folded constant nodes", &r.folded_constants);
        add("views (users read the input in place):", &r.views);
        add("removed dead nodes", &r.removed_nodes);
        add("removed unused initializers", &r.removed_initializers);
        self.canonicalize = out;
    }

    /// Records the layout pass's notes and restickify ops (`"OP: FROM -> TO (WHY)"`).
    pub fn set_layout(&mut self, notes: LayoutNotes, restick: &[String]) {
        self.layout = notes;
        self.restick = restick
            .iter()
            .map(|r| match r.split_once(": ") {
                Some((op, rest)) => (op.to_string(), rest.to_string()),
                None => (r.clone(), String::new()),
            })
            .collect();
    }
}

/// The program state after a pass, in the canonical form of the module doc.
pub fn render(c: &Compilation, notes: &PassNotes) -> String {
    let mut s = String::new();
    program(&mut s, c, notes);
    tensors(&mut s, c, notes);
    let g = &c.graph;
    for n in &g.nodes {
        let _ = writeln!(
            s,
            "node {}: {}({}) -> {}",
            n.name,
            n.op,
            n.inputs.join(", "),
            n.outputs.join(", ")
        );
    }
    for (i, op) in c.ops.iter().enumerate() {
        let _ = writeln!(s, "op {}", crate::ops::describe_op(op));
        if let Some(r) = notes.restick.get(&op.name) {
            let _ = writeln!(s, "  restickify: {r}");
        }
        if let Some(d) = c.divisions.get(i) {
            let splits: Vec<String> = op
                .iteration
                .iter()
                .zip(&d.splits)
                .map(|(it, x)| format!("{}={x}", it.label))
                .collect();
            let _ = writeln!(s, "  split: {} -> {} cores", splits.join(" "), d.cores_used);
            let _ = writeln!(s, "  rule: {}", d.rule);
            let dims: Vec<usize> = (0..d.splits.len()).filter(|&k| d.splits[k] > 1).collect();
            if !dims.is_empty() {
                let labels: Vec<&str> = dims
                    .iter()
                    .filter_map(|&k| op.iteration.get(k).map(|it| it.label.as_str()))
                    .collect();
                let _ = write!(s, "  core -> ({}):", labels.join(","));
                for (core, sl) in d.core_to_slice.iter().enumerate() {
                    if core % 8 == 0 {
                        s.push_str("\n   ");
                    }
                    let v: Vec<String> = dims
                        .iter()
                        .map(|&k| sl.get(k).map_or("?".to_string(), |x| x.to_string()))
                        .collect();
                    let _ = write!(s, " {core}:({})", v.join(","));
                }
                s.push('\n');
            }
        }
    }
    s
}

fn program(s: &mut String, c: &Compilation, notes: &PassNotes) {
    let g = &c.graph;
    let _ = writeln!(
        s,
        "program {}: {} inputs, {} initializers, {} nodes, outputs {}",
        g.name,
        g.inputs.len(),
        g.initializers.len(),
        g.nodes.len(),
        g.outputs.join(", ")
    );
    let _ = writeln!(
        s,
        "  target: {} cores, {} B sticks",
        c.target.cores, c.target.stick_bytes
    );
    if notes.canonicalize.is_empty() {
        s.push_str("  canonicalize: no changes\n");
    } else {
        for ch in &notes.canonicalize {
            let _ = writeln!(s, "  canonicalize: {ch}");
        }
    }
    if let Some(p) = &notes.plan {
        let _ = writeln!(
            s,
            "  allocator: {}, capacity {} B per core, peak {} B per core, dram {} B",
            p.allocator, p.capacity_bytes, p.peak_bytes, p.dram_bytes
        );
    }
}

fn tensors(s: &mut String, c: &Compilation, notes: &PassNotes) {
    let mut names: BTreeSet<&str> = c.types.keys().map(|k| k.as_str()).collect();
    names.extend(c.layouts.keys().map(|k| k.as_str()));
    let mut dram: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let mut buffers = BTreeMap::new();
    if let Some(p) = &notes.plan {
        for (t, off, bytes) in &p.dram {
            dram.insert(t.as_str(), (*off, *bytes));
            names.insert(t.as_str());
        }
        for b in &p.buffers {
            buffers.insert(b.tensor.as_str(), b);
            names.insert(b.tensor.as_str());
        }
    }
    for name in names {
        let ty = c.types.get(name).map_or("?".to_string(), |t| {
            let d: Vec<String> = t.shape.iter().map(|x| x.to_string()).collect();
            format!("{}[{}]", t.dtype.name(), d.join(","))
        });
        let role = c.role_of(name);
        let _ = writeln!(s, "tensor {name}: {ty} ({role})");
        if let Some(l) = c.layouts.get(name) {
            let _ = write!(s, "  layout: {}", l.describe());
            if let Some(n) = notes.layout.get(name) {
                let _ = write!(s, "  ({n})");
            }
            s.push('\n');
        }
        let buffer = buffers.get(name);
        if let Some((off, bytes)) = dram.get(name) {
            let _ = write!(s, "  dram: offset {off}, {bytes} B");
            if let Some(b) = buffer {
                let _ = write!(s, ", ops [{}, {})", b.start, b.end);
                if let Some(r) = &b.dram_reason {
                    let _ = write!(s, "  ({r})");
                }
            }
            s.push('\n');
        }
        if let Some(b) = buffer {
            if let Some(off) = b.offset {
                let _ = write!(
                    s,
                    "  scratchpad: offset {off}, {} B/core, ops [{}, {})",
                    b.bytes_per_core, b.start, b.end
                );
                if let Some(parent) = &b.in_place_of {
                    let _ = write!(s, "  in place of {parent}");
                }
                s.push('\n');
            }
        }
    }
}

/// A state text with extra attribute lines: `program` lines after the program header, and
/// `shard:` lines after the header of each tensor and node named in `tensors` and `nodes`.
/// For passes that describe the state without changing it (the tensor-parallel pass says
/// how each tensor and node is cut over the cards), so their diff is exactly what they add.
pub fn annotate(
    text: &str,
    program: &[String],
    tensors: &BTreeMap<String, String>,
    nodes: &BTreeMap<String, String>,
) -> String {
    let mut s = String::with_capacity(text.len() * 2);
    for line in text.lines() {
        s.push_str(line);
        s.push('\n');
        let note = if line.starts_with("program ") {
            for p in program {
                let _ = writeln!(s, "  {p}");
            }
            None
        } else if let Some(rest) = line.strip_prefix("tensor ") {
            rest.split_once(": ").and_then(|(n, _)| tensors.get(n))
        } else if let Some(rest) = line.strip_prefix("node ") {
            rest.split_once(": ").and_then(|(n, _)| nodes.get(n))
        } else {
            None
        };
        if let Some(note) = note {
            let _ = writeln!(s, "  shard: {note}");
        }
    }
    s
}

#[cfg(test)]
mod annotate_tests {
    use super::*;

    #[test]
    fn annotations_follow_their_entity_headers() {
        let text = "program g: x\n  target: 1\ntensor a: f16[2] (input)\nnode n: Add(a, a) -> b\n";
        let t = BTreeMap::from([("a".to_string(), "replicated".to_string())]);
        let n = BTreeMap::from([("n".to_string(), "sharded".to_string())]);
        let out = annotate(text, &["tensor parallel: 2 cards".into()], &t, &n);
        assert_eq!(
            out,
            "program g: x\n  tensor parallel: 2 cards\n  target: 1\ntensor a: f16[2] (input)\n  shard: replicated\nnode n: Add(a, a) -> b\n  shard: sharded\n"
        );
    }
}
