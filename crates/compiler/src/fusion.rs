//! The `fusion` pass: runs of consecutive elementwise ops (and row reductions a core does
//! whole) that every core runs on the same slice become one kernel.
//!
//! A fused kernel loads each external input once, computes the chain on scratchpad tiles
//! and stores only the values read outside the chain (see `lower_ktir::fuse`). What it
//! saves: the reloads of inputs several members read (the norm reads `x` twice), the
//! stores and loads of intermediates, and one launch (a barrier over every core) per
//! member after the first.
//!
//! An op joins the run before it when
//! - it is pointwise or a reduction (movement, matmul and row ops end a run: they change
//!   the iteration space or need a cross-core step);
//! - its work division is the run's: the same splits and the same core-to-slice table, so
//!   every core holds the same slice of every member;
//! - no reduction dim of it is split over cores;
//! - every tensor it reads from the run is in the cores' scratchpads (one held in DRAM
//!   could be written by another core, and a kernel has no barrier inside);
//! - its kernel is not cut into time steps (its slice fits the scratchpad at once);
//! - the fused kernel's working set fits the scratchpad budget of its members.
//!
//! Each run that fails one of these says why in the snapshot.
//!
//! [`crate::Options::fuse`] turns the pass off: every op is then a kernel of its own.

use crate::ops::{Category, DeviceOp};
use crate::{Compilation, CompileError, Placement};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One fused kernel: consecutive device ops lowered as one KTIR function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FusionGroup {
    /// The kernel's name: the members' common graph node, else first and last member.
    pub name: String,
    /// Index in `c.ops` of the first member.
    pub first: usize,
    /// Number of members (at least 2).
    pub len: usize,
    /// Tensors the members produce that only later members read: never stored.
    pub internal: Vec<String>,
}

impl FusionGroup {
    /// The member op indices.
    pub fn ops(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.len
    }
}

/// What the pass decided: the groups, and why neighbouring candidates stayed apart.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FusionReport {
    /// Whether the pass ran (off with `--no-fuse`).
    pub enabled: bool,
    pub groups: Vec<FusionGroup>,
    /// (op, reason): an elementwise op left out of every fused kernel, an op next to one, or
    /// a run that does not join the op before it, and why.
    pub left_alone: Vec<(String, String)>,
}

/// The layer or block a device op belongs to, for names that say (`layer3.attn.scale` and
/// `final_norm/mean` give `layer3` and `final_norm`; a plain `mean` gives `None`): the same
/// rule as the per-layer breakdown, which credits a kernel to one block.
fn block_of(op: &str) -> Option<&str> {
    op.find(['.', '/']).map(|at| &op[..at])
}

/// Why op `i` cannot join a run whose last member is `prev` (`None`: it may).
fn join_reason(
    c: &Compilation,
    produced: &BTreeSet<&str>,
    prev: usize,
    i: usize,
) -> Option<String> {
    if let (Some(x), Some(y)) = (block_of(&c.ops[prev].name), block_of(&c.ops[i].name)) {
        if x != y {
            return Some(format!(
                "it starts block `{y}` and the chain is in `{x}`: a kernel stays within one \
                 layer or block, so each block's cycles stay its own"
            ));
        }
    }
    let (a, b) = (&c.divisions[prev], &c.divisions[i]);
    if a.splits != b.splits || a.core_to_slice != b.core_to_slice {
        return Some(format!(
            "its work division ({:?} over {} cores) is not the chain's ({:?} over {} cores)",
            b.splits, b.cores_used, a.splits, a.cores_used
        ));
    }
    let op = &c.ops[i];
    for t in &op.inputs {
        if produced.contains(t.as_str())
            && !matches!(c.placements.get(t), Some(Placement::Scratchpad { .. }))
        {
            return Some(format!(
                "'{t}' goes through DRAM between them (a core may read another core's slice)"
            ));
        }
    }
    None
}

