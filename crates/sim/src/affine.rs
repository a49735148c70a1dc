//! Affine expressions in linear form, for the interpreter's whole-tile fast paths.
//!
//! Most sets and subscripts the compiler emits are linear in their dimensions once the
//! symbols are known (`d0 >= 0`, `-d1 + 63 >= 0`). In that form a question about every
//! point of a box (are they all inside the set?) is answered from the box's bounds in
//! `O(rank)` instead of point by point. Anything that is not linear (`floordiv`, `mod`,
//! products of dimensions) is left to the point-by-point walk, which stays the reference
//! semantics: a fast path either answers exactly as the walk would or declines.

use ktir::ast::{AffineExpr, AffineSet};

/// `constant + sum(coefs[d] * x[d])`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Linear {
    pub coefs: Vec<i64>,
    pub constant: i64,
}

impl Linear {
    /// `e` over `dims` dimensions with the symbols bound to `syms`; `None` when it is not
    /// linear, names a dimension or symbol out of range, or overflows.
    pub fn of(e: &AffineExpr, dims: usize, syms: &[i64]) -> Option<Linear> {
        Some(match e {
            AffineExpr::Dim(i) => {
                if *i >= dims {
                    return None;
                }
                let mut coefs = vec![0; dims];
                coefs[*i] = 1;
                Linear { coefs, constant: 0 }
            }
            AffineExpr::Sym(i) => Linear::constant(dims, *syms.get(*i)?),
            AffineExpr::Const(c) => Linear::constant(dims, *c),
            AffineExpr::Add(a, b) => {
                let (a, b) = (Linear::of(a, dims, syms)?, Linear::of(b, dims, syms)?);
                let mut coefs = a.coefs;
                for (x, y) in coefs.iter_mut().zip(&b.coefs) {
                    *x = x.checked_add(*y)?;
                }
                Linear {
                    coefs,
                    constant: a.constant.checked_add(b.constant)?,
                }
            }
            AffineExpr::Mul(a, b) => {
                let (a, b) = (Linear::of(a, dims, syms)?, Linear::of(b, dims, syms)?);
                let (k, x) = if a.is_constant() {
                    (a.constant, b)
                } else if b.is_constant() {
                    (b.constant, a)
                } else {
                    return None;
                };
                Linear {
                    coefs: x
                        .coefs
                        .iter()
                        .map(|c| c.checked_mul(k))
                        .collect::<Option<_>>()?,
                    constant: x.constant.checked_mul(k)?,
                }
            }
            AffineExpr::FloorDiv(..) | AffineExpr::CeilDiv(..) | AffineExpr::Mod(..) => {
                return None
            }
        })
    }

    fn constant(dims: usize, c: i64) -> Linear {
        Linear {
            coefs: vec![0; dims],
            constant: c,
        }
    }

    fn is_constant(&self) -> bool {
        self.coefs.iter().all(|c| *c == 0)
    }

    /// The smallest and largest values over the box `lo..=hi` (per dimension), exactly.
    pub fn range(&self, lo: &[i64], hi: &[i64]) -> (i128, i128) {
        let mut min = self.constant as i128;
        let mut max = min;
        for ((c, l), h) in self.coefs.iter().zip(lo).zip(hi) {
            let (a, b) = (*c as i128 * *l as i128, *c as i128 * *h as i128);
            min += a.min(b);
            max += a.max(b);
        }
        (min, max)
    }
}

/// Whether `x` is an `i64`.
pub(crate) fn fits(x: i128) -> bool {
    x >= i64::MIN as i128 && x <= i64::MAX as i128
}

/// Whether every point of the box `lo..=hi` (non-empty) lies in `set`: `Some(true)` when
/// all do, `None` when that cannot be settled from bounds (a constraint that is not
/// linear, values beyond `i64`, or some point outside).
///
/// An affine function over a box takes its extremes at the box's corners, so a `>= 0`
/// constraint holds everywhere when its minimum does, and an `== 0` constraint when both
/// its minimum and maximum are 0.
pub(crate) fn box_inside(set: &AffineSet, syms: &[i64], lo: &[i64], hi: &[i64]) -> Option<bool> {
    if syms.len() < set.syms {
        return None;
    }
    for c in &set.constraints {
        let l = Linear::of(&c.expr, lo.len(), syms)?;
        let (min, max) = l.range(lo, hi);
        if !fits(min) || !fits(max) {
            return None;
        }
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

    fn is_linear(s: &AffineSet, syms: &[i64]) -> bool {
        s.constraints
            .iter()
            .all(|c| Linear::of(&c.expr, s.dims, syms).is_some())
    }

    #[test]
    fn linear_forms_collect_coefficients() {
        let s = set("affine_set<(d0, d1)[s0] : (d0 * 3 + s0 - d1 * 2 + 5 >= 0)>");
        let l = Linear::of(&s.constraints[0].expr, 2, &[10]).unwrap();
        assert_eq!(l.coefs, vec![3, -2]);
        assert_eq!(l.constant, 15);
        assert_eq!(l.range(&[0, 0], &[1, 4]), (7, 18));
        let m = set("affine_set<(d0, d1) : (d0 * d1 >= 0)>");
        assert!(Linear::of(&m.constraints[0].expr, 2, &[]).is_none());
    }
}
