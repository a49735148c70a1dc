//! The JSON format: loading, writing, and error locations.

mod common;

use std::collections::BTreeMap;

use common::*;
use graph::{
    evaluate, load_json, to_json, AttrValue, DType, Graph, GraphError, InitSpec, Initializer,
    Location, Node, Tensor, TensorType, ValueInfo,
};

const MATMUL_ADD: &str = include_str!("../../../examples/graphs/matmul_add.json");

fn json_loc(e: &GraphError) -> (usize, usize, String) {
    match &e.location {
        Location::Json {
            line,
            column,
            pointer,
        } => (*line, *column, pointer.clone()),
        other => panic!("expected a JSON location, got {other:?} ({e})"),
    }
}

/// Line (1-based) of the first line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).expect(needle) + 1
}

#[test]
fn loads_the_matmul_add_example() {
    let g = load_json(MATMUL_ADD).unwrap();
    assert_eq!(g.name, "matmul_add");
    assert_eq!(g.inputs.len(), 1);
    assert_eq!(g.nodes.len(), 2);
    assert_eq!(g.outputs, ["C"]);
    let types = g.infer_types().unwrap();
    assert_eq!(types["AB"], TensorType::new(DType::F16, vec![128, 130]));
    assert_eq!(types["C"], TensorType::new(DType::F16, vec![128, 130]));
    assert_eq!(types["bias"], TensorType::new(DType::F16, vec![130]));
    assert_eq!(g.parameter_count(), 100 * 130 + 130);
    assert_eq!(
        g.initializers[0].init,
        InitSpec::Uniform {
            seed: 1,
            low: -0.5,
            high: 0.5
        }
    );
}

#[test]
fn matmul_add_evaluates_and_matches_a_direct_computation() {
    let g = load_json(MATMUL_ADD).unwrap();
    let inputs = graph::random_inputs(&g, 7).unwrap();
    let vals = evaluate(&g, &inputs).unwrap();
    let (a, b, bias, c) = (&vals["A"], &vals["B"], &vals["bias"], &vals["C"]);
    assert_eq!(c.shape, [128, 130]);
    for &(i, j) in &[(0usize, 0usize), (5, 129), (127, 64)] {
        let mut acc = 0.0f32;
        for k in 0..100 {
            acc += a.data[i * 100 + k] * b.data[k * 130 + j];
        }
        let ab = DType::F16.round(acc);
        let expect = DType::F16.round(ab + bias.data[j]);
        assert_eq!(c.data[i * 130 + j], expect, "C[{i},{j}]");
    }
}

#[test]
fn tiny_matmul_add_by_hand() {
    let text = r#"{
      "format": "spyre-graph", "version": 1, "name": "tiny", "description": "",
      "inputs": [ { "name": "A", "dtype": "f32", "shape": [2, 2] } ],
      "initializers": [
        { "name": "B", "dtype": "f32", "shape": [2, 2], "data": [1, 2, 3, 4] },
        { "name": "b", "dtype": "f32", "shape": [2], "data": [0.5, -1] }
      ],
      "nodes": [
        { "name": "mm", "op": "MatMul", "inputs": ["A", "B"], "outputs": ["AB"] },
        { "name": "add", "op": "Add", "inputs": ["AB", "b"], "outputs": ["C"] }
      ],
      "outputs": ["C"]
    }"#;
    let g = load_json(text).unwrap();
    let a = Tensor::new(DType::F32, vec![2, 2], vec![1., 0., 2., -1.]).unwrap();
    let vals = evaluate(&g, &BTreeMap::from([("A".to_string(), a)])).unwrap();
    // [1 0; 2 -1] @ [1 2; 3 4] = [1 2; -1 0]; + [0.5 -1] = [1.5 1; -0.5 -1]
    assert_tensor(&vals["AB"], DType::F32, &[2, 2], &[1., 2., -1., 0.], "AB");
    assert_tensor(&vals["C"], DType::F32, &[2, 2], &[1.5, 1., -0.5, -1.], "C");
    assert_eq!(
        vals.len(),
        5,
        "inputs, initializers and node outputs are all returned"
    );
}