/// Why op `i` cannot be a member of any fused kernel (`None`: it can).
fn candidate_reason(c: &Compilation, i: usize, tiled: &BTreeMap<usize, usize>) -> Option<String> {
    let op: &DeviceOp = &c.ops[i];
    match op.kind.category() {
        Category::Pointwise | Category::Reduction => {}
        Category::Movement => {
            return Some(format!(
                "{} is a movement op: it changes the iteration space",
                op.kind.name()
            ))
        }
        Category::Matmul => return Some("a matmul (epilogues are not fused yet)".into()),
        Category::RowOp => return Some(format!("{} is a row op", op.kind.name())),
    }
    let div = &c.divisions[i];
    if op
        .iteration
        .iter()
        .zip(&div.splits)
        .any(|(d, &s)| d.reduction && s > 1)
    {
        return Some("its reduction is split over cores".into());
    }
    if let Some(steps) = tiled.get(&i) {
        return Some(format!(
            "its slice does not fit the scratchpad at once (cut into {steps} time steps)"
        ));
    }
    None
}

/// The name of a group: the common graph node of its members (`node/step` names), else
/// `first+last`.
fn group_name(ops: &[DeviceOp]) -> String {
    let node = |n: &str| n.split('/').next().unwrap_or(n).to_string();
    let first = node(&ops[0].name);
    if ops.iter().all(|o| node(&o.name) == first) {
        first
    } else {
        format!("{}+{}", ops[0].name, ops[ops.len() - 1].name)
    }
}

/// Runs the pass: fills `c.fusion` (empty when `enabled` is false).
pub fn run(
    c: &mut Compilation,
    enabled: bool,
    double_buffer: bool,
) -> Result<FusionReport, CompileError> {
    c.fusion.clear();
    let mut report = FusionReport {
        enabled,
        ..FusionReport::default()
    };
    if !enabled {
        return Ok(report);
    }
    let n = c.ops.len();
    if c.divisions.len() != n {
        return Err(CompileError::new(
            "fusion needs a work division per op",
            None,
        ));
    }
    let tiled = crate::lower_ktir::time_tiled(c, double_buffer, |i| {
        matches!(
            c.ops[i].kind.category(),
            Category::Pointwise | Category::Reduction
        )
    })?;
    let ok: Vec<Option<String>> = (0..n).map(|i| candidate_reason(c, i, &tiled)).collect();
    // Runs of candidates, cut where an op cannot join.
    let mut runs: Vec<Vec<usize>> = Vec::new();
    let mut produced: BTreeSet<&str> = BTreeSet::new();
    for i in 0..n {
        match &ok[i] {
            Some(why) => {
                let prev_candidate = i > 0 && ok[i - 1].is_none();
                let next_candidate = i + 1 < n && ok[i + 1].is_none();
                let elementwise = matches!(
                    c.ops[i].kind.category(),
                    Category::Pointwise | Category::Reduction
                );
                if elementwise || prev_candidate || next_candidate {
                    report.left_alone.push((c.ops[i].name.clone(), why.clone()));
                }
                produced.clear();
            }
            None => {
                let joined = match runs.last() {
                    Some(run) if run.last() == Some(&(i.wrapping_sub(1))) && i > 0 => {
                        match join_reason(c, &produced, i - 1, i) {
                            None => true,
                            Some(why) => {
                                report.left_alone.push((c.ops[i].name.clone(), why));
                                false
                            }
                        }
                    }
                    _ => false,
                };
                if joined {
                    if let Some(run) = runs.last_mut() {
                        run.push(i);
                    }
                } else {
                    produced.clear();
                    runs.push(vec![i]);
                }
                produced.extend(c.ops[i].outputs.iter().map(|s| s.as_str()));
            }
        }
    }
    let outputs: BTreeSet<&str> = c.graph.outputs.iter().map(|s| s.as_str()).collect();
    let mut last_reader: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, o) in c.ops.iter().enumerate() {
        for t in &o.inputs {
            last_reader.insert(t.as_str(), i);
        }
    }
    let mut groups = Vec::new();
    for run in runs.into_iter().filter(|r| r.len() > 1) {
        let (first, len) = (run[0], run.len());
        let end = first + len;
        let internal: Vec<String> = c.ops[first..end]
            .iter()
            .flat_map(|o| o.outputs.iter())
            .filter(|t| !outputs.contains(t.as_str()))
            .filter(|t| last_reader.get(t.as_str()).is_some_and(|&r| r < end))
            .cloned()
            .collect();
        let group = FusionGroup {
            name: group_name(&c.ops[first..end]),
            first,
            len,
            internal,
        };
        match crate::lower_ktir::fused_fits(c, &group, double_buffer)? {
            None => groups.push(group),
            Some(why) => report.left_alone.push((c.ops[first].name.clone(), why)),
        }
    }
    c.fusion = groups.clone();
    report.groups = groups;
    Ok(report)
}

