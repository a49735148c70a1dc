//! Running a model graph on the user's own data through the session: inputs as `.npy`
//! bytes or ONNX `TensorProto` `.pb` files, outputs as `.npy` bytes, and a comparison with
//! the outputs the user expects.

use driver::graph::{self, DType, Tensor};
use driver::{RunOptions, Session};

fn example() -> Session {
    let ex = driver::examples();
    let e = ex.iter().find(|e| e.name == "matmul_add").unwrap();
    Session::open(e.source.as_bytes(), "matmul_add.json").unwrap()
}

/// The input `A` (f16 [128, 100]) with values from `seed`.
fn input_a(session: &Session, seed: u64) -> Tensor {
    let g = session.graph().unwrap();
    graph::random_inputs(g, seed).unwrap().remove("A").unwrap()
}

fn npy(t: &Tensor) -> Vec<u8> {
    driver::npy::write_tensor(t).unwrap()
}

fn files(list: &[(&str, Vec<u8>)]) -> Vec<(String, Vec<u8>)> {
    list.iter()
        .map(|(n, b)| (n.to_string(), b.clone()))
        .collect()
}

#[test]
fn a_graph_runs_on_npy_inputs_and_its_outputs_come_back_as_npy() {
    let mut s = example();
    let a = input_a(&s, 7);
    let inputs = s.read_inputs(&files(&[("A.npy", npy(&a))])).unwrap();
    assert_eq!(inputs["A"], a);
    let options = RunOptions {
        inputs,
        ..RunOptions::default()
    };
    let r = s.run(&options, &mut |_| {}).unwrap();
    assert!(r.run.passed && r.run.outputs_checked && r.run.expected.is_empty());
    let outs = s.output_npy().unwrap();
    assert_eq!(outs.len(), 1);
    assert_eq!(outs[0].0, "C.npy");
    let c = driver::npy::read(&outs[0].1, 1 << 20).unwrap();
    assert_eq!(
        (c.dtype.as_str(), c.shape.as_slice()),
        ("<f2", &[128, 130][..])
    );

    // The reference on these inputs is what the simulation was compared with.
    let g = s.graph().unwrap();
    let reference = graph::evaluate(g, &[("A".to_string(), a.clone())].into()).unwrap();
    let want = &reference["C"];
    let worst = want
        .data
        .iter()
        .zip(&c.data)
        .map(|(w, g)| (w - g).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 0.05, "{worst}");

    // Other inputs give other outputs: the inputs were used, not seeded values.
    let mut other = example();
    other.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert_ne!(other.output_npy().unwrap()[0].1, outs[0].1);

    // The user's own outputs: the saved ones pass, perturbed ones fail and say so.
    let expected = s
        .read_expected(&files(&[("C.npy", outs[0].1.clone())]))
        .unwrap();
    let r = s
        .run(
            &RunOptions {
                expected: expected.clone(),
                ..options.clone()
            },
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(r.run.expected.len(), 1);
    assert!(r.run.expected[0].passed && r.run.passed);
    let mut off = expected["C"].clone();
    off.data[5] += 1.0;
    let r = s
        .run(
            &RunOptions {
                expected: [("C".to_string(), off)].into(),
                ..options.clone()
            },
            &mut |_| {},
        )
        .unwrap();
    assert!(!r.run.expected[0].passed && !r.run.passed);
    assert!(r.run.expected[0].max_abs_error >= 0.9);
}

#[test]
fn an_onnx_test_data_set_binds_by_tensor_name_or_position() {
    let s = example();
    let a = input_a(&s, 3);
    // Named inside the TensorProto: any file name binds.
    let named = graph::tensor_proto_bytes("A", &a);
    let got = s.read_inputs(&files(&[("x.pb", named)])).unwrap();
    assert_eq!(got["A"], a);
    // Unnamed: bound by its position; the outputs in the same directory are skipped.
    let unnamed = graph::tensor_proto_bytes("", &a);
    let c = Tensor::new(DType::F16, vec![128, 130], vec![0.5; 128 * 130]).unwrap();
    let set = files(&[
        ("input_0.pb", unnamed),
        ("output_0.pb", graph::tensor_proto_bytes("", &c)),
    ]);
    assert_eq!(s.read_inputs(&set).unwrap()["A"], a);
    assert_eq!(s.read_expected(&set).unwrap()["C"], c);
    // A position past the graph's inputs names the count.
    let e = s
        .read_inputs(&files(&[("input_3.pb", graph::tensor_proto_bytes("", &a))]))
        .unwrap_err();
    assert!(e.message.contains("no input 3"), "{e}");
}

#[test]
fn missing_extra_mistyped_and_misshaped_inputs_are_errors_naming_the_input() {
    let s = example();
    let a = input_a(&s, 1);
    let e = s.read_inputs(&[]).unwrap_err();
    assert!(e.message.contains("no value for input 'A'"), "{e}");

    let e = s
        .read_inputs(&files(&[("A.npy", npy(&a)), ("a.npy", npy(&a))]))
        .unwrap_err();
    assert!(
        e.message.contains("no input named 'a'") && e.message.contains("did you mean 'A'"),
        "{e}"
    );

    let as_f32 = Tensor::new(DType::F32, a.shape.clone(), a.data.clone()).unwrap();
    let e = s
        .read_inputs(&files(&[("A.npy", npy(&as_f32))]))
        .unwrap_err();
    assert!(
        e.message.contains("input 'A'")
            && e.message.contains("<f4")
            && e.message.contains("float16"),
        "{e}"
    );
    let e = s
        .read_inputs(&files(&[(
            "in.pb",
            graph::tensor_proto_bytes("A", &as_f32),
        )]))
        .unwrap_err();
    assert!(e.message.contains("input 'A'"), "{e}");

    let flat = Tensor::new(DType::F16, vec![128 * 100], a.data.clone()).unwrap();
    let e = s.read_inputs(&files(&[("A.npy", npy(&flat))])).unwrap_err();
    assert!(
        e.message.contains("input 'A' has shape [128, 100]") && e.message.contains("[12800]"),
        "{e}"
    );

    let e = s
        .read_inputs(&files(&[
            ("A.npy", npy(&a)),
            ("t.pb", graph::tensor_proto_bytes("A", &a)),
        ]))
        .unwrap_err();
    assert!(e.message.contains("given twice"), "{e}");

    let e = s
        .read_inputs(&files(&[("A.npy", b"not an array".to_vec())]))
        .unwrap_err();
    assert!(e.message.starts_with("A.npy:"), "{e}");
}

#[test]
fn a_timing_only_run_has_no_output_values() {
    let mut s = example();
    let options = RunOptions {
        timing_only: true,
        ..RunOptions::default()
    };
    s.run(&options, &mut |_| {}).unwrap();
    assert!(s.output_npy().is_err());
}

fn fixture(rel: &str) -> Vec<u8> {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/graph/onnx_external");
    std::fs::read(root.join(rel)).unwrap()
}

#[test]
fn an_onnx_model_and_its_external_data_dropped_together_run_on_its_test_data_set() {
    let model = fixture("mlp_external.onnx");
    let dropped: std::collections::BTreeMap<String, Vec<u8>> =
        [("weights.bin".to_string(), fixture("weights.bin"))].into();
    let mut s = Session::open_with_files(&model, "mlp_external.onnx", std::sync::Arc::new(dropped))
        .unwrap();
    let set = files(&[
        ("input_0.pb", fixture("test_data_set_0/input_0.pb")),
        ("output_0.pb", fixture("test_data_set_0/output_0.pb")),
    ]);
    let options = RunOptions {
        inputs: s.read_inputs(&set).unwrap(),
        expected: s.read_expected(&set).unwrap(),
        ..RunOptions::default()
    };
    let r = s.run(&options, &mut |_| {}).unwrap();
    assert!(
        r.run.passed && r.run.expected.len() == 1,
        "{:?}",
        r.run.expected
    );

    // Without its data file the model still loads and runs timing-only.
    let mut s = Session::open(&model, "mlp_external.onnx").unwrap();
    let timing = RunOptions {
        timing_only: true,
        ..RunOptions::default()
    };
    assert!(s.run(&timing, &mut |_| {}).is_ok());
    let e = s.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert!(e.message.contains("weights.bin"), "{e}");
}
