//! Scalar semantics of the elementwise ops ([`ElementwiseOp`]: `arith.*`, `math.*`,
//! elementwise `linalg.*`), of the comparisons and of the casts. Each is an exhaustive
//! `match` on the `ktir` enum, so an op added there does not compile until it has a meaning
//! here.
//!
//! Floats compute in `f32` (the caller rounds to the storage type); integers compute in
//! `i64` and wrap to the width of their type. Integer tensors are stored as `f32` values,
//! which is exact up to 2^24.

use ktir::ast::{CmpFPredicate, CmpIPredicate, ElemKind, ElementwiseOp, Predicate, ScalarType};

/// Whether `op` on elements of type `elem` computes on integers: integer ops always do,
/// the others when the elements are integers (the linalg spellings follow their operands).
pub fn computes_on_ints(op: ElementwiseOp, elem: ScalarType) -> bool {
    op.kind() == ElemKind::Int || !elem.is_float()
}

/// The float result of `op` for operands `a` (as many as the op takes).
pub fn float(op: ElementwiseOp, a: &[f32]) -> f32 {
    use ElementwiseOp::*;
    let x = a.first().copied().unwrap_or(0.0);
    let y = a.get(1).copied().unwrap_or(0.0);
    let z = a.get(2).copied().unwrap_or(0.0);
    match op {
        AddF | LinalgAdd => x + y,
        SubF | LinalgSub => x - y,
        MulF | LinalgMul => x * y,
        DivF | LinalgDiv => x / y,
        MaximumF | LinalgMax => {
            if x.is_nan() || y.is_nan() {
                f32::NAN
            } else {
                x.max(y)
            }
        }
        MinimumF | LinalgMin => {
            if x.is_nan() || y.is_nan() {
                f32::NAN
            } else {
                x.min(y)
            }
        }
        RemF => x % y,
        MaxNumF => x.max(y),
        MinNumF => x.min(y),
        PowF | LinalgPowF => x.powf(y),
        Atan2 => x.atan2(y),
        CopySign => x.copysign(y),
        Fma => x.mul_add(y, z),
        NegF | LinalgNegF => -x,
        Exp | LinalgExp => x.exp(),
        Exp2 => x.exp2(),
        Expm1 => x.exp_m1(),
        Log | LinalgLog => x.ln(),
        Log2 => x.log2(),
        Log10 => x.log10(),
        Log1p => x.ln_1p(),
        Sqrt | LinalgSqrt => x.sqrt(),
        Rsqrt | LinalgRsqrt => 1.0 / x.sqrt(),
        Tanh | LinalgTanh => x.tanh(),
        AbsF | LinalgAbs => x.abs(),
        Erf | LinalgErf => erf(x),
        Sin => x.sin(),
        Cos => x.cos(),
        Tan => x.tan(),
        Atan => x.atan(),
        Sinh => x.sinh(),
        Cosh => x.cosh(),
        Cbrt => x.cbrt(),
        Floor | LinalgFloor => x.floor(),
        Ceil | LinalgCeil => x.ceil(),
        Round => x.round(),
        RoundEven => {
            let r = x.round();
            if (x - x.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
                r - x.signum()
            } else {
                r
            }
        }
        Trunc => x.trunc(),
        LinalgReciprocal => 1.0 / x,
        LinalgSquare => x * x,
        LinalgCopy => x,
        // Integer ops on float data: go through the integer path.
        AddI | SubI | MulI | DivSI | RemSI | FloorDivSI | CeilDivSI | MaxSI | MinSI | AndI
        | OrI | XorI | ShlI | ShrSI | ShrUI | DivUI | RemUI | CeilDivUI | MaxUI | MinUI | AbsI => {
            int(
                op,
                &a.iter().map(|v| *v as i64).collect::<Vec<_>>(),
                ScalarType::I64,
            )
            .map_or(f32::NAN, |v| v as f32)
        }
    }
}

