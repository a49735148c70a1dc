//! The KTIR interpreter: runs a verified kernel SPMD over its grid, computing real numbers,
//! and records every data movement and compute step as a timing [`Task`].
//!
//! **Timing-only mode** ([`Simulator::new_timing_only`]) runs the same interpreter without
//! tensor data: tensors and DRAM buffers are shapes and element types, every op records
//! the tasks it records with numbers, and index arithmetic and control flow run for real.
//! Values that would come from tensor data are assumed and reported (indirect indices) or
//! refused where they steer the program (a `tensor.extract` used as a bound, condition or
//! address). It is what plans models too large to run with numbers.
//!
//! Execution works on a resolved form of each function, built once per launch: values live
//! in numbered slots, attributes (sets, maps) and elementwise ops are resolved, last uses
//! are precomputed. Nothing is looked up by name while running.
//!
//! **Suspension.** Each core runs on an explicit frame stack (a program counter per open
//! block: the function body, loop bodies, `scf.if` branches, producer regions). A core runs
//! until it finishes or reaches an inter-tile collective (`ktdp.inter_tile_reduce` or
//! `ktdp.inter_tile_consume`), where it suspends. When every participant of a collective
//! instance (the same op, the same dynamic occurrence) has arrived, the collective is
//! performed and its participants resume. Cores that arrive but take no part resume at once.
//! If no core can run and no collective can fire, the launch stops with a deadlock error
//! naming the op, the waiting cores and the missing ones. See `exec_coll.rs` for the
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

use crate::domain::{Domain, Numbers, ShapesOnly};
use crate::exec_ew;
use crate::machine::Machine;
pub use crate::store::DramBuffer;
use crate::store::Memory;
use crate::timing::{Task, TaskId, Unit, Work};
use half::{bf16, f16};
use ktir::ast::*;
use ktir::ast::{ElementwiseOp, LinalgNamedOp};
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

/// Bounds that turn runaway programs into errors, and execution switches.
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

/// `f16::from_f32(x).to_f32()`, bit for bit, without the round trip for normal values.
///
/// An f32 in the f16 normal range (`2^-14 <= |x| < 65520`, the values that round to a
/// normal f16) becomes an f16 by rounding its mantissa to 10 bits, to nearest with ties to
/// even; done on the f32's bits, that is one add and one mask. Everything else (zeros,
/// subnormals, overflow, infinities, NaN) goes through the library. Where f16 conversion is
/// a hardware instruction this is as fast; in WebAssembly it is several times faster.
pub fn round_f16(x: f32) -> f32 {
    let bits = x.to_bits();
    let abs = bits & 0x7fff_ffff;
    if (0x3880_0000..0x477f_f000).contains(&abs) {
        let rounded = bits + 0x0fff + ((bits >> 13) & 1);
        return f32::from_bits(rounded & !0x1fff);
    }
    f16::from_f32(x).to_f32()
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

/// A region in resolved form: the slots of its block arguments and its ops.
pub(crate) struct Region<'a> {
    pub args: Vec<usize>,
    pub ops: Vec<ROp<'a>>,
}

/// A resolved integer set, shared by the op and the views built from it.
pub(crate) type SharedSet = Option<Rc<AffineSet>>;

/// One op in resolved form.
pub(crate) struct ROp<'a> {
    pub op: &'a Op,
    /// Unique within a launch (identifies collective instances).
    pub id: usize,
    pub operands: Vec<usize>,
    pub results: Vec<usize>,
    /// Slots whose last use is this op (freed after it completes).
    pub frees: Vec<usize>,
    pub regions: Vec<Region<'a>>,
    pub line: u32,
    /// Resolved integer sets, per op kind (see `Resolver::attrs`); shared, as views hold
    /// them too.
    pub sets: Vec<SharedSet>,
    /// Resolved affine maps, per op kind.
    pub maps: Vec<Option<AffineMap>>,
    /// Op-specific precomputed integers.
    pub ints: Vec<i64>,
    /// The elementwise operation, for elementwise ops (`arith`/`math` and named linalg).
    pub ew: Option<ElementwiseOp>,
}

