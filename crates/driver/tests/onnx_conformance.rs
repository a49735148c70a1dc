//! ONNX's own backend node tests, run on the reference evaluator and on the simulated
//! device.
//!
//! The cases come from the `onnx` Python package that `scripts/setup.sh` installs into
//! `.venv/` (pinned there): `tests/graph/onnx_node_tests.py` writes them, in ONNX's test
//! layout, into a cache directory under the target directory (regenerated when the onnx
//! version changes). For every case whose inputs and outputs are tensors of the graph
//! crate's dtypes and whose ops the loader reads ("claimed"):
//!
//! 1. the model is loaded and the reference evaluator runs on ONNX's inputs; its outputs
//!    are compared with ONNX's expected outputs:
//!    - float outputs: `|ours - expected| <= atol + rtol * |expected|` with the case's own
//!      `rtol`/`atol` (ONNX's defaults are 1e-3 and 1e-7), raised to at least
//!      rtol 1e-3 / atol 1e-5 for f32 and rtol 4e-3 / atol 1e-3 for f16 (our evaluator
//!      computes each node in f32 and rounds its outputs; one f16 ulp near 1 is ~1e-3);
//!      equal infinities and NaNs in the same places match;
//!    - integer and bool outputs: exactly;
//! 2. when every op of the loaded graph has a device lowering, the model is compiled for
//!    spyre32, lowered to KTIR and simulated on the same inputs, and each simulated output
//!    (the run's `output_values`) is compared directly with ONNX's expected output (the
//!    case's `output_K.pb`): `|sim - expected| <= atol + rtol * |expected|` with the
//!    case's own `rtol`/`atol` raised to at least the looser of the two tolerances above
//!    ([`device_tolerance`]):
//!    - f32: rtol 1e-3, atol 1e-4 (the reference's rtol, the driver's atol);
//!    - f16: rtol 1e-2, atol 1e-2 (the driver's; the device computes f16 ops in f16, each
//!      step rounded, where the reference rounds only each node's result);
//!    - bf16: rtol 5e-2, atol 2e-2 (the driver's);
//!    - integer and bool outputs: exactly;
//!
//!    equal infinities and NaNs in the same places match. A case passes on the device when
//!    its reference passes and every simulated output of every data set is within that
//!    tolerance. The run also compares the simulated outputs with the reference at the
//!    driver's tolerance ([`driver::tolerance`]); the test prints how many device passes
//!    also pass that comparison, but it does not decide the outcome.
//!
//! A claimed case that fails must be in `tests/graph/onnx_skip.tsv` with its reason (a
//! reason starting `device:` marks a case that passes on the reference and fails on the
//! device, with its measured error when it runs), and a listed case that passes fails the
//! test (so the list stays true). The figures are printed.
//!
//! `SPYRE_SHOW_SKIPPED=1` prints what each listed case does now, and
//! `SPYRE_SHOW_UNCLAIMED=1` the unclaimed op sets and the ops not lowered.
//!
//! Without `.venv/` the test says so and passes as skipped, unless
//! `SPYRE_REQUIRE_ONNX_CONFORMANCE=1` (set by `scripts/test.sh`), which makes it fail.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use driver::compiler::ops::decomposition;
use driver::graph::{self, evaluate, load_onnx, load_tensor_proto, DType, Graph, OpKind, Tensor};
use driver::{run_pipeline, RunOptions};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Claimed cases that do not pass: `case<TAB>reason` lines (`#` starts a comment).
const SKIP: &str = include_str!("../../../tests/graph/onnx_skip.tsv");

/// Ops the device lowers whose ONNX node tests are expected to pass on the device: a
/// float case made only of these counts towards the 90% figure.
const DEVICE_OPS_NAMED: &[&str] = &[
    "And",
    "ArgMax",
    "ArgMin",
    "CastLike",
    "Ceil",
    "Elu",
    "Erf",
    "Floor",
    "Gemm",
    "GreaterOrEqual",
    "HardSigmoid",
    "HardSwish",
    "IsInf",
    "IsNaN",
    "LeakyRelu",
    "LessOrEqual",
    "LogSoftmax",
    "MatMul",
    "Mean",
    "Mod",
    "Not",
    "Or",
    "Pow",
    "ReduceL2",
    "ReduceLogSumExp",
    "ReduceMin",
    "ReduceProd",
    "Round",
    "Selu",
    "Sign",
    "Softmax",
    "Softsign",
    "Sum",
    "Xor",
];

/// Fewest ops with at least one case passing on the device.
const MIN_DEVICE_OPS: usize = 60;

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

