//! Deterministic generators for initializers and random inputs.
//!
//! The numbers are the same on every platform: the generator is SplitMix64 and the
//! transforms use only IEEE-exact operations (+, -, *, /, sqrt) and a logarithm written
//! here, never a platform math library.
//!
//! - **uniform(low, high)**: `u = (next() >> 11) * 2^-53` (in `[0, 1)`), value
//!   `low + (high - low) * u` computed in f64, then converted to f32 and rounded to the
//!   dtype.
//! - **normal(mean, std)**: Marsaglia's polar method on pairs of uniforms
//!   `p = 2u - 1, q = 2u' - 1`, rejecting `s = p^2 + q^2` outside `(0, 1)`; both
//!   `p * sqrt(-2 ln s / s)` and `q * sqrt(-2 ln s / s)` are used, in that order; value
//!   `mean + std * z` in f64, then f32, then the dtype.

use std::collections::BTreeMap;

use crate::dtype::DType;
use crate::error::GraphError;
use crate::ir::{Graph, InitSpec};
use crate::tensor::Tensor;

/// SplitMix64 (Steele, Lea and Flood 2014), as in Java's `SplittableRandom`.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix(self.state)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `n` values of `(2 * next_f64() - 1) as f32` (uniform in `[-1, 1)`), bit for bit,
    /// leaving the generator where `n` calls would.
    ///
    /// Fast because no element depends on the one before it: element `i` mixes state
    /// `seed + (i + 1) * gamma`, and `2u - 1 = (m - 2^52) * 2^-52` for the 53-bit `m` is
    /// exact, so converting the integer `m - 2^52` to f32 and scaling by a power of two
    /// rounds exactly as the f64 path does.
    pub fn signed_unit_f32s(&mut self, n: usize) -> Vec<f32> {
        let start = self.state;
        let mut out = vec![0.0f32; n];
        fill_signed_units(start, &mut out);
        self.state = start.wrapping_add((n as u64).wrapping_mul(GAMMA));
        out
    }
}

