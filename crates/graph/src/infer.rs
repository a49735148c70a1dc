//! Type and shape inference of each op, referenced from the op table (`spec.rs`).
//!
//! Each function gets the node's input types and returns its output types; errors say
//! what was expected. Helpers shared with the evaluator live in `ops.rs`.

use crate::dtype::DType;
use crate::ir::Node;
use crate::ops::{
    attention_shapes, broadcast, conv_plan, einsum_plan, gemm_dims, matmul_shapes, norm_axis,
    perm_of, pool_plan, reduce_mask, reshape_target, slice_plan, split_sizes, Attrs, PoolKind,
};
use crate::spec::OpKind;
use crate::tensor::{numel, TensorType};

/// What an inference function sees of a node.
pub(crate) struct InferCx<'a> {
    pub kind: OpKind,
    /// The op's name, for messages.
    pub op: &'static str,
    pub node: &'a Node,
    pub a: Attrs<'a>,
    /// Input types, `None` for an omitted optional input.
    pub ins: &'a [Option<TensorType>],
    /// Input 0 (every op has it).
    pub x: &'a TensorType,
}

impl<'a> InferCx<'a> {
    /// Input `i`, which must be present.
    pub fn get(&self, i: usize) -> Result<&'a TensorType, String> {
        self.ins
            .get(i)
            .and_then(|t| t.as_ref())
            .ok_or_else(|| format!("{} needs input {i}", self.op))
    }
}

/// Output types of a node of kind `kind`, given its input types (`None` for an omitted
/// optional input).
pub(crate) fn infer(
    kind: OpKind,
    node: &Node,
    ins: &[Option<TensorType>],
) -> Result<Vec<TensorType>, String> {
    let op = kind.name();
    let x = ins
        .first()
        .and_then(|t| t.as_ref())
        .ok_or_else(|| format!("{op} needs input 0"))?;
    let cx = InferCx {
        kind,
        op,
        node,
        a: Attrs(&node.attrs),
        ins,
        x,
    };
    (kind.spec().infer)(&cx)
}

fn one(dtype: DType, shape: Vec<usize>) -> Result<Vec<TensorType>, String> {
    Ok(vec![TensorType::new(dtype, shape)])
}

/// Exp, Log, Sqrt, Reciprocal, Tanh, Sigmoid, Silu, Softplus, Sin, Cos.
pub(crate) fn float_unary(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (cx.op, cx.x);
    need_float(op, x)?;
    one(x.dtype, x.shape.clone())
}

/// Gelu.
pub(crate) fn gelu(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a) = (cx.op, cx.x, &cx.a);
    need_float(op, x)?;
    match a.opt_str("approximate")? {
        None | Some("none") | Some("tanh") => one(x.dtype, x.shape.clone()),
        Some(s) => Err(format!(
            "'approximate' must be \"none\" or \"tanh\", got \"{s}\""
        )),
    }
}

/// Neg, Relu.
pub(crate) fn numeric_unary(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (cx.op, cx.x);
    need_numeric(op, x)?;
    one(x.dtype, x.shape.clone())
}

/// Add, Sub, Mul, Div: broadcasting, one numeric dtype.
pub(crate) fn arith(c: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (c.op, c.x);
    let y = c.get(1)?;
    let d = same_dtype(op, &[x, y])?;
    need_numeric(op, x)?;
    one(d, broadcast(&x.shape, &y.shape)?)
}

/// PRelu: the slope broadcasts to X (one way), so the result has X's shape.
pub(crate) fn prelu(c: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (c.op, c.x);
    let slope = c.get(1)?;
    let d = same_dtype(op, &[x, slope])?;
    need_numeric(op, x)?;
    if broadcast(&x.shape, &slope.shape)? != x.shape {
        return Err(format!(
            "{op}: slope {:?} does not broadcast to X {:?}",
            slope.shape, x.shape
        ));
    }
    one(d, x.shape.clone())
}

