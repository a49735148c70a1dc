//! `.onnx` bytes -> [`Graph`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use prost::Message;

use crate::error::GraphError;
use crate::ir::{
    AttrValue, ExternalData, ExternalFiles, Graph, InitSpec, Initializer, Node, ValueInfo,
};
use crate::onnx::proto::{attr_type as at, AttributeProto, ModelProto, NodeProto, TensorProto};
use crate::onnx::tensor::{decode, decode_raw, dtype_of, external_ref, shape_of, Decoded};
use crate::onnx::{FOLDED_VERSIONS, KNOWN_OPSET, MAX_OPSET, MIN_OPSET};
use crate::spec::{ConstForm, OpKind};
use crate::tensor::{Tensor, TensorType};

/// Reads an ONNX model (opset 13 to 25 of the default domain, and 26 to 28 where every
/// op used is unchanged since a version the op table knows). Initializers may hold their
/// data in `raw_data` or in the typed fields; `Constant` nodes become initializers;
/// `Identity` nodes are removed (their output is another name for their input); Shape,
/// Size, ConstantOfShape and Range, and nodes over constants whose result was computed at
/// load time or is needed as an attribute, are folded with the reference evaluator;
/// inputs that ONNX passes as constant tensors (Reshape's shape, Slice's
/// starts/ends/axes/steps, Squeeze/Unsqueeze/Reduce axes, Split's sizes, Expand's shape,
/// CumSum's axis, Trilu's k, TopK's k) become the attributes of the same names. The
/// result is type-checked ([`Graph::infer_types`]). Malformed bytes,
/// dynamic shapes, data-dependent shapes and unknown ops are errors that say what and
/// where; nothing here panics. See `docs/onnx.md`.
///
/// Initializers with external data are read from no file: their values are unavailable
/// (an error when materialised) but their shapes serve timing-only runs; give the files
/// with [`load_onnx_with_files`].
pub fn load_onnx(bytes: &[u8]) -> Result<Graph, GraphError> {
    load_onnx_with_files(bytes, Arc::new(BTreeMap::<String, Vec<u8>>::new()))
}

/// [`load_onnx`] for a model whose initializers may hold their data in external files
/// (ONNX external data: `location`, `offset`, `length`), found through `files` (a
/// directory for the CLI, a map of dropped files for the page). Locations must be relative
/// paths inside the model's directory and lengths must match the shapes; both are
/// checked here. The bytes are read only when the values are materialised
/// ([`Graph::initializer_tensors`]), or here for the few a load-time fold needs (shapes,
/// axes), so a timing-only run reads none.
pub fn load_onnx_with_files(
    bytes: &[u8],
    files: Arc<dyn ExternalFiles>,
) -> Result<Graph, GraphError> {
    let model = ModelProto::decode(bytes).map_err(|e| {
        GraphError::graph(format!(
            "not a readable ONNX model (protobuf decoding failed: {e})"
        ))
    })?;
    // `convert` type-checks the graph it builds.
    convert(&model, &files)
}

fn gerr(m: impl Into<String>) -> GraphError {
    GraphError::graph(m)
}

/// A constant tensor known at load time (an initializer or a Constant node's value).
struct Const {
    /// Its type and values (no values while `external` holds them).
    decoded: Decoded,
    /// Where its values are when they are in an external file not read yet.
    external: Option<ExternalData>,
}

impl Const {
    fn new(decoded: Decoded) -> Const {
        Const {
            decoded,
            external: None,
        }
    }
}

/// Reads the external data of those of `names` that a load-time fold needs.
fn materialise(consts: &mut BTreeMap<String, Const>, names: &[String]) -> Result<(), String> {
    for n in names {
        let Some(c) = consts.get_mut(n) else {
            continue;
        };
        if let Some(x) = c.external.take() {
            let bytes = x.files.read(&x.location, x.offset, x.length)?;
            c.decoded = decode_raw(&c.decoded.ty, &bytes)
                .map_err(|m| format!("initializer '{n}' ('{}'): {m}", x.location))?;
        }
    }
    Ok(())
}

