//! The normalisations beyond LayerNormalization: LpNormalization, BatchNormalization
//! (inference), InstanceNormalization, GroupNormalization and MeanVarianceNormalization.
//!
//! Every statistic is a last-axis reduction: the axes it covers are moved last (a
//! transpose, only when they are not already trailing) and merged by a reshape, so the
//! input is viewed as `[kept..., n]` (GroupNormalization: `[N, groups, n]`). The per-row
//! statistics then broadcast back over the row, per-channel scale and bias are reshaped
//! to `[C, 1]` to broadcast against the `[N, C, n]` view, and the result is reshaped (and
//! transposed) back. BatchNormalization has no statistic: its per-channel parameters are
//! reshaped to `[C, 1, ..., 1]` and it is elementwise. LRN sums squares over a window of
//! channels: zero channels padded on both sides, one channel slice per tap, an add chain.

use super::*;

impl Builder<'_> {
    /// Lowers one normalisation node (see the module doc).
    pub(super) fn normalization(&mut self) -> Result<(), CompileError> {
        let op = self.node.op.clone();
        let ((x, xt), y) = (self.float_input(0)?, self.output()?);
        let has_scale = graph::norm_has_scale(&op);
        let scale_shape = if has_scale {
            Some(self.ty(&self.input(1)?)?.shape)
        } else {
            None
        };
        let plan = graph::norm_plan(&op, &xt.shape, scale_shape.as_deref(), &self.node.attrs)
            .map_err(|e| self.err(e))?;
        if op == "BatchNormalization" {
            return self.batch_norm(x, y, &xt, plan.epsilon);
        }
        let r = xt.shape.len();
        let dt = xt.dtype;
        let (perm, view): (Vec<usize>, Vec<usize>) = match plan.groups {
            Some(g) => {
                let rest: usize = xt.shape[1..].iter().product();
                ((0..r).collect(), vec![xt.shape[0], g, rest / g])
            }
            None => {
                let kept: Vec<usize> = (0..r).filter(|a| !plan.axes.contains(a)).collect();
                let mut view: Vec<usize> = kept.iter().map(|&a| xt.shape[a]).collect();
                view.push(plan.axes.iter().map(|&a| xt.shape[a]).product());
                (
                    kept.into_iter().chain(plan.axes.iter().copied()).collect(),
                    view,
                )
            }
        };
        let moved = self.transposed("statistic_axes_last", x, &perm, None)?;
        let moved_shape = self.ty(&moved)?.shape;
        let v = self.reshaped("rows", moved, view.clone(), None)?;
        let vt = TensorType {
            dtype: dt,
            shape: view,
        };
        let st = row_statistic(&vt);
        let rit = reduction_iteration(&vt.shape);
        let reduce = |b: &mut Self, step: &str, kind: Reduction, input: String| {
            let s = b.temp(step, st.clone());
            b.push(Some(step), kind, vec![input], s.clone(), rit.clone());
            s
        };
        let normed = if op == "LpNormalization" {
            let a = if plan.p == 1 {
                self.ew("magnitude", Unary::Abs, vec![v.clone()], &vt, None)
            } else {
                self.ew("square", Binary::Mul, vec![v.clone(), v.clone()], &vt, None)
            };
            let s = reduce(self, "sum", Reduction::Sum, a);
            let norm = if plan.p == 1 {
                s
            } else {
                self.ew("norm", Unary::Sqrt, vec![s], &st, None)
            };
            // A lane of zeros stays zeros (as ONNX's expected outputs have it): its norm
            // becomes 1 rather than giving 0 / 0.
            let zero = self.scalar("zero", dt, 0.0);
            let one = self.scalar("one", dt, 1.0);
            let bt = TensorType {
                dtype: DType::Bool,
                shape: st.shape.clone(),
            };
            let z = self.ew(
                "zero_norm",
                Comparison::Equal,
                vec![norm.clone(), zero],
                &bt,
                None,
            );
            let d = self.ew(
                "divisor",
                DeviceOpKind::Where,
                vec![z, one, norm],
                &st,
                None,
            );
            self.ew("normalize", Binary::RealDiv, vec![v, d], &vt, None)
        } else {
            let mean = reduce(self, "mean", Reduction::Mean, v.clone());
            let c = self.ew("center", Binary::Sub, vec![v, mean], &vt, None);
            let sq = self.ew("square", Binary::Mul, vec![c.clone(), c.clone()], &vt, None);
            let var = reduce(self, "variance", Reduction::Mean, sq);
            if op == "MeanVarianceNormalization" {
                // ONNX adds its epsilon to the standard deviation, not to the variance.
                let sd = self.ew("deviation", Unary::Sqrt, vec![var], &st, None);
                let eps = self.scalar("epsilon", dt, plan.epsilon);
                let d = self.ew("add_eps", Binary::Add, vec![sd, eps], &st, None);
                self.ew("normalize", Binary::RealDiv, vec![c, d], &vt, None)
            } else {
                let inv = self.inverse_root(var, st.clone(), plan.epsilon)?;
                self.ew("normalize", Binary::Mul, vec![c, inv], &vt, None)
            }
        };
        let result = if has_scale {
            // Scale and bias per row of the view: per group as they are, per channel on an
            // [N, C, n] view.
            let (rows, per_row) = match plan.groups {
                Some(g) if plan.per_group_affine => (normed, g),
                _ => {
                    let c = xt.shape[1];
                    let n = xt.shape[2..].iter().product();
                    let cv = vec![xt.shape[0], c, n];
                    (self.reshaped("channels", normed, cv, None)?, c)
                }
            };
            let rt = self.ty(&rows)?;
            let s = self.parameter(1, "scale", vec![per_row, 1], dt)?;
            let b = self.parameter(2, "bias", vec![per_row, 1], dt)?;
            let m = self.ew("scaled", Binary::Mul, vec![rows, s], &rt, None);
            self.ew("shifted", Binary::Add, vec![m, b], &rt, None)
        } else {
            normed
        };
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            self.reshaped("result", result, xt.shape.clone(), Some(y))?;
        } else {
            let back = self.reshaped("unmerged", result, moved_shape, None)?;
            let mut inverse = vec![0; r];
            for (i, &p) in perm.iter().enumerate() {
                inverse[p] = i;
            }
            self.transposed("axes_back", back, &inverse, Some(y))?;
        }
        Ok(())
    }

    /// BatchNormalization in inference mode: `(x - mean) (scale / sqrt(var + eps)) + B`,
    /// elementwise with the per-channel inputs shaped `[C, 1, ..., 1]`.
    fn batch_norm(
        &mut self,
        x: String,
        y: String,
        xt: &TensorType,
        eps: f32,
    ) -> Result<(), CompileError> {
        let dt = xt.dtype;
        let mut pshape = vec![xt.shape[1]];
        pshape.extend(std::iter::repeat_n(1, xt.shape.len() - 2));
        let pt = TensorType {
            dtype: dt,
            shape: pshape.clone(),
        };
        let s = self.parameter(1, "scale", pshape.clone(), dt)?;
        let b = self.parameter(2, "bias", pshape.clone(), dt)?;
        let mean = self.parameter(3, "mean", pshape.clone(), dt)?;
        let var = self.parameter(4, "variance", pshape, dt)?;
        let inv = self.inverse_root(var, pt.clone(), eps)?;
        let k = self.ew("factor", Binary::Mul, vec![s, inv], &pt, None);
        let c = self.ew("center", Binary::Sub, vec![x, mean], xt, None);
        let m = self.ew("scaled", Binary::Mul, vec![c, k], xt, None);
        self.ew("shifted", Binary::Add, vec![m, b], xt, Some(y));
        Ok(())
    }

    /// Input `i` (a per-channel or per-group vector) in `dtype`, reshaped to `shape`.
    fn parameter(
        &mut self,
        i: usize,
        step: &str,
        shape: Vec<usize>,
        dtype: DType,
    ) -> Result<String, CompileError> {
        let p = self.input(i)?;
        let pt = self.ty(&p)?;
        let p = if pt.dtype == dtype {
            p
        } else {
            let t = TensorType {
                dtype,
                shape: pt.shape,
            };
            self.ew(
                &format!("{step}_cast"),
                DeviceOpKind::ToDtype,
                vec![p],
                &t,
                None,
            )
        };
        self.reshaped(&format!("{step}_shaped"), p, shape, None)
    }
}

