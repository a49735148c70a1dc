//! Helpers shared by inference (`infer.rs`) and the evaluator (`eval.rs`): typed attribute
//! access, broadcasting, strides and the resolved plans of the ops with structure (slice,
//! reshape, reduce, split, Gemm, MatMul, Conv, Attention).

use std::collections::BTreeMap;

use crate::ir::AttrValue;
use crate::tensor::{numel, TensorType};

/// Typed access to a node's attributes.
pub(crate) struct Attrs<'a>(pub &'a BTreeMap<String, AttrValue>);

impl Attrs<'_> {
    pub fn opt_int(&self, name: &str) -> Result<Option<i64>, String> {
        match self.0.get(name) {
            None => Ok(None),
            Some(AttrValue::Int(v)) => Ok(Some(*v)),
            Some(v) => Err(format!(
                "attribute '{name}' must be an integer, got {}",
                v.kind_name()
            )),
        }
    }
    pub fn int(&self, name: &str, default: i64) -> Result<i64, String> {
        Ok(self.opt_int(name)?.unwrap_or(default))
    }
    pub fn flag(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.opt_int(name)? {
            None => Ok(default),
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            Some(v) => Err(format!("attribute '{name}' must be 0 or 1, got {v}")),
        }
    }
    pub fn opt_float(&self, name: &str) -> Result<Option<f32>, String> {
        match self.0.get(name) {
            None => Ok(None),
            Some(AttrValue::Float(v)) => Ok(Some(*v)),
            Some(AttrValue::Int(v)) => Ok(Some(*v as f32)),
            Some(v) => Err(format!(
                "attribute '{name}' must be a number, got {}",
                v.kind_name()
            )),
        }
    }
    pub fn float(&self, name: &str, default: f32) -> Result<f32, String> {
        Ok(self.opt_float(name)?.unwrap_or(default))
    }
    pub fn opt_ints(&self, name: &str) -> Result<Option<&[i64]>, String> {
        match self.0.get(name) {
            None => Ok(None),
            Some(AttrValue::Ints(v)) => Ok(Some(v)),
            Some(AttrValue::Floats(v)) if v.is_empty() => Ok(Some(&[])),
            Some(v) => Err(format!(
                "attribute '{name}' must be a list of integers, got {}",
                v.kind_name()
            )),
        }
    }
    pub fn ints(&self, name: &str) -> Result<&[i64], String> {
        self.opt_ints(name)?
            .ok_or_else(|| format!("attribute '{name}' is required"))
    }
    pub fn opt_str(&self, name: &str) -> Result<Option<&str>, String> {
        match self.0.get(name) {
            None => Ok(None),
            Some(AttrValue::String(v)) => Ok(Some(v)),
            Some(v) => Err(format!(
                "attribute '{name}' must be a string, got {}",
                v.kind_name()
            )),
        }
    }
}

/// Normalises a possibly negative axis into `0..rank`.
pub(crate) fn norm_axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(format!(
            "axis {axis} is out of range for rank {rank} (allowed {}..={})",
            -r,
            r - 1
        ));
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// Numpy broadcasting of two shapes.
pub(crate) fn broadcast(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for (i, o) in out.iter_mut().enumerate() {
        let da = dim_from_right(a, n - 1 - i);
        let db = dim_from_right(b, n - 1 - i);
        *o = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(format!(
                "shapes {a:?} and {b:?} do not broadcast (dimension {i} of the result: {da} vs {db})"
            ));
        };
    }
    Ok(out)
}

fn dim_from_right(s: &[usize], k: usize) -> usize {
    if k < s.len() {
        s.get(s.len() - 1 - k).copied().unwrap_or(1)
    } else {
        1
    }
}

/// Row-major strides of a shape.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    let mut acc = 1usize;
    for (st, d) in s.iter_mut().zip(shape).rev() {
        *st = acc;
        acc = acc.saturating_mul(*d);
    }
    s
}

/// Strides that read a tensor of shape `from` as if broadcast to `to` (0 on broadcast
/// dimensions), in units of `unit` elements.
pub(crate) fn broadcast_strides(from: &[usize], to: &[usize], unit: usize) -> Vec<i64> {
    let st = strides(from);
    let off = to.len().saturating_sub(from.len());
    (0..to.len())
        .map(|i| {
            if i < off {
                0
            } else {
                let k = i - off;
                match (from.get(k), st.get(k)) {
                    (Some(1), _) | (None, _) | (_, None) => 0,
                    (Some(_), Some(s)) => (*s * unit) as i64,
                }
            }
        })
        .collect()
}

