//! The f32 reference evaluator.
//!
//! Every node computes in `f32` from its inputs and its outputs are then rounded to their
//! dtype, so an f16 graph runs with f32 arithmetic and f16 storage between nodes. MatMul
//! and Gemm accumulate in `f32`; reductions and normalisations sum in `f32` in row-major
//! order.

use std::collections::BTreeMap;

use crate::error::GraphError;
use crate::ir::{Graph, Node};
use crate::ops::{
    attention_shapes, broadcast_strides, conv_plan, einsum_plan, matmul_shapes, norm_axis, perm_of,
    pool_plan, reduce_mask, slice_plan, split_sizes, strides, Attrs, PoolAxis, PoolKind,
};
use crate::spec::OpKind;
use crate::tensor::{numel, Tensor, TensorType, MAX_GRAPH_ELEMENTS};

/// Evaluates `graph` on `inputs` (one tensor per graph input, matching its type) and
/// returns every value: inputs, initializers and node outputs.
pub fn evaluate(
    graph: &Graph,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Tensor>, GraphError> {
    let types = graph.infer_types()?;
    let work = eval_work(graph, &types);
    if work > MAX_EVAL_WORK {
        return Err(GraphError::graph(format!(
            "evaluating this graph would take about {work} multiply-adds, more than the \
             reference evaluator's limit of {MAX_EVAL_WORK} (2^32); graphs this large are \
             for planning and timing only"
        )));
    }
    // Every value is held at once: refuse before allocating any of them.
    let held = types
        .values()
        .fold(0usize, |a, t| a.saturating_add(t.numel()));
    if held > MAX_GRAPH_ELEMENTS {
        return Err(GraphError::graph(format!(
            "evaluating this graph would hold {held} values, more than the reference \
             evaluator's limit of {MAX_GRAPH_ELEMENTS} (2^29); graphs this large are for \
             planning and timing only (run them timing-only)"
        )));
    }
    for name in inputs.keys() {
        if !graph.inputs.iter().any(|v| &v.name == name) {
            let known: Vec<&str> = graph.inputs.iter().map(|v| v.name.as_str()).collect();
            return Err(GraphError::graph(format!(
                "'{name}' is not an input of the graph (its inputs are: {})",
                known.join(", ")
            )));
        }
    }
    let mut values = graph.initializer_tensors()?;
    for vi in &graph.inputs {
        let t = inputs
            .get(&vi.name)
            .ok_or_else(|| GraphError::graph(format!("no value given for input '{}'", vi.name)))?;
        if t.dtype != vi.ty.dtype || t.shape != vi.ty.shape {
            return Err(GraphError::graph(format!(
                "input '{}' must be {}, got {}",
                vi.name,
                vi.ty,
                t.ty()
            )));
        }
        let t = Tensor::new(t.dtype, t.shape.clone(), t.data.clone())
            .map_err(|m| GraphError::graph(format!("input '{}': {m}", vi.name)))?;
        values.insert(vi.name.clone(), t);
    }
    for node in &graph.nodes {
        let err = |m: String| GraphError::node(&node.name, &node.op, m);
        // `infer_types` above has checked every op is known.
        let kind = node.kind().ok_or_else(|| err("unknown op".into()))?;
        let ins: Vec<Option<&Tensor>> = node
            .inputs
            .iter()
            .map(|n| if n.is_empty() { None } else { values.get(n) })
            .collect();
        let out_types: Vec<TensorType> = node
            .outputs
            .iter()
            .map(|o| {
                types
                    .get(o)
                    .cloned()
                    .ok_or_else(|| err(format!("no type for '{o}'")))
            })
            .collect::<Result<_, _>>()?;
        let outs = eval_node(kind, node, &ins, &out_types).map_err(err)?;
        if outs.len() != out_types.len() {
            return Err(err("internal error: wrong number of outputs".into()));
        }
        for ((name, ty), data) in node.outputs.iter().zip(out_types).zip(outs) {
            let t = Tensor::new(ty.dtype, ty.shape, data)
                .map_err(|m| err(format!("internal error for output '{name}': {m}")))?;
            values.insert(name.clone(), t);
        }
    }
    Ok(values)
}

/// Most work (multiply-adds, or elements touched for ops without products) that one
/// [`evaluate`] call may do: 2^32, a few seconds natively; see docs/limits.md.
pub const MAX_EVAL_WORK: u64 = 1 << 32;

/// Estimated work of evaluating `graph` (see [`MAX_EVAL_WORK`]), saturating.
pub fn eval_work(graph: &Graph, types: &BTreeMap<String, TensorType>) -> u64 {
    let n = |name: &String| types.get(name).map_or(0, |t| t.numel() as u64);
    let shape = |name: Option<&String>| {
        name.and_then(|x| types.get(x))
            .map(|t| t.shape.clone())
            .unwrap_or_default()
    };
    let mut total = graph
        .initializers
        .iter()
        .fold(0u64, |a, i| a.saturating_add(i.ty.numel() as u64));
    for node in &graph.nodes {
        let touched = node
            .inputs
            .iter()
            .chain(&node.outputs)
            .fold(0u64, |a, x| a.saturating_add(n(x)));
        let out = node.outputs.first().map_or(0, n);
        let w = match node.kind() {
            Some(k @ (OpKind::MatMul | OpKind::Gemm)) => {
                let a = shape(node.inputs.first());
                let k = if k == OpKind::Gemm
                    && node.attrs.get("transA") == Some(&crate::ir::AttrValue::Int(1))
                {
                    a.first().copied()
                } else {
                    a.last().copied()
                };
                out.saturating_mul(k.unwrap_or(1) as u64)
            }
            Some(OpKind::Conv) => {
                let w = shape(node.inputs.get(1));
                let per: u64 = w
                    .iter()
                    .skip(1)
                    .fold(1u64, |a, &d| a.saturating_mul(d as u64));
                out.saturating_mul(per)
            }
            Some(OpKind::Attention) => {
                let k = shape(node.inputs.get(1));
                let v = shape(node.inputs.get(2));
                let skv = k.get(2).copied().unwrap_or(1) as u64;
                let d = k.get(3).copied().unwrap_or(1) as u64;
                let dv = v.get(3).copied().unwrap_or(1).max(1) as u64;
                (out / dv)
                    .saturating_mul(skv)
                    .saturating_mul(d.saturating_add(dv))
            }
            Some(OpKind::TopK) => touched.saturating_mul(32),
            Some(OpKind::MaxPool | OpKind::AveragePool | OpKind::LpPool) => {
                let taps = match node.attrs.get("kernel_shape") {
                    Some(crate::ir::AttrValue::Ints(k)) => k
                        .iter()
                        .fold(1u64, |a, &d| a.saturating_mul(d.max(1) as u64)),
                    _ => 1,
                };
                out.saturating_mul(taps)
            }
            _ => touched,
        };
        total = total.saturating_add(w.max(touched));
    }
    total
}

fn internal() -> String {
    "internal error: index out of range".to_string()
}

/// Offsets visited when walking `shape` in row-major order with the given strides.
struct Offsets {
    shape: Vec<usize>,
    strides: Vec<i64>,
    idx: Vec<usize>,
    cur: i64,
    left: usize,
}

impl Offsets {
    fn new(shape: &[usize], strides: Vec<i64>, base: i64) -> Offsets {
        Offsets {
            shape: shape.to_vec(),
            idx: vec![0; shape.len()],
            strides,
            cur: base,
            left: numel(shape),
        }
    }
}

impl Iterator for Offsets {
    type Item = i64;
    fn next(&mut self) -> Option<i64> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let r = self.cur;
        for ((i, &d), &s) in self
            .idx
            .iter_mut()
            .zip(&self.shape)
            .zip(&self.strides)
            .rev()
        {
            *i += 1;
            self.cur += s;
            if *i < d {
                break;
            }
            self.cur -= s * d as i64;
            *i = 0;
        }
        Some(r)
    }
}

