//! Matmul kernels: tiles reordered to host order (`[M, K]`, `[K, N]`), sticks collapsed into
//! rows, multiplied with f32 accumulation, and the result reordered back; K-split partial
//! sums combined over the ring with `ktdp.inter_tile_reduce`.

use super::*;

impl KernelEmitter<'_> {
    pub(super) fn matmul(&mut self) -> Result<(), CompileError> {
        let it = &self.op.iteration;
        if it.len() < 3 {
            return Err(self.fail("a matmul needs M, N and K dimensions"));
        }
        let nb = it.len() - 3;
        let (mb, out, k) = (nb, nb + 1, nb + 2);
        // Batch dims of extent 1 take no part in any layout.
        let batch: Vec<usize> = (0..nb).filter(|&b| it[b].extent > 1).collect();
        let div = self
            .c
            .divisions
            .iter()
            .find(|d| d.op == self.op.name)
            .ok_or_else(|| self.fail("has no work division"))?;
        let k_split = div.splits.get(k).copied().unwrap_or(1);
        let k_place = if k_split > 1 {
            div.core_to_slice
                .iter()
                .position(|s| s.get(k) == Some(&1))
                .ok_or_else(|| self.fail("core-to-slice table has no second K slice"))?
        } else {
            1
        };
        if k_split > 1 && k_place != 1 {
            return Err(self.fail("K-split collaborators must be adjacent cores"));
        }
        if self.operands.len() != 3 {
            return Err(self.fail("matmul needs two inputs and one output"));
        }
        let d = |kind, iter| DimRef {
            kind,
            iter: Some(iter),
        };
        let batch_dims: Vec<DimRef> = batch.iter().map(|&b| d(Kind::Elem, b)).collect();
        let with_batch =
            |tail: [DimRef; 3]| -> Vec<DimRef> { batch_dims.iter().copied().chain(tail).collect() };
        // Compute order: A as [batch.., M, K sticks, K lanes]; B as [batch.., K, N sticks,
        // N lanes]; C as [batch.., M, N sticks, N lanes].
        let a_order = with_batch([d(Kind::Elem, mb), d(Kind::Sticks, k), d(Kind::Lane, k)]);
        let b_order = with_batch([d(Kind::Elem, k), d(Kind::Sticks, out), d(Kind::Lane, out)]);
        let c_order = with_batch([d(Kind::Elem, mb), d(Kind::Sticks, out), d(Kind::Lane, out)]);
        let nbt = batch.len();
        // Over K blocks, the loads and the product go into a loop body carrying an f32 sum;
        // the body is emitted aside and wrapped once its types are known.
        let k_loop = if self.k_steps > 1 {
            let (iv, acc) = (self.fresh("kblk"), self.fresh("acc"));
            let outer = std::mem::take(&mut self.body);
            self.depth += 1;
            self.step_dim(k, self.k_steps, &iv)?;
            for i in 0..2 {
                self.tile(i);
            }
            Some((iv, acc, outer))
        } else {
            None
        };
        let mut loaded = Vec::new();
        for (i, order) in [(0, &a_order), (1, &b_order)] {
            let elem = self.operands[i].elem;
            let (dims, shape) = (
                self.operands[i].dims.clone(),
                self.operands[i].extent.clone(),
            );
            // A dim of extent 1 (M or K of 1) takes no part in a layout: it is added back
            // below like a missing batch dim.
            let unit = |x: &DimRef| x.iter.is_some_and(|d| it[d].extent == 1);
            if dims.iter().any(|x| !order.contains(x))
                || !order[nbt..].iter().all(|x| dims.contains(x) || unit(x))
            {
                return Err(self.fail(format!(
                    "operand '{}' has a layout the matmul lowering does not handle (device dims {:?})",
                    self.operands[i].tensor, self.operands[i].layout.device_size
                )));
            }
            let v = self.load(i);
            let (mut v, dims, mut shape) =
                self.reorder(v, &dims, &shape, order.as_slice(), elem)?;
            // Batch dims the operand lacks (heads sharing one key/value head) are broadcast,
            // and unit M or K dims put back.
            if dims.len() < order.len() {
                let full: Vec<usize> = order
                    .iter()
                    .map(|o| match dims.iter().position(|x| x == o) {
                        Some(j) => shape[j],
                        None => o.iter.map(|b| self.batch_chunk(b)).unwrap_or(1),
                    })
                    .collect();
                let missing: Vec<String> = (0..order.len())
                    .filter(|j| !dims.contains(&order[*j]))
                    .map(|j| j.to_string())
                    .collect();
                let empty = self.fresh("empty");
                let b = self.fresh("shared");
                self.line(&format!(
                    "{empty} = tensor.empty() : {}",
                    shape_str(&full, elem)
                ));
                self.line(&format!(
                    "{b} = linalg.broadcast ins({v} : {}) outs({empty} : {}) dimensions = [{}]",
                    shape_str(&shape, elem),
                    shape_str(&full, elem),
                    missing.join(", ")
                ));
                v = b;
                shape = full;
            }
            // [batch.., rows, sticks, lanes] -> [batch, rows, sticks x lanes].
            let bsize: usize = shape[..nbt].iter().product();
            let flat: Vec<usize> = if nbt == 0 {
                vec![shape[0], shape[1] * shape[2]]
            } else {
                vec![bsize, shape[nbt], shape[nbt + 1] * shape[nbt + 2]]
            };
            let groups = if nbt == 0 {
                "[[0], [1, 2]]".to_string()
            } else {
                let b: Vec<String> = (0..nbt).map(|x| x.to_string()).collect();
                format!(
                    "[[{}], [{}], [{}, {}]]",
                    b.join(", "),
                    nbt,
                    nbt + 1,
                    nbt + 2
                )
            };
            let r = self.fresh("rows");
            self.line(&format!(
                "{r} = tensor.collapse_shape {v} {groups} : {} into {}",
                shape_str(&shape, elem),
                shape_str(&flat, elem)
            ));
            // The host writes inputs and initializers with zero padding; computed tensors
            // may hold anything there.
            let computed = self.c.role_of(&self.operands[i].tensor) == "intermediate";
            let r = if i == 0 && computed {
                let kiv = k_loop.as_ref().map(|l| l.0.clone());
                self.zero_k_padding(r, &flat, elem, it[k].extent, k_split, kiv.as_deref())
            } else {
                r
            };
            loaded.push((r, flat, elem));
        }
        let (a, a_shape, a_elem) = loaded[0].clone();
        let (b, b_shape, b_elem) = loaded[1].clone();
        let (ak, bk) = (a_shape[a_shape.len() - 1], b_shape[b_shape.len() - 2]);
        if ak != bk {
            return Err(self.fail(format!("padded K differs between A ({ak}) and B ({bk})")));
        }
        let c_elem = self.operands[2].elem;
        let mut c_shape = a_shape.clone();
        let last = c_shape.len() - 1;
        c_shape[last] = b_shape[b_shape.len() - 1];
        // Partial sums of a K split, and sums over K blocks, stay in f32 until complete.
        let acc_elem = if k_split > 1 || k_loop.is_some() {
            "f32"
        } else {
            c_elem
        };
        let c_ty = shape_str(&c_shape, acc_elem);
        let named = if nbt == 0 {
            "linalg.matmul"
        } else {
            "linalg.batch_matmul"
        };
        let mut result = if let Some((iv, acc, outer)) = k_loop {
            // The product accumulates into the carried sum.
            let prod = self.fresh("mm");
            self.line(&format!(
                "{prod} = {named} ins({a}, {b} : {}, {}) outs({acc} : {c_ty}) -> {c_ty}",
                shape_str(&a_shape, a_elem),
                shape_str(&b_shape, b_elem)
            ));
            self.line(&format!("scf.yield {prod} : {c_ty}"));
            self.depth -= 1;
            let inner = std::mem::replace(&mut self.body, outer);
            let (zero, empty, init, n, one, sum) = (
                self.fresh("zero"),
                self.fresh("empty"),
                self.fresh("init"),
                self.fresh("steps"),
                self.fresh("one"),
                self.fresh("ksum"),
            );
            self.line(&format!("{zero} = arith.constant 0.0 : f32"));
            self.line(&format!("{empty} = tensor.empty() : {c_ty}"));
            self.line(&format!(
                "{init} = linalg.fill ins({zero} : f32) outs({empty} : {c_ty}) -> {c_ty}"
            ));
            self.line(&format!("{n} = arith.constant {} : index", self.k_steps));
            self.line(&format!("{one} = arith.constant 1 : index"));
            self.line(&format!(
                "{sum} = scf.for {iv} = %c0 to {n} step {one} iter_args({acc} = {init}) -> ({c_ty}) {{"
            ));
            self.body.push_str(&inner);
            self.line("}");
            if k_split <= 1 && c_elem != "f32" {
                let t = self.fresh("narrow");
                self.line(&format!(
                    "{t} = arith.truncf {sum} : {c_ty} to {}",
                    shape_str(&c_shape, c_elem)
                ));
                t
            } else {
                sum
            }
        } else {
            let zero = self.fresh("zero");
            let empty = self.fresh("empty");
            let init = self.fresh("init");
            let prod = self.fresh("mm");
            self.line(&format!("{zero} = arith.constant 0.0 : {acc_elem}"));
            self.line(&format!("{empty} = tensor.empty() : {c_ty}"));
            self.line(&format!(
                "{init} = linalg.fill ins({zero} : {acc_elem}) outs({empty} : {c_ty}) -> {c_ty}"
            ));
            self.line(&format!(
                "{prod} = {named} ins({a}, {b} : {}, {}) outs({init} : {c_ty}) -> {c_ty}",
                shape_str(&a_shape, a_elem),
                shape_str(&b_shape, b_elem)
            ));
            prod
        };
        if k_split > 1 {
            result = self.k_split_reduce(&result, &c_shape, k_split, div.cores_used)?;
            // Only the group's first core holds the sum: everything from here on is its work.
            let kc = self.fresh("kc");
            let pos = self.fresh("kpos");
            let first = self.fresh("first");
            self.line(&format!("{kc} = arith.constant {k_split} : index"));
            self.line(&format!("{pos} = arith.remsi %id, {kc} : index"));
            self.line(&format!("{first} = arith.cmpi eq, {pos}, %c0 : index"));
            self.line(&format!("scf.if {first} {{"));
            self.depth += 1;
            let t = self.fresh("narrow");
            if c_elem != "f32" {
                self.line(&format!(
                    "{t} = arith.truncf {result} : {c_ty} to {}",
                    shape_str(&c_shape, c_elem)
                ));
                result = t;
            }
        }
        let c_ty = shape_str(&c_shape, c_elem);
        // Back to C's device order.
        let c_dims = self.operands[2].dims.clone();
        if c_dims.iter().any(|x| !c_order.contains(x)) {
            return Err(self.fail("the output has a layout the matmul lowering does not handle"));
        }
        let eps = self.eps.max(1);
        let mut expanded: Vec<usize> = Vec::new();
        let mut groups: Vec<String> = Vec::new();
        for &b in &batch {
            expanded.push(self.batch_chunk(b));
        }
        if nbt > 0 {
            let items: Vec<String> = (0..nbt).map(|x| x.to_string()).collect();
            groups.push(format!("[{}]", items.join(", ")));
        }
        let rows = c_shape[c_shape.len() - 2];
        // C's lanes per stick: one when N is 1 (the sparse layout), else a whole stick.
        let lanes = c_dims
            .iter()
            .position(|x| x.kind == Kind::Lane)
            .map(|j| self.operands[2].extent[j])
            .unwrap_or(eps)
            .max(1);
        expanded.extend([rows, c_shape[last] / lanes, lanes]);
        groups.push(format!("[{nbt}]"));
        groups.push(format!("[{}, {}]", nbt + 1, nbt + 2));
        let sizes: Vec<String> = expanded.iter().map(|x| x.to_string()).collect();
        let e = self.fresh("sticks");
        self.line(&format!(
            "{e} = tensor.expand_shape {result} [{}] output_shape [{}] : {c_ty} into {}",
            groups.join(", "),
            sizes.join(", "),
            shape_str(&expanded, c_elem)
        ));
        // An M of 1 takes no part in C's layout.
        let (e, e_dims, e_shape) =
            self.drop_broadcast_dims(e, &c_order, &expanded, &c_dims, c_elem)?;
        let (v, _, shape) = self.reorder(e, &e_dims, &e_shape, &c_dims, c_elem)?;
        let name = self.operands[2].ssa.clone();
        let store = format!(
            "ktdp.store {v}, %{name}_tile : {}, {}",
            shape_str(&shape, c_elem),
            tile_str(&shape)
        );
        self.line(&store);
        if k_split > 1 {
            self.depth -= 1;
            self.line("}");
        }
        Ok(())
    }

    /// A's rows (`[.., M, K tile]`) with the lanes past the real K zeroed. Those lanes
    /// meet B's zero-padded K rows, but a computed A may hold anything there (pointwise
    /// kernels compute on the padding too: 1/0 is infinite, and infinity times zero is NaN). Only the last K slice has such lanes; with
    /// a K split, the core holding it is known from its position in its group.
    fn zero_k_padding(
        &mut self,
        a: String,
        shape: &[usize],
        elem: &str,
        k: usize,
        k_split: usize,
        k_block: Option<&str>,
    ) -> String {
        let n = shape.len();
        let tile = shape[n - 1];
        // Inside a loop over K blocks, only the last block of the last slice has padding.
        let steps = if k_block.is_some() { self.k_steps } else { 1 };
        let blocks = k_split.max(1) * steps;
        let real = k.saturating_sub((blocks - 1) * tile);
        if real == 0 || real >= tile {
            return a;
        }
        let mut pad = shape.to_vec();
        pad[n - 1] = tile - real;
        let mut offsets = vec!["0".to_string(); n];
        offsets[n - 1] = real.to_string();
        let sizes: Vec<String> = pad.iter().map(|x| x.to_string()).collect();
        let (z, cleared) = (self.fresh("zeros"), self.fresh("cleared"));
        self.line(&format!(
            "{z} = arith.constant dense<{}> : {}",
            zero_literal(elem),
            shape_str(&pad, elem)
        ));
        self.line(&format!(
            "{cleared} = tensor.insert_slice {z} into {a}[{}] [{}] [{}] : {} into {}",
            offsets.join(", "),
            sizes.join(", "),
            vec!["1"; n].join(", "),
            shape_str(&pad, elem),
            shape_str(shape, elem)
        ));
        if let Some(kb) = k_block.filter(|_| blocks > 1) {
            let mut index = kb.to_string();
            if k_split > 1 {
                let (kc, pos, ks, base, sum) = (
                    self.fresh("kc"),
                    self.fresh("kpos"),
                    self.fresh("ksteps"),
                    self.fresh("kbase"),
                    self.fresh("kidx"),
                );
                self.line(&format!("{kc} = arith.constant {k_split} : index"));
                self.line(&format!("{pos} = arith.remsi %id, {kc} : index"));
                self.line(&format!("{ks} = arith.constant {steps} : index"));
                self.line(&format!("{base} = arith.muli {pos}, {ks} : index"));
                self.line(&format!("{sum} = arith.addi {base}, {kb} : index"));
                index = sum;
            }
            let (end, last, chosen) = (
                self.fresh("kend"),
                self.fresh("klast"),
                self.fresh("a_rows"),
            );
            self.line(&format!("{end} = arith.constant {} : index", blocks - 1));
            self.line(&format!("{last} = arith.cmpi eq, {index}, {end} : index"));
            self.line(&format!(
                "{chosen} = arith.select {last}, {cleared}, {a} : {}",
                shape_str(shape, elem)
            ));
            return chosen;
        }
        if k_split <= 1 {
            return cleared;
        }
        let (kc, pos, last, chosen) = (
            self.fresh("kc"),
            self.fresh("kpos"),
            self.fresh("klast"),
            self.fresh("a_rows"),
        );
        self.line(&format!("{kc} = arith.constant {k_split} : index"));
        self.line(&format!("{pos} = arith.remsi %id, {kc} : index"));
        let end = self.fresh("kend");
        self.line(&format!("{end} = arith.constant {} : index", k_split - 1));
        self.line(&format!("{last} = arith.cmpi eq, {pos}, {end} : index"));
        self.line(&format!(
            "{chosen} = arith.select {last}, {cleared}, {a} : {}",
            shape_str(shape, elem)
        ));
        chosen
    }

    /// Per-core extent of batch iteration dim `b`.
    fn batch_chunk(&self, b: usize) -> usize {
        let div = self.c.divisions.iter().find(|d| d.op == self.op.name);
        let extent = self.op.iteration[b].extent;
        let split = div
            .and_then(|d| d.splits.get(b).copied())
            .unwrap_or(1)
            .max(1);
        let steps = self
            .loops
            .iter()
            .find(|l| l.0 == b)
            .map(|l| l.1)
            .unwrap_or(1);
        extent / split / steps.max(1)
    }

    /// Combines the K-split partial sums of adjacent cores: each group of `k_split` cores
    /// produces its partial and the group's first core receives the sum
    /// (`ktdp.inter_tile_reduce`, an add over the ring).
    fn k_split_reduce(
        &mut self,
        partial: &str,
        shape: &[usize],
        k_split: usize,
        cores: usize,
    ) -> Result<String, CompileError> {
        let groups = cores / k_split;
        if groups * k_split != cores {
            return Err(self.fail("the K split does not divide the cores used"));
        }
        let ty = shape_str(shape, "f32");
        let identity = self.constant(0.0, &ty);
        let future = self.fresh("partials");
        let sum = self.fresh("sum");
        let producers = format!(
            "affine_set<(d0)[s0] : (d0 - s0 * {k_split} >= 0, -d0 + s0 * {k_split} + {} >= 0)>",
            k_split - 1
        );
        let leader = format!("affine_set<(d0)[s0] : (d0 - s0 * {k_split} == 0)>");
        let all = format!("affine_set<(d0) : (d0 >= 0, -d0 + {} >= 0)>", groups - 1);
        let ft = format!("!ktdp.tile_future<({ty}), groups = {all}>");
        self.line(&format!(
            "{future} = ktdp.inter_tile_produce producer_tiles_per_group = {producers} -> {ft} {{"
        ));
        self.line("^bb0(%group: index):");
        self.line(&format!("  ktdp.yield_partial {partial} : {ty}"));
        self.line("}");
        self.line(&format!(
            "{sum} = ktdp.inter_tile_reduce({future}) consumer_tiles_per_group = {leader}, identity({identity} : {ty}) : {ft} -> {ty} {{"
        ));
        self.line(&format!("^bb0(%lhs: {ty}, %rhs: {ty}):"));
        self.line(&format!("  %both = arith.addf %lhs, %rhs : {ty}"));
        self.line(&format!("  ktdp.yield_reduced %both : {ty}"));
        self.line("}");
        Ok(sum)
    }
}
