//! Scalar semantics of the elementwise ops (`arith.*`, `math.*`, elementwise `linalg.*`) and
//! of the casts, resolved once from op names into [`Ew`] so execution never matches strings.
//!
//! Floats compute in `f32` (the caller rounds to the storage type); integers compute in
//! `i64` and wrap to the width of their type. Integer tensors are stored as `f32` values,
//! which is exact up to 2^24.

use ktir::ast::{BinaryOp, ScalarType, UnaryOp};

/// An elementwise operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Ew {
    AddF,
    SubF,
    MulF,
    DivF,
    MaximumF,
    MinimumF,
    RemF,
    MaxNumF,
    MinNumF,
    PowF,
    Atan2,
    CopySign,
    Fma,
    NegF,
    Exp,
    Exp2,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Sqrt,
    Rsqrt,
    Tanh,
    AbsF,
    Erf,
    Sin,
    Cos,
    Tan,
    Atan,
    Sinh,
    Cosh,
    Cbrt,
    Floor,
    Ceil,
    Round,
    RoundEven,
    Trunc,
    Reciprocal,
    Square,
    Copy,
    AddI,
    SubI,
    MulI,
    DivSI,
    RemSI,
    FloorDivSI,
    CeilDivSI,
    MaxSI,
    MinSI,
    AndI,
    OrI,
    XorI,
    ShlI,
    ShrSI,
    ShrUI,
    DivUI,
    RemUI,
    CeilDivUI,
    MaxUI,
    MinUI,
    AbsI,
}

impl Ew {
    /// The op an `arith`/`math`/elementwise `linalg` name stands for.
    pub fn from_name(name: &str) -> Option<Ew> {
        use Ew::*;
        Some(match name {
            "arith.addf" | "linalg.add" => AddF,
            "arith.subf" | "linalg.sub" => SubF,
            "arith.mulf" | "linalg.mul" => MulF,
            "arith.divf" | "linalg.div" => DivF,
            "arith.maximumf" | "linalg.max" => MaximumF,
            "arith.minimumf" | "linalg.min" => MinimumF,
            "arith.remf" => RemF,
            "arith.maxnumf" => MaxNumF,
            "arith.minnumf" => MinNumF,
            "math.powf" | "linalg.powf" => PowF,
            "math.atan2" => Atan2,
            "math.copysign" => CopySign,
            "math.fma" => Fma,
            "arith.negf" | "linalg.negf" => NegF,
            "math.exp" | "linalg.exp" => Exp,
            "math.exp2" => Exp2,
            "math.expm1" => Expm1,
            "math.log" | "linalg.log" => Log,
            "math.log2" => Log2,
            "math.log10" => Log10,
            "math.log1p" => Log1p,
            "math.sqrt" | "linalg.sqrt" => Sqrt,
            "math.rsqrt" | "linalg.rsqrt" => Rsqrt,
            "math.tanh" | "linalg.tanh" => Tanh,
            "math.absf" | "linalg.abs" => AbsF,
            "math.erf" | "linalg.erf" => Erf,
            "math.sin" => Sin,
            "math.cos" => Cos,
            "math.tan" => Tan,
            "math.atan" => Atan,
            "math.sinh" => Sinh,
            "math.cosh" => Cosh,
            "math.cbrt" => Cbrt,
            "math.floor" | "linalg.floor" => Floor,
            "math.ceil" | "linalg.ceil" => Ceil,
            "math.round" => Round,
            "math.roundeven" => RoundEven,
            "math.trunc" => Trunc,
            "linalg.reciprocal" => Reciprocal,
            "linalg.square" => Square,
            "linalg.copy" => Copy,
            "arith.addi" => AddI,
            "arith.subi" => SubI,
            "arith.muli" => MulI,
            "arith.divsi" => DivSI,
            "arith.remsi" => RemSI,
            "arith.floordivsi" => FloorDivSI,
            "arith.ceildivsi" => CeilDivSI,
            "arith.maxsi" => MaxSI,
            "arith.minsi" => MinSI,
            "arith.andi" => AndI,
            "arith.ori" => OrI,
            "arith.xori" => XorI,
            "arith.shli" => ShlI,
            "arith.shrsi" => ShrSI,
            "arith.shrui" => ShrUI,
            "arith.divui" => DivUI,
            "arith.remui" => RemUI,
            "arith.ceildivui" => CeilDivUI,
            "arith.maxui" => MaxUI,
            "arith.minui" => MinUI,
            "math.absi" => AbsI,
            _ => return None,
        })
    }

