//! Execution tests: programs from `tests/ktir/valid` run on the presets and produce the
//! numbers a direct computation gives; bad programs stop with errors naming core and op.

use sim::exec::round_to;
use sim::timing::{schedule, Limits, Unit};
use sim::{ExecLimits, LineLookup, Machine, Simulator};

mod common;
use common::{module, program};

/// Deterministic test data in [-1, 1).
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

#[test]
fn add_rows_adds_on_four_cores() {
    let text = program("add_rows.mlir");
    let m = module(&text);
    let machine = Machine::preset("tiny4").unwrap();
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    let a = data(64 * 64, 1);
    let b = data(64 * 64, 2);
    let ba = sim.alloc("a", ktir::ScalarType::F16, a.clone()).unwrap();
    let bb = sim.alloc("b", ktir::ScalarType::F16, b.clone()).unwrap();
    let bc = sim
        .alloc("c", ktir::ScalarType::F16, vec![0.0; 64 * 64])
        .unwrap();
    sim.launch(&m, &LineLookup::new(&text), "add_rows", &[ba, bb, bc])
        .unwrap();
    let c = &sim.buffer("c").unwrap().data;
    for i in 0..64 * 64 {
        let want = round_to(
            ktir::ScalarType::F16,
            round_to(ktir::ScalarType::F16, a[i]) + round_to(ktir::ScalarType::F16, b[i]),
        );
        assert_eq!(c[i], want, "element {i}");
    }
    // Each of the 4 cores loads two tiles and stores one; plus one SFP add each.
    let tasks = sim.tasks();
    let dma = tasks.iter().filter(|t| t.unit == Unit::Dma).count();
    let sfp = tasks
        .iter()
        .filter(|t| t.unit == Unit::Sfp && t.op == "arith.addf")
        .count();
    assert_eq!((dma, sfp), (12, 4));
    let sched = schedule(&machine, tasks, &Limits::default()).unwrap();
    assert!(sched.total_cycles > 0.0);
    let cores: std::collections::BTreeSet<usize> = sched.events.iter().map(|e| e.core).collect();
    assert_eq!(cores.len(), 4);
}

#[test]
fn k_loop_matmul_accumulates_in_f32() {
    let text = program("matmul_k_loop.mlir");
    let m = module(&text);
    let machine = Machine::preset("spyre32").unwrap();
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    let a: Vec<f32> = data(32 * 64, 3)
        .into_iter()
        .map(|x| round_to(ktir::ScalarType::F16, x))
        .collect();
    let b: Vec<f32> = data(64 * 64, 4)
        .into_iter()
        .map(|x| round_to(ktir::ScalarType::F16, x))
        .collect();
    let ba = sim.alloc("a", ktir::ScalarType::F16, a.clone()).unwrap();
    let bb = sim.alloc("b", ktir::ScalarType::F16, b.clone()).unwrap();
    let bc = sim
        .alloc("c", ktir::ScalarType::F32, vec![0.0; 32 * 64])
        .unwrap();
    sim.launch(&m, &LineLookup::new(&text), "matmul_k_loop", &[ba, bb, bc])
        .unwrap();
    let c = &sim.buffer("c").unwrap().data;
    let mut max_err = 0.0f64;
    for i in 0..32 {
        for j in 0..64 {
            let want: f64 = (0..64)
                .map(|k| a[i * 64 + k] as f64 * b[k * 64 + j] as f64)
                .sum();
            max_err = max_err.max((c[i * 64 + j] as f64 - want).abs());
        }
    }
    assert!(max_err < 1e-4, "max error {max_err}");
    // Two iterations, each with one PT matmul.
    assert_eq!(sim.tasks().iter().filter(|t| t.unit == Unit::Pt).count(), 2);
}