/// Resolved slice: per dimension of the input, (start, step, length).
pub(crate) fn slice_plan(shape: &[usize], a: &Attrs) -> Result<Vec<(i64, i64, usize)>, String> {
    let starts = a.ints("starts")?;
    let ends = a.ints("ends")?;
    if starts.len() != ends.len() {
        return Err(format!(
            "'starts' has {} values but 'ends' has {}",
            starts.len(),
            ends.len()
        ));
    }
    let default_axes: Vec<i64> = (0..starts.len() as i64).collect();
    let axes = a.opt_ints("axes")?.unwrap_or(&default_axes);
    let default_steps = vec![1i64; starts.len()];
    let steps = a.opt_ints("steps")?.unwrap_or(&default_steps);
    if axes.len() != starts.len() || steps.len() != starts.len() {
        return Err("'starts', 'ends', 'axes' and 'steps' must have the same length".into());
    }
    let mut plan: Vec<(i64, i64, usize)> = shape.iter().map(|&d| (0, 1, d)).collect();
    let mut seen = vec![false; shape.len()];
    for (((&s, &e), &ax), &st) in starts.iter().zip(ends).zip(axes).zip(steps) {
        let ax = norm_axis(ax, shape.len())?;
        if std::mem::replace(seen.get_mut(ax).ok_or("bad axis")?, true) {
            return Err(format!("axis {ax} is sliced twice"));
        }
        if st == 0 {
            return Err("a slice step must not be 0".into());
        }
        let dim = shape.get(ax).copied().unwrap_or(0) as i64;
        let fix = |v: i64| if v < 0 { v.saturating_add(dim) } else { v };
        let (s, e) = (fix(s), fix(e));
        // A step longer than the axis selects at most one element; clamping it keeps the
        // offset arithmetic far from overflow without changing the result.
        let st = st.clamp(-dim.max(1), dim.max(1));
        let (start, len) = if st > 0 {
            let s = s.clamp(0, dim);
            let e = e.clamp(0, dim);
            (s, if e > s { (e - s - 1) / st + 1 } else { 0 })
        } else {
            let s = s.clamp(0, (dim - 1).max(0));
            let e = e.clamp(-1, dim - 1);
            (s, if s > e { (s - e - 1) / -st + 1 } else { 0 })
        };
        if let Some(p) = plan.get_mut(ax) {
            *p = (start, st, len as usize);
        }
    }
    Ok(plan)
}

/// Resolved reshape target (ONNX rules: 0 copies the input dimension, one -1 is inferred).
pub(crate) fn reshape_target(input: &[usize], spec: &[i64]) -> Result<Vec<usize>, String> {
    let mut out = Vec::with_capacity(spec.len());
    let mut infer_at = None;
    for (i, &d) in spec.iter().enumerate() {
        match d {
            -1 if infer_at.is_some() => return Err("'shape' may contain -1 only once".into()),
            -1 => {
                infer_at = Some(i);
                out.push(1);
            }
            0 => out.push(*input.get(i).ok_or_else(|| {
                format!(
                    "'shape'[{i}] is 0 (copy the input dimension) but the input has rank {}",
                    input.len()
                )
            })?),
            d if d < 0 => return Err(format!("'shape'[{i}] is {d}; only -1 and 0 are special")),
            d => out.push(usize::try_from(d).map_err(|_| "dimension too large".to_string())?),
        }
    }
    let n_in = numel(input);
    if let Some(i) = infer_at {
        let rest = numel(&out);
        if rest == 0 || n_in % rest != 0 {
            return Err(format!(
                "cannot infer the -1 in {spec:?}: {n_in} elements do not divide by {rest}"
            ));
        }
        if let Some(o) = out.get_mut(i) {
            *o = n_in / rest;
        }
    }
    if numel(&out) != n_in {
        return Err(format!(
            "cannot reshape {input:?} ({n_in} elements) to {out:?} ({} elements)",
            numel(&out)
        ));
    }
    Ok(out)
}

/// Mask of reduced axes (ONNX: no `axes` means all axes).
pub(crate) fn reduce_mask(rank: usize, axes: Option<&[i64]>) -> Result<Vec<bool>, String> {
    let mut mask = vec![axes.is_none(); rank];
    for &a in axes.unwrap_or(&[]) {
        let a = norm_axis(a, rank)?;
        if let Some(m) = mask.get_mut(a) {
            if *m {
                return Err(format!("axis {a} is listed twice"));
            }
            *m = true;
        }
    }
    Ok(mask)
}

/// Checked permutation (default: reverse).
pub(crate) fn perm_of(rank: usize, perm: Option<&[i64]>) -> Result<Vec<usize>, String> {
    let Some(p) = perm else {
        return Ok((0..rank).rev().collect());
    };
    if p.len() != rank {
        return Err(format!(
            "'perm' {p:?} has {} entries, the input has rank {rank}",
            p.len()
        ));
    }
    let mut seen = vec![false; rank];
    let mut out = Vec::with_capacity(rank);
    for &a in p {
        let a = norm_axis(a, rank)?;
        if std::mem::replace(seen.get_mut(a).ok_or("bad axis")?, true) {
            return Err(format!("'perm' {p:?} is not a permutation"));
        }
        out.push(a);
    }
    Ok(out)
}