fn gather_offsets(data: &[f32], offs: Offsets) -> Result<Vec<f32>, String> {
    offs.map(|o| {
        usize::try_from(o)
            .ok()
            .and_then(|o| data.get(o))
            .copied()
            .ok_or_else(internal)
    })
    .collect()
}

fn bcast_to(t: &Tensor, shape: &[usize]) -> Result<Vec<f32>, String> {
    if t.shape == shape {
        return Ok(t.data.clone());
    }
    gather_offsets(
        &t.data,
        Offsets::new(shape, broadcast_strides(&t.shape, shape, 1), 0),
    )
}

fn chunk(data: &[f32], start: usize, len: usize) -> Result<&[f32], String> {
    data.get(start..start.checked_add(len).ok_or_else(internal)?)
        .ok_or_else(internal)
}

/// (outer, dim, inner) around `axis`.
fn lanes(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (
        numel(shape.get(..axis).unwrap_or(&[])),
        shape.get(axis).copied().unwrap_or(1),
        numel(shape.get(axis + 1..).unwrap_or(&[])),
    )
}

/// Applies `f` to every lane along `axis` (a lane is copied out, changed and written back).
fn map_lanes(
    data: &[f32],
    shape: &[usize],
    axis: usize,
    mut f: impl FnMut(&mut [f32]),
) -> Result<Vec<f32>, String> {
    let (outer, d, inner) = lanes(shape, axis);
    let mut out = data.to_vec();
    let mut lane = vec![0.0f32; d];
    for o in 0..outer {
        for i in 0..inner {
            let base = o * d * inner + i;
            for (j, l) in lane.iter_mut().enumerate() {
                *l = *data.get(base + j * inner).ok_or_else(internal)?;
            }
            f(&mut lane);
            for (j, l) in lane.iter().enumerate() {
                *out.get_mut(base + j * inner).ok_or_else(internal)? = *l;
            }
        }
    }
    Ok(out)
}

pub(crate) fn sigmoid(x: f32) -> f32 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// Error function, computed in f64 (series below 3, continued fraction above) so that
/// the f32 result is accurate to about one ulp.
pub(crate) fn erf(x: f64) -> f64 {
    let ax = x.abs();
    let r = if ax.is_nan() {
        return f64::NAN;
    } else if ax < 3.0 {
        // erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1))
        let mut term = ax;
        let mut sum = ax;
        let x2 = ax * ax;
        for n in 1..200 {
            let nf = f64::from(n);
            term *= -x2 / nf;
            let add = term / (2.0 * nf + 1.0);
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else if ax < 30.0 {
        1.0 - erfc_large(ax)
    } else {
        1.0
    };
    if x < 0.0 {
        -r
    } else {
        r
    }
}

/// erfc for x >= 3 by the continued fraction
/// erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))).
fn erfc_large(x: f64) -> f64 {
    let mut k = x;
    for n in (1..80).rev() {
        k = x + (f64::from(n) / 2.0) / k;
    }
    (-x * x).exp() / (std::f64::consts::PI.sqrt() * k)
}

fn gelu(x: f32, tanh: bool) -> f32 {
    let xd = f64::from(x);
    let y = if tanh {
        let c = (2.0 / std::f64::consts::PI).sqrt();
        0.5 * xd * (1.0 + (c * (xd + 0.044715 * xd * xd * xd)).tanh())
    } else if xd < -3.0 * std::f64::consts::SQRT_2 {
        // 0.5 x erfc(-x/sqrt2), without cancellation
        0.5 * xd * erfc_large(-xd / std::f64::consts::SQRT_2)
    } else {
        0.5 * xd * (1.0 + erf(xd / std::f64::consts::SQRT_2))
    };
    y as f32
}

/// `a` (`m` x `k`) times `b` (`k` x `n`), row-major. Every output is its `k` products added
/// in ascending order from zero, with no fused multiply-add, as in the plain triple loop:
/// the register blocks below only choose which outputs are summed side by side, so that a
/// stretch of `b`'s row is loaded once for several rows of `a`.
fn matmul_2d(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    // 4 rows x 8 columns of sums: eight 4-lane vectors (SSE2, WebAssembly SIMD128).
    const ROWS: usize = 4;
    const COLS: usize = 8;
    let mut c = vec![0.0f32; m * n];
    if n == 0 || k == 0 {
        return c;
    }
    let blocked_rows = m - m % ROWS;
    let blocked_cols = n - n % COLS;
    for (c_block, a_block) in c.chunks_exact_mut(ROWS * n).zip(a.chunks_exact(ROWS * k)) {
        for j in (0..blocked_cols).step_by(COLS) {
            let mut sums = [[0.0f32; COLS]; ROWS];
            for (p, b_row) in b.chunks_exact(n).take(k).enumerate() {
                let Some(bs) = b_row.get(j..).and_then(|r| r.first_chunk::<COLS>()) else {
                    break;
                };
                for (r, row_sums) in sums.iter_mut().enumerate() {
                    let x = a_block[r * k + p];
                    for (s, &y) in row_sums.iter_mut().zip(bs) {
                        *s += x * y;
                    }
                }
            }
            for (r, row_sums) in sums.iter().enumerate() {
                c_block[r * n + j..r * n + j + COLS].copy_from_slice(row_sums);
            }
        }
    }
    // What the blocks left: the last columns of the blocked rows, then the last rows.
    let rest = |c: &mut [f32], rows: std::ops::Range<usize>, cols: std::ops::Range<usize>| {
        for i in rows {
            let (Some(c_row), Some(a_row)) = (
                c.get_mut(i * n + cols.start..i * n + cols.end),
                a.get(i * k..(i + 1) * k),
            ) else {
                return;
            };
            for (&x, b_row) in a_row.iter().zip(b.chunks_exact(n)) {
                for (s, &y) in c_row.iter_mut().zip(&b_row[cols.clone()]) {
                    *s += x * y;
                }
            }
        }
    };
    if blocked_cols < n {
        rest(&mut c, 0..blocked_rows, blocked_cols..n);
    }
    rest(&mut c, blocked_rows..m, 0..n);
    c
}

fn transpose_2d(a: &[f32], r: usize, c: usize) -> Result<Vec<f32>, String> {
    gather_offsets(a, Offsets::new(&[c, r], vec![1, c as i64], 0))
}

fn scalar_input(t: Option<Option<&Tensor>>) -> Option<f32> {
    t.flatten().and_then(|t| t.data.first().copied())
}

/// What an evaluation function sees of a node.
pub(crate) struct EvalCx<'a> {
    pub kind: OpKind,
    /// The op's name, for messages.
    pub op: &'static str,
    pub a: Attrs<'a>,
    /// Input values, `None` for an omitted optional input.
    pub ins: &'a [Option<&'a Tensor>],
    /// Output types.
    pub out: &'a [TensorType],
    /// Input 0 (every op has it).
    pub x: &'a Tensor,
    /// Shape of output 0.
    pub oshape: &'a [usize],
}

