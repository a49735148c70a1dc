//! PagedAttention: attention of a ragged batch over a paged KV cache, as a serving stack
//! runs it for decode (one new token per sequence), chunked prefill (`Q` new tokens per
//! sequence) and mixed steps (each sequence its own number of new tokens: decode and
//! prefill chunks in one batch).
//!
//! The new tokens come either as `[batch, Q, heads, dim]` (every sequence `Q` of them) or
//! packed, `[tokens, heads, dim]`, sequence after sequence, with an eighth input
//! `query_lens [batch]` giving each sequence's count, as a serving stack flattens a mixed
//! batch so that no sequence is padded to the longest chunk.
//!
//! The cache holds pages `[num_blocks, block_size, kv_heads, head_dim]`; sequence `b` owns
//! the pages its row of the block table names, in order, and holds `seq_lens[b]` tokens
//! after this step, the last `Q` (or `query_lens[b]`) of them new. The op first writes the new keys and values
//! into their pages (token `p` of sequence `b` goes to page `block_tables[b, p / block_size]`,
//! slot `p % block_size`, as a ScatterND would), then every new token `q` (position
//! `seq_lens[b] - Q + q`) attends causally to the sequence's tokens `0..=position`, read
//! through the block table. Sequences keep their own lengths: none is padded to another's.
//!
//! The reference evaluator here computes the dense equivalent: it gathers each sequence's
//! keys and values into one dense run and applies softmax attention to it.

use crate::eval::EvalCx;
use crate::infer::InferCx;
use crate::tensor::TensorType;

/// How a PagedAttention node's new tokens are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryLayout {
    /// `[batch, q_len, heads, dim]`: every sequence brings `q_len` new tokens (1 for decode).
    Uniform {
        /// New tokens per sequence.
        q_len: usize,
    },
    /// `[tokens, heads, dim]`, sequence after sequence, each sequence's count given by the
    /// node's `query_lens` input: a mixed batch of decode and prefill chunks.
    Packed {
        /// New tokens of the whole batch.
        tokens: usize,
    },
}

/// The checked dimensions of one PagedAttention node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagedDims {
    /// Sequences in the batch.
    pub batch: usize,
    /// How the new tokens are laid out.
    pub layout: QueryLayout,
    /// Query heads.
    pub q_heads: usize,
    /// Key/value heads (query heads share them in groups).
    pub kv_heads: usize,
    /// Size of a query/key head.
    pub head_dim: usize,
    /// Size of a value head.
    pub v_dim: usize,
    /// Pages in the cache.
    pub num_blocks: usize,
    /// Tokens per page.
    pub block_size: usize,
    /// Entries per block-table row: the most pages a sequence may own.
    pub max_blocks: usize,
}

/// One sequence of a checked batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagedSequence {
    /// Tokens the sequence holds after the step, its new ones included.
    pub len: usize,
    /// New tokens it brings in this step (1 for decode).
    pub new_tokens: usize,
    /// Its first row among the batch's new tokens (query, key and value rows alike).
    pub first_row: usize,
}