/// Split sizes along `axis`.
pub(crate) fn split_sizes(
    dim: usize,
    n_out: usize,
    split: Option<&[i64]>,
) -> Result<Vec<usize>, String> {
    match split {
        Some(s) => {
            if s.len() != n_out {
                return Err(format!(
                    "'split' has {} sizes but the node has {n_out} outputs",
                    s.len()
                ));
            }
            let sizes: Vec<usize> = s
                .iter()
                .map(|&v| usize::try_from(v).map_err(|_| format!("'split' size {v} is negative")))
                .collect::<Result<_, _>>()?;
            let total = sizes.iter().fold(0usize, |a, b| a.saturating_add(*b));
            if total != dim {
                return Err(format!(
                    "'split' sizes {s:?} add up to {total}, the axis has {dim}"
                ));
            }
            Ok(sizes)
        }
        None => {
            if n_out == 0 || dim % n_out != 0 {
                return Err(format!(
                    "an axis of {dim} does not split evenly into {n_out} outputs (give 'split')"
                ));
            }
            Ok(vec![dim / n_out; n_out])
        }
    }
}

/// (M, K from A, K from B, N) for Gemm.
pub(crate) fn gemm_dims(
    x: &TensorType,
    y: &TensorType,
    a: &Attrs,
) -> Result<(usize, usize, usize, usize), String> {
    let (&[r0, r1], &[s0, s1]) = (x.shape.as_slice(), y.shape.as_slice()) else {
        return Err(format!(
            "Gemm needs 2-D A and B, got {:?} and {:?}",
            x.shape, y.shape
        ));
    };
    let (m, k) = if a.flag("transA", false)? {
        (r1, r0)
    } else {
        (r0, r1)
    };
    let (k2, n) = if a.flag("transB", false)? {
        (s1, s0)
    } else {
        (s0, s1)
    };
    Ok((m, k, k2, n))
}

/// MatMul shapes: (output shape, batch shape, M, K, N).
#[allow(clippy::type_complexity)]
pub(crate) fn matmul_shapes(
    a: &[usize],
    b: &[usize],
) -> Result<(Vec<usize>, Vec<usize>, usize, usize, usize), String> {
    if a.is_empty() || b.is_empty() {
        return Err(format!(
            "MatMul needs inputs of rank >= 1, got {a:?} and {b:?}"
        ));
    }
    let a2: Vec<usize> = if a.len() == 1 {
        [&[1], a].concat()
    } else {
        a.to_vec()
    };
    let b2: Vec<usize> = if b.len() == 1 {
        [b, &[1]].concat()
    } else {
        b.to_vec()
    };
    let (ab, am) = a2.split_at(a2.len() - 2);
    let (bb, bm) = b2.split_at(b2.len() - 2);
    let (&[m, k], &[k2, n]) = (am, bm) else {
        return Err("MatMul: internal shape error".into());
    };
    if k != k2 {
        return Err(format!(
            "MatMul needs A's last dimension to equal B's {}: A {a:?}, B {b:?} ({k} vs {k2})",
            if b.len() == 1 {
                "only dimension"
            } else {
                "second-to-last"
            }
        ));
    }
    let batch = broadcast(ab, bb).map_err(|e| format!("MatMul batch dimensions: {e}"))?;
    let mut out = batch.clone();
    if a.len() > 1 {
        out.push(m);
    }
    if b.len() > 1 {
        out.push(n);
    }
    Ok((out, batch, m, k, n))
}

/// A resolved 1-D convolution: X [n, c, l], W [m, c / group, k] -> Y [n, m, l_out].
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConvPlan {
    pub n: usize,
    pub c: usize,
    pub l: usize,
    pub m: usize,
    pub k: usize,
    pub group: usize,
    pub pad_begin: usize,
    pub stride: usize,
    pub dilation: usize,
    pub l_out: usize,
}

fn one_positive(a: &Attrs, name: &str) -> Result<usize, String> {
    match a.opt_ints(name)? {
        None => Ok(1),
        Some(&[v]) if v >= 1 => usize::try_from(v).map_err(|_| format!("'{name}' is too large")),
        Some(v) => Err(format!(
            "'{name}' must be one positive integer for a 1-D convolution, got {v:?}"
        )),
    }
}

