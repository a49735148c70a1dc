//! RotaryEmbedding (ONNX opset 23): rotary position embeddings (RoPE).
//!
//! The first `rotary_embedding_dim` channels of every head are taken as pairs, either the
//! two halves (`x[i]`, `x[i + r/2]`) or neighbours (`x[2i]`, `x[2i + 1]`, `interleaved`),
//! and each pair is rotated by its token's angle: `(c x1 - s x2, s x1 + c x2)` with `c`
//! and `s` read from the cos and sin caches, at the token's position id when
//! `position_ids` is given (caches `[max_position, r/2]`), else at the token itself
//! (caches `[batch, seq, r/2]`). The other channels pass through. The input is
//! `[batch, heads, seq, head_size]` or `[batch, seq, heads * head_size]` (with
//! `num_heads`). [`rope_plan`] resolves the shapes once for inference, the evaluator and
//! the compiler's lowering.

use crate::eval::EvalCx;
use crate::infer::{need_float, InferCx};
use crate::ops::Attrs;
use crate::tensor::TensorType;

/// The resolved shapes of a RotaryEmbedding node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RopePlan {
    pub batch: usize,
    pub seq: usize,
    pub heads: usize,
    pub head_size: usize,
    /// Channels rotated at the start of each head (even, at most `head_size`).
    pub rotary: usize,
    /// Pairs are neighbours (`x[2i]`, `x[2i + 1]`), not the two halves.
    pub interleaved: bool,
    /// The input is `[batch, heads, seq, head_size]`; else `[batch, seq, heads * head_size]`.
    pub heads_first: bool,
    /// Rows of the caches when `position_ids` picks them; `None` when the caches are
    /// `[batch, seq, rotary / 2]` already.
    pub cache_rows: Option<usize>,
}

impl RopePlan {
    /// Flat index of channel `ch` of head `h` of token `(b, s)` in the input (and output).
    pub fn index(&self, b: usize, s: usize, h: usize, ch: usize) -> usize {
        let (heads, seq, d) = (self.heads, self.seq, self.head_size);
        if self.heads_first {
            ((b * heads + h) * seq + s) * d + ch
        } else {
            ((b * seq + s) * heads + h) * d + ch
        }
    }
}

/// The plan of a RotaryEmbedding on input `x` with caches `cos` and `sin` and, when given,
/// position ids `ids`. Errors name the shape or attribute at fault.
pub fn rope_plan(
    x: &[usize],
    cos: &[usize],
    sin: &[usize],
    ids: Option<&[usize]>,
    attrs: &std::collections::BTreeMap<String, crate::ir::AttrValue>,
) -> Result<RopePlan, String> {
    let a = Attrs(attrs);
    let interleaved = a.flag("interleaved", false)?;
    let num_heads = a.int("num_heads", 0)?;
    let (batch, seq, heads, head_size, heads_first) = match *x {
        [b, h, s, d] => {
            if num_heads != 0 && num_heads != h as i64 {
                return Err(format!(
                    "num_heads is {num_heads} but the input [batch, heads, seq, head_size] {x:?} has {h} heads"
                ));
            }
            (b, s, h, d, true)
        }
        [b, s, hidden] => {
            if num_heads <= 0 {
                return Err(format!(
                    "a 3-D input [batch, seq, hidden] {x:?} needs num_heads (a positive integer), got {num_heads}"
                ));
            }
            let h = num_heads as usize;
            if hidden % h != 0 {
                return Err(format!(
                    "num_heads {h} does not divide the hidden size {hidden} of the input {x:?}"
                ));
            }
            (b, s, h, hidden / h, false)
        }
        _ => {
            return Err(format!(
            "the input must be [batch, heads, seq, head_size] or [batch, seq, hidden], got {x:?}"
        ))
        }
    };
    let rotary = match a.int("rotary_embedding_dim", 0)? {
        0 => head_size,
        r if r > 0 && r as usize <= head_size && r % 2 == 0 => r as usize,
        r => {
            return Err(format!(
                "rotary_embedding_dim must be even and at most the head size {head_size} (0: all of it), got {r}"
            ))
        }
    };
    if rotary % 2 != 0 {
        return Err(format!(
            "the head size {head_size} is odd: rotating all of it needs pairs (give an even rotary_embedding_dim)"
        ));
    }
    if cos != sin {
        return Err(format!(
            "cos_cache {cos:?} and sin_cache {sin:?} must have the same shape"
        ));
    }
    let half = rotary / 2;
    let cache_rows = match ids {
        Some(ids) => {
            if ids != [batch, seq] {
                return Err(format!(
                    "position_ids must be [batch, seq] = [{batch}, {seq}], got {ids:?}"
                ));
            }
            match *cos {
                [rows, h] if h == half => Some(rows),
                _ => {
                    return Err(format!(
                        "with position_ids the caches must be [max_position, {half}] (rotary_embedding_dim / 2), got {cos:?}"
                    ))
                }
            }
        }
        None => {
            if cos != [batch, seq, half] {
                return Err(format!(
                    "without position_ids the caches must be [batch, seq, rotary_embedding_dim / 2] = [{batch}, {seq}, {half}], got {cos:?}"
                ));
            }
            None
        }
    };
    Ok(RopePlan {
        batch,
        seq,
        heads,
        head_size,
        rotary,
        interleaved,
        heads_first,
        cache_rows,
    })
}

