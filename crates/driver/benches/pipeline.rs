//! Pipeline benchmarks: compiling every gallery model through all passes, and simulating
//! the ones the simulator runs. `cargo bench -p driver` prints the figures.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use driver::{compile, examples, load_graph, simulate, PipelineOptions};
use std::hint::black_box;
use std::time::Duration;

fn compile_gallery(c: &mut Criterion) {
    let options = PipelineOptions::default();
    let mut group = c.benchmark_group("compile");
    group.measurement_time(Duration::from_secs(3));
    for ex in examples() {
        let Ok(graph) = load_graph(ex.source, ex.name) else {
            continue;
        };
        if compile(&graph, &options.machine, &options.compile).is_err() {
            eprintln!("compile/{}: does not compile yet, skipped", ex.name);
            continue;
        }
        group.bench_with_input(BenchmarkId::from_parameter(ex.name), &graph, |b, g| {
            b.iter(|| compile(black_box(g), &options.machine, &options.compile))
        });
    }
    group.finish();
}

fn simulate_gallery(c: &mut Criterion) {
    let options = PipelineOptions::default();
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    for ex in examples() {
        let Ok(graph) = load_graph(ex.source, ex.name) else {
            continue;
        };
        let Ok(compiled) = compile(&graph, &options.machine, &options.compile) else {
            continue;
        };
        if simulate(&compiled, &options).is_err() {
            eprintln!("simulate/{}: does not simulate yet, skipped", ex.name);
            continue;
        }
        group.bench_with_input(BenchmarkId::from_parameter(ex.name), &compiled, |b, c| {
            b.iter(|| simulate(black_box(c), &options))
        });
    }
    group.finish();
}

criterion_group!(benches, compile_gallery, simulate_gallery);
criterion_main!(benches);