impl PagedDims {
    /// The dimensions of a node from its input types (7, or 8 with `query_lens` for a
    /// packed batch), or a message naming the mismatch.
    pub fn of(types: &[&TensorType]) -> Result<PagedDims, String> {
        let (q, k, v, kc, vc, bt, sl, ql) = match types {
            [q, k, v, kc, vc, bt, sl] => (q, k, v, kc, vc, bt, sl, None),
            [q, k, v, kc, vc, bt, sl, ql] => (q, k, v, kc, vc, bt, sl, Some(ql)),
            _ => return Err("PagedAttention takes 7 inputs, or 8 with query_lens".into()),
        };
        let dims4 = |t: &TensorType, what: &str| -> Result<[usize; 4], String> {
            <[usize; 4]>::try_from(t.shape.as_slice())
                .map_err(|_| format!("PagedAttention's {what} must be 4-D, got {:?}", t.shape))
        };
        let dims3 = |t: &TensorType, what: &str| -> Result<[usize; 3], String> {
            <[usize; 3]>::try_from(t.shape.as_slice()).map_err(|_| {
                format!(
                    "PagedAttention's {what} must be 3-D when query_lens is given (the new tokens packed), got {:?}",
                    t.shape
                )
            })
        };
        // Rows of new tokens, and per row heads and sizes, of query, key and value.
        let (layout, rows, [hq, d], [krows, hkv, kd], [vrows, vh, dv]) = match ql {
            None => {
                let [b, ql, hq, d] = dims4(q, "query [batch, q_len, q_heads, head_dim]")?;
                let [kb, kq, hkv, kd] = dims4(k, "key [batch, q_len, kv_heads, head_dim]")?;
                let [vb, vq, vh, dv] = dims4(v, "value [batch, q_len, kv_heads, v_dim]")?;
                if (kb, kq) != (b, ql) || (vb, vq) != (b, ql) {
                    return Err(format!(
                        "PagedAttention's new key {:?} and value {:?} must match the query {:?} in batch and tokens",
                        k.shape, v.shape, q.shape
                    ));
                }
                let rows = b.saturating_mul(ql);
                (
                    QueryLayout::Uniform { q_len: ql },
                    rows,
                    [hq, d],
                    [rows, hkv, kd],
                    [rows, vh, dv],
                )
            }
            Some(_) => {
                let [t, hq, d] = dims3(q, "query [tokens, q_heads, head_dim]")?;
                let kd3 = dims3(k, "key [tokens, kv_heads, head_dim]")?;
                let vd3 = dims3(v, "value [tokens, kv_heads, v_dim]")?;
                (QueryLayout::Packed { tokens: t }, t, [hq, d], kd3, vd3)
            }
        };
        if krows != rows || vrows != rows || kd != d || vh != hkv {
            return Err(format!(
                "PagedAttention's new key {:?} and value {:?} must match the query {:?} in tokens, heads and head size",
                k.shape, v.shape, q.shape
            ));
        }
        let [nb, bs, ch, cd] = dims4(kc, "key cache [num_blocks, block_size, kv_heads, head_dim]")?;
        let [vnb, vbs, vch, vcd] =
            dims4(vc, "value cache [num_blocks, block_size, kv_heads, v_dim]")?;
        if (ch, cd) != (hkv, d) || (vnb, vbs, vch, vcd) != (nb, bs, hkv, dv) {
            return Err(format!(
                "PagedAttention's key cache {:?} and value cache {:?} must be [num_blocks, block_size, {hkv}, {d}] and [num_blocks, block_size, {hkv}, {dv}]",
                kc.shape, vc.shape
            ));
        }
        if hkv == 0 || hq % hkv != 0 {
            return Err(format!(
                "{hq} query heads do not share {hkv} key/value heads evenly"
            ));
        }
        // The batch: the query's first dim, or for a packed query the block tables' rows.
        let batch = match layout {
            QueryLayout::Uniform { .. } => q.shape.first().copied(),
            QueryLayout::Packed { .. } => bt.shape.first().copied(),
        };
        let (b, max_blocks) = match (batch, bt.shape.as_slice()) {
            (Some(b), [r, m]) if *r == b => (b, *m),
            (b, s) => {
                return Err(format!(
                    "PagedAttention's block tables must be [{}, max_blocks], got {s:?}",
                    b.map_or("batch".to_string(), |b| b.to_string())
                ))
            }
        };
        if sl.shape != [b] {
            return Err(format!(
                "PagedAttention's sequence lengths must be [{b}], got {:?}",
                sl.shape
            ));
        }
        if let Some(ql) = ql {
            if ql.shape != [b] {
                return Err(format!(
                    "PagedAttention's query lengths must be [{b}], one per sequence, got {:?}",
                    ql.shape
                ));
            }
        }
        if rows == 0 || bs == 0 || nb == 0 || b == 0 {
            return Err(
                "PagedAttention needs at least one sequence, new token, page and page slot".into(),
            );
        }
        Ok(PagedDims {
            batch: b,
            layout,
            q_heads: hq,
            kv_heads: hkv,
            head_dim: d,
            v_dim: dv,
            num_blocks: nb,
            block_size: bs,
            max_blocks,
        })
    }

