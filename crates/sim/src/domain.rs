//! The value domain the interpreter computes in. Index arithmetic, control flow, views,
//! tiles and every timing task are the interpreter's own; what a tensor or a buffer holds
//! is the domain's. Two domains implement [`Domain`]:
//!
//! - [`Numbers`] computes every element: tensors and DRAM buffers hold row-major `f32`
//!   values rounded to their element type.
//! - [`ShapesOnly`] computes none: tensors and buffers are their shapes and element types,
//!   their contents empty. A scalar that would be read from tensor data becomes
//!   [`RtValue::Unknown`]; the indices of an indirect access tile are assumed (see
//!   [`ASSUMED_INDICES`]). It is what plans models too large to run with numbers.
//!
//! The simulator picks its domain once, when it is made ([`crate::Simulator::new`] or
//! [`crate::Simulator::new_timing_only`]); nothing else asks which one it runs. Each method
//! works on a whole tensor, span or buffer, so one dynamic call per op is all the dispatch
//! costs. Shape checks that the numeric kernels make are made by both domains, so a
//! program is refused alike in both.

use crate::exec_ew;
use crate::exec_ops::{self, Combiner};
use crate::store::{Loc, Memory, Span};
use crate::value::{round_slice, round_to, RtValue, TensorVal, ViewVal};
use ktir::ast::{ElementwiseOp, Predicate, ScalarType};
use std::rc::Rc;

/// What a shapes-only run assumes for the indices of an indirect access tile.
pub(crate) const ASSUMED_INDICES: &str = "index values are not computed in a timing-only run; assumed to be the identity (the index at row-major position p of its index view reads as p, wrapped into the size of the dimension it subscripts), so the elements gathered or scattered, and for a distributed view the memory stops they use, may differ from a run with numbers";

/// A scalar or tensor operand seen elementwise.
pub(crate) enum Arg {
    Scalar(f64),
    /// A scalar timing-only mode did not compute (the line of its `tensor.extract`).
    Unknown(u32),
    Tensor(Rc<TensorVal>),
}

/// Most operands an elementwise op reads (`math.fma`).
pub(crate) const MAX_EW_OPERANDS: usize = 3;

/// The operations on tensor and buffer contents the interpreter needs. Contents are
/// row-major `f32` vectors: full in [`Numbers`], empty in [`ShapesOnly`]. Shapes, element
/// types and sizes are checked by the caller before a method is called.
pub(crate) trait Domain {
    /// Whether contents are computed (what [`crate::Simulator::is_timing_only`] reports).
    fn computes_numbers(&self) -> bool;

    /// The contents of a DRAM buffer given `data`, rounded to `elem`.
    fn buffer(&self, elem: ScalarType, data: Vec<f32>) -> Vec<f32>;

    /// `n` copies of `x` (already rounded).
    fn filled(&self, n: usize, x: f32) -> Vec<f32>;

    /// The contents of a tensor argument of `n` elements from `given`; `None` when the
    /// given data does not fit.
    fn tensor_arg(&self, elem: ScalarType, given: &[f32], n: usize) -> Option<Vec<f32>>;

    /// A dense constant's values, rounded to `elem`.
    fn dense(&self, elem: ScalarType, values: &[f64]) -> Vec<f32>;

    /// `ew` over `n` elements of `args` (scalars broadcast), in `elem` (integer semantics
    /// when `ints`); `Err(i)` when element `i` divides an integer by zero.
    fn elementwise(
        &self,
        ew: ElementwiseOp,
        elem: ScalarType,
        ints: bool,
        args: &[Arg],
        n: usize,
    ) -> Result<Vec<f32>, usize>;

    /// `predicate` over `n` elements of two operands, as `i1` values.
    fn compare(&self, predicate: Predicate, elem: ScalarType, args: &[Arg], n: usize) -> Vec<f32>;

    /// `args[0] ? args[1] : args[2]` over `n` elements.
    fn select(&self, args: &[Arg], n: usize) -> Vec<f32>;

    /// `arith` cast `name` of every element of `x` from `from` to `to`.
    fn cast(&self, name: &str, x: &TensorVal, from: ScalarType, to: ScalarType) -> Vec<f32>;

    /// The scalar at `flat` of `t` (`tensor.extract` on line `line`); `None` when `t`
    /// holds no element there.
    fn extract(&self, t: &TensorVal, flat: usize, line: u32) -> Option<RtValue>;

    /// `t` with element `flat` set to `x` (rounded).
    fn insert(&self, t: &TensorVal, flat: usize, x: f32) -> Vec<f32>;

    /// `tensor.extract_slice` of `x`.
    fn extract_slice(
        &self,
        x: &TensorVal,
        offsets: &[i64],
        sizes: &[usize],
        strides: &[i64],
    ) -> Result<Vec<f32>, String>;

