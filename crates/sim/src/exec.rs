//! The KTIR interpreter: runs a verified kernel SPMD over its grid, computing real numbers,
//! and records every data movement and compute step as a timing [`Task`].
//!
//! **Value domains.** What tensors and buffers hold is the value domain's business (see
//! `domain.rs`): [`Simulator::new`] computes numbers, [`Simulator::new_timing_only`] computes
//! shapes only: tensors and DRAM buffers are shapes and element types, every op records the
//! tasks it records with numbers, and index arithmetic and control flow run for real.
//! Values that would come from tensor data are assumed and reported (indirect indices) or
//! refused where they steer the program (a `tensor.extract` used as a bound, condition or
//! address). It is what plans models too large to run with numbers. The domain is picked
//! once, when the simulator is made; no op asks which one it runs in.
//!
//! **Layers.** This module is the driver loop: launches, the per-core frame stacks, control
//! flow (`scf.for`, `scf.if`, producer regions, terminators) and the dispatch of every other
//! op to its family. Below it, each module uses only those listed after it:
//!
//! - op families: `memory.rs` (views, access tiles, loads, stores), `tensor.rs` (tensor
//!   construction, slicing, movement, linalg), `elementwise.rs` (`arith`/`math`, compares,
//!   selects, casts), `collectives.rs` (inter-tile produce, reduce and consume);
//! - `state.rs`: the simulator's state (memory, tasks, steps, progress), per-core frames,
//!   slots and contexts, and the helpers every family uses (operands, results, task
//!   recording, tensor allocation with scratchpad accounting);
//! - `resolve.rs`: the resolved form of a function;
//! - `domain.rs`: the value domains, over `store.rs` (DRAM and scratchpad contents) and the
//!   per-element semantics of [`crate::exec_ew`] and kernels of [`crate::exec_ops`];
//! - `value.rs`: values, limits and errors.
//!
//! Families that interpret a region (`linalg.generic`, a reduction's combiner, a
//! collective's combiner) call the driver loop through the core context's `run_region`, so
//! the graph stays acyclic.
//!
//! **Suspension.** Each core runs on an explicit frame stack (a program counter per open
//! block: the function body, loop bodies, `scf.if` branches, producer regions). A core runs
//! until it finishes or reaches an inter-tile collective (`ktdp.inter_tile_reduce` or
//! `ktdp.inter_tile_consume`), where it suspends. When every participant of a collective
//! instance (the same op, the same dynamic occurrence) has arrived, the collective is
//! performed and its participants resume. Cores that arrive but take no part resume at once.
//! If no core can run and no collective can fire, the launch stops with a deadlock error
//! naming the op, the waiting cores and the missing ones. See `collectives.rs` for the
//! collective semantics and timing model.
//!
//! Memory model (assumptions, stated so reviewers can disagree):
//! - DRAM holds named buffers. Addresses are in elements; a view's element type must match
//!   the buffer it lands in. Buffers start on 128-byte boundaries.
//! - A core's scratchpad (`ct_local`) is byte-addressed: a view's element address times its
//!   element size is the byte address, so views of different element types at the same byte
//!   offset see the same bytes. Accesses are checked against the scratchpad's size.
//! - Tensors produced inside a kernel live in the executing core's scratchpad; their live
//!   bytes are counted and checked against the plannable capacity too.
//! - Points of an access tile that fall outside its view's `coordinate_set` are an error
//!   (the spec does not say whether they are masked); points outside the tile's own set are
//!   skipped (masked).
//! - Scalar arithmetic costs no time. Kernel launches run one after another: each launch
//!   starts when the previous one has finished. Within a core, a load waits for the core's
//!   previous store (program order for memory); across cores there is no ordering except
//!   through collectives (a known gap of the spec).
//! - Runtime arguments (`!ktdp.runtime_arg<..>` function arguments) are passed as scalar
//!   integers ([`KernelValue::Int`]); `granularity` and `upperbound` come from the type.

use crate::resolve::{compute_frees, ROp, Region, Resolver};
use crate::state::*;
use crate::timing::{Task, TaskId, Unit, Work};
use crate::value::*;
use crate::{collectives, elementwise, exec_ew, memory, tensor};
use ktir::ast::*;
use std::collections::HashMap;
use std::rc::Rc;

