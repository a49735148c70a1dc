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

/// The inputs every reference comparison uses: [`graph::random_inputs`] with seed 42,
/// except that an integer input used as Gather indices is drawn uniformly from the
/// valid range `[0, n)` of the gathered axis (a second SplitMix64 stream, seed 43).
pub fn test_inputs(g: &Graph) -> BTreeMap<String, Tensor> {
    let mut ins = graph::random_inputs(g, 42).unwrap();
    let types = g.infer_types().unwrap();
    let mut rng = graph::SplitMix64::new(43);
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
    /// File name stem of the expected outputs in tests/graph/expected/.
    pub name: String,
    pub graph: Graph,
    /// Element type whose tolerance applies (F32 unless the graph computes in 16 bits).
    pub precision: DType,
}

/// Gallery models (an f32 variant of each, plus the model as written when it is not all
/// f32) and the per-op cases of tests/graph/ops/ (as written).
pub fn ref_cases() -> Vec<RefCase> {
    let root = repo_root();
    let mut out = Vec::new();
    for (stem, text) in json_files(&root.join("examples/graphs")) {
        if PLANNING_ONLY.contains(&stem.as_str()) {
            continue;
        }
        let g = graph::load_json(&text).unwrap_or_else(|e| panic!("{stem}: {e}"));
        out.push(RefCase {
            name: format!("gallery.{stem}.f32"),
            graph: float_variant(&g),
            precision: DType::F32,
        });
        if let Some(p) = low_precision(&g) {
            out.push(RefCase {
                name: format!("gallery.{stem}.{}", p.name()),
                graph: g,
                precision: p,
            });
        }
    }
    for (stem, text) in json_files(&root.join("tests/graph/ops")) {
        let g = graph::load_json(&text).unwrap_or_else(|e| panic!("{stem}: {e}"));
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
