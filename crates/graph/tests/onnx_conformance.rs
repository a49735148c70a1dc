//! ONNX's own backend node tests, run on the reference evaluator.
//!
//! The cases come from the `onnx` Python package that `scripts/setup.sh` installs into
//! `.venv/` (pinned there): `tests/graph/onnx_node_tests.py` writes them, in ONNX's test
//! layout, into a cache directory under the target directory (regenerated when the onnx
//! version changes). For every case whose inputs and outputs are tensors of this crate's
//! dtypes and whose ops the loader reads ("claimed"), the test loads the model, evaluates
//! it on ONNX's inputs and compares with ONNX's expected outputs:
//!
//! - float outputs: `|ours - expected| <= atol + rtol * |expected|` with the case's own
//!   `rtol`/`atol` (ONNX's defaults are 1e-3 and 1e-7), raised to at least
//!   rtol 1e-3 / atol 1e-5 for f32 and rtol 4e-3 / atol 1e-3 for f16 (our evaluator
//!   computes each node in f32 and rounds its outputs; one f16 ulp near 1 is ~1e-3);
//!   equal infinities and NaNs in the same places match;
//! - integer and bool outputs: exactly.
//!
//! A claimed case that fails must be in `tests/graph/onnx_skip.tsv` with its reason, and
//! a listed case that passes fails the test (so the list stays true). The figures are
//! printed.
//!
//! Without `.venv/` the test says so and passes as skipped, unless
//! `SPYRE_REQUIRE_ONNX_CONFORMANCE=1` (set by `scripts/test.sh`), which makes it fail.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use graph::{evaluate, load_onnx, load_tensor_proto, DType, OpKind, Tensor};
use serde_json::Value;

/// Claimed cases that do not pass: `case<TAB>reason` lines (`#` starts a comment).
const SKIP: &str = include_str!("../../../tests/graph/onnx_skip.tsv");

