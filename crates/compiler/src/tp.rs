//! The tensor-parallel pass: Megatron-style sharding of Llama-style layers over N cards.
//!
//! # What it shards
//! Projections are `MatMul` nodes whose weight (second input) is a rank-2 initializer,
//! found by the graph's structure, never by their names:
//! - column-parallel (weights cut by columns, no communication): the projections that read
//!   a normalization's output (the normed hidden state) and feed attention (query: the left
//!   side of the `q k^T` scores matmul before the softmax; key: its right side; value: the
//!   right side of the matmul after the softmax) or the MLP (gate and up: their outputs meet
//!   before a projection back to the hidden size);
//! - row-parallel (weights cut by rows, each card holds a partial sum): the projections
//!   after the attention context and at the end of the MLP, which feed the residual adds;
//!   each is followed by an all-reduce of its output, which is where the program crosses
//!   cards.
//!
//! Other weighted matmuls (an LM head reading the final norm) stay replicated. Attention or
//! an MLP whose parts cannot be traced is an error naming the node where tracing stopped.
//!
//! Attention heads are split across cards: card c gets query heads `[c H/N, (c+1) H/N)`.
//! Key/value heads (GQA) are split when N divides their count; otherwise, when each card's
//! query heads lie within one key/value group, each card computes the one key/value head its
//! group needs, which is then replicated on the cards sharing it (the pass says which).
//! The head reshapes between the column- and row-parallel projections are rewritten to the
//! per-card head counts: a split (`[.., S, heads, d]`), the GQA `Expand`
//! (`[.., kv, group, S, d]`) and its merge (`[.., heads, S, d]`), and the head merge
//! (`[.., S, hidden]`). Any other reshape there is an error naming the node.
//!
//! # What it produces
//! One card's shard program as *segments*: graphs cut at the all-reduces, whose sharded
//! weights are graph inputs (so every card's segment is the same graph, compiled once, and
//! only the values differ; [`TpPlan::shard_weight`] cuts them). A segment's outputs that the
//! next segment reads after an all-reduce are listed in [`Segment::all_reduce`].
//! N = 1 gives the same segments with no communication.

use crate::{CompileError, Snapshot};
use graph::{AttrValue, Graph, Initializer, Tensor, TensorType, ValueInfo};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Name of the pass in snapshots.
pub const PASS_NAME: &str = "tensor-parallel";

/// How a projection is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Parallel {
    /// By output columns.
    Column,
    /// By input rows; its output is a partial sum.
    Row,
}

/// How key/value heads are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KvSharding {
    /// Each card holds `kv_heads / N` of them.
    Split,
    /// Each card computes the one head its query heads need; `copies` cards hold each.
    Replicated { copies: usize },
}

/// A weight cut for each card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WeightShard {
    /// The initializer.
    pub name: String,
    /// 0: rows, 1: columns.
    pub axis: usize,
    /// Per card: the first row or column and how many.
    pub ranges: Vec<(usize, usize)>,
    /// The full shape.
    pub full: Vec<usize>,
}

/// One segment of a card's shard program.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// The segment as a graph (sharded weights are inputs).
    pub graph: Graph,
    /// Outputs of this segment that are all-reduced across the cards before later
    /// segments read them.
    pub all_reduce: Vec<String>,
}

/// The result of the pass.
#[derive(Debug, Clone)]
pub struct TpPlan {
    /// Cards.
    pub degree: usize,
    /// Query heads, key/value heads, head dim.
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub kv: KvSharding,
    /// Projections and how each is cut.
    pub projections: Vec<(String, Parallel)>,
    /// The weights cut per card.
    pub weights: Vec<WeightShard>,
    /// One card's program, in order.
    pub segments: Vec<Segment>,
    /// The pass's snapshot.
    pub snapshot: Snapshot,
    /// Lines for the state text's `program` entity: the degree, heads and segments.
    pub program_notes: Vec<String>,
    /// How each tensor is held on the cards, by name (see [`TpPlan::state_text`]).
    pub tensor_notes: BTreeMap<String, String>,
    /// Each node's shard role, by name.
    pub node_notes: BTreeMap<String, String>,
}

fn err(message: impl Into<String>) -> CompileError {
    CompileError::new(message, None)
}

/// What a projection is in a Llama-style layer, found from the graph's structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Proj {
    Q,
    K,
    V,
    /// Gate or up: the MLP's column-parallel projections.
    MlpIn,
    /// The attention output projection.
    O,
    /// The MLP's down projection.
    Down,
}