    /// The op of a typed binary op.
    pub fn from_binary(op: BinaryOp) -> Ew {
        Ew::from_name(op.name()).unwrap_or(Ew::AddF)
    }

    /// The op of a typed unary op.
    pub fn from_unary(op: UnaryOp) -> Ew {
        Ew::from_name(op.name()).unwrap_or(Ew::Copy)
    }

    /// The integer counterpart of a float op, for named linalg ops on integer tensors.
    pub fn for_int(self) -> Ew {
        match self {
            Ew::AddF => Ew::AddI,
            Ew::SubF => Ew::SubI,
            Ew::MulF => Ew::MulI,
            Ew::DivF => Ew::DivSI,
            Ew::MaximumF | Ew::MaxNumF => Ew::MaxSI,
            Ew::MinimumF | Ew::MinNumF => Ew::MinSI,
            Ew::AbsF => Ew::AbsI,
            other => other,
        }
    }

    /// Whether the op works on integers (else on floats).
    pub fn is_int(self) -> bool {
        (self as u8) >= (Ew::AddI as u8)
    }

    /// Whether the op costs more on the vector unit.
    pub fn is_transcendental(self) -> bool {
        use Ew::*;
        matches!(
            self,
            PowF | Atan2
                | Exp
                | Exp2
                | Expm1
                | Log
                | Log2
                | Log10
                | Log1p
                | Sqrt
                | Rsqrt
                | Tanh
                | Erf
                | Sin
                | Cos
                | Tan
                | Atan
                | Sinh
                | Cosh
                | Cbrt
        )
    }

    /// The float result for operands `a` (as many as the op takes).
    pub fn float(self, a: &[f32]) -> f32 {
        use Ew::*;
        let x = a.first().copied().unwrap_or(0.0);
        let y = a.get(1).copied().unwrap_or(0.0);
        let z = a.get(2).copied().unwrap_or(0.0);
        match self {
            AddF => x + y,
            SubF => x - y,
            MulF => x * y,
            DivF => x / y,
            MaximumF => {
                if x.is_nan() || y.is_nan() {
                    f32::NAN
                } else {
                    x.max(y)
                }
            }
            MinimumF => {
                if x.is_nan() || y.is_nan() {
                    f32::NAN
                } else {
                    x.min(y)
                }
            }
            RemF => x % y,
            MaxNumF => x.max(y),
            MinNumF => x.min(y),
            PowF => x.powf(y),
            Atan2 => x.atan2(y),
            CopySign => x.copysign(y),
            Fma => x.mul_add(y, z),
            NegF => -x,
            Exp => x.exp(),
            Exp2 => x.exp2(),
            Expm1 => x.exp_m1(),
            Log => x.ln(),
            Log2 => x.log2(),
            Log10 => x.log10(),
            Log1p => x.ln_1p(),
            Sqrt => x.sqrt(),
            Rsqrt => 1.0 / x.sqrt(),
            Tanh => x.tanh(),
            AbsF => x.abs(),
            Erf => erf(x),
            Sin => x.sin(),
            Cos => x.cos(),
            Tan => x.tan(),
            Atan => x.atan(),
            Sinh => x.sinh(),
            Cosh => x.cosh(),
            Cbrt => x.cbrt(),
            Floor => x.floor(),
            Ceil => x.ceil(),
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
            Reciprocal => 1.0 / x,
            Square => x * x,
            Copy => x,
            // Integer ops on float data: go through the integer path.
            _ => self
                .int(
                    &a.iter().map(|v| *v as i64).collect::<Vec<_>>(),
                    ScalarType::I64,
                )
                .map_or(f32::NAN, |v| v as f32),
        }
    }

