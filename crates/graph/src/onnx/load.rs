//! `.onnx` bytes -> [`Graph`].

use std::collections::{BTreeMap, BTreeSet};

use prost::Message;

use crate::error::GraphError;
use crate::ir::{AttrValue, Graph, InitSpec, Initializer, Node, ValueInfo};
use crate::onnx::proto::{attr_type as at, AttributeProto, ModelProto, NodeProto, TensorProto};
use crate::onnx::tensor::{decode, dtype_of, shape_of, Decoded};
use crate::onnx::{MAX_OPSET, MIN_OPSET};
use crate::spec::{ConstForm, OpKind};
use crate::tensor::TensorType;

/// Reads an ONNX model (opset 13 to 24 of the default domain). Initializers may hold their
/// data in `raw_data` or in the typed fields; `Constant` nodes become initializers;
/// `Identity` nodes are removed (their output is another name for their input); inputs
/// that ONNX passes as constant tensors (Reshape's shape, Slice's starts/ends/axes/steps,
/// Squeeze/Unsqueeze/Reduce axes, Split's sizes, Expand's shape, CumSum's axis, Trilu's k,
/// TopK's k) become the attributes of the same names. The result is type-checked
/// ([`Graph::infer_types`]). Malformed bytes, external data, dynamic shapes and unknown
/// ops are errors that say what and where; nothing here panics.
pub fn load_onnx(bytes: &[u8]) -> Result<Graph, GraphError> {
    let model = ModelProto::decode(bytes).map_err(|e| {
        GraphError::graph(format!(
            "not a readable ONNX model (protobuf decoding failed: {e})"
        ))
    })?;
    // `convert` type-checks the graph it builds.
    convert(&model)
}

fn gerr(m: impl Into<String>) -> GraphError {
    GraphError::graph(m)
}

/// A constant tensor known at load time (an initializer or a Constant node's value).
struct Const {
    decoded: Decoded,
}

impl Const {
    fn ints(&self) -> Vec<i64> {
        match &self.decoded.ints {
            Some(v) => v.clone(),
            None => self.decoded.values.iter().map(|&x| x as i64).collect(),
        }
    }
}