/// Output type: the input's, after the checks of [`rope_plan`] and of the dtypes.
pub(crate) fn infer(c: &InferCx) -> Result<Vec<TensorType>, String> {
    let (op, x) = (c.op, c.x);
    need_float(op, x)?;
    let (cos, sin) = (c.get(1)?, c.get(2)?);
    for (name, t) in [("cos_cache", cos), ("sin_cache", sin)] {
        if t.dtype != x.dtype {
            return Err(format!(
                "{op}: {name} is {} but the input is {}",
                t.dtype, x.dtype
            ));
        }
    }
    let ids = c.ins.get(3).and_then(|t| t.as_ref());
    if let Some(t) = ids {
        if t.dtype.is_float() || t.dtype == crate::DType::Bool {
            return Err(format!(
                "{op}: position_ids must be integers, got {}",
                t.dtype
            ));
        }
    }
    rope_plan(
        &x.shape,
        &cos.shape,
        &sin.shape,
        ids.map(|t| t.shape.as_slice()),
        c.a.0,
    )
    .map_err(|m| format!("{op}: {m}"))?;
    Ok(vec![x.clone()])
}

/// The rotation, in f32 (the output is rounded to the input's dtype as every node's is).
pub(crate) fn eval(c: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let x = c.x;
    let (cos, sin) = (c.get(1)?, c.get(2)?);
    let ids = c.ins.get(3).copied().flatten();
    let p = rope_plan(
        &x.shape,
        &cos.shape,
        &sin.shape,
        ids.map(|t| t.shape.as_slice()),
        c.a.0,
    )?;
    let half = p.rotary / 2;
    let mut out = x.data.clone();
    for b in 0..p.batch {
        for s in 0..p.seq {
            let row = match (ids, p.cache_rows) {
                (Some(ids), Some(rows)) => {
                    let id = ids.data[b * p.seq + s];
                    if !(id >= 0.0 && (id as usize) < rows) {
                        return Err(format!(
                            "position id {id} of token ({b}, {s}) is outside the caches' {rows} rows"
                        ));
                    }
                    id as usize
                }
                _ => b * p.seq + s,
            };
            let (cr, sr) = (
                &cos.data[row * half..(row + 1) * half],
                &sin.data[row * half..(row + 1) * half],
            );
            for h in 0..p.heads {
                for i in 0..half {
                    let (j1, j2) = if p.interleaved {
                        (2 * i, 2 * i + 1)
                    } else {
                        (i, i + half)
                    };
                    let (k1, k2) = (p.index(b, s, h, j1), p.index(b, s, h, j2));
                    let (x1, x2) = (x.data[k1], x.data[k2]);
                    out[k1] = cr[i] * x1 - sr[i] * x2;
                    out[k2] = sr[i] * x1 + cr[i] * x2;
                }
            }
        }
    }
    Ok(vec![out])
}
