//! Tensor kernels of the interpreter: the arithmetic behind linalg and tensor ops, on
//! row-major `f32` data with explicit shapes. Each function checks its shapes and returns
//! an error message instead of panicking; rounding to the storage type is the caller's job.

use ktir::ast::ElementwiseOp;

/// How a reduction combines two values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combiner {
    /// `arith.addf` / `arith.addi`.
    Add,
    /// `arith.mulf` / `arith.muli`.
    Mul,
    /// `arith.maximumf` / `arith.maxnumf` / `arith.maxsi`.
    Max,
    /// `arith.minimumf` / `arith.minnumf` / `arith.minsi`.
    Min,
}

impl Combiner {
    /// The combiner an `arith` op stands for; `None` for ops that need the general path.
    pub fn from_op(op: ElementwiseOp) -> Option<Combiner> {
        use ElementwiseOp::*;
        Some(match op {
            AddF | AddI => Combiner::Add,
            MulF | MulI => Combiner::Mul,
            MaximumF | MaxNumF | MaxSI | MaxUI => Combiner::Max,
            MinimumF | MinNumF | MinSI | MinUI => Combiner::Min,
            _ => return None,
        })
    }

    /// Combines an accumulator with a value.
    pub fn apply(self, acc: f32, x: f32) -> f32 {
        match self {
            Combiner::Add => acc + x,
            Combiner::Mul => acc * x,
            Combiner::Max => acc.max(x),
            Combiner::Min => acc.min(x),
        }
    }
}

/// Row-major strides of a shape.
pub fn strides_of(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1].saturating_mul(shape[i + 1]);
    }
    s
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// `linalg.reduce`: folds `input` over `dims` onto `init`, whose shape is `shape` without
/// `dims` (in order).
pub fn reduce(
    input: &[f32],
    shape: &[usize],
    dims: &[usize],
    init: &[f32],
    combiner: Combiner,
) -> Result<Vec<f32>, String> {
    check_reduce(shape, dims, init.len())?;
    if numel(shape) != input.len() {
        return Err(format!(
            "a {shape:?} tensor holds {} elements, not {}",
            numel(shape),
            input.len()
        ));
    }
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !dims.contains(d)).collect();
    let mut out = init.to_vec();
    // Reducing trailing dimensions (kept dimensions all leading): output element `o`
    // folds the contiguous run `o * len..(o + 1) * len`, in the same order as the walk
    // below; leading dimensions reduced (kept ones trailing): each block of the input
    // folds onto the whole output, element by element.
    if kept.iter().enumerate().all(|(i, &d)| i == d) && !out.is_empty() {
        let len = input.len() / out.len();
        if len > 0 {
            match combiner {
                Combiner::Add => fold_rows(&mut out, input, len, |a, x| a + x),
                Combiner::Mul => fold_rows(&mut out, input, len, |a, x| a * x),
                Combiner::Max => fold_rows(&mut out, input, len, f32::max),
                Combiner::Min => fold_rows(&mut out, input, len, f32::min),
            }
        }
        return Ok(out);
    }
    if kept
        .iter()
        .enumerate()
        .all(|(i, &d)| d == shape.len() - kept.len() + i)
        && !out.is_empty()
    {
        let w = out.len();
        for block in input.chunks_exact(w) {
            for (acc, &x) in out.iter_mut().zip(block) {
                *acc = combiner.apply(*acc, x);
            }
        }
        return Ok(out);
    }
    let out_shape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
    let out_strides = strides_of(&out_shape);
    let mut idx = vec![0usize; shape.len()];
    for &x in input {
        let mut o = 0;
        for (k, &d) in kept.iter().enumerate() {
            o += idx[d] * out_strides[k];
        }
        out[o] = combiner.apply(out[o], x);
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(out)
}