impl<'a> EvalCx<'a> {
    /// Input `i`, which must be present.
    pub fn get(&self, i: usize) -> Result<&'a Tensor, String> {
        self.ins
            .get(i)
            .copied()
            .flatten()
            .ok_or_else(|| format!("{} needs input {i}", self.op))
    }

    /// `f` on every value of input 0 (a unary elementwise op).
    pub fn map(&self, f: impl Fn(f32) -> f32) -> Result<Vec<Vec<f32>>, String> {
        Ok(vec![self.x.data.iter().map(|&v| f(v)).collect()])
    }

    /// `f` on inputs 0 and 1 broadcast to the output shape (a binary elementwise op).
    pub fn zip(&self, f: impl Fn(f32, f32) -> f32) -> Result<Vec<Vec<f32>>, String> {
        let xa = bcast_to(self.x, self.oshape)?;
        let ya = bcast_to(self.get(1)?, self.oshape)?;
        Ok(vec![xa.iter().zip(&ya).map(|(&p, &q)| f(p, q)).collect()])
    }
}

/// Evaluates one node on the given inputs (`None` for an omitted optional one): its
/// output types are inferred, and its outputs rounded to them. The ONNX loader folds
/// constant subgraphs with this.
pub(crate) fn eval_one(node: &Node, ins: &[Option<&Tensor>]) -> Result<Vec<Tensor>, String> {
    let kind = node
        .kind()
        .ok_or_else(|| crate::spec::unknown_op(&node.op, &node.name))?;
    let tys: Vec<Option<TensorType>> = ins.iter().map(|t| t.map(Tensor::ty)).collect();
    let out_types = crate::infer::infer(kind, node, &tys)?;
    let outs = eval_node(kind, node, ins, &out_types)?;
    out_types
        .into_iter()
        .zip(outs)
        .map(|(ty, data)| Tensor::new(ty.dtype, ty.shape, data))
        .collect()
}

/// Computes a node's outputs (unrounded; the caller rounds to the output dtypes).
fn eval_node(
    kind: OpKind,
    node: &Node,
    ins: &[Option<&Tensor>],
    out: &[TensorType],
) -> Result<Vec<Vec<f32>>, String> {
    let op = kind.name();
    let x = ins
        .first()
        .copied()
        .flatten()
        .ok_or_else(|| format!("{op} needs input 0"))?;
    let out0 = out.first().ok_or_else(internal)?;
    let cx = EvalCx {
        kind,
        op,
        a: Attrs(&node.attrs),
        ins,
        out,
        x,
        oshape: out0.shape.as_slice(),
    };
    (kind.spec().eval)(&cx)
}

/// Gelu.
pub(crate) fn gelu_op(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let a = &cx.a;
    let tanh = a.opt_str("approximate")? == Some("tanh");
    cx.map(|v| gelu(v, tanh))
}

/// Max, Min.
pub(crate) fn extremum(cx: &EvalCx, is_max: bool) -> Result<Vec<Vec<f32>>, String> {
    let (x, oshape) = (cx.x, cx.oshape);
    let mut acc = bcast_to(x, oshape)?;
    for i in 1..cx.ins.len() {
        let y = bcast_to(cx.get(i)?, oshape)?;
        for (p, q) in acc.iter_mut().zip(y) {
            // NaN propagates, as in numpy's maximum/minimum.
            *p = if p.is_nan() || q.is_nan() {
                f32::NAN
            } else if is_max == (q > *p) {
                q
            } else {
                *p
            };
        }
    }
    Ok(vec![acc])
}

/// Where.
pub(crate) fn where_op(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, oshape) = (cx.x, cx.oshape);
    let c = bcast_to(x, oshape)?;
    let t = bcast_to(cx.get(1)?, oshape)?;
    let f = bcast_to(cx.get(2)?, oshape)?;
    Ok(vec![c
        .iter()
        .zip(t.iter().zip(&f))
        .map(|(&c, (&t, &f))| if c != 0.0 { t } else { f })
        .collect()])
}

/// Clip.
pub(crate) fn clip(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (a, ins) = (&cx.a, cx.ins);
    let lo = scalar_input(ins.get(1).copied())
        .or(a.opt_float("min")?)
        .unwrap_or(f32::NEG_INFINITY);
    let hi = scalar_input(ins.get(2).copied())
        .or(a.opt_float("max")?)
        .unwrap_or(f32::INFINITY);
    cx.map(|v| if v.is_nan() { v } else { v.max(lo).min(hi) })
}

/// Softmax.
pub(crate) fn softmax(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a) = (cx.x, &cx.a);
    let axis = norm_axis(a.int("axis", -1)?, x.shape.len())?;
    Ok(vec![map_lanes(&x.data, &x.shape, axis, |lane| {
        let m = lane.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        let mut s = 0.0f32;
        for v in lane.iter_mut() {
            *v = (*v - m).exp();
            s += *v;
        }
        for v in lane.iter_mut() {
            *v /= s;
        }
    })?])
}

/// CumSum.
pub(crate) fn cumsum(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a) = (cx.x, &cx.a);
    let axis = norm_axis(a.int("axis", 0)?, x.shape.len())?;
    let exclusive = a.flag("exclusive", false)?;
    let reverse = a.flag("reverse", false)?;
    Ok(vec![map_lanes(&x.data, &x.shape, axis, |lane| {
        let mut acc = 0.0f32;
        let mut step = |v: &mut f32| {
            let before = acc;
            acc += *v;
            *v = if exclusive { before } else { acc };
        };
        if reverse {
            lane.iter_mut().rev().for_each(&mut step);
        } else {
            lane.iter_mut().for_each(&mut step);
        }
    })?])
}

/// MatMul.
pub(crate) fn matmul(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, oshape) = (cx.x, cx.oshape);
    let y = cx.get(1)?;
    let (_, batch, m, k, n) = matmul_shapes(&x.shape, &y.shape)?;
    let a_batch = x
        .shape
        .get(..x.shape.len().saturating_sub(2))
        .unwrap_or(&[]);
    let b_batch = y
        .shape
        .get(..y.shape.len().saturating_sub(2))
        .unwrap_or(&[]);
    let a_off = Offsets::new(&batch, broadcast_strides(a_batch, &batch, m * k), 0);
    let b_off = Offsets::new(&batch, broadcast_strides(b_batch, &batch, k * n), 0);
    let mut res = Vec::with_capacity(numel(oshape));
    for (ao, bo) in a_off.zip(b_off) {
        let am = chunk(&x.data, ao as usize, m * k)?;
        let bm = chunk(&y.data, bo as usize, k * n)?;
        res.extend(matmul_2d(am, bm, m, k, n));
    }
    Ok(vec![res])
}

/// Gemm.
pub(crate) fn gemm(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a, ins) = (cx.x, &cx.a, cx.ins);
    let y = cx.get(1)?;
    let (m, k, _, n) = crate::ops::gemm_dims(&x.ty(), &y.ty(), a)?;
    let am = if a.flag("transA", false)? {
        transpose_2d(&x.data, k, m)?
    } else {
        x.data.clone()
    };
    let bm = if a.flag("transB", false)? {
        transpose_2d(&y.data, n, k)?
    } else {
        y.data.clone()
    };
    let alpha = a.float("alpha", 1.0)?;
    let beta = a.float("beta", 1.0)?;
    let mut res = matmul_2d(&am, &bm, m, k, n);
    for v in res.iter_mut() {
        *v *= alpha;
    }
    if let Some(Some(c)) = ins.get(2) {
        let cb = bcast_to(c, &[m, n])?;
        for (v, cv) in res.iter_mut().zip(cb) {
            *v += beta * cv;
        }
    }
    Ok(vec![res])
}

