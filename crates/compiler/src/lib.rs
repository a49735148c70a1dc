//! The tile compiler: model graph in, SuperDSC bundle (and KTIR) out.
//!
//! The passes, in order ([`PASS_NAMES`]):
//! 1. `canonicalize` ([`passes`]): drop nodes that reach no output, fold `Identity`, order nodes.
//! 2. `decompose` ([`ops`]): graph ops to the small device op set (SDSC op names).
//! 3. `layout` ([`layout`]): a stick layout for every tensor; restickify where operands disagree.
//! 4. `work-division` ([`workdiv`]): how each op's iteration space is split over cores.
//! 5. `scratchpad` ([`scratchpad`]): scratchpad (LX) and DRAM placement of every tensor.
//! 6. `fusion` ([`fusion`]): runs of elementwise ops on the same slices become one kernel.
//! 7. `sdsc` ([`sdsc_emit`]): one SuperDSC descriptor per op plus the bundle manifest.
//! 8. `ktir` ([`lower_ktir`]): SDSC to KTIR text, one function per kernel.
//!
//! Before them, for several cards, [`tp`] (`tensor-parallel`) cuts a Llama-style layer into
//! identical per-card shard segments joined by all-reduces; each segment then compiles
//! through the passes above.
//!
//! [`compile`] runs them and records a [`Snapshot`] after each. The compiler knows nothing of
//! JS or timing; machine numbers come in through [`Target`]. Library code never panics: every
//! problem is a [`CompileError`] naming the node and saying why.
//!
//! Every pass is linear in the graph (give or take a logarithm for name lookups), so a full
//! model compiles in about the time its layers take one by one; [`Options::skip_snapshots`]
//! leaves out the snapshots when only the results are wanted, and [`compile_with_progress`]
//! reports the pass running and the kernels lowered.
//!
//! Limits (each an error naming the limit and the value, before the work is done):
//! - work: [`MAX_COMPILE_WORK`] units (one per device op planned and per KTIR operation
//!   built), or [`Options::work_limit`];
//! - constant folding evaluates and creates tensors of at most 2^20 elements (larger ones
//!   stay in the graph), and a constant table a decomposition makes (a `Trilu` mask, a
//!   `CumSum` triangle) has at most 2^20 elements;
//! - every tensor a core touches must fit the target's per-core span
//!   ([`Target::span_limit_bytes`]) under some work division.

// `usize::is_multiple_of` needs Rust 1.87; the workspace declares rust-version 1.85.
#![allow(clippy::manual_is_multiple_of)]

pub mod artifact_cache;
pub mod fusion;
pub mod layout;
pub mod lower_ktir;
pub mod movement_split;
pub mod ops;
pub mod padding;
pub mod passes;
pub mod scratchpad;
pub mod sdsc_emit;
pub mod state;
pub mod tp;
pub mod workdiv;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

pub use layout::Layout;
pub use ops::{access_map, DeviceOp, DeviceOpKind, IterDim};
pub use padding::{PaddingReport, PaddingRules, SequencePadding};
pub use passes::{compile, compile_cached, compile_with_progress};
pub use scratchpad::Placement;
pub use workdiv::WorkDivision;

/// The pass names, in the order [`compile`] runs them.
pub const PASS_NAMES: &[&str] = &[
    "canonicalize",
    "decompose",
    "layout",
    "work-division",
    "scratchpad",
    "fusion",
    "sdsc",
    "ktir",
];

