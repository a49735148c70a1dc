//! The `work-division` pass: how each op's iteration space is split over cores.
//!
//! Work is split in whole sticks: an iteration dim that indexes the stick dim is counted in
//! sticks. Splits divide evenly, so some cores may idle. Per op, in order:
//! 1. **Span reduction**: the smallest split (fewest cores, then outermost dims first) that
//!    keeps every core's address span in every tensor within `span_limit_bytes`. Any later
//!    choice must keep spans within the limit too.
//! 2. **Hint** (user override): validated (one split per dim, each divides its dim, product at
//!    most the core count, spans within the limit).
//! 3. **Matmul cost model** (batchmatmul): every combination of divisors of the batch dims, M,
//!    N in sticks and K in sticks; minimise compute + memory + partial-sum time:
//!    compute = per-core MACs / (peak x eff), eff = min(1, sqrt(row passes / fill passes));
//!    memory = bytes all cores move / aggregate DRAM bandwidth (the bandwidth is shared, so
//!    operands replicated across cores cost once per core; our choice, the doc leaves it
//!    open), where a share too big for the scratchpad counts the re-reads of the best time
//!    cut that fits (reuse-aware: see `Share::traffic`); a K split adds its fp32 partial tile
//!    reduced to the group's first core over the ring at one link's bandwidth
//!    ([`Target::ring_bytes_per_ns`]), pipelined in pieces as the simulator times it:
//!    `(1 + (k - 2) / pieces)` tiles ([`ktir::reduce::reduce_pipeline_pieces`], the rule the simulator times with).
//!    Where an M split lets an M group share B over the ring, the loader's forwarding
//!    counts only where compute cannot cover it ([`MatmulCost::ring_exposed`]), and the
//!    estimate is never below the loader's own DMA work. Ties go to the split forwarding
//!    fewer bytes over the ring, then to fewer cores.
//! 4. **Default**: rank the non-reduction dims by size in split units (stable), give each the
//!    largest divisor that fits the remaining cores, then split at most one reduction dim.
//! 5. **Follow the producer** (elementwise ops, reductions and row ops, instead of 4): the
//!    split under which every core takes the slice of an input that the input's producer
//!    left on it, so the scratchpad plan may keep the input there rather than store and load
//!    it (attention's scale, mask and softmax take the scores' heads instead of cutting
//!    rows), where it uses as many cores as the default, cuts the last dim only if the
//!    default does (the row reductions after a run need whole rows), its slices fit the
//!    scratchpad at once, and the extra bytes its other inputs cost under it (a broadcast
//!    mask read whole by every core) are fewer than the round trip it may save.
//!
//! Some dims stay whole whatever the rule ([`unsplittable`]): the reduction dims of every op
//! but batchmatmul (no other kernel combines partial results across cores, so in practice
//! the default never splits a reduction), and the stick dims of an op whose operands have
//! sticks of different lengths (a bool or i32 operand beside fp16 data). Movement ops split
//! only the dims `movement_split` allows (never a dim an input is not read along as a box;
//! a stick dim only for a transpose moved in blocks, in whole sticks of the input, and after
//! every other dim has had its share of the cores). The rule names the dims kept whole and
//! why.
//!
//! Core-to-slice: mixed radix over the dims with reduction dims first (so K-split
//! collaborators sit on adjacent ring stops), then the other dims in iteration order; the first
//! of those varies fastest. One exception: a matmul whose B tiles are shared within M groups
//! while K is split puts M first, so each M group sits on adjacent stops and a shared tile
//! crosses one link (K first, every loader's tiles would cross `k` links alongside the other
//! K positions' tiles: on spyre32 the seq-512 MLP projections forwarded B at 1/16 of a link);
//! each K group is then `m` stops apart, and its partial sums share links with the other
//! M groups' chains.

use crate::layout::Layout;
use std::collections::BTreeMap;

use crate::ops::{access_map, dsize, Category, DeviceOp};
use crate::{Compilation, CompileError, Options, Target};

/// How one op is split over cores.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WorkDivision {
    /// The device op's name.
    pub op: String,
    /// Per iteration dim.
    pub splits: Vec<usize>,
    pub cores_used: usize,
    /// Per used core: slice index per dim.
    pub core_to_slice: Vec<Vec<usize>>,
    /// Which rule decided, with the figures that decided it.
    pub rule: String,
    /// A matmul's B (weight) tiles shared over the ring: the number of cores of an M group
    /// that need the same tiles; the group's first core loads each tile from DRAM and the
    /// others take it from the ring. `None`: every core loads its own. Written even when
    /// `None`: the compile-artifact cache's binary form is positional.
    #[serde(default)]
    pub shared_b: Option<usize>,
}

/// Elements per stick for the stick dims of `op` (from its first output's device dtype).
pub fn op_eps(c: &Compilation, op: &DeviceOp) -> usize {
    let dt = op
        .outputs
        .first()
        .and_then(|o| {
            c.layouts
                .get(o)
                .map(|l| l.dtype)
                .or_else(|| c.types.get(o).map(|t| crate::layout::device_dtype(t.dtype)))
        })
        .unwrap_or(graph::DType::F16);
    (c.target.stick_bytes / dsize(dt)).max(1)
}

/// Per iteration dim of `op`, why it must stay whole on every core (`None`: it may be
/// split). A reduction dim of anything but a matmul (whose K split combines its partial
/// sums over the ring) stays whole: those kernels do not combine partial results. A stick
/// dim stays whole when the operands it indexes have sticks of different lengths (a bool
/// mask beside fp16 data): a slice of whole sticks of one is not whole sticks of another.
pub fn unsplittable(c: &Compilation, op: &DeviceOp) -> Vec<Option<&'static str>> {
    let eps = op_eps(c, op);
    let mixed = |d: usize| {
        op.inputs
            .iter()
            .chain(&op.outputs)
            .enumerate()
            .any(|(i, t)| match c.layouts.get(t) {
                Some(l) => {
                    let acc = access_map(op, i, &l.host_shape);
                    l.stick_host_dim()
                        .and_then(|h| acc.get(h).copied().flatten())
                        == Some(d)
                        && l.elems_per_stick != eps
                }
                None => false,
            })
    };
    op.iteration
        .iter()
        .enumerate()
        .map(|(d, dim)| {
            if dim.reduction && !op.kind.is_matmul() {
                Some("its kernel does not combine partial results across cores")
            } else if dim.in_sticks && mixed(d) {
                Some("its operands' sticks hold different numbers of elements")
            } else {
                None
            }
        })
        .collect()
}

/// Each dim's extent in split units (sticks for stick dims).
pub fn units(op: &DeviceOp, eps: usize) -> Vec<usize> {
    op.iteration
        .iter()
        .map(|d| {
            if d.in_sticks {
                d.extent.div_ceil(eps)
            } else {
                d.extent
            }
        })
        .collect()
}

fn divisors(n: usize) -> Vec<usize> {
    if n == 0 {
        return vec![1];
    }
    let mut v: Vec<usize> = (1..)
        .take_while(|i| i * i <= n)
        .filter(|i| n % i == 0)
        .collect();
    let big: Vec<usize> = v
        .iter()
        .rev()
        .map(|i| n / i)
        .filter(|j| j * j != n)
        .collect();
    v.extend(big);
    v
}

/// Core-to-slice table for given splits (see the module doc for the order).
pub fn core_to_slice(op: &DeviceOp, splits: &[usize]) -> Vec<Vec<usize>> {
    core_to_slice_from(op, splits, None)
}

/// Core-to-slice table with dim `first`, when given, varying fastest, ahead of the
/// reduction dims: a matmul's M where its B tiles are shared within M groups and K is split
/// too, so each M group sits on adjacent ring stops (a shared tile crosses one link, not
/// `k` of them beside the other K positions' tiles) and each K group every `m` stops.
fn core_to_slice_from(op: &DeviceOp, splits: &[usize], first: Option<usize>) -> Vec<Vec<usize>> {
    let cores: usize = splits.iter().product();
    let mut order: Vec<usize> = first.into_iter().collect();
    order.extend((0..splits.len()).filter(|&d| op.iteration[d].reduction && Some(d) != first));
    order.extend((0..splits.len()).filter(|&d| !op.iteration[d].reduction && Some(d) != first));
    (0..cores)
        .map(|c| {
            let mut rest = c;
            let mut idx = vec![0; splits.len()];
            for &d in &order {
                idx[d] = rest % splits[d];
                rest /= splits[d];
            }
            idx
        })
        .collect()
}