    /// `tensor.insert_slice` of `src` into `dst` (rounded to `dst`'s type).
    fn insert_slice(
        &self,
        src: &TensorVal,
        dst: &TensorVal,
        offsets: &[i64],
        sizes: &[usize],
        strides: &[i64],
    ) -> Result<Vec<f32>, String>;

    /// The elements of `x` at `sum(p[d] * from[d])` for every point `p` of `shape`
    /// (transposes and broadcasts).
    fn gather(&self, x: &TensorVal, shape: &[usize], from: &[usize]) -> Vec<f32>;

    /// `c + op(a) x op(b)` for `[m, k] x [k, n]`, rounded to `c`'s type; `None` when the
    /// contents do not match the shapes.
    fn matmul(
        &self,
        a: &TensorVal,
        b: &TensorVal,
        c: &TensorVal,
        mkn: (usize, usize, usize),
        transpose_a: bool,
        transpose_b: bool,
    ) -> Option<Vec<f32>>;

    /// `c + a @ b` per batch, rounded to `c`'s type.
    fn batch_matmul(
        &self,
        a: &TensorVal,
        b: &TensorVal,
        c: &TensorVal,
        bmkn: (usize, usize, usize, usize),
    ) -> Result<Vec<f32>, String>;

    /// `x` folded over `dims` onto `init` with a single-op combiner, rounded to `init`'s
    /// type.
    fn reduce(
        &self,
        x: &TensorVal,
        dims: &[usize],
        init: &TensorVal,
        combiner: Combiner,
    ) -> Result<Vec<f32>, String>;

    /// The iteration space a region computing element values (a `linalg.generic` body or a
    /// reduction's general combiner) is interpreted over: all of `extents`, or nothing.
    fn region_space(&self, extents: &[usize]) -> Vec<usize>;

    /// The index an indirect access tile reads at `loc` of index view `iv` (point `at`),
    /// for a dimension of `size` elements, and whether it was assumed rather than read.
    fn index_value(
        &self,
        mem: &Memory,
        loc: Loc,
        iv: &ViewVal,
        at: &[i64],
        size: i64,
    ) -> (f32, bool);

    /// A tile's contents read over a box span.
    fn load_span(&self, mem: &Memory, span: &Span, elem: ScalarType, n: usize) -> Vec<f32>;

    /// The contents of a tile read point by point (filled in by [`Memory::read_loc`] at
    /// each index the vector has).
    fn load_points(&self, n: usize) -> Vec<f32>;

    /// Writes `values` over a box span.
    fn store_span(&self, mem: &mut Memory, span: &Span, elem: ScalarType, values: &[f32]);
}

/// Computes every element.
pub(crate) struct Numbers;

/// Computes shapes and element types only.
pub(crate) struct ShapesOnly;

fn arg_at(a: &Arg, i: usize) -> f64 {
    match a {
        Arg::Scalar(x) => *x,
        Arg::Tensor(t) => t.data.get(i).copied().unwrap_or(0.0) as f64,
        Arg::Unknown(_) => 0.0,
    }
}

impl Domain for Numbers {
    fn computes_numbers(&self) -> bool {
        true
    }

    fn buffer(&self, elem: ScalarType, mut data: Vec<f32>) -> Vec<f32> {
        round_slice(elem, &mut data);
        data
    }

    fn filled(&self, n: usize, x: f32) -> Vec<f32> {
        let mut v = crate::pool::take(n);
        v.resize(n, x);
        v
    }

    fn tensor_arg(&self, elem: ScalarType, given: &[f32], n: usize) -> Option<Vec<f32>> {
        (given.len() == n).then(|| {
            let mut data = given.to_vec();
            round_slice(elem, &mut data);
            data
        })
    }

    fn dense(&self, elem: ScalarType, values: &[f64]) -> Vec<f32> {
        values.iter().map(|x| round_to(elem, *x as f32)).collect()
    }

    fn elementwise(
        &self,
        ew: ElementwiseOp,
        elem: ScalarType,
        ints: bool,
        args: &[Arg],
        n: usize,
    ) -> Result<Vec<f32>, usize> {
        if !ints {
            if let Some(mut data) = float_elementwise(ew, args, n) {
                round_slice(elem, &mut data);
                return Ok(data);
            }
        }
        let mut data = crate::pool::take(n);
        let mut vals = vec![0.0f64; args.len()];
        for i in 0..n {
            for (v, a) in vals.iter_mut().zip(args) {
                *v = arg_at(a, i);
            }
            data.push(apply(ew, elem, ints, &vals).ok_or(i)? as f32);
        }
        Ok(data)
    }

