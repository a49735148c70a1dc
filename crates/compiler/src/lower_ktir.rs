//! The `ktir` pass: lowers each planned device op to one KTIR kernel (`func.func`).
//!
//! Every kernel works on DRAM tensors in their device (stick) layout: one memory view per
//! tensor with the layout's device sizes, one access tile per tensor covering exactly the
//! slice the work division gives the executing core, explicit loads and stores, and compute
//! in linalg/arith/math on the loaded tiles. The grid is the op's core count; a core finds
//! its slice from `ktdp.get_compute_tile_id` with the same core-to-slice order the work
//! division recorded.
//!
//! Elementwise ops compute directly on tiles in the output's device order (operands are
//! transposed and broadcast to it); matmuls reorder their tiles to host order (`[M, K]`,
//! `[K, N]`), collapse sticks into rows, multiply, and reorder the result back.
//!
//! Reductions slice the stick padding away before combining; K-split matmuls combine
//! their partial sums with `ktdp.inter_tile_reduce` and one leader core stores the result.
//! An M or K of 1 takes no part in a layout; the matmul puts it back as a unit dim.
//! A kernel whose tiles do not fit the core's scratchpad budget loops over blocks of its
//! slice in time (`tiling`); one that fits is emitted without a loop.
//! Movement kernels live in [`movement`]; elementwise ops whose operands differ in element
//! type (conversions, comparisons, select) in `convert`; the `topk` row kernel in `topk`.

use crate::ops::{access_map, DeviceOp, DeviceOpKind, Movement, Reduction, Unary};
use crate::workdiv::{chunk_elems, op_eps};
use crate::{Compilation, CompileError, Layout, Placement};
use graph::DType;
use ktir::build::{self, access_tile_type, box_set, identity_map, tensor, Builder, Subscript};
use ktir::{ElementwiseOp, Literal, MemorySpace, ScalarType, Type, Value};
use std::collections::BTreeMap;

mod convert;
mod double_buffer;
mod epilogue;
mod fuse;
mod matmul;
mod movement;
mod tiling;
mod topk;

pub(crate) use epilogue::epilogue_fits;
pub(crate) use fuse::{fused_fits, time_tiled};
pub(crate) use tiling::{planned_live_bytes, Recipes};
pub use tiling::{scratchpad_use, KernelUse};

/// One kernel of the lowered module and the tensors its `index` arguments point at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// The function's symbol name.
    pub func: String,
    /// The device op it implements (a fused kernel: the fusion group's name).
    pub op: String,
    /// Tensor names, in argument order (inputs, then outputs).
    pub args: Vec<String>,
    /// Indices in `c.ops` of the device ops it runs: one, or a fusion group's members.
    pub ops: std::ops::Range<usize>,
}

/// The kernel of device op `i` on its own.
fn single_kernel(c: &Compilation, i: usize, op: &DeviceOp) -> Kernel {
    Kernel {
        func: format!("k{i}_{}", ident(&op.name)),
        op: op.name.clone(),
        args: kernel_args(c, std::slice::from_ref(op)),
        ops: i..i + 1,
    }
}

/// The DRAM tensors a run of ops reads or writes, in order of first use.
fn kernel_args(c: &Compilation, ops: &[DeviceOp]) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    for op in ops {
        for t in op.inputs.iter().chain(&op.outputs) {
            if scratchpad_offset(c, t).is_none() && !args.contains(t) {
                args.push(t.clone());
            }
        }
    }
    args
}

/// The kernels of a compilation, in launch order: one per device op, except that each
/// fusion group ([`Compilation::fusion`]) is one kernel and a reshape whose output is a
/// view ([`Compilation::views`]) has none. Tensors the scratchpad plan keeps
/// in the cores' scratchpads are not arguments: kernels address them at their planned
/// offsets.
pub fn kernels(c: &Compilation) -> Vec<Kernel> {
    let groups: BTreeMap<usize, &crate::fusion::FusionGroup> =
        c.fusion.iter().map(|g| (g.first, g)).collect();
    let mut out = Vec::with_capacity(c.ops.len());
    let mut i = 0;
    while i < c.ops.len() {
        match groups.get(&i) {
            Some(g) if g.len > 1 && g.first + g.len <= c.ops.len() => {
                out.push(Kernel {
                    func: format!("k{i}_{}", ident(&g.name)),
                    op: g.name.clone(),
                    args: kernel_args(c, &c.ops[g.ops()]),
                    ops: g.ops(),
                });
                i += g.len;
            }
            _ => {
                if !c.is_view_op(i) {
                    out.push(single_kernel(c, i, &c.ops[i]));
                }
                i += 1;
            }
        }
    }
    out
}

/// The byte offset of a tensor the scratchpad plan placed in every core's scratchpad.
fn scratchpad_offset(c: &Compilation, tensor: &str) -> Option<u64> {
    match c.placements.get(tensor) {
        Some(Placement::Scratchpad { offset, .. }) => Some(*offset),
        _ => None,
    }
}

/// Lowers every device op of `c` to a KTIR module, each kernel verified as it is built.
pub fn lower(c: &Compilation) -> Result<ktir::Module, CompileError> {
    lower_with(
        c,
        &mut crate::WorkBudget::new(&crate::Options::default()),
        &mut |_| {},
        true,
        None,
    )
}

/// [`lower`], spending one unit of `budget` per KTIR operation built and reporting each
/// kernel done to `progress`; `double_buffer` pipelines the loads of time loops
/// ([`crate::Options::double_buffer`]); with a `cache`, a kernel whose key it knows is
/// reused instead of lowered (see [`crate::artifact_cache`]).
pub(crate) fn lower_with(
    c: &Compilation,
    budget: &mut crate::WorkBudget,
    progress: &mut dyn FnMut(crate::CompileProgress),
    double_buffer: bool,
    mut cache: Option<&mut crate::artifact_cache::KernelCache<'_>>,
) -> Result<ktir::Module, CompileError> {
    let mut module = ktir::Module {
        comments: vec![format!(
            "KTIR for '{}': one kernel per device op or fused chain (none for a reshape or transpose that is a view), launched in order.",
            c.graph.name
        )],
        ..ktir::Module::default()
    };
    let held = tiling::planned_live_bytes(c);
    // Repeated layers repeat their kernels: each distinct kernel's time plan is searched
    // once; the others are built straight from the choice made (their own names kept).
    let mut recipes = tiling::Recipes::new();
    for kernel in kernels(c) {
        let i = kernel.ops.start;
        if kernel.ops.len() > 1 {
            let group =
                c.fusion.iter().find(|g| g.first == i).ok_or_else(|| {
                    CompileError::at(&kernel.op, "fused kernel without its group")
                })?;
            let prebuilt = c.fused_kernels.get(&i).filter(|f| f.name == kernel.func);
            let func = if let Some(f) = prebuilt {
                f.clone()
            } else if c.ops[i].kind.is_matmul() {
                let held_i = held.get(i).copied().unwrap_or(0);
                epilogue::epilogue_kernel(c, group, &kernel, held_i, double_buffer, &mut recipes)?
            } else {
                fuse::fused_kernel(c, group, &kernel, &held, double_buffer)?
            };
            budget.spend(op_count(&func.body), Some(&kernel.op))?;
            module.funcs.push(func);
        } else {
            let op = &c.ops[i];
            let held_i = held.get(i).copied().unwrap_or(0);
            let (key, plan_key) = match cache {
                Some(_) => {
                    let (kernel_key, plan_key) = crate::artifact_cache::kernel_and_plan_keys(
                        c,
                        op,
                        i,
                        &kernel,
                        held_i,
                        double_buffer,
                    );
                    (Some(kernel_key), Some(plan_key))
                }
                None => (None, None),
            };
            let reused = match (cache.as_deref_mut(), &key) {
                (Some(cache), Some(key)) => cache.lookup(key, &kernel.func),
                _ => None,
            };
            let func = match reused {
                Some(f) => f,
                None => {
                    let plan_key = plan_key.unwrap_or_else(|| {
                        crate::artifact_cache::plan_key(c, op, i, &kernel, held_i, double_buffer)
                    });
                    let func = tiling::emit_kernel_with(
                        c,
                        op,
                        i,
                        &kernel,
                        held_i,
                        double_buffer,
                        &plan_key,
                        &mut recipes,
                    )?;
                    budget.spend(op_count(&func.body), Some(&op.name))?;
                    let func = verified(op, func)?;
                    if let (Some(cache), Some(key)) = (cache.as_deref_mut(), &key) {
                        cache.insert(key, &func);
                    }
                    func
                }
            };
            module.funcs.push(func);
        }
        progress(crate::CompileProgress {
            pass: "ktir",
            done: kernel.ops.end,
            total: c.ops.len(),
        });
    }
    Ok(module)
}

/// KTIR operations in a block, those in nested regions included.
fn op_count(b: &ktir::Block) -> u64 {
    b.ops
        .iter()
        .map(|op| 1 + op.kind.regions().into_iter().map(op_count).sum::<u64>())
        .sum()
}