/// LayerNormalization, SimplifiedLayerNormalization.
pub(crate) fn layer_norm(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a, ins) = (cx.x, &cx.a, cx.ins);
    let axis = norm_axis(a.int("axis", -1)?, x.shape.len())?;
    let eps = a.float("epsilon", 1e-5)?;
    let norm_shape = x.shape.get(axis..).unwrap_or(&[]);
    let inner = numel(norm_shape);
    let scale = bcast_to(cx.get(1)?, norm_shape)?;
    let bias = match ins.get(2).copied().flatten() {
        Some(b) => Some(bcast_to(b, norm_shape)?),
        None => None,
    };
    let rms = cx.kind == OpKind::SimplifiedLayerNormalization;
    let mut res = Vec::with_capacity(x.data.len());
    let (mut means, mut invs) = (Vec::new(), Vec::new());
    if inner > 0 {
        for row in x.data.chunks_exact(inner) {
            let nf = inner as f32;
            let mean = if rms {
                0.0
            } else {
                row.iter().sum::<f32>() / nf
            };
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / nf;
            let inv = 1.0 / (var + eps).sqrt();
            means.push(mean);
            invs.push(inv);
            for (j, (&v, &s)) in row.iter().zip(&scale).enumerate() {
                let b = bias.as_ref().and_then(|b| b.get(j)).copied().unwrap_or(0.0);
                res.push((v - mean) * inv * s + b);
            }
        }
    }
    let mut outs = vec![res, means, invs];
    outs.truncate(cx.out.len().max(1));
    Ok(outs)
}

/// ReduceSum, ReduceMean, ReduceMax.
pub(crate) fn reduce(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a) = (cx.x, &cx.a);
    let mask = reduce_mask(x.shape.len(), a.opt_ints("axes")?)?;
    let kshape: Vec<usize> = x
        .shape
        .iter()
        .zip(&mask)
        .map(|(&d, &m)| if m { 1 } else { d })
        .collect();
    let ks = strides(&kshape);
    let st: Vec<i64> = ks
        .iter()
        .zip(&mask)
        .map(|(&s, &m)| if m { 0 } else { s as i64 })
        .collect();
    let n_out = numel(&kshape);
    let slots = || Offsets::new(&x.shape, st.clone(), 0);
    let fold = |init: f32, f: &dyn Fn(&mut f32, f32)| -> Result<Vec<f32>, String> {
        let mut acc = vec![init; n_out];
        for (&v, o) in x.data.iter().zip(slots()) {
            f(acc.get_mut(o as usize).ok_or_else(internal)?, v);
        }
        Ok(acc)
    };
    let max = |slot: &mut f32, v: f32| {
        if v.is_nan() || v > *slot {
            *slot = v;
        }
    };
    let acc = match cx.kind {
        OpKind::ReduceMax => fold(f32::NEG_INFINITY, &max)?,
        OpKind::ReduceMin => fold(f32::INFINITY, &|slot, v| {
            if v.is_nan() || v < *slot {
                *slot = v;
            }
        })?,
        OpKind::ReduceProd => fold(1.0, &|slot, v| *slot *= v)?,
        OpKind::ReduceL2 => fold(0.0, &|slot, v| *slot += v * v)?
            .into_iter()
            .map(f32::sqrt)
            .collect(),
        OpKind::ReduceLogSumExp => {
            // Stabilised by each slot's maximum: m + ln(sum(exp(v - m))).
            let m = fold(f32::NEG_INFINITY, &max)?;
            let mut acc = vec![0.0f32; n_out];
            for (&v, o) in x.data.iter().zip(slots()) {
                let mo = *m.get(o as usize).ok_or_else(internal)?;
                let slot = acc.get_mut(o as usize).ok_or_else(internal)?;
                *slot += if mo.is_infinite() {
                    v.exp()
                } else {
                    (v - mo).exp()
                };
            }
            acc.iter()
                .zip(&m)
                .map(|(&s, &mo)| {
                    if mo.is_infinite() {
                        s.ln()
                    } else {
                        mo + s.ln()
                    }
                })
                .collect()
        }
        _ => {
            let mut acc = fold(0.0, &|slot, v| *slot += v)?;
            if cx.kind == OpKind::ReduceMean && n_out > 0 {
                let count = (x.data.len() / n_out) as f32;
                for v in acc.iter_mut() {
                    *v /= count;
                }
            }
            acc
        }
    };
    Ok(vec![acc])
}

/// ArgMax, ArgMin.
pub(crate) fn arg_reduce(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a) = (cx.x, &cx.a);
    let axis = norm_axis(a.int("axis", 0)?, x.shape.len())?;
    let last = a.flag("select_last_index", false)?;
    let is_max = cx.kind == OpKind::ArgMax;
    let (outer, dim, inner) = lanes(&x.shape, axis);
    let mut res = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let mut best: Option<(usize, f32)> = None;
            for j in 0..dim {
                let v = *x.data.get((o * dim + j) * inner + i).ok_or_else(internal)?;
                let better = match best {
                    None => true,
                    // NaN wins, as in numpy; the first NaN stays.
                    Some((_, b)) if b.is_nan() => false,
                    Some(_) if v.is_nan() => true,
                    Some((_, b)) => {
                        let strictly = if is_max { v > b } else { v < b };
                        strictly || (last && v == b)
                    }
                };
                if better {
                    best = Some((j, v));
                }
            }
            res.push(best.map_or(0.0, |(j, _)| j as f32));
        }
    }
    Ok(vec![res])
}

/// Sum, Mean (variadic, broadcasting).
pub(crate) fn sum_mean(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let mut acc = bcast_to(cx.x, cx.oshape)?;
    for i in 1..cx.ins.len() {
        for (p, q) in acc.iter_mut().zip(bcast_to(cx.get(i)?, cx.oshape)?) {
            *p += q;
        }
    }
    if cx.kind == OpKind::Mean {
        let n = cx.ins.len() as f32;
        acc.iter_mut().for_each(|v| *v /= n);
    }
    Ok(vec![acc])
}

/// Mod: the remainder with the divisor's sign (integers), or C's fmod (`fmod = 1`).
pub(crate) fn modulo(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let fmod = cx.a.flag("fmod", false)?;
    cx.zip(|p, q| {
        let r = p % q;
        if !fmod && r != 0.0 && (r < 0.0) != (q < 0.0) {
            r + q
        } else {
            r
        }
    })
}

/// IsInf.
pub(crate) fn is_inf(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let neg = cx.a.flag("detect_negative", true)?;
    let pos = cx.a.flag("detect_positive", true)?;
    cx.map(|v| {
        let hit = (v == f32::INFINITY && pos) || (v == f32::NEG_INFINITY && neg);
        if hit {
            1.0
        } else {
            0.0
        }
    })
}

/// HardSigmoid.
pub(crate) fn hard_sigmoid(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let alpha = cx.a.float("alpha", 0.2)?;
    let beta = cx.a.float("beta", 0.5)?;
    cx.map(|v| (alpha * v + beta).clamp(0.0, 1.0))
}

/// LeakyRelu.
pub(crate) fn leaky_relu(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let alpha = cx.a.float("alpha", 0.01)?;
    cx.map(|v| if v < 0.0 { alpha * v } else { v })
}

/// Elu.
pub(crate) fn elu(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let alpha = cx.a.float("alpha", 1.0)?;
    cx.map(|v| if v < 0.0 { alpha * v.exp_m1() } else { v })
}

/// Selu.
pub(crate) fn selu(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let alpha = cx.a.float("alpha", 1.673_263_2)?;
    let gamma = cx.a.float("gamma", 1.050_701)?;
    cx.map(|v| gamma * if v <= 0.0 { alpha * v.exp_m1() } else { v })
}

