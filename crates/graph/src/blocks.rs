//! SpaceToDepth and DepthToSpace: a reshape to six axes, a transpose and a reshape back,
//! resolved once by [`depth_space_plan`] for inference, the evaluator and the compiler.

use crate::eval::EvalCx;
use crate::infer::InferCx;
use crate::ops::{strides, Attrs};
use crate::spec::OpKind;
use crate::tensor::TensorType;

/// The movement SpaceToDepth or DepthToSpace makes of a `[N, C, H, W]` input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepthSpacePlan {
    /// The input viewed with six axes.
    pub split: Vec<usize>,
    /// The transpose of that view (output axis `i` is view axis `perm[i]`).
    pub perm: Vec<usize>,
    /// The output shape.
    pub out: Vec<usize>,
}

/// The plan of `op` ("SpaceToDepth" or "DepthToSpace") on an input of shape `x`; errors
/// name the attribute or the dimension at fault.
pub fn depth_space_plan(
    op: &str,
    x: &[usize],
    attrs: &std::collections::BTreeMap<String, crate::ir::AttrValue>,
) -> Result<DepthSpacePlan, String> {
    let a = Attrs(attrs);
    let &[n, c, h, w] = x else {
        return Err(format!("{op} needs a 4-D input [N, C, H, W], got {x:?}"));
    };
    let bs = a
        .opt_int("blocksize")?
        .ok_or("attribute 'blocksize' is required")?;
    let bs = usize::try_from(bs)
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("attribute 'blocksize' must be positive, got {bs}"))?;
    let crd = match a.opt_str("mode")?.unwrap_or("DCR") {
        "DCR" => false,
        "CRD" => true,
        m => return Err(format!("attribute 'mode' must be DCR or CRD, got {m:?}")),
    };
    if op == "SpaceToDepth" {
        if h % bs != 0 || w % bs != 0 {
            return Err(format!(
                "{op}: H = {h} and W = {w} must be multiples of blocksize {bs}"
            ));
        }
        let (hb, wb) = (h / bs, w / bs);
        // View [N, C, H/b, b, W/b, b]; DCR puts the block offsets before the channel,
        // CRD after it.
        let perm = if crd {
            vec![0, 1, 3, 5, 2, 4]
        } else {
            vec![0, 3, 5, 1, 2, 4]
        };
        Ok(DepthSpacePlan {
            split: vec![n, c, hb, bs, wb, bs],
            perm,
            out: vec![n, c * bs * bs, hb, wb],
        })
    } else {
        if c % (bs * bs) != 0 {
            return Err(format!(
                "{op}: C = {c} must be a multiple of blocksize^2 = {}",
                bs * bs
            ));
        }
        let d = c / (bs * bs);
        // DCR reads the channel as [b, b, C/b^2], CRD as [C/b^2, b, b]; either way the
        // result is [N, C/b^2, H, b, W, b].
        let (split, perm) = if crd {
            (vec![n, d, bs, bs, h, w], vec![0, 1, 4, 2, 5, 3])
        } else {
            (vec![n, bs, bs, d, h, w], vec![0, 3, 4, 1, 5, 2])
        };
        Ok(DepthSpacePlan {
            split,
            perm,
            out: vec![n, d, h * bs, w * bs],
        })
    }
}

/// Output type: the plan's shape, X's dtype.
pub(crate) fn infer(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    let p = depth_space_plan(cx.op, &cx.x.shape, &cx.node.attrs)?;
    Ok(vec![TensorType::new(cx.x.dtype, p.out)])
}

/// The permuted copy.
pub(crate) fn eval(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    debug_assert!(matches!(
        cx.kind,
        OpKind::SpaceToDepth | OpKind::DepthToSpace
    ));
    let p = depth_space_plan(cx.op, &cx.x.shape, cx.a.0)?;
    let st = strides(&p.split);
    let moved: Vec<usize> = p.perm.iter().map(|&a| p.split[a]).collect();
    let mst: Vec<usize> = p.perm.iter().map(|&a| st[a]).collect();
    let total: usize = moved.iter().product();
    let mut out = Vec::with_capacity(total);
    let mut idx = [0usize; 6];
    for _ in 0..total {
        let off: usize = idx.iter().zip(&mst).map(|(i, s)| i * s).sum();
        out.push(cx.x.data[off]);
        for d in (0..6).rev() {
            idx[d] += 1;
            if idx[d] < moved[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(vec![out])
}