    /// New tokens of the whole batch: the rows of the query, key and value.
    pub fn new_rows(&self) -> usize {
        match self.layout {
            QueryLayout::Uniform { q_len } => self.batch.saturating_mul(q_len),
            QueryLayout::Packed { tokens } => tokens,
        }
    }

    /// The shape of output Y: the query's, with value heads.
    pub fn output_shape(&self) -> Vec<usize> {
        match self.layout {
            QueryLayout::Uniform { q_len } => vec![self.batch, q_len, self.q_heads, self.v_dim],
            QueryLayout::Packed { tokens } => vec![tokens, self.q_heads, self.v_dim],
        }
    }
}

/// Checks a batch's block tables, sequence lengths and (for a packed batch) query lengths
/// against the cache: every sequence brings at least one new token, the query lengths add
/// up to the new tokens given, every length covers its new tokens and fits its pages, every
/// page in use lies inside the cache and no page is used twice. Returns the sequences;
/// errors name the sequence and page.
pub fn check_batch(
    dims: &PagedDims,
    block_tables: &[f32],
    seq_lens: &[f32],
    query_lens: Option<&[f32]>,
) -> Result<Vec<PagedSequence>, String> {
    let mut seqs = Vec::with_capacity(dims.batch);
    let mut owner: Vec<Option<(usize, usize)>> = vec![None; dims.num_blocks];
    let rows = dims.new_rows();
    let mut first_row = 0usize;
    for b in 0..dims.batch {
        let new_tokens = match (dims.layout, query_lens) {
            (QueryLayout::Uniform { q_len }, None) => q_len,
            (QueryLayout::Uniform { .. }, Some(_)) => {
                return Err(
                    "query lengths are given only with a packed query [tokens, heads, dim]".into(),
                )
            }
            (QueryLayout::Packed { .. }, None) => {
                return Err("a packed query needs its query lengths (input 7)".into())
            }
            (QueryLayout::Packed { .. }, Some(ql)) => {
                let q = ql.get(b).copied().unwrap_or(0.0);
                if q.is_nan() || q < 1.0 || q.fract() != 0.0 || q > rows as f32 {
                    return Err(format!(
                        "sequence {b}: query length {q} is not a count of new tokens from 1 to {rows}"
                    ));
                }
                q as usize
            }
        };
        let end = first_row.saturating_add(new_tokens);
        if end > rows {
            return Err(format!(
                "sequence {b}: its {new_tokens} new tokens (rows {first_row}..{end}) run past the {rows} rows of the query"
            ));
        }
        let l = seq_lens.get(b).copied().unwrap_or(0.0);
        let cap = dims.max_blocks * dims.block_size;
        if l.is_nan() || l < new_tokens as f32 || l.fract() != 0.0 {
            return Err(format!(
                "sequence {b}: length {l} does not cover its {new_tokens} new tokens"
            ));
        }
        let l = l as usize;
        if l > cap {
            let last = dims.max_blocks.checked_sub(1).and_then(|j| {
                block_tables
                    .get(b * dims.max_blocks + j)
                    .map(|p| format!("; its last, block {j}, is page {p}"))
            });
            return Err(format!(
                "sequence {b}: length {l} is beyond its {} pages of {} tokens ({cap} tokens{})",
                dims.max_blocks,
                dims.block_size,
                last.unwrap_or_default()
            ));
        }
        for j in 0..l.div_ceil(dims.block_size) {
            let p = block_tables
                .get(b * dims.max_blocks + j)
                .copied()
                .unwrap_or(-1.0);
            if p.is_nan() || p < 0.0 || p >= dims.num_blocks as f32 || p.fract() != 0.0 {
                return Err(format!(
                    "sequence {b}: block table entry {j} points at page {p}, outside the cache's {} pages",
                    dims.num_blocks
                ));
            }
            let p = p as usize;
            if let Some(slot) = owner.get_mut(p) {
                if let Some((ob, oj)) = *slot {
                    return Err(format!(
                        "sequence {b}: page {p} (its block {j}) is also block {oj} of sequence {ob}; pages must not overlap"
                    ));
                }
                *slot = Some((b, j));
            }
        }
        seqs.push(PagedSequence {
            len: l,
            new_tokens,
            first_row,
        });
        first_row = end;
    }
    if first_row != rows {
        return Err(format!(
            "the query lengths add up to {first_row} new tokens, but the query has {rows} rows"
        ));
    }
    Ok(seqs)
}

