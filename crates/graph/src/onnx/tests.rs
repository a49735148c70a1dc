//! Loader tests on hand-built protobuf messages (the forms other exporters write).

use prost::Message;

use super::proto::*;
use crate::ir::{AttrValue, InitSpec};
use crate::{load_onnx, DType};

fn vi(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: elem,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| Dimension {
                            dim_value: Some(d),
                            ..Default::default()
                        })
                        .collect(),
                }),
            }),
            denotation: String::new(),
        }),
        doc_string: String::new(),
    }
}

fn node(op: &str, ins: &[&str], outs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: outs.iter().map(|s| s.to_string()).collect(),
        name: String::new(),
        op_type: op.into(),
        attribute: attrs,
        ..Default::default()
    }
}

fn ints_attr(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attr_type::INTS,
        ints: v.to_vec(),
        ..Default::default()
    }
}

fn model(opset: i64, g: GraphProto) -> Vec<u8> {
    ModelProto {
        ir_version: 8,
        graph: Some(g),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
        ..Default::default()
    }
    .encode_to_vec()
}

fn graph(
    nodes: Vec<NodeProto>,
    inits: Vec<TensorProto>,
    ins: Vec<ValueInfoProto>,
    outs: Vec<ValueInfoProto>,
) -> GraphProto {
    GraphProto {
        node: nodes,
        name: "g".into(),
        initializer: inits,
        input: ins,
        output: outs,
        ..Default::default()
    }
}

fn f32_tensor(name: &str, dims: &[i64], v: &[f32]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: data_type::FLOAT,
        float_data: v.to_vec(),
        ..Default::default()
    }
}

fn i64_tensor(name: &str, dims: &[i64], v: &[i64]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: data_type::INT64,
        int64_data: v.to_vec(),
        ..Default::default()
    }
}

fn err(bytes: &[u8]) -> String {
    load_onnx(bytes).unwrap_err().to_string()
}

#[test]
fn typed_fields_constant_nodes_identity_and_attribute_inputs() {
    let f16_bits = |x: f32| i32::from(half::f16::from_f32(x).to_bits());
    let g = graph(
        vec![
            node(
                "Constant",
                &[],
                &["shape"],
                vec![AttributeProto {
                    name: "value".into(),
                    r#type: attr_type::TENSOR,
                    t: Some(i64_tensor("", &[2], &[3, -1])),
                    ..Default::default()
                }],
            ),
            node("Reshape", &["x", "shape"], &["r"], vec![]),
            node("Identity", &["r"], &["r2"], vec![]),
            node(
                "Cast",
                &["r2"],
                &["h"],
                vec![AttributeProto {
                    name: "to".into(),
                    r#type: attr_type::INT,
                    i: i64::from(data_type::FLOAT16),
                    ..Default::default()
                }],
            ),
            node("Add", &["h", "b16"], &["s"], vec![]),
            node("ReduceMean", &["s"], &["m"], vec![ints_attr("axes", &[1])]),
        ],
        vec![
            TensorProto {
                name: "b16".into(),
                dims: vec![2],
                data_type: data_type::FLOAT16,
                int32_data: vec![f16_bits(0.5), f16_bits(-2.0)],
                ..Default::default()
            },
            f32_tensor("unused", &[1], &[7.0]),
        ],
        vec![vi("x", data_type::FLOAT, &[2, 3])],
        vec![vi("m", data_type::FLOAT16, &[3, 1])],
    );
    let g = load_onnx(&model(13, g)).unwrap();
    assert_eq!(g.nodes.len(), 4, "{:#?}", g.nodes);
    assert_eq!(g.nodes[0].op, "Reshape");
    assert_eq!(g.nodes[0].inputs, ["x"]);
    assert_eq!(g.nodes[0].attrs["shape"], AttrValue::Ints(vec![3, -1]));
    assert_eq!(g.nodes[1].inputs, ["r"], "Identity is an alias");
    assert_eq!(g.nodes[1].attrs["to"], AttrValue::String("f16".into()));
    assert_eq!(g.nodes[3].attrs["axes"], AttrValue::Ints(vec![1]));
    // the Constant only fed an attribute: it is gone; the unused initializer stays
    let names: Vec<&str> = g.initializers.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["b16", "unused"]);
    assert_eq!(g.initializers[0].init, InitSpec::Data(vec![0.5, -2.0]));
    assert_eq!(g.initializers[0].ty.dtype, DType::F16);
    assert_eq!(g.infer_types().unwrap()["m"].shape, [3, 1]);
}

