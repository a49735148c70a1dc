//! The example gallery shipped with the playground, compiled into the binary.

use serde::Serialize;

/// A model graph or KTIR program shipped with the playground.
#[derive(Clone, Debug, Serialize)]
pub struct Example {
    /// Short name: a graph's file name without extension; a KTIR program's with `.mlir`.
    pub name: &'static str,
    /// "graph" (runs through the compiler) or "ktir" (runs as written).
    pub kind: &'static str,
    /// One line for the gallery.
    pub description: String,
    /// Too large to run with numbers (its weights exceed what is materialised at once):
    /// the page runs it timing-only.
    #[serde(rename = "timingOnly")]
    pub timing_only: bool,
    /// The file's text.
    #[serde(skip)]
    pub source: &'static str,
}

/// `examples/graphs/*.json`, in display order (`matmul_add` first: tests rely on it).
/// `llama3_8b_layer` is for planning and timing only: its weights are not materialised.
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
    (
        "paged_decode",
        include_str!("../../../examples/graphs/serving/paged_decode.json"),
    ),
];

/// KTIR programs from `tests/ktir/valid` that run as written (no scalar arguments), for
/// reviewers of the spec: each shows one feature of the dialect on the simulator.
const KTIR_SOURCES: &[(&str, &str)] = &[
    (
        "add_rows.mlir",
        include_str!("../../../tests/ktir/valid/add_rows.mlir"),
    ),
    (
        "matmul_k_loop.mlir",
        include_str!("../../../tests/ktir/valid/matmul_k_loop.mlir"),
    ),
    (
        "ring_all_reduce.mlir",
        include_str!("../../../tests/ktir/valid/ring_all_reduce.mlir"),
    ),
    (
        "indirect_gather.mlir",
        include_str!("../../../tests/ktir/valid/indirect_gather.mlir"),
    ),
    (
        "paged_copy.mlir",
        include_str!("../../../tests/ktir/valid/paged_copy.mlir"),
    ),
    (
        "sdpa.mlir",
        include_str!("../../../tests/ktir/valid/sdpa.mlir"),
    ),
    (
        "rope.mlir",
        include_str!("../../../tests/ktir/valid/rope.mlir"),
    ),
];

/// A KTIR program's description: its leading comment, joined into one line.
fn ktir_description(source: &str) -> String {
    source
        .lines()
        .map_while(|l| l.trim().strip_prefix("//"))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The example gallery, in display order: model graphs, then KTIR programs.
pub fn examples() -> Vec<Example> {
    let graphs = EXAMPLE_SOURCES.iter().map(|(name, source)| Example {
        name,
        kind: "graph",
        description: graph::load_json(source)
            .map(|g| g.description)
            .unwrap_or_default(),
        timing_only: graph::load_json(source).is_ok_and(|g| {
            g.initializers
                .iter()
                .map(|i| i.ty.numel())
                .fold(0usize, usize::saturating_add)
                > graph::MAX_MATERIALISED_ELEMENTS
        }),
        source,
    });
    let programs = KTIR_SOURCES.iter().map(|(name, source)| Example {
        name,
        kind: "ktir",
        description: ktir_description(source),
        timing_only: false,
        source,
    });
    graphs.chain(programs).collect()
}