/// The machine figures the compiler plans against. The driver fills this from the machine
/// description; [`Target::spyre32`] holds the public Spyre numbers for tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub cores: usize,
    /// Bytes per stick (128 on Spyre).
    pub stick_bytes: usize,
    /// Plannable scratchpad bytes per core, after the backend's reserve.
    pub scratchpad_capacity_bytes: usize,
    /// Largest address span one core may touch in one tensor.
    pub span_limit_bytes: u64,
    /// Peak matmul rate per core.
    pub matmul_macs_per_ns: f64,
    /// Aggregate off-chip bandwidth, shared by all cores (bytes per ns = GB/s).
    pub dram_bytes_per_ns: f64,
    /// Bandwidth of one ring link in one direction (bytes per ns): what a B tile forwarded
    /// to a neighbour and a partial sum passed down a K group move at.
    pub ring_bytes_per_ns: f64,
    /// Rows of the PE array streamed per pass (8).
    pub pe_rows: usize,
    /// Row passes that fill the matmul pipeline (8).
    pub fill_row_passes: usize,
}

impl Target {
    /// Spyre: 32 cores, 128-byte sticks, 2 MB scratchpad with 20% reserved (128-byte aligned),
    /// 256 MiB per-core span, 1536 MAC/ns per core, 204.8 GB/s DRAM, 128 GB/s per ring link
    /// direction, 8-row PE array.
    pub fn spyre32() -> Target {
        let cap = 2 * 1024 * 1024 * 8 / 10;
        Target {
            cores: 32,
            stick_bytes: 128,
            scratchpad_capacity_bytes: cap / 128 * 128,
            span_limit_bytes: 256 * 1024 * 1024,
            matmul_macs_per_ns: 1536.0,
            dram_bytes_per_ns: 204.8,
            ring_bytes_per_ns: 128.0,
            pe_rows: 8,
            fill_row_passes: 8,
        }
    }
}

/// Scratchpad allocation strategy (see [`scratchpad`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Allocator {
    /// Reuse an in-place parent's slot, else the lowest gap that fits.
    #[default]
    Greedy,
    /// The lowest gap that fits; no in-place reuse.
    FirstFit,
    /// The smallest gap that fits (lowest address on ties); no in-place reuse.
    BestFit,
}

impl Allocator {
    pub fn name(self) -> &'static str {
        match self {
            Allocator::Greedy => "greedy",
            Allocator::FirstFit => "first-fit",
            Allocator::BestFit => "best-fit",
        }
    }
}

impl std::str::FromStr for Allocator {
    type Err = CompileError;
    fn from_str(s: &str) -> Result<Allocator, CompileError> {
        match s {
            "greedy" => Ok(Allocator::Greedy),
            "first-fit" => Ok(Allocator::FirstFit),
            "best-fit" => Ok(Allocator::BestFit),
            _ => Err(CompileError::new(
                format!("unknown allocator '{s}'; expected greedy, first-fit or best-fit"),
                None,
            )),
        }
    }
}

/// What the user asks of one compilation.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Stop after this pass (one of [`PASS_NAMES`]).
    pub stop_after: Option<String>,
    pub allocator: Allocator,
    /// Work-division overrides: graph node (or device op) name -> splits per iteration dim.
    pub hints: BTreeMap<String, Vec<usize>>,
    /// Decompose attention as an online-softmax loop over blocks of this many keys instead
    /// of one softmax over all keys.
    pub attention_key_block: Option<usize>,
    /// Record no pass snapshots: for callers that want only the results (`ktir`, `sdsc`,
    /// the plan), the snapshots' text and data being most of a large compile's time and
    /// memory.
    pub skip_snapshots: bool,
    /// Most work units the compile may spend (see [`MAX_COMPILE_WORK`], the default).
    pub work_limit: Option<u64>,
    /// Double-buffer the loads of time loops (on by default): block i+1 loads while block
    /// i computes, at the price of a second buffer per streamed operand. Off, every kernel
    /// is single-buffered, so the two regimes can be compared.
    pub double_buffer: bool,
    /// Fuse runs of elementwise ops on the same slices into one kernel (on by default; see
    /// [`fusion`]). Off, every device op is a kernel of its own (but the reshapes and
    /// transposes that make views, which have none), so both can be compared.
    pub fuse: bool,
    /// The serving stack's padding and alignment rules whose cost PagedAttention reports
    /// (the public values by default; the compile itself keeps sequences ragged).
    pub padding: PaddingRules,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            stop_after: None,
            allocator: Allocator::default(),
            hints: BTreeMap::new(),
            attention_key_block: None,
            skip_snapshots: false,
            work_limit: None,
            double_buffer: true,
            fuse: true,
            padding: PaddingRules::PUBLIC,
        }
    }
}

