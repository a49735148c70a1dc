//! GatherElements and ScatterND as one-hot selections built from comparisons, so indices
//! that are data (not constants) work with the device ops there are.
//!
//! | graph op | device ops |
//! |---|---|
//! | GatherElements | slice (data to the indices' extent off the axis), transpose (axis last), to_dtype (indices to f32), lesser, add, where (negative indices), equal with a constant index row (one-hot), where (the picked element, 0 elsewhere), sum, reshape, transpose back |
//! | ScatterND (mul, max, min) | as above to the one-hot matrix, then where (updates that hit a slice, the identity elsewhere), prod / max / min over the index tuples, mul / maximum / minimum with the data |
//! | ScatterND (reduction none or add) | to_dtype, lesser, add, where (negative indices), mul by the row strides and sum (flat slice number), equal with a constant row of slice numbers (one-hot), to_dtype, transpose, batchmatmul (updates into their slices), max and greater (slices hit), where (none) or add (add), reshape |
//!
//! Index arithmetic is in f32, exact for the index ranges a tensor here can have (below
//! 2^24). ScatterND with the same index twice sums the updates (ONNX leaves the result of
//! duplicates undefined for `reduction = none`); with `mul`, `max` and `min` duplicates apply
//! one after another, as the reference does.

use super::*;

fn f32_of(shape: Vec<usize>) -> TensorType {
    TensorType {
        dtype: DType::F32,
        shape,
    }
}

fn bool_of(shape: Vec<usize>) -> TensorType {
    TensorType {
        dtype: DType::Bool,
        shape,
    }
}