    fn compare(&self, predicate: Predicate, elem: ScalarType, args: &[Arg], n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let r = exec_ew::compare(predicate, arg_at(&args[0], i), arg_at(&args[1], i), elem);
                if r {
                    1.0
                } else {
                    0.0
                }
            })
            .collect()
    }

    fn select(&self, args: &[Arg], n: usize) -> Vec<f32> {
        let at = |a: &Arg, i: usize| match a {
            Arg::Scalar(x) => *x as f32,
            Arg::Tensor(t) => t.data.get(i).copied().unwrap_or(0.0),
            Arg::Unknown(_) => 0.0,
        };
        (0..n)
            .map(|i| {
                if at(&args[0], i) != 0.0 {
                    at(&args[1], i)
                } else {
                    at(&args[2], i)
                }
            })
            .collect()
    }

    fn cast(&self, name: &str, x: &TensorVal, from: ScalarType, to: ScalarType) -> Vec<f32> {
        // A float result of anything but a bitcast or an unsigned conversion is the value
        // rounded to the result type (`exec_ew::cast`), so the whole tensor rounds at once.
        if to.is_float() && name != "arith.bitcast" && name != "arith.uitofp" {
            let mut data = crate::pool::copy_of(&x.data);
            round_slice(to, &mut data);
            return data;
        }
        x.data
            .iter()
            .map(|&v| exec_ew::cast(name, v as f64, from, to) as f32)
            .collect()
    }

    fn extract(&self, t: &TensorVal, flat: usize, _line: u32) -> Option<RtValue> {
        t.data
            .get(flat)
            .map(|x| crate::value::scalar_value(*x as f64, t.elem))
    }

    fn insert(&self, t: &TensorVal, flat: usize, x: f32) -> Vec<f32> {
        let mut data = crate::pool::copy_of(&t.data);
        if let Some(slot) = data.get_mut(flat) {
            *slot = round_to(t.elem, x);
        }
        data
    }

    fn extract_slice(
        &self,
        x: &TensorVal,
        offsets: &[i64],
        sizes: &[usize],
        strides: &[i64],
    ) -> Result<Vec<f32>, String> {
        exec_ops::extract_slice(&x.data, &x.shape, offsets, sizes, strides)
    }

    fn insert_slice(
        &self,
        src: &TensorVal,
        dst: &TensorVal,
        offsets: &[i64],
        sizes: &[usize],
        strides: &[i64],
    ) -> Result<Vec<f32>, String> {
        let mut data =
            exec_ops::insert_slice(&src.data, &dst.data, &dst.shape, offsets, sizes, strides)?;
        round_slice(dst.elem, &mut data);
        Ok(data)
    }

    fn gather(&self, x: &TensorVal, shape: &[usize], from: &[usize]) -> Vec<f32> {
        gather(&x.data, shape, from)
    }

    fn matmul(
        &self,
        a: &TensorVal,
        b: &TensorVal,
        c: &TensorVal,
        mkn: (usize, usize, usize),
        transpose_a: bool,
        transpose_b: bool,
    ) -> Option<Vec<f32>> {
        matmul_data(a, b, c, mkn, transpose_a, transpose_b)
    }

    fn batch_matmul(
        &self,
        a: &TensorVal,
        b: &TensorVal,
        c: &TensorVal,
        (bt, m, k, n): (usize, usize, usize, usize),
    ) -> Result<Vec<f32>, String> {
        let mut data = exec_ops::batch_matmul(&a.data, &b.data, &c.data, bt, m, k, n)?;
        round_slice(c.elem, &mut data);
        Ok(data)
    }

    fn reduce(
        &self,
        x: &TensorVal,
        dims: &[usize],
        init: &TensorVal,
        combiner: Combiner,
    ) -> Result<Vec<f32>, String> {
        let mut data = exec_ops::reduce(&x.data, &x.shape, dims, &init.data, combiner)?;
        round_slice(init.elem, &mut data);
        Ok(data)
    }

    fn region_space(&self, extents: &[usize]) -> Vec<usize> {
        extents.to_vec()
    }

    fn index_value(
        &self,
        mem: &Memory,
        loc: Loc,
        iv: &ViewVal,
        _at: &[i64],
        _size: i64,
    ) -> (f32, bool) {
        (mem.read_loc(loc, iv.elem), false)
    }

    fn load_span(&self, mem: &Memory, span: &Span, elem: ScalarType, n: usize) -> Vec<f32> {
        mem.read_span(span, elem, n)
    }

    fn load_points(&self, n: usize) -> Vec<f32> {
        vec![0.0; n]
    }

    fn store_span(&self, mem: &mut Memory, span: &Span, elem: ScalarType, values: &[f32]) {
        mem.write_span(span, elem, values);
    }
}

impl Domain for ShapesOnly {
    fn computes_numbers(&self) -> bool {
        false
    }

    fn buffer(&self, _elem: ScalarType, _data: Vec<f32>) -> Vec<f32> {
        Vec::new()
    }

    fn filled(&self, _n: usize, _x: f32) -> Vec<f32> {
        Vec::new()
    }

    /// Tensors are taken without data (any given is dropped).
    fn tensor_arg(&self, _elem: ScalarType, _given: &[f32], _n: usize) -> Option<Vec<f32>> {
        Some(Vec::new())
    }