/// Two float inputs of one dtype and one shape (no broadcasting), an output like them
/// (SwiGLU).
pub(crate) fn same_shape_float(c: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (c.op, c.x);
    let y = c.get(1)?;
    let d = same_dtype(op, &[x, y])?;
    need_float(op, x)?;
    if x.shape != y.shape {
        return Err(format!(
            "{op}: A {:?} and B {:?} must have the same shape (no broadcasting)",
            x.shape, y.shape
        ));
    }
    one(d, x.shape.clone())
}

/// Pow: broadcasting; the exponent may have another dtype.
pub(crate) fn pow(c: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (c.op, c.x);
    let y = c.get(1)?;
    need_numeric(op, x)?;
    need_numeric(op, y)?;
    one(x.dtype, broadcast(&x.shape, &y.shape)?)
}

/// Equal, Less, Greater: broadcasting, one dtype (numeric but for Equal), bool output.
pub(crate) fn compare(c: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (c.op, c.x);
    let y = c.get(1)?;
    same_dtype(op, &[x, y])?;
    if c.kind != OpKind::Equal {
        need_numeric(op, x)?;
    }
    one(DType::Bool, broadcast(&x.shape, &y.shape)?)
}

/// Max, Min.
pub(crate) fn extremum(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (cx.op, cx.x);
    let ts: Vec<&TensorType> = (0..cx.ins.len())
        .map(|i| cx.get(i))
        .collect::<Result<_, _>>()?;
    let d = same_dtype(op, &ts)?;
    need_numeric(op, x)?;
    let mut shape = x.shape.clone();
    for t in &ts {
        shape = broadcast(&shape, &t.shape)?;
    }
    one(d, shape)
}

/// Where.
pub(crate) fn where_op(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (cx.op, cx.x);
    let (t, f) = (cx.get(1)?, cx.get(2)?);
    if x.dtype != DType::Bool {
        return Err(format!("Where needs a bool condition, got {}", x.dtype));
    }
    let d = same_dtype(op, &[t, f])?;
    let shape = broadcast(&broadcast(&x.shape, &t.shape)?, &f.shape)?;
    one(d, shape)
}

/// Clip.
pub(crate) fn clip(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a, ins) = (cx.op, cx.x, &cx.a, cx.ins);
    need_numeric(op, x)?;
    for (i, name) in [(1, "min"), (2, "max")] {
        if let Some(Some(b)) = ins.get(i) {
            if a.0.contains_key(name) {
                return Err(format!(
                    "'{name}' is given both as an attribute and as input {i}"
                ));
            }
            if b.numel() != 1 || b.dtype != x.dtype {
                return Err(format!(
                    "Clip's {name} input must be a single {} value, got {b}",
                    x.dtype
                ));
            }
        }
    }
    one(x.dtype, x.shape.clone())
}

/// Cast.
pub(crate) fn cast(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, a) = (cx.x, &cx.a);
    let to = a
        .opt_str("to")?
        .ok_or("Cast needs attribute 'to' (a dtype name)")?;
    let d = DType::parse(to)
        .ok_or_else(|| format!("'to' is \"{to}\", not a dtype (one of {})", dtype_names()))?;
    one(d, x.shape.clone())
}

/// Softmax.
pub(crate) fn softmax(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a) = (cx.op, cx.x, &cx.a);
    need_float(op, x)?;
    norm_axis(a.int("axis", -1)?, x.shape.len())?;
    one(x.dtype, x.shape.clone())
}

/// MatMul.
pub(crate) fn matmul(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (cx.op, cx.x);
    let y = cx.get(1)?;
    let d = same_dtype(op, &[x, y])?;
    need_numeric(op, x)?;
    let (shape, ..) = matmul_shapes(&x.shape, &y.shape)?;
    one(d, shape)
}

/// Gemm.
pub(crate) fn gemm(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a, ins) = (cx.op, cx.x, &cx.a, cx.ins);
    let y = cx.get(1)?;
    let d = same_dtype(op, &[x, y])?;
    need_numeric(op, x)?;
    let (m, k, k2, n) = gemm_dims(x, y, a)?;
    if k != k2 {
        return Err(format!(
            "Gemm: A gives K = {k} but B gives K = {k2} (A {:?}, B {:?}, transA {}, transB {})",
            x.shape,
            y.shape,
            a.int("transA", 0)?,
            a.int("transB", 0)?
        ));
    }
    if let Some(Some(c)) = ins.get(2) {
        same_dtype(op, &[x, c])?;
        let b = broadcast(&c.shape, &[m, n])?;
        if b != [m, n] {
            return Err(format!(
                "Gemm: C {:?} does not broadcast to [{m}, {n}]",
                c.shape
            ));
        }
    }
    one(d, vec![m, n])
}

