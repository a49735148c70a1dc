//! The reference evaluator against onnxruntime.
//!
//! Cases: every gallery model (an f32 variant, plus the model as written when it computes
//! in 16 bits) and every per-op case of `tests/graph/ops/`. The expected outputs are
//! computed once by onnxruntime from the ONNX files that `export_for_onnxruntime` (an
//! ignored test) writes: a per-op case file holds its graph, its inputs' seed and
//! onnxruntime's outputs together; a gallery case's outputs are
//! `tests/graph/expected/<case>.json`. `tests/graph/README.md` says how to recompute them.
//!
//! Tolerances (per element, `|ours - ort| <= rtol * |ort| + atol`):
//! - f32: rtol 1e-4, atol 1e-4 x the largest magnitude of that output (so "1e-4
//!   relative", measured against the output's scale where an element is near zero);
//! - f16: rtol 1e-2, atol 1e-2 x the largest magnitude (onnxruntime's fp16 kernels
//!   round differently inside an op, one f16 ulp is ~1e-3);
//! - bf16: rtol 2e-2, atol 2e-2 x the largest magnitude.
//!
//! Integer and bool outputs must match exactly.

mod common;

use std::collections::BTreeMap;

use common::*;
use graph::{evaluate, DType, Tensor, SUPPORTED_OPS};
use serde_json::Value;

fn tolerance(p: DType) -> f64 {
    match p {
        DType::F32 => 1e-4,
        DType::F16 => 1e-2,
        _ => 2e-2,
    }
}

fn number(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "nan" => f64::NAN,
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        v => v.as_f64().expect("a number"),
    }
}

/// Compares one output; returns a description of the worst element when out of tolerance.
fn compare(got: &Tensor, want: &Value, tol: f64) -> Result<f64, String> {
    let shape: Vec<usize> = want["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    if got.shape != shape {
        return Err(format!("shape {:?} vs onnxruntime {:?}", got.shape, shape));
    }
    let want: Vec<f64> = want["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| number(v) as f32 as f64)
        .collect();
    let exact = !got.dtype.is_float();
    let scale = want
        .iter()
        .filter(|w| w.is_finite())
        .fold(0.0f64, |m, w| m.max(w.abs()));
    let mut worst = 0.0f64;
    for (i, (&g, &w)) in got.data.iter().zip(&want).enumerate() {
        let g = f64::from(g);
        if g.is_nan() && w.is_nan() || g == w {
            continue;
        }
        let d = (g - w).abs();
        let allowed = if exact {
            0.0
        } else {
            tol * w.abs() + tol * scale
        };
        if d.is_nan() || d > allowed {
            return Err(format!(
                "element {i}: ours {g}, onnxruntime {w} (|diff| {d:.3e} > allowed {allowed:.3e})"
            ));
        }
        if scale > 0.0 {
            worst = worst.max(d / scale);
        }
    }
    Ok(worst)
}

#[test]
fn evaluator_matches_onnxruntime() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in ref_cases() {
        let expected = match &case.expected {
            Ok(e) => e,
            Err(m) => {
                failures.push(format!("{}: {m}", case.name));
                continue;
            }
        };
        if let Some(reason) = expected.get("skipped") {
            failures.push(format!(
                "{}: onnxruntime could not run it: {reason}",
                case.name
            ));
            continue;
        }
        let inputs = test_inputs(&case.graph, case.seed);
        let values = match evaluate(&case.graph, &inputs) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{}: {e}", case.name));
                continue;
            }
        };
        let tol = tolerance(case.precision);
        let outs = expected["outputs"].as_array().unwrap();
        assert_eq!(outs.len(), case.graph.outputs.len(), "{}", case.name);
        for (name, want) in case.graph.outputs.iter().zip(outs) {
            assert_eq!(want["name"].as_str(), Some(name.as_str()), "{}", case.name);
            match compare(&values[name], want, tol) {
                Ok(worst) => {
                    if std::env::var_os("SPYRE_SHOW_ERRORS").is_some() {
                        eprintln!(
                            "{:<48} {name:<8} max |diff| / scale = {worst:.2e}",
                            case.name
                        );
                    }
                }
                Err(m) => failures.push(format!("{} output '{name}': {m}", case.name)),
            }
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 80, "only {checked} outputs checked");
}