impl Builder<'_> {
    /// Integer indices `idx` as f32, negative ones counted from `dims` (broadcast from the
    /// right over the indices).
    fn indices_f32(
        &mut self,
        idx: String,
        dims: String,
        what: &str,
    ) -> Result<String, CompileError> {
        let it = self.ty(&idx)?;
        if !it.dtype.is_int() {
            return Err(self.err(format!(
                "{} needs integer indices, got {}",
                self.node.op,
                it.dtype.name()
            )));
        }
        let ft = f32_of(it.shape.clone());
        let f = self.ew(
            &format!("{what}_f32"),
            DeviceOpKind::ToDtype,
            vec![idx],
            &ft,
            None,
        );
        let zero = self.scalar(&format!("{what}_zero"), DType::F32, 0.0);
        let neg = self.ew(
            &format!("{what}_negative"),
            Comparison::Lesser,
            vec![f.clone(), zero],
            &bool_of(it.shape.clone()),
            None,
        );
        let wrapped = self.ew(
            &format!("{what}_wrapped"),
            Binary::Add,
            vec![f.clone(), dims],
            &ft,
            None,
        );
        Ok(self.ew(
            &format!("{what}_fixed"),
            DeviceOpKind::Where,
            vec![neg, wrapped, f],
            &ft,
            None,
        ))
    }

    /// A constant f32 row `0, 1, .., n - 1`.
    fn index_row(&mut self, step: &str, n: usize) -> Result<String, CompileError> {
        self.table("index row", n, 1)?;
        Ok(self.constant(
            step,
            f32_of(vec![n]),
            graph::InitSpec::Data((0..n).map(|i| i as f32).collect()),
        ))
    }

    /// GatherElements (see the module comment).
    pub(super) fn gather_elements(&mut self) -> Result<(), CompileError> {
        let (x, idx, y) = (self.input(0)?, self.input(1)?, self.output()?);
        let (xt, it) = (self.ty(&x)?, self.ty(&idx)?);
        let r = xt.shape.len();
        if r == 0 || it.shape.len() != r {
            return Err(self.err(format!(
                "GatherElements needs data and indices of one rank >= 1, got {:?} and {:?}",
                xt.shape, it.shape
            )));
        }
        let axis = self.axis(self.int_attr("axis", 0)?, r)?;
        let n = xt.shape[axis];
        // Off the axis, indices address the data's leading block.
        let mut data = x;
        for d in (0..r).filter(|&d| d != axis) {
            if it.shape[d] > xt.shape[d] {
                return Err(self.err(format!(
                    "GatherElements indices {:?} exceed the data {:?} off the axis",
                    it.shape, xt.shape
                )));
            }
            data = self.sliced(&format!("block{d}"), data, d, 0, it.shape[d], 1, None)?;
        }
        let perm: Vec<usize> = (0..r).filter(|&d| d != axis).chain([axis]).collect();
        let data = self.transposed("data_axis_last", data, &perm, None)?;
        let idx = self.transposed("indices_axis_last", idx, &perm, None)?;
        let lead: Vec<usize> = perm[..r - 1].iter().map(|&d| it.shape[d]).collect();
        let m = it.shape[axis];
        let dims = self.scalar("axis_size", DType::F32, n as f32);
        let fixed = self.indices_f32(idx, dims, "indices")?;
        let mut col = lead.clone();
        col.extend([m, 1]);
        let fixed = self.reshaped("indices_column", fixed, col, None)?;
        let row = self.index_row("positions", n)?;
        let mut full = lead.clone();
        full.extend([m, n]);
        self.table("one-hot selection", full.iter().product(), 1)?;
        let onehot = self.ew(
            "one_hot",
            Comparison::Equal,
            vec![fixed, row],
            &bool_of(full.clone()),
            None,
        );
        let mut data_row = lead.clone();
        data_row.extend([1, n]);
        let data = self.reshaped("data_row", data, data_row, None)?;
        let zero = self.scalar("zero", xt.dtype, 0.0);
        let picked_ty = TensorType {
            dtype: xt.dtype,
            shape: full.clone(),
        };
        let picked = self.ew(
            "picked",
            DeviceOpKind::Where,
            vec![onehot, data, zero],
            &picked_ty,
            None,
        );
        let mut summed_shape = lead.clone();
        summed_shape.extend([m, 1]);
        let summed = self.temp(
            "gathered",
            TensorType {
                dtype: xt.dtype,
                shape: summed_shape,
            },
        );
        self.push(
            Some("gathered"),
            Reduction::Sum,
            vec![picked],
            summed.clone(),
            reduction_iteration(&full),
        );
        let mut moved_shape = lead;
        moved_shape.push(m);
        let inv: Vec<usize> = (0..r)
            .map(|d| perm.iter().position(|&p| p == d).unwrap_or(d))
            .collect();
        let identity = inv.iter().enumerate().all(|(i, &p)| i == p);
        if identity {
            self.reshaped("result", summed, it.shape.clone(), Some(y))?;
        } else {
            let moved = self.reshaped("gathered_rows", summed, moved_shape, None)?;
            self.transposed("result", moved, &inv, Some(y))?;
        }
        Ok(())
    }

    /// ScatterND (see the module comment).
    pub(super) fn scatter_nd(&mut self) -> Result<(), CompileError> {
        let (x, idx, upd, y) = (
            self.input(0)?,
            self.input(1)?,
            self.input(2)?,
            self.output()?,
        );
        let reduction = match self.node.attrs.get("reduction") {
            None => "none".to_string(),
            Some(AttrValue::String(s)) => s.clone(),
            Some(v) => {
                return Err(self.err(format!(
                    "attribute 'reduction' must be a string, got {}",
                    v.kind_name()
                )))
            }
        };
        // The reductions that are not a sum: the op combining data with the updates, the
        // reduction over the updates that hit one slice, and its identity.
        let folded = match reduction.as_str() {
            "none" | "add" => None,
            "mul" => Some((Binary::Mul, Reduction::Prod, 1.0)),
            "max" => Some((Binary::Maximum, Reduction::Max, f32::NEG_INFINITY)),
            "min" => Some((Binary::Minimum, Reduction::Min, f32::INFINITY)),
            other => {
                return Err(self.err(format!(
                    "ScatterND reduction must be none, add, mul, max or min, not '{other}'"
                )))
            }
        };
        let (xt, it) = (self.ty(&x)?, self.ty(&idx)?);
        let k = it.shape.last().copied().unwrap_or(0);
        if k == 0 || k > xt.shape.len() {
            return Err(self.err(format!(
                "ScatterND indices {:?} must end in 1 to {} index components",
                it.shape,
                xt.shape.len()
            )));
        }
        let n: usize = it.shape[..it.shape.len() - 1].iter().product();
        let rows: usize = xt.shape[..k].iter().product();
        let slice: usize = xt.shape[k..].iter().product();
        self.table("one-hot scatter", n, rows)?;
        let dims = self.constant(
            "index_dims",
            f32_of(vec![k]),
            graph::InitSpec::Data(xt.shape[..k].iter().map(|&d| d as f32).collect()),
        );
        let idx = self.reshaped("indices_rows", idx, vec![n, k], None)?;
        let fixed = self.indices_f32(idx, dims, "indices")?;
        // The flat number of each addressed slice: the components times the row strides.
        let strides: Vec<f32> = (0..k)
            .map(|d| xt.shape[d + 1..k].iter().product::<usize>() as f32)
            .collect();
        let strides = self.constant("strides", f32_of(vec![k]), graph::InitSpec::Data(strides));
        let weighted = self.ew(
            "weighted",
            Binary::Mul,
            vec![fixed, strides],
            &f32_of(vec![n, k]),
            None,
        );
        let flat = self.temp("slice_number", f32_of(vec![n, 1]));
        self.push(
            Some("slice_number"),
            Reduction::Sum,
            vec![weighted],
            flat.clone(),
            reduction_iteration(&[n, k]),
        );
        let row = self.index_row("slice_numbers", rows)?;
        let onehot = self.ew(
            "one_hot",
            Comparison::Equal,
            vec![flat, row],
            &bool_of(vec![n, rows]),
            None,
        );
        let dt = xt.dtype;
        let t = |shape: Vec<usize>| TensorType { dtype: dt, shape };
        if let Some((combine, reduce, identity)) = folded {
            return self.scatter_folded(
                x,
                onehot,
                upd,
                y,
                (n, rows, slice),
                combine,
                reduce,
                identity,
            );
        }
        let onehot = self.ew(
            "one_hot_values",
            DeviceOpKind::ToDtype,
            vec![onehot],
            &t(vec![n, rows]),
            None,
        );
        let spread = self.transposed("one_hot_by_slice", onehot, &[1, 0], None)?;
        let upd = self.reshaped("updates_rows", upd, vec![n, slice], None)?;
        let scattered = self.temp("scattered", t(vec![rows, slice]));
        self.matmul(spread.clone(), upd, scattered.clone(), Some("scattered"))?;
        let data = self.reshaped("data_rows", x, vec![rows, slice], None)?;
        let out = if reduction == "add" {
            self.ew(
                "added",
                Binary::Add,
                vec![data, scattered],
                &t(vec![rows, slice]),
                None,
            )
        } else {
            let hit = self.temp("hit_count", t(vec![rows, 1]));
            self.push(
                Some("hit_count"),
                Reduction::Max,
                vec![spread],
                hit.clone(),
                reduction_iteration(&[rows, n]),
            );
            let half = self.scalar("half", dt, 0.5);
            let hit = self.ew(
                "hit",
                Comparison::Greater,
                vec![hit, half],
                &bool_of(vec![rows, 1]),
                None,
            );
            self.ew(
                "replaced",
                DeviceOpKind::Where,
                vec![hit, scattered, data],
                &t(vec![rows, slice]),
                None,
            )
        };
        self.reshaped("result", out, xt.shape.clone(), Some(y))?;
        Ok(())
    }

    /// ScatterND with `mul`, `max` or `min`: for each slice, the updates that hit it
    /// (the identity elsewhere) reduced over the index tuples, then combined with the data,
    /// so duplicate indices apply one after another as the reference does.
    #[allow(clippy::too_many_arguments)]
    fn scatter_folded(
        &mut self,
        x: String,
        onehot: String,
        upd: String,
        y: String,
        (n, rows, slice): (usize, usize, usize),
        combine: Binary,
        reduce: Reduction,
        identity: f32,
    ) -> Result<(), CompileError> {
        let xt = self.ty(&x)?;
        let dt = xt.dtype;
        let t = |shape: Vec<usize>| TensorType { dtype: dt, shape };
        self.table("scatter selection", rows * slice, n)?;
        let by_slice = self.transposed("one_hot_by_slice", onehot, &[1, 0], None)?;
        let cond = self.reshaped("hits", by_slice, vec![rows, 1, n], None)?;
        let upd = self.reshaped("updates_rows", upd, vec![n, slice], None)?;
        let upd = self.transposed("updates_by_column", upd, &[1, 0], None)?;
        let upd = self.reshaped("updates_columns", upd, vec![1, slice, n], None)?;
        let fill = self.scalar("identity", dt, identity);
        let full = vec![rows, slice, n];
        let sel = self.ew(
            "selected",
            DeviceOpKind::Where,
            vec![cond, upd, fill],
            &t(full.clone()),
            None,
        );
        let red = self.temp("reduced", t(vec![rows, slice, 1]));
        self.push(
            Some("reduced"),
            reduce,
            vec![sel],
            red.clone(),
            reduction_iteration(&full),
        );
        let red = self.reshaped("reduced_rows", red, vec![rows, slice], None)?;
        let data = self.reshaped("data_rows", x, vec![rows, slice], None)?;
        let out = self.ew(
            "combined",
            combine,
            vec![data, red],
            &t(vec![rows, slice]),
            None,
        );
        self.reshaped("result", out, xt.shape.clone(), Some(y))?;
        Ok(())
    }
}
