//! Runs every program of `tests/ktir/run` with the inputs its header names and compares
//! each output it names with the checked-in `.npy` computed by numpy
//! (`tests/ktir/run/make_expected.py` regenerates them).
//!
//! Header lines: `// RUN-ARGS: name=value ...` (scalar arguments), `// RUN-INPUT: buffer =
//! FILE.npy` (contents of a buffer, shape-checked against it) and `// RUN-EXPECT: buffer =
//! FILE.npy` (an expected output). Buffers not named as inputs start from the driver's
//! seeded values; every program here names all it reads.
//!
//! Tolerances are those of `torch.testing.assert_close` for the output buffer's element
//! type: `|got - want| <= atol + rtol * |want|` with f32: atol 1e-5, rtol 1.3e-6; f16:
//! atol 1e-5, rtol 1e-3; bf16: atol 1e-5, rtol 1.6e-2; integer and index types: exact.

use driver::{npy, run_ktir, KtirRunOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ktir/run")
}

/// `(atol, rtol)` for an element type's name.
fn tolerance(elem: &str) -> (f64, f64) {
    match elem {
        "f32" | "f64" => (1e-5, 1.3e-6),
        "f16" => (1e-5, 1e-3),
        "bf16" => (1e-5, 1.6e-2),
        _ => (0.0, 0.0),
    }
}

/// The `KEY = FILE` pairs of every header line starting with `prefix`.
fn pairs(text: &str, prefix: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix(prefix))
        .filter_map(|rest| {
            let (k, v) = rest.split_once('=')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

fn args(text: &str) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.trim().strip_prefix("// RUN-ARGS:") {
            for kv in rest.split_whitespace() {
                let (k, v) = kv.split_once('=').expect("RUN-ARGS takes name=value");
                out.insert(k.to_string(), v.parse().expect("RUN-ARGS value"));
            }
        }
    }
    out
}

fn load(file: &str) -> npy::NpyArray {
    let p = dir().join(file);
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    npy::read(&bytes, 1 << 24).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Runs one program and returns a line per mismatch (empty when it matches).
fn check(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(dir().join(name)).unwrap();
    let args = args(&text);
    let specs = driver::buffers_of(&text, &args).unwrap_or_else(|e| panic!("{name}: {e}"));
    let spec = |b: &str| {
        specs
            .iter()
            .find(|s| s.name == b)
            .unwrap_or_else(|| panic!("{name}: no buffer '{b}'"))
            .clone()
    };
    let mut inputs = BTreeMap::new();
    for (b, file) in pairs(&text, "// RUN-INPUT:") {
        let a = load(&file);
        npy::check_shape(&a, &spec(&b)).unwrap_or_else(|e| panic!("{name}: {file}: {e}"));
        inputs.insert(b, a.data);
    }
    let expects = pairs(&text, "// RUN-EXPECT:");
    assert!(!expects.is_empty(), "{name}: no RUN-EXPECT line");
    let options = KtirRunOptions {
        machine: sim::Machine::preset("spyre32").unwrap(),
        args,
        inputs,
        seed: 1,
        ..KtirRunOptions::default()
    };
    let (r, _) = run_ktir(&text, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut bad = Vec::new();
    for (b, file) in expects {
        let want = load(&file);
        let s = spec(&b);
        npy::check_shape(&want, &s).unwrap_or_else(|e| panic!("{name}: {file}: {e}"));
        let got = &r.buffers.iter().find(|(x, _)| x.name == b).unwrap().1;
        let (atol, rtol) = tolerance(&s.elem);
        let mut wrong = 0;
        for (i, (g, w)) in got.iter().zip(&want.data).enumerate() {
            let (g, w) = (f64::from(*g), f64::from(*w));
            if (g - w).abs() > atol + rtol * w.abs() || g.is_nan() != w.is_nan() {
                if wrong < 3 {
                    bad.push(format!("{name}: {b}[{i}] = {g}, numpy says {w}"));
                }
                wrong += 1;
            }
        }
        if wrong > 0 {
            bad.push(format!("{name}: {b}: {wrong} of {} differ", got.len()));
        }
    }
    bad
}

#[test]
fn every_run_program_matches_numpy() {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".mlir"))
        .collect();
    names.sort();
    // The constructs the corpus must prove, each by its own program.
    for must in [
        "elementwise",
        "reductions",
        "matmul",
        "produce_document_spelling",
        "produce_dialect_spelling",
        "reduce_collapse",
        "view_ssa_sizes",
        "linalg_index",
        "paged_copy",
        "softmax",
        "layernorm",
        "rope",
    ] {
        assert!(names.contains(&format!("{must}.mlir")), "missing {must}");
    }
    let failures: Vec<String> = names.iter().flat_map(|n| check(n)).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_size_beyond_the_static_dimension_is_refused_at_run_time() {
    let text = std::fs::read_to_string(dir().join("view_ssa_sizes.mlir")).unwrap();
    let mut args = args(&text);
    args.insert("n".into(), 32);
    let options = KtirRunOptions {
        args,
        ..KtirRunOptions::default()
    };
    let e = run_ktir(&text, &options).unwrap_err().to_string();
    assert!(
        e.contains("does not fit the memref's static dimension 24"),
        "{e}"
    );
}
