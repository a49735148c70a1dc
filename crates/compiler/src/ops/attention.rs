//! Attention as an online-softmax loop over key blocks, unrolled into device ops.
//!
//! For key block `j` (keys `[c0, c1)`), with running row maximum `m`, row sum `l` and
//! unnormalised output `o`:
//!
//! ```text
//! s_j   = (q k_j^T) * scale (+ causal mask)      [b, h, sq, w]
//! m'    = max(m, rowmax(s_j))
//! a     = exp(m - m')                             rescales what earlier blocks added
//! p_j   = exp(s_j - m')
//! l     = l * a + rowsum(p_j)
//! o     = o * a + p_j v_j
//! ```
//!
//! and finally `y = o / l`. No tensor spans all keys, so the scores of a long sequence never
//! need to fit at once. Under a causal mask, blocks whose first key comes after the last
//! query are skipped: every score in them is masked.

use super::*;

/// The running state of the recurrence after some blocks.
struct Running {
    max: String,
    sum: String,
    out: String,
}

impl Builder<'_> {
    /// Online-softmax attention with `block` keys per block. `q` is `[b, h, sq, d]`, `k_t`
    /// the keys transposed `[b, h, d, skv]`, `v` `[b, h, skv, dv]`, `scale` a one-element
    /// initializer; `causal` masks key `j > i` for query `i`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn online_attention(
        &mut self,
        q: String,
        k_t: String,
        v: String,
        y: String,
        scale: String,
        causal: bool,
        block: usize,
    ) -> Result<(), CompileError> {
        if block == 0 {
            return Err(self.err("the attention key block must hold at least one key"));
        }
        let (qt, kt, vt) = (self.ty(&q)?, self.ty(&k_t)?, self.ty(&v)?);
        let (b, h, sq) = (qt.shape[0], qt.shape[1], qt.shape[2]);
        let (d, skv, dv) = (kt.shape[2], kt.shape[3], vt.shape[3]);
        let dt = qt.dtype;
        let t = |shape: Vec<usize>| TensorType { dtype: dt, shape };
        let mut state: Option<Running> = None;
        for (j, c0) in (0..skv).step_by(block).enumerate() {
            if causal && c0 >= sq {
                break;
            }
            let c1 = (c0 + block).min(skv);
            let w = c1 - c0;
            let span = vec![c0 as i64];
            let end = vec![c1 as i64];
            let k_j = self.temp(&format!("k{j}"), t(vec![b, h, d, w]));
            self.push_movement(
                &format!("k{j}"),
                Movement::Slice,
                k_t.clone(),
                k_j.clone(),
                &[
                    ("starts", span.clone()),
                    ("ends", end.clone()),
                    ("axes", vec![3]),
                ],
            )?;
            let v_j = self.temp(&format!("v{j}"), t(vec![b, h, w, dv]));
            self.push_movement(
                &format!("v{j}"),
                Movement::Slice,
                v.clone(),
                v_j.clone(),
                &[("starts", span), ("ends", end), ("axes", vec![2])],
            )?;
            let scores_ty = t(vec![b, h, sq, w]);
            let full = pointwise_iteration(&scores_ty.shape);
            let rows = reduction_iteration(&scores_ty.shape);
            let stat = row_statistic(&scores_ty);
            let out_ty = t(vec![b, h, sq, dv]);
            let s = self.temp(&format!("scores{j}"), scores_ty.clone());
            self.matmul(q.clone(), k_j, s.clone(), Some(&format!("scores{j}")))?;
            let mut logits = self.temp(&format!("scaled{j}"), scores_ty.clone());
            self.push(
                Some(&format!("scaled{j}")),
                Binary::Mul,
                vec![s, scale.clone()],
                logits.clone(),
                full.clone(),
            );
            // Only blocks that reach past the diagonal hold masked scores.
            if causal && c1 > 1 {
                let mask: Vec<f32> = (0..sq * w)
                    .map(|i| {
                        if c0 + i % w > i / w {
                            f32::NEG_INFINITY
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let mask_name = self.temp(&format!("causal_mask{j}"), t(vec![sq, w]));
                self.c.graph.initializers.push(graph::Initializer {
                    name: mask_name.clone(),
                    ty: t(vec![sq, w]),
                    init: graph::InitSpec::Data(mask),
                });
                let masked = self.temp(&format!("masked{j}"), scores_ty.clone());
                self.push(
                    Some(&format!("masked{j}")),
                    Binary::Add,
                    vec![logits, mask_name],
                    masked.clone(),
                    full.clone(),
                );
                logits = masked;
            }
            let block_max = self.temp(&format!("block_max{j}"), stat.clone());
            self.push(
                Some(&format!("block_max{j}")),
                Reduction::Max,
                vec![logits.clone()],
                block_max.clone(),
                rows.clone(),
            );
            let stat_it = pointwise_iteration(&stat.shape);
            // The new running maximum and, after the first block, the rescale factor.
            let (max, alpha) = match &state {
                None => (block_max, None),
                Some(prev) => {
                    let max = self.temp(&format!("max{j}"), stat.clone());
                    self.push(
                        Some(&format!("max{j}")),
                        Binary::Maximum,
                        vec![prev.max.clone(), block_max],
                        max.clone(),
                        stat_it.clone(),
                    );
                    let diff = self.temp(&format!("max_change{j}"), stat.clone());
                    self.push(
                        Some(&format!("max_change{j}")),
                        Binary::Sub,
                        vec![prev.max.clone(), max.clone()],
                        diff.clone(),
                        stat_it.clone(),
                    );
                    let alpha = self.temp(&format!("rescale{j}"), stat.clone());
                    self.push(
                        Some(&format!("rescale{j}")),
                        Unary::Exp,
                        vec![diff],
                        alpha.clone(),
                        stat_it.clone(),
                    );
                    (max, Some(alpha))
                }
            };
            let centred = self.temp(&format!("centred{j}"), scores_ty.clone());
            self.push(
                Some(&format!("centred{j}")),
                Binary::Sub,
                vec![logits, max.clone()],
                centred.clone(),
                full.clone(),
            );
            let p = self.temp(&format!("weights{j}"), scores_ty.clone());
            self.push(
                Some(&format!("weights{j}")),
                Unary::Exp,
                vec![centred],
                p.clone(),
                full,
            );
            let block_sum = self.temp(&format!("block_sum{j}"), stat.clone());
            self.push(
                Some(&format!("block_sum{j}")),
                Reduction::Sum,
                vec![p.clone()],
                block_sum.clone(),
                rows,
            );
            let partial = self.temp(&format!("partial{j}"), out_ty.clone());
            self.matmul(p, v_j, partial.clone(), Some(&format!("partial{j}")))?;
            state = Some(match (state.take(), alpha) {
                (Some(prev), Some(alpha)) => {
                    let sum = self.rescaled_add(
                        &format!("sum{j}"),
                        prev.sum,
                        &alpha,
                        block_sum,
                        stat.clone(),
                    )?;
                    let out =
                        self.rescaled_add(&format!("out{j}"), prev.out, &alpha, partial, out_ty)?;
                    Running { max, sum, out }
                }
                _ => Running {
                    max,
                    sum: block_sum,
                    out: partial,
                },
            });
        }
        let Some(last) = state else {
            return Err(self.err("attention over zero keys has no value"));
        };
        let it = pointwise_iteration(&[b, h, sq, dv]);
        self.push(
            Some("normalised"),
            Binary::RealDiv,
            vec![last.out, last.sum],
            y,
            it,
        );
        Ok(())
    }

    /// `acc * alpha + add`, the running-state update of one block.
    fn rescaled_add(
        &mut self,
        step: &str,
        acc: String,
        alpha: &str,
        add: String,
        ty: TensorType,
    ) -> Result<String, CompileError> {
        let it = pointwise_iteration(&ty.shape);
        let scaled = self.temp(&format!("{step}_rescaled"), ty.clone());
        self.push(
            Some(&format!("{step}_rescaled")),
            Binary::Mul,
            vec![acc, alpha.to_string()],
            scaled.clone(),
            it.clone(),
        );
        let next = self.temp(step, ty);
        self.push(Some(step), Binary::Add, vec![scaled, add], next.clone(), it);
        Ok(next)
    }
}
