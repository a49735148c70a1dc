//! The working-set analysis and the simulator agree: for every gallery model that runs with
//! numbers and every runnable `tests/ktir/valid` program, the peak bytes of live tensor
//! values `ktir::working_set` predicts for each kernel are the peak the simulator charged
//! on any one core while that kernel ran.
//!
//! One difference is legitimate: a tensor of dynamic shape (`tensor<?x8xf32>`) is sized at
//! run time, from values the analysis does not have, and the analysis counts it as 0 bytes.
//! For kernels that hold one the prediction is a lower bound.

mod common;

use common::{args_for, dir, inputs_for};
use driver::{examples, ktir, run_ktir, run_pipeline, KtirRunOptions, PipelineOptions};

/// Whether a block defines a tensor of dynamic shape, nested regions included.
fn dynamic_tensors(b: &ktir::Block) -> bool {
    b.ops.iter().any(|op| {
        op.result_types
            .iter()
            .any(|t| matches!(t, ktir::Type::Tensor { .. }) && t.static_shape().is_none())
            || op.kind.regions().into_iter().any(dynamic_tensors)
    })
}

/// Every launch whose prediction is off: exact, or a lower bound for kernels with tensors
/// of dynamic shape.
fn mismatches(module: &ktir::Module, launched: &[String], observed: &[u64]) -> Vec<String> {
    assert_eq!(launched.len(), observed.len());
    launched
        .iter()
        .zip(observed)
        .filter_map(|(f, &seen)| {
            let func = module.func(f)?;
            let predicted = ktir::working_set::peak_live_bytes(func);
            let ok = if dynamic_tensors(&func.body) {
                predicted <= seen
            } else {
                predicted == seen
            };
            (!ok).then(|| format!("@{f}: predicted {predicted}, observed {seen}"))
        })
        .collect()
}

#[test]
fn the_analysis_predicts_the_simulators_peak_for_every_gallery_kernel() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for ex in examples() {
        let (text, launched, observed) = if ex.kind == "graph" {
            let Ok(r) = run_pipeline(ex.source, ex.name, &PipelineOptions::default()) else {
                continue;
            };
            let launched: Vec<String> = r
                .source_map
                .kernels
                .iter()
                .map(|k| k.func.clone())
                .collect();
            (r.ktir, launched, r.run.launch_peak_bytes)
        } else {
            let options = KtirRunOptions {
                seed: 1,
                ..KtirRunOptions::default()
            };
            let Ok((r, _)) = run_ktir(ex.source, &options) else {
                continue;
            };
            (ex.source.to_string(), r.functions, r.launch_peak_bytes)
        };
        let (module, _) = ktir::check(&text).expect("ran, so it verifies");
        for m in mismatches(&module, &launched, &observed) {
            failures.push(format!("{}: {m}", ex.name));
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} gallery examples ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_analysis_predicts_the_simulators_peak_for_every_corpus_kernel() {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".mlir"))
        .collect();
    names.sort();
    let mut checked = 0;
    let mut failures = Vec::new();
    for name in &names {
        let text = std::fs::read_to_string(dir().join(name)).unwrap();
        let options = KtirRunOptions {
            machine: driver::machine("spyre32").unwrap(),
            args: args_for(name, &text),
            inputs: inputs_for(name),
            seed: 42,
            ..KtirRunOptions::default()
        };
        let Ok((r, _)) = run_ktir(&text, &options) else {
            continue;
        };
        let (module, _) = ktir::check(&text).expect("ran, so it verifies");
        for m in mismatches(&module, &r.functions, &r.launch_peak_bytes) {
            failures.push(format!("{name}: {m}"));
        }
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} corpus programs ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
