//! Device ops and the `decompose` pass: graph ops to the device op set (SDSC op names).
//!
//! | graph op | device ops |
//! |---|---|
//! | MatMul (batch dims broadcast; a 1-D operand as numpy: a row or a column) | batchmatmul (reshapes around it for 1-D operands) |
//! | Gemm (any transA, transB, alpha, beta) | transpose (transA / transB), batchmatmul, mul (alpha, beta), add (when C is given) |
//! | Add, Sub, Mul, Div, Max, Min (2+ inputs chain) | add, sub, mul, realdiv, maximum, minimum; on integers to_dtype to f32 and back around them, Div truncated (floor, neg, lesser, where): exact below 2^24 (2^22 for Div) |
//! | unary elementwise ops ([`Unary`] lists them with their graph op names) | same name, lowercase (Gelu's `approximate = "tanh"` as the attribute `approximate = [1]`; Silu with an `alpha` other than 1, ONNX's Swish, as mul, sigmoid, mul) |
//! | Cast (any dtype to any) | to_dtype |
//! | Equal, Greater, Less | equal, greater, lesser (bool result) |
//! | Where | where |
//! | Trilu (when not folded as a constant) | where (with a constant bool mask and a zero) |
//! | Softmax (any axis; another axis is first moved last, and back) | max, sub, exp, sum, realdiv |
//! | ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd (last axis, keepdims) | sum, mean, max, min, prod |
//! | the same (other axes, keepdims 0 or 1) | transpose (reduced axes last), reshape (merge them), the reduction, reshape |
//! | CastLike | to_dtype |
//! | the ops of [`Composite`] | chains of the ops above (see `compose`) |
//! | LayerNormalization, RMSNormalization over axes `axis..` (not only the last), LayerNormalization's Mean and InvStdDev outputs | reshapes merging the axes (scale and bias expanded and flattened), the last-axis decomposition below, reshape back; the row statistics converted to f32 and reshaped |
//! | SimplifiedLayerNormalization / RMSNormalization (last axis) | mul, mean, add (eps), rsqrt, mul, mul (weight) |
//! | Attention with a bool or additive mask, past key/value and present outputs, 3-D inputs, softcap or the QK output | reshape and transpose (3-D to heads first and back), concat (past and new keys/values), the plain decomposition below with softcap as mul, tanh, mul, a bool mask as where, a short mask padded by concat, and a fully masked row giving zeros (equal, where); the QK output a copy (see `attention`) |
//! | Attention (4-D, GQA, causal) | GQA heads repeated (reshape, expand), K transposed, then plain: batchmatmul, mul (scale), add (mask), softmax, batchmatmul; or, with `Options::attention_key_block`, an online-softmax loop over key blocks (see `attention`) |
//! | Einsum (any equation the graph crate parses: implicit output, ellipses, diagonals) | where with an identity mask and sum (diagonals), expand (broadcast axes), per operand pair: sum (labels nothing later needs), transpose and reshape to `[batch, m, k]` / `[batch, k, n]`, batchmatmul, reshape; transpose to the output's order (see `einsum`) |
//! | GatherElements, ScatterND (none, add) | one-hot selections from comparisons with the indices: where and sum, or a batchmatmul (see `indexed`) |
//! | PagedAttention (block tables and sequence lengths constant) | a one-hot cache update (batchmatmul, where), per sequence a gather of its pages' rows (an indirect access tile over the slot ids the block table gives), the online-softmax loop with one key block per page, and a concat (see `paged`) |
//! | Gather (any table rank, axis and ids shape; constant ids counted from the end made positive) | gather (a 2-D table on axis 0 with a vector of ids); otherwise transpose (the axis first), reshape (the table to `[rows, the rest]`, the ids to a vector), gather, reshape, transpose back |
//! | Split | one slice per output |
//! | CumSum | batchmatmul with a constant triangular ones matrix (reshapes around it for an inner axis) |
//! | Conv, 1-D depthwise (group = C = M) | concat (zero padding), per tap: slice, mul by the tap's weight column; add chain; add (bias) |
//! | Conv, 1-D, other groups | concat (zero padding), per group and tap: slice, batchmatmul by the tap's weights; add chain; concat (groups); add (bias) |
//! | TopK | topk (transposes around it when the axis is not the last) |
//! | MaxPool, AveragePool, LpPool (N-D, any pads, strides, dilations, auto_pad, ceil_mode; kernels of up to 256 slices in all) | per spatial axis: concat (padding: -inf for MaxPool, zeros otherwise), per tap a strided slice, a maximum or add chain; AveragePool a mul by the reciprocal window counts; LpPool abs and muls (\|x\|^p) first, then sqrt or exp(log / p) (see `pool`) |
//! | LpNormalization, InstanceNormalization, GroupNormalization, MeanVarianceNormalization | transpose (statistic axes last, only when they are not trailing), reshape to rows (GroupNormalization `[N, groups, n]`), sum of abs or squares then sqrt and realdiv (Lp), or mean, sub, mul, mean, add (eps), rsqrt, mul (MVN: sqrt, add eps to the deviation, realdiv); scale and bias reshaped to `[C, 1]` (or per group `[groups, 1]`), mul, add; reshape (and transpose) back (see `norm`) |
//! | BatchNormalization (inference) | scale, B, mean, var reshaped to `[C, 1, ..., 1]`; add (eps), rsqrt, mul (scale), sub (mean), mul, add (B) |
//! | LRN (windows of up to 256 channels) | mul (squares), concat (zero channels before and after), per tap a channel slice, add chain, mul, add, then sqrt (beta 0.5) or log, mul, exp; realdiv |
//! | SpaceToDepth, DepthToSpace (DCR, CRD) | reshape to six axes, transpose, reshape |
//! | RotaryEmbedding (3-D or 4-D, halves or interleaved pairs, partial rotation, position ids) | reshape (3-D to heads), gather (cache rows by position id, ids reshaped to a vector), reshape (caches to broadcast over the heads), slices (the rotated channels, the two of each pair, strided when interleaved), mul, sub, mul, add, concat (halves; interleaved through a trailing axis of 2), concat (the channels passed through), reshape back (see `rope`) |
//! | GlobalAveragePool, GlobalMaxPool, GlobalLpPool | mean, max, or abs and muls then sum then the root, over the spatial axes as the reductions above |
//!
//! Reductions (max, sum, mean) reduce the last axis and keep it with size 1; their iteration
//! space is the input's, with the last dim marked as a reduction. `topk` is a row op: the
//! same iteration space, its outputs holding `k` elements per row. Constants a
//! decomposition needs (the norm's epsilon, triangular matrices, masks, zero padding) become
//! new initializers of the compilation's graph.
//!
//! Element types: movement ops move any dtype; `to_dtype` converts between any two;
//! comparisons take any dtype and give bool; `where` takes a bool condition; `topk` takes
//! floats and gives float values and integer indices; every other device op computes on
//! float types. (On the device an i64 tensor is held as i32: see [`crate::layout`].)

use crate::{Compilation, CompileError, Options};
use graph::{AttrValue, DType, Node, TensorType};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod attention;
mod compose;
mod einsum;
mod indexed;
mod kind;
mod norm;
mod paged;
mod pool;
mod rope;

pub use compose::{Composite, COMPOSITES};
pub use kind::{Binary, Category, Comparison, DeviceOpKind, Movement, Reduction, Unary};

/// One device op: the unit the rest of the compiler plans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceOp {
    /// From the graph node; `node/step` when a node decomposes into several ops.
    pub name: String,
    /// The SDSC op ("batchmatmul", "add", "restickify", ...); serialized as its name.
    #[serde(rename = "op")]
    pub kind: DeviceOpKind,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub iteration: Vec<IterDim>,
    /// Integer attributes movement kernels need (`perm`, `starts`, `axes`, `steps`, `axis`).
    /// Written even when empty: the compile-artifact cache's binary form is positional.
    #[serde(default)]
    pub attrs: BTreeMap<String, Vec<i64>>,
}

/// One dimension of an op's iteration space.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterDim {
    /// batchmatmul: "b0".. (batch), "mb" (M), "out" (N), "in" (K); others: "d0", "d1", ...
    pub label: String,
    /// In elements.
    pub extent: usize,
    /// Indexes the stick dim, so it is split in whole sticks.
    pub in_sticks: bool,
    pub reduction: bool,
}

/// How `decompose` turns one graph op into device ops. [`GRAPH_OPS`] names the rule of
/// every graph op it accepts, and `Builder::decompose` matches on the rule exhaustively, so
/// the list of accepted ops is the dispatch itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decomposition {
    /// One movement op on the node's inputs, with its integer attributes.
    Movement(Movement),
    /// One elementwise op of one operand.
    Unary(Unary),
    /// `to_dtype`.
    Cast,
    /// A chain of binary ops (variadic Max and Min chain left to right).
    Binary(Binary),
    /// One comparison.
    Compare(Comparison),
    /// One `where`.
    Where,
    MatMul,
    Gemm,
    Attention,
    Softmax,
    /// A reduction over any axes (moved last and merged when they are not the last).
    Reduce(Reduction),
    Split,
    Trilu,
    CumSum,
    Conv,
    TopK,
    LayerNormalization,
    /// SimplifiedLayerNormalization and RMSNormalization.
    RmsNormalization,
    /// A chain of existing device ops (see `compose`).
    Composite(Composite),
    /// Transposes, reshapes, batched matmuls and sums (see `einsum`).
    Einsum,
    /// One-hot selections from comparisons with the indices (see `indexed`).
    GatherElements,
    /// One-hot selections and a batched matmul (see `indexed`).
    ScatterND,
    /// A one-hot cache update, page gathers and online-softmax attention per sequence
    /// (see `paged`).
    PagedAttention,
    /// MaxPool, AveragePool, LpPool: padding, strided window slices and a maximum or sum
    /// chain, one spatial axis at a time (see `pool`).
    Pool(graph::PoolKind),
    /// GlobalMaxPool, GlobalAveragePool, GlobalLpPool: reductions over the spatial axes
    /// (see `pool`).
    GlobalPool(graph::PoolKind),
    /// LpNormalization, BatchNormalization, InstanceNormalization, GroupNormalization,
    /// MeanVarianceNormalization: last-axis statistics of a reshaped view (see `norm`).
    Normalization,
    /// SpaceToDepth, DepthToSpace: reshape, transpose, reshape.
    DepthSpace,
    /// Zero-padded channel slices and an add chain (see `norm`).
    Lrn,
    /// Slices of each head's rotated channels, muls and adds by the gathered cos and sin,
    /// concat (see `rope`).
    RotaryEmbedding,
}

/// Graph ops `decompose` accepts and the rule for each, besides the unary elementwise ops,
/// which [`Unary`] defines with their graph op names.
pub const GRAPH_OPS: &[(&str, Decomposition)] = {
    use Decomposition as D;
    &[
        ("Add", D::Binary(Binary::Add)),
        ("Attention", D::Attention),
        ("DepthToSpace", D::DepthSpace),
        ("SpaceToDepth", D::DepthSpace),
        ("RotaryEmbedding", D::RotaryEmbedding),
        ("BatchNormalization", D::Normalization),
        ("GroupNormalization", D::Normalization),
        ("InstanceNormalization", D::Normalization),
        ("LRN", D::Lrn),
        ("LpNormalization", D::Normalization),
        ("MeanVarianceNormalization", D::Normalization),
        ("AveragePool", D::Pool(graph::PoolKind::Average)),
        ("Cast", D::Cast),
        ("CastLike", D::Cast),
        ("Concat", D::Movement(Movement::Concat)),
        ("Conv", D::Conv),
        ("Einsum", D::Einsum),
        ("CumSum", D::CumSum),
        ("Equal", D::Compare(Comparison::Equal)),
        ("Expand", D::Movement(Movement::Expand)),
        ("Flatten", D::Movement(Movement::Reshape)),
        ("Reshape", D::Movement(Movement::Reshape)),
        ("Slice", D::Movement(Movement::Slice)),
        ("Squeeze", D::Movement(Movement::Reshape)),
        ("Transpose", D::Movement(Movement::Transpose)),
        ("Unsqueeze", D::Movement(Movement::Reshape)),
        ("Div", D::Binary(Binary::RealDiv)),
        ("Gather", D::Movement(Movement::Gather)),
        ("GatherElements", D::GatherElements),
        ("GlobalAveragePool", D::GlobalPool(graph::PoolKind::Average)),
        ("GlobalLpPool", D::GlobalPool(graph::PoolKind::Lp)),
        ("GlobalMaxPool", D::GlobalPool(graph::PoolKind::Max)),
        ("Gemm", D::Gemm),
        ("Greater", D::Compare(Comparison::Greater)),
        ("LayerNormalization", D::LayerNormalization),
        ("LpPool", D::Pool(graph::PoolKind::Lp)),
        ("Less", D::Compare(Comparison::Lesser)),
        ("MatMul", D::MatMul),
        ("MaxPool", D::Pool(graph::PoolKind::Max)),
        ("PagedAttention", D::PagedAttention),
        ("Max", D::Binary(Binary::Maximum)),
        ("Min", D::Binary(Binary::Minimum)),
        ("Mul", D::Binary(Binary::Mul)),
        ("RMSNormalization", D::RmsNormalization),
        ("ReduceMax", D::Reduce(Reduction::Max)),
        ("ReduceMean", D::Reduce(Reduction::Mean)),
        ("ReduceMin", D::Reduce(Reduction::Min)),
        ("ReduceProd", D::Reduce(Reduction::Prod)),
        ("ReduceSum", D::Reduce(Reduction::Sum)),
        ("ScatterND", D::ScatterND),
        ("SimplifiedLayerNormalization", D::RmsNormalization),
        ("Softmax", D::Softmax),
        ("Split", D::Split),
        ("Sub", D::Binary(Binary::Sub)),
        ("TopK", D::TopK),
        ("Trilu", D::Trilu),
        ("Where", D::Where),
    ]
};

