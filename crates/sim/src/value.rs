//! The interpreter's values and limits: what a slot holds (scalars, tensors, views, tiles,
//! futures), what a kernel is given and returns, run-time errors and the bounds that turn
//! runaway programs into them. The bottom layer: it depends on no other part of execution.

use crate::timing::TaskId;
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use ktir::ast::*;
use std::fmt;
use std::rc::Rc;

/// Bounds that turn runaway programs into errors, and execution switches. The defaults
/// and where each is checked are listed in docs/limits.md.
#[derive(Clone, Debug)]
pub struct ExecLimits {
    /// Operations executed over all cores and launches.
    pub max_steps: u64,
    /// Elements in one tensor value.
    pub max_tensor_elements: usize,
    /// Elements in all DRAM buffers together.
    pub max_dram_elements: usize,
    /// Bytes the recorded timing tasks take through the run: what each task keeps (its
    /// record and event, [`crate::timing::task_footprint`]) and the scheduler's state for
    /// the largest launch ([`crate::timing::SCHEDULER_BYTES_PER_TASK`] a task). Bounding
    /// bytes rather than a task count lets a timing-only run of a large model use the
    /// memory a run may take.
    pub max_task_bytes: u64,
}

impl Default for ExecLimits {
    fn default() -> Self {
        ExecLimits {
            max_steps: 50_000_000,
            max_tensor_elements: 1 << 24,
            max_dram_elements: 1 << 28,
            max_task_bytes: 1 << 30,
        }
    }
}

/// A run-time error, naming the core and the KTIR op where it happened.
#[derive(Clone, Debug, PartialEq)]
pub struct SimError {
    /// What went wrong.
    pub message: String,
    /// The core executing, if any.
    pub core: Option<usize>,
    /// The op's name and source line, if any.
    pub op: Option<(String, u32)>,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((op, line)) = &self.op {
            write!(f, "line {line}: '{op}': ")?;
        }
        if let Some(c) = self.core {
            write!(f, "core {c}: ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for SimError {}

pub(crate) fn err<T>(message: impl Into<String>) -> Result<T, SimError> {
    Err(SimError {
        message: message.into(),
        core: None,
        op: None,
    })
}

/// A value passed to or returned from a kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelValue {
    /// An `index`, integer or runtime argument (also buffer base addresses).
    Int(i64),
    /// A float scalar.
    Float(f64),
    /// A tensor (row-major data).
    Tensor {
        /// Its shape.
        shape: Vec<usize>,
        /// Its elements; empty in timing-only mode (given or returned).
        data: Vec<f32>,
    },
    /// A scalar timing-only mode did not compute because it came from tensor data.
    Unknown,
}

/// Rounds a value to what a storage type can hold.
pub fn round_to(elem: ScalarType, x: f32) -> f32 {
    match elem {
        ScalarType::F16 => round_f16(x),
        ScalarType::BF16 => bf16::from_f32(x).to_f32(),
        ScalarType::F32 | ScalarType::F64 => x,
        ScalarType::F8E4M3 | ScalarType::F8E5M2 => f16::from_f32(x).to_f32(),
        ScalarType::I1 => {
            if x != 0.0 {
                1.0
            } else {
                0.0
            }
        }
        ScalarType::I8 => x.trunc().clamp(-128.0, 127.0),
        ScalarType::I16 => x.trunc().clamp(-32768.0, 32767.0),
        ScalarType::I32 | ScalarType::I64 | ScalarType::Index => x.trunc(),
    }
}

/// [`round_to`] over a whole slice, in place. The element type is matched once; f16 goes
/// through [`round_f16_slice`], bf16 through `half`'s slice conversions (vector
/// instructions where the machine has them) in chunks small enough to stay in a stack
/// buffer. Bit for bit what `round_to` gives each element.
pub fn round_slice(elem: ScalarType, xs: &mut [f32]) {
    const CHUNK: usize = 256;
    match elem {
        ScalarType::F32 | ScalarType::F64 => {}
        ScalarType::F16 | ScalarType::F8E4M3 | ScalarType::F8E5M2 => round_f16_slice(xs),
        ScalarType::BF16 => {
            let mut buf = [bf16::ZERO; CHUNK];
            for c in xs.chunks_mut(CHUNK) {
                let b = &mut buf[..c.len()];
                b.convert_from_f32_slice(c);
                b.convert_to_f32_slice(c);
            }
        }
        _ => {
            for x in xs {
                *x = round_to(elem, *x);
            }
        }
    }
}

/// [`round_f16`] of every element, in place. Slices whose elements are all finite and
/// below the f16 overflow threshold (nearly always) are rounded by [`round_f16_arith`]
/// without a branch per element, which compiles to vector instructions (SSE2, AVX2 and
/// AVX-512 where the CPU has them, WebAssembly SIMD128) and beats converting to f16 and
/// back even where that is an instruction; a slice with any other value is redone element
/// by element (`round_f16` leaves rounded values unchanged, and the others are left as
/// they were).
fn round_f16_slice(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the feature the function is compiled for.
            unsafe { round_f16_slice_avx512(xs) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            unsafe { round_f16_slice_avx2(xs) };
            return;
        }
    }
    round_f16_chunks(xs);
}

/// [`round_f16_chunks`] compiled for AVX-512: the same integer and float steps on 16
/// lanes, so the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn round_f16_slice_avx512(xs: &mut [f32]) {
    round_f16_chunks(xs);
}