/// `func` when the verifier accepts it on its own; otherwise an error naming the device
/// op and the KTIR op the verifier rejects.
fn verified(op: &DeviceOp, func: ktir::Func) -> Result<ktir::Func, CompileError> {
    let one = ktir::Module {
        funcs: vec![func],
        ..ktir::Module::default()
    };
    let diags = ktir::verify(&one, "");
    if let Some(d) = diags.iter().find(|d| d.is_error()) {
        return Err(CompileError::at(
            &op.name,
            format!("its KTIR kernel does not verify: {}", d.message),
        ));
    }
    Ok(one
        .funcs
        .into_iter()
        .next()
        .unwrap_or_else(unreachable_func))
}

/// Never reached: a module built with one function has it.
fn unreachable_func() -> ktir::Func {
    build::func("", Vec::new(), Vec::new(), ktir::Block::default(), None)
}

/// An SSA-safe identifier made from a tensor or node name.
/// SSA names the kernels define themselves (besides `fresh` temporaries).
const FIXED_NAMES: &[&str] = &[
    "id", "c0", "row", "stick", "lane", "lhs", "rhs", "both", "group",
];

/// Unique SSA base names for the tensors of one kernel. A tensor's name becomes an
/// identifier; one that could collide with a temporary (`%exp3`: lowercase letters then
/// digits), a fixed name (`%id`) or another tensor's identifier gets a `_t` suffix.
fn ssa_names<'t>(tensors: impl Iterator<Item = &'t String>) -> BTreeMap<String, String> {
    let fresh_like = |s: &str| {
        let stem = s.trim_end_matches(|c: char| c.is_ascii_digit());
        stem.len() < s.len() && stem.chars().all(|c| c.is_ascii_lowercase() || c == '_')
    };
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for t in tensors {
        if names.contains_key(t) {
            continue;
        }
        let base = ident(t);
        let mut name = base.clone();
        let mut k = 1;
        while fresh_like(&name)
            || FIXED_NAMES.contains(&name.as_str())
            || names.values().any(|v| *v == name)
        {
            name = if k == 1 {
                format!("{base}_t")
            } else {
                format!("{base}_t{k}")
            };
            k += 1;
        }
        names.insert(t.clone(), name);
    }
    names
}

fn ident(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, 't');
    }
    s
}

fn elem_type(dt: DType) -> ScalarType {
    match dt {
        DType::F16 => ScalarType::F16,
        DType::BF16 => ScalarType::BF16,
        DType::F32 => ScalarType::F32,
        DType::I32 => ScalarType::I32,
        DType::I8 => ScalarType::I8,
        DType::Bool => ScalarType::I1,
        DType::F8E4M3 => ScalarType::F8E4M3,
        DType::F8E5M2 => ScalarType::F8E5M2,
        DType::I64 => ScalarType::I64,
    }
}

/// A zero of element type `elem` as a scalar constant's value.
fn zero_literal(elem: ScalarType) -> Literal {
    if elem.is_float() {
        Literal::Float(0.0)
    } else {
        Literal::Int(0)
    }
}

/// A use of the value an emitter name (`%name`) stands for.
fn val(name: &str) -> Value {
    build::value(name.trim_start_matches('%'))
}

/// The SSA name without its `%`.
fn ssa(name: &str) -> &str {
    name.trim_start_matches('%')
}

/// What a device dim indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Whole elements of a host dim.
    Elem,
    /// Sticks of the stick host dim.
    Sticks,
    /// Position within a stick.
    Lane,
    /// A dim with no host counterpart (rank-0 tensors).
    Synthetic,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DimRef {
    kind: Kind,
    /// The iteration dim that indexes it; `None` when broadcast or synthetic.
    iter: Option<usize>,
}

/// One tensor as a kernel sees it: its view and this core's tile.
struct Operand {
    tensor: String,
    /// Base of the SSA names of its address argument, view, tile and data.
    ssa: String,
    layout: Layout,
    elem: ScalarType,
    dims: Vec<DimRef>,
    /// Per device dim: subscript and tile extent.
    origin: Vec<Subscript>,
    extent: Vec<usize>,
    /// Element offset in the executing core's scratchpad, when the plan put it there.
    local: Option<u64>,
    /// Per device dim: the terms time loops add to the origin (none outside loops).
    step_offset: Vec<Vec<Subscript>>,
    /// The per-core slice's extent (`extent` before time loops cut it into blocks).
    full_extent: Vec<usize>,
}

impl Operand {
    /// The per-core slice's extent: the tile's, with time-loop blocks put back together.
    fn slice_extent(&self) -> Vec<usize> {
        self.full_extent.clone()
    }
}

struct KernelEmitter<'c> {
    c: &'c Compilation,
    op: &'c DeviceOp,
    /// The op's position in `c.ops` (and its work division's in `c.divisions`).
    index: usize,
    kernel: Kernel,
    /// The kernel body being built.
    b: Builder,
    operands: Vec<Operand>,
    eps: usize,
    grid: usize,
    /// Open time loops, outermost first: (block index, step count, step constant).
    open: Vec<(String, String, String)>,
    /// Time loops around the kernel body: (iteration dim, steps), outermost first.
    loops: Vec<(usize, usize)>,
    /// Steps of a matmul's loop over K blocks (1: no loop).
    k_steps: usize,
    /// A matmul input (0: A, 1: B) loaded once outside the innermost time loop, which
    /// must not cut it: the stationary operand stays resident while the other streams.
    hoist: Option<usize>,
    /// Blocks of rows a gather loads one after another (1: all its rows at once), so
    /// a long sequence's rows stream through the scratchpad.
    gather_steps: usize,
    /// A movement kernel moved in blocks: (iteration dim, block elements), outermost
    /// first. Each dim runs a loop over its whole blocks, then one remainder block when
    /// the block does not divide the core's extent (see `movement::blocked`).
    blocks: Vec<(usize, usize)>,
    /// Per iteration dim: the exact elements of the block being emitted, where a block
    /// cuts it (a remainder block's last stick may be partly padding).
    box_elems: Vec<Option<usize>>,
    /// Suffix of the tile and data names of the block body being emitted: each body of a
    /// blocked kernel (whole blocks, remainders) names its own.
    part: String,
    /// A matmul's fused epilogue: the pointwise ops applied, in order, to each output
    /// block before it is stored (see [`epilogue`]); empty for every other kernel.
    epilogue: &'c [DeviceOp],
}

/// `tensor<shape x elem>`.
fn shape_str(shape: &[usize], elem: ScalarType) -> Type {
    tensor(shape, elem)
}

/// `!ktdp.access_tile<shape x index>`.
fn tile_str(shape: &[usize]) -> Type {
    access_tile_type(shape)
}

/// Row-major strides of a shape.
fn strides_of(size: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; size.len()];
    for j in (0..size.len().saturating_sub(1)).rev() {
        strides[j] = strides[j + 1] * size[j + 1];
    }
    strides
}

