//! The `topk` kernel: the `k` largest (or smallest) elements of every row, with their
//! positions, as the SFP does it with small `k`: `k` rounds of "reduce the row, find the
//! first position holding the winner, take it out".
//!
//! Each core holds whole rows (work division never splits the row). The tile is brought to
//! `[rows, row length]` in f32 (exact for every float input), with the positions from a
//! constant ramp. Per round, in an `scf.for` over `k`:
//! - the row's best value among the positions still available and not NaN
//!   (`linalg.reduce` with `arith.maximumf` / `arith.minimumf`, taken-out positions masked
//!   with -inf / +inf);
//! - the first available position holding it, and the first available NaN (a `select` of
//!   positions or a large number, reduced with `arith.minimumf`);
//! - the winner: NaN ranks above every number, so for the largest an available NaN wins,
//!   for the smallest only when no number is left (the reference's order); ties go to the
//!   lower position;
//! - its value and position written into column `r` of the results (`tensor.insert_slice`
//!   at a dynamic offset) and its position taken out.
//!
//! Padding lanes of the last stick start out taken. Positions are carried as f32 (exact
//! below 2^24, far beyond any row) and converted to the index type when stored.

use super::*;

/// Hex bit patterns of f32 -inf, +inf and a quiet NaN (MLIR writes special floats in hex).
const NEG_INF: f64 = f64::NEG_INFINITY;
const POS_INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;
const F32: ScalarType = ScalarType::F32;
use ktir::{CmpFPredicate as P, ElementwiseOp as E, OpKind, Predicate, SizeOperand};