/// Checks a 1-D (grouped or depthwise) convolution and works out its sizes.
pub(crate) fn conv_plan(x: &[usize], w: &[usize], a: &Attrs) -> Result<ConvPlan, String> {
    let (&[n, c, l], &[m, cg, k]) = (x, w) else {
        return Err(format!(
            "Conv supports 1-D convolution only: X must be [N, C, L] and W [M, C/group, K], got X {x:?} and W {w:?}"
        ));
    };
    let group = a.int("group", 1)?;
    if group < 1 {
        return Err(format!("'group' must be >= 1, got {group}"));
    }
    let group = usize::try_from(group).map_err(|_| "'group' is too large".to_string())?;
    if c % group != 0 || m % group != 0 {
        return Err(format!(
            "'group' {group} must divide the input channels ({c}) and the output channels ({m})"
        ));
    }
    if cg != c / group {
        return Err(format!(
            "W's second dimension must be C / group = {c} / {group} = {}, got {cg}",
            c / group
        ));
    }
    if let Some(ks) = a.opt_ints("kernel_shape")? {
        if ks != [k as i64] {
            return Err(format!(
                "'kernel_shape' {ks:?} does not match W's kernel size {k}"
            ));
        }
    }
    let (pb, pe) = match a.opt_ints("pads")? {
        None => (0, 0),
        Some(&[p0, p1]) if p0 >= 0 && p1 >= 0 => (
            usize::try_from(p0).map_err(|_| "'pads' is too large".to_string())?,
            usize::try_from(p1).map_err(|_| "'pads' is too large".to_string())?,
        ),
        Some(p) => {
            return Err(format!(
                "'pads' must be [begin, end] with both >= 0 for a 1-D convolution, got {p:?}"
            ))
        }
    };
    let stride = one_positive(a, "strides")?;
    let dilation = one_positive(a, "dilations")?;
    if k == 0 {
        return Err("the kernel size (W's last dimension) must be at least 1".into());
    }
    let padded = l.saturating_add(pb).saturating_add(pe);
    let span = dilation.saturating_mul(k - 1).saturating_add(1);
    if span > padded {
        return Err(format!(
            "the kernel spans {span} positions but the padded input has only {padded}"
        ));
    }
    let l_out = (padded - span) / stride + 1;
    Ok(ConvPlan {
        n,
        c,
        l,
        m,
        k,
        group,
        pad_begin: pb,
        stride,
        dilation,
        l_out,
    })
}

/// What a pooling window makes of its elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolKind {
    /// The largest element (MaxPool); padding never wins.
    Max,
    /// The mean (AveragePool); `count_include_pad` decides whether padding counts.
    Average,
    /// `(sum |x|^p)^(1/p)` (LpPool); padding adds nothing.
    Lp,
}

/// One spatial axis of a resolved pooling: the window, the padding after `auto_pad`, and
/// the output size after `ceil_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolAxis {
    /// The input's size along the axis.
    pub input: usize,
    /// Taps of the window along the axis.
    pub kernel: usize,
    /// Positions between the starts of neighbouring windows.
    pub stride: usize,
    /// Positions between neighbouring taps of a window.
    pub dilation: usize,
    /// Padding before the input (explicit, or worked out from `auto_pad`).
    pub pad_begin: usize,
    /// Padding after the input, as the model gives it; `ceil_mode` may let the last
    /// window run past it (see [`PoolAxis::padded_len`]).
    pub pad_end: usize,
    /// The output's size along the axis.
    pub output: usize,
}

impl PoolAxis {
    /// Positions one window covers, first tap to last.
    pub fn span(&self) -> usize {
        self.dilation * (self.kernel - 1) + 1
    }

    /// The length a padded copy of the input needs so every tap of every window lands
    /// inside it: `pad_begin` before the input and the rest after (at least the input).
    pub fn padded_len(&self) -> usize {
        ((self.output - 1) * self.stride + self.span()).max(self.pad_begin + self.input)
    }

    /// The input position tap `j` of output `o` reads, if it reads the input rather than
    /// padding.
    pub fn source(&self, o: usize, j: usize) -> Option<usize> {
        (o * self.stride + j * self.dilation)
            .checked_sub(self.pad_begin)
            .filter(|&i| i < self.input)
    }

    /// Taps of output `o` that read the input.
    pub fn valid_taps(&self, o: usize) -> usize {
        (0..self.kernel)
            .filter(|&j| self.source(o, j).is_some())
            .count()
    }

    /// Taps of output `o` inside the explicitly padded input (what AveragePool divides by
    /// with `count_include_pad = 1`): a tap past `pad_end`, which only `ceil_mode` makes,
    /// does not count.
    pub fn padded_taps(&self, o: usize) -> usize {
        let end = self.pad_begin + self.input + self.pad_end;
        (0..self.kernel)
            .filter(|&j| o * self.stride + j * self.dilation < end)
            .count()
    }
}

