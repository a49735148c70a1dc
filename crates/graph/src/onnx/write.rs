//! [`Graph`] -> `.onnx` bytes.

use std::collections::BTreeSet;

use prost::Message;

use crate::dtype::DType;
use crate::error::GraphError;
use crate::ir::{AttrValue, Graph};
use crate::onnx::proto::{
    attr_type as at, AttributeProto, Dimension, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
};
use crate::onnx::tensor::{code_of, encode_raw};
use crate::spec::{AttrKind, ConstForm};
use crate::tensor::TensorType;

/// The lowest default-domain opset that expresses every op of `graph` (17 at least):
/// Gelu needs 20, Attention and RMSNormalization 23, Swish (our Silu) 24, fp8 casts 19.
pub(crate) fn opset_for(graph: &Graph) -> i64 {
    let mut v = 17;
    for n in &graph.nodes {
        let name_needs = n.kind().map_or(17, |k| k.spec().onnx_output_name().1);
        let cast_needs = match n.attrs.get("to") {
            Some(AttrValue::String(s)) if n.op == "Cast" && s.starts_with("f8") => 19,
            _ => 17,
        };
        v = v.max(name_needs).max(cast_needs);
    }
    let fp8 = |d: DType| matches!(d, DType::F8E4M3 | DType::F8E5M2);
    if graph.inputs.iter().any(|i| fp8(i.ty.dtype))
        || graph.initializers.iter().any(|i| fp8(i.ty.dtype))
    {
        v = v.max(19);
    }
    v
}

fn ir_version(opset: i64) -> i64 {
    match opset {
        ..=18 => 8,
        19..=20 => 9,
        21..=22 => 10,
        _ => 11,
    }
}

fn value_info(name: &str, ty: &TensorType) -> ValueInfoProto {
    ValueInfoProto {
        name: name.to_string(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: code_of(ty.dtype),
                shape: Some(TensorShapeProto {
                    dim: ty
                        .shape
                        .iter()
                        .map(|&d| Dimension {
                            dim_value: Some(d as i64),
                            dim_param: None,
                            denotation: String::new(),
                        })
                        .collect(),
                }),
            }),
            denotation: String::new(),
        }),
        doc_string: String::new(),
    }
}

fn tensor(name: &str, dtype: DType, shape: &[usize], values: &[f32]) -> TensorProto {
    TensorProto {
        name: name.to_string(),
        dims: shape.iter().map(|&d| d as i64).collect(),
        data_type: code_of(dtype),
        raw_data: encode_raw(dtype, values),
        ..Default::default()
    }
}

fn attr(name: &str, v: &AttrValue, kind: Option<AttrKind>) -> AttributeProto {
    let mut a = AttributeProto {
        name: name.to_string(),
        ..Default::default()
    };
    match (v, kind) {
        (AttrValue::Int(i), Some(AttrKind::Float)) => {
            a.r#type = at::FLOAT;
            a.f = *i as f32;
        }
        (AttrValue::Int(i), _) => {
            a.r#type = at::INT;
            a.i = *i;
        }
        (AttrValue::Float(f), _) => {
            a.r#type = at::FLOAT;
            a.f = *f;
        }
        (AttrValue::Ints(v), _) => {
            a.r#type = at::INTS;
            a.ints = v.clone();
        }
        (AttrValue::Floats(v), _) => {
            a.r#type = at::FLOATS;
            a.floats = v.clone();
        }
        (AttrValue::String(s), _) => {
            a.r#type = at::STRING;
            a.s = s.as_bytes().to_vec();
        }
    }
    a
}

