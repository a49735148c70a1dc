//! Element types and the rounding that storing a value in each of them implies.

use serde::{Deserialize, Serialize};

/// The element type of a tensor.
///
/// Values are always carried as `f32` by this crate; a dtype says what a value becomes
/// after it has been stored in memory of that type (see [`DType::round`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16 (8 exponent bits, 7 mantissa bits).
    BF16,
    /// OCP fp8 E4M3FN: bias 7, no infinities, largest finite value 448.
    F8E4M3,
    /// OCP fp8 E5M2: bias 15, largest finite value 57344.
    F8E5M2,
    /// Signed 64-bit integer (carried in `f32`, so exact only up to 2^24).
    I64,
    /// Signed 32-bit integer (carried in `f32`, so exact only up to 2^24).
    I32,
    /// Signed 8-bit integer.
    I8,
    /// Boolean, stored as 0.0 or 1.0.
    Bool,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 9] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::I64,
        DType::I32,
        DType::I8,
        DType::Bool,
    ];

    /// Bytes one element occupies in memory.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::F8E4M3 | DType::F8E5M2 | DType::I8 | DType::Bool => 1,
            DType::I64 => 8,
        }
    }

    /// The lowercase name used in the JSON format (`"f16"`, `"bf16"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::I8 => "i8",
            DType::Bool => "bool",
        }
    }

    /// The inverse of [`DType::name`]; `None` for any other string.
    pub fn parse(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }

    /// True for the floating-point dtypes (f32, f16, bf16 and both fp8 formats).
    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F32 | DType::F16 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2
        )
    }

    /// True for the signed integer dtypes.
    pub fn is_int(self) -> bool {
        matches!(self, DType::I64 | DType::I32 | DType::I8)
    }

    /// The value `x` becomes after being stored in this dtype and read back.
    ///
    /// - `f32`: unchanged.
    /// - `f16`, `bf16`: round to nearest even via the `half` crate; overflow gives ±inf.
    /// - `f8e4m3` (the "FN" variant), `f8e5m2`: round to nearest even, subnormals kept;
    ///   any value whose magnitude exceeds the largest finite value (448 and 57344
    ///   respectively), including ±inf, **saturates** to ±that value (OCP "satfinite"
    ///   conversion). NaN stays NaN.
    /// - `i64`, `i32`, `i8`: truncate toward zero, then saturate to the type's range;
    ///   NaN becomes 0 (Rust `as` semantics).
    /// - `bool`: 1.0 if `x != 0` (NaN counts as non-zero), else 0.0.
    pub fn round(self, x: f32) -> f32 {
        match self {
            DType::F32 => x,
            DType::F16 => round_f16(x),
            DType::BF16 => half::bf16::from_f32(x).to_f32(),
            DType::F8E4M3 => round_fp8(x, 3, -6, 448.0),
            DType::F8E5M2 => round_fp8(x, 2, -14, 57344.0),
            DType::I64 => (x as i64) as f32,
            DType::I32 => (x as i32) as f32,
            DType::I8 => (x as i8) as f32,
            DType::Bool => {
                if x != 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }
}

/// `half::f16::from_f32(x).to_f32()`, bit for bit, without the round trip for normal values.
///
/// An f32 in the f16 normal range (`2^-14 <= |x| < 65520`) becomes an f16 by rounding its
/// mantissa to 10 bits, to nearest with ties to even: on the f32's bits, one add and one
/// mask. Everything else goes through the library. WebAssembly has no f16 instructions, and
/// there the library's conversion is several times slower. (The simulator has the same
/// function for its own values.)
fn round_f16(x: f32) -> f32 {
    let bits = x.to_bits();
    let abs = bits & 0x7fff_ffff;
    if (0x3880_0000..0x477f_f000).contains(&abs) {
        let rounded = bits + 0x0fff + ((bits >> 13) & 1);
        return f32::from_bits(rounded & !0x1fff);
    }
    half::f16::from_f32(x).to_f32()
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Round to a small binary float with `mant_bits` explicit mantissa bits, smallest normal
/// exponent `min_exp`, saturating at `max` (see [`DType::round`]).
fn round_fp8(x: f32, mant_bits: i32, min_exp: i32, max: f64) -> f32 {
    if x.is_nan() {
        return x;
    }
    let ax = f64::from(x.abs());
    let r = if ax == 0.0 {
        0.0
    } else {
        // Exponent of ax (ax is a finite or infinite f32 widened exactly to f64).
        let bits = ax.to_bits();
        let e = ((bits >> 52) & 0x7ff) as i32 - 1023;
        let e = e.max(min_exp);
        let quantum = pow2(e - mant_bits);
        let q = (ax / quantum).round_ties_even() * quantum;
        if q > max {
            max
        } else {
            q
        }
    };
    let r = r as f32;
    if x.is_sign_negative() {
        -r
    } else {
        r
    }
}

/// 2^e for the small exponents used above, exactly.
fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_rounding_is_the_librarys() {
        // Bit for bit: every high part of an f32 with the low 13 bits (those rounded
        // away) at and around zero, at and around the tie, and all ones.
        for high in 0u32..1 << 19 {
            for low in [0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff] {
                let x = f32::from_bits(high << 13 | low);
                let (got, want) = (round_f16(x), half::f16::from_f32(x).to_f32());
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{x:e}: {got:e} against {want:e}"
                );
            }
        }
    }

    #[test]
    fn fp8_grid() {
        // e4m3: values near 1 step by 1/8; smallest subnormal 2^-9.
        assert_eq!(DType::F8E4M3.round(1.06), 1.0);
        assert_eq!(DType::F8E4M3.round(1.0625), 1.0); // tie -> even
        assert_eq!(DType::F8E4M3.round(1.1875), 1.25); // tie -> even
        assert_eq!(DType::F8E4M3.round(0.001), 2.0f32.powi(-9) * 1.0);
        assert_eq!(DType::F8E4M3.round(f32::INFINITY), 448.0);
        assert_eq!(DType::F8E5M2.round(-1e9), -57344.0);
        assert!(DType::F8E5M2.round(f32::NAN).is_nan());
    }
}
