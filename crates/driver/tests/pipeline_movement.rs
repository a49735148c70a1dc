//! Movement ops (reshape, transpose, slice, expand, unsqueeze) through the whole pipeline:
//! compiled to KTIR kernels that rearrange tensors between stick layouts, simulated, and
//! compared with the reference evaluator.

use driver::{run_pipeline, PipelineOptions};

const MOVES: &str = r#"{
  "format": "spyre-graph", "version": 1, "name": "move", "description": "movement ops",
  "inputs": [ { "name": "x", "dtype": "f16", "shape": [4, 128] },
              { "name": "y", "dtype": "f16", "shape": [2, 2, 128] } ],
  "initializers": [],
  "nodes": [
    { "name": "r", "op": "Reshape", "inputs": ["x"], "outputs": ["xr"], "attrs": {"shape": [2, 2, 128]} },
    { "name": "t", "op": "Transpose", "inputs": ["xr"], "outputs": ["xt"], "attrs": {"perm": [1, 0, 2]} },
    { "name": "s", "op": "Slice", "inputs": ["xt"], "outputs": ["xs"], "attrs": {"starts": [1], "ends": [2], "axes": [0]} },
    { "name": "e", "op": "Expand", "inputs": ["xs"], "outputs": ["xe"], "attrs": {"shape": [3, 2, 128]} },
    { "name": "u", "op": "Unsqueeze", "inputs": ["y"], "outputs": ["yu"], "attrs": {"axes": [0]} },
    { "name": "add", "op": "Add", "inputs": ["xe", "xs"], "outputs": ["z"] }
  ],
  "outputs": ["z", "yu"]
}"#;

#[test]
fn movement_ops_run_end_to_end() {
    let r = run_pipeline(MOVES, "move.json", &PipelineOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(r.run.passed, "{:?}", r.run.outputs);
    for kernel in ["reshape", "transpose", "slice", "expand"] {
        assert!(
            r.ktir.contains(&format!("({kernel})")),
            "no {kernel} kernel in\n{}",
            r.ktir
        );
    }
    assert!(r.ktir.contains("tensor.extract_slice"));
    assert!(r.ktir.contains("linalg.broadcast"));
}

#[test]
fn a_transpose_that_moves_the_stick_dim_runs_too() {
    // [64, 200] -> [200, 64]: the stick dim changes and 200 is not a whole number of sticks.
    let g = r#"{
      "format": "spyre-graph", "version": 1, "name": "t", "description": "transpose",
      "inputs": [ { "name": "x", "dtype": "f16", "shape": [64, 200] } ],
      "initializers": [],
      "nodes": [ { "name": "t", "op": "Transpose", "inputs": ["x"], "outputs": ["y"], "attrs": {"perm": [1, 0]} } ],
      "outputs": ["y"]
    }"#;
    let r =
        run_pipeline(g, "t.json", &PipelineOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.run.passed, "{:?}", r.run.outputs);
}
