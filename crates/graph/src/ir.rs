//! The model-graph IR and its validation.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{GraphError, Location};
use crate::infer;
use crate::spec::{self, OpKind};
use crate::tensor::TensorType;

/// A named, typed graph input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueInfo {
    pub name: String,
    pub ty: TensorType,
}

/// A constant of the graph (a weight): either literal data or a seeded generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Initializer {
    pub name: String,
    pub ty: TensorType,
    pub init: InitSpec,
}

/// How an initializer's values are made. See [`Graph::initializer_tensors`] for the exact,
/// platform-independent generators.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InitSpec {
    /// Literal row-major values (one per element).
    Data(Vec<f32>),
    /// Uniform in `[low, high)`.
    Uniform {
        seed: u64,
        low: f32,
        high: f32,
    },
    /// Normal with the given mean and standard deviation.
    Normal {
        seed: u64,
        mean: f32,
        std: f32,
    },
    Zeros,
    Ones,
    /// Every element equal to this value.
    Constant(f32),
    /// A causal attention mask over a block of keys, described rather than stored (a long
    /// sequence's masks would take gigabytes): in a `[rows, cols]` tensor, element
    /// `(r, i)` is `-inf` when key `col0 + i` comes after query `r % period + past`, else
    /// 0. Written to JSON as its values ([`InitSpec::values`]).
    CausalMask {
        col0: usize,
        period: usize,
        past: usize,
    },
    /// Bytes in a file next to an ONNX model (ONNX external data), read only when the
    /// values are materialised: a timing-only run never reads them. Not part of the JSON
    /// format.
    #[serde(skip)]
    External(ExternalData),
}

/// Where ONNX external tensor data comes from: the files next to the model, by the
/// `location` the model gives (a relative path, already checked to stay inside the
/// model's directory). The CLI reads a directory; the page a map of dropped files.
pub trait ExternalFiles: Send + Sync {
    /// The `length` bytes at `offset` of file `location`; an error when the file is
    /// missing or shorter than `offset + length` (checked before reading).
    fn read(&self, location: &str, offset: u64, length: u64) -> Result<Vec<u8>, String>;
}

/// Files given by name, as a multi-file drop gives them. A location `dir/w.bin` is found
/// as `dir/w.bin`, else as `w.bin`.
impl ExternalFiles for BTreeMap<String, Vec<u8>> {
    fn read(&self, location: &str, offset: u64, length: u64) -> Result<Vec<u8>, String> {
        let location = location.trim_start_matches("./");
        let base = location.rsplit(['/', '\\']).next().unwrap_or(location);
        let bytes = self
            .get(location)
            .or_else(|| self.get(base))
            .ok_or_else(|| {
                format!("the external data file '{location}' was not given with the model")
            })?;
        let range = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(length).ok())
            .and_then(|(o, l)| Some(o..o.checked_add(l)?))
            .filter(|r| r.end <= bytes.len())
            .ok_or_else(|| {
                format!(
                    "the external data file '{location}' has {} bytes; the tensor needs bytes {offset} to {offset} + {length}",
                    bytes.len()
                )
            })?;
        Ok(bytes[range].to_vec())
    }
}

/// An initializer's values in an external file: `length` bytes at `offset` of
/// `location`, little-endian in the initializer's dtype.
#[derive(Clone)]
pub struct ExternalData {
    /// The file, relative to the model's directory.
    pub location: String,
    /// Where the tensor's bytes start.
    pub offset: u64,
    /// How many bytes it takes (checked against the shape when the model is loaded).
    pub length: u64,
    pub(crate) files: std::sync::Arc<dyn ExternalFiles>,
}

impl ExternalData {
    /// Reads the values of a tensor of type `ty` (rounded to its dtype).
    pub fn values(&self, ty: &TensorType) -> Result<Vec<f32>, String> {
        let bytes = self.files.read(&self.location, self.offset, self.length)?;
        if bytes.len() as u64 != self.length {
            return Err(format!(
                "reading '{}' gave {} bytes, not the {} asked for",
                self.location,
                bytes.len(),
                self.length
            ));
        }
        crate::onnx::decode_raw(ty, &bytes).map(|d| d.values)
    }
}

impl PartialEq for ExternalData {
    fn eq(&self, other: &Self) -> bool {
        (&self.location, self.offset, self.length) == (&other.location, other.offset, other.length)
    }
}

