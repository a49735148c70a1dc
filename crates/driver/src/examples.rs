//! The example gallery shipped with the playground, compiled into the binary.

use serde::Serialize;

/// A model shipped with the playground.
#[derive(Clone, Debug, Serialize)]
pub struct Example {
    /// Short name (the file name without extension).
    pub name: &'static str,
    /// One line for the gallery.
    pub description: String,
    /// The file's text.
    #[serde(skip)]
    pub source: &'static str,
}

/// `examples/graphs/*.json`, in display order (`matmul_add` first: tests rely on it).
/// `llama3_8b_layer` is for planning and timing only: the reference evaluator refuses it.
const EXAMPLE_SOURCES: &[(&str, &str)] = &[
    (
        "matmul_add",
        include_str!("../../../examples/graphs/matmul_add.json"),
    ),
    (
        "matmul",
        include_str!("../../../examples/graphs/matmul.json"),
    ),
    (
        "softmax",
        include_str!("../../../examples/graphs/softmax.json"),
    ),
    (
        "layernorm",
        include_str!("../../../examples/graphs/layernorm.json"),
    ),
    (
        "rmsnorm",
        include_str!("../../../examples/graphs/rmsnorm.json"),
    ),
    (
        "gelu_mlp",
        include_str!("../../../examples/graphs/gelu_mlp.json"),
    ),
    (
        "swiglu_mlp",
        include_str!("../../../examples/graphs/swiglu_mlp.json"),
    ),
    (
        "gqa_attention",
        include_str!("../../../examples/graphs/gqa_attention.json"),
    ),
    (
        "gqa_attention_op",
        include_str!("../../../examples/graphs/gqa_attention_op.json"),
    ),
    (
        "llama_decoder_layer",
        include_str!("../../../examples/graphs/llama_decoder_layer.json"),
    ),
    (
        "tiny_two_layer",
        include_str!("../../../examples/graphs/tiny_two_layer.json"),
    ),
    (
        "granite_hybrid_block",
        include_str!("../../../examples/graphs/granite_hybrid_block.json"),
    ),
    (
        "llama3_8b_layer",
        include_str!("../../../examples/graphs/llama3_8b_layer.json"),
    ),
];

/// The example gallery, in display order.
pub fn examples() -> Vec<Example> {
    EXAMPLE_SOURCES
        .iter()
        .map(|(name, source)| Example {
            name,
            description: graph::load_json(source)
                .map(|g| g.description)
                .unwrap_or_default(),
            source,
        })
        .collect()
}