#[test]
fn stick_layout_reads_back_row_major() {
    let text = program("stick_layout_transpose.mlir");
    let m16 = module(&text);
    let text16 = &text;
    let machine = Machine::preset("tiny4").unwrap();
    // Device layout [stick, row, lane]: host (r, c) sits at stick c / 64, lane c % 64.
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    let mut device = vec![0.0f32; 2 * 4 * 64];
    for r in 0..4 {
        for c in 0..128 {
            device[(c / 64) * 256 + r * 64 + c % 64] = (r * 100 + c) as f32;
        }
    }
    let bs = sim.alloc("src", ktir::ScalarType::F16, device).unwrap();
    let bd = sim
        .alloc("dst", ktir::ScalarType::F16, vec![0.0; 4 * 128])
        .unwrap();
    sim.launch(&m16, &LineLookup::new(text16), "unstick", &[bs, bd])
        .unwrap();
    let dst = &sim.buffer("dst").unwrap().data;
    for r in 0..4 {
        for c in 0..128 {
            assert_eq!(dst[r * 128 + c], (r * 100 + c) as f32, "({r}, {c})");
        }
    }
}

fn run_err(text: &str, machine: &str, args: &[(&str, ktir::ScalarType, usize)]) -> String {
    let m = module(text);
    let machine = Machine::preset(machine).unwrap();
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    let bases: Vec<i64> = args
        .iter()
        .map(|(n, t, len)| sim.alloc(n, *t, vec![0.0; *len]).unwrap())
        .collect();
    let f = m.funcs[0].name.clone();
    sim.launch(&m, &LineLookup::new(text), &f, &bases)
        .unwrap_err()
        .to_string()
}

