//! Inter-tile collectives and the newer ops: K-split matmuls combined with
//! `inter_tile_reduce` (all-reduce and reduce-to-one), consume routing, deadlocks, scf.if
//! with results, general regions, and the byte-addressed scratchpad.

use sim::timing::{schedule, Limits, Unit, Work};
use sim::{ExecLimits, KernelValue, LineLookup, Machine, Simulator};

mod common;
use common::module;

fn data(n: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32) * 2.0 - 1.0
        })
        .collect()
}

/// C[32x16] = A[32x64] B[64x16] on 8 cores: group g (rows 8g..8g+8) is split over K
/// between cores 2g (k < 32) and 2g+1 (k >= 32); the pair's partials are combined with
/// inter_tile_reduce and the even core stores the rows. `CONSUMERS` picks all-reduce or
/// reduce-to-one.
const KSPLIT: &str = r#"
#pair = affine_set<(i)[g] : (i - 2 * g >= 0, -i + 2 * g + 1 >= 0)>
#even = affine_set<(i)[g] : (i - 2 * g == 0)>
#groups = affine_set<(g) : (g >= 0, -g + 3 >= 0)>
#a = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#b = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#c = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#at = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#bt = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#ct = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @ksplit(%a: index, %b: index, %c: index) attributes {grid = [8]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %id = ktdp.get_compute_tile_id : index
    %g = arith.divsi %id, %c2 : index
    %half = arith.remsi %id, %c2 : index
    %row = arith.muli %g, %c8 : index
    %k0 = arith.muli %half, %c32 : index
    %av = ktdp.construct_memory_view %a, sizes: [32, 64], strides: [64, 1] {coordinate_set = #a, memory_space = #ktdp.memory_space<global>} : memref<32x64xf32>
    %bv = ktdp.construct_memory_view %b, sizes: [64, 16], strides: [16, 1] {coordinate_set = #b, memory_space = #ktdp.memory_space<global>} : memref<64x16xf32>
    %cv = ktdp.construct_memory_view %c, sizes: [32, 16], strides: [16, 1] {coordinate_set = #c, memory_space = #ktdp.memory_space<global>} : memref<32x16xf32>
    %at = ktdp.construct_access_tile %av[%row, %k0] {access_tile_set = #at, access_tile_order = #ord} : memref<32x64xf32> -> !ktdp.access_tile<8x32xindex>
    %bt = ktdp.construct_access_tile %bv[%k0, %c0] {access_tile_set = #bt, access_tile_order = #ord} : memref<64x16xf32> -> !ktdp.access_tile<32x16xindex>
    %x = ktdp.load %at : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf32>
    %y = ktdp.load %bt : !ktdp.access_tile<32x16xindex> -> tensor<32x16xf32>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
    %p = linalg.matmul ins(%x, %y : tensor<8x32xf32>, tensor<32x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #pair -> !ktdp.tile_future<(tensor<8x16xf32>), groups = #groups> {
    ^bb0(%gid: index):
      ktdp.yield_partial %p : tensor<8x16xf32>
    }
    %sum = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = CONSUMERS, identity(%z : tensor<8x16xf32>) : !ktdp.tile_future<(tensor<8x16xf32>), groups = #groups> -> tensor<8x16xf32> {
    ^bb0(%l: tensor<8x16xf32>, %r: tensor<8x16xf32>):
      %s = arith.addf %l, %r : tensor<8x16xf32>
      ktdp.yield_reduced %s : tensor<8x16xf32>
    }
    %is_even = arith.cmpi eq, %half, %c0 : index
    scf.if %is_even {
      %ct = ktdp.construct_access_tile %cv[%row, %c0] {access_tile_set = #ct, access_tile_order = #ord} : memref<32x16xf32> -> !ktdp.access_tile<8x16xindex>
      ktdp.store %sum, %ct : tensor<8x16xf32>, !ktdp.access_tile<8x16xindex>
    }
    return
  }
}
"#;

fn run_ksplit(consumers: &str) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<sim::timing::Task>, f64) {
    let text = KSPLIT.replace("CONSUMERS", consumers);
    let m = module(&text);
    let machine = Machine::preset("spyre32").unwrap();
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    let (a, b) = (data(32 * 64, 1), data(64 * 16, 2));
    let ba = sim.alloc("a", ktir::ScalarType::F32, a.clone()).unwrap();
    let bb = sim.alloc("b", ktir::ScalarType::F32, b.clone()).unwrap();
    let bc = sim
        .alloc("c", ktir::ScalarType::F32, vec![0.0; 32 * 16])
        .unwrap();
    sim.launch(&m, &LineLookup::new(&text), "ksplit", &[ba, bb, bc])
        .unwrap();
    let c = sim.buffer("c").unwrap().data.clone();
    let sched = schedule(&machine, sim.tasks(), &Limits::default()).unwrap();
    (a, b, c, sim.tasks().to_vec(), sched.total_cycles)
}

fn check_product(a: &[f32], b: &[f32], c: &[f32]) {
    for i in 0..32 {
        for j in 0..16 {
            let want: f32 = (0..64).map(|k| a[i * 64 + k] * b[k * 16 + j]).sum();
            assert!((c[i * 16 + j] - want).abs() < 1e-4, "c[{i}][{j}]");
        }
    }
}

#[test]
fn k_split_all_reduce_over_adjacent_pairs() {
    let (a, b, c, tasks, cycles) = run_ksplit("#pair");
    check_product(&a, &b, &c);
    let machine = Machine::preset("spyre32").unwrap();
    let reduce: Vec<_> = tasks
        .iter()
        .filter(|t| t.op == "ktdp.inter_tile_reduce")
        .collect();
    // Per pair: reduce-scatter (2 half-size sends + 2 combines) and all-gather (2 sends).
    let sends: Vec<_> = reduce.iter().filter(|t| t.unit == Unit::Dma).collect();
    let combines = reduce
        .iter()
        .filter(|t| t.unit == Unit::Sfp && t.work != Work::Compute { cycles: 0 })
        .count();
    assert_eq!(sends.len(), 4 * 4, "{reduce:?}");
    assert_eq!(combines, 4 * 2);
    for t in &sends {
        let Work::Transfer {
            src_stop,
            dst_stop,
            bytes,
            ..
        } = t.work
        else {
            panic!()
        };
        assert_eq!(bytes, 8 * 16 * 4 / 2);
        let pair = t.core / 2;
        let stops = [machine.core_stop(2 * pair), machine.core_stop(2 * pair + 1)];
        assert!(stops.contains(&src_stop) && stops.contains(&dst_stop) && src_stop != dst_stop);
    }
    assert!(cycles > 0.0);
}

#[test]
fn k_split_reduce_to_one_is_a_single_transfer_per_pair() {
    let (a, b, c, tasks, _) = run_ksplit("#even");
    check_product(&a, &b, &c);
    let machine = Machine::preset("spyre32").unwrap();
    let reduce: Vec<_> = tasks
        .iter()
        .filter(|t| t.op == "ktdp.inter_tile_reduce")
        .collect();
    let sends: Vec<_> = reduce.iter().filter(|t| t.unit == Unit::Dma).collect();
    assert_eq!(sends.len(), 4);
    for t in &sends {
        assert_eq!(t.core % 2, 1, "the odd core sends");
        let Work::Transfer {
            src_stop,
            dst_stop,
            bytes,
            ..
        } = t.work
        else {
            panic!()
        };
        assert_eq!(bytes, 8 * 16 * 4);
        assert_eq!(src_stop, machine.core_stop(t.core));
        assert_eq!(dst_stop, machine.core_stop(t.core - 1));
    }
    // The leader's store waits for the combine, which waits for the transfer.
    let combine = tasks
        .iter()
        .position(|t| t.op == "ktdp.inter_tile_reduce" && t.unit == Unit::Sfp && t.core == 0)
        .unwrap();
    let store = tasks
        .iter()
        .position(|t| t.op == "ktdp.store" && t.core == 0)
        .unwrap();
    assert!(tasks[store].deps.contains(&combine), "{:?}", tasks[store]);
}

#[test]
fn skipping_a_collective_is_a_deadlock_naming_cores_and_op() {
    let text = r#"
#all = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
#one = affine_set<(g) : (g == 0)>
func.func @dl(%v: tensor<4xf32>) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %id = ktdp.get_compute_tile_id : index
  %z = arith.constant dense<0.0> : tensor<4xf32>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<4xf32>), groups = #one> {
  ^bb0(%g: index):
    ktdp.yield_partial %v : tensor<4xf32>
  }
  %is0 = arith.cmpi eq, %id, %c0 : index
  scf.if %is0 {
    %s = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #all, identity(%z : tensor<4xf32>) : !ktdp.tile_future<(tensor<4xf32>), groups = #one> -> tensor<4xf32> {
    ^bb0(%l: tensor<4xf32>, %r: tensor<4xf32>):
      %a = arith.addf %l, %r : tensor<4xf32>
      ktdp.yield_reduced %a : tensor<4xf32>
    }
  }
  return
}
"#;
    let checked = ktir::check(text);
    let Ok((m, _)) = checked else {
        // The verifier may reject a future used inside a region; nothing to run then.
        return;
    };
    let machine = Machine::preset("tiny4").unwrap();
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    let e = sim
        .launch_values(
            &m,
            &LineLookup::new(text),
            "dl",
            &[KernelValue::Tensor {
                shape: vec![4],
                data: vec![1.0; 4],
            }],
        )
        .unwrap_err();
    let s = e.to_string();
    assert!(s.contains("deadlock"), "{s}");
    assert!(s.contains("ktdp.inter_tile_reduce"), "{s}");
    assert!(
        s.contains("core 0 waits") && s.contains("core 1 has finished"),
        "{s}"
    );
    assert_eq!(e.core, Some(0));
}