#[test]
fn initializers_listed_as_inputs_and_unused_extra_outputs() {
    let g = graph(
        vec![node(
            "LayerNormalization",
            &["x", "s"],
            &["y", "mean", "inv_std"],
            vec![AttributeProto {
                name: "stash_type".into(),
                r#type: attr_type::INT,
                i: 1,
                ..Default::default()
            }],
        )],
        vec![f32_tensor("s", &[4], &[1.0; 4])],
        vec![
            vi("x", data_type::FLOAT, &[2, 4]),
            vi("s", data_type::FLOAT, &[4]),
        ],
        vec![vi("y", data_type::FLOAT, &[2, 4])],
    );
    let g = load_onnx(&model(17, g)).unwrap();
    assert_eq!(g.inputs.len(), 1);
    assert_eq!(g.nodes[0].outputs, ["y"]);
    assert!(g.nodes[0].attrs.is_empty());
}

#[test]
fn errors_say_what_and_where() {
    // not protobuf
    assert!(err(b"\xff\xff\xff\xff").contains("not a readable ONNX model"));
    // no opset / old opset / no graph
    let empty = graph(vec![], vec![], vec![], vec![]);
    let mut m = ModelProto {
        graph: Some(empty.clone()),
        ..Default::default()
    };
    assert!(err(&m.encode_to_vec()).contains("opset"));
    m.opset_import.push(OperatorSetIdProto {
        domain: String::new(),
        version: 11,
    });
    // An older opset: read where each op has its opset-13 definition there (Sin since 7),
    // refused naming the op where ONNX changed it since (Softmax in 13).
    let one_op = |op: &str| {
        let (x, y) = (
            vi("x", data_type::FLOAT, &[2, 3]),
            vi("y", data_type::FLOAT, &[2, 3]),
        );
        Some(graph(
            vec![node(op, &["x"], &["y"], vec![])],
            vec![],
            vec![x],
            vec![y],
        ))
    };
    m.graph = one_op("Softmax");
    let e = err(&m.encode_to_vec());
    assert!(
        e.contains("ONNX changed Softmax in opset 13; the model imports opset 11"),
        "{e}"
    );
    m.graph = one_op("Sin");
    assert!(load_onnx(&m.encode_to_vec()).is_ok());
    m.opset_import[0].version = 0;
    assert!(err(&m.encode_to_vec()).contains("opset 0"));
    m.opset_import[0].version = 17;
    m.graph = None;
    assert!(err(&m.encode_to_vec()).contains("no graph"));

    let x = || vec![vi("x", data_type::FLOAT, &[2, 3])];
    let y = || vec![vi("y", data_type::FLOAT, &[2, 3])];
    // unknown op: names the op and the node, lists the supported set
    let mut n = node("Frobnicate", &["x"], &["y"], vec![]);
    n.name = "frob1".into();
    let e = err(&model(17, graph(vec![n], vec![], x(), y())));
    assert!(
        e.contains("'Frobnicate'") && e.contains("frob1") && e.contains("MatMul, Add"),
        "{e}"
    );
    // unknown domain
    let mut n = node("Relu", &["x"], &["y"], vec![]);
    n.domain = "com.example".into();
    assert!(err(&model(17, graph(vec![n], vec![], x(), y()))).contains("com.example"));
    // external data
    let t = TensorProto {
        data_location: 1,
        ..f32_tensor("w", &[3], &[])
    };
    let e = err(&model(
        17,
        graph(
            vec![node("Add", &["x", "w"], &["y"], vec![])],
            vec![t],
            x(),
            y(),
        ),
    ));
    assert!(
        e.contains("initializer 'w'") && e.contains("external data"),
        "{e}"
    );
    // data count mismatch
    let e = err(&model(
        17,
        graph(
            vec![node("Add", &["x", "w"], &["y"], vec![])],
            vec![f32_tensor("w", &[3], &[1.0])],
            x(),
            y(),
        ),
    ));
    assert!(e.contains("float_data holds 1 values"), "{e}");
    // huge shape, no data: an error, not an allocation
    let e = err(&model(
        17,
        graph(
            vec![node("Add", &["x", "w"], &["y"], vec![])],
            vec![f32_tensor("w", &[1 << 40, 1 << 40], &[])],
            x(),
            y(),
        ),
    ));
    assert!(e.contains("limit"), "{e}");
    // dynamic dimension
    let mut dynamic = vi("x", data_type::FLOAT, &[2, 3]);
    if let Some(tt) = dynamic.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()) {
        tt.shape.as_mut().unwrap().dim[0] = Dimension {
            dim_param: Some("batch".into()),
            ..Default::default()
        };
    }
    let e = err(&model(
        17,
        graph(
            vec![node("Relu", &["x"], &["y"], vec![])],
            vec![],
            vec![dynamic],
            y(),
        ),
    ));
    assert!(e.contains("'batch'") && e.contains("static"), "{e}");
    // computed shape input
    let e = err(&model(
        17,
        graph(
            vec![node("Reshape", &["x", "x"], &["y"], vec![])],
            vec![],
            x(),
            y(),
        ),
    ));
    assert!(
        e.contains("must be known when the model is loaded") && e.contains("graph input"),
        "{e}"
    );
    // an unsupported dtype
    let e = err(&model(
        17,
        graph(
            vec![node("Relu", &["x"], &["y"], vec![])],
            vec![],
            vec![vi("x", data_type::DOUBLE, &[2])],
            y(),
        ),
    ));
    assert!(e.contains("DOUBLE"), "{e}");
    // declared output type disagrees with inference
    let e = err(&model(
        17,
        graph(
            vec![node("Relu", &["x"], &["y"], vec![])],
            vec![],
            x(),
            vec![vi("y", data_type::FLOAT, &[3, 2])],
        ),
    ));
    assert!(e.contains("declared with shape"), "{e}");
    // LayerNormalization's Mean is produced (f32, the normalised axes kept as 1s)
    let g = load_onnx(&model(
        17,
        graph(
            vec![node(
                "LayerNormalization",
                &["x", "s"],
                &["y", "mean"],
                vec![],
            )],
            vec![f32_tensor("s", &[3], &[1.0; 3])],
            x(),
            vec![
                vi("y", data_type::FLOAT, &[2, 3]),
                vi("mean", data_type::FLOAT, &[2, 1]),
            ],
        ),
    ))
    .unwrap();
    assert_eq!(g.infer_types().unwrap()["mean"].shape, [2, 1]);
    // Attention's present key is produced: the new keys after the (absent) cache.
    let q = || vi("q", data_type::FLOAT, &[1, 1, 2, 3]);
    let g = load_onnx(&model(
        23,
        graph(
            vec![node(
                "Attention",
                &["q", "q", "q"],
                &["y", "present_key"],
                vec![],
            )],
            vec![],
            vec![q()],
            vec![
                vi("y", data_type::FLOAT, &[1, 1, 2, 3]),
                vi("present_key", data_type::FLOAT, &[1, 1, 2, 3]),
            ],
        ),
    ))
    .unwrap();
    assert_eq!(g.infer_types().unwrap()["present_key"].shape, [1, 1, 2, 3]);
    // a used output this crate does not produce
    let e = err(&model(
        17,
        graph(
            vec![
                node("Relu", &["q"], &["y", "extra"], vec![]),
                node("Neg", &["extra"], &["z"], vec![]),
            ],
            vec![],
            vec![q()],
            vec![vi("z", data_type::FLOAT, &[1, 1, 2, 3])],
        ),
    ));
    assert!(e.contains("'extra'") && e.contains("is used"), "{e}");
}