/// Celu.
pub(crate) fn celu(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let alpha = cx.a.float("alpha", 1.0)?;
    cx.map(|v| v.max(0.0) + (alpha * (v / alpha).exp_m1()).min(0.0))
}

/// ThresholdedRelu.
pub(crate) fn thresholded_relu(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let alpha = cx.a.float("alpha", 1.0)?;
    cx.map(|v| if v > alpha { v } else { 0.0 })
}

/// Shrink.
pub(crate) fn shrink(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let lambd = cx.a.float("lambd", 0.5)?;
    let bias = cx.a.float("bias", 0.0)?;
    cx.map(|v| {
        if v < -lambd {
            v + bias
        } else if v > lambd {
            v - bias
        } else {
            0.0
        }
    })
}

/// Softplus, `ln(1 + e^x)`, written to stay finite for large `|x|`.
pub(crate) fn softplus(x: f32) -> f32 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

/// Swish (Silu): `x sigmoid(alpha x)`, alpha 1 by default.
pub(crate) fn swish(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let alpha = cx.a.float("alpha", 1.0)?;
    cx.map(|v| v * sigmoid(alpha * v))
}

/// SwiGLU: `A sigmoid(alpha A) B`, computed in f32 and rounded once, as every node is.
pub(crate) fn swiglu(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let alpha = cx.a.float("alpha", 1.0)?;
    cx.zip(|a, b| a * sigmoid(alpha * a) * b)
}

/// Mish: `x tanh(softplus(x))`.
pub(crate) fn mish(x: f32) -> f32 {
    x * softplus(x).tanh()
}

/// Hardmax: a one-hot of the first maximum of each lane (a lane of NaNs has none).
pub(crate) fn hardmax(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a) = (cx.x, &cx.a);
    let axis = norm_axis(a.int("axis", -1)?, x.shape.len())?;
    Ok(vec![map_lanes(&x.data, &x.shape, axis, |lane| {
        let m = lane.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        let first = lane.iter().position(|&v| v == m);
        for (i, v) in lane.iter_mut().enumerate() {
            *v = if Some(i) == first { 1.0 } else { 0.0 };
        }
    })?])
}

/// LogSoftmax.
pub(crate) fn log_softmax(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a) = (cx.x, &cx.a);
    let axis = norm_axis(a.int("axis", -1)?, x.shape.len())?;
    Ok(vec![map_lanes(&x.data, &x.shape, axis, |lane| {
        let m = lane.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        let s: f32 = lane.iter().map(|&v| (v - m).exp()).sum();
        let ls = s.ln();
        for v in lane.iter_mut() {
            *v = *v - m - ls;
        }
    })?])
}

/// Transpose.
pub(crate) fn transpose(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a, oshape) = (cx.x, &cx.a, cx.oshape);
    let perm = perm_of(x.shape.len(), a.opt_ints("perm")?)?;
    let st = strides(&x.shape);
    let pst: Vec<i64> = perm
        .iter()
        .map(|&p| st.get(p).copied().unwrap_or(0) as i64)
        .collect();
    Ok(vec![gather_offsets(&x.data, Offsets::new(oshape, pst, 0))?])
}

/// Reshape, Flatten, Squeeze, Unsqueeze.
pub(crate) fn same_data(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let x = cx.x;
    Ok(vec![x.data.clone()])
}

/// Expand.
pub(crate) fn expand(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, oshape) = (cx.x, cx.oshape);
    Ok(vec![bcast_to(x, oshape)?])
}

/// Slice.
pub(crate) fn slice(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a, oshape) = (cx.x, &cx.a, cx.oshape);
    let plan = slice_plan(&x.shape, a)?;
    let st = strides(&x.shape);
    let base: i64 = plan.iter().zip(&st).map(|(p, &s)| p.0 * s as i64).sum();
    let pst: Vec<i64> = plan.iter().zip(&st).map(|(p, &s)| p.1 * s as i64).collect();
    Ok(vec![gather_offsets(
        &x.data,
        Offsets::new(oshape, pst, base),
    )?])
}

/// Concat.
pub(crate) fn concat(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a, oshape) = (cx.x, &cx.a, cx.oshape);
    let axis = norm_axis(a.int("axis", 0)?, x.shape.len())?;
    let outer = numel(x.shape.get(..axis).unwrap_or(&[]));
    let ts: Vec<&Tensor> = (0..cx.ins.len())
        .map(|i| cx.get(i))
        .collect::<Result<_, _>>()?;
    let mut res = Vec::with_capacity(numel(oshape));
    for o in 0..outer {
        for t in &ts {
            let c = numel(t.shape.get(axis..).unwrap_or(&[]));
            res.extend_from_slice(chunk(&t.data, o * c, c)?);
        }
    }
    Ok(vec![res])
}

/// Split.
pub(crate) fn split(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a, out) = (cx.x, &cx.a, cx.out);
    let axis = norm_axis(a.int("axis", 0)?, x.shape.len())?;
    let (outer, dim, inner) = lanes(&x.shape, axis);
    let sizes = split_sizes(dim, out.len(), a.opt_ints("split")?)?;
    let mut res = Vec::with_capacity(sizes.len());
    let mut off = 0;
    for s in sizes {
        let mut part = Vec::with_capacity(outer * s * inner);
        for o in 0..outer {
            part.extend_from_slice(chunk(&x.data, (o * dim + off) * inner, s * inner)?);
        }
        off += s;
        res.push(part);
    }
    Ok(res)
}

/// Gather.
pub(crate) fn gather(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a, oshape) = (cx.x, &cx.a, cx.oshape);
    let idx = cx.get(1)?;
    let axis = norm_axis(a.int("axis", 0)?, x.shape.len())?;
    let (outer, dim, inner) = lanes(&x.shape, axis);
    let mut res = Vec::with_capacity(numel(oshape));
    for o in 0..outer {
        for &iv in &idx.data {
            let k = iv as i64;
            let k = if k < 0 { k + dim as i64 } else { k };
            if k < 0 || k >= dim as i64 {
                return Err(format!(
                    "Gather index {iv} is out of range for an axis of size {dim}"
                ));
            }
            res.extend_from_slice(chunk(&x.data, (o * dim + k as usize) * inner, inner)?);
        }
    }
    Ok(vec![res])
}

/// Trilu.
pub(crate) fn trilu(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a) = (cx.x, &cx.a);
    let upper = a.flag("upper", true)?;
    let k = a.int("k", 0)?;
    let r = x.shape.len();
    let rows = x.shape.get(r.wrapping_sub(2)).copied().unwrap_or(1).max(1);
    let cols = x.shape.get(r.wrapping_sub(1)).copied().unwrap_or(1).max(1);
    Ok(vec![x
        .data
        .iter()
        .enumerate()
        .map(|(f, &v)| {
            let i = ((f / cols) % rows) as i64;
            let j = (f % cols) as i64;
            let keep = if upper { j - i >= k } else { j - i <= k };
            if keep {
                v
            } else {
                0.0
            }
        })
        .collect()])
}

