//! Every per-op case of `tests/graph/ops/` whose ops the device compiler takes runs through
//! the whole pipeline: compiled, lowered to KTIR, simulated on spyre32 and compared with the
//! reference evaluator within its dtype's tolerance. The graph crate checks the same cases'
//! reference against onnxruntime, so one case file tests an op from ONNX to the simulated
//! cores. Cases the device cannot run yet are listed below with the reason.

use driver::compiler::ops::decomposition;
use driver::{run_pipeline, PipelineOptions};
use std::path::Path;

/// Cases whose ops the compiler takes but whose attributes or shapes it refuses yet, and
/// why. Each must still be refused: when support lands, the test says to drop it here.
const NOT_ON_DEVICE: &[(&str, &str)] = &[("slice", "slices with negative steps")];

fn cases() -> Vec<(String, serde_json::Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/graph/ops");
    let mut out: Vec<(String, serde_json::Value)> = std::fs::read_dir(&dir)
        .expect("tests/graph/ops")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let case: serde_json::Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, case["graph"].clone())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn on_device(graph: &serde_json::Value) -> bool {
    graph["nodes"].as_array().is_some_and(|nodes| {
        nodes
            .iter()
            .all(|n| n["op"].as_str().and_then(decomposition).is_some())
    })
}

#[test]
fn every_per_op_case_the_compiler_takes_matches_the_reference() {
    let mut failures = Vec::new();
    let mut ran = 0;
    let mut covered: Vec<String> = Vec::new();
    for (name, graph) in cases() {
        if !on_device(&graph) {
            continue;
        }
        let source = graph.to_string();
        let result = run_pipeline(
            &source,
            &format!("{name}.json"),
            &PipelineOptions::default(),
        );
        if let Some((_, why)) = NOT_ON_DEVICE.iter().find(|(n, _)| *n == name) {
            match result {
                Err(e) if e.to_string().contains("compile") => {}
                Err(e) => failures.push(format!("{name} ({why}): fails outside the compiler: {e}")),
                Ok(_) => failures.push(format!("{name} runs now: take it off NOT_ON_DEVICE")),
            }
            continue;
        }
        ran += 1;
        match result {
            Ok(r) if r.run.passed => covered.extend(
                graph["nodes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|n| n["op"].as_str().map(str::to_string)),
            ),
            Ok(r) => failures.push(format!("{name}: out of tolerance: {:?}", r.run.outputs)),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(ran >= 40, "only {ran} cases ran on the device");
    // Every op both the graph and the compiler take is proven on the device by some case:
    // a new op whose lowering is missing fails here, not in a user's model.
    let missing: Vec<&str> = driver::compiler::ops::supported_graph_ops()
        .filter(|op| driver::graph::SUPPORTED_OPS.contains(op))
        .filter(|op| !covered.iter().any(|c| c == op))
        .collect();
    assert!(
        missing.is_empty(),
        "ops with no per-op case that runs on the device: {missing:?}"
    );
}

#[test]
fn the_skip_list_names_real_cases() {
    let names: Vec<String> = cases().into_iter().map(|c| c.0).collect();
    for (n, why) in NOT_ON_DEVICE {
        assert!(names.iter().any(|c| c == n), "{n} is not a case ({why})");
    }
}

/// Forms no onnxruntime case can hold (so none is in `tests/graph/ops/`), run through the
/// whole pipeline against the reference: GroupNormalization's opset-18 per-group scale and
/// bias, which onnxruntime reads only as opset 21's per-channel ones.
#[test]
fn forms_without_an_onnxruntime_case_match_the_reference() {
    let cases = [(
        "groupnorm_per_group_scale",
        r#"{"format": "spyre-graph", "version": 1, "name": "groupnorm_per_group_scale",
            "inputs": [{"name": "x", "dtype": "f32", "shape": [2, 6, 3, 3]}],
            "initializers": [
                {"name": "s", "dtype": "f32", "shape": [3], "data": [0.5, -1.5, 2.0]},
                {"name": "b", "dtype": "f32", "shape": [3], "data": [0.1, 0.0, -0.3]}],
            "nodes": [{"name": "gn", "op": "GroupNormalization", "inputs": ["x", "s", "b"],
                       "outputs": ["y"], "attrs": {"num_groups": 3, "epsilon": 0.001}}],
            "outputs": ["y"]}"#,
    )];
    for (name, source) in cases {
        let r = run_pipeline(source, &format!("{name}.json"), &PipelineOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            r.run.passed,
            "{name}: out of tolerance: {:?}",
            r.run.outputs
        );
    }
}