/// Folds each contiguous run `o * len..(o + 1) * len` of `input` onto `out[o]` in
/// ascending order. One row's fold is a chain where each step waits for the one before,
/// so rows are folded [`ROWS`] at a time, step by step side by side: the chains overlap in
/// the pipeline, and each row still sees exactly its own steps in its own order.
fn fold_rows(out: &mut [f32], input: &[f32], len: usize, f: impl Fn(f32, f32) -> f32) {
    const ROWS: usize = 8;
    let mut outs = out.chunks_exact_mut(ROWS);
    let mut blocks = input.chunks_exact(ROWS * len);
    for (acc, block) in (&mut outs).zip(&mut blocks) {
        let rows: [&[f32]; ROWS] = std::array::from_fn(|r| &block[r * len..(r + 1) * len]);
        let mut a: [f32; ROWS] = std::array::from_fn(|r| acc[r]);
        for p in 0..len {
            for (acc, row) in a.iter_mut().zip(&rows) {
                *acc = f(*acc, row[p]);
            }
        }
        acc.copy_from_slice(&a);
    }
    for (acc, run) in outs
        .into_remainder()
        .iter_mut()
        .zip(blocks.remainder().chunks_exact(len))
    {
        *acc = run.iter().fold(*acc, |a, &x| f(a, x));
    }
}

/// The shape checks of [`reduce`]: `dims` within the rank and an init of `init_len`
/// elements for the kept dimensions.
pub fn check_reduce(shape: &[usize], dims: &[usize], init_len: usize) -> Result<(), String> {
    if dims.iter().any(|&d| d >= shape.len()) {
        return Err(format!(
            "reduction dimensions {dims:?} exceed rank {}",
            shape.len()
        ));
    }
    let out_shape: Vec<usize> = (0..shape.len())
        .filter(|d| !dims.contains(d))
        .map(|d| shape[d])
        .collect();
    if numel(&out_shape) != init_len {
        return Err(format!(
            "reducing a {shape:?} tensor over {dims:?} needs an init of shape {out_shape:?}"
        ));
    }
    Ok(())
}

/// The checks of [`extract_slice`] and [`insert_slice`] on a tensor of `shape`: one
/// offset, size and stride per dimension, and the slice inside the tensor.
pub fn check_slice(
    shape: &[usize],
    offsets: &[i64],
    sizes: &[usize],
    strides: &[i64],
) -> Result<(), String> {
    if offsets.len() != shape.len() || sizes.len() != shape.len() || strides.len() != shape.len() {
        return Err(format!(
            "a slice of a rank-{} tensor needs {} offsets, sizes and strides",
            shape.len(),
            shape.len()
        ));
    }
    for d in 0..shape.len() {
        if offsets[d] < 0 || strides[d] < 1 {
            return Err(format!(
                "slice offset {} and stride {} of dimension {d} must be >= 0 and >= 1",
                offsets[d], strides[d]
            ));
        }
        if sizes[d] > 0 {
            let last = offsets[d] as u64 + (sizes[d] as u64 - 1) * strides[d] as u64;
            if last >= shape[d] as u64 {
                return Err(format!(
                    "slice of dimension {d} reaches index {last}, beyond its size {}",
                    shape[d]
                ));
            }
        }
    }
    Ok(())
}