/// The rule `decompose` applies to graph op `op`, if it accepts it.
pub fn decomposition(op: &str) -> Option<Decomposition> {
    GRAPH_OPS
        .iter()
        .find(|(n, _)| *n == op)
        .map(|&(_, d)| d)
        .or_else(|| Unary::from_graph_op(op).map(Decomposition::Unary))
        .or_else(|| {
            COMPOSITES
                .iter()
                .find(|(n, _)| *n == op)
                .map(|&(_, c)| Decomposition::Composite(c))
        })
}

/// Names of the graph ops `decompose` accepts, sorted.
pub fn supported_graph_ops() -> impl Iterator<Item = &'static str> {
    let mut names: Vec<&'static str> = GRAPH_OPS
        .iter()
        .map(|&(n, _)| n)
        .chain(Unary::ALL.iter().filter_map(|u| u.graph_op()))
        .chain(COMPOSITES.iter().map(|&(n, _)| n))
        .collect();
    names.sort_unstable();
    names.into_iter()
}

/// Which iteration dim indexes each dim of an operand (`None`: broadcast or reduced away).
/// `operand` counts the op's inputs first, then its outputs.
pub fn access_map(op: &DeviceOp, operand: usize, shape: &[usize]) -> Vec<Option<usize>> {
    let it = &op.iteration;
    let r = shape.len();
    if op.kind.is_movement() && operand < op.inputs.len() {
        return crate::movement_split::input_access(op, shape);
    }
    let aligned = |i: usize, offset_from_right: usize, iter_end: usize| -> Option<usize> {
        // dim i of a tensor whose dims [0, r - offset_from_right) align right with iteration
        // dims [0, iter_end).
        let lead = r.checked_sub(offset_from_right)?;
        let pos = (iter_end + i).checked_sub(lead)?;
        let d = it.get(pos)?;
        if shape[i] == 1 && d.extent != 1 {
            None
        } else {
            Some(pos)
        }
    };
    if op.kind == DeviceOpKind::BatchMatmul && it.len() >= 3 && (r >= 2 || operand >= 2) {
        let nb = it.len() - 3;
        let (mb, out, k) = (nb, nb + 1, nb + 2);
        let (second_last, last) = match operand {
            0 => (mb, k),
            1 => (k, out),
            _ => (mb, out),
        };
        // C and a fused epilogue's inputs (operand 2 on) index like C; an epilogue input
        // of size 1 along M or N (a bias row) is broadcast there.
        let own = |i: usize, d: usize| -> Option<usize> {
            let broadcast =
                operand >= 2 && shape[i] == 1 && it.get(d).is_some_and(|x| x.extent != 1);
            (!broadcast).then_some(d)
        };
        return (0..r)
            .map(|i| {
                if i == r - 1 {
                    own(i, last)
                } else if i == r - 2 {
                    own(i, second_last)
                } else {
                    aligned(i, 2, nb)
                }
            })
            .collect();
    }
    let mut map: Vec<Option<usize>> = (0..r).map(|i| aligned(i, 0, it.len())).collect();
    if op.kind.is_row_op() && operand >= op.inputs.len() {
        // A row op's outputs hold k elements per row, not the row's extent: no iteration
        // dim indexes their last dim, and every core writes its rows whole.
        if let Some(last) = map.last_mut() {
            *last = None;
        }
    }
    map
}

fn pointwise_iteration(shape: &[usize]) -> Vec<IterDim> {
    if shape.is_empty() {
        return vec![IterDim {
            label: "d0".into(),
            extent: 1,
            in_sticks: true,
            reduction: false,
        }];
    }
    let last = shape.len() - 1;
    shape
        .iter()
        .enumerate()
        .map(|(i, &e)| IterDim {
            label: format!("d{i}"),
            extent: e,
            in_sticks: i == last,
            reduction: false,
        })
        .collect()
}

/// The iteration of an elementwise op over a tensor of this shape ("d0", "d1", ...).
pub fn pointwise_iteration_pub(shape: &[usize]) -> Vec<IterDim> {
    pointwise_iteration(shape)
}

fn reduction_iteration(input_shape: &[usize]) -> Vec<IterDim> {
    let mut it = pointwise_iteration(input_shape);
    if let Some(d) = it.last_mut() {
        d.reduction = true;
    }
    it
}

/// Builds the ops of one node, naming intermediates `node/step`.
struct Builder<'a> {
    c: &'a mut Compilation,
    node: &'a Node,
    ops: Vec<DeviceOp>,
    /// Keys per block of online-softmax attention; `None` for plain attention.
    key_block: Option<usize>,
    /// The padding rules whose cost PagedAttention reports.
    padding: crate::PaddingRules,
}