    fn dense(&self, _elem: ScalarType, _values: &[f64]) -> Vec<f32> {
        Vec::new()
    }

    fn elementwise(
        &self,
        _ew: ElementwiseOp,
        _elem: ScalarType,
        _ints: bool,
        _args: &[Arg],
        _n: usize,
    ) -> Result<Vec<f32>, usize> {
        Ok(Vec::new())
    }

    fn compare(
        &self,
        _predicate: Predicate,
        _elem: ScalarType,
        _args: &[Arg],
        _n: usize,
    ) -> Vec<f32> {
        Vec::new()
    }

    fn select(&self, _args: &[Arg], _n: usize) -> Vec<f32> {
        Vec::new()
    }

    fn cast(&self, _name: &str, _x: &TensorVal, _from: ScalarType, _to: ScalarType) -> Vec<f32> {
        Vec::new()
    }

    /// Tensor data is not computed, so the scalar is unknown: arithmetic carries it along,
    /// and a use that needs its value refuses it (see [`RtValue::Unknown`]).
    fn extract(&self, _t: &TensorVal, _flat: usize, line: u32) -> Option<RtValue> {
        Some(RtValue::Unknown(line))
    }

    fn insert(&self, _t: &TensorVal, _flat: usize, _x: f32) -> Vec<f32> {
        Vec::new()
    }

    fn extract_slice(
        &self,
        x: &TensorVal,
        offsets: &[i64],
        sizes: &[usize],
        strides: &[i64],
    ) -> Result<Vec<f32>, String> {
        exec_ops::check_slice(&x.shape, offsets, sizes, strides)?;
        Ok(Vec::new())
    }

    fn insert_slice(
        &self,
        src: &TensorVal,
        dst: &TensorVal,
        offsets: &[i64],
        sizes: &[usize],
        strides: &[i64],
    ) -> Result<Vec<f32>, String> {
        exec_ops::check_slice(&dst.shape, offsets, sizes, strides)?;
        if src.numel() != sizes.iter().product::<usize>() {
            return Err(format!(
                "inserting {} elements into a slice of {} elements",
                src.numel(),
                sizes.iter().product::<usize>()
            ));
        }
        Ok(Vec::new())
    }

    fn gather(&self, _x: &TensorVal, _shape: &[usize], _from: &[usize]) -> Vec<f32> {
        Vec::new()
    }

    fn matmul(
        &self,
        _a: &TensorVal,
        _b: &TensorVal,
        _c: &TensorVal,
        _mkn: (usize, usize, usize),
        _transpose_a: bool,
        _transpose_b: bool,
    ) -> Option<Vec<f32>> {
        Some(Vec::new())
    }

    fn batch_matmul(
        &self,
        _a: &TensorVal,
        _b: &TensorVal,
        _c: &TensorVal,
        _bmkn: (usize, usize, usize, usize),
    ) -> Result<Vec<f32>, String> {
        Ok(Vec::new())
    }

    fn reduce(
        &self,
        x: &TensorVal,
        dims: &[usize],
        init: &TensorVal,
        _combiner: Combiner,
    ) -> Result<Vec<f32>, String> {
        exec_ops::check_reduce(&x.shape, dims, init.numel())?;
        Ok(Vec::new())
    }

    /// The region computes element values only, so it is not interpreted.
    fn region_space(&self, _extents: &[usize]) -> Vec<usize> {
        vec![0]
    }

    fn index_value(
        &self,
        _mem: &Memory,
        _loc: Loc,
        iv: &ViewVal,
        at: &[i64],
        size: i64,
    ) -> (f32, bool) {
        (assumed_index(iv, at, size), true)
    }

    fn load_span(&self, _mem: &Memory, _span: &Span, _elem: ScalarType, _n: usize) -> Vec<f32> {
        Vec::new()
    }

    fn load_points(&self, _n: usize) -> Vec<f32> {
        Vec::new()
    }

    fn store_span(&self, _mem: &mut Memory, _span: &Span, _elem: ScalarType, _values: &[f32]) {}
}

/// `ew` on one element's operands.
pub(crate) fn apply(ew: ElementwiseOp, elem: ScalarType, ints: bool, vals: &[f64]) -> Option<f64> {
    // Ops take at most three operands; more would be ignored anyway.
    let n = vals.len().min(MAX_EW_OPERANDS);
    if ints {
        let mut v = [0i64; MAX_EW_OPERANDS];
        for (o, x) in v.iter_mut().zip(vals) {
            *o = *x as i64;
        }
        exec_ew::int(ew, &v[..n], elem).map(|r| r as f64)
    } else {
        let mut v = [0f32; MAX_EW_OPERANDS];
        for (o, x) in v.iter_mut().zip(vals) {
            *o = *x as f32;
        }
        Some(round_to(elem, exec_ew::float(ew, &v[..n])) as f64)
    }
}