impl std::fmt::Debug for ExternalData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalData")
            .field("location", &self.location)
            .field("offset", &self.offset)
            .field("length", &self.length)
            .finish()
    }
}

/// An attribute value (ONNX-style).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttrValue {
    Int(i64),
    Float(f32),
    Ints(Vec<i64>),
    Floats(Vec<f32>),
    String(String),
}

impl AttrValue {
    /// A short name of the value's kind, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            AttrValue::Int(_) => "an integer",
            AttrValue::Float(_) => "a float",
            AttrValue::Ints(_) => "a list of integers",
            AttrValue::Floats(_) => "a list of floats",
            AttrValue::String(_) => "a string",
        }
    }
}

/// One operation. An empty input name marks an omitted optional input (ONNX convention).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub name: String,
    pub op: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub attrs: BTreeMap<String, AttrValue>,
}

impl Node {
    /// The node's op in the op table, or `None` for an op the table does not have.
    pub fn kind(&self) -> Option<OpKind> {
        OpKind::from_name(&self.op)
    }
}

/// A model graph: inputs, constants, nodes in execution order, and named outputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Graph {
    pub name: String,
    pub description: String,
    pub inputs: Vec<ValueInfo>,
    pub outputs: Vec<String>,
    pub initializers: Vec<Initializer>,
    pub nodes: Vec<Node>,
}

/// Most nodes a graph may have (2^20). A full 32-layer Llama-style model has a few thousand;
/// the bound keeps type inference, compilation and the page's drawing of an absurd file
/// from running away. See docs/limits.md.
pub const MAX_GRAPH_NODES: usize = 1 << 20;