const REQUIRE_ENV: &str = "SPYRE_REQUIRE_ONNX_CONFORMANCE";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The cache directory, generated when missing or made by another onnx version.
fn cases_dir(python: &Path) -> Result<PathBuf, String> {
    let out = Command::new(python)
        .args(["-c", "import onnx; print(onnx.__version__)"])
        .output()
        .map_err(|e| format!("running {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!(
            "the Python environment has no onnx package: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("onnx-node-tests");
    let done = std::fs::read_to_string(dir.join("DONE")).unwrap_or_default();
    if done.trim() != version {
        eprintln!(
            "generating ONNX {version}'s node test cases into {}",
            dir.display()
        );
        let status = Command::new(python)
            .arg(repo_root().join("tests/graph/onnx_node_tests.py"))
            .arg(&dir)
            .status()
            .map_err(|e| format!("running the case generator: {e}"))?;
        if !status.success() {
            return Err(format!("the case generator failed ({status})"));
        }
    }
    Ok(dir)
}

/// Our dtype for an ONNX element type name.
fn dtype_of(name: &str) -> Option<DType> {
    Some(match name {
        "FLOAT" => DType::F32,
        "FLOAT16" => DType::F16,
        "BFLOAT16" => DType::BF16,
        "INT64" => DType::I64,
        "INT32" => DType::I32,
        "INT8" => DType::I8,
        "BOOL" => DType::Bool,
        _ => return None,
    })
}

/// Every ONNX op type (default domain, or `domain:op`) the loader reads.
fn claimed_ops() -> BTreeSet<String> {
    let mut s: BTreeSet<String> = graph::ONNX_FOLDED_OPS
        .iter()
        .map(|s| s.to_string())
        .collect();
    for &k in OpKind::ALL {
        let spec = k.spec();
        s.insert(spec.name.to_string());
        for n in spec.onnx {
            if n.domain.is_empty() {
                s.insert(n.op_type.to_string());
            } else {
                s.insert(format!("{}:{}", n.domain, n.op_type));
            }
        }
    }
    s
}

enum Outcome {
    Pass,
    Load(String),
    Fail(String),
}

fn close(got: f32, want: f32, rtol: f64, atol: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return want == got;
    }
    (f64::from(got) - f64::from(want)).abs() <= atol + rtol * f64::from(want).abs()
}

fn compare(got: &Tensor, want: &Tensor, rtol: f64, atol: f64) -> Result<(), String> {
    if got.dtype != want.dtype || got.shape != want.shape {
        return Err(format!(
            "got {}{:?}, expected {}{:?}",
            got.dtype, got.shape, want.dtype, want.shape
        ));
    }
    let (rtol, atol) = match want.dtype {
        DType::F32 => (rtol.max(1e-3), atol.max(1e-5)),
        DType::F16 => (rtol.max(4e-3), atol.max(1e-3)),
        DType::BF16 => (rtol.max(2e-2), atol.max(1e-2)),
        _ => (0.0, 0.0),
    };
    let bad = got
        .data
        .iter()
        .zip(&want.data)
        .enumerate()
        .filter(|(_, (g, w))| !close(**g, **w, rtol, atol))
        .collect::<Vec<_>>();
    match bad.first() {
        None => Ok(()),
        Some((i, (g, w))) => Err(format!(
            "{} of {} elements out of tolerance (rtol {rtol:e}, atol {atol:e}); first at {i}: {g} vs {w}",
            bad.len(),
            want.data.len()
        )),
    }
}

fn read_pb(path: &Path) -> Result<(String, Tensor), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    load_tensor_proto(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Loads and runs one case on every data set.
fn run_case(dir: &Path, entry: &Value) -> Outcome {
    let bytes = match std::fs::read(dir.join("model.onnx")) {
        Ok(b) => b,
        Err(e) => return Outcome::Load(e.to_string()),
    };
    let g = match load_onnx(&bytes) {
        Ok(g) => g,
        Err(e) => return Outcome::Load(e.to_string()),
    };
    let rtol = entry["rtol"].as_f64().unwrap_or(1e-3);
    let atol = entry["atol"].as_f64().unwrap_or(1e-7);
    let n_sets = entry["data_sets"].as_u64().unwrap_or(0);
    for n in 0..n_sets {
        let ds = dir.join(format!("test_data_set_{n}"));
        let mut inputs = BTreeMap::new();
        for (k, vi) in g.inputs.iter().enumerate() {
            match read_pb(&ds.join(format!("input_{k}.pb"))) {
                Ok((_, t)) => {
                    inputs.insert(vi.name.clone(), t);
                }
                Err(e) => return Outcome::Fail(e),
            }
        }
        let values = match evaluate(&g, &inputs) {
            Ok(v) => v,
            Err(e) => return Outcome::Fail(format!("evaluation: {e}")),
        };
        for (k, name) in g.outputs.iter().enumerate() {
            let want = match read_pb(&ds.join(format!("output_{k}.pb"))) {
                Ok((_, t)) => t,
                Err(e) => return Outcome::Fail(e),
            };
            let Some(got) = values.get(name) else {
                return Outcome::Fail(format!("no value for output '{name}'"));
            };
            if let Err(m) = compare(got, &want, rtol, atol) {
                return Outcome::Fail(format!("data set {n}, output {k} ('{name}'): {m}"));
            }
        }
    }
    Outcome::Pass
}

/// Writes a line to stderr past the test harness's capture, so `cargo test` shows the
/// figures (and a skip) without `--nocapture`.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[test]
fn onnx_node_tests_on_the_reference() {
    let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1");
    let python = repo_root().join(".venv/bin/python");
    if !python.exists() {
        let msg = format!(
            "ONNX conformance: SKIPPED: no Python environment at {} (run scripts/setup.sh to make it)",
            python.display()
        );
        assert!(!required, "{msg}; {REQUIRE_ENV}=1 requires it");
        say(&msg);
        return;
    }
    let dir = match cases_dir(&python) {
        Ok(d) => d,
        Err(m) => panic!("ONNX conformance: {m}"),
    };
    let manifest: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("manifest.json")).expect("manifest.json"),
    )
    .expect("manifest.json is JSON");
    let claimed = claimed_ops();
    let skip: BTreeMap<&str, &str> = SKIP
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split_once('\t').unwrap_or((l, "")))
        .collect();
    for (case, reason) in &skip {
        assert!(
            !reason.trim().is_empty(),
            "skip entry '{case}' gives no reason"
        );
    }
    let known: BTreeSet<&str> = manifest.iter().filter_map(|e| e["name"].as_str()).collect();
    let unknown: Vec<&&str> = skip.keys().filter(|c| !known.contains(**c)).collect();
    assert!(
        unknown.is_empty(),
        "skip entries name no ONNX node test: {unknown:?}"
    );

    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (mut n_float, mut n_other) = (0, 0);
    let (mut float_load, mut float_pass) = (0, 0);
    let (mut other_load, mut other_pass) = (0, 0);
    let mut float_ops: BTreeSet<String> = BTreeSet::new();
    let mut passing_ops: BTreeSet<String> = BTreeSet::new();
    let mut failures: Vec<String> = Vec::new();
    let mut stale_skips: Vec<&str> = Vec::new();
    let mut unclaimed_float_load_fail: BTreeMap<String, usize> = BTreeMap::new();
    for entry in &manifest {
        let name = entry["name"].as_str().unwrap_or("");
        let types: Vec<String> = [names(&entry["inputs"]), names(&entry["outputs"])].concat();
        if !entry["tensors_only"].as_bool().unwrap_or(false)
            || entry["data_sets"].as_u64().unwrap_or(0) == 0
            || !types.iter().all(|t| dtype_of(t).is_some())
        {
            continue;
        }
        let float = types.iter().all(|t| t == "FLOAT" || t == "FLOAT16");
        let ops = names(&entry["ops"]);
        if float {
            n_float += 1;
            float_ops.extend(ops.iter().cloned());
        } else {
            n_other += 1;
        }
        let is_claimed = ops.iter().all(|o| claimed.contains(o));
        let outcome = run_case(&dir.join(name), entry);
        let (loaded, passed) = match &outcome {
            Outcome::Pass => (true, true),
            Outcome::Fail(_) => (true, false),
            Outcome::Load(_) => (false, false),
        };
        if float {
            float_load += usize::from(loaded);
            float_pass += usize::from(passed);
            if passed {
                passing_ops.extend(ops.iter().cloned());
            }
            if !is_claimed {
                let missing = ops
                    .iter()
                    .filter(|o| !claimed.contains(*o))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("+");
                *unclaimed_float_load_fail.entry(missing).or_default() += 1;
            }
        } else {
            other_load += usize::from(loaded);
            other_pass += usize::from(passed);
        }
        if !is_claimed {
            continue;
        }
        match (&outcome, skip.contains_key(name)) {
            (Outcome::Pass, true) => stale_skips.push(name),
            (Outcome::Pass, false) | (_, true) => {}
            (Outcome::Load(m), false) => failures.push(format!("{name}: does not load: {m}")),
            (Outcome::Fail(m), false) => failures.push(format!("{name}: {m}")),
        }
    }
    let ops_passing = passing_ops.len();
    say(&format!(
        "ONNX conformance ({}): fp16/fp32 cases: {n_float}, {float_load} load, {float_pass} pass; \
         ops with a passing case: {ops_passing} of {} ops in those cases",
        dir.display(),
        float_ops.len()
    ));
    say(&format!(
        "ONNX conformance: cases with integer or bool tensors: {n_other}, {other_load} load, {other_pass} pass"
    ));
    if std::env::var("SPYRE_SHOW_UNCLAIMED").is_ok() {
        let mut v: Vec<_> = unclaimed_float_load_fail.into_iter().collect();
        v.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        for (ops, n) in v {
            println!("  unclaimed: {n:4} {ops}");
        }
    }
    assert!(
        failures.is_empty(),
        "{} claimed ONNX node tests fail (fix them, or list them in tests/graph/onnx_skip.tsv with a reason):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        stale_skips.is_empty(),
        "these skipped ONNX node tests now pass; remove them from tests/graph/onnx_skip.tsv: {stale_skips:?}"
    );
}