/// LayerNormalization, SimplifiedLayerNormalization.
pub(crate) fn layer_norm(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a, ins) = (cx.op, cx.x, &cx.a, cx.ins);
    need_float(op, x)?;
    let axis = norm_axis(a.int("axis", -1)?, x.shape.len())?;
    let norm_shape = x.shape.get(axis..).unwrap_or(&[]);
    for i in 1..cx.ins.len() {
        if let Some(Some(p)) = ins.get(i) {
            same_dtype(op, &[x, p])?;
            let what = if i == 1 { "scale" } else { "bias" };
            if broadcast(&p.shape, norm_shape).ok().as_deref() != Some(norm_shape) {
                return Err(format!(
                    "{what} {:?} does not broadcast to the normalised shape {norm_shape:?}",
                    p.shape
                ));
            }
        }
    }
    if cx.node.outputs.len() > 1 && cx.kind == OpKind::LayerNormalization {
        // Mean and InvStdDev: the normalised axes kept as 1s, in f32 (ONNX's stash type).
        let stats: Vec<usize> = x
            .shape
            .iter()
            .enumerate()
            .map(|(i, &d)| if i < axis { d } else { 1 })
            .collect();
        let mut outs = vec![TensorType::new(x.dtype, x.shape.clone())];
        for _ in 1..cx.node.outputs.len() {
            outs.push(TensorType::new(DType::F32, stats.clone()));
        }
        return Ok(outs);
    }
    one(x.dtype, x.shape.clone())
}

/// CastLike: X converted to the dtype of `target_type`.
pub(crate) fn cast_like(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, t) = (cx.x, cx.get(1)?);
    one(t.dtype, x.shape.clone())
}

/// And, Or, Xor: broadcasting over bools.
pub(crate) fn logical(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (cx.op, cx.x);
    let y = cx.get(1)?;
    for t in [x, y] {
        if t.dtype != DType::Bool {
            return Err(format!("{op} needs bool inputs, got {}", t.dtype));
        }
    }
    one(DType::Bool, broadcast(&x.shape, &y.shape)?)
}

/// Not.
pub(crate) fn not(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let x = cx.x;
    if x.dtype != DType::Bool {
        return Err(format!("Not needs a bool input, got {}", x.dtype));
    }
    one(DType::Bool, x.shape.clone())
}

/// IsNaN, IsInf: a float input, a bool output.
pub(crate) fn float_test(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (cx.op, cx.x);
    need_float(op, x)?;
    one(DType::Bool, x.shape.clone())
}

/// Mod: like the arithmetic ops (floats with `fmod = 0` as from ONNX opset 28).
pub(crate) fn modulo(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    cx.a.flag("fmod", false)?;
    arith(cx)
}

/// ArgMax, ArgMin: i64 indices along `axis`.
pub(crate) fn arg_reduce(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a) = (cx.op, cx.x, &cx.a);
    need_numeric(op, x)?;
    let axis = norm_axis(a.int("axis", 0)?, x.shape.len())?;
    if x.shape.get(axis) == Some(&0) {
        return Err(format!("{op} over an empty axis"));
    }
    let keep = a.flag("keepdims", true)?;
    let mut shape = Vec::new();
    for (i, &d) in x.shape.iter().enumerate() {
        if i != axis {
            shape.push(d);
        } else if keep {
            shape.push(1);
        }
    }
    one(DType::I64, shape)
}