/// Most channels one LRN window is lowered with (one slice and add each).
const MAX_LRN_TAPS: usize = 256;

impl Builder<'_> {
    /// LRN: the squares padded with zero channels on both sides (concat), one channel
    /// slice per window tap, an add chain, then `x / (bias + alpha / size * sum)^beta`
    /// with the power as sqrt for 0.5 and as `exp(beta log d)` otherwise.
    pub(super) fn lrn(&mut self) -> Result<(), CompileError> {
        let ((x, xt), y) = (self.float_input(0)?, self.output()?);
        let p = graph::lrn_plan(&xt.shape, &self.node.attrs).map_err(|e| self.err(e))?;
        if p.size > MAX_LRN_TAPS {
            return Err(self.err(format!(
                "LRN over {} channels; at most {MAX_LRN_TAPS} are lowered",
                p.size
            )));
        }
        let dt = xt.dtype;
        let c = xt.shape[1];
        let sq = self.ew("square", Binary::Mul, vec![x.clone(), x.clone()], &xt, None);
        let mut parts = Vec::new();
        for (side, n) in [("before", p.before), ("square", 0), ("after", p.after)] {
            if side == "square" {
                parts.push(sq.clone());
            } else if n > 0 {
                let mut shape = xt.shape.clone();
                shape[1] = n;
                let ty = TensorType { dtype: dt, shape };
                parts.push(self.constant(&format!("pad_{side}"), ty, graph::InitSpec::Zeros));
            }
        }
        let padded = if parts.len() == 1 {
            sq
        } else {
            let mut shape = xt.shape.clone();
            shape[1] = c + p.before + p.after;
            let ty = TensorType { dtype: dt, shape };
            let out = self.temp("padded", ty.clone());
            self.push_op(
                Some("padded"),
                Movement::Concat,
                parts,
                vec![out.clone()],
                pointwise_iteration(&ty.shape),
                &[("axis", vec![1])],
            );
            out
        };
        let mut sum: Option<String> = None;
        for j in 0..p.size {
            let tap = self.sliced(&format!("window_{j}"), padded.clone(), 1, j, c, 1, None)?;
            sum = Some(match sum {
                None => tap,
                Some(s) => self.ew(&format!("sum_{j}"), Binary::Add, vec![s, tap], &xt, None),
            });
        }
        let ss = sum.ok_or_else(|| self.err("LRN with an empty window"))?;
        let k = self.scalar("alpha_over_size", dt, p.alpha / p.size as f32);
        let m = self.ew("scaled", Binary::Mul, vec![ss, k], &xt, None);
        let b = self.scalar("bias", dt, p.bias);
        let d = self.ew("base", Binary::Add, vec![m, b], &xt, None);
        let pw = if p.beta == 1.0 {
            d
        } else if p.beta == 0.5 {
            self.ew("power", Unary::Sqrt, vec![d], &xt, None)
        } else {
            let l = self.ew("log", Unary::Log, vec![d], &xt, None);
            let be = self.scalar("beta", dt, p.beta);
            let e = self.ew("times_beta", Binary::Mul, vec![l, be], &xt, None);
            self.ew("power", Unary::Exp, vec![e], &xt, None)
        };
        self.ew("normalize", Binary::RealDiv, vec![x, pw], &xt, Some(y));
        Ok(())
    }
}