/// The integer result of `op` wrapped to `elem`'s width; `None` on division by zero.
/// Float ops with an integer counterpart (`arith.addf`, `linalg.max`, ...) use it; the
/// other float ops compute in floats and truncate.
pub fn int(op: ElementwiseOp, a: &[i64], elem: ScalarType) -> Option<i64> {
    use ElementwiseOp::*;
    let x = a.first().copied().unwrap_or(0);
    let y = a.get(1).copied().unwrap_or(0);
    let bits = int_bits(elem);
    let ux = unsigned(x, bits);
    let uy = unsigned(y, bits);
    let r = match op {
        AddI | AddF | LinalgAdd => x.wrapping_add(y),
        SubI | SubF | LinalgSub => x.wrapping_sub(y),
        MulI | MulF | LinalgMul => x.wrapping_mul(y),
        DivSI | DivF | LinalgDiv => x.checked_div(y)?,
        RemSI => x.checked_rem(y)?,
        FloorDivSI => {
            let q = x.checked_div(y)?;
            if x % y != 0 && ((x < 0) != (y < 0)) {
                q - 1
            } else {
                q
            }
        }
        CeilDivSI => {
            let q = x.checked_div(y)?;
            if x % y != 0 && ((x < 0) == (y < 0)) {
                q + 1
            } else {
                q
            }
        }
        MaxSI | MaximumF | MaxNumF | LinalgMax => x.max(y),
        MinSI | MinimumF | MinNumF | LinalgMin => x.min(y),
        AndI => x & y,
        OrI => x | y,
        XorI => x ^ y,
        ShlI => {
            if uy >= bits as u64 {
                0
            } else {
                ((ux << uy) & mask(bits)) as i64
            }
        }
        ShrSI => {
            let sx = wrap(x, bits);
            if uy >= bits as u64 {
                if sx < 0 {
                    -1
                } else {
                    0
                }
            } else {
                sx >> uy
            }
        }
        ShrUI => {
            if uy >= bits as u64 {
                0
            } else {
                (ux >> uy) as i64
            }
        }
        DivUI => ux.checked_div(uy)? as i64,
        RemUI => ux.checked_rem(uy)? as i64,
        CeilDivUI => {
            if uy == 0 {
                return None;
            }
            ux.div_ceil(uy) as i64
        }
        MaxUI => ux.max(uy) as i64,
        MinUI => ux.min(uy) as i64,
        AbsI | AbsF | LinalgAbs => x.wrapping_abs(),
        // Float ops without an integer counterpart, on integer data.
        RemF | PowF | Atan2 | CopySign | Fma | NegF | Exp | Exp2 | Expm1 | Log | Log2 | Log10
        | Log1p | Sqrt | Rsqrt | Tanh | Erf | Sin | Cos | Tan | Atan | Sinh | Cosh | Cbrt
        | Floor | Ceil | Round | RoundEven | Trunc | LinalgPowF | LinalgExp | LinalgLog
        | LinalgNegF | LinalgSqrt | LinalgRsqrt | LinalgTanh | LinalgErf | LinalgFloor
        | LinalgCeil | LinalgReciprocal | LinalgSquare | LinalgCopy => {
            float(op, &a.iter().map(|v| *v as f32).collect::<Vec<_>>()) as i64
        }
    };
    Some(wrap(r, bits))
}