#[test]
fn evaluate_checks_its_inputs() {
    let g = load_json(MATMUL_ADD).unwrap();
    let e = evaluate(&g, &BTreeMap::new()).unwrap_err();
    assert_eq!(e.location, Location::Graph);
    assert!(e.message.contains("no value given for input 'A'"), "{e}");
    let wrong = Tensor::new(DType::F16, vec![100, 128], vec![0.0; 12800]).unwrap();
    let e = evaluate(&g, &BTreeMap::from([("A".to_string(), wrong)])).unwrap_err();
    assert!(e.message.contains("must be f16[128, 100]"), "{e}");
    let mut ins = graph::random_inputs(&g, 1).unwrap();
    ins.insert("Z".into(), Tensor::scalar(DType::F32, 1.0));
    let e = evaluate(&g, &ins).unwrap_err();
    assert!(e.message.contains("'Z' is not an input"), "{e}");
}

#[test]
fn malformed_json_reports_line_and_column() {
    let text = "{\n  \"format\": \"spyre-graph\",\n  \"version\": 1,\n  oops\n}";
    let e = load_json(text).unwrap_err();
    let (line, col, _) = json_loc(&e);
    assert_eq!((line, col), (4, 3), "{e}");
    assert!(
        e.to_string().starts_with("line 4, column 3: invalid JSON"),
        "{e}"
    );
    // truncated input
    let e = load_json(&MATMUL_ADD[..200]).unwrap_err();
    assert!(e.message.contains("EOF"), "{e}");
}

#[test]
fn semantic_errors_point_at_the_offending_value() {
    // (replace this, with this, expected pointer, phrase in the message, text on the expected line)
    let cases: &[(&str, &str, &str, &str, &str)] = &[
        (
            "\"op\": \"Add\"",
            "\"op\": \"Addd\"",
            "/nodes/1/op",
            "unknown op 'Addd'",
            "Addd",
        ),
        (
            "\"dtype\": \"f16\", \"shape\": [128, 100]",
            "\"dtype\": \"f17\", \"shape\": [128, 100]",
            "/inputs/0/dtype",
            "unknown dtype \"f17\"",
            "f17",
        ),
        (
            "\"inputs\": [\"AB\", \"bias\"]",
            "\"inputs\": [\"AB\", \"bais\"]",
            "/nodes/1/inputs/1",
            "'bais' is not defined",
            "bais",
        ),
        (
            "\"shape\": [128, 100]",
            "\"shape\": \"128x100\"",
            "/inputs/0/shape",
            "must be an array",
            "128x100",
        ),
        (
            "\"shape\": [128, 100]",
            "\"shape\": [128, -100]",
            "/inputs/0/shape/1",
            "non-negative integer",
            "-100",
        ),
        (
            "\"shape\": [128, 100]",
            "\"shape\": [1000000, 1000000]",
            "/inputs/0/shape",
            "limit",
            "1000000",
        ),
        (
            "\"outputs\": [\"C\"]\n",
            "\"outputs\": [\"D\"]\n",
            "/outputs/0",
            "graph output 'D'",
            "\"outputs\": [\"D\"]",
        ),
        (
            "\"outputs\": [\"AB\"]",
            "\"outputs\": [\"A\"]",
            "/nodes/0/outputs/0",
            "already defined",
            "\"name\": \"matmul\"",
        ),
        (
            "{ \"name\": \"matmul\", \"op\": \"MatMul\",",
            "{ \"name\": \"matmul\", \"op\": \"MatMul\", \"attrs\": {\"axis\": 1},",
            "/nodes/0/attrs/axis",
            "no attribute 'axis'",
            "\"axis\": 1",
        ),
        (
            "\"name\": \"matmul\", ",
            "",
            "/nodes/0",
            "missing field 'name'",
            "MatMul",
        ),
        (
            "\"init\": { \"uniform\": { \"seed\": 2,",
            "\"data\": [1], \"init\": { \"uniform\": { \"seed\": 2,",
            "/initializers/1",
            "both 'data' and 'init'",
            "\"name\": \"bias\"",
        ),
        (
            "\"seed\": 2",
            "\"seed\": 2.5",
            "/initializers/1/init/uniform/seed",
            "non-negative integer",
            "2.5",
        ),
        (
            "\"version\": 1",
            "\"version\": 2",
            "/version",
            "unsupported version 2",
            "\"version\": 2",
        ),
        (
            "\"version\": 1",
            "\"version\": 1, \"extra\": true",
            "/extra",
            "unknown field 'extra'",
            "\"extra\"",
        ),
    ];
    for (from, to, pointer, phrase, line_text) in cases {
        assert!(MATMUL_ADD.contains(from), "fixture lacks {from}");
        let text = MATMUL_ADD.replacen(from, to, 1);
        let e = load_json(&text).expect_err(pointer);
        let (line, col, ptr) = json_loc(&e);
        assert_eq!(&ptr, pointer, "{e}");
        assert!(e.message.contains(phrase), "{pointer}: {e}");
        assert_eq!(line, line_of(&text, line_text), "{pointer}: {e}");
        assert!(col >= 1);
    }
}