/// ReduceSum, ReduceMean, ReduceMax.
pub(crate) fn reduce(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a) = (cx.op, cx.x, &cx.a);
    need_numeric(op, x)?;
    let mask = reduce_mask(x.shape.len(), a.opt_ints("axes")?)?;
    let keep = a.flag("keepdims", true)?;
    let mut shape = Vec::new();
    for (d, m) in x.shape.iter().zip(&mask) {
        if !m {
            shape.push(*d);
        } else if keep {
            shape.push(1);
        } else if *d == 0 && matches!(cx.kind, OpKind::ReduceMax | OpKind::ReduceMin) {
            return Err(format!("{op} over an empty axis"));
        }
    }
    one(x.dtype, shape)
}

/// Transpose.
pub(crate) fn transpose(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, a) = (cx.x, &cx.a);
    let p = perm_of(x.shape.len(), a.opt_ints("perm")?)?;
    one(
        x.dtype,
        p.iter().filter_map(|&i| x.shape.get(i).copied()).collect(),
    )
}

/// Reshape.
pub(crate) fn reshape(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, a) = (cx.x, &cx.a);
    one(x.dtype, reshape_target(&x.shape, a.ints("shape")?)?)
}

/// Flatten.
pub(crate) fn flatten(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, a) = (cx.x, &cx.a);
    let r = x.shape.len() as i64;
    let axis = a.int("axis", 1)?;
    if axis < -r || axis > r {
        return Err(format!(
            "axis {axis} is out of range for Flatten of rank {r}"
        ));
    }
    let axis = if axis < 0 { axis + r } else { axis } as usize;
    let (lo, hi) = x.shape.split_at(axis.min(x.shape.len()));
    one(x.dtype, vec![numel(lo), numel(hi)])
}

/// Squeeze.
pub(crate) fn squeeze(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, a) = (cx.x, &cx.a);
    let shape = match a.opt_ints("axes")? {
        None => x.shape.iter().copied().filter(|&d| d != 1).collect(),
        Some(axes) => {
            let mask = reduce_mask(x.shape.len(), Some(axes))?;
            let mut s = Vec::new();
            for (i, (&d, &m)) in x.shape.iter().zip(&mask).enumerate() {
                if m && d != 1 {
                    return Err(format!("cannot squeeze axis {i} of size {d}"));
                }
                if !m {
                    s.push(d);
                }
            }
            s
        }
    };
    one(x.dtype, shape)
}

/// Unsqueeze.
pub(crate) fn unsqueeze(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, a) = (cx.x, &cx.a);
    let axes = a.ints("axes")?;
    let rank = x.shape.len() + axes.len();
    let mask = reduce_mask(rank, Some(axes))?;
    let mut it = x.shape.iter();
    let shape = mask
        .iter()
        .map(|&m| {
            if m {
                1
            } else {
                it.next().copied().unwrap_or(1)
            }
        })
        .collect();
    one(x.dtype, shape)
}

/// Concat.
pub(crate) fn concat(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a) = (cx.op, cx.x, &cx.a);
    let ts: Vec<&TensorType> = (0..cx.ins.len())
        .map(|i| cx.get(i))
        .collect::<Result<_, _>>()?;
    let d = same_dtype(op, &ts)?;
    let axis_attr = a.opt_int("axis")?.ok_or("Concat needs attribute 'axis'")?;
    let axis = norm_axis(axis_attr, x.shape.len())?;
    let mut shape = x.shape.clone();
    let mut total = 0usize;
    for (i, t) in ts.iter().enumerate() {
        let ok = t.shape.len() == x.shape.len()
            && t.shape
                .iter()
                .zip(&x.shape)
                .enumerate()
                .all(|(k, (p, q))| k == axis || p == q);
        if !ok {
            return Err(format!(
                "input {i} has shape {:?}, which differs from input 0 {:?} outside axis {axis}",
                t.shape, x.shape
            ));
        }
        total = total.saturating_add(t.shape.get(axis).copied().unwrap_or(0));
    }
    if let Some(s) = shape.get_mut(axis) {
        *s = total;
    }
    one(d, shape)
}

/// Split.
pub(crate) fn split(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, a) = (cx.x, &cx.a);
    let axis = norm_axis(a.int("axis", 0)?, x.shape.len())?;
    let dim = x.shape.get(axis).copied().unwrap_or(0);
    let sizes = split_sizes(dim, cx.node.outputs.len(), a.opt_ints("split")?)?;
    Ok(sizes
        .into_iter()
        .map(|s| {
            let mut shape = x.shape.clone();
            if let Some(d) = shape.get_mut(axis) {
                *d = s;
            }
            TensorType::new(x.dtype, shape)
        })
        .collect())
}