/// The default bound on a compile's work: one unit per device op planned and per KTIR
/// operation in the lowered kernels. 2^26 units is far beyond the largest gallery model
/// (the full Llama-3.1-8B is a few hundred thousand); a compile that would need more stops with an error
/// naming the limit, the work done and the op it reached, instead of running on.
pub const MAX_COMPILE_WORK: u64 = 1 << 26;

/// How far a compile has got, for progress reports on long compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileProgress {
    /// The pass running (one of [`PASS_NAMES`]).
    pub pass: &'static str,
    /// Device ops that pass has finished.
    pub done: usize,
    /// Device ops it has to do (0 before decomposition knows).
    pub total: usize,
}

/// Counts a compile's work against its limit (see [`MAX_COMPILE_WORK`]).
#[derive(Debug, Clone)]
pub(crate) struct WorkBudget {
    limit: u64,
    spent: u64,
}

impl WorkBudget {
    pub(crate) fn new(options: &Options) -> WorkBudget {
        WorkBudget {
            limit: options.work_limit.unwrap_or(MAX_COMPILE_WORK),
            spent: 0,
        }
    }

    /// Spends `units` of work at device op `at`; an error once the limit is passed.
    pub(crate) fn spend(&mut self, units: u64, at: Option<&str>) -> Result<(), CompileError> {
        self.spent = self.spent.saturating_add(units);
        if self.spent > self.limit {
            let whose = if at.is_some() { "by this op" } else { "so far" };
            return Err(CompileError::new(
                format!(
                    "the compile exceeds its work limit of {} units (device ops planned plus KTIR operations built): {} spent {whose}",
                    self.limit, self.spent
                ),
                at,
            ));
        }
        Ok(())
    }
}

/// A compile error: what went wrong, and at which node when there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompileError {
    pub message: String,
    pub node: Option<String>,
}