/// The load-time check of a PagedAttention node whose block tables and sequence lengths
/// are literal initializers (a step's schedule fixed in the graph): [`check_batch`] on
/// them, so a bad schedule is an error when the graph loads, not when it runs. Tables given
/// as graph inputs are checked when a run brings their values.
pub(crate) fn check_constants(
    inits: &[crate::ir::Initializer],
    node: &crate::ir::Node,
    types: &[Option<TensorType>],
) -> Result<(), String> {
    let literal = |i: usize| -> Option<Vec<f32>> {
        let name = node.inputs.get(i)?;
        let init = inits.iter().find(|t| &t.name == name)?;
        let n = init.ty.numel();
        match &init.init {
            crate::ir::InitSpec::Data(d) => Some(d.clone()),
            crate::ir::InitSpec::Zeros => Some(vec![0.0; n]),
            crate::ir::InitSpec::Ones => Some(vec![1.0; n]),
            crate::ir::InitSpec::Constant(v) => Some(vec![*v; n]),
            _ => None,
        }
    };
    let (Some(tables), Some(lens)) = (literal(5), literal(6)) else {
        return Ok(());
    };
    let query_lens = if node.inputs.len() > 7 {
        match literal(7) {
            Some(q) => Some(q),
            None => return Ok(()),
        }
    } else {
        None
    };
    let ts: Vec<&TensorType> = types.iter().flatten().collect();
    let dims = PagedDims::of(&ts)?;
    check_batch(&dims, &tables, &lens, query_lens.as_deref()).map(|_| ())
}

/// The node's inputs present: 7, or 8 when `query_lens` is given.
fn present_inputs(ins: usize, given: impl Fn(usize) -> bool) -> usize {
    if ins > 7 && given(7) {
        8
    } else {
        7
    }
}

/// Type inference: Y (`[batch, q_len, q_heads, v_dim]`, or `[tokens, q_heads, v_dim]` when
/// packed) and the updated key and value caches.
pub(crate) fn infer(cx: &InferCx) -> Result<Vec<TensorType>, String> {
    if cx.node.outputs.len() > 3 {
        return Err("PagedAttention has at most 3 outputs".into());
    }
    let n = present_inputs(cx.ins.len(), |i| cx.ins.get(i).is_some_and(|t| t.is_some()));
    let ts: Vec<&TensorType> = (0..n).map(|i| cx.get(i)).collect::<Result<_, _>>()?;
    let dims = PagedDims::of(&ts)?;
    let dt = cx.x.dtype;
    if !dt.is_float() {
        return Err(format!("PagedAttention needs a float query, got {dt}"));
    }
    for (t, what) in ts[1..5]
        .iter()
        .zip(["key", "value", "key cache", "value cache"])
    {
        if t.dtype != dt {
            return Err(format!(
                "PagedAttention's {what} is {}, the query {dt} (insert a Cast)",
                t.dtype
            ));
        }
    }
    for (t, what) in ts[5..]
        .iter()
        .zip(["block tables", "sequence lengths", "query lengths"])
    {
        if !t.dtype.is_int() {
            return Err(format!(
                "PagedAttention's {what} must be integers, got {}",
                t.dtype
            ));
        }
    }
    Ok(vec![
        TensorType::new(dt, dims.output_shape()),
        ts[3].clone(),
        ts[4].clone(),
    ])
}