impl Const {
    fn ints(&self) -> Vec<i64> {
        match &self.decoded.ints {
            Some(v) => v.clone(),
            None => self.decoded.values.iter().map(|&x| x as i64).collect(),
        }
    }
}

fn convert(model: &ModelProto, files: &Arc<dyn ExternalFiles>) -> Result<Graph, GraphError> {
    let mut opset = None;
    for o in &model.opset_import {
        if o.domain.is_empty() || o.domain == "ai.onnx" {
            opset = Some(o.version);
        }
    }
    let opset = opset.ok_or_else(|| {
        gerr("the model imports no version of the default ONNX opset (opset_import has no entry for domain \"\")")
    })?;
    if opset < 1 {
        return Err(gerr(format!(
            "the model imports ONNX opset {opset}; opsets start at 1"
        )));
    }
    if opset > KNOWN_OPSET {
        return Err(gerr(format!(
            "the model uses ONNX opset {opset}; this loader reads opsets up to {MAX_OPSET}, and up to {KNOWN_OPSET} when every op the model uses is unchanged since {MAX_OPSET} (ONNX's operator changelog as this loader knows it ends at opset {KNOWN_OPSET})"
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
        let ierr = |m: String| gerr(format!("initializer '{name}': {m}"));
        let c = match external_ref(t).map_err(ierr)? {
            Some(x) => Const {
                decoded: Decoded {
                    ty: x.ty,
                    values: Vec::new(),
                    ints: None,
                },
                external: Some(ExternalData {
                    location: x.location,
                    offset: x.offset,
                    length: x.length,
                    files: files.clone(),
                }),
            },
            None => Const::new(decode(t).map_err(ierr)?),
        };
        if consts.contains_key(&name) {
            return Err(gerr(format!("initializer '{name}' is defined twice")));
        }
        consts.insert(name.clone(), c);
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

    // Identity nodes, and Dropout in inference mode: their output is another name for
    // their input.
    let mut alias: BTreeMap<String, String> = BTreeMap::new();
    for np in &g.node {
        let passes_through = is_default(&np.domain)
            && match np.op_type.as_str() {
                "Identity" => true,
                "Dropout" => dropout_inference(np, &consts).is_ok(),
                _ => false,
            };
        if passes_through {
            if let (Some(i), Some(o)) = (np.input.first(), np.output.first()) {
                alias.insert(o.clone(), i.clone());
            }
        }
    }
    let resolve = |n: &str| -> String {
        let mut cur = n.to_string();
        for _ in 0..alias.len() + 1 {
            match alias.get(&cur) {
                Some(next) => cur = next.clone(),
                None => break,
            }
        }
        cur
    };

    let fold = fold_plan(g, opset, &consts, &resolve);
    let mut producer: BTreeMap<String, String> = BTreeMap::new();
    for (idx, np) in g.node.iter().enumerate() {
        let who = if np.name.is_empty() {
            format!("{}_{idx}", np.op_type)
        } else {
            np.name.clone()
        };
        for o in &np.output {
            producer.insert(o.clone(), format!("node '{who}' ({})", np.op_type));
        }
    }

    // Types of every value known so far, for Shape and Size.
    let mut types: BTreeMap<String, TensorType> = inputs
        .iter()
        .map(|v| (v.name.clone(), v.ty.clone()))
        .collect();
    // Weights too: a Shape downstream of a MatMul by a weight needs its type.
    for (name, c) in &consts {
        types.insert(name.clone(), c.decoded.ty.clone());
    }
    let mut nodes: Vec<Node> = Vec::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    // constants folded into attributes, and constants used as ordinary inputs
    let mut folded: BTreeSet<String> = BTreeSet::new();
    let mut used: BTreeSet<String> = BTreeSet::new();
    // values computed at load time (kept as initializers only where a node uses them)
    let mut computed: BTreeSet<String> = BTreeSet::new();
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
        let ins: Vec<String> = np.input.iter().map(|n| resolve(n)).collect();
        check_version(np, opset).map_err(nerr)?;

        let folded_op = if is_default(&np.domain) {
            FOLDED_VERSIONS
                .iter()
                .find(|(n, _)| *n == np.op_type)
                .map(|(n, _)| *n)
        } else {
            None
        };
        match folded_op {
            Some("Identity") => {
                if ins.len() != 1 || np.output.len() != 1 {
                    return Err(nerr("Identity needs one input and one output".into()));
                }
                continue;
            }
            Some("Dropout") => {
                dropout_inference(np, &consts).map_err(nerr)?;
                // Rare (a mask output at all), so the graph is searched only then.
                if let Some(mask) = np.output.get(1).filter(|m| is_read(g, m)) {
                    return Err(nerr(format!(
                        "its mask output '{mask}' is read; this loader reads Dropout in inference mode, as its input passed through, without a mask"
                    )));
                }
                continue;
            }
            Some(op) => {
                if !matches!(op, "Shape" | "Size") {
                    materialise(&mut consts, &ins).map_err(nerr)?;
                }
                let decoded = match op {
                    "Constant" => constant_value(np),
                    _ => fold_special(op, np, &ins, &consts, &types),
                }
                .map_err(nerr)?;
                let out = np
                    .output
                    .first()
                    .ok_or_else(|| nerr(format!("{op} has no output")))?;
                if consts.contains_key(out) {
                    return Err(nerr(format!("'{out}' is defined twice")));
                }
                types.insert(out.clone(), decoded.ty.clone());
                if op != "Constant" {
                    folded.extend(ins.iter().cloned());
                    computed.insert(out.clone());
                }
                consts.insert(out.clone(), Const::new(decoded));
                init_order.push(out.clone());
                continue;
            }
            None => {}
        }
        if is_default(&np.domain) && np.op_type == "MaxPool" {
            // Rare (the argmax positions at all), so the graph is searched only then.
            if let Some(indices) = np.output.get(1).filter(|m| is_read(g, m)) {
                return Err(nerr(format!(
                    "its Indices output '{indices}' is read; this loader reads MaxPool's Y only, not the positions of the maxima"
                )));
            }
        }
        names.insert(name.clone());
        let will_fold = fold.get(idx).copied().unwrap_or(false);
        // External data a fold or an attribute-like input needs is read now.
        let needed: Vec<String> = if will_fold {
            ins.clone()
        } else {
            match crate::spec::from_onnx(&np.domain, &np.op_type, opset, &name) {
                Ok(OpKind::Clip) => ins.iter().skip(1).cloned().collect(),
                Ok(kind) => kind
                    .spec()
                    .const_inputs
                    .iter()
                    .filter_map(|c| ins.get(c.index).cloned())
                    .collect(),
                Err(_) => Vec::new(),
            }
        };
        materialise(&mut consts, &needed).map_err(nerr)?;
        let mut node =
            map_node(np, &name, &ins, opset, &consts, &producer, &mut folded).map_err(nerr)?;
        if will_fold {
            // Every input is a constant: evaluate the node now (the reference evaluator)
            // and keep its outputs as constants.
            let outs = fold_node(&node, &consts).map_err(nerr)?;
            folded.extend(node.inputs.iter().cloned());
            computed.extend(node.outputs.iter().cloned());
            for (o, t) in node.outputs.iter().zip(outs) {
                if o.is_empty() {
                    continue;
                }
                let ints = t
                    .dtype
                    .is_int()
                    .then(|| t.data.iter().map(|&v| v as i64).collect());
                types.insert(o.clone(), t.ty());
                consts.insert(
                    o.clone(),
                    Const::new(Decoded {
                        ty: t.ty(),
                        values: t.data,
                        ints,
                    }),
                );
                init_order.push(o.clone());
            }
            names.remove(&name);
            continue;
        }
        let in_types: Vec<Option<TensorType>> = node
            .inputs
            .iter()
            .map(|i| {
                if i.is_empty() {
                    None
                } else {
                    types.get(i).cloned()
                }
            })
            .collect();
        if let Some(kind) = node.kind() {
            if in_types
                .iter()
                .zip(&node.inputs)
                .all(|(t, n)| t.is_some() || n.is_empty())
            {
                // Types for later Shape/Size nodes; a failure here is reported, with its
                // place, by the type check of the whole graph.
                if let Ok(outs) = crate::infer::infer(kind, &node, &in_types) {
                    for (o, t) in node.outputs.iter().zip(outs) {
                        types.insert(o.clone(), t);
                    }
                }
            }
        }
        for i in &node.inputs {
            used.insert(i.clone());
        }
        node.name = name;
        nodes.push(node);
    }

    // Extra outputs that this crate's op does not produce: drop them when nothing uses
    // them.
    let mut consumed: BTreeSet<String> = used.clone();
    for o in &graph_outputs {
        consumed.insert(resolve(o));
    }
    for node in &mut nodes {
        let Some(kind) = node.kind() else {
            continue;
        };
        let spec = kind.spec();
        let max_out = spec.output_arity().1;
        // Optional outputs nothing uses are dropped (e.g. LayerNormalization's Mean).
        while node.outputs.len() > 1
            && node.outputs.len() <= max_out
            && spec
                .outputs
                .get(node.outputs.len() - 1)
                .is_some_and(|p| p.arity == crate::spec::PortArity::Optional)
            && node
                .outputs
                .last()
                .is_some_and(|o| o.is_empty() || !consumed.contains(o))
        {
            node.outputs.pop();
        }
        // An omitted output before a used one gets a name of its own.
        let node_name = node.name.clone();
        for (k, o) in node.outputs.iter_mut().enumerate() {
            if o.is_empty() {
                *o = format!("{node_name}.unused_output_{k}");
            }
        }
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

    let outputs: Vec<String> = graph_outputs.iter().map(|o| resolve(o)).collect();
    for o in &outputs {
        used.insert(o.clone());
    }

    // Initializers: every constant except those only folded into attributes.
    let mut initializers = Vec::new();
    for name in &init_order {
        if (folded.contains(name) || computed.contains(name)) && !used.contains(name) {
            continue;
        }
        let Some(c) = consts.remove(name) else {
            continue;
        };
        initializers.push(Initializer {
            name: name.clone(),
            ty: c.decoded.ty,
            init: match c.external {
                Some(x) => InitSpec::External(x),
                None => InitSpec::Data(c.decoded.values),
            },
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
        let name = resolve(&vo.name);
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
        (K::Cast | K::CastLike, "saturate") => ok(is_int(1), "casts to fp8 saturate"),
        (K::Conv, "auto_pad") => ok(
            matches!(v, AttrValue::String(s) if s == "NOTSET"),
            "give explicit pads",
        ),
        (K::Reshape, "allowzero") => ok(is_int(0), "0 in 'shape' copies the input dimension"),
        (
            K::ReduceSum
            | K::ReduceMean
            | K::ReduceMax
            | K::ReduceMin
            | K::ReduceProd
            | K::ReduceL2
            | K::ReduceLogSumExp,
            "noop_with_empty_axes",
        ) => ok(is_int(0), "empty axes reduce over all axes"),
        (K::Split, "num_outputs") => Some(Ok(())),
        // The softmax is computed in f32 whatever precision is asked for.
        (K::Attention, "softmax_precision") => Some(Ok(())),
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
    producer: &BTreeMap<String, String>,
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
                let from = match producer.get(src) {
                    Some(p) => format!("it is computed by {p} from the graph's input data"),
                    None => "it is a graph input".to_string(),
                };
                format!(
                    "input {i} of {op} ('{src}', the '{key}') must be known when the model is loaded, but {from}; this crate takes '{key}' as an attribute"
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
    Ok(Node {
        name: name.to_string(),
        op: op.to_string(),
        inputs,
        outputs: np.output.clone(),
        attrs,
    })
}

/// Whether the optional output `name` (empty when omitted) is read by a node of `g` or is
/// one of its outputs.
fn is_read(g: &crate::onnx::proto::GraphProto, name: &str) -> bool {
    !name.is_empty()
        && (g.node.iter().any(|n| n.input.iter().any(|i| i == name))
            || g.output.iter().any(|o| o.name == name))
}

/// Whether a Dropout node runs in inference mode, where its output is its input: its
/// `training_mode` input is omitted or a stored constant false. Else why not.
fn dropout_inference(np: &NodeProto, consts: &BTreeMap<String, Const>) -> Result<(), String> {
    let Some(t) = np.input.get(2).filter(|t| !t.is_empty()) else {
        return Ok(());
    };
    match consts.get(t) {
        Some(c) if c.external.is_none() && c.decoded.values == [0.0] => Ok(()),
        Some(_) => Err(format!(
            "its training_mode '{t}' is not false; this loader reads Dropout in inference mode only"
        )),
        None => Err(format!(
            "its training_mode '{t}' is not a stored constant; this loader reads Dropout in inference mode only"
        )),
    }
}

fn is_default(domain: &str) -> bool {
    domain.is_empty() || domain == "ai.onnx"
}

/// The versions of a default-domain ONNX op's definition the loader knows, if it reads
/// the op, and whether it reads every one of them.
fn known_versions(np: &NodeProto, opset: i64) -> Option<(&'static [i64], bool)> {
    if !is_default(&np.domain) {
        return None;
    }
    if let Some((_, v)) = FOLDED_VERSIONS.iter().find(|(n, _)| *n == np.op_type) {
        return Some((v, false));
    }
    crate::spec::from_onnx(&np.domain, &np.op_type, opset, &np.name)
        .ok()
        .map(|k| (k.spec().onnx_versions, k.spec().onnx_reads_all))
}

/// The policy for opsets outside [`MIN_OPSET`] to [`MAX_OPSET`]: an op is read when the
/// version of its definition in force at the model's opset is one the loader reads. Below
/// [`MIN_OPSET`] that is the version in force at [`MIN_OPSET`] (the first the op table
/// lists), unchanged since an opset no newer than the model's; above [`MAX_OPSET`], one
/// from [`MAX_OPSET`] or before.
fn check_version(np: &NodeProto, opset: i64) -> Result<(), String> {
    if (MIN_OPSET..=MAX_OPSET).contains(&opset) {
        return Ok(());
    }
    let Some((versions, reads_all)) = known_versions(np, opset) else {
        return Ok(()); // an op the loader does not read: map_node says so
    };
    if opset < MIN_OPSET {
        return match versions.first() {
            Some(&first) if first > opset => Err(format!(
                "ONNX changed {} in opset {first}; the model imports opset {opset}, and this loader reads {} only as defined from opset {first} (convert the model with onnx.version_converter)",
                np.op_type, np.op_type
            )),
            _ => Ok(()),
        };
    }
    match crate::spec::version_at(versions, opset) {
        Some(v) if v > MAX_OPSET && !reads_all => Err(format!(
            "ONNX changed {} in opset {v}; the model imports opset {opset}, and this loader reads {} only as defined up to opset {MAX_OPSET}",
            np.op_type, np.op_type
        )),
        _ => Ok(()),
    }
}

/// Most elements one folded value may have (folding is for shapes and small constants).
const FOLD_LIMIT: usize = 1 << 22;

/// Which nodes to evaluate at load time: Shape and Size (always; their value is the
/// static shape), ConstantOfShape and Range, and any node whose inputs are all constants
/// when one of them was itself computed at load time, or when its result is needed where
/// this crate takes an attribute (Reshape's shape, Slice's starts, ...). A node over
/// stored constants alone whose result is ordinary data stays a node.
fn fold_plan(
    g: &crate::onnx::proto::GraphProto,
    opset: i64,
    consts: &BTreeMap<String, Const>,
    resolve: &dyn Fn(&str) -> String,
) -> Vec<bool> {
    let n = g.node.len();
    let mut constant: BTreeSet<String> = consts.keys().cloned().collect();
    let mut candidate = vec![false; n];
    let mut fold = vec![false; n];
    // inputs that must be constants: attribute-like inputs, and the inputs of folded nodes
    let mut need: BTreeSet<String> = BTreeSet::new();
    let ins: Vec<Vec<String>> = g
        .node
        .iter()
        .map(|np| np.input.iter().map(|i| resolve(i)).collect())
        .collect();
    for (i, np) in g.node.iter().enumerate() {
        let default = is_default(&np.domain);
        let op = np.op_type.as_str();
        if default && op == "Constant" {
            constant.extend(np.output.iter().cloned());
            continue;
        }
        if default && matches!(op, "Identity" | "Dropout") {
            continue;
        }
        let shape_of = default && matches!(op, "Shape" | "Size");
        let all_const = ins[i].iter().all(|x| x.is_empty() || constant.contains(x));
        if shape_of || all_const {
            candidate[i] = true;
            constant.extend(np.output.iter().cloned());
        }
        fold[i] = default && matches!(op, "Shape" | "Size" | "ConstantOfShape" | "Range");
        if let Ok(kind) = crate::spec::from_onnx(&np.domain, op, opset, &np.name) {
            for c in kind.spec().const_inputs {
                if let Some(x) = ins[i].get(c.index).filter(|x| !x.is_empty()) {
                    need.insert(x.clone());
                }
            }
        }
    }
    loop {
        let mut produced: BTreeSet<&str> = BTreeSet::new();
        for (i, np) in g.node.iter().enumerate() {
            if fold[i] {
                produced.extend(np.output.iter().map(String::as_str));
                if !matches!(np.op_type.as_str(), "Shape" | "Size") {
                    need.extend(ins[i].iter().cloned());
                }
            }
        }
        let mut changed = false;
        for (i, np) in g.node.iter().enumerate() {
            if candidate[i]
                && !fold[i]
                && (ins[i].iter().any(|x| produced.contains(x.as_str()))
                    || np.output.iter().any(|o| need.contains(o)))
            {
                fold[i] = true;
                changed = true;
            }
        }
        if !changed {
            return fold;
        }
    }
}

/// Constant input `i` of a folded ONNX op, or an error saying it depends on data.
fn const_input<'a>(
    consts: &'a BTreeMap<String, Const>,
    ins: &[String],
    i: usize,
    op: &str,
) -> Result<&'a Const, String> {
    let name = ins
        .get(i)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| format!("{op} needs input {i}"))?;
    consts.get(name).ok_or_else(|| {
        format!(
            "input {i} of {op} ('{name}') depends on the graph's input data, so it cannot be computed when the model is loaded; this playground needs shapes and sizes known at load time"
        )
    })
}

fn int_attr(np: &NodeProto, name: &str) -> Option<i64> {
    np.attribute.iter().find(|a| a.name == name).map(|a| a.i)
}

fn int_tensor(values: Vec<i64>, shape: Vec<usize>) -> Decoded {
    Decoded {
        ty: TensorType::new(crate::dtype::DType::I64, shape),
        values: values.iter().map(|&v| v as f32).collect(),
        ints: Some(values),
    }
}

/// The value of a Shape, Size, ConstantOfShape or Range node, computed at load time.
fn fold_special(
    op: &str,
    np: &NodeProto,
    ins: &[String],
    consts: &BTreeMap<String, Const>,
    types: &BTreeMap<String, TensorType>,
) -> Result<Decoded, String> {
    let type_of = |i: usize| -> Result<&TensorType, String> {
        let name = ins.get(i).ok_or_else(|| format!("{op} needs input {i}"))?;
        types
            .get(name)
            .ok_or_else(|| format!("the type of input '{name}' is not known at this node"))
    };
    match op {
        "Shape" => {
            let dims: Vec<i64> = type_of(0)?.shape.iter().map(|&d| d as i64).collect();
            let rank = dims.len() as i64;
            let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
            let start = clamp(int_attr(np, "start").unwrap_or(0));
            let end = clamp(int_attr(np, "end").unwrap_or(rank));
            let dims = dims.get(start..end.max(start)).unwrap_or(&[]).to_vec();
            let n = dims.len();
            Ok(int_tensor(dims, vec![n]))
        }
        "Size" => Ok(int_tensor(vec![type_of(0)?.numel() as i64], vec![])),
        "ConstantOfShape" => {
            let dims = const_input(consts, ins, 0, op)?.ints();
            let shape = shape_of(&dims)?;
            let n = crate::tensor::numel(&shape);
            if n > FOLD_LIMIT {
                return Err(format!(
                    "ConstantOfShape would make {n} elements, more than the {FOLD_LIMIT} this loader computes at load time"
                ));
            }
            let (dtype, v, iv) = match np.attribute.iter().find(|a| a.name == "value") {
                Some(a) => {
                    let t =
                        a.t.as_ref()
                            .ok_or("ConstantOfShape 'value' holds no tensor")?;
                    let d = decode(t)?;
                    let v = *d.values.first().ok_or("ConstantOfShape 'value' is empty")?;
                    let iv = d.ints.as_ref().and_then(|i| i.first().copied());
                    (d.ty.dtype, v, iv)
                }
                None => (crate::dtype::DType::F32, 0.0, None),
            };
            Ok(Decoded {
                ty: TensorType::new(dtype, shape),
                values: vec![v; n],
                ints: dtype.is_int().then(|| vec![iv.unwrap_or(v as i64); n]),
            })
        }
        "Range" => {
            let [start, limit, delta] = [0, 1, 2].map(|i| const_input(consts, ins, i, op));
            let (start, limit, delta) = (start?, limit?, delta?);
            let dtype = start.decoded.ty.dtype;
            let one = |c: &Const| -> Result<f64, String> {
                match (&c.decoded.ints, c.decoded.values.as_slice()) {
                    (Some(i), _) if i.len() == 1 => Ok(i[0] as f64),
                    (None, [v]) => Ok(f64::from(*v)),
                    _ => Err("Range's start, limit and delta must be scalars".into()),
                }
            };
            let (s, l, d) = (one(start)?, one(limit)?, one(delta)?);
            if d == 0.0 {
                return Err("Range's delta is 0".into());
            }
            let n = ((l - s) / d).ceil().max(0.0);
            if n.is_nan() || n > FOLD_LIMIT as f64 {
                return Err(format!(
                    "Range would make {n} elements, more than the {FOLD_LIMIT} this loader computes at load time"
                ));
            }
            let n = n as usize;
            if dtype.is_int() {
                let (s, d) = (s as i64, d as i64);
                let v: Vec<i64> = (0..n as i64)
                    .map(|k| s.saturating_add(k.saturating_mul(d)))
                    .collect();
                let mut t = int_tensor(v, vec![n]);
                t.ty.dtype = dtype;
                Ok(t)
            } else {
                // ONNX computes each element as start + k * delta, in the input type.
                let (s, d) = (s as f32, d as f32);
                let values = (0..n).map(|k| dtype.round(s + k as f32 * d)).collect();
                Ok(Decoded {
                    ty: TensorType::new(dtype, vec![n]),
                    values,
                    ints: None,
                })
            }
        }
        _ => Err(format!("internal error: {op} is not folded")),
    }
}

/// Evaluates a node whose inputs are all constants with the reference evaluator.
fn fold_node(node: &Node, consts: &BTreeMap<String, Const>) -> Result<Vec<Tensor>, String> {
    let mut ts: Vec<Option<Tensor>> = Vec::with_capacity(node.inputs.len());
    let mut total = 0usize;
    for i in &node.inputs {
        if i.is_empty() {
            ts.push(None);
            continue;
        }
        let c = consts
            .get(i)
            .ok_or_else(|| format!("internal error: '{i}' is not a constant"))?;
        total = total.saturating_add(c.decoded.values.len());
        ts.push(Some(Tensor {
            dtype: c.decoded.ty.dtype,
            shape: c.decoded.ty.shape.clone(),
            data: c.decoded.values.clone(),
        }));
    }
    if total > FOLD_LIMIT {
        return Err(format!(
            "its constant inputs have {total} elements, more than the {FOLD_LIMIT} this loader computes at load time"
        ));
    }
    let refs: Vec<Option<&Tensor>> = ts.iter().map(|t| t.as_ref()).collect();
    let outs = crate::eval::eval_one(node, &refs)?;
    if outs.iter().any(|t| t.data.len() > FOLD_LIMIT) {
        return Err(format!(
            "its result has more than the {FOLD_LIMIT} elements this loader computes at load time"
        ));
    }
    Ok(outs)
}
