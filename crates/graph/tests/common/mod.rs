#![allow(dead_code)]

use std::collections::BTreeMap;

use graph::{
    evaluate, AttrValue, DType, Graph, GraphError, InitSpec, Initializer, Node, Tensor, TensorType,
};

/// An operand of a one-node test graph: dtype, shape, data. `None` = omitted input.
pub type Operand = Option<(DType, Vec<usize>, Vec<f32>)>;

pub fn f(shape: &[usize], data: &[f32]) -> Operand {
    Some((DType::F32, shape.to_vec(), data.to_vec()))
}

pub fn t(dtype: DType, shape: &[usize], data: &[f32]) -> Operand {
    Some((dtype, shape.to_vec(), data.to_vec()))
}

/// A graph with one node whose operands are initializers `x0`, `x1`, ...
pub fn one_node(
    op: &str,
    operands: &[Operand],
    attrs: &[(&str, AttrValue)],
    n_out: usize,
) -> Graph {
    let mut initializers = Vec::new();
    let mut inputs = Vec::new();
    for (i, o) in operands.iter().enumerate() {
        match o {
            Some((dtype, shape, data)) => {
                let name = format!("x{i}");
                initializers.push(Initializer {
                    name: name.clone(),
                    ty: TensorType::new(*dtype, shape.clone()),
                    init: InitSpec::Data(data.clone()),
                });
                inputs.push(name);
            }
            None => inputs.push(String::new()),
        }
    }
    let outputs: Vec<String> = (0..n_out).map(|i| format!("y{i}")).collect();
    Graph {
        name: "t".into(),
        description: String::new(),
        inputs: Vec::new(),
        outputs: outputs.clone(),
        initializers,
        nodes: vec![Node {
            name: "n".into(),
            op: op.into(),
            inputs,
            outputs,
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }],
    }
}

pub fn run(
    op: &str,
    operands: &[Operand],
    attrs: &[(&str, AttrValue)],
    n_out: usize,
) -> Result<Vec<Tensor>, GraphError> {
    let g = one_node(op, operands, attrs, n_out);
    let types = g.infer_types()?;
    let vals = evaluate(&g, &BTreeMap::new())?;
    let outs: Vec<Tensor> = g.outputs.iter().map(|o| vals[o].clone()).collect();
    for (o, v) in g.outputs.iter().zip(&outs) {
        assert_eq!(
            types[o],
            v.ty(),
            "inferred type differs from evaluated type for {op}"
        );
    }
    Ok(outs)
}

pub fn close(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-5 * (1.0 + b.abs())
}

pub fn assert_tensor(got: &Tensor, dtype: DType, shape: &[usize], data: &[f32], what: &str) {
    assert_eq!(got.dtype, dtype, "{what}: dtype");
    assert_eq!(got.shape, shape, "{what}: shape");
    assert_eq!(got.data.len(), data.len(), "{what}: length");
    for (i, (g, e)) in got.data.iter().zip(data).enumerate() {
        assert!(
            close(*g, *e),
            "{what}: element {i}: got {g}, expected {e}\n got {:?}",
            got.data
        );
    }
}

pub fn int(v: i64) -> AttrValue {
    AttrValue::Int(v)
}
pub fn float(v: f32) -> AttrValue {
    AttrValue::Float(v)
}
pub fn ints(v: &[i64]) -> AttrValue {
    AttrValue::Ints(v.to_vec())
}
pub fn string(v: &str) -> AttrValue {
    AttrValue::String(v.into())
}