    /// The integer result wrapped to `elem`'s width; `None` on division by zero.
    pub fn int(self, a: &[i64], elem: ScalarType) -> Option<i64> {
        use Ew::*;
        let x = a.first().copied().unwrap_or(0);
        let y = a.get(1).copied().unwrap_or(0);
        let bits = int_bits(elem);
        let ux = unsigned(x, bits);
        let uy = unsigned(y, bits);
        let r = match self {
            AddI => x.wrapping_add(y),
            SubI => x.wrapping_sub(y),
            MulI => x.wrapping_mul(y),
            DivSI => x.checked_div(y)?,
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
            MaxSI => x.max(y),
            MinSI => x.min(y),
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
            AbsI => x.wrapping_abs(),
            // Float ops on integer data.
            _ => self.float(&a.iter().map(|v| *v as f32).collect::<Vec<_>>()) as i64,
        };
        Some(wrap(r, bits))
    }
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
            crate::exec::round_to(to, u as f32) as f64
        }
        "arith.extui" | "arith.index_castui" => unsigned(x as i64, int_bits(from)) as f64,
        _ if to.is_float() => {
            if to == ScalarType::F64 {
                x
            } else {
                crate::exec::round_to(to, x as f32) as f64
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
/// `elem`-wide signed or unsigned values.
pub fn compare(predicate: &str, a: f64, b: f64, elem: ScalarType) -> Result<bool, String> {
    let bits = int_bits(elem);
    let (ua, ub) = (unsigned(a as i64, bits), unsigned(b as i64, bits));
    Ok(match predicate {
        "ult" if !elem.is_float() => ua < ub,
        "ule" if !elem.is_float() => ua <= ub,
        "ugt" if !elem.is_float() => ua > ub,
        "uge" if !elem.is_float() => ua >= ub,
        "oeq" | "eq" => a == b,
        "one" => a != b && !a.is_nan() && !b.is_nan(),
        "une" | "ne" => a != b,
        "olt" | "slt" => a < b,
        "ole" | "sle" => a <= b,
        "ogt" | "sgt" => a > b,
        "oge" | "sge" => a >= b,
        "ult" => a < b || a.is_nan() || b.is_nan(),
        "ule" => a <= b || a.is_nan() || b.is_nan(),
        "ugt" => a > b || a.is_nan() || b.is_nan(),
        "uge" => a >= b || a.is_nan() || b.is_nan(),
        "ueq" => a == b || a.is_nan() || b.is_nan(),
        "ord" => !a.is_nan() && !b.is_nan(),
        "uno" => a.is_nan() || b.is_nan(),
        "true" => true,
        "false" => false,
        other => return Err(format!("unknown comparison predicate '{other}'")),
    })
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
    fn names_resolve_and_integers_wrap() {
        for (name, _, _) in ktir::ast::ELEMENTWISE_OPS {
            assert!(Ew::from_name(name).is_some(), "{name}");
        }
        for (op, name) in BinaryOp::ALL {
            assert_eq!(Ew::from_binary(*op), Ew::from_name(name).unwrap());
        }
        assert_eq!(
            Ew::ShlI.int(&[1, 31], ScalarType::I32),
            Some(i32::MIN as i64)
        );
        assert_eq!(Ew::ShrUI.int(&[-1, 28], ScalarType::I32), Some(15));
        assert_eq!(Ew::ShrSI.int(&[-16, 2], ScalarType::I32), Some(-4));
        assert_eq!(
            Ew::DivUI.int(&[-2, 2], ScalarType::I32),
            Some(i32::MAX as i64)
        );
        assert_eq!(Ew::DivSI.int(&[1, 0], ScalarType::I32), None);
        assert_eq!(
            Ew::AddI.int(&[i32::MAX as i64, 1], ScalarType::I32),
            Some(i32::MIN as i64)
        );
        assert!(Ew::Exp.is_transcendental() && !Ew::AddF.is_transcendental());
        assert!(Ew::AndI.is_int() && !Ew::Fma.is_int());
        assert_eq!(Ew::Fma.float(&[2.0, 3.0, 1.0]), 7.0);
        assert_eq!(Ew::RoundEven.float(&[2.5]), 2.0);
        assert_eq!(Ew::RoundEven.float(&[3.5]), 4.0);
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
        assert!(!compare("ult", -1.0, 1.0, ScalarType::I32).unwrap());
        assert!(compare("slt", -1.0, 1.0, ScalarType::I32).unwrap());
        assert!(compare("uno", f64::NAN, 1.0, ScalarType::F32).unwrap());
        assert!(compare("bogus", 0.0, 0.0, ScalarType::F32).is_err());
    }
}