#[test]
fn consume_routes_rows_between_cores() {
    let text = r#"
#prod = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
#cons = affine_set<(i)[g] : (i - 2 >= 0, -i + 3 >= 0)>
#pair = affine_set<(p)[c] : (p - c + 2 == 0)>
#one = affine_set<(g) : (g == 0)>
#m = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#r = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 15 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
func.func @route(%x: index, %y: index) attributes {grid = [4]} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %id = ktdp.get_compute_tile_id : index
  %xv = ktdp.construct_memory_view %x, sizes: [4, 16], strides: [16, 1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<4x16xf32>
  %yv = ktdp.construct_memory_view %y, sizes: [4, 16], strides: [16, 1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<4x16xf32>
  %xt = ktdp.construct_access_tile %xv[%id, %c0] {access_tile_set = #r, access_tile_order = #o} : memref<4x16xf32> -> !ktdp.access_tile<1x16xindex>
  %row = ktdp.load %xt : !ktdp.access_tile<1x16xindex> -> tensor<1x16xf32>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #prod -> !ktdp.tile_future<(tensor<1x16xf32>), groups = #one> {
  ^bb0(%g: index):
    ktdp.yield_partial %row : tensor<1x16xf32>
  }
  %got = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #cons, producer_dependency_per_consumer = #pair : !ktdp.tile_future<(tensor<1x16xf32>), groups = #one> -> tensor<1x16xf32>
  %is_c = arith.cmpi sge, %id, %c2 : index
  scf.if %is_c {
    %yt = ktdp.construct_access_tile %yv[%id, %c0] {access_tile_set = #r, access_tile_order = #o} : memref<4x16xf32> -> !ktdp.access_tile<1x16xindex>
    ktdp.store %got, %yt : tensor<1x16xf32>, !ktdp.access_tile<1x16xindex>
  }
  return
}
"#;
    let m = module(text);
    let machine = Machine::preset("tiny4").unwrap();
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    let x = data(64, 9);
    let bx = sim.alloc("x", ktir::ScalarType::F32, x.clone()).unwrap();
    let by = sim
        .alloc("y", ktir::ScalarType::F32, vec![0.0; 64])
        .unwrap();
    sim.launch(&m, &LineLookup::new(text), "route", &[bx, by])
        .unwrap();
    let y = &sim.buffer("y").unwrap().data;
    assert_eq!(&y[32..48], &x[0..16]);
    assert_eq!(&y[48..64], &x[16..32]);
    assert!(y[0..32].iter().all(|v| *v == 0.0));
    let sends = sim
        .tasks()
        .iter()
        .filter(|t| t.op == "ktdp.inter_tile_consume" && t.unit == Unit::Dma)
        .count();
    assert_eq!(sends, 2);
}

fn corpus(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/ktir/valid")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

fn returned(name: &str, func: &str, args: Vec<KernelValue>) -> Vec<Vec<KernelValue>> {
    let text = corpus(name);
    let m = module(&text);
    let machine = Machine::preset("spyre32").unwrap();
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    sim.launch_values(&m, &LineLookup::new(&text), func, &args)
        .unwrap();
    sim.returned().to_vec()
}

#[test]
fn scf_if_with_results_and_loops_with_iter_args() {
    let r = returned("scf_results.mlir", "scalars", vec![KernelValue::Int(6)]);
    assert_eq!(r[0], vec![KernelValue::Int(1)]);
    let r = returned("scf_results.mlir", "scalars", vec![KernelValue::Int(4)]);
    assert_eq!(r[0], vec![KernelValue::Int(6)]);
}

#[test]
fn integer_and_float_scalar_ops() {
    let r = returned(
        "arith_ops.mlir",
        "arith",
        vec![
            KernelValue::Int(12),
            KernelValue::Int(3),
            KernelValue::Float(5.0),
            KernelValue::Float(2.0),
        ],
    );
    // and=0, or=3, xor=15, shl=120, shr=15, ushr=1, div=0, rem=0, maxu=12, lt false ->
    // sel=12, fa=12, sum=14, rem=4, minnum=4, 4<5 -> 4, fi=4 ... back=4, u=4.0, idx=4.
    assert_eq!(
        r[0],
        vec![
            KernelValue::Int(4),
            KernelValue::Float(4.0),
            KernelValue::Int(4)
        ]
    );
}

#[test]
fn generic_and_general_reductions() {
    let x = data(16 * 32, 5);
    let r = returned(
        "linalg_generic_reduction.mlir",
        "row_sums",
        vec![KernelValue::Tensor {
            shape: vec![16, 32],
            data: x.clone(),
        }],
    );
    let KernelValue::Tensor { data: s, .. } = &r[0][0] else {
        panic!()
    };
    let KernelValue::Tensor { data: q, .. } = &r[0][1] else {
        panic!()
    };
    for i in 0..16 {
        let row = &x[i * 32..i * 32 + 32];
        assert!((s[i] - row.iter().sum::<f32>()).abs() < 1e-5);
        assert!((q[i] - row.iter().map(|v| v * v).sum::<f32>()).abs() < 1e-5);
    }
    // Two-role all-reduce (argmax): every tile passes the same values, so the result is
    // the input with the first tile's indices.
    let v = data(64, 3);
    let idx: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let r = returned(
        "reduce_two_roles.mlir",
        "argmax",
        vec![
            KernelValue::Tensor {
                shape: vec![64],
                data: v.clone(),
            },
            KernelValue::Tensor {
                shape: vec![64],
                data: idx.clone(),
            },
        ],
    );
    assert_eq!(r.len(), 16);
    for got in &r {
        assert_eq!(
            *got,
            vec![
                KernelValue::Tensor {
                    shape: vec![64],
                    data: v.clone()
                },
                KernelValue::Tensor {
                    shape: vec![64],
                    data: idx.clone()
                }
            ]
        );
    }
}

#[test]
fn named_linalg_ops() {
    let (a, b) = (data(4 * 16 * 8, 1), data(4 * 8 * 16, 2));
    let (x, y) = (data(256, 3), data(256, 4));
    let r = returned(
        "linalg_named_ops.mlir",
        "named",
        vec![
            KernelValue::Tensor {
                shape: vec![4, 16, 8],
                data: a.clone(),
            },
            KernelValue::Tensor {
                shape: vec![4, 8, 16],
                data: b.clone(),
            },
            KernelValue::Tensor {
                shape: vec![16, 16],
                data: x.clone(),
            },
            KernelValue::Tensor {
                shape: vec![16, 16],
                data: y.clone(),
            },
        ],
    );
    let KernelValue::Tensor { data: bm, .. } = &r[0][0] else {
        panic!()
    };
    let KernelValue::Tensor { data: c, .. } = &r[0][1] else {
        panic!()
    };
    let h = |v: f32| half::f16::from_f32(v).to_f32();
    for bi in 0..4 {
        for i in 0..16 {
            for j in 0..16 {
                let want: f32 = (0..8)
                    .map(|k| h(a[bi * 128 + i * 8 + k]) * h(b[bi * 128 + k * 16 + j]))
                    .sum();
                assert!((bm[bi * 256 + i * 16 + j] - h(want)).abs() < 1e-2);
            }
        }
    }
    for i in 0..256 {
        let d = (x[i] + y[i]) - y[i];
        assert!((c[i] - d.max(x[i]).exp()).abs() < 1e-5);
    }
}

/// Stores through one element type and reads through another at the same byte offset.
#[test]
fn scratchpad_is_byte_addressed() {
    let text = r#"
#one = affine_set<(d0) : (d0 >= 0, -d0 + 0 >= 0)>
#two = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>
#o = affine_map<(d0) -> (d0)>
func.func @bytes(%lx: index, %out: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %f32v = ktdp.construct_memory_view %lx, sizes: [1], strides: [1] {coordinate_set = #one, memory_space = #ktdp.memory_space<ct_local>} : memref<1xf32>
  %f16v = ktdp.construct_memory_view %lx, sizes: [2], strides: [1] {coordinate_set = #two, memory_space = #ktdp.memory_space<ct_local>} : memref<2xf16>
  %ov = ktdp.construct_memory_view %out, sizes: [2], strides: [1] {coordinate_set = #two, memory_space = #ktdp.memory_space<global>} : memref<2xf16>
  %w = ktdp.construct_access_tile %f32v[%c0] {access_tile_set = #one, access_tile_order = #o} : memref<1xf32> -> !ktdp.access_tile<1xindex>
  %r = ktdp.construct_access_tile %f16v[%c0] {access_tile_set = #two, access_tile_order = #o} : memref<2xf16> -> !ktdp.access_tile<2xindex>
  %ot = ktdp.construct_access_tile %ov[%c0] {access_tile_set = #two, access_tile_order = #o} : memref<2xf16> -> !ktdp.access_tile<2xindex>
  %one = arith.constant dense<1.0> : tensor<1xf32>
  ktdp.store %one, %w : tensor<1xf32>, !ktdp.access_tile<1xindex>
  %h = ktdp.load %r : !ktdp.access_tile<2xindex> -> tensor<2xf16>
  ktdp.store %h, %ot : tensor<2xf16>, !ktdp.access_tile<2xindex>
  return
}
"#;
    let machine = Machine::preset("tiny4").unwrap();
    // Element 32 of an f32 view and element 64 of an f16 view are both byte 128.
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    let bo = sim
        .alloc("out", ktir::ScalarType::F16, vec![0.0; 2])
        .unwrap();
    let text2 = text.replace(
        "%f16v = ktdp.construct_memory_view %lx",
        "%lx2 = arith.addi %lx, %lx : index\n  %f16v = ktdp.construct_memory_view %lx2",
    );
    let m2 = module(&text2);
    sim.launch(&m2, &LineLookup::new(&text2), "bytes", &[32, bo])
        .unwrap();
    // f32 1.0 = bytes 00 00 80 3F: as two f16 values, 0.0 and 0x3F80 = 1.875.
    assert_eq!(sim.buffer("out").unwrap().data, vec![0.0, 1.875]);
}

#[test]
fn scratchpad_capacity_error_names_core_view_size_and_capacity() {
    let text = r#"
#one = affine_set<(d0) : (d0 >= 0, -d0 + 0 >= 0)>
#o = affine_map<(d0) -> (d0)>
func.func @far(%lx: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %v = ktdp.construct_memory_view %lx, sizes: [1], strides: [1] {coordinate_set = #one, memory_space = #ktdp.memory_space<ct_local>} : memref<1xf32>
  %t = ktdp.construct_access_tile %v[%c0] {access_tile_set = #one, access_tile_order = #o} : memref<1xf32> -> !ktdp.access_tile<1xindex>
  %x = ktdp.load %t : !ktdp.access_tile<1xindex> -> tensor<1xf32>
  return
}
"#;
    let m = module(text);
    let machine = Machine::preset("tiny4").unwrap();
    let cap = machine.scratchpad_bytes.value;
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    let e = sim
        .launch(&m, &LineLookup::new(text), "far", &[(cap / 4) as i64])
        .unwrap_err()
        .to_string();
    assert!(e.contains("core 0"), "{e}");
    assert!(e.contains("'%v'") && e.contains(&cap.to_string()), "{e}");
    assert!(e.contains("ktdp.load"), "{e}");
}

/// Sixteen all-reduces in a loop on tiny4, each of a 48x64 f32 partial (24 KiB): with the
/// scratchpad's 52 KiB plannable, they fit only if each partial is uncharged once its
/// reduce has consumed the future that carried it.
const REDUCE_LOOP: &str = r#"
#four = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#one_group = affine_set<(g) : (g == 0)>
#out = affine_set<(d0, d1) : (d0 >= 0, -d0 + 47 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @reduce_loop(%y: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %one = arith.constant 1.0 : f32
    %identity = arith.constant dense<0.0> : tensor<48x64xf32>
    %empty = tensor.empty() : tensor<48x64xf32>
    %acc0 = linalg.fill ins(%one : f32) outs(%empty : tensor<48x64xf32>) -> tensor<48x64xf32>
    %last = scf.for %i = %c0 to %c16 step %c1 iter_args(%acc = %acc0) -> (tensor<48x64xf32>) {
      %f = ktdp.inter_tile_produce producer_tiles_per_group = #four -> !ktdp.tile_future<(tensor<48x64xf32>), groups = #one_group> {
      ^bb0(%gid: index):
        ktdp.yield_partial %acc : tensor<48x64xf32>
      }
      %sum = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #four, identity(%identity : tensor<48x64xf32>) : !ktdp.tile_future<(tensor<48x64xf32>), groups = #one_group> -> tensor<48x64xf32> {
      ^bb0(%lhs: tensor<48x64xf32>, %rhs: tensor<48x64xf32>):
        %s = arith.addf %lhs, %rhs : tensor<48x64xf32>
        ktdp.yield_reduced %s : tensor<48x64xf32>
      }
      scf.yield %sum : tensor<48x64xf32>
    }
    %id = ktdp.get_compute_tile_id : index
    %is0 = arith.cmpi eq, %id, %c0 : index
    scf.if %is0 {
      %yv = ktdp.construct_memory_view %y, sizes: [48, 64], strides: [64, 1] {coordinate_set = #out, memory_space = #ktdp.memory_space<global>} : memref<48x64xf32>
      %yt = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = #out, access_tile_order = #ord} : memref<48x64xf32> -> !ktdp.access_tile<48x64xindex>
      ktdp.store %last, %yt : tensor<48x64xf32>, !ktdp.access_tile<48x64xindex>
    }
    return
  }
}
"#;

#[test]
fn a_partial_is_uncharged_once_its_reduce_has_consumed_it() {
    let m = module(REDUCE_LOOP);
    let machine = Machine::preset("tiny4").unwrap();
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    let by = sim
        .alloc("y", ktir::ScalarType::F32, vec![0.0; 48 * 64])
        .unwrap();
    sim.launch(&m, &LineLookup::new(REDUCE_LOOP), "reduce_loop", &[by])
        .unwrap_or_else(|e| panic!("{e}"));
    // Four cores each add their copy: 4^16.
    let y = &sim.buffer("y").unwrap().data;
    assert!(y.iter().all(|&v| v == 4f32.powi(16)), "{:?}", &y[..4]);
}

/// Eight cores each hold a 256x512 f32 partial of ones; core 0 receives the sum.
const CHAIN8: &str = r#"
#all = affine_set<(i)[g] : (i >= 0, -i + 7 >= 0)>
#lead = affine_set<(i)[g] : (i == 0)>
#one = affine_set<(g) : (g == 0)>
#c = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 511 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @chain(%c: index) attributes {grid = [8]} {
    %c0 = arith.constant 0 : index
    %id = ktdp.get_compute_tile_id : index
    %cv = ktdp.construct_memory_view %c, sizes: [256, 512], strides: [512, 1] {coordinate_set = #c, memory_space = #ktdp.memory_space<global>} : memref<256x512xf32>
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<256x512xf32>
    %p = linalg.fill ins(%one : f32) outs(%e : tensor<256x512xf32>) -> tensor<256x512xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<256x512xf32>) -> tensor<256x512xf32>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<256x512xf32>), groups = #one> {
    ^bb0(%gid: index):
      ktdp.yield_partial %p : tensor<256x512xf32>
    }
    %sum = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #lead, identity(%z : tensor<256x512xf32>) : !ktdp.tile_future<(tensor<256x512xf32>), groups = #one> -> tensor<256x512xf32> {
    ^bb0(%l: tensor<256x512xf32>, %r: tensor<256x512xf32>):
      %s = arith.addf %l, %r : tensor<256x512xf32>
      ktdp.yield_reduced %s : tensor<256x512xf32>
    }
    %first = arith.cmpi eq, %id, %c0 : index
    scf.if %first {
      %ct = ktdp.construct_access_tile %cv[%c0, %c0] {access_tile_set = #c, access_tile_order = #ord} : memref<256x512xf32> -> !ktdp.access_tile<256x512xindex>
      ktdp.store %sum, %ct : tensor<256x512xf32>, !ktdp.access_tile<256x512xindex>
    }
    return
  }
}
"#;

#[test]
fn reduce_to_one_pipelines_pieces_down_the_chain() {
    let m = module(CHAIN8);
    let machine = Machine::preset("spyre32").unwrap();
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    let bc = sim
        .alloc("c", ktir::ScalarType::F32, vec![0.0; 256 * 512])
        .unwrap();
    sim.launch(&m, &LineLookup::new(CHAIN8), "chain", &[bc])
        .unwrap();
    assert!(sim.buffer("c").unwrap().data.iter().all(|&x| x == 8.0));
    let tasks = sim.tasks().to_vec();
    let sends: Vec<_> = tasks
        .iter()
        .filter(|t| t.op == "ktdp.inter_tile_reduce" && t.unit == Unit::Dma)
        .collect();
    // Seven hops, each carrying the whole partial once, cut into 16 pieces of 32 KiB (fewer than 4 x 7: none smaller).
    let partial = 256 * 512 * 4;
    assert_eq!(sends.len(), 7 * 16);
    for core in 1..8 {
        let carried: u64 = sends
            .iter()
            .filter(|t| t.core == core)
            .map(|t| match t.work {
                Work::Transfer { bytes, .. } => bytes,
                _ => 0,
            })
            .sum();
        assert_eq!(carried, partial, "core {core}");
    }
    // The pieces overlap: each hop adds one piece's transfer and combine, so the reduce
    // takes about (15 + 1.5 x 7) / 16 whole transfers plus setups, against 7 x 1.5 unpipelined.
    let sched = schedule(&machine, &tasks, &Limits::default()).unwrap();
    let reduce: Vec<_> = sched
        .events
        .iter()
        .filter(|e| tasks[e.task].op == "ktdp.inter_tile_reduce")
        .collect();
    let start = reduce.iter().map(|e| e.start).fold(f64::MAX, f64::min);
    let end = reduce.iter().map(|e| e.end).fold(0.0, f64::max);
    let whole = partial as f64 / machine.ring_bytes_per_cycle_per_direction.value;
    assert!(end - start < 2.5 * whole, "{} vs {whole}", end - start);
}