/// Conv.
pub(crate) fn conv(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a, ins) = (cx.x, &cx.a, cx.ins);
    let w = cx.get(1)?;
    let p = conv_plan(&x.shape, &w.shape, a)?;
    let bias = ins.get(2).copied().flatten();
    let (cg, mg) = (p.c / p.group, p.m / p.group);
    let mut res = Vec::with_capacity(p.n * p.m * p.l_out);
    for b in 0..p.n {
        for oc in 0..p.m {
            let g = oc / mg;
            let b0 = match bias {
                Some(t) => *t.data.get(oc).ok_or_else(internal)?,
                None => 0.0,
            };
            for t in 0..p.l_out {
                let mut acc = 0.0f32;
                for ic in 0..cg {
                    let xrow = chunk(&x.data, (b * p.c + g * cg + ic) * p.l, p.l)?;
                    let wrow = chunk(&w.data, (oc * cg + ic) * p.k, p.k)?;
                    for (j, &wv) in wrow.iter().enumerate() {
                        let pos = t * p.stride + j * p.dilation;
                        if pos >= p.pad_begin {
                            if let Some(&xv) = xrow.get(pos - p.pad_begin) {
                                acc += xv * wv;
                            }
                        }
                    }
                }
                res.push(acc + b0);
            }
        }
    }
    Ok(vec![res])
}

/// Folds `v` into a running maximum; NaN wins, as in Max.
fn fold_max(slot: &mut f32, v: f32) {
    if v.is_nan() || v > *slot {
        *slot = v;
    }
}

/// `s^(1/p)`, with the exact forms for the common exponents.
fn lp_root(s: f32, p: u32) -> f32 {
    match p {
        1 => s,
        2 => s.sqrt(),
        _ => s.powf(1.0 / p as f32),
    }
}

/// Pools `data` of `shape` along `axis` alone: each output position takes the maximum or
/// the sum of the input elements its taps read. A window is a box, so pooling one axis
/// after another gives the whole window's maximum or sum.
fn pool_along(
    data: &[f32],
    shape: &[usize],
    axis: usize,
    ax: &PoolAxis,
    max: bool,
) -> Result<(Vec<f32>, Vec<usize>), String> {
    let (outer, dim, inner) = lanes(shape, axis);
    let init = if max { f32::NEG_INFINITY } else { 0.0 };
    let mut out = vec![init; outer * ax.output * inner];
    for o in 0..outer {
        for t in 0..ax.output {
            let dst = (o * ax.output + t) * inner;
            for j in 0..ax.kernel {
                let Some(src) = ax.source(t, j) else {
                    continue;
                };
                let row = chunk(data, (o * dim + src) * inner, inner)?;
                let slots = out.get_mut(dst..dst + inner).ok_or_else(internal)?;
                for (slot, &v) in slots.iter_mut().zip(row) {
                    if max {
                        fold_max(slot, v);
                    } else {
                        *slot += v;
                    }
                }
            }
        }
    }
    let mut out_shape = shape.to_vec();
    *out_shape.get_mut(axis).ok_or_else(internal)? = ax.output;
    Ok((out, out_shape))
}

/// MaxPool, AveragePool, LpPool.
pub(crate) fn pool(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let x = cx.x;
    let plan = pool_plan(crate::infer::pool_kind(cx.kind), &x.shape, cx.a.0)?;
    let max = plan.kind == PoolKind::Max;
    let mut data = match plan.kind {
        PoolKind::Lp => x.data.iter().map(|v| v.abs().powi(plan.p as i32)).collect(),
        _ => x.data.clone(),
    };
    let mut shape = x.shape.clone();
    for (i, ax) in plan.axes.iter().enumerate() {
        (data, shape) = pool_along(&data, &shape, 2 + i, ax, max)?;
    }
    match plan.kind {
        PoolKind::Max => {}
        PoolKind::Lp => data.iter_mut().for_each(|v| *v = lp_root(*v, plan.p)),
        PoolKind::Average => {
            let divisors = plan.divisors();
            for (v, &d) in data.iter_mut().zip(divisors.iter().cycle()) {
                *v /= d as f32;
            }
        }
    }
    Ok(vec![data])
}

/// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: one value per (n, c) from all its
/// spatial positions.
pub(crate) fn global_pool(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let x = cx.x;
    let rows = numel(x.shape.get(..2).unwrap_or(&[]));
    let len = numel(x.shape.get(2..).unwrap_or(&[]));
    let kind = crate::infer::pool_kind(cx.kind);
    // Only GlobalLpPool has an exponent.
    let p = match kind {
        PoolKind::Lp => crate::ops::lp_exponent(&cx.a)?,
        _ => 1,
    };
    let mut out = Vec::with_capacity(rows);
    for r in 0..rows {
        let row = chunk(&x.data, r * len, len)?;
        out.push(match kind {
            PoolKind::Max => row.iter().fold(f32::NEG_INFINITY, |mut m, &v| {
                fold_max(&mut m, v);
                m
            }),
            PoolKind::Average => row.iter().sum::<f32>() / len as f32,
            PoolKind::Lp => lp_root(row.iter().map(|v| v.abs().powi(p as i32)).sum(), p),
        });
    }
    Ok(vec![out])
}

/// TopK.
pub(crate) fn topk(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a) = (cx.x, &cx.a);
    let axis = norm_axis(a.int("axis", -1)?, x.shape.len())?;
    let largest = a.flag("largest", true)?;
    let k = usize::try_from(a.int("k", 0)?).map_err(|_| internal())?;
    let (outer, dim, inner) = lanes(&x.shape, axis);
    let n = outer * k * inner;
    let (mut vals, mut idxs) = (vec![0.0f32; n], vec![0.0f32; n]);
    let mut order: Vec<usize> = Vec::with_capacity(dim);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| x.data.get((o * dim + j) * inner + i).copied();
            order.clear();
            order.extend(0..dim);
            // NaN ranks above every number; equal values keep index order.
            let key = |j: usize| at(j).unwrap_or(f32::NAN);
            order.sort_by(|&p, &q| {
                let (u, v) = (key(p), key(q));
                let c = match (u.is_nan(), v.is_nan()) {
                    (true, true) => std::cmp::Ordering::Equal,
                    (true, false) => std::cmp::Ordering::Greater,
                    (false, true) => std::cmp::Ordering::Less,
                    _ => u.partial_cmp(&v).unwrap_or(std::cmp::Ordering::Equal),
                };
                let c = if largest { c.reverse() } else { c };
                c.then(p.cmp(&q))
            });
            for (r, &j) in order.iter().take(k).enumerate() {
                let dst = (o * k + r) * inner + i;
                *vals.get_mut(dst).ok_or_else(internal)? = key(j);
                *idxs.get_mut(dst).ok_or_else(internal)? = j as f32;
            }
        }
    }
    Ok(vec![vals, idxs])
}

/// Attention's sliding window (opset 25) from a node's attributes: how many keys before
/// and after its own position a query sees, `None` for no limit (the attributes' -1).
pub fn attention_window(
    attrs: &BTreeMap<String, crate::ir::AttrValue>,
) -> Result<(Option<usize>, Option<usize>), String> {
    let a = Attrs(attrs);
    let side = |name: &str| -> Result<Option<usize>, String> {
        match a.int(name, -1)? {
            -1 => Ok(None),
            w if w >= 0 => Ok(Some(w as usize)),
            w => Err(format!(
                "{name} must be -1 (no limit) or at least 0, got {w}"
            )),
        }
    };
    Ok((side("left_window_size")?, side("right_window_size")?))
}

/// Whether key `j` is inside the sliding window of the query at position `at` (its row
/// plus the keys before its block: the past, or `nonpad_kv_seqlen - Sq`, which may be
/// negative).
pub fn in_window(at: i64, j: i64, left: Option<usize>, right: Option<usize>) -> bool {
    left.is_none_or(|l| j + l as i64 >= at) && right.is_none_or(|r| j <= at + r as i64)
}

