//! The pass manager and the `canonicalize` pass.
//!
//! `canonicalize` folds `Identity` nodes whose output is not a graph output (their users read
//! the input instead), folds nodes whose inputs are all constant, turns shape-only nodes
//! into views where that is legal (see [`fold_views`]), drops nodes none of whose outputs
//! reach a graph output, and drops initializers nothing reads. Graph inputs are the
//! interface and always stay.

use crate::state::PassNotes;
use crate::{layout, ops, scratchpad, sdsc_emit, state, workdiv};
use crate::{
    Compilation, CompileError, CompileProgress, Options, Snapshot, Target, WorkBudget, PASS_NAMES,
};
use graph::{Graph, TensorType};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// What canonicalize changed.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CanonicalizeReport {
    pub folded_identities: Vec<String>,
    /// Nodes whose inputs were all constant, replaced by their (evaluated) outputs.
    pub folded_constants: Vec<String>,
    /// Shape-only nodes whose users now read their input in place (a view).
    pub views: Vec<String>,
    pub removed_nodes: Vec<String>,
    pub removed_initializers: Vec<String>,
}

/// Canonicalizes a graph (see the module doc).
pub fn canonicalize(g: &Graph) -> (Graph, CanonicalizeReport) {
    let mut g = g.clone();
    let mut report = CanonicalizeReport::default();
    let outputs: BTreeSet<String> = g.outputs.iter().cloned().collect();
    // Fold Identity.
    let mut rename: BTreeMap<String, String> = BTreeMap::new();
    let mut kept = Vec::new();
    for mut n in std::mem::take(&mut g.nodes) {
        for i in n.inputs.iter_mut() {
            if let Some(r) = rename.get(i) {
                *i = r.clone();
            }
        }
        let foldable = n.op == "Identity"
            && n.inputs.len() == 1
            && n.outputs.len() == 1
            && !n.inputs[0].is_empty()
            && !outputs.contains(&n.outputs[0]);
        if foldable {
            rename.insert(n.outputs[0].clone(), n.inputs[0].clone());
            report.folded_identities.push(n.name.clone());
        } else {
            kept.push(n);
        }
    }
    let kept = fold_constants(&mut g.initializers, kept, &outputs, &mut report);
    g.nodes = kept;
    fold_views(&mut g, &outputs, &mut report);
    let kept = std::mem::take(&mut g.nodes);
    // Dead nodes, walking back from the outputs.
    let mut needed: BTreeSet<String> = outputs.clone();
    let mut live = vec![false; kept.len()];
    for (i, n) in kept.iter().enumerate().rev() {
        if n.outputs.iter().any(|o| needed.contains(o)) {
            live[i] = true;
            needed.extend(n.inputs.iter().filter(|s| !s.is_empty()).cloned());
        }
    }
    for (n, l) in kept.into_iter().zip(live) {
        if l {
            g.nodes.push(n);
        } else {
            report.removed_nodes.push(n.name);
        }
    }
    g.initializers.retain(|i| {
        let keep = needed.contains(&i.name);
        if !keep {
            report.removed_initializers.push(i.name.clone());
        }
        keep
    });
    (g, report)
}

/// Graph ops that broadcast their operands from the right (elementwise ops with several
/// inputs, and MatMul's batch dims): leading unit dims of an operand change nothing they
/// compute, as long as their result keeps its type.
const RIGHT_ALIGNED: &[&str] = &[
    "Add", "Sub", "Mul", "Div", "Max", "Min", "Where", "Equal", "Greater", "Less", "MatMul",
];

/// Turns shape-only nodes (Reshape, Unsqueeze, Squeeze, Flatten) into views: when a node only
/// adds or removes leading unit dims, every user broadcasts from the right
/// ([`RIGHT_ALIGNED`]), and every tensor keeps its type when the users read the node's
/// input directly, the users do so and the node goes. Its output then needs no buffer and no
/// kernel moves it. Any other shape-only node is a real rearrangement of sticks and stays.
fn fold_views(g: &mut Graph, outputs: &BTreeSet<String>, report: &mut CanonicalizeReport) {
    let Ok(mut types) = g.infer_types() else {
        return;
    };
    let mut i = 0;
    while i < g.nodes.len() {
        let n = &g.nodes[i];
        let candidate = matches!(
            n.op.as_str(),
            "Reshape" | "Unsqueeze" | "Squeeze" | "Flatten"
        ) && n.outputs.len() == 1
            && !outputs.contains(&n.outputs[0]);
        let (Some(x), Some(y)) = (n.inputs.first(), n.outputs.first()) else {
            i += 1;
            continue;
        };
        let leading_ones = |long: &[usize], short: &[usize]| {
            long.len() >= short.len()
                && long[long.len() - short.len()..] == *short
                && long[..long.len() - short.len()].iter().all(|&d| d == 1)
        };
        let same_elements = match (types.get(x), types.get(y)) {
            (Some(a), Some(b)) => {
                a.dtype == b.dtype
                    && (leading_ones(&a.shape, &b.shape) || leading_ones(&b.shape, &a.shape))
            }
            _ => false,
        };
        if !(candidate && same_elements && !x.is_empty()) {
            i += 1;
            continue;
        }
        // Only candidates look for their users: a scan per node would make this quadratic.
        let users: Vec<usize> = (0..g.nodes.len())
            .filter(|&u| g.nodes[u].inputs.contains(y))
            .collect();
        let right_aligned = !users.is_empty()
            && users
                .iter()
                .all(|&u| RIGHT_ALIGNED.contains(&g.nodes[u].op.as_str()));
        if !(candidate && same_elements && right_aligned && !x.is_empty()) {
            i += 1;
            continue;
        }
        let (x, y, name) = (x.clone(), y.clone(), n.name.clone());
        let mut trial = g.clone();
        let node = trial.nodes.remove(i);
        for u in trial.nodes.iter_mut() {
            for input in u.inputs.iter_mut() {
                if *input == y {
                    *input = x.clone();
                }
            }
        }
        let unchanged = trial
            .infer_types()
            .is_ok_and(|t| t.iter().all(|(k, ty)| types.get(k) == Some(ty)));
        if unchanged {
            *g = trial;
            let shape = |t: Option<&TensorType>| t.map(|t| format!("{:?}", t.shape));
            report.views.push(format!(
                "{name} ({} {} -> {})",
                node.op,
                shape(types.get(&x)).unwrap_or_default(),
                shape(types.get(&y)).unwrap_or_default()
            ));
            types.remove(&y);
        } else {
            i += 1;
        }
    }
}

/// Largest tensor (elements) constant folding evaluates or creates: folding exists to
/// remove small tables (masks, rotary tables), not to precompute weights.
const FOLD_LIMIT: usize = 1 << 20;

/// Evaluates, with the reference evaluator, every node whose inputs are all initializers
/// (or outputs of nodes folded before it) and turns its outputs into initializers. Nodes
/// that produce graph outputs, or whose tensors exceed [`FOLD_LIMIT`], are kept.
fn fold_constants(
    initializers: &mut Vec<graph::Initializer>,
    nodes: Vec<graph::Node>,
    outputs: &BTreeSet<String>,
    report: &mut CanonicalizeReport,
) -> Vec<graph::Node> {
    let mut kept = Vec::with_capacity(nodes.len());
    // Initializer positions by name, kept up to date as folded outputs join them.
    let mut by_name: BTreeMap<String, usize> = initializers
        .iter()
        .enumerate()
        .map(|(k, x)| (x.name.clone(), k))
        .collect();
    for n in nodes {
        let mut inputs: Vec<&String> = n.inputs.iter().filter(|i| !i.is_empty()).collect();
        // A node may read one tensor twice (concat(x, x)); the evaluator wants it once.
        inputs.sort();
        inputs.dedup();
        let consts: Option<Vec<graph::Initializer>> = inputs
            .iter()
            .map(|i| by_name.get(i.as_str()).map(|&k| initializers[k].clone()))
            .collect();
        let foldable = !inputs.is_empty()
            && !n.outputs.iter().any(|o| outputs.contains(o))
            && consts
                .as_ref()
                .is_some_and(|c| c.iter().all(|i| i.ty.numel() <= FOLD_LIMIT));
        let folded = match (foldable, consts) {
            (true, Some(consts)) => evaluate_node(&n, consts),
            _ => None,
        };
        match folded {
            Some(values) => {
                report.folded_constants.push(n.name.clone());
                for v in values {
                    by_name.entry(v.name.clone()).or_insert(initializers.len());
                    initializers.push(v);
                }
            }
            None => kept.push(n),
        }
    }
    kept
}