impl Proj {
    fn parallel(self) -> Parallel {
        match self {
            Proj::O | Proj::Down => Parallel::Row,
            _ => Parallel::Column,
        }
    }
}

/// Normalization ops whose output is the normed hidden state projections read.
fn is_norm(op: &str) -> bool {
    matches!(
        op,
        "SimplifiedLayerNormalization"
            | "LayerNormalization"
            | "RMSNormalization"
            | "SkipSimplifiedLayerNormalization"
            | "SkipLayerNormalization"
    )
}

/// Longest chain of ops followed between a projection and the matmuls around attention.
const MAX_WALK: usize = 64;

/// Finds the projections by structure: returns them in graph order with their kinds.
fn classify(
    graph: &Graph,
    inits: &BTreeMap<&str, &Initializer>,
) -> Result<Vec<(String, Proj)>, CompileError> {
    let nodes = &graph.nodes;
    let producer: BTreeMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| n.outputs.iter().map(move |o| (o.as_str(), i)))
        .collect();
    let mut consumers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, n) in nodes.iter().enumerate() {
        for inp in &n.inputs {
            consumers.entry(inp.as_str()).or_default().push(i);
        }
    }
    let weighted = |i: usize| {
        let n = &nodes[i];
        n.op == "MatMul"
            && n.inputs
                .get(1)
                .and_then(|w| inits.get(w.as_str()))
                .is_some_and(|w| w.ty.shape.len() == 2)
    };
    let out = |i: usize| nodes[i].outputs.first().map(String::as_str).unwrap_or("");
    // Back along first inputs from `tensor` to the weighted matmul that made it.
    let back_to_weighted = |tensor: &str| -> Option<usize> {
        let mut t = tensor;
        for _ in 0..MAX_WALK {
            let &p = producer.get(t)?;
            if weighted(p) {
                return Some(p);
            }
            t = nodes[p].inputs.first()?;
        }
        None
    };
    // Forward from node `i`'s output to the first weighted matmul (breadth first).
    let forward_to_weighted = |i: usize| -> Option<usize> {
        let mut seen = BTreeSet::new();
        let mut frontier = vec![i];
        for _ in 0..MAX_WALK {
            let mut next = Vec::new();
            for &f in &frontier {
                for &c in consumers.get(out(f)).map(Vec::as_slice).unwrap_or(&[]) {
                    if weighted(c) {
                        return Some(c);
                    }
                    if seen.insert(c) {
                        next.push(c);
                    }
                }
            }
            if next.is_empty() {
                return None;
            }
            frontier = next;
        }
        None
    };
    let unrecognised = |node: usize, what: &str| {
        CompileError::new(
            format!(
                "tensor parallelism cannot recognise the layer's structure at '{}' ({}): {what}",
                nodes[node].name, nodes[node].op
            ),
            Some(&nodes[node].name),
        )
    };
    let mut kinds: BTreeMap<usize, Proj> = BTreeMap::new();
    // Attention: around each softmax, the scores matmul before it and the context after.
    for (s, n) in nodes.iter().enumerate().filter(|(_, n)| n.op == "Softmax") {
        let mut t = n.inputs.first().map(String::as_str).unwrap_or("");
        let mut scores = None;
        for _ in 0..MAX_WALK {
            let Some(&p) = producer.get(t) else { break };
            if nodes[p].op == "MatMul" && !weighted(p) {
                scores = Some(p);
                break;
            }
            t = nodes[p].inputs.first().map(String::as_str).unwrap_or("");
        }
        let scores = scores.ok_or_else(|| {
            unrecognised(
                s,
                "no q k^T matmul of two activations leads to this softmax",
            )
        })?;
        let mut context = None;
        let mut at = s;
        for _ in 0..MAX_WALK {
            let Some(&c) = consumers.get(out(at)).and_then(|cs| {
                cs.iter()
                    .find(|&&c| nodes[c].inputs.first().map(String::as_str) == Some(out(at)))
            }) else {
                break;
            };
            if nodes[c].op == "MatMul" {
                context = Some(c);
                break;
            }
            at = c;
        }
        let context = context
            .ok_or_else(|| unrecognised(s, "its probabilities reach no matmul with the values"))?;
        let side = |node: usize, k: usize, what: &str| {
            nodes[node]
                .inputs
                .get(k)
                .and_then(|t| back_to_weighted(t))
                .ok_or_else(|| {
                    unrecognised(
                        node,
                        &format!("its {what} comes from no projection with a weight initializer"),
                    )
                })
        };
        let q = side(scores, 0, "query (left input)")?;
        let k = side(scores, 1, "key (right input)")?;
        let v = side(context, 1, "value (right input)")?;
        let o = forward_to_weighted(context).ok_or_else(|| {
            unrecognised(
                context,
                "the attention context reaches no output projection",
            )
        })?;
        for (i, kind) in [(q, Proj::Q), (k, Proj::K), (v, Proj::V), (o, Proj::O)] {
            kinds.insert(i, kind);
        }
    }
    // The MLP: weighted matmuls reading a norm that are not attention's, meeting before a
    // projection back down.
    for (i, n) in nodes.iter().enumerate() {
        if !weighted(i) || kinds.contains_key(&i) {
            continue;
        }
        let reads_norm = n
            .inputs
            .first()
            .and_then(|t| producer.get(t.as_str()))
            .is_some_and(|&p| is_norm(&nodes[p].op));
        if !reads_norm {
            continue;
        }
        let Some(down) = forward_to_weighted(i) else {
            // Nothing weighted after it (an LM head): replicated.
            continue;
        };
        if kinds.get(&down).is_some_and(|k| *k != Proj::Down) {
            return Err(unrecognised(
                i,
                "it reads the normed hidden state and feeds another projection of attention",
            ));
        }
        kinds.insert(i, Proj::MlpIn);
        kinds.insert(down, Proj::Down);
    }
    // Row-parallel projections hold partial sums: they must feed the residual adds.
    for (&i, kind) in &kinds {
        if kind.parallel() == Parallel::Row {
            let feeds_add = consumers
                .get(out(i))
                .is_some_and(|cs| cs.iter().any(|&c| nodes[c].op == "Add"));
            if !feeds_add {
                return Err(unrecognised(
                    i,
                    "a projection after attention or the MLP must feed a residual add",
                ));
            }
        }
    }
    Ok(kinds
        .into_iter()
        .map(|(i, k)| (nodes[i].name.clone(), k))
        .collect())
}

