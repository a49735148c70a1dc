//! The KTIR interpreter: runs a verified kernel SPMD over its grid, computing real numbers,
//! and records every data movement and compute step as a timing [`Task`].
//!
//! Execution works on a resolved form of each function (values in numbered slots, last
//! uses precomputed), built once per launch, never by looking names up while running.
//!
//! Memory model (assumptions, stated so reviewers can disagree):
//! - DRAM holds named buffers. Addresses are in elements; a view's element type must match
//!   the buffer it lands in. Buffers start on 128-byte boundaries.
//! - A core's scratchpad (`ct_local`) is element-addressed storage of the view's type;
//!   bytes used = (highest element touched + 1) x element size, checked against the
//!   plannable capacity.
//! - Tensors produced inside a kernel live in the executing core's scratchpad; their live
//!   bytes are counted and checked against the plannable capacity too.
//! - Points of an access tile that fall outside its view's `coordinate_set` are an error
//!   (the spec does not say whether they are masked).
//! - Scalar `index` arithmetic costs no time. Kernel launches run one after another: each
//!   launch starts when the previous one has finished.

use crate::machine::Machine;
use crate::timing::{DramAccess, Task, TaskId, Unit, Work};
use half::{bf16, f16};
use ktir::ast::*;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

/// Bounds that turn runaway programs into errors.
#[derive(Clone, Debug)]
pub struct ExecLimits {
    /// Operations executed over all cores and launches.
    pub max_steps: u64,
    /// Elements in one tensor value.
    pub max_tensor_elements: usize,
    /// Elements in all DRAM buffers together.
    pub max_dram_elements: usize,
    /// Timing tasks recorded.
    pub max_tasks: usize,
}

impl Default for ExecLimits {
    fn default() -> Self {
        ExecLimits {
            max_steps: 50_000_000,
            max_tensor_elements: 1 << 24,
            max_dram_elements: 1 << 28,
            max_tasks: 2_000_000,
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

fn err<T>(message: impl Into<String>) -> Result<T, SimError> {
    Err(SimError {
        message: message.into(),
        core: None,
        op: None,
    })
}

/// A named region of DRAM.
#[derive(Clone, Debug)]
pub struct DramBuffer {
    /// The buffer's name (a function argument or graph tensor).
    pub name: String,
    /// First element address.
    pub base: i64,
    /// Element type.
    pub elem: ScalarType,
    /// Contents, as f32 values already rounded to `elem`.
    pub data: Vec<f32>,
}

/// Rounds a value to what a storage type can hold.
pub fn round_to(elem: ScalarType, x: f32) -> f32 {
    match elem {
        ScalarType::F16 => f16::from_f32(x).to_f32(),
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

#[derive(Clone, Debug)]
struct TensorVal {
    shape: Vec<usize>,
    elem: ScalarType,
    data: Vec<f32>,
    /// The task whose completion makes this value available.
    ready: Option<TaskId>,
}

#[derive(Clone, Debug)]
struct ViewVal {
    base: i64,
    sizes: Vec<i64>,
    strides: Vec<i64>,
    elem: ScalarType,
    space: MemorySpace,
    set: AffineSet,
    syms: Vec<i64>,
}

#[derive(Clone, Debug)]
struct TileVal {
    view: Rc<ViewVal>,
    origin: Vec<i64>,
    shape: Vec<usize>,
    set: AffineSet,
    syms: Vec<i64>,
}

#[derive(Clone, Debug)]
enum RtValue {
    Index(i64),
    Float(f64),
    Tensor(Rc<TensorVal>),
    View(Rc<ViewVal>),
    Tile(Rc<TileVal>),
}

/// One op in resolved form.
struct ROp<'a> {
    op: &'a Op,
    operands: Vec<usize>,
    results: Vec<usize>,
    /// Slots whose last use is this op (freed after it runs).
    frees: Vec<usize>,
    /// For `scf.for`: the body, with the slots of its block arguments.
    body: Option<(Vec<usize>, Vec<ROp<'a>>)>,
    line: u32,
}

struct Resolver<'a> {
    module: &'a Module,
    scopes: Vec<HashMap<&'a str, usize>>,
    slots: usize,
    line_index: &'a LineLookup,
}

/// Turns byte offsets into line numbers for task labels.
pub struct LineLookup {
    starts: Vec<usize>,
}

impl LineLookup {
    /// Indexes `text`'s lines.
    pub fn new(text: &str) -> LineLookup {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineLookup { starts }
    }

    fn line(&self, offset: u32) -> u32 {
        match self.starts.binary_search(&(offset as usize)) {
            Ok(i) => i as u32 + 1,
            Err(i) => i as u32,
        }
    }
}

impl<'a> Resolver<'a> {
    fn new_slot(&mut self, name: &'a str) -> usize {
        let s = self.slots;
        self.slots += 1;
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name, s);
        }
        s
    }

    fn lookup(&self, v: &Value) -> Result<usize, SimError> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(v.name.as_str()).copied())
            .map_or_else(|| err(format!("use of undefined value '%{}'", v.name)), Ok)
    }