fn convert(model: &ModelProto) -> Result<Graph, GraphError> {
    let mut opset = None;
    for o in &model.opset_import {
        if o.domain.is_empty() || o.domain == "ai.onnx" {
            opset = Some(o.version);
        }
    }
    let opset = opset.ok_or_else(|| {
        gerr("the model imports no version of the default ONNX opset (opset_import has no entry for domain \"\")")
    })?;
    if opset < MIN_OPSET {
        return Err(gerr(format!(
            "the model uses ONNX opset {opset}; this loader reads opset {MIN_OPSET} to {MAX_OPSET} (convert it with onnx.version_converter)"
        )));
    }
    if opset > MAX_OPSET {
        return Err(gerr(format!(
            "the model uses ONNX opset {opset}; this loader reads opset {MIN_OPSET} to {MAX_OPSET}"
        )));
    }
    let g = model
        .graph
        .as_ref()
        .ok_or_else(|| gerr("the model has no graph"))?;
    if !g.sparse_initializer.is_empty() {
        return Err(gerr(
            "the graph has sparse initializers, which this loader does not read",
        ));
    }

    // Constants: initializers first, then Constant nodes as they come.
    let mut consts: BTreeMap<String, Const> = BTreeMap::new();
    let mut init_order: Vec<String> = Vec::new();
    for (i, t) in g.initializer.iter().enumerate() {
        let name = t.name.clone();
        if name.is_empty() {
            return Err(gerr(format!("initializer {i} has no name")));
        }
        let decoded = decode(t).map_err(|m| gerr(format!("initializer '{name}': {m}")))?;
        if consts.contains_key(&name) {
            return Err(gerr(format!("initializer '{name}' is defined twice")));
        }
        consts.insert(name.clone(), Const { decoded });
        init_order.push(name);
    }

    let mut inputs = Vec::new();
    for vi in &g.input {
        if consts.contains_key(&vi.name) {
            continue; // IR < 4 style: initializers listed as inputs too
        }
        let ty = value_type(vi.r#type.as_ref(), &vi.name)?;
        inputs.push(ValueInfo {
            name: vi.name.clone(),
            ty,
        });
    }

    // Names consumed by regular node inputs and graph outputs: decides which extra
    // outputs may be dropped and which constants are still needed.
    let graph_outputs: Vec<String> = g.output.iter().map(|o| o.name.clone()).collect();

    let mut alias: BTreeMap<String, String> = BTreeMap::new();
    let resolve = |alias: &BTreeMap<String, String>, n: &str| -> String {
        let mut cur = n.to_string();
        for _ in 0..alias.len() + 1 {
            match alias.get(&cur) {
                Some(next) => cur = next.clone(),
                None => break,
            }
        }
        cur
    };

    let mut nodes: Vec<Node> = Vec::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    // constants folded into attributes, and constants used as ordinary inputs
    let mut folded: BTreeSet<String> = BTreeSet::new();
    let mut used: BTreeSet<String> = BTreeSet::new();
    for (idx, np) in g.node.iter().enumerate() {
        let base = if np.name.is_empty() {
            format!("{}_{idx}", np.op_type)
        } else {
            np.name.clone()
        };
        let mut name = base.clone();
        let mut k = 1;
        while names.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        let nerr = |m: String| GraphError::node(&name, &np.op_type, m);
        let ins: Vec<String> = np.input.iter().map(|n| resolve(&alias, n)).collect();

        match (np.domain.as_str(), np.op_type.as_str()) {
            ("" | "ai.onnx", "Constant") => {
                let out = np
                    .output
                    .first()
                    .ok_or_else(|| nerr("Constant has no output".into()))?;
                let decoded = constant_value(np).map_err(nerr)?;
                if consts.contains_key(out) {
                    return Err(nerr(format!("'{out}' is defined twice")));
                }
                consts.insert(out.clone(), Const { decoded });
                init_order.push(out.clone());
                continue;
            }
            ("" | "ai.onnx", "Identity") => {
                let (Some(i), Some(o)) = (ins.first(), np.output.first()) else {
                    return Err(nerr("Identity needs one input and one output".into()));
                };
                alias.insert(o.clone(), i.clone());
                continue;
            }
            _ => {}
        }
        names.insert(name.clone());
        let node = map_node(np, &name, &ins, opset, &consts, &mut folded).map_err(nerr)?;
        for i in &node.inputs {
            used.insert(i.clone());
        }
        nodes.push(node);
    }

    // Extra outputs that this crate's op does not produce: drop them when nothing uses
    // them.
    let mut consumed: BTreeSet<String> = used.clone();
    for o in &graph_outputs {
        consumed.insert(resolve(&alias, o));
    }
    for node in &mut nodes {
        let Some(kind) = node.kind() else {
            continue;
        };
        let max_out = kind.spec().output_arity().1;
        while node.outputs.len() > max_out {
            let last = node.outputs.last().cloned().unwrap_or_default();
            if !last.is_empty() && consumed.contains(&last) {
                return Err(GraphError::node(
                    &node.name,
                    &node.op,
                    format!(
                        "output {} ('{last}') is used, but this op produces only {} output(s) here",
                        node.outputs.len() - 1,
                        max_out
                    ),
                ));
            }
            node.outputs.pop();
        }
    }

    let outputs: Vec<String> = graph_outputs.iter().map(|o| resolve(&alias, o)).collect();
    for o in &outputs {
        used.insert(o.clone());
    }

    // Initializers: every constant except those only folded into attributes.
    let mut initializers = Vec::new();
    for name in &init_order {
        if folded.contains(name) && !used.contains(name) {
            continue;
        }
        let Some(c) = consts.remove(name) else {
            continue;
        };
        initializers.push(Initializer {
            name: name.clone(),
            ty: c.decoded.ty,
            init: InitSpec::Data(c.decoded.values),
        });
    }

    let description = [g.doc_string.as_str(), model.doc_string.as_str()]
        .iter()
        .find(|s| !s.is_empty())
        .map(|s| s.lines().next().unwrap_or("").to_string())
        .unwrap_or_default();
    let graph = Graph {
        name: if g.name.is_empty() {
            "model".to_string()
        } else {
            g.name.clone()
        },
        description,
        inputs,
        outputs,
        initializers,
        nodes,
    };

    // Declared output types must agree with inference where they are fully static.
    let types = graph.infer_types()?;
    for vo in &g.output {
        let Some(tt) = vo.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()) else {
            continue;
        };
        let name = resolve(&alias, &vo.name);
        let Some(inferred) = types.get(&name) else {
            continue;
        };
        if tt.elem_type != 0 {
            if let Ok(d) = dtype_of(tt.elem_type) {
                if d != inferred.dtype {
                    return Err(gerr(format!(
                        "graph output '{}' is declared {d} but the graph computes {}",
                        vo.name, inferred
                    )));
                }
            }
        }
        if let Some(shape) = &tt.shape {
            let dims: Option<Vec<i64>> = shape.dim.iter().map(|d| d.dim_value).collect();
            if let Some(dims) = dims {
                if dims
                    .iter()
                    .map(|&d| d as usize)
                    .ne(inferred.shape.iter().copied())
                {
                    return Err(gerr(format!(
                        "graph output '{}' is declared with shape {dims:?} but the graph computes {}",
                        vo.name, inferred
                    )));
                }
            }
        }
    }
    Ok(graph)
}

