//! ONNX: a loader (`.onnx` bytes -> [`Graph`]) and a writer ([`Graph`] -> `.onnx` bytes).
//!
//! Both use hand-written `prost` messages for the part of the public ONNX schema they need
//! ([`proto`]); no protoc and no build script. See `docs/onnx.md` for what is read, how
//! ONNX ops map onto this crate's ops, and which opset the writer emits.

mod load;
pub(crate) mod proto;
mod tensor;

pub(crate) use tensor::decode_raw;
pub use tensor::{load_tensor_proto, tensor_proto_bytes};
mod write;

pub use load::{load_onnx, load_onnx_with_files};
pub use write::to_onnx;

/// The `ai.onnx` opset from which the loader reads every op it knows, and from which the op
/// table records each op's definitions. An older model is read where each op it uses has
/// the same definition as at this opset.
pub const MIN_OPSET: i64 = 13;
/// Highest `ai.onnx` opset the loader reads in full.
pub const MAX_OPSET: i64 = 25;
/// Newest `ai.onnx` opset whose operator changelog the op table records
/// ([`crate::OpSpec::onnx_versions`]). A model importing an opset above [`MAX_OPSET`] and
/// up to this one is read when every op it uses is unchanged since [`MAX_OPSET`].
pub const KNOWN_OPSET: i64 = 28;

#[cfg(test)]
mod tests;

/// ONNX ops the loader reads without making a node of them: they are folded away at load
/// time (constants, aliases and computations over shapes and constants).
pub const FOLDED_OPS: &[&str] = &[
    "Constant",
    "Identity",
    "Dropout",
    "Shape",
    "Size",
    "ConstantOfShape",
    "Range",
];

/// [`FOLDED_OPS`] with the versions of their ONNX definitions in force from opset
/// [`MIN_OPSET`] to [`KNOWN_OPSET`] (as [`crate::OpSpec::onnx_versions`]). Where an older
/// definition is read the same way (its changes since only added types or attribute forms
/// the loader also reads), the list starts with it, so older models using the op load.
pub(crate) const FOLDED_VERSIONS: &[(&str, &[i64])] = &[
    // v1 and v9 differ from v13 only in types; v11's sparse_value and v12's value_*
    // attributes are refused or read as at v13.
    ("Constant", &[1, 9, 11, 12, 13, 19, 21, 23, 24, 25]),
    ("Identity", &[1, 13, 14, 16, 19, 21, 23, 24, 25]),
    // Read in inference mode, where every version from 7 on passes its input through
    // (v6 and before had an `is_test` attribute).
    ("Dropout", &[7, 10, 12, 13, 22]),
    ("Shape", &[1, 13, 15, 19, 21, 23, 24, 25]),
    ("Size", &[1, 13, 19, 21, 23, 24, 25]),
    ("ConstantOfShape", &[9, 20, 21, 23, 24, 25]),
    ("Range", &[11, 27]),
];