/// Calls `f(flat index in the slice, flat index in the full tensor)` for every slice element.
fn for_each_slice_element(
    shape: &[usize],
    offsets: &[i64],
    sizes: &[usize],
    strides: &[i64],
    mut f: impl FnMut(usize, usize, usize),
) {
    let full = strides_of(shape);
    let total = numel(sizes);
    // Unit innermost stride: whole runs along the last dimension, their start computed
    // once per run.
    if let (Some(&inner), Some(&1)) = (sizes.last(), strides.last()) {
        if inner == 0 {
            return;
        }
        let rank = sizes.len();
        let mut idx = vec![0usize; rank];
        for run in 0..total / inner {
            let mut src = 0usize;
            for d in 0..rank {
                src += (offsets[d] as usize + idx[d] * strides[d] as usize) * full[d];
            }
            f(run * inner, src, inner);
            for d in (0..rank - 1).rev() {
                idx[d] += 1;
                if idx[d] < sizes[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        return;
    }
    let mut idx = vec![0usize; sizes.len()];
    for flat in 0..total {
        let mut src = 0usize;
        for d in 0..sizes.len() {
            src += (offsets[d] as usize + idx[d] * strides[d] as usize) * full[d];
        }
        f(flat, src, 1);
        for d in (0..sizes.len()).rev() {
            idx[d] += 1;
            if idx[d] < sizes[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// `tensor.extract_slice`.
pub fn extract_slice(
    data: &[f32],
    shape: &[usize],
    offsets: &[i64],
    sizes: &[usize],
    strides: &[i64],
) -> Result<Vec<f32>, String> {
    check_slice(shape, offsets, sizes, strides)?;
    let mut out = crate::pool::take(numel(sizes));
    out.resize(numel(sizes), 0.0);
    for_each_slice_element(shape, offsets, sizes, strides, |i, src, len| {
        match data.get(src..src + len) {
            Some(run) => out[i..i + len].copy_from_slice(run),
            None => {
                for j in 0..len {
                    out[i + j] = data.get(src + j).copied().unwrap_or(0.0);
                }
            }
        }
    });
    Ok(out)
}

/// `tensor.insert_slice`: `dest` with `source` written at the slice.
pub fn insert_slice(
    source: &[f32],
    dest: &[f32],
    dest_shape: &[usize],
    offsets: &[i64],
    sizes: &[usize],
    strides: &[i64],
) -> Result<Vec<f32>, String> {
    check_slice(dest_shape, offsets, sizes, strides)?;
    if source.len() != numel(sizes) {
        return Err(format!(
            "inserting {} elements into a slice of {} elements",
            source.len(),
            numel(sizes)
        ));
    }
    let mut out = crate::pool::copy_of(dest);
    for_each_slice_element(dest_shape, offsets, sizes, strides, |i, dst, len| match out
        .get_mut(dst..dst + len)
    {
        Some(run) => run.copy_from_slice(&source[i..i + len]),
        None => {
            for j in 0..len {
                if let Some(slot) = out.get_mut(dst + j) {
                    *slot = source[i + j];
                }
            }
        }
    });
    Ok(out)
}

/// `linalg.batch_matmul` (and `linalg.matmul` with `batch = 1`): `init + a @ b` per batch,
/// accumulated in f32. Shapes: a `[b, m, k]`, b `[b, k, n]`, init `[b, m, n]`.
pub fn batch_matmul(
    a: &[f32],
    b: &[f32],
    init: &[f32],
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
) -> Result<Vec<f32>, String> {
    if a.len() != batch * m * k || b.len() != batch * k * n || init.len() != batch * m * n {
        return Err("matmul operand sizes do not match their shapes".into());
    }
    let mut out = init.to_vec();
    for bi in 0..batch {
        let (ao, bo, co) = (bi * m * k, bi * k * n, bi * m * n);
        for i in 0..m {
            for p in 0..k {
                let x = a[ao + i * k + p];
                if x == 0.0 {
                    continue;
                }
                let brow = &b[bo + p * n..bo + p * n + n];
                let crow = &mut out[co + i * n..co + i * n + n];
                for (c, &y) in crow.iter_mut().zip(brow) {
                    *c += x * y;
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_over_inner_and_outer_dims() {
        // [2, 3] = [[1, 2, 3], [4, 5, 6]]
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(
            reduce(&x, &[2, 3], &[1], &[0.0, 0.0], Combiner::Add).unwrap(),
            vec![6.0, 15.0]
        );
        assert_eq!(
            reduce(&x, &[2, 3], &[0], &[f32::MIN; 3], Combiner::Max).unwrap(),
            vec![4.0, 5.0, 6.0]
        );
        // The init takes part: reduce accumulates onto it.
        assert_eq!(
            reduce(&x, &[2, 3], &[0, 1], &[10.0], Combiner::Add).unwrap(),
            vec![31.0]
        );
        assert!(reduce(&x, &[2, 3], &[1], &[0.0], Combiner::Add).is_err());
        assert!(reduce(&x, &[2, 3], &[2], &[0.0], Combiner::Add).is_err());
    }

    #[test]
    fn slices_extract_and_insert() {
        let x: Vec<f32> = (0..12).map(|i| i as f32).collect(); // [3, 4]
        let s = extract_slice(&x, &[3, 4], &[1, 1], &[2, 2], &[1, 2]).unwrap();
        assert_eq!(s, vec![5.0, 7.0, 9.0, 11.0]);
        let back = insert_slice(&[0.0; 4], &x, &[3, 4], &[1, 1], &[2, 2], &[1, 2]).unwrap();
        assert_eq!(back[5], 0.0);
        assert_eq!(back[6], 6.0);
        assert!(extract_slice(&x, &[3, 4], &[2, 0], &[2, 4], &[1, 1]).is_err());
        assert!(extract_slice(&x, &[3, 4], &[0, 0], &[1, 1], &[0, 1]).is_err());
    }

    #[test]
    fn batch_matmul_accumulates_onto_the_init() {
        // Two batches of [1, 2] @ [2, 1].
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [5.0, 6.0, 7.0, 8.0];
        let r = batch_matmul(&a, &b, &[1.0, 1.0], 2, 1, 2, 1).unwrap();
        assert_eq!(r, vec![1.0 + 5.0 + 12.0, 1.0 + 21.0 + 32.0]);
        assert!(batch_matmul(&a, &b, &[0.0], 2, 1, 2, 1).is_err());
    }
}

#[cfg(test)]
mod run_tests {
    use super::*;

    /// The reduction as a plain walk over every element (the general path).
    fn reduce_by_walk(input: &[f32], shape: &[usize], dims: &[usize], init: &[f32]) -> Vec<f32> {
        let kept: Vec<usize> = (0..shape.len()).filter(|d| !dims.contains(d)).collect();
        let out_shape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
        let out_strides = strides_of(&out_shape);
        let mut out = init.to_vec();
        let mut idx = vec![0usize; shape.len()];
        for &x in input {
            let o: usize = kept
                .iter()
                .enumerate()
                .map(|(k, &d)| idx[d] * out_strides[k])
                .sum();
            out[o] += x;
            for d in (0..shape.len()).rev() {
                idx[d] += 1;
                if idx[d] < shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        out
    }

    #[test]
    fn reductions_over_leading_or_trailing_runs_fold_in_walk_order() {
        let shape = [3, 4, 5];
        let x: Vec<f32> = (0..60).map(|i| (i as f32 * 0.37).sin() * 1e4).collect();
        for dims in [
            vec![2],
            vec![1, 2],
            vec![0],
            vec![0, 1],
            vec![1],
            vec![0, 1, 2],
            vec![],
        ] {
            let kept: Vec<usize> = (0..3)
                .filter(|d| !dims.contains(d))
                .map(|d| shape[d])
                .collect();
            let init: Vec<f32> = (0..numel(&kept)).map(|i| i as f32 * 0.5).collect();
            let got = reduce(&x, &shape, &dims, &init, Combiner::Add).unwrap();
            let want = reduce_by_walk(&x, &shape, &dims, &init);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "dims {dims:?}");
        }
    }

    #[test]
    fn rows_folded_side_by_side_match_one_fold_per_row() {
        // 19 rows (two blocks of 8 and a remainder) with NaNs and zeros of both signs.
        let (rows, len) = (19, 7);
        let x: Vec<f32> = (0..rows * len)
            .map(|i| match i % 11 {
                3 => f32::NAN,
                5 => -0.0,
                7 => 0.0,
                _ => (i as f32 * 0.61).cos() * 3e3,
            })
            .collect();
        let init: Vec<f32> = (0..rows).map(|i| i as f32 - 9.0).collect();
        for c in [Combiner::Add, Combiner::Mul, Combiner::Max, Combiner::Min] {
            let got = reduce(&x, &[rows, len], &[1], &init, c).unwrap();
            for (r, g) in got.iter().enumerate() {
                let want = x[r * len..(r + 1) * len]
                    .iter()
                    .fold(init[r], |a, &v| c.apply(a, v));
                let same = g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan());
                assert!(same, "{c:?} row {r}: {g} vs {want}");
            }
        }
    }

    #[test]
    fn slices_with_unit_and_other_strides_copy_the_same_elements() {
        let shape = [4, 6];
        let x: Vec<f32> = (0..24).map(|i| i as f32).collect();
        let s = extract_slice(&x, &shape, &[1, 2], &[2, 3], &[2, 1]).unwrap();
        assert_eq!(s, vec![8.0, 9.0, 10.0, 20.0, 21.0, 22.0]);
        let s = extract_slice(&x, &shape, &[0, 1], &[2, 2], &[1, 2]).unwrap();
        assert_eq!(s, vec![1.0, 3.0, 7.0, 9.0]);
        let y = insert_slice(
            &[-1.0, -2.0, -3.0, -4.0],
            &x,
            &shape,
            &[2, 4],
            &[2, 2],
            &[1, 1],
        )
        .unwrap();
        assert_eq!(&y[16..18], &[-1.0, -2.0]);
        assert_eq!(&y[22..24], &[-3.0, -4.0]);
        assert_eq!(y.iter().filter(|v| **v < 0.0).count(), 4);
    }
}
