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
    for kernel in ["reshape", "slice", "expand"] {
        assert!(
            r.ktir.contains(&format!("({kernel})")),
            "no {kernel} kernel in\n{}",
            r.ktir
        );
    }
    // The transpose keeps the stick dim and feeds a slice: its output takes its input's
    // bytes relabelled, and it runs no kernel (a transpose that moves the stick is below).
    assert!(!r.ktir.contains("(transpose)"), "{}", r.ktir);
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

/// One movement op on random inputs, with whether its work division must use more than
/// one core (some dim maps one-to-one between output and every input) or exactly one.
struct SplitCase {
    op: &'static str,
    inputs: &'static [&'static [usize]],
    attrs: &'static str,
    split: bool,
}

const SPLIT_CASES: &[SplitCase] = &[
    SplitCase {
        op: "Transpose",
        inputs: &[&[6, 10, 128]],
        attrs: r#"{"perm": [1, 0, 2]}"#,
        split: true,
    },
    // The output's stick dim comes from the input's middle dim; only d0 may split.
    SplitCase {
        op: "Transpose",
        inputs: &[&[3, 8, 130]],
        attrs: r#"{"perm": [0, 2, 1]}"#,
        split: true,
    },
    SplitCase {
        op: "Transpose",
        inputs: &[&[2, 3, 4, 70]],
        attrs: r#"{"perm": [2, 0, 1, 3]}"#,
        split: true,
    },
    SplitCase {
        op: "Reshape",
        inputs: &[&[4, 6, 192]],
        attrs: r#"{"shape": [4, 6, 3, 64]}"#,
        split: true,
    },
    SplitCase {
        op: "Reshape",
        inputs: &[&[4, 2, 3, 64]],
        attrs: r#"{"shape": [4, 6, 64]}"#,
        split: true,
    },
    // No output dim lines up with an input dim: one core reads the whole input.
    SplitCase {
        op: "Reshape",
        inputs: &[&[2, 12, 64]],
        attrs: r#"{"shape": [24, 64]}"#,
        split: false,
    },
    SplitCase {
        op: "Expand",
        inputs: &[&[1, 5, 1, 96]],
        attrs: r#"{"shape": [3, 5, 4, 96]}"#,
        split: true,
    },
    SplitCase {
        op: "Expand",
        inputs: &[&[7, 1, 64]],
        attrs: r#"{"shape": [2, 7, 3, 64]}"#,
        split: true,
    },
    SplitCase {
        op: "Slice",
        inputs: &[&[8, 6, 128]],
        attrs: r#"{"starts": [2], "ends": [6], "axes": [1]}"#,
        split: true,
    },
    SplitCase {
        op: "Slice",
        inputs: &[&[9, 200]],
        attrs: r#"{"starts": [3], "ends": [9], "axes": [0], "steps": [2]}"#,
        split: false,
    },
    SplitCase {
        op: "Concat",
        inputs: &[&[6, 3, 64], &[6, 5, 64]],
        attrs: r#"{"axis": 1}"#,
        split: true,
    },
    SplitCase {
        op: "Concat",
        inputs: &[&[5, 2, 64], &[5, 2, 100]],
        attrs: r#"{"axis": -1}"#,
        split: true,
    },
];

/// Cores used by each device op, read off the work-division snapshot text.
fn cores_by_op(r: &driver::PipelineResult) -> Vec<(String, usize)> {
    let wd = r
        .passes
        .iter()
        .find(|p| p.name == "work-division")
        .expect("a work-division snapshot");
    // The state form: "op NAME: KIND(...) ..." then "  split: SPLITS -> N cores".
    let mut out = Vec::new();
    let mut op: Option<(String, String)> = None;
    for l in wd.text.as_deref().unwrap_or_default().lines() {
        if let Some(rest) = l.strip_prefix("op ") {
            op = rest.split_once(": ").map(|(name, tail)| {
                let kind = tail.split('(').next().unwrap_or("").to_string();
                (name.to_string(), kind)
            });
        } else if !l.starts_with(' ') {
            op = None;
        } else if let (Some((name, kind)), Some(split)) = (&op, l.strip_prefix("  split: ")) {
            if let Some((splits, n)) = split.split_once(" -> ") {
                if let Ok(n) = n.trim_end_matches(" cores").parse() {
                    out.push((format!("{name} ({kind}): {splits}"), n));
                }
            }
        }
    }
    out
}

#[test]
fn movement_ops_split_over_cores_and_match_the_reference() {
    for machine in ["spyre32", "tiny4"] {
        for (k, case) in SPLIT_CASES.iter().enumerate() {
            let names: Vec<String> = (0..case.inputs.len()).map(|i| format!("x{i}")).collect();
            let inputs: Vec<String> = case
                .inputs
                .iter()
                .zip(&names)
                .map(|(s, n)| format!(r#"{{"name": "{n}", "dtype": "f16", "shape": {s:?}}}"#))
                .collect();
            let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
            let g = format!(
                r#"{{"format": "spyre-graph", "version": 1, "name": "m{k}", "description": "",
                  "inputs": [{}], "initializers": [],
                  "nodes": [{{"name": "m", "op": "{}", "inputs": [{}], "outputs": ["y"], "attrs": {}}}],
                  "outputs": ["y"]}}"#,
                inputs.join(", "),
                case.op,
                quoted.join(", "),
                case.attrs
            );
            let options = PipelineOptions {
                machine: sim::Machine::preset(machine).expect("preset"),
                ..PipelineOptions::default()
            };
            let what = format!("{} {:?} {} on {machine}", case.op, case.inputs, case.attrs);
            let r = run_pipeline(&g, "m.json", &options).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(r.run.passed, "{what}: {:?}", r.run.outputs);
            let cores = cores_by_op(&r);
            let (_, n) = cores
                .iter()
                .find(|(h, _)| h.starts_with("m ("))
                .unwrap_or_else(|| panic!("{what}: no division for the op in {cores:?}"));
            assert_eq!(*n > 1, case.split, "{what}: {n} cores");
        }
    }
}
