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

// ---------------------------------------------------------------------------------------
// The reference corpus: gallery models and per-op cases, checked against onnxruntime.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Gallery models that are for planning and timing only: they load and infer but are
/// never evaluated (their weights alone are hundreds of millions of values).
pub const PLANNING_ONLY: &[&str] = &["llama3_8b_layer"];

/// Every `*.json` file in `dir`, sorted, as (file stem, text).
pub fn json_files(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).unwrap();
            (stem, text)
        })
        .collect();
    out.sort();
    out
}

/// The same graph with every f16, bf16 and fp8 dtype (inputs, initializers, Cast targets)
/// replaced by f32: the variant compared with onnxruntime at f32 tolerance.
pub fn float_variant(g: &Graph) -> Graph {
    let low = |d: DType| d.is_float() && d != DType::F32;
    let mut g = g.clone();
    for i in &mut g.inputs {
        if low(i.ty.dtype) {
            i.ty.dtype = DType::F32;
        }
    }
    for i in &mut g.initializers {
        if low(i.ty.dtype) {
            i.ty.dtype = DType::F32;
        }
    }
    for n in &mut g.nodes {
        if n.op == "Cast" {
            if let Some(AttrValue::String(s)) = n.attrs.get_mut("to") {
                if DType::parse(s).is_some_and(low) {
                    *s = "f32".into();
                }
            }
        }
    }
    g
}

/// True when any value of the graph has a 16- or 8-bit float dtype.
pub fn low_precision(g: &Graph) -> Option<DType> {
    let types = g.infer_types().ok()?;
    types
        .values()
        .map(|t| t.dtype)
        .filter(|d| d.is_float() && *d != DType::F32)
        .max_by_key(|d| match d {
            DType::F16 => 1,
            DType::BF16 => 2,
            _ => 3,
        })
}

/// The seed of the inputs of every gallery case (a per-op case names its own).
pub const GALLERY_SEED: u64 = 42;

/// The inputs of a reference comparison: [`graph::random_inputs`] with `seed`, except
/// that an integer input used as Gather indices is drawn uniformly from the valid range
/// `[0, n)` of the gathered axis (a second SplitMix64 stream, seed + 1).
pub fn test_inputs(g: &Graph, seed: u64) -> BTreeMap<String, Tensor> {
    let mut ins = graph::random_inputs(g, seed).unwrap();
    let types = g.infer_types().unwrap();
    let mut rng = graph::SplitMix64::new(seed.wrapping_add(1));
    for vi in &g.inputs {
        if !vi.ty.dtype.is_int() {
            continue;
        }
        let bound = g.nodes.iter().find_map(|n| {
            if n.op != "Gather" || n.inputs.get(1) != Some(&vi.name) {
                return None;
            }
            let data = types.get(&n.inputs[0])?;
            let axis = match n.attrs.get("axis") {
                Some(AttrValue::Int(a)) => *a,
                _ => 0,
            };
            let r = data.shape.len() as i64;
            let axis = if axis < 0 { axis + r } else { axis } as usize;
            data.shape.get(axis).copied()
        });
        if let Some(n) = bound {
            let t = ins.get_mut(&vi.name).unwrap();
            for v in &mut t.data {
                *v = (rng.next_u64() % n as u64) as f32;
            }
        }
    }
    ins
}

/// One comparison with onnxruntime.
pub struct RefCase {
    /// `gallery.<model>.<dtype>` or `op.<file stem>`.
    pub name: String,
    pub graph: Graph,
    /// Element type whose tolerance applies (F32 unless the graph computes in 16 bits).
    pub precision: DType,
    /// Seed of the graph's inputs (see [`test_inputs`]).
    pub seed: u64,
    /// onnxruntime's outputs (`{"producer", "outputs"}` or `{"skipped"}`), or where they
    /// were looked for.
    pub expected: Result<Value, String>,
}

/// A per-op case file of tests/graph/ops/: the graph, the seed of its inputs and
/// onnxruntime's outputs in one file (tests/graph/case_file.py writes them).
pub struct OpCaseFile {
    pub graph: Graph,
    pub seed: u64,
    /// The `expected` member, absent until tests/graph/make_expected.sh has run.
    pub expected: Option<Value>,
}