impl<'c> KernelEmitter<'c> {
    fn new(
        c: &'c Compilation,
        op: &'c DeviceOp,
        index: usize,
        kernel: &Kernel,
    ) -> Result<Self, CompileError> {
        let fail = |m: String| CompileError::at(&op.name, m);
        let div = c
            .divisions
            .get(index)
            .ok_or_else(|| fail("has no work division".into()))?;
        let eps = op_eps(c, op);
        let chunks = chunk_elems(op, eps, &div.splits);
        // Place value of each iteration dim in the linear core id, read off the recorded
        // core-to-slice table so kernels and the plan cannot disagree.
        let mut place = vec![1usize; div.splits.len()];
        for (d, p) in place.iter_mut().enumerate() {
            if div.splits[d] > 1 {
                *p = div
                    .core_to_slice
                    .iter()
                    .position(|s| s.get(d) == Some(&1))
                    .ok_or_else(|| {
                        fail(format!("core-to-slice table has no slice 1 of dim {d}"))
                    })?;
            }
        }
        let mut operands = Vec::new();
        let ssa = ssa_names(op.inputs.iter().chain(&op.outputs));
        for (n, tensor) in op.inputs.iter().chain(&op.outputs).enumerate() {
            let layout = c.layout(tensor, &op.name)?.clone();
            let ty = c.ty(tensor, &op.name)?;
            let access = access_map(op, n, &ty.shape);
            let elem = elem_type(layout.dtype);
            let last = layout.device_size.len().saturating_sub(1);
            let mut dims = Vec::new();
            let mut origin = Vec::new();
            let mut extent = Vec::new();
            for (j, &size) in layout.device_size.iter().enumerate() {
                let host = layout.host_dim_of_device_dim[j];
                let kind = match host {
                    None => Kind::Synthetic,
                    Some(_) if j == last => Kind::Lane,
                    Some(_) if layout.is_stick_count_dim(j) => Kind::Sticks,
                    Some(_) => Kind::Elem,
                };
                let iter = host.and_then(|h| access.get(h).copied().flatten());
                // A stick whose host dim has size 1 holds one element in lane 0 (the sparse
                // layout); rank-0 tensors hold their one element the same way.
                let single = kind == Kind::Synthetic
                    || (kind == Kind::Lane && host.is_some_and(|h| ty.shape[h] == 1));
                // Movement kernels read every dim they do not split whole.
                let whole = op.kind.is_movement() && iter.is_none_or(|d| div.splits[d] <= 1);
                let zero = Subscript::Const(0);
                let (o, e) = match (kind, iter) {
                    _ if single => (zero, 1),
                    _ if whole => (zero, size),
                    (Kind::Lane, _) | (Kind::Synthetic, _) | (_, None) => (zero, size),
                    // A stick dim no core splits is whole, in this operand's own sticks
                    // (operands of other element sizes have other stick counts).
                    (Kind::Sticks, Some(d)) if div.splits[d] <= 1 => (zero, size),
                    (Kind::Sticks, Some(d)) | (Kind::Elem, Some(d)) => {
                        let unit = if kind == Kind::Sticks {
                            (chunks[d] / eps).max(1)
                        } else {
                            chunks[d]
                        };
                        let expr = if div.splits[d] > 1 {
                            let mut s = Subscript::value("id");
                            if place[d] > 1 {
                                s = s.floordiv(place[d] as i64);
                            }
                            if place[d] * div.splits[d] < div.cores_used {
                                s = s.modulo(div.splits[d] as i64);
                            }
                            if unit != 1 {
                                s = s.times(unit as i64);
                            }
                            s
                        } else {
                            zero
                        };
                        let last_end = (div.splits[d].max(1)) * unit;
                        if last_end > size {
                            return Err(fail(format!(
                                "the slices of '{tensor}' reach {last_end} in device dim {j}, beyond its size {size}"
                            )));
                        }
                        (expr, unit)
                    }
                };
                dims.push(DimRef { kind, iter });
                origin.push(o);
                extent.push(e);
            }
            let local = match scratchpad_offset(c, tensor) {
                None => None,
                Some(offset) => {
                    let elem_bytes = layout.dtype.size_bytes() as u64;
                    let tile_bytes = extent.iter().product::<usize>() as u64 * elem_bytes;
                    if let Some(Placement::Scratchpad { bytes_per_core, .. }) =
                        c.placements.get(tensor)
                    {
                        if tile_bytes > *bytes_per_core {
                            return Err(fail(format!(
                                "'{tensor}' needs {tile_bytes} bytes per core here but the scratchpad plan reserved {bytes_per_core}"
                            )));
                        }
                    }
                    if offset % elem_bytes != 0 {
                        return Err(fail(format!(
                            "scratchpad offset {offset} of '{tensor}' is not a whole number of elements"
                        )));
                    }
                    Some(offset / elem_bytes)
                }
            };
            operands.push(Operand {
                step_offset: vec![Vec::new(); extent.len()],
                full_extent: extent.clone(),
                ssa: ssa.get(tensor).cloned().unwrap_or_else(|| ident(tensor)),
                tensor: tensor.clone(),
                layout,
                elem,
                dims,
                origin,
                extent,
                local,
            });
        }
        Ok(KernelEmitter {
            c,
            op,
            index,
            kernel: kernel.clone(),
            b: Builder::new(),
            operands,
            eps,
            grid: div.cores_used.max(1),
            open: Vec::new(),
            loops: Vec::new(),
            k_steps: 1,
            hoist: None,
            gather_steps: 1,
            blocks: Vec::new(),
            box_elems: vec![None; op.iteration.len()],
            part: String::new(),
            epilogue: match c.ops.get(kernel.ops.start + 1..kernel.ops.end) {
                Some(members) if op.kind.is_matmul() => members,
                _ => &[],
            },
        })
    }

    fn fail(&self, m: impl Into<String>) -> CompileError {
        CompileError::at(&self.op.name, m)
    }

