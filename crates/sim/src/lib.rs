//! The simulator: machine descriptions, KTIR execution (real numbers, or timing only), the
//! timing model (cores, ring, off-chip memory) and the trace with its exports.
//!
//! It executes KTIR modules handed to it by value; it does not know about model graphs,
//! the compiler or JavaScript. Timing is a layer over execution: the interpreter records
//! every transfer and compute step as a task, and the timing engine schedules those tasks
//! on the machine's resources.

mod affine;
mod collectives;
mod domain;
mod elementwise;
mod estimate;
pub mod exec;
pub mod exec_ew;
pub mod exec_ops;
pub mod machine;
mod memory;
mod resolve;
mod state;
mod store;
mod tensor;
pub mod timing;
pub mod trace;
mod value;

pub use estimate::estimate_steps;
pub use exec::{ExecLimits, KernelValue, LineLookup, ProgressFn, SimError, Simulator};
pub use machine::Machine;
