//! The simulator: machine descriptions, KTIR execution, the timing model (cores, ring,
//! off-chip memory) and the trace with its exports.
//!
//! It executes KTIR modules handed to it by value; it does not know about model graphs,
//! the compiler or JavaScript. Timing is a layer over execution: the interpreter records
//! every transfer and compute step as a task, and the timing engine schedules those tasks
//! on the machine's resources.
//!
//! The interpreter runs over a value domain: `Numbers` computes every element, `ShapesOnly`
//! (timing only) computes shapes and element types, for models too large to run with
//! numbers. Both record the same tasks, so a schedule does not depend on the domain. The
//! domain is picked once, by [`Simulator::new`] or [`Simulator::new_timing_only`].
//!
//! Execution is layered, each module using only those below it: `value` (values, limits,
//! errors) <- `store` (DRAM and scratchpad contents) <- `domain` <- `resolve` (a function's
//! resolved form) <- `state` (simulator and per-core state, shared op helpers) <- the op
//! families `memory`, `tensor`, `elementwise`, `collectives` <- [`exec`] (the driver loop:
//! launches, frames, control flow, dispatch). [`latency_model`] is a second, per-op timing
//! model kept beside the event-level one for comparison. Above one card: [`system`] (several
//! cards and their links, as data), [`cards`] (collectives across cards) and [`host`] (the
//! host runtime: allocation, transfers, launches). [`exec_ew`] and [`exec_ops`] are the
//! per-element semantics and tensor kernels the numbers domain computes with.

mod affine;
pub mod cards;
mod collectives;
mod domain;
mod elementwise;
mod estimate;
pub mod exec;
pub mod exec_ew;
pub mod exec_ops;
mod exp_slice;
pub mod host;
pub mod latency_model;
pub mod machine;
mod memory;
mod pool;
mod resolve;
mod state;
mod store;
pub mod system;
mod tensor;
pub mod timing;
pub mod trace;
mod value;

pub use estimate::estimate_steps;
pub use exec::{ExecLimits, KernelValue, LineLookup, ProgressFn, SimError, Simulator, WorkCount};
pub use machine::Machine;
pub use pool::release_pooled_buffers;
