//! Affine expressions in linear form, for the interpreter's whole-tile fast paths.
//!
//! Most sets and subscripts the compiler emits are linear in their dimensions once the
//! symbols are known (`d0 >= 0`, `-d1 + 63 >= 0`). In that form a question about every
//! point of a box (are they all inside the set?) is answered from the box's bounds in
//! `O(rank)` instead of point by point. Anything that is not linear (`floordiv`, `mod`,
//! products of dimensions) is left to the point-by-point walk, which stays the reference
//! semantics: a fast path either answers exactly as the walk would or declines. Nothing
//! here allocates or needs 128-bit arithmetic (a library call in WebAssembly): bounds
//! that would leave `i64` decline too.

use ktir::ast::{AffineExpr, AffineSet};

/// Highest rank the fast paths handle (beyond it they decline).
pub(crate) const MAX_RANK: usize = 8;

/// The value of `e` when it does not depend on any dimension.
fn constant(e: &AffineExpr, syms: &[i64]) -> Option<i64> {
    match e {
        AffineExpr::Dim(_) => None,
        AffineExpr::Sym(i) => syms.get(*i).copied(),
        AffineExpr::Const(c) => Some(*c),
        AffineExpr::Add(a, b) => constant(a, syms)?.checked_add(constant(b, syms)?),
        AffineExpr::Mul(a, b) => mul(constant(a, syms)?, constant(b, syms)?),
        AffineExpr::FloorDiv(a, b) | AffineExpr::CeilDiv(a, b) | AffineExpr::Mod(a, b) => {
            // Of constants, the expression's own semantics; of dimensions, not linear.
            constant(a, syms)?;
            constant(b, syms)?;
            e.eval(&[], syms)
        }
    }
}

/// Adds `scale * e` to the linear form `constant + coefs . x`; `None` when `e` is not
/// linear in the dimensions, names one beyond `coefs`, or overflows.
fn accumulate(
    e: &AffineExpr,
    scale: i64,
    coefs: &mut [i64],
    constant_term: &mut i64,
    syms: &[i64],
) -> Option<()> {
    match e {
        AffineExpr::Dim(i) => {
            let c = coefs.get_mut(*i)?;
            *c = c.checked_add(scale)?;
        }
        AffineExpr::Sym(_) | AffineExpr::Const(_) => {
            let v = mul(constant(e, syms)?, scale)?;
            *constant_term = constant_term.checked_add(v)?;
        }
        AffineExpr::Add(a, b) => {
            accumulate(a, scale, coefs, constant_term, syms)?;
            accumulate(b, scale, coefs, constant_term, syms)?;
        }
        AffineExpr::Mul(a, b) => {
            let (k, x) = match (constant(a, syms), constant(b, syms)) {
                (Some(k), _) => (k, b),
                (None, Some(k)) => (k, a),
                (None, None) => return None,
            };
            accumulate(x, mul(scale, k)?, coefs, constant_term, syms)?;
        }
        AffineExpr::FloorDiv(..) | AffineExpr::CeilDiv(..) | AffineExpr::Mod(..) => {
            let v = mul(constant(e, syms)?, scale)?;
            *constant_term = constant_term.checked_add(v)?;
        }
    }
    Some(())
}

/// `a * b`, `None` when it overflows `i64`. Factors that fit in 32 bits cannot overflow,
/// and their product is one multiplication; in WebAssembly a checked 64-bit product is a
/// call to a 128-bit multiplication, which box tests did for every coefficient.
#[inline(always)]
fn mul(a: i64, b: i64) -> Option<i64> {
    if i64::from(a as i32) == a && i64::from(b as i32) == b {
        Some(a * b)
    } else {
        a.checked_mul(b)
    }
}

/// The smallest and largest values of `constant + coefs . x` over the box `lo..=hi`;
/// `None` if a bound is beyond `i64`.
pub(crate) fn range(coefs: &[i64], constant: i64, lo: &[i64], hi: &[i64]) -> Option<(i64, i64)> {
    let (mut min, mut max) = (constant, constant);
    for ((c, l), h) in coefs.iter().zip(lo).zip(hi) {
        let (a, b) = (mul(*c, *l)?, mul(*c, *h)?);
        min = min.checked_add(a.min(b))?;
        max = max.checked_add(a.max(b))?;
    }
    Some((min, max))
}

