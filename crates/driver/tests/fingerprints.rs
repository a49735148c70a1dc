//! Fingerprints of every gallery example and every `tests/ktir/valid` program, in both
//! execution domains: total cycles, event count and a hash of the full event list (and of the
//! numbers, where there are numbers). A refactor of the simulator that must not change
//! behaviour records them before and after and compares:
//!
//! ```text
//! FINGERPRINTS=/tmp/before.txt cargo test --release -p driver --test fingerprints -- --ignored
//! ```
//!
//! Ignored by default: it runs the real-size 8B layer, which wants a release build.

use driver::{examples, run_ktir, run_pipeline, KtirRunOptions, PipelineOptions};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ktir/valid")
}

/// A stable hash of a value's `Debug` text (floats print exactly, shortest round trip).
fn hash_debug<T: std::fmt::Debug>(v: &T) -> u64 {
    let mut h = DefaultHasher::new();
    format!("{v:?}").hash(&mut h);
    h.finish()
}

/// Scalar arguments a corpus program needs (`// ARGS:` header first, then the table the
/// corpus test uses).
fn args_for(name: &str, text: &str) -> BTreeMap<String, i64> {
    let mut args = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.trim().strip_prefix("// ARGS:") {
            for kv in rest.split_whitespace() {
                if let Some((k, v)) = kv.split_once('=') {
                    args.insert(k.to_string(), v.parse().expect("ARGS value"));
                }
            }
        }
    }
    let table: &[(&str, &[(&str, i64)])] = &[
        ("add_runtime_arg.mlir", &[("m", 96), ("n", 96)]),
        ("affine_structures.mlir", &[("n", 16)]),
        ("distributed_view_copy.mlir", &[("lx", 0)]),
        ("dynamic_access_tile.mlir", &[("rows", 5)]),
        ("indirect_two_dims.mlir", &[("len", 64)]),
        ("memory_space_spellings.mlir", &[("lx", 0)]),
        ("scratchpad_staging.mlir", &[("lx", 0)]),
        ("arith_ops.mlir", &[("a", 12), ("b", 3), ("x", 5), ("y", 2)]),
        ("scf_results.mlir", &[("n", 6)]),
        ("tensor_reshape.mlir", &[("n", 3), ("v", 2)]),
        ("runtime_arg_types.mlir", &[("a", 10), ("b", 20), ("c", 30)]),
    ];
    for (f, kv) in table {
        if *f == name {
            for (k, v) in kv.iter() {
                args.entry(k.to_string()).or_insert(*v);
            }
        }
    }
    args
}

/// Index buffers with valid contents, as the corpus test gives them.
fn inputs_for(name: &str) -> BTreeMap<String, Vec<f32>> {
    let mut m = BTreeMap::new();
    match name {
        "indirect_gather.mlir" => {
            m.insert(
                "idx".into(),
                (0..256).map(|i| ((i * 37 + 5) % 1000) as f32).collect(),
            );
        }
        "indirect_scatter.mlir" => {
            m.insert(
                "idx".into(),
                (0..64).map(|i| ((i * 7 + 3) % 512) as f32).collect(),
            );
        }
        "indirect_two_dims.mlir" => {
            m.insert(
                "i1a".into(),
                (0..192).map(|i| ((i * 5) % 64) as f32).collect(),
            );
            m.insert(
                "i2a".into(),
                (0..192).map(|i| ((i * 11 + 1) % 64) as f32).collect(),
            );
        }
        _ => {}
    }
    m
}

fn ktir_line(out: &mut String, label: &str, text: &str, options: &KtirRunOptions) {
    match run_ktir(text, options) {
        Ok((r, s)) => {
            let numbers: Vec<_> = r
                .buffers
                .iter()
                .map(|(b, v)| {
                    (
                        b.name.clone(),
                        v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "{label} cycles={} events={} events_hash={:016x} numbers_hash={:016x} assumptions={}",
                r.total_cycles,
                s.events.len(),
                hash_debug(&s.events),
                hash_debug(&numbers),
                r.assumptions.len()
            );
        }
        Err(e) => {
            let _ = writeln!(out, "{label} error={e}");
        }
    }
}

#[test]
#[ignore = "slow; run before and after a simulator refactor"]
fn record_fingerprints() {
    let mut out = String::new();
    for ex in examples() {
        for timing_only in [false, true] {
            let label = format!(
                "gallery {} {}",
                ex.name,
                if timing_only { "shapes" } else { "numbers" }
            );
            if ex.kind == "graph" {
                let options = PipelineOptions {
                    timing_only,
                    ..PipelineOptions::default()
                };
                match run_pipeline(ex.source, ex.name, &options) {
                    Ok(r) => {
                        let _ = writeln!(
                            out,
                            "{label} cycles={} events={} events_hash={:016x} outputs_hash={:016x} assumptions={}",
                            r.run.total_cycles,
                            r.run.events.len(),
                            hash_debug(&r.run.events),
                            hash_debug(&r.run.outputs),
                            r.run.assumptions.len()
                        );
                    }
                    Err(e) => {
                        let _ = writeln!(out, "{label} error={e}");
                    }
                }
            } else {
                let options = KtirRunOptions {
                    machine: driver::machine("spyre32").unwrap(),
                    seed: 1,
                    timing_only,
                    ..KtirRunOptions::default()
                };
                ktir_line(&mut out, &label, ex.source, &options);
            }
        }
    }
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".mlir"))
        .collect();
    names.sort();
    for name in &names {
        let text = std::fs::read_to_string(dir().join(name)).unwrap();
        for timing_only in [false, true] {
            let options = KtirRunOptions {
                machine: sim::Machine::preset("spyre32").unwrap(),
                args: args_for(name, &text),
                inputs: inputs_for(name),
                seed: 42,
                limits: sim::ExecLimits::default(),
                timing_only,
            };
            let label = format!(
                "corpus {name} {}",
                if timing_only { "shapes" } else { "numbers" }
            );
            ktir_line(&mut out, &label, &text, &options);
        }
    }
    if let Ok(path) = std::env::var("FINGERPRINTS") {
        std::fs::write(&path, &out).unwrap();
    }
    print!("{out}");
}