/// [`round_f16_chunks`] compiled for AVX2 (8 lanes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn round_f16_slice_avx2(xs: &mut [f32]) {
    round_f16_chunks(xs);
}

/// The body of [`round_f16_slice`], inlined into each instruction-set variant. The first
/// pass is a loop with no branch and no call, which is what lets it vectorise (a per-chunk
/// fallback inside the same loop nest kept it scalar); the second pass runs only when some
/// element was left for it.
#[inline(always)]
fn round_f16_chunks(xs: &mut [f32]) {
    let mut all = 1u32;
    for x in xs.iter_mut() {
        let (r, ok) = round_f16_arith(*x);
        all &= ok as u32;
        // The others keep their value for the second pass.
        *x = if ok { r } else { *x };
    }
    if all == 0 {
        for x in xs.iter_mut() {
            *x = round_f16(*x);
        }
    }
}

/// `f16::from_f32(x).to_f32()`, bit for bit, without the round trip.
///
/// Everything else (overflow, infinities, NaN) goes through the library. Where f16
/// conversion is a hardware instruction this is as fast; in WebAssembly it is several
/// times faster.
pub fn round_f16(x: f32) -> f32 {
    match round_f16_arith(x) {
        (r, true) => r,
        _ => f16::from_f32(x).to_f32(),
    }
}

/// `x` rounded to f16 by f32 arithmetic, and whether that is the right answer (`|x|` below
/// 65520, the values that do not overflow, and not NaN).
///
/// An f32 in the f16 normal range (`2^-14 <= |x|`) becomes an f16 by rounding its mantissa
/// to 10 bits, to nearest with ties to even; done on the f32's bits, that is one add and
/// one mask. Below it, f16 values are the multiples of 2^-24, which is the ulp of f32s in
/// `[0.5, 1)`: adding and then subtracting 0.5 (with `x`'s sign) rounds `x` to that grid,
/// to nearest with ties to even, exactly; the sign is put back for results of zero.
#[inline(always)]
fn round_f16_arith(x: f32) -> (f32, bool) {
    let bits = x.to_bits();
    let abs = bits & 0x7fff_ffff;
    let normal = f32::from_bits(bits.wrapping_add(0x0fff + ((bits >> 13) & 1)) & !0x1fff);
    let half = 0.5f32.copysign(x);
    let subnormal = ((x + half) - half).copysign(x);
    let r = if abs >= 0x3880_0000 {
        normal
    } else {
        subnormal
    };
    (r, abs < 0x477f_f000)
}

