//! Every gallery model through the whole pipeline: what runs must match the reference within
//! its dtype's tolerance, and what does not run yet must fail with the error that says why.
//! The expectations below are the gallery's status; a change in either direction fails.

use driver::{compile, examples, load_graph, run_pipeline, PipelineOptions};

/// Gallery models that do not simulate yet, with the reason their error must give.
const NOT_YET: &[(&str, &str)] = &[("llama3_8b_layer", "planning and timing only")];

#[test]
fn every_gallery_model_runs_or_says_why_not() {
    let options = PipelineOptions::default();
    let mut ran = Vec::new();
    for ex in examples().into_iter().filter(|e| e.kind == "graph") {
        let result = run_pipeline(ex.source, ex.name, &options);
        match NOT_YET.iter().find(|(n, _)| *n == ex.name) {
            Some((_, why)) => {
                let e = result
                    .err()
                    .unwrap_or_else(|| panic!("{} now runs: move it out of NOT_YET", ex.name));
                assert!(e.message.contains(why), "{}: {e}", ex.name);
            }
            None => {
                let r = result.unwrap_or_else(|e| panic!("{}: {e}", ex.name));
                assert!(r.run.passed, "{}: {:?}", ex.name, r.run.outputs);
                assert!(r.run.total_cycles > 0.0, "{}", ex.name);
                ran.push(ex.name);
            }
        }
    }
    assert!(ran.len() >= 10, "only {ran:?} ran");
}

#[test]
fn the_8b_layer_compiles_to_verified_ktir_for_planning() {
    let ex = examples()
        .into_iter()
        .find(|e| e.name == "llama3_8b_layer")
        .expect("gallery");
    let options = PipelineOptions::default();
    let graph = load_graph(ex.source, ex.name).unwrap();
    let c = compile(&graph, &options.machine, &options.compile).unwrap_or_else(|e| panic!("{e}"));
    let text = c.ktir.as_deref().expect("ktir");
    if let Err(d) = driver::ktir::check(text) {
        panic!("{}", driver::ktir::render_diagnostics("ktir", &d));
    }
    assert!(c.ops.len() > 20);
}

#[test]
fn every_gallery_ktir_program_runs_as_written() {
    let options = driver::KtirRunOptions {
        machine: driver::machine("spyre32").unwrap(),
        args: Default::default(),
        inputs: Default::default(),
        seed: 1,
        limits: Default::default(),
    };
    let programs: Vec<_> = examples()
        .into_iter()
        .filter(|e| e.kind == "ktir")
        .collect();
    assert!(programs.len() >= 5);
    for ex in programs {
        assert!(ex.name.ends_with(".mlir"), "{}", ex.name);
        assert!(!ex.description.is_empty(), "{} has no description", ex.name);
        let (r, _) =
            driver::run_ktir(ex.source, &options).unwrap_or_else(|e| panic!("{}: {e}", ex.name));
        assert!(r.total_cycles > 0.0, "{}", ex.name);
    }
}

#[test]
fn embedding_lookup_reads_the_rows_the_ids_name() {
    // Ids spread over the vocabulary (random integer inputs are all zero).
    let ex = examples()
        .into_iter()
        .find(|e| e.name == "tiny_two_layer")
        .expect("gallery");
    let graph = load_graph(ex.source, ex.name).unwrap();
    let ids = graph
        .inputs
        .iter()
        .find(|i| i.name == "input_ids")
        .expect("input_ids");
    let n: usize = ids.ty.shape.iter().product();
    let values: Vec<f32> = (0..n).map(|i| ((i * 37 + 5) % 200) as f32).collect();
    let mut options = PipelineOptions::default();
    options.inputs.insert(
        "input_ids".into(),
        driver::graph::Tensor::new(ids.ty.dtype, ids.ty.shape.clone(), values).unwrap(),
    );
    let r = run_pipeline(ex.source, ex.name, &options).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.run.passed, "{:?}", r.run.outputs);
    assert!(r.ktir.contains("ktdp.construct_indirect_access_tile"));
    // Naming an input the graph does not have is an error.
    options.inputs.insert(
        "nonesuch".into(),
        driver::graph::Tensor::new(ids.ty.dtype, vec![1], vec![0.0]).unwrap(),
    );
    assert!(run_pipeline(ex.source, ex.name, &options).is_err());
}