/// A resolved pooling of X [n, c, d1, ..., dk] (MaxPool, AveragePool, LpPool), shared by
/// inference, the reference evaluator and the device compiler so all three agree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolPlan {
    /// What a window makes of its elements.
    pub kind: PoolKind,
    /// Batch size.
    pub n: usize,
    /// Channels.
    pub c: usize,
    /// One per spatial axis, in order.
    pub axes: Vec<PoolAxis>,
    /// AveragePool: padding counts towards the divisor.
    pub count_include_pad: bool,
    /// LpPool's exponent.
    pub p: u32,
}

impl PoolPlan {
    /// Y's shape: [n, c, o1, ..., ok].
    pub fn output_shape(&self) -> Vec<usize> {
        [self.n, self.c]
            .into_iter()
            .chain(self.axes.iter().map(|a| a.output))
            .collect()
    }

    /// Taps of one window (the product of the kernel's sizes).
    pub fn taps(&self) -> usize {
        self.axes.iter().map(|a| a.kernel).product()
    }

    /// AveragePool's divisor at each spatial output position, row-major over
    /// [o1, ..., ok]: the window's taps inside the input, or inside the padded input with
    /// `count_include_pad`. Windows are boxes, so it is a product of per-axis counts.
    pub fn divisors(&self) -> Vec<usize> {
        let mut out = vec![1usize];
        for a in &self.axes {
            let counts: Vec<usize> = (0..a.output)
                .map(|o| {
                    if self.count_include_pad {
                        a.padded_taps(o)
                    } else {
                        a.valid_taps(o)
                    }
                })
                .collect();
            out = out
                .iter()
                .flat_map(|&d| counts.iter().map(move |&k| d * k))
                .collect();
        }
        out
    }
}

/// LpPool's and GlobalLpPool's `p` (2 when absent), an integer from 1 to 64.
pub(crate) fn lp_exponent(a: &Attrs) -> Result<u32, String> {
    let p = a.int("p", 2)?;
    u32::try_from(p)
        .ok()
        .filter(|&p| (1..=64).contains(&p))
        .ok_or_else(|| format!("'p' must be an integer from 1 to 64, got {p}"))
}

/// [`lp_exponent`] for a node's attribute map: the check the device lowering of
/// GlobalLpPool shares with the reference.
pub fn lp_pool_exponent(attrs: &BTreeMap<String, AttrValue>) -> Result<u32, String> {
    lp_exponent(&Attrs(attrs))
}

/// Most taps a pooling window may have; a larger one is surely a mistake in the model.
const MAX_POOL_TAPS: usize = 1 << 20;

/// Reads a per-axis list of positive integers (`strides`, `dilations`; 1 each when absent).
fn spatial_ints(a: &Attrs, name: &str, k: usize, min: i64) -> Result<Vec<usize>, String> {
    let Some(v) = a.opt_ints(name)? else {
        return Ok(vec![1; k]);
    };
    if v.len() != k {
        return Err(format!(
            "'{name}' must have one value per spatial axis ({k}), got {v:?}"
        ));
    }
    v.iter()
        .map(|&x| {
            if x < min {
                Err(format!("'{name}' must be >= {min}, got {v:?}"))
            } else {
                usize::try_from(x).map_err(|_| format!("'{name}' {v:?} is too large"))
            }
        })
        .collect()
}

