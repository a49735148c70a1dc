//! A Llama-style decoder exported the way torch.onnx's TorchScript exporter writes a
//! static-shape model (`tests/graph/onnx_llama/make.py`: shape arithmetic with Shape,
//! Gather, Unsqueeze, Concat and Reshape, Range positions, Pow in RMSNorm, CastLike and
//! Where in the causal mask) loads as it is, with no preprocessing, and its reference
//! matches onnxruntime's logits on its own test data set; the model is also compiled,
//! simulated and compared with both.

use driver::{RunOptions, Session};

fn file(rel: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/graph/onnx_llama");
    std::fs::read(dir.join(rel)).unwrap()
}

#[test]
fn a_torchscript_style_llama_export_loads_and_runs_without_preprocessing() {
    let mut s = Session::open(&file("llama_torchscript.onnx"), "llama_torchscript.onnx").unwrap();
    let g = s.graph().unwrap();
    // The shape arithmetic is folded away at load time.
    for folded in ["Shape", "Range", "ConstantOfShape", "Constant", "Identity"] {
        assert!(
            !g.nodes.iter().any(|n| n.op == folded),
            "{folded} left in the graph"
        );
    }
    assert!(g.nodes.iter().any(|n| n.op == "Pow") && g.nodes.iter().any(|n| n.op == "CastLike"));
    let set = vec![
        ("input_0.pb".to_string(), file("test_data_set_0/input_0.pb")),
        (
            "output_0.pb".to_string(),
            file("test_data_set_0/output_0.pb"),
        ),
    ];
    let inputs = s.read_inputs(&set).unwrap();
    let expected = s.read_expected(&set).unwrap();

    // The reference on the data set's inputs gives onnxruntime's logits.
    let reference = driver::graph::evaluate(g, &inputs).unwrap();
    for (name, want) in &expected {
        let check = driver::compare(name, want, &reference[name].data);
        assert!(check.passed, "reference vs onnxruntime: {check:?}");
    }

    let options = RunOptions {
        inputs,
        expected,
        ..RunOptions::default()
    };
    // Every op it uses has a device lowering: compiled, simulated and compared with both
    // the reference and onnxruntime's logits.
    let r = s.run(&options, &mut |_| {}).unwrap();
    assert!(r.run.passed, "{:?} {:?}", r.run.outputs, r.run.expected);
    assert_eq!(r.run.expected.len(), 1);
    assert!(
        r.run.expected.iter().all(|c| c.passed),
        "{:?}",
        r.run.expected
    );
}