fn value_type(
    t: Option<&crate::onnx::proto::TypeProto>,
    name: &str,
) -> Result<TensorType, GraphError> {
    let tt = t.and_then(|t| t.tensor_type.as_ref()).ok_or_else(|| {
        gerr(format!(
            "input '{name}' is not a tensor (sequences, maps and optionals are not supported)"
        ))
    })?;
    let dtype = dtype_of(tt.elem_type).map_err(|m| gerr(format!("input '{name}': {m}")))?;
    let shape = tt.shape.as_ref().ok_or_else(|| {
        gerr(format!(
            "input '{name}' has no shape; this playground needs static shapes"
        ))
    })?;
    let mut dims = Vec::with_capacity(shape.dim.len());
    for (i, d) in shape.dim.iter().enumerate() {
        match (d.dim_value, &d.dim_param) {
            (Some(v), _) => dims.push(v),
            (None, Some(p)) => {
                return Err(gerr(format!(
                    "input '{name}' has a dynamic dimension {i} ('{p}'); this playground needs static shapes (fix it, e.g. with onnxruntime's make_dynamic_shape_fixed)"
                )))
            }
            (None, None) => {
                return Err(gerr(format!(
                    "input '{name}' has an unknown dimension {i}; this playground needs static shapes"
                )))
            }
        }
    }
    let shape = shape_of(&dims).map_err(|m| gerr(format!("input '{name}': {m}")))?;
    Ok(TensorType::new(dtype, shape))
}

fn constant_value(np: &NodeProto) -> Result<Decoded, String> {
    let a = np
        .attribute
        .first()
        .ok_or("Constant needs a value attribute")?;
    if np.attribute.len() != 1 {
        return Err("Constant needs exactly one value attribute".into());
    }
    let mk = |dtype: i32, dims: Vec<i64>, t: TensorProto| -> Result<Decoded, String> {
        decode(&TensorProto {
            data_type: dtype,
            dims,
            ..t
        })
    };
    use crate::onnx::proto::data_type as dt;
    match a.name.as_str() {
        "value" => match &a.t {
            Some(t) => decode(t),
            None => Err("Constant 'value' holds no tensor".into()),
        },
        "value_float" => mk(
            dt::FLOAT,
            vec![],
            TensorProto {
                float_data: vec![a.f],
                ..Default::default()
            },
        ),
        "value_floats" => mk(
            dt::FLOAT,
            vec![a.floats.len() as i64],
            TensorProto {
                float_data: a.floats.clone(),
                ..Default::default()
            },
        ),
        "value_int" => mk(
            dt::INT64,
            vec![],
            TensorProto {
                int64_data: vec![a.i],
                ..Default::default()
            },
        ),
        "value_ints" => mk(
            dt::INT64,
            vec![a.ints.len() as i64],
            TensorProto {
                int64_data: a.ints.clone(),
                ..Default::default()
            },
        ),
        other => Err(format!(
            "Constant attribute '{other}' is not supported (use value, value_float(s) or value_int(s))"
        )),
    }
}