    fn block(&mut self, ops: &'a [Op]) -> Result<Vec<ROp<'a>>, SimError> {
        let mut out = Vec::with_capacity(ops.len());
        for op in ops {
            let operands = op
                .kind
                .operands()
                .into_iter()
                .map(|v| self.lookup(v))
                .collect::<Result<Vec<_>, _>>()?;
            let body = if let OpKind::For {
                induction,
                iter_args,
                body,
                ..
            } = &op.kind
            {
                self.scopes.push(HashMap::new());
                let mut args = vec![self.new_slot(induction)];
                for (name, _) in iter_args {
                    args.push(self.new_slot(name));
                }
                let inner = self.block(&body.ops)?;
                self.scopes.pop();
                Some((args, inner))
            } else {
                // Other region-carrying ops: give their values slots (the first region is
                // kept; these ops are not executed yet).
                let mut first = None;
                for region in op.kind.regions() {
                    self.scopes.push(HashMap::new());
                    let args = region.args.iter().map(|(n, _)| self.new_slot(n)).collect();
                    let inner = self.block(&region.ops)?;
                    self.scopes.pop();
                    if first.is_none() {
                        first = Some((args, inner));
                    }
                }
                first
            };
            let results = op.results.iter().map(|r| self.new_slot(r)).collect();
            out.push(ROp {
                op,
                operands,
                results,
                frees: Vec::new(),
                body,
                line: self.line_index.line(op.span.start),
            });
        }
        let _ = self.module;
        Ok(out)
    }
}

/// Records the last op (at this block level) that uses each slot defined in this block
/// (`block_args` or op results), so values can be freed; values from enclosing blocks stay
/// alive because a loop body runs again.
fn compute_frees(ops: &mut [ROp<'_>], block_args: &[usize]) {
    fn uses(op: &ROp<'_>, out: &mut Vec<usize>) {
        out.extend(&op.operands);
        if let Some((_, body)) = &op.body {
            for inner in body {
                uses(inner, out);
            }
        }
    }
    let mut last: HashMap<usize, usize> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        let mut u = Vec::new();
        uses(op, &mut u);
        for s in u {
            last.insert(s, i);
        }
    }
    let defined: std::collections::HashSet<usize> = block_args
        .iter()
        .copied()
        .chain(ops.iter().flat_map(|o| o.results.iter().copied()))
        .collect();
    let mut by_op: Vec<Vec<usize>> = vec![Vec::new(); ops.len()];
    for (slot, i) in last {
        if defined.contains(&slot) {
            by_op[i].push(slot);
        }
    }
    for (op, mut f) in ops.iter_mut().zip(by_op) {
        f.sort_unstable();
        op.frees = f;
        if let Some((args, body)) = &mut op.body {
            let args = args.clone();
            compute_frees(body, &args);
        }
    }
}

/// The simulator's state across launches: DRAM, scratchpads and the recorded tasks.
pub struct Simulator<'m> {
    machine: &'m Machine,
    limits: ExecLimits,
    dram: Vec<DramBuffer>,
    next_base: i64,
    scratchpads: Vec<Vec<f32>>,
    tasks: Vec<Task>,
    /// Tasks every task of the next launch must wait for.
    barrier: Option<TaskId>,
    steps: u64,
    /// Peak live tensor bytes per core over the run.
    pub peak_tensor_bytes: Vec<u64>,
}

/// Per-core execution context.
struct CoreCtx {
    core: usize,
    tile_id: Vec<i64>,
    live_bytes: u64,
    /// Tasks of this core in this launch without a successor yet (for the barrier).
    last_tasks: Vec<TaskId>,
}

impl<'m> Simulator<'m> {
    /// A simulator for `machine` with empty DRAM.
    pub fn new(machine: &'m Machine, limits: ExecLimits) -> Self {
        let cores = machine.cores.value;
        Simulator {
            machine,
            limits,
            dram: Vec::new(),
            next_base: 0,
            scratchpads: vec![Vec::new(); cores],
            tasks: Vec::new(),
            barrier: None,
            steps: 0,
            peak_tensor_bytes: vec![0; cores],
        }
    }

    /// Places a buffer in DRAM and returns its base address (in elements).
    pub fn alloc(&mut self, name: &str, elem: ScalarType, data: Vec<f32>) -> Result<i64, SimError> {
        let total: usize = self.dram.iter().map(|b| b.data.len()).sum::<usize>() + data.len();
        if total > self.limits.max_dram_elements {
            return err(format!(
                "DRAM buffers would hold {total} elements, more than the limit of {}",
                self.limits.max_dram_elements
            ));
        }
        if self.dram.iter().any(|b| b.name == name) {
            return err(format!("DRAM buffer '{name}' is allocated twice"));
        }
        // Bases are element addresses on 128-byte boundaries; buffers never overlap.
        let per_line = (128 / elem.size_bytes().max(1)) as i64;
        let base = (self.next_base + per_line - 1) / per_line * per_line;
        self.next_base = base + data.len().max(1) as i64 + per_line;
        let data = data.into_iter().map(|x| round_to(elem, x)).collect();
        self.dram.push(DramBuffer {
            name: name.to_string(),
            base,
            elem,
            data,
        });
        Ok(base)
    }

    /// A DRAM buffer by name.
    pub fn buffer(&self, name: &str) -> Option<&DramBuffer> {
        self.dram.iter().find(|b| b.name == name)
    }

    /// All DRAM buffers.
    pub fn buffers(&self) -> &[DramBuffer] {
        &self.dram
    }

    /// The timing tasks recorded so far.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Operations executed so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Runs `func` of `module` on every tile of its grid with the given `index` arguments.
    /// `source` is the module's text, for line numbers in the trace.
    pub fn launch(
        &mut self,
        module: &Module,
        source: &LineLookup,
        func: &str,
        args: &[i64],
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
        let mut resolver = Resolver {
            module,
            scopes: vec![HashMap::new()],
            slots: 0,
            line_index: source,
        };
        let arg_slots: Vec<usize> = f.args.iter().map(|(n, _)| resolver.new_slot(n)).collect();
        let mut body = resolver.block(&f.body.ops)?;
        compute_frees(&mut body, &arg_slots);
        let slot_count = resolver.slots;
        let mut launch_tails = Vec::new();
        for core in 0..tiles {
            // Linear id: dimension 0 varies fastest.
            let mut tile_id = Vec::with_capacity(grid.len());
            let mut rest = core;
            for g in &grid {
                tile_id.push((rest % g) as i64);
                rest /= g;
            }
            let mut ctx = CoreCtx {
                core,
                tile_id,
                live_bytes: 0,
                last_tasks: Vec::new(),
            };
            let mut slots: Vec<Option<RtValue>> = vec![None; slot_count];
            for (s, (a, (_, t))) in arg_slots.iter().zip(args.iter().zip(&f.args)) {
                slots[*s] = Some(match t {
                    Type::Scalar(s) if s.is_float() => RtValue::Float(*a as f64),
                    _ => RtValue::Index(*a),
                });
            }
            self.run_block(module, &body, &mut slots, &mut ctx)
                .map_err(|mut e| {
                    e.core.get_or_insert(core);
                    e
                })?;
            launch_tails.extend(ctx.last_tasks);
        }
        if !launch_tails.is_empty() {
            // A zero-cost barrier: the next launch starts when this one has finished.
            let id = self.push_task(Task {
                core: 0,
                unit: Unit::Sfp,
                work: Work::Compute { cycles: 0 },
                deps: launch_tails,
                op: format!("end of @{func}"),
                line: 0,
            })?;
            self.barrier = Some(id);
        }
        Ok(())
    }

