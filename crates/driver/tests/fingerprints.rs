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

mod common;

use common::{args_for, dir, inputs_for};
use driver::{examples, run_ktir, run_pipeline, KtirRunOptions, PipelineOptions};
use std::fmt::Write as _;
use std::hash::{DefaultHasher, Hash, Hasher};

/// A stable hash of a value's `Debug` text (floats print exactly, shortest round trip).
fn hash_debug<T: std::fmt::Debug>(v: &T) -> u64 {
    let mut h = DefaultHasher::new();
    format!("{v:?}").hash(&mut h);
    h.finish()
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
                s.event_count(),
                hash_debug(&s.all_events().collect::<Vec<_>>()),
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
