//! ONNX: a loader (`.onnx` bytes -> [`Graph`]) and a writer ([`Graph`] -> `.onnx` bytes).
//!
//! Both use hand-written `prost` messages for the part of the public ONNX schema they need
//! ([`proto`]); no protoc and no build script. See `docs/onnx.md` for what is read, how
//! ONNX ops map onto this crate's ops, and which opset the writer emits.

mod load;
pub(crate) mod proto;
mod tensor;

pub use tensor::load_tensor_proto;
mod write;

pub use load::load_onnx;
pub use write::to_onnx;

/// Lowest `ai.onnx` opset the loader reads.
pub const MIN_OPSET: i64 = 13;
/// Highest `ai.onnx` opset the loader reads.
pub const MAX_OPSET: i64 = 24;

#[cfg(test)]
mod tests;

/// ONNX ops the loader reads without making a node of them: they are folded away at load
/// time (constants, aliases and computations over shapes and constants).
pub const FOLDED_OPS: &[&str] = &["Constant", "Identity"];