fn attr_value(a: &AttributeProto) -> Result<AttrValue, String> {
    if !a.ref_attr_name.is_empty() {
        return Err(format!(
            "attribute '{}' refers to a function attribute; functions are not supported",
            a.name
        ));
    }
    let ty = if a.r#type != 0 {
        a.r#type
    } else if !a.ints.is_empty() {
        at::INTS
    } else if !a.floats.is_empty() {
        at::FLOATS
    } else if !a.s.is_empty() {
        at::STRING
    } else if a.t.is_some() {
        at::TENSOR
    } else if a.f != 0.0 {
        at::FLOAT
    } else {
        at::INT
    };
    Ok(match ty {
        at::FLOAT => AttrValue::Float(a.f),
        at::INT => AttrValue::Int(a.i),
        at::STRING => AttrValue::String(
            String::from_utf8(a.s.clone())
                .map_err(|_| format!("attribute '{}' is not valid UTF-8", a.name))?,
        ),
        at::FLOATS => AttrValue::Floats(a.floats.clone()),
        at::INTS => AttrValue::Ints(a.ints.clone()),
        at::GRAPH => {
            return Err(format!(
                "attribute '{}' is a subgraph; control flow (If, Loop, Scan) is not supported",
                a.name
            ))
        }
        other => {
            return Err(format!(
                "attribute '{}' has type {other} (tensors, strings lists and graphs are not supported as attributes)",
                a.name
            ))
        }
    })
}

/// Attributes ONNX has and this crate does not, dropped when they hold the value that
/// matches this crate's semantics.
fn drop_default(kind: OpKind, key: &str, v: &AttrValue) -> Option<Result<(), String>> {
    let op = kind.name();
    let is_int = |n: i64| matches!(v, AttrValue::Int(x) if *x == n);
    let ok = |cond: bool, what: &str| {
        Some(if cond {
            Ok(())
        } else {
            Err(format!(
                "{op} with {key} = {} is not supported ({what})",
                show(v)
            ))
        })
    };
    use OpKind as K;
    match (kind, key) {
        (K::LayerNormalization | K::SimplifiedLayerNormalization, "stash_type") => {
            ok(is_int(1), "normalisation always computes in f32")
        }
        (K::Cast, "saturate") => ok(is_int(1), "casts to fp8 saturate"),
        (K::Conv, "auto_pad") => ok(
            matches!(v, AttrValue::String(s) if s == "NOTSET"),
            "give explicit pads",
        ),
        (K::Reshape, "allowzero") => ok(is_int(0), "0 in 'shape' copies the input dimension"),
        (K::ReduceSum | K::ReduceMean | K::ReduceMax, "noop_with_empty_axes") => {
            ok(is_int(0), "empty axes reduce over all axes")
        }
        (K::Split, "num_outputs") => Some(Ok(())),
        (K::Attention, "q_num_heads" | "kv_num_heads" | "softmax_precision") => Some(Ok(())),
        (K::Attention, "qk_matmul_output_mode") => {
            ok(is_int(0), "only the attention output is produced")
        }
        (K::Attention, "softcap") => ok(
            matches!(v, AttrValue::Float(x) if *x == 0.0) || is_int(0),
            "softcapping is not implemented",
        ),
        (K::Silu, "alpha") => ok(
            matches!(v, AttrValue::Float(x) if *x == 1.0) || is_int(1),
            "only Swish with alpha = 1 (SiLU) is supported",
        ),
        _ => None,
    }
}