/// Attention (ONNX opset 23, as ONNX's reference implementation computes it): 3-D inputs
/// split into heads, past keys and values prepended, a boolean (true attends) or additive
/// mask whose last axis may be short (the rest masked), a causal mask aligned to the end
/// of the keys, a sliding window (opset 25) aligned the same way, an external cache's
/// valid keys per batch (opset 24's `nonpad_kv_seqlen`, which also aligns the causal mask
/// and the window to the last valid key), softcap before the mask,
/// fully masked rows giving zeros. Outputs: Y, the
/// present key and value, and the QK scores chosen by `qk_matmul_output_mode` (0, 1:
/// scaled and softcapped; 2: plus the mask; 3: after the softmax).
pub(crate) fn attention(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a) = (cx.x, &cx.a);
    let (kt, vt) = (cx.get(1)?, cx.get(2)?);
    let opt = |i: usize| cx.ins.get(i).copied().flatten();
    let past = match (opt(4), opt(5)) {
        (Some(pk), Some(pv)) => Some((pk, pv)),
        _ => None,
    };
    let s = attention_shapes(
        &x.shape,
        &kt.shape,
        &vt.shape,
        past.map(|(k, v)| (k.shape.as_slice(), v.shape.as_slice())),
        (a.opt_int("q_num_heads")?, a.opt_int("kv_num_heads")?),
    )?;
    let causal = a.flag("is_causal", false)?;
    let (left, right) = attention_window(a.0)?;
    // Opset 24's external cache: the number of valid keys of each batch (its shape and the
    // absence of a past were checked by inference).
    let nonpad = opt(6);
    let scale = match a.opt_float("scale")? {
        Some(v) => v,
        None => 1.0 / (s.d as f32).sqrt(),
    };
    let cap = a.float("softcap", 0.0)?;
    let mode = a.int("qk_matmul_output_mode", 0)?;
    let t = s.total();
    let q = heads_first(x, s.b, s.sq, s.hq, s.d, s.three_d)?;
    let knew = heads_first(kt, s.b, s.skv, s.hkv, s.d, s.three_d)?;
    let vnew = heads_first(vt, s.b, s.skv, s.hkv, s.dv, s.three_d)?;
    let present = |new: &[f32], old: Option<&Tensor>, d: usize| -> Result<Vec<f32>, String> {
        let mut out = Vec::with_capacity(s.b * s.hkv * t * d);
        for bh in 0..s.b * s.hkv {
            if let Some(p) = old {
                out.extend_from_slice(chunk(&p.data, bh * s.past * d, s.past * d)?);
            }
            out.extend_from_slice(chunk(new, bh * s.skv * d, s.skv * d)?);
        }
        Ok(out)
    };
    let pk = present(&knew, past.map(|p| p.0), s.d)?;
    let pv = present(&vnew, past.map(|p| p.1), s.dv)?;
    // The mask, right-aligned to [B, Hq, Sq, T].
    let mask = opt(3);
    let mshape: Vec<usize> = match mask {
        Some(m) => {
            let mut v = vec![1usize; 4usize.saturating_sub(m.shape.len())];
            v.extend(&m.shape);
            v
        }
        None => vec![1; 4],
    };
    let mstr = crate::ops::strides(&mshape);
    let bias = |b: usize, h: usize, i: usize, j: usize| -> f32 {
        let mut v = 0.0f32;
        if let Some(m) = mask {
            let pick = |c: usize, dim: usize| if mshape[dim] == 1 { 0 } else { c };
            let last = mshape[3];
            let value = if last != 1 && j >= last {
                None
            } else {
                let at = pick(b, 0) * mstr[0]
                    + pick(h, 1) * mstr[1]
                    + pick(i, 2) * mstr[2]
                    + pick(j, 3) * mstr[3];
                m.data.get(at).copied()
            };
            v = match (value, m.dtype == crate::DType::Bool) {
                (Some(x), true) if x != 0.0 => 0.0,
                (Some(x), false) => x,
                _ => f32::NEG_INFINITY,
            };
        }
        // The query's position: after the past keys, or, with an external cache, the last
        // query at the batch's last valid key.
        let at = match nonpad {
            Some(n) => i as i64 + n.data[b] as i64 - s.sq as i64,
            None => (i + s.past) as i64,
        };
        let j = j as i64;
        if causal && j > at
            || !in_window(at, j, left, right)
            || nonpad.is_some_and(|n| j >= n.data[b] as i64)
        {
            v = f32::NEG_INFINITY;
        }
        v
    };
    let group = s.hq / s.hkv;
    let mut y = vec![0.0f32; s.b * s.hq * s.sq * s.dv];
    let mut qk_out = Vec::with_capacity(if cx.out.len() > 3 {
        s.b * s.hq * s.sq * t
    } else {
        0
    });
    let mut scores = vec![0.0f32; t];
    let mut biases = vec![0.0f32; t];
    for b in 0..s.b {
        for h in 0..s.hq {
            let kvh = h / group;
            let qm = chunk(&q, (b * s.hq + h) * s.sq * s.d, s.sq * s.d)?;
            let km = chunk(&pk, (b * s.hkv + kvh) * t * s.d, t * s.d)?;
            let vm = chunk(&pv, (b * s.hkv + kvh) * t * s.dv, t * s.dv)?;
            for i in 0..s.sq {
                let qi = chunk(qm, i * s.d, s.d)?;
                for j in 0..t {
                    let kj = chunk(km, j * s.d, s.d)?;
                    let mut sc = qi.iter().zip(kj).map(|(u, v)| u * v).sum::<f32>() * scale;
                    if cap > 0.0 {
                        sc = cap * (sc / cap).tanh();
                    }
                    scores[j] = sc;
                    biases[j] = bias(b, h, i, j);
                }
                let all_masked = biases.iter().all(|&v| v == f32::NEG_INFINITY);
                if cx.out.len() > 3 && mode < 2 {
                    qk_out.extend_from_slice(&scores);
                }
                for (sc, bi) in scores.iter_mut().zip(&biases) {
                    *sc += bi;
                }
                if cx.out.len() > 3 && mode == 2 {
                    qk_out.extend_from_slice(&scores);
                }
                let m = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let m = if m == f32::NEG_INFINITY { 0.0 } else { m };
                let mut sum = 0.0f32;
                for sc in scores.iter_mut() {
                    *sc = (*sc - m).exp();
                    sum += *sc;
                }
                for sc in scores.iter_mut() {
                    *sc = if all_masked || sum == 0.0 {
                        0.0
                    } else {
                        *sc / sum
                    };
                }
                if cx.out.len() > 3 && mode == 3 {
                    qk_out.extend_from_slice(&scores);
                }
                let mut row = vec![0.0f32; s.dv];
                for (j, w) in scores.iter().enumerate() {
                    for (r, &v) in row.iter_mut().zip(chunk(vm, j * s.dv, s.dv)?) {
                        *r += w * v;
                    }
                }
                // Y is [B, Hq, Sq, Dv], or [B, Sq, Hq * Dv] for 3-D inputs.
                let at = if s.three_d {
                    ((b * s.sq + i) * s.hq + h) * s.dv
                } else {
                    ((b * s.hq + h) * s.sq + i) * s.dv
                };
                y.get_mut(at..at + s.dv)
                    .ok_or_else(internal)?
                    .copy_from_slice(&row);
            }
        }
    }
    let outs = vec![y, pk, pv, qk_out];
    Ok(outs.into_iter().take(cx.out.len().max(1)).collect())
}