/// A sentinel task id for work that is computed but not timed (collective combiners).
pub(crate) const NO_TASK: TaskId = usize::MAX;

#[derive(Clone, Debug)]
pub(crate) struct TensorVal {
    pub shape: Vec<usize>,
    pub elem: ScalarType,
    /// Row-major elements; empty in timing-only mode, where a tensor is its shape.
    pub data: Vec<f32>,
    /// The task whose completion makes this value available.
    pub ready: Option<TaskId>,
    /// Whether the value takes scratchpad: a `tensor.empty` does not (it is only the
    /// destination an op writes its result into, and that result is charged).
    pub charged: bool,
}

/// A tensor's buffer goes back to the pool for the next tile of its size.
impl Drop for TensorVal {
    fn drop(&mut self) {
        crate::pool::give(std::mem::take(&mut self.data));
    }
}

impl TensorVal {
    /// Elements of the shape (whether or not the data is held).
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

/// A memory view: plain (one buffer or scratchpad) or distributed over partitions.
#[derive(Clone, Debug)]
pub(crate) struct ViewVal {
    pub name: String,
    pub base: i64,
    pub sizes: Vec<i64>,
    pub strides: Vec<i64>,
    pub elem: ScalarType,
    pub space: MemorySpace,
    pub set: Option<Rc<AffineSet>>,
    pub syms: Vec<i64>,
    /// For a distributed view: the partitions with the lower corner of each one's
    /// coordinate set (global coordinates minus the corner give the partition's own).
    pub parts: Vec<(Rc<ViewVal>, Vec<i64>)>,
}

/// An access tile: the view coordinates of its points in enumeration order.
#[derive(Clone, Debug)]
pub(crate) struct TileVal {
    pub view: Rc<ViewVal>,
    pub shape: Vec<usize>,
    pub rank: usize,
    pub points: TilePoints,
    /// The task that read the indices of an indirect tile.
    pub ready: Option<TaskId>,
}

/// The points of an access tile.
#[derive(Clone, Debug)]
pub(crate) enum TilePoints {
    /// Every point of the box `origin + [0, shape)` is in the tile (none is masked),
    /// enumerated with dimension `order[0]` outermost and `order[rank - 1]` innermost.
    /// Coordinates are computed when walked, never stored, so a whole-tile load or store
    /// can be checked and timed from the box's bounds alone.
    Box { origin: Vec<i64>, order: Vec<usize> },
    /// Any other tile: `rank` coordinates per point (flat), and whether each point is in
    /// the tile's set (others are masked).
    List { coords: Vec<i64>, valid: Vec<bool> },
}

impl TileVal {
    /// Points in the tile, masked ones included.
    pub fn len(&self) -> usize {
        match &self.points {
            TilePoints::Box { .. } => self.shape.iter().product(),
            TilePoints::List { valid, .. } => valid.len(),
        }
    }

