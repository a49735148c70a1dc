//! Matmul kernels: tiles reordered to host order (`[M, K]`, `[K, N]`), sticks collapsed into
//! rows, multiplied with f32 accumulation, and the result reordered back; K-split partial
//! sums combined over the ring with `ktdp.inter_tile_reduce`; B tiles an M group shares
//! loaded by one core and passed over the ring with `ktdp.inter_tile_consume`.

use super::*;
use ktir::{AffineExpr, AffineSet, Constraint};

/// `a + b` as an affine expression.
/// Reduce-scatter a K group's sum only where the matmul's compute is at most this share
/// of its DRAM time. Every core then stores part of each block, so each core's next loads
/// queue behind a store that waits for the group's reduction: the cores move in step.
/// That costs little where loads dominate and more than the first core's stores where
/// compute would otherwise overlap them (measured: the 8B-dims layer's projections at seq
/// 128, share 0.18, gain; at seq 512, 0.67, and a 4096^3 matmul, 1.25, lose).
const SCATTER_MAX_COMPUTE_SHARE: f64 = 0.35;

/// Reduce-scatter only output blocks of at least this many bytes per time step: a small
/// block's store is short, and cutting its reduction in parts adds a reduction's fixed
/// cost per part (a MoE router's 4 KiB block ran slower scattered).
const SCATTER_MIN_BLOCK_BYTES: usize = 16 << 10;

/// The matmul's C block as computed, before it is put back in C's device order and stored.
#[derive(Clone, Copy)]
struct CBlock<'a> {
    /// `[rows, N]`, after one dim of all batch dims when there are any.
    shape: &'a [usize],
    /// The product's own element type (an epilogue may end in another).
    elem: ScalarType,
    /// C's dims in compute order, `[batch.., M, N sticks, N lanes]`.
    order: &'a [DimRef],
    /// The batch iteration dims of extent above 1.
    batch: &'a [usize],
    /// C's operand index.
    operand: usize,
}

fn add(a: AffineExpr, b: AffineExpr) -> AffineExpr {
    AffineExpr::Add(Box::new(a), Box::new(b))
}

/// `a * b` as an affine expression.
fn mul(a: AffineExpr, b: AffineExpr) -> AffineExpr {
    AffineExpr::Mul(Box::new(a), Box::new(b))
}

/// `-a` as an affine expression (`-1 * a`).
fn neg(a: AffineExpr) -> AffineExpr {
    mul(AffineExpr::Const(-1), a)
}

