//! Pooling: MaxPool, AveragePool, LpPool and the global pools.
//!
//! A pooling window is a box, so its maximum or sum is taken one spatial axis at a time:
//! along each axis the tensor is padded (a concat with constant blocks: `-inf` for a
//! maximum, zeros for a sum), each tap of the window reads a strided slice, and the slices
//! are combined (maximum or add chain). That costs the sum of the kernel's sizes in slices
//! rather than their product. AveragePool then multiplies by the reciprocal of each
//! window's divisor (one constant when every window has the same), LpPool takes `|x|^p`
//! first and the `p`-th root last. The global pools are reductions over the spatial axes.

use super::{pointwise_iteration, Builder};
use crate::ops::{Binary, Movement, Reduction, Unary};
use crate::CompileError;
use graph::{PoolKind, TensorType};

/// Most window slices (the sum of the kernel's sizes) one pooling node is lowered with;
/// beyond it the op count would swamp the schedule.
const MAX_POOL_SLICES: usize = 256;

impl Builder<'_> {
    /// MaxPool, AveragePool, LpPool (see the module doc).
    pub(super) fn pool(&mut self, kind: PoolKind) -> Result<(), CompileError> {
        let ((x, xt), y) = (self.float_input(0)?, self.output()?);
        let op = self.node.op.clone();
        let plan = graph::pool_plan(kind, &xt.shape, &self.node.attrs).map_err(|e| self.err(e))?;
        let slices: usize = plan.axes.iter().map(|a| a.kernel).sum();
        if slices > MAX_POOL_SLICES {
            return Err(self.err(format!(
                "{op}'s kernel needs {slices} window slices; at most {MAX_POOL_SLICES} are lowered"
            )));
        }
        let dt = xt.dtype;
        let mut cur = match kind {
            PoolKind::Lp => self.abs_power("power", x.clone(), plan.p)?,
            _ => x.clone(),
        };
        let (pad, combine) = match kind {
            PoolKind::Max => (
                graph::InitSpec::Constant(f32::NEG_INFINITY),
                Binary::Maximum,
            ),
            _ => (graph::InitSpec::Zeros, Binary::Add),
        };
        let mut shape = xt.shape.clone();
        for (i, ax) in plan.axes.iter().enumerate() {
            let axis = 2 + i;
            let len = ax.padded_len();
            let pad_end = len - ax.pad_begin - ax.input;
            let block = |this: &mut Self, side: &str, size: usize| {
                let mut b = shape.clone();
                b[axis] = size;
                let ty = TensorType {
                    dtype: dt,
                    shape: b,
                };
                this.constant(&format!("pad_{side}_{i}"), ty, pad.clone())
            };
            let mut parts = Vec::new();
            if ax.pad_begin > 0 {
                parts.push(block(self, "begin", ax.pad_begin));
            }
            parts.push(cur);
            if pad_end > 0 {
                parts.push(block(self, "end", pad_end));
            }
            shape[axis] = len;
            let padded = if parts.len() == 1 {
                parts.remove(0)
            } else {
                let step = format!("padded_{i}");
                let p = self.temp(
                    &step,
                    TensorType {
                        dtype: dt,
                        shape: shape.clone(),
                    },
                );
                self.push_op(
                    Some(&step),
                    Movement::Concat,
                    parts,
                    vec![p.clone()],
                    pointwise_iteration(&shape),
                    &[("axis", vec![axis as i64])],
                );
                p
            };
            let mut taps = Vec::with_capacity(ax.kernel);
            for j in 0..ax.kernel {
                taps.push(self.sliced(
                    &format!("window_{i}_{j}"),
                    padded.clone(),
                    axis,
                    j * ax.dilation,
                    ax.output,
                    ax.stride,
                    None,
                )?);
            }
            shape[axis] = ax.output;
            cur = self.chain(&format!("combine_{i}"), combine, taps)?;
        }
        match kind {
            PoolKind::Max => self.finish(&x, cur, y),
            PoolKind::Lp => self.lp_root(cur, y, plan.p),
            PoolKind::Average => {
                let divisors = plan.divisors();
                let first = divisors.first().copied().unwrap_or(1);
                let spatial: Vec<usize> = plan.axes.iter().map(|a| a.output).collect();
                let (table_shape, values) = if divisors.iter().all(|&d| d == first) {
                    (vec![1], vec![1.0 / first as f32])
                } else {
                    self.table("divisor table", 1, divisors.len())?;
                    let r = divisors.iter().map(|&d| 1.0 / d as f32).collect();
                    (spatial, r)
                };
                let recip = self.constant(
                    "reciprocal_count",
                    TensorType {
                        dtype: dt,
                        shape: table_shape,
                    },
                    graph::InitSpec::Data(values),
                );
                self.push(
                    Some("mean"),
                    Binary::Mul,
                    vec![cur, recip],
                    y,
                    pointwise_iteration(&shape),
                );
                Ok(())
            }
        }
    }

    /// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: reductions over axes 2.., kept.
    pub(super) fn global_pool(&mut self, kind: PoolKind) -> Result<(), CompileError> {
        let (x, y) = (self.input(0)?, self.output()?);
        let (xt, yt) = (self.ty(&x)?, self.ty(&y)?);
        let r = xt.shape.len();
        if r < 3 {
            return Err(self.err(format!(
                "{} needs X [N, C, D1, ...], got {:?}",
                self.node.op, xt.shape
            )));
        }
        let axes: Vec<usize> = (2..r).collect();
        match kind {
            PoolKind::Max => self.reduce_axes_into(Reduction::Max, x, y, axes, true),
            PoolKind::Average => self.reduce_axes_into(Reduction::Mean, x, y, axes, true),
            PoolKind::Lp => {
                let p = graph::lp_pool_exponent(&self.node.attrs).map_err(|e| self.err(e))?;
                let powered = self.abs_power("power", x, p)?;
                let sum = self.temp("sum", yt);
                self.reduce_axes_into(Reduction::Sum, powered, sum.clone(), axes, true)?;
                self.lp_root(sum, y, p)
            }
        }
    }

    /// `|x|^p` by squaring and multiplying (a handful of ops for any `p` up to 64).
    fn abs_power(&mut self, step: &str, x: String, p: u32) -> Result<String, CompileError> {
        let ty = self.ty(&x)?;
        let it = pointwise_iteration(&ty.shape);
        let abs = self.temp(&format!("{step}_abs"), ty.clone());
        self.push(
            Some(&format!("{step}_abs")),
            Unary::Abs,
            vec![x],
            abs.clone(),
            it.clone(),
        );
        let (mut result, mut base, mut e) = (None::<String>, abs, p);
        let mut k = 0;
        while e > 0 {
            if e & 1 == 1 {
                result = Some(match result {
                    None => base.clone(),
                    Some(acc) => {
                        let name = format!("{step}_mul_{k}");
                        let t = self.temp(&name, ty.clone());
                        self.push(
                            Some(&name),
                            Binary::Mul,
                            vec![acc, base.clone()],
                            t.clone(),
                            it.clone(),
                        );
                        k += 1;
                        t
                    }
                });
            }
            e >>= 1;
            if e > 0 {
                let name = format!("{step}_square_{k}");
                let t = self.temp(&name, ty.clone());
                self.push(
                    Some(&name),
                    Binary::Mul,
                    vec![base.clone(), base],
                    t.clone(),
                    it.clone(),
                );
                k += 1;
                base = t;
            }
        }
        result.ok_or_else(|| self.err("an exponent of 0"))
    }

    /// `s^(1/p)` into `y`: a copy for p = 1, sqrt for 2, else exp(log(s) / p).
    fn lp_root(&mut self, s: String, y: String, p: u32) -> Result<(), CompileError> {
        let ty = self.ty(&s)?;
        let it = pointwise_iteration(&ty.shape);
        match p {
            1 => self.finish("", s, y),
            2 => {
                self.push(Some("root"), Unary::Sqrt, vec![s], y, it);
                Ok(())
            }
            _ => {
                let log = self.temp("log", ty.clone());
                self.push(Some("log"), Unary::Log, vec![s], log.clone(), it.clone());
                let inv = self.constant(
                    "inverse_p",
                    TensorType {
                        dtype: ty.dtype,
                        shape: vec![1],
                    },
                    graph::InitSpec::Constant(1.0 / p as f32),
                );
                let scaled = self.temp("log_over_p", ty);
                self.push(
                    Some("log_over_p"),
                    Binary::Mul,
                    vec![log, inv],
                    scaled.clone(),
                    it.clone(),
                );
                self.push(Some("root"), Unary::Exp, vec![scaled], y, it);
                Ok(())
            }
        }
    }

    /// Makes `cur` the node's output `y`: the step that produced it writes `y` instead, or,
    /// when `cur` is the node's input itself (or no step of this node made it), a copy.
    fn finish(&mut self, input: &str, cur: String, y: String) -> Result<(), CompileError> {
        let made_here = cur != input && self.ops.iter().any(|o| o.outputs.contains(&cur));
        if made_here {
            self.retarget(&cur, &y)
        } else {
            self.push_movement("copy", Movement::Reshape, cur, y, &[])
        }
    }
}