#[test]
fn unknown_op_names_the_node_and_lists_supported_ops() {
    let text = MATMUL_ADD.replacen("\"op\": \"MatMul\"", "\"op\": \"LSTM\"", 1);
    let e = load_json(&text).unwrap_err();
    assert!(e.message.contains("'LSTM'"), "{e}");
    assert!(e.message.contains("node 'matmul'"), "{e}");
    for op in graph::SUPPORTED_OPS {
        assert!(e.message.contains(op), "{op} missing from {e}");
    }
    let (line, col, _) = json_loc(&e);
    let l = line_of(&text, "LSTM");
    assert_eq!(line, l);
    // column points at the value of "op"
    let line_text = text.lines().nth(l - 1).unwrap();
    assert_eq!(col, line_text.find("\"LSTM\"").unwrap() + 1);
}

#[test]
fn shape_mismatch_names_node_and_op() {
    let text = MATMUL_ADD.replacen("\"shape\": [100, 130]", "\"shape\": [99, 130]", 1);
    let e = load_json(&text).unwrap_err();
    assert!(e.message.starts_with("node 'matmul' (MatMul): "), "{e}");
    assert!(e.message.contains("(100 vs 99)"), "{e}");
    assert_eq!(json_loc(&e).0, line_of(&text, "\"name\": \"matmul\""));

    // the same graph in memory gives a node location
    let mut g = load_json(MATMUL_ADD).unwrap();
    g.initializers[1].ty.shape = vec![131];
    let e = g.infer_types().unwrap_err();
    assert_eq!(
        e.location,
        Location::Node {
            node: "add_bias".into(),
            op: "Add".into()
        }
    );
    assert!(
        e.message.contains("[128, 130] and [131] do not broadcast"),
        "{e}"
    );
    assert!(e.to_string().starts_with("node 'add_bias' (Add): "), "{e}");
}

#[test]
fn shapes_beyond_what_is_materialised_load_but_are_not_evaluated() {
    // 2^23 x 100 elements in one input and more than 2^31 in all: shapes to plan and time,
    // not to hold.
    let text = MATMUL_ADD.replacen("[128, 100]", "[8388608, 100]", 1);
    let g = load_json(&text).unwrap_or_else(|e| panic!("{e}"));
    let types = g.infer_types().unwrap();
    assert_eq!(types["A"].numel(), 100 << 23);
    let e = evaluate(&g, &BTreeMap::new()).unwrap_err();
    assert!(e.message.contains("timing"), "{e}");
    // Materialising one tensor that large is refused before allocating.
    let e = Tensor::new(DType::F16, vec![32768, 32768], Vec::new()).unwrap_err();
    assert!(e.contains("(2^28) per tensor"), "{e}");
}