impl CompileError {
    pub fn new(message: impl Into<String>, node: Option<&str>) -> CompileError {
        CompileError {
            message: message.into(),
            node: node.map(str::to_string),
        }
    }
    pub fn at(node: &str, message: impl Into<String>) -> CompileError {
        CompileError::new(message, Some(node))
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.node {
            Some(n) => write!(f, "node '{n}': {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for CompileError {}

/// The state after one pass: readable text (deterministic, diff-friendly) and structured data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub pass: String,
    pub title: String,
    pub text: String,
    pub data: serde_json::Value,
}

/// Everything the passes know; each pass fills in its part. Serialisable, for the
/// compile-artifact cache ([`artifact_cache`]); the KTIR tree is not serialised: a
/// compilation read back has its KTIR as text only.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Compilation {
    /// The canonicalized graph.
    pub graph: graph::Graph,
    /// Type of every tensor: graph tensors and the intermediates decomposition adds.
    pub types: BTreeMap<String, graph::TensorType>,
    /// Device ops in execution order.
    pub ops: Vec<DeviceOp>,
    pub layouts: BTreeMap<String, Layout>,
    /// Parallel to `ops`.
    pub divisions: Vec<WorkDivision>,
    pub placements: BTreeMap<String, Placement>,
    /// Device ops lowered together as one kernel (the `fusion` pass), in op order.
    #[serde(default)]
    pub fusion: Vec<fusion::FusionGroup>,
    pub sdsc: Option<sdsc::Bundle>,
    /// The lowered module as text, printed from [`Compilation::ktir_module`] (or an edited
    /// module put in its place by a caller).
    pub ktir: Option<String>,
    /// The lowered module as a tree, verified; `None` before the `ktir` pass and in a
    /// compilation read from the artifact cache (the text is parsed when it runs).
    #[serde(skip)]
    pub ktir_module: Option<ktir::Module>,
    /// Why matmul epilogues found before the scratchpad plan were not fused: (op, reason),
    /// for the fusion snapshot.
    #[serde(skip)]
    pub epilogue_notes: Vec<(String, String)>,
    /// The fused kernels the `fusion` pass built to check that they fit, by first op: the
    /// `ktir` pass takes them instead of building them again (no pass between the two
    /// changes what they are built from). Emptied once the module is lowered.
    #[serde(skip)]
    pub fused_kernels: BTreeMap<usize, ktir::Func>,
    pub snapshots: Vec<Snapshot>,
    pub target: Target,
    /// What the padding rules would cost each PagedAttention node.
    pub padding: Vec<PaddingReport>,
    /// Reshape and transpose outputs whose device bytes are their input's, byte for byte
    /// (the `layout` pass finds them): each maps to the tensor whose DRAM buffer it
    /// shares. Their ops launch no kernel; readers address the shared buffer.
    #[serde(default)]
    pub views: BTreeMap<String, String>,
}

impl Compilation {
    /// The tensor whose DRAM buffer holds `tensor`: the one a view shares, or `tensor`.
    pub fn buffer_of<'a>(&'a self, tensor: &'a str) -> &'a str {
        self.views.get(tensor).map_or(tensor, String::as_str)
    }

    /// Whether device op `i` is a reshape or transpose whose output is a view
    /// ([`Compilation::views`]), so no kernel runs it.
    pub fn is_view_op(&self, i: usize) -> bool {
        self.ops.get(i).is_some_and(|op| {
            matches!(
                op.kind,
                DeviceOpKind::Movement(ops::Movement::Reshape | ops::Movement::Transpose)
            ) && op.outputs.len() == 1
                && self.views.contains_key(&op.outputs[0])
        })
    }

    /// The snapshot a pass recorded, if it ran.
    pub fn snapshot(&self, pass: &str) -> Option<&Snapshot> {
        self.snapshots.iter().find(|s| s.pass == pass)
    }

    /// Tensor roles: "input", "initializer", "output" or "intermediate".
    pub fn role_of(&self, tensor: &str) -> &'static str {
        if self.graph.outputs.iter().any(|o| o == tensor) {
            "output"
        } else if self.graph.inputs.iter().any(|i| i.name == tensor) {
            "input"
        } else if self.graph.initializers.iter().any(|i| i.name == tensor) {
            "initializer"
        } else {
            "intermediate"
        }
    }

    /// [`Compilation::role_of`] for every graph input, initializer and output at once (any
    /// other tensor is an intermediate), for passes that ask of every tensor.
    pub fn interface_roles(&self) -> BTreeMap<&str, &'static str> {
        let mut roles = BTreeMap::new();
        // Later inserts win, in the precedence `role_of` gives: output, input, initializer.
        for i in &self.graph.initializers {
            roles.insert(i.name.as_str(), "initializer");
        }
        for i in &self.graph.inputs {
            roles.insert(i.name.as_str(), "input");
        }
        for o in &self.graph.outputs {
            roles.insert(o.as_str(), "output");
        }
        roles
    }

    pub(crate) fn ty(&self, tensor: &str, op: &str) -> Result<&graph::TensorType, CompileError> {
        self.types
            .get(tensor)
            .ok_or_else(|| CompileError::at(op, format!("tensor '{tensor}' has no known type")))
    }

    pub(crate) fn layout(&self, tensor: &str, op: &str) -> Result<&Layout, CompileError> {
        self.layouts
            .get(tensor)
            .ok_or_else(|| CompileError::at(op, format!("tensor '{tensor}' has no layout")))
    }
}