/// Per-core chunk of each iteration dim, in elements (stick dims in whole sticks).
pub fn chunk_elems(op: &DeviceOp, eps: usize, splits: &[usize]) -> Vec<usize> {
    units(op, eps)
        .iter()
        .zip(splits)
        .zip(&op.iteration)
        .map(|((&u, &s), d)| {
            let per = u / s.max(1);
            if d.in_sticks {
                per * eps
            } else {
                per
            }
        })
        .collect()
}

/// Address span (bytes) one core touches in a tensor, for the core holding slice 0.
pub fn span_bytes(layout: &Layout, access: &[Option<usize>], chunks: &[usize]) -> u64 {
    let n = layout.device_size.len();
    let host_chunk: Vec<usize> = layout
        .host_shape
        .iter()
        .enumerate()
        .map(|(h, &e)| match access.get(h).copied().flatten() {
            Some(d) => chunks.get(d).copied().unwrap_or(e).min(e),
            None => e,
        })
        .collect();
    let mut stride = 1u64;
    let mut span = 1u64;
    for j in (0..n).rev() {
        let max_idx = match layout.host_dim_of_device_dim.get(j).copied().flatten() {
            None => 0,
            Some(h) => {
                let top = host_chunk.get(h).copied().unwrap_or(1).max(1) - 1;
                let eps = layout.elems_per_stick.max(1);
                if j + 1 == n {
                    top.min(eps - 1)
                } else if layout.is_stick_count_dim(j) {
                    top / eps
                } else {
                    top
                }
            }
        };
        span = span.saturating_add((max_idx as u64).saturating_mul(stride));
        stride = stride.saturating_mul(layout.device_size[j] as u64);
    }
    span.saturating_mul(dsize(layout.dtype) as u64)
}

/// The largest span over all operands, with the tensor it belongs to.
fn max_span(
    c: &Compilation,
    op: &DeviceOp,
    eps: usize,
    splits: &[usize],
) -> Result<(u64, String), CompileError> {
    let chunks = chunk_elems(op, eps, splits);
    let mut best = (0u64, String::new());
    for (i, t) in op.inputs.iter().chain(&op.outputs).enumerate() {
        let l = c.layout(t, &op.name)?;
        let acc = access_map(op, i, &l.host_shape);
        let s = span_bytes(l, &acc, &chunks);
        if s > best.0 {
            best = (s, t.clone());
        }
    }
    Ok(best)
}

/// All split vectors (divisor per dim) with product <= cores, fewest cores first, then the
/// outermost dims split first. Bounded by the core count.
fn candidates(units: &[usize], cores: usize) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for &u in units {
        let mut next = Vec::new();
        for prefix in &out {
            let used: usize = prefix.iter().product();
            for d in divisors(u) {
                if used.saturating_mul(d) <= cores.max(1) {
                    let mut p: Vec<usize> = prefix.clone();
                    p.push(d);
                    next.push(p);
                }
            }
        }
        out = next;
    }
    out.sort_by(|a, b| {
        let (pa, pb): (usize, usize) = (a.iter().product(), b.iter().product());
        pa.cmp(&pb).then_with(|| b.cmp(a))
    });
    out
}

fn fmt_splits(op: &DeviceOp, s: &[usize]) -> String {
    op.iteration
        .iter()
        .zip(s)
        .map(|(d, x)| format!("{}={x}", d.label))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Estimated time (ns) of a batchmatmul split, as (compute, memory, partial sums), every
/// core loading its own tiles.
pub fn matmul_cost(
    c: &Compilation,
    op: &DeviceOp,
    splits: &[usize],
) -> Result<(f64, f64, f64), CompileError> {
    let m = matmul_cost_with(c, op, splits, false, true)?;
    Ok((m.compute, m.memory, m.psum))
}

/// A matmul split's estimated time (ns), by part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatmulCost {
    /// Per-core MACs at the PT array's rate.
    pub compute: f64,
    /// Bytes all cores move from and to DRAM at its aggregate bandwidth.
    pub memory: f64,
    /// The K split's partial sums reduced over the ring.
    pub psum: f64,
    /// B tiles forwarded over the ring by the core of each M group that loads them.
    pub ring: f64,
    /// The M group size sharing B tiles over the ring, when they are shared.
    pub shared_b: Option<usize>,
    /// Whether the share is cut in time (it does not fit the scratchpad whole).
    pub time_cut: bool,
    /// Whether some time cut's working set fits the scratchpad (else the estimate is the
    /// finest cut's, and the lowering will report the shortfall).
    pub fits: bool,
    /// Whether the time loops are estimated to double-buffer: the option is on and the
    /// second buffers of the streamed blocks fit beside the plan's working set.
    pub double_buffered: bool,
    /// Time steps of the plan the memory estimate assumes (1: not cut in time).
    pub steps: f64,
}

impl MatmulCost {
    /// The estimate the cost model minimises: compute, memory and partial sums in sequence,
    /// plus the part of the B forwarding that the loader's DMA engine cannot fit beside its
    /// loads ([`MatmulCost::ring_exposed`]), and never less than the loader's own DMA work
    /// (its loads, its sends and the partial sums).
    pub fn total(&self) -> f64 {
        let serial = self.compute + self.memory + self.psum + self.ring_exposed();
        serial.max(self.memory + self.ring + self.psum)
    }

    /// The B forwarding's share of the estimate: `ring x max(1 / steps, 1 - compute /
    /// memory)`. The loader sends each tile on its DMA engine between its loads. The first
    /// step's tile is forwarded before any member can start, so `1 / steps` of it always
    /// counts (all of it when the share is not cut in time); after that, where compute is
    /// as long as memory, the members are still busy with the previous tile and the sends
    /// hide, and the more a kernel is bound by memory, the more of them extend it
    /// (assumption, fitted to the simulator over the roofline sweep's projections and the
    /// gallery's matmuls on spyre32 and tiny4; docs/roofline.md).
    pub fn ring_exposed(&self) -> f64 {
        let first = 1.0 / self.steps.max(1.0);
        let slack = if self.memory > 0.0 {
            (1.0 - self.compute / self.memory).max(0.0)
        } else {
            1.0
        };
        self.ring * first.max(slack)
    }

    /// The estimate with DMA/compute overlap: a double-buffered time loop hides the shorter
    /// of its transfers (DRAM and ring) and its compute, a single-buffered one pays both.
    /// Used to weigh B shared over the ring against every core loading its own, where the
    /// sharing's extra buffers can cost the second buffers (assumption: the whole kernel
    /// overlaps, as a long time loop nearly does).
    pub fn overlapped(&self) -> f64 {
        if self.time_cut && self.double_buffered {
            self.compute.max(self.memory + self.ring) + self.psum
        } else {
            self.total()
        }
    }
}

/// Whether a split may share B tiles over the ring: M is split (so several cores need the
/// same B slice), no batch dim is split (B's slice is then the same across the M group),
/// A and B are different tensors, and the share does not fit the scratchpad whole (only
/// then does sharing replace DRAM re-reads; a share that fits is read once anyway).
fn may_share_b(c: &Compilation, op: &DeviceOp, splits: &[usize], share: &Share) -> bool {
    let nb = op.iteration.len().saturating_sub(3);
    splits.get(nb).is_some_and(|&m| m > 1)
        && splits[..nb].iter().all(|&s| s == 1)
        && op.inputs.first() != op.inputs.get(1)
        && !share.fits(c.target.scratchpad_capacity_bytes as f64)
}

/// The M dim of a matmul split whose B tiles are shared within M groups while K is split
/// too: its cores are laid out M first ([`core_to_slice_from`]), so a shared tile moves one
/// link per member and the K groups interleave. `None` for every other split (K groups
/// then sit on adjacent cores, and M groups are adjacent already when K is whole).
fn m_groups_adjacent(op: &DeviceOp, splits: &[usize], shared_b: Option<usize>) -> Option<usize> {
    let nb = op.iteration.len().checked_sub(3)?;
    (op.kind.is_matmul() && shared_b.is_some_and(|g| g > 1) && splits.get(nb + 2) > Some(&1))
        .then_some(nb)
}

