//! End-to-end simulation benchmarks, reported in events per second
//! (`cargo bench -p driver --bench simulate`):
//!
//! - `llama_decoder_layer`: the small Llama-style layer with numbers: load, reference,
//!   compile, simulate and compare;
//! - `llama3_8b_layer/timing-only`: one real-size Llama 3.1 8B layer in timing-only mode:
//!   load, compile, simulate without numbers.
//!
//! Both run on spyre32. `npm run bench:sim` runs the same two workloads natively and in
//! WebAssembly side by side.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use driver::{examples, run_pipeline, PipelineOptions};
use std::hint::black_box;
use std::time::Duration;

fn source(name: &str) -> &'static str {
    examples()
        .into_iter()
        .find(|e| e.name == name)
        .map(|e| e.source)
        .unwrap_or_else(|| panic!("no gallery model '{name}'"))
}

fn workloads() -> Vec<(&'static str, &'static str, PipelineOptions)> {
    vec![
        (
            "llama_decoder_layer",
            "llama_decoder_layer",
            PipelineOptions::default(),
        ),
        (
            "llama3_8b_layer/timing-only",
            "llama3_8b_layer",
            PipelineOptions {
                timing_only: true,
                ..PipelineOptions::default()
            },
        ),
    ]
}

fn simulate_end_to_end(c: &mut Criterion) {
    let mut group = c.benchmark_group("end-to-end");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for (id, model, options) in workloads() {
        let src = source(model);
        let file = format!("{model}.json");
        let events = match run_pipeline(src, &file, &options) {
            Ok(r) => r.run.events_total,
            Err(e) => {
                eprintln!("end-to-end/{id}: does not run: {e}");
                continue;
            }
        };
        group.throughput(Throughput::Elements(events));
        group.bench_with_input(BenchmarkId::from_parameter(id), &options, |b, o| {
            b.iter(|| run_pipeline(black_box(src), &file, o))
        });
    }
    group.finish();
}

criterion_group!(benches, simulate_end_to_end);
criterion_main!(benches);