    fn push_task(&mut self, mut task: Task) -> Result<TaskId, SimError> {
        if self.tasks.len() >= self.limits.max_tasks {
            return err(format!(
                "the run recorded more than {} timing tasks; raise the limit or shrink the problem",
                self.limits.max_tasks
            ));
        }
        if let Some(b) = self.barrier {
            if !task.deps.contains(&b) {
                task.deps.push(b);
            }
        }
        task.deps.sort_unstable();
        task.deps.dedup();
        self.tasks.push(task);
        Ok(self.tasks.len() - 1)
    }

    fn record(
        &mut self,
        ctx: &mut CoreCtx,
        unit: Unit,
        work: Work,
        deps: Vec<TaskId>,
        rop: &ROp<'_>,
    ) -> Result<TaskId, SimError> {
        let id = self.push_task(Task {
            core: ctx.core,
            unit,
            work,
            deps: deps.clone(),
            op: rop.op.kind.name().to_string(),
            line: rop.line,
        })?;
        ctx.last_tasks.retain(|t| !deps.contains(t));
        ctx.last_tasks.push(id);
        Ok(id)
    }

    fn run_block(
        &mut self,
        module: &Module,
        ops: &[ROp<'_>],
        slots: &mut [Option<RtValue>],
        ctx: &mut CoreCtx,
    ) -> Result<Option<Vec<RtValue>>, SimError> {
        for rop in ops {
            self.steps += 1;
            if self.steps > self.limits.max_steps {
                return Err(self.at(rop, format!(
                    "the run executed more than {} operations; stopping (raise the step limit if this is expected)",
                    self.limits.max_steps
                )));
            }
            let outcome = self.exec(module, rop, slots, ctx).map_err(|mut e| {
                if e.op.is_none() {
                    e.op = Some((rop.op.kind.name().to_string(), rop.line));
                }
                e
            })?;
            if let Some(yielded) = outcome {
                return Ok(Some(yielded));
            }
            for &s in &rop.frees {
                if let Some(Some(RtValue::Tensor(t))) = slots.get(s) {
                    if Rc::strong_count(t) == 1 {
                        ctx.live_bytes = ctx.live_bytes.saturating_sub(tensor_bytes(t));
                    }
                }
                if let Some(slot) = slots.get_mut(s) {
                    *slot = None;
                }
            }
        }
        Ok(None)
    }

    fn at(&self, rop: &ROp<'_>, message: String) -> SimError {
        SimError {
            message,
            core: None,
            op: Some((rop.op.kind.name().to_string(), rop.line)),
        }
    }

    fn get<'s>(
        &self,
        slots: &'s [Option<RtValue>],
        rop: &ROp<'_>,
        i: usize,
    ) -> Result<&'s RtValue, SimError> {
        rop.operands
            .get(i)
            .and_then(|s| slots.get(*s))
            .and_then(|v| v.as_ref())
            .ok_or_else(|| {
                self.at(
                    rop,
                    format!("operand {i} has no value (used after it was freed?)"),
                )
            })
    }

    fn index(&self, slots: &[Option<RtValue>], rop: &ROp<'_>, i: usize) -> Result<i64, SimError> {
        match self.get(slots, rop, i)? {
            RtValue::Index(v) => Ok(*v),
            _ => Err(self.at(rop, format!("operand {i} is not an index value"))),
        }
    }

    fn tensor(
        &self,
        slots: &[Option<RtValue>],
        rop: &ROp<'_>,
        i: usize,
    ) -> Result<Rc<TensorVal>, SimError> {
        match self.get(slots, rop, i)? {
            RtValue::Tensor(t) => Ok(t.clone()),
            _ => Err(self.at(rop, format!("operand {i} is not a tensor"))),
        }
    }

    fn new_tensor(
        &mut self,
        ctx: &mut CoreCtx,
        rop: &ROp<'_>,
        shape: Vec<usize>,
        elem: ScalarType,
        data: Vec<f32>,
        ready: Option<TaskId>,
    ) -> Result<RtValue, SimError> {
        let t = TensorVal {
            shape,
            elem,
            data,
            ready,
        };
        ctx.live_bytes += tensor_bytes(&t);
        let cap = self.machine.scratchpad_capacity_bytes();
        if ctx.live_bytes > cap {
            return Err(self.at(
                rop,
                format!(
                    "scratchpad overflow on core {}: live tensors need {} bytes after this {} of {} bytes, but the plannable capacity is {} bytes",
                    ctx.core,
                    ctx.live_bytes,
                    rop.op.kind.name(),
                    tensor_bytes(&t),
                    cap
                ),
            ));
        }
        if let Some(peak) = self.peak_tensor_bytes.get_mut(ctx.core) {
            *peak = (*peak).max(ctx.live_bytes);
        }
        Ok(RtValue::Tensor(Rc::new(t)))
    }

    fn check_size(&self, rop: &ROp<'_>, shape: &[usize]) -> Result<usize, SimError> {
        let n = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .filter(|n| *n <= self.limits.max_tensor_elements);
        n.ok_or_else(|| {
            self.at(
                rop,
                format!(
                    "tensor of shape {shape:?} exceeds the limit of {} elements",
                    self.limits.max_tensor_elements
                ),
            )
        })
    }

    fn result_shape(&self, rop: &ROp<'_>) -> Result<(Vec<usize>, ScalarType), SimError> {
        let t = rop
            .op
            .result_types
            .first()
            .ok_or_else(|| self.at(rop, "has no result type".into()))?;
        let shape = t
            .static_shape()
            .ok_or_else(|| self.at(rop, "dynamic tensor shapes are not executed yet".into()))?;
        let elem = t.elem().unwrap_or(ScalarType::F32);
        self.check_size(rop, &shape)?;
        Ok((shape, elem))
    }

    fn set(&self, slots: &mut [Option<RtValue>], rop: &ROp<'_>, i: usize, v: RtValue) {
        if let Some(s) = rop.results.get(i).and_then(|s| slots.get_mut(*s)) {
            *s = Some(v);
        }
    }

    fn resolve_set(
        &self,
        module: &Module,
        rop: &ROp<'_>,
        a: &Option<Attr>,
        what: &str,
    ) -> Result<AffineSet, SimError> {
        match a.as_ref().and_then(|a| module.resolve(a)) {
            Some(Attr::Set(s)) => Ok(s.clone()),
            _ => Err(self.at(rop, format!("'{what}' is missing or not an affine_set"))),
        }
    }

    fn exec(
        &mut self,
        module: &Module,
        rop: &ROp<'_>,
        slots: &mut [Option<RtValue>],
        ctx: &mut CoreCtx,
    ) -> Result<Option<Vec<RtValue>>, SimError> {
        match &rop.op.kind {
            OpKind::Return { .. } => {}
            OpKind::Constant { value } => {
                let t = rop.op.result_types.first();
                let v = match (value, t) {
                    (Literal::Int(i), Some(Type::Scalar(s))) if !s.is_float() => RtValue::Index(*i),
                    (Literal::Int(i), _) => RtValue::Float(*i as f64),
                    (Literal::Float(f), _) => RtValue::Float(*f),
                    (Literal::DenseSplat(f), _) => {
                        let (shape, elem) = self.result_shape(rop)?;
                        let n = shape.iter().product();
                        self.new_tensor(
                            ctx,
                            rop,
                            shape,
                            elem,
                            vec![round_to(elem, *f as f32); n],
                            None,
                        )?
                    }
                    (Literal::Dense(v), _) => {
                        let (shape, elem) = self.result_shape(rop)?;
                        let data = v.iter().map(|x| round_to(elem, *x as f32)).collect();
                        self.new_tensor(ctx, rop, shape, elem, data, None)?
                    }
                };
                self.set(slots, rop, 0, v);
            }
            OpKind::GetComputeTileId => {
                for i in 0..rop.results.len() {
                    let v = ctx.tile_id.get(i).copied().unwrap_or(0);
                    self.set(slots, rop, i, RtValue::Index(v));
                }
            }
            OpKind::Binary { op, .. } => {
                let a = self.get(slots, rop, 0)?.clone();
                let b = self.get(slots, rop, 1)?.clone();
                let v = match (a, b) {
                    (RtValue::Index(x), RtValue::Index(y)) => {
                        RtValue::Index(int_binary(*op, x, y).ok_or_else(|| {
                            self.at(
                                rop,
                                format!(
                                    "integer {} of {x} and {y} overflows or divides by zero",
                                    op.name()
                                ),
                            )
                        })?)
                    }
                    (RtValue::Float(x), RtValue::Float(y)) => {
                        RtValue::Float(float_binary(*op, x as f32, y as f32) as f64)
                    }
                    (RtValue::Tensor(x), RtValue::Tensor(y)) => {
                        if x.shape != y.shape {
                            return Err(self.at(
                                rop,
                                format!("operand shapes {:?} and {:?} differ", x.shape, y.shape),
                            ));
                        }
                        let elem = x.elem;
                        let data: Vec<f32> = x
                            .data
                            .iter()
                            .zip(&y.data)
                            .map(|(a, b)| round_to(elem, float_binary(*op, *a, *b)))
                            .collect();
                        let cycles = self.machine.sfp_cycles(data.len() as u64, false);
                        let deps = x.ready.into_iter().chain(y.ready).collect();
                        let task =
                            self.record(ctx, Unit::Sfp, Work::Compute { cycles }, deps, rop)?;
                        self.new_tensor(ctx, rop, x.shape.clone(), elem, data, Some(task))?
                    }
                    _ => return Err(self.at(rop, "operands are of different kinds".into())),
                };
                self.set(slots, rop, 0, v);
            }
            OpKind::Unary { op, .. } => {
                let v = match self.get(slots, rop, 0)?.clone() {
                    RtValue::Float(x) => RtValue::Float(unary(*op, x as f32) as f64),
                    RtValue::Tensor(x) => {
                        let data: Vec<f32> = x
                            .data
                            .iter()
                            .map(|a| round_to(x.elem, unary(*op, *a)))
                            .collect();
                        let cycles = self
                            .machine
                            .sfp_cycles(data.len() as u64, op.is_transcendental());
                        let task = self.record(
                            ctx,
                            Unit::Sfp,
                            Work::Compute { cycles },
                            x.ready.into_iter().collect(),
                            rop,
                        )?;
                        self.new_tensor(ctx, rop, x.shape.clone(), x.elem, data, Some(task))?
                    }
                    _ => return Err(self.at(rop, "operand is not a float value".into())),
                };
                self.set(slots, rop, 0, v);
            }
            OpKind::ConstructMemoryView {
                sizes,
                strides,
                coordinate_set,
                memory_space,
                ..
            } => {
                let base = self.index(slots, rop, 0)?;
                let mut next = 1;
                let mut dynamic = Vec::new();
                let mut take = |s: &SizeOperand, this: &Self| -> Result<i64, SimError> {
                    match s {
                        SizeOperand::Static(v) => Ok(*v),
                        SizeOperand::Dynamic(_) => {
                            let v = this.index(slots, rop, next)?;
                            next += 1;
                            Ok(v)
                        }
                    }
                };
                let mut size_values = Vec::new();
                for s in sizes {
                    let v = take(s, self)?;
                    if matches!(s, SizeOperand::Dynamic(_)) {
                        dynamic.push(v);
                    }
                    size_values.push(v);
                }
                let stride_values = strides
                    .iter()
                    .map(|s| take(s, self))
                    .collect::<Result<Vec<_>, _>>()?;
                let set = self.resolve_set(module, rop, coordinate_set, "coordinate_set")?;
                let elem = rop
                    .op
                    .result_types
                    .first()
                    .and_then(Type::elem)
                    .unwrap_or(ScalarType::F32);
                let view = ViewVal {
                    base,
                    sizes: size_values,
                    strides: stride_values,
                    elem,
                    space: memory_space.clone().unwrap_or(MemorySpace::Global),
                    syms: if set.syms == dynamic.len() {
                        dynamic
                    } else {
                        vec![0; set.syms]
                    },
                    set,
                };
                self.set(slots, rop, 0, RtValue::View(Rc::new(view)));
            }
            OpKind::ConstructAccessTile {
                subscripts,
                operands,
                access_tile_set,
                symbols,
                ..
            } => {
                let view = match self.get(slots, rop, 0)? {
                    RtValue::View(v) => v.clone(),
                    _ => return Err(self.at(rop, "operand 0 is not a memory view".into())),
                };
                let mut vals = Vec::with_capacity(operands.len());
                for i in 0..operands.len() {
                    vals.push(self.index(slots, rop, 1 + i)?);
                }
                let mut syms = Vec::with_capacity(symbols.len());
                for i in 0..symbols.len() {
                    syms.push(self.index(slots, rop, 1 + operands.len() + i)?);
                }
                let origin = subscripts
                    .iter()
                    .map(|e| {
                        e.eval(&vals, &[]).ok_or_else(|| {
                            self.at(rop, "subscript overflows or divides by zero".into())
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let set = self.resolve_set(module, rop, access_tile_set, "access_tile_set")?;
                let shape = match rop.op.result_types.first().and_then(Type::static_shape) {
                    Some(s) => s,
                    None => set
                        .box_bounds(&syms)
                        .map(|b| {
                            b.iter()
                                .map(|(lo, hi)| (hi - lo + 1).max(0) as usize)
                                .collect()
                        })
                        .ok_or_else(|| {
                            self.at(
                                rop,
                                "cannot size a dynamic access tile whose set is not a box".into(),
                            )
                        })?,
                };
                self.check_size(rop, &shape)?;
                let tile = TileVal {
                    view,
                    origin,
                    shape,
                    set,
                    syms,
                };
                self.set(slots, rop, 0, RtValue::Tile(Rc::new(tile)));
            }
            OpKind::Load { .. } => {
                let tile = match self.get(slots, rop, 0)? {
                    RtValue::Tile(t) => t.clone(),
                    _ => return Err(self.at(rop, "operand is not an access tile".into())),
                };
                let (shape, elem) = self.result_shape(rop)?;
                if shape != tile.shape {
                    return Err(self.at(
                        rop,
                        format!(
                            "tensor shape {shape:?} differs from the tile's {:?}",
                            tile.shape
                        ),
                    ));
                }
                if elem != tile.view.elem {
                    return Err(self.at(
                        rop,
                        format!(
                            "loads {} from a view of {}",
                            elem.name(),
                            tile.view.elem.name()
                        ),
                    ));
                }
                let mut data = vec![0.0f32; shape.iter().product()];
                let mut moved = 0u64;
                for_each_point(&tile.shape, |flat, p| {
                    if !tile.set.contains(p, &tile.syms) {
                        return Ok(());
                    }
                    let v = self.read(rop, ctx, &tile, p)?;
                    data[flat] = v;
                    moved += 1;
                    Ok(())
                })?;
                let bytes = moved * elem.size_bytes() as u64;
                let (src, dram) = self.source_stop(ctx, &tile.view);
                let work = Work::Transfer {
                    src_stop: src,
                    dst_stop: self.machine.core_stop(ctx.core),
                    bytes,
                    dram,
                };
                let task = self.record(ctx, Unit::Dma, work, Vec::new(), rop)?;
                let v = self.new_tensor(ctx, rop, shape, elem, data, Some(task))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Store { .. } => {
                let value = self.tensor(slots, rop, 0)?;
                let tile = match self.get(slots, rop, 1)? {
                    RtValue::Tile(t) => t.clone(),
                    _ => return Err(self.at(rop, "operand 1 is not an access tile".into())),
                };
                if value.shape != tile.shape {
                    return Err(self.at(
                        rop,
                        format!(
                            "tensor shape {:?} differs from the tile's {:?}",
                            value.shape, tile.shape
                        ),
                    ));
                }
                let mut moved = 0u64;
                for_each_point(&tile.shape, |flat, p| {
                    if !tile.set.contains(p, &tile.syms) {
                        return Ok(());
                    }
                    let x = value.data.get(flat).copied().unwrap_or(0.0);
                    self.write(rop, ctx, &tile, p, x)?;
                    moved += 1;
                    Ok(())
                })?;
                let bytes = moved * tile.view.elem.size_bytes() as u64;
                let (dst, dram) = self.source_stop(ctx, &tile.view);
                let dram = if dram == DramAccess::Read {
                    DramAccess::Write
                } else {
                    dram
                };
                let work = Work::Transfer {
                    src_stop: self.machine.core_stop(ctx.core),
                    dst_stop: dst,
                    bytes,
                    dram,
                };
                self.record(ctx, Unit::Dma, work, value.ready.into_iter().collect(), rop)?;
            }
            OpKind::TensorEmpty { .. } => {
                let (shape, elem) = self.result_shape(rop)?;
                let n = shape.iter().product();
                let v = self.new_tensor(ctx, rop, shape, elem, vec![0.0; n], None)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Fill { .. } => {
                let x = match self.get(slots, rop, 0)? {
                    RtValue::Float(f) => *f as f32,
                    RtValue::Index(i) => *i as f32,
                    _ => return Err(self.at(rop, "fill value must be a scalar".into())),
                };
                let init = self.tensor(slots, rop, 1)?;
                let data = vec![round_to(init.elem, x); init.data.len()];
                let cycles = self.machine.sfp_cycles(data.len() as u64, false);
                let task = self.record(
                    ctx,
                    Unit::Sfp,
                    Work::Compute { cycles },
                    init.ready.into_iter().collect(),
                    rop,
                )?;
                let v =
                    self.new_tensor(ctx, rop, init.shape.clone(), init.elem, data, Some(task))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Matmul { .. } => {
                let a = self.tensor(slots, rop, 0)?;
                let b = self.tensor(slots, rop, 1)?;
                let c = self.tensor(slots, rop, 2)?;
                let (m, k, n) = match (a.shape.as_slice(), b.shape.as_slice(), c.shape.as_slice()) {
                    ([m, k], [k2, n], [m2, n2]) if k == k2 && m == m2 && n == n2 => (*m, *k, *n),
                    _ => {
                        return Err(self.at(
                            rop,
                            format!(
                                "shapes {:?} x {:?} -> {:?} do not agree",
                                a.shape, b.shape, c.shape
                            ),
                        ))
                    }
                };
                // Accumulate in f32 on top of the init, then store in the init's type.
                let mut out = vec![0.0f32; m * n];
                for i in 0..m {
                    for j in 0..n {
                        let mut acc = c.data[i * n + j];
                        for p in 0..k {
                            acc += a.data[i * k + p] * b.data[p * n + j];
                        }
                        out[i * n + j] = round_to(c.elem, acc);
                    }
                }
                let cycles = self.machine.matmul_cycles(m as u64, n as u64, k as u64);
                let deps = a.ready.into_iter().chain(b.ready).chain(c.ready).collect();
                let task = self.record(ctx, Unit::Pt, Work::Compute { cycles }, deps, rop)?;
                let v = self.new_tensor(ctx, rop, c.shape.clone(), c.elem, out, Some(task))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Transpose { permutation, .. } => {
                let x = self.tensor(slots, rop, 0)?;
                let out_shape: Vec<usize> = permutation
                    .iter()
                    .map(|&p| x.shape.get(p).copied().unwrap_or(0))
                    .collect();
                let mut out = vec![0.0f32; x.data.len()];
                let in_strides = strides_of(&x.shape);
                for_each_point(&out_shape, |flat, p| {
                    let mut src = 0usize;
                    for (d, &perm) in permutation.iter().enumerate() {
                        src += p[d] as usize * in_strides[perm];
                    }
                    out[flat] = x.data.get(src).copied().unwrap_or(0.0);
                    Ok(())
                })?;
                let cycles = self.machine.sfp_cycles(out.len() as u64, false);
                let task = self.record(
                    ctx,
                    Unit::Sfp,
                    Work::Compute { cycles },
                    x.ready.into_iter().collect(),
                    rop,
                )?;
                let v = self.new_tensor(ctx, rop, out_shape, x.elem, out, Some(task))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Broadcast { dimensions, .. } => {
                let x = self.tensor(slots, rop, 0)?;
                let init = self.tensor(slots, rop, 1)?;
                let in_strides = strides_of(&x.shape);
                let mut out = vec![0.0f32; init.data.len()];
                for_each_point(&init.shape, |flat, p| {
                    let mut src = 0usize;
                    let mut k = 0;
                    for (d, &c) in p.iter().enumerate() {
                        if !dimensions.contains(&d) {
                            src += c as usize * in_strides.get(k).copied().unwrap_or(0);
                            k += 1;
                        }
                    }
                    out[flat] = x.data.get(src).copied().unwrap_or(0.0);
                    Ok(())
                })?;
                let cycles = self.machine.sfp_cycles(out.len() as u64, false);
                let deps = x.ready.into_iter().chain(init.ready).collect();
                let task = self.record(ctx, Unit::Sfp, Work::Compute { cycles }, deps, rop)?;
                let v =
                    self.new_tensor(ctx, rop, init.shape.clone(), init.elem, out, Some(task))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::CollapseShape { .. } | OpKind::ExpandShape { .. } => {
                // A reshape of a row-major tile is free: same data, new shape.
                let x = self.tensor(slots, rop, 0)?;
                let (shape, _) = self.result_shape(rop)?;
                if shape.iter().product::<usize>() != x.data.len() {
                    return Err(self.at(rop, format!("cannot reshape {:?} to {shape:?}", x.shape)));
                }
                let v = self.new_tensor(ctx, rop, shape, x.elem, x.data.clone(), x.ready)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::For { iter_args, .. } => {
                let lower = self.index(slots, rop, 0)?;
                let upper = self.index(slots, rop, 1)?;
                let step = self.index(slots, rop, 2)?;
                if step <= 0 {
                    return Err(self.at(rop, format!("loop step must be positive, found {step}")));
                }
                let mut carried: Vec<RtValue> = (0..iter_args.len())
                    .map(|i| self.get(slots, rop, 3 + i).cloned())
                    .collect::<Result<_, _>>()?;
                let Some((args, body)) = &rop.body else {
                    return Err(self.at(rop, "loop body was not resolved".into()));
                };
                let mut i = lower;
                while i < upper {
                    if let Some(s) = args.first().and_then(|s| slots.get_mut(*s)) {
                        *s = Some(RtValue::Index(i));
                    }
                    for (s, v) in args.iter().skip(1).zip(carried.iter()) {
                        if let Some(slot) = slots.get_mut(*s) {
                            *slot = Some(v.clone());
                        }
                    }
                    if let Some(y) = self.run_block(module, body, slots, ctx)? {
                        carried = y;
                    }
                    i = match i.checked_add(step) {
                        Some(n) => n,
                        None => break,
                    };
                }
                for (k, v) in carried.into_iter().enumerate() {
                    self.set(slots, rop, k, v);
                }
            }
            OpKind::Yield { .. } => {
                let vals = (0..rop.operands.len())
                    .map(|i| self.get(slots, rop, i).cloned())
                    .collect::<Result<Vec<_>, _>>()?;
                return Ok(Some(vals));
            }
            OpKind::Cast { name, .. } => {
                let to = rop
                    .op
                    .result_types
                    .first()
                    .and_then(Type::elem)
                    .ok_or_else(|| self.at(rop, "cast without a result type".into()))?;
                let v = match self.get(slots, rop, 0)?.clone() {
                    RtValue::Index(i) => match to {
                        t if t.is_float() => RtValue::Float(round_to(t, i as f32) as f64),
                        _ => RtValue::Index(i),
                    },
                    RtValue::Float(f) => match to {
                        t if t.is_float() => RtValue::Float(round_to(t, f as f32) as f64),
                        _ => RtValue::Index(f.trunc() as i64),
                    },
                    RtValue::Tensor(x) => {
                        let convert: fn(f32) -> f32 = match name.as_str() {
                            "arith.fptosi" | "arith.fptoui" => f32::trunc,
                            _ => |v| v,
                        };
                        let data: Vec<f32> =
                            x.data.iter().map(|&v| round_to(to, convert(v))).collect();
                        let cycles = self.machine.sfp_cycles(data.len() as u64, false);
                        let task = self.record(
                            ctx,
                            Unit::Sfp,
                            Work::Compute { cycles },
                            x.ready.into_iter().collect(),
                            rop,
                        )?;
                        self.new_tensor(ctx, rop, x.shape.clone(), to, data, Some(task))?
                    }
                    _ => return Err(self.at(rop, "operand cannot be converted".into())),
                };
                self.set(slots, rop, 0, v);
            }
            OpKind::LinalgReduce {
                inputs,
                dimensions,
                body,
                shorthand,
                ..
            } => {
                if inputs.len() != 1 {
                    return Err(self.at(rop, "only single-input reductions are executed".into()));
                }
                let combiner_name = shorthand.clone().or_else(|| {
                    body.ops
                        .iter()
                        .find(|o| !o.kind.is_terminator())
                        .map(|o| o.kind.name().to_string())
                });
                let combiner = combiner_name
                    .as_deref()
                    .and_then(crate::exec_ops::Combiner::from_op)
                    .ok_or_else(|| {
                        self.at(
                            rop,
                            format!(
                                "reductions combining with {} are not executed yet (add, mul, max, min are)",
                                combiner_name.as_deref().unwrap_or("an empty region")
                            ),
                        )
                    })?;
                let x = self.tensor(slots, rop, 0)?;
                let init = self.tensor(slots, rop, 1)?;
                let data =
                    crate::exec_ops::reduce(&x.data, &x.shape, dimensions, &init.data, combiner)
                        .map_err(|m| self.at(rop, m))?;
                let data: Vec<f32> = data.into_iter().map(|v| round_to(init.elem, v)).collect();
                let cycles = self.machine.sfp_cycles(x.data.len() as u64, false);
                let deps = x.ready.into_iter().chain(init.ready).collect();
                let task = self.record(ctx, Unit::Sfp, Work::Compute { cycles }, deps, rop)?;
                let v =
                    self.new_tensor(ctx, rop, init.shape.clone(), init.elem, data, Some(task))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::ExtractSlice {
                offsets,
                sizes,
                strides,
                ..
            } => {
                let x = self.tensor(slots, rop, 0)?;
                let mut next = 1;
                let mut take = |list: &[SizeOperand], this: &Self| -> Result<Vec<i64>, SimError> {
                    list.iter()
                        .map(|s| match s {
                            SizeOperand::Static(v) => Ok(*v),
                            SizeOperand::Dynamic(_) => {
                                let v = this.index(slots, rop, next)?;
                                next += 1;
                                Ok(v)
                            }
                        })
                        .collect()
                };
                let offs = take(offsets, self)?;
                let szs = take(sizes, self)?;
                let strs = take(strides, self)?;
                let szs: Vec<usize> = szs.iter().map(|&s| s.max(0) as usize).collect();
                self.check_size(rop, &szs)?;
                let data = crate::exec_ops::extract_slice(&x.data, &x.shape, &offs, &szs, &strs)
                    .map_err(|m| self.at(rop, m))?;
                // Result shape: the result type's, which may drop unit dims of the slice.
                let (shape, _) = self.result_shape(rop)?;
                if shape.iter().product::<usize>() != data.len() {
                    return Err(self.at(
                        rop,
                        format!(
                            "slice of {} elements does not fill the result shape {shape:?}",
                            data.len()
                        ),
                    ));
                }
                let v = self.new_tensor(ctx, rop, shape, x.elem, data, x.ready)?;
                self.set(slots, rop, 0, v);
            }
            _ => {
                return Err(self.at(
                    rop,
                    format!(
                        "'{}' is not executed by the simulator yet",
                        rop.op.kind.name()
                    ),
                ))
            }
        }
        Ok(None)
    }

    /// Where a view's data comes from on the ring, and whether DRAM is involved.
    fn source_stop(&self, ctx: &CoreCtx, view: &ViewVal) -> (usize, DramAccess) {
        match view.space {
            // Assumption: a core's DRAM traffic goes through its nearest memory stop.
            MemorySpace::Global => (self.machine.nearest_memory_stop(ctx.core), DramAccess::Read),
            MemorySpace::Local { core: None } => {
                (self.machine.core_stop(ctx.core), DramAccess::None)
            }
            MemorySpace::Local { core: Some(c) } => {
                let c = (c.max(0) as usize).min(self.machine.cores.value.saturating_sub(1));
                (self.machine.core_stop(c), DramAccess::None)
            }
        }
    }

    fn address(&self, rop: &ROp<'_>, tile: &TileVal, p: &[i64]) -> Result<i64, SimError> {
        let view = &tile.view;
        let coord: Vec<i64> = tile.origin.iter().zip(p).map(|(o, q)| o + q).collect();
        if coord.iter().zip(&view.sizes).any(|(c, n)| *c < 0 || c >= n) {
            return Err(self.at(
                rop,
                format!(
                    "point {coord:?} is outside the view's sizes {:?} (out of bounds)",
                    view.sizes
                ),
            ));
        }
        if !view.set.contains(&coord, &view.syms) {
            return Err(self.at(
                rop,
                format!(
                    "point {coord:?} lies outside the view's coordinate_set (known gap: the spec does not say whether such points are masked, so the playground stops)"
                ),
            ));
        }
        let mut addr = view.base;
        for (c, s) in coord.iter().zip(&view.strides) {
            addr = c
                .checked_mul(*s)
                .and_then(|x| addr.checked_add(x))
                .ok_or_else(|| self.at(rop, "address computation overflows".into()))?;
        }
        Ok(addr)
    }

    fn local_slot(
        &mut self,
        rop: &ROp<'_>,
        ctx: &CoreCtx,
        tile: &TileVal,
        addr: i64,
    ) -> Result<(usize, usize), SimError> {
        let core = match tile.view.space {
            MemorySpace::Local { core: Some(c) } => usize::try_from(c).unwrap_or(usize::MAX),
            _ => ctx.core,
        };
        if core >= self.scratchpads.len() {
            return Err(self.at(
                rop,
                format!("scratchpad of core {core} does not exist on this machine"),
            ));
        }
        let cap = self.machine.scratchpad_bytes.value;
        let elem_bytes = tile.view.elem.size_bytes() as u64;
        let needed = (addr.max(0) as u64 + 1).saturating_mul(elem_bytes);
        if addr < 0 || needed > cap {
            return Err(self.at(
                rop,
                format!(
                    "scratchpad access at element {addr} of core {core} needs {needed} bytes, beyond its {cap} bytes"
                ),
            ));
        }
        Ok((core, addr as usize))
    }

    fn read(
        &mut self,
        rop: &ROp<'_>,
        ctx: &CoreCtx,
        tile: &TileVal,
        p: &[i64],
    ) -> Result<f32, SimError> {
        let addr = self.address(rop, tile, p)?;
        match tile.view.space {
            MemorySpace::Global => {
                let (b, i) = self.dram_slot(rop, tile.view.elem, addr)?;
                Ok(self.dram[b].data[i])
            }
            MemorySpace::Local { .. } => {
                let (core, i) = self.local_slot(rop, ctx, tile, addr)?;
                Ok(self.scratchpads[core].get(i).copied().unwrap_or(0.0))
            }
        }
    }

    fn write(
        &mut self,
        rop: &ROp<'_>,
        ctx: &CoreCtx,
        tile: &TileVal,
        p: &[i64],
        x: f32,
    ) -> Result<(), SimError> {
        let addr = self.address(rop, tile, p)?;
        let elem = tile.view.elem;
        match tile.view.space {
            MemorySpace::Global => {
                let (b, i) = self.dram_slot(rop, elem, addr)?;
                self.dram[b].data[i] = round_to(elem, x);
            }
            MemorySpace::Local { .. } => {
                let (core, i) = self.local_slot(rop, ctx, tile, addr)?;
                let pad = &mut self.scratchpads[core];
                if pad.len() <= i {
                    pad.resize(i + 1, 0.0);
                }
                pad[i] = round_to(elem, x);
            }
        }
        Ok(())
    }

    fn dram_slot(
        &self,
        rop: &ROp<'_>,
        elem: ScalarType,
        addr: i64,
    ) -> Result<(usize, usize), SimError> {
        for (bi, b) in self.dram.iter().enumerate() {
            if addr >= b.base && addr < b.base + b.data.len() as i64 {
                if b.elem != elem {
                    return Err(self.at(
                        rop,
                        format!(
                            "a view of {} reads DRAM buffer '{}' which holds {}",
                            elem.name(),
                            b.name,
                            b.elem.name()
                        ),
                    ));
                }
                return Ok((bi, (addr - b.base) as usize));
            }
        }
        Err(self.at(
            rop,
            format!("DRAM address {addr} is outside every buffer (out of bounds)"),
        ))
    }
}

fn tensor_bytes(t: &TensorVal) -> u64 {
    (t.data.len() * t.elem.size_bytes()) as u64
}

fn strides_of(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Calls `f(flat_index, point)` for every point of `shape` in row-major order.
fn for_each_point(
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

fn int_binary(op: BinaryOp, x: i64, y: i64) -> Option<i64> {
    match op {
        BinaryOp::AddI => x.checked_add(y),
        BinaryOp::SubI => x.checked_sub(y),
        BinaryOp::MulI => x.checked_mul(y),
        BinaryOp::DivSI => x.checked_div(y),
        BinaryOp::RemSI => x.checked_rem(y),
        BinaryOp::FloorDivSI => {
            let q = x.checked_div(y)?;
            Some(if (x % y != 0) && ((x < 0) != (y < 0)) {
                q - 1
            } else {
                q
            })
        }
        BinaryOp::CeilDivSI => {
            let q = x.checked_div(y)?;
            Some(if (x % y != 0) && ((x < 0) == (y < 0)) {
                q + 1
            } else {
                q
            })
        }
        BinaryOp::MaxSI => Some(x.max(y)),
        BinaryOp::MinSI => Some(x.min(y)),
        _ => None,
    }
}

fn float_binary(op: BinaryOp, x: f32, y: f32) -> f32 {
    match op {
        BinaryOp::AddF => x + y,
        BinaryOp::SubF => x - y,
        BinaryOp::MulF => x * y,
        BinaryOp::DivF => x / y,
        BinaryOp::MaximumF => x.max(y),
        BinaryOp::MinimumF => x.min(y),
        _ => f32::NAN,
    }
}

fn unary(op: UnaryOp, x: f32) -> f32 {
    match op {
        UnaryOp::NegF => -x,
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Rsqrt => 1.0 / x.sqrt(),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::AbsF => x.abs(),
        UnaryOp::Erf => erf(x),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
    }
}

/// Abramowitz-Stegun 7.1.26 (absolute error below 1.5e-7), enough for fp16 results.
fn erf(x: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0
        - (((((1.061_405_4 * t - 1.453_152_1) * t) + 1.421_413_8) * t - 0.284_496_74) * t
            + 0.254_829_6)
            * t
            * (-x * x).exp();
    y.copysign(x)
}