/// A matmul split and its estimate by part, as the work-division rule states it.
fn describe_matmul(op: &DeviceOp, splits: &[usize], m: &MatmulCost) -> String {
    let p: usize = splits.iter().product();
    let ring = match m.shared_b {
        Some(g) => format!(
            " + B shared by {g} over the ring {:.1} ({:.1} of it beyond compute)",
            m.ring,
            m.ring_exposed()
        ),
        None => String::new(),
    };
    format!(
        "{} ({p} cores): compute {:.1} + memory {:.1} + partial sums {:.1}{ring} = {:.1} ns",
        fmt_splits(op, splits),
        m.compute,
        m.memory,
        m.psum,
        m.total()
    )
}

/// A matmul split's estimated cost with B shared over the ring where that is cheaper than
/// every core reading its own, with the DMA/compute overlap each form keeps weighed in (a
/// shared plan whose second buffers no longer fit pays DMA + compute), and where the shared
/// form's tiles fit the scratchpad (the loader holds each B block twice); else every core
/// reading its own.
fn matmul_own_or_shared(
    c: &Compilation,
    op: &DeviceOp,
    splits: &[usize],
    double: bool,
) -> Result<MatmulCost, CompileError> {
    let own = matmul_cost_with(c, op, splits, false, double)?;
    let shared = matmul_cost_with(c, op, splits, true, double)?;
    let key = |m: &MatmulCost| (m.overlapped(), m.total());
    Ok(
        if shared.shared_b.is_some() && shared.fits && key(&shared) < key(&own) {
            shared
        } else {
            own
        },
    )
}

/// Estimated time (ns) of a batchmatmul split; with `share`, B tiles are shared over the
/// ring within each M group where [`may_share_b`] allows it: DRAM moves each B byte once
/// per group instead of once per core, and the loading core forwards it to the `m - 1`
/// others at one ring link's bandwidth, sends back to back.
/// `double` is the compile option: whether time loops may be double-buffered.
pub fn matmul_cost_with(
    c: &Compilation,
    op: &DeviceOp,
    splits: &[usize],
    share: bool,
    double: bool,
) -> Result<MatmulCost, CompileError> {
    let t: &Target = &c.target;
    let eps = op_eps(c, op);
    let ch = chunk_elems(op, eps, splits);
    let nb = op.iteration.len().saturating_sub(3);
    let bc: f64 = ch[..nb].iter().map(|&x| x as f64).product();
    let (mc, nc, kc) = (ch[nb] as f64, ch[nb + 1] as f64, ch[nb + 2] as f64);
    let row_passes = (ch[nb].div_ceil(t.pe_rows.max(1))) as f64;
    let eff = (row_passes / t.fill_row_passes.max(1) as f64)
        .sqrt()
        .clamp(1e-9, 1.0);
    let compute = bc * mc * nc * kc / (t.matmul_macs_per_ns.max(1e-9) * eff);
    let ds =
        |name: &str| -> Result<f64, CompileError> { Ok(dsize(c.ty(name, &op.name)?.dtype) as f64) };
    let (a, b, y) = (&op.inputs[0], &op.inputs[1], &op.outputs[0]);
    let batch_of = |operand: usize, name: &str| -> Result<f64, CompileError> {
        // Batch elements per core this operand really has (1 when broadcast over the batch).
        let shape = &c.ty(name, &op.name)?.shape;
        let acc = access_map(op, operand, shape);
        let lead = shape.len().saturating_sub(2);
        Ok(acc[..lead]
            .iter()
            .flatten()
            .map(|&p| ch[p] as f64)
            .product())
    };
    let ksplit = splits[nb + 2];
    let mut share_of = Share {
        a: batch_of(0, a)? * mc * kc * ds(a)?,
        b: batch_of(1, b)? * kc * nc * ds(b)?,
        c: bc * mc * nc * ds(y)?,
        acc: bc * mc * nc * 4.0,
        rows: ch[nb],
        n_units: ch[nb + 1].div_ceil(eps).max(1),
        k_units: ch[nb + 2].div_ceil(eps).max(1),
        k_split: ksplit > 1,
        b_group: 1.0,
    };
    let shared_b = (share && may_share_b(c, op, splits, &share_of)).then_some(splits[nb]);
    if let Some(g) = shared_b {
        share_of.b_group = g as f64;
    }
    let tr = share_of.traffic(t.scratchpad_capacity_bytes as f64);
    let (mut per_core, b_moved) = (tr.bytes, tr.b_moved);
    let double_buffered = double && tr.double;
    if ksplit > 1
        && tr.cut
        && double_buffered
        && reduction_keeps_pace(t, &share_of, &tr, ksplit, compute)
    {
        // Only the first core of a K group stores the summed slice. Where the time loop
        // double-buffers, and each block's reduction is done before the next block's
        // product, that store overlaps the group's next loads, so each core is charged
        // its 1/k of it (the bytes the machine moves). Otherwise the group waits for the
        // leader's store at every step (or at the single step's end) and the whole slice
        // stays charged to every core (assumption; docs/roofline.md).
        per_core -= share_of.c * (1.0 - 1.0 / ksplit as f64);
    }
    let cores: usize = splits.iter().product();
    let memory = per_core * cores as f64 / t.dram_bytes_per_ns.max(1e-9);
    let ring = match shared_b {
        Some(g) => b_moved * (g - 1) as f64 / t.ring_bytes_per_ns.max(1e-9),
        None => 0.0,
    };
    let psum = if ksplit > 1 {
        chain_reduce_ns(t, ksplit, bc * mc * nc * 4.0)
    } else {
        0.0
    };
    Ok(MatmulCost {
        compute,
        memory,
        psum,
        ring,
        shared_b,
        time_cut: tr.cut,
        fits: tr.fits,
        double_buffered,
        steps: tr.steps,
    })
}

/// Whether a K group's reductions keep pace with its products: each output block's
/// partial, cut into the pieces the pipelined chain sends
/// ([`ktir::reduce::reduce_pipeline_pieces`] on one block's bytes), reaches the leader in no
/// more time than the block's product takes on the PT array. A block too small for many
/// pieces pays most of the chain's length at every step; a K split that deep is bound by
/// its reductions, and its leader's stores no longer hide behind the next loads.
fn reduction_keeps_pace(
    t: &Target,
    share: &Share,
    tr: &Traffic,
    ksplit: usize,
    compute: f64,
) -> bool {
    let blocks = tr.out_blocks.max(1.0);
    chain_reduce_ns(t, ksplit, share.acc / blocks) * blocks <= compute
}

/// Time (ns) for a K group of `ksplit` cores to bring one f32 partial of `partial` bytes to
/// its leader: a chain of `ksplit - 1` hops, the partial cut into pieces
/// ([`ktir::reduce::reduce_pipeline_pieces`], the rule the simulator times with) that move
/// down it concurrently at one ring link's bandwidth, so the last piece lands `ksplit - 2` pieces
/// after one whole partial.
fn chain_reduce_ns(t: &Target, ksplit: usize, partial: f64) -> f64 {
    let hops = (ksplit - 1) as f64;
    let pieces = ktir::reduce::reduce_pipeline_pieces(ksplit as u64 - 1, partial as u64) as f64;
    (1.0 + (hops - 1.0) / pieces) * partial / t.ring_bytes_per_ns.max(1e-9)
}

/// What [`Share::traffic`] finds for one core's share.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Traffic {
    /// DRAM bytes moved, re-reads included, B counted once per sharing group.
    bytes: f64,
    /// B bytes the plan loads per core before sharing (what the ring forwards).
    b_moved: f64,
    /// Whether the share is cut in time.
    cut: bool,
    /// Whether a plan's working set fits (whole, or some time cut).
    fits: bool,
    /// Whether a plan moving as few bytes also fits the second buffers of its streamed
    /// blocks (the lowering double-buffers only among plans moving the same bytes).
    double: bool,
    /// Output blocks (M blocks x N blocks) the plan's time loops visit: a K split reduces
    /// its partial sums once per block.
    out_blocks: f64,
    /// Time steps of the plan (output blocks x K blocks; 1 when the share fits whole). The
    /// lowering may cut more finely to pipeline, never more coarsely.
    steps: f64,
}

/// One core's share of a matmul, in bytes (A, B, C as stored, C as an f32 sum), and the
/// extents its time loops may cut: rows of M, sticks of N and of K.
struct Share {
    a: f64,
    b: f64,
    c: f64,
    acc: f64,
    rows: usize,
    n_units: usize,
    k_units: usize,
    k_split: bool,
    /// Cores sharing each B byte one DRAM read brings (1: not shared).
    b_group: f64,
}