/// One float operand of an elementwise op over `n` elements.
#[derive(Clone, Copy)]
enum Operand<'a> {
    /// A tensor's elements (exactly `n`).
    Slice(&'a [f32]),
    /// A scalar broadcast to every element (as `apply` sees it: narrowed to f32).
    Splat(f32),
}

impl Operand<'_> {
    fn of(a: &Arg, n: usize) -> Option<Operand<'_>> {
        match a {
            Arg::Scalar(x) => Some(Operand::Splat(*x as f32)),
            Arg::Tensor(t) if t.data.len() == n => Some(Operand::Slice(&t.data)),
            _ => None,
        }
    }
}

/// `f` over one operand into a new vector.
fn map1(x: Operand<'_>, n: usize, f: impl Fn(f32) -> f32) -> Vec<f32> {
    let mut out = crate::pool::take(n);
    match x {
        Operand::Slice(a) => out.extend(a.iter().map(|&v| f(v))),
        Operand::Splat(v) => out.resize(n, f(v)),
    }
    out
}

/// `f` over two operands into a new vector, one loop per operand kind so each loop is a
/// plain pass over slices.
fn map2(x: Operand<'_>, y: Operand<'_>, n: usize, f: impl Fn(f32, f32) -> f32) -> Vec<f32> {
    let mut out = crate::pool::take(n);
    match (x, y) {
        (Operand::Slice(a), Operand::Slice(b)) => {
            out.extend(a.iter().zip(b).map(|(&p, &q)| f(p, q)))
        }
        (Operand::Slice(a), Operand::Splat(q)) => out.extend(a.iter().map(|&p| f(p, q))),
        (Operand::Splat(p), Operand::Slice(b)) => out.extend(b.iter().map(|&q| f(p, q))),
        (Operand::Splat(p), Operand::Splat(q)) => out.resize(n, f(p, q)),
    }
    out
}

/// A float elementwise op over whole tensors, before rounding to the result type: the
/// same values [`apply`] computes element by element (the per-element semantics of
/// [`exec_ew::float`]), without per-element dispatch. `None` for operands it does not
/// take (unknown scalars, tensors of another size), which go element by element.
fn float_elementwise(ew: ElementwiseOp, args: &[Arg], n: usize) -> Option<Vec<f32>> {
    use ElementwiseOp::*;
    let ops: Vec<Operand<'_>> = args
        .iter()
        .take(MAX_EW_OPERANDS)
        .map(|a| Operand::of(a, n))
        .collect::<Option<_>>()?;
    // Each op gets its own monomorphic loop, so the compiler sees straight-line float
    // code over slices (vectorised where the operation allows it).
    match (ops.as_slice(), ew) {
        (&[x, y], AddF | LinalgAdd) => Some(map2(x, y, n, |p, q| p + q)),
        (&[x, y], SubF | LinalgSub) => Some(map2(x, y, n, |p, q| p - q)),
        (&[x, y], MulF | LinalgMul) => Some(map2(x, y, n, |p, q| p * q)),
        (&[x, y], DivF | LinalgDiv) => Some(map2(x, y, n, |p, q| p / q)),
        (&[x, y], _) => binary_any(ew, x, y, n),
        (&[Operand::Slice(a)], Exp | LinalgExp) => Some(crate::exp_slice::exp_slice(a)),
        (&[x], Exp | LinalgExp) => Some(map1(x, n, f32::exp)),
        (&[x], Rsqrt | LinalgRsqrt) => Some(map1(x, n, |v| 1.0 / v.sqrt())),
        (&[x], Sqrt | LinalgSqrt) => Some(map1(x, n, f32::sqrt)),
        (&[x], NegF | LinalgNegF) => Some(map1(x, n, |v| -v)),
        (&[x], _) => Some(map1(x, n, |v| exec_ew::float(ew, &[v]))),
        _ => None,
    }
}

/// A two-operand op without a dedicated loop: the per-element semantics, still without
/// the per-element conversions.
fn binary_any(ew: ElementwiseOp, x: Operand<'_>, y: Operand<'_>, n: usize) -> Option<Vec<f32>> {
    Some(map2(x, y, n, |p, q| exec_ew::float(ew, &[p, q])))
}

/// The index a shapes-only run assumes at point `at` of index view `iv`, for a dimension
/// of `size` elements (see [`ASSUMED_INDICES`]).
fn assumed_index(iv: &ViewVal, at: &[i64], size: i64) -> f32 {
    let mut flat: i64 = 0;
    for (c, n) in at.iter().zip(&iv.sizes) {
        flat = flat.wrapping_mul(*n).wrapping_add(*c);
    }
    flat.rem_euclid(size.max(1)) as f32
}