    /// Calls `f(k, coordinates)` for every point `k` that is not masked, in order.
    pub fn visit(
        &self,
        mut f: impl FnMut(usize, &[i64]) -> Result<(), SimError>,
    ) -> Result<(), SimError> {
        match &self.points {
            TilePoints::List { coords, valid } => {
                let rank = self.rank;
                for (k, ok) in valid.iter().enumerate() {
                    if *ok {
                        f(k, &coords[k * rank..(k + 1) * rank])?;
                    }
                }
                Ok(())
            }
            TilePoints::Box { origin, order } => {
                let extents: Vec<usize> = order.iter().map(|&d| self.shape[d]).collect();
                let mut p = origin.clone();
                for_each_point(&extents, |k, q| {
                    for (i, &d) in order.iter().enumerate() {
                        p[d] = origin[d] + q[i];
                    }
                    f(k, &p)
                })
            }
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct FutureVal {
    /// The producer group of this tile, `None` when it produces nothing.
    pub group: Option<i64>,
    pub values: Vec<RtValue>,
}

#[derive(Clone, Debug)]
pub(crate) enum RtValue {
    Index(i64),
    Float(f64),
    /// A scalar that timing-only mode did not compute because it comes from tensor data;
    /// the line of the `tensor.extract` it comes from. Arithmetic carries it along; a use
    /// that needs its value (a loop bound, a condition, an address) is an error.
    Unknown(u32),
    Tensor(Rc<TensorVal>),
    View(Rc<ViewVal>),
    Tile(Rc<TileVal>),
    Future(Rc<FutureVal>),
}

pub(crate) fn set_slot(slots: &mut [Option<RtValue>], s: Option<&usize>, v: RtValue) {
    if let Some(slot) = s.and_then(|s| slots.get_mut(*s)) {
        *slot = Some(v);
    }
}

/// Scratchpad bytes a tensor value is charged: the working-set analysis's count.
pub(crate) fn tensor_bytes(t: &TensorVal) -> u64 {
    if !t.charged {
        return 0;
    }
    ktir::working_set::bytes(t.numel(), t.elem)
}

pub(crate) fn kernel_value(v: &RtValue) -> KernelValue {
    match v {
        RtValue::Index(i) => KernelValue::Int(*i),
        RtValue::Float(f) => KernelValue::Float(*f),
        RtValue::Tensor(t) => KernelValue::Tensor {
            shape: t.shape.clone(),
            data: t.data.clone(),
        },
        RtValue::Unknown(_) => KernelValue::Unknown,
        _ => KernelValue::Int(0),
    }
}

pub(crate) fn strides_of(shape: &[usize]) -> Vec<usize> {
    crate::exec_ops::strides_of(shape)
}

/// Calls `f(flat_index, point)` for every point of `shape` in row-major order.
pub(crate) fn for_each_point(
    shape: &[usize],
    mut f: impl FnMut(usize, &[i64]) -> Result<(), SimError>,
) -> Result<(), SimError> {
    if shape.contains(&0) {
        return Ok(());
    }
    let total: usize = shape.iter().product();
    let mut p = vec![0i64; shape.len()];
    for flat in 0..total {
        f(flat, &p)?;
        for d in (0..shape.len()).rev() {
            p[d] += 1;
            if (p[d] as usize) < shape[d] {
                break;
            }
            p[d] = 0;
        }
    }
    Ok(())
}

/// A scalar of element type `elem` as a slot value.
pub(crate) fn scalar_value(x: f64, elem: ScalarType) -> RtValue {
    if elem.is_float() {
        RtValue::Float(x)
    } else {
        RtValue::Index(x as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_slice_rounding_matches_round_f16_bit_for_bit() {
        // Normal values with specials mixed in at varying positions, so that chunks both
        // take the vector path and are redone.
        let mut xs = Vec::new();
        let mut b: u32 = 0;
        while let Some(next) = b.checked_add(65_537) {
            xs.push(f32::from_bits(b));
            b = next;
        }
        for h in 0..=u16::MAX {
            let v = f16::from_bits(h).to_f32();
            xs.extend([v, f32::from_bits(v.to_bits().wrapping_add(1))]);
        }
        xs.extend((0..1000).map(|i| (i as f32 - 500.0) / 300.0));
        let want: Vec<u32> = xs.iter().map(|&x| round_f16(x).to_bits()).collect();
        let mut got = xs.clone();
        round_slice(ScalarType::F16, &mut got);
        for ((g, w), x) in got.iter().zip(&want).zip(&xs) {
            let same = g.to_bits() == *w || (g.is_nan() && f32::from_bits(*w).is_nan());
            assert!(same, "{x:e}: {g:e} vs {:e}", f32::from_bits(*w));
        }
    }
}