/// Slice.
pub(crate) fn slice(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, a) = (cx.x, &cx.a);
    let plan = slice_plan(&x.shape, a)?;
    one(x.dtype, plan.iter().map(|p| p.2).collect())
}

/// Gather.
pub(crate) fn gather(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, a) = (cx.x, &cx.a);
    let idx = cx.get(1)?;
    if !idx.dtype.is_int() {
        return Err(format!("Gather needs integer indices, got {}", idx.dtype));
    }
    let axis = norm_axis(a.int("axis", 0)?, x.shape.len())?;
    let mut shape: Vec<usize> = x.shape.get(..axis).unwrap_or(&[]).to_vec();
    shape.extend(&idx.shape);
    shape.extend(x.shape.get(axis + 1..).unwrap_or(&[]));
    one(x.dtype, shape)
}

/// Expand.
pub(crate) fn expand(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, a) = (cx.x, &cx.a);
    let target: Vec<usize> = a
        .ints("shape")?
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("'shape' has a negative dimension {d}")))
        .collect::<Result<_, _>>()?;
    one(x.dtype, broadcast(&x.shape, &target)?)
}

/// CumSum.
pub(crate) fn cumsum(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a) = (cx.op, cx.x, &cx.a);
    need_numeric(op, x)?;
    norm_axis(a.int("axis", 0)?, x.shape.len())?;
    a.flag("exclusive", false)?;
    a.flag("reverse", false)?;
    one(x.dtype, x.shape.clone())
}

/// Trilu.
pub(crate) fn trilu(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, a) = (cx.x, &cx.a);
    if x.shape.len() < 2 {
        return Err(format!("Trilu needs rank >= 2, got {:?}", x.shape));
    }
    a.flag("upper", true)?;
    a.int("k", 0)?;
    one(x.dtype, x.shape.clone())
}

/// Conv.
pub(crate) fn conv(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a, ins) = (cx.op, cx.x, &cx.a, cx.ins);
    let w = cx.get(1)?;
    let d = same_dtype(op, &[x, w])?;
    need_float(op, x)?;
    let p = conv_plan(&x.shape, &w.shape, a)?;
    if let Some(Some(b)) = ins.get(2) {
        same_dtype(op, &[x, b])?;
        if b.shape != [p.m] {
            return Err(format!(
                "Conv bias must have shape [{}] (one per output channel), got {:?}",
                p.m, b.shape
            ));
        }
    }
    one(d, vec![p.n, p.m, p.l_out])
}

/// The window rule of a pooling op.
pub(crate) fn pool_kind(kind: OpKind) -> PoolKind {
    match kind {
        OpKind::MaxPool | OpKind::GlobalMaxPool => PoolKind::Max,
        OpKind::LpPool | OpKind::GlobalLpPool => PoolKind::Lp,
        _ => PoolKind::Average,
    }
}

/// MaxPool (float or int8), AveragePool, LpPool (float).
pub(crate) fn pool(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (cx.op, cx.x);
    let kind = pool_kind(cx.kind);
    if !(kind == PoolKind::Max && x.dtype == DType::I8) {
        need_float(op, x)?;
    }
    let plan = pool_plan(kind, &x.shape, cx.a.0)?;
    one(x.dtype, plan.output_shape())
}

/// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: every spatial axis kept with size 1.
pub(crate) fn global_pool(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (cx.op, cx.x);
    need_float(op, x)?;
    if x.shape.len() < 3 {
        return Err(format!(
            "{op} needs X [N, C, D1, ...] with at least one spatial axis, got {:?}",
            x.shape
        ));
    }
    if pool_kind(cx.kind) == PoolKind::Lp {
        crate::ops::lp_exponent(&cx.a)?;
    }
    let mut shape = x.shape.clone();
    shape[2..].fill(1);
    one(x.dtype, shape)
}