/// `round(c + op(a) x op(b))` for `[m, k] x [k, n]`, each element accumulated in f32 in
/// ascending `p` (the order of a dot product per element).
///
/// The output is cut into register tiles (see [`matmul_add`]) whose accumulators stay
/// in registers for the whole `p` loop; tiles sweep down a column strip of `b`, which
/// stays in cache while every row block uses it. Only `i` and `j` are blocked, so every
/// element sees exactly the additions of the plain triple loop.
fn matmul_data(
    a: &TensorVal,
    b: &TensorVal,
    c: &TensorVal,
    (m, k, n): (usize, usize, usize),
    transpose_a: bool,
    transpose_b: bool,
) -> Option<Vec<f32>> {
    if a.data.len() != m * k || b.data.len() != k * n || c.data.len() != m * n {
        return None;
    }
    // `a` as m rows of k, `b` as k rows of n.
    let at;
    let a_rows: &[f32] = if transpose_a {
        at = transposed(&a.data, k, m);
        &at
    } else {
        &a.data
    };
    let bt;
    let b_rows: &[f32] = if transpose_b {
        bt = transposed(&b.data, n, k);
        &bt
    } else {
        &b.data
    };
    let mut out = crate::pool::copy_of(&c.data);
    if k == 0 || n == 0 {
        round_slice(c.elem, &mut out);
        return Some(out);
    }
    matmul_add(a_rows, b_rows, &mut out, (m, k, n));
    round_slice(c.elem, &mut out);
    Some(out)
}

/// `out += a x b` by register tiles as wide as the machine's vectors allow. Each tile size
/// adds the same terms in the same order per element (there is no fused multiply-add: Rust
/// never contracts `s += x * y`), so every path gives the same bits.
fn matmul_add(a: &[f32], b: &[f32], out: &mut [f32], mkn: (usize, usize, usize)) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the feature the function is compiled for.
            unsafe { matmul_add_avx512(a, b, out, mkn) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: as above.
            unsafe { matmul_add_avx(a, b, out, mkn) };
            return;
        }
    }
    // 4 x 8 f32 accumulators fill eight 128-bit registers (SSE2, WebAssembly SIMD128),
    // leaving room for a row of `b`.
    matmul_blocked::<4, 8>(a, b, out, mkn);
}

/// [`matmul_blocked`] with 8 x 32 accumulators in sixteen of AVX-512's 32 registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn matmul_add_avx512(a: &[f32], b: &[f32], out: &mut [f32], mkn: (usize, usize, usize)) {
    matmul_blocked::<8, 32>(a, b, out, mkn);
}

/// [`matmul_blocked`] with 4 x 16 accumulators in eight of AVX's 16 registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn matmul_add_avx(a: &[f32], b: &[f32], out: &mut [f32], mkn: (usize, usize, usize)) {
    matmul_blocked::<4, 16>(a, b, out, mkn);
}

/// `out += a x b` cut into `TM` x `TN` register tiles, then the ragged edges.
#[inline(always)]
fn matmul_blocked<const TM: usize, const TN: usize>(
    a: &[f32],
    b: &[f32],
    out: &mut [f32],
    (m, k, n): (usize, usize, usize),
) {
    let full_m = m - m % TM;
    let full_n = n - n % TN;
    for j0 in (0..full_n).step_by(TN) {
        for i0 in (0..full_m).step_by(TM) {
            matmul_tile::<TM, TN>(a, b, out, (i0, j0), k, n);
        }
    }
    // The ragged edges: the last columns of the tiled rows, then the last rows.
    matmul_plain(a, b, out, 0..full_m, full_n..n, k, n);
    matmul_plain(a, b, out, full_m..m, 0..n, k, n);
}

/// `x` (`rows` rows of `cols`) transposed to `cols` rows of `rows`.
fn transposed(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0f32; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = x[r * cols + c];
        }
    }
    t
}

/// Adds `a[i0.., :] x b[:, j0..]` onto the `TM` x `TN` tile of `out` at `(i0, j0)`, in
/// ascending `p` per element.
#[inline(always)]
fn matmul_tile<const TM: usize, const TN: usize>(
    a: &[f32],
    b: &[f32],
    out: &mut [f32],
    (i0, j0): (usize, usize),
    k: usize,
    n: usize,
) {
    let mut acc = [[0.0f32; TN]; TM];
    for (r, row) in acc.iter_mut().enumerate() {
        let at = (i0 + r) * n + j0;
        row.copy_from_slice(&out[at..at + TN]);
    }
    let a_rows: [&[f32]; TM] = std::array::from_fn(|r| &a[(i0 + r) * k..(i0 + r + 1) * k]);
    for (p, b_row) in b.chunks_exact(n).take(k).enumerate() {
        let Some(y) = b_row[j0..].first_chunk::<TN>() else {
            return;
        };
        for (acc_row, a_row) in acc.iter_mut().zip(&a_rows) {
            let x = a_row[p];
            for (s, &y) in acc_row.iter_mut().zip(y) {
                // Every term is added, zeros included, so NaN and signed zeros behave as
                // in a plain dot product.
                *s += x * y;
            }
        }
    }
    for (r, row) in acc.iter().enumerate() {
        let at = (i0 + r) * n + j0;
        out[at..at + TN].copy_from_slice(row);
    }
}

