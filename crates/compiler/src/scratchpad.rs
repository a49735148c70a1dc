//! The `scratchpad` pass: where every tensor lives.
//!
//! - **Candidates** for the scratchpad (LX) are intermediates produced by compute ops
//!   (pointwise, reductions, row ops such as topk, and batchmatmul without a K split), and
//!   by slices and concats that split no axis they cut or join, so every core writes
//!   what it read ([`crate::movement_split::keeps_core_slices`]). Graph
//!   inputs, initializers and outputs stay in DRAM; so do restickify results (a DRAM-to-DRAM
//!   movement), K-split partial sums, and any buffer whose producer and consumers disagree on
//!   which core holds which slice (including a consumer that replicates it over cores).
//! - **Size charged** is the per-core slice: `stick_bytes` x the per-core extents of all
//!   device dims but the last, 128-byte aligned.
//! - **Liveness** is `[producer index, last consumer index + 1)` in op order; nothing is
//!   evicted.
//! - **Allocators**: greedy (an in-place op — exp, sub, add, rsqrt — whose input dies at it
//!   and has the same slice takes that input's slot; otherwise the lowest gap), first-fit (the
//!   lowest gap, no in-place reuse), best-fit (the smallest gap, no in-place reuse). A buffer
//!   that fits nowhere within `scratchpad_capacity_bytes` goes to DRAM, with the reason.
//! - **DRAM**: inputs, initializers and outputs first, at 128-byte aligned offsets; then the
//!   DRAM intermediates from a first-fit free list that reuses space by live range.

use crate::layout::Layout;
use crate::ops::{access_map, Binary, Category, DeviceOp, DeviceOpKind, Unary};
use crate::workdiv::WorkDivision;
use crate::{Allocator, Compilation, CompileError};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Where a tensor lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Placement {
    /// Device DRAM, whole tensor, at this byte offset.
    Dram { offset: u64 },
    /// Every used core's scratchpad at this byte offset, holding its slice.
    Scratchpad { offset: u64, bytes_per_core: u64 },
}

const ALIGN: u64 = 128;

fn align(x: u64) -> u64 {
    x.div_ceil(ALIGN).saturating_mul(ALIGN)
}

/// One intermediate buffer in the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Buffer {
    pub tensor: String,
    /// Producer op index.
    pub start: usize,
    /// Last consumer index + 1.
    pub end: usize,
    pub bytes_per_core: u64,
    /// Scratchpad offset when placed there.
    pub offset: Option<u64>,
    /// The buffer whose slot this one took over (in-place).
    pub in_place_of: Option<String>,
    /// Why it is in DRAM, when it is.
    pub dram_reason: Option<String>,
}

/// The scratchpad plan: intermediates in op order, then DRAM placements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScratchpadPlan {
    pub allocator: String,
    pub capacity_bytes: u64,
    pub peak_bytes: u64,
    pub buffers: Vec<Buffer>,
    /// (tensor, offset, bytes), fixed region then intermediates.
    pub dram: Vec<(String, u64, u64)>,
    pub dram_bytes: u64,
}

/// Per core: (split, slice index) per tensor dim; `None` when the op replicates the tensor
/// over cores (splits a dim the tensor does not have).
pub(crate) type View = Option<Vec<Vec<(usize, usize)>>>;

/// Which slice of operand `operand` (of host shape `shape`) each core of `div` takes; a
/// tensor stays in the scratchpad between two ops only where both take the same.
pub(crate) fn view(op: &DeviceOp, div: &WorkDivision, operand: usize, shape: &[usize]) -> View {
    let acc = access_map(op, operand, shape);
    let used: Vec<usize> = acc.iter().flatten().copied().collect();
    if (0..div.splits.len()).any(|d| div.splits[d] > 1 && !used.contains(&d)) {
        return None;
    }
    Some(
        div.core_to_slice
            .iter()
            .map(|sl| {
                acc.iter()
                    .map(|a| match a {
                        Some(d) => (div.splits[*d], sl[*d]),
                        None => (1, 0),
                    })
                    .collect()
            })
            .collect(),
    )
}

/// Bytes of one core's slice of a tensor under a division.
pub fn slice_bytes(
    layout: &Layout,
    acc: &[Option<usize>],
    splits: &[usize],
    stick_bytes: usize,
) -> u64 {
    let n = layout.device_size.len();
    let mut sticks = 1u64;
    for j in 0..n.saturating_sub(1) {
        let s = layout
            .host_dim_of_device_dim
            .get(j)
            .copied()
            .flatten()
            .and_then(|h| acc.get(h).copied().flatten())
            .and_then(|d| splits.get(d).copied())
            .unwrap_or(1)
            .max(1);
        sticks = sticks.saturating_mul(layout.device_size[j].div_ceil(s) as u64);
    }
    align(sticks.saturating_mul(stick_bytes as u64))
}

