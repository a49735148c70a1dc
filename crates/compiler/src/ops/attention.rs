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

/// The keys an online-softmax loop walks: `total` keys in blocks of `block`, the queries
/// at keys `past..past + period`.
pub(super) struct KeyBlocks {
    pub total: usize,
    pub block: usize,
    pub past: usize,
    pub period: usize,
}

/// The running state of the recurrence after some blocks.
struct Running {
    max: String,
    sum: String,
    out: String,
}

/// Gives key block `j` (keys `[c0, c1)`): its transposed keys and its values.
pub(super) type FetchBlock<'f, 'b> =
    dyn FnMut(&mut Builder<'b>, usize, usize, usize) -> Result<(String, String), CompileError> + 'f;

impl<'b> Builder<'b> {
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
        let (kt, vt) = (self.ty(&k_t)?, self.ty(&v)?);
        let (b, h, d, skv, dv) = (
            kt.shape[0],
            kt.shape[1],
            kt.shape[2],
            kt.shape[3],
            vt.shape[3],
        );
        let dt = kt.dtype;
        let t = move |shape: Vec<usize>| TensorType { dtype: dt, shape };
        let mut fetch = |this: &mut Self, j: usize, c0: usize, c1: usize| {
            let w = c1 - c0;
            let span = vec![c0 as i64];
            let end = vec![c1 as i64];
            let k_j = this.temp(&format!("k{j}"), t(vec![b, h, d, w]));
            this.push_movement(
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
            let v_j = this.temp(&format!("v{j}"), t(vec![b, h, w, dv]));
            this.push_movement(
                &format!("v{j}"),
                Movement::Slice,
                v.clone(),
                v_j.clone(),
                &[("starts", span), ("ends", end), ("axes", vec![2])],
            )?;
            Ok((k_j, v_j))
        };
        let sq = self.ty(&q)?.shape[2];
        let keys = KeyBlocks {
            total: skv,
            block,
            past: 0,
            period: sq,
        };
        self.online_blocks(q, &keys, &mut fetch, y, scale, causal, "")
    }

    /// The online-softmax loop over the key blocks `keys` describes; `fetch` gives block
    /// `j` (keys `[c0, c1)`) as its transposed keys `[b, h, d, w]` and values `[b, h, w, dv]`
    /// when the loop reaches it. Query row `r` is query `r % keys.period` at key
    /// `keys.past + r % keys.period` (rows may stack several heads' queries); a causal mask
    /// lets it see the keys up to that one. Steps are named with `prefix`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn online_blocks(
        &mut self,
        q: String,
        keys: &KeyBlocks,
        fetch: &mut FetchBlock<'_, 'b>,
        y: String,
        scale: String,
        causal: bool,
        prefix: &str,
    ) -> Result<(), CompileError> {
        let (skv, block, past, period) = (keys.total, keys.block, keys.past, keys.period.max(1));
        if block == 0 {
            return Err(self.err("the attention key block must hold at least one key"));
        }
        let qt = self.ty(&q)?;
        let (b, h, sq) = (qt.shape[0], qt.shape[1], qt.shape[2]);
        let dt = qt.dtype;
        let t = |shape: Vec<usize>| TensorType { dtype: dt, shape };
        let mut state: Option<Running> = None;
        let mut dv = 0;
        for (j, c0) in (0..skv).step_by(block).enumerate() {
            if causal && c0 >= period + past {
                break;
            }
            let c1 = (c0 + block).min(skv);
            let w = c1 - c0;
            let (k_j, v_j) = fetch(self, j, c0, c1)?;
            dv = self.ty(&v_j)?.shape.get(3).copied().unwrap_or(0);
            let scores_ty = t(vec![b, h, sq, w]);
            let full = pointwise_iteration(&scores_ty.shape);
            let rows = reduction_iteration(&scores_ty.shape);
            let stat = row_statistic(&scores_ty);
            let out_ty = t(vec![b, h, sq, dv]);
            let s = self.temp(&format!("{prefix}scores{j}"), scores_ty.clone());
            self.matmul(
                q.clone(),
                k_j,
                s.clone(),
                Some(&format!("{prefix}scores{j}")),
            )?;
            let mut logits = self.temp(&format!("{prefix}scaled{j}"), scores_ty.clone());
            self.push(
                Some(&format!("{prefix}scaled{j}")),
                Binary::Mul,
                vec![s, scale.clone()],
                logits.clone(),
                full.clone(),
            );
            // Only blocks that reach past the diagonal hold masked scores.
            if causal && c1 > past + 1 {
                // Described, not stored: a long sequence's masks would take gigabytes.
                let mask = graph::InitSpec::CausalMask {
                    col0: c0,
                    period,
                    past,
                };
                let mask_name = self.temp(&format!("{prefix}causal_mask{j}"), t(vec![sq, w]));
                self.c.graph.initializers.push(graph::Initializer {
                    name: mask_name.clone(),
                    ty: t(vec![sq, w]),
                    init: mask,
                });
                let masked = self.temp(&format!("{prefix}masked{j}"), scores_ty.clone());
                self.push(
                    Some(&format!("{prefix}masked{j}")),
                    Binary::Add,
                    vec![logits, mask_name],
                    masked.clone(),
                    full.clone(),
                );
                logits = masked;
            }
            let block_max = self.temp(&format!("{prefix}block_max{j}"), stat.clone());
            self.push(
                Some(&format!("{prefix}block_max{j}")),
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
                    let max = self.temp(&format!("{prefix}max{j}"), stat.clone());
                    self.push(
                        Some(&format!("{prefix}max{j}")),
                        Binary::Maximum,
                        vec![prev.max.clone(), block_max],
                        max.clone(),
                        stat_it.clone(),
                    );
                    let diff = self.temp(&format!("{prefix}max_change{j}"), stat.clone());
                    self.push(
                        Some(&format!("{prefix}max_change{j}")),
                        Binary::Sub,
                        vec![prev.max.clone(), max.clone()],
                        diff.clone(),
                        stat_it.clone(),
                    );
                    let alpha = self.temp(&format!("{prefix}rescale{j}"), stat.clone());
                    self.push(
                        Some(&format!("{prefix}rescale{j}")),
                        Unary::Exp,
                        vec![diff],
                        alpha.clone(),
                        stat_it.clone(),
                    );
                    (max, Some(alpha))
                }
            };
            let centred = self.temp(&format!("{prefix}centred{j}"), scores_ty.clone());
            self.push(
                Some(&format!("{prefix}centred{j}")),
                Binary::Sub,
                vec![logits, max.clone()],
                centred.clone(),
                full.clone(),
            );
            let p = self.temp(&format!("{prefix}weights{j}"), scores_ty.clone());
            self.push(
                Some(&format!("{prefix}weights{j}")),
                Unary::Exp,
                vec![centred],
                p.clone(),
                full,
            );
            let block_sum = self.temp(&format!("{prefix}block_sum{j}"), stat.clone());
            self.push(
                Some(&format!("{prefix}block_sum{j}")),
                Reduction::Sum,
                vec![p.clone()],
                block_sum.clone(),
                rows,
            );
            let partial = self.temp(&format!("{prefix}partial{j}"), out_ty.clone());
            self.matmul(
                p,
                v_j,
                partial.clone(),
                Some(&format!("{prefix}partial{j}")),
            )?;
            state = Some(match (state.take(), alpha) {
                (Some(prev), Some(alpha)) => {
                    let sum = self.rescaled_add(
                        &format!("{prefix}sum{j}"),
                        prev.sum,
                        &alpha,
                        block_sum,
                        stat.clone(),
                    )?;
                    let out = self.rescaled_add(
                        &format!("{prefix}out{j}"),
                        prev.out,
                        &alpha,
                        partial,
                        out_ty,
                    )?;
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
            Some(&format!("{prefix}normalised")),
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

/// The optional graph tensor at `i` of `names`, when it is named.
pub(super) fn named(names: &[String], i: usize) -> Option<String> {
    names.get(i).filter(|s| !s.is_empty()).cloned()
}

impl Builder<'_> {
    /// Attention's general form, by decomposition into plain device ops:
    ///
    /// - 3-D `[B, S, H * D]` inputs are reshaped to `[B, S, H, D]` and transposed to heads
    ///   first (and Y back);
    /// - a past key/value is joined with the new ones by a concat along the sequence, which
    ///   is also the present key/value output (a copy when there is no past);
    /// - GQA heads are repeated (reshape, expand), K is transposed, `Q K^T` scaled;
    /// - softcap `c` is `c * tanh(s / c)`;
    /// - a bool mask becomes `where(mask, 0, -inf)`, a mask shorter than the keys is padded
    ///   with `-inf` (concat), and it is added, with the causal mask and the sliding window
    ///   (both offset by the past);
    /// - softmax with a fully masked row giving zeros, as the reference does (a row maximum
    ///   of `-inf` is taken as 0 and a zero row sum as 1);
    /// - the QK output is the scores after softcap (modes 0 and 1), after the mask (2) or
    ///   the softmax (3), as the reference evaluator reads the modes.
    pub(super) fn attention_general(&mut self) -> Result<(), CompileError> {
        let (q, k, v) = (self.input(0)?, self.input(1)?, self.input(2)?);
        let ins = self.node.inputs.clone();
        let outs = self.node.outputs.clone();
        let y = self.output()?;
        let (mask, past_k, past_v) = (named(&ins, 3), named(&ins, 4), named(&ins, 5));
        let nonpad = named(&ins, 6);
        if nonpad.is_some() && past_k.is_some() {
            return Err(self.err("nonpad_kv_seqlen cannot be given with past_key and past_value"));
        }
        let (qt, kt, vt) = (self.ty(&q)?, self.ty(&k)?, self.ty(&v)?);
        let dt = qt.dtype;
        let t = |shape: Vec<usize>| TensorType { dtype: dt, shape };
        let three_d = qt.shape.len() == 3;
        let heads = |this: &Self, name: &str| -> Result<usize, CompileError> {
            match this.node.attrs.get(name) {
                Some(AttrValue::Int(h)) if *h > 0 => Ok(*h as usize),
                _ => Err(this.err(format!(
                    "Attention with 3-D inputs needs a positive '{name}' attribute"
                ))),
            }
        };
        // Q, K and V heads first: [b, h, s, d].
        let (q4, k4, v4) = if three_d {
            if kt.shape.len() != 3 || vt.shape.len() != 3 {
                return Err(self.err("Attention's Q, K and V must all be 3-D or all 4-D"));
            }
            let (hq, hkv) = (heads(self, "q_num_heads")?, heads(self, "kv_num_heads")?);
            let split = |this: &mut Self,
                         x: String,
                         what: &str,
                         h: usize|
             -> Result<String, CompileError> {
                let s = this.ty(&x)?.shape;
                if s[2] % h != 0 {
                    return Err(this.err(format!(
                        "Attention's {what} {s:?} does not split into {h} heads"
                    )));
                }
                let r = this.reshaped(
                    &format!("{what}_split"),
                    x,
                    vec![s[0], s[1], h, s[2] / h],
                    None,
                )?;
                this.transposed(&format!("{what}_heads_first"), r, &[0, 2, 1, 3], None)
            };
            (
                split(self, q, "q", hq)?,
                split(self, k, "k", hkv)?,
                split(self, v, "v", hkv)?,
            )
        } else if qt.shape.len() == 4 && kt.shape.len() == 4 && vt.shape.len() == 4 {
            (q, k, v)
        } else {
            return Err(self.err(
                "Attention is lowered for 3-D [batch, seq, heads * dim] or 4-D [batch, heads, seq, dim] inputs",
            ));
        };
        let (qs, ks, vs) = (
            self.ty(&q4)?.shape,
            self.ty(&k4)?.shape,
            self.ty(&v4)?.shape,
        );
        let (b, hq, sq, d) = (qs[0], qs[1], qs[2], qs[3]);
        let (hkv, skv, dv) = (ks[1], ks[2], vs[3]);
        if hkv == 0 || hq % hkv != 0 {
            return Err(self.err(format!(
                "{hq} query heads do not share {hkv} key/value heads evenly"
            )));
        }
        // Past and new keys and values joined: the present key/value.
        let join = |this: &mut Self,
                    past: Option<String>,
                    new: String,
                    out: Option<String>,
                    what: &str|
         -> Result<(String, usize), CompileError> {
            let nt = this.ty(&new)?;
            let p = match &past {
                Some(p) => this.ty(p)?.shape.get(2).copied().unwrap_or(0),
                None => 0,
            };
            let mut shape = nt.shape.clone();
            shape[2] += p;
            let Some(p_name) = past else {
                return match out {
                    Some(o) => {
                        this.push_movement(
                            &format!("present_{what}"),
                            Movement::Reshape,
                            new,
                            o.clone(),
                            &[],
                        )?;
                        Ok((o, 0))
                    }
                    None => Ok((new, 0)),
                };
            };
            let o = this.target(&format!("present_{what}"), t(shape), out);
            this.push_op(
                Some(&format!("present_{what}")),
                Movement::Concat,
                vec![p_name, new],
                vec![o.clone()],
                pointwise_iteration(&this.ty(&o)?.shape),
                &[("axis", vec![2])],
            );
            Ok((o, p))
        };
        let (k_all, past) = join(self, past_k, k4, named(&outs, 1), "key")?;
        let (v_all, _) = join(self, past_v, v4, named(&outs, 2), "value")?;
        let total = past + skv;
        let group = hq / hkv;
        let repeat = |this: &mut Self, x: String, name: &str, last: usize| {
            if group == 1 {
                return Ok::<String, CompileError>(x);
            }
            let u = this.reshaped(
                &format!("{name}_heads"),
                x,
                vec![b, hkv, 1, total, last],
                None,
            )?;
            let e = this.temp(
                &format!("{name}_repeat"),
                t(vec![b, hkv, group, total, last]),
            );
            this.push_movement(
                &format!("{name}_repeat"),
                Movement::Expand,
                u,
                e.clone(),
                &[],
            )?;
            this.reshaped(
                &format!("{name}_grouped"),
                e,
                vec![b, hq, total, last],
                None,
            )
        };
        let k_rep = repeat(self, k_all, "k", d)?;
        let v_rep = repeat(self, v_all, "v", dv)?;
        let k_t = self.transposed("k_t", k_rep, &[0, 1, 3, 2], None)?;
        let scores_ty = t(vec![b, hq, sq, total]);
        let scores = self.temp("scores", scores_ty.clone());
        self.matmul(q4, k_t, scores.clone(), Some("scores"))?;
        let scale = match self.node.attrs.get("scale") {
            Some(AttrValue::Float(f)) => *f,
            _ => 1.0 / (d as f32).sqrt(),
        };
        let scale_name = self.scalar("scale_value", dt, scale);
        let mut logits = self.ew(
            "scaled",
            Binary::Mul,
            vec![scores, scale_name],
            &scores_ty,
            None,
        );
        let cap = self.float_attr("softcap", 0.0)?;
        if cap > 0.0 {
            let inv = self.scalar("softcap_inverse", dt, 1.0 / cap);
            let c = self.scalar("softcap_value", dt, cap);
            let shrunk = self.ew(
                "softcap_shrunk",
                Binary::Mul,
                vec![logits, inv],
                &scores_ty,
                None,
            );
            let th = self.ew("softcap_tanh", Unary::Tanh, vec![shrunk], &scores_ty, None);
            logits = self.ew("softcapped", Binary::Mul, vec![th, c], &scores_ty, None);
        }
        let mode = self.int_attr("qk_matmul_output_mode", 0)?;
        let qk_out = named(&outs, 3);
        if !(0..=3).contains(&mode) {
            return Err(self.err(format!("qk_matmul_output_mode must be 0 to 3, got {mode}")));
        }
        if let (Some(o), true) = (&qk_out, mode < 2) {
            self.copy(logits.clone(), o.clone())?;
        }
        if let Some(m) = &mask {
            let bias = self.attention_bias(m.clone(), total)?;
            logits = self.ew("masked", Binary::Add, vec![logits, bias], &scores_ty, None);
        }
        let (left, right) = graph::attention_window(&self.node.attrs).map_err(|m| self.err(m))?;
        let windowed = left.is_some() || right.is_some();
        let causal = self.int_attr("is_causal", 0)? != 0;
        if let Some(n) = &nonpad {
            logits = self.external_cache_masks(
                logits,
                n.clone(),
                (b, sq, total),
                causal,
                (left, right),
                &scores_ty,
            )?;
        } else if causal || windowed {
            // Query i sits at i + past: the causal mask and the sliding window, one table.
            let (what, name, step) = if windowed {
                ("window mask", "window_mask", "windowed")
            } else {
                ("causal mask", "causal_mask", "causal")
            };
            let n = self.table(what, sq, total)?;
            let table: Vec<f32> = (0..n)
                .map(|f| {
                    let (at, j) = ((f / total + past) as i64, (f % total) as i64);
                    if causal && j > at || !graph::in_window(at, j, left, right) {
                        f32::NEG_INFINITY
                    } else {
                        0.0
                    }
                })
                .collect();
            let m = self.constant(name, t(vec![sq, total]), graph::InitSpec::Data(table));
            logits = self.ew(step, Binary::Add, vec![logits, m], &scores_ty, None);
        }
        if let (Some(o), 2) = (&qk_out, mode) {
            self.copy(logits.clone(), o.clone())?;
        }
        // Softmax over the keys; a row with every key masked gives zeros.
        let stat = row_statistic(&scores_ty);
        let rows = reduction_iteration(&scores_ty.shape);
        let mx = self.temp("max", stat.clone());
        self.push(
            Some("max"),
            Reduction::Max,
            vec![logits.clone()],
            mx.clone(),
            rows.clone(),
        );
        // Masks, an external cache and a window can mask whole rows; a causal mask alone
        // leaves every query its own key.
        let guarded = mask.is_some() || nonpad.is_some() || windowed;
        let mx = if guarded {
            let ninf = self.scalar("neg_inf", dt, f32::NEG_INFINITY);
            let zero = self.scalar("zero", dt, 0.0);
            let bool_stat = TensorType {
                dtype: DType::Bool,
                shape: stat.shape.clone(),
            };
            let none = self.ew(
                "row_masked",
                Comparison::Equal,
                vec![mx.clone(), ninf],
                &bool_stat,
                None,
            );
            self.ew(
                "safe_max",
                DeviceOpKind::Where,
                vec![none, zero, mx],
                &stat,
                None,
            )
        } else {
            mx
        };
        let centred = self.ew("centred", Binary::Sub, vec![logits, mx], &scores_ty, None);
        let e = self.ew("exp", Unary::Exp, vec![centred], &scores_ty, None);
        let z = self.temp("sum", stat.clone());
        self.push(
            Some("sum"),
            Reduction::Sum,
            vec![e.clone()],
            z.clone(),
            rows,
        );
        let z = if guarded {
            let zero = self.scalar("zero_sum", dt, 0.0);
            let one = self.scalar("one", dt, 1.0);
            let bool_stat = TensorType {
                dtype: DType::Bool,
                shape: stat.shape.clone(),
            };
            let empty = self.ew(
                "row_empty",
                Comparison::Equal,
                vec![z.clone(), zero],
                &bool_stat,
                None,
            );
            self.ew(
                "safe_sum",
                DeviceOpKind::Where,
                vec![empty, one, z],
                &stat,
                None,
            )
        } else {
            z
        };
        let p = self.ew("probs", Binary::RealDiv, vec![e, z], &scores_ty, None);
        if let (Some(o), 3) = (&qk_out, mode) {
            self.copy(p.clone(), o.clone())?;
        }
        if three_d {
            let ctx = self.temp("context", t(vec![b, hq, sq, dv]));
            self.matmul(p, v_rep, ctx.clone(), Some("context"))?;
            let seq_first = self.transposed("seq_first", ctx, &[0, 2, 1, 3], None)?;
            self.reshaped("merged_heads", seq_first, vec![b, sq, hq * dv], Some(y))?;
        } else {
            self.matmul(p, v_rep, y, Some("context"))?;
        }
        Ok(())
    }

    /// The masks of opset 24's external cache, added to `logits` ([b, h, sq, total]): with
    /// `n` the valid keys of each batch (`nonpad`, integers), key `j` is masked from `n` on,
    /// and the query `i` sits at `i + n - sq`, where the causal mask and the sliding window
    /// align. The comparisons run in f32 against constant tables of `j + 1` and of
    /// `d = j - i + sq`: the keys past the valid ones mask `j + 1 > n`, causal masks
    /// `d > n`, the window's left side `n > d + left`, its right side `d - right > n`.
    fn external_cache_masks(
        &mut self,
        mut logits: String,
        nonpad: String,
        (b, sq, total): (usize, usize, usize),
        causal: bool,
        (left, right): (Option<usize>, Option<usize>),
        scores_ty: &TensorType,
    ) -> Result<String, CompileError> {
        let f32_t = |shape: Vec<usize>| TensorType {
            dtype: DType::F32,
            shape,
        };
        let n_f = self.ew(
            "nonpad_f32",
            DeviceOpKind::ToDtype,
            vec![nonpad],
            &f32_t(vec![b]),
            None,
        );
        let n = self.reshaped("nonpad_by_batch", n_f, vec![b, 1, 1, 1], None)?;
        let cells = self.table("external cache mask", sq, total)?;
        // `-inf` where `lhs > rhs` (broadcast to [b, 1, sq, total]), added to the scores.
        let mask_where = |this: &mut Self,
                          step: &str,
                          lhs: String,
                          rhs: String,
                          logits: String|
         -> Result<String, CompileError> {
            let full = vec![b, 1, sq, total];
            let bt = TensorType {
                dtype: DType::Bool,
                shape: full.clone(),
            };
            let cond = this.ew(
                &format!("{step}_cond"),
                Comparison::Greater,
                vec![lhs, rhs],
                &bt,
                None,
            );
            let inf = this.scalar(&format!("{step}_inf"), scores_ty.dtype, f32::NEG_INFINITY);
            let zero = this.scalar(&format!("{step}_zero"), scores_ty.dtype, 0.0);
            let bias_t = TensorType {
                dtype: scores_ty.dtype,
                shape: full,
            };
            let bias = this.ew(
                step,
                DeviceOpKind::Where,
                vec![cond, inf, zero],
                &bias_t,
                None,
            );
            Ok(this.ew(
                &format!("{step}_added"),
                Binary::Add,
                vec![logits, bias],
                scores_ty,
                None,
            ))
        };
        // Keys from n on: masked where j + 1 > n (integers).
        let j1: Vec<f32> = (1..=total).map(|j| j as f32).collect();
        let keys = self.constant(
            "key_count",
            f32_t(vec![1, 1, 1, total]),
            graph::InitSpec::Data(j1),
        );
        logits = mask_where(self, "valid", keys, n.clone(), logits)?;
        let d_table = |shift: i64| -> Vec<f32> {
            (0..cells)
                .map(|f| ((f % total) as i64 - (f / total) as i64 + sq as i64 + shift) as f32)
                .collect()
        };
        if causal {
            let d = self.constant(
                "key_minus_query",
                f32_t(vec![1, 1, sq, total]),
                graph::InitSpec::Data(d_table(0)),
            );
            logits = mask_where(self, "causal", d, n.clone(), logits)?;
        }
        if let Some(l) = left {
            let d = self.constant(
                "window_left",
                f32_t(vec![1, 1, sq, total]),
                graph::InitSpec::Data(d_table(l as i64)),
            );
            logits = mask_where(self, "window_before", n.clone(), d, logits)?;
        }
        if let Some(r) = right {
            let d = self.constant(
                "window_right",
                f32_t(vec![1, 1, sq, total]),
                graph::InitSpec::Data(d_table(-(r as i64))),
            );
            logits = mask_where(self, "window_after", d, n.clone(), logits)?;
        }
        Ok(logits)
    }

    /// The additive bias of an attention mask over `total` keys: a bool mask as
    /// `where(mask, 0, -inf)`, and a mask shorter than the keys padded with `-inf`.
    fn attention_bias(&mut self, m: String, total: usize) -> Result<String, CompileError> {
        let mt = self.ty(&m)?;
        let dt = self.ty(&self.input(0)?)?.dtype;
        let ft = TensorType {
            dtype: dt,
            shape: mt.shape.clone(),
        };
        let bias = if mt.dtype == DType::Bool {
            let zero = self.scalar("mask_zero", dt, 0.0);
            let ninf = self.scalar("mask_neg_inf", dt, f32::NEG_INFINITY);
            self.ew(
                "mask_bias",
                DeviceOpKind::Where,
                vec![m, zero, ninf],
                &ft,
                None,
            )
        } else {
            m
        };
        let last = mt.shape.last().copied().unwrap_or(1);
        if last == 1 || last >= total {
            return Ok(bias);
        }
        let mut pad_shape = mt.shape.clone();
        if let Some(l) = pad_shape.last_mut() {
            *l = total - last;
        }
        let n: usize = pad_shape.iter().product();
        self.table("mask padding", n, 1)?;
        let pad = self.constant(
            "mask_padding",
            TensorType {
                dtype: dt,
                shape: pad_shape,
            },
            graph::InitSpec::Constant(f32::NEG_INFINITY),
        );
        let mut full = mt.shape.clone();
        if let Some(l) = full.last_mut() {
            *l = total;
        }
        let out = self.temp(
            "mask_padded",
            TensorType {
                dtype: dt,
                shape: full.clone(),
            },
        );
        let axis = full.len() as i64 - 1;
        self.push_op(
            Some("mask_padded"),
            Movement::Concat,
            vec![bias, pad],
            vec![out.clone()],
            pointwise_iteration(&full),
            &[("axis", vec![axis])],
        );
        Ok(out)
    }
}