#[test]
fn every_supported_op_has_an_onnxruntime_case() {
    let cases = ref_cases();
    let mut missing = Vec::new();
    for op in SUPPORTED_OPS {
        if !cases
            .iter()
            .any(|c| c.name.starts_with("op.") && c.graph.nodes.iter().any(|n| n.op == *op))
        {
            missing.push(*op);
        }
    }
    assert!(
        missing.is_empty(),
        "ops without a per-op case in tests/graph/ops: {missing:?}"
    );
}

#[test]
fn planning_only_models_load_and_infer_but_are_not_evaluated() {
    for name in PLANNING_ONLY {
        let path = repo_root().join(format!("examples/graphs/{name}.json"));
        let g = graph::load_json(&std::fs::read_to_string(path).unwrap()).unwrap();
        let types = g.infer_types().unwrap();
        let work = graph::eval_work(&g, &types);
        assert!(work > graph::MAX_EVAL_WORK, "{name}: work {work}");
        let e = evaluate(&g, &BTreeMap::new()).unwrap_err();
        assert!(e.message.contains("planning"), "{e}");
        let e = g.initializer_tensors().unwrap_err();
        assert!(e.message.contains("planning"), "{e}");
        let e = graph::to_onnx(&g).unwrap_err();
        assert!(e.message.contains("planning"), "{e}");
    }
}

/// Writes every reference case as `<case>.onnx` plus `<case>.inputs.json` into
/// `$SPYRE_ORT_DIR` (default: `<tmp>/spyre-ort-cases`) for tests/graph/make_expected.py.
#[test]
#[ignore = "run by tests/graph/make_expected.sh"]
fn export_for_onnxruntime() {
    let dir = std::env::var_os("SPYRE_ORT_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("spyre-ort-cases"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut n = 0;
    for case in ref_cases() {
        let bytes = graph::to_onnx(&case.graph).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        std::fs::write(dir.join(format!("{}.onnx", case.name)), bytes).unwrap();
        let inputs = test_inputs(&case.graph, case.seed);
        let ins: serde_json::Map<String, Value> = case
            .graph
            .inputs
            .iter()
            .map(|vi| {
                let t = &inputs[&vi.name];
                (
                    vi.name.clone(),
                    serde_json::json!({
                        "dtype": t.dtype.name(),
                        "shape": t.shape,
                        "data": t.data,
                    }),
                )
            })
            .collect();
        let manifest = serde_json::json!({
            "case": case.name,
            "inputs": ins,
            "outputs": case.graph.outputs,
        });
        std::fs::write(
            dir.join(format!("{}.inputs.json", case.name)),
            serde_json::to_string(&manifest).unwrap(),
        )
        .unwrap();
        n += 1;
    }
    eprintln!("wrote {n} cases to {}", dir.display());
}

#[test]
fn gallery_models_load_have_a_one_line_description_and_write_back_losslessly() {
    let files = json_files(&repo_root().join("examples/graphs"));
    assert!(files.len() >= 13, "{} gallery models", files.len());
    for (stem, text) in files {
        let g = graph::load_json(&text).unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert_eq!(g.name, stem, "the graph's name is its file name");
        assert!(
            !g.description.is_empty() && !g.description.contains('\n'),
            "{stem}: needs a one-line description"
        );
        g.infer_types().unwrap_or_else(|e| panic!("{stem}: {e}"));
        let back = graph::load_json(&graph::to_json(&g)).unwrap();
        assert_eq!(back, g, "{stem}");
    }
}

/// A graph that uses every kind of object the format has: each is probed below.
const SCHEMA_PROBE: &str = r#"{
  "format": "spyre-graph", "version": 1, "name": "probe", "description": "d",
  "inputs": [{"name": "a", "dtype": "f32", "shape": [2]}],
  "initializers": [
    {"name": "u", "dtype": "f32", "shape": [2], "init": {"uniform": {"seed": 1, "low": 0, "high": 1}}},
    {"name": "v", "dtype": "f32", "shape": [2], "init": {"normal": {"seed": 1, "mean": 0, "std": 1}}}
  ],
  "nodes": [{"name": "add", "op": "Add", "inputs": ["a", "u"], "outputs": ["y"], "attrs": {}}],
  "outputs": ["y"]
}"#;