/// TopK.
pub(crate) fn topk(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a) = (cx.op, cx.x, &cx.a);
    need_numeric(op, x)?;
    let axis = norm_axis(a.int("axis", -1)?, x.shape.len())?;
    let k = a.opt_int("k")?.ok_or("TopK needs attribute 'k'")?;
    let dim = x.shape.get(axis).copied().unwrap_or(0);
    if k < 0 || k as u64 > dim as u64 {
        return Err(format!(
            "'k' is {k}, but axis {axis} has {dim} elements (need 0 <= k <= {dim})"
        ));
    }
    a.flag("largest", true)?;
    a.flag("sorted", true)?;
    let mut shape = x.shape.clone();
    if let Some(s) = shape.get_mut(axis) {
        *s = k as usize;
    }
    Ok(vec![
        TensorType::new(x.dtype, shape.clone()),
        TensorType::new(DType::I64, shape),
    ])
}

/// Attention.
pub(crate) fn attention(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a) = (cx.op, cx.x, &cx.a);
    let (k, v) = (cx.get(1)?, cx.get(2)?);
    let d = same_dtype(op, &[x, k, v])?;
    need_float(op, x)?;
    crate::eval::attention_window(a.0)?;
    let opt = |i: usize| cx.ins.get(i).and_then(|t| t.as_ref());
    let past = match (opt(4), opt(5)) {
        (Some(pk), Some(pv)) => {
            same_dtype(op, &[x, pk, pv])?;
            Some((pk.shape.as_slice(), pv.shape.as_slice()))
        }
        (None, None) => None,
        _ => return Err("past_key and past_value must be given together".into()),
    };
    let s = attention_shapes(
        &x.shape,
        &k.shape,
        &v.shape,
        past,
        (a.opt_int("q_num_heads")?, a.opt_int("kv_num_heads")?),
    )?;
    let t = s.total();
    if let Some(m) = opt(3) {
        if m.dtype != DType::Bool && m.dtype != d {
            return Err(format!(
                "attn_mask must be bool or {d} (Q's dtype), got {}",
                m.dtype
            ));
        }
        // The mask's last axis may be shorter than the keys (padded with "masked").
        let last = m.shape.last().copied().unwrap_or(1);
        let mut shape = m.shape.clone();
        if let Some(l) = shape.last_mut() {
            *l = if last == 1 { 1 } else { t };
        }
        if last > t
            || broadcast(&shape, &[s.b, s.hq, s.sq, t]).ok().as_deref()
                != Some(&[s.b, s.hq, s.sq, t][..])
        {
            return Err(format!(
                "attn_mask {:?} does not broadcast to the scores [{}, {}, {}, {t}]",
                m.shape, s.b, s.hq, s.sq
            ));
        }
    }
    if let Some(n) = opt(6) {
        if !n.dtype.is_int() || n.shape != [s.b] {
            return Err(format!(
                "nonpad_kv_seqlen must be integers of shape [batch] = [{}], got {n}",
                s.b
            ));
        }
        if past.is_some() {
            return Err("nonpad_kv_seqlen cannot be given with past_key and past_value".into());
        }
    }
    a.flag("is_causal", false)?;
    if let Some(sc) = a.opt_float("scale")? {
        if !sc.is_finite() {
            return Err(format!("'scale' must be finite, got {sc}"));
        }
    }
    let cap = a.float("softcap", 0.0)?;
    if !(cap.is_finite() && cap >= 0.0) {
        return Err(format!("'softcap' must be finite and >= 0, got {cap}"));
    }
    let mode = a.int("qk_matmul_output_mode", 0)?;
    if !(0..=3).contains(&mode) {
        return Err(format!(
            "'qk_matmul_output_mode' must be 0 to 3, got {mode}"
        ));
    }
    let y = if s.three_d {
        vec![s.b, s.sq, s.hq * s.dv]
    } else {
        vec![s.b, s.hq, s.sq, s.dv]
    };
    let outs = [
        TensorType::new(d, y),
        TensorType::new(d, vec![s.b, s.hkv, t, s.d]),
        TensorType::new(d, vec![s.b, s.hkv, t, s.dv]),
        TensorType::new(d, vec![s.b, s.hq, s.sq, t]),
    ];
    Ok(outs
        .into_iter()
        .take(cx.node.outputs.len().max(1))
        .collect())
}