#[test]
fn truncated_and_mutated_models_never_panic() {
    let g = crate::load_json(include_str!("../../../../examples/graphs/matmul_add.json")).unwrap();
    let bytes = crate::to_onnx(&g).unwrap();
    for cut in (0..bytes.len()).step_by(97) {
        let _ = load_onnx(&bytes[..cut]);
    }
    let mut rng = crate::SplitMix64::new(5);
    for _ in 0..300 {
        let mut b = bytes.clone();
        for _ in 0..1 + rng.next_u64() % 4 {
            let i = (rng.next_u64() % b.len() as u64) as usize;
            b[i] = rng.next_u64() as u8;
        }
        let _ = load_onnx(&b);
    }
}

fn int_attr(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attr_type::INT,
        i: v,
        ..Default::default()
    }
}

/// The reshape of a TorchScript export: Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
fn torchscript_reshape() -> GraphProto {
    graph(
        vec![
            node("Shape", &["x"], &["s"], vec![]),
            node("Gather", &["s", "zero"], &["b"], vec![int_attr("axis", 0)]),
            node("Unsqueeze", &["b", "axes0"], &["b1"], vec![]),
            node(
                "Concat",
                &["b1", "minus1"],
                &["shape"],
                vec![int_attr("axis", 0)],
            ),
            node("Reshape", &["x", "shape"], &["y"], vec![]),
        ],
        vec![
            i64_tensor("zero", &[], &[0]),
            i64_tensor("axes0", &[1], &[0]),
            i64_tensor("minus1", &[1], &[-1]),
        ],
        vec![vi("x", data_type::FLOAT, &[2, 3, 4])],
        vec![vi("y", data_type::FLOAT, &[2, 12])],
    )
}

