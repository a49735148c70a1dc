//! The normalisations beyond LayerNormalization: LpNormalization, BatchNormalization
//! (inference), InstanceNormalization, GroupNormalization and MeanVarianceNormalization.
//!
//! Each standardises groups of elements (a lane along an axis, a channel of one instance,
//! a group of channels, the elements sharing the kept axes) and, for most, scales and
//! shifts per channel. [`norm_plan`] resolves the attributes once for inference, the
//! evaluator and the compiler's lowering.

use crate::infer::{need_float, InferCx};
use crate::ops::{norm_axis, Attrs};
use crate::tensor::TensorType;
use crate::{eval::EvalCx, spec::OpKind};

/// The resolved attributes of a normalisation node on an input of a given shape.
#[derive(Debug, Clone, PartialEq)]
pub struct NormPlan {
    /// The axes whose elements share one statistic (ascending); for GroupNormalization the
    /// channel axis is split first (see `groups`).
    pub axes: Vec<usize>,
    /// GroupNormalization: the number of channel groups.
    pub groups: Option<usize>,
    /// GroupNormalization: scale and bias hold one value per group (opset 18's form)
    /// rather than per channel (opset 21's); the two agree when groups = channels.
    pub per_group_affine: bool,
    /// LpNormalization's order, 1 or 2.
    pub p: u32,
    /// Added to the variance (to the standard deviation for MeanVarianceNormalization).
    pub epsilon: f32,
}

/// MeanVarianceNormalization's fixed epsilon, added to the standard deviation.
pub const MVN_EPSILON: f32 = 1e-9;