const IN_PLACE: &[DeviceOpKind] = &[
    DeviceOpKind::Unary(Unary::Exp),
    DeviceOpKind::Binary(Binary::Sub),
    DeviceOpKind::Binary(Binary::Add),
    DeviceOpKind::Unary(Unary::Rsqrt),
];

/// Plans placements without changing the compilation.
pub fn plan(
    c: &Compilation,
    allocator: Allocator,
    epilogue: &BTreeMap<String, String>,
) -> Result<ScratchpadPlan, CompileError> {
    let cap = c.target.scratchpad_capacity_bytes as u64;
    let mut producer: BTreeMap<&str, usize> = BTreeMap::new();
    let mut last_use: BTreeMap<&str, usize> = BTreeMap::new();
    // Every read of a tensor as (op, input position), in op order: looked up per buffer
    // rather than scanning every op for each one.
    let mut reads: BTreeMap<&str, Vec<(usize, usize)>> = BTreeMap::new();
    for (i, op) in c.ops.iter().enumerate() {
        // A view's reshape moves nothing: its readers read the buffer it shares.
        if c.is_view_op(i) {
            continue;
        }
        for o in &op.outputs {
            producer.insert(o, i);
        }
        for (ii, t) in op.inputs.iter().enumerate() {
            let t = c.buffer_of(t);
            last_use.insert(t, i);
            reads.entry(t).or_default().push((i, ii));
        }
    }
    // Each buffer a view shares, with the first view of it.
    let mut viewed: BTreeMap<&str, &str> = BTreeMap::new();
    for (y, x) in &c.views {
        viewed.entry(x.as_str()).or_insert(y.as_str());
    }
    let interface: BTreeSet<&str> = c
        .graph
        .outputs
        .iter()
        .map(String::as_str)
        .chain(c.graph.inputs.iter().map(|v| v.name.as_str()))
        .chain(c.graph.initializers.iter().map(|v| v.name.as_str()))
        .collect();
    // Intermediates, in producer order.
    let mut bufs: Vec<Buffer> = Vec::new();
    for (i, op) in c.ops.iter().enumerate() {
        if c.is_view_op(i) {
            continue;
        }
        let div = c
            .divisions
            .get(i)
            .ok_or_else(|| CompileError::at(&op.name, "no work division for this op"))?;
        for (k, o) in op.outputs.iter().enumerate() {
            if interface.contains(o.as_str()) {
                continue;
            }
            let l = c.layout(o, &op.name)?;
            let oi = op.inputs.len() + k;
            let acc = access_map(op, oi, &l.host_shape);
            let bytes = slice_bytes(l, &acc, &div.splits, c.target.stick_bytes);
            let end = last_use.get(o.as_str()).map(|&u| u + 1).unwrap_or(i + 1);
            let mut reason = epilogue
                .get(o.as_str())
                .map(|m| {
                    format!(
                        "the epilogue fused into '{m}' reads or writes it, on the matmul's cores"
                    )
                })
                .or_else(|| {
                    viewed
                        .get(o.as_str())
                        .map(|y| format!("'{y}' is a view of it, read where it lies"))
                });
            let is_compute = match op.kind.category() {
                Category::Matmul | Category::Pointwise | Category::Reduction | Category::RowOp => {
                    true
                }
                Category::Movement => crate::movement_split::keeps_core_slices(c, op, &div.splits),
            };
            if reason.is_none() && !is_compute {
                reason = Some(format!("{} output", op.kind));
            } else if reason.is_none() {
                let pv = view(op, div, oi, &l.host_shape);
                if pv.is_none() {
                    reason = Some("partial sums of a split reduction".to_string());
                }
                for &(j, ii) in reads.get(o.as_str()).map(Vec::as_slice).unwrap_or(&[]) {
                    if reason.is_some() {
                        break;
                    }
                    let user = &c.ops[j];
                    let uv = c
                        .divisions
                        .get(j)
                        .and_then(|ud| view(user, ud, ii, &l.host_shape));
                    if uv != pv {
                        reason = Some(format!(
                            "'{}' splits it differently from its producer",
                            user.name
                        ));
                    }
                }
            }
            bufs.push(Buffer {
                tensor: o.clone(),
                start: i,
                end,
                bytes_per_core: bytes,
                offset: None,
                in_place_of: None,
                dram_reason: reason,
            });
        }
    }
    // Scratchpad allocation.
    let mut live: Vec<usize> = Vec::new(); // indices into bufs, placed in LX
    let mut peak = 0u64;
    for b in 0..bufs.len() {
        if bufs[b].dram_reason.is_some() {
            continue;
        }
        let start = bufs[b].start;
        let need = bufs[b].bytes_per_core;
        // In-place: the op producing b, if in-place capable, may take a dying input's slot.
        if allocator == Allocator::Greedy && IN_PLACE.contains(&c.ops[start].kind) {
            let parent = live.iter().position(|&p| {
                bufs[p].end == start + 1
                    && bufs[p].bytes_per_core == need
                    && c.ops[start].inputs.contains(&bufs[p].tensor)
                    && c.layouts.get(&bufs[p].tensor) == c.layouts.get(&bufs[b].tensor)
            });
            if let Some(pi) = parent {
                let p = live.remove(pi);
                bufs[b].offset = bufs[p].offset;
                bufs[b].in_place_of = Some(bufs[p].tensor.clone());
                live.push(b);
                continue;
            }
        }
        live.retain(|&p| bufs[p].end > start);
        let mut taken: Vec<(u64, u64)> = live
            .iter()
            .filter_map(|&p| bufs[p].offset.map(|o| (o, o + bufs[p].bytes_per_core)))
            .collect();
        taken.sort();
        let mut gaps = Vec::new();
        let mut cursor = 0u64;
        for (s, e) in &taken {
            if *s > cursor {
                gaps.push((cursor, s - cursor));
            }
            cursor = cursor.max(*e);
        }
        if cap > cursor {
            gaps.push((cursor, cap - cursor));
        }
        let fitting = gaps.iter().filter(|g| g.1 >= need);
        let chosen = match allocator {
            Allocator::BestFit => fitting.min_by_key(|g| (g.1, g.0)).copied(),
            _ => fitting.min_by_key(|g| g.0).copied(),
        };
        match chosen {
            Some((off, _)) => {
                bufs[b].offset = Some(off);
                peak = peak.max(off + need);
                live.push(b);
            }
            None => {
                let largest = gaps.iter().map(|g| g.1).max().unwrap_or(0);
                bufs[b].dram_reason = Some(format!(
                    "does not fit: needs {need} B per core, largest free gap {largest} B of {cap} B"
                ));
            }
        }
    }
    // DRAM: fixed region, then intermediates by live range.
    let mut dram = Vec::new();
    let mut cursor = 0u64;
    let mut fixed: Vec<String> = Vec::new();
    for name in c
        .graph
        .inputs
        .iter()
        .map(|v| &v.name)
        .chain(c.graph.initializers.iter().map(|i| &i.name))
        .chain(c.graph.outputs.iter())
    {
        if c.layouts.contains_key(name) && !fixed.contains(name) {
            fixed.push(name.clone());
        }
    }
    for name in &fixed {
        let bytes = c.layouts[name].device_bytes;
        dram.push((name.clone(), cursor, bytes));
        cursor = cursor.saturating_add(align(bytes));
    }
    let base = cursor;
    let mut dlive: Vec<(u64, u64, usize)> = Vec::new(); // (offset, bytes, end)
    let mut top = base;
    for b in bufs.iter().filter(|b| b.dram_reason.is_some()) {
        let bytes = align(
            c.layouts
                .get(&b.tensor)
                .map(|l| l.device_bytes)
                .unwrap_or(0),
        );
        dlive.retain(|x| x.2 > b.start);
        dlive.sort();
        let mut off = base;
        for (o, sz, _) in &dlive {
            if *o >= off.saturating_add(bytes) {
                break;
            }
            off = off.max(o.saturating_add(align(*sz)));
        }
        dlive.push((off, bytes, b.end));
        top = top.max(off.saturating_add(bytes));
        dram.push((b.tensor.clone(), off, bytes));
    }
    // Views take the offset of the buffer they share.
    let offsets: BTreeMap<&str, u64> = dram.iter().map(|(t, o, _)| (t.as_str(), *o)).collect();
    let mut shared = Vec::new();
    for (y, x) in &c.views {
        let (Some(&off), Some(l)) = (offsets.get(x.as_str()), c.layouts.get(y)) else {
            return Err(CompileError::new(
                format!("view '{y}' of '{x}': '{x}' has no DRAM buffer"),
                None,
            ));
        };
        shared.push((y.clone(), off, l.device_bytes));
    }
    dram.extend(shared);
    Ok(ScratchpadPlan {
        allocator: allocator.name().to_string(),
        capacity_bytes: cap,
        peak_bytes: peak,
        buffers: bufs,
        dram,
        dram_bytes: top,
    })
}

/// The `scratchpad` pass: fills `c.placements`.
/// Plans every tensor's place and records it in `c.placements`. The tensors in
/// `epilogue` (each with the matmul whose fused epilogue reads or writes it) stay in DRAM.
pub fn run(
    c: &mut Compilation,
    allocator: Allocator,
    epilogue: &BTreeMap<String, String>,
) -> Result<ScratchpadPlan, CompileError> {
    let p = plan(c, allocator, epilogue)?;
    let mut placements = BTreeMap::new();
    for (t, off, _) in &p.dram {
        placements.insert(t.clone(), Placement::Dram { offset: *off });
    }
    for b in &p.buffers {
        if let Some(off) = b.offset {
            placements.insert(
                b.tensor.clone(),
                Placement::Scratchpad {
                    offset: off,
                    bytes_per_core: b.bytes_per_core,
                },
            );
        }
    }
    c.placements = placements;
    Ok(p)
}