#[test]
fn absurd_shapes_are_errors_not_panics() {
    let text = MATMUL_ADD.replacen("[128, 100]", "[1000000, 1000000]", 1);
    let e = load_json(&text).unwrap_err();
    assert!(e.message.contains("more than the limit"), "{e}");
    let text = MATMUL_ADD.replacen(
        "[128, 100]",
        "[18446744073709551615, 18446744073709551615, 2]",
        1,
    );
    assert!(load_json(&text).is_err());
    // A node whose output would be too large.
    let g = one_node(
        "MatMul",
        &[
            f(&[100_000, 1], &[0.0; 100_000]),
            f(&[1, 100_000], &[0.0; 100_000]),
        ],
        &[],
        1,
    );
    let e = g.infer_types().unwrap_err();
    assert!(matches!(e.location, Location::Node { .. }), "{e}");
    assert!(e.message.contains("limit"), "{e}");
    let e = one_node(
        "Expand",
        &[f(&[1], &[1.])],
        &[("shape", ints(&[1 << 20, 1 << 20]))],
        1,
    )
    .infer_types()
    .unwrap_err();
    assert!(e.message.contains("limit"), "{e}");
    // Tensors and random inputs refuse too.
    assert!(Tensor::new(DType::F32, vec![1 << 40, 1 << 40], vec![]).is_err());
    let mut g = load_json(MATMUL_ADD).unwrap();
    g.inputs[0].ty.shape = vec![usize::MAX, 2];
    assert!(graph::random_inputs(&g, 0).is_err());
    assert!(g.initializer_tensors().is_err());
    // rank limit
    g.inputs[0].ty.shape = vec![1; 17];
    assert!(g.infer_types().unwrap_err().message.contains("rank"));
}

#[test]
fn garbage_never_panics() {
    let inputs = [
        "", "null", "[]", "{}", "{\"format\": 1}", "\"x\"", "{\"format\":\"spyre-graph\",\"version\":1}",
        "{\"format\":\"spyre-graph\",\"version\":1,\"name\":\"x\",\"outputs\":[]}",
        "{\"format\":\"spyre-graph\",\"version\":1,\"name\":\"x\",\"nodes\":[{}],\"outputs\":[]}",
        "{\"format\":\"spyre-graph\",\"version\":1,\"name\":\"x\",\"nodes\":[1],\"outputs\":[\"a\"]}",
    ];
    for t in inputs {
        assert!(load_json(t).is_err(), "{t:?} should not load");
    }
    // every prefix of a valid file is an error, never a panic
    for n in (0..MATMUL_ADD.len()).step_by(7) {
        let _ = load_json(&MATMUL_ADD[..n]);
    }
}