    /// The op's work division: the one at its own index (divisions are parallel to the
    /// ops), found by name only if the two lists ever disagree.
    fn division(&self) -> Option<&'c crate::WorkDivision> {
        let c: &'c Compilation = self.c;
        c.divisions
            .get(self.index)
            .filter(|d| d.op == self.op.name)
            .or_else(|| c.divisions.iter().find(|d| d.op == self.op.name))
    }

    /// A fresh SSA name, `%` included.
    fn fresh(&mut self, base: &str) -> String {
        format!("%{}", self.b.fresh(base))
    }

    fn emit(mut self) -> Result<ktir::Func, CompileError> {
        self.b.compute_tile_id("id");
        self.b.index("c0", 0);
        // An op may read one tensor twice (x * x): one view, one tile, one load.
        let first: Vec<usize> = (0..self.operands.len())
            .filter(|&i| {
                !self.operands[..i]
                    .iter()
                    .any(|o| o.tensor == self.operands[i].tensor)
            })
            .collect();
        let blocked = !self.blocks.is_empty();
        if blocked {
            for &i in &first {
                self.view(i);
            }
            self.blocked(0, &first)?;
        } else if self.loops.is_empty() {
            for &i in &first {
                self.view(i);
                if !self.tiled_inside(i) {
                    self.tile(i);
                }
            }
        } else {
            for &i in &first {
                self.view(i);
            }
            // A hoisted operand's tile is built before the innermost loop opens (the
            // matmul lowering opens it after loading that operand).
            let open_here = self.loops.len() - usize::from(self.hoist.is_some());
            let loops = self.loops.clone();
            for &(d, steps) in &loops[..open_here] {
                let iv = self.open_loop(steps);
                self.step_dim(d, steps, &iv)?;
            }
            for &i in &first {
                if !self.tiled_inside(i) && self.hoist.is_none_or(|h| h == i) {
                    self.tile(i);
                }
            }
        }
        match self.op.kind {
            _ if blocked => {}
            DeviceOpKind::BatchMatmul => self.matmul()?,
            DeviceOpKind::Reduce(r) => self.reduction(r)?,
            DeviceOpKind::Movement(Movement::Gather) => self.gather()?,
            DeviceOpKind::TopK => self.topk()?,
            DeviceOpKind::Movement(_) => self.movement()?,
            DeviceOpKind::Unary(_)
            | DeviceOpKind::Binary(_)
            | DeviceOpKind::Compare(_)
            | DeviceOpKind::ToDtype
            | DeviceOpKind::Where => self.pointwise()?,
        }
        for _ in 0..self.loops.len() {
            self.close_loop();
        }
        self.b.ret();
        let args: Vec<(String, Type)> = self
            .kernel
            .args
            .iter()
            .map(|t| {
                let name = self
                    .operands
                    .iter()
                    .find(|o| &o.tensor == t)
                    .map(|o| o.ssa.clone())
                    .unwrap_or_else(|| ident(t));
                (name, Type::index())
            })
            .collect();
        let division = self
            .division()
            .map(|d| format!("splits {:?} over {} core(s)", d.splits, d.cores_used))
            .unwrap_or_default();
        let steps: usize = self.loops.iter().map(|l| l.1).product::<usize>() * self.k_steps;
        let time = if steps > 1 {
            format!(
                "; {steps} time steps per core: {}",
                tiling::plan_note(&self)
            )
        } else if blocked {
            format!("; {}", self.blocks_note())
        } else if self.gather_steps > 1 {
            format!(
                "; {} time steps per core: blocks of {} rows",
                self.gather_steps,
                self.operands
                    .last()
                    .and_then(|o| o.full_extent.get(1))
                    .map_or(0, |n| n / self.gather_steps)
            )
        } else {
            String::new()
        };
        let epilogue: Vec<String> = self
            .epilogue
            .iter()
            .map(|m| format!("{} ({})", m.name, m.kind))
            .collect();
        let epilogue = if epilogue.is_empty() {
            String::new()
        } else {
            format!(" with epilogue {}", epilogue.join(", "))
        };
        let comment = format!(
            "{} ({}){epilogue}: {division}{time}",
            self.op.name, self.op.kind
        );
        Ok(build::func(
            &self.kernel.func,
            args,
            vec![self.grid],
            self.b.finish(),
            Some(comment),
        ))
    }

    /// Whether operand `i`'s tile is built inside the matmul's K loop (it reads one K block).
    fn tiled_inside(&self, i: usize) -> bool {
        self.k_steps > 1
            && self.op.kind.is_matmul()
            && i < 2
            && self.operands[i]
                .dims
                .iter()
                .any(|d| d.iter == Some(self.op.iteration.len().saturating_sub(1)))
    }

    /// Opens `scf.for` over `steps` blocks; returns the block index.
    fn open_loop(&mut self, steps: usize) -> String {
        let (count, one, iv) = (self.fresh("steps"), self.fresh("one"), self.fresh("blk"));
        self.b.index(ssa(&count), steps as i64);
        self.b.index(ssa(&one), 1);
        self.b
            .begin_block(vec![(ssa(&iv).to_string(), Type::index())]);
        self.open.push((iv.clone(), count, one));
        iv
    }

    /// Closes the innermost loop [`Self::open_loop`] opened.
    fn close_loop(&mut self) {
        let body = self.b.end_block();
        if let Some((iv, count, one)) = self.open.pop() {
            self.b.for_loop(
                Vec::new(),
                ssa(&iv),
                &val("c0"),
                &val(&count),
                &val(&one),
                Vec::new(),
                Vec::new(),
                body,
            );
        }
    }

    /// Shrinks every operand's tile to one of `steps` blocks of iteration dim `d`, the block
    /// chosen by the loop index `iv`.
    fn step_dim(&mut self, d: usize, steps: usize, iv: &str) -> Result<(), CompileError> {
        for i in 0..self.operands.len() {
            for j in 0..self.operands[i].dims.len() {
                let o = &self.operands[i];
                if o.dims[j].iter != Some(d) || !matches!(o.dims[j].kind, Kind::Elem | Kind::Sticks)
                {
                    continue;
                }
                if o.extent[j] % steps != 0 {
                    return Err(self.fail(format!(
                        "cannot cut '{}' into {steps} blocks of device dim {j}",
                        o.tensor
                    )));
                }
                let block = o.extent[j] / steps;
                let term = if block == 1 {
                    Subscript::value(ssa(iv))
                } else {
                    Subscript::value(ssa(iv)).times(block as i64)
                };
                let o = &mut self.operands[i];
                o.extent[j] = block;
                o.step_offset[j].push(term);
            }
        }
        Ok(())
    }

    /// The memory view over operand `i`'s device layout (for a scratchpad tensor, over
    /// this core's whole slice).
    fn view(&mut self, i: usize) {
        let o = &self.operands[i];
        let name = o.ssa.clone();
        let view = format!("{name}_view");
        if let Some(local) = o.local {
            // Each core holds exactly its slice at the planned offset, so the view is the
            // slice in `ct_local` memory.
            let size = o.slice_extent();
            let elem = o.elem;
            let base = self.b.index(&name, local as i64);
            self.b.comment_last("scratchpad offset (elements)");
            self.b.memory_view(
                &view,
                &base,
                &size,
                &strides_of(&size),
                Some(box_set(&size)),
                Some(MemorySpace::Local { core: None }),
                build::memref(&size, elem),
            );
            return;
        }
        let size = o.layout.device_size.clone();
        let elem = o.elem;
        self.b.memory_view(
            &view,
            &build::value(&name),
            &size,
            &strides_of(&size),
            Some(box_set(&size)),
            Some(MemorySpace::Global),
            build::memref(&size, elem),
        );
    }

    /// The subscripts of operand `i`'s access tile: per device dim, the core's origin (none
    /// in a scratchpad slice) plus the time loops' offsets.
    fn tile_subscripts(&self, i: usize) -> Vec<Subscript> {
        let o = &self.operands[i];
        (0..o.extent.len())
            .map(|j| {
                let base = match &o.origin[j] {
                    _ if o.local.is_some() => None,
                    Subscript::Const(0) => None,
                    b => Some(b.clone()),
                };
                let mut terms = base.into_iter().chain(o.step_offset[j].iter().cloned());
                match terms.next() {
                    None => Subscript::value("c0"),
                    Some(first) => terms.fold(first, Subscript::plus),
                }
            })
            .collect()
    }

    /// This core's access tile of operand `i` (the current block inside time loops).
    fn tile(&mut self, i: usize) {
        let subs = self.tile_subscripts(i);
        let o = &self.operands[i];
        let (name, extent) = (format!("{}_tile{}", o.ssa, self.part), o.extent.clone());
        self.access_tile_on_view(i, &name, &subs, &extent);
    }

    /// An access tile `name` of `extent` at `subs` on operand `i`'s view: one builder, so
    /// a tile covering part of the block (a row part of C) types its view like `tile`.
    fn access_tile_on_view(&mut self, i: usize, name: &str, subs: &[Subscript], extent: &[usize]) {
        let o = &self.operands[i];
        let size = if o.local.is_some() {
            o.slice_extent()
        } else {
            o.layout.device_size.clone()
        };
        self.b.access_tile(
            name,
            &build::value(&format!("{}_view", o.ssa)),
            subs,
            Some(box_set(extent)),
            Some(identity_map(extent.len())),
            build::memref(&size, o.elem),
            tile_str(extent),
        );
    }

    fn load(&mut self, i: usize) -> String {
        let o = &self.operands[i];
        let name = o.ssa.clone();
        let part = &self.part;
        if self.operands[..i].iter().any(|p| p.tensor == o.tensor) {
            return format!("%{name}_data{part}");
        }
        let (tt, ty) = (tile_str(&o.extent), shape_str(&o.extent, o.elem));
        self.b.load(
            &format!("{name}_data{part}"),
            &build::value(&format!("{name}_tile{part}")),
            tt,
            ty,
        );
        format!("%{name}_data{part}")
    }

    /// Transposes `value` (dims `from`, shape `shape`) so its dims come in the order `to`
    /// lists them (every dim of `from` must appear in `to`). Returns the new value, dims
    /// and shape.
    fn reorder(
        &mut self,
        value: String,
        from: &[DimRef],
        shape: &[usize],
        to: &[DimRef],
        elem: ScalarType,
    ) -> Result<(String, Vec<DimRef>, Vec<usize>), CompileError> {
        let mut order: Vec<(usize, usize)> = Vec::new();
        for (j, d) in from.iter().enumerate() {
            let pos = to.iter().position(|t| t == d).ok_or_else(|| {
                self.fail(format!("cannot place tile dim {d:?} in the compute order"))
            })?;
            order.push((pos, j));
        }
        order.sort_unstable();
        let perm: Vec<usize> = order.iter().map(|&(_, j)| j).collect();
        let dims: Vec<DimRef> = perm.iter().map(|&j| from[j]).collect();
        let new_shape: Vec<usize> = perm.iter().map(|&j| shape[j]).collect();
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok((value, dims, new_shape));
        }
        let empty = self.fresh("empty");
        let t = self.fresh("t");
        let e = self.b.empty(ssa(&empty), shape_str(&new_shape, elem));
        self.b.transpose(
            ssa(&t),
            &val(&value),
            shape_str(shape, elem),
            &e,
            shape_str(&new_shape, elem),
            perm,
        );
        Ok((t, dims, new_shape))
    }

    fn pointwise(&mut self) -> Result<(), CompileError> {
        let out_index = self.op.inputs.len();
        let Some(out) = self.operands.get(out_index) else {
            return Err(self.fail("has no output"));
        };
        let out_dims = out.dims.clone();
        let out_shape = out.extent.clone();
        let elem = out.elem;
        let ty = shape_str(&out_shape, elem);
        // Ops whose operands and result may differ in element type.
        let typed = self.op.kind.is_typed_pointwise();
        let mut args = Vec::new();
        let mut elems = Vec::new();
        for i in 0..self.op.inputs.len() {
            let in_elem = self.operands[i].elem;
            if in_elem != elem && !typed {
                return Err(self.fail(format!(
                    "operand '{}' is {} but the result is {}; '{}' keeps the element type",
                    self.operands[i].tensor,
                    in_elem.name(),
                    elem.name(),
                    self.op.kind
                )));
            }
            args.push(self.input_as(i, &out_dims, &out_shape)?);
            elems.push(in_elem);
        }
        let result = if typed {
            self.typed_pointwise(&args, &elems, &out_shape, elem)?
        } else {
            self.elementwise(self.op.kind, &args, &ty)?
        };
        let name = self.operands[out_index].ssa.clone();
        self.b.store(
            &val(&result),
            &build::value(&format!("{name}_tile")),
            ty,
            tile_str(&out_shape),
        );
        Ok(())
    }

    /// Loads input operand `i`'s tile and brings it to the output's device order and
    /// shape (`out_dims`, `out_shape`): unit dims dropped, dims transposed, lanes matched,
    /// and broadcast where the operand lacks a dim. Returns the value's SSA name.
    fn input_as(
        &mut self,
        i: usize,
        out_dims: &[DimRef],
        out_shape: &[usize],
    ) -> Result<String, CompileError> {
        let in_elem = self.operands[i].elem;
        let v = self.load(i);
        let (dims, shape) = (
            self.operands[i].dims.clone(),
            self.operands[i].extent.clone(),
        );
        let (v, dims, shape) = self.drop_broadcast_dims(v, &dims, &shape, out_dims, in_elem)?;
        let (v, dims, shape) = self.reorder(v, &dims, &shape, out_dims, in_elem)?;
        let (value, shape) = self.match_lanes(v, &dims, shape, out_dims, out_shape, in_elem)?;
        let full = shape_str(out_shape, in_elem);
        let missing: Vec<usize> = (0..out_dims.len())
            .filter(|j| !dims.contains(&out_dims[*j]))
            .collect();
        if missing.is_empty() {
            return Ok(value);
        }
        let empty = self.fresh("empty");
        let b = self.fresh("b");
        let e = self.b.empty(ssa(&empty), full.clone());
        self.b.broadcast(
            ssa(&b),
            &val(&value),
            shape_str(&shape, in_elem),
            &e,
            full,
            missing,
        );
        Ok(b)
    }

    /// Collapses away the unit dims of a loaded tile that the result does not have (a
    /// broadcast operand's single stick or lane, or a rank-0 tensor's synthetic dims), so
    /// `linalg.broadcast` can add them back at full size.
    fn drop_broadcast_dims(
        &mut self,
        value: String,
        dims: &[DimRef],
        shape: &[usize],
        keep: &[DimRef],
        elem: ScalarType,
    ) -> Result<(String, Vec<DimRef>, Vec<usize>), CompileError> {
        let drop: Vec<bool> = dims
            .iter()
            .zip(shape)
            .map(|(d, &n)| n == 1 && (!keep.contains(d) || d.iter.is_none()))
            .collect();
        if !drop.iter().any(|&x| x) {
            return Ok((value, dims.to_vec(), shape.to_vec()));
        }
        let kept: Vec<usize> = (0..dims.len()).filter(|&j| !drop[j]).collect();
        let new_dims: Vec<DimRef> = kept.iter().map(|&j| dims[j]).collect();
        let new_shape: Vec<usize> = kept.iter().map(|&j| shape[j]).collect();
        let groups = unit_groups(dims.len(), &kept);
        let sq = self.fresh("squeezed");
        self.b.collapse_shape(
            ssa(&sq),
            &val(&value),
            groups,
            shape_str(shape, elem),
            shape_str(&new_shape, elem),
        );
        Ok((sq, new_dims, new_shape))
    }

    /// `sum`, `mean`, `max`, `min` over the last host axis: reduce the tile's stick and
    /// lane dims in f32, then write one element per row into the (sparse) result tile.
    fn reduction(&mut self, kind: Reduction) -> Result<(), CompileError> {
        if self.op.inputs.len() != 1 || self.operands.len() != 2 {
            return Err(self.fail("a reduction takes one input and one output"));
        }
        let red = self
            .op
            .iteration
            .iter()
            .position(|d| d.reduction)
            .ok_or_else(|| self.fail("reduction without a reduction dimension"))?;
        let elem = self.operands[0].elem;
        let out_elem = self.operands[1].elem;
        if !matches!(elem, ScalarType::F16 | ScalarType::BF16 | ScalarType::F32) || elem != out_elem
        {
            return Err(self.fail(format!(
                "reductions of {} into {} are not lowered to KTIR yet",
                elem.name(),
                out_elem.name()
            )));
        }
        let split = self
            .c
            .divisions
            .iter()
            .find(|d| d.op == self.op.name)
            .and_then(|d| d.splits.get(red).copied())
            .unwrap_or(1);
        if split > 1 {
            return Err(self.fail(
                "a reduction split over several cores (partial results combined over the ring) is not lowered to KTIR yet",
            ));
        }
        let x = self.load(0);
        let dims = self.operands[0].dims.clone();
        let shape = self.operands[0].extent.clone();
        let reduce_dims: Vec<usize> = (0..dims.len())
            .filter(|&j| dims[j].iter == Some(red))
            .collect();
        let kept: Vec<usize> = (0..dims.len())
            .filter(|j| !reduce_dims.contains(j))
            .collect();
        let kept_dims: Vec<DimRef> = kept.iter().map(|&j| dims[j]).collect();
        let kept_shape: Vec<usize> = kept.iter().map(|&j| shape[j]).collect();
        // Accumulate in f32 whatever the storage type.
        let acc_ty = shape_str(&kept_shape, ScalarType::F32);
        let xf = if elem == ScalarType::F32 {
            x
        } else {
            let w = self.fresh("wide");
            self.b.cast(
                ssa(&w),
                "arith.extf",
                &val(&x),
                shape_str(&shape, elem),
                shape_str(&shape, ScalarType::F32),
            );
            w
        };
        let combiner = kind.combiner().ktir_elementwise();
        let identity = match kind {
            Reduction::Sum | Reduction::Mean => 0.0,
            Reduction::Max => -3.0e38,
            Reduction::Min => 3.0e38,
            Reduction::Prod => 1.0,
        };
        let id = self.fresh("identity");
        let empty = self.fresh("empty");
        let init = self.fresh("init");
        let f32 = build::scalar(ScalarType::F32);
        self.b
            .constant(ssa(&id), Literal::Float(identity), f32.clone());
        self.b.empty(ssa(&empty), acc_ty.clone());
        self.b
            .fill(ssa(&init), &val(&id), f32, &val(&empty), acc_ty.clone());
        // Only real elements may take part: the lanes past the end of the last stick are
        // padding. Reduce the whole sticks, then the used lanes of the last one.
        let sticks =
            (0..dims.len()).find(|&j| dims[j].kind == Kind::Sticks && dims[j].iter == Some(red));
        let lanes =
            (0..dims.len()).find(|&j| dims[j].kind == Kind::Lane && dims[j].iter == Some(red));
        let extent = self.op.iteration[red].extent;
        let mut parts: Vec<(Vec<usize>, Vec<usize>)> = vec![(vec![0; shape.len()], shape.clone())];
        if let (Some(js), Some(jl)) = (sticks, lanes) {
            let (n_sticks, eps) = (shape[js], shape[jl]);
            let used = extent.saturating_sub((n_sticks.saturating_sub(1)) * eps);
            if n_sticks * eps != extent && used > 0 && used < eps {
                parts.clear();
                if n_sticks > 1 {
                    let mut sizes = shape.clone();
                    sizes[js] = n_sticks - 1;
                    parts.push((vec![0; shape.len()], sizes));
                }
                let mut offsets = vec![0; shape.len()];
                offsets[js] = n_sticks - 1;
                let mut sizes = shape.clone();
                sizes[js] = 1;
                sizes[jl] = used;
                parts.push((offsets, sizes));
            }
        }
        let mut acc = init;
        for (offsets, sizes) in parts {
            let input = if sizes == shape {
                xf.clone()
            } else {
                let sl = self.fresh("part");
                self.b.extract_slice(
                    ssa(&sl),
                    &val(&xf),
                    build::static_sizes(&offsets),
                    build::static_sizes(&sizes),
                    build::static_sizes(&vec![1; sizes.len()]),
                    shape_str(&shape, ScalarType::F32),
                    shape_str(&sizes, ScalarType::F32),
                );
                sl
            };
            let r = self.fresh("reduced");
            self.b.reduce(
                ssa(&r),
                combiner,
                (&val(&input), shape_str(&sizes, ScalarType::F32)),
                (&val(&acc), acc_ty.clone()),
                reduce_dims.clone(),
            );
            acc = r;
        }
        let mut v = acc;
        if kind == Reduction::Mean {
            let n = self.op.iteration[red].extent.max(1);
            let k = self.constant(1.0 / n as f64, &acc_ty);
            v = self.bin(ElementwiseOp::MulF, &v, &k, &acc_ty);
        }
        if out_elem != ScalarType::F32 {
            let t = self.fresh("narrow");
            self.b.cast(
                ssa(&t),
                "arith.truncf",
                &val(&v),
                acc_ty.clone(),
                shape_str(&kept_shape, out_elem),
            );
            v = t;
        }
        // Into the result tile: its dims are the kept dims plus unit stick and lane dims.
        let out_dims = self.operands[1].dims.clone();
        let out_shape = self.operands[1].extent.clone();
        let present: Vec<DimRef> = out_dims
            .iter()
            .copied()
            .filter(|d| kept_dims.contains(d))
            .collect();
        let (v, _, shape) = self.reorder(v, &kept_dims, &kept_shape, &present, out_elem)?;
        let v = if shape == out_shape {
            v
        } else {
            let kept_out: Vec<usize> = (0..out_dims.len())
                .filter(|&j| present.contains(&out_dims[j]))
                .collect();
            let units_only =
                (0..out_dims.len()).all(|j| kept_out.contains(&j) || out_shape[j] == 1);
            if !units_only || (kept_out.is_empty() && !shape.is_empty()) {
                return Err(self.fail("cannot place the reduced rows in the result layout"));
            }
            let e = self.fresh("rows");
            // A reduction to a single element expands a rank-0 value (no groups).
            self.b.expand_shape(
                ssa(&e),
                &val(&v),
                unit_groups(out_dims.len(), &kept_out),
                shape_str(&shape, out_elem),
                shape_str(&out_shape, out_elem),
            );
            e
        };
        let name = self.operands[1].ssa.clone();
        self.b.store(
            &val(&v),
            &build::value(&format!("{name}_tile")),
            shape_str(&out_shape, out_elem),
            tile_str(&out_shape),
        );
        Ok(())
    }

    /// An integer-list attribute of the device op.
    fn ints(&self, key: &str) -> Option<Vec<i64>> {
        self.op.attrs.get(key).cloned()
    }

    /// `value` (of shape `shape`) placed at the origin of a zero tensor of shape `padded`.
    fn zero_padded(
        &mut self,
        value: &str,
        shape: &[usize],
        padded: &[usize],
        elem: ScalarType,
    ) -> String {
        let ty = shape_str(padded, elem);
        let (zero, e, z, ins) = (
            self.fresh("zero"),
            self.fresh("empty"),
            self.fresh("zeros"),
            self.fresh("padded"),
        );
        self.b
            .constant(ssa(&zero), zero_literal(elem), build::scalar(elem));
        self.b.empty(ssa(&e), ty.clone());
        self.b.fill(
            ssa(&z),
            &val(&zero),
            build::scalar(elem),
            &val(&e),
            ty.clone(),
        );
        self.b.insert_slice(
            ssa(&ins),
            &val(value),
            &val(&z),
            build::static_sizes(&vec![0; shape.len()]),
            build::static_sizes(shape),
            build::static_sizes(&vec![1; shape.len()]),
            shape_str(shape, elem),
            ty,
        );
        ins
    }

    /// `tensor.collapse_shape` of `value` (shape `from`) into `to`, named `name`.
    fn collapse(
        &mut self,
        name: &str,
        value: &str,
        groups: Vec<Vec<usize>>,
        (from, to): (&[usize], &[usize]),
        elem: ScalarType,
    ) {
        self.b.collapse_shape(
            ssa(name),
            &val(value),
            groups,
            shape_str(from, elem),
            shape_str(to, elem),
        );
    }

    /// `tensor.expand_shape` of `value` (shape `from`) into `to`, named `name`.
    fn expand(
        &mut self,
        name: &str,
        value: &str,
        groups: Vec<Vec<usize>>,
        (from, to): (&[usize], &[usize]),
        elem: ScalarType,
    ) {
        self.b.expand_shape(
            ssa(name),
            &val(value),
            groups,
            shape_str(from, elem),
            shape_str(to, elem),
        );
    }

    /// `tensor.extract_slice` of `value` (shape `from`): `sizes` at `offsets` with
    /// `strides`, named `name`.
    fn slice(
        &mut self,
        name: &str,
        value: &str,
        (offsets, sizes, strides): (&[usize], &[usize], &[usize]),
        from: &[usize],
        elem: ScalarType,
    ) {
        self.b.extract_slice(
            ssa(name),
            &val(value),
            build::static_sizes(offsets),
            build::static_sizes(sizes),
            build::static_sizes(strides),
            shape_str(from, elem),
            shape_str(sizes, elem),
        );
    }

    /// `value` (shape `shape`) transposed by `perm` into a new `tensor.empty` `empty` of
    /// shape `to`, named `name`.
    fn transpose_into(
        &mut self,
        (empty, name): (&str, &str),
        value: &str,
        (shape, to): (&[usize], &[usize]),
        perm: Vec<usize>,
        elem: ScalarType,
    ) {
        let e = self.b.empty(ssa(empty), shape_str(to, elem));
        self.b.transpose(
            ssa(name),
            &val(value),
            shape_str(shape, elem),
            &e,
            shape_str(to, elem),
            perm,
        );
    }

    /// `value` splatted over a tensor of type `ty`.
    fn constant(&mut self, value: f64, ty: &Type) -> String {
        let c = self.fresh("cst");
        self.b
            .constant(ssa(&c), Literal::DenseSplat(value), ty.clone());
        c
    }

    fn bin(&mut self, op: ElementwiseOp, a: &str, b: &str, ty: &Type) -> String {
        let r = self.fresh("v");
        self.b
            .elementwise(ssa(&r), op, &[&val(a), &val(b)], ty.clone());
        r
    }

    fn un(&mut self, op: ElementwiseOp, a: &str, ty: &Type) -> String {
        let r = self.fresh("v");
        self.b.elementwise(ssa(&r), op, &[&val(a)], ty.clone());
        r
    }

    /// Emits one SDSC elementwise op on whole tiles of type `ty`.
    fn elementwise(
        &mut self,
        kind: DeviceOpKind,
        args: &[String],
        ty: &Type,
    ) -> Result<String, CompileError> {
        use ElementwiseOp as E;
        let op = kind.name();
        let arity = |n: usize, s: &Self| -> Result<(), CompileError> {
            if args.len() != n {
                return Err(s.fail(format!(
                    "'{op}' expects {n} operand(s), found {}",
                    args.len()
                )));
            }
            Ok(())
        };
        if let DeviceOpKind::Binary(b) = kind {
            arity(2, self)?;
            return Ok(self.bin(b.ktir_elementwise(), &args[0], &args[1], ty));
        }
        arity(1, self)?;
        let x = args[0].clone();
        let DeviceOpKind::Unary(unary) = kind else {
            return Err(self.fail(format!("elementwise op '{op}' has no KTIR lowering yet")));
        };
        if let Some(u) = unary.ktir_elementwise() {
            return Ok(self.un(u, &x, ty));
        }
        Ok(match unary {
            Unary::Reciprocal => {
                let one = self.constant(1.0, ty);
                self.bin(E::DivF, &one, &x, ty)
            }
            Unary::Relu => {
                let zero = self.constant(0.0, ty);
                self.bin(E::MaximumF, &x, &zero, ty)
            }
            Unary::Sigmoid => self.sigmoid(&x, ty),
            Unary::Silu => {
                let s = self.sigmoid(&x, ty);
                self.bin(E::MulF, &x, &s, ty)
            }
            Unary::Softplus => {
                let e = self.un(E::Exp, &x, ty);
                let one = self.constant(1.0, ty);
                let s = self.bin(E::AddF, &one, &e, ty);
                self.un(E::Log, &s, ty)
            }
            Unary::Gelu if self.op.attrs.get("approximate").is_some_and(|a| a == &[1]) => {
                // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
                let x2 = self.bin(E::MulF, &x, &x, ty);
                let x3 = self.bin(E::MulF, &x2, &x, ty);
                let c = self.constant(0.044715, ty);
                let cx3 = self.bin(E::MulF, &x3, &c, ty);
                let inner = self.bin(E::AddF, &x, &cx3, ty);
                let k = self.constant((2.0 / std::f64::consts::PI).sqrt(), ty);
                let scaled = self.bin(E::MulF, &inner, &k, ty);
                let t = self.un(E::Tanh, &scaled, ty);
                let one = self.constant(1.0, ty);
                let s = self.bin(E::AddF, &one, &t, ty);
                let half = self.constant(0.5, ty);
                let h = self.bin(E::MulF, &x, &half, ty);
                self.bin(E::MulF, &h, &s, ty)
            }
            Unary::Gelu => {
                // 0.5 * x * (1 + erf(x / sqrt(2)))
                let r = self.constant(std::f64::consts::FRAC_1_SQRT_2, ty);
                let xs = self.bin(E::MulF, &x, &r, ty);
                let e = self.un(E::Erf, &xs, ty);
                let one = self.constant(1.0, ty);
                let s = self.bin(E::AddF, &one, &e, ty);
                let half = self.constant(0.5, ty);
                let h = self.bin(E::MulF, &x, &half, ty);
                self.bin(E::MulF, &h, &s, ty)
            }
            // Ops with one KTIR op were lowered above; a composed op without an arm here
            // is caught by the test that lowers every unary op.
            _ => return Err(self.fail(format!("elementwise op '{op}' has no KTIR lowering yet"))),
        })
    }

    fn sigmoid(&mut self, x: &str, ty: &Type) -> String {
        use ElementwiseOp as E;
        let n = self.un(E::NegF, x, ty);
        let e = self.un(E::Exp, &n, ty);
        let one = self.constant(1.0, ty);
        let d = self.bin(E::AddF, &one, &e, ty);
        self.bin(E::DivF, &one, &d, ty)
    }
}

