//! Timing-only mode: the same tasks as a run with numbers, no data held, and explicit
//! handling of the values that would have come from tensor data.

use sim::timing::{schedule, Limits, Task};
use sim::{ExecLimits, KernelValue, LineLookup, Machine, Simulator};

mod common;
use common::{module, program};

/// A buffer argument: name, element type and contents.
type Buf = (&'static str, ktir::ScalarType, Vec<f32>);

/// Runs the module's first function in one mode; the simulator's tasks, assumptions,
/// buffers (name, held elements) and what core 0 returned, or the error.
#[allow(clippy::type_complexity)]
fn run(
    text: &str,
    machine: &str,
    bufs: &[Buf],
    timing_only: bool,
) -> Result<
    (
        Vec<Task>,
        Vec<String>,
        Vec<(String, usize)>,
        Vec<KernelValue>,
    ),
    String,
> {
    let m = module(text);
    let machine = Machine::preset(machine).unwrap();
    let mut sim = if timing_only {
        Simulator::new_timing_only(&machine, ExecLimits::default())
    } else {
        Simulator::new(&machine, ExecLimits::default())
    };
    assert_eq!(sim.is_timing_only(), timing_only);
    let bases: Vec<i64> = bufs
        .iter()
        .map(|(n, t, d)| sim.alloc(n, *t, d.clone()).unwrap())
        .collect();
    let f = m.funcs[0].name.clone();
    sim.launch(&m, &LineLookup::new(text), &f, &bases)
        .map_err(|e| e.to_string())?;
    let held = sim
        .buffers()
        .iter()
        .map(|b| (b.name.clone(), b.data.len()))
        .collect();
    let returned = sim.returned().first().cloned().unwrap_or_default();
    Ok((sim.tasks().to_vec(), sim.assumptions(), held, returned))
}

#[test]
fn gathers_assume_identity_indices_and_say_so() {
    let text = program("indirect_gather.mlir");
    let bufs: Vec<Buf> = vec![
        ("w", ktir::ScalarType::BF16, vec![0.5; 1000 * 128]),
        (
            "idx",
            ktir::ScalarType::I32,
            (0..256).map(|i| ((i * 7) % 1000) as f32).collect(),
        ),
        ("y", ktir::ScalarType::BF16, vec![0.0; 256 * 128]),
    ];
    let (full, none, held, _) = run(&text, "spyre32", &bufs, false).unwrap();
    assert!(none.is_empty(), "{none:?}");
    assert!(held.iter().all(|(_, n)| *n > 0));
    let (timed, assumed, held, _) = run(&text, "spyre32", &bufs, true).unwrap();
    // A plain view's gather moves the same bytes whichever rows it names.
    assert_eq!(full, timed);
    assert_eq!(assumed.len(), 1, "{assumed:?}");
    let a = &assumed[0];
    assert!(
        a.starts_with("line 18: 'ktdp.construct_indirect_access_tile'"),
        "{a}"
    );
    assert!(a.contains("assumed to be the identity"), "{a}");
    // Nothing is held: the buffers are sizes only.
    assert!(held.iter().all(|(_, n)| *n == 0), "{held:?}");
    let machine = Machine::preset("spyre32").unwrap();
    let (a, b) = (
        schedule(&machine, &full, &Limits::default()).unwrap(),
        schedule(&machine, &timed, &Limits::default()).unwrap(),
    );
    assert_eq!(a.total_cycles.to_bits(), b.total_cycles.to_bits());
}

/// Reads element 0 of `a`, and uses it as `use` says; `@HEAD@` and `@USE@` are replaced.
const EXTRACT: &str = r#"
func.func @uses(%a: index, %b: index) -> f16 attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %av = ktdp.construct_memory_view %a, sizes: [1, 64], strides: [64, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, 63 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<1x64xf16>
  %bv = ktdp.construct_memory_view %b, sizes: [1, 64], strides: [64, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, 63 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<1x64xf16>
  %at = ktdp.construct_access_tile %av[%c0, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, 63 - d1 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
  %bt = ktdp.construct_access_tile %bv[%c0, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, 63 - d1 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
  %x = ktdp.load %at : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
  %e = tensor.extract %x[%c0, %c0] : tensor<1x64xf16>
  %sq = arith.mulf %e, %e : f16
  %s = tensor.splat %sq : tensor<1x64xf16>
  %y = arith.addf %x, %s : tensor<1x64xf16>
  ktdp.store %y, %bt : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
@USE@
  return %sq : f16
}
"#;

/// A loop whose trip count is the extracted value.
const AS_LOOP_BOUND: &str = r#"  %i32 = arith.fptosi %e : f16 to i32
  %n = arith.index_cast %i32 : i32 to index
  scf.for %i = %c0 to %n step %c1 {
    %z = arith.addf %x, %x : tensor<1x64xf16>
    scf.yield
  }"#;

fn extract_bufs() -> Vec<Buf> {
    vec![
        ("a", ktir::ScalarType::F16, vec![3.0; 64]),
        ("b", ktir::ScalarType::F16, vec![0.0; 64]),
    ]
}

#[test]
fn extracted_values_that_only_feed_data_are_carried_along() {
    let text = EXTRACT.replace("@USE@", "");
    let (full, _, _, ret_full) = run(&text, "tiny4", &extract_bufs(), false).unwrap();
    assert_eq!(ret_full, vec![KernelValue::Float(9.0)]);
    let (timed, assumed, _, ret) = run(&text, "tiny4", &extract_bufs(), true).unwrap();
    assert_eq!(full, timed);
    assert!(assumed.is_empty(), "{assumed:?}");
    // The scalar was never computed and says so.
    assert_eq!(ret, vec![KernelValue::Unknown]);
}

#[test]
fn an_extracted_value_that_steers_control_flow_is_an_error_naming_both_ops() {
    let text = EXTRACT.replace("@USE@", AS_LOOP_BOUND);
    // With numbers the loop runs three times.
    let (full, _, _, _) = run(&text, "tiny4", &extract_bufs(), false).unwrap();
    let adds = |t: &[Task]| t.iter().filter(|t| t.op == "arith.addf").count();
    assert_eq!(adds(&full), 1 + 3);
    let e = run(&text, "tiny4", &extract_bufs(), true).unwrap_err();
    let loop_line = text.lines().position(|l| l.contains("scf.for")).unwrap() + 1;
    let extract_line = text
        .lines()
        .position(|l| l.contains("tensor.extract"))
        .unwrap()
        + 1;
    assert!(
        e.starts_with(&format!("line {loop_line}: 'scf.for'")),
        "{e}"
    );
    assert!(
        e.contains(&format!("the 'tensor.extract' on line {extract_line}")),
        "{e}"
    );
    assert!(e.contains("timing-only"), "{e}");
    // The same value as an scf.if condition.
    let cond = "  %t = arith.cmpf ogt, %e, %e : f16\n  scf.if %t {\n    %z = arith.addf %x, %x : tensor<1x64xf16>\n  }";
    let text = EXTRACT.replace("@USE@", cond);
    let e = run(&text, "tiny4", &extract_bufs(), true).unwrap_err();
    assert!(
        e.contains("'scf.if'") && e.contains("tensor.extract"),
        "{e}"
    );
}

/// Two tiles over the same 8x64 view, one described by a linear set and one by a set the
/// fast path declines (`mod`): both must load, store and time the same, masking included.
const MASKED: &str = r#"
func.func @masked(%a: index, %b: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %id = ktdp.get_compute_tile_id : index
  %r = arith.muli %id, %c4 : index
  %av = ktdp.construct_memory_view %a, sizes: [8, 64], strides: [64, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 7 - d0 >= 0, d1 >= 0, 63 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<8x64xf32>
  %bv = ktdp.construct_memory_view %b, sizes: [8, 64], strides: [64, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 7 - d0 >= 0, d1 >= 0, 63 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<8x64xf32>
  %at = ktdp.construct_access_tile %av[%r, %c0] {
    access_tile_set = @SET@,
    access_tile_order = affine_map<(d0, d1) -> (d1, d0)>
  } : memref<8x64xf32> -> !ktdp.access_tile<64x4xindex>
  %bt = ktdp.construct_access_tile %bv[%r, %c0] {
    access_tile_set = @SET@,
    access_tile_order = affine_map<(d0, d1) -> (d1, d0)>
  } : memref<8x64xf32> -> !ktdp.access_tile<64x4xindex>
  %x = ktdp.load %at : !ktdp.access_tile<64x4xindex> -> tensor<64x4xf32>
  %y = arith.addf %x, %x : tensor<64x4xf32>
  ktdp.store %y, %bt : tensor<64x4xf32>, !ktdp.access_tile<64x4xindex>
  return
}
"#;

/// The final contents of `b` and the tasks of a run of [`MASKED`] with `set`.
fn masked(set: &str, timing_only: bool) -> (Vec<f32>, Vec<Task>) {
    let text = MASKED.replace("@SET@", set);
    let m = module(&text);
    let machine = Machine::preset("tiny4").unwrap();
    let mut sim = if timing_only {
        Simulator::new_timing_only(&machine, ExecLimits::default())
    } else {
        Simulator::new(&machine, ExecLimits::default())
    };
    let a: Vec<f32> = (0..512).map(|i| i as f32).collect();
    let ba = sim.alloc("a", ktir::ScalarType::F32, a).unwrap();
    let bb = sim.reserve("b", ktir::ScalarType::F32, 512).unwrap();
    sim.launch(&m, &LineLookup::new(&text), "masked", &[ba, bb])
        .unwrap();
    (sim.buffer("b").unwrap().data.clone(), sim.tasks().to_vec())
}

#[test]
fn box_tiles_and_point_lists_load_store_and_time_alike() {
    let whole_linear = "affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 >= 0, 63 - d1 >= 0)>";
    let whole_mod =
        "affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 mod 1 == 0, d1 >= 0, 63 - d1 >= 0)>";
    let (x, tx) = masked(whole_linear, false);
    let (y, ty) = masked(whole_mod, false);
    assert_eq!(x, y);
    assert_eq!(tx, ty);
    assert_eq!(x[5], 10.0);
    // Masked points are neither read nor written: a triangle (linear, but not the whole
    // box) and the even columns.
    let triangle =
        "affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 >= 0, 63 - d1 >= 0, d1 - d0 * 16 >= 0)>";
    let even =
        "affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 mod 2 == 0, d1 >= 0, 63 - d1 >= 0)>";
    let (x, tx) = masked(triangle, false);
    let (y, ty) = masked(even, false);
    for r in 0..8 {
        for c in 0..64 {
            let i = r * 64 + c;
            let v = 2.0 * i as f32;
            assert_eq!(x[i], if c >= (r % 4) * 16 { v } else { 0.0 }, "({r}, {c})");
            assert_eq!(y[i], if c % 2 == 0 { v } else { 0.0 }, "({r}, {c})");
        }
    }
    assert_ne!(tx, ty, "masked tiles move fewer bytes");
    // Timing-only runs hold nothing and record the same tasks either way.
    for (set, with_numbers) in [(triangle, &tx), (even, &ty)] {
        let (data, tasks) = masked(set, true);
        assert!(data.is_empty());
        assert_eq!(&tasks, with_numbers);
    }
}

/// The same assumption made by several ops (here one gather launched, then replayed as if
/// it stood 37 and 74 lines further on, as stacked layers do) is one line naming them all.
#[test]
fn one_assumption_made_at_several_lines_is_stated_once() {
    let text = program("indirect_gather.mlir");
    let m = module(&text);
    let machine = Machine::preset("spyre32").unwrap();
    let mut sim = Simulator::new_timing_only(&machine, ExecLimits::default());
    let bases: Vec<i64> = [
        ("w", ktir::ScalarType::BF16, 1000 * 128),
        ("idx", ktir::ScalarType::I32, 256),
        ("y", ktir::ScalarType::BF16, 256 * 128),
    ]
    .into_iter()
    .map(|(n, t, len)| sim.alloc(n, t, vec![0.0; len]).unwrap())
    .collect();
    let f = m.funcs[0].name.clone();
    sim.launch(&m, &LineLookup::new(&text), &f, &bases).unwrap();
    assert_eq!(sim.assumptions().len(), 1);
    assert!(
        sim.assumptions()[0].starts_with("line 18: "),
        "{:?}",
        sim.assumptions()
    );
    sim.replay_launch(0, &f, 74).unwrap();
    sim.replay_launch(0, &f, 37).unwrap();
    // A replay at a line already named adds nothing.
    sim.replay_launch(0, &f, 37).unwrap();
    let assumed = sim.assumptions();
    assert_eq!(assumed.len(), 1, "{assumed:?}");
    assert!(
        assumed[0].starts_with("lines 18, 55 and 92: 'ktdp.construct_indirect_access_tile'"),
        "{assumed:?}"
    );
}