/// The outputs of one node on constant inputs, as initializers holding their data; `None`
/// when evaluation fails or an output is too large (the node then stays in the graph).
fn evaluate_node(
    n: &graph::Node,
    consts: Vec<graph::Initializer>,
) -> Option<Vec<graph::Initializer>> {
    let mini = Graph {
        name: "fold".into(),
        description: String::new(),
        inputs: Vec::new(),
        outputs: n
            .outputs
            .iter()
            .filter(|o| !o.is_empty())
            .cloned()
            .collect(),
        initializers: consts,
        nodes: vec![n.clone()],
    };
    let types = mini.infer_types().ok()?;
    if mini
        .outputs
        .iter()
        .any(|o| types.get(o).is_none_or(|t| t.numel() > FOLD_LIMIT))
    {
        return None;
    }
    let values = graph::evaluate(&mini, &BTreeMap::new()).ok()?;
    mini.outputs
        .iter()
        .map(|o| {
            let t = values.get(o)?;
            Some(graph::Initializer {
                name: o.clone(),
                ty: TensorType {
                    dtype: t.dtype,
                    shape: t.shape.clone(),
                },
                init: graph::InitSpec::Data(t.data.clone()),
            })
        })
        .collect()
}

fn ty_json(t: &TensorType) -> serde_json::Value {
    json!({"dtype": t.dtype.name(), "shape": t.shape})
}

fn to_value<T: serde::Serialize>(x: &T) -> serde_json::Value {
    serde_json::to_value(x).unwrap_or(serde_json::Value::Null)
}

/// `key` in camelCase: `cores_used` -> `coresUsed`, `Dram` -> `dram`.
fn camel_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for (i, ch) in key.chars().enumerate() {
        if ch == '_' && i > 0 {
            upper = true;
        } else if upper {
            out.extend(ch.to_uppercase());
            upper = false;
        } else if i == 0 {
            out.extend(ch.to_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// `v` with every object key in camelCase, at any depth.
fn camel_keys(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, x)| (camel_key(&k), camel_keys(x)))
                .collect(),
        ),
        Value::Array(xs) => Value::Array(xs.into_iter().map(camel_keys).collect()),
        x => x,
    }
}

/// Snapshot data of a compiler struct, in the camelCase of everything the page and `--json`
/// see: the structs' fields are snake_case (and enum variants capitalised) in Rust.
fn camel<T: serde::Serialize>(x: &T) -> serde_json::Value {
    camel_keys(to_value(x))
}

/// [`camel`] for a map keyed by tensor names: the names stay, their values are renamed.
fn camel_by_name<T: serde::Serialize>(m: &BTreeMap<String, T>) -> serde_json::Value {
    serde_json::Value::Object(m.iter().map(|(k, x)| (k.clone(), camel(x))).collect())
}

fn check_target(t: &Target) -> Result<(), CompileError> {
    let bad = |m: &str| Err(CompileError::new(format!("invalid target: {m}"), None));
    if t.cores == 0 {
        return bad("cores must be at least 1");
    }
    if t.stick_bytes == 0 || t.stick_bytes % 8 != 0 {
        return bad("stick_bytes must be a positive multiple of 8");
    }
    if !(t.matmul_macs_per_ns > 0.0 && t.dram_bytes_per_ns > 0.0 && t.ring_bytes_per_ns > 0.0) {
        return bad("matmul_macs_per_ns, dram_bytes_per_ns and ring_bytes_per_ns must be positive");
    }
    if t.pe_rows == 0 || t.fill_row_passes == 0 {
        return bad("pe_rows and fill_row_passes must be at least 1");
    }
    Ok(())
}

/// Runs the passes in order, recording a snapshot after each (see the crate doc).
pub fn compile(
    graph: &Graph,
    target: &Target,
    options: &Options,
) -> Result<Compilation, CompileError> {
    compile_with_progress(graph, target, options, &mut |_| {})
}

/// [`compile`], reporting to `progress` as each pass starts and as the `sdsc` and `ktir`
/// passes finish each device op.
pub fn compile_with_progress(
    graph: &Graph,
    target: &Target,
    options: &Options,
    progress: &mut dyn FnMut(CompileProgress),
) -> Result<Compilation, CompileError> {
    compile_inner(graph, target, options, progress, None)
}

/// [`compile_with_progress`] with a kernel cache: identical kernels (by the key of
/// [`crate::artifact_cache`]) are lowered once and reused, within the compile and, through
/// the cache's store, across compiles; the cache's stats say how often.
pub fn compile_cached(
    graph: &Graph,
    target: &Target,
    options: &Options,
    progress: &mut dyn FnMut(CompileProgress),
    cache: &mut crate::artifact_cache::KernelCache<'_>,
) -> Result<Compilation, CompileError> {
    compile_inner(graph, target, options, progress, Some(cache))
}

