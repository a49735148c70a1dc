//! KTIR kernels at the scale of the public KTIR examples, parsed, verified and run with
//! numbers on spyre32 (`cargo bench -p driver --bench ktir_kernels`): the interpreter's
//! speed on whole tiles, timing model included.
//!
//! - `softmax`: row softmax over 4096x1024 f16;
//! - `layernorm`: layer norm over 2304x4096 f16 (9.4 M elements), gamma and beta through a
//!   `linalg.generic`;
//! - `matmul`: 64x2048 by 2048x8192 f16 with an f32 accumulator;
//! - `rope`: rotary embedding of 32768 rows of 128 f16 features.
//!
//! The programs are in `bench/ktir/`. Each run takes about a second or more, so the
//! sample count is criterion's minimum.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use driver::{run_ktir, KtirRunOptions};
use std::hint::black_box;
use std::time::Duration;

const KERNELS: [(&str, &str); 4] = [
    ("softmax", include_str!("../../../bench/ktir/softmax.mlir")),
    (
        "layernorm",
        include_str!("../../../bench/ktir/layernorm.mlir"),
    ),
    ("matmul", include_str!("../../../bench/ktir/matmul.mlir")),
    ("rope", include_str!("../../../bench/ktir/rope.mlir")),
];

fn ktir_kernels(c: &mut Criterion) {
    let mut group = c.benchmark_group("ktir");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(5));
    let options = KtirRunOptions::default();
    for (name, text) in KERNELS {
        if let Err(e) = run_ktir(text, &options) {
            eprintln!("ktir/{name}: does not run: {e}");
            continue;
        }
        group.bench_with_input(BenchmarkId::from_parameter(name), text, |b, t| {
            b.iter(|| run_ktir(black_box(t), &options))
        });
    }
    group.finish();
}

criterion_group!(benches, ktir_kernels);
criterion_main!(benches);