/// Whether every point of the box `lo..=hi` (non-empty) lies in `set`: `Some(true)` when
/// all do, `None` when that cannot be settled from bounds (a constraint that is not
/// linear, values beyond `i64`, or some point outside).
///
/// An affine function over a box takes its extremes at the box's corners, so a `>= 0`
/// constraint holds everywhere when its minimum does, and an `== 0` constraint when both
/// its minimum and maximum are 0.
pub(crate) fn box_inside(set: &AffineSet, syms: &[i64], lo: &[i64], hi: &[i64]) -> Option<bool> {
    let dims = lo.len();
    if syms.len() < set.syms || dims > MAX_RANK || hi.len() != dims {
        return None;
    }
    let mut coefs = [0i64; MAX_RANK];
    for c in &set.constraints {
        let coefs = &mut coefs[..dims];
        coefs.fill(0);
        let mut constant_term = 0;
        accumulate(&c.expr, 1, coefs, &mut constant_term, syms)?;
        let (min, max) = range(coefs, constant_term, lo, hi)?;
        let holds = if c.equality {
            min == 0 && max == 0
        } else {
            min >= 0
        };
        if !holds {
            return None;
        }
    }
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> AffineSet {
        let src = format!(
            "func.func @f(%a: index) {{\n  %v = ktdp.construct_memory_view %a, sizes: [8, 8], strides: [8, 1] {{\n    coordinate_set = {text},\n    memory_space = #ktdp.memory_space<global>\n  }} : memref<8x8xf32>\n  return\n}}\n"
        );
        // Parsed only: the verifier would want the symbols bound to sizes.
        let (m, d) = ktir::parse(&src);
        assert!(!d.iter().any(ktir::Diagnostic::is_error), "{d:?}");
        let op = &m.funcs[0].body.ops[0];
        let ktir::ast::OpKind::ConstructMemoryView {
            coordinate_set: Some(a),
            ..
        } = &op.kind
        else {
            panic!("no set");
        };
        match m.resolve(a) {
            Some(ktir::ast::Attr::Set(s)) => s.clone(),
            other => panic!("{other:?}"),
        }
    }

    /// The answer point by point, for comparison.
    fn walk(s: &AffineSet, syms: &[i64], lo: &[i64], hi: &[i64]) -> bool {
        let mut all = true;
        for x in lo[0]..=hi[0] {
            for y in lo[1]..=hi[1] {
                all &= s.contains(&[x, y], syms);
            }
        }
        all
    }

    #[test]
    fn boxes_agree_with_the_point_by_point_walk() {
        let boxes = affine_set_cases();
        for (text, syms) in boxes {
            let s = set(text);
            for lo0 in -1..3 {
                for hi0 in lo0..lo0 + 4 {
                    for lo1 in [0, 2, 5] {
                        for hi1 in [lo1, lo1 + 3, 9] {
                            let (lo, hi) = ([lo0, lo1], [hi0, hi1]);
                            let fast = box_inside(&s, &syms, &lo, &hi);
                            let slow = walk(&s, &syms, &lo, &hi);
                            // The fast answer is never wrong; it may decline.
                            if fast == Some(true) {
                                assert!(slow, "{text} {lo:?}..{hi:?}");
                            } else if is_linear(&s, &syms) {
                                assert!(!slow, "{text} {lo:?}..{hi:?} declined");
                            }
                        }
                    }
                }
            }
        }
    }

    fn affine_set_cases() -> Vec<(&'static str, Vec<i64>)> {
        vec![
            (
                "affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>",
                vec![],
            ),
            (
                "affine_set<(d0, d1)[s0] : (d0 >= 0, s0 - d0 - 1 >= 0, d1 * 2 - d0 >= 0)>",
                vec![4],
            ),
            ("affine_set<(d0, d1) : (d0 - d1 == 0)>", vec![]),
            ("affine_set<(d0, d1) : (d0 mod 2 == 0, d1 >= 0)>", vec![]),
        ]
    }

    fn linear(e: &AffineExpr, dims: usize, syms: &[i64]) -> Option<(Vec<i64>, i64)> {
        let mut coefs = vec![0; dims];
        let mut c = 0;
        accumulate(e, 1, &mut coefs, &mut c, syms)?;
        Some((coefs, c))
    }

    fn is_linear(s: &AffineSet, syms: &[i64]) -> bool {
        s.constraints
            .iter()
            .all(|c| linear(&c.expr, s.dims, syms).is_some())
    }

    #[test]
    fn linear_forms_collect_coefficients() {
        let s = set("affine_set<(d0, d1)[s0] : (d0 * 3 + s0 - d1 * 2 + 5 >= 0)>");
        let (coefs, c) = linear(&s.constraints[0].expr, 2, &[10]).unwrap();
        assert_eq!((coefs.as_slice(), c), ([3, -2].as_slice(), 15));
        assert_eq!(range(&coefs, c, &[0, 0], &[1, 4]), Some((7, 18)));
        assert_eq!(range(&[i64::MAX], 0, &[0], &[2]), None);
        let m = set("affine_set<(d0, d1) : (d0 * d1 >= 0)>");
        assert!(linear(&m.constraints[0].expr, 2, &[]).is_none());
        // Divisions of symbols alone are constants.
        let d = set("affine_set<(d0)[s0] : (d0 - s0 floordiv 2 >= 0)>");
        assert_eq!(linear(&d.constraints[0].expr, 1, &[7]), Some((vec![1], -3)));
    }
}
