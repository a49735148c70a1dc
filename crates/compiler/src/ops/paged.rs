//! PagedAttention over a paged KV cache, for one step whose schedule (block tables,
//! sequence lengths and, for a packed mixed batch, query lengths) is a constant of the
//! compile, as a serving stack compiles each step's batch shape.
//!
//! | step | device ops |
//! |---|---|
//! | cache update (ScatterND-style) | reshape of each cache to pages `[blocks, block_size, kv_heads * head_dim]` and of the new keys/values to rows; batchmatmul of a constant one-hot `[blocks, block_size, new tokens]` by the new rows (each new token into its slot); where with a constant mask of the written slots (new rows there, the old cache elsewhere); reshape back; reshape to one row per page `[blocks, block_size * width]` |
//! | per sequence `b`: its keys and values | per key block of whole pages, one gather of the block's rows of the page table, whose constant index vector holds the pages' block table entries, read by the gather kernel through a KTIR indirect access tile; reshaped to `[pages, slots, kv_heads, dim]`, transposed to `[kv_heads, dim, pages, slots]` (keys) or `[kv_heads, pages, slots, dim]` (values), merged to `[1, kv_heads, dim, slots]` or `[1, kv_heads, slots, dim]` and cut to the slots in use; GQA heads repeated (reshape, expand) |
//! | per sequence `b`: attention | its queries sliced out (its batch entry, or its rows of a packed batch) and moved heads first; the online-softmax loop of `attention` with one key block per block of pages (the attention key block option, in whole pages, or up to [`PAGED_KEY_BLOCK`] keys), causal with the new tokens at the end of the sequence; the result moved back to `[1, Q, heads, dim]` (packed: `[Q, heads, dim]`) |
//! | output | concat of the sequences' results |
//!
//! Each sequence is attended over exactly its own length: no sequence is padded to
//! another's (the public alignment rules are options whose cost the compile reports, see
//! [`crate::PaddingReport`]). Work division: the cache update and the page table split
//! the cache's pages (and slots) over the cores, so no core holds the whole cache;
//! sequences then run one after another, each over all cores: a block's gather splits its
//! pages and each page's sticks over the cores, and the matmuls and softmax steps split
//! their rows, heads and sticks by the ordinary rules of `workdiv`.

use super::attention::{named, KeyBlocks};
use super::*;

/// The most keys per online-softmax block of a paged sequence when the options set no
/// attention key block (rounded down to whole pages, at least one page). An assumption of
/// this compiler, not a public figure: a sequence of a few thousand tokens takes only a few
/// blocks, and a decode step's scores stay small.
pub(crate) const PAGED_KEY_BLOCK: usize = 1024;