#[test]
fn shape_computations_fold_into_attributes() {
    let g = load_onnx(&model(17, torchscript_reshape())).unwrap();
    assert_eq!(g.nodes.len(), 1, "{:?}", g.nodes);
    assert_eq!(g.nodes[0].op, "Reshape");
    assert_eq!(g.nodes[0].attrs["shape"], AttrValue::Ints(vec![2, -1]));
    assert!(g.initializers.is_empty(), "{:?}", g.initializers);

    // ConstantOfShape and Range over constants, and an op over their results.
    let g = load_onnx(&model(
        17,
        graph(
            vec![
                node("Size", &["x"], &["n"], vec![]),
                node("Range", &["zero", "n", "one"], &["r"], vec![]),
                node(
                    "Cast",
                    &["r"],
                    &["rf"],
                    vec![int_attr("to", i64::from(data_type::FLOAT))],
                ),
                node("Shape", &["x"], &["s"], vec![]),
                node("ConstantOfShape", &["s"], &["ones"], vec![]),
                node("Add", &["ones", "x"], &["t"], vec![]),
                node("Reshape", &["rf", "s"], &["rr"], vec![]),
                node("Add", &["t", "rr"], &["y"], vec![]),
            ],
            vec![i64_tensor("zero", &[], &[0]), i64_tensor("one", &[], &[1])],
            vec![vi("x", data_type::FLOAT, &[2, 3])],
            vec![vi("y", data_type::FLOAT, &[2, 3])],
        ),
    ))
    .unwrap();
    let ops: Vec<&str> = g.nodes.iter().map(|n| n.op.as_str()).collect();
    // Cast over a folded Range folds; Reshape of a folded value folds too.
    assert_eq!(ops, ["Add", "Add"], "{:?}", g.nodes);
    let rr = g.initializers.iter().find(|i| i.name == "rr").unwrap();
    assert_eq!(rr.init, InitSpec::Data(vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]));
    let ones = g.initializers.iter().find(|i| i.name == "ones").unwrap();
    assert_eq!(ones.init, InitSpec::Data(vec![0.0; 6]));

    // A node over stored constants alone whose result is data stays a node.
    let g = load_onnx(&model(
        17,
        graph(
            vec![node("Add", &["w", "w"], &["y"], vec![])],
            vec![f32_tensor("w", &[2], &[1.0, 2.0])],
            vec![],
            vec![vi("y", data_type::FLOAT, &[2])],
        ),
    ))
    .unwrap();
    assert_eq!(g.nodes.len(), 1);
}

#[test]
fn a_shape_that_depends_on_data_names_the_node() {
    let mut g = torchscript_reshape();
    // The Gather index now comes from the data.
    g.node.insert(
        0,
        NodeProto {
            name: "idx".into(),
            ..node(
                "Cast",
                &["x"],
                &["xi"],
                vec![int_attr("to", i64::from(data_type::INT64))],
            )
        },
    );
    g.node.insert(
        1,
        NodeProto {
            name: "pick".into(),
            ..node(
                "ReduceMax",
                &["xi"],
                &["zero2"],
                vec![int_attr("keepdims", 0)],
            )
        },
    );
    g.node[3].input[1] = "zero2".into();
    let e = load_onnx(&model(17, g)).unwrap_err().to_string();
    assert!(
        e.contains("Reshape") && e.contains("'shape'") && e.contains("Concat"),
        "{e}"
    );
}