impl Builder<'_> {
    fn err(&self, msg: impl Into<String>) -> CompileError {
        CompileError::at(&self.node.name, msg)
    }

    fn ty(&self, t: &str) -> Result<TensorType, CompileError> {
        self.c
            .types
            .get(t)
            .cloned()
            .ok_or_else(|| self.err(format!("tensor '{t}' has no known type")))
    }

    /// A fresh tensor name for step `step` of this node.
    fn temp(&mut self, step: &str, ty: TensorType) -> String {
        let base = format!("{}/{step}", self.node.name);
        let mut name = base.clone();
        let mut k = 1;
        while self.c.types.contains_key(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.c.types.insert(name.clone(), ty);
        name
    }

    fn push(
        &mut self,
        step: Option<&str>,
        kind: impl Into<DeviceOpKind>,
        inputs: Vec<String>,
        out: String,
        it: Vec<IterDim>,
    ) {
        let name = match step {
            Some(s) => format!("{}/{s}", self.node.name),
            None => self.node.name.clone(),
        };
        // Integer attributes travel with single-op nodes (movement kernels read them).
        let attrs = if step.is_none() {
            self.node
                .attrs
                .iter()
                .filter_map(|(k, v)| match v {
                    AttrValue::Int(i) => Some((k.clone(), vec![*i])),
                    AttrValue::Ints(l) => Some((k.clone(), l.clone())),
                    _ => None,
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        self.ops.push(DeviceOp {
            name,
            kind: kind.into(),
            inputs,
            outputs: vec![out],
            iteration: it,
            attrs,
        });
    }

    /// `1 / sqrt(x + eps)` for the per-row statistic `x` of a normalisation: the epsilon
    /// becomes a constant initializer, then an add and an rsqrt.
    fn inverse_root(
        &mut self,
        x: String,
        ty: TensorType,
        eps: f32,
    ) -> Result<String, CompileError> {
        let eps_t = TensorType {
            dtype: ty.dtype,
            shape: vec![1],
        };
        let eps_name = self.temp("epsilon", eps_t.clone());
        self.c.graph.initializers.push(graph::Initializer {
            name: eps_name.clone(),
            ty: eps_t,
            init: graph::InitSpec::Constant(eps),
        });
        let it = pointwise_iteration(&ty.shape);
        let sum = self.temp("add_eps", ty.clone());
        self.push(
            Some("add_eps"),
            Binary::Add,
            vec![x, eps_name],
            sum.clone(),
            it.clone(),
        );
        let r = self.temp("rsqrt", ty);
        self.push(Some("rsqrt"), Unary::Rsqrt, vec![sum], r.clone(), it);
        Ok(r)
    }

    /// A movement step of a decomposition, with its integer attributes.
    fn push_movement(
        &mut self,
        step: &str,
        kind: Movement,
        input: String,
        out: String,
        attrs: &[(&str, Vec<i64>)],
    ) -> Result<(), CompileError> {
        let it = pointwise_iteration(&self.ty(&out)?.shape);
        self.push(Some(step), kind, vec![input], out, it);
        if let Some(last) = self.ops.last_mut() {
            last.attrs = attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
        }
        Ok(())
    }

    fn input(&self, i: usize) -> Result<String, CompileError> {
        match self.node.inputs.get(i) {
            Some(s) if !s.is_empty() => Ok(s.clone()),
            _ => Err(self.err(format!(
                "{} needs input {} but it is missing",
                self.node.op,
                i + 1
            ))),
        }
    }

    /// Input `i` and its type, refused unless a float type: the ops that lower a whole
    /// node by float arithmetic (pooling, the normalisations) check it up front, naming
    /// the node.
    fn float_input(&self, i: usize) -> Result<(String, TensorType), CompileError> {
        let x = self.input(i)?;
        let xt = self.ty(&x)?;
        if !xt.dtype.is_float() {
            return Err(self.err(format!(
                "{} of {} is not lowered: device ops compute on float types",
                self.node.op, xt.dtype
            )));
        }
        Ok((x, xt))
    }

    fn output(&self) -> Result<String, CompileError> {
        match self.node.outputs.first() {
            Some(s) if !s.is_empty() => Ok(s.clone()),
            _ => Err(self.err(format!("{} has no output", self.node.op))),
        }
    }

    fn int_attr(&self, name: &str, default: i64) -> Result<i64, CompileError> {
        match self.node.attrs.get(name) {
            None => Ok(default),
            Some(AttrValue::Int(v)) => Ok(*v),
            Some(v) => Err(self.err(format!(
                "attribute '{name}' must be an integer, got {}",
                v.kind_name()
            ))),
        }
    }

    fn float_attr(&self, name: &str, default: f32) -> Result<f32, CompileError> {
        match self.node.attrs.get(name) {
            None => Ok(default),
            Some(AttrValue::Float(v)) => Ok(*v),
            Some(AttrValue::Int(v)) => Ok(*v as f32),
            Some(v) => Err(self.err(format!(
                "attribute '{name}' must be a float, got {}",
                v.kind_name()
            ))),
        }
    }

    /// Checks that `axis` names the last axis of a rank-`rank` tensor.
    fn require_last_axis(&self, axis: i64, rank: usize) -> Result<(), CompileError> {
        let r = rank as i64;
        let a = if axis < 0 { axis + r } else { axis };
        if a != r - 1 {
            return Err(self.err(format!(
                "{} over axis {axis} of a rank-{rank} tensor is not supported; only the last axis (-1)",
                self.node.op
            )));
        }
        Ok(())
    }

    fn matmul(
        &mut self,
        a: String,
        b: String,
        out: String,
        step: Option<&str>,
    ) -> Result<(), CompileError> {
        let (ta, tb, tc) = (self.ty(&a)?, self.ty(&b)?, self.ty(&out)?);
        if ta.shape.len() < 2 || tb.shape.len() < 2 {
            return Err(self.err(format!(
                "matmul of {}-D by {}-D operands is not supported; both must be at least 2-D",
                ta.shape.len(),
                tb.shape.len()
            )));
        }
        let rc = tc.shape.len();
        if rc < 2 {
            return Err(self.err("matmul result must be at least 2-D"));
        }
        let k = ta.shape[ta.shape.len() - 1];
        if tb.shape[tb.shape.len() - 2] != k {
            return Err(self.err(format!(
                "matmul inner dims differ: A has K = {k}, B has K = {}",
                tb.shape[tb.shape.len() - 2]
            )));
        }
        let mut it: Vec<IterDim> = tc.shape[..rc - 2]
            .iter()
            .enumerate()
            .map(|(i, &e)| IterDim {
                label: format!("b{i}"),
                extent: e,
                in_sticks: false,
                reduction: false,
            })
            .collect();
        it.push(IterDim {
            label: "mb".into(),
            extent: tc.shape[rc - 2],
            in_sticks: false,
            reduction: false,
        });
        it.push(IterDim {
            label: "out".into(),
            extent: tc.shape[rc - 1],
            in_sticks: true,
            reduction: false,
        });
        it.push(IterDim {
            label: "in".into(),
            extent: k,
            in_sticks: true,
            reduction: true,
        });
        self.push(step, DeviceOpKind::BatchMatmul, vec![a, b], out, it);
        Ok(())
    }

    /// One movement op on the node's inputs (its integer attributes travel with it).
    fn movement(&mut self, kind: Movement) -> Result<(), CompileError> {
        let inputs: Vec<String> = self
            .node
            .inputs
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        let y = self.output()?;
        let it = pointwise_iteration(&self.ty(&y)?.shape);
        self.push(None, kind, inputs, y, it);
        Ok(())
    }

    /// Gather: one device gather where it is the embedding lookup the KTIR lowering reads (a
    /// 2-D table on axis 0, ids with at most one dim above 1); any other table rank, axis or
    /// ids shape through that form: the gathered axis moved first, the table as
    /// `[rows, the rest]`, the ids as a vector, then reshaped (and moved) back.
    fn gather(&mut self) -> Result<(), CompileError> {
        let (data, mut ids, y) = (self.input(0)?, self.input(1)?, self.output()?);
        let (dt, it) = (self.ty(&data)?, self.ty(&ids)?);
        let r = dt.shape.len();
        let axis = self.axis(self.int_attr("axis", 0)?, r)?;
        // Constant ids counting from the end (-1 is the last row) are counted from the
        // start here; the device reads rows by their index from the start.
        let rows = dt.shape[axis] as f32;
        let given = self.c.graph.initializers.iter().find(|i| i.name == ids);
        if let Some(graph::InitSpec::Data(d)) = given.map(|i| &i.init) {
            if d.iter().any(|&v| v < 0.0) {
                let d: Vec<f32> = d
                    .iter()
                    .map(|&v| if v < 0.0 { v + rows } else { v })
                    .collect();
                ids = self.constant("ids_from_start", it.clone(), graph::InitSpec::Data(d));
            }
        }
        if r == 2 && axis == 0 && it.shape.iter().filter(|&&d| d != 1).count() <= 1 {
            let it = pointwise_iteration(&self.ty(&y)?.shape);
            self.push(None, Movement::Gather, vec![data, ids], y, it);
            return Ok(());
        }
        let mut perm = vec![axis];
        perm.extend((0..r).filter(|&i| i != axis));
        let moved = self.transposed("axis_first", data, &perm, None)?;
        let rest: Vec<usize> = perm[1..].iter().map(|&i| dt.shape[i]).collect();
        let width = rest.iter().product::<usize>();
        let table = self.reshaped("table", moved, vec![dt.shape[axis], width], None)?;
        let n = it.shape.iter().product::<usize>();
        let picked = self.gathered_rows("rows", table, ids, n, width, dt.dtype)?;
        let mut grouped = it.shape.clone();
        grouped.extend(&rest);
        if axis == 0 {
            self.reshaped("out", picked, grouped, Some(y))?;
            return Ok(());
        }
        // [ids.., the table's axes before `axis`, those after] to the ONNX order.
        let k = it.shape.len();
        let grouped = self.reshaped("grouped", picked, grouped, None)?;
        let back: Vec<usize> = (k..k + axis)
            .chain(0..k)
            .chain(k + axis..k + r - 1)
            .collect();
        self.transposed("axis_back", grouped, &back, Some(y))?;
        Ok(())
    }

    /// One elementwise op of one operand (`to_dtype` included).
    fn unary(&mut self, kind: DeviceOpKind) -> Result<(), CompileError> {
        let (x, y) = (self.input(0)?, self.output()?);
        // Swish with another alpha than SiLU's 1 has no device op of its own.
        if kind == DeviceOpKind::Unary(Unary::Silu) && self.float_attr("alpha", 1.0)? != 1.0 {
            let ty = self.ty(&y)?;
            self.swish(x, &ty, Some(y))?;
            return Ok(());
        }
        let it = pointwise_iteration(&self.ty(&y)?.shape);
        self.push(None, kind, vec![x], y, it);
        // Gelu's tanh approximation travels as `approximate = [1]`.
        let approximate = match self.node.attrs.get("approximate") {
            None => false,
            Some(AttrValue::String(s)) if s == "none" => false,
            Some(AttrValue::String(s)) if s == "tanh" => true,
            Some(other) => {
                return Err(self.err(format!(
                    "{}: approximate must be \"none\" or \"tanh\", not {other:?}",
                    self.node.op
                )))
            }
        };
        if let (true, Some(last)) = (
            approximate && kind == DeviceOpKind::Unary(Unary::Gelu),
            self.ops.last_mut(),
        ) {
            last.attrs.insert("approximate".into(), vec![1]);
        }
        Ok(())
    }

    /// A binary op; variadic Max and Min become a chain.
    fn binary(&mut self, kind: Binary) -> Result<(), CompileError> {
        let op = self.node.op.clone();
        let dop = kind.name();
        let inputs: Vec<String> = self
            .node
            .inputs
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        let y = self.output()?;
        let yt = self.ty(&y)?;
        if inputs.len() == 1 && matches!(kind, Binary::Maximum | Binary::Minimum) {
            // The extreme of one tensor is itself.
            let x = inputs[0].clone();
            return self.push_movement("copy", Movement::Reshape, x, y, &[]);
        }
        if inputs.len() < 2 {
            return Err(self.err(format!(
                "{op} needs at least 2 inputs, got {}",
                inputs.len()
            )));
        }
        if inputs.len() > 2 && !matches!(kind, Binary::Maximum | Binary::Minimum) {
            return Err(self.err(format!("{op} takes 2 inputs, got {}", inputs.len())));
        }
        if yt.dtype.is_int() {
            return self.integer_binary(kind, inputs, y);
        }
        // Variadic Max/Min chain left to right; the chain's partial results have the
        // output's type (broadcasting widens monotonically).
        let mut acc = inputs[0].clone();
        for (i, rhs) in inputs.iter().enumerate().skip(1) {
            let last = i + 1 == inputs.len();
            let out = if last {
                y.clone()
            } else {
                self.temp(&format!("{dop}_{i}"), yt.clone())
            };
            let step = if inputs.len() > 2 {
                Some(format!("{dop}_{i}"))
            } else {
                None
            };
            self.push(
                step.as_deref(),
                kind,
                vec![acc, rhs.clone()],
                out.clone(),
                pointwise_iteration(&yt.shape),
            );
            acc = out;
        }
        Ok(())
    }

    fn decompose(&mut self) -> Result<(), CompileError> {
        let Some(rule) = decomposition(&self.node.op) else {
            return Err(self.err(format!(
                "no lowering for op {} at node {}; supported: {}",
                self.node.op,
                self.node.name,
                supported_graph_ops().collect::<Vec<_>>().join(", ")
            )));
        };
        match rule {
            Decomposition::Movement(Movement::Gather) => self.gather(),
            Decomposition::Movement(m) => self.movement(m),
            Decomposition::Unary(u) => self.unary(u.into()),
            Decomposition::Cast => self.unary(DeviceOpKind::ToDtype),
            Decomposition::Binary(b) => self.binary(b),
            Decomposition::MatMul => {
                let (a, b, y) = (self.input(0)?, self.input(1)?, self.output()?);
                self.matmul_numpy(a, b, y)
            }
            Decomposition::Gemm => self.gemm(),
            Decomposition::Attention => {
                // Masks, caches, 3-D inputs, softcap and the QK output take the general
                // decomposition; the plain form keeps its own (and the online-softmax loop).
                let extra_attr = [
                    "q_num_heads",
                    "kv_num_heads",
                    "softcap",
                    "qk_matmul_output_mode",
                    "left_window_size",
                    "right_window_size",
                ]
                .iter()
                .any(|a| self.node.attrs.contains_key(*a));
                if self.node.inputs.len() > 3 || self.node.outputs.len() > 1 || extra_attr {
                    return self.attention_general();
                }
                // GQA heads repeated by movement ops, K transposed, Q K^T scaled and masked,
                // softmax, then the weighted sum of V: all device ops the machine has.
                let (q, k, v, y) = (
                    self.input(0)?,
                    self.input(1)?,
                    self.input(2)?,
                    self.output()?,
                );
                let (qt, kt, vt) = (self.ty(&q)?, self.ty(&k)?, self.ty(&v)?);
                if qt.shape.len() != 4 || kt.shape.len() != 4 || vt.shape.len() != 4 {
                    return Err(
                        self.err("Attention is lowered for 4-D [batch, heads, seq, dim] inputs")
                    );
                }
                let (b, hq, sq, d) = (qt.shape[0], qt.shape[1], qt.shape[2], qt.shape[3]);
                let (hkv, skv, dv) = (kt.shape[1], kt.shape[2], vt.shape[3]);
                if hkv == 0 || hq % hkv != 0 {
                    return Err(self.err(format!(
                        "{hq} query heads do not share {hkv} key/value heads evenly"
                    )));
                }
                let group = hq / hkv;
                let dt = qt.dtype;
                let t = |shape: Vec<usize>| TensorType { dtype: dt, shape };
                let repeat = |this: &mut Self,
                              x: String,
                              name: &str,
                              last: usize|
                 -> Result<String, CompileError> {
                    if group == 1 {
                        return Ok(x);
                    }
                    let u = this.temp(&format!("{name}_heads"), t(vec![b, hkv, 1, skv, last]));
                    this.push_movement(
                        &format!("{name}_heads"),
                        Movement::Reshape,
                        x,
                        u.clone(),
                        &[],
                    )?;
                    let e = this.temp(&format!("{name}_repeat"), t(vec![b, hkv, group, skv, last]));
                    this.push_movement(
                        &format!("{name}_repeat"),
                        Movement::Expand,
                        u,
                        e.clone(),
                        &[],
                    )?;
                    let r = this.temp(&format!("{name}_grouped"), t(vec![b, hq, skv, last]));
                    this.push_movement(
                        &format!("{name}_grouped"),
                        Movement::Reshape,
                        e,
                        r.clone(),
                        &[],
                    )?;
                    Ok(r)
                };
                let k_all = repeat(self, k, "k", d)?;
                let v_all = repeat(self, v, "v", dv)?;
                let k_t = self.temp("k_t", t(vec![b, hq, d, skv]));
                self.push_movement(
                    "k_t",
                    Movement::Transpose,
                    k_all,
                    k_t.clone(),
                    &[("perm", vec![0, 1, 3, 2])],
                )?;
                let scale = match self.node.attrs.get("scale") {
                    Some(AttrValue::Float(f)) => *f,
                    _ => 1.0 / (d as f32).sqrt(),
                };
                let scale_name = self.temp("scale_value", t(vec![1]));
                self.c.graph.initializers.push(graph::Initializer {
                    name: scale_name.clone(),
                    ty: t(vec![1]),
                    init: graph::InitSpec::Constant(scale),
                });
                if let Some(block) = self.key_block {
                    let causal = self.int_attr("is_causal", 0)? != 0;
                    return self.online_attention(q, k_t, v_all, y, scale_name, causal, block);
                }
                let scores = self.temp("scores", t(vec![b, hq, sq, skv]));
                self.matmul(q, k_t, scores.clone(), Some("scores"))?;
                let full = pointwise_iteration(&[b, hq, sq, skv]);
                let scaled = self.temp("scaled", t(vec![b, hq, sq, skv]));
                self.push(
                    Some("scaled"),
                    Binary::Mul,
                    vec![scores, scale_name],
                    scaled.clone(),
                    full.clone(),
                );
                let mut logits = scaled;
                if self.int_attr("is_causal", 0)? != 0 {
                    // Described, not stored: at a long sequence the [sq, skv] mask of
                    // every layer would take gigabytes.
                    let mask = graph::InitSpec::CausalMask {
                        col0: 0,
                        period: sq,
                        past: 0,
                    };
                    let mask_name = self.temp("causal_mask", t(vec![sq, skv]));
                    self.c.graph.initializers.push(graph::Initializer {
                        name: mask_name.clone(),
                        ty: t(vec![sq, skv]),
                        init: mask,
                    });
                    let masked = self.temp("masked", t(vec![b, hq, sq, skv]));
                    self.push(
                        Some("masked"),
                        Binary::Add,
                        vec![logits, mask_name],
                        masked.clone(),
                        full.clone(),
                    );
                    logits = masked;
                }
                let red = row_statistic(&t(vec![b, hq, sq, skv]));
                let rit = reduction_iteration(&[b, hq, sq, skv]);
                let m = self.temp("max", red.clone());
                self.push(
                    Some("max"),
                    Reduction::Max,
                    vec![logits.clone()],
                    m.clone(),
                    rit.clone(),
                );
                let sub = self.temp("sub", t(vec![b, hq, sq, skv]));
                self.push(
                    Some("sub"),
                    Binary::Sub,
                    vec![logits, m],
                    sub.clone(),
                    full.clone(),
                );
                let e = self.temp("exp", t(vec![b, hq, sq, skv]));
                self.push(Some("exp"), Unary::Exp, vec![sub], e.clone(), full.clone());
                let z = self.temp("sum", red);
                self.push(Some("sum"), Reduction::Sum, vec![e.clone()], z.clone(), rit);
                let p = self.temp("probs", t(vec![b, hq, sq, skv]));
                self.push(Some("probs"), Binary::RealDiv, vec![e, z], p.clone(), full);
                self.matmul(p, v_all, y, Some("context"))?;
                Ok(())
            }
            Decomposition::Softmax => self.softmax(false),
            Decomposition::Composite(op) => self.composite(op),
            Decomposition::Einsum => self.einsum(),
            Decomposition::GatherElements => self.gather_elements(),
            Decomposition::ScatterND => self.scatter_nd(),
            Decomposition::PagedAttention => self.paged_attention(),
            Decomposition::Reduce(r) => self.reduce(r),
            Decomposition::Split => self.split(),
            Decomposition::Compare(kind) => {
                let (a, b, y) = (self.input(0)?, self.input(1)?, self.output()?);
                let it = pointwise_iteration(&self.ty(&y)?.shape);
                self.push(None, kind, vec![a, b], y, it);
                Ok(())
            }
            Decomposition::Where => {
                let (cond, a, b, y) = (
                    self.input(0)?,
                    self.input(1)?,
                    self.input(2)?,
                    self.output()?,
                );
                let it = pointwise_iteration(&self.ty(&y)?.shape);
                self.push(None, DeviceOpKind::Where, vec![cond, a, b], y, it);
                Ok(())
            }
            Decomposition::Trilu => self.trilu(),
            Decomposition::CumSum => self.cumsum(),
            Decomposition::Conv => self.conv(),
            Decomposition::TopK => self.topk(),
            Decomposition::Pool(kind) => self.pool(kind),
            Decomposition::GlobalPool(kind) => self.global_pool(kind),
            Decomposition::Normalization => self.normalization(),
            Decomposition::DepthSpace => self.depth_space(),
            Decomposition::Lrn => self.lrn(),
            Decomposition::RotaryEmbedding => self.rotary_embedding(),
            Decomposition::LayerNormalization | Decomposition::RmsNormalization
                if self.normalization_general()? =>
            {
                Ok(())
            }
            Decomposition::LayerNormalization => {
                // mean, subtract, mean of squares, add eps, rsqrt, normalise, scale, shift.
                // (The device's fused layernormscale/layernormnorm ops are not used: the
                // generic ops show each step in the snapshots.)
                let (x, w, y) = (self.input(0)?, self.input(1)?, self.output()?);
                let bias = self.node.inputs.get(2).filter(|b| !b.is_empty()).cloned();
                let xt = self.ty(&x)?;
                self.require_last_axis(self.int_attr("axis", -1)?, xt.shape.len())?;
                let eps = self.float_attr("epsilon", 1e-5)?;
                let red_t = row_statistic(&xt);
                let full = pointwise_iteration(&xt.shape);
                let reduce = reduction_iteration(&xt.shape);
                let mean = self.temp("mean", red_t.clone());
                self.push(
                    Some("mean"),
                    Reduction::Mean,
                    vec![x.clone()],
                    mean.clone(),
                    reduce.clone(),
                );
                let xc = self.temp("center", xt.clone());
                self.push(
                    Some("center"),
                    Binary::Sub,
                    vec![x, mean],
                    xc.clone(),
                    full.clone(),
                );
                let sq = self.temp("square", xt.clone());
                self.push(
                    Some("square"),
                    Binary::Mul,
                    vec![xc.clone(), xc.clone()],
                    sq.clone(),
                    full.clone(),
                );
                let var = self.temp("variance", red_t.clone());
                self.push(
                    Some("variance"),
                    Reduction::Mean,
                    vec![sq],
                    var.clone(),
                    reduce,
                );
                let r = self.inverse_root(var, red_t, eps)?;
                let n = self.temp("normalize", xt.clone());
                self.push(
                    Some("normalize"),
                    Binary::Mul,
                    vec![xc, r],
                    n.clone(),
                    full.clone(),
                );
                match bias {
                    Some(b) => {
                        let s = self.temp("scale", xt.clone());
                        self.push(
                            Some("scale"),
                            Binary::Mul,
                            vec![n, w],
                            s.clone(),
                            full.clone(),
                        );
                        self.push(Some("shift"), Binary::Add, vec![s, b], y, full);
                    }
                    None => self.push(Some("scale"), Binary::Mul, vec![n, w], y, full),
                }
                Ok(())
            }
            Decomposition::RmsNormalization => {
                let (x, w, y) = (self.input(0)?, self.input(1)?, self.output()?);
                let xt = self.ty(&x)?;
                self.require_last_axis(self.int_attr("axis", -1)?, xt.shape.len())?;
                let eps = self.float_attr("epsilon", 1e-5)?;
                let red_t = row_statistic(&xt);
                let full = pointwise_iteration(&xt.shape);
                let sq = self.temp("square", xt.clone());
                self.push(
                    Some("square"),
                    Binary::Mul,
                    vec![x.clone(), x.clone()],
                    sq.clone(),
                    full.clone(),
                );
                let ms = self.temp("mean", red_t.clone());
                self.push(
                    Some("mean"),
                    Reduction::Mean,
                    vec![sq],
                    ms.clone(),
                    reduction_iteration(&xt.shape),
                );
                let r = self.inverse_root(ms, red_t, eps)?;
                let n = self.temp("normalize", xt.clone());
                self.push(
                    Some("normalize"),
                    Binary::Mul,
                    vec![x, r],
                    n.clone(),
                    full.clone(),
                );
                self.push(Some("scale"), Binary::Mul, vec![n, w], y, full);
                Ok(())
            }
        }
    }
}

/// Largest constant table (elements) a decomposition creates: triangular matrices and masks
/// grow with the square of an axis, and a table this size is already 2 MB in fp16.
const TABLE_LIMIT: usize = 1 << 20;

/// Decompositions of the ops that need several device ops or constant tables.
impl Builder<'_> {
    /// SpaceToDepth and DepthToSpace as [`graph::depth_space_plan`] resolves them.
    fn depth_space(&mut self) -> Result<(), CompileError> {
        let (x, y) = (self.input(0)?, self.output()?);
        let xt = self.ty(&x)?;
        let plan = graph::depth_space_plan(&self.node.op, &xt.shape, &self.node.attrs)
            .map_err(|e| self.err(e))?;
        let v = self.reshaped("blocks", x, plan.split, None)?;
        let t = self.transposed("moved", v, &plan.perm, None)?;
        self.reshaped("result", t, plan.out, Some(y))?;
        Ok(())
    }

    /// Every output of the node; all must be named.
    fn outputs(&self) -> Result<Vec<String>, CompileError> {
        if self.node.outputs.iter().any(|o| o.is_empty()) {
            return Err(self.err(format!(
                "{} has an unnamed output; every output must be named",
                self.node.op
            )));
        }
        Ok(self.node.outputs.clone())
    }

    fn ints_attr(&self, name: &str) -> Result<Option<Vec<i64>>, CompileError> {
        match self.node.attrs.get(name) {
            None => Ok(None),
            Some(AttrValue::Ints(v)) => Ok(Some(v.clone())),
            Some(AttrValue::Int(v)) => Ok(Some(vec![*v])),
            Some(v) => Err(self.err(format!(
                "attribute '{name}' must be a list of integers, got {}",
                v.kind_name()
            ))),
        }
    }

    /// Axis `a` of a rank-`rank` tensor, counted from the front.
    fn axis(&self, a: i64, rank: usize) -> Result<usize, CompileError> {
        let n = if a < 0 { a + rank as i64 } else { a };
        if n < 0 || n >= rank as i64 {
            return Err(self.err(format!("axis {a} is out of range for a rank-{rank} tensor")));
        }
        Ok(n as usize)
    }

    /// Checks that a constant table of `rows` x `cols` elements is small enough to make.
    fn table(&self, what: &str, rows: usize, cols: usize) -> Result<usize, CompileError> {
        match rows.checked_mul(cols) {
            Some(n) if n <= TABLE_LIMIT => Ok(n),
            _ => Err(self.err(format!(
                "{} needs a {rows} x {cols} constant {what}, more than the {TABLE_LIMIT} elements this compiler makes",
                self.node.op
            ))),
        }
    }

    /// A new constant initializer of this node.
    fn constant(&mut self, step: &str, ty: TensorType, init: graph::InitSpec) -> String {
        let name = self.temp(step, ty.clone());
        self.c.graph.initializers.push(graph::Initializer {
            name: name.clone(),
            ty,
            init,
        });
        name
    }

    /// One device op of a decomposition with several outputs or inputs and its attributes
    /// (named by the node when `step` is `None`).
    fn push_op(
        &mut self,
        step: Option<&str>,
        kind: impl Into<DeviceOpKind>,
        inputs: Vec<String>,
        outputs: Vec<String>,
        iteration: Vec<IterDim>,
        attrs: &[(&str, Vec<i64>)],
    ) {
        let name = match step {
            Some(s) => format!("{}/{s}", self.node.name),
            None => self.node.name.clone(),
        };
        self.ops.push(DeviceOp {
            name,
            kind: kind.into(),
            inputs,
            outputs,
            iteration,
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        });
    }

    /// The result of `op` on `ty`: the graph tensor `out` when given, else a new `node/step`.
    fn target(&mut self, step: &str, ty: TensorType, out: Option<String>) -> String {
        match out {
            Some(o) => o,
            None => self.temp(step, ty),
        }
    }

    /// `x` as a tensor of `shape`: a reshape step, or `x` itself when it already has that
    /// shape and no particular result is asked for.
    fn reshaped(
        &mut self,
        step: &str,
        x: String,
        shape: Vec<usize>,
        out: Option<String>,
    ) -> Result<String, CompileError> {
        let xt = self.ty(&x)?;
        if xt.shape == shape && out.is_none() {
            return Ok(x);
        }
        let y = self.target(
            step,
            TensorType {
                dtype: xt.dtype,
                shape,
            },
            out,
        );
        self.push_movement(step, Movement::Reshape, x, y.clone(), &[])?;
        Ok(y)
    }

    /// `x` with its dims permuted (output dim `i` is input dim `perm[i]`).
    fn transposed(
        &mut self,
        step: &str,
        x: String,
        perm: &[usize],
        out: Option<String>,
    ) -> Result<String, CompileError> {
        let xt = self.ty(&x)?;
        if out.is_none() && perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(x);
        }
        let shape = perm.iter().map(|&p| xt.shape[p]).collect();
        let y = self.target(
            step,
            TensorType {
                dtype: xt.dtype,
                shape,
            },
            out,
        );
        let perm: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
        self.push_movement(step, Movement::Transpose, x, y.clone(), &[("perm", perm)])?;
        Ok(y)
    }

    /// `len` elements of axis `axis` of `x`, every `stride`-th from `start` (`x` itself when
    /// that is all of it and no particular result is asked for).
    #[allow(clippy::too_many_arguments)]
    fn sliced(
        &mut self,
        step: &str,
        x: String,
        axis: usize,
        start: usize,
        len: usize,
        stride: usize,
        out: Option<String>,
    ) -> Result<String, CompileError> {
        let xt = self.ty(&x)?;
        if out.is_none() && start == 0 && stride == 1 && xt.shape.get(axis) == Some(&len) {
            return Ok(x);
        }
        let mut shape = xt.shape.clone();
        if let Some(d) = shape.get_mut(axis) {
            *d = len;
        }
        let y = self.target(
            step,
            TensorType {
                dtype: xt.dtype,
                shape,
            },
            out,
        );
        let end = start + len.saturating_sub(1) * stride + 1;
        self.push_movement(
            step,
            Movement::Slice,
            x,
            y.clone(),
            &[
                ("starts", vec![start as i64]),
                ("ends", vec![end as i64]),
                ("axes", vec![axis as i64]),
                ("steps", vec![stride as i64]),
            ],
        )?;
        Ok(y)
    }

    /// Rows of the 2-D `table` (`width` elements each) picked by the `n` integer `ids` (any
    /// shape, reshaped to a vector): the device's gather, `[n, width]`.
    fn gathered_rows(
        &mut self,
        step: &str,
        table: String,
        ids: String,
        n: usize,
        width: usize,
        dtype: DType,
    ) -> Result<String, CompileError> {
        let ids = self.reshaped(&format!("{step}_ids"), ids, vec![n], None)?;
        let rows = self.temp(
            step,
            TensorType {
                dtype,
                shape: vec![n, width],
            },
        );
        self.push_op(
            Some(step),
            Movement::Gather,
            vec![table, ids],
            vec![rows.clone()],
            pointwise_iteration(&[n, width]),
            &[("axis", vec![0])],
        );
        Ok(rows)
    }

    /// `parts` joined along `axis` into a tensor of `shape`: into `out` when given.
    fn joined(
        &mut self,
        step: &str,
        parts: Vec<String>,
        axis: usize,
        shape: Vec<usize>,
        dtype: DType,
        out: Option<String>,
    ) -> String {
        let y = self.target(
            step,
            TensorType {
                dtype,
                shape: shape.clone(),
            },
            out,
        );
        self.push_op(
            Some(step),
            Movement::Concat,
            parts,
            vec![y.clone()],
            pointwise_iteration(&shape),
            &[("axis", vec![axis as i64])],
        );
        y
    }

    /// Makes the op that produced the temporary `from` write `to` instead (the last step of
    /// a chain whose length is known only once it is built).
    fn retarget(&mut self, from: &str, to: &str) -> Result<(), CompileError> {
        let op = self
            .ops
            .iter_mut()
            .rev()
            .find(|o| o.outputs.iter().any(|t| t == from))
            .ok_or_else(|| {
                CompileError::at(&self.node.name, format!("no step produces '{from}'"))
            })?;
        for t in op.outputs.iter_mut().filter(|t| *t == from) {
            *t = to.to_string();
        }
        self.c.types.remove(from);
        Ok(())
    }

    /// Split: one slice per output along the axis.
    fn split(&mut self) -> Result<(), CompileError> {
        let x = self.input(0)?;
        let xt = self.ty(&x)?;
        let axis = self.axis(self.int_attr("axis", 0)?, xt.shape.len())?;
        let mut offset = 0;
        for (i, y) in self.outputs()?.into_iter().enumerate() {
            let len = self.ty(&y)?.shape.get(axis).copied().unwrap_or(0);
            if len == 0 {
                return Err(self.err(format!(
                    "Split output '{y}' is empty along axis {axis}; empty tensors are not supported"
                )));
            }
            self.sliced(
                &format!("slice_{i}"),
                x.clone(),
                axis,
                offset,
                len,
                1,
                Some(y),
            )?;
            offset += len;
        }
        Ok(())
    }

    /// Trilu on data (a constant Trilu folds away in canonicalize): a `where` keeping the
    /// triangle through a constant bool mask, zero elsewhere (a select, so an infinity
    /// outside the triangle still gives zero).
    fn trilu(&mut self) -> Result<(), CompileError> {
        let (x, y) = (self.input(0)?, self.output()?);
        let xt = self.ty(&x)?;
        let r = xt.shape.len();
        if r < 2 {
            return Err(self.err(format!("Trilu needs a rank >= 2 tensor, got rank {r}")));
        }
        let (rows, cols) = (xt.shape[r - 2], xt.shape[r - 1]);
        let n = self.table("mask", rows, cols)?;
        let upper = self.int_attr("upper", 1)? != 0;
        let k = self.int_attr("k", 0)?;
        let mask: Vec<f32> = (0..n)
            .map(|f| {
                let (i, j) = ((f / cols) as i64, (f % cols) as i64);
                let keep = if upper { j - i >= k } else { j - i <= k };
                f32::from(u8::from(keep))
            })
            .collect();
        let m = self.constant(
            "mask",
            TensorType {
                dtype: DType::Bool,
                shape: vec![rows, cols],
            },
            graph::InitSpec::Data(mask),
        );
        let zero = self.constant(
            "zero",
            TensorType {
                dtype: xt.dtype,
                shape: vec![],
            },
            graph::InitSpec::Zeros,
        );
        let it = pointwise_iteration(&xt.shape);
        self.push(Some("select"), DeviceOpKind::Where, vec![m, x, zero], y, it);
        Ok(())
    }

    /// CumSum as a matmul with a triangular matrix of ones (a scan is a product with a
    /// triangle, which the PE array does at full rate): `x T` along the last axis,
    /// `L x` along an inner one with the dims before it as a batch and those after it as
    /// columns.
    fn cumsum(&mut self) -> Result<(), CompileError> {
        let (x, y) = (self.input(0)?, self.output()?);
        let xt = self.ty(&x)?;
        let r = xt.shape.len();
        let axis = self.axis(self.int_attr("axis", 0)?, r)?;
        let n = xt.shape[axis];
        let size = self.table("triangular matrix", n, n)?;
        let exclusive = self.int_attr("exclusive", 0)? != 0;
        let reverse = self.int_attr("reverse", 0)? != 0;
        // Whether x[j] counts towards y[i].
        let counts = |j: usize, i: usize| match (reverse, exclusive) {
            (false, false) => j <= i,
            (false, true) => j < i,
            (true, false) => j >= i,
            (true, true) => j > i,
        };
        let dt = xt.dtype;
        let t = |shape: Vec<usize>| TensorType { dtype: dt, shape };
        // The result as the matmul computes it; reshaped into y when that differs.
        let (lhs_first, shape) = if axis == r - 1 {
            let rows: usize = xt.shape[..axis].iter().product();
            (false, vec![rows, n])
        } else {
            let outer: usize = xt.shape[..axis].iter().product();
            let inner: usize = xt.shape[axis + 1..].iter().product();
            let shape = if outer == 1 {
                vec![n, inner]
            } else {
                vec![outer, n, inner]
            };
            (true, shape)
        };
        // Keep x's own shape when it already suits the matmul (no reshape round trip).
        let shape = if r >= 2 && (axis == r - 1 || (axis == r - 2 && lhs_first)) {
            xt.shape.clone()
        } else {
            shape
        };
        // T[j][i] (x T) or L[i][j] (L x), row-major.
        let table: Vec<f32> = (0..size)
            .map(|f| {
                let (a, b) = (f / n, f % n);
                let c = if lhs_first {
                    counts(b, a)
                } else {
                    counts(a, b)
                };
                f32::from(u8::from(c))
            })
            .collect();
        let tri = self.constant("triangle", t(vec![n, n]), graph::InitSpec::Data(table));
        let operand = self.reshaped("columns", x, shape.clone(), None)?;
        let direct = shape == xt.shape;
        let out = if direct {
            y.clone()
        } else {
            self.temp("scan", t(shape))
        };
        if lhs_first {
            self.matmul(tri, operand, out.clone(), Some("scan"))?;
        } else {
            self.matmul(operand, tri, out.clone(), Some("scan"))?;
        }
        if !direct {
            self.reshaped("result", out, xt.shape.clone(), Some(y))?;
        }
        Ok(())
    }

    /// ReduceSum / ReduceMean / ReduceMax over any axes: the reduced axes moved last and
    /// merged into one, reduced there, and the result shaped as the node asks.
    fn reduce(&mut self, kind: Reduction) -> Result<(), CompileError> {
        let (x, y) = (self.input(0)?, self.output()?);
        self.reduce_into(kind, x, y, None)
    }

    /// A reduction of `x` into `y` over the node's axes; `keep` overrides its `keepdims`.
    fn reduce_into(
        &mut self,
        kind: Reduction,
        x: String,
        y: String,
        keep: Option<bool>,
    ) -> Result<(), CompileError> {
        let op = self.node.op.clone();
        let r = self.ty(&x)?.shape.len();
        if r == 0 {
            return Err(self.err(format!(
                "{op} of a rank-0 tensor is not supported (there is nothing to reduce)"
            )));
        }
        let axes = match self.ints_attr("axes")? {
            Some(v) if !v.is_empty() => v
                .iter()
                .map(|&a| self.axis(a, r))
                .collect::<Result<Vec<_>, _>>()?,
            _ => (0..r).collect(),
        };
        let keep = match keep {
            Some(k) => k,
            None => self.int_attr("keepdims", 1)? != 0,
        };
        self.reduce_axes_into(kind, x, y, axes, keep)
    }

    /// A reduction of `x` into `y` over `axes` (of x), keeping them with size 1 or not.
    fn reduce_axes_into(
        &mut self,
        kind: Reduction,
        x: String,
        y: String,
        mut axes: Vec<usize>,
        keep: bool,
    ) -> Result<(), CompileError> {
        let (xt, yt) = (self.ty(&x)?, self.ty(&y)?);
        let r = xt.shape.len();
        let dop = kind.name();
        axes.sort_unstable();
        axes.dedup();
        if axes == [r - 1] && keep {
            self.push(None, kind, vec![x], y, reduction_iteration(&xt.shape));
            return Ok(());
        }
        let kept: Vec<usize> = (0..r).filter(|a| !axes.contains(a)).collect();
        let perm: Vec<usize> = kept.iter().chain(&axes).copied().collect();
        let moved = self.transposed("reduced_last", x, &perm, None)?;
        let mut rows: Vec<usize> = kept.iter().map(|&a| xt.shape[a]).collect();
        rows.push(axes.iter().map(|&a| xt.shape[a]).product());
        let merged = self.reshaped("merged", moved, rows.clone(), None)?;
        let mut reduced_shape = rows.clone();
        if let Some(l) = reduced_shape.last_mut() {
            *l = 1;
        }
        let direct = reduced_shape == yt.shape;
        let reduced = if direct {
            y.clone()
        } else {
            self.temp(
                dop,
                TensorType {
                    dtype: xt.dtype,
                    shape: reduced_shape,
                },
            )
        };
        self.push(
            Some(dop),
            kind,
            vec![merged],
            reduced.clone(),
            reduction_iteration(&rows),
        );
        if !direct {
            self.reshaped("result", reduced, yt.shape.clone(), Some(y))?;
        }
        Ok(())
    }

    /// TopK: the `topk` row op along the last axis; another axis is first moved last, and
    /// both results moved back. Results come sorted (as `sorted = 1` asks; `sorted = 0`
    /// leaves the order free).
    fn topk(&mut self) -> Result<(), CompileError> {
        let x = self.input(0)?;
        let outs = self.outputs()?;
        let [values, indices] = outs.as_slice() else {
            return Err(self.err("TopK has two outputs, values and indices"));
        };
        let xt = self.ty(&x)?;
        let r = xt.shape.len();
        let axis = self.axis(self.int_attr("axis", -1)?, r)?;
        let k = self.int_attr("k", 0)?;
        if k < 1 {
            return Err(self.err(format!(
                "TopK with k = {k} gives empty results, which are not supported"
            )));
        }
        let largest = i64::from(self.int_attr("largest", 1)? != 0);
        let attrs = [("k", vec![k]), ("largest", vec![largest])];
        let it = reduction_iteration(&xt.shape);
        if axis == r - 1 {
            self.push_op(
                None,
                DeviceOpKind::TopK,
                vec![x],
                vec![values.clone(), indices.clone()],
                it,
                &attrs,
            );
            return Ok(());
        }
        let perm: Vec<usize> = (0..r).filter(|&a| a != axis).chain([axis]).collect();
        let inverse: Vec<usize> = (0..r)
            .map(|a| perm.iter().position(|&p| p == a).unwrap_or(a))
            .collect();
        let moved = self.transposed("axis_last", x, &perm, None)?;
        let mut shape: Vec<usize> = perm.iter().map(|&p| xt.shape[p]).collect();
        shape[r - 1] = k as usize;
        let (vt, idt) = (self.ty(values)?.dtype, self.ty(indices)?.dtype);
        let v = self.temp(
            "values",
            TensorType {
                dtype: vt,
                shape: shape.clone(),
            },
        );
        let i = self.temp("indices", TensorType { dtype: idt, shape });
        let rows = self.ty(&moved)?.shape;
        self.push_op(
            Some("topk"),
            DeviceOpKind::TopK,
            vec![moved],
            vec![v.clone(), i.clone()],
            reduction_iteration(&rows),
            &attrs,
        );
        self.transposed("values_back", v, &inverse, Some(values.clone()))?;
        self.transposed("indices_back", i, &inverse, Some(indices.clone()))?;
        Ok(())
    }

    /// A left-to-right chain of `kind` over `parts` (a running sum, a running maximum)
    /// into a new temporary; the part itself when there is one.
    pub(super) fn chain(
        &mut self,
        step: &str,
        kind: Binary,
        parts: Vec<String>,
    ) -> Result<String, CompileError> {
        let mut it = parts.into_iter();
        let mut acc = it
            .next()
            .ok_or_else(|| self.err("nothing to combine (a kernel of size 0)"))?;
        for (j, p) in it.enumerate() {
            let ty = self.ty(&acc)?;
            let name = format!("{step}_{}", j + 1);
            let s = self.temp(&name, ty.clone());
            self.push(
                Some(&name),
                kind,
                vec![acc, p],
                s.clone(),
                pointwise_iteration(&ty.shape),
            );
            acc = s;
        }
        Ok(acc)
    }

    /// 1-D Conv. The input is zero-padded by a concat with constant zero blocks; each tap
    /// then reads a strided window of it. Depthwise (one channel per group, one filter per
    /// channel): each window times the tap's weight column, summed. Otherwise, per group,
    /// each window is a batchmatmul by the tap's [M/group, C/group] weights, summed, and the
    /// groups concatenated. The bias is added last.
    fn conv(&mut self) -> Result<(), CompileError> {
        let (x, w, y) = (self.input(0)?, self.input(1)?, self.output()?);
        let bias = self.node.inputs.get(2).filter(|b| !b.is_empty()).cloned();
        let (xt, wt, yt) = (self.ty(&x)?, self.ty(&w)?, self.ty(&y)?);
        let (&[n, c, l], &[m, cg, k], &[_, _, l_out]) = (
            xt.shape.as_slice(),
            wt.shape.as_slice(),
            yt.shape.as_slice(),
        ) else {
            return Err(self.err(format!(
                "Conv is lowered for 1-D convolutions (X [N, C, L], W [M, C/group, K]); got X {:?} and W {:?}",
                xt.shape, wt.shape
            )));
        };
        let group = usize::try_from(self.int_attr("group", 1)?)
            .ok()
            .filter(|&g| g >= 1 && c % g == 0 && m % g == 0)
            .ok_or_else(|| self.err("'group' must divide the input and output channels"))?;
        let single = |name: &str| -> Result<usize, CompileError> {
            match self.ints_attr(name)?.as_deref() {
                None => Ok(1),
                Some(&[v]) if v >= 1 => Ok(v as usize),
                Some(v) => Err(self.err(format!(
                    "'{name}' must be one positive integer for a 1-D Conv, got {v:?}"
                ))),
            }
        };
        let (stride, dilation) = (single("strides")?, single("dilations")?);
        let (pb, pe) = match self.ints_attr("pads")?.as_deref() {
            None => (0, 0),
            Some(&[b, e]) if b >= 0 && e >= 0 => (b as usize, e as usize),
            Some(p) => {
                return Err(self.err(format!(
                    "'pads' must be [begin, end] for a 1-D Conv, got {p:?}"
                )))
            }
        };
        let dt = xt.dtype;
        let t = |shape: Vec<usize>| TensorType { dtype: dt, shape };
        let mut parts = Vec::new();
        if pb > 0 {
            parts.push(self.constant("pad_begin", t(vec![n, c, pb]), graph::InitSpec::Zeros));
        }
        parts.push(x.clone());
        if pe > 0 {
            parts.push(self.constant("pad_end", t(vec![n, c, pe]), graph::InitSpec::Zeros));
        }
        let padded = if parts.len() == 1 {
            x
        } else {
            let shape = vec![n, c, l + pb + pe];
            let p = self.temp("padded", t(shape.clone()));
            self.push_op(
                Some("padded"),
                Movement::Concat,
                parts,
                vec![p.clone()],
                pointwise_iteration(&shape),
                &[("axis", vec![2])],
            );
            p
        };
        let out_shape = vec![n, m, l_out];
        let sum = if cg == 1 && m == c {
            let columns = self.reshaped("taps", w, vec![m, k], None)?;
            let mut taps = Vec::new();
            for j in 0..k {
                let window = self.sliced(
                    &format!("window_{j}"),
                    padded.clone(),
                    2,
                    j * dilation,
                    l_out,
                    stride,
                    None,
                )?;
                let weight =
                    self.sliced(&format!("weight_{j}"), columns.clone(), 1, j, 1, 1, None)?;
                let name = format!("tap_{j}");
                let p = self.temp(&name, t(out_shape.clone()));
                self.push(
                    Some(&name),
                    Binary::Mul,
                    vec![window, weight],
                    p.clone(),
                    pointwise_iteration(&out_shape),
                );
                taps.push(p);
            }
            self.chain("sum", Binary::Add, taps)?
        } else {
            let mg = m / group;
            let mut groups = Vec::new();
            for g in 0..group {
                let xg = self.sliced(
                    &format!("group_{g}"),
                    padded.clone(),
                    1,
                    g * cg,
                    cg,
                    1,
                    None,
                )?;
                let wg = self.sliced(&format!("weights_{g}"), w.clone(), 0, g * mg, mg, 1, None)?;
                let mut taps = Vec::new();
                for j in 0..k {
                    let window = self.sliced(
                        &format!("window_{g}_{j}"),
                        xg.clone(),
                        2,
                        j * dilation,
                        l_out,
                        stride,
                        None,
                    )?;
                    let wj =
                        self.sliced(&format!("weight_{g}_{j}"), wg.clone(), 2, j, 1, 1, None)?;
                    let wj = self.reshaped(&format!("kernel_{g}_{j}"), wj, vec![mg, cg], None)?;
                    let name = format!("tap_{g}_{j}");
                    let p = self.temp(&name, t(vec![n, mg, l_out]));
                    self.matmul(wj, window, p.clone(), Some(&name))?;
                    taps.push(p);
                }
                groups.push(self.chain(&format!("sum_{g}"), Binary::Add, taps)?);
            }
            if groups.len() == 1 {
                groups.remove(0)
            } else {
                let p = self.temp("groups", t(out_shape.clone()));
                self.push_op(
                    Some("groups"),
                    Movement::Concat,
                    groups,
                    vec![p.clone()],
                    pointwise_iteration(&out_shape),
                    &[("axis", vec![1])],
                );
                p
            }
        };
        match bias {
            Some(b) => {
                let column = self.reshaped("bias_column", b, vec![m, 1], None)?;
                self.push(
                    Some("bias"),
                    Binary::Add,
                    vec![sum, column],
                    y,
                    pointwise_iteration(&out_shape),
                );
                Ok(())
            }
            None => self.retarget(&sum, &y),
        }
    }
}

/// The type of a per-row statistic of `t` (its last axis kept with size 1), as softmax and
/// the normalisations compute.
fn row_statistic(t: &TensorType) -> TensorType {
    let mut shape = t.shape.clone();
    if let Some(l) = shape.last_mut() {
        *l = 1;
    }
    TensorType {
        dtype: t.dtype,
        shape,
    }
}

/// The `decompose` pass: fills `c.ops`.
pub fn decompose(c: &mut Compilation, options: &Options) -> Result<(), CompileError> {
    let nodes = c.graph.nodes.clone();
    let mut all = Vec::new();
    for node in &nodes {
        let several = node.outputs.iter().filter(|o| !o.is_empty()).count() > 1;
        if several
            && !matches!(
                node.op.as_str(),
                "Split" | "TopK" | "LayerNormalization" | "Attention" | "PagedAttention"
            )
        {
            return Err(CompileError::at(
                &node.name,
                format!("{} with more than one output is not supported", node.op),
            ));
        }
        let mut b = Builder {
            c,
            node,
            ops: Vec::new(),
            key_block: options.attention_key_block,
            padding: options.padding,
        };
        b.decompose()?;
        all.extend(b.ops);
    }
    for op in &all {
        check_dtypes(c, op)?;
    }
    c.ops = all;
    Ok(())
}

/// Checks a device op's element types against what the device computes on (see the
/// module doc), so integer or bool data reaching a float op fails here, by name.
fn check_dtypes(c: &Compilation, op: &DeviceOp) -> Result<(), CompileError> {
    let dtype = |t: &String| -> Result<DType, CompileError> { Ok(c.ty(t, &op.name)?.dtype) };
    let refuse = |t: &str, dt: DType, why: &str| {
        Err(CompileError::at(
            &op.name,
            format!(
                "{} on {} tensor '{t}' is not supported; {why}",
                op.kind,
                dt.name()
            ),
        ))
    };
    match op.kind {
        // Moved or converted as data; a comparison's result is bool by type inference.
        DeviceOpKind::Movement(_) | DeviceOpKind::ToDtype | DeviceOpKind::Compare(_) => {
            return Ok(())
        }
        DeviceOpKind::BatchMatmul
        | DeviceOpKind::Unary(_)
        | DeviceOpKind::Binary(_)
        | DeviceOpKind::Where
        | DeviceOpKind::Reduce(_)
        | DeviceOpKind::TopK => {}
    }
    for (i, t) in op.inputs.iter().chain(&op.outputs).enumerate() {
        let dt = dtype(t)?;
        let (ok, why) = match (op.kind, i) {
            (DeviceOpKind::Where, 0) => (dt == DType::Bool, "the condition must be bool"),
            // The values chosen between may be of any type.
            (DeviceOpKind::Where, _) => (true, ""),
            (DeviceOpKind::TopK, 2) => (dt.is_int(), "TopK indices are integers"),
            _ => (dt.is_float(), "device ops compute on float types"),
        };
        if !ok {
            return refuse(t, dt, why);
        }
    }
    Ok(())
}

/// Element size, guarding against a zero-size dtype.
pub(crate) fn dsize(dt: DType) -> usize {
    dt.size_bytes().max(1)
}

/// One line per op, for the decompose snapshot.
pub fn describe_op(op: &DeviceOp) -> String {
    let it: Vec<String> = op
        .iteration
        .iter()
        .map(|d| {
            let mut s = format!("{}={}", d.label, d.extent);
            if d.in_sticks {
                s.push_str(" sticks");
            }
            if d.reduction {
                s.push_str(" red");
            }
            s
        })
        .collect();
    format!(
        "{}: {}({}) -> {}  iter [{}]",
        op.name,
        op.kind,
        op.inputs.join(", "),
        op.outputs.join(", "),
        it.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use crate::passes::tests::{graph_of, upto};
    use crate::{compile, Compilation, CompileError, Target};
    use graph::InitSpec;

    fn decompose(inputs: &str, inits: &str, nodes: &str, outputs: &str) -> Compilation {
        try_decompose(inputs, inits, nodes, outputs).unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_decompose(
        inputs: &str,
        inits: &str,
        nodes: &str,
        outputs: &str,
    ) -> Result<Compilation, CompileError> {
        let g = graph_of(inputs, inits, nodes, outputs);
        compile(&g, &Target::spyre32(), &upto("decompose"))
    }

    /// (op name, device op) of every op.
    fn ops(c: &Compilation) -> Vec<(String, String)> {
        c.ops
            .iter()
            .map(|o| (o.name.clone(), o.kind.name().to_string()))
            .collect()
    }

    fn data(c: &Compilation, name: &str) -> Vec<f32> {
        match &c
            .graph
            .initializers
            .iter()
            .find(|i| i.name == name)
            .unwrap()
            .init
        {
            InitSpec::Data(d) => d.clone(),
            other => panic!("{name}: {other:?}"),
        }
    }

    /// The graph ops `decompose` accepted, in order, before its rules were a table.
    const OLD_SUPPORTED_GRAPH_OPS: &[&str] = &[
        "Abs",
        "Add",
        "Attention",
        "Cast",
        "Concat",
        "Conv",
        "CumSum",
        "Equal",
        "Expand",
        "Flatten",
        "Reshape",
        "Slice",
        "Squeeze",
        "Transpose",
        "Unsqueeze",
        "Div",
        "Exp",
        "Floor",
        "Gather",
        "Gelu",
        "Gemm",
        "Greater",
        "LayerNormalization",
        "Less",
        "Log",
        "MatMul",
        "Max",
        "Min",
        "Mul",
        "Neg",
        "RMSNormalization",
        "Reciprocal",
        "ReduceMax",
        "ReduceMean",
        "ReduceSum",
        "Relu",
        "Sigmoid",
        "Silu",
        "SimplifiedLayerNormalization",
        "Softmax",
        "Softplus",
        "Split",
        "Sqrt",
        "Sub",
        "Tanh",
        "TopK",
        "Trilu",
        "Where",
    ];

    /// Graph op to the single device op it became, as the old mapping functions wrote it.
    const OLD_SINGLE_OP: &[(&str, &str)] = &[
        ("Abs", "abs"),
        ("Neg", "neg"),
        ("Exp", "exp"),
        ("Log", "log"),
        ("Sqrt", "sqrt"),
        ("Reciprocal", "reciprocal"),
        ("Tanh", "tanh"),
        ("Sigmoid", "sigmoid"),
        ("Relu", "relu"),
        ("Gelu", "gelu"),
        ("Silu", "silu"),
        ("Softplus", "softplus"),
        ("Floor", "floor"),
        ("Cast", "to_dtype"),
        ("Add", "add"),
        ("Sub", "sub"),
        ("Mul", "mul"),
        ("Div", "realdiv"),
        ("Max", "maximum"),
        ("Min", "minimum"),
        ("Reshape", "reshape"),
        ("Unsqueeze", "reshape"),
        ("Squeeze", "reshape"),
        ("Flatten", "reshape"),
        ("Transpose", "transpose"),
        ("Expand", "expand"),
        ("Slice", "slice"),
        ("Concat", "concat"),
        ("Gather", "gather"),
        ("Equal", "equal"),
        ("Greater", "greater"),
        ("Less", "lesser"),
        ("Where", "where"),
        ("ReduceSum", "sum"),
        ("ReduceMean", "mean"),
        ("ReduceMax", "max"),
    ];

    #[test]
    fn the_decomposition_table_keeps_the_old_op_set_and_mapping() {
        use super::{decomposition, supported_graph_ops, Decomposition as D, DeviceOpKind};
        // Every old op is still accepted; error messages list them sorted by name.
        let names: Vec<&str> = supported_graph_ops().collect();
        let mut old: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| OLD_SUPPORTED_GRAPH_OPS.contains(n))
            .collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");
        old.sort_unstable();
        let mut want = OLD_SUPPORTED_GRAPH_OPS.to_vec();
        want.sort_unstable();
        assert_eq!(old, want);
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "a graph op has two rules");
        let single: Vec<(&str, &str)> = OLD_SUPPORTED_GRAPH_OPS
            .iter()
            .filter_map(|&n| {
                let kind: DeviceOpKind = match decomposition(n)? {
                    D::Movement(m) => m.into(),
                    D::Unary(u) => u.into(),
                    D::Cast => DeviceOpKind::ToDtype,
                    D::Binary(b) => b.into(),
                    D::Compare(c) => c.into(),
                    D::Where => DeviceOpKind::Where,
                    D::Reduce(r) => r.into(),
                    _ => return None,
                };
                Some((n, kind.name()))
            })
            .collect();
        let sorted = |mut v: Vec<(&'static str, &'static str)>| {
            v.sort_unstable();
            v
        };
        assert_eq!(sorted(single), sorted(OLD_SINGLE_OP.to_vec()));
        assert_eq!(decomposition("Frobnicate"), None);
    }

    #[test]
    fn the_op_table_says_which_ops_are_lowered() {
        for &k in graph::OpKind::ALL {
            let spec = k.spec();
            assert_eq!(
                spec.device,
                crate::ops::decomposition(spec.name).is_some(),
                "{}: the op table's device column disagrees with the compiler",
                spec.name
            );
        }
    }

    #[test]
    fn split_is_one_slice_per_output() {
        let c = decompose(
            r#"{"name": "x", "dtype": "f16", "shape": [2, 9, 5]}"#,
            "",
            r#"{"name": "s", "op": "Split", "inputs": ["x"], "outputs": ["a", "b"], "attrs": {"axis": -2, "split": [4, 5]}}"#,
            r#""a", "b""#,
        );
        assert_eq!(c.ops.len(), 2);
        for (op, (out, start, end)) in c.ops.iter().zip([("a", 0, 4), ("b", 4, 9)]) {
            assert_eq!(op.kind.name(), "slice");
            assert_eq!(op.inputs, ["x"]);
            assert_eq!(op.outputs, [out]);
            assert_eq!(op.attrs["starts"], [start]);
            assert_eq!(op.attrs["ends"], [end]);
            assert_eq!(op.attrs["axes"], [1]);
            assert_eq!(op.attrs["steps"], [1]);
        }
        assert_eq!(c.types["b"].shape, vec![2, 5, 5]);
    }

    #[test]
    fn cumsum_is_a_matmul_with_a_triangle() {
        // Last axis: x T, T[j][i] = 1 when x[j] counts towards y[i] (exclusive: j < i).
        let c = decompose(
            r#"{"name": "x", "dtype": "f32", "shape": [4, 3]}"#,
            "",
            r#"{"name": "cs", "op": "CumSum", "inputs": ["x"], "outputs": ["y"], "attrs": {"axis": 1, "exclusive": 1}}"#,
            r#""y""#,
        );
        assert_eq!(ops(&c), [("cs/scan".into(), "batchmatmul".into())]);
        assert_eq!(c.ops[0].inputs, ["x", "cs/triangle"]);
        #[rustfmt::skip]
        assert_eq!(data(&c, "cs/triangle"), [
            0.0, 1.0, 1.0,
            0.0, 0.0, 1.0,
            0.0, 0.0, 0.0,
        ]);
        // An inner axis: L x over [batch, n, columns], reversed (L[i][j] = 1 for j >= i).
        let c = decompose(
            r#"{"name": "x", "dtype": "f32", "shape": [2, 3, 2, 5]}"#,
            "",
            r#"{"name": "cs", "op": "CumSum", "inputs": ["x"], "outputs": ["y"], "attrs": {"axis": 1, "reverse": 1}}"#,
            r#""y""#,
        );
        let kinds: Vec<String> = c.ops.iter().map(|o| o.kind.name().to_string()).collect();
        assert_eq!(kinds, ["reshape", "batchmatmul", "reshape"]);
        assert_eq!(c.types["cs/columns"].shape, vec![2, 3, 10]);
        assert_eq!(c.ops[1].inputs, ["cs/triangle", "cs/columns"]);
        #[rustfmt::skip]
        assert_eq!(data(&c, "cs/triangle"), [
            1.0, 1.0, 1.0,
            0.0, 1.0, 1.0,
            0.0, 0.0, 1.0,
        ]);
        // The axis before the last needs no reshape: L broadcasts over the batch.
        let c = decompose(
            r#"{"name": "x", "dtype": "f32", "shape": [2, 3, 5]}"#,
            "",
            r#"{"name": "cs", "op": "CumSum", "inputs": ["x"], "outputs": ["y"], "attrs": {"axis": 1}}"#,
            r#""y""#,
        );
        assert_eq!(ops(&c), [("cs/scan".into(), "batchmatmul".into())]);
        assert_eq!(c.ops[0].outputs, ["y"]);
    }

    #[test]
    fn depthwise_conv_is_padding_windows_and_weight_columns() {
        let c = decompose(
            r#"{"name": "x", "dtype": "f16", "shape": [1, 6, 10]}"#,
            r#"{"name": "w", "dtype": "f16", "shape": [6, 1, 3], "init": "ones"},
               {"name": "b", "dtype": "f16", "shape": [6], "init": "ones"}"#,
            r#"{"name": "conv", "op": "Conv", "inputs": ["x", "w", "b"], "outputs": ["y"], "attrs": {"group": 6, "pads": [2, 0]}}"#,
            r#""y""#,
        );
        let kinds: Vec<String> = c.ops.iter().map(|o| o.kind.name().to_string()).collect();
        #[rustfmt::skip]
        assert_eq!(kinds, [
            "concat", "reshape",
            "slice", "slice", "mul",
            "slice", "slice", "mul",
            "slice", "slice", "mul",
            "add", "add", "reshape", "add",
        ]);
        assert_eq!(c.ops[0].inputs, ["conv/pad_begin", "x"]);
        assert_eq!(c.ops[0].attrs["axis"], [2]);
        assert_eq!(c.types["conv/padded"].shape, vec![1, 6, 12]);
        // Tap 2 reads positions 2.. of the padded input, and weight column 2.
        let tap2 = c.ops.iter().find(|o| o.name == "conv/window_2").unwrap();
        assert_eq!(tap2.attrs["starts"], [2]);
        assert_eq!(c.types["conv/window_2"].shape, vec![1, 6, 10]);
        assert_eq!(c.types["conv/weight_2"].shape, vec![6, 1]);
        assert_eq!(c.types["conv/bias_column"].shape, vec![6, 1]);
        assert_eq!(c.ops.last().unwrap().outputs, ["y"]);
    }

    #[test]
    fn grouped_conv_is_a_matmul_per_group_and_tap() {
        let c = decompose(
            r#"{"name": "x", "dtype": "f32", "shape": [1, 4, 11]}"#,
            r#"{"name": "w", "dtype": "f32", "shape": [6, 2, 3], "init": "ones"}"#,
            r#"{"name": "conv", "op": "Conv", "inputs": ["x", "w"], "outputs": ["y"], "attrs": {"group": 2, "strides": [2], "dilations": [2]}}"#,
            r#""y""#,
        );
        let count = |k: &str| c.ops.iter().filter(|o| o.kind.name() == k).count();
        assert_eq!(count("batchmatmul"), 6);
        assert_eq!(count("concat"), 1, "the two groups joined, no padding");
        // Stride 2, dilation 2: tap 1 starts at 2 and steps by 2 over 4 outputs.
        let w = c.ops.iter().find(|o| o.name == "conv/window_1_1").unwrap();
        assert_eq!(
            (
                w.attrs["starts"][0],
                w.attrs["ends"][0],
                w.attrs["steps"][0]
            ),
            (2, 9, 2)
        );
        assert_eq!(c.types["conv/kernel_1_2"].shape, vec![3, 2]);
        // No bias: the concat of the groups writes y.
        assert_eq!(c.ops.last().unwrap().outputs, ["y"]);
        assert!(!c.types.contains_key("conv/groups"));
    }

    #[test]
    fn topk_on_an_inner_axis_moves_it_last_and_back() {
        let c = decompose(
            r#"{"name": "x", "dtype": "f16", "shape": [5, 3, 2]}"#,
            "",
            r#"{"name": "t", "op": "TopK", "inputs": ["x"], "outputs": ["v", "i"], "attrs": {"k": 2, "axis": 0, "largest": 0}}"#,
            r#""v", "i""#,
        );
        let kinds: Vec<String> = c.ops.iter().map(|o| o.kind.name().to_string()).collect();
        assert_eq!(kinds, ["transpose", "topk", "transpose", "transpose"]);
        let topk = &c.ops[1];
        assert_eq!(topk.outputs, ["t/values", "t/indices"]);
        assert_eq!(topk.attrs["k"], [2]);
        assert_eq!(topk.attrs["largest"], [0]);
        assert!(topk.iteration[2].reduction && topk.iteration[2].extent == 5);
        assert_eq!(c.types["t/indices"].shape, vec![3, 2, 2]);
        assert_eq!(c.ops[3].attrs["perm"], [2, 0, 1]);
        // The last axis needs no transposes, and the outputs' row extent is k.
        let c = decompose(
            r#"{"name": "x", "dtype": "f16", "shape": [7, 100]}"#,
            "",
            r#"{"name": "t", "op": "TopK", "inputs": ["x"], "outputs": ["v", "i"], "attrs": {"k": 3}}"#,
            r#""v", "i""#,
        );
        assert_eq!(ops(&c), [("t".into(), "topk".into())]);
        assert_eq!(crate::access_map(&c.ops[0], 1, &[7, 3]), [Some(0), None]);
    }

    #[test]
    fn reductions_over_other_axes_move_them_last() {
        let c = decompose(
            r#"{"name": "x", "dtype": "f32", "shape": [2, 3, 4, 5]}"#,
            "",
            r#"{"name": "r", "op": "ReduceMax", "inputs": ["x"], "outputs": ["y"], "attrs": {"axes": [0, 2], "keepdims": 1}}"#,
            r#""y""#,
        );
        let kinds: Vec<String> = c.ops.iter().map(|o| o.kind.name().to_string()).collect();
        assert_eq!(kinds, ["transpose", "reshape", "max", "reshape"]);
        assert_eq!(c.ops[0].attrs["perm"], [1, 3, 0, 2]);
        assert_eq!(c.types["r/merged"].shape, vec![3, 5, 8]);
        assert_eq!(c.types["r/max"].shape, vec![3, 5, 1]);
        assert_eq!(c.types["y"].shape, vec![1, 3, 1, 5]);
        // The last axis without keepdims: reduce, then drop the unit axis.
        let c = decompose(
            r#"{"name": "x", "dtype": "f32", "shape": [2, 3]}"#,
            "",
            r#"{"name": "r", "op": "ReduceSum", "inputs": ["x"], "outputs": ["y"], "attrs": {"axes": [-1], "keepdims": 0}}"#,
            r#""y""#,
        );
        let kinds: Vec<String> = c.ops.iter().map(|o| o.kind.name().to_string()).collect();
        assert_eq!(kinds, ["sum", "reshape"]);
    }

    #[test]
    fn trilu_on_data_selects_with_a_mask() {
        let c = decompose(
            r#"{"name": "x", "dtype": "f16", "shape": [2, 3]}"#,
            "",
            r#"{"name": "t", "op": "Trilu", "inputs": ["x"], "outputs": ["y"], "attrs": {"upper": 0, "k": -1}}"#,
            r#""y""#,
        );
        assert_eq!(ops(&c), [("t/select".into(), "where".into())]);
        assert_eq!(c.ops[0].inputs, ["t/mask", "x", "t/zero"]);
        assert_eq!(c.types["t/mask"].dtype, graph::DType::Bool);
        assert_eq!(data(&c, "t/mask"), [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn comparisons_where_and_casts_keep_their_types() {
        let c = decompose(
            r#"{"name": "a", "dtype": "f16", "shape": [4, 8]}, {"name": "b", "dtype": "f16", "shape": [8]}"#,
            "",
            r#"{"name": "lt", "op": "Less", "inputs": ["a", "b"], "outputs": ["c"]},
               {"name": "sel", "op": "Where", "inputs": ["c", "a", "b"], "outputs": ["m"]},
               {"name": "eq", "op": "Equal", "inputs": ["m", "a"], "outputs": ["e"]},
               {"name": "cast", "op": "Cast", "inputs": ["e"], "outputs": ["y"], "attrs": {"to": "i32"}}"#,
            r#""y""#,
        );
        let kinds: Vec<String> = c.ops.iter().map(|o| o.kind.name().to_string()).collect();
        assert_eq!(kinds, ["lesser", "where", "equal", "to_dtype"]);
        assert_eq!(c.types["c"].dtype, graph::DType::Bool);
    }

    #[test]
    fn pooling_takes_one_spatial_axis_at_a_time() {
        let count =
            |c: &Compilation, kind: &str| c.ops.iter().filter(|o| o.kind.name() == kind).count();
        // MaxPool 3x3 with pads on both axes: per axis a concat, 3 slices, 2 maxima.
        let c = decompose(
            r#"{"name": "x", "dtype": "f16", "shape": [1, 4, 8, 8]}"#,
            "",
            r#"{"name": "pool", "op": "MaxPool", "inputs": ["x"], "outputs": ["y"], "attrs": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}}"#,
            r#""y""#,
        );
        assert_eq!(
            [
                count(&c, "concat"),
                count(&c, "slice"),
                count(&c, "maximum")
            ],
            [2, 6, 4]
        );
        assert_eq!(c.types["y"].shape, [1, 4, 4, 4]);
        // Every window of an unpadded AveragePool has 4 taps: one reciprocal constant.
        let c = decompose(
            r#"{"name": "x", "dtype": "f16", "shape": [1, 4, 8, 8]}"#,
            "",
            r#"{"name": "pool", "op": "AveragePool", "inputs": ["x"], "outputs": ["y"], "attrs": {"kernel_shape": [2, 2], "strides": [2, 2]}}"#,
            r#""y""#,
        );
        let recip = c
            .graph
            .initializers
            .iter()
            .find(|i| i.name.contains("reciprocal_count"))
            .expect("a reciprocal constant");
        assert_eq!(recip.ty.shape, [1]);
        assert_eq!(recip.init, graph::InitSpec::Data(vec![0.25]));
    }

    #[test]
    fn a_pooling_kernel_too_large_to_lower_is_an_error_naming_the_node() {
        let e = try_decompose(
            r#"{"name": "x", "dtype": "f16", "shape": [1, 2, 300]}"#,
            "",
            r#"{"name": "wide", "op": "MaxPool", "inputs": ["x"], "outputs": ["y"], "attrs": {"kernel_shape": [257]}}"#,
            r#""y""#,
        )
        .unwrap_err();
        assert_eq!(e.node.as_deref(), Some("wide"));
        assert!(e.message.contains("257 window slices"), "{e}");
    }

    #[test]
    fn integer_data_in_a_float_op_is_an_error_naming_it() {
        let e = try_decompose(
            r#"{"name": "a", "dtype": "f16", "shape": [4, 8]}"#,
            "",
            r#"{"name": "cast", "op": "Cast", "inputs": ["a"], "outputs": ["ai"], "attrs": {"to": "i32"}},
               {"name": "negated", "op": "Neg", "inputs": ["ai"], "outputs": ["y"]}"#,
            r#""y""#,
        )
        .unwrap_err();
        assert_eq!(e.node.as_deref(), Some("negated"));
        assert_eq!(
            e.message,
            "neg on i32 tensor 'ai' is not supported; device ops compute on float types"
        );
        let e = try_decompose(
            r#"{"name": "a", "dtype": "f16", "shape": [4, 8]}"#,
            "",
            r#"{"name": "cast", "op": "Cast", "inputs": ["a"], "outputs": ["ai"], "attrs": {"to": "i32"}},
               {"name": "top", "op": "TopK", "inputs": ["ai"], "outputs": ["v", "i"], "attrs": {"k": 1}}"#,
            r#""v", "i""#,
        )
        .unwrap_err();
        assert_eq!(e.node.as_deref(), Some("top"));
        assert!(e.message.starts_with("topk on i32 tensor 'ai'"), "{e}");
    }

    #[test]
    fn integer_arithmetic_goes_through_f32() {
        let c = decompose(
            r#"{"name": "a", "dtype": "f16", "shape": [4, 8]}"#,
            "",
            r#"{"name": "cast", "op": "Cast", "inputs": ["a"], "outputs": ["ai"], "attrs": {"to": "i32"}},
               {"name": "twice", "op": "Add", "inputs": ["ai", "ai"], "outputs": ["s"]},
               {"name": "half", "op": "Div", "inputs": ["s", "ai"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let kinds: Vec<&str> = c.ops.iter().map(|o| o.kind.name()).collect();
        assert_eq!(
            kinds,
            [
                "to_dtype", "to_dtype", "to_dtype", "add", "to_dtype", "to_dtype", "to_dtype",
                "realdiv", "floor", "neg", "floor", "neg", "lesser", "where", "to_dtype"
            ]
        );
        assert_eq!(c.ops.last().unwrap().outputs, ["y"]);
    }

    #[test]
    fn unsupported_cases_are_errors_naming_the_node() {
        let cases = [
            (
                r#"{"name": "x", "dtype": "f16", "shape": [4, 8]}"#,
                r#"{"name": "top0", "op": "TopK", "inputs": ["x"], "outputs": ["v", "i"], "attrs": {"k": 0}}"#,
                r#""v", "i""#,
                "top0",
                "TopK with k = 0 gives empty results, which are not supported",
            ),
            (
                r#"{"name": "x", "dtype": "f32", "shape": [2, 2000]}"#,
                r#"{"name": "long", "op": "CumSum", "inputs": ["x"], "outputs": ["y"], "attrs": {"axis": 1}}"#,
                r#""y""#,
                "long",
                "CumSum needs a 2000 x 2000 constant triangular matrix, more than the 1048576 elements this compiler makes",
            ),
            (
                r#"{"name": "x", "dtype": "f32", "shape": [2, 4]}"#,
                r#"{"name": "empty", "op": "Split", "inputs": ["x"], "outputs": ["a", "b"], "attrs": {"axis": 1, "split": [0, 4]}}"#,
                r#""a", "b""#,
                "empty",
                "Split output 'a' is empty along axis 1; empty tensors are not supported",
            ),
        ];
        for (inputs, nodes, outputs, node, message) in cases {
            let e = try_decompose(inputs, "", nodes, outputs).unwrap_err();
            assert_eq!(e.node.as_deref(), Some(node));
            assert_eq!(e.message, message);
        }
    }

    #[test]
    fn einsum_contracts_pairs_with_one_batched_matmul() {
        let c = decompose(
            r#"{"name": "q", "dtype": "f32", "shape": [1, 2, 3, 4]}, {"name": "k", "dtype": "f32", "shape": [1, 2, 5, 4]}"#,
            "",
            r#"{"name": "e", "op": "Einsum", "inputs": ["q", "k"], "outputs": ["y"], "attrs": {"equation": "bhqd,bhkd->bhqk"}}"#,
            r#""y""#,
        );
        let kinds: Vec<String> = ops(&c).into_iter().map(|(_, k)| k).collect();
        assert_eq!(kinds.iter().filter(|k| *k == "batchmatmul").count(), 1);
        assert!(!kinds.iter().any(|k| k == "sum"), "{kinds:?}");
        // A diagonal is a select with an identity mask and a sum.
        let c = decompose(
            r#"{"name": "x", "dtype": "f32", "shape": [3, 3]}"#,
            "",
            r#"{"name": "d", "op": "Einsum", "inputs": ["x"], "outputs": ["y"], "attrs": {"equation": "ii->i"}}"#,
            r#""y""#,
        );
        let kinds: Vec<String> = ops(&c).into_iter().map(|(_, k)| k).collect();
        assert!(kinds.contains(&"where".to_string()), "{kinds:?}");
        assert!(kinds.contains(&"sum".to_string()), "{kinds:?}");
        // An equation the parser refuses is an error naming it.
        let e = try_decompose(
            r#"{"name": "x", "dtype": "f32", "shape": [3, 4]}"#,
            "",
            r#"{"name": "bad", "op": "Einsum", "inputs": ["x"], "outputs": ["y"], "attrs": {"equation": "ij->j"}}"#,
            r#""y""#,
        );
        assert!(e.is_ok(), "a sum over i is an equation the device takes");
        let e = try_decompose(
            r#"{"name": "x", "dtype": "f32", "shape": [3, 3]}"#,
            "",
            r#"{"name": "dot", "op": "Einsum", "inputs": ["x", "x"], "outputs": ["y"], "attrs": {"equation": "ij,ij->"}}"#,
            r#""y""#,
        );
        assert!(e.is_ok(), "{:?}", e.err());
    }

    #[test]
    fn attention_forms_decompose_with_their_extra_outputs() {
        let c = decompose(
            r#"{"name": "q", "dtype": "f32", "shape": [1, 2, 8]}, {"name": "k", "dtype": "f32", "shape": [1, 2, 4]}, {"name": "v", "dtype": "f32", "shape": [1, 2, 4]}, {"name": "pk", "dtype": "f32", "shape": [1, 1, 3, 4]}, {"name": "pv", "dtype": "f32", "shape": [1, 1, 3, 4]}, {"name": "m", "dtype": "bool", "shape": [2, 4]}"#,
            "",
            r#"{"name": "att", "op": "Attention", "inputs": ["q", "k", "v", "m", "pk", "pv"], "outputs": ["y", "pk_out", "pv_out", "qk"], "attrs": {"q_num_heads": 2, "kv_num_heads": 1, "softcap": 3.0, "qk_matmul_output_mode": 1}}"#,
            r#""y", "pk_out", "pv_out", "qk""#,
        );
        let all = ops(&c);
        let named = |n: &str| {
            all.iter()
                .find(|(name, _)| name == n)
                .map(|(_, k)| k.as_str())
        };
        assert_eq!(named("att/present_key"), Some("concat"));
        assert_eq!(named("att/present_value"), Some("concat"));
        assert_eq!(named("att/softcap_tanh"), Some("tanh"));
        assert_eq!(named("att/mask_bias"), Some("where"));
        // The mask covers 4 of the 5 keys: the rest is padded as masked.
        assert_eq!(named("att/mask_padded"), Some("concat"));
        assert!(c.ops.iter().any(|o| o.outputs == ["qk"]));
        assert!(c.ops.iter().any(|o| o.outputs == ["y"]));
    }

    #[test]
    fn indexed_ops_decompose_to_one_hot_selections() {
        let c = decompose(
            r#"{"name": "cache", "dtype": "f16", "shape": [1, 2, 6, 4]}, {"name": "new", "dtype": "f16", "shape": [1, 2, 1, 4]}, {"name": "pos", "dtype": "i64", "shape": [1, 2, 1, 3]}"#,
            "",
            r#"{"name": "s", "op": "ScatterND", "inputs": ["cache", "pos", "new"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let kinds: Vec<String> = ops(&c).into_iter().map(|(_, k)| k).collect();
        assert!(kinds.contains(&"batchmatmul".to_string()), "{kinds:?}");
        assert!(kinds.contains(&"equal".to_string()), "{kinds:?}");
        let c = decompose(
            r#"{"name": "x", "dtype": "f32", "shape": [4, 3]}, {"name": "u", "dtype": "f32", "shape": [1, 3]}, {"name": "i", "dtype": "i64", "shape": [1, 1]}"#,
            "",
            r#"{"name": "m", "op": "ScatterND", "inputs": ["x", "i", "u"], "outputs": ["y"], "attrs": {"reduction": "max"}}"#,
            r#""y""#,
        );
        let kinds: Vec<String> = ops(&c).into_iter().map(|(_, k)| k).collect();
        assert!(kinds.contains(&"maximum".to_string()), "{kinds:?}");
        let c = decompose(
            r#"{"name": "x", "dtype": "f32", "shape": [3, 4]}, {"name": "i", "dtype": "i64", "shape": [3, 2]}"#,
            "",
            r#"{"name": "g", "op": "GatherElements", "inputs": ["x", "i"], "outputs": ["y"], "attrs": {"axis": 1}}"#,
            r#""y""#,
        );
        assert!(c.ops.iter().any(|o| o.outputs == ["y"]));
    }
}