/// The snapshot text of the pass: one line per fused kernel, then what was left alone.
pub fn render(c: &Compilation, report: &FusionReport) -> String {
    let mut s = String::new();
    if !report.enabled {
        s.push_str("fusion off: every device op is a kernel of its own\n");
        return s;
    }
    let fused: usize = report.groups.iter().map(|g| g.len).sum();
    s.push_str(&format!(
        "{} fused kernels of {fused} device ops; {} kernels in all (from {} device ops)\n",
        report.groups.len(),
        c.ops.len() - fused + report.groups.len(),
        c.ops.len()
    ));
    for g in &report.groups {
        let names: Vec<String> = c.ops[g.ops()]
            .iter()
            .map(|o| format!("{} ({})", o.name, o.kind.name()))
            .collect();
        s.push_str(&format!(
            "fused {} [ops {}..{}]: {}\n",
            g.name,
            g.first,
            g.first + g.len - 1,
            names.join(", ")
        ));
        if g.internal.is_empty() {
            s.push_str("  every member's result is read outside the chain, so each is stored\n");
        } else {
            s.push_str(&format!(
                "  never stored (only the chain reads them): {}\n",
                g.internal.join(", ")
            ));
        }
    }
    for (op, why) in &report.left_alone {
        s.push_str(&format!("not fused: {op}: {why}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use crate::passes::tests::{example, graph_of};
    use crate::{compile, Options, Target};

    fn fused(g: &graph::Graph, fuse: bool) -> crate::Compilation {
        let o = Options {
            fuse,
            ..Options::default()
        };
        compile(g, &Target::spyre32(), &o).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_fused_kernel_stays_within_one_layer_or_block() {
        let c = fused(&example("tiny_two_layer.json"), true);
        assert!(!c.fusion.is_empty());
        for g in &c.fusion {
            let blocks: std::collections::BTreeSet<_> = c.ops[g.ops()]
                .iter()
                .map(|o| super::block_of(&o.name))
                .collect();
            assert_eq!(blocks.len(), 1, "{} spans {blocks:?}", g.name);
        }
        // The residual add that ends a layer would fuse with the next layer's norm but for
        // the boundary; the snapshot says why it did not.
        let snap = &c.snapshot("fusion").expect("snapshot").text;
        assert!(
            snap.contains("not fused: final_norm/square: it starts block `final_norm`"),
            "{snap}"
        );
    }

    #[test]
    fn the_rms_norm_is_one_kernel_loading_x_once_and_storing_only_y() {
        let c = fused(&example("rmsnorm.json"), true);
        assert_eq!(c.fusion.len(), 1);
        assert_eq!((c.fusion[0].first, c.fusion[0].len), (0, 7));
        let text = c.ktir.as_deref().expect("ktir");
        if let Err(d) = ktir::check(text) {
            panic!("{}\n{text}", ktir::render_diagnostics("ktir", &d));
        }
        assert_eq!(text.matches("func.func").count(), 1, "{text}");
        assert!(text.contains(
            "func.func @k0_square_scale(%x: index, %eps: index, %weight: index, %y: index)"
        ));
        // x is read by the square and the normalize, but loaded once.
        assert_eq!(text.matches("ktdp.load %x_tile").count(), 1, "{text}");
        // Only y is stored; the intermediates never leave the chain.
        assert_eq!(text.matches("ktdp.store").count(), 1, "{text}");
        assert!(text.contains("ktdp.store %v3, %y_tile"), "{text}");
        assert!(!text.contains("memory_space<ct_local>"), "{text}");
        let snap = &c.snapshot("fusion").expect("snapshot").text;
        assert!(snap.contains("fused square+scale [ops 0..6]"), "{snap}");
        assert!(snap.contains("never stored (only the chain reads them): square, mean_square, add_eps, sqrt, rsqrt, normalize"), "{snap}");
        // Off, every op is a kernel of its own.
        let off = fused(&example("rmsnorm.json"), false);
        assert!(off.fusion.is_empty());
        assert_eq!(
            off.ktir
                .as_deref()
                .unwrap_or("")
                .matches("func.func")
                .count(),
            7
        );
        assert!(off
            .snapshot("fusion")
            .expect("snapshot")
            .text
            .starts_with("fusion off"));
    }

    #[test]
    fn a_shape_change_ends_a_chain_and_says_why() {
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [64, 128]}"#,
            "",
            r#"{"name": "double", "op": "Add", "inputs": ["x", "x"], "outputs": ["a"]},
               {"name": "flip", "op": "Reshape", "inputs": ["a"], "outputs": ["b"], "attrs": {"shape": [128, 64]}},
               {"name": "relu", "op": "Relu", "inputs": ["b"], "outputs": ["c"]},
               {"name": "neg", "op": "Neg", "inputs": ["c"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let c = fused(&g, true);
        let snap = &c.snapshot("fusion").expect("snapshot").text;
        assert!(snap.contains("fused relu+neg [ops 2..3]"), "{snap}");
        assert!(
            snap.contains(
                "not fused: flip: reshape is a movement op: it changes the iteration space"
            ),
            "{snap}"
        );
        assert_eq!(c.fusion.len(), 1);
    }

    #[test]
    fn a_slice_too_large_for_the_scratchpad_is_left_alone_and_says_why() {
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [32, 1048576]}"#,
            "",
            r#"{"name": "relu", "op": "Relu", "inputs": ["x"], "outputs": ["r"]},
               {"name": "neg", "op": "Neg", "inputs": ["r"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let o = Options {
            stop_after: Some("fusion".into()),
            ..Options::default()
        };
        let c = compile(&g, &Target::spyre32(), &o).unwrap_or_else(|e| panic!("{e}"));
        assert!(c.fusion.is_empty());
        let snap = &c.snapshot("fusion").expect("snapshot").text;
        assert!(
            snap.contains(
                "not fused: relu: its slice does not fit the scratchpad at once (cut into"
            ),
            "{snap}"
        );
    }

    #[test]
    fn split_mismatch_between_neighbours_is_named() {
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [2, 196608]}"#,
            "",
            r#"{"name": "square", "op": "Mul", "inputs": ["x", "x"], "outputs": ["sq"]},
               {"name": "mean", "op": "ReduceMean", "inputs": ["sq"], "outputs": ["y"], "attrs": {"axes": [-1], "keepdims": 1}}"#,
            r#""y""#,
        );
        let c = fused(&g, true);
        let snap = &c.snapshot("fusion").expect("snapshot").text;
        assert!(
            snap.contains("not fused: mean: its work division ([2, 1] over 2 cores) is not the chain's ([1, 32] over 32 cores)"),
            "{snap}"
        );
    }
}