impl Share {
    /// Whether the whole share fits `cap` bytes of scratchpad (read once, no time cut).
    fn fits(&self, cap: f64) -> bool {
        let acc_whole = if self.k_split { self.acc } else { self.c };
        2.0 * (self.a + self.b + acc_whole) <= cap
    }

    /// The DRAM bytes one core moves for its share, re-reads included, under the best time
    /// cut that fits `cap` bytes of scratchpad: the same plans the lowering's time tiling
    /// weighs (M, N and K blocks; without a K loop, A or B may stay resident across the
    /// innermost loop), with the working set estimated as twice each block (a loaded tile
    /// and its reordered copy; the sum and the product). B's bytes count once per
    /// `b_group` cores (shared over the ring). Returns the bytes and the B bytes the plan
    /// loads per core before sharing (what the ring forwards). The search covers
    /// divisors(rows) x divisors(N sticks) x divisors(K sticks) x 3 loop orders, a few
    /// thousand plans at most for any real shape; it runs once per candidate split.
    /// When nothing fits, the finest cut's traffic is returned (the lowering reports it).
    fn traffic(&self, cap: f64) -> Traffic {
        let bg = self.b_group.max(1.0);
        if self.fits(cap) {
            return Traffic {
                bytes: self.a + self.b / bg + self.c,
                b_moved: self.b,
                cut: false,
                fits: true,
                double: false,
                out_blocks: 1.0,
                steps: 1.0,
            };
        }
        // (bytes, B bytes loaded before sharing, output blocks, time steps)
        let mut best: Option<(f64, f64, f64, f64)> = None;
        let mut finest: Option<(f64, f64, f64, f64)> = None;
        // Per fitting plan: its bytes and whether its second buffers fit too.
        let mut fitting: Vec<(f64, bool)> = Vec::new();
        let better = |x: Option<(f64, f64, f64, f64)>, y: (f64, f64, f64, f64)| match x {
            Some(x) if x.0 <= y.0 => x,
            _ => y,
        };
        let (n_cuts, k_cuts) = (divisors(self.n_units), divisors(self.k_units));
        for ms in divisors(self.rows) {
            for &ns in &n_cuts {
                for &ks in &k_cuts {
                    let (m, n, k) = (ms as f64, ns as f64, ks as f64);
                    let acc = if self.k_split || ks > 1 {
                        self.acc
                    } else {
                        self.c
                    };
                    let (a_blk, b_blk) = (self.a / (m * k), self.b / (n * k));
                    // A shared B block is held twice on the loading core: the block it
                    // loads and the one it takes back from the ring.
                    let shared_copy = if bg > 1.0 { b_blk } else { 0.0 };
                    let need = 2.0 * (a_blk + b_blk + acc / (m * n)) + shared_copy;
                    // Double buffering adds a second buffer per streamed block (and, shared,
                    // the next block's loaded copy as well).
                    let need_db = need + a_blk + b_blk + shared_copy;
                    let (blocks, steps) = (m * n, m * n * k);
                    let mut moved = (
                        self.a * n + self.b * m / bg + self.c,
                        self.b * m,
                        blocks,
                        steps,
                    );
                    if ks == 1 {
                        // A resident under an N loop, or B under an M loop.
                        moved = better(
                            Some(moved),
                            (self.a + self.b * m / bg + self.c, self.b * m, blocks, steps),
                        );
                        moved = better(
                            Some(moved),
                            (self.b / bg + self.a * n + self.c, self.b, blocks, steps),
                        );
                    }
                    if need <= cap {
                        best = Some(better(best, moved));
                        fitting.push((moved.0, need_db <= cap));
                    } else {
                        finest = Some(better(finest, moved));
                    }
                }
            }
        }
        let (bytes, b_moved, out_blocks, steps) =
            best.or(finest)
                .unwrap_or((self.a + self.b / bg + self.c, self.b, 1.0, 1.0));
        let double = fitting
            .iter()
            .any(|&(moved, db)| db && moved <= bytes * (1.0 + 1e-9));
        Traffic {
            bytes,
            b_moved,
            cut: true,
            fits: best.is_some(),
            double,
            out_blocks,
            steps,
        }
    }
}