impl Builder<'_> {
    /// The values of a constant initializer (`None` for a graph input or a seeded one).
    fn const_data(&self, name: &str) -> Option<Vec<f32>> {
        let init = self.c.graph.initializers.iter().find(|i| i.name == name)?;
        let cols = init.ty.shape.last().copied().unwrap_or(1);
        init.init.values(init.ty.numel(), cols)
    }

    /// See the module doc.
    pub(super) fn paged_attention(&mut self) -> Result<(), CompileError> {
        // An eighth input, the query lengths, means a packed batch [tokens, heads, dim].
        let packed = self.node.inputs.get(7).is_some_and(|s| !s.is_empty());
        let inputs = if packed { 8 } else { 7 };
        let names: Vec<String> = (0..inputs)
            .map(|i| self.input(i))
            .collect::<Result<_, _>>()?;
        let types: Vec<TensorType> = names.iter().map(|n| self.ty(n)).collect::<Result<_, _>>()?;
        let refs: Vec<&TensorType> = types.iter().collect();
        let d = graph::PagedDims::of(&refs).map_err(|m| self.err(m))?;
        let schedule = (
            self.const_data(&names[5]),
            self.const_data(&names[6]),
            names.get(7).map(|n| self.const_data(n)),
        );
        let (tables, lens, query_lens) = match schedule {
            (Some(t), Some(l), None) => (t, l, None),
            (Some(t), Some(l), Some(Some(q))) => (t, l, Some(q)),
            _ => {
                return Err(self.err(
                    "PagedAttention is lowered when the block tables, sequence lengths and query lengths are constants of the compile (one step's schedule)",
                ))
            }
        };
        let seqs = graph::check_paged_batch(&d, &tables, &lens, query_lens.as_deref())
            .map_err(|m| self.err(m))?;
        self.padding.check().map_err(|m| self.err(m))?;
        let pages: Vec<(usize, usize, Vec<usize>)> = seqs
            .iter()
            .enumerate()
            .map(|(b, s)| {
                let n = s.len.div_ceil(d.block_size);
                let row = tables
                    .get(b * d.max_blocks..b * d.max_blocks + n)
                    .unwrap_or(&[]);
                (
                    s.new_tokens,
                    s.len,
                    row.iter().map(|&p| p as usize).collect(),
                )
            })
            .collect();
        let report = crate::PaddingReport::new(
            &self.node.name,
            self.padding,
            &pages,
            d.head_dim,
            d.block_size,
        );
        self.c.padding.push(report);
        let dt = types[0].dtype;
        let t = |shape: Vec<usize>| TensorType { dtype: dt, shape };
        let bs = d.block_size;
        let slot = |b: usize, p: usize| -> usize {
            let page = tables
                .get(b * d.max_blocks + p / bs)
                .copied()
                .unwrap_or(0.0);
            page as usize * bs + p % bs
        };
        let slots = d.num_blocks * bs;
        let new_rows = d.new_rows();
        let (kw, vw) = (d.kv_heads * d.head_dim, d.kv_heads * d.v_dim);
        // The cache update: every new token into its slot.
        let mut written = vec![0.0f32; slots];
        self.table("one-hot slot matrix", slots, new_rows)?;
        let mut onehot = vec![0.0f32; slots * new_rows];
        for (b, seq) in seqs.iter().enumerate() {
            for q in 0..seq.new_tokens {
                let s = slot(b, seq.len - seq.new_tokens + q);
                if let Some(v) = onehot.get_mut(s * new_rows + seq.first_row + q) {
                    *v = 1.0;
                }
                if let Some(w) = written.get_mut(s) {
                    *w = 1.0;
                }
            }
        }
        let onehot = self.constant(
            "slot_onehot",
            t(vec![d.num_blocks, bs, new_rows]),
            graph::InitSpec::Data(onehot),
        );
        let mask = self.constant(
            "written_slots",
            TensorType {
                dtype: DType::Bool,
                shape: vec![d.num_blocks, bs, 1],
            },
            graph::InitSpec::Data(written),
        );
        let outs = self.node.outputs.clone();
        let nb = d.num_blocks;
        // The cache stays page-major, [pages, slots, width]: its dims line up with the
        // cache's own, so the update splits its pages and slots over the cores.
        let update = |this: &mut Self,
                      what: &str,
                      cache: &str,
                      new: &str,
                      width: usize,
                      out: Option<String>|
         -> Result<String, CompileError> {
            let paged = this.reshaped(
                &format!("{what}_pages"),
                cache.to_string(),
                vec![nb, bs, width],
                None,
            )?;
            let rows = this.reshaped(
                &format!("{what}_new_rows"),
                new.to_string(),
                vec![new_rows, width],
                None,
            )?;
            let placed = this.temp(&format!("{what}_placed"), t(vec![nb, bs, width]));
            this.matmul(
                onehot.clone(),
                rows,
                placed.clone(),
                Some(&format!("{what}_placed")),
            )?;
            let updated = this.ew(
                &format!("{what}_updated"),
                DeviceOpKind::Where,
                vec![mask.clone(), placed, paged],
                &t(vec![nb, bs, width]),
                None,
            );
            if let Some(o) = out {
                let shape = this.ty(cache)?.shape;
                this.reshaped(
                    &format!("{what}_cache_out"),
                    updated.clone(),
                    shape,
                    Some(o),
                )?;
            }
            // One row per page: the table the gathers read through the block tables
            // (split over the cores by pages).
            this.reshaped(
                &format!("{what}_page_rows"),
                updated,
                vec![nb, bs * width],
                None,
            )
        };
        let kc = update(self, "key", &names[3], &names[1], kw, named(&outs, 1))?;
        let vc = update(self, "value", &names[4], &names[2], vw, named(&outs, 2))?;
        let scale = match self.node.attrs.get("scale") {
            Some(AttrValue::Float(f)) => *f,
            Some(AttrValue::Int(i)) => *i as f32,
            _ => 1.0 / (d.head_dim as f32).sqrt(),
        };
        let scale = self.scalar("scale_value", dt, scale);
        let (hq, hkv, group) = (d.q_heads, d.kv_heads, d.q_heads / d.kv_heads);
        // Keys per online-softmax block, in whole pages: the attention key block when the
        // options set one, else up to PAGED_KEY_BLOCK keys whose keys and values take at
        // most an eighth of all the scratchpads, so a block's kernels fit small machines
        // too. Fewer, larger blocks mean fewer kernels per sequence; a block's pages
        // arrive in one gather.
        let key_bytes = (hkv * (d.head_dim + d.v_dim) * dt.size_bytes()).max(1);
        let room = self.c.target.cores * self.c.target.scratchpad_capacity_bytes / 8;
        let keys = self
            .key_block
            .unwrap_or(PAGED_KEY_BLOCK.min(room / key_bytes));
        let pages_per_block = (keys / bs).max(1);
        let mut parts = Vec::new();
        for (b, seq) in seqs.iter().enumerate() {
            let (l, ql) = (seq.len, seq.new_tokens);
            // The queries sharing a key/value head stacked as rows: [1, hkv, group * Q, D].
            // A packed batch's sequence is its rows of the query; otherwise its batch entry.
            let (start, count) = if packed { (seq.first_row, ql) } else { (b, 1) };
            let q = self.sliced(
                &format!("seq{b}_q"),
                names[0].clone(),
                0,
                start,
                count,
                1,
                None,
            )?;
            let q = self.reshaped(
                &format!("seq{b}_q_groups"),
                q,
                vec![ql, hkv, group, d.head_dim],
                None,
            )?;
            let q = self.transposed(&format!("seq{b}_q_heads"), q, &[1, 2, 0, 3], None)?;
            let q = self.reshaped(
                &format!("seq{b}_q_rows"),
                q,
                vec![1, hkv, group * ql, d.head_dim],
                None,
            )?;
            // Block by block of whole pages: the block's pages gathered in one gather (its
            // pages and each page's sticks split over the cores) through their block table
            // entries, then moved to keys transposed `[1, hkv, dim, w]` and values
            // `[1, hkv, w, dim]` with the pages' slots side by side, cut to the slots in
            // use. Every step keeps a dim that splits over the cores: pages, then heads.
            let (kc, vc) = (kc.clone(), vc.clone());
            let table_row = |j: usize| -> usize {
                tables.get(b * d.max_blocks + j).copied().unwrap_or(0.0) as usize
            };
            let mut fetch = |this: &mut Self, j: usize, c0: usize, c1: usize| {
                let w = c1 - c0;
                let (first, count) = (c0 / bs, w.div_ceil(bs));
                let pages = |this: &mut Self,
                             what: &str,
                             cache: &str,
                             dim: usize|
                 -> Result<String, CompileError> {
                    let step = format!("seq{b}_block{j}_{what}");
                    // A gather whose index vector is the block's table entries, read by a
                    // KTIR indirect access tile: only those pages reach the cores.
                    let ids = this.constant(
                        &format!("{step}_ids"),
                        TensorType {
                            dtype: DType::I64,
                            shape: vec![count],
                        },
                        graph::InitSpec::Data(
                            (first..first + count)
                                .map(|p| table_row(p) as f32)
                                .collect(),
                        ),
                    );
                    let rows = this.temp(&step, t(vec![count, bs * hkv * dim]));
                    this.push_op(
                        Some(&step),
                        Movement::Gather,
                        vec![cache.to_string(), ids],
                        vec![rows.clone()],
                        pointwise_iteration(&[count, bs * hkv * dim]),
                        &[("axis", vec![0])],
                    );
                    this.reshaped(
                        &format!("{step}_slots"),
                        rows,
                        vec![count, bs, hkv, dim],
                        None,
                    )
                };
                let k = pages(this, "k", &kc, d.head_dim)?;
                let k = this.transposed(&format!("seq{b}_block{j}_k_t"), k, &[2, 3, 0, 1], None)?;
                let k = this.reshaped(
                    &format!("seq{b}_block{j}_k_4d"),
                    k,
                    vec![1, hkv, d.head_dim, count * bs],
                    None,
                )?;
                let k = this.sliced(&format!("seq{b}_block{j}_k_used"), k, 3, 0, w, 1, None)?;
                let v = pages(this, "v", &vc, d.v_dim)?;
                let v =
                    this.transposed(&format!("seq{b}_block{j}_v_first"), v, &[2, 0, 1, 3], None)?;
                let v = this.reshaped(
                    &format!("seq{b}_block{j}_v_4d"),
                    v,
                    vec![1, hkv, count * bs, d.v_dim],
                    None,
                )?;
                let v = this.sliced(&format!("seq{b}_block{j}_v_used"), v, 2, 0, w, 1, None)?;
                Ok((k, v))
            };
            let y = self.temp(&format!("seq{b}_y"), t(vec![1, hkv, group * ql, d.v_dim]));
            let keys = KeyBlocks {
                total: l,
                block: pages_per_block * bs,
                past: l - ql,
                period: ql,
            };
            self.online_blocks(
                q,
                &keys,
                &mut fetch,
                y.clone(),
                scale.clone(),
                ql > 1,
                &format!("seq{b}_"),
            )?;
            let y = self.reshaped(
                &format!("seq{b}_y_groups"),
                y,
                vec![hkv, group, ql, d.v_dim],
                None,
            )?;
            let y = self.transposed(&format!("seq{b}_y_tokens"), y, &[2, 0, 1, 3], None)?;
            let rows = if packed {
                vec![ql, hq, d.v_dim]
            } else {
                vec![1, ql, hq, d.v_dim]
            };
            parts.push(self.reshaped(&format!("seq{b}_y_rows"), y, rows, None)?);
        }
        let y = self.output()?;
        if parts.len() == 1 {
            return self.copy(parts.remove(0), y);
        }
        let shape = self.ty(&y)?.shape;
        self.push_op(
            Some("sequences"),
            Movement::Concat,
            parts,
            vec![y],
            pointwise_iteration(&shape),
            &[("axis", vec![0])],
        );
        Ok(())
    }
}