/// The members a per-op case file may have; anything else is a typo.
const OP_CASE_MEMBERS: &[&str] = &["graph", "test_inputs", "expected"];

/// Parses a per-op case file. `test_inputs` may be left out of a hand-written case until
/// make_expected.sh fills it in; its seed is then [`GALLERY_SEED`].
pub fn parse_op_case(stem: &str, text: &str) -> OpCaseFile {
    let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("ops/{stem}.json: {e}"));
    let m = v
        .as_object()
        .unwrap_or_else(|| panic!("ops/{stem}.json: not an object"));
    for k in m.keys() {
        assert!(
            OP_CASE_MEMBERS.contains(&k.as_str()),
            "ops/{stem}.json: unknown member '{k}' (expected one of {OP_CASE_MEMBERS:?})"
        );
    }
    let g = m
        .get("graph")
        .unwrap_or_else(|| panic!("ops/{stem}.json: no 'graph'"));
    let graph = graph::load_json(&serde_json::to_string_pretty(g).unwrap())
        .unwrap_or_else(|e| panic!("ops/{stem}.json, in 'graph': {e}"));
    let seed = match m.get("test_inputs") {
        None => GALLERY_SEED,
        Some(t) => t["seed"]
            .as_u64()
            .unwrap_or_else(|| panic!("ops/{stem}.json: test_inputs.seed must be an integer")),
    };
    OpCaseFile {
        graph,
        seed,
        expected: m.get("expected").cloned(),
    }
}

/// The per-op case `tests/graph/ops/<stem>.json`.
pub fn op_case(stem: &str) -> OpCaseFile {
    let path = repo_root().join(format!("tests/graph/ops/{stem}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_op_case(stem, &text)
}

/// Gallery models (an f32 variant of each, plus the model as written when it is not all
/// f32) and the per-op cases of tests/graph/ops/ (as written). A gallery case's expected
/// outputs are `tests/graph/expected/<case>.json`; a per-op case carries its own.
pub fn ref_cases() -> Vec<RefCase> {
    let root = repo_root();
    let gallery_expected =
        |name: &str| {
            let path = root.join(format!("tests/graph/expected/{name}.json"));
            match std::fs::read_to_string(&path) {
                Ok(text) => Ok(serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))),
                Err(_) => Err(format!("no expected outputs ({})", path.display())),
            }
        };
    let mut out = Vec::new();
    for (stem, text) in json_files(&root.join("examples/graphs")) {
        if PLANNING_ONLY.contains(&stem.as_str()) {
            continue;
        }
        let g = graph::load_json(&text).unwrap_or_else(|e| panic!("{stem}: {e}"));
        let name = format!("gallery.{stem}.f32");
        out.push(RefCase {
            expected: gallery_expected(&name),
            name,
            graph: float_variant(&g),
            precision: DType::F32,
            seed: GALLERY_SEED,
        });
        if let Some(p) = low_precision(&g) {
            let name = format!("gallery.{stem}.{}", p.name());
            out.push(RefCase {
                expected: gallery_expected(&name),
                name,
                graph: g,
                precision: p,
                seed: GALLERY_SEED,
            });
        }
    }
    for (stem, text) in json_files(&root.join("tests/graph/ops")) {
        let case = parse_op_case(&stem, &text);
        let g = case.graph;
        let precision = match low_precision(&g) {
            // Casts only round: the output is exact in f32.
            Some(_) if g.nodes.iter().all(|n| n.op == "Cast") => DType::F32,
            Some(p) => p,
            None => DType::F32,
        };
        out.push(RefCase {
            name: format!("op.{stem}"),
            graph: g,
            precision,
            seed: case.seed,
            expected: case.expected.ok_or_else(|| {
                format!(
                    "no 'expected' member in tests/graph/ops/{stem}.json \
                     (run tests/graph/make_expected.sh)"
                )
            }),
        });
    }
    out
}

/// A graph with its initializers materialised as literal data.
pub fn materialised(g: &Graph) -> Graph {
    let vals = g.initializer_tensors().unwrap();
    let mut g = g.clone();
    for i in &mut g.initializers {
        i.init = InitSpec::Data(vals[&i.name].data.clone());
    }
    g
}
