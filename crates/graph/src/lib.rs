//! # graph: model graphs and their reference semantics
//!
//! This crate holds everything about a model *as a model*:
//!
//! - **tensor types and dtypes** ([`DType`], [`TensorType`], [`Tensor`]), including the
//!   exact rounding each dtype applies ([`DType::round`]);
//! - **the model-graph IR** ([`Graph`], [`Node`], [`Initializer`], ...), nodes in
//!   execution order, ONNX op names and attribute semantics;
//! - **the op table** ([`OpKind`], [`OpSpec`]): every op defined once, with its arity,
//!   attributes, ONNX names, inference and reference evaluation (see `docs/ops.md`);
//! - **shape and dtype inference** ([`Graph::infer_types`]), which also validates the
//!   graph;
//! - **loaders and writers**: our JSON format ([`load_json`], [`to_json`]; see
//!   `docs/graph-format.md`) and ONNX ([`load_onnx`], [`to_onnx`]; see `docs/onnx.md`);
//! - **the f32 reference evaluator** ([`evaluate`]), with deterministic initializers and
//!   inputs ([`Graph::initializer_tensors`], [`random_inputs`]).
//!
//! It does **not** know about device layouts, cores, timing or JavaScript; those belong to
//! `compiler`, `sim` and `wasm`.
//!
//! Library code never panics on any input: every problem is a [`GraphError`] whose
//! [`Location`] is a line and column in JSON text, a node, or the graph. Sizes are bounded
//! ([`MAX_SHAPE_ELEMENTS`] per tensor shape, [`MAX_TENSOR_ELEMENTS`] per materialised
//! tensor, [`MAX_GRAPH_ELEMENTS`] for all values the evaluator holds, [`MAX_RANK`]) so an
//! absurd shape is a clear error rather than an out-of-memory abort; shapes alone are
//! cheap, so a graph's shapes may describe a full model that is only planned and timed;
//! so is work: [`evaluate`] refuses graphs above [`MAX_EVAL_WORK`] multiply-adds and
//! [`Graph::initializer_tensors`] above [`MAX_MATERIALISED_ELEMENTS`] values (a real-size
//! Llama layer loads and type-checks for planning, but is not evaluated).

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod blocks;
mod dtype;
mod error;
mod eval;
mod infer;
mod ir;
mod json;
mod norm;
mod onnx;
mod ops;
mod paged;
mod rng;
mod rope;
mod spec;
mod tensor;

pub use blocks::{depth_space_plan, DepthSpacePlan};
pub use dtype::DType;
pub use error::{GraphError, Location};
pub use eval::{attention_window, eval_work, evaluate, in_window, MAX_EVAL_WORK};
pub use ir::{
    AttrValue, ExternalData, ExternalFiles, Graph, InitSpec, Initializer, Node, ValueInfo,
    MAX_GRAPH_NODES,
};
pub use json::{load_json, to_json, FORMAT, VERSION};
pub use norm::{lrn_plan, norm_has_scale, norm_plan, LrnPlan, NormPlan, MVN_EPSILON};
pub use onnx::{
    load_onnx, load_onnx_with_files, load_tensor_proto, tensor_proto_bytes, to_onnx,
    FOLDED_OPS as ONNX_FOLDED_OPS, MAX_OPSET as ONNX_MAX_OPSET, MIN_OPSET as ONNX_MIN_OPSET,
};
pub use ops::{einsum_plan, lp_pool_exponent, pool_plan, EinsumPlan, PoolAxis, PoolKind, PoolPlan};
pub use paged::{check_batch as check_paged_batch, PagedDims, PagedSequence, QueryLayout};
pub use rng::{random_inputs, SplitMix64, MAX_MATERIALISED_ELEMENTS};
pub use rope::{rope_plan, RopePlan};
pub use spec::{
    did_you_mean, ops_markdown, AttrKind, AttrSpec, ConstForm, ConstInput, OnnxName, OpKind,
    OpSpec, Port, PortArity, SUPPORTED_OPS, VARIADIC,
};
pub use tensor::{
    Tensor, TensorType, MAX_GRAPH_ELEMENTS, MAX_RANK, MAX_SHAPE_ELEMENTS, MAX_TENSOR_ELEMENTS,
};