fn compile_inner(
    graph: &Graph,
    target: &Target,
    options: &Options,
    progress: &mut dyn FnMut(CompileProgress),
    mut cache: Option<&mut crate::artifact_cache::KernelCache<'_>>,
) -> Result<Compilation, CompileError> {
    let mut budget = WorkBudget::new(options);
    let record = !options.skip_snapshots;
    if let Some(s) = &options.stop_after {
        if !PASS_NAMES.contains(&s.as_str()) {
            return Err(CompileError::new(
                format!("unknown pass '{s}'; passes are: {}", PASS_NAMES.join(", ")),
                None,
            ));
        }
    }
    check_target(target)?;
    let all_types = graph
        .infer_types()
        .map_err(|e| CompileError::new(format!("type inference failed: {e}"), None))?;
    let (g, report) = canonicalize(graph);
    let mut present: BTreeSet<&str> = g.inputs.iter().map(|v| v.name.as_str()).collect();
    present.extend(g.initializers.iter().map(|i| i.name.as_str()));
    present.extend(
        g.nodes
            .iter()
            .flat_map(|n| n.outputs.iter().map(|s| s.as_str())),
    );
    let types: BTreeMap<String, TensorType> = all_types
        .into_iter()
        .filter(|(k, _)| present.contains(k.as_str()))
        .collect();
    let mut c = Compilation {
        graph: g,
        types,
        ops: Vec::new(),
        layouts: BTreeMap::new(),
        divisions: Vec::new(),
        placements: BTreeMap::new(),
        fusion: Vec::new(),
        sdsc: None,
        ktir: None,
        ktir_module: None,
        epilogue_notes: Vec::new(),
        fused_kernels: BTreeMap::new(),
        snapshots: Vec::new(),
        target: target.clone(),
        padding: Vec::new(),
        views: BTreeMap::new(),
    };
    let none = || (String::new(), String::new(), serde_json::Value::Null);
    // What the passes found besides `c`, shown in every later snapshot of the state.
    let mut notes = PassNotes::default();
    if record {
        notes.set_canonicalize(&report);
    }
    for &pass in PASS_NAMES {
        progress(CompileProgress {
            pass,
            done: 0,
            total: c.ops.len(),
        });
        let (title, text, data) = match pass {
            "canonicalize" if !record => none(),
            "canonicalize" => canonicalize_snapshot(&c, &report, &notes),
            "decompose" => {
                let before: BTreeSet<String> = if record {
                    c.types.keys().cloned().collect()
                } else {
                    BTreeSet::new()
                };
                ops::decompose(&mut c, options)?;
                budget.spend(c.ops.len() as u64, None)?;
                if !record {
                    (String::new(), String::new(), serde_json::Value::Null)
                } else {
                    let new: Vec<&String> =
                        c.types.keys().filter(|k| !before.contains(*k)).collect();
                    let text = state::render(&c, &notes);
                    let data = json!({"ops": camel(&c.ops), "newTensors": new});
                    (format!("{} device ops", c.ops.len()), text, data)
                }
            }
            "layout" => 'snap: {
                let (layout_notes, restick) = layout::run(&mut c)?;
                if !record {
                    break 'snap none();
                }
                notes.set_layout(layout_notes.clone(), &restick);
                let text = state::render(&c, &notes);
                let layouts: serde_json::Map<String, serde_json::Value> = c
                    .layouts
                    .iter()
                    .map(|(k, l)| (k.clone(), l.to_json()))
                    .collect();
                let data = json!({"layouts": layouts, "notes": layout_notes, "restickify": restick, "ops": camel(&c.ops)});
                (
                    format!(
                        "{} tensors laid out, {} restickify",
                        c.layouts.len(),
                        restick.len()
                    ),
                    text,
                    data,
                )
            }
            "work-division" => 'snap: {
                workdiv::run(&mut c, options)?;
                if !record {
                    break 'snap none();
                }
                let text = state::render(&c, &notes);
                let data = json!({"divisions": camel(&c.divisions), "ops": camel(&c.ops), "cores": c.target.cores});
                let max = c.divisions.iter().map(|d| d.cores_used).max().unwrap_or(0);
                (
                    format!("{} ops divided, up to {max} cores", c.divisions.len()),
                    text,
                    data,
                )
            }
            "scratchpad" => 'snap: {
                // Matmul epilogues are settled first: their tensors stay in DRAM.
                let epilogues = if options.fuse {
                    crate::fusion::settle_epilogues(&mut c, options.allocator)?
                } else {
                    Vec::new()
                };
                let keep = crate::fusion::epilogue_tensors(&c, &epilogues);
                let plan = scratchpad::run(&mut c, options.allocator, &keep)?;
                c.fusion = epilogues;
                if !record {
                    break 'snap none();
                }
                notes.plan = Some(plan.clone());
                let text = state::render(&c, &notes);
                let data =
                    json!({"plan": camel(&plan), "placements": camel_by_name(&c.placements)});
                let lx = plan.buffers.iter().filter(|b| b.offset.is_some()).count();
                (
                    format!(
                        "{lx} buffers in scratchpad, peak {} B/core",
                        plan.peak_bytes
                    ),
                    text,
                    data,
                )
            }
            "fusion" => 'snap: {
                let report = crate::fusion::run(&mut c, options.fuse, options.double_buffer)?;
                if !record {
                    break 'snap none();
                }
                let text = crate::fusion::render(&c, &report);
                let fused: usize = report.groups.iter().map(|g| g.len).sum();
                let title = if report.enabled {
                    format!("{} fused kernels of {fused} ops", report.groups.len())
                } else {
                    "fusion off".to_string()
                };
                (title, text, camel(&report))
            }
            "sdsc" => 'snap: {
                sdsc_emit::run(&mut c)?;
                if !record {
                    break 'snap none();
                }
                let b = c
                    .sdsc
                    .as_ref()
                    .ok_or_else(|| CompileError::new("sdsc pass produced no bundle", None))?;
                // The data is the bundle's op list and tensor manifest; the descriptors are
                // in the text and in `c.sdsc`. A second full copy as a JSON value cost more
                // than the rest of the compile together on large graphs (tens of KB per op).
                let data = json!({"ops": b.ops, "tensors": b.tensors});
                (
                    format!("SDSC bundle of {} ops", b.ops.len()),
                    b.to_json_pretty(),
                    data,
                )
            }
            "ktir" => 'snap: {
                let module = crate::lower_ktir::lower_with(
                    &c,
                    &mut budget,
                    progress,
                    options.double_buffer,
                    cache.as_deref_mut(),
                )?;
                // Text only at the edge: for the snapshot, output and the page.
                let text = ktir::print(&module);
                c.ktir_module = Some(module);
                c.fused_kernels.clear();
                if !record {
                    c.ktir = Some(text);
                    break 'snap none();
                }
                c.ktir = Some(text.clone());
                (
                    "KTIR module".to_string(),
                    text.clone(),
                    json!({ "text": text }),
                )
            }
            _ => {
                return Err(CompileError::new(
                    format!("pass '{pass}' has no implementation"),
                    None,
                ))
            }
        };
        if record {
            c.snapshots.push(Snapshot {
                pass: pass.to_string(),
                title,
                text,
                data,
            });
        }
        if options.stop_after.as_deref() == Some(pass) {
            break;
        }
    }
    Ok(c)
}