/// Writes `graph` as an ONNX model (default domain, the lowest opset from 17 on that has
/// every op; see `docs/onnx.md`). Initializers are materialised (seeded ones are
/// generated) and stored as `raw_data`. Attributes that ONNX takes as inputs become
/// constant initializers named `<node>.<attribute>`; [`crate::load_onnx`] folds them back,
/// so `load_onnx(&to_onnx(g)?)` is `g` with its initializers materialised. Ops ONNX names
/// differently are renamed: SimplifiedLayerNormalization -> RMSNormalization, Silu ->
/// Swish. Float attributes given as integers are written as floats.
pub fn to_onnx(graph: &Graph) -> Result<Vec<u8>, GraphError> {
    let types = graph.infer_types()?;
    let values = graph.initializer_tensors()?;
    let opset = opset_for(graph);

    let mut taken: BTreeSet<String> = types.keys().cloned().collect();
    let mut initializer = Vec::with_capacity(graph.initializers.len());
    for init in &graph.initializers {
        let t = values.get(&init.name).ok_or_else(|| {
            GraphError::graph(format!("no value for initializer '{}'", init.name))
        })?;
        initializer.push(tensor(&init.name, t.dtype, &t.shape, &t.data));
    }

    let mut node = Vec::with_capacity(graph.nodes.len());
    for n in &graph.nodes {
        let err = |m: String| GraphError::node(&n.name, &n.op, m);
        let spec = n.kind().ok_or_else(|| err("unknown op".into()))?.spec();
        let kind_of = |k: &str| spec.attr(k).map(|a| a.kind);
        let mut inputs = n.inputs.clone();
        let mut attribute = Vec::new();
        let mut fresh = |key: &str| -> String {
            let base = format!("{}.{key}", n.name);
            let mut name = base.clone();
            let mut i = 1;
            while taken.contains(&name) {
                name = format!("{base}_{i}");
                i += 1;
            }
            taken.insert(name.clone());
            name
        };
        // attributes that ONNX takes as constant inputs at this opset
        let as_inputs: Vec<_> = spec
            .const_inputs
            .iter()
            .filter(|c| opset >= c.since)
            .collect();
        let x_dtype = n
            .inputs
            .first()
            .and_then(|i| types.get(i))
            .map_or(DType::F32, |t| t.dtype);
        for (key, v) in &n.attrs {
            if let Some(c) = as_inputs.iter().find(|c| c.attr == key) {
                let (idx, scalar) = (c.index, c.form == ConstForm::Scalar);
                let vals: Vec<i64> = match v {
                    AttrValue::Ints(v) => v.clone(),
                    AttrValue::Int(i) => vec![*i],
                    _ => return Err(err(format!("attribute '{key}' must be integers"))),
                };
                let name = fresh(key);
                let shape: Vec<usize> = if scalar { vec![] } else { vec![vals.len()] };
                let raw: Vec<u8> = vals.iter().flat_map(|x| x.to_le_bytes()).collect();
                initializer.push(TensorProto {
                    name: name.clone(),
                    dims: shape.iter().map(|&d| d as i64).collect(),
                    data_type: code_of(DType::I64),
                    raw_data: raw,
                    ..Default::default()
                });
                while inputs.len() < idx {
                    inputs.push(String::new());
                }
                if inputs.len() == idx {
                    inputs.push(name);
                } else if let Some(s) = inputs.get_mut(idx) {
                    *s = name;
                }
                continue;
            }
            match (n.op.as_str(), key.as_str()) {
                ("Clip", "min" | "max") => {
                    let f = match v {
                        AttrValue::Float(f) => *f,
                        AttrValue::Int(i) => *i as f32,
                        _ => return Err(err(format!("attribute '{key}' must be a number"))),
                    };
                    let idx = if key == "min" { 1 } else { 2 };
                    let name = fresh(key);
                    initializer.push(tensor(&name, x_dtype, &[], &[x_dtype.round(f)]));
                    while inputs.len() <= idx {
                        inputs.push(String::new());
                    }
                    if let Some(s) = inputs.get_mut(idx) {
                        *s = name;
                    }
                }
                ("Cast", "to") => {
                    let AttrValue::String(s) = v else {
                        return Err(err("'to' must be a dtype name".into()));
                    };
                    let d = DType::parse(s).ok_or_else(|| err(format!("'{s}' is not a dtype")))?;
                    attribute.push(AttributeProto {
                        name: "to".into(),
                        r#type: at::INT,
                        i: i64::from(code_of(d)),
                        ..Default::default()
                    });
                }
                _ => attribute.push(attr(key, v, kind_of(key))),
            }
        }
        let op_type = spec.onnx_output_name().0;
        node.push(NodeProto {
            input: inputs,
            output: n.outputs.clone(),
            name: n.name.clone(),
            op_type: op_type.to_string(),
            attribute,
            doc_string: String::new(),
            domain: String::new(),
        });
    }

    let input = graph
        .inputs
        .iter()
        .map(|i| value_info(&i.name, &i.ty))
        .collect();
    let output = graph
        .outputs
        .iter()
        .map(|o| {
            types
                .get(o)
                .map(|t| value_info(o, t))
                .ok_or_else(|| GraphError::graph(format!("no type for output '{o}'")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let model = ModelProto {
        ir_version: ir_version(opset),
        producer_name: "spyre-playground".into(),
        producer_version: env!("CARGO_PKG_VERSION").into(),
        domain: String::new(),
        model_version: 1,
        doc_string: String::new(),
        graph: Some(GraphProto {
            node,
            name: graph.name.clone(),
            initializer,
            doc_string: graph.description.clone(),
            input,
            output,
            value_info: Vec::new(),
            sparse_initializer: Vec::new(),
        }),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
    };
    Ok(model.encode_to_vec())
}