/// Which head count a tensor's head dim carries on the path from a projection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// Query heads (also keys/values after the GQA expand-merge).
    Q,
    /// Key/value heads.
    Kv,
    /// Key/value heads expanded to `[kv, group]`, not yet merged.
    KvExpanded,
    /// Heads merged back into one hidden dim, or the MLP's intermediate dim.
    Flat,
}

/// Runs the pass for `degree` cards.
pub fn shard(graph: &Graph, degree: usize) -> Result<TpPlan, CompileError> {
    if degree == 0 {
        return Err(err("the tensor-parallel degree must be at least 1"));
    }
    let types = graph.infer_types().map_err(|e| err(e.to_string()))?;
    let inits: BTreeMap<&str, &Initializer> = graph
        .initializers
        .iter()
        .map(|i| (i.name.as_str(), i))
        .collect();
    let kinds = classify(graph, &inits)?;
    let kind_of = |name: &str| kinds.iter().find(|k| k.0 == name).map(|k| k.1);
    // In graph order.
    let projections: Vec<(String, Parallel)> = graph
        .nodes
        .iter()
        .filter_map(|n| kind_of(&n.name).map(|k| (n.name.clone(), k.parallel())))
        .collect();
    if !projections.iter().any(|p| p.1 == Parallel::Row) {
        return Err(err(
            "tensor parallelism needs a Llama-style layer: projections (MatMul nodes with rank-2 weight initializers) that read a normalization's output and feed a softmax attention or an MLP, and projections after them that feed the residual adds; this graph has none",
        ));
    }
    let node_of = |name: &str| graph.nodes.iter().find(|n| n.name == name);
    let find_proj = |want: Proj| {
        kinds
            .iter()
            .find(|k| k.1 == want)
            .and_then(|k| node_of(&k.0))
    };
    // Head counts from the reshapes that split the q and k projections into heads.
    let split_heads = |proj: Proj| -> Option<(usize, usize)> {
        let p = find_proj(proj)?;
        let out = p.outputs.first()?;
        let r = graph
            .nodes
            .iter()
            .find(|n| n.op == "Reshape" && n.inputs.first() == Some(out))?;
        let shape = types.get(r.outputs.first()?)?.shape.clone();
        (shape.len() >= 2).then(|| (shape[shape.len() - 2], shape[shape.len() - 1]))
    };
    let (heads, head_dim) = split_heads(Proj::Q).unwrap_or((0, 0));
    let (kv_heads, _) = split_heads(Proj::K).unwrap_or((heads, head_dim));
    let n = degree;
    if heads > 0 && heads % n != 0 {
        return Err(err(format!(
            "tensor parallelism over {n} cards: the attention heads ({heads}) do not divide by {n}"
        )));
    }
    let kv = if heads == 0 || kv_heads % n == 0 {
        KvSharding::Split
    } else {
        let group = heads / kv_heads.max(1);
        let per_card = heads / n;
        if kv_heads == 0 || group % per_card != 0 {
            return Err(err(format!(
                "tensor parallelism over {n} cards: the key/value heads ({kv_heads}) do not divide by {n}, and a card's {per_card} query heads span more than one key/value group of {group}, so they can be neither split nor replicated"
            )));
        }
        KvSharding::Replicated {
            copies: group / per_card,
        }
    };
    let q_per_card = if heads > 0 { heads / n } else { 0 };
    let kv_per_card = match kv {
        KvSharding::Split => kv_heads / n,
        KvSharding::Replicated { .. } => 1,
    };
    // The cut of every projection weight.
    let mut weights = Vec::new();
    for (name, role) in &projections {
        let Some(node) = node_of(name) else { continue };
        let w = &node.inputs[1];
        let shape = inits[w.as_str()].ty.shape.clone();
        let (axis, what) = match role {
            Parallel::Column => (1, "columns (output features)"),
            Parallel::Row => (0, "rows (input features)"),
        };
        let size = shape[axis];
        let is_kv = matches!(kind_of(name), Some(Proj::K | Proj::V));
        let ranges = if is_kv && heads > 0 {
            let d = size / kv_heads.max(1);
            (0..n)
                .map(|c| {
                    let first = match kv {
                        KvSharding::Split => c * kv_per_card,
                        KvSharding::Replicated { .. } => c * q_per_card / (heads / kv_heads),
                    };
                    (first * d, kv_per_card * d)
                })
                .collect()
        } else {
            if size % n != 0 {
                let dim = if matches!(kind_of(name), Some(Proj::MlpIn | Proj::Down)) {
                    "MLP intermediate size"
                } else {
                    "hidden size"
                };
                return Err(CompileError::new(
                    format!(
                        "tensor parallelism over {n} cards: the {dim} ({size}, the {what} of weight '{w}') does not divide by {n}"
                    ),
                    Some(name),
                ));
            }
            (0..n).map(|c| (c * size / n, size / n)).collect()
        };
        weights.push(WeightShard {
            name: w.clone(),
            axis,
            ranges,
            full: shape,
        });
    }

    // The shard graph: sharded weights become inputs, head reshapes are rewritten.
    let sharded: BTreeSet<&str> = weights.iter().map(|w| w.name.as_str()).collect();
    let mut g = graph.clone();
    g.initializers
        .retain(|i| !sharded.contains(i.name.as_str()));
    for w in &weights {
        let mut shape = w.full.clone();
        shape[w.axis] = w.ranges[0].1;
        g.inputs.push(ValueInfo {
            name: w.name.clone(),
            ty: TensorType::new(inits[w.name.as_str()].ty.dtype, shape),
        });
    }
    let mut path: BTreeMap<String, Path> = BTreeMap::new();
    let mut partial: BTreeSet<String> = BTreeSet::new();
    let mut node_roles: BTreeMap<String, &'static str> = BTreeMap::new();
    for node in g.nodes.iter_mut() {
        let role = projections.iter().find(|p| p.0 == node.name).map(|p| p.1);
        let out = node.outputs.first().cloned().unwrap_or_default();
        match role {
            Some(Parallel::Column) => {
                let p = match kind_of(&node.name) {
                    Some(Proj::K | Proj::V) => Path::Kv,
                    Some(Proj::Q) => Path::Q,
                    _ => Path::Flat,
                };
                path.insert(out, p);
                node_roles.insert(node.name.clone(), "column-parallel");
                continue;
            }
            Some(Parallel::Row) => {
                partial.insert(out);
                node_roles.insert(node.name.clone(), "row-parallel, then all-reduce");
                continue;
            }
            None => {}
        }
        let inputs: Vec<Path> = node
            .inputs
            .iter()
            .filter_map(|i| path.get(i).copied())
            .collect();
        let Some(&first) = inputs.first() else {
            node_roles.insert(node.name.clone(), "replicated");
            continue;
        };
        node_roles.insert(node.name.clone(), "sharded");
        let p = if inputs.contains(&Path::Q) {
            Path::Q
        } else {
            first
        };
        let in_rank = node
            .inputs
            .first()
            .and_then(|i| types.get(i))
            .map_or(0, |t| t.shape.len());
        let new_path = match node.op.as_str() {
            "Reshape" | "Expand" => {
                let Some(AttrValue::Ints(shape)) = node.attrs.get_mut("shape") else {
                    return Err(CompileError::new(
                        "tensor parallelism rewrites head reshapes given by a `shape` attribute; this one has none",
                        Some(&node.name),
                    ));
                };
                let r = shape.len();
                let bad = || {
                    CompileError::new(
                        format!(
                            "tensor parallelism cannot shard this {} between the column- and row-parallel projections (shape {shape:?}): it is not a head split, GQA expand or head merge",
                            node.op
                        ),
                        Some(&node.name),
                    )
                };
                let k = |v: usize| v as i64;
                match (node.op.as_str(), p) {
                    ("Reshape", Path::Q | Path::Kv) if r == in_rank + 1 && r >= 2 => {
                        shape[r - 2] = k(if p == Path::Q {
                            q_per_card
                        } else {
                            kv_per_card
                        });
                        p
                    }
                    ("Expand", Path::Kv) if r == 5 => {
                        shape[1] = k(kv_per_card);
                        shape[2] = k(q_per_card / kv_per_card.max(1));
                        Path::KvExpanded
                    }
                    ("Reshape", Path::KvExpanded) if r == 4 => {
                        shape[1] = k(q_per_card);
                        Path::Q
                    }
                    ("Reshape", Path::Q) if r + 1 == in_rank && r >= 1 => {
                        shape[r - 1] /= n as i64;
                        Path::Flat
                    }
                    _ => return Err(bad()),
                }
            }
            _ => p,
        };
        for o in &node.outputs {
            path.insert(o.clone(), new_path);
        }
    }
    let shard_types = g.infer_types().map_err(|e| {
        err(format!(
            "the sharded graph does not type-check ({e}); the layer is not Llama-shaped enough for this pass"
        ))
    })?;

    // Segments: a node runs in the segment after the latest all-reduce it depends on.
    let producer: BTreeMap<&str, usize> = g
        .nodes
        .iter()
        .enumerate()
        .flat_map(|(i, nd)| nd.outputs.iter().map(move |o| (o.as_str(), i)))
        .collect();
    let mut seg = vec![0usize; g.nodes.len()];
    for (i, nd) in g.nodes.iter().enumerate() {
        let mut s = 0;
        for inp in &nd.inputs {
            if let Some(&p) = producer.get(inp.as_str()) {
                s = s.max(seg[p] + usize::from(partial.contains(inp)));
            }
        }
        seg[i] = s;
    }
    let count = seg.iter().copied().max().map_or(0, |m| m + 1);
    let mut segments = Vec::new();
    for k in 0..count {
        let nodes: Vec<_> = g
            .nodes
            .iter()
            .zip(&seg)
            .filter(|(_, s)| **s == k)
            .map(|(nd, _)| nd.clone())
            .collect();
        let produced: BTreeSet<&str> = nodes
            .iter()
            .flat_map(|nd| nd.outputs.iter().map(String::as_str))
            .collect();
        let mut inputs: Vec<ValueInfo> = Vec::new();
        let mut used_inits = BTreeSet::new();
        for nd in &nodes {
            for i in &nd.inputs {
                if i.is_empty() || produced.contains(i.as_str()) {
                    continue;
                }
                if g.initializers.iter().any(|x| &x.name == i) {
                    used_inits.insert(i.clone());
                } else if !inputs.iter().any(|v| &v.name == i) {
                    let ty = shard_types
                        .get(i)
                        .cloned()
                        .ok_or_else(|| err(format!("tensor '{i}' has no type")))?;
                    inputs.push(ValueInfo {
                        name: i.clone(),
                        ty,
                    });
                }
            }
        }
        let later: BTreeSet<&str> = g
            .nodes
            .iter()
            .zip(&seg)
            .filter(|(_, s)| **s > k)
            .flat_map(|(nd, _)| nd.inputs.iter().map(String::as_str))
            .collect();
        let mut outputs: Vec<String> = Vec::new();
        for nd in &nodes {
            for o in &nd.outputs {
                if (later.contains(o.as_str()) || graph.outputs.contains(o)) && !outputs.contains(o)
                {
                    outputs.push(o.clone());
                }
            }
        }
        let all_reduce = outputs
            .iter()
            .filter(|o| partial.contains(*o))
            .cloned()
            .collect();
        segments.push(Segment {
            graph: Graph {
                name: format!("{}.tp{n}.seg{k}", graph.name),
                description: format!("segment {k} of one card's shard of '{}'", graph.name),
                inputs,
                outputs,
                initializers: g
                    .initializers
                    .iter()
                    .filter(|x| used_inits.contains(&x.name))
                    .cloned()
                    .collect(),
                nodes,
            },
            all_reduce,
        });
    }

    let mut text = String::new();
    let _ = writeln!(text, "tensor parallel over {n} card(s), Megatron-style");
    if heads > 0 {
        let _ = writeln!(
            text,
            "attention heads {heads} -> {q_per_card} per card; key/value heads {kv_heads}: {}",
            match kv {
                KvSharding::Split => format!("split, {kv_per_card} per card"),
                KvSharding::Replicated { copies } => format!(
                    "replicated: {kv_heads} does not divide by {n}, so each card computes the 1 head its query heads use, held by {copies} cards"
                ),
            }
        );
    }
    let _ = writeln!(text, "projections:");
    for w in &weights {
        let proj = projections
            .iter()
            .find(|p| node_of(&p.0).is_some_and(|nd| nd.inputs.get(1) == Some(&w.name)))
            .map(|p| (p.0.as_str(), p.1));
        if let Some((p, role)) = proj {
            let mut per = w.full.clone();
            per[w.axis] = w.ranges[0].1;
            let _ = writeln!(
                text,
                "  {p:<32} {:<14} weight {} {:?} -> {:?} per card{}",
                match role {
                    Parallel::Column => "column",
                    Parallel::Row => "row",
                },
                w.name,
                w.full,
                per,
                if role == Parallel::Row {
                    ", then all-reduce"
                } else {
                    ""
                }
            );
        }
    }
    let _ = writeln!(
        text,
        "segments (one card's program; identical on every card):"
    );
    for (k, s) in segments.iter().enumerate() {
        let _ = writeln!(
            text,
            "  segment {k}: {} node(s), inputs [{}], outputs [{}]{}",
            s.graph.nodes.len(),
            s.graph
                .inputs
                .iter()
                .map(|i| i.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            s.graph.outputs.join(", "),
            if s.all_reduce.is_empty() {
                String::new()
            } else {
                format!("; all-reduce [{}]", s.all_reduce.join(", "))
            }
        );
    }
    let ty_text = |t: &TensorType| {
        let d: Vec<String> = t.shape.iter().map(|x| x.to_string()).collect();
        format!("{}[{}]", t.dtype.name(), d.join(","))
    };
    let mut tensor_notes: BTreeMap<String, String> = BTreeMap::new();
    for i in &graph.inputs {
        tensor_notes.insert(
            i.name.clone(),
            "replicated: every card receives the whole input".into(),
        );
    }
    for i in &graph.initializers {
        tensor_notes.insert(i.name.clone(), "replicated on every card".into());
    }
    for w in &weights {
        let role = projections
            .iter()
            .find(|p| node_of(&p.0).is_some_and(|nd| nd.inputs.get(1) == Some(&w.name)))
            .map(|p| p.1);
        let mut per = w.full.clone();
        per[w.axis] = w.ranges[0].1;
        let cut = match role {
            Some(Parallel::Row) => "row-parallel: cut by rows (input features)",
            _ => "column-parallel: cut by columns (output features)",
        };
        let kv_note = match kv {
            KvSharding::Replicated { copies } if w.ranges.windows(2).any(|r| r[0].0 == r[1].0) => {
                format!("; key/value heads replicated, each piece held by {copies} cards")
            }
            _ => String::new(),
        };
        tensor_notes.insert(
            w.name.clone(),
            format!("{cut}, {:?} -> {per:?} per card{kv_note}", w.full),
        );
    }
    for nd in &g.nodes {
        for o in &nd.outputs {
            let note = if partial.contains(o) {
                format!("partial sum on each card, all-reduced across the {n} cards")
            } else if path.contains_key(o) {
                match (types.get(o), shard_types.get(o)) {
                    (Some(full), Some(per)) if full != per => format!(
                        "cut over the cards: {} -> {} per card",
                        ty_text(full),
                        ty_text(per)
                    ),
                    _ => "cut over the cards".into(),
                }
            } else {
                "replicated: every card computes it whole".into()
            };
            tensor_notes.insert(o.clone(), note);
        }
    }
    let mut program_notes = vec![format!(
        "tensor parallel: {n} card(s), Megatron-style (column-parallel, then row-parallel and an all-reduce)"
    )];
    if heads > 0 {
        program_notes.push(format!(
            "heads: {heads} attention heads -> {q_per_card} per card; {kv_heads} key/value heads {}",
            match kv {
                KvSharding::Split => format!("split, {kv_per_card} per card"),
                KvSharding::Replicated { copies } =>
                    format!("replicated: each card computes 1, each held by {copies} cards"),
            }
        ));
    }
    for (k, s) in segments.iter().enumerate() {
        program_notes.push(format!(
            "segment {k}: {} node(s){}",
            s.graph.nodes.len(),
            if s.all_reduce.is_empty() {
                String::new()
            } else {
                format!(", then all-reduce [{}]", s.all_reduce.join(", "))
            }
        ));
    }
    let node_notes: BTreeMap<String, String> = node_roles
        .iter()
        .map(|(k, v)| (k.clone(), v.to_string()))
        .collect();
    let snapshot = Snapshot {
        pass: PASS_NAME.into(),
        title: format!("Tensor parallel (TP {n})"),
        text,
        data: serde_json::json!({
            "degree": n,
            "heads": heads,
            "kvHeads": kv_heads,
            "kv": kv,
            "weights": weights,
            "nodes": node_roles,
            "segments": segments.iter().map(|s| serde_json::json!({
                "nodes": s.graph.nodes.iter().map(|x| x.name.clone()).collect::<Vec<_>>(),
                "allReduce": s.all_reduce,
            })).collect::<Vec<_>>(),
        }),
    };
    Ok(TpPlan {
        degree: n,
        heads,
        kv_heads,
        head_dim,
        kv,
        projections,
        weights,
        segments,
        snapshot,
        program_notes,
        tensor_notes,
        node_notes,
    })
}

impl TpPlan {
    /// The pass as a whole-state text: `canonical` (the state after `canonicalize`, see
    /// [`crate::state`]) with a `shard:` line on every tensor and node saying how the cards
    /// hold it, so its diff against that state is exactly the sharding.
    pub fn state_text(&self, canonical: &str) -> String {
        crate::state::annotate(
            canonical,
            &self.program_notes,
            &self.tensor_notes,
            &self.node_notes,
        )
    }

    /// Card `card`'s piece of weight `full` (named `name`), or `None` if the weight is not
    /// sharded.
    pub fn shard_weight(&self, name: &str, full: &Tensor, card: usize) -> Option<Tensor> {
        let w = self.weights.iter().find(|w| w.name == name)?;
        let &(first, len) = w.ranges.get(card)?;
        let (rows, cols) = (*w.full.first()?, *w.full.get(1)?);
        let data = if w.axis == 1 {
            (0..rows)
                .flat_map(|r| full.data.get(r * cols + first..r * cols + first + len))
                .flatten()
                .copied()
                .collect()
        } else {
            full.data.get(first * cols..(first + len) * cols)?.to_vec()
        };
        let shape = if w.axis == 1 {
            vec![rows, len]
        } else {
            vec![len, cols]
        };
        Tensor::new(full.dtype, shape, data).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama() -> Graph {
        graph::load_json(include_str!(
            "../../../examples/graphs/llama_decoder_layer.json"
        ))
        .unwrap()
    }

    #[test]
    fn the_small_llama_layer_shards_in_three_segments() {
        let p = shard(&llama(), 2).unwrap();
        assert_eq!((p.heads, p.kv_heads, p.head_dim), (8, 2, 32));
        assert_eq!(p.kv, KvSharding::Split);
        assert_eq!(p.segments.len(), 3);
        assert_eq!(p.segments[0].all_reduce, vec!["layer0.attn.o_proj"]);
        assert_eq!(p.segments[1].all_reduce, vec!["layer0.mlp.down_proj"]);
        assert!(
            p.snapshot.text.contains("split, 1 per card"),
            "{}",
            p.snapshot.text
        );
        for s in &p.segments {
            s.graph.infer_types().unwrap();
        }
        let p = shard(&llama(), 4).unwrap();
        assert_eq!(p.kv, KvSharding::Replicated { copies: 2 });
        assert!(
            p.snapshot.text.contains("replicated"),
            "{}",
            p.snapshot.text
        );
        let wk = p.weights.iter().find(|w| w.name.ends_with("wk")).unwrap();
        assert_eq!(wk.ranges, vec![(0, 32), (0, 32), (32, 32), (32, 32)]);
    }

    #[test]
    fn a_degree_that_does_not_divide_the_heads_names_them() {
        let e = shard(&llama(), 3).unwrap_err();
        assert!(e.message.contains("attention heads (8)"), "{e}");
        let mut g = llama();
        // 8 heads split over 4 cards, but an MLP of 770 does not.
        for i in &mut g.initializers {
            if i.name.ends_with("w_gate") || i.name.ends_with("w_up") {
                i.ty.shape = vec![256, 770];
            }
            if i.name.ends_with("w_down") {
                i.ty.shape = vec![770, 256];
            }
        }
        let e = shard(&g, 4).unwrap_err();
        assert!(e.message.contains("MLP intermediate size (770"), "{e}");
    }

    #[test]
    fn weights_are_cut_by_columns_and_rows() {
        let p = shard(&llama(), 2).unwrap();
        let full = Tensor::new(
            graph::DType::F32,
            vec![256, 256],
            (0..256 * 256).map(|x| x as f32).collect(),
        )
        .unwrap();
        let q1 = p.shard_weight("layer0.attn.wq", &full, 1).unwrap();
        assert_eq!(q1.shape, vec![256, 128]);
        assert_eq!(q1.data[0], 128.0);
        assert_eq!(q1.data[128], 256.0 + 128.0);
        let o1 = p.shard_weight("layer0.attn.wo", &full, 1).unwrap();
        assert_eq!(o1.shape, vec![128, 256]);
        assert_eq!(o1.data[0], (128 * 256) as f32);
    }
}

#[cfg(test)]
mod state_tests {
    use super::*;

    #[test]
    fn the_state_text_says_how_every_projection_weight_and_node_is_held() {
        let g = graph::load_json(include_str!(
            "../../../examples/graphs/llama_decoder_layer.json"
        ))
        .unwrap();
        let p = shard(&g, 4).unwrap();
        let c = crate::compile(&g, &crate::Target::spyre32(), &crate::Options::default()).unwrap();
        let canonical = &c.snapshot("canonicalize").unwrap().text;
        let text = p.state_text(canonical);
        assert!(text.starts_with("program "));
        assert!(text.contains("  tensor parallel: 4 card(s)"));
        assert!(text.contains("key/value heads replicated"), "{text}");
        for w in &p.weights {
            let header = text.find(&format!("tensor {}: ", w.name)).unwrap();
            assert!(text[header..]
                .lines()
                .nth(1)
                .unwrap()
                .starts_with("  shard: "));
        }
        assert!(text.contains("shard: row-parallel, then all-reduce"));
        assert!(text.contains("shard: partial sum on each card, all-reduced across the 4 cards"));
    }
}

#[cfg(test)]
mod structure_tests {
    use super::*;

    fn llama() -> Graph {
        graph::load_json(include_str!(
            "../../../examples/graphs/llama_decoder_layer.json"
        ))
        .unwrap()
    }

    #[test]
    fn projections_are_found_by_structure_whatever_their_names() {
        let mut g = llama();
        for (i, n) in g.nodes.iter_mut().enumerate() {
            n.name = format!("node{i}");
        }
        let p = shard(&g, 2).unwrap();
        assert_eq!(p.projections.len(), 7, "{:?}", p.projections);
        assert_eq!(
            p.projections
                .iter()
                .filter(|x| x.1 == Parallel::Row)
                .count(),
            2
        );
        assert_eq!((p.heads, p.kv_heads, p.head_dim), (8, 2, 32));
        assert_eq!(p.segments.len(), 3);
        let named = shard(&llama(), 2).unwrap();
        assert_eq!(p.weights, named.weights);
    }

    #[test]
    fn a_structure_it_cannot_recognise_is_an_error_naming_the_node() {
        let mut g = llama();
        let r = g
            .nodes
            .iter_mut()
            .find(|n| n.name == "layer0.attn_residual")
            .unwrap();
        r.op = "Sub".into();
        let e = shard(&g, 2).unwrap_err();
        assert!(e.message.contains("'layer0.attn.o_proj'"), "{e}");
        assert!(e.message.contains("residual add"), "{e}");
    }
}
