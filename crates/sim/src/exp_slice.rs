//! `f32::exp` over whole slices, bit for bit.
//!
//! On x86-64 Linux with glibc, `f32::exp` is glibc's `expf`, which the dynamic loader
//! resolves to its FMA build on CPUs with FMA and AVX2: a 32-entry table of `2^(i/32)`,
//! a cubic in double precision, one rounding to f32 at the end. Every step is plain
//! double arithmetic, so the same steps with the same fused multiply-adds give the same
//! bits, and written as a loop over a slice they vectorise, where a call per element does
//! not. Inputs outside the main path (`|x| >= 88`, infinities, NaN) go to `f32::exp` itself.
//! Everywhere else (other CPUs, other C libraries, WebAssembly) the slice is mapped by
//! `f32::exp`, so the bits are whatever that gives there.

/// `exp` of every element of `xs`, bit for bit what `f32::exp` gives each.
pub(crate) fn exp_slice(xs: &[f32]) -> Vec<f32> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    {
        if std::arch::is_x86_feature_detected!("fma") && std::arch::is_x86_feature_detected!("avx2")
        {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { glibc_fma::exp_slice(xs) };
        }
    }
    let mut out = crate::pool::take(xs.len());
    out.extend(xs.iter().map(|x| x.exp()));
    out
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
mod glibc_fma {
    /// `32 / ln 2`: `x * N / ln 2 = k + r` with integer `k`.
    const INV_LN2_N: f64 = f64::from_bits(0x4047_1547_652b_82fe);
    /// `1.5 * 2^52`: adding it rounds to an integer held in the low mantissa bits.
    const SHIFT: f64 = f64::from_bits(0x4338_0000_0000_0000);
    /// The cubic for `2^(r/N)`, highest degree first.
    const C0: f64 = f64::from_bits(0x3ebc_6af8_4b91_2394);
    const C1: f64 = f64::from_bits(0x3f2e_bfce_50fa_c4f3);
    const C2: f64 = f64::from_bits(0x3f96_2e42_ff0c_52d6);
    /// `2^(i/32)` as f64 bits, with `i << 47` subtracted so that adding `k << 47` sets the
    /// exponent.
    const TABLE: [u64; 32] = [
        0x3ff0000000000000,
        0x3fefd9b0d3158574,
        0x3fefb5586cf9890f,
        0x3fef9301d0125b51,
        0x3fef72b83c7d517b,
        0x3fef54873168b9aa,
        0x3fef387a6e756238,
        0x3fef1e9df51fdee1,
        0x3fef06fe0a31b715,
        0x3feef1a7373aa9cb,
        0x3feedea64c123422,
        0x3feece086061892d,
        0x3feebfdad5362a27,
        0x3feeb42b569d4f82,
        0x3feeab07dd485429,
        0x3feea47eb03a5585,
        0x3feea09e667f3bcd,
        0x3fee9f75e8ec5f74,
        0x3feea11473eb0187,
        0x3feea589994cce13,
        0x3feeace5422aa0db,
        0x3feeb737b0cdc5e5,
        0x3feec49182a3f090,
        0x3feed503b23e255d,
        0x3feee89f995ad3ad,
        0x3feeff76f2fb5e47,
        0x3fef199bdd85529c,
        0x3fef3720dcef9069,
        0x3fef5818dcfba487,
        0x3fef7c97337b9b5f,
        0x3fefa4afa2a490da,
        0x3fefd0765b6e4540,
    ];
    /// The top 12 bits (sign cleared) from which `expf` leaves its main path: `|x| >= 88`.
    const SPECIAL_TOP12: u32 = 0x42b;

    /// Whether `x` takes the main path.
    #[inline(always)]
    fn main_path(x: f32) -> bool {
        (x.to_bits() >> 20) & 0x7ff < SPECIAL_TOP12
    }

    /// The main path of `expf`, with its fused multiply-adds where the library has them.
    #[inline(always)]
    fn exp_main(x: f32) -> f32 {
        let xd = x as f64;
        let kd = INV_LN2_N.mul_add(xd, SHIFT);
        let ki = kd.to_bits();
        let kd = kd - SHIFT;
        let r = INV_LN2_N.mul_add(xd, -kd);
        let t = TABLE[(ki & 31) as usize].wrapping_add(ki << 47);
        let s = f64::from_bits(t);
        let z = C0.mul_add(r, C1);
        let r2 = r * r;
        let y = C2.mul_add(r, 1.0);
        let y = z.mul_add(r2, y);
        (y * s) as f32
    }

    /// [`super::exp_slice`] on a CPU with FMA and AVX2: the main path over chunks without a
    /// branch per element, then `f32::exp` for the elements off it.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn exp_slice(xs: &[f32]) -> Vec<f32> {
        const CHUNK: usize = 64;
        let mut out = crate::pool::take(xs.len());
        let mut buf = [0.0f32; CHUNK];
        for c in xs.chunks(CHUNK) {
            let o = &mut buf[..c.len()];
            let mut all = true;
            for (y, &x) in o.iter_mut().zip(c) {
                all &= main_path(x);
                *y = exp_main(x);
            }
            if !all {
                for (y, &x) in o.iter_mut().zip(c) {
                    if !main_path(x) {
                        *y = x.exp();
                    }
                }
            }
            out.extend_from_slice(o);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::exp_slice;

    /// Every f32 bit pattern from `start` up to `end` in steps of `step`, against `f32::exp`.
    fn check(start: u64, end: u64, step: u64) {
        let mut batch = Vec::with_capacity(1 << 16);
        let mut bits = start;
        while bits <= end {
            batch.clear();
            while batch.len() < batch.capacity() && bits <= end {
                batch.push(f32::from_bits(bits as u32));
                bits += step;
            }
            for (x, y) in batch.iter().zip(exp_slice(&batch)) {
                let want = x.exp();
                assert!(
                    want.to_bits() == y.to_bits() || (want.is_nan() && y.is_nan()),
                    "exp({x:e}) = {want:e}, got {y:e}"
                );
            }
        }
    }

    #[test]
    fn exp_slice_matches_f32_exp_across_the_range() {
        // A prime stride visits every exponent and scatters the low mantissa bits.
        check(0, u32::MAX as u64, 65_521);
        // Every f16 value widened, and the neighbourhood of 0, where softmax lives.
        let halves: Vec<f32> = (0..=u16::MAX)
            .map(|h| half::f16::from_bits(h).to_f32())
            .collect();
        for (x, y) in halves.iter().zip(exp_slice(&halves)) {
            assert!(x.exp().to_bits() == y.to_bits() || y.is_nan());
        }
        check(0xbf80_0000, 0xbf80_0000 + (1 << 20), 1);
        check(0x3f80_0000, 0x3f80_0000 + (1 << 20), 1);
    }

    /// All 2^32 inputs: `cargo test --release -p sim exp_slice_matches_f32_exp_everywhere
    /// -- --ignored` (tens of seconds).
    #[test]
    #[ignore]
    fn exp_slice_matches_f32_exp_everywhere() {
        check(0, u32::MAX as u64, 1);
    }
}