/// Bits of an integer type (`index` and `i64` count as 64).
pub fn int_bits(elem: ScalarType) -> u32 {
    match elem {
        ScalarType::I1 => 1,
        ScalarType::I8 => 8,
        ScalarType::I16 => 16,
        ScalarType::I32 => 32,
        _ => 64,
    }
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

fn unsigned(x: i64, bits: u32) -> u64 {
    (x as u64) & mask(bits)
}

/// Wraps `x` to a signed integer of `bits` bits (`i1` stays 0 or 1).
pub fn wrap(x: i64, bits: u32) -> i64 {
    match bits {
        1 => x & 1,
        64.. => x,
        b => {
            let shift = 64 - b;
            (x << shift) >> shift
        }
    }
}

/// Converts a scalar value held as `f64` from `from` to `to` the way cast `name` does.
/// Integers are held exactly as `f64`; the result is rounded to `to`.
pub fn cast(name: &str, x: f64, from: ScalarType, to: ScalarType) -> f64 {
    let to_bits = int_bits(to);
    match name {
        "arith.bitcast" => bitcast(x, from, to),
        "arith.uitofp" => {
            let u = unsigned(x as i64, int_bits(from));
            crate::value::round_to(to, u as f32) as f64
        }
        "arith.extui" | "arith.index_castui" => unsigned(x as i64, int_bits(from)) as f64,
        _ if to.is_float() => {
            if to == ScalarType::F64 {
                x
            } else {
                crate::value::round_to(to, x as f32) as f64
            }
        }
        "arith.fptoui" => {
            let v = if x.is_nan() { 0 } else { x.trunc() as i64 };
            unsigned(v, to_bits) as f64
        }
        _ => {
            let v = if x.is_nan() { 0 } else { x.trunc() as i64 };
            wrap(v, to_bits) as f64
        }
    }
}

fn bitcast(x: f64, from: ScalarType, to: ScalarType) -> f64 {
    use half::{bf16, f16};
    let bits: u64 = match from {
        ScalarType::F32 => (x as f32).to_bits() as u64,
        ScalarType::F16 => f16::from_f64(x).to_bits() as u64,
        ScalarType::BF16 => bf16::from_f64(x).to_bits() as u64,
        ScalarType::F64 => x.to_bits(),
        t => unsigned(x as i64, int_bits(t)),
    };
    match to {
        ScalarType::F32 => f32::from_bits(bits as u32) as f64,
        ScalarType::F16 => f16::from_bits(bits as u16).to_f64(),
        ScalarType::BF16 => bf16::from_bits(bits as u16).to_f64(),
        ScalarType::F64 => f64::from_bits(bits),
        t => wrap(bits as i64, int_bits(t)) as f64,
    }
}

/// `arith.cmpi` / `arith.cmpf`: whether `predicate` holds. Integer predicates compare as
/// `elem`-wide signed or unsigned values; float predicates are ordered (`o*`, false when
/// either is NaN) or unordered (`u*`, true when either is NaN).
pub fn compare(predicate: Predicate, a: f64, b: f64, elem: ScalarType) -> bool {
    let nan = a.is_nan() || b.is_nan();
    match predicate {
        Predicate::Int(p) => {
            let bits = int_bits(elem);
            let (ua, ub) = (unsigned(a as i64, bits), unsigned(b as i64, bits));
            match p {
                CmpIPredicate::Eq => a == b,
                CmpIPredicate::Ne => a != b,
                CmpIPredicate::Slt => a < b,
                CmpIPredicate::Sle => a <= b,
                CmpIPredicate::Sgt => a > b,
                CmpIPredicate::Sge => a >= b,
                CmpIPredicate::Ult => ua < ub,
                CmpIPredicate::Ule => ua <= ub,
                CmpIPredicate::Ugt => ua > ub,
                CmpIPredicate::Uge => ua >= ub,
            }
        }
        Predicate::Float(p) => match p {
            CmpFPredicate::False => false,
            CmpFPredicate::Oeq => a == b,
            CmpFPredicate::Ogt => a > b,
            CmpFPredicate::Oge => a >= b,
            CmpFPredicate::Olt => a < b,
            CmpFPredicate::Ole => a <= b,
            CmpFPredicate::One => a != b && !nan,
            CmpFPredicate::Ord => !nan,
            CmpFPredicate::Ueq => a == b || nan,
            CmpFPredicate::Ugt => a > b || nan,
            CmpFPredicate::Uge => a >= b || nan,
            CmpFPredicate::Ult => a < b || nan,
            CmpFPredicate::Ule => a <= b || nan,
            CmpFPredicate::Une => a != b,
            CmpFPredicate::Uno => nan,
            CmpFPredicate::True => true,
        },
    }
}

/// Abramowitz-Stegun 7.1.26 (absolute error below 1.5e-7), enough for fp16 results.
pub fn erf(x: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0
        - (((((1.061_405_4 * t - 1.453_152_1) * t) + 1.421_413_8) * t - 0.284_496_74) * t
            + 0.254_829_6)
            * t
            * (-x * x).exp();
    y.copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_wrap_and_float_ops_have_integer_counterparts() {
        use ElementwiseOp::*;
        assert_eq!(int(ShlI, &[1, 31], ScalarType::I32), Some(i32::MIN as i64));
        assert_eq!(int(ShrUI, &[-1, 28], ScalarType::I32), Some(15));
        assert_eq!(int(ShrSI, &[-16, 2], ScalarType::I32), Some(-4));
        assert_eq!(int(DivUI, &[-2, 2], ScalarType::I32), Some(i32::MAX as i64));
        assert_eq!(int(DivSI, &[1, 0], ScalarType::I32), None);
        assert_eq!(
            int(AddI, &[i32::MAX as i64, 1], ScalarType::I32),
            Some(i32::MIN as i64)
        );
        // linalg ops on integer tensors use integer arithmetic.
        assert_eq!(int(LinalgDiv, &[7, 2], ScalarType::I32), Some(3));
        assert_eq!(int(LinalgMax, &[-7, 2], ScalarType::I32), Some(2));
        assert!(computes_on_ints(AndI, ScalarType::F32));
        assert!(!computes_on_ints(Fma, ScalarType::F32));
        assert!(computes_on_ints(LinalgAdd, ScalarType::I32));
        assert!(!computes_on_ints(LinalgAdd, ScalarType::F16));
        assert_eq!(float(Fma, &[2.0, 3.0, 1.0]), 7.0);
        assert_eq!(float(RoundEven, &[2.5]), 2.0);
        assert_eq!(float(RoundEven, &[3.5]), 4.0);
        assert_eq!(float(AndI, &[6.0, 3.0]), 2.0);
    }

    #[test]
    fn casts_and_compares() {
        assert_eq!(
            cast("arith.trunci", 70000.0, ScalarType::I64, ScalarType::I16),
            4464.0
        );
        assert_eq!(
            cast("arith.fptosi", -2.7, ScalarType::F32, ScalarType::I32),
            -2.0
        );
        assert_eq!(
            cast("arith.uitofp", -1.0, ScalarType::I8, ScalarType::F32),
            255.0
        );
        assert_eq!(
            cast("arith.bitcast", 1.0, ScalarType::F32, ScalarType::I32),
            1065353216.0
        );
        let (i, f) = (Predicate::Int, Predicate::Float);
        assert!(!compare(i(CmpIPredicate::Ult), -1.0, 1.0, ScalarType::I32));
        assert!(compare(i(CmpIPredicate::Slt), -1.0, 1.0, ScalarType::I32));
        assert!(compare(
            f(CmpFPredicate::Uno),
            f64::NAN,
            1.0,
            ScalarType::F32
        ));
        assert!(compare(
            f(CmpFPredicate::Ult),
            f64::NAN,
            1.0,
            ScalarType::F32
        ));
        assert!(!compare(
            f(CmpFPredicate::Olt),
            f64::NAN,
            1.0,
            ScalarType::F32
        ));
        assert!(compare(
            f(CmpFPredicate::Une),
            f64::NAN,
            f64::NAN,
            ScalarType::F32
        ));
        assert!(!compare(
            f(CmpFPredicate::Oeq),
            f64::NAN,
            f64::NAN,
            ScalarType::F32
        ));
    }
}