impl KernelEmitter<'_> {
    /// See the module doc.
    pub(super) fn topk(&mut self) -> Result<(), CompileError> {
        if self.operands.len() != 3 || self.op.inputs.len() != 1 {
            return Err(self.fail("topk reads one input and writes values and indices"));
        }
        let k = match self.ints("k").as_deref() {
            Some(&[k]) if k >= 1 => k as usize,
            _ => return Err(self.fail("topk needs a positive attribute 'k'")),
        };
        let largest = self.ints("largest").as_deref() != Some(&[0]);
        let red = self
            .op
            .iteration
            .iter()
            .position(|d| d.reduction)
            .ok_or_else(|| self.fail("topk without a row dimension"))?;
        let row_len = self.op.iteration[red].extent;
        let (x_elem, dims, shape) = (
            self.operands[0].elem,
            self.operands[0].dims.clone(),
            self.operands[0].extent.clone(),
        );
        let sticks = dims
            .iter()
            .position(|d| d.kind == Kind::Sticks && d.iter == Some(red));
        let lanes = dims
            .iter()
            .position(|d| d.kind == Kind::Lane)
            .ok_or_else(|| self.fail("the input has no lane dim"))?;
        let rows: Vec<DimRef> = dims
            .iter()
            .enumerate()
            .filter(|&(j, _)| Some(j) != sticks && j != lanes)
            .map(|(_, d)| *d)
            .collect();
        if rows.iter().any(|d| d.iter.is_none() || d.iter == Some(red)) {
            return Err(self
                .fail("topk's input layout has a dim that is neither a row nor the row's sticks"));
        }
        // [rows.., sticks, lanes] in f32, then [R, W].
        let x = self.load(0);
        let mut order = rows.clone();
        order.extend(sticks.map(|j| dims[j]));
        order.push(dims[lanes]);
        let (x, _, ordered) = self.reorder(x, &dims, &shape, &order, x_elem)?;
        let x = self.convert(&x, &ordered, x_elem, F32)?;
        let nr = rows.len();
        let r_count: usize = ordered[..nr].iter().product();
        let (s_count, e_count) = match sticks {
            Some(_) => (ordered[nr], ordered[nr + 1]),
            None => (1, ordered[nr]),
        };
        let w = s_count * e_count;
        let flat = [r_count, w];
        let xs = self.row_matrix(&x, &ordered, nr, &flat)?;
        let f = |s: &[usize]| shape_str(s, F32);
        let b = |s: &[usize]| shape_str(s, ScalarType::I1);
        let cmp = |p: P| Predicate::Float(p);
        let (rw, r1, rk) = (flat.to_vec(), vec![r_count], vec![r_count, k]);
        // Positions 0..W-1 of every row: stick * lanes + lane, from two short ramps.
        let ramp = |n: usize, scale: usize| -> Literal {
            Literal::Dense((0..n).map(|i| (i * scale) as f64).collect())
        };
        let (ls, ss) = (self.fresh("lanes"), self.fresh("sticks"));
        self.b.constant(ssa(&ls), ramp(e_count, 1), f(&[e_count]));
        self.b
            .constant(ssa(&ss), ramp(s_count, e_count), f(&[s_count]));
        let se = [s_count, e_count];
        let lb = self.bcast(&ls, &[e_count], &se, &[0], F32);
        let sb = self.bcast(&ss, &[s_count], &se, &[1], F32);
        let pos2 = self.bin(E::AddF, &lb, &sb, &f(&se));
        let pos1 = self.fresh("positions");
        self.collapse(&pos1, &pos2, vec![vec![0, 1]], (&se, &[w]), F32);
        let pos = self.bcast(&pos1, &[w], &rw, &[0], F32);
        let n_c = self.splat(row_len as f64, &f(&rw));
        let valid = self.fresh("valid");
        self.b
            .compare(ssa(&valid), cmp(P::Olt), &val(&pos), &val(&n_c), f(&rw));
        let isnan = self.fresh("isnan");
        self.b
            .compare(ssa(&isnan), cmp(P::Uno), &val(&xs), &val(&xs), f(&rw));
        let no = self.splat(0.0, &b(&rw));
        let (sentinel, combiner) = if largest {
            (NEG_INF, E::MaximumF)
        } else {
            (POS_INF, E::MinimumF)
        };
        let masked_fill = self.splat(sentinel, &f(&rw));
        let never = self.splat(w as f64, &f(&rw));
        let never_r = self.splat(w as f64, &f(&r1));
        let nan_r = self.splat(NAN, &f(&r1));
        let zeros_k = self.splat(0.0, &f(&rk));
        let (ck, c1) = (self.fresh("ck"), self.fresh("c1"));
        self.b.index(ssa(&ck), k as i64);
        self.b.index(ssa(&c1), 1);
        // The round loop.
        let (avail_out, vals_out, idx_out) =
            (self.fresh("avail"), self.fresh("vals"), self.fresh("idxs"));
        let (avail, vals, idxs, round) = (
            self.fresh("avail_in"),
            self.fresh("vals_in"),
            self.fresh("idxs_in"),
            self.fresh("round"),
        );
        let loop_types = vec![b(&rw), f(&rk), f(&rk)];
        self.b.begin_block(vec![
            (ssa(&round).to_string(), Type::index()),
            (ssa(&avail).to_string(), b(&rw)),
            (ssa(&vals).to_string(), f(&rk)),
            (ssa(&idxs).to_string(), f(&rk)),
        ]);
        let sel = |this: &mut Self, r: &str, c: &str, t: &str, e: &str, ty: Type| {
            this.b
                .select(ssa(r), &val(c), &val(t), &val(e), Some(b(&rw)), ty);
        };
        // Numbers still available, and NaNs still available.
        let num = self.fresh("num");
        sel(self, &num, &isnan, &no, &avail, b(&rw));
        let nan_av = self.fresh("nan_av");
        self.b
            .elementwise(ssa(&nan_av), E::AndI, &[&val(&isnan), &val(&avail)], b(&rw));
        let masked = self.fresh("masked");
        sel(self, &masked, &num, &xs, &masked_fill, f(&rw));
        let best = self.row_reduce(&masked, combiner, sentinel, r_count, w);
        let best_b = self.bcast(&best, &r1, &rw, &[1], F32);
        let eq = self.fresh("eq");
        self.b
            .compare(ssa(&eq), cmp(P::Oeq), &val(&masked), &val(&best_b), f(&rw));
        let hit = self.fresh("hit");
        self.b
            .elementwise(ssa(&hit), E::AndI, &[&val(&eq), &val(&num)], b(&rw));
        let first = |this: &mut Self, which: &str| -> String {
            let c = this.fresh("cand");
            sel(this, &c, which, &pos, &never, f(&rw));
            this.row_reduce(&c, E::MinimumF, POS_INF, r_count, w)
        };
        let at_num = first(self, &hit);
        let at_nan = first(self, &nan_av);
        // Whether this round's winner is a NaN.
        let took_nan = self.fresh("took_nan");
        if largest {
            self.b.compare(
                ssa(&took_nan),
                cmp(P::Olt),
                &val(&at_nan),
                &val(&never_r),
                f(&r1),
            );
        } else {
            self.b.compare(
                ssa(&took_nan),
                cmp(P::Oge),
                &val(&at_num),
                &val(&never_r),
                f(&r1),
            );
        }
        let sel1 = |this: &mut Self, r: &str, t: &str, e: &str| {
            this.b.select(
                ssa(r),
                &val(&took_nan),
                &val(t),
                &val(e),
                Some(b(&r1)),
                f(&r1),
            );
        };
        let at = self.fresh("at");
        sel1(self, &at, &at_nan, &at_num);
        let value = self.fresh("value");
        sel1(self, &value, &nan_r, &best);
        // Into column `round` of the results.
        let put = |this: &mut Self, acc: &str, v: &str| -> String {
            let col = this.fresh("col");
            this.expand(&col, v, vec![vec![0, 1]], (&r1, &[r_count, 1]), F32);
            let next = this.fresh("put");
            this.b.insert_slice(
                ssa(&next),
                &val(&col),
                &val(acc),
                vec![SizeOperand::Static(0), SizeOperand::Dynamic(val(&round))],
                build::static_sizes(&[r_count, 1]),
                build::static_sizes(&[1, 1]),
                f(&[r_count, 1]),
                f(&rk),
            );
            next
        };
        let vals2 = put(self, &vals, &value);
        let idxs2 = put(self, &idxs, &at);
        // Take the winner out.
        let at_b = self.bcast(&at, &r1, &rw, &[1], F32);
        let taken = self.fresh("taken");
        self.b
            .compare(ssa(&taken), cmp(P::Oeq), &val(&pos), &val(&at_b), f(&rw));
        let avail2 = self.fresh("left");
        sel(self, &avail2, &taken, &no, &avail, b(&rw));
        self.b.yield_(
            &[&val(&avail2), &val(&vals2), &val(&idxs2)],
            loop_types.clone(),
        );
        let body = self.b.end_block();
        self.b.op(
            vec![
                ssa(&avail_out).to_string(),
                ssa(&vals_out).to_string(),
                ssa(&idx_out).to_string(),
            ],
            OpKind::For {
                induction: ssa(&round).to_string(),
                lower: val("c0"),
                upper: val(&ck),
                step: val(&c1),
                iter_args: vec![
                    (ssa(&avail).to_string(), val(&valid)),
                    (ssa(&vals).to_string(), val(&zeros_k)),
                    (ssa(&idxs).to_string(), val(&zeros_k)),
                ],
                body,
            },
            loop_types,
        );
        // Results into their tiles.
        for (operand, acc) in [(1, vals_out), (2, idx_out)] {
            let elem = self.operands[operand].elem;
            let v = self.convert(&acc, &rk, F32, elem)?;
            self.store_rows(operand, &v, &rows, r_count, k)?;
        }
        Ok(())
    }

    /// `[rows.., (sticks,) lanes]` (the first `nr` dims rows) as `[R, W]`.
    fn row_matrix(
        &mut self,
        x: &str,
        shape: &[usize],
        nr: usize,
        flat: &[usize],
    ) -> Result<String, CompileError> {
        let n = shape.len();
        let row_group: Vec<usize> = (0..nr).collect();
        let col_group: Vec<usize> = (nr..n).collect();
        let groups = if nr == 0 {
            vec![col_group]
        } else {
            vec![row_group, col_group]
        };
        let c = self.fresh("rowsx");
        let collapsed: Vec<usize> = if nr == 0 {
            vec![flat[1]]
        } else {
            flat.to_vec()
        };
        self.collapse(&c, x, groups, (shape, &collapsed), F32);
        if nr > 0 {
            return Ok(c);
        }
        let e = self.fresh("row");
        self.expand(&e, &c, vec![vec![0, 1]], (&collapsed, flat), F32);
        Ok(e)
    }

    /// `[R, k]` results (in the operand's element type) into output `operand`'s tile: `k`
    /// zero-padded to its sticks and lanes, rows and sticks put in its device order.
    fn store_rows(
        &mut self,
        operand: usize,
        v: &str,
        rows: &[DimRef],
        r_count: usize,
        k: usize,
    ) -> Result<(), CompileError> {
        let (elem, dims, extent) = (
            self.operands[operand].elem,
            self.operands[operand].dims.clone(),
            self.operands[operand].extent.clone(),
        );
        let sticks = dims.iter().position(|d| d.kind == Kind::Sticks);
        let lanes = dims
            .iter()
            .position(|d| d.kind == Kind::Lane)
            .ok_or_else(|| self.fail("a topk result has no lane dim"))?;
        let (s_count, e_count) = (sticks.map(|j| extent[j]).unwrap_or(1), extent[lanes]);
        let width = s_count * e_count;
        if width < k {
            return Err(self.fail(format!(
                "a topk result tile holds {width} elements per row, fewer than k = {k}"
            )));
        }
        let padded = if width > k {
            self.zeros_around(v, &[r_count, k], &[r_count, width], elem)
        } else {
            v.to_string()
        };
        // [R, W] -> [rows.., (sticks,) lanes] in the order rows, sticks, lanes.
        let mut from: Vec<DimRef> = rows.to_vec();
        let mut sizes: Vec<usize> = Vec::new();
        for d in rows {
            let j = dims
                .iter()
                .position(|x| x == d)
                .ok_or_else(|| self.fail("a topk result lacks a row dim of the input"))?;
            sizes.push(extent[j]);
        }
        if let Some(j) = sticks {
            from.push(dims[j]);
            sizes.push(s_count);
        }
        from.push(dims[lanes]);
        sizes.push(e_count);
        let nr = rows.len();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        if nr > 0 {
            groups.push((0..nr).collect());
            groups.push((nr..sizes.len()).collect());
        } else {
            groups.push((0..sizes.len()).collect());
        }
        let src = if nr > 0 {
            padded
        } else {
            let c = self.fresh("flat");
            let groups = vec![vec![0, 1]];
            self.collapse(&c, &padded, groups, (&[r_count, width], &[width]), elem);
            c
        };
        let src_shape: Vec<usize> = if nr > 0 {
            vec![r_count, width]
        } else {
            vec![width]
        };
        let e = self.fresh("tile");
        self.expand(&e, &src, groups, (&src_shape, &sizes), elem);
        let (v, _, shape) = self.reorder(e, &from, &sizes, &dims, elem)?;
        if shape != extent {
            return Err(self.fail(format!(
                "the topk result {shape:?} does not fill its tile {extent:?}"
            )));
        }
        let name = self.operands[operand].ssa.clone();
        self.b.store(
            &val(&v),
            &build::value(&format!("{name}_tile")),
            shape_str(&shape, elem),
            tile_str(&shape),
        );
        Ok(())
    }

    /// `linalg.broadcast` of `value` (shape `from`) to `to`, adding the dims `dims`.
    fn bcast(
        &mut self,
        value: &str,
        from: &[usize],
        to: &[usize],
        dims: &[usize],
        elem: ScalarType,
    ) -> String {
        let (e, b) = (self.fresh("empty"), self.fresh("b"));
        let empty = self.b.empty(ssa(&e), shape_str(to, elem));
        self.b.broadcast(
            ssa(&b),
            &val(value),
            shape_str(from, elem),
            &empty,
            shape_str(to, elem),
            dims.to_vec(),
        );
        b
    }

    /// A constant tensor of type `ty` with every element `value`.
    fn splat(&mut self, value: f64, ty: &Type) -> String {
        let r = self.fresh("splat");
        self.b
            .constant(ssa(&r), Literal::DenseSplat(value), ty.clone());
        r
    }

    /// `[R, W]` f32 reduced along the row with `combiner`, starting from `identity`.
    fn row_reduce(
        &mut self,
        x: &str,
        combiner: ElementwiseOp,
        identity: f64,
        r: usize,
        w: usize,
    ) -> String {
        let (id, e, init, out) = (
            self.fresh("identity"),
            self.fresh("empty"),
            self.fresh("init"),
            self.fresh("row_best"),
        );
        let ty = shape_str(&[r], F32);
        let f32 = build::scalar(F32);
        self.b
            .constant(ssa(&id), Literal::Float(identity), f32.clone());
        self.b.empty(ssa(&e), ty.clone());
        self.b
            .fill(ssa(&init), &val(&id), f32, &val(&e), ty.clone());
        self.b.reduce(
            ssa(&out),
            combiner,
            (&val(x), shape_str(&[r, w], F32)),
            (&val(&init), ty),
            vec![1],
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::convert::tests::{kernel, ktir_of};

    #[test]
    fn topk_is_a_loop_of_k_rounds_over_whole_rows() {
        let text = ktir_of(
            r#"{"name": "x", "dtype": "f16", "shape": [8, 130]}"#,
            r#"{"name": "t", "op": "TopK", "inputs": ["x"], "outputs": ["v", "i"], "attrs": {"k": 3}}"#,
            r#""v", "i""#,
        );
        let k = kernel(&text, "t");
        // 8 rows over 8 cores, each row whole: 3 sticks of 64 lanes in f32.
        assert!(k.contains("grid = [8]"), "{k}");
        assert!(k.contains("tensor<1x192xf32>"), "{k}");
        assert!(k.contains("scf.for"), "{k}");
        assert!(k.contains("linalg.reduce { arith.maximumf }"), "{k}");
        assert!(k.contains("arith.constant 3 : index"), "{k}");
        // Positions past the 130 real elements start out taken.
        assert!(k.contains("dense<130.0>"), "{k}");
        // Values back to f16, positions to the device's i32.
        assert!(k.contains("arith.truncf"), "{k}");
        assert!(k.contains("arith.fptosi"), "{k}");
        assert!(k.contains("tensor<1x1x32xi32>"), "{k}");
    }

    #[test]
    fn smallest_uses_the_minimum_and_positive_infinity() {
        let text = ktir_of(
            r#"{"name": "x", "dtype": "f32", "shape": [5]}"#,
            r#"{"name": "t", "op": "TopK", "inputs": ["x"], "outputs": ["v", "i"], "attrs": {"k": 2, "largest": 0}}"#,
            r#""v", "i""#,
        );
        let k = kernel(&text, "t");
        assert!(k.contains("grid = [1]"), "{k}");
        assert!(
            k.contains("linalg.reduce { arith.minimumf } ins(%masked"),
            "{k}"
        );
        assert!(k.contains("dense<0x7F800000>"), "{k}");
    }
}