fn divide_one(
    c: &Compilation,
    op: &DeviceOp,
    hint: Option<&Vec<usize>>,
    double: bool,
    done: &[WorkDivision],
    produced: &BTreeMap<&str, (usize, usize)>,
) -> Result<WorkDivision, CompileError> {
    // Dims this op must keep whole, with the reason.
    let fixed: Vec<Option<String>> = if op.kind.is_movement() {
        crate::movement_split::fixed_dims(c, op)?
    } else {
        vec![None; op.iteration.len()]
    }
    .into_iter()
    .zip(unsplittable(c, op))
    .map(|(m, u)| m.or(u.map(str::to_string)))
    .collect();
    let cores = c.target.cores.max(1);
    let eps = op_eps(c, op);
    let u = units(op, eps);
    // Elements per split unit where a dim counted in elements must still be cut in whole
    // sticks (a transpose's input stick dim): a split must leave whole granules per core.
    let gran: Vec<usize> = if op.kind.is_movement() {
        crate::movement_split::split_granule(c, op)
    } else {
        vec![1; u.len()]
    };
    let whole_granules = |d: usize, s: usize| leaves_whole_granules(&u, &gran, d, s);
    let limit = c.target.span_limit_bytes;
    let err = |m: String| CompileError::at(&op.name, m);
    let all: Vec<Vec<usize>> = candidates(&u, cores)
        .into_iter()
        .filter(|s| s.iter().zip(&fixed).all(|(&x, f)| x == 1 || f.is_none()))
        .filter(|s| s.iter().enumerate().all(|(d, &x)| whole_granules(d, x)))
        .collect();
    let fits =
        |s: &[usize]| -> Result<bool, CompileError> { Ok(max_span(c, op, eps, s)?.0 <= limit) };
    // 1. Span reduction.
    let ones = vec![1; u.len()];
    let (span1, worst) = max_span(c, op, eps, &ones)?;
    let mut span_note = String::new();
    let whole: Vec<String> = fixed
        .iter()
        .zip(&op.iteration)
        .zip(&u)
        .filter_map(|((f, d), &n)| Some(format!("{} ({})", d.label, f.as_ref()?)).filter(|_| n > 1))
        .collect();
    if !whole.is_empty() {
        span_note = format!("kept whole: {}; ", whole.join(", "));
    }
    let mut span_min = ones.clone();
    if span1 > limit {
        let mut found = None;
        for s in &all {
            if fits(s)? {
                found = Some(s.clone());
                break;
            }
        }
        match found {
            Some(s) => {
                span_note.push_str(&format!(
                    "span reduction: '{worst}' spans {span1} B > {limit} B per core, needs {}; ",
                    fmt_splits(op, &s)
                ));
                span_min = s;
            }
            None => {
                return Err(err(format!(
                    "tensor '{worst}' spans {span1} B per core, over the {limit} B limit, and no split over {cores} cores brings it under"
                )))
            }
        }
    }
    let is_multiple = |s: &[usize]| s.iter().zip(&span_min).all(|(a, m)| a % m == 0);
    let mut shared_b = None;
    // 2. Hint.
    let (splits, rule) = if let Some(h) = hint {
        if h.len() != u.len() {
            return Err(err(format!(
                "hint has {} splits but {} has {} iteration dims ({})",
                h.len(),
                op.kind,
                u.len(),
                op.iteration
                    .iter()
                    .map(|d| d.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for (i, (&s, &n)) in h.iter().zip(&u).enumerate() {
            let d = &op.iteration[i];
            if let (true, Some(why)) = (s > 1, &fixed[i]) {
                return Err(err(format!(
                    "hint splits dim '{}' by {s}, but it must stay whole: {why}",
                    d.label
                )));
            }
            let unit = if d.in_sticks { "sticks" } else { "elements" };
            if s == 0 || n % s != 0 {
                return Err(err(format!(
                    "hint splits dim '{}' ({n} {unit}) by {s}, which does not divide it evenly",
                    d.label
                )));
            }
            if !whole_granules(i, s) {
                return Err(err(format!(
                    "hint splits dim '{}' ({n} {unit}) by {s}, which does not leave whole sticks of {} elements per core",
                    d.label, gran[i]
                )));
            }
        }
        let p = h
            .iter()
            .try_fold(1usize, |a, &b| a.checked_mul(b))
            .unwrap_or(usize::MAX);
        if p > cores {
            return Err(err(format!(
                "hint uses {p} cores but the target has {cores}"
            )));
        }
        let (sp, t) = max_span(c, op, eps, h)?;
        if sp > limit {
            return Err(err(format!(
                "hint leaves tensor '{t}' spanning {sp} B per core, over the {limit} B limit"
            )));
        }
        let mut rule = format!("{span_note}hint: {}", fmt_splits(op, h));
        // A hint fixes the split; whether B is shared over the ring is still the cost
        // model's choice, as for a split it picks itself. Its estimate is stated, to set
        // beside the simulated time and the cost model's own pick.
        if op.kind.is_matmul() && u.len() >= 3 {
            let m = matmul_own_or_shared(c, op, h, double)?;
            shared_b = m.shared_b;
            rule.push_str(&format!("; estimate {}", describe_matmul(op, h, &m)));
        }
        (h.clone(), rule)
    } else if op.kind.is_matmul() && u.len() >= 3 {
        // 3. Matmul cost model.
        let mut scored = Vec::new();
        for s in all.iter().filter(|s| is_multiple(s)) {
            let m = matmul_own_or_shared(c, op, s, double)?;
            scored.push((m.total(), s.clone(), m));
        }
        // Among equal totals, the split forwarding fewer bytes over the ring (the estimate
        // may hide all of them behind compute, the machine rarely does), then, by the stable
        // sort, fewer cores.
        scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.ring.total_cmp(&b.2.ring)));
        let Some(best) = scored.first().cloned() else {
            return Err(err("no candidate split for the matmul".into()));
        };
        let describe = |x: &(f64, Vec<usize>, MatmulCost)| describe_matmul(op, &x.1, &x.2);
        let mut rule = format!(
            "{span_note}matmul cost model over {} candidates: best {}",
            scored.len(),
            describe(&best)
        );
        if let Some(next) = scored.get(1) {
            rule.push_str(&format!("; next {}", describe(next)));
        }
        if let Some(widest) = scored
            .iter()
            .filter(|x| x.1.iter().product::<usize>() == cores)
            .min_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal))
        {
            if widest.1 != best.1 {
                rule.push_str(&format!("; best on all {cores} cores {}", describe(widest)));
            }
        }
        shared_b = best.2.shared_b;
        (best.1, rule)
    } else {
        // 4. Default.
        let (s, rule) = default_split(c, op, &u, &gran, &fixed, &span_min, &span_note);
        let p: usize = s.iter().product();
        // 5. Follow the producer, where that pays.
        let mut followed = None;
        if matches!(
            op.kind.category(),
            Category::Pointwise | Category::Reduction | Category::RowOp
        ) {
            // A split of the last dim (cutting every row) is followed only where the
            // default cuts it too: the row reductions after an elementwise run (a norm's
            // mean, a softmax's max) need whole rows, so following a producer that cut them
            // only moves the trip through DRAM to the reduction, and splits the fused
            // kernels around it.
            let cuts_rows = |x: &[usize]| x.last().is_some_and(|&n| n > 1);
            for (ii, t) in op.inputs.iter().enumerate() {
                let Some(&(j, out)) = produced.get(t.as_str()) else {
                    continue;
                };
                let Some(f) = follow(c, op, ii, j, out, &done[j], &all)? else {
                    continue;
                };
                if f.iter().product::<usize>() >= p
                    && (!cuts_rows(&f) || cuts_rows(&s))
                    && is_multiple(&f)
                    && fits(&f)?
                {
                    if let Some(pays) = follow_pays(c, op, ii, &f, &s)? {
                        followed = Some((f, t, j, pays));
                        break;
                    }
                }
            }
        }
        match followed {
            Some((f, t, j, (round_trip, extra))) if f != s => {
                let p: usize = f.iter().product();
                let rule = format!(
                    "{span_note}follows {}: {}, each core taking the slice of '{t}' it \
                     produced, so the tensor may stay in the scratchpad (the default, {}, \
                     splits it otherwise: a store and a load, {round_trip} B, against \
                     {extra} B more of the other inputs); {p} of {cores} cores",
                    c.ops[j].name,
                    fmt_splits(op, &f),
                    fmt_splits(op, &s)
                );
                (f, rule)
            }
            _ => (s, rule),
        }
    };
    let cores_used = splits.iter().product();
    let m_first = m_groups_adjacent(op, &splits, shared_b);
    let mut rule = rule;
    if let (Some(_), Some(g)) = (m_first, shared_b) {
        rule.push_str(&format!(
            "; cores laid out M first: each M group of {g} on adjacent cores (a shared B tile \
             crosses one ring link), each K group {g} cores apart"
        ));
    }
    Ok(WorkDivision {
        op: op.name.clone(),
        core_to_slice: core_to_slice_from(op, &splits, m_first),
        splits,
        cores_used,
        rule,
        shared_b,
    })
}

/// Whether splitting dim `d` (of `u[d]` split units) by `s` divides it evenly and leaves
/// every core whole granules of `gran[d]` units.
fn leaves_whole_granules(u: &[usize], gran: &[usize], d: usize, s: usize) -> bool {
    s <= 1 || (u[d] % s == 0 && (u[d] / s) % gran[d].max(1) == 0)
}

/// Rule 4, the default: the non-reduction dims ranked by size in split units (a transpose's
/// stick dims last), each given the largest divisor that fits the cores left, then at most
/// one reduction dim; starting from `span_min`. With the rule's text.
fn default_split(
    c: &Compilation,
    op: &DeviceOp,
    u: &[usize],
    gran: &[usize],
    fixed: &[Option<String>],
    span_min: &[usize],
    span_note: &str,
) -> (Vec<usize>, String) {
    let cores = c.target.cores.max(1);
    let whole_granules = |d: usize, s: usize| leaves_whole_granules(u, gran, d, s);
    let mut s = span_min.to_vec();
    let mut order: Vec<usize> = (0..u.len())
        .filter(|&d| !op.iteration[d].reduction && fixed[d].is_none())
        .collect();
    // The stick dims of a transpose moved in blocks come after the others, so cores
    // left idle by those take its blocks (and a split that needed none stays).
    let crossing = op
        .kind
        .is_movement()
        .then(|| crate::movement_split::stick_crossing(c, op))
        .flatten();
    let late = |d: usize| crossing.is_some_and(|(a, b)| d == a || d == b);
    order.sort_by(|&a, &b| {
        late(a)
            .cmp(&late(b))
            .then((u[b] / gran[b].max(1)).cmp(&(u[a] / gran[a].max(1))))
    });
    let mut reds: Vec<usize> = (0..u.len())
        .filter(|&d| op.iteration[d].reduction && fixed[d].is_none())
        .collect();
    reds.sort_by(|&a, &b| u[b].cmp(&u[a]));
    order.extend(reds.first());
    let mut steps = Vec::new();
    for d in order {
        let used: usize = s.iter().product();
        let room = cores / used.max(1);
        let left = u[d] / s[d].max(1);
        let k = divisors(left)
            .into_iter()
            .filter(|&x| x <= room && whole_granules(d, s[d] * x))
            .max()
            .unwrap_or(1);
        s[d] *= k;
        if k > 1 {
            steps.push(format!(
                "{} ({} {}) -> {}",
                op.iteration[d].label,
                u[d],
                if op.iteration[d].in_sticks {
                    "sticks"
                } else {
                    "elems"
                },
                s[d]
            ));
        }
    }
    let p: usize = s.iter().product();
    let how = if steps.is_empty() {
        "nothing to split".to_string()
    } else {
        steps.join(", ")
    };
    (
        s,
        format!("{span_note}default: {how}; {p} of {cores} cores"),
    )
}

/// The split of `op` under which each core takes, of its input `input`, the slice that
/// op `producer` (whose output `out` it is, divided by `div`) left on that core: the
/// producer's split of each of the tensor's dims, on the op's dim that reads it. `None`
/// when no candidate in `all` gives every core the same slice (a dim the op does not
/// read along is split, the op broadcasts the tensor, or the cores take the slices in
/// another order).
fn follow(
    c: &Compilation,
    op: &DeviceOp,
    input: usize,
    producer: usize,
    out: usize,
    div: &WorkDivision,
    all: &[Vec<usize>],
) -> Result<Option<Vec<usize>>, CompileError> {
    use crate::scratchpad::view;
    let p = &c.ops[producer];
    let shape = &c.layout(&op.inputs[input], &op.name)?.host_shape;
    let Some(theirs) = view(p, div, p.inputs.len() + out, shape) else {
        return Ok(None);
    };
    let Some(per_dim) = theirs.first() else {
        return Ok(None);
    };
    let mut splits = vec![1; op.iteration.len()];
    for (a, &(n, _)) in access_map(op, input, shape).iter().zip(per_dim) {
        match a {
            Some(d) => splits[*d] *= n,
            None if n > 1 => return Ok(None),
            None => {}
        }
    }
    if !all.contains(&splits) {
        return Ok(None);
    }
    let mine = WorkDivision {
        op: op.name.clone(),
        core_to_slice: core_to_slice(op, &splits),
        cores_used: splits.iter().product(),
        splits,
        rule: String::new(),
        shared_b: None,
    };
    Ok((view(op, &mine, input, shape).as_ref() == Some(&theirs)).then_some(mine.splits))
}

/// What taking split `follow` (which keeps input `input` where its producer left it) over
/// the default `default` can save, where it pays: the op's slices under it, inputs and
/// outputs, fit the scratchpad at once (else the kernel is cut in time and the input goes
/// through DRAM all the same), and the extra DRAM bytes its other inputs cost under it (an
/// input broadcast along the followed dim is read whole by every core) are fewer than the
/// input's round trip through DRAM, a store and a load, that it may save. As (the round
/// trip's bytes, the other inputs' extra bytes); `None` where it does not pay.
fn follow_pays(
    c: &Compilation,
    op: &DeviceOp,
    input: usize,
    follow: &[usize],
    default: &[usize],
) -> Result<Option<(u64, i128)>, CompileError> {
    let slice = |operand: usize, name: &str, splits: &[usize]| -> Result<u64, CompileError> {
        let l = c.layout(name, &op.name)?;
        let acc = access_map(op, operand, &l.host_shape);
        Ok(crate::scratchpad::slice_bytes(
            l,
            &acc,
            splits,
            c.target.stick_bytes,
        ))
    };
    let operands: Vec<&String> = op.inputs.iter().chain(&op.outputs).collect();
    let mut working_set = 0u64;
    for (i, t) in operands.iter().enumerate() {
        working_set = working_set.saturating_add(slice(i, t, follow)?);
    }
    if working_set > c.target.scratchpad_capacity_bytes as u64 {
        return Ok(None);
    }
    let bytes = |x: &[usize], slice: u64| x.iter().product::<usize>() as u64 * slice;
    let (mut extra, mut round_trip) = (0i128, 0u64);
    for (i, t) in op.inputs.iter().enumerate() {
        let under_follow = bytes(follow, slice(i, t, follow)?);
        if i == input {
            round_trip = 2 * under_follow;
        } else {
            extra += i128::from(under_follow) - i128::from(bytes(default, slice(i, t, default)?));
        }
    }
    Ok((extra < i128::from(round_trip)).then_some((round_trip, extra)))
}

/// The `work-division` pass: fills `c.divisions` (parallel to `c.ops`).
pub fn run(c: &mut Compilation, options: &Options) -> Result<(), CompileError> {
    for key in options.hints.keys() {
        if !c.ops.iter().any(|o| &o.name == key) {
            let names: Vec<&str> = c.ops.iter().map(|o| o.name.as_str()).collect();
            return Err(CompileError::at(
                key,
                format!(
                    "hint names no device op; device ops are: {}",
                    names.join(", ")
                ),
            ));
        }
    }
    let mut out = Vec::with_capacity(c.ops.len());
    // Each tensor an op computed so far: (op, output position). A view's output is read
    // where its buffer lies, so it has no producer to follow.
    let mut produced: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (i, op) in c.ops.iter().enumerate() {
        out.push(divide_one(
            c,
            op,
            options.hints.get(&op.name),
            options.double_buffer,
            &out,
            &produced,
        )?);
        if !c.is_view_op(i) {
            for (k, t) in op.outputs.iter().enumerate() {
                produced.insert(t.as_str(), (i, k));
            }
        }
    }
    c.divisions = out;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::passes::tests::{graph_of, upto};
    use crate::{compile, Compilation, Target};

    #[test]
    fn a_share_counts_re_reads_only_when_it_does_not_fit() {
        let share = |a: f64, b: f64| super::Share {
            a,
            b,
            c: 1024.0,
            acc: 2048.0,
            rows: 64,
            n_units: 8,
            k_units: 8,
            k_split: false,
            b_group: 1.0,
        };
        // Fits whole: every byte once.
        assert_eq!(
            share(4096.0, 4096.0).traffic(1e6).bytes,
            4096.0 * 2.0 + 1024.0
        );
        // A small, B large: A stays resident while B streams once.
        let big = share(64_000.0, 1_000_000.0);
        assert_eq!(
            big.traffic(400_000.0).bytes,
            64_000.0 + 1_000_000.0 + 1024.0
        );
        // Too small for any cut but the finest: still a finite figure.
        assert!(big.traffic(1.0).bytes.is_finite());
    }

    /// A K group's reductions keep pace with its products only while each output block's
    /// partial is large enough to pipeline down the chain: the same share cut into more,
    /// smaller blocks, or split over a longer chain, stops keeping pace.
    #[test]
    fn a_deep_k_split_with_small_blocks_is_bound_by_its_reductions() {
        let t = Target::spyre32();
        let share = super::Share {
            a: 512.0 * 1024.0,
            b: 4.0 * 1024.0 * 1024.0,
            c: 32.0 * 1024.0 * 1024.0,
            acc: 64.0 * 1024.0 * 1024.0,
            rows: 1024,
            n_units: 128,
            k_units: 2,
            k_split: true,
            b_group: 1.0,
        };
        let traffic = |out_blocks: f64| super::Traffic {
            bytes: 0.0,
            b_moved: 0.0,
            cut: true,
            fits: true,
            double: true,
            out_blocks,
            steps: out_blocks,
        };
        // Compute as long as one whole-partial transfer and a half.
        let compute = 1.5 * share.acc / t.stick_bytes as f64;
        // Few large blocks: every block cut into the full four pieces per hop.
        assert!(super::reduction_keeps_pace(
            &t,
            &share,
            &traffic(4.0),
            4,
            compute
        ));
        // The same share in 2,048 blocks of 32 KiB: one piece each, the whole chain per block.
        assert!(!super::reduction_keeps_pace(
            &t,
            &share,
            &traffic(2048.0),
            4,
            compute
        ));
        // A chain of 31 hops with blocks too small to cut finely.
        assert!(!super::reduction_keeps_pace(
            &t,
            &share,
            &traffic(128.0),
            32,
            compute
        ));
    }

    /// At a long sequence the projection's K group does not span the ring: a K split whose
    /// leader's stores only look cheap while its reductions fall behind is not chosen.
    #[test]
    fn a_long_sequence_projection_keeps_its_k_groups_short() {
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [1, 2048, 4096]}, {"name": "w", "dtype": "f16", "shape": [4096, 14336]}"#,
            "",
            r#"{"name": "mm", "op": "MatMul", "inputs": ["x", "w"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let c = compile(&g, &Target::spyre32(), &upto("work-division")).unwrap();
        let d = &c.divisions[0];
        let k = *d.splits.last().unwrap();
        assert!(k < 32, "K split {k}: {}", d.rule);
    }

    fn exp_on(
        shape: &[usize],
        dtype: &str,
        t: &Target,
    ) -> Result<Compilation, crate::CompileError> {
        let g = graph_of(
            &format!(r#"{{"name": "x", "dtype": "{dtype}", "shape": {shape:?}}}"#),
            "",
            r#"{"name": "e", "op": "Exp", "inputs": ["x"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        compile(&g, t, &upto("work-division"))
    }

    #[test]
    fn pointwise_on_worked_example_uses_14_cores() {
        let c = exp_on(&[3, 70, 130], "f16", &Target::spyre32()).unwrap();
        let d = &c.divisions[0];
        assert_eq!(d.splits, vec![1, 14, 1]);
        assert_eq!(d.cores_used, 14);
        assert_eq!(d.rule, "default: d1 (70 elems) -> 14; 14 of 32 cores");
    }

    /// Every division covers its iteration space exactly once: splits divide the dims (in
    /// sticks where stick-counted), cores = product of splits <= target cores, and the
    /// core-to-slice table hits every slice exactly once.
    #[test]
    fn divisions_cover_the_iteration_space_exactly_once() {
        let shapes: Vec<Vec<usize>> = vec![
            vec![1],
            vec![7],
            vec![4096],
            vec![3, 70, 130],
            vec![128, 130],
            vec![2, 3, 5, 64],
            vec![1, 1, 1],
            vec![96, 1],
            vec![33, 65],
            vec![6, 128, 640],
        ];
        for cores in [1usize, 4, 6, 32] {
            let mut t = Target::spyre32();
            t.cores = cores;
            let mut comps = Vec::new();
            for s in &shapes {
                comps.push(exp_on(s, "f16", &t).unwrap());
                comps.push(exp_on(s, "f32", &t).unwrap());
            }
            for (m, k, n, b) in [
                (128, 100, 130, 0),
                (1, 64, 4096, 0),
                (4096, 64, 64, 0),
                (32, 64, 256, 4),
                (7, 3, 5, 2),
            ] {
                let a = if b > 0 {
                    format!("[{b}, {m}, {k}]")
                } else {
                    format!("[{m}, {k}]")
                };
                let g = graph_of(
                    &format!(
                        r#"{{"name": "a", "dtype": "f16", "shape": {a}}}, {{"name": "b", "dtype": "f16", "shape": [{k}, {n}]}}"#
                    ),
                    "",
                    r#"{"name": "mm", "op": "MatMul", "inputs": ["a", "b"], "outputs": ["y"]}"#,
                    r#""y""#,
                );
                comps.push(compile(&g, &t, &upto("work-division")).unwrap());
            }
            for c in &comps {
                for (op, d) in c.ops.iter().zip(&c.divisions) {
                    let u = super::units(op, super::op_eps(c, op));
                    assert_eq!(d.splits.len(), u.len());
                    for (s, n) in d.splits.iter().zip(&u) {
                        assert!(*s >= 1 && n % s == 0, "{}: split {s} of {n}", op.name);
                    }
                    let p: usize = d.splits.iter().product();
                    assert_eq!(d.cores_used, p);
                    assert!(p <= cores);
                    assert_eq!(d.core_to_slice.len(), p);
                    let mut seen = std::collections::BTreeSet::new();
                    for sl in &d.core_to_slice {
                        for (i, s) in sl.iter().zip(&d.splits) {
                            assert!(i < s);
                        }
                        assert!(seen.insert(sl.clone()), "slice {sl:?} on two cores");
                    }
                }
            }
        }
    }

    #[test]
    fn matmul_k_split_collaborators_are_adjacent() {
        let mut o = upto("work-division");
        o.hints.insert("matmul".into(), vec![2, 1, 2]);
        let c = compile(
            &crate::passes::tests::example("matmul_add.json"),
            &Target::spyre32(),
            &o,
        )
        .unwrap();
        // in (K) varies fastest: cores 0 and 1 share a row block.
        assert_eq!(
            c.divisions[0].core_to_slice,
            vec![vec![0, 0, 0], vec![0, 0, 1], vec![1, 0, 0], vec![1, 0, 1]]
        );
        let (_, _, psum) = super::matmul_cost(&c, &c.ops[0], &[2, 1, 2]).unwrap();
        assert!(psum > 0.0);
    }

    #[test]
    fn a_shared_b_with_k_split_puts_each_m_group_on_adjacent_cores() {
        // [32, 1024] @ [1024, 512] on tiny4, split mb=2 in=2: B is shared within each M
        // group, so the two cores of an M group sit side by side (a shared tile crosses one
        // link) and each K group's two cores are two apart.
        let g = graph_of(
            r#"{"name": "a", "dtype": "f16", "shape": [32, 1024]}"#,
            r#"{"name": "w", "dtype": "f16", "shape": [1024, 512], "init": "zeros"}"#,
            r#"{"name": "mm", "op": "MatMul", "inputs": ["a", "w"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let mut t = Target::spyre32();
        t.cores = 4;
        t.scratchpad_capacity_bytes = 65536;
        let mut o = upto("work-division");
        o.hints.insert("mm".into(), vec![2, 1, 2]);
        let c = compile(&g, &t, &o).unwrap();
        let d = &c.divisions[0];
        assert_eq!(d.shared_b, Some(2), "{}", d.rule);
        assert_eq!(
            d.core_to_slice,
            vec![vec![0, 0, 0], vec![1, 0, 0], vec![0, 0, 1], vec![1, 0, 1]]
        );
        // Without the share, K groups stay on adjacent cores.
        assert_eq!(
            super::core_to_slice(&c.ops[0], &[2, 1, 2]),
            vec![vec![0, 0, 0], vec![0, 0, 1], vec![1, 0, 0], vec![1, 0, 1]]
        );
    }

    /// A matmul estimate with the given parts, cut into `steps` double-buffered steps.
    fn estimate(compute: f64, memory: f64, ring: f64, steps: f64) -> super::MatmulCost {
        super::MatmulCost {
            compute,
            memory,
            psum: 0.0,
            ring,
            shared_b: Some(4),
            time_cut: steps > 1.0,
            fits: true,
            double_buffered: true,
            steps,
        }
    }

    #[test]
    fn the_ring_counts_only_where_compute_cannot_cover_it() {
        // Compute as long as memory, many steps: only the first step's forward counts.
        let hidden = estimate(1000.0, 1000.0, 640.0, 64.0);
        assert_eq!(hidden.ring_exposed(), 10.0);
        assert_eq!(hidden.total(), 2010.0);
        // Bound by memory: the share of the ring that compute does not cover counts.
        let bound = estimate(250.0, 1000.0, 640.0, 64.0);
        assert_eq!(bound.ring_exposed(), 480.0);
        // One step: the members wait for the whole forward.
        let whole = estimate(1000.0, 1000.0, 640.0, 1.0);
        assert_eq!(whole.ring_exposed(), 640.0);
        // Never less than the loader's own DMA work: its loads and its sends.
        let sends = estimate(1000.0, 100.0, 5000.0, 64.0);
        assert_eq!(sends.total(), 5100.0);
    }

    #[test]
    fn the_4096_cube_matmul_shares_b_within_m_groups() {
        // The roofline sweep's 4096^3 fp16 matmul on spyre32: every core reading its own B
        // reads twice the unique bytes; B shared within M groups, with a block of A resident,
        // reads each byte about once and runs nearest the compute bound in the simulator.
        let g = graph_of(
            r#"{"name": "a", "dtype": "f16", "shape": [4096, 4096]}"#,
            r#"{"name": "w", "dtype": "f16", "shape": [4096, 4096], "init": "zeros"}"#,
            r#"{"name": "mm", "op": "MatMul", "inputs": ["a", "w"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let c = compile(&g, &Target::spyre32(), &upto("work-division")).unwrap();
        let d = &c.divisions[0];
        assert_eq!(d.cores_used, 32, "{}", d.rule);
        assert!(d.splits[0] >= 4, "{}", d.rule);
        assert_eq!(d.shared_b, Some(d.splits[0]), "{}", d.rule);
    }

    /// Attention scores `q @ k^T` over 32 heads, scaled, then a row max: the graph of
    /// `spyre32`'s attention at sequence `seq`, up to `pass`.
    fn scores_then_scale(seq: usize, pass: &str) -> Compilation {
        let g = graph_of(
            &format!(
                r#"{{"name": "q", "dtype": "f16", "shape": [1, 32, {seq}, 128]}},
                   {{"name": "kt", "dtype": "f16", "shape": [1, 32, 128, {seq}]}}"#
            ),
            r#"{"name": "scale", "dtype": "f16", "shape": [], "init": "ones"}"#,
            r#"{"name": "mm", "op": "MatMul", "inputs": ["q", "kt"], "outputs": ["s"]},
               {"name": "mul", "op": "Mul", "inputs": ["s", "scale"], "outputs": ["z"]},
               {"name": "max", "op": "ReduceMax", "inputs": ["z"], "outputs": ["m"],
                "attrs": {"axes": [-1], "keepdims": 1}}"#,
            r#""m""#,
        );
        compile(&g, &Target::spyre32(), &upto(pass)).unwrap()
    }

    #[test]
    fn an_elementwise_op_takes_the_heads_its_producer_left_on_each_core() {
        // The scores are split by head; the default would split the scale's rows, and
        // the scores would go out to DRAM and back between the two kernels.
        let c = scores_then_scale(512, "scratchpad");
        let (mm, mul) = (&c.divisions[0], &c.divisions[1]);
        assert_eq!(mm.splits[..2], [1, 32], "{}", mm.rule);
        assert_eq!(mul.splits, vec![1, 32, 1, 1], "{}", mul.rule);
        assert_eq!(
            mul.core_to_slice,
            mm.core_to_slice
                .iter()
                .map(|s| s[..4].to_vec())
                .collect::<Vec<_>>()
        );
        assert!(mul.rule.starts_with("follows mm: "), "{}", mul.rule);
        assert!(
            mul.rule.contains(
                "(the default, d0=1 d1=1 d2=32 d3=1, splits it otherwise: a store and a load, \
                 33554432 B, against 0 B more of the other inputs)"
            ),
            "{}",
            mul.rule
        );
        // The row max follows the scale in turn: whole rows, one head per core.
        assert_eq!(
            c.divisions[2].splits[..2],
            [1, 32],
            "{}",
            c.divisions[2].rule
        );
        assert!(
            matches!(
                c.placements.get("s"),
                Some(crate::Placement::Scratchpad { .. })
            ),
            "{:?}",
            c.placements.get("s")
        );
    }

    #[test]
    fn a_producer_is_not_followed_where_its_slices_do_not_fit() {
        // At 1024 keys one head of scores is 2 MiB, more than a core's scratchpad: the
        // scale's kernel is cut in time under either split, so the default stays.
        let c = scores_then_scale(1024, "work-division");
        let mul = &c.divisions[1];
        assert_eq!(
            c.divisions[0].splits[..2],
            [1, 32],
            "{}",
            c.divisions[0].rule
        );
        assert!(mul.rule.starts_with("default: "), "{}", mul.rule);
    }

    #[test]
    fn a_producer_that_cuts_rows_is_not_followed() {
        // A projection split over its output columns on every core (a hint; K of one
        // stick): the residual add after it keeps the default's whole rows, which a norm's
        // mean after it would need.
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [128, 64]},
               {"name": "h", "dtype": "f16", "shape": [128, 4096]}"#,
            r#"{"name": "w", "dtype": "f16", "shape": [64, 4096], "init": "zeros"}"#,
            r#"{"name": "mm", "op": "MatMul", "inputs": ["x", "w"], "outputs": ["y"]},
               {"name": "res", "op": "Add", "inputs": ["y", "h"], "outputs": ["r"]}"#,
            r#""r""#,
        );
        let mut options = upto("work-division");
        options.hints.insert("mm".into(), vec![4, 8, 1]);
        let c = compile(&g, &Target::spyre32(), &options).unwrap();
        let (mm, res) = (&c.divisions[0], &c.divisions[1]);
        assert_eq!(mm.splits, vec![4, 8, 1], "{}", mm.rule);
        assert_eq!(res.splits.last(), Some(&1), "{}", res.rule);
        assert!(res.rule.starts_with("default: "), "{}", res.rule);
    }

    #[test]
    fn a_hinted_split_still_shares_b_where_the_cost_model_would() {
        // tiny4's figures, on which the cost model picks matmul_add's mb=4 split with B
        // shared over the ring.
        let t = Target {
            cores: 4,
            scratchpad_capacity_bytes: 65536,
            matmul_macs_per_ns: 64.0,
            dram_bytes_per_ns: 32.0,
            ring_bytes_per_ns: 32.0,
            pe_rows: 8,
            fill_row_passes: 2,
            ..Target::spyre32()
        };
        let g = crate::passes::tests::example("matmul_add.json");
        let picked = compile(&g, &t, &upto("work-division")).unwrap();
        assert!(
            picked.divisions[0]
                .rule
                .contains("best mb=4 out=1 in=1 (4 cores): compute 12288.0 + memory 5632.0 + partial sums 0.0 + B shared by 4 over the ring"),
            "{}",
            picked.divisions[0].rule
        );
        // The same split given as a hint shares B the same way.
        let mut o = upto("work-division");
        o.hints.insert("matmul".into(), vec![4, 1, 1]);
        let hinted = compile(&g, &t, &o).unwrap();
        let d = &hinted.divisions[0];
        assert_eq!(d.splits, vec![4, 1, 1]);
        assert_eq!(d.shared_b, Some(4));
        assert_eq!(
            d.rule,
            "hint: mb=4 out=1 in=1; estimate mb=4 out=1 in=1 (4 cores): compute 12288.0 + memory 5632.0 + partial sums 0.0 + B shared by 4 over the ring 9216.0 (1536.0 of it beyond compute) = 19456.0 ns"
        );
        // A split that leaves M whole has no M group to share with.
        let mut o = upto("work-division");
        o.hints.insert("matmul".into(), vec![1, 1, 2]);
        let whole_m = compile(&g, &t, &o).unwrap();
        assert_eq!(whole_m.divisions[0].shared_b, None);
        assert!(
            whole_m.divisions[0]
                .rule
                .starts_with("hint: mb=1 out=1 in=2; estimate mb=1 out=1 in=2 (2 cores): compute "),
            "{}",
            whole_m.divisions[0].rule
        );
        assert!(!whole_m.divisions[0].rule.contains("shared"));
    }

    #[test]
    fn span_reduction_splits_oversized_tensors() {
        let mut t = Target::spyre32();
        t.span_limit_bytes = 16 * 1024; // the [256, 256] f16 tensor spans 128 KiB
        t.cores = 32;
        let c = exp_on(&[256, 256], "f16", &t).unwrap();
        let d = &c.divisions[0];
        assert!(
            d.rule.starts_with(
                "span reduction: 'x' spans 131072 B > 16384 B per core, needs d0=2 d1=4; "
            ),
            "{}",
            d.rule
        );
        // The rows sit inside the stick columns ([4 sticks, 256 rows, 64]), so the outermost
        // device dim (d1, the sticks) must be split; the default rule then fills the cores.
        assert_eq!(d.splits, vec![8, 4]);
        t.span_limit_bytes = 64;
        let e = exp_on(&[256, 256], "f16", &t).unwrap_err();
        assert_eq!(e.node.as_deref(), Some("e"));
        assert!(
            e.message.contains("no split over 32 cores brings it under"),
            "{e}"
        );
    }

    #[test]
    fn operands_of_other_widths_keep_the_stick_dim_whole() {
        // An fp16 select on a bool mask: the default would split the 4 sticks of the rows
        // over the cores the 4 rows leave idle; the mask's 128-lane sticks forbid it.
        let g = graph_of(
            r#"{"name": "c", "dtype": "bool", "shape": [4, 256]}, {"name": "a", "dtype": "f16", "shape": [4, 256]}"#,
            "",
            r#"{"name": "sel", "op": "Where", "inputs": ["c", "a", "a"], "outputs": ["y"]},
               {"name": "e", "op": "Exp", "inputs": ["a"], "outputs": ["z"]}"#,
            r#""y", "z""#,
        );
        let c = compile(&g, &Target::spyre32(), &upto("work-division")).unwrap();
        assert_eq!(c.divisions[0].splits, vec![4, 1]);
        assert_eq!(
            super::unsplittable(&c, &c.ops[0]),
            vec![
                None,
                Some("its operands' sticks hold different numbers of elements")
            ]
        );
        // One width throughout: the sticks are split too.
        assert_eq!(c.divisions[1].splits, vec![4, 4]);
    }

    #[test]
    fn reductions_keep_their_rows_whole() {
        // 4 rows of 16 sticks: the rows take 4 cores and the reduction is not split (no
        // kernel but the matmul's combines partial results).
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [4, 1024]}"#,
            "",
            r#"{"name": "sm", "op": "Softmax", "inputs": ["x"], "outputs": ["y"], "attrs": {"axis": -1}}"#,
            r#""y""#,
        );
        let c = compile(&g, &Target::spyre32(), &upto("work-division")).unwrap();
        assert_eq!(c.ops[0].kind.name(), "max");
        assert_eq!(c.divisions[0].splits, vec![4, 1]);
        // The pointwise steps split the sticks, the larger dim, first.
        assert_eq!(c.divisions[1].splits, vec![2, 16]);
        let mut o = upto("work-division");
        o.hints.insert("sm/max".into(), vec![1, 2]);
        let e = compile(&g, &Target::spyre32(), &o).unwrap_err();
        assert_eq!(e.node.as_deref(), Some("sm/max"));
        assert_eq!(
            e.message,
            "hint splits dim 'd1' by 2, but it must stay whole: its kernel does not combine partial results across cores"
        );
    }
}