const OOB: &str = r#"
func.func @oob(%a: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %id = ktdp.get_compute_tile_id : index
  %r = arith.muli %id, %c4 : index
  %v = ktdp.construct_memory_view %a, sizes: [6, 8], strides: [8, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 5 - d0 >= 0, d1 >= 0, 7 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<6x8xf32>
  %t = ktdp.construct_access_tile %v[%r, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 >= 0, 7 - d1 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<6x8xf32> -> !ktdp.access_tile<4x8xindex>
  %x = ktdp.load %t : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
  return
}
"#;

#[test]
fn out_of_bounds_names_core_and_op() {
    let e = run_err(OOB, "tiny4", &[("a", ktir::ScalarType::F32, 48)]);
    assert!(e.contains("core 1"), "{e}");
    assert!(e.contains("ktdp.load"), "{e}");
    assert!(
        e.contains("out of bounds") || e.contains("outside the view"),
        "{e}"
    );
}

#[test]
fn grid_larger_than_machine_is_an_error() {
    let text = OOB.replace("grid = [2]", "grid = [8]");
    let e = run_err(&text, "tiny4", &[("a", ktir::ScalarType::F32, 48)]);
    assert!(
        e.contains("grid of 8 tiles") && e.contains("4 cores"),
        "{e}"
    );
}

#[test]
fn scratchpad_overflow_names_core_sizes_and_capacity() {
    // The fills are charged (an empty is only their destination).
    let text = r#"
func.func @big() attributes {grid = [1]} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x256xf32>
  %a = linalg.fill ins(%zero : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  %f = tensor.empty() : tensor<256x256xf32>
  %b = linalg.fill ins(%zero : f32) outs(%f : tensor<256x256xf32>) -> tensor<256x256xf32>
  %s = arith.addf %a, %b : tensor<256x256xf32>
  return
}
"#;
    let e = run_err(text, "tiny4", &[]);
    assert!(e.contains("scratchpad overflow on core 0"), "{e}");
    assert!(e.contains("262144"), "{e}");
    assert!(e.contains("capacity"), "{e}");
}

#[test]
fn runaway_loops_hit_the_step_limit() {
    let text = r#"
func.func @spin() attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 1000000000 : index
  scf.for %i = %c0 to %big step %c1 {
    %x = arith.addi %i, %c1 : index
  }
  return
}
"#;
    let m = module(text);
    let machine = Machine::preset("tiny4").unwrap();
    let limits = ExecLimits {
        max_steps: 10_000,
        ..ExecLimits::default()
    };
    let mut sim = Simulator::new(&machine, limits);
    let e = sim
        .launch(&m, &LineLookup::new(text), "spin", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than 10000 operations"), "{e}");
}

#[test]
fn f16_rounding_matches_the_library_bit_for_bit() {
    let library = |x: f32| half::f16::from_f32(x).to_f32();
    let check = |x: f32| {
        let (got, want) = (sim::exec::round_f16(x), library(x));
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "{x:e} ({:#010x}): {got:e} vs {want:e}",
            x.to_bits()
        );
    };
    // Around every f16 value and the midpoints to its neighbours: the ties and the values
    // one f32 step either side, in both signs.
    for h in 0..=u16::MAX {
        let v = half::f16::from_bits(h).to_f32();
        let next = half::f16::from_bits(h.wrapping_add(1)).to_f32();
        for base in [v, (v + next) / 2.0] {
            let b = base.to_bits();
            for d in [0u32, 1, 2] {
                check(f32::from_bits(b.wrapping_add(d)));
                check(f32::from_bits(b.wrapping_sub(d)));
            }
        }
    }
    // And a sweep over all f32 patterns.
    let mut b: u32 = 0;
    while let Some(next) = b.checked_add(4099) {
        check(f32::from_bits(b));
        b = next;
    }
}

#[test]
fn empty_loop_bodies_count_every_iteration_towards_the_step_limit() {
    let text = r#"
func.func @spin() attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 1000000000000 : index
  scf.for %i = %c0 to %big step %c1 {
  }
  return
}
"#;
    let m = module(text);
    let machine = Machine::preset("tiny4").unwrap();
    let limits = ExecLimits {
        max_steps: 10_000,
        ..ExecLimits::default()
    };
    let mut sim = Simulator::new(&machine, limits);
    let e = sim
        .launch(&m, &LineLookup::new(text), "spin", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than 10000 operations"), "{e}");
}

#[test]
fn the_minimum_divided_by_minus_one_is_an_overflow_not_a_division_by_zero() {
    for op in ["arith.divsi", "arith.remsi"] {
        let text = format!(
            r#"
func.func @f() attributes {{grid = [1]}} {{
  %a = arith.constant -9223372036854775808 : index
  %b = arith.constant -1 : index
  %c = {op} %a, %b : index
  return
}}
"#
        );
        let e = run_err(&text, "tiny4", &[]);
        assert!(e.contains("overflows"), "{e}");
        assert!(!e.contains("by zero"), "{e}");
    }
}

#[test]
fn an_unused_load_in_a_loop_is_freed_each_iteration() {
    // Each load is 32 KiB of a 64 KiB scratchpad: two alive at once would overflow.
    let text = r#"
func.func @f(%a: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %v = ktdp.construct_memory_view %a, sizes: [64, 128], strides: [128, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 63 - d0 >= 0, d1 >= 0, 127 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<64x128xf32>
  %t = ktdp.construct_access_tile %v[%c0, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, 63 - d0 >= 0, d1 >= 0, 127 - d1 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<64x128xf32> -> !ktdp.access_tile<64x128xindex>
  scf.for %i = %c0 to %c4 step %c1 {
    %x = ktdp.load %t : !ktdp.access_tile<64x128xindex> -> tensor<64x128xf32>
  }
  return
}
"#;
    let m = module(text);
    let machine = Machine::preset("tiny4").unwrap();
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    let a = sim
        .alloc("a", ktir::ScalarType::F32, vec![0.0; 64 * 128])
        .unwrap();
    sim.launch(&m, &LineLookup::new(text), "f", &[a]).unwrap();
}

#[test]
fn timing_tasks_stop_at_the_byte_limit_with_the_excess() {
    let text = program("add_rows.mlir");
    let m = module(&text);
    let machine = Machine::preset("tiny4").unwrap();
    let limits = ExecLimits {
        max_task_bytes: 2000,
        ..ExecLimits::default()
    };
    let mut sim = Simulator::new_timing_only(&machine, limits);
    let ba = sim.reserve("a", ktir::ScalarType::F16, 64 * 64).unwrap();
    let bb = sim.reserve("b", ktir::ScalarType::F16, 64 * 64).unwrap();
    let bc = sim.reserve("c", ktir::ScalarType::F16, 64 * 64).unwrap();
    let e = sim
        .launch(&m, &LineLookup::new(&text), "add_rows", &[ba, bb, bc])
        .unwrap_err()
        .to_string();
    assert!(e.contains("over the limit of 2000 bytes"), "{e}");
    assert!(e.contains("max_task_bytes"), "{e}");
    assert!(sim.tasks().len() < 16, "{}", sim.tasks().len());
}

/// The task-byte limit counts what every task keeps (its record and event) and the
/// scheduler's state only for the largest launch, as launches are scheduled one at a time:
/// two launches fit in exactly that, and one byte less stops the run.
#[test]
fn scheduler_state_counts_once_for_the_largest_launch() {
    let text = program("add_rows.mlir");
    let m = module(&text);
    let machine = Machine::preset("tiny4").unwrap();
    let run = |max_task_bytes: u64| {
        let limits = ExecLimits {
            max_task_bytes,
            ..ExecLimits::default()
        };
        let mut sim = Simulator::new_timing_only(&machine, limits);
        let ba = sim.reserve("a", ktir::ScalarType::F16, 64 * 64).unwrap();
        let bb = sim.reserve("b", ktir::ScalarType::F16, 64 * 64).unwrap();
        let bc = sim.reserve("c", ktir::ScalarType::F16, 64 * 64).unwrap();
        let lines = LineLookup::new(&text);
        let mut lens = Vec::new();
        for _ in 0..2 {
            let before = sim.tasks().len();
            sim.launch(&m, &lines, "add_rows", &[ba, bb, bc])
                .map_err(|e| e.to_string())?;
            lens.push(sim.tasks().len() - before);
        }
        Ok::<_, String>((sim.tasks().to_vec(), lens))
    };
    let (tasks, lens) = run(u64::MAX).unwrap();
    let kept: u64 = tasks.iter().map(sim::timing::task_footprint).sum();
    let largest = *lens.iter().max().unwrap() as u64;
    let needed = kept + largest * sim::timing::SCHEDULER_BYTES_PER_TASK;
    assert!(needed < kept + tasks.len() as u64 * sim::timing::SCHEDULER_BYTES_PER_TASK);
    assert_eq!(run(needed).unwrap().0, tasks);
    let e = run(needed - 1).unwrap_err();
    assert!(e.contains("over the limit of"), "{e}");
    assert!(e.contains("by 1 bytes"), "{e}");
}

/// A replayed launch (a repeat of an identical kernel) executes no operation, so it counts
/// in the run's total but not against the step limit: a model of many identical layers is
/// bounded by what it executes, not by its depth.
#[test]
fn replayed_launches_count_in_the_total_but_not_against_the_step_limit() {
    let text = r#"func.func @count() attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 100 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = arith.addi %i, %c1 : index
  }
  return
}
"#;
    let m = module(text);
    let machine = Machine::preset("tiny4").unwrap();
    let mut sim = Simulator::new(&machine, ExecLimits::default());
    sim.launch(&m, &LineLookup::new(text), "count", &[])
        .unwrap();
    let once = sim.steps();
    assert!(once >= 100, "{once}");
    let limits = ExecLimits {
        max_steps: once + once / 2,
        ..ExecLimits::default()
    };
    let mut sim = Simulator::new(&machine, limits);
    sim.launch(&m, &LineLookup::new(text), "count", &[])
        .unwrap();
    for _ in 0..5 {
        sim.replay_launch(0, "count", 0).unwrap();
    }
    assert_eq!(sim.steps(), 6 * once);
    // Executing it again goes over the limit: the replays did not use it up, the run did.
    let e = sim
        .launch(&m, &LineLookup::new(text), "count", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("operations"), "{e}");
}