struct Resolver<'a> {
    module: &'a Module,
    scopes: Vec<HashMap<&'a str, usize>>,
    slots: usize,
    next_id: usize,
    line_index: &'a LineLookup,
    /// Producer and group sets of each future's slot.
    produced: HashMap<usize, (SharedSet, SharedSet)>,
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

    fn set(&self, a: &Option<Attr>) -> Option<Rc<AffineSet>> {
        match a.as_ref().and_then(|a| self.module.resolve(a)) {
            Some(Attr::Set(s)) => Some(Rc::new(s.clone())),
            _ => None,
        }
    }

    fn map(&self, a: &Option<Attr>) -> Option<AffineMap> {
        match a.as_ref().and_then(|a| self.module.resolve(a)) {
            Some(Attr::Map(m)) => Some(m.clone()),
            _ => None,
        }
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
            let mut regions = Vec::new();
            if let OpKind::For {
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
                regions.push(Region { args, ops: inner });
            } else {
                for region in op.kind.regions() {
                    self.scopes.push(HashMap::new());
                    let args = region.args.iter().map(|(n, _)| self.new_slot(n)).collect();
                    let inner = self.block(&region.ops)?;
                    self.scopes.pop();
                    regions.push(Region { args, ops: inner });
                }
            }
            let results: Vec<usize> = op.results.iter().map(|r| self.new_slot(r)).collect();
            let (sets, maps, ints, ew) = self.attrs(op, &operands, &results);
            let id = self.next_id;
            self.next_id += 1;
            out.push(ROp {
                op,
                id,
                operands,
                results,
                frees: Vec::new(),
                regions,
                line: self.line_index.line(op.span.start),
                sets,
                maps,
                ints,
                ew,
            });
        }
        Ok(out)
    }

    /// Precomputes what an op needs at run time from its attributes.
    #[allow(clippy::type_complexity)]
    fn attrs(
        &mut self,
        op: &'a Op,
        operands: &[usize],
        results: &[usize],
    ) -> (
        Vec<SharedSet>,
        Vec<Option<AffineMap>>,
        Vec<i64>,
        Option<ElementwiseOp>,
    ) {
        let mut sets = Vec::new();
        let mut maps = Vec::new();
        let mut ints = Vec::new();
        let mut ew = None;
        match &op.kind {
            OpKind::ConstructMemoryView { coordinate_set, .. } => {
                sets.push(self.set(coordinate_set))
            }
            OpKind::ConstructAccessTile {
                access_tile_set,
                access_tile_order,
                ..
            } => {
                sets.push(self.set(access_tile_set));
                maps.push(self.map(access_tile_order));
            }
            OpKind::ConstructIndirectAccessTile {
                variables,
                dims,
                variables_space_set,
                variables_space_order,
                ..
            } => {
                sets.push(self.set(variables_space_set));
                maps.push(self.map(variables_space_order));
                // Where each subscript dimension comes from: a variable (>= 0) or the k-th
                // captured operand (-(k + 1)).
                let mut captured = 0;
                for d in dims {
                    if let Some(i) = variables.iter().position(|v| *v == d.name) {
                        ints.push(i as i64);
                    } else {
                        captured += 1;
                        ints.push(-captured);
                    }
                }
            }
            OpKind::InterTileProduce {
                producer_tiles_per_group,
                ..
            } => {
                let producers = self.set(&Some(producer_tiles_per_group.clone()));
                let groups = match op.result_types.first() {
                    Some(Type::TileFuture { groups, .. }) => self.set(&Some(groups.clone())),
                    _ => None,
                };
                sets.push(producers.clone());
                sets.push(groups.clone());
                if let Some(&r) = results.first() {
                    self.produced.insert(r, (producers, groups));
                }
            }
            OpKind::InterTileReduce {
                consumer_tiles_per_group,
                producer_dependency_per_consumer,
                future_type,
                ..
            }
            | OpKind::InterTileConsume {
                consumer_tiles_per_group,
                producer_dependency_per_consumer,
                future_type,
                ..
            } => {
                let (producers, mut groups) = operands
                    .first()
                    .and_then(|s| self.produced.get(s).cloned())
                    .unwrap_or((None, None));
                if groups.is_none() {
                    if let Type::TileFuture { groups: g, .. } = future_type {
                        groups = self.set(&Some(g.clone()));
                    }
                }
                sets.push(producers);
                sets.push(groups);
                sets.push(self.set(&Some(consumer_tiles_per_group.clone())));
                sets.push(self.set(producer_dependency_per_consumer));
            }
            OpKind::LinalgGeneric {
                indexing_maps,
                iterator_types,
                ..
            } => {
                for m in indexing_maps {
                    maps.push(self.map(&Some(m.clone())));
                }
                ints.extend(
                    iterator_types
                        .iter()
                        .map(|t| i64::from(t.contains("reduction"))),
                );
            }
            OpKind::Elementwise { op: e, .. }
            | OpKind::LinalgNamed {
                op: LinalgNamedOp::Elementwise(e),
                ..
            } => ew = Some(*e),
            OpKind::LinalgReduce {
                shorthand, body, ..
            } => {
                let op = shorthand.or_else(|| {
                    // A region of exactly one combining op over the two block arguments.
                    let real: Vec<&Op> = body
                        .ops
                        .iter()
                        .filter(|o| !o.kind.is_terminator())
                        .collect();
                    match real.as_slice() {
                        [one] => match &one.kind {
                            OpKind::Elementwise { op, .. } => Some(*op),
                            // The generic form of an arith op still names its combiner.
                            OpKind::Generic { name, .. } => ElementwiseOp::from_name(name),
                            _ => None,
                        },
                        _ => None,
                    }
                });
                if let Some(op) = op {
                    ints.push(match crate::exec_ops::Combiner::from_op(op) {
                        Some(crate::exec_ops::Combiner::Add) => 1,
                        Some(crate::exec_ops::Combiner::Mul) => 2,
                        Some(crate::exec_ops::Combiner::Max) => 3,
                        Some(crate::exec_ops::Combiner::Min) => 4,
                        None => 0,
                    });
                }
            }
            _ => {}
        }
        (sets, maps, ints, ew)
    }
}