#[test]
fn newer_opsets_read_ops_unchanged_since_the_newest_known() {
    // opset 28: Shape, Gather, Unsqueeze, Concat and Reshape last changed by 25.
    assert!(load_onnx(&model(28, torchscript_reshape())).is_ok());
    // Range changed in opset 27.
    let g = graph(
        vec![node("Range", &["a", "b", "c"], &["y"], vec![])],
        vec![
            i64_tensor("a", &[], &[0]),
            i64_tensor("b", &[], &[3]),
            i64_tensor("c", &[], &[1]),
        ],
        vec![],
        vec![vi("y", data_type::INT64, &[3])],
    );
    assert!(load_onnx(&model(26, g.clone())).is_ok());
    let e = load_onnx(&model(27, g)).unwrap_err().to_string();
    assert!(
        e.contains("Range") && e.contains("opset 27") && e.contains("25"),
        "{e}"
    );
    // Beyond the changelog this loader knows.
    let e = load_onnx(&model(29, torchscript_reshape()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("opset 29") && e.contains("28"), "{e}");
}

fn external(name: &str, dtype: i32, dims: &[i64], entries: &[(&str, &str)]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: dtype,
        data_location: 1,
        external_data: entries
            .iter()
            .map(|(k, v)| StringStringEntryProto {
                key: k.to_string(),
                value: v.to_string(),
            })
            .collect(),
        ..Default::default()
    }
}

/// y = Reshape(x @ w, shape): w [3, 2] f32 at offset 8 of `weights/w.bin`, shape [4] i64
/// (an attribute-like input) at offset 0 of `shape.bin`.
fn external_model(w_entries: &[(&str, &str)]) -> Vec<u8> {
    let w = external("w", data_type::FLOAT, &[3, 2], w_entries);
    let s = external(
        "s",
        data_type::INT64,
        &[1],
        &[("location", "shape.bin"), ("length", "8")],
    );
    model(
        17,
        graph(
            vec![
                node("MatMul", &["x", "w"], &["xw"], vec![]),
                node("Reshape", &["xw", "s"], &["y"], vec![]),
            ],
            vec![w, s],
            vec![vi("x", data_type::FLOAT, &[2, 3])],
            vec![vi("y", data_type::FLOAT, &[4])],
        ),
    )
}

fn external_files(w_bytes: usize) -> std::sync::Arc<std::collections::BTreeMap<String, Vec<u8>>> {
    let mut w = vec![0xAAu8; 8];
    for v in [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0] {
        w.extend(v.to_le_bytes());
    }
    w.truncate(w_bytes);
    std::sync::Arc::new(
        [
            ("weights/w.bin".to_string(), w),
            ("shape.bin".to_string(), 4i64.to_le_bytes().to_vec()),
        ]
        .into(),
    )
}

const W_AT_8: &[(&str, &str)] = &[
    ("location", "weights/w.bin"),
    ("offset", "8"),
    ("length", "24"),
];