fn canonicalize_snapshot(
    c: &Compilation,
    r: &CanonicalizeReport,
    notes: &PassNotes,
) -> (String, String, serde_json::Value) {
    let g = &c.graph;
    let types: serde_json::Map<String, serde_json::Value> = c
        .types
        .iter()
        .map(|(k, t)| (k.clone(), ty_json(t)))
        .collect();
    let data = json!({
        "report": to_value(r),
        "nodes": g.nodes.iter().map(|n| json!({"name": n.name, "op": n.op, "inputs": n.inputs, "outputs": n.outputs})).collect::<Vec<_>>(),
        "types": types,
    });
    let title = if notes.canonicalize.is_empty() {
        format!("{} nodes, unchanged", g.nodes.len())
    } else {
        format!(
            "{} nodes, {} changes",
            g.nodes.len(),
            notes.canonicalize.len()
        )
    };
    (title, state::render(c, notes), data)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{Allocator, Placement};
    use expect_test::expect;

    pub(crate) fn example(name: &str) -> Graph {
        let path = format!(
            "{}/../../examples/graphs/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("example graph");
        graph::load_json(&text).expect("example graph loads")
    }

    /// A graph from JSON fragments: inputs `[name, dtype, shape]`, nodes as JSON objects.
    pub(crate) fn graph_of(inputs: &str, inits: &str, nodes: &str, outputs: &str) -> Graph {
        let text = format!(
            r#"{{"format": "spyre-graph", "version": 1, "name": "t", "description": "",
                "inputs": [{inputs}], "initializers": [{inits}], "nodes": [{nodes}], "outputs": [{outputs}]}}"#
        );
        match graph::load_json(&text) {
            Ok(g) => g,
            Err(e) => panic!("test graph does not load: {e}\n{text}"),
        }
    }

    pub(crate) fn upto(pass: &str) -> Options {
        Options {
            stop_after: Some(pass.to_string()),
            ..Options::default()
        }
    }

    /// The views canonicalize made of a graph `x f16[4, 64]`, `w f16[4, 64]` -> node `v`
    /// -> node `u`.
    fn views_of(v: &str, u: &str, outputs: &str) -> Vec<String> {
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [4, 64]}, {"name": "w", "dtype": "f16", "shape": [1, 4, 64]}"#,
            "",
            &format!("{v}, {u}"),
            outputs,
        );
        canonicalize(&g).1.views
    }

    #[test]
    fn shape_only_nodes_become_views_only_where_legal() {
        let add = r#"{"name": "u", "op": "Add", "inputs": ["v", "w"], "outputs": ["y"]}"#;
        let lead = r#"{"name": "v", "op": "Unsqueeze", "inputs": ["x"], "outputs": ["v"], "attrs": {"axes": [0]}}"#;
        assert_eq!(
            views_of(lead, add, r#""y""#),
            vec!["v (Unsqueeze [4, 64] -> [1, 4, 64])".to_string()]
        );
        // A unit dim in the middle moves where the operand aligns.
        let middle = r#"{"name": "v", "op": "Unsqueeze", "inputs": ["x"], "outputs": ["v"], "attrs": {"axes": [1]}}"#;
        let add_mid = r#"{"name": "u", "op": "Add", "inputs": ["v", "v"], "outputs": ["y"]}"#;
        assert!(views_of(middle, add_mid, r#""y""#).is_empty());
        // A transpose's perm counts the view's dims.
        let tr = r#"{"name": "u", "op": "Transpose", "inputs": ["v"], "outputs": ["y"], "attrs": {"perm": [0, 2, 1]}}"#;
        assert!(views_of(lead, tr, r#""y""#).is_empty());
        // A graph output keeps its shape.
        assert!(views_of(lead, add, r#""y", "v""#).is_empty());
        // The user's result would lose its leading dim.
        let own = r#"{"name": "u", "op": "Add", "inputs": ["v", "v"], "outputs": ["y"]}"#;
        assert!(views_of(lead, own, r#""y""#).is_empty());
    }

    fn text<'a>(c: &'a Compilation, pass: &str) -> &'a str {
        &c.snapshot(pass).expect("snapshot").text
    }

    #[test]
    fn matmul_add_through_sdsc() {
        let c = compile(
            &example("matmul_add.json"),
            &Target::spyre32(),
            &upto("sdsc"),
        )
        .unwrap();
        let passes: Vec<&str> = c.snapshots.iter().map(|s| s.pass.as_str()).collect();
        assert_eq!(passes, &PASS_NAMES[..7]);
        assert!(c.ktir.is_none());
        let ops: Vec<(&str, &str)> = c
            .ops
            .iter()
            .map(|o| (o.name.as_str(), o.kind.name()))
            .collect();
        assert_eq!(ops, [("matmul", "batchmatmul"), ("add_bias", "add")]);
        // Expected divisions: the cost model keeps the matmul on 6 cores (rows in 2, N's three
        // sticks in 3); the add spreads its 128 rows over all 32 cores.
        assert_eq!(c.divisions[0].splits, vec![2, 3, 1]);
        assert_eq!(c.divisions[0].cores_used, 6);
        assert!(c.divisions[0].rule.starts_with("matmul cost model"));
        assert_eq!(c.divisions[1].splits, vec![32, 1]);
        assert_eq!(c.divisions[1].cores_used, 32);
        assert!(c.divisions[1].rule.starts_with("default"));
        // B's K is padded to two whole sticks in its layout.
        assert_eq!(c.layouts["B"].device_size, vec![3, 128, 64]);
        // Producer and consumer of AB split it differently, so it stays in DRAM; everything
        // is 128-byte aligned.
        for (t, p) in &c.placements {
            match p {
                Placement::Dram { offset } => assert_eq!(offset % 128, 0, "{t}"),
                Placement::Scratchpad { .. } => panic!("{t} unexpectedly in scratchpad"),
            }
        }
        expect![[r#"
            program matmul_add: 1 inputs, 2 initializers, 2 nodes, outputs C
              target: 32 cores, 128 B sticks
              canonicalize: no changes
            tensor A: f16[128,100] (input)
            tensor AB: f16[128,130] (intermediate)
            tensor B: f16[100,130] (initializer)
            tensor C: f16[128,130] (output)
            tensor bias: f16[130] (initializer)
            node matmul: MatMul(A, B) -> AB
            node add_bias: Add(AB, bias) -> C
        "#]]
        .assert_eq(text(&c, "canonicalize"));
        expect![[r#"
            program matmul_add: 1 inputs, 2 initializers, 2 nodes, outputs C
              target: 32 cores, 128 B sticks
              canonicalize: no changes
            tensor A: f16[128,100] (input)
            tensor AB: f16[128,130] (intermediate)
            tensor B: f16[100,130] (initializer)
            tensor C: f16[128,130] (output)
            tensor bias: f16[130] (initializer)
            node matmul: MatMul(A, B) -> AB
            node add_bias: Add(AB, bias) -> C
            op matmul: batchmatmul(A, B) -> AB  iter [mb=128, out=130 sticks, in=100 sticks red]
            op add_bias: add(AB, bias) -> C  iter [d0=128, d1=130 sticks]
        "#]]
        .assert_eq(text(&c, "decompose"));
        expect![[r#"
            program matmul_add: 1 inputs, 2 initializers, 2 nodes, outputs C
              target: 32 cores, 128 B sticks
              canonicalize: no changes
            tensor A: f16[128,100] (input)
              layout: f16[128,100] -> [2, 128, 64] strides [64, 100, 1], 32768 B
            tensor AB: f16[128,130] (intermediate)
              layout: f16[128,130] -> [3, 128, 64] strides [64, 130, 1], 49152 B
            tensor B: f16[100,130] (initializer)
              layout: f16[100,130] -> [3, 128, 64] strides [64, 130, 1], 49152 B  (matmul kernel of 'matmul': K zero-padded to whole sticks)
            tensor C: f16[128,130] (output)
              layout: f16[128,130] -> [3, 128, 64] strides [64, 130, 1], 49152 B
            tensor bias: f16[130] (initializer)
              layout: f16[130] -> [3, 64] strides [64, 1], 384 B
            node matmul: MatMul(A, B) -> AB
            node add_bias: Add(AB, bias) -> C
            op matmul: batchmatmul(A, B) -> AB  iter [mb=128, out=130 sticks, in=100 sticks red]
            op add_bias: add(AB, bias) -> C  iter [d0=128, d1=130 sticks]
        "#]].assert_eq(text(&c, "layout"));
        expect![[r#"
            program matmul_add: 1 inputs, 2 initializers, 2 nodes, outputs C
              target: 32 cores, 128 B sticks
              canonicalize: no changes
            tensor A: f16[128,100] (input)
              layout: f16[128,100] -> [2, 128, 64] strides [64, 100, 1], 32768 B
            tensor AB: f16[128,130] (intermediate)
              layout: f16[128,130] -> [3, 128, 64] strides [64, 130, 1], 49152 B
            tensor B: f16[100,130] (initializer)
              layout: f16[100,130] -> [3, 128, 64] strides [64, 130, 1], 49152 B  (matmul kernel of 'matmul': K zero-padded to whole sticks)
            tensor C: f16[128,130] (output)
              layout: f16[128,130] -> [3, 128, 64] strides [64, 130, 1], 49152 B
            tensor bias: f16[130] (initializer)
              layout: f16[130] -> [3, 64] strides [64, 1], 384 B
            node matmul: MatMul(A, B) -> AB
            node add_bias: Add(AB, bias) -> C
            op matmul: batchmatmul(A, B) -> AB  iter [mb=128, out=130 sticks, in=100 sticks red]
              split: mb=2 out=3 in=1 -> 6 cores
              rule: matmul cost model over 18 candidates: best mb=2 out=3 in=1 (6 cores): compute 341.3 + memory 1200.0 + partial sums 0.0 = 1541.3 ns; next mb=1 out=3 in=1 (3 cores): compute 682.7 + memory 960.0 + partial sums 0.0 = 1642.7 ns; best on all 32 cores mb=16 out=1 in=2 (32 cores): compute 181.0 + memory 4480.0 + partial sums 48.0 = 4709.0 ns
              core -> (mb,out):
                0:(0,0) 1:(1,0) 2:(0,1) 3:(1,1) 4:(0,2) 5:(1,2)
            op add_bias: add(AB, bias) -> C  iter [d0=128, d1=130 sticks]
              split: d0=32 d1=1 -> 32 cores
              rule: default: d0 (128 elems) -> 32; 32 of 32 cores
              core -> (d0):
                0:(0) 1:(1) 2:(2) 3:(3) 4:(4) 5:(5) 6:(6) 7:(7)
                8:(8) 9:(9) 10:(10) 11:(11) 12:(12) 13:(13) 14:(14) 15:(15)
                16:(16) 17:(17) 18:(18) 19:(19) 20:(20) 21:(21) 22:(22) 23:(23)
                24:(24) 25:(25) 26:(26) 27:(27) 28:(28) 29:(29) 30:(30) 31:(31)
        "#]].assert_eq(text(&c, "work-division"));
        expect![[r#"
            program matmul_add: 1 inputs, 2 initializers, 2 nodes, outputs C
              target: 32 cores, 128 B sticks
              canonicalize: no changes
              allocator: greedy, capacity 1677696 B per core, peak 0 B per core, dram 180608 B
            tensor A: f16[128,100] (input)
              layout: f16[128,100] -> [2, 128, 64] strides [64, 100, 1], 32768 B
              dram: offset 0, 32768 B
            tensor AB: f16[128,130] (intermediate)
              layout: f16[128,130] -> [3, 128, 64] strides [64, 130, 1], 49152 B
              dram: offset 131456, 49152 B, ops [0, 2)  (the epilogue fused into 'matmul' reads or writes it, on the matmul's cores)
            tensor B: f16[100,130] (initializer)
              layout: f16[100,130] -> [3, 128, 64] strides [64, 130, 1], 49152 B  (matmul kernel of 'matmul': K zero-padded to whole sticks)
              dram: offset 32768, 49152 B
            tensor C: f16[128,130] (output)
              layout: f16[128,130] -> [3, 128, 64] strides [64, 130, 1], 49152 B
              dram: offset 82304, 49152 B
            tensor bias: f16[130] (initializer)
              layout: f16[130] -> [3, 64] strides [64, 1], 384 B
              dram: offset 81920, 384 B
            node matmul: MatMul(A, B) -> AB
            node add_bias: Add(AB, bias) -> C
            op matmul: batchmatmul(A, B) -> AB  iter [mb=128, out=130 sticks, in=100 sticks red]
              split: mb=2 out=3 in=1 -> 6 cores
              rule: matmul cost model over 18 candidates: best mb=2 out=3 in=1 (6 cores): compute 341.3 + memory 1200.0 + partial sums 0.0 = 1541.3 ns; next mb=1 out=3 in=1 (3 cores): compute 682.7 + memory 960.0 + partial sums 0.0 = 1642.7 ns; best on all 32 cores mb=16 out=1 in=2 (32 cores): compute 181.0 + memory 4480.0 + partial sums 48.0 = 4709.0 ns
              core -> (mb,out):
                0:(0,0) 1:(1,0) 2:(0,1) 3:(1,1) 4:(0,2) 5:(1,2)
            op add_bias: add(AB, bias) -> C  iter [d0=128, d1=130 sticks]
              split: d0=32 d1=1 -> 32 cores
              rule: default: d0 (128 elems) -> 32; 32 of 32 cores
              core -> (d0):
                0:(0) 1:(1) 2:(2) 3:(3) 4:(4) 5:(5) 6:(6) 7:(7)
                8:(8) 9:(9) 10:(10) 11:(11) 12:(12) 13:(13) 14:(14) 15:(15)
                16:(16) 17:(17) 18:(18) 19:(19) 20:(20) 21:(21) 22:(22) 23:(23)
                24:(24) 25:(25) 26:(26) 27:(27) 28:(28) 29:(29) 30:(30) 31:(31)
        "#]].assert_eq(text(&c, "scratchpad"));
    }

    #[test]
    fn matmul_add_sdsc_bundle() {
        let c = compile(
            &example("matmul_add.json"),
            &Target::spyre32(),
            &upto("sdsc"),
        )
        .unwrap();
        let b = c.sdsc.as_ref().unwrap();
        assert_eq!(b.ops, vec!["matmul", "add_bias"]);
        let snap = c.snapshot("sdsc").unwrap();
        assert_eq!(snap.text, b.to_json_pretty());
        assert_eq!(sdsc::Bundle::from_json(&snap.text).unwrap(), *b);
        assert_eq!(snap.data["ops"], serde_json::json!(["matmul", "add_bias"]));
        assert_eq!(snap.data["tensors"], b.to_value()["tensors"]);
        let bundle = b.to_value();
        let v = &bundle["sdscs"][0]["matmul"];
        assert_eq!(v["numCoresUsed_"], 6);
        assert_eq!(v["coreFoldProp_"]["factor_"], 6);
        assert_eq!(
            v["numWkSlicesPerDim_"],
            serde_json::json!({"mb": 2, "out": 3, "in": 1})
        );
        assert_eq!(
            v["coreIdToWkSlice_"]["5"],
            serde_json::json!({"mb": 1, "out": 2, "in": 0})
        );
        let d = &v["dscs_"][0]["batchmatmul"];
        assert_eq!(
            d["N_"],
            serde_json::json!({"name_": "n", "mb_": 128, "out_": 130, "in_": 100})
        );
        assert_eq!(
            d["dataStageParam_"]["0"]["ss_"],
            serde_json::json!({"name_": "core", "mb_": 64, "out_": 64, "in_": 100})
        );
        assert_eq!(
            d["primaryDsInfo_"]["KERNEL"]["stickDimOrder_"],
            serde_json::json!(["out"])
        );
        assert_eq!(
            d["primaryDsInfo_"]["INPUT"]["stickDimOrder_"],
            serde_json::json!(["in"])
        );
        assert_eq!(
            d["primaryDsInfo_"]["INPUT"]["layoutDimOrder_"],
            serde_json::json!(["in", "mb"])
        );
        assert_eq!(d["computeOp_"][0]["exUnit"], "pt");
        assert_eq!(d["labeledDs_"][1]["dsType_"], "KERNEL");
        assert_eq!(d["labeledDs_"][1]["scale_"], serde_json::json!([-1, 1, 1]));
        let alloc_a = &d["scheduleTree_"][0];
        assert_eq!(alloc_a["component_"], "hbm");
        // Core 1 holds rows 64..128 of A: device (0, 64, 0) = 64 sticks in = 8192 bytes.
        assert_eq!(
            alloc_a["startAddressCoreCorelet_"]["data_"]["[1, 0, 0]"],
            "8192"
        );
        // Core 2 holds N stick 1 of B (at DRAM offset 32768): 128 padded K rows x 128 B further.
        assert_eq!(
            d["scheduleTree_"][1]["startAddressCoreCorelet_"]["data_"]["[2, 0, 0]"],
            (32768 + 128 * 128).to_string()
        );
        let add = &bundle["sdscs"][1]["add_bias"]["dscs_"][0]["add"];
        assert_eq!(add["computeOp_"][0]["exUnit"], "sfp");
        assert_eq!(add["labeledDs_"][1]["scale_"], serde_json::json!([-1, 1]));
        assert_eq!(b.tensor("AB").unwrap().role, "intermediate");
        assert_eq!(b.tensor("B").unwrap().device_size, vec![3, 128, 64]);
    }

    #[test]
    fn full_compile_runs_the_ktir_pass() {
        match compile(
            &example("matmul_add.json"),
            &Target::spyre32(),
            &Options::default(),
        ) {
            Ok(c) => {
                assert_eq!(c.snapshots.len(), PASS_NAMES.len());
                assert_eq!(c.ktir.as_deref(), Some(text(&c, "ktir")));
            }
            Err(e) => assert!(e.message.contains("ktir"), "{e}"),
        }
    }

    #[test]
    fn a_compile_without_snapshots_lowers_the_same_module_and_reports_progress() {
        let g = example("matmul_add.json");
        let full = compile(&g, &Target::spyre32(), &Options::default()).unwrap();
        let lean = Options {
            skip_snapshots: true,
            ..Options::default()
        };
        let mut seen = Vec::new();
        let c = crate::compile_with_progress(&g, &Target::spyre32(), &lean, &mut |p| seen.push(p))
            .unwrap();
        assert!(c.snapshots.is_empty());
        assert_eq!(c.ktir, full.ktir);
        assert_eq!(c.sdsc, full.sdsc);
        let passes: Vec<&str> = seen
            .iter()
            .filter(|p| p.done == 0)
            .map(|p| p.pass)
            .collect();
        assert_eq!(passes, PASS_NAMES);
        let last = seen.last().unwrap();
        assert_eq!(
            (last.pass, last.done, last.total),
            ("ktir", c.ops.len(), c.ops.len())
        );
    }

    #[test]
    fn a_compile_beyond_its_work_limit_is_an_error_naming_the_limit() {
        let g = example("matmul_add.json");
        for limit in [1, 20] {
            let o = Options {
                work_limit: Some(limit),
                ..Options::default()
            };
            let e = compile(&g, &Target::spyre32(), &o).unwrap_err();
            assert!(
                e.message.contains(&format!("work limit of {limit} units")),
                "{e}"
            );
        }
    }

    #[test]
    fn stop_after_each_pass_and_unknown_pass() {
        let g = example("matmul_add.json");
        for (i, p) in PASS_NAMES[..7].iter().enumerate() {
            let c = compile(&g, &Target::spyre32(), &upto(p)).unwrap();
            assert_eq!(c.snapshots.len(), i + 1);
            assert_eq!(c.snapshots.last().unwrap().pass, *p);
        }
        let e = compile(&g, &Target::spyre32(), &upto("lower")).unwrap_err();
        assert_eq!(e.node, None);
        assert!(e.message.contains("unknown pass 'lower'"));
        assert!(e.message.contains(
            "canonicalize, decompose, layout, work-division, scratchpad, fusion, sdsc, ktir"
        ));
    }

    #[test]
    fn compile_is_deterministic() {
        let g = example("matmul_add.json");
        let a = compile(&g, &Target::spyre32(), &upto("sdsc")).unwrap();
        let b = compile(&g, &Target::spyre32(), &upto("sdsc")).unwrap();
        assert_eq!(a.snapshots, b.snapshots);
    }

    #[test]
    fn canonicalize_drops_dead_nodes_and_folds_identity() {
        let mut g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [4, 64]}"#,
            r#"{"name": "w", "dtype": "f16", "shape": [64], "init": "ones"}"#,
            r#"{"name": "dead", "op": "Mul", "inputs": ["x", "w"], "outputs": ["unused"]},
               {"name": "e", "op": "Exp", "inputs": ["x"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let c = compile(&g, &Target::spyre32(), &upto("decompose")).unwrap();
        assert!(text(&c, "canonicalize").contains("removed dead nodes dead"));
        assert!(text(&c, "canonicalize").contains("removed unused initializers w"));
        assert_eq!(c.ops.len(), 1);
        // Identity (not in the graph crate's op set, but ONNX imports may carry it) folds away.
        g.nodes.insert(
            0,
            graph::Node {
                name: "id".into(),
                op: "Identity".into(),
                inputs: vec!["x".into()],
                outputs: vec!["xi".into()],
                attrs: Default::default(),
            },
        );
        g.nodes[2].inputs = vec!["xi".into()];
        let (g2, r) = canonicalize(&g);
        assert_eq!(r.folded_identities, vec!["id"]);
        assert_eq!(r.removed_nodes, vec!["dead"]);
        assert_eq!(r.removed_initializers, vec!["w"]);
        assert_eq!(g2.nodes.len(), 1);
        assert_eq!(g2.nodes[0].inputs, vec!["x"]);
    }

    #[test]
    fn unsupported_op_is_an_error_naming_the_node() {
        // Every op the graph crate reads is lowered (and an op it does not know fails type
        // inference first), so the canonical graph is edited before decomposing it.
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [4, 64]}"#,
            "",
            r#"{"name": "tr", "op": "Neg", "inputs": ["x"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let mut c = compile(&g, &Target::spyre32(), &upto("canonicalize")).unwrap();
        c.graph.nodes[0].op = "Frobnicate".into();
        let e = crate::ops::decompose(&mut c, &Options::default()).unwrap_err();
        assert_eq!(e.node.as_deref(), Some("tr"));
        assert!(
            e.message.starts_with(
                "no lowering for op Frobnicate at node tr; supported: Abs, Acos, Acosh, Add"
            ),
            "{e}"
        );
        assert!(e.to_string().starts_with("node 'tr': no lowering"));
    }

    #[test]
    fn gemm_decomposes_with_and_without_transposes() {
        let mk = |trans_b: i64| {
            graph_of(
                r#"{"name": "a", "dtype": "f16", "shape": [64, 128]}"#,
                r#"{"name": "w", "dtype": "f16", "shape": [128, 128], "init": "ones"},
                   {"name": "c", "dtype": "f16", "shape": [128], "init": "zeros"}"#,
                &format!(
                    r#"{{"name": "g", "op": "Gemm", "inputs": ["a", "w", "c"], "outputs": ["y"], "attrs": {{"transB": {trans_b}}}}}"#
                ),
                r#""y""#,
            )
        };
        let c = compile(&mk(0), &Target::spyre32(), &upto("sdsc")).unwrap();
        let ops: Vec<(&str, &str)> = c
            .ops
            .iter()
            .map(|o| (o.name.as_str(), o.kind.name()))
            .collect();
        assert_eq!(ops, [("g/matmul", "batchmatmul"), ("g/add", "add")]);
        assert_eq!(c.ops[0].outputs, vec!["g/matmul"]);
        // transB moves B's dims with a transpose before the matmul.
        let c = compile(&mk(1), &Target::spyre32(), &upto("sdsc")).unwrap();
        let ops: Vec<(&str, &str)> = c
            .ops
            .iter()
            .map(|o| (o.name.as_str(), o.kind.name()))
            .collect();
        assert_eq!(
            ops,
            [
                ("g/b_t", "transpose"),
                ("g/matmul", "batchmatmul"),
                ("g/add", "add")
            ]
        );
        assert_eq!(c.ops[1].inputs, vec!["a", "g/b_t"]);
    }

    fn hint_err(h: Vec<usize>, node: &str) -> CompileError {
        let mut o = upto("work-division");
        o.hints.insert(node.to_string(), h);
        compile(&example("matmul_add.json"), &Target::spyre32(), &o).unwrap_err()
    }

    #[test]
    fn hints_are_honoured_and_validated() {
        let mut o = upto("work-division");
        o.hints.insert("matmul".into(), vec![32, 1, 1]);
        let c = compile(&example("matmul_add.json"), &Target::spyre32(), &o).unwrap();
        assert_eq!(c.divisions[0].splits, vec![32, 1, 1]);
        assert_eq!(c.divisions[0].cores_used, 32);
        assert!(
            c.divisions[0]
                .rule
                .starts_with("hint: mb=32 out=1 in=1; estimate mb=32 out=1 in=1 (32 cores): "),
            "{}",
            c.divisions[0].rule
        );
        let e = hint_err(vec![3, 1, 1], "matmul");
        assert_eq!(e.node.as_deref(), Some("matmul"));
        assert!(
            e.message
                .contains("splits dim 'mb' (128 elements) by 3, which does not divide it evenly"),
            "{e}"
        );
        let e = hint_err(vec![1, 1, 4], "matmul");
        assert!(e.message.contains("splits dim 'in' (2 sticks) by 4"), "{e}");
        let e = hint_err(vec![64, 1, 1], "matmul");
        assert!(
            e.message
                .contains("hint uses 64 cores but the target has 32"),
            "{e}"
        );
        let e = hint_err(vec![2, 1], "matmul");
        assert!(
            e.message
                .contains("hint has 2 splits but batchmatmul has 3 iteration dims (mb, out, in)"),
            "{e}"
        );
        let e = hint_err(vec![0, 1, 1], "matmul");
        assert!(e.message.contains("by 0"), "{e}");
        let e = hint_err(vec![1], "nope");
        assert_eq!(e.node.as_deref(), Some("nope"));
        assert!(
            e.message
                .contains("hint names no device op; device ops are: matmul, add_bias"),
            "{e}"
        );
    }

    fn softmax_graph(rows: usize, cols: usize) -> Graph {
        graph_of(
            &format!(r#"{{"name": "x", "dtype": "f16", "shape": [{rows}, {cols}]}}"#),
            "",
            r#"{"name": "sm", "op": "Softmax", "inputs": ["x"], "outputs": ["y"], "attrs": {"axis": -1}}"#,
            r#""y""#,
        )
    }

    #[test]
    fn softmax_decomposes_and_lives_in_scratchpad() {
        let c = compile(
            &softmax_graph(64, 256),
            &Target::spyre32(),
            &upto("scratchpad"),
        )
        .unwrap();
        let ops: Vec<&str> = c.ops.iter().map(|o| o.kind.name()).collect();
        assert_eq!(ops, ["max", "sub", "exp", "sum", "realdiv"]);
        assert_eq!(c.types["sm/max"].shape, vec![64, 1]);
        assert!(c.ops[0].iteration[1].reduction);
        for d in &c.divisions {
            assert_eq!(d.cores_used, 32, "{}", d.op);
        }
        // All intermediates agree on the row split, so they live in the scratchpad; exp
        // reuses sub's slot in place.
        for t in ["sm/max", "sm/sub", "sm/exp", "sm/sum"] {
            assert!(
                matches!(c.placements[t], Placement::Scratchpad { .. }),
                "{t}"
            );
        }
        assert_eq!(c.placements["sm/exp"], c.placements["sm/sub"]);
        expect![[r#"
            program t: 1 inputs, 0 initializers, 1 nodes, outputs y
              target: 32 cores, 128 B sticks
              canonicalize: no changes
              allocator: greedy, capacity 1677696 B per core, peak 1280 B per core, dram 65536 B
            tensor sm/exp: f16[64,256] (intermediate)
              layout: f16[64,256] -> [4, 64, 64] strides [64, 256, 1], 32768 B
              scratchpad: offset 256, 1024 B/core, ops [2, 5)  in place of sm/sub
            tensor sm/max: f16[64,1] (intermediate)
              layout: f16[64,1] -> [1, 64, 64] strides [64, 1, 1], 8192 B
              scratchpad: offset 0, 256 B/core, ops [0, 2)
            tensor sm/sub: f16[64,256] (intermediate)
              layout: f16[64,256] -> [4, 64, 64] strides [64, 256, 1], 32768 B
              scratchpad: offset 256, 1024 B/core, ops [1, 3)
            tensor sm/sum: f16[64,1] (intermediate)
              layout: f16[64,1] -> [1, 64, 64] strides [64, 1, 1], 8192 B
              scratchpad: offset 0, 256 B/core, ops [3, 5)
            tensor x: f16[64,256] (input)
              layout: f16[64,256] -> [4, 64, 64] strides [64, 256, 1], 32768 B
              dram: offset 0, 32768 B
            tensor y: f16[64,256] (output)
              layout: f16[64,256] -> [4, 64, 64] strides [64, 256, 1], 32768 B
              dram: offset 32768, 32768 B
            node sm: Softmax(x) -> y
            op sm/max: max(x) -> sm/max  iter [d0=64, d1=256 sticks red]
              split: d0=32 d1=1 -> 32 cores
              rule: kept whole: d1 (its kernel does not combine partial results across cores); default: d0 (64 elems) -> 32; 32 of 32 cores
              core -> (d0):
                0:(0) 1:(1) 2:(2) 3:(3) 4:(4) 5:(5) 6:(6) 7:(7)
                8:(8) 9:(9) 10:(10) 11:(11) 12:(12) 13:(13) 14:(14) 15:(15)
                16:(16) 17:(17) 18:(18) 19:(19) 20:(20) 21:(21) 22:(22) 23:(23)
                24:(24) 25:(25) 26:(26) 27:(27) 28:(28) 29:(29) 30:(30) 31:(31)
            op sm/sub: sub(x, sm/max) -> sm/sub  iter [d0=64, d1=256 sticks]
              split: d0=32 d1=1 -> 32 cores
              rule: default: d0 (64 elems) -> 32; 32 of 32 cores
              core -> (d0):
                0:(0) 1:(1) 2:(2) 3:(3) 4:(4) 5:(5) 6:(6) 7:(7)
                8:(8) 9:(9) 10:(10) 11:(11) 12:(12) 13:(13) 14:(14) 15:(15)
                16:(16) 17:(17) 18:(18) 19:(19) 20:(20) 21:(21) 22:(22) 23:(23)
                24:(24) 25:(25) 26:(26) 27:(27) 28:(28) 29:(29) 30:(30) 31:(31)
            op sm/exp: exp(sm/sub) -> sm/exp  iter [d0=64, d1=256 sticks]
              split: d0=32 d1=1 -> 32 cores
              rule: default: d0 (64 elems) -> 32; 32 of 32 cores
              core -> (d0):
                0:(0) 1:(1) 2:(2) 3:(3) 4:(4) 5:(5) 6:(6) 7:(7)
                8:(8) 9:(9) 10:(10) 11:(11) 12:(12) 13:(13) 14:(14) 15:(15)
                16:(16) 17:(17) 18:(18) 19:(19) 20:(20) 21:(21) 22:(22) 23:(23)
                24:(24) 25:(25) 26:(26) 27:(27) 28:(28) 29:(29) 30:(30) 31:(31)
            op sm/sum: sum(sm/exp) -> sm/sum  iter [d0=64, d1=256 sticks red]
              split: d0=32 d1=1 -> 32 cores
              rule: kept whole: d1 (its kernel does not combine partial results across cores); default: d0 (64 elems) -> 32; 32 of 32 cores
              core -> (d0):
                0:(0) 1:(1) 2:(2) 3:(3) 4:(4) 5:(5) 6:(6) 7:(7)
                8:(8) 9:(9) 10:(10) 11:(11) 12:(12) 13:(13) 14:(14) 15:(15)
                16:(16) 17:(17) 18:(18) 19:(19) 20:(20) 21:(21) 22:(22) 23:(23)
                24:(24) 25:(25) 26:(26) 27:(27) 28:(28) 29:(29) 30:(30) 31:(31)
            op sm/realdiv: realdiv(sm/exp, sm/sum) -> y  iter [d0=64, d1=256 sticks]
              split: d0=32 d1=1 -> 32 cores
              rule: default: d0 (64 elems) -> 32; 32 of 32 cores
              core -> (d0):
                0:(0) 1:(1) 2:(2) 3:(3) 4:(4) 5:(5) 6:(6) 7:(7)
                8:(8) 9:(9) 10:(10) 11:(11) 12:(12) 13:(13) 14:(14) 15:(15)
                16:(16) 17:(17) 18:(18) 19:(19) 20:(20) 21:(21) 22:(22) 23:(23)
                24:(24) 25:(25) 26:(26) 27:(27) 28:(28) 29:(29) 30:(30) 31:(31)
        "#]]
        .assert_eq(text(&c, "scratchpad"));
    }

    #[test]
    fn rms_norm_decomposes() {
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [32, 128]}"#,
            r#"{"name": "w", "dtype": "f16", "shape": [128], "init": "ones"}"#,
            r#"{"name": "rms", "op": "SimplifiedLayerNormalization", "inputs": ["x", "w"], "outputs": ["y"], "attrs": {"epsilon": 1e-6}}"#,
            r#""y""#,
        );
        let c = compile(&g, &Target::spyre32(), &upto("sdsc")).unwrap();
        let ops: Vec<(&str, &str)> = c
            .ops
            .iter()
            .map(|o| (o.name.as_str(), o.kind.name()))
            .collect();
        assert_eq!(
            ops,
            [
                ("rms/square", "mul"),
                ("rms/mean", "mean"),
                ("rms/add_eps", "add"),
                ("rms/rsqrt", "rsqrt"),
                ("rms/normalize", "mul"),
                ("rms/scale", "mul")
            ]
        );
        let eps = c
            .graph
            .initializers
            .iter()
            .find(|i| i.name == "rms/epsilon")
            .unwrap();
        assert_eq!(eps.init, graph::InitSpec::Constant(1e-6));
        assert_eq!(c.ops[2].inputs, vec!["rms/mean", "rms/epsilon"]);
        assert!(c.sdsc.unwrap().tensor("rms/epsilon").is_some());
    }

    #[test]
    fn restickify_inserted_for_an_unpadded_matmul_kernel() {
        let g = graph_of(
            r#"{"name": "a", "dtype": "f16", "shape": [64, 100]}, {"name": "x", "dtype": "f16", "shape": [100, 130]}"#,
            "",
            r#"{"name": "r", "op": "Relu", "inputs": ["x"], "outputs": ["xr"]},
               {"name": "mm", "op": "MatMul", "inputs": ["a", "xr"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let c = compile(&g, &Target::spyre32(), &upto("sdsc")).unwrap();
        let ops: Vec<(&str, &str)> = c
            .ops
            .iter()
            .map(|o| (o.name.as_str(), o.kind.name()))
            .collect();
        assert_eq!(
            ops,
            [
                ("r", "relu"),
                ("mm/restickify_1", "restickify"),
                ("mm", "batchmatmul")
            ]
        );
        assert_eq!(c.ops[2].inputs, vec!["a", "xr@restick"]);
        assert_eq!(c.layouts["xr"].device_size, vec![3, 100, 64]);
        assert_eq!(c.layouts["xr@restick"].device_size, vec![3, 128, 64]);
        assert!(matches!(c.placements["xr@restick"], Placement::Dram { .. }));
        let layout = text(&c, "layout");
        assert!(
            layout.contains("op mm/restickify_1: restickify(xr) -> xr@restick")
                && layout.contains("\n  restickify: xr -> xr@restick ("),
            "{layout}"
        );
    }

    #[test]
    fn many_ops_compile_through_sdsc() {
        let unary = [
            "Neg",
            "Exp",
            "Log",
            "Sqrt",
            "Reciprocal",
            "Tanh",
            "Sigmoid",
            "Relu",
            "Gelu",
            "Silu",
            "Softplus",
        ];
        for op in unary {
            let g = graph_of(
                r#"{"name": "x", "dtype": "f32", "shape": [3, 70, 130]}"#,
                "",
                &format!(r#"{{"name": "n", "op": "{op}", "inputs": ["x"], "outputs": ["y"]}}"#),
                r#""y""#,
            );
            let c = compile(&g, &Target::spyre32(), &upto("sdsc"))
                .unwrap_or_else(|e| panic!("{op}: {e}"));
            assert_eq!(c.ops.len(), 1);
        }
        for (op, dop) in [
            ("Add", "add"),
            ("Sub", "sub"),
            ("Mul", "mul"),
            ("Div", "realdiv"),
            ("Max", "maximum"),
            ("Min", "minimum"),
        ] {
            let g = graph_of(
                r#"{"name": "x", "dtype": "f16", "shape": [2, 8, 64]}, {"name": "z", "dtype": "f16", "shape": [8, 1]}"#,
                "",
                &format!(
                    r#"{{"name": "n", "op": "{op}", "inputs": ["x", "z"], "outputs": ["y"]}}"#
                ),
                r#""y""#,
            );
            let c = compile(&g, &Target::spyre32(), &upto("sdsc"))
                .unwrap_or_else(|e| panic!("{op}: {e}"));
            assert_eq!(c.ops[0].kind.name(), dop);
        }
        // Batched matmul with a broadcast kernel.
        let g = graph_of(
            r#"{"name": "a", "dtype": "f16", "shape": [4, 32, 64]}, {"name": "b", "dtype": "f16", "shape": [64, 256]}"#,
            "",
            r#"{"name": "bmm", "op": "MatMul", "inputs": ["a", "b"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let c = compile(&g, &Target::spyre32(), &upto("sdsc")).unwrap();
        let labels: Vec<&str> = c.ops[0]
            .iteration
            .iter()
            .map(|d| d.label.as_str())
            .collect();
        assert_eq!(labels, ["b0", "mb", "out", "in"]);
        assert_eq!(
            crate::access_map(&c.ops[0], 1, &[64, 256]),
            vec![Some(3), Some(2)]
        );
    }

    /// No two simultaneously-live scratchpad buffers overlap (except an in-place child and its
    /// parent) and none exceeds the capacity, for every allocator and several capacities.
    #[test]
    fn scratchpad_plans_are_valid() {
        let graphs = [
            softmax_graph(64, 256),
            softmax_graph(256, 512),
            softmax_graph(32, 64),
        ];
        for g in &graphs {
            for cap in [1 << 20, 1 << 14, 4096, 1024, 0] {
                for alloc in [Allocator::Greedy, Allocator::FirstFit, Allocator::BestFit] {
                    let mut t = Target::spyre32();
                    t.scratchpad_capacity_bytes = cap;
                    let o = Options {
                        stop_after: Some("scratchpad".into()),
                        allocator: alloc,
                        ..Options::default()
                    };
                    let c = compile(g, &t, &o).unwrap();
                    let planned = crate::fusion::plan_epilogues(&c, alloc).unwrap().groups;
                    let epilogue = crate::fusion::epilogue_tensors(&c, &planned);
                    let plan = crate::scratchpad::plan(&c, alloc, &epilogue).unwrap();
                    let lx: Vec<_> = plan.buffers.iter().filter(|b| b.offset.is_some()).collect();
                    for b in &lx {
                        assert!(
                            b.offset.unwrap() + b.bytes_per_core <= cap as u64,
                            "{} over capacity",
                            b.tensor
                        );
                        assert_eq!(b.offset.unwrap() % 128, 0);
                        if alloc != Allocator::Greedy {
                            assert!(b.in_place_of.is_none());
                        }
                    }
                    for (i, a) in lx.iter().enumerate() {
                        for b in &lx[i + 1..] {
                            let time = a.start < b.end && b.start < a.end;
                            let (ao, bo) = (a.offset.unwrap(), b.offset.unwrap());
                            let space = ao < bo + b.bytes_per_core && bo < ao + a.bytes_per_core;
                            let in_place = b.in_place_of.as_deref() == Some(a.tensor.as_str());
                            assert!(
                                !(time && space) || in_place,
                                "{} and {} overlap ({alloc:?}, cap {cap})",
                                a.tensor,
                                b.tensor
                            );
                        }
                    }
                    if cap == 0 {
                        assert!(lx.is_empty());
                        assert!(plan.buffers.iter().all(|b| b
                            .dram_reason
                            .as_deref()
                            .unwrap_or("")
                            .contains("does not fit")));
                    }
                    // DRAM intermediates never overlap while both live.
                    let dram: Vec<_> = plan
                        .dram
                        .iter()
                        .filter_map(|(t, o, s)| {
                            plan.buffers
                                .iter()
                                .find(|b| &b.tensor == t)
                                .map(|b| (b, *o, *s))
                        })
                        .collect();
                    for (i, (a, ao, asz)) in dram.iter().enumerate() {
                        for (b, bo, bsz) in &dram[i + 1..] {
                            let time = a.start < b.end && b.start < a.end;
                            assert!(
                                !(time && ao < &(bo + bsz) && bo < &(ao + asz)),
                                "{} / {}",
                                a.tensor,
                                b.tensor
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn invalid_targets_and_types_are_errors() {
        let mut t = Target::spyre32();
        t.cores = 0;
        assert!(compile(&example("matmul_add.json"), &t, &Options::default()).is_err());
        let e = "bogus".parse::<Allocator>().unwrap_err();
        assert!(e.message.contains("greedy, first-fit or best-fit"));
        assert_eq!("best-fit".parse::<Allocator>().unwrap(), Allocator::BestFit);
    }

    #[test]
    fn k_split_matmul_lowers_to_an_inter_tile_reduce() {
        let g = graph::load_json(
            r#"{"format": "spyre-graph", "version": 1, "name": "ks", "description": "",
                "inputs": [{"name": "a", "dtype": "f16", "shape": [64, 256]}],
                "initializers": [{"name": "b", "dtype": "f16", "shape": [256, 128], "init": "ones"}],
                "nodes": [{"name": "mm", "op": "MatMul", "inputs": ["a", "b"], "outputs": ["c"]}],
                "outputs": ["c"]}"#,
        )
        .unwrap();
        let mut options = Options::default();
        options.hints.insert("mm".into(), vec![2, 1, 4]);
        let c = compile(&g, &Target::spyre32(), &options).unwrap();
        let text = c.ktir.as_deref().unwrap();
        if let Err(d) = ktir::check(text) {
            panic!("{}\n{text}", ktir::render_diagnostics("ktir", &d));
        }
        assert!(text.contains("grid = [8]"), "{text}");
        assert!(text.contains("ktdp.inter_tile_reduce"), "{text}");
        assert!(
            text.contains("s0 * 4 == 0"),
            "leader of each group of 4: {text}"
        );
        assert!(text.contains("scf.if"), "{text}");
    }

    #[test]
    fn constant_subgraphs_fold_into_initializers() {
        let g = graph::load_json(
            r#"{"format": "spyre-graph", "version": 1, "name": "fold", "description": "",
                "inputs": [{"name": "x", "dtype": "f32", "shape": [4, 4]}],
                "initializers": [{"name": "ones", "dtype": "f32", "shape": [4, 4], "init": "ones"},
                                 {"name": "two", "dtype": "f32", "shape": [1], "data": [2.0]}],
                "nodes": [
                  {"name": "tri", "op": "Trilu", "inputs": ["ones"], "outputs": ["mask"], "attrs": {"k": 1}},
                  {"name": "scaled", "op": "Mul", "inputs": ["mask", "two"], "outputs": ["m2"]},
                  {"name": "add", "op": "Add", "inputs": ["x", "m2"], "outputs": ["y"]}
                ],
                "outputs": ["y"]}"#,
        )
        .unwrap();
        let (g2, r) = canonicalize(&g);
        assert_eq!(r.folded_constants, vec!["tri", "scaled"]);
        assert_eq!(g2.nodes.len(), 1);
        let m2 = g2.initializers.iter().find(|i| i.name == "m2").unwrap();
        match &m2.init {
            graph::InitSpec::Data(d) => {
                assert_eq!(d[1], 2.0, "above the diagonal");
                assert_eq!(d[4], 0.0, "below the diagonal");
            }
            other => panic!("{other:?}"),
        }
        // The folded graph computes what the original did.
        let x = graph::Tensor::new(
            graph::DType::F32,
            vec![4, 4],
            (0..16).map(|v| v as f32).collect(),
        )
        .unwrap();
        let inputs = BTreeMap::from([("x".to_string(), x)]);
        let a = graph::evaluate(&g, &inputs).unwrap();
        let b = graph::evaluate(&g2, &inputs).unwrap();
        assert_eq!(a["y"].data, b["y"].data);
        // Unused initializers are dropped afterwards.
        assert!(g2.initializers.iter().all(|i| i.name != "ones"));
    }
}