/// How a case fared on the device, once its reference passed.
enum Device {
    /// An op of the loaded graph has no device lowering (named).
    NotLowered(String),
    /// Every simulated output is within [`device_tolerance`] of ONNX's; whether they are
    /// also within the driver's tolerance of the reference.
    Pass {
        matches_reference: bool,
    },
    Fail(String),
}

enum Outcome {
    /// The reference matches ONNX's outputs; the device's result.
    Pass(Device),
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

/// The reference's tolerance for ONNX's expected outputs: the case's own, raised to at
/// least rtol 1e-3 / atol 1e-5 (f32), 4e-3 / 1e-3 (f16), 2e-2 / 1e-2 (bf16); integer and
/// bool outputs exactly.
fn reference_tolerance(dtype: DType, rtol: f64, atol: f64) -> (f64, f64) {
    match dtype {
        DType::F32 => (rtol.max(1e-3), atol.max(1e-5)),
        DType::F16 => (rtol.max(4e-3), atol.max(1e-3)),
        DType::BF16 => (rtol.max(2e-2), atol.max(1e-2)),
        _ => (0.0, 0.0),
    }
}

/// The simulated device's tolerance for ONNX's expected outputs: the case's own, raised
/// to at least the looser of the reference's floor ([`reference_tolerance`]) and the
/// driver's tolerance for the simulated outputs against the reference
/// ([`driver::tolerance`]): f32 rtol 1e-3 / atol 1e-4, f16 1e-2 / 1e-2, bf16 5e-2 / 2e-2;
/// integer and bool outputs exactly.
fn device_tolerance(dtype: DType, rtol: f64, atol: f64) -> (f64, f64) {
    let (r0, a0) = reference_tolerance(dtype, rtol, atol);
    let (r1, a1) = driver::tolerance(dtype);
    (r0.max(r1), a0.max(a1))
}

/// Compares `got` with `want` elementwise at `rtol`/`atol`; the error names how many
/// elements are out, the largest absolute and relative errors over the finite ones, and
/// the first bad element.
fn compare(got: &Tensor, want: &Tensor, (rtol, atol): (f64, f64)) -> Result<(), String> {
    if got.dtype != want.dtype || got.shape != want.shape {
        return Err(format!(
            "got {}{:?}, expected {}{:?}",
            got.dtype, got.shape, want.dtype, want.shape
        ));
    }
    let bad = got
        .data
        .iter()
        .zip(&want.data)
        .enumerate()
        .filter(|(_, (g, w))| !close(**g, **w, rtol, atol))
        .collect::<Vec<_>>();
    let Some((i, (g, w))) = bad.first() else {
        return Ok(());
    };
    let (mut max_abs, mut max_rel) = (0f64, 0f64);
    for (g, w) in got.data.iter().zip(&want.data) {
        if g.is_finite() && w.is_finite() {
            let d = (f64::from(*g) - f64::from(*w)).abs();
            max_abs = max_abs.max(d);
            if w.abs() > 1e-6 {
                max_rel = max_rel.max(d / f64::from(w.abs()));
            }
        }
    }
    Err(format!(
        "{} of {} elements out of tolerance (rtol {rtol:e}, atol {atol:e}); max abs error {max_abs:.3e}, max rel error {max_rel:.3e}; first at {i}: {g} vs {w}",
        bad.len(),
        want.data.len()
    ))
}

fn read_pb(path: &Path) -> Result<(String, Tensor), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    load_tensor_proto(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// The inputs and expected outputs of data set `n` of a case.
type DataSet = (BTreeMap<String, Tensor>, Vec<Tensor>);

fn data_set(dir: &Path, g: &Graph, n: u64) -> Result<DataSet, String> {
    let ds = dir.join(format!("test_data_set_{n}"));
    let mut inputs = BTreeMap::new();
    for (k, vi) in g.inputs.iter().enumerate() {
        let (_, t) = read_pb(&ds.join(format!("input_{k}.pb")))?;
        inputs.insert(vi.name.clone(), t);
    }
    let outputs = (0..g.outputs.len())
        .map(|k| read_pb(&ds.join(format!("output_{k}.pb"))).map(|(_, t)| t))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((inputs, outputs))
}

/// The first op of `g` the device compiler does not lower, if any.
fn not_lowered(g: &Graph) -> Option<String> {
    if g.nodes.is_empty() {
        return Some("(no nodes: every output is folded at load time)".into());
    }
    g.nodes
        .iter()
        .find(|n| decomposition(&n.op).is_none())
        .map(|n| n.op.clone())
}

/// Compiles and simulates the case on every data set; each simulated output must match
/// ONNX's expected output within [`device_tolerance`].
fn run_on_device(bytes: &[u8], g: &Graph, sets: &[DataSet], rtol: f64, atol: f64) -> Device {
    let mut matches_reference = true;
    for (n, (inputs, wants)) in sets.iter().enumerate() {
        let options = RunOptions {
            inputs: inputs.clone(),
            ..RunOptions::default()
        };
        let r = match run_pipeline(bytes, "model.onnx", &options) {
            Ok(r) => r,
            Err(e) => {
                let msg = e.to_string();
                let first = msg.lines().next().unwrap_or("").to_string();
                return Device::Fail(format!("{}: {first}", e.stage));
            }
        };
        matches_reference &= r.run.passed;
        for (k, (name, want)) in g.outputs.iter().zip(wants).enumerate() {
            let Some(got) = r.run.output_values.get(name) else {
                return Device::Fail(format!(
                    "data set {n}: no simulated value for output '{name}'"
                ));
            };
            if let Err(m) = compare(got, want, device_tolerance(want.dtype, rtol, atol)) {
                return Device::Fail(format!(
                    "data set {n}, output {k} ('{name}') against ONNX's: {m}"
                ));
            }
        }
    }
    Device::Pass { matches_reference }
}

/// Loads and runs one case on every data set: the reference, then the device.
fn run_case(dir: &Path, entry: &Value, device_time: &mut Duration) -> Outcome {
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
    let mut sets = Vec::new();
    for n in 0..n_sets {
        let (inputs, wants) = match data_set(dir, &g, n) {
            Ok(s) => s,
            Err(e) => return Outcome::Fail(e),
        };
        let values = match evaluate(&g, &inputs) {
            Ok(v) => v,
            Err(e) => return Outcome::Fail(format!("evaluation: {e}")),
        };
        for (k, (name, want)) in g.outputs.iter().zip(&wants).enumerate() {
            let Some(got) = values.get(name) else {
                return Outcome::Fail(format!("no value for output '{name}'"));
            };
            if let Err(m) = compare(got, want, reference_tolerance(want.dtype, rtol, atol)) {
                return Outcome::Fail(format!("data set {n}, output {k} ('{name}'): {m}"));
            }
        }
        sets.push((inputs, wants));
    }
    if let Some(op) = not_lowered(&g) {
        return Outcome::Pass(Device::NotLowered(op));
    }
    let start = Instant::now();
    let device = run_on_device(&bytes, &g, &sets, rtol, atol);
    let took = start.elapsed();
    *device_time += took;
    if std::env::var("SPYRE_SHOW_SLOW").is_ok() && took > Duration::from_millis(500) {
        say(&format!(
            "  slow on the device: {:.2} s {}",
            took.as_secs_f64(),
            dir.display()
        ));
    }
    Outcome::Pass(device)
}

/// Writes a line to stderr past the test harness's capture, so `cargo test` shows the
/// figures (and a skip) without `--nocapture`.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[test]
fn onnx_node_tests_on_the_reference_and_the_device() {
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
    let (mut float_lowered, mut float_device) = (0, 0);
    let (mut other_lowered, mut other_device) = (0, 0);
    let (mut named_cases, mut named_device) = (0, 0);
    let mut float_device_off_reference = 0;
    let mut device_time = Duration::ZERO;
    let mut float_ops: BTreeSet<String> = BTreeSet::new();
    let mut passing_ops: BTreeSet<String> = BTreeSet::new();
    let mut device_ops: BTreeSet<String> = BTreeSet::new();
    let mut failures: Vec<String> = Vec::new();
    let mut stale_skips: Vec<String> = Vec::new();
    let mut unclaimed_float_load_fail: BTreeMap<String, usize> = BTreeMap::new();
    let mut not_lowered_ops: BTreeMap<String, usize> = BTreeMap::new();
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
        let named = float && ops.iter().all(|o| DEVICE_OPS_NAMED.contains(&o.as_str()));
        named_cases += usize::from(named);
        if float {
            n_float += 1;
            float_ops.extend(ops.iter().cloned());
        } else {
            n_other += 1;
        }
        let is_claimed = ops.iter().all(|o| claimed.contains(o));
        let outcome = run_case(&dir.join(name), entry, &mut device_time);
        let (loaded, passed) = match &outcome {
            Outcome::Pass(_) => (true, true),
            Outcome::Fail(_) => (true, false),
            Outcome::Load(_) => (false, false),
        };
        let (lowered, on_device) = match &outcome {
            Outcome::Pass(Device::Pass { matches_reference }) => {
                if float && !matches_reference {
                    float_device_off_reference += 1;
                }
                (true, true)
            }
            Outcome::Pass(Device::Fail(_)) => (true, false),
            Outcome::Pass(Device::NotLowered(op)) => {
                if float {
                    *not_lowered_ops.entry(op.clone()).or_default() += 1;
                }
                (false, false)
            }
            _ => (false, false),
        };
        named_device += usize::from(named && on_device);
        if float {
            float_load += usize::from(loaded);
            float_pass += usize::from(passed);
            float_lowered += usize::from(lowered);
            float_device += usize::from(on_device);
            if passed {
                passing_ops.extend(ops.iter().cloned());
            }
            if on_device {
                device_ops.extend(ops.iter().cloned());
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
            other_lowered += usize::from(lowered);
            other_device += usize::from(on_device);
        }
        if !is_claimed {
            continue;
        }
        let listed = skip.get(name).copied();
        let device_listed = listed.is_some_and(|r| r.starts_with("device:"));
        if listed.is_some() && std::env::var("SPYRE_SHOW_SKIPPED").is_ok() {
            // What each listed case does now, to keep the reasons in the list true.
            let now = match &outcome {
                Outcome::Pass(Device::Fail(m)) => format!("device: {m}"),
                Outcome::Pass(Device::NotLowered(op)) => format!("device: {op} is not lowered"),
                Outcome::Pass(Device::Pass { .. }) => "passes".to_string(),
                Outcome::Load(m) => format!("does not load: {m}"),
                Outcome::Fail(m) => m.clone(),
            };
            say(&format!("  listed: {name}\t{now}"));
        }
        match (&outcome, listed) {
            (Outcome::Pass(Device::Fail(m)), None) => {
                failures.push(format!("{name}: passes on the reference; device: {m}"))
            }
            (Outcome::Pass(Device::Fail(_)), Some(_)) if device_listed => {}
            (Outcome::Pass(_), Some(_)) => stale_skips.push(name.to_string()),
            (Outcome::Pass(_), None) => {}
            (_, Some(_)) if device_listed => failures.push(format!(
                "{name} is listed as failing on the device only, but fails on the reference"
            )),
            (_, Some(_)) => {}
            (Outcome::Load(m), None) => failures.push(format!("{name}: does not load: {m}")),
            (Outcome::Fail(m), None) => failures.push(format!("{name}: {m}")),
        }
    }
    let ops_passing = passing_ops.len();
    say(&format!(
        "ONNX conformance ({}): fp16/fp32 cases: {n_float}, {float_load} load, {float_pass} pass on the reference, \
         {float_lowered} have every op lowered, {float_device} pass on the device against ONNX's expected outputs \
         ({float_device_off_reference} of them outside the driver's tolerance of the reference); \
         ops with a passing case: {ops_passing} on the reference, {} on the device, of {} ops in those cases",
        dir.display(),
        device_ops.len(),
        float_ops.len()
    ));
    say(&format!(
        "ONNX conformance: cases with integer or bool tensors: {n_other}, {other_load} load, {other_pass} pass on the reference, \
         {other_lowered} have every op lowered, {other_device} pass on the device"
    ));
    say(&format!(
        "ONNX conformance: fp16/fp32 cases made only of the device ops the conformance work names: \
         {named_device} of {named_cases} pass on the device; compiling and simulating took {:.1} s",
        device_time.as_secs_f64()
    ));
    if std::env::var("SPYRE_SHOW_UNCLAIMED").is_ok() {
        let mut v: Vec<_> = unclaimed_float_load_fail.into_iter().collect();
        v.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        for (ops, n) in v {
            println!("  unclaimed: {n:4} {ops}");
        }
        for (op, n) in &not_lowered_ops {
            println!("  not lowered: {n:4} {op}");
        }
    }
    assert!(
        failures.is_empty(),
        "{} claimed ONNX node tests fail (fix them, or list them in tests/graph/onnx_skip.tsv with a reason; `device: ...` for a device-only failure):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        stale_skips.is_empty(),
        "these skipped ONNX node tests now pass; remove them from tests/graph/onnx_skip.tsv: {stale_skips:?}"
    );
    assert!(
        device_ops.len() >= MIN_DEVICE_OPS,
        "only {} ops have a case passing on the device (at least {MIN_DEVICE_OPS} expected)",
        device_ops.len()
    );
    assert!(
        named_device * 10 >= named_cases * 9,
        "only {named_device} of {named_cases} cases made of the named device ops pass on the device (90% expected)"
    );
}