/// Reassociation groups for dropping (or re-adding) the unit dims of a rank-`rank` shape
/// that keeps the dims `kept`: each unit dim joins the group of the next kept dim, trailing
/// ones the last group.
fn unit_groups(rank: usize, kept: &[usize]) -> Vec<Vec<usize>> {
    if kept.is_empty() {
        // Collapsing to rank 0 takes no groups.
        return Vec::new();
    }
    let mut groups: Vec<Vec<usize>> = Vec::with_capacity(kept.len());
    let mut pending = Vec::new();
    for j in 0..rank {
        pending.push(j);
        if kept.contains(&j) {
            groups.push(std::mem::take(&mut pending));
        }
    }
    match groups.last_mut() {
        Some(last) => last.append(&mut pending),
        None => groups.push(pending),
    }
    groups
}

#[cfg(test)]
mod tests {
    use crate::passes::tests::graph_of;
    use crate::{compile, Options, Target};

    /// The verified KTIR of a one-output graph.
    fn verified(inputs: &str, inits: &str, nodes: &str) -> String {
        let g = graph_of(inputs, inits, nodes, r#""y""#);
        let c =
            compile(&g, &Target::spyre32(), &Options::default()).unwrap_or_else(|e| panic!("{e}"));
        let text = c.ktir.expect("ktir");
        if let Err(d) = ktir::check(&text) {
            panic!("{}\n{text}", ktir::render_diagnostics("ktir", &d));
        }
        text
    }

    #[test]
    fn matmuls_with_a_dim_of_one_lower() {
        // M = 1: A and C have no row dim in their layouts.
        let text = verified(
            r#"{"name": "a", "dtype": "f16", "shape": [1, 64]}"#,
            r#"{"name": "b", "dtype": "f16", "shape": [64, 100], "init": "ones"}"#,
            r#"{"name": "mm", "op": "MatMul", "inputs": ["a", "b"], "outputs": ["y"]}"#,
        );
        // (N split over two cores: 64 columns each.)
        assert!(
            text.contains("ins(%rows3, %rows6 : tensor<1x64xf16>, tensor<64x64xf16>)"),
            "{text}"
        );
        // N = 1: C is one element per stick.
        let text = verified(
            r#"{"name": "a", "dtype": "f32", "shape": [3, 50]}"#,
            r#"{"name": "b", "dtype": "f32", "shape": [50, 1], "init": "ones"}"#,
            r#"{"name": "mm", "op": "MatMul", "inputs": ["a", "b"], "outputs": ["y"]}"#,
        );
        assert!(
            text.contains("output_shape [3, 1, 1] : tensor<3x1xf32> into tensor<3x1x1xf32>"),
            "{text}"
        );
        // K = 1: B has no K dim in its layout.
        let text = verified(
            r#"{"name": "a", "dtype": "f16", "shape": [4, 1]}"#,
            r#"{"name": "b", "dtype": "f16", "shape": [1, 70], "init": "ones"}"#,
            r#"{"name": "mm", "op": "MatMul", "inputs": ["a", "b"], "outputs": ["y"]}"#,
        );
        assert!(text.contains("linalg.matmul"), "{text}");
    }

    #[test]
    fn a_kernel_that_fits_has_no_time_loop_and_one_that_does_not_has() {
        let (a, b, mm) = (
            r#"{"name": "a", "dtype": "f16", "shape": [64, 512]}"#,
            r#"{"name": "b", "dtype": "f16", "shape": [512, 256], "init": "ones"}"#,
            r#"{"name": "mm", "op": "MatMul", "inputs": ["a", "b"], "outputs": ["y"]}"#,
        );
        // Without double buffering a kernel that fits runs whole.
        let g = graph_of(a, b, mm, r#""y""#);
        let single = Options {
            double_buffer: false,
            ..Options::default()
        };
        let c = compile(&g, &Target::spyre32(), &single).unwrap_or_else(|e| panic!("{e}"));
        let text = c.ktir.clone().expect("ktir");
        assert!(
            !text.contains("scf.for") && !text.contains("time steps"),
            "{text}"
        );
        // With it, a share that moves enough DRAM bytes is cut anyway, into a few steps
        // reading no more bytes, so its compute overlaps its loads.
        let text = verified(a, b, mm);
        assert!(
            text.contains("scf.for") && text.contains("fits whole, cut in"),
            "{text}"
        );
        // The same matmul on a 64 KiB scratchpad: A alone fills it.
        let small = Target {
            cores: 4,
            scratchpad_capacity_bytes: 65536,
            ..Target::spyre32()
        };
        let c = compile(&g, &small, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
        let text = c.ktir.clone().expect("ktir");
        assert!(
            text.contains("iter_args") && text.contains("time steps per core"),
            "{text}"
        );
        for u in crate::lower_ktir::scratchpad_use(&c).unwrap() {
            assert!(u.need <= u.budget, "{u:?}");
        }
    }

    #[test]
    fn kernels_built_from_a_remembered_time_plan_equal_kernels_searched_afresh() {
        // A chain of identical matmuls on scratchpads small enough that they are cut in
        // time (double-buffered or not): the later links follow the first one's choice,
        // and must come out as if searched afresh, their own names included.
        let g = graph_of(
            r#"{"name": "a", "dtype": "f16", "shape": [64, 512]}"#,
            r#"{"name": "w1", "dtype": "f16", "shape": [512, 512], "init": "ones"},
               {"name": "w2", "dtype": "f16", "shape": [512, 512], "init": "ones"},
               {"name": "w3", "dtype": "f16", "shape": [512, 512], "init": "ones"},
               {"name": "w4", "dtype": "f16", "shape": [512, 512], "init": "ones"}"#,
            r#"{"name": "m1", "op": "MatMul", "inputs": ["a", "w1"], "outputs": ["h1"]},
               {"name": "m2", "op": "MatMul", "inputs": ["h1", "w2"], "outputs": ["h2"]},
               {"name": "m3", "op": "MatMul", "inputs": ["h2", "w3"], "outputs": ["h3"]},
               {"name": "m4", "op": "MatMul", "inputs": ["h3", "w4"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let text = |f: &ktir::Func| {
            ktir::print(&ktir::Module {
                funcs: vec![f.clone()],
                ..ktir::Module::default()
            })
        };
        let (mut compared, mut cut, mut doubled, mut followed) = (0, 0, 0, 0);
        for capacity in [65536, 131072, 262144] {
            let small = Target {
                cores: 4,
                scratchpad_capacity_bytes: capacity,
                ..Target::spyre32()
            };
            for double_buffer in [true, false] {
                let options = Options {
                    double_buffer,
                    ..Options::default()
                };
                let Ok(c) = compile(&g, &small, &options) else {
                    continue;
                };
                let module = c.ktir_module.as_ref().expect("ktir module");
                let held = super::tiling::planned_live_bytes(&c);
                let mut keys = std::collections::BTreeSet::new();
                for (k, f) in super::kernels(&c).iter().zip(&module.funcs) {
                    if k.ops.len() > 1 {
                        continue;
                    }
                    let i = k.ops.start;
                    let fresh = super::tiling::emit_kernel(
                        &c,
                        &c.ops[i],
                        i,
                        k,
                        held.get(i).copied().unwrap_or(0),
                        double_buffer,
                    )
                    .unwrap_or_else(|e| panic!("{e}"));
                    compared += 1;
                    let is_cut = super::tiling::time_steps(&fresh.body) > 1;
                    cut += usize::from(is_cut);
                    let key = crate::artifact_cache::plan_key(
                        &c,
                        &c.ops[i],
                        i,
                        k,
                        held.get(i).copied().unwrap_or(0),
                        double_buffer,
                    );
                    followed += usize::from(!keys.insert(key) && is_cut);
                    doubled += usize::from(
                        fresh
                            .comment
                            .as_deref()
                            .is_some_and(|t| t.contains("double buffering (")),
                    );
                    assert_eq!(text(&fresh), text(f), "{}", k.func);
                }
            }
        }
        assert!(
            compared > 0 && cut > 0 && doubled > 0 && followed > 0,
            "{compared} {cut} {doubled} {followed}"
        );
    }

    #[test]
    fn a_kernel_too_big_for_any_cut_is_an_error_naming_the_op() {
        // One row of 4096 f32 values: a reduction keeps whole rows together.
        let small = Target {
            cores: 1,
            scratchpad_capacity_bytes: 8192,
            ..Target::spyre32()
        };
        let g = graph_of(
            r#"{"name": "x", "dtype": "f32", "shape": [1, 4096]}"#,
            "",
            r#"{"name": "s", "op": "ReduceSum", "inputs": ["x"], "outputs": ["y"], "attrs": {"axes": [-1]}}"#,
            r#""y""#,
        );
        let e = compile(&g, &small, &Options::default()).unwrap_err();
        assert!(e.node.as_deref().is_some_and(|n| n.starts_with('s')), "{e}");
        assert!(
            e.message.contains("need 16392 bytes") && e.message.contains("budget is 8192 bytes"),
            "{e}"
        );
    }

    /// A transpose whose stick dims differ and whose slice outgrows the scratchpad: its
    /// KTIR, in full, moves 2-D blocks of whole sticks through the scratchpad (a loop over
    /// whole blocks, then a remainder block with its padded stick), and verifies.
    #[test]
    fn a_transpose_too_big_moves_in_blocks_of_whole_sticks() {
        let small = Target {
            cores: 1,
            scratchpad_capacity_bytes: 32768,
            ..Target::spyre32()
        };
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [40, 150]}"#,
            "",
            r#"{"name": "t", "op": "Transpose", "inputs": ["x"], "outputs": ["y"], "attrs": {"perm": [1, 0]}}"#,
            r#""y""#,
        );
        let c = compile(&g, &small, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
        let text = c.ktir.clone().expect("ktir");
        if let Err(d) = ktir::check(&text) {
            panic!("{}\n{text}", ktir::render_diagnostics("ktir", &d));
        }
        for u in crate::lower_ktir::scratchpad_use(&c).unwrap() {
            assert!(u.need <= u.budget, "{u:?}");
        }
        expect_test::expect![[r#"
            // KTIR for 't': one kernel per device op or fused chain (none for a reshape or transpose that is a view), launched in order.
            module {
              // t (transpose): splits [1, 1] over 1 core(s); 3 blocks per core, moved through the scratchpad one at a time: d0 2 x 64 + 22, d1 1 x 40 (elements, outermost first); double buffering (31744 B of 32768 B)
              func.func @k0_t(%x: index, %y: index) attributes {grid = [1]} {
                %id = ktdp.get_compute_tile_id : index
                %c0 = arith.constant 0 : index
                %x_view = ktdp.construct_memory_view %x, sizes: [3, 40, 64], strides: [2560, 64, 1] {
                    coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 2 >= 0, d1 >= 0, -d1 + 39 >= 0, d2 >= 0, -d2 + 63 >= 0)>,
                    memory_space = #ktdp.memory_space<global>
                } : memref<3x40x64xf16>
                %y_view = ktdp.construct_memory_view %y, sizes: [1, 150, 64], strides: [9600, 64, 1] {
                    coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 0 >= 0, d1 >= 0, -d1 + 149 >= 0, d2 >= 0, -d2 + 63 >= 0)>,
                    memory_space = #ktdp.memory_space<global>
                } : memref<1x150x64xf16>
                %steps1 = arith.constant 2 : index
                %one2 = arith.constant 1 : index
                %x_tile_db1 = ktdp.construct_access_tile %x_view[%c0, %c0, %c0] {
                    access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 0 >= 0, d1 >= 0, -d1 + 39 >= 0, d2 >= 0, -d2 + 63 >= 0)>,
                    access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
                } : memref<3x40x64xf16> -> !ktdp.access_tile<1x40x64xindex>
                %x_data_db2 = ktdp.load %x_tile_db1 : !ktdp.access_tile<1x40x64xindex> -> tensor<1x40x64xf16>
                %x_data_db9 = scf.for %blk3 = %c0 to %steps1 step %one2 iter_args(%x_data_db3 = %x_data_db2) -> (tensor<1x40x64xf16>) {
                  %next_db4 = arith.addi %blk3, %one2 : index
                  %more_db5 = arith.cmpi slt, %next_db4, %steps1 : index
                  %x_data_db8 = scf.if %more_db5 -> (tensor<1x40x64xf16>) {
                    %x_tile_db6 = ktdp.construct_access_tile %x_view[%next_db4, %c0, %c0] {
                        access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 0 >= 0, d1 >= 0, -d1 + 39 >= 0, d2 >= 0, -d2 + 63 >= 0)>,
                        access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
                    } : memref<3x40x64xf16> -> !ktdp.access_tile<1x40x64xindex>
                    %x_data_db7 = ktdp.load %x_tile_db6 : !ktdp.access_tile<1x40x64xindex> -> tensor<1x40x64xf16>
                    scf.yield %x_data_db7 : tensor<1x40x64xf16>
                  } else {
                    scf.yield %x_data_db3 : tensor<1x40x64xf16>
                  }  // double buffering: the next block loads while this one computes
                  %y_tile = ktdp.construct_access_tile %y_view[%c0, %blk3 * 64, %c0] {
                      access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 0 >= 0, d1 >= 0, -d1 + 63 >= 0, d2 >= 0, -d2 + 63 >= 0)>,
                      access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
                  } : memref<1x150x64xf16> -> !ktdp.access_tile<1x64x64xindex>
                  %empty4 = tensor.empty() : tensor<40x1x64xf16>
                  %host5 = linalg.transpose ins(%x_data_db3 : tensor<1x40x64xf16>) outs(%empty4 : tensor<40x1x64xf16>) permutation = [1, 0, 2]
                  %rows6 = tensor.collapse_shape %host5 [[0], [1, 2]] : tensor<40x1x64xf16> into tensor<40x64xf16>
                  %empty7 = tensor.empty() : tensor<64x40xf16>
                  %transposed8 = linalg.transpose ins(%rows6 : tensor<40x64xf16>) outs(%empty7 : tensor<64x40xf16>) permutation = [1, 0]
                  %zero9 = arith.constant 0.0 : f16
                  %empty10 = tensor.empty() : tensor<64x64xf16>
                  %zeros11 = linalg.fill ins(%zero9 : f16) outs(%empty10 : tensor<64x64xf16>) -> tensor<64x64xf16>
                  %padded12 = tensor.insert_slice %transposed8 into %zeros11[0, 0] [64, 40] [1, 1] : tensor<64x40xf16> into tensor<64x64xf16>
                  %sticked13 = tensor.expand_shape %padded12 [[0], [1, 2]] output_shape [64, 1, 64] : tensor<64x64xf16> into tensor<64x1x64xf16>
                  %empty14 = tensor.empty() : tensor<1x64x64xf16>
                  %device15 = linalg.transpose ins(%sticked13 : tensor<64x1x64xf16>) outs(%empty14 : tensor<1x64x64xf16>) permutation = [1, 0, 2]
                  ktdp.store %device15, %y_tile : tensor<1x64x64xf16>, !ktdp.access_tile<1x64x64xindex>
                  scf.yield %x_data_db8 : tensor<1x40x64xf16>
                }
                %x_tile_p1 = ktdp.construct_access_tile %x_view[2, %c0, %c0] {
                    access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 0 >= 0, d1 >= 0, -d1 + 39 >= 0, d2 >= 0, -d2 + 63 >= 0)>,
                    access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
                } : memref<3x40x64xf16> -> !ktdp.access_tile<1x40x64xindex>
                %y_tile_p1 = ktdp.construct_access_tile %y_view[%c0, 128, %c0] {
                    access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 0 >= 0, d1 >= 0, -d1 + 21 >= 0, d2 >= 0, -d2 + 63 >= 0)>,
                    access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
                } : memref<1x150x64xf16> -> !ktdp.access_tile<1x22x64xindex>
                %x_data_p1 = ktdp.load %x_tile_p1 : !ktdp.access_tile<1x40x64xindex> -> tensor<1x40x64xf16>
                %empty16 = tensor.empty() : tensor<40x1x64xf16>
                %host17 = linalg.transpose ins(%x_data_p1 : tensor<1x40x64xf16>) outs(%empty16 : tensor<40x1x64xf16>) permutation = [1, 0, 2]
                %rows18 = tensor.collapse_shape %host17 [[0], [1, 2]] : tensor<40x1x64xf16> into tensor<40x64xf16>
                %unpadded19 = tensor.extract_slice %rows18[0, 0] [40, 22] [1, 1] : tensor<40x64xf16> to tensor<40x22xf16>
                %empty20 = tensor.empty() : tensor<22x40xf16>
                %transposed21 = linalg.transpose ins(%unpadded19 : tensor<40x22xf16>) outs(%empty20 : tensor<22x40xf16>) permutation = [1, 0]
                %zero22 = arith.constant 0.0 : f16
                %empty23 = tensor.empty() : tensor<22x64xf16>
                %zeros24 = linalg.fill ins(%zero22 : f16) outs(%empty23 : tensor<22x64xf16>) -> tensor<22x64xf16>
                %padded25 = tensor.insert_slice %transposed21 into %zeros24[0, 0] [22, 40] [1, 1] : tensor<22x40xf16> into tensor<22x64xf16>
                %sticked26 = tensor.expand_shape %padded25 [[0], [1, 2]] output_shape [22, 1, 64] : tensor<22x64xf16> into tensor<22x1x64xf16>
                %empty27 = tensor.empty() : tensor<1x22x64xf16>
                %device28 = linalg.transpose ins(%sticked26 : tensor<22x1x64xf16>) outs(%empty27 : tensor<1x22x64xf16>) permutation = [1, 0, 2]
                ktdp.store %device28, %y_tile_p1 : tensor<1x22x64xf16>, !ktdp.access_tile<1x22x64xindex>
                func.return
              }
            }
        "#]].assert_eq(&text);
    }