#[test]
fn external_data_is_read_from_the_given_files_when_materialised() {
    let g = crate::load_onnx_with_files(&external_model(W_AT_8), external_files(32)).unwrap();
    let w = g.initializers.iter().find(|i| i.name == "w").unwrap();
    assert!(
        matches!(&w.init, InitSpec::External(x) if x.location == "weights/w.bin" && x.offset == 8)
    );
    // The shape input was read at load time and became an attribute.
    assert_eq!(g.nodes[1].attrs["shape"], AttrValue::Ints(vec![4]));
    let values = g.initializer_tensors().unwrap();
    assert_eq!(values["w"].data, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // A drop without the directory: found by its base name.
    let flat: std::collections::BTreeMap<String, Vec<u8>> = external_files(32)
        .iter()
        .map(|(k, v)| (k.rsplit('/').next().unwrap().to_string(), v.clone()))
        .collect();
    let g2 =
        crate::load_onnx_with_files(&external_model(W_AT_8), std::sync::Arc::new(flat)).unwrap();
    assert_eq!(g2.initializer_tensors().unwrap()["w"], values["w"]);
}

#[test]
fn external_weights_that_are_missing_load_and_fail_only_when_their_values_are_needed() {
    let only_shape: std::collections::BTreeMap<String, Vec<u8>> =
        [("shape.bin".to_string(), 4i64.to_le_bytes().to_vec())].into();
    let g = crate::load_onnx_with_files(&external_model(W_AT_8), std::sync::Arc::new(only_shape))
        .unwrap();
    assert_eq!(g.parameter_count(), 6);
    g.infer_types().unwrap();
    let e = g.initializer_tensors().unwrap_err().to_string();
    assert!(
        e.contains("initializer 'w'") && e.contains("weights/w.bin"),
        "{e}"
    );
    // A short file is refused before anything is read from it.
    let g = crate::load_onnx_with_files(&external_model(W_AT_8), external_files(31)).unwrap();
    let e = g.initializer_tensors().unwrap_err().to_string();
    assert!(e.contains("has 31 bytes"), "{e}");
    // An attribute-like input is needed at load time: its file must be there.
    let e = load_onnx(&external_model(W_AT_8)).unwrap_err().to_string();
    assert!(e.contains("shape.bin") && e.contains("Reshape"), "{e}");
}

#[test]
fn external_locations_stay_inside_the_model_directory_and_lengths_match_the_shape() {
    for bad in [
        "../w.bin",
        "/etc/passwd",
        "a/../../w.bin",
        "C:\\w.bin",
        "..\\w.bin",
        "",
    ] {
        let e = crate::load_onnx_with_files(
            &external_model(&[("location", bad), ("length", "24")]),
            external_files(32),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("initializer 'w'") && e.contains("not a relative path"),
            "{bad}: {e}"
        );
    }
    let e = crate::load_onnx_with_files(
        &external_model(&[("location", "weights/w.bin"), ("length", "20")]),
        external_files(32),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("20 bytes") && e.contains("takes 24"), "{e}");
    let e = crate::load_onnx_with_files(
        &external_model(&[("location", "weights/w.bin"), ("offset", "-1")]),
        external_files(32),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("not a byte count"), "{e}");
    let e = crate::load_onnx_with_files(
        &external_model(&[
            ("location", "weights/w.bin"),
            ("offset", &u64::MAX.to_string()),
        ]),
        external_files(32),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("overflow"), "{e}");
}

#[test]
fn dropout_in_inference_mode_passes_its_input_through() {
    let x = || vec![vi("x", data_type::FLOAT, &[2, 3])];
    let y = || vec![vi("y", data_type::FLOAT, &[2, 3])];
    let with = |dropout: NodeProto, inits: Vec<TensorProto>, outs: Vec<ValueInfoProto>| {
        graph(
            vec![dropout, node("Sin", &["d"], &["y"], vec![])],
            inits,
            x(),
            outs,
        )
    };
    let plain = || node("Dropout", &["x"], &["d"], vec![]);
    // No training_mode (and opset 10's form): the Sin reads x itself.
    for opset in [10, 13, 22] {
        let g = load_onnx(&model(opset, with(plain(), vec![], y()))).unwrap();
        assert_eq!(g.nodes.len(), 1, "opset {opset}");
        assert_eq!(g.nodes[0].inputs, vec!["x"], "opset {opset}");
    }
    // A stored false training_mode too; a true one, or one given at run time, is refused.
    let flag = |v: i32| TensorProto {
        name: "t".into(),
        data_type: data_type::BOOL,
        int32_data: vec![v],
        ..Default::default()
    };
    let training = || node("Dropout", &["x", "", "t"], &["d"], vec![]);
    assert!(load_onnx(&model(13, with(training(), vec![flag(0)], y()))).is_ok());
    let e = err(&model(13, with(training(), vec![flag(1)], y())));
    assert!(e.contains("training_mode 't' is not false"), "{e}");
    let mut g = with(training(), vec![], y());
    g.input.push(vi("t", data_type::BOOL, &[]));
    let e = err(&model(13, g));
    assert!(
        e.contains("training_mode 't' is not a stored constant"),
        "{e}"
    );
    // Its mask is not made: an unread mask is dropped, a read one refused.
    let masked = || node("Dropout", &["x"], &["d", "m"], vec![]);
    assert!(load_onnx(&model(13, with(masked(), vec![], y()))).is_ok());
    let mut outs = y();
    outs.push(vi("m", data_type::BOOL, &[2, 3]));
    let e = err(&model(13, with(masked(), vec![], outs)));
    assert!(e.contains("its mask output 'm' is read"), "{e}");
    // Before opset 7 its meaning depended on an is_test attribute.
    let e = err(&model(6, with(plain(), vec![], y())));
    assert!(e.contains("ONNX changed Dropout in opset 7"), "{e}");
}