fn show(v: &AttrValue) -> String {
    match v {
        AttrValue::Int(i) => i.to_string(),
        AttrValue::Float(f) => f.to_string(),
        AttrValue::Ints(v) => format!("{v:?}"),
        AttrValue::Floats(v) => format!("{v:?}"),
        AttrValue::String(s) => format!("\"{s}\""),
    }
}

fn map_node(
    np: &NodeProto,
    name: &str,
    ins: &[String],
    opset: i64,
    consts: &BTreeMap<String, Const>,
    folded: &mut BTreeSet<String>,
) -> Result<Node, String> {
    let kind = crate::spec::from_onnx(&np.domain, &np.op_type, opset, name)?;
    let op = kind.name();

    let mut attrs: BTreeMap<String, AttrValue> = BTreeMap::new();
    for a in &np.attribute {
        let v = attr_value(a)?;
        if let Some(r) = drop_default(kind, &a.name, &v) {
            r?;
            continue;
        }
        let v = match (kind, a.name.as_str(), v) {
            (OpKind::Cast, "to", AttrValue::Int(code)) => {
                let code =
                    i32::try_from(code).map_err(|_| format!("Cast 'to' {code} is not a type"))?;
                AttrValue::String(
                    dtype_of(code)
                        .map_err(|m| format!("Cast 'to': {m}"))?
                        .name()
                        .into(),
                )
            }
            (_, _, v) => v,
        };
        attrs.insert(a.name.clone(), v);
    }

    // Constant inputs that are attributes here.
    let mut inputs: Vec<String> = ins.to_vec();
    let const_inputs = kind.spec().const_inputs;
    if let Some(first) = const_inputs.first().map(|c| c.index) {
        for c in const_inputs {
            let (i, key, scalar) = (c.index, c.attr, c.form != ConstForm::Ints);
            let Some(src) = ins.get(i) else { continue };
            if src.is_empty() {
                continue;
            }
            let c = consts.get(src).ok_or_else(|| {
                format!(
                    "input {i} of {op} ('{src}', the '{key}') must be a constant (an initializer or a Constant node); computed shapes are not folded by this loader"
                )
            })?;
            let values = c.ints();
            if attrs.contains_key(key) {
                return Err(format!(
                    "'{key}' is given both as an attribute and as input {i}"
                ));
            }
            let v = if scalar {
                match values.as_slice() {
                    [v] => AttrValue::Int(*v),
                    _ => {
                        return Err(format!(
                            "input {i} of {op} ('{src}') must hold one value, got {}",
                            values.len()
                        ))
                    }
                }
            } else {
                AttrValue::Ints(values)
            };
            attrs.insert(key.to_string(), v);
            folded.insert(src.clone());
        }
        inputs.truncate(first);
    }
    if kind == OpKind::Clip {
        // Scalar constant bounds become the min/max attributes.
        for (i, key) in [(1usize, "min"), (2, "max")] {
            if let Some(src) = ins.get(i) {
                if let Some(c) = consts.get(src) {
                    if let [v] = c.decoded.values.as_slice() {
                        attrs.insert(key.to_string(), AttrValue::Float(*v));
                        folded.insert(src.clone());
                        if let Some(slot) = inputs.get_mut(i) {
                            slot.clear();
                        }
                    }
                }
            }
        }
        while inputs.len() > 1 && inputs.last().is_some_and(|s| s.is_empty()) {
            inputs.pop();
        }
    }
    if matches!(
        kind,
        OpKind::Attention | OpKind::LayerNormalization | OpKind::Conv | OpKind::Gemm
    ) {
        // Trailing omitted optional inputs.
        while inputs.len() > 1 && inputs.last().is_some_and(|s| s.is_empty()) {
            inputs.pop();
        }
    }
    if kind == OpKind::Attention && inputs.len() > 3 {
        return Err(
            "Attention with attn_mask, past_key/past_value or nonpad_kv_seqlen inputs is not supported (only Q, K, V with is_causal)".into(),
        );
    }
    Ok(Node {
        name: name.to_string(),
        op: op.to_string(),
        inputs,
        outputs: np.output.clone(),
        attrs,
    })
}