    #[test]
    fn a_reduction_to_one_element_lowers() {
        let text = verified(
            r#"{"name": "x", "dtype": "f16", "shape": [100]}"#,
            "",
            r#"{"name": "s", "op": "ReduceSum", "inputs": ["x"], "outputs": ["y"], "attrs": {"axes": [-1]}}"#,
        );
        assert!(
            text.contains("tensor.expand_shape %narrow") && text.contains("[] output_shape [1, 1]"),
            "{text}"
        );
    }

    #[test]
    fn reshapes_to_and_from_rank_0_lower() {
        // [] -> [1, 1] expands and [1, 1] -> [] collapses, each with no groups.
        let text = verified(
            r#"{"name": "x", "dtype": "f32", "shape": []}"#,
            "",
            r#"{"name": "r", "op": "Reshape", "inputs": ["x"], "outputs": ["t"], "attrs": {"shape": [1, 1]}},
               {"name": "n", "op": "Neg", "inputs": ["t"], "outputs": ["u"]},
               {"name": "s", "op": "Reshape", "inputs": ["u"], "outputs": ["y"], "attrs": {"shape": []}}"#,
        );
        assert!(
            text.contains("tensor.expand_shape") && text.contains("into tensor<1xf32>"),
            "{text}"
        );
        assert!(
            text.contains("tensor.collapse_shape") && text.contains("into tensor<f32>"),
            "{text}"
        );
    }
}