/// Which part of a graph a problem is in; turned into a JSON position by the loader or
/// into a [`Location`] for graphs built in memory.
#[derive(Debug, Clone)]
pub(crate) enum Site {
    Input(usize, &'static str),
    Init(usize, &'static str),
    Node(usize, String),
    Output(usize),
    Outputs,
}

#[derive(Debug, Clone)]
pub(crate) struct Issue {
    pub site: Site,
    pub message: String,
}

impl Site {
    /// JSON pointer of the offending value in the JSON format.
    pub fn pointer(&self) -> String {
        match self {
            Site::Input(i, sub) => format!("/inputs/{i}{sub}"),
            Site::Init(i, sub) => format!("/initializers/{i}{sub}"),
            Site::Node(i, sub) => format!("/nodes/{i}{sub}"),
            Site::Output(i) => format!("/outputs/{i}"),
            Site::Outputs => "/outputs".to_string(),
        }
    }
}

impl Issue {
    fn new(site: Site, message: impl Into<String>) -> Issue {
        Issue {
            site,
            message: message.into(),
        }
    }

    /// The error for a graph that did not come from text.
    pub fn into_error(self, graph: &Graph) -> GraphError {
        if let Site::Node(i, _) = &self.site {
            if let Some(n) = graph.nodes.get(*i) {
                return GraphError::node(&n.name, &n.op, self.message);
            }
        }
        GraphError {
            message: self.message,
            location: Location::Graph,
        }
    }
}

impl Graph {
    /// The type of every value: inputs, initializers and node outputs. Also checks the
    /// graph's structure (names defined before use and defined once, known ops, arity,
    /// attributes, size limits); errors name the node, the op and what was expected.
    pub fn infer_types(&self) -> Result<BTreeMap<String, TensorType>, GraphError> {
        self.check().map_err(|e| e.into_error(self))
    }

    /// Total number of elements of all initializers (the model's parameters).
    pub fn parameter_count(&self) -> usize {
        self.initializers
            .iter()
            .fold(0usize, |a, i| a.saturating_add(i.ty.numel()))
    }

    /// Node that produces each value, by name (graph inputs and initializers absent).
    pub fn producers(&self) -> BTreeMap<&str, &Node> {
        let mut m = BTreeMap::new();
        for n in &self.nodes {
            for o in &n.outputs {
                m.insert(o.as_str(), n);
            }
        }
        m
    }

    pub(crate) fn check(&self) -> Result<BTreeMap<String, TensorType>, Issue> {
        if self.nodes.len() > MAX_GRAPH_NODES {
            return Err(Issue::new(
                Site::Node(MAX_GRAPH_NODES, String::new()),
                format!(
                    "the graph has {} nodes, more than the limit of {MAX_GRAPH_NODES} \
                     (2^20; see docs/limits.md)",
                    self.nodes.len()
                ),
            ));
        }
        let mut types: BTreeMap<String, TensorType> = BTreeMap::new();
        for (i, v) in self.inputs.iter().enumerate() {
            check_name(&v.name, "input").map_err(|m| Issue::new(Site::Input(i, "/name"), m))?;
            if types.contains_key(&v.name) {
                return Err(Issue::new(
                    Site::Input(i, "/name"),
                    format!("input '{}' is defined twice", v.name),
                ));
            }
            v.ty.check_shape_size().map_err(|m| {
                Issue::new(Site::Input(i, "/shape"), format!("input '{}': {m}", v.name))
            })?;
            types.insert(v.name.clone(), v.ty.clone());
        }
        for (i, init) in self.initializers.iter().enumerate() {
            check_name(&init.name, "initializer")
                .map_err(|m| Issue::new(Site::Init(i, "/name"), m))?;
            if types.contains_key(&init.name) {
                return Err(Issue::new(
                    Site::Init(i, "/name"),
                    format!("'{}' is already defined (names must be unique)", init.name),
                ));
            }
            let who = format!("initializer '{}'", init.name);
            init.ty
                .check_shape_size()
                .map_err(|m| Issue::new(Site::Init(i, "/shape"), format!("{who}: {m}")))?;
            check_init(&init.init, init.ty.numel())
                .map_err(|(sub, m)| Issue::new(Site::Init(i, sub), format!("{who}: {m}")))?;
            types.insert(init.name.clone(), init.ty.clone());
        }
        let mut node_names = BTreeSet::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let site = |sub: &str| Site::Node(i, sub.to_string());
            check_name(&node.name, "node").map_err(|m| Issue::new(site("/name"), m))?;
            if !node_names.insert(node.name.as_str()) {
                return Err(Issue::new(
                    site("/name"),
                    format!("node name '{}' is used twice", node.name),
                ));
            }
            let Some(kind) = node.kind() else {
                return Err(Issue::new(
                    site("/op"),
                    spec::unknown_op(&node.op, &node.name),
                ));
            };
            let spec = kind.spec();
            let (min_in, max_in) = spec.input_arity();
            let (min_out, max_out) = spec.output_arity();
            let n_in = node.inputs.len();
            if n_in < min_in || n_in > max_in {
                return Err(Issue::new(
                    site("/inputs"),
                    format!(
                        "{} takes {} input(s), got {n_in}",
                        node.op,
                        range_text(min_in, max_in)
                    ),
                ));
            }
            let n_out = node.outputs.len();
            if n_out < min_out || n_out > max_out {
                return Err(Issue::new(
                    site("/outputs"),
                    format!(
                        "{} produces {} output(s), got {n_out}",
                        node.op,
                        range_text(min_out, max_out)
                    ),
                ));
            }
            let mut in_types = Vec::with_capacity(n_in);
            for (k, name) in node.inputs.iter().enumerate() {
                if name.is_empty() {
                    if k < min_in {
                        return Err(Issue::new(
                            site(&format!("/inputs/{k}")),
                            format!("input {k} of {} is required but empty", node.op),
                        ));
                    }
                    in_types.push(None);
                    continue;
                }
                match types.get(name) {
                    Some(t) => in_types.push(Some(t.clone())),
                    None => {
                        let later = self.nodes.iter().skip(i).any(|n| n.outputs.contains(name));
                        let hint = if later {
                            " (it is produced by a later node; nodes must be in execution order)"
                        } else {
                            ""
                        };
                        return Err(Issue::new(
                            site(&format!("/inputs/{k}")),
                            format!("input '{name}' is not defined before this node{hint}"),
                        ));
                    }
                }
            }
            for (key, value) in &node.attrs {
                let Some(attr) = spec.attr(key) else {
                    let known: Vec<&str> = spec.attrs.iter().map(|a| a.name).collect();
                    return Err(Issue::new(
                        site(&format!("/attrs/{}", escape_pointer(key))),
                        format!(
                            "{} has no attribute '{key}' (it takes: {})",
                            node.op,
                            if known.is_empty() {
                                "none".to_string()
                            } else {
                                known.join(", ")
                            }
                        ),
                    ));
                };
                if !attr.kind.accepts(value) {
                    return Err(Issue::new(
                        site(&format!("/attrs/{}", escape_pointer(key))),
                        format!(
                            "attribute '{key}' of {} must be {}, got {}",
                            node.op,
                            attr.kind.describe(),
                            value.kind_name()
                        ),
                    ));
                }
            }
            let out_types =
                infer::infer(kind, node, &in_types).map_err(|m| Issue::new(site(""), m))?;
            if kind == OpKind::PagedAttention {
                crate::paged::check_constants(&self.initializers, node, &in_types)
                    .map_err(|m| Issue::new(site("/inputs/5"), m))?;
            }
            for (k, (name, ty)) in node.outputs.iter().zip(out_types).enumerate() {
                let osite = site(&format!("/outputs/{k}"));
                check_name(name, "output").map_err(|m| Issue::new(osite.clone(), m))?;
                if types.contains_key(name) {
                    return Err(Issue::new(
                        osite,
                        format!("output '{name}' is already defined (every value is defined once)"),
                    ));
                }
                ty.check_shape_size()
                    .map_err(|m| Issue::new(osite.clone(), format!("output '{name}': {m}")))?;
                types.insert(name.clone(), ty);
            }
        }
        if self.outputs.is_empty() {
            return Err(Issue::new(Site::Outputs, "the graph has no outputs"));
        }
        let mut seen = BTreeSet::new();
        for (i, o) in self.outputs.iter().enumerate() {
            if !types.contains_key(o) {
                return Err(Issue::new(
                    Site::Output(i),
                    format!("graph output '{o}' is not defined by any input, initializer or node"),
                ));
            }
            if !seen.insert(o) {
                return Err(Issue::new(
                    Site::Output(i),
                    format!("graph output '{o}' is listed twice"),
                ));
            }
        }
        Ok(types)
    }
}

fn range_text(min: usize, max: usize) -> String {
    if min == max {
        min.to_string()
    } else if max == usize::MAX {
        format!("at least {min}")
    } else {
        format!("{min} to {max}")
    }
}

fn check_name(name: &str, what: &str) -> Result<(), String> {
    if name.is_empty() {
        Err(format!("{what} name is empty"))
    } else {
        Ok(())
    }
}

impl InitSpec {
    /// The values of a described initializer of `numel` elements whose last dim is `cols`,
    /// for the kinds that need no seed or file (`None` for the others).
    pub fn values(&self, numel: usize, cols: usize) -> Option<Vec<f32>> {
        match self {
            InitSpec::Data(d) => Some(d.clone()),
            InitSpec::Zeros => Some(vec![0.0; numel]),
            InitSpec::Ones => Some(vec![1.0; numel]),
            InitSpec::Constant(c) => Some(vec![*c; numel]),
            InitSpec::CausalMask { col0, period, past } => {
                let (w, period) = (cols.max(1), (*period).max(1));
                Some(
                    (0..numel)
                        .map(|i| {
                            if col0 + i % w > (i / w) % period + past {
                                f32::NEG_INFINITY
                            } else {
                                0.0
                            }
                        })
                        .collect(),
                )
            }
            InitSpec::Uniform { .. } | InitSpec::Normal { .. } | InitSpec::External(_) => None,
        }
    }
}

fn check_init(init: &InitSpec, numel: usize) -> Result<(), (&'static str, String)> {
    match init {
        InitSpec::Data(d) if d.len() != numel => Err((
            "/data",
            format!(
                "'data' has {} values but the shape has {numel} elements",
                d.len()
            ),
        )),
        InitSpec::Uniform { low, high, .. }
            if !(low.is_finite() && high.is_finite() && low <= high) =>
        {
            Err((
                "/init",
                format!("uniform needs finite low <= high, got low {low}, high {high}"),
            ))
        }
        InitSpec::Normal { mean, std, .. }
            if !(mean.is_finite() && std.is_finite() && *std >= 0.0) =>
        {
            Err((
                "/init",
                format!(
                    "normal needs a finite mean and a finite std >= 0, got mean {mean}, std {std}"
                ),
            ))
        }
        _ => Ok(()),
    }
}

pub(crate) fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