impl KernelEmitter<'_> {
    /// Opens the innermost time loop of a plan with a hoisted operand, once that operand is
    /// loaded, and builds the tiles of the operands it cuts (`streamed` and the result).
    fn open_innermost(&mut self, streamed: usize) -> Result<(), CompileError> {
        let Some(&(d, steps)) = self.loops.last() else {
            return Err(self.fail("a hoisted operand needs a time loop"));
        };
        let iv = self.open_loop(steps);
        self.step_dim(d, steps, &iv)?;
        let hoisted = &self.operands[1 - streamed.min(1)].tensor;
        let rest: Vec<usize> = (0..self.operands.len())
            .filter(|&j| j != 1 - streamed.min(1) && &self.operands[j].tensor != hoisted)
            .filter(|&j| {
                !self.operands[..j]
                    .iter()
                    .any(|o| o.tensor == self.operands[j].tensor)
            })
            .collect();
        for j in rest {
            self.tile(j);
        }
        Ok(())
    }

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
            self.k_place()
                .ok_or_else(|| self.fail("core-to-slice table has no second K slice"))?
        } else {
            1
        };
        // A K group is `k_split` cores `k_place` apart: adjacent, or (where B tiles are
        // shared within M groups) interleaved with the other M groups' K groups.
        if k_split > 1 && div.cores_used % (k_place * k_split) != 0 {
            return Err(
                self.fail("K-split collaborators are not evenly spaced in the core-to-slice table")
            );
        }
        // A, B, the inputs of a fused epilogue (indexed like C), then the result.
        let out_i = self.operands.len().saturating_sub(1);
        if self.operands.len() < 3 || (self.epilogue.is_empty() && self.operands.len() != 3) {
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
            // The body's arguments are set when it closes, once the sum's type is known.
            self.b.begin_block(Vec::new());
            self.step_dim(k, self.k_steps, &iv)?;
            for i in 0..2 {
                self.tile(i);
            }
            Some((iv, acc))
        } else {
            None
        };
        let mut loaded = [None, None];
        // A hoisted operand is loaded first, outside the innermost time loop, which opens
        // once it is ready (the loop does not cut it, so it stays resident).
        let order_of = |i: usize| if i == 0 { &a_order } else { &b_order };
        let sequence = match self.hoist {
            Some(1) => [1, 0],
            _ => [0, 1],
        };
        for (pos, i) in sequence.into_iter().enumerate() {
            let order = order_of(i);
            if pos == 1 && self.hoist.is_some() {
                self.open_innermost(i)?;
            }
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
            let shared = div
                .shared_b
                .filter(|_| i == 1 && self.operands[0].tensor != self.operands[1].tensor);
            let v = match shared {
                Some(group) => self.shared_load(i, group)?,
                None => self.load(i),
            };
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
                let missing: Vec<usize> = (0..order.len())
                    .filter(|j| !dims.contains(&order[*j]))
                    .collect();
                let empty = self.fresh("empty");
                let b = self.fresh("shared");
                let e = self.b.empty(ssa(&empty), shape_str(&full, elem));
                self.b.broadcast(
                    ssa(&b),
                    &val(&v),
                    shape_str(&shape, elem),
                    &e,
                    shape_str(&full, elem),
                    missing,
                );
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
                vec![vec![0], vec![1, 2]]
            } else {
                vec![(0..nbt).collect(), vec![nbt], vec![nbt + 1, nbt + 2]]
            };
            let r = self.fresh("rows");
            self.b.collapse_shape(
                ssa(&r),
                &val(&v),
                groups,
                shape_str(&shape, elem),
                shape_str(&flat, elem),
            );
            // The host writes inputs and initializers with zero padding; computed tensors
            // may hold anything there.
            let computed = self.c.role_of(&self.operands[i].tensor) == "intermediate";
            let r = if i == 0 && computed {
                let kiv = k_loop.as_ref().map(|l| l.0.clone());
                self.zero_k_padding(r, &flat, elem, it[k].extent, k_split, kiv.as_deref())
            } else {
                r
            };
            loaded[i] = Some((r, flat, elem));
        }
        let [Some((a, a_shape, a_elem)), Some((b, b_shape, b_elem))] = loaded else {
            return Err(self.fail("a matmul input was not loaded"));
        };
        let (ak, bk) = (a_shape[a_shape.len() - 1], b_shape[b_shape.len() - 2]);
        if ak != bk {
            return Err(self.fail(format!("padded K differs between A ({ak}) and B ({bk})")));
        }
        // The product's own element type (an epilogue may end in another).
        let c_elem = match self
            .c
            .ops
            .get(self.index)
            .filter(|_| !self.epilogue.is_empty())
        {
            Some(m) => {
                let c_out = m
                    .outputs
                    .first()
                    .ok_or_else(|| self.fail("has no result"))?;
                elem_type(self.c.layout(c_out, &m.name)?.dtype)
            }
            None => self.operands[out_i].elem,
        };
        let mut c_shape = a_shape.clone();
        let last = c_shape.len() - 1;
        c_shape[last] = b_shape[b_shape.len() - 1];
        // Partial sums of a K split, and sums over K blocks, stay in f32 until complete.
        let acc_elem = if k_split > 1 || k_loop.is_some() {
            ScalarType::F32
        } else {
            c_elem
        };
        let c_ty = shape_str(&c_shape, acc_elem);
        let (a_ty, b_ty) = (shape_str(&a_shape, a_elem), shape_str(&b_shape, b_elem));
        // The condition of the leader core's branch, when there is one.
        let mut leader: Option<String> = None;
        let mut result = if let Some((iv, acc)) = k_loop {
            // The product accumulates into the carried sum.
            let prod = self.fresh("mm");
            self.product(nbt, &prod, (&a, a_ty), (&b, b_ty), &acc, &c_ty);
            self.b.yield_(&[&val(&prod)], vec![c_ty.clone()]);
            let mut inner = self.b.end_block();
            inner.args = vec![
                (ssa(&iv).to_string(), Type::index()),
                (ssa(&acc).to_string(), c_ty.clone()),
            ];
            let (zero, empty, init, count, one, sum) = (
                self.fresh("zero"),
                self.fresh("empty"),
                self.fresh("init"),
                self.fresh("steps"),
                self.fresh("one"),
                self.fresh("ksum"),
            );
            let f32 = build::scalar(ScalarType::F32);
            self.b
                .constant(ssa(&zero), Literal::Float(0.0), f32.clone());
            self.b.empty(ssa(&empty), c_ty.clone());
            self.b
                .fill(ssa(&init), &val(&zero), f32, &val(&empty), c_ty.clone());
            self.b.index(ssa(&count), self.k_steps as i64);
            self.b.index(ssa(&one), 1);
            self.b.for_loop(
                vec![ssa(&sum).to_string()],
                ssa(&iv),
                &val("c0"),
                &val(&count),
                &val(&one),
                vec![(ssa(&acc).to_string(), val(&init))],
                vec![c_ty.clone()],
                inner,
            );
            if k_split <= 1 && c_elem != ScalarType::F32 {
                let t = self.fresh("narrow");
                self.b.cast(
                    ssa(&t),
                    "arith.truncf",
                    &val(&sum),
                    c_ty.clone(),
                    shape_str(&c_shape, c_elem),
                );
                t
            } else {
                sum
            }
        } else {
            let zero = self.fresh("zero");
            let empty = self.fresh("empty");
            let init = self.fresh("init");
            let prod = self.fresh("mm");
            let acc_ty = build::scalar(acc_elem);
            self.b
                .constant(ssa(&zero), Literal::Float(0.0), acc_ty.clone());
            self.b.empty(ssa(&empty), c_ty.clone());
            self.b
                .fill(ssa(&init), &val(&zero), acc_ty, &val(&empty), c_ty.clone());
            self.product(nbt, &prod, (&a, a_ty), (&b, b_ty), &init, &c_ty);
            prod
        };
        let block = CBlock {
            shape: &c_shape,
            elem: c_elem,
            order: &c_order,
            batch: &batch,
            operand: out_i,
        };
        if k_split > 1 {
            if let Some(rows) = self.scatter_rows(&c_shape, k_split, out_i, mb) {
                return self.reduce_scatter(result, &block, rows, k_split, div.cores_used, mb);
            }
            result = self.k_split_reduce(&result, &c_shape, k_split, div.cores_used, 0)?;
            // Only the group's first core holds the sum: everything from here on is its work.
            let pos = self.group_position(k_split);
            let first = self.fresh("first");
            self.b.compare(
                ssa(&first),
                ktir::Predicate::Int(ktir::CmpIPredicate::Eq),
                &val(&pos),
                &val("c0"),
                Type::index(),
            );
            self.b.begin_block(Vec::new());
            leader = Some(first);
            result = self.narrow(result, &c_shape, c_elem);
        }
        self.store_c(result, &block, None)?;
        if let Some(first) = leader {
            let then = self.b.end_block();
            self.b
                .if_op(Vec::new(), &val(&first), then, None, Vec::new());
        }
        Ok(())
    }

    /// How far apart the members of a K group sit in the core id (1: adjacent cores), read
    /// off the recorded core-to-slice table: `id = low + place * (position + k * high)`.
    /// `None` when no core holds a second K slice (K is not split).
    fn k_place(&self) -> Option<usize> {
        let k = self.op.iteration.len().checked_sub(1)?;
        self.division()?
            .core_to_slice
            .iter()
            .position(|s| s.get(k) == Some(&1))
    }

    /// [`Self::k_place`], 1 when K is not split (a group of one).
    fn k_spacing(&self) -> usize {
        self.k_place().unwrap_or(1).max(1)
    }

    /// This core's position in its K group of `k_split` cores (an index value):
    /// `id mod k_split` for adjacent cores, `(id floordiv place) mod k_split` otherwise.
    fn group_position(&mut self, k_split: usize) -> String {
        let place = self.k_spacing();
        let kc = self.fresh("kc");
        let pos = self.fresh("kpos");
        self.b.index(ssa(&kc), k_split as i64);
        let id = if place > 1 {
            let (pc, q) = (self.fresh("kplace"), self.fresh("kq"));
            self.b.index(ssa(&pc), place as i64);
            self.b.elementwise(
                ssa(&q),
                ElementwiseOp::DivSI,
                &[&val("id"), &val(&pc)],
                Type::index(),
            );
            q
        } else {
            "id".to_string()
        };
        self.b.elementwise(
            ssa(&pos),
            ElementwiseOp::RemSI,
            &[&val(&id), &val(&kc)],
            Type::index(),
        );
        pos
    }

    /// An f32 sum of shape `shape` truncated to `to` (itself when `to` is f32).
    fn narrow(&mut self, sum: String, shape: &[usize], to: ScalarType) -> String {
        if to == ScalarType::F32 {
            return sum;
        }
        let t = self.fresh("narrow");
        self.b.cast(
            ssa(&t),
            "arith.truncf",
            &val(&sum),
            shape_str(shape, ScalarType::F32),
            shape_str(shape, to),
        );
        t
    }

    /// Rows of C each core of a K group sums and stores, when the group's sum is
    /// reduce-scattered rather than gathered on its first core: the output block's rows
    /// divide evenly over the group, the block goes to DRAM, and no epilogue (whose inputs
    /// are tiled like the whole block) follows. A group's first core otherwise stores the
    /// whole block on the DMA queue its loads use, and finishes last.
    fn scatter_rows(
        &self,
        c_shape: &[usize],
        k_split: usize,
        out_i: usize,
        mb: usize,
    ) -> Option<usize> {
        let o = &self.operands[out_i];
        let rows = *c_shape.get(c_shape.len().checked_sub(2)?)?;
        let j = o
            .dims
            .iter()
            .position(|d| d.kind == Kind::Elem && d.iter == Some(mb))?;
        let block_bytes = o.extent.iter().product::<usize>() * o.layout.dtype.size_bytes();
        (self.epilogue.is_empty()
            && o.local.is_none()
            && rows % k_split == 0
            && o.extent[j] == rows
            && block_bytes >= SCATTER_MIN_BLOCK_BYTES
            && self.compute_share() < SCATTER_MAX_COMPUTE_SHARE)
            .then_some(rows / k_split)
    }

    /// The matmul's compute time over its DRAM time, both at the machine's peak rates:
    /// MACs over the cores used, bytes of A, B and C over the shared DRAM.
    fn compute_share(&self) -> f64 {
        let t = &self.c.target;
        let macs: f64 = self.op.iteration.iter().map(|d| d.extent as f64).product();
        let cores = self
            .c
            .divisions
            .get(self.index)
            .map_or(1, |d| d.cores_used.max(1)) as f64;
        let bytes: f64 = self
            .op
            .inputs
            .iter()
            .chain(&self.op.outputs)
            .filter_map(|x| self.c.layouts.get(x))
            .map(|l| l.device_bytes as f64)
            .sum();
        let compute = macs / (cores * t.matmul_macs_per_ns.max(1.0));
        let memory = bytes / t.dram_bytes_per_ns.max(1.0);
        if memory > 0.0 {
            compute / memory
        } else {
            f64::INFINITY
        }
    }

    /// The K group's sum reduce-scattered: the partial's rows cut into one part per core
    /// of the group, each part summed onto its own core, which stores it.
    fn reduce_scatter(
        &mut self,
        partial: String,
        block: &CBlock,
        rows: usize,
        k_split: usize,
        cores: usize,
        mb: usize,
    ) -> Result<(), CompileError> {
        let c_shape = block.shape;
        let r = c_shape.len() - 2;
        let mut part_shape = c_shape.to_vec();
        part_shape[r] = rows;
        let mut sums = Vec::with_capacity(k_split);
        for j in 0..k_split {
            let mut offsets = vec![0; c_shape.len()];
            offsets[r] = j * rows;
            let part = self.fresh("rowpart");
            self.slice(
                &part,
                &partial,
                (&offsets, &part_shape, &vec![1; c_shape.len()]),
                c_shape,
                ScalarType::F32,
            );
            sums.push(self.k_split_reduce(&part, &part_shape, k_split, cores, j)?);
        }
        let pos = self.group_position(k_split);
        let j_m = self.operands[block.operand]
            .dims
            .iter()
            .position(|d| d.kind == Kind::Elem && d.iter == Some(mb))
            .ok_or_else(|| self.fail("the output has no M dim"))?;
        for (j, sum) in sums.into_iter().enumerate() {
            let (jc, mine) = (self.fresh("kj"), self.fresh("mine"));
            self.b.index(ssa(&jc), j as i64);
            self.b.compare(
                ssa(&mine),
                ktir::Predicate::Int(ktir::CmpIPredicate::Eq),
                &val(&pos),
                &val(&jc),
                Type::index(),
            );
            self.b.begin_block(Vec::new());
            let result = self.narrow(sum, &part_shape, block.elem);
            let tile = self.row_part_tile(block.operand, j_m, j * rows, rows, j);
            let part_block = CBlock {
                shape: &part_shape,
                ..*block
            };
            self.store_c(result, &part_block, Some((tile, j_m, rows)))?;
            let then = self.b.end_block();
            self.b
                .if_op(Vec::new(), &val(&mine), then, None, Vec::new());
        }
        Ok(())
    }

    /// An access tile of output rows `[first, first + rows)` of this core's block of
    /// operand `i` (device dim `j_m` holds the rows), named after part `part`.
    fn row_part_tile(
        &mut self,
        i: usize,
        j_m: usize,
        first: usize,
        rows: usize,
        part: usize,
    ) -> String {
        let mut subs = self.tile_subscripts(i);
        if first > 0 {
            subs[j_m] = match subs[j_m].clone() {
                Subscript::Value(c) if c == "c0" => Subscript::Const(first as i64),
                s => s.plus(Subscript::Const(first as i64)),
            };
        }
        let o = &self.operands[i];
        let name = format!("{}_tile_rows{part}", o.ssa);
        let mut extent = o.extent.clone();
        extent[j_m] = rows;
        self.access_tile_on_view(i, &name, &subs, &extent);
        name
    }

    /// C's block (`result`, described by `block`) put back in C's device order,
    /// through the epilogue, and stored: to the operand's tile, or to `part`'s tile (its
    /// name, C's device dim of rows and the rows it holds).
    fn store_c(
        &mut self,
        result: String,
        block: &CBlock,
        part: Option<(String, usize, usize)>,
    ) -> Result<(), CompileError> {
        let CBlock {
            shape: c_shape,
            elem: c_elem,
            order: c_order,
            batch,
            operand: out_i,
        } = *block;
        let nbt = batch.len();
        let last = c_shape.len() - 1;
        let c_ty = shape_str(c_shape, c_elem);
        // Back to C's device order.
        let c_dims = self.operands[out_i].dims.clone();
        if c_dims.iter().any(|x| !c_order.contains(x)) {
            return Err(self.fail("the output has a layout the matmul lowering does not handle"));
        }
        let eps = self.eps.max(1);
        let mut expanded: Vec<usize> = Vec::new();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for &b in batch {
            expanded.push(self.batch_chunk(b));
        }
        if nbt > 0 {
            groups.push((0..nbt).collect());
        }
        let rows = c_shape[c_shape.len() - 2];
        // C's lanes per stick: one when N is 1 (the sparse layout), else a whole stick.
        let lanes = c_dims
            .iter()
            .position(|x| x.kind == Kind::Lane)
            .map(|j| self.operands[out_i].extent[j])
            .unwrap_or(eps)
            .max(1);
        expanded.extend([rows, c_shape[last] / lanes, lanes]);
        groups.push(vec![nbt]);
        groups.push(vec![nbt + 1, nbt + 2]);
        let e = self.fresh("sticks");
        self.b.expand_shape(
            ssa(&e),
            &val(&result),
            groups,
            c_ty,
            shape_str(&expanded, c_elem),
        );
        // An M of 1 takes no part in C's layout.
        let (e, e_dims, e_shape) =
            self.drop_broadcast_dims(e, c_order, &expanded, &c_dims, c_elem)?;
        let (v, _, shape) = self.reorder(e, &e_dims, &e_shape, &c_dims, c_elem)?;
        let (v, out_elem) = self.apply_epilogue(v, &c_dims, &shape, c_elem)?;
        let tile = match part {
            Some((tile, j_m, rows)) => {
                if shape.get(j_m) != Some(&rows) {
                    return Err(self.fail("a row part of the output does not match its tile"));
                }
                tile
            }
            None => format!("{}_tile", self.operands[out_i].ssa),
        };
        self.b.store(
            &val(&v),
            &build::value(&tile),
            shape_str(&shape, out_elem),
            tile_str(&shape),
        );
        Ok(())
    }

    /// `linalg.matmul` (or `linalg.batch_matmul` with `nbt` batch dims) of `a` and `b`
    /// into `init`, named `name`.
    fn product(
        &mut self,
        nbt: usize,
        name: &str,
        (a, a_ty): (&str, Type),
        (b, b_ty): (&str, Type),
        init: &str,
        c_ty: &Type,
    ) {
        if nbt == 0 {
            self.b.matmul(
                ssa(name),
                (&val(a), a_ty),
                (&val(b), b_ty),
                &val(init),
                c_ty.clone(),
            );
        } else {
            self.b.op(
                vec![ssa(name).to_string()],
                ktir::OpKind::LinalgNamed {
                    op: ktir::LinalgNamedOp::BatchMatmul,
                    inputs: vec![(val(a), a_ty), (val(b), b_ty)],
                    inits: vec![(val(init), c_ty.clone())],
                },
                vec![c_ty.clone()],
            );
        }
    }

    /// A's rows (`[.., M, K tile]`) with the lanes past the real K zeroed. Those lanes
    /// meet B's zero-padded K rows, but a computed A may hold anything there (pointwise
    /// kernels compute on the padding too: 1/0 is infinite, and infinity times zero is NaN). Only the last K slice has such lanes; with
    /// a K split, the core holding it is known from its position in its group.
    fn zero_k_padding(
        &mut self,
        a: String,
        shape: &[usize],
        elem: ScalarType,
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
        let mut offsets = vec![0; n];
        offsets[n - 1] = real;
        let (z, cleared) = (self.fresh("zeros"), self.fresh("cleared"));
        self.b
            .constant(ssa(&z), Literal::DenseSplat(0.0), shape_str(&pad, elem));
        self.b.insert_slice(
            ssa(&cleared),
            &val(&z),
            &val(&a),
            build::static_sizes(&offsets),
            build::static_sizes(&pad),
            build::static_sizes(&vec![1; n]),
            shape_str(&pad, elem),
            shape_str(shape, elem),
        );
        if let Some(kb) = k_block.filter(|_| blocks > 1) {
            let mut index = kb.to_string();
            if k_split > 1 {
                let pos = self.group_position(k_split);
                let (ks, base, sum) = (
                    self.fresh("ksteps"),
                    self.fresh("kbase"),
                    self.fresh("kidx"),
                );
                let idx = Type::index();
                self.b.index(ssa(&ks), steps as i64);
                self.b.elementwise(
                    ssa(&base),
                    ElementwiseOp::MulI,
                    &[&val(&pos), &val(&ks)],
                    idx.clone(),
                );
                self.b.elementwise(
                    ssa(&sum),
                    ElementwiseOp::AddI,
                    &[&val(&base), &val(&index)],
                    idx,
                );
                index = sum;
            }
            let (end, last, chosen) = (
                self.fresh("kend"),
                self.fresh("klast"),
                self.fresh("a_rows"),
            );
            self.last_block_select(
                (&end, blocks - 1),
                &index,
                &last,
                (&chosen, &cleared, &a),
                shape_str(shape, elem),
            );
            return chosen;
        }
        if k_split <= 1 {
            return cleared;
        }
        let pos = self.group_position(k_split);
        let (last, chosen) = (self.fresh("klast"), self.fresh("a_rows"));
        let end = self.fresh("kend");
        self.last_block_select(
            (&end, k_split - 1),
            &pos,
            &last,
            (&chosen, &cleared, &a),
            shape_str(shape, elem),
        );
        chosen
    }

    /// `chosen = index == end ? cleared : a`, with `end` a new index constant.
    fn last_block_select(
        &mut self,
        (end, end_value): (&str, usize),
        index: &str,
        last: &str,
        (chosen, cleared, a): (&str, &str, &str),
        ty: Type,
    ) {
        self.b.index(ssa(end), end_value as i64);
        self.b.compare(
            ssa(last),
            ktir::Predicate::Int(ktir::CmpIPredicate::Eq),
            &val(index),
            &val(end),
            Type::index(),
        );
        self.b
            .select(ssa(chosen), &val(last), &val(cleared), &val(a), None, ty);
    }

    /// Operand `i`'s tile shared by the `group` cores of an M group (the work division's
    /// `shared_b`): the group's first core (M slice 0) loads it inside an
    /// `inter_tile_produce` region, and every member, the loader included, takes it with
    /// `inter_tile_consume` (the others over the ring). Group `g` is named by its loader's
    /// core id; a core's loader is `id - ((id floordiv p) mod group) * p`, with `p` the
    /// place of the M slice in the core id.
    fn shared_load(&mut self, i: usize, group: usize) -> Result<String, CompileError> {
        let div = self
            .division()
            .ok_or_else(|| self.fail("has no work division"))?;
        let mb = self.op.iteration.len().saturating_sub(3);
        let place = div
            .core_to_slice
            .iter()
            .position(|s| s.get(mb) == Some(&1))
            .ok_or_else(|| self.fail("core-to-slice table has no second M slice"))?;
        let cores = div.cores_used;
        if div.splits.get(mb) != Some(&group) || place * group > cores {
            return Err(self.fail("the shared B group does not match the M split"));
        }
        let o = &self.operands[i];
        let name = o.ssa.clone();
        let (tt, ty) = (tile_str(&o.extent), shape_str(&o.extent, o.elem));
        let (p, m) = (
            AffineExpr::Const(place as i64),
            AffineExpr::Const(group as i64),
        );
        let d0 = AffineExpr::Dim(0);
        // ((d0 floordiv p) mod m) * p: the core's offset from its group's loader.
        let offset = |d: AffineExpr| {
            mul(
                AffineExpr::Mod(
                    Box::new(AffineExpr::FloorDiv(Box::new(d), Box::new(p.clone()))),
                    Box::new(m.clone()),
                ),
                p.clone(),
            )
        };
        let groups = AffineSet {
            dims: 1,
            syms: 0,
            constraints: vec![
                Constraint {
                    expr: d0.clone(),
                    equality: false,
                },
                Constraint {
                    expr: add(neg(d0.clone()), AffineExpr::Const(cores as i64 - 1)),
                    equality: false,
                },
                Constraint {
                    expr: offset(d0.clone()),
                    equality: true,
                },
            ],
        };
        let producers = AffineSet {
            dims: 1,
            syms: 1,
            constraints: vec![Constraint {
                expr: add(d0.clone(), neg(AffineExpr::Sym(0))),
                equality: true,
            }],
        };
        let consumers = AffineSet {
            dims: 1,
            syms: 1,
            constraints: vec![Constraint {
                expr: add(add(d0.clone(), neg(offset(d0))), neg(AffineExpr::Sym(0))),
                equality: true,
            }],
        };
        let ft = Type::TileFuture {
            partials: vec![ty.clone()],
            groups: ktir::Attr::Set(groups),
        };
        let (arg, own, future) = (
            self.fresh("loader"),
            format!("%{name}_own"),
            self.fresh(&format!("{name}_shared")),
        );
        self.b
            .begin_block(vec![(ssa(&arg).to_string(), Type::index())]);
        self.b.load(
            ssa(&own),
            &build::value(&format!("{name}_tile")),
            tt,
            ty.clone(),
        );
        self.b.yield_partial(&[&val(&own)], vec![ty.clone()]);
        let body = self.b.end_block();
        self.b
            .inter_tile_produce(ssa(&future), producers, body, ft.clone());
        self.b.comment_last(&format!(
            "B shared over the ring: one core of each group of {group} loads the tile"
        ));
        let data = format!("%{name}_data");
        self.b.op(
            vec![ssa(&data).to_string()],
            ktir::OpKind::InterTileConsume {
                future: val(&future),
                consumer_tiles_per_group: ktir::Attr::Set(consumers),
                producer_dependency_per_consumer: None,
                future_type: ft,
            },
            vec![ty],
        );
        Ok(data)
    }

    /// Per-core extent of batch iteration dim `b`.
    fn batch_chunk(&self, b: usize) -> usize {
        let div = self.division();
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
        receiver: usize,
    ) -> Result<String, CompileError> {
        let groups = cores / k_split;
        if groups * k_split != cores {
            return Err(self.fail("the K split does not divide the cores used"));
        }
        let ty = shape_str(shape, ScalarType::F32);
        let identity = self.constant(0.0, &ty);
        let future = self.fresh("partials");
        let sum = self.fresh("sum");
        let place = self.k_spacing();
        let (d0, s0, k) = (
            AffineExpr::Dim(0),
            AffineExpr::Sym(0),
            AffineExpr::Const(k_split as i64),
        );
        // Group s0's first core. Adjacent groups: s0 * k. Groups `place` apart (core
        // `low + place * (position + k * high)`, group `low + place * high`):
        // (s0 mod place) + (s0 floordiv place) * place * k.
        let group_start = if place > 1 {
            let p = AffineExpr::Const(place as i64);
            add(
                AffineExpr::Mod(Box::new(s0.clone()), Box::new(p.clone())),
                mul(
                    AffineExpr::FloorDiv(Box::new(s0.clone()), Box::new(p)),
                    AffineExpr::Const((place * k_split) as i64),
                ),
            )
        } else {
            mul(s0.clone(), k)
        };
        let span = (place * (k_split - 1)) as i64;
        // d0 - start >= 0, -d0 + start + place * (k - 1) >= 0, and, for groups `place`
        // apart, (d0 - s0) mod place == 0 (a group's cores share `low`, which is s0's).
        let mut constraints = vec![
            Constraint {
                expr: add(d0.clone(), neg(group_start.clone())),
                equality: false,
            },
            Constraint {
                expr: add(
                    add(neg(d0.clone()), group_start.clone()),
                    AffineExpr::Const(span),
                ),
                equality: false,
            },
        ];
        if place > 1 {
            constraints.push(Constraint {
                expr: AffineExpr::Mod(
                    Box::new(add(d0.clone(), neg(s0))),
                    Box::new(AffineExpr::Const(place as i64)),
                ),
                equality: true,
            });
        }
        let producers = AffineSet {
            dims: 1,
            syms: 1,
            constraints,
        };
        // d0 - start - receiver * place == 0.
        let leader = AffineSet {
            dims: 1,
            syms: 1,
            constraints: vec![Constraint {
                expr: match receiver * place {
                    0 => add(d0, neg(group_start)),
                    r => add(add(d0, neg(group_start)), AffineExpr::Const(-(r as i64))),
                },
                equality: true,
            }],
        };
        let ft = Type::TileFuture {
            partials: vec![ty.clone()],
            groups: ktir::Attr::Set(box_set(&[groups])),
        };
        self.b
            .begin_block(vec![("group".to_string(), Type::index())]);
        self.b.yield_partial(&[&val(partial)], vec![ty.clone()]);
        let body = self.b.end_block();
        self.b
            .inter_tile_produce(ssa(&future), producers, body, ft.clone());
        self.b.begin_block(vec![
            ("lhs".to_string(), ty.clone()),
            ("rhs".to_string(), ty.clone()),
        ]);
        let both = self.b.elementwise(
            "both",
            ElementwiseOp::AddF,
            &[&val("lhs"), &val("rhs")],
            ty.clone(),
        );
        self.b.yield_reduced(&[&both], vec![ty.clone()]);
        let combiner = self.b.end_block();
        self.b.inter_tile_reduce(
            ssa(&sum),
            &val(&future),
            leader,
            None,
            vec![(val(&identity), ty.clone())],
            ft,
            combiner,
            ty,
        );
        Ok(sum)
    }
}