pub use crate::resolve::LineLookup;
pub use crate::state::{ProgressFn, Simulator, WorkCount};
pub use crate::store::DramBuffer;
pub use crate::value::{round_f16, round_to, ExecLimits, KernelValue, SimError};

impl Simulator<'_> {
    /// Runs `func` of `module` on every tile of its grid with the given integer arguments
    /// (buffer base addresses and scalars; a float-typed argument takes the integer's value).
    /// `source` is the module's text, for line numbers in the trace.
    pub fn launch(
        &mut self,
        module: &Module,
        source: &LineLookup,
        func: &str,
        args: &[i64],
    ) -> Result<(), SimError> {
        let values: Vec<KernelValue> = args.iter().map(|a| KernelValue::Int(*a)).collect();
        self.launch_values(module, source, func, &values)
    }

    /// Runs `func` of `module` on every tile of its grid with the given arguments (scalars,
    /// runtime arguments as [`KernelValue::Int`], tensors). Every tile gets the same values.
    pub fn launch_values(
        &mut self,
        module: &Module,
        source: &LineLookup,
        func: &str,
        args: &[KernelValue],
    ) -> Result<(), SimError> {
        let Some(f) = module.func(func) else {
            return err(format!("no function '@{func}' in the module"));
        };
        if args.len() != f.args.len() {
            return err(format!(
                "'@{func}' takes {} argument(s), {} given",
                f.args.len(),
                args.len()
            ));
        }
        let grid = f.grid.clone().unwrap_or_else(|| vec![1]);
        let tiles = f.grid_size();
        if tiles > self.machine.cores.value {
            return err(format!(
                "'@{func}' asks for a grid of {tiles} tiles but machine '{}' has {} cores",
                self.machine.name, self.machine.cores.value
            ));
        }
        self.launch_peaks.push(0);
        self.begin_launch_tasks();
        let log_start = (
            self.next_task_id(),
            self.steps(),
            self.work_counts().len(),
            self.masked_points,
        );
        self.launch_log.push(LaunchLog::default());
        let mut resolver = Resolver {
            module,
            scopes: vec![HashMap::new()],
            slots: 0,
            next_id: 0,
            line_index: source,
            produced: HashMap::new(),
        };
        let arg_slots: Vec<usize> = f.args.iter().map(|(n, _)| resolver.new_slot(n)).collect();
        let mut body = resolver.block(&f.body.ops)?;
        compute_frees(&mut body, &arg_slots);
        let slot_count = resolver.slots;

        let mut arg_values = Vec::with_capacity(args.len());
        for (a, (name, t)) in args.iter().zip(&f.args) {
            arg_values.push(self.arg_value(a, t, name)?);
        }
        let mut cores: Vec<CoreRun<'_, '_>> = Vec::with_capacity(tiles);
        for core in 0..tiles {
            // Linear id: dimension 0 varies fastest.
            let mut tile_id = Vec::with_capacity(grid.len());
            let mut rest = core;
            for g in &grid {
                tile_id.push((rest % g.max(&1)) as i64);
                rest /= g.max(&1);
            }
            let mut slots: Vec<Option<RtValue>> = vec![None; slot_count];
            for (s, v) in arg_slots.iter().zip(&arg_values) {
                slots[*s] = Some(v.clone());
            }
            cores.push(CoreRun {
                frames: vec![Frame {
                    ops: &body,
                    pc: 0,
                    kind: FrameKind::Root,
                }],
                slots,
                ctx: CoreCtx {
                    core,
                    tile_id,
                    grid_size: tiles,
                    live_bytes: 0,
                    last_tasks: std::collections::BTreeSet::new(),
                    last_store: None,
                    record: true,
                    generic_point: Vec::new(),
                    run_region,
                },
                state: CoreState::Ready,
                occurrences: HashMap::new(),
            });
        }
        self.returned = vec![Vec::new(); tiles];
        loop {
            for (c, run) in cores.iter_mut().enumerate() {
                if !matches!(run.state, CoreState::Ready) {
                    continue;
                }
                let out = self
                    .run_frames(&mut run.frames, &mut run.slots, &mut run.ctx, true)
                    .map_err(|mut e| {
                        e.core.get_or_insert(c);
                        e
                    })?;
                match out {
                    Outcome::Finished(values) => {
                        run.state = CoreState::Done;
                        self.returned[c] = values.iter().map(kernel_value).collect();
                    }
                    Outcome::Suspended(rop) => {
                        let occ = run.occurrences.get(&rop.id).copied().unwrap_or(0);
                        run.state = CoreState::Waiting(rop, occ);
                    }
                }
            }
            if cores.iter().all(|c| matches!(c.state, CoreState::Done)) {
                break;
            }
            if !collectives::fire_collectives(self, &mut cores)? {
                return Err(collectives::deadlock(&cores));
            }
        }
        let launch_tails: Vec<TaskId> = cores
            .iter()
            .flat_map(|c| c.ctx.last_tasks.iter().copied())
            .filter(|t| *t != NO_TASK)
            .collect();
        let has_tails = !launch_tails.is_empty();
        if has_tails {
            // A zero-cost barrier: the next launch starts when this one has finished.
            let id = self.push_task(Task {
                core: 0,
                unit: Unit::Sfp,
                work: Work::Compute { cycles: 0 },
                deps: launch_tails.into(),
                op: format!("end of @{func}").into(),
                line: 0,
            })?;
            self.barrier = Some(id);
        }
        let (tasks, steps, work, masked) = log_start;
        let end = (
            self.next_task_id(),
            self.steps(),
            self.work_counts().len(),
            self.masked_points,
        );
        let peak = self.launch_peaks.last().copied().unwrap_or(0);
        let returned = self.returned.clone();
        if let Some(log) = self.launch_log.last_mut() {
            log.tasks = tasks..end.0;
            log.has_barrier = has_tails;
            log.steps = end.1 - steps;
            log.work = work..end.2;
            log.masked_points = end.3 - masked;
            log.peak = peak;
            log.returned = returned;
        }
        self.schedule_ended_launch()
    }

    /// Runs a frame stack until its base block finishes or (when `can_suspend`) a collective
    /// is reached.
    pub(crate) fn run_frames<'r, 'a>(
        &mut self,
        frames: &mut Vec<Frame<'r, 'a>>,
        slots: &mut [Option<RtValue>],
        ctx: &mut CoreCtx,
        can_suspend: bool,
    ) -> Result<Outcome<'r, 'a>, SimError> {
        loop {
            let Some(top) = frames.last() else {
                return Ok(Outcome::Finished(Vec::new()));
            };
            let ops: &'r [ROp<'a>] = top.ops;
            let Some(rop) = ops.get(top.pc) else {
                if let Some(o) = self.end_block(frames, slots, ctx, Vec::new())? {
                    return Ok(o);
                }
                continue;
            };
            self.count_step(rop)?;
            let r = self.step(frames, rop, slots, ctx, can_suspend);
            match r {
                Ok(Some(o)) => return Ok(o),
                Ok(None) => {}
                Err(mut e) => {
                    if e.op.is_none() {
                        e.op = Some((rop.op.kind.name().to_string(), rop.line));
                    }
                    return Err(e);
                }
            }
        }
    }

    fn step<'r, 'a>(
        &mut self,
        frames: &mut Vec<Frame<'r, 'a>>,
        rop: &'r ROp<'a>,
        slots: &mut [Option<RtValue>],
        ctx: &mut CoreCtx,
        can_suspend: bool,
    ) -> Result<Option<Outcome<'r, 'a>>, SimError> {
        match &rop.op.kind {
            k if k.is_terminator() => {
                let vals = (0..rop.operands.len())
                    .map(|i| self.get(slots, rop, i).cloned())
                    .collect::<Result<Vec<_>, _>>()?;
                self.release(rop, slots, ctx);
                self.end_block(frames, slots, ctx, vals)
            }
            OpKind::For { iter_args, .. } => {
                let lower = self.index(slots, rop, 0)?;
                let upper = self.index(slots, rop, 1)?;
                let step = self.index(slots, rop, 2)?;
                if step <= 0 {
                    return Err(self.at(rop, format!("loop step must be positive, found {step}")));
                }
                let init: Vec<RtValue> = (0..iter_args.len())
                    .map(|i| self.get(slots, rop, 3 + i).cloned())
                    .collect::<Result<_, _>>()?;
                let Some(region) = rop.regions.first() else {
                    return Err(self.at(rop, "loop body was not resolved".into()));
                };
                if lower < upper {
                    set_slot(slots, region.args.first(), RtValue::Index(lower));
                    for (s, v) in region.args.iter().skip(1).zip(init) {
                        set_slot(slots, Some(s), v);
                    }
                    frames.push(Frame {
                        ops: &region.ops,
                        pc: 0,
                        kind: FrameKind::For {
                            owner: rop,
                            iv: lower,
                            upper,
                            step,
                        },
                    });
                } else {
                    for (k, v) in init.into_iter().enumerate() {
                        self.set(slots, rop, k, v);
                    }
                    self.finish(frames, rop, slots, ctx);
                }
                Ok(None)
            }
            OpKind::If { .. } => {
                let cond = match self.get(slots, rop, 0)? {
                    RtValue::Index(v) => *v != 0,
                    RtValue::Float(v) => *v != 0.0,
                    RtValue::Unknown(line) => return Err(self.unknown(rop, 0, *line)),
                    _ => return Err(self.at(rop, "condition is not a scalar i1".into())),
                };
                let region = if cond {
                    rop.regions.first()
                } else {
                    rop.regions.get(1)
                };
                match region {
                    Some(r) => frames.push(Frame {
                        ops: &r.ops,
                        pc: 0,
                        kind: FrameKind::If { owner: rop },
                    }),
                    None => {
                        if !rop.results.is_empty() {
                            return Err(
                                self.at(rop, "an scf.if with results needs an else region".into())
                            );
                        }
                        self.finish(frames, rop, slots, ctx);
                    }
                }
                Ok(None)
            }
            OpKind::InterTileProduce { .. } => {
                match collectives::producer_group(self, rop, ctx)? {
                    Some(g) => {
                        let Some(region) = rop.regions.first() else {
                            return Err(self.at(rop, "producer region was not resolved".into()));
                        };
                        set_slot(slots, region.args.first(), RtValue::Index(g));
                        frames.push(Frame {
                            ops: &region.ops,
                            pc: 0,
                            kind: FrameKind::Produce {
                                owner: rop,
                                group: g,
                            },
                        });
                    }
                    None => {
                        let fut = FutureVal {
                            group: None,
                            values: Vec::new(),
                        };
                        self.set(slots, rop, 0, RtValue::Future(Rc::new(fut)));
                        self.finish(frames, rop, slots, ctx);
                    }
                }
                Ok(None)
            }
            OpKind::InterTileReduce { .. } | OpKind::InterTileConsume { .. } => {
                if can_suspend {
                    Ok(Some(Outcome::Suspended(rop)))
                } else {
                    Err(self.at(
                        rop,
                        "a collective inside a linalg region or combiner cannot be executed".into(),
                    ))
                }
            }
            _ => {
                self.exec(rop, slots, ctx)?;
                self.finish(frames, rop, slots, ctx);
                Ok(None)
            }
        }
    }

    /// Ends the innermost block with the values its terminator yields.
    fn end_block<'r, 'a>(
        &mut self,
        frames: &mut Vec<Frame<'r, 'a>>,
        slots: &mut [Option<RtValue>],
        ctx: &mut CoreCtx,
        vals: Vec<RtValue>,
    ) -> Result<Option<Outcome<'r, 'a>>, SimError> {
        let Some(top) = frames.last_mut() else {
            return Ok(Some(Outcome::Finished(vals)));
        };
        match top.kind {
            FrameKind::Root => {
                frames.pop();
                return Ok(Some(Outcome::Finished(vals)));
            }
            FrameKind::For {
                owner,
                iv,
                upper,
                step,
            } => match iv.checked_add(step) {
                Some(next) if next < upper => {
                    // An empty body executes no op, yet its iterations must count
                    // towards the step limit (docs/limits.md).
                    if owner.regions.first().is_none_or(|r| r.ops.is_empty()) {
                        self.count_step(owner)?;
                    }
                    top.kind = FrameKind::For {
                        owner,
                        iv: next,
                        upper,
                        step,
                    };
                    top.pc = 0;
                    if let Some(region) = owner.regions.first() {
                        set_slot(slots, region.args.first(), RtValue::Index(next));
                        for (s, v) in region.args.iter().skip(1).zip(vals) {
                            set_slot(slots, Some(s), v);
                        }
                    }
                }
                _ => {
                    frames.pop();
                    for (k, v) in vals.into_iter().enumerate() {
                        self.set(slots, owner, k, v);
                    }
                    self.finish(frames, owner, slots, ctx);
                }
            },
            FrameKind::If { owner } => {
                frames.pop();
                for (k, v) in vals.into_iter().enumerate() {
                    self.set(slots, owner, k, v);
                }
                self.finish(frames, owner, slots, ctx);
            }
            FrameKind::Produce { owner, group } => {
                frames.pop();
                let fut = FutureVal {
                    group: Some(group),
                    values: vals,
                };
                self.set(slots, owner, 0, RtValue::Future(Rc::new(fut)));
                self.finish(frames, owner, slots, ctx);
            }
        }
        Ok(None)
    }

    /// Completes an op: frees the slots it used last and moves past it.
    pub(crate) fn finish(
        &self,
        frames: &mut [Frame<'_, '_>],
        rop: &ROp<'_>,
        slots: &mut [Option<RtValue>],
        ctx: &mut CoreCtx,
    ) {
        self.release(rop, slots, ctx);
        if let Some(top) = frames.last_mut() {
            top.pc += 1;
        }
    }

    /// Frees the slots whose last use is `rop`. A tensor is uncharged when its last
    /// reference goes: from its own slot, or from the last future that carried it as a
    /// partial result (its slot went first, at the `yield_partial`).
    fn release(&self, rop: &ROp<'_>, slots: &mut [Option<RtValue>], ctx: &mut CoreCtx) {
        for &s in &rop.frees {
            match slots.get(s) {
                Some(Some(RtValue::Tensor(t))) if Rc::strong_count(t) == 1 => {
                    ctx.live_bytes = ctx.live_bytes.saturating_sub(tensor_bytes(t));
                }
                Some(Some(RtValue::Future(f))) if Rc::strong_count(f) == 1 => {
                    for v in &f.values {
                        if let RtValue::Tensor(t) = v {
                            if Rc::strong_count(t) == 1 {
                                ctx.live_bytes = ctx.live_bytes.saturating_sub(tensor_bytes(t));
                            }
                        }
                    }
                }
                _ => {}
            }
            if let Some(slot) = slots.get_mut(s) {
                *slot = None;
            }
        }
    }

    /// Runs a region to completion (no suspension) with the given block arguments and
    /// returns what its terminator yields.
    pub(crate) fn run_region(
        &mut self,
        region: &Region<'_>,
        args: Vec<RtValue>,
        slots: &mut [Option<RtValue>],
        ctx: &mut CoreCtx,
    ) -> Result<Vec<RtValue>, SimError> {
        for (s, v) in region.args.iter().zip(args) {
            set_slot(slots, Some(s), v);
        }
        let mut frames = vec![Frame {
            ops: &region.ops,
            pc: 0,
            kind: FrameKind::Root,
        }];
        match self.run_frames(&mut frames, slots, ctx, false)? {
            Outcome::Finished(v) => Ok(v),
            Outcome::Suspended(rop) => Err(self.at(rop, "cannot suspend inside a region".into())),
        }
    }

    fn exec(
        &mut self,
        rop: &ROp<'_>,
        slots: &mut [Option<RtValue>],
        ctx: &mut CoreCtx,
    ) -> Result<(), SimError> {
        match &rop.op.kind {
            OpKind::Constant { value } => {
                let t = rop.op.result_types.first();
                let v = match (value, t) {
                    (Literal::Int(i), Some(Type::Scalar(s))) if !s.is_float() => {
                        RtValue::Index(exec_ew::wrap(*i, exec_ew::int_bits(*s)))
                    }
                    (Literal::Int(i), Some(Type::Scalar(s))) => {
                        RtValue::Float(round_to(*s, *i as f32) as f64)
                    }
                    (Literal::Float(f), Some(Type::Scalar(s))) if !s.is_float() => {
                        RtValue::Index(*f as i64)
                    }
                    (Literal::Float(f), Some(Type::Scalar(s))) if *s != ScalarType::F64 => {
                        RtValue::Float(round_to(*s, *f as f32) as f64)
                    }
                    (Literal::Int(i), Some(Type::Tensor { .. })) => {
                        let (shape, elem) = self.result_shape(rop)?;
                        let data = self.filled(&shape, round_to(elem, *i as f32));
                        self.new_tensor(ctx, rop, shape, elem, data, None)?
                    }
                    (Literal::Int(i), _) => RtValue::Index(*i),
                    (Literal::Float(f), _) => RtValue::Float(*f),
                    (Literal::DenseSplat(f), _) => {
                        let (shape, elem) = self.result_shape(rop)?;
                        let data = self.filled(&shape, round_to(elem, *f as f32));
                        self.new_tensor(ctx, rop, shape, elem, data, None)?
                    }
                    (Literal::Dense(v), _) => {
                        let (shape, elem) = self.result_shape(rop)?;
                        if v.len() != shape.iter().product::<usize>() {
                            return Err(self.at(
                                rop,
                                format!(
                                    "dense constant has {} values for shape {shape:?}",
                                    v.len()
                                ),
                            ));
                        }
                        let data = self.domain.dense(elem, v);
                        self.new_tensor(ctx, rop, shape, elem, data, None)?
                    }
                };
                self.set(slots, rop, 0, v);
            }
            OpKind::GetComputeTileId { dim } => {
                if let Some(d) = dim {
                    if *d >= ctx.tile_id.len().max(1) {
                        return Err(self.at(
                            rop,
                            format!(
                                "dim {d} is outside the {}-dimensional grid",
                                ctx.tile_id.len().max(1)
                            ),
                        ));
                    }
                }
                for i in 0..rop.results.len() {
                    let v = ctx.tile_id.get(dim.unwrap_or(i)).copied().unwrap_or(0);
                    self.set(slots, rop, i, RtValue::Index(v));
                }
            }
            OpKind::LinalgIndex { dim } => {
                let v = ctx.generic_point.get(*dim).copied().ok_or_else(|| {
                    self.at(
                        rop,
                        format!(
                            "linalg.index {dim} outside a linalg.generic body with that many loops"
                        ),
                    )
                })?;
                self.set(slots, rop, 0, RtValue::Index(v));
            }
            OpKind::Elementwise { op, .. } => {
                let n = rop.operands.len();
                let v = elementwise::elementwise(self, rop, slots, ctx, *op, 0..n)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Compare { predicate, .. } => {
                let v = elementwise::compare(self, rop, slots, ctx, *predicate)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Select { .. } => {
                let v = elementwise::select(self, rop, slots, ctx)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Cast {
                name, source_type, ..
            } => {
                let v = elementwise::cast(self, rop, slots, ctx, name, source_type)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::ConstructMemoryView { .. } => memory::construct_view(self, rop, slots)?,
            OpKind::ConstructDistributedMemoryView { .. } => {
                memory::construct_distributed_view(self, rop, slots)?
            }
            OpKind::ConstructAccessTile { .. } => memory::construct_tile(self, rop, slots)?,
            OpKind::ConstructIndirectAccessTile { .. } => {
                memory::construct_indirect_tile(self, rop, slots, ctx)?
            }
            OpKind::Load { .. } => memory::load(self, rop, slots, ctx)?,
            OpKind::Store { .. } => memory::store(self, rop, slots, ctx)?,
            OpKind::RuntimeArgExtract {
                field, input_type, ..
            } => {
                let v = match (field, input_type) {
                    (RuntimeArgField::Value, _) => self.index(slots, rop, 0)?,
                    (
                        RuntimeArgField::Granularity,
                        Type::RuntimeArg {
                            granularity: Some(g),
                            ..
                        },
                    ) => *g,
                    (
                        RuntimeArgField::Upperbound,
                        Type::RuntimeArg {
                            upperbound: Some(u),
                            ..
                        },
                    ) => *u,
                    (RuntimeArgField::Granularity, _) => 1,
                    (RuntimeArgField::Upperbound, _) => {
                        return Err(self.at(
                            rop,
                            "the runtime argument's type declares no upperbound".into(),
                        ))
                    }
                };
                if matches!(field, RuntimeArgField::Value) {
                    if let Type::RuntimeArg {
                        upperbound: Some(u),
                        ..
                    } = input_type
                    {
                        if v > *u {
                            return Err(self.at(
                                rop,
                                format!("runtime argument value {v} exceeds its upperbound {u}"),
                            ));
                        }
                    }
                }
                self.set(slots, rop, 0, RtValue::Index(v));
            }
            _ => tensor::exec_tensor(self, rop, slots, ctx)?,
        }
        Ok(())
    }
}

/// [`Simulator::run_region`] as the op families call it (see [`RunRegion`]).
fn run_region(
    sim: &mut Simulator<'_>,
    region: &Region<'_>,
    args: Vec<RtValue>,
    slots: &mut [Option<RtValue>],
    ctx: &mut CoreCtx,
) -> Result<Vec<RtValue>, SimError> {
    sim.run_region(region, args, slots, ctx)
}