/// Records the last op (at this block level) that uses each slot defined in this block
/// (`block_args` or op results), so values can be freed; values from enclosing blocks stay
/// alive because a loop body runs again.
fn compute_frees(ops: &mut [ROp<'_>], block_args: &[usize]) {
    fn uses(op: &ROp<'_>, out: &mut Vec<usize>) {
        out.extend(&op.operands);
        for r in &op.regions {
            for inner in &r.ops {
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
        for r in &mut op.regions {
            let args = r.args.clone();
            compute_frees(&mut r.ops, &args);
        }
    }
}

/// A progress report: operations executed so far and the total they count towards.
pub type ProgressFn<'a> = Box<dyn FnMut(u64, u64) + 'a>;

/// The simulator's state across launches: DRAM, scratchpads and the recorded tasks.
pub struct Simulator<'m> {
    pub(crate) machine: &'m Machine,
    pub(crate) limits: ExecLimits,
    /// DRAM buffers and scratchpad contents.
    pub(crate) mem: Memory,
    next_base: i64,
    pub(crate) tasks: Vec<Task>,
    /// Tasks every task of the next launch must wait for.
    barrier: Option<TaskId>,
    steps: u64,
    /// Peak live tensor bytes per core over the run.
    pub peak_tensor_bytes: Vec<u64>,
    returned: Vec<Vec<KernelValue>>,
    progress: Option<(ProgressFn<'m>, u64)>,
    /// Estimate of the steps of the whole run, for progress reports (0 when unknown).
    progress_total: u64,
    /// What tensors and buffers hold, and how their contents are computed.
    pub(crate) domain: &'static dyn Domain,
    /// What timing-only mode assumed in place of values it did not compute.
    assumptions: Vec<String>,
}

/// Per-core execution context.
pub(crate) struct CoreCtx {
    pub core: usize,
    pub tile_id: Vec<i64>,
    pub grid_size: usize,
    pub live_bytes: u64,
    /// Tasks of this core in this launch without a successor yet (for the barrier).
    pub last_tasks: Vec<TaskId>,
    /// The core's most recent store (loads wait for it).
    pub last_store: Option<TaskId>,
    /// Whether work is timed (false while running a collective's combiner).
    pub record: bool,
}

/// What a run of a frame stack ended with.
pub(crate) enum Outcome<'r, 'a> {
    /// The base block finished with these values.
    Finished(Vec<RtValue>),
    /// The core reached a collective and waits there.
    Suspended(&'r ROp<'a>),
}

#[derive(Clone, Copy)]
pub(crate) enum FrameKind<'r, 'a> {
    Root,
    For {
        owner: &'r ROp<'a>,
        iv: i64,
        upper: i64,
        step: i64,
    },
    If {
        owner: &'r ROp<'a>,
    },
    Produce {
        owner: &'r ROp<'a>,
        group: i64,
    },
}

pub(crate) struct Frame<'r, 'a> {
    pub ops: &'r [ROp<'a>],
    pub pc: usize,
    pub kind: FrameKind<'r, 'a>,
}

#[derive(Clone, Copy)]
pub(crate) enum CoreState<'r, 'a> {
    Ready,
    Waiting(&'r ROp<'a>, u64),
    Done,
}

/// One core's execution state within a launch.
pub(crate) struct CoreRun<'r, 'a> {
    pub frames: Vec<Frame<'r, 'a>>,
    pub slots: Vec<Option<RtValue>>,
    pub ctx: CoreCtx,
    pub state: CoreState<'r, 'a>,
    /// Dynamic occurrences of each collective op passed so far.
    pub occurrences: HashMap<usize, u64>,
}

impl<'m> Simulator<'m> {
    /// A simulator for `machine` with empty DRAM.
    pub fn new(machine: &'m Machine, limits: ExecLimits) -> Self {
        Simulator::in_domain(machine, limits, &Numbers)
    }

    fn in_domain(machine: &'m Machine, limits: ExecLimits, domain: &'static dyn Domain) -> Self {
        let cores = machine.cores.value;
        Simulator {
            machine,
            limits,
            mem: Memory {
                dram: Vec::new(),
                scratchpads: vec![Vec::new(); cores],
            },
            next_base: 0,
            tasks: Vec::new(),
            barrier: None,
            steps: 0,
            peak_tensor_bytes: vec![0; cores],
            returned: Vec::new(),
            progress: None,
            progress_total: 0,
            domain,
            assumptions: Vec::new(),
        }
    }

    /// A simulator that computes time but no numbers: tensors and DRAM buffers carry their
    /// shapes and element types only, while index arithmetic, control flow and every
    /// timing task are exactly those of a full run, so the schedule is the same.
    ///
    /// Where a value the program needs would come from tensor data, the run either
    /// assumes one and says so in [`Simulator::assumptions`] (the indices of an indirect
    /// access tile), or stops with an error naming both ops (a `tensor.extract` whose
    /// result becomes a loop bound, a condition, an address or a size). The DRAM element
    /// limit does not apply, as nothing is stored.
    pub fn new_timing_only(machine: &'m Machine, limits: ExecLimits) -> Self {
        Simulator::in_domain(machine, limits, &ShapesOnly)
    }

    /// Whether this simulator computes no numbers (see [`Simulator::new_timing_only`]).
    pub fn is_timing_only(&self) -> bool {
        !self.domain.computes_numbers()
    }

    /// What timing-only mode assumed in place of values it did not compute, one line each
    /// (naming the op and its line); empty for a full run.
    pub fn assumptions(&self) -> &[String] {
        &self.assumptions
    }

    pub(crate) fn assume(&mut self, rop: &ROp<'_>, what: &str) {
        let line = format!("line {}: '{}': {what}", rop.line, rop.op.kind.name());
        if !self.assumptions.contains(&line) {
            self.assumptions.push(line);
        }
    }

    /// Calls `f(steps, total)` every `every` operations, where `total` is the estimate
    /// given to [`Simulator::set_progress_total`] or else the step limit.
    pub fn set_progress(&mut self, f: ProgressFn<'m>, every: u64) {
        self.progress = Some((f, every.max(1)));
    }

    /// Sets the total that progress reports count towards (for example the sum of
    /// [`crate::estimate_steps`] over the launches to come).
    pub fn set_progress_total(&mut self, total: u64) {
        self.progress_total = total;
    }

    /// Places a buffer in DRAM and returns its base address (in elements). In
    /// timing-only mode only its length is kept.
    pub fn alloc(&mut self, name: &str, elem: ScalarType, data: Vec<f32>) -> Result<i64, SimError> {
        let len = data.len();
        let data = self.domain.buffer(elem, data);
        self.place(name, elem, len, data)
    }

    /// Places a zero-filled buffer of `len` elements in DRAM (no contents at all in
    /// timing-only mode) and returns its base address.
    pub fn reserve(&mut self, name: &str, elem: ScalarType, len: usize) -> Result<i64, SimError> {
        let data = self.domain.filled(len, 0.0);
        self.place(name, elem, len, data)
    }

    fn place(
        &mut self,
        name: &str,
        elem: ScalarType,
        len: usize,
        data: Vec<f32>,
    ) -> Result<i64, SimError> {
        let total: usize = self.mem.dram.iter().map(|b| b.data.len()).sum::<usize>() + data.len();
        if total > self.limits.max_dram_elements {
            return err(format!(
                "DRAM buffers would hold {total} elements, more than the limit of {}",
                self.limits.max_dram_elements
            ));
        }
        if self.mem.dram.iter().any(|b| b.name == name) {
            return err(format!("DRAM buffer '{name}' is allocated twice"));
        }
        // Bases are element addresses on 128-byte boundaries; buffers never overlap.
        let per_line = (128 / elem.size_bytes().max(1)) as i64;
        let base = (self.next_base + per_line - 1) / per_line * per_line;
        let len_i = i64::try_from(len).map_err(|_| SimError {
            message: format!("DRAM buffer '{name}' of {len} elements is too large"),
            core: None,
            op: None,
        })?;
        self.next_base = base
            .checked_add(len_i.max(1) + per_line)
            .ok_or_else(|| SimError {
                message: "DRAM addresses overflow".into(),
                core: None,
                op: None,
            })?;
        self.mem.dram.push(DramBuffer {
            name: name.to_string(),
            base,
            elem,
            len,
            data,
        });
        Ok(base)
    }

    /// A DRAM buffer by name.
    pub fn buffer(&self, name: &str) -> Option<&DramBuffer> {
        self.mem.dram.iter().find(|b| b.name == name)
    }

    /// All DRAM buffers.
    pub fn buffers(&self) -> &[DramBuffer] {
        &self.mem.dram
    }

    /// The timing tasks recorded so far.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Operations executed so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// What each core's `func.return` gave in the last launch (index = core).
    pub fn returned(&self) -> &[Vec<KernelValue>] {
        &self.returned
    }

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
                    last_tasks: Vec::new(),
                    last_store: None,
                    record: true,
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
            if !self.fire_collectives(&mut cores)? {
                return Err(crate::exec_coll::deadlock(&cores));
            }
        }
        let launch_tails: Vec<TaskId> = cores
            .iter()
            .flat_map(|c| c.ctx.last_tasks.iter().copied())
            .filter(|t| *t != NO_TASK)
            .collect();
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

    fn arg_value(&self, a: &KernelValue, t: &Type, name: &str) -> Result<RtValue, SimError> {
        Ok(match (a, t) {
            (KernelValue::Int(i), Type::Scalar(s)) if s.is_float() => {
                RtValue::Float(round_to(*s, *i as f32) as f64)
            }
            (KernelValue::Int(i), _) => RtValue::Index(*i),
            (KernelValue::Float(x), Type::Scalar(s)) if !s.is_float() => RtValue::Index(*x as i64),
            (KernelValue::Float(x), _) => RtValue::Float(*x),
            (KernelValue::Tensor { shape, data }, Type::Tensor { elem, shape: ts }) => {
                let n: usize = shape.iter().product();
                let fits = ts.len() == shape.len()
                    && ts.iter().zip(shape).all(|(d, s)| match d {
                        Dim::Static(x) => x == s,
                        Dim::Dynamic => true,
                    });
                let held = self.domain.tensor_arg(*elem, data, n);
                let (Some(held), true) = (held, fits && n <= self.limits.max_tensor_elements)
                else {
                    return err(format!(
                        "argument '%{name}' is a tensor of shape {shape:?} with {} elements, which does not fit its type",
                        data.len()
                    ));
                };
                RtValue::Tensor(Rc::new(TensorVal {
                    shape: shape.clone(),
                    elem: *elem,
                    data: held,
                    ready: None,
                }))
            }
            (KernelValue::Tensor { .. }, _) => {
                return err(format!("argument '%{name}' is not a tensor"))
            }
            (KernelValue::Unknown, _) => {
                return err(format!(
                    "argument '%{name}' has no value (a scalar a timing-only run did not compute)"
                ))
            }
        })
    }

    pub(crate) fn push_task(&mut self, mut task: Task) -> Result<TaskId, SimError> {
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
        let n = self.tasks.len();
        task.deps.retain(|d| *d < n);
        task.deps.sort_unstable();
        task.deps.dedup();
        self.tasks.push(task);
        Ok(n)
    }

    pub(crate) fn record(
        &mut self,
        ctx: &mut CoreCtx,
        unit: Unit,
        work: Work,
        deps: Vec<TaskId>,
        rop: &ROp<'_>,
    ) -> Result<TaskId, SimError> {
        if !ctx.record {
            return Ok(NO_TASK);
        }
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

    /// A zero-cost task joining several; `None` when there is nothing to join.
    pub(crate) fn join(
        &mut self,
        ctx: &mut CoreCtx,
        deps: Vec<TaskId>,
        rop: &ROp<'_>,
    ) -> Result<Option<TaskId>, SimError> {
        let deps: Vec<TaskId> = deps.into_iter().filter(|d| *d != NO_TASK).collect();
        match deps.len() {
            0 => Ok(None),
            1 => Ok(Some(deps[0])),
            _ => Ok(Some(self.record(
                ctx,
                Unit::Sfp,
                Work::Compute { cycles: 0 },
                deps,
                rop,
            )?)),
        }
    }

    fn count_step(&mut self, rop: &ROp<'_>) -> Result<(), SimError> {
        self.steps += 1;
        if self.steps > self.limits.max_steps {
            return Err(self.at(rop, format!(
                "the run executed more than {} operations; stopping (raise the step limit if this is expected)",
                self.limits.max_steps
            )));
        }
        if let Some((f, every)) = &mut self.progress {
            if self.steps.is_multiple_of(*every) {
                let total = if self.progress_total > 0 {
                    self.progress_total
                } else {
                    self.limits.max_steps
                };
                f(self.steps, total);
            }
        }
        Ok(())
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
                match self.producer_group(rop, ctx)? {
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

    pub(crate) fn at(&self, rop: &ROp<'_>, message: String) -> SimError {
        SimError {
            message,
            core: None,
            op: Some((rop.op.kind.name().to_string(), rop.line)),
        }
    }

    pub(crate) fn get<'s>(
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

    pub(crate) fn index(
        &self,
        slots: &[Option<RtValue>],
        rop: &ROp<'_>,
        i: usize,
    ) -> Result<i64, SimError> {
        match self.get(slots, rop, i)? {
            RtValue::Index(v) => Ok(*v),
            RtValue::Unknown(line) => Err(self.unknown(rop, i, *line)),
            _ => Err(self.at(rop, format!("operand {i} is not an integer value"))),
        }
    }

    /// The error for a use of a value timing-only mode did not compute.
    pub(crate) fn unknown(&self, rop: &ROp<'_>, i: usize, from_line: u32) -> SimError {
        self.at(
            rop,
            format!(
                "operand {i} comes from tensor data (the 'tensor.extract' on line {from_line}), which a timing-only run does not compute, but its value is needed here (a loop bound, condition, address, size or index); run with numbers to simulate this program"
            ),
        )
    }

    pub(crate) fn tensor(
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

    pub(crate) fn new_tensor(
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
            ready: ready.filter(|r| *r != NO_TASK),
        };
        if ctx.record {
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
        }
        Ok(RtValue::Tensor(Rc::new(t)))
    }

    /// `numel(shape)` copies of `x`, as the domain holds them.
    pub(crate) fn filled(&self, shape: &[usize], x: f32) -> Vec<f32> {
        self.domain.filled(shape.iter().product(), x)
    }

    pub(crate) fn check_size(&self, rop: &ROp<'_>, shape: &[usize]) -> Result<usize, SimError> {
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

    /// The static shape and element type of result `i`.
    pub(crate) fn result_shape_of(
        &self,
        rop: &ROp<'_>,
        i: usize,
    ) -> Result<(Vec<usize>, ScalarType), SimError> {
        let t = rop
            .op
            .result_types
            .get(i)
            .ok_or_else(|| self.at(rop, "has no result type".into()))?;
        let shape = t
            .static_shape()
            .ok_or_else(|| self.at(rop, "the result shape is dynamic here".into()))?;
        let elem = t.elem().unwrap_or(ScalarType::F32);
        self.check_size(rop, &shape)?;
        Ok((shape, elem))
    }

    pub(crate) fn result_shape(&self, rop: &ROp<'_>) -> Result<(Vec<usize>, ScalarType), SimError> {
        self.result_shape_of(rop, 0)
    }

    /// The result shape with `?` dimensions taken, in order, from the index operands
    /// starting at `first`.
    pub(crate) fn dynamic_result_shape(
        &self,
        slots: &[Option<RtValue>],
        rop: &ROp<'_>,
        first: usize,
    ) -> Result<(Vec<usize>, ScalarType), SimError> {
        let t = rop
            .op
            .result_types
            .first()
            .ok_or_else(|| self.at(rop, "has no result type".into()))?;
        let mut next = first;
        let mut shape = Vec::new();
        for d in t.shape() {
            shape.push(match d {
                Dim::Static(n) => *n,
                Dim::Dynamic => {
                    let v = self.index(slots, rop, next)?;
                    next += 1;
                    usize::try_from(v)
                        .map_err(|_| self.at(rop, format!("negative dynamic size {v}")))?
                }
            });
        }
        self.check_size(rop, &shape)?;
        Ok((shape, t.elem().unwrap_or(ScalarType::F32)))
    }

    pub(crate) fn set(&self, slots: &mut [Option<RtValue>], rop: &ROp<'_>, i: usize, v: RtValue) {
        set_slot(slots, rop.results.get(i), v);
    }

    /// Records an SFP task over the ready times of `inputs`.
    pub(crate) fn sfp(
        &mut self,
        ctx: &mut CoreCtx,
        rop: &ROp<'_>,
        elements: usize,
        transcendental: bool,
        inputs: &[&TensorVal],
    ) -> Result<TaskId, SimError> {
        let cycles = self.machine.sfp_cycles(elements as u64, transcendental);
        let deps = inputs.iter().filter_map(|t| t.ready).collect();
        self.record(ctx, Unit::Sfp, Work::Compute { cycles }, deps, rop)
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
            OpKind::GetComputeTileId => {
                for i in 0..rop.results.len() {
                    let v = ctx.tile_id.get(i).copied().unwrap_or(0);
                    self.set(slots, rop, i, RtValue::Index(v));
                }
            }
            OpKind::Elementwise { op, .. } => {
                let n = rop.operands.len();
                let v = self.elementwise(rop, slots, ctx, *op, 0..n)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Compare { predicate, .. } => {
                let v = self.compare(rop, slots, ctx, *predicate)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Select { .. } => {
                let v = self.select(rop, slots, ctx)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Cast {
                name, source_type, ..
            } => {
                let v = self.cast(rop, slots, ctx, name, source_type)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::ConstructMemoryView { .. } => self.construct_view(rop, slots)?,
            OpKind::ConstructDistributedMemoryView { .. } => {
                self.construct_distributed_view(rop, slots)?
            }
            OpKind::ConstructAccessTile { .. } => self.construct_tile(rop, slots)?,
            OpKind::ConstructIndirectAccessTile { .. } => {
                self.construct_indirect_tile(rop, slots, ctx)?
            }
            OpKind::Load { .. } => self.load(rop, slots, ctx)?,
            OpKind::Store { .. } => self.store(rop, slots, ctx)?,
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
            _ => self.exec_tensor(rop, slots, ctx)?,
        }
        Ok(())
    }
}

pub(crate) fn set_slot(slots: &mut [Option<RtValue>], s: Option<&usize>, v: RtValue) {
    if let Some(slot) = s.and_then(|s| slots.get_mut(*s)) {
        *slot = Some(v);
    }
}

pub(crate) fn tensor_bytes(t: &TensorVal) -> u64 {
    (t.numel() * t.elem.size_bytes()) as u64
}

fn kernel_value(v: &RtValue) -> KernelValue {
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
