//! ONNX round trip: every gallery model and per-op case, written with `to_onnx` and read
//! back with `load_onnx`, is the same graph (initializers materialised) and evaluates to
//! the same bits.

mod common;

use common::*;
use graph::{evaluate, load_onnx, to_onnx, AttrValue, Graph};

/// Float attributes written as JSON integers (e.g. `"alpha": 1`) come back as floats.
fn floats_as_floats(g: &Graph) -> Graph {
    let mut g = g.clone();
    for n in &mut g.nodes {
        for (k, v) in n.attrs.iter_mut() {
            let float_attr = matches!(
                (n.op.as_str(), k.as_str()),
                ("Gemm", "alpha" | "beta")
                    | (_, "epsilon")
                    | ("Clip", "min" | "max")
                    | ("Attention", "scale")
            );
            if let (true, AttrValue::Int(i)) = (float_attr, &*v) {
                *v = AttrValue::Float(*i as f32);
            }
        }
    }
    g
}

#[test]
fn every_corpus_graph_round_trips_through_onnx() {
    let mut n = 0;
    for case in ref_cases() {
        let g = &case.graph;
        let bytes = to_onnx(g).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let back = load_onnx(&bytes).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(back, floats_as_floats(&materialised(g)), "{}", case.name);
        let ins = test_inputs(g, case.seed);
        let a = evaluate(g, &ins).unwrap();
        let b = evaluate(&back, &ins).unwrap();
        for o in &g.outputs {
            let (x, y) = (&a[o], &b[o]);
            assert_eq!(x.shape, y.shape);
            assert!(
                x.data
                    .iter()
                    .zip(&y.data)
                    .all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())),
                "{} output {o}",
                case.name
            );
        }
        n += 1;
    }
    assert!(n > 90, "{n} cases");
}

#[test]
fn the_planning_only_model_converts_without_weights_in_its_json() {
    // The 8B layer's JSON is a few kilobytes of seeded initializers; loading and
    // inference do not materialise them.
    for name in PLANNING_ONLY {
        let text =
            std::fs::read_to_string(repo_root().join(format!("examples/graphs/{name}.json")))
                .unwrap();
        assert!(text.len() < 64 * 1024);
        let g = graph::load_json(&text).unwrap();
        assert!(g.parameter_count() > 200_000_000);
        let allocated = allocation_counter::measure(|| {
            g.infer_types().unwrap();
        });
        // Shapes only: a few kilobytes per value, never the weights' gigabytes.
        assert!(allocated.bytes_max < 1 << 24, "{allocated:?}");
    }
}

#[test]
fn opset_is_the_lowest_that_has_every_op() {
    let opset = |g: &Graph| {
        // ModelProto.opset_import (field 8) is the last field written: its version is the
        // final varint of the file.
        let b = to_onnx(g).unwrap();
        let back = load_onnx(&b).unwrap();
        assert_eq!(&back.nodes.len(), &g.nodes.len());
        *b.last().unwrap() as i64
    };
    let json = |name: &str| op_case(name).graph;
    assert_eq!(opset(&json("matmul_2d")), 17);
    assert_eq!(opset(&json("gelu_erf")), 20);
    assert_eq!(opset(&json("attention_gqa_causal")), 23);
    assert_eq!(opset(&json("rmsnorm")), 23);
    assert_eq!(opset(&json("silu")), 24);
    assert_eq!(opset(&json("cast_f8e4m3")), 19);
}

/// Models written by the `onnx` Python package (tests/graph/make_onnx_corpus.py: typed
/// fields, Constant nodes, Identity, opset 13/17/18 forms, com.microsoft Gelu, unused
/// extra outputs) load and evaluate to onnxruntime's outputs (1e-4 relative to each
/// output's scale; 1e-2 for the fp16 model).
#[test]
fn foreign_onnx_models_match_onnxruntime() {
    use serde_json::Value;
    let dir = repo_root().join("tests/graph/onnx");
    let mut n = 0;
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "onnx"))
        .collect();
    names.sort();
    for path in names {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let g = load_onnx(&std::fs::read(&path).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let exp: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.expected.json"))).unwrap(),
        )
        .unwrap();
        let num = |v: &Value| match v {
            Value::String(s) if s == "nan" => f32::NAN,
            Value::String(s) if s == "inf" => f32::INFINITY,
            Value::String(s) if s == "-inf" => f32::NEG_INFINITY,
            v => v.as_f64().unwrap() as f32,
        };
        let mut ins = std::collections::BTreeMap::new();
        for i in exp["inputs"].as_array().unwrap() {
            let vi = g
                .inputs
                .iter()
                .find(|v| v.name == i["name"].as_str().unwrap())
                .unwrap();
            let data: Vec<f32> = i["data"].as_array().unwrap().iter().map(num).collect();
            ins.insert(
                vi.name.clone(),
                graph::Tensor::new(vi.ty.dtype, vi.ty.shape.clone(), data).unwrap(),
            );
        }
        let vals = evaluate(&g, &ins).unwrap_or_else(|e| panic!("{name}: {e}"));
        let tol = if low_precision(&g).is_some() {
            1e-2
        } else {
            1e-4
        };
        for o in exp["outputs"].as_array().unwrap() {
            let oname = o["name"].as_str().unwrap();
            let got = &vals[oname];
            let want: Vec<f32> = o["data"].as_array().unwrap().iter().map(num).collect();
            let shape: Vec<usize> = o["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap() as usize)
                .collect();
            assert_eq!(got.shape, shape, "{name} {oname}");
            let scale = want.iter().fold(0.0f32, |m, w| m.max(w.abs()));
            for (i, (g, w)) in got.data.iter().zip(&want).enumerate() {
                let d = (g - w).abs();
                assert!(
                    d <= tol * w.abs() + tol * scale,
                    "{name} {oname}[{i}]: ours {g}, onnxruntime {w}"
                );
            }
            n += 1;
        }
    }
    assert!(n >= 3, "{n} outputs checked");
}