/// Element `i` of [`SplitMix64::signed_unit_f32s`] from state `start`, for every `i` of
/// `out`. With AVX-512 (64-bit multiplies and integer-to-float conversion in vectors) the
/// same loop runs several times faster; the instructions are exact integer operations and
/// one correctly rounded conversion, so the values are the same either way.
fn fill_signed_units(start: u64, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512dq")
    {
        // SAFETY: the CPU has the features the function is compiled for.
        unsafe { fill_signed_units_avx512(start, out) };
        return;
    }
    fill_signed_units_body(start, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
fn fill_signed_units_avx512(start: u64, out: &mut [f32]) {
    fill_signed_units_body(start, out);
}

#[inline(always)]
fn fill_signed_units_body(start: u64, out: &mut [f32]) {
    const SCALE: f32 = 1.0 / (1u64 << 52) as f32;
    let mut state = start;
    for o in out.iter_mut() {
        state = state.wrapping_add(GAMMA);
        let m = mix(state) >> 11;
        *o = (m as i64 - (1i64 << 52)) as f32 * SCALE;
    }
}

/// SplitMix64's state increment.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function of a state.
#[inline(always)]
fn mix(state: u64) -> u64 {
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Natural logarithm of a positive, finite, normal `x`, from IEEE-exact operations only.
pub(crate) fn ln(x: f64) -> f64 {
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m > std::f64::consts::SQRT_2 {
        m /= 2.0;
        e += 1;
    }
    // ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut term = s;
    let mut sum = 0.0f64;
    let mut k = 1.0;
    for _ in 0..SERIES_TERMS {
        sum += term / k;
        term *= s2;
        k += 2.0;
    }
    2.0 * sum + e as f64 * std::f64::consts::LN_2
}

/// Terms of the series that [`ln`] adds. The recipe is 30 terms, but once a term is under
/// half an ulp of the sum (`|t| < |sum| 2^-54`) adding it, and every smaller term after
/// it, leaves the sum's bits as they are. The sum is at least `|s|` and term `j` at most
/// `|s| s^2j / (2j + 1)` with `s^2 <= 0.0295`, so from term 10 on (counting from 0) none
/// changes the sum: 12 terms give the 30-term sum's bits, with two to spare. A fixed count
/// has no data-dependent branch, so the divisions overlap (about twice as fast as stopping
/// at the first small term).
const SERIES_TERMS: usize = 12;

struct Normal {
    rng: SplitMix64,
    spare: Option<f64>,
}

impl Normal {
    fn next(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        // The acceptance rate is pi/4; 1000 rejections in a row does not happen.
        for _ in 0..1000 {
            let p = 2.0 * self.rng.next_f64() - 1.0;
            let q = 2.0 * self.rng.next_f64() - 1.0;
            let s = p * p + q * q;
            if s > 0.0 && s < 1.0 {
                let f = (-2.0 * ln(s) / s).sqrt();
                self.spare = Some(q * f);
                return p * f;
            }
        }
        0.0
    }
}

/// `n` values uniform in `[low, high)`, rounded to `dtype`.
pub(crate) fn uniform(seed: u64, low: f32, high: f32, n: usize, dtype: DType) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    let (lo, hi) = (f64::from(low), f64::from(high));
    (0..n)
        .map(|_| dtype.round((lo + (hi - lo) * rng.next_f64()) as f32))
        .collect()
}

/// `n` normal values, rounded to `dtype`.
pub(crate) fn normal(seed: u64, mean: f32, std: f32, n: usize, dtype: DType) -> Vec<f32> {
    let mut g = Normal {
        rng: SplitMix64::new(seed),
        spare: None,
    };
    let (mu, sd) = (f64::from(mean), f64::from(std));
    (0..n)
        .map(|_| dtype.round((mu + sd * g.next()) as f32))
        .collect()
}

/// Most initializer values [`Graph::initializer_tensors`] materialises (2^26, 256 MiB of
/// `f32`); see docs/limits.md.
pub const MAX_MATERIALISED_ELEMENTS: usize = 1 << 26;

impl Graph {
    /// Materialises every initializer, rounded to its dtype. Seeded ones are
    /// deterministic and platform-independent: SplitMix64 seeded with the initializer's
    /// seed; uniform `low + (high - low) * u` with `u = (next >> 11) * 2^-53`; normal by
    /// Marsaglia's polar method with a logarithm computed here (exact recipe in
    /// `docs/graph-format.md`).
    ///
    /// At most [`MAX_MATERIALISED_ELEMENTS`] values in all: a model larger than that (such
    /// as a real-size Llama layer) is for planning and timing only, and asking for its
    /// weights is an error rather than gigabytes of memory.
    pub fn initializer_tensors(&self) -> Result<BTreeMap<String, Tensor>, GraphError> {
        self.infer_types()?;
        let n = self.parameter_count();
        if n > MAX_MATERIALISED_ELEMENTS {
            return Err(GraphError::graph(format!(
                "the graph's initializers hold {n} values, more than the {MAX_MATERIALISED_ELEMENTS} (2^26) that are materialised at once; graphs this large are for planning and timing only"
            )));
        }
        let mut out = BTreeMap::new();
        for init in &self.initializers {
            let ty = &init.ty;
            let n = ty.numel();
            let data = match &init.init {
                InitSpec::Data(d) => d.clone(),
                InitSpec::Uniform { seed, low, high } => uniform(*seed, *low, *high, n, ty.dtype),
                InitSpec::Normal { seed, mean, std } => normal(*seed, *mean, *std, n, ty.dtype),
                InitSpec::Zeros => vec![0.0; n],
                InitSpec::Ones => vec![1.0; n],
                InitSpec::Constant(c) => vec![*c; n],
                InitSpec::CausalMask { .. } => init
                    .init
                    .values(n, ty.shape.last().copied().unwrap_or(1))
                    .unwrap_or_default(),
                InitSpec::External(x) => x
                    .values(ty)
                    .map_err(|m| GraphError::graph(format!("initializer '{}': {m}", init.name)))?,
            };
            let t = Tensor::new(ty.dtype, ty.shape.clone(), data)
                .map_err(|m| GraphError::graph(format!("initializer '{}': {m}", init.name)))?;
            out.insert(init.name.clone(), t);
        }
        Ok(out)
    }
}

/// Deterministic inputs for `graph`: one SplitMix64 stream seeded with `seed`, drawn in
/// the order of `graph.inputs`, each element uniform in `[-1, 1)` (as for initializers)
/// rounded to the input's dtype. So integer inputs are all 0 (truncation), and bool
/// inputs are `x > 0`.
pub fn random_inputs(graph: &Graph, seed: u64) -> Result<BTreeMap<String, Tensor>, GraphError> {
    graph.infer_types()?;
    let mut rng = SplitMix64::new(seed);
    let mut out = BTreeMap::new();
    for vi in &graph.inputs {
        let dt = vi.ty.dtype;
        let data: Vec<f32> = (0..vi.ty.numel())
            .map(|_| {
                let v = (-1.0 + 2.0 * rng.next_f64()) as f32;
                if dt == DType::Bool {
                    if v > 0.0 {
                        1.0
                    } else {
                        0.0
                    }
                } else {
                    dt.round(v)
                }
            })
            .collect();
        let t = Tensor::new(dt, vi.ty.shape.clone(), data)
            .map_err(|m| GraphError::graph(format!("input '{}': {m}", vi.name)))?;
        out.insert(vi.name.clone(), t);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn signed_unit_f32s_match_the_sequential_stream() {
        for seed in [0, 7, u64::MAX - 3] {
            let mut a = SplitMix64::new(seed);
            let mut b = SplitMix64::new(seed);
            let fast = a.signed_unit_f32s(10_000);
            let slow: Vec<f32> = (0..10_000)
                .map(|_| (b.next_f64() * 2.0 - 1.0) as f32)
                .collect();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&slow));
            assert_eq!(a.next_u64(), b.next_u64());
        }
        // Every 53-bit integer on either side of 2^52 rounds as the f64 path does.
        for m in [
            0u64,
            1,
            (1 << 52) - 1,
            1 << 52,
            (1 << 52) + 1,
            (1 << 53) - 1,
        ] {
            let slow = ((m as f64 * (1.0 / (1u64 << 53) as f64)) * 2.0 - 1.0) as f32;
            let fast = (m as i64 - (1i64 << 52)) as f32 * (1.0 / (1u64 << 52) as f32);
            assert_eq!(fast.to_bits(), slow.to_bits(), "m = {m}");
        }
    }
    use super::*;

    #[test]
    fn splitmix_reference() {
        // First outputs for seed 0 (published reference values of SplitMix64).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    /// The logarithm as first written: always 30 terms of the series.
    fn ln_30_terms(x: f64) -> f64 {
        let bits = x.to_bits();
        let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
        let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
        if m > std::f64::consts::SQRT_2 {
            m /= 2.0;
            e += 1;
        }
        let s = (m - 1.0) / (m + 1.0);
        let s2 = s * s;
        let (mut term, mut sum, mut k) = (s, 0.0, 1.0);
        for _ in 0..30 {
            sum += term / k;
            term *= s2;
            k += 2.0;
        }
        2.0 * sum + e as f64 * std::f64::consts::LN_2
    }

    #[test]
    fn ln_of_twelve_terms_has_the_bits_of_thirty() {
        let mut r = SplitMix64::new(3);
        let mut xs: Vec<f64> = (0..200_000).map(|_| r.next_f64()).collect();
        xs.extend((0..200_000).map(|_| f64::from_bits(r.next_u64() >> 2)));
        xs.extend((0..100_000).map(|_| 1.0 + (r.next_f64() - 0.5) * 1e-6));
        // The mantissas where |s| is largest and the series needs the most terms.
        let edge = std::f64::consts::SQRT_2.to_bits();
        xs.extend((edge - 50_000..edge + 50_000).map(f64::from_bits));
        xs.extend((edge - 50_000..edge + 50_000).map(|b| f64::from_bits(b) / 2.0));
        xs.extend([
            f64::MIN_POSITIVE,
            1.0,
            std::f64::consts::SQRT_2,
            0.5,
            2.0,
            1e300,
        ]);
        for x in xs.into_iter().filter(|x| x.is_normal() && *x > 0.0) {
            assert_eq!(ln(x).to_bits(), ln_30_terms(x).to_bits(), "ln({x:e})");
        }
    }

    #[test]
    fn ln_matches_std() {
        for x in [1e-300, 1e-10, 0.1, 0.5, 0.7, 1.0, 1.5, 2.0, 10.0, 1e10] {
            let d = (ln(x) - x.ln()).abs();
            assert!(d <= 1e-15 * x.ln().abs().max(1.0), "ln({x})");
        }
    }
}