/// Adds `a[rows, :] x b[:, cols]` onto `out` with the plain loops, in ascending `p` per
/// element.
fn matmul_plain(
    a: &[f32],
    b: &[f32],
    out: &mut [f32],
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    k: usize,
    n: usize,
) {
    if cols.is_empty() {
        return;
    }
    for i in rows {
        let row = &mut out[i * n + cols.start..i * n + cols.end];
        for p in 0..k {
            let x = a[i * k + p];
            let y = &b[p * n + cols.start..p * n + cols.end];
            for (s, &y) in row.iter_mut().zip(y) {
                *s += x * y;
            }
        }
    }
}

/// The elements of `src` at `sum(p[d] * from[d])` for every point `p` of `shape` in
/// row-major order (0 past its end): transposes and broadcasts as one strided walk.
fn gather(src: &[f32], shape: &[usize], from: &[usize]) -> Vec<f32> {
    let total: usize = shape.iter().product();
    let mut out = crate::pool::take(total);
    if total == 0 {
        return out;
    }
    let Some((&inner_n, outer)) = shape.split_last() else {
        out.push(src.first().copied().unwrap_or(0.0));
        return out;
    };
    let inner_step = from.last().copied().unwrap_or(0);
    let rows: usize = outer.iter().product();
    let mut idx = vec![0usize; outer.len()];
    let mut row_start = 0usize;
    for _ in 0..rows {
        // The row's last source element, when the whole row lies inside `src`.
        let last = (inner_n - 1)
            .checked_mul(inner_step)
            .and_then(|d| d.checked_add(row_start))
            .filter(|&l| l < src.len());
        match (inner_step, last) {
            // A broadcast row is filled, a contiguous one copied, a strided one walked
            // without a bounds check per element.
            (0, _) => out.resize(
                out.len() + inner_n,
                src.get(row_start).copied().unwrap_or(0.0),
            ),
            (1, Some(l)) => out.extend_from_slice(&src[row_start..=l]),
            (_, Some(l)) => out.extend(src[row_start..=l].iter().step_by(inner_step).copied()),
            _ => {
                let mut at = row_start;
                for _ in 0..inner_n {
                    out.push(src.get(at).copied().unwrap_or(0.0));
                    at += inner_step;
                }
            }
        }
        for d in (0..outer.len()).rev() {
            idx[d] += 1;
            row_start += from[d];
            if idx[d] < outer[d] {
                break;
            }
            row_start -= from[d] * outer[d];
            idx[d] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[usize], data: Vec<f32>) -> TensorVal {
        TensorVal {
            shape: shape.to_vec(),
            elem: ScalarType::F32,
            data,
            ready: None,
            charged: true,
        }
    }

    /// Awkward f32 values: NaNs, infinities, zeros of both signs, subnormals, values at
    /// and past the f16 range and rounding ties.
    fn awkward() -> Vec<f32> {
        let mut xs = vec![
            0.0,
            -0.0,
            1.0,
            -1.5,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            1e-40,
            65504.0,
            65520.0,
            1e9,
            1.0 + f32::EPSILON,
            2049.0,
            3.0e-8,
        ];
        let mut r: u32 = 12345;
        for _ in 0..300 {
            r = r.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            xs.push(f32::from_bits(r));
            xs.push(((r >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 20.0);
        }
        xs
    }

    #[test]
    fn whole_tensor_elementwise_matches_the_per_element_semantics() {
        use ElementwiseOp::*;
        let xs = awkward();
        let ys: Vec<f32> = xs.iter().rev().copied().collect();
        let n = xs.len();
        let tx = Rc::new(t(&[n], xs.clone()));
        let ty = Rc::new(t(&[n], ys));
        let operand_sets: Vec<Vec<Arg>> = vec![
            vec![Arg::Tensor(tx.clone()), Arg::Tensor(ty.clone())],
            vec![Arg::Tensor(tx.clone()), Arg::Scalar(0.1)],
            vec![Arg::Scalar(-3.0), Arg::Tensor(ty.clone())],
            vec![Arg::Tensor(tx.clone())],
        ];
        let ops = [
            AddF, SubF, MulF, DivF, MaximumF, MinimumF, MaxNumF, Exp, Rsqrt, Sqrt, NegF, Tanh,
            LinalgAdd, LinalgExp,
        ];
        for elem in [ScalarType::F32, ScalarType::F16, ScalarType::BF16] {
            for ew in ops {
                for args in &operand_sets {
                    let fast = Numbers.elementwise(ew, elem, false, args, n).unwrap();
                    let slow: Vec<f32> = (0..n)
                        .map(|i| {
                            let vals: Vec<f64> = args.iter().map(|a| arg_at(a, i)).collect();
                            apply(ew, elem, false, &vals).unwrap() as f32
                        })
                        .collect();
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&fast), bits(&slow), "{ew:?} {elem:?}");
                }
            }
        }
    }

    #[test]
    fn slice_rounding_matches_rounding_each_element() {
        let xs = awkward();
        for elem in [
            ScalarType::F16,
            ScalarType::BF16,
            ScalarType::F32,
            ScalarType::F8E5M2,
            ScalarType::I8,
            ScalarType::I1,
        ] {
            let mut fast = xs.clone();
            round_slice(elem, &mut fast);
            for (a, x) in fast.iter().zip(&xs) {
                assert_eq!(a.to_bits(), round_to(elem, *x).to_bits(), "{elem:?} {x}");
            }
        }
    }

    #[test]
    fn strided_gathers_transpose_and_broadcast() {
        let x: Vec<f32> = (0..6).map(|i| i as f32).collect(); // [2, 3]
                                                              // Transpose to [3, 2]: output dim 0 steps the input's dim 1.
        assert_eq!(
            gather(&x, &[3, 2], &[1, 3]),
            vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        );
        // Broadcast a row of 3 over 2 rows.
        assert_eq!(
            gather(&x[..3], &[2, 3], &[0, 1]),
            vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0]
        );
        // Broadcast a column of 2 along rows of 4 (shorter than a row).
        assert_eq!(
            gather(&x[..2], &[2, 4], &[1, 0]),
            vec![0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
        );
        // Points past the end read 0, in strided and contiguous rows alike.
        assert_eq!(gather(&x, &[2, 2], &[1, 4]), vec![0.0, 4.0, 1.0, 5.0]);
        assert_eq!(
            gather(&x, &[2, 3], &[1, 2]),
            vec![0.0, 2.0, 4.0, 1.0, 3.0, 5.0]
        );
        assert_eq!(gather(&x, &[1, 4], &[0, 2]), vec![0.0, 2.0, 4.0, 0.0]);
        assert_eq!(gather(&x[..2], &[1, 3], &[0, 1]), vec![0.0, 1.0, 0.0]);
        assert_eq!(gather(&x, &[], &[]), vec![0.0]);
        assert!(gather(&x, &[0, 3], &[3, 1]).is_empty());
    }

    #[test]
    fn matmul_rows_add_every_term_in_dot_product_order() {
        // [2, 3] x [3, 2] onto c, with a NaN and a zero times infinity in row 1.
        let a = t(&[2, 3], vec![1.0, 2.0, 3.0, 0.0, f32::NAN, 1.0]);
        let b = t(&[3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, f32::INFINITY]);
        let c = t(&[2, 2], vec![0.5, -0.0, 1.0, 2.0]);
        let dot = |i: usize, j: usize| {
            let mut acc = c.data[i * 2 + j];
            for p in 0..3 {
                acc += a.data[i * 3 + p] * b.data[p * 2 + j];
            }
            acc
        };
        let got = matmul_data(&a, &b, &c, (2, 3, 2), false, false).unwrap();
        for i in 0..2 {
            for j in 0..2 {
                assert_eq!(got[i * 2 + j].to_bits(), dot(i, j).to_bits(), "({i}, {j})");
            }
        }
        // The transposed spellings read the same numbers.
        let at = t(&[3, 2], vec![1.0, 0.0, 2.0, f32::NAN, 3.0, 1.0]);
        let bt = t(&[2, 3], vec![1.0, 3.0, 5.0, 2.0, 4.0, f32::INFINITY]);
        let via_t = matmul_data(&at, &bt, &c, (2, 3, 2), true, true).unwrap();
        assert_eq!(
            via_t.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        assert!(matmul_data(&a, &b, &c, (2, 2, 2), false, false).is_none());
    }

    #[test]
    fn tiled_matmul_matches_the_plain_loops_bit_for_bit() {
        // Sizes around the register tile, so full tiles and both ragged edges are hit.
        let mut state = 1u32;
        let mut next = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        };
        for (m, k, n) in [(4, 5, 8), (9, 7, 19), (3, 4, 5), (8, 33, 16), (5, 0, 9)] {
            let a = t(&[m, k], (0..m * k).map(|_| next()).collect());
            let b = t(&[k, n], (0..k * n).map(|_| next()).collect());
            let c = t(&[m, n], (0..m * n).map(|_| next()).collect());
            let got = matmul_data(&a, &b, &c, (m, k, n), false, false).unwrap();
            for i in 0..m {
                for j in 0..n {
                    let mut acc = c.data[i * n + j];
                    for p in 0..k {
                        acc += a.data[i * k + p] * b.data[p * n + j];
                    }
                    assert_eq!(
                        got[i * n + j].to_bits(),
                        acc.to_bits(),
                        "{m}x{k}x{n} ({i}, {j})"
                    );
                }
            }
        }
    }
}