/// GatherElements.
pub(crate) fn gather_elements(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (x, a) = (cx.x, &cx.a);
    let idx = cx.get(1)?;
    if !idx.dtype.is_int() {
        return Err(format!(
            "GatherElements needs integer indices, got {}",
            idx.dtype
        ));
    }
    let axis = norm_axis(a.int("axis", 0)?, x.shape.len())?;
    if idx.shape.len() != x.shape.len()
        || idx
            .shape
            .iter()
            .zip(&x.shape)
            .enumerate()
            .any(|(i, (n, d))| i != axis && n > d)
    {
        return Err(format!(
            "indices {:?} must have data's rank and fit data {:?} on every axis but {axis}",
            idx.shape, x.shape
        ));
    }
    one(x.dtype, idx.shape.clone())
}

/// ScatterND.
pub(crate) fn scatter_nd(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x, a) = (cx.op, cx.x, &cx.a);
    let (idx, upd) = (cx.get(1)?, cx.get(2)?);
    same_dtype(op, &[x, upd])?;
    if !idx.dtype.is_int() {
        return Err(format!(
            "ScatterND needs integer indices, got {}",
            idx.dtype
        ));
    }
    let k = idx.shape.last().copied().unwrap_or(0);
    if idx.shape.is_empty() || k == 0 || k > x.shape.len() {
        return Err(format!(
            "indices {:?} must end in an axis of 1 to {} (data's rank)",
            idx.shape,
            x.shape.len()
        ));
    }
    let mut want: Vec<usize> = idx.shape.get(..idx.shape.len() - 1).unwrap_or(&[]).to_vec();
    want.extend(x.shape.get(k..).unwrap_or(&[]));
    if upd.shape != want {
        return Err(format!(
            "updates must have shape {want:?} (indices {:?}, data {:?}), got {:?}",
            idx.shape, x.shape, upd.shape
        ));
    }
    match a.opt_str("reduction")? {
        None | Some("none" | "add" | "mul" | "max" | "min") => {}
        Some(r) => {
            return Err(format!(
                "'reduction' must be none, add, mul, max or min, got '{r}'"
            ))
        }
    }
    one(x.dtype, x.shape.clone())
}

/// Einsum.
pub(crate) fn einsum(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, a) = (cx.op, &cx.a);
    let eq = a
        .opt_str("equation")?
        .ok_or("attribute 'equation' is required")?;
    let ts: Vec<&TensorType> = (0..cx.ins.len())
        .map(|i| cx.get(i))
        .collect::<Result<_, _>>()?;
    let d = same_dtype(op, &ts)?;
    need_numeric(op, cx.x)?;
    let shapes: Vec<&[usize]> = ts.iter().map(|t| t.shape.as_slice()).collect();
    let p = einsum_plan(eq, &shapes)?;
    let shape = p
        .output
        .iter()
        .map(|&l| p.sizes.get(l).copied().unwrap_or(1))
        .collect();
    one(d, shape)
}

fn same_dtype(op: &str, ts: &[&TensorType]) -> Result<DType, String> {
    let first = ts.first().map(|t| t.dtype).unwrap_or(DType::F32);
    for t in ts {
        if t.dtype != first {
            return Err(format!(
                "{op} needs inputs of one dtype, got {} and {} (insert a Cast)",
                first, t.dtype
            ));
        }
    }
    Ok(first)
}

pub(crate) fn need_float(op: &str, t: &TensorType) -> Result<(), String> {
    if t.dtype.is_float() {
        Ok(())
    } else {
        Err(format!(
            "{op} needs a floating-point input, got {}",
            t.dtype
        ))
    }
}

fn need_numeric(op: &str, t: &TensorType) -> Result<(), String> {
    if t.dtype == DType::Bool {
        Err(format!("{op} needs a numeric input, got bool"))
    } else {
        Ok(())
    }
}

fn dtype_names() -> String {
    DType::ALL.map(|d| d.name()).join(", ")
}