/// Checks a pooling's attributes against X's shape and works out its windows, padding and
/// output size as ONNX defines them: `auto_pad` SAME_UPPER / SAME_LOWER pad so that each
/// output size is `ceil(input / stride)` (the odd position after, or before), VALID pads
/// nothing, NOTSET takes `pads`; `ceil_mode` rounds the window count up, dropping a last
/// window that would start past the input and its begin padding.
pub fn pool_plan(
    kind: PoolKind,
    x: &[usize],
    attrs: &BTreeMap<String, AttrValue>,
) -> Result<PoolPlan, String> {
    let a = Attrs(attrs);
    let &[n, c, ref spatial @ ..] = x else {
        return Err(format!(
            "pooling needs X [N, C, D1, ...] with at least one spatial axis, got {x:?}"
        ));
    };
    let k = spatial.len();
    if k == 0 {
        return Err(format!(
            "pooling needs X [N, C, D1, ...] with at least one spatial axis, got {x:?}"
        ));
    }
    if a.opt_ints("kernel_shape")?.is_none() {
        return Err("attribute 'kernel_shape' is required".into());
    }
    let kernel = spatial_ints(&a, "kernel_shape", k, 1)?;
    let strides = spatial_ints(&a, "strides", k, 1)?;
    let dilations = spatial_ints(&a, "dilations", k, 1)?;
    kernel
        .iter()
        .try_fold(1usize, |t, &s| t.checked_mul(s))
        .filter(|&t| t <= MAX_POOL_TAPS)
        .ok_or_else(|| format!("the kernel {kernel:?} has more than {MAX_POOL_TAPS} taps"))?;
    let explicit = match a.opt_ints("pads")? {
        None => vec![0; 2 * k],
        Some(p) if p.len() == 2 * k => p
            .iter()
            .map(|&v| {
                usize::try_from(v)
                    .map_err(|_| format!("'pads' must be >= 0 (begins, then ends), got {p:?}"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(p) => {
            return Err(format!(
                "'pads' must list {} values (each spatial axis's begin, then each one's end), got {p:?}",
                2 * k
            ))
        }
    };
    let auto_pad = a.opt_str("auto_pad")?.unwrap_or("NOTSET");
    if !matches!(auto_pad, "NOTSET" | "VALID" | "SAME_UPPER" | "SAME_LOWER") {
        return Err(format!(
            "'auto_pad' must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got \"{auto_pad}\""
        ));
    }
    if auto_pad != "NOTSET" && explicit.iter().any(|&p| p != 0) {
        return Err(format!(
            "'pads' {explicit:?} cannot be given with auto_pad {auto_pad}"
        ));
    }
    let ceil_mode = a.flag("ceil_mode", false)?;
    let count_include_pad = a.flag("count_include_pad", false)?;
    a.flag("storage_order", false)?;
    let p = match kind {
        PoolKind::Lp => lp_exponent(&a)?,
        _ => 2,
    };
    let mut axes = Vec::with_capacity(k);
    for i in 0..k {
        let (input, kern, stride, dilation) = (spatial[i], kernel[i], strides[i], dilations[i]);
        let span = dilation
            .checked_mul(kern - 1)
            .and_then(|s| s.checked_add(1))
            .filter(|&s| s <= MAX_SHAPE_SPAN)
            .ok_or_else(|| {
                format!(
                    "the window along spatial axis {i} spans more than {MAX_SHAPE_SPAN} positions"
                )
            })?;
        let (pad_begin, pad_end, output) = match auto_pad {
            "VALID" => {
                if span > input {
                    return Err(format!(
                        "the window spans {span} positions along spatial axis {i}, but the input has only {input} (auto_pad VALID)"
                    ));
                }
                (0, 0, (input - span) / stride + 1)
            }
            "SAME_UPPER" | "SAME_LOWER" => {
                let output = input.div_ceil(stride);
                let total = ((output.max(1) - 1) * stride)
                    .saturating_add(span)
                    .saturating_sub(input);
                let small = total / 2;
                if auto_pad == "SAME_UPPER" {
                    (small, total - small, output)
                } else {
                    (total - small, small, output)
                }
            }
            _ => {
                let (pb, pe) = (explicit[i], explicit[i + k]);
                if pb >= span || pe >= span {
                    return Err(format!(
                        "'pads' {explicit:?}: padding along spatial axis {i} must be smaller than the window's span {span}"
                    ));
                }
                let padded = input
                    .checked_add(pb)
                    .and_then(|v| v.checked_add(pe))
                    .ok_or_else(|| {
                        format!("the padded input along spatial axis {i} is too large")
                    })?;
                if span > padded {
                    return Err(format!(
                        "the window spans {span} positions along spatial axis {i}, but the padded input has only {padded}"
                    ));
                }
                let room = padded - span;
                let mut output = if ceil_mode {
                    room.div_ceil(stride) + 1
                } else {
                    room / stride + 1
                };
                // A last window may not start past the input and its begin padding.
                if ceil_mode && (output - 1) * stride >= input + pb {
                    output -= 1;
                }
                (pb, pe, output)
            }
        };
        if output == 0 {
            return Err(format!(
                "the output would be empty along spatial axis {i} (input size {input})"
            ));
        }
        axes.push(PoolAxis {
            input,
            kernel: kern,
            stride,
            dilation,
            pad_begin,
            pad_end,
            output,
        });
    }
    Ok(PoolPlan {
        kind,
        n,
        c,
        axes,
        count_include_pad,
        p,
    })
}

/// Largest window span accepted; keeps the size arithmetic far from overflow, also where
/// `usize` has 32 bits (WebAssembly).
const MAX_SHAPE_SPAN: usize = 1 << 30;

/// Sizes of an attention: Q [b, hq, sq, d], K [b, hkv, skv, d], V [b, hkv, skv, dv].
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttentionPlan {
    pub b: usize,
    pub hq: usize,
    pub hkv: usize,
    pub sq: usize,
    pub skv: usize,
    pub d: usize,
    pub dv: usize,
}

pub(crate) fn attention_plan(
    q: &[usize],
    k: &[usize],
    v: &[usize],
) -> Result<AttentionPlan, String> {
    let (&[b, hq, sq, d], &[bk, hkv, skv, dk], &[bv, hv, sv, dv]) = (q, k, v) else {
        return Err(format!(
            "Attention needs 4-D Q [B, Hq, Sq, D], K [B, Hkv, Skv, D] and V [B, Hkv, Skv, Dv], got Q {q:?}, K {k:?}, V {v:?}"
        ));
    };
    if bk != b || bv != b {
        return Err(format!(
            "Q, K and V must have the same batch size, got {b}, {bk} and {bv}"
        ));
    }
    if dk != d {
        return Err(format!(
            "K's head size must equal Q's: Q {q:?}, K {k:?} ({d} vs {dk})"
        ));
    }
    if hv != hkv || sv != skv {
        return Err(format!(
            "K and V must have the same heads and sequence length: K {k:?}, V {v:?}"
        ));
    }
    if hkv == 0 || hq % hkv != 0 {
        return Err(format!(
            "the query heads ({hq}) must be a multiple of the key/value heads ({hkv}) for grouped-query attention"
        ));
    }
    Ok(AttentionPlan {
        b,
        hq,
        hkv,
        sq,
        skv,
        d,
        dv,
    })
}

/// An Einsum equation resolved against its operands' shapes: every subscript label
/// (letters, and one label per dimension covered by an ellipsis) numbered, with its size.
/// The compiler's Einsum decomposition reads it too, so both sides parse alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EinsumPlan {
    /// The size of each label.
    pub sizes: Vec<usize>,
    /// The label of each axis, per operand.
    pub operands: Vec<Vec<usize>>,
    /// The output's labels, in order; the other labels are summed over.
    pub output: Vec<usize>,
}

/// One term of an equation: letters and at most one ellipsis (as `None`).
fn einsum_term(term: &str) -> Result<Vec<Option<char>>, String> {
    let mut out = Vec::new();
    let mut rest = term;
    while let Some(c) = rest.chars().next() {
        if let Some(r) = rest.strip_prefix("...") {
            if out.contains(&None) {
                return Err(format!("the Einsum term '{term}' has two ellipses"));
            }
            out.push(None);
            rest = r;
        } else if c.is_ascii_alphabetic() {
            out.push(Some(c));
            rest = &rest[1..];
        } else {
            return Err(format!(
                "the Einsum term '{term}' has '{c}', which is neither a letter nor '...'"
            ));
        }
    }
    Ok(out)
}

/// Parses an Einsum `equation` (`"bij,bjk->bik"`, implicit `"ij,jk"`, ellipses,
/// repeated labels) for operands of the given shapes. Sizes of a letter must agree
/// across operands; ellipsis dimensions broadcast numpy-style.
pub fn einsum_plan(equation: &str, shapes: &[&[usize]]) -> Result<EinsumPlan, String> {
    let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq.as_str(), None),
    };
    let terms: Vec<Vec<Option<char>>> =
        lhs.split(',').map(einsum_term).collect::<Result<_, _>>()?;
    if terms.len() != shapes.len() {
        return Err(format!(
            "the equation '{equation}' has {} operand terms but the node has {} inputs",
            terms.len(),
            shapes.len()
        ));
    }
    // Ellipsis dimensions per operand, and the most of any operand.
    let mut ell = Vec::with_capacity(terms.len());
    for (t, s) in terms.iter().zip(shapes) {
        let letters = t.iter().filter(|x| x.is_some()).count();
        let n = if t.contains(&None) {
            s.len().checked_sub(letters)
        } else {
            (s.len() == letters).then_some(0)
        };
        ell.push(n.ok_or_else(|| {
            format!(
                "the Einsum term '{}' does not fit an operand of shape {s:?}",
                t.iter()
                    .map(|x| x.map_or("...".to_string(), String::from))
                    .collect::<String>()
            )
        })?);
    }
    let n_ell = ell.iter().copied().max().unwrap_or(0);
    let mut sizes: Vec<usize> = vec![1; n_ell];
    let mut letters: BTreeMap<char, usize> = BTreeMap::new();
    let mut count: BTreeMap<char, usize> = BTreeMap::new();
    let mut operands = Vec::with_capacity(terms.len());
    for ((t, s), &m) in terms.iter().zip(shapes).zip(&ell) {
        let mut labels = Vec::with_capacity(s.len());
        let mut axis = 0usize;
        for x in t {
            match x {
                None => {
                    for e in 0..m {
                        let l = n_ell - m + e;
                        let d = s.get(axis).copied().unwrap_or(1);
                        let cur = sizes.get(l).copied().unwrap_or(1);
                        if cur != d && cur != 1 && d != 1 {
                            return Err(format!(
                                "the ellipsis dimensions of the Einsum operands do not broadcast ({cur} vs {d})"
                            ));
                        }
                        if let Some(slot) = sizes.get_mut(l) {
                            *slot = cur.max(d);
                        }
                        labels.push(l);
                        axis += 1;
                    }
                }
                Some(c) => {
                    let d = s.get(axis).copied().unwrap_or(1);
                    *count.entry(*c).or_insert(0) += 1;
                    let l = match letters.get(c) {
                        Some(&l) => {
                            if sizes.get(l) != Some(&d) {
                                return Err(format!(
                                    "Einsum label '{c}' has size {} in one place and {d} in another",
                                    sizes.get(l).copied().unwrap_or(0)
                                ));
                            }
                            l
                        }
                        None => {
                            sizes.push(d);
                            letters.insert(*c, sizes.len() - 1);
                            sizes.len() - 1
                        }
                    };
                    labels.push(l);
                    axis += 1;
                }
            }
        }
        operands.push(labels);
    }
    let output = match rhs {
        Some(r) => {
            let mut out = Vec::new();
            for x in einsum_term(r)? {
                match x {
                    None => out.extend(0..n_ell),
                    Some(c) => {
                        let l = *letters
                            .get(&c)
                            .ok_or_else(|| format!("Einsum output label '{c}' is in no operand"))?;
                        if out.contains(&l) {
                            return Err(format!("Einsum output label '{c}' appears twice"));
                        }
                        out.push(l);
                    }
                }
            }
            out
        }
        None => {
            let mut out: Vec<usize> = (0..n_ell).collect();
            out.extend(
                letters
                    .iter()
                    .filter(|(c, _)| count.get(c) == Some(&1))
                    .map(|(_, &l)| l),
            );
            out
        }
    };
    Ok(EinsumPlan {
        sizes,
        operands,
        output,
    })
}

/// The shapes of an ONNX Attention node (opset 23): 3-D inputs split into heads, the
/// past key/value prepended to the new ones.
pub(crate) struct AttentionShapes {
    pub b: usize,
    pub hq: usize,
    pub hkv: usize,
    pub sq: usize,
    /// New keys and values.
    pub skv: usize,
    /// Past keys and values (0 without a cache).
    pub past: usize,
    pub d: usize,
    pub dv: usize,
    /// Whether Q, K, V (and Y) are 3-D `[B, S, H * D]`.
    pub three_d: bool,
}

impl AttentionShapes {
    /// Keys the queries attend: past and new.
    pub fn total(&self) -> usize {
        self.past + self.skv
    }
}

/// Resolves an Attention node's shapes from Q, K, V, the optional past key and value and
/// the `q_num_heads` / `kv_num_heads` attributes (required for 3-D inputs).
pub(crate) fn attention_shapes(
    q: &[usize],
    k: &[usize],
    v: &[usize],
    past: Option<(&[usize], &[usize])>,
    heads: (Option<i64>, Option<i64>),
) -> Result<AttentionShapes, String> {
    let (s, three_d) = match (q, k, v) {
        (&[b, sq, qh], &[_, skv, kh], &[_, _, vh]) => {
            let (Some(hq), Some(hkv)) = heads else {
                return Err(
                    "Attention with 3-D inputs needs the q_num_heads and kv_num_heads attributes"
                        .into(),
                );
            };
            let pos = |h: i64, what: &str| {
                usize::try_from(h)
                    .ok()
                    .filter(|&h| h > 0)
                    .ok_or_else(|| format!("'{what}' must be positive, got {h}"))
            };
            let (hq, hkv) = (pos(hq, "q_num_heads")?, pos(hkv, "kv_num_heads")?);
            if qh % hq != 0 || kh % hkv != 0 || vh % hkv != 0 {
                return Err(format!(
                    "Q {q:?}, K {k:?}, V {v:?} do not split evenly into {hq} query and {hkv} key/value heads"
                ));
            }
            let plan = attention_plan(
                &[b, hq, sq, qh / hq],
                &[k[0], hkv, skv, kh / hkv],
                &[v[0], hkv, v[1], vh / hkv],
            )?;
            (plan, true)
        }
        _ => (attention_plan(q, k, v)?, false),
    };
    let mut past_len = 0;
    if let Some((pk, pv)) = past {
        let (&[b, h, p, d], &[bv, hv, pvl, dv]) = (pk, pv) else {
            return Err(format!(
                "past_key and past_value must be 4-D [B, Hkv, P, D], got {pk:?} and {pv:?}"
            ));
        };
        if (b, h, d) != (s.b, s.hkv, s.d) || (bv, hv, pvl, dv) != (s.b, s.hkv, p, s.dv) {
            return Err(format!(
                "past_key {pk:?} and past_value {pv:?} do not match the new keys and values ([{}, {}, P, {}] and [{}, {}, P, {}])",
                s.b, s.hkv, s.d, s.b, s.hkv, s.dv
            ));
        }
        past_len = p;
    }
    Ok(AttentionShapes {
        b: s.b,
        hq: s.hq,
        hkv: s.hkv,
        sq: s.sq,
        skv: s.skv,
        past: past_len,
        d: s.d,
        dv: s.dv,
        three_d,
    })
}
