//! Parse and verify a generated 10,000-line KTIR module (`cargo bench -p ktir`).

use criterion::{criterion_group, criterion_main, Criterion};
use std::fmt::Write;
use std::hint::black_box;

/// A module of `lines` lines or more: kernels of 1,000 lines each that load, compute,
/// reduce across tiles and store, with loops and branches.
pub fn big_module(lines: usize) -> String {
    let mut s = String::new();
    s.push_str("#m = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1023 >= 0, d1 >= 0, -d1 + 63 >= 0)>\n");
    s.push_str("#t = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>\n");
    s.push_str("#o = affine_map<(d0, d1) -> (d0, d1)>\n");
    s.push_str("#all = affine_set<(i)[g] : (i >= 0, -i + 31 >= 0)>\n");
    s.push_str("#one = affine_set<(g) : (g == 0)>\nmodule {\n");
    let mut k = 0;
    while s.lines().count() < lines {
        let _ = writeln!(
            s,
            "  func.func @k{k}(%a: index, %b: index) attributes {{grid = [32]}} {{"
        );
        s.push_str("    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n    %c8 = arith.constant 8 : index\n");
        s.push_str(
            "    %id = ktdp.get_compute_tile_id : index\n    %r = arith.muli %id, %c8 : index\n",
        );
        s.push_str("    %av = ktdp.construct_memory_view %a, sizes: [1024, 64], strides: [64, 1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<1024x64xf16>\n");
        s.push_str("    %bv = ktdp.construct_memory_view %b, sizes: [1024, 64], strides: [64, 1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<1024x64xf16>\n");
        s.push_str("    %at = ktdp.construct_access_tile %av[%r, %c0] {access_tile_set = #t, access_tile_order = #o} : memref<1024x64xf16> -> !ktdp.access_tile<8x64xindex>\n");
        s.push_str("    %bt = ktdp.construct_access_tile %bv[%r, %c0] {access_tile_set = #t, access_tile_order = #o} : memref<1024x64xf16> -> !ktdp.access_tile<8x64xindex>\n");
        s.push_str("    %x0 = ktdp.load %at : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>\n");
        s.push_str("    %acc = scf.for %i = %c0 to %c8 step %c1 iter_args(%v0 = %x0) -> (tensor<8x64xf16>) {\n");
        for j in 0..240 {
            let _ = writeln!(s, "      %e{j} = math.exp %v{j} : tensor<8x64xf16>");
            let _ = writeln!(
                s,
                "      %v{} = arith.addf %e{j}, %v{j} : tensor<8x64xf16>",
                j + 1
            );
        }
        s.push_str("      scf.yield %v240 : tensor<8x64xf16>\n    }\n");
        for j in 0..240 {
            let _ = writeln!(
                s,
                "    %t{j} = arith.mulf %acc, %acc : tensor<8x64xf16> loc(\"gen.py\":{j}:1)"
            );
            let _ = writeln!(s, "    // step {j}");
        }
        s.push_str("    %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<8x64xf16>), groups = #one> {\n    ^bb0(%g: index):\n      ktdp.yield_partial %t239 : tensor<8x64xf16>\n    }\n");
        s.push_str("    %z = arith.constant dense<0.0> : tensor<8x64xf16>\n");
        s.push_str("    %sum = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #all, identity(%z : tensor<8x64xf16>) : !ktdp.tile_future<(tensor<8x64xf16>), groups = #one> -> tensor<8x64xf16> {\n    ^bb0(%l: tensor<8x64xf16>, %rr: tensor<8x64xf16>):\n      %q = arith.addf %l, %rr : tensor<8x64xf16>\n      ktdp.yield_reduced %q : tensor<8x64xf16>\n    }\n");
        s.push_str("    ktdp.store %sum, %bt : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>\n    return\n  }\n");
        k += 1;
    }
    s.push_str("}\n");
    s
}

fn bench(c: &mut Criterion) {
    let text = big_module(10_000);
    let lines = text.lines().count();
    let (module, diags) = ktir::parse(&text);
    assert!(diags.is_empty(), "{diags:?}");
    assert!(ktir::verify(&module, &text).is_empty());
    let mut g = c.benchmark_group(format!("ktir_{lines}_lines"));
    g.sample_size(20);
    g.bench_function("parse", |b| b.iter(|| ktir::parse(black_box(&text))));
    g.bench_function("parse_and_verify", |b| {
        b.iter(|| {
            let (m, _) = ktir::parse(black_box(&text));
            ktir::verify(&m, &text)
        })
    });
    g.bench_function("print", |b| b.iter(|| ktir::print(black_box(&module))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