/// A Q, K or V tensor as `[B, H, S, D]` row-major values (3-D `[B, S, H * D]` is split).
fn heads_first(
    t: &Tensor,
    b: usize,
    seq: usize,
    heads: usize,
    d: usize,
    three_d: bool,
) -> Result<Vec<f32>, String> {
    if !three_d {
        return Ok(t.data.clone());
    }
    let mut out = Vec::with_capacity(t.data.len());
    for bi in 0..b {
        for h in 0..heads {
            for si in 0..seq {
                out.extend_from_slice(chunk(&t.data, ((bi * seq + si) * heads + h) * d, d)?);
            }
        }
    }
    Ok(out)
}

/// An index into an axis of size `dim`, negative counting from the end.
fn axis_index(v: f32, dim: usize, op: &str) -> Result<usize, String> {
    let k = v as i64;
    let k = if k < 0 { k + dim as i64 } else { k };
    usize::try_from(k)
        .ok()
        .filter(|&k| k < dim)
        .ok_or_else(|| format!("{op} index {v} is out of range for an axis of size {dim}"))
}

/// GatherElements.
pub(crate) fn gather_elements(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a) = (cx.x, &cx.a);
    let idx = cx.get(1)?;
    let axis = norm_axis(a.int("axis", 0)?, x.shape.len())?;
    let xs = strides(&x.shape);
    let dim = x.shape.get(axis).copied().unwrap_or(1);
    let mut out = Vec::with_capacity(idx.data.len());
    for (f, &iv) in idx.data.iter().enumerate() {
        let mut rem = f;
        let mut off = 0usize;
        for d in (0..idx.shape.len()).rev() {
            let n = idx.shape.get(d).copied().unwrap_or(1).max(1);
            let c = if d == axis {
                axis_index(iv, dim, "GatherElements")?
            } else {
                rem % n
            };
            rem /= n;
            off += c * xs.get(d).copied().unwrap_or(0);
        }
        out.push(x.data.get(off).copied().ok_or_else(internal)?);
    }
    Ok(vec![out])
}

/// ScatterND.
pub(crate) fn scatter_nd(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let (x, a) = (cx.x, &cx.a);
    let (idx, upd) = (cx.get(1)?, cx.get(2)?);
    let k = idx.shape.last().copied().unwrap_or(1).max(1);
    let slice = numel(x.shape.get(k..).unwrap_or(&[]));
    let xs = strides(&x.shape);
    let reduction = a.opt_str("reduction")?.unwrap_or("none");
    let mut out = x.data.clone();
    for (i, tuple) in idx.data.chunks_exact(k).enumerate() {
        let mut off = 0usize;
        for (d, &v) in tuple.iter().enumerate() {
            let dim = x.shape.get(d).copied().unwrap_or(1);
            off += axis_index(v, dim, "ScatterND")? * xs.get(d).copied().unwrap_or(0);
        }
        let src = chunk(&upd.data, i * slice, slice)?;
        let dst = out.get_mut(off..off + slice).ok_or_else(internal)?;
        for (o, &u) in dst.iter_mut().zip(src) {
            *o = match reduction {
                "add" => *o + u,
                "mul" => *o * u,
                "max" => o.max(u),
                "min" => o.min(u),
                _ => u,
            };
        }
    }
    Ok(vec![out])
}

/// Einsum: every output element sums the product of the operands over the labels not in
/// the output.
pub(crate) fn einsum(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let eq =
        cx.a.opt_str("equation")?
            .ok_or("attribute 'equation' is required")?;
    let ts: Vec<&Tensor> = (0..cx.ins.len())
        .map(|i| cx.get(i))
        .collect::<Result<_, _>>()?;
    let shapes: Vec<&[usize]> = ts.iter().map(|t| t.shape.as_slice()).collect();
    let p = einsum_plan(eq, &shapes)?;
    let nl = p.sizes.len();
    let mut order = p.output.clone();
    order.extend((0..nl).filter(|l| !p.output.contains(l)));
    let size = |l: &usize| p.sizes.get(*l).copied().unwrap_or(1);
    let out_n: usize = p.output.iter().map(size).product();
    let inner_n: usize = order
        .get(p.output.len()..)
        .unwrap_or(&[])
        .iter()
        .map(size)
        .product();
    if (out_n as u64).saturating_mul(inner_n as u64) > MAX_EVAL_WORK {
        return Err(format!(
            "this Einsum takes {out_n} x {inner_n} steps, more than the evaluator's work limit"
        ));
    }
    // Per operand, the stride of each label (0 where an axis of size 1 broadcasts).
    let lstr: Vec<Vec<usize>> = ts
        .iter()
        .zip(&p.operands)
        .map(|(t, labels)| {
            let st = strides(&t.shape);
            let mut v = vec![0usize; nl];
            for (ax, &l) in labels.iter().enumerate() {
                let d = t.shape.get(ax).copied().unwrap_or(1);
                if d == 1 && size(&l) != 1 {
                    continue;
                }
                if let Some(slot) = v.get_mut(l) {
                    *slot += st.get(ax).copied().unwrap_or(0);
                }
            }
            v
        })
        .collect();
    let mut cur = vec![0usize; nl];
    let mut out = Vec::with_capacity(out_n);
    for o in 0..out_n {
        let mut acc = 0.0f32;
        for inner in 0..inner_n {
            let (mut ro, mut ri) = (o, inner);
            for (pos, &l) in order.iter().enumerate().rev() {
                let n = size(&l).max(1);
                let r = if pos >= p.output.len() {
                    &mut ri
                } else {
                    &mut ro
                };
                if let Some(c) = cur.get_mut(l) {
                    *c = *r % n;
                }
                *r /= n;
            }
            let mut prod = 1.0f32;
            for (t, ls) in ts.iter().zip(&lstr) {
                let off: usize = cur.iter().zip(ls).map(|(c, s)| c * s).sum();
                prod *= t.data.get(off).copied().ok_or_else(internal)?;
            }
            acc += prod;
        }
        out.push(acc);
    }
    Ok(vec![out])
}

#[cfg(test)]
mod tests {
    use super::{erf, matmul_2d};

    #[test]
    fn blocked_matmul_has_the_plain_loops_bits() {
        // Sums of mixed magnitudes round differently in any other order, so equal bits
        // mean the same order; NaN, infinities and signed zeros must pass as in the loop.
        let mut state = 7u32;
        let mut next = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let v = (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
            v * [1.0, 1e-3, 1e4, 3.0][(state & 3) as usize]
        };
        let mut cases = 0;
        for (m, k, n) in [
            (1, 1, 1),
            (4, 3, 8),
            (5, 7, 9),
            (8, 16, 16),
            (9, 1, 17),
            (3, 40, 5),
        ] {
            for special in [None, Some(f32::NAN), Some(f32::INFINITY), Some(-0.0)] {
                let mut a: Vec<f32> = (0..m * k).map(|_| next()).collect();
                let b: Vec<f32> = (0..k * n).map(|_| next()).collect();
                if let Some(v) = special {
                    a[m * k / 2] = v;
                }
                let mut want = vec![0.0f32; m * n];
                for i in 0..m {
                    for j in 0..n {
                        for p in 0..k {
                            want[i * n + j] += a[i * k + p] * b[p * n + j];
                        }
                    }
                }
                let got = matmul_2d(&a, &b, m, k, n);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{m}x{k}x{n} with {special:?}");
                cases += 1;
            }
        }
        assert_eq!(cases, 24);
    }

    #[test]
    fn erf_values() {
        // Reference values from the literature (A&S table 7.1).
        for (x, e) in [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.5, 0.999_999_256_901_627_7),
            (-1.0, -0.842_700_792_949_714_9),
        ] {
            assert!((erf(x) - e).abs() < 1e-14, "erf({x}) = {} vs {e}", erf(x));
        }
    }
}