/// The fields the loader accepts in the object at `pointer` of [`SCHEMA_PROBE`], asked of
/// the loader itself: an unknown field is reported with the list of allowed ones.
fn loader_fields(pointer: &str) -> Vec<String> {
    let mut probe: Value = serde_json::from_str(SCHEMA_PROBE).unwrap();
    probe
        .pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no object at '{pointer}' of the probe"))
        .insert("zz_not_a_field".into(), Value::Null);
    let e = graph::load_json(&probe.to_string()).unwrap_err();
    let list = e
        .message
        .split_once("(expected one of: ")
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("at '{pointer}': {e}"));
    let mut fields: Vec<String> = list.split(", ").map(str::to_string).collect();
    fields.sort();
    fields
}

/// The loader's error when the field `key` of the object at `pointer` is left out, if any.
fn without_field(pointer: &str, key: &str) -> Option<String> {
    let mut probe: Value = serde_json::from_str(SCHEMA_PROBE).unwrap();
    probe
        .pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .unwrap()
        .remove(key);
    graph::load_json(&probe.to_string())
        .err()
        .map(|e| e.message)
}

/// The schema is for editors and other tools; the loader is the authority. Op names are
/// deliberately not enumerated in it (docs/ops.md, generated from the op table, lists
/// them), so this checks what the schema does state: it is valid JSON Schema 2020-12, it
/// names exactly the fields the loader reads in every object and marks the same ones
/// required, it rejects unknown fields as the loader does, its dtypes are the loader's,
/// and the `op` field is a string that points at docs/ops.md.
#[test]
fn the_json_schema_describes_what_the_loader_reads() {
    let root = repo_root();
    let text = std::fs::read_to_string(root.join("docs/graph-format.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).expect("the schema is valid JSON");
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    graph::load_json(SCHEMA_PROBE).expect("the probe graph loads");

    let defs = &schema["$defs"];
    let init_form = |name: &str| {
        defs["init"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|form| form["properties"].get(name))
            .unwrap_or_else(|| panic!("no '{name}' form of init in the schema"))
            .clone()
    };
    // (pointer into the probe, the schema of that object)
    let objects: Vec<(&str, Value)> = vec![
        ("", schema.clone()),
        ("/inputs/0", defs["valueInfo"].clone()),
        ("/initializers/0", defs["initializer"].clone()),
        ("/initializers/0/init/uniform", init_form("uniform")),
        ("/initializers/1/init/normal", init_form("normal")),
        ("/nodes/0", defs["node"].clone()),
    ];
    for (pointer, object) in &objects {
        let at = if pointer.is_empty() {
            "the graph"
        } else {
            pointer
        };
        assert_eq!(
            object["additionalProperties"],
            Value::Bool(false),
            "{at}: the loader rejects unknown fields, so must the schema"
        );
        let mut fields: Vec<String> = object["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{at}: no properties in the schema"))
            .keys()
            .cloned()
            .collect();
        fields.sort();
        assert_eq!(fields, loader_fields(pointer), "{at}: fields");
        let required: Vec<&str> = object["required"]
            .as_array()
            .unwrap_or_else(|| panic!("{at}: no required list in the schema"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for field in &fields {
            let missing = without_field(pointer, field)
                .is_some_and(|m| m.contains(&format!("missing field '{field}'")));
            assert_eq!(
                missing,
                required.contains(&field.as_str()),
                "{at}: field '{field}' is required by {} but not by {}",
                if missing { "the loader" } else { "the schema" },
                if missing { "the schema" } else { "the loader" },
            );
        }
    }

    let dtypes: Vec<&str> = defs["dtype"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(dtypes, DType::ALL.map(|d| d.name()));

    let op = &defs["node"]["properties"]["op"];
    assert_eq!(op["type"], "string", "{op}");
    assert!(
        op.get("enum").is_none(),
        "op names are listed in docs/ops.md only"
    );
    let about = op["description"].as_str().unwrap_or_default();
    assert!(about.contains("docs/ops.md"), "{about}");
    assert!(root.join("docs/ops.md").is_file());
}