/// The plan of normalisation op `op` (its graph name) on input `x` with attributes `attrs`;
/// `scale` is the scale input's shape where the op has one. Errors name the attribute.
pub fn norm_plan(
    op: &str,
    x: &[usize],
    scale: Option<&[usize]>,
    attrs: &std::collections::BTreeMap<String, crate::ir::AttrValue>,
) -> Result<NormPlan, String> {
    let a = Attrs(attrs);
    let r = x.len();
    let mut plan = NormPlan {
        axes: Vec::new(),
        groups: None,
        per_group_affine: false,
        p: 2,
        epsilon: a.float("epsilon", 1e-5)?,
    };
    let channels = |what: &str| -> Result<usize, String> {
        if r < 2 {
            return Err(format!(
                "{op} needs an input of rank >= 2 (N, C, ...), got {x:?}{what}"
            ));
        }
        Ok(x[1])
    };
    let per_channel = |name: &str, s: Option<&[usize]>, c: usize| -> Result<(), String> {
        match s {
            Some(s) if s != [c] => Err(format!(
                "{op}'s {name} must have shape [{c}] (one value per channel), got {s:?}"
            )),
            _ => Ok(()),
        }
    };
    match op {
        "LpNormalization" => {
            plan.axes = vec![norm_axis(a.int("axis", -1)?, r)?];
            plan.p = match a.int("p", 2)? {
                1 => 1,
                2 => 2,
                p => return Err(format!("attribute 'p' must be 1 or 2, got {p}")),
            };
        }
        "BatchNormalization" => {
            per_channel("scale", scale, channels("")?)?;
        }
        "InstanceNormalization" => {
            if r < 3 {
                return Err(format!(
                    "{op} needs an input of rank >= 3 (N, C, D1, ...), got {x:?}"
                ));
            }
            per_channel("scale", scale, x[1])?;
            plan.axes = (2..r).collect();
        }
        "GroupNormalization" => {
            let c = channels("")?;
            let g = a
                .opt_int("num_groups")?
                .ok_or("attribute 'num_groups' is required")?;
            if g <= 0 || c % (g as usize) != 0 {
                return Err(format!(
                    "attribute 'num_groups' must be positive and divide the {c} channels, got {g}"
                ));
            }
            let g = g as usize;
            match scale {
                Some(s) if s == [c] => {}
                Some(s) if s == [g] => plan.per_group_affine = true,
                Some(s) => {
                    return Err(format!(
                        "{op}'s scale must have shape [{c}] (per channel) or [{g}] (per group, opset 18), got {s:?}"
                    ))
                }
                None => {}
            }
            plan.groups = Some(g);
            plan.axes = (1..r).collect();
        }
        "MeanVarianceNormalization" => {
            let axes = match a.opt_ints("axes")? {
                Some(v) => v.to_vec(),
                None => vec![0, 2, 3],
            };
            let mut axes = axes
                .iter()
                .map(|&ax| norm_axis(ax, r).map_err(|e| format!("attribute 'axes': {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            axes.sort_unstable();
            axes.dedup();
            plan.axes = axes;
            plan.epsilon = MVN_EPSILON;
        }
        _ => return Err(format!("{op} is not a normalisation")),
    }
    Ok(plan)
}

/// Whether the op takes scale and bias (inputs 1 and 2).
fn scale_shape(kind: OpKind) -> bool {
    matches!(
        kind,
        OpKind::BatchNormalization | OpKind::InstanceNormalization | OpKind::GroupNormalization
    )
}

/// Whether normalisation op `op` (its graph name) takes scale and bias (inputs 1 and 2):
/// what [`norm_plan`]'s `scale` is given for.
pub fn norm_has_scale(op: &str) -> bool {
    OpKind::from_name(op).is_some_and(scale_shape)
}

/// Output types of the normalisations: X's.
pub(crate) fn infer(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (cx.op, cx.x);
    need_float(op, x)?;
    let scale = if scale_shape(cx.kind) {
        Some(cx.get(1)?)
    } else {
        None
    };
    norm_plan(op, &x.shape, scale.map(|s| &s.shape[..]), &cx.node.attrs)?;
    if scale.is_some() {
        let names = if cx.kind == OpKind::BatchNormalization {
            &["scale", "B", "input_mean", "input_var"][..]
        } else {
            &["scale", "B"][..]
        };
        let want = &cx.get(1)?.shape;
        for (i, name) in names.iter().enumerate() {
            let t = cx.get(i + 1)?;
            need_float(op, t)?;
            if &t.shape != want {
                return Err(format!(
                    "{op}'s {name} must have the shape of scale {want:?}, got {:?}",
                    t.shape
                ));
            }
        }
    }
    if cx.kind == OpKind::BatchNormalization {
        if cx.a.int("training_mode", 0)? != 0 {
            return Err(format!(
                "{op} in training mode (training_mode = 1) is not supported: only inference, with the given mean and variance"
            ));
        }
        if cx.node.outputs.iter().skip(1).any(|o| !o.is_empty()) {
            return Err(format!(
                "{op} has running mean/variance outputs, which exist only in training mode (not supported)"
            ));
        }
    }
    Ok(vec![TensorType::new(x.dtype, x.shape.clone())])
}

/// The normalisations in f32 (statistics accumulated in f64).
pub(crate) fn eval(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let x = cx.x;
    let shape = &x.shape;
    let r = shape.len();
    if cx.kind == OpKind::BatchNormalization {
        let plan = norm_plan(cx.op, shape, Some(&cx.get(1)?.shape), cx.a.0)?;
        let c = shape[1];
        let inner: usize = shape[2..].iter().product();
        let (s, b, m, v) = (cx.get(1)?, cx.get(2)?, cx.get(3)?, cx.get(4)?);
        let out = x
            .data
            .iter()
            .enumerate()
            .map(|(i, &xv)| {
                let ch = (i / inner.max(1)) % c;
                (xv - m.data[ch]) / (v.data[ch] + plan.epsilon).sqrt() * s.data[ch] + b.data[ch]
            })
            .collect();
        return Ok(vec![out]);
    }
    let scale = if scale_shape(cx.kind) {
        Some(cx.get(1)?)
    } else {
        None
    };
    let plan = norm_plan(cx.op, shape, scale.map(|s| &s.shape[..]), cx.a.0)?;
    // Each element's statistic group: its index over the kept axes (and, for
    // GroupNormalization, its channel group).
    let reduced: Vec<bool> = (0..r).map(|d| plan.axes.contains(&d)).collect();
    let n = x.data.len();
    let mut key = vec![0usize; n];
    let mut groups = 1usize;
    {
        let mut idx = vec![0usize; r];
        for k in key.iter_mut() {
            let mut g = 0usize;
            for d in 0..r {
                if !reduced[d] {
                    g = g * shape[d] + idx[d];
                }
            }
            if let Some(ng) = plan.groups {
                g = g * ng + idx[1] / (shape[1] / ng);
            }
            *k = g;
            for d in (0..r).rev() {
                idx[d] += 1;
                if idx[d] < shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        for d in 0..r {
            if !reduced[d] {
                groups *= shape[d];
            }
        }
        groups *= plan.groups.unwrap_or(1);
    }
    let mut sum = vec![0f64; groups];
    let mut count = vec![0usize; groups];
    for (&k, &v) in key.iter().zip(&x.data) {
        sum[k] += match (cx.kind, plan.p) {
            (OpKind::LpNormalization, 1) => f64::from(v.abs()),
            (OpKind::LpNormalization, _) => f64::from(v) * f64::from(v),
            _ => f64::from(v),
        };
        count[k] += 1;
    }
    if cx.kind == OpKind::LpNormalization {
        let norm: Vec<f64> = sum
            .iter()
            .map(|&s| if plan.p == 1 { s } else { s.sqrt() })
            .collect();
        let out = key
            .iter()
            .zip(&x.data)
            // A lane of zeros stays zeros, as in ONNX's expected outputs.
            .map(|(&k, &v)| {
                if norm[k] == 0.0 {
                    0.0
                } else {
                    (f64::from(v) / norm[k]) as f32
                }
            })
            .collect();
        return Ok(vec![out]);
    }
    let mean: Vec<f64> = sum
        .iter()
        .zip(&count)
        .map(|(&s, &c)| s / c.max(1) as f64)
        .collect();
    let mut sq = vec![0f64; groups];
    for (&k, &v) in key.iter().zip(&x.data) {
        let d = f64::from(v) - mean[k];
        sq[k] += d * d;
    }
    let eps = f64::from(plan.epsilon);
    let denom: Vec<f64> = sq
        .iter()
        .zip(&count)
        .map(|(&s, &c)| {
            let var = s / c.max(1) as f64;
            if cx.kind == OpKind::MeanVarianceNormalization {
                var.sqrt() + eps
            } else {
                (var + eps).sqrt()
            }
        })
        .collect();
    let inner: usize = shape.get(2..).map_or(1, |s| s.iter().product());
    let c = shape.get(1).copied().unwrap_or(1);
    // The scale and bias entry of element i: its channel, or its channel's group.
    let affine = |i: usize| -> usize {
        let ch = (i / inner.max(1)) % c.max(1);
        match plan.groups {
            Some(g) if plan.per_group_affine => ch / (c / g),
            _ => ch,
        }
    };
    let (s, b) = match scale {
        Some(_) => (Some(cx.get(1)?), Some(cx.get(2)?)),
        None => (None, None),
    };
    let out = key
        .iter()
        .zip(&x.data)
        .enumerate()
        .map(|(i, (&k, &v))| {
            let y = ((f64::from(v) - mean[k]) / denom[k]) as f32;
            match (s, b) {
                (Some(s), Some(b)) => y * s.data[affine(i)] + b.data[affine(i)],
                _ => y,
            }
        })
        .collect();
    Ok(vec![out])
}

/// LRN's resolved attributes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LrnPlan {
    /// Channels summed over.
    pub size: usize,
    /// Channels before (`floor((size - 1) / 2)`) and after (`ceil((size - 1) / 2)`) the
    /// element's own in its window, which is clipped to the channels there are.
    pub before: usize,
    pub after: usize,
    pub alpha: f32,
    pub beta: f32,
    pub bias: f32,
}

/// The plan of LRN on an input of shape `x` (N, C, ...); errors name the attribute.
pub fn lrn_plan(
    x: &[usize],
    attrs: &std::collections::BTreeMap<String, crate::ir::AttrValue>,
) -> Result<LrnPlan, String> {
    let a = Attrs(attrs);
    if x.len() < 2 {
        return Err(format!(
            "LRN needs an input of rank >= 2 (N, C, ...), got {x:?}"
        ));
    }
    let size = a.opt_int("size")?.ok_or("attribute 'size' is required")?;
    let size = usize::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| format!("attribute 'size' must be positive, got {size}"))?;
    Ok(LrnPlan {
        size,
        before: (size - 1) / 2,
        after: size / 2,
        alpha: a.float("alpha", 1e-4)?,
        beta: a.float("beta", 0.75)?,
        bias: a.float("bias", 1.0)?,
    })
}

/// LRN's output type: X's.
pub(crate) fn lrn_infer(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    need_float(cx.op, cx.x)?;
    lrn_plan(&cx.x.shape, &cx.node.attrs)?;
    Ok(vec![TensorType::new(cx.x.dtype, cx.x.shape.clone())])
}

/// LRN: each element over `(bias + alpha / size * sum of squares in its channel
/// window)^beta`.
pub(crate) fn lrn_eval(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let x = cx.x;
    let p = lrn_plan(&x.shape, cx.a.0)?;
    let c = x.shape[1];
    let inner: usize = x.shape[2..].iter().product();
    let out = (0..x.data.len())
        .map(|i| {
            let (ch, k) = ((i / inner.max(1)) % c, i % inner.max(1));
            let base = i - ch * inner - k;
            let lo = ch.saturating_sub(p.before);
            let hi = (ch + p.after).min(c - 1);
            let ss: f64 = (lo..=hi)
                .map(|j| f64::from(x.data[base + j * inner + k]).powi(2))
                .sum();
            let d = f64::from(p.bias) + f64::from(p.alpha) / p.size as f64 * ss;
            (f64::from(x.data[i]) / d.powf(f64::from(p.beta))) as f32
        })
        .collect();
    Ok(vec![out])
}