fn kitchen_sink() -> Graph {
    let ty = |d, s: &[usize]| TensorType::new(d, s.to_vec());
    Graph {
        name: "sink \"quoted\" \u{e9}".into(),
        description: "every init kind\nand attr kind".into(),
        inputs: vec![ValueInfo {
            name: "x".into(),
            ty: ty(DType::BF16, &[2, 3]),
        }],
        outputs: vec!["y".into(), "s1".into()],
        initializers: vec![
            Initializer {
                name: "d".into(),
                ty: ty(DType::F32, &[3]),
                init: InitSpec::Data(vec![0.1, -1e-7, f32::INFINITY]),
            },
            Initializer {
                name: "u".into(),
                ty: ty(DType::BF16, &[3]),
                init: InitSpec::Uniform {
                    seed: u64::MAX,
                    low: -0.25,
                    high: 0.75,
                },
            },
            Initializer {
                name: "n".into(),
                ty: ty(DType::BF16, &[1]),
                init: InitSpec::Normal {
                    seed: 3,
                    mean: 0.0,
                    std: 0.02,
                },
            },
            Initializer {
                name: "z".into(),
                ty: ty(DType::BF16, &[1]),
                init: InitSpec::Zeros,
            },
            Initializer {
                name: "o".into(),
                ty: ty(DType::BF16, &[]),
                init: InitSpec::Ones,
            },
            Initializer {
                name: "c".into(),
                ty: ty(DType::I64, &[2]),
                init: InitSpec::Constant(3.0),
            },
        ],
        nodes: vec![
            Node {
                name: "gemm".into(),
                op: "Gemm".into(),
                inputs: vec!["x".into(), "x".into(), "".into()],
                outputs: vec!["g".into()],
                attrs: BTreeMap::from([
                    ("alpha".to_string(), AttrValue::Float(0.5)),
                    ("beta".to_string(), AttrValue::Float(1.0)),
                    ("transB".to_string(), AttrValue::Int(1)),
                ]),
            },
            Node {
                name: "sm".into(),
                op: "Softmax".into(),
                inputs: vec!["g".into()],
                outputs: vec!["y".into()],
                attrs: BTreeMap::from([("axis".to_string(), AttrValue::Int(-1))]),
            },
            Node {
                name: "split".into(),
                op: "Split".into(),
                inputs: vec!["x".into()],
                outputs: vec!["s0".into(), "s1".into()],
                attrs: BTreeMap::from([
                    ("axis".to_string(), AttrValue::Int(1)),
                    ("split".to_string(), AttrValue::Ints(vec![1, 2])),
                ]),
            },
            Node {
                name: "gelu".into(),
                op: "Gelu".into(),
                inputs: vec!["s0".into()],
                outputs: vec!["ge".into()],
                attrs: BTreeMap::from([(
                    "approximate".to_string(),
                    AttrValue::String("tanh".into()),
                )]),
            },
            Node {
                name: "clip".into(),
                op: "Clip".into(),
                inputs: vec!["ge".into()],
                outputs: vec!["cl".into()],
                attrs: BTreeMap::from([("min".to_string(), AttrValue::Float(f32::NEG_INFINITY))]),
            },
        ],
    }
}

#[test]
fn to_json_round_trips() {
    let g = load_json(MATMUL_ADD).unwrap();
    assert_eq!(load_json(&to_json(&g)).unwrap(), g);

    let g = kitchen_sink();
    g.infer_types().unwrap();
    let text = to_json(&g);
    let back = load_json(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back, g, "{text}");
    assert_eq!(to_json(&back), text);
    // one line per node, readable numbers
    assert!(text.contains("\"data\": [0.1, -1e-7, \"inf\"]"), "{text}");
    assert!(text.contains("{ \"name\": \"sm\", \"op\": \"Softmax\", \"inputs\": [\"g\"], \"outputs\": [\"y\"], \"attrs\": { \"axis\": -1 } }"), "{text}");
}

#[test]
fn empty_input_name_is_only_for_optional_inputs() {
    let mut g = kitchen_sink();
    g.nodes[0].inputs[1] = String::new();
    let e = g.infer_types().unwrap_err();
    assert!(e.message.contains("required but empty"), "{e}");
}

#[test]
fn nodes_must_be_in_execution_order() {
    let mut g = load_json(MATMUL_ADD).unwrap();
    g.nodes.swap(0, 1);
    let e = g.infer_types().unwrap_err();
    assert_eq!(
        e.location,
        Location::Node {
            node: "add_bias".into(),
            op: "Add".into()
        }
    );
    assert!(e.message.contains("produced by a later node"), "{e}");
}

#[test]
fn the_documented_example_loads_and_runs() {
    let doc = include_str!("../../../docs/graph-format.md");
    let start = doc.find("```json\n").unwrap() + "```json\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let g = load_json(&doc[start..end]).unwrap_or_else(|e| panic!("{e}"));
    let types = g.infer_types().unwrap();
    assert_eq!(types["y"], TensorType::new(DType::F16, vec![4, 64]));
    assert_eq!(g.parameter_count(), 64 + 64 + 64 * 256 + 256 + 256 * 64 + 2);
    let vals = evaluate(&g, &graph::random_inputs(&g, 0).unwrap()).unwrap();
    assert!(vals["y"].data.iter().all(|v| v.is_finite()));
}
