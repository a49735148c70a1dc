//! RotaryEmbedding on the device: the rotation of each head's channel pairs as slices,
//! elementwise ops and concats (see the table in `ops`).

use super::{Binary, Builder};
use crate::CompileError;
use graph::TensorType;

impl Builder<'_> {
    /// `y = rope(x)` as in `graph::rope_plan`: the input viewed as
    /// `[batch, heads, seq, head_size]` or `[batch, seq, heads, head_size]`, the caches'
    /// rows for each token (gathered by position id) as `[batch, 1, seq, r/2]` or
    /// `[batch, seq, 1, r/2]` so they broadcast over the heads.
    pub(super) fn rotary_embedding(&mut self) -> Result<(), CompileError> {
        let (x, xt) = self.float_input(0)?;
        let (cos, sin, y) = (self.input(1)?, self.input(2)?, self.output()?);
        let ids = self.node.inputs.get(3).filter(|s| !s.is_empty()).cloned();
        let ct = self.ty(&cos)?;
        let ids_shape = match &ids {
            Some(i) => Some(self.ty(i)?.shape),
            None => None,
        };
        let p = graph::rope_plan(
            &xt.shape,
            &ct.shape,
            &self.ty(&sin)?.shape,
            ids_shape.as_deref(),
            &self.node.attrs,
        )
        .map_err(|m| self.err(m))?;
        let (b, s, h, d, r) = (p.batch, p.seq, p.heads, p.head_size, p.rotary);
        let half = r / 2;
        let dt = xt.dtype;
        let x4 = if p.heads_first {
            x
        } else {
            self.reshaped("heads", x, vec![b, s, h, d], None)?
        };
        // The caches' rows, one per token: [batch, seq, r/2].
        let rows = |this: &mut Self, name: &str, cache: String| -> Result<String, CompileError> {
            let per_token = match &ids {
                Some(ids) => this.gathered_rows(
                    &format!("{name}_rows"),
                    cache,
                    ids.clone(),
                    b * s,
                    half,
                    dt,
                )?,
                None => cache,
            };
            let bshape = if p.heads_first {
                vec![b, 1, s, half]
            } else {
                vec![b, s, 1, half]
            };
            this.reshaped(&format!("{name}_by_head"), per_token, bshape, None)
        };
        let c = rows(self, "cos", cos)?;
        let sn = rows(self, "sin", sin)?;
        let view = self.ty(&x4)?.shape;
        let with_last = |n: usize| -> TensorType {
            let mut shape = view.clone();
            shape[3] = n;
            TensorType { dtype: dt, shape }
        };
        let rotated = self.sliced("rotated", x4.clone(), 3, 0, r, 1, None)?;
        let (x1, x2) = if p.interleaved {
            (
                self.sliced("even", rotated.clone(), 3, 0, half, 2, None)?,
                self.sliced("odd", rotated, 3, 1, half, 2, None)?,
            )
        } else {
            (
                self.sliced("first_half", rotated.clone(), 3, 0, half, 1, None)?,
                self.sliced("second_half", rotated, 3, half, half, 1, None)?,
            )
        };
        let ht = with_last(half);
        let c1 = self.ew(
            "cos_x1",
            Binary::Mul,
            vec![c.clone(), x1.clone()],
            &ht,
            None,
        );
        let s2 = self.ew(
            "sin_x2",
            Binary::Mul,
            vec![sn.clone(), x2.clone()],
            &ht,
            None,
        );
        let real = self.ew("real", Binary::Sub, vec![c1, s2], &ht, None);
        let s1 = self.ew("sin_x1", Binary::Mul, vec![sn, x1], &ht, None);
        let c2 = self.ew("cos_x2", Binary::Mul, vec![c, x2], &ht, None);
        let imag = self.ew("imag", Binary::Add, vec![s1, c2], &ht, None);
        // The last step writes `y` when the view is `y`'s own shape (4-D).
        let passes = r < d;
        let direct = p.heads_first;
        let rot_out = if p.interleaved {
            let mut pair = view.clone();
            pair[3] = half;
            pair.push(1);
            let re = self.reshaped("real_pairs", real, pair.clone(), None)?;
            let im = self.reshaped("imag_pairs", imag, pair.clone(), None)?;
            pair[4] = 2;
            let both = self.joined("pairs", vec![re, im], 4, pair, dt, None);
            let to = (direct && !passes).then(|| y.clone());
            self.reshaped("rotated_out", both, with_last(r).shape, to)?
        } else {
            let to = (direct && !passes).then(|| y.clone());
            self.joined(
                "rotated_out",
                vec![real, imag],
                3,
                with_last(r).shape,
                dt,
                to,
            )
        };
        let out4 = if passes {
            let kept = self.sliced("passed", x4, 3, r, d - r, 1, None)?;
            let to = direct.then(|| y.clone());
            self.joined("out", vec![rot_out, kept], 3, view.clone(), dt, to)
        } else {
            rot_out
        };
        if !direct {
            self.reshaped("unheads", out4, xt.shape.clone(), Some(y))?;
        }
        Ok(())
    }
}
