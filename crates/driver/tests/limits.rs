//! Inputs at and beyond the documented limits (docs/limits.md): refused up front with the
//! limit named, never after building gigabytes.

use driver::{run_pipeline, PipelineOptions};

fn relu(shape: &str) -> Vec<u8> {
    format!(
        r#"{{"format": "spyre-graph", "version": 1, "name": "r",
 "inputs": [{{"name": "A", "dtype": "f32", "shape": {shape}}}],
 "nodes": [{{"name": "r", "op": "Relu", "inputs": ["A"], "outputs": ["Y"]}}],
 "outputs": ["Y"]}}"#
    )
    .into_bytes()
}

#[test]
fn zero_size_tensors_are_an_input_error() {
    let e = run_pipeline(&relu("[0, 4]"), "r.json", &PipelineOptions::default()).unwrap_err();
    assert!(e.message.contains("tensor 'A' has shape [0, 4]"), "{e}");
    assert!(!e.message.contains("does not verify"), "{e}");
}

#[test]
fn a_graph_within_the_graph_limits_but_beyond_dram_is_refused_before_packing() {
    let mut result = None;
    let allocated = allocation_counter::measure(|| {
        result = Some(run_pipeline(
            &relu("[16384, 16384]"),
            "r.json",
            &PipelineOptions::default(),
        ));
    });
    let e = result.unwrap().unwrap_err();
    assert!(e.message.contains("max_dram_elements"), "{e}");
    assert!(e.message.contains("timing-only"), "{e}");
    // The input alone is 1 GiB of f32.
    assert!(allocated.bytes_max < 1 << 24, "{allocated:?}");
}