/// Reference evaluation (see the module doc).
pub(crate) fn eval(cx: &EvalCx) -> Result<Vec<Vec<f32>>, String> {
    let n = present_inputs(cx.ins.len(), |i| cx.ins.get(i).is_some_and(|t| t.is_some()));
    let ins: Vec<_> = (0..n).map(|i| cx.get(i)).collect::<Result<_, _>>()?;
    let types: Vec<TensorType> = ins
        .iter()
        .map(|t| TensorType::new(t.dtype, t.shape.clone()))
        .collect();
    let refs: Vec<&TensorType> = types.iter().collect();
    let d = PagedDims::of(&refs)?;
    let seqs = check_batch(
        &d,
        &ins[5].data,
        &ins[6].data,
        ins.get(7).map(|t| t.data.as_slice()),
    )?;
    let scale = cx.a.float("scale", 1.0 / (d.head_dim as f32).sqrt())?;
    let (q, k_new, v_new) = (&ins[0].data, &ins[1].data, &ins[2].data);
    let mut kc = ins[3].data.clone();
    let mut vc = ins[4].data.clone();
    let (hkv, dk, dv, bs) = (d.kv_heads, d.head_dim, d.v_dim, d.block_size);
    let page = |b: usize, p: usize| -> usize {
        let e = ins[5]
            .data
            .get(b * d.max_blocks + p / bs)
            .copied()
            .unwrap_or(0.0);
        e as usize * bs + p % bs
    };
    // The new keys and values into their pages.
    for (b, s) in seqs.iter().enumerate() {
        for t in 0..s.new_tokens {
            let slot = page(b, s.len - s.new_tokens + t);
            let src = (s.first_row + t) * hkv;
            for h in 0..hkv {
                for e in 0..dk {
                    if let (Some(o), Some(&x)) = (
                        kc.get_mut((slot * hkv + h) * dk + e),
                        k_new.get((src + h) * dk + e),
                    ) {
                        *o = x;
                    }
                }
                for e in 0..dv {
                    if let (Some(o), Some(&x)) = (
                        vc.get_mut((slot * hkv + h) * dv + e),
                        v_new.get((src + h) * dv + e),
                    ) {
                        *o = x;
                    }
                }
            }
        }
    }
    // Dense attention of each new token over its sequence's gathered keys.
    let group = d.q_heads / hkv;
    let mut y = vec![0.0f32; d.new_rows() * d.q_heads * dv];
    let mut scores = Vec::new();
    for (b, s) in seqs.iter().enumerate() {
        let slots: Vec<usize> = (0..s.len).map(|p| page(b, p)).collect();
        for t in 0..s.new_tokens {
            let visible = s.len - s.new_tokens + t + 1;
            let row = s.first_row + t;
            for h in 0..d.q_heads {
                let kvh = h / group;
                let qrow = (row * d.q_heads + h) * dk;
                scores.clear();
                for &s in &slots[..visible] {
                    let kr = (s * hkv + kvh) * dk;
                    let dot: f32 = (0..dk)
                        .map(|e| {
                            q.get(qrow + e).copied().unwrap_or(0.0)
                                * kc.get(kr + e).copied().unwrap_or(0.0)
                        })
                        .sum();
                    scores.push(dot * scale);
                }
                let m = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut z = 0.0f32;
                for s in scores.iter_mut() {
                    *s = (*s - m).exp();
                    z += *s;
                }
                let yrow = (row * d.q_heads + h) * dv;
                for (&w, &s) in scores.iter().zip(&slots) {
                    let vr = (s * hkv + kvh) * dv;
                    for e in 0..dv {
                        if let (Some(o), Some(&x)) = (y.get_mut(yrow + e), vc.get(vr + e)) {
                            *o += w / z * x;
                        }
                    }
                }
            }
        }
    }
    let mut outs = vec![y, kc, vc];
    outs.truncate(cx.out.len());
    Ok(outs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims() -> PagedDims {
        PagedDims {
            batch: 2,
            layout: QueryLayout::Uniform { q_len: 1 },
            q_heads: 2,
            kv_heads: 1,
            head_dim: 4,
            v_dim: 4,
            num_blocks: 4,
            block_size: 2,
            max_blocks: 2,
        }
    }

    #[test]
    fn a_block_table_pointing_outside_the_cache_names_the_sequence_and_page() {
        let e = check_batch(&dims(), &[0., 1., 7., 2.], &[3., 1.], None).unwrap_err();
        assert!(e.contains("sequence 1") && e.contains("page 7"), "{e}");
    }

    #[test]
    fn a_length_beyond_the_pages_is_an_error() {
        let e = check_batch(&dims(), &[0., 1., 2., 3.], &[5., 1.], None).unwrap_err();
        assert!(e.contains("sequence 0") && e.contains("beyond"), "{e}");
        assert!(e.contains("page 1"), "{e}");
    }

    #[test]
    fn overlapping_pages_name_both_sequences() {
        let e = check_batch(&dims(), &[0., 1., 1., 3.], &[3., 1.], None).unwrap_err();
        assert!(e.contains("sequence 1") && e.contains("page 1"), "{e}");
        assert!(e.contains("sequence 0"), "{e}");
    }

    /// A one-node graph: 2 sequences, 1 new token each, 4 pages of 2 tokens, the schedule
    /// as initializers.
    fn graph(tables: &str, lens: &str) -> Result<crate::Graph, crate::GraphError> {
        crate::load_json(&format!(
            r#"{{"format": "spyre-graph", "version": 1, "name": "p",
            "inputs": [
              {{"name": "q", "dtype": "f32", "shape": [2, 1, 2, 4]}},
              {{"name": "k", "dtype": "f32", "shape": [2, 1, 1, 4]}},
              {{"name": "v", "dtype": "f32", "shape": [2, 1, 1, 4]}},
              {{"name": "kc", "dtype": "f32", "shape": [4, 2, 1, 4]}},
              {{"name": "vc", "dtype": "f32", "shape": [4, 2, 1, 4]}}],
            "initializers": [
              {{"name": "bt", "dtype": "i64", "shape": [2, 2], "data": {tables}}},
              {{"name": "sl", "dtype": "i64", "shape": [2], "data": {lens}}}],
            "nodes": [{{"name": "pa", "op": "PagedAttention",
              "inputs": ["q", "k", "v", "kc", "vc", "bt", "sl"], "outputs": ["y"]}}],
            "outputs": ["y"]}}"#
        ))
    }

    #[test]
    fn a_bad_schedule_in_the_graph_is_an_error_when_it_loads() {
        assert!(graph("[0, 1, 2, 3]", "[3, 1]").is_ok());
        for (tables, lens, says) in [
            (
                "[0, 1, 7, 2]",
                "[3, 1]",
                "sequence 1: block table entry 0 points at page 7",
            ),
            ("[0, 1, 2, 3]", "[5, 1]", "sequence 0: length 5 is beyond"),
            ("[0, 1, 1, 3]", "[3, 1]", "sequence 1: page 1"),
        ] {
            let e = graph(tables, lens).unwrap_err().to_string();
            assert!(e.contains(says), "{tables} {lens}: {e}");
            assert!(e.contains("node 'pa'"), "{e}");
        }
    }

    #[test]
    fn unused_table_entries_may_repeat_pages() {
        let seqs = check_batch(&dims(), &[0., 0., 1., 0.], &[2., 1.], None).unwrap();
        let lens: Vec<usize> = seqs.iter().map(|s| s.len).collect();
        assert_eq!(lens, vec![2, 1]);
    }

    fn packed() -> PagedDims {
        PagedDims {
            layout: QueryLayout::Packed { tokens: 4 },
            ..dims()
        }
    }

    #[test]
    fn a_packed_batch_gives_each_sequence_its_rows() {
        let seqs =
            check_batch(&packed(), &[0., 1., 2., 3.], &[3., 2.], Some(&[1., 3.])).unwrap_err();
        // 3 new tokens do not fit a sequence of 2.
        assert!(
            seqs.contains("sequence 1") && seqs.contains("3 new tokens"),
            "{seqs}"
        );
        let seqs = check_batch(&packed(), &[0., 1., 2., 3.], &[4., 3.], Some(&[1., 3.])).unwrap();
        let rows: Vec<(usize, usize, usize)> = seqs
            .iter()
            .map(|s| (s.len, s.new_tokens, s.first_row))
            .collect();
        assert_eq!(rows, vec![(4, 1, 0), (3, 3, 1)]);
    }

    #[test]
    fn query_lengths_must_add_up_to_the_query_rows() {
        let e = check_batch(&packed(), &[0., 1., 2., 3.], &[4., 3.], Some(&[1., 2.])).unwrap_err();
        assert!(e.contains("add up to 3") && e.contains("4 rows"), "{e}");
        let e = check_batch(&packed(), &[0., 1., 2., 3.], &[4., 4.], Some(&[2., 3.])).unwrap_err();
        assert!(e.contains("sequence 1") && e.contains("run past"), "{e}");
        let e = check_batch(&packed(), &[0., 1., 2., 3.], &[4., 3.], Some(&[0., 4.])).unwrap_err();
        assert!(e.contains("sequence 0: query length 0"), "{e}");
        let e = check_batch(&packed(), &[0., 1., 2., 3.], &[4., 3.], None).unwrap_err();
        assert!(e.contains("needs its query lengths"), "{e}");
        let e = check_batch(&dims(), &[0., 1., 2., 3.], &[3., 1.], Some(&[1., 1.])).unwrap_err();
        assert!(e.contains("only with a packed query"), "{e}");
    }

    #[test]
    fn a_packed_query_takes_3_d_tensors_and_one_length_per_sequence() {
        let t = |s: &[usize]| TensorType::new(crate::DType::F32, s.to_vec());
        let i = |s: &[usize]| TensorType::new(crate::DType::I64, s.to_vec());
        let (q, k, kc, bt, sl) = (
            t(&[5, 2, 4]),
            t(&[5, 1, 4]),
            t(&[4, 2, 1, 4]),
            i(&[2, 2]),
            i(&[2]),
        );
        let d = PagedDims::of(&[&q, &k, &k, &kc, &kc, &bt, &sl, &i(&[2])]).unwrap();
        assert_eq!(d.layout, QueryLayout::Packed { tokens: 5 });
        assert_eq!((d.batch, d.new_rows()), (2, 5));
        assert_eq!(d.output_shape(), vec![5, 2, 4]);
        let e = PagedDims::of(&[&q, &k, &k, &kc, &kc, &bt, &sl, &i(&[3])]).unwrap_err();
        assert!(e.contains("query lengths must be [2]"), "{e}");
        let q4 = t(&[2, 1, 2, 4]);
        let e = PagedDims::of(&[&q4, &k, &k, &kc, &kc, &bt, &sl, &i(&[2])]).unwrap_err();
        assert!(e.contains("must be 3-D when query_lens is given"), "{e}");
        let e = PagedDims::of(&[&q, &t(&[4, 1, 4]), &k, &kc, &kc, &bt, &sl, &i(&[2])]).unwrap_err();
        assert!(e.contains("must match the query"), "{e}");
    }
}
