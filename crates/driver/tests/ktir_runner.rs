//! The KTIR runner on its own inputs: buffers sized from every view (partitions at
//! offsets, views at constant addresses), placements, scratchpad contents, typed scalar
//! arguments, masking, and `.npy` checks; and every program of `tests/ktir/run-errors`
//! fails with the messages its header gives (see that directory's README).

use driver::{OutOfBounds, Role, RunOptions, Session};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn options() -> RunOptions {
    RunOptions {
        machine: driver::machine("tiny4").unwrap(),
        seed: 3,
        ..RunOptions::default()
    }
}

/// A version-1 `.npy` file of `dtype` and `shape` holding `values` (zeros when empty).
fn npy(dtype: &str, shape: &[usize], values: &[f64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let tuple = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '{dtype}', 'fortran_order': False, 'shape': {tuple}, }}");
    while !(11 + header.len()).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.bytes());
    let n: usize = shape.iter().product();
    for i in 0..n {
        let x = values.get(i).copied().unwrap_or(0.0);
        match dtype {
            "<f2" => out.extend(half::f16::from_f64(x).to_le_bytes()),
            "<f4" => out.extend((x as f32).to_le_bytes()),
            "<f8" => out.extend(x.to_le_bytes()),
            "<i4" => out.extend((x as i32).to_le_bytes()),
            _ => out.extend((x as i64).to_le_bytes()),
        }
    }
    out
}

/// Runs `text` and returns the error message, if any, reading the `.npy` inputs first.
fn run_result(
    text: &str,
    o: &RunOptions,
    files: &[(String, Vec<u8>)],
) -> Result<driver::Run, String> {
    let mut o = o.clone();
    if !files.is_empty() {
        o.buffers = driver::read_npy_inputs(text, &o, files).map_err(|e| e.to_string())?;
    }
    let mut s = Session::open(text.as_bytes(), "program.mlir").map_err(|e| e.to_string())?;
    s.run(&o, &mut |_| {}).cloned().map_err(|e| e.to_string())
}

#[test]
fn every_run_error_program_fails_with_its_messages() {
    let dir = root().join("tests/ktir/run-errors");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".mlir"))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        let text = std::fs::read_to_string(dir.join(&name)).unwrap();
        // Each program verifies: the run, not the verifier, refuses it.
        if let Err(d) = driver::ktir::check(&text) {
            panic!("{name}: {}", driver::ktir::render_diagnostics(&name, &d));
        }
        let mut o = options();
        let mut files = Vec::new();
        let mut expected = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            let header = |key: &str| line.strip_prefix(key).map(str::trim);
            if let Some(rest) = header("// ARGS:") {
                for kv in rest.split_whitespace() {
                    let (k, v) = kv.split_once('=').unwrap();
                    o.scalars.insert(k.into(), v.into());
                }
            } else if let Some(rest) = header("// PLACE:") {
                for kv in rest.split_whitespace() {
                    let (k, v) = kv.split_once('=').unwrap();
                    o.places.insert(k.into(), v.parse().unwrap());
                }
            } else if let Some(rest) = header("// OUT-OF-BOUNDS:") {
                assert_eq!(rest, "mask", "{name}");
                o.out_of_bounds = OutOfBounds::Mask;
            } else if let Some(rest) = header("// NPY:") {
                let parts: Vec<&str> = rest.split_whitespace().collect();
                let shape: Vec<usize> = parts[2].split('x').map(|d| d.parse().unwrap()).collect();
                files.push((parts[0].to_string(), npy(parts[1], &shape, &[])));
            } else if let Some(rest) = header("// EXPECT-ERROR:") {
                expected.push(rest.to_string());
            }
        }
        assert!(!expected.is_empty(), "{name}: no EXPECT-ERROR line");
        match run_result(&text, &o, &files) {
            Ok(_) => panic!("{name}: ran, expected an error"),
            Err(e) => {
                for x in &expected {
                    assert!(e.contains(x.as_str()), "{name}: '{x}' not in:\n{e}");
                }
            }
        }
    }
}

const SETS: &str = "#s = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#h = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 3 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
";

/// A 4x8 f32 view named `name` over `base`, and a tile over all of it.
fn view(name: &str, base: &str, space: &str) -> String {
    let (mem, ty) = if space == "global" {
        ("#ktdp.memory_space<global>", "memref<4x8xf32>".to_string())
    } else {
        (
            "#ktdp.memory_space<ct_local>",
            "memref<4x8xf32, #ktdp.memory_space<ct_local>>".to_string(),
        )
    };
    format!(
        "  %{name} = ktdp.construct_memory_view %{base}, sizes: [4, 8], strides: [8, 1] {{coordinate_set = #s, memory_space = {mem}}} : {ty}
  %{name}_t = ktdp.construct_access_tile %{name}[%c0, %c0] {{access_tile_set = #s, access_tile_order = #o}} : {ty} -> !ktdp.access_tile<4x8xindex>
"
    )
}

fn buffer(run: &driver::Run, name: &str) -> Vec<f32> {
    run.run
        .buffers
        .iter()
        .find(|(s, _)| s.name == name)
        .unwrap_or_else(|| panic!("no buffer {name}"))
        .1
        .clone()
}

#[test]
fn a_partition_at_a_constant_offset_sizes_its_buffer() {
    // Two partitions of %x, at 0 and at %x + 2048; %y receives their sum.
    let text = format!(
        "{SETS}func.func @f(%x: index, %y: index) attributes {{grid = [1]}} {{
  %c0 = arith.constant 0 : index
  %c2048 = arith.constant 2048 : index
  %x2 = arith.addi %x, %c2048 : index
{}{}{}  %a = ktdp.load %p0_t : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
  %b = ktdp.load %p1_t : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
  %c = arith.addf %a, %b : tensor<4x8xf32>
  ktdp.store %c, %yv_t : tensor<4x8xf32>, !ktdp.access_tile<4x8xindex>
  return
}}
",
        view("p0", "x", "global"),
        view("p1", "x2", "global"),
        view("yv", "y", "global")
    );
    let inputs = driver::ktir_inputs(&text, &options()).unwrap();
    let x = &inputs.buffers[0];
    assert_eq!(
        (x.name.as_str(), x.elements, x.role),
        ("x", 2048 + 32, Role::In)
    );
    assert_eq!(inputs.buffers[1].role, Role::Out);
    let r = run_result(&text, &options(), &[]).unwrap();
    let (x, y) = (buffer(&r, "x"), buffer(&r, "y"));
    for i in 0..32 {
        assert_eq!(y[i], x[i] + x[2048 + i]);
    }
}

/// A kernel copying the 4x8 block at constant address 0 (`%src`) to 64 (`%dst`) scaled by
/// `%scale`.
fn constant_addresses() -> String {
    format!(
        "{SETS}func.func @f(%scale: f32) attributes {{grid = [1]}} {{
  %c0 = arith.constant 0 : index
  %src = arith.constant 0 : index
  %dst = arith.constant 64 : index
{}{}  %a = ktdp.load %xv_t : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
  %s = tensor.splat %scale : tensor<4x8xf32>
  %b = arith.mulf %a, %s : tensor<4x8xf32>
  ktdp.store %b, %yv_t : tensor<4x8xf32>, !ktdp.access_tile<4x8xindex>
  return
}}
",
        view("xv", "src", "global"),
        view("yv", "dst", "global")
    )
}

#[test]
fn views_at_constant_addresses_take_data_by_name_or_by_placement() {
    let text = constant_addresses();
    let mut o = options();
    o.scalars.insert("scale".into(), "0.0883".into());
    let inputs = driver::ktir_inputs(&text, &o).unwrap();
    let got: Vec<(&str, Option<i64>, Role)> = inputs
        .buffers
        .iter()
        .map(|b| (b.name.as_str(), b.address, b.role))
        .collect();
    assert_eq!(
        got,
        [("src", Some(0), Role::In), ("dst", Some(64), Role::Out)]
    );
    assert_eq!(inputs.scalars[0].dtype, "f32");
    assert!(inputs.missing.is_empty());
    // Data by the name of the constant.
    let values: Vec<f64> = (0..32).map(f64::from).collect();
    let files = [("src".to_string(), npy("<f4", &[4, 8], &values))];
    let r = run_result(&text, &o, &files).unwrap();
    let dst = buffer(&r, "dst");
    for (i, v) in dst.iter().enumerate() {
        assert_eq!(*v, (i as f32) * 0.0883_f32);
    }
    // A placement names the buffer at its address instead, and may hold more.
    o.places.insert("input".into(), 0);
    let files = [("input".to_string(), npy("<f4", &[40], &values))];
    let r = run_result(&text, &o, &files).unwrap();
    assert_eq!(buffer(&r, "input").len(), 40);
    assert_eq!(buffer(&r, "dst")[31], 31.0 * 0.0883_f32);
    // An argument buffer can be placed too.
    let mut o = options();
    o.scalars.insert("n".into(), "1".into());
    o.scalars.insert("h".into(), "0.5".into());
    o.places.insert("y".into(), 4096);
    let text =
        std::fs::read_to_string(root().join("tests/ktir/run-errors/unknown_arg.mlir")).unwrap();
    let r = run_result(&text, &o, &[]).unwrap();
    let y = r.run.buffers.iter().find(|(s, _)| s.name == "y").unwrap();
    assert_eq!(y.0.address, Some(4096));
}

#[test]
fn views_at_constant_addresses_time_alike_with_and_without_numbers() {
    // A timing-only run reserves each constant-address buffer at its size and address,
    // as a run with numbers places it: the same transfers, so the same cycles.
    let text = constant_addresses();
    let mut o = options();
    o.scalars.insert("scale".into(), "2.0".into());
    let with_numbers = run_result(&text, &o, &[]).unwrap();
    o.timing_only = true;
    let timing_only = run_result(&text, &o, &[]).unwrap();
    assert!(with_numbers.run.total_cycles > 0.0);
    assert_eq!(timing_only.run.total_cycles, with_numbers.run.total_cycles);
}

#[test]
fn view_offsets_from_tile_ids_and_loop_variables_size_their_buffers() {
    // Each of 2 tiles views `x + (2 * tile + i) * 16` for i in 0..3: the furthest view
    // starts at (2 + 2) * 16 = 64 and reaches 16 more.
    let text = "#s = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>
#id = affine_map<(d0) -> (d0)>
func.func @f(%x: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  %t = ktdp.get_compute_tile_id : index
  %first = arith.muli %t, %c2 : index
  scf.for %i = %c0 to %c3 step %c1 {
    %blk = arith.addi %first, %i : index
    %off = arith.muli %blk, %c16 : index
    %p = arith.addi %x, %off : index
    %v = ktdp.construct_memory_view %p, sizes: [16], strides: [1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<16xf32>
    %a = ktdp.construct_access_tile %v[%c0] {access_tile_set = #s, access_tile_order = #id} : memref<16xf32> -> !ktdp.access_tile<16xindex>
    %d = ktdp.load %a : !ktdp.access_tile<16xindex> -> tensor<16xf32>
    ktdp.store %d, %a : tensor<16xf32>, !ktdp.access_tile<16xindex>
  }
  return
}
";
    let inputs = driver::ktir_inputs(text, &options()).unwrap();
    let x = &inputs.buffers[0];
    assert_eq!(
        (x.name.as_str(), x.elements, x.role),
        ("x", 80, Role::InOut)
    );
    assert_eq!(x.shape, [80]);
    let mut o = options();
    o.timing_only = true;
    assert!(run_result(text, &o, &[]).is_ok());
}

#[test]
fn scratchpad_views_take_initial_contents_by_view_name() {
    // Each core copies its scratchpad view %lv (at element 0) to its row block of %y.
    let text = format!(
        "{SETS}func.func @f(%y: index) attributes {{grid = [2]}} {{
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %lx = arith.constant 0 : index
  %id = ktdp.get_compute_tile_id : index
  %off = arith.muli %id, %c32 : index
  %ya = arith.addi %y, %off : index
  %whole = ktdp.construct_memory_view %y, sizes: [8, 8], strides: [8, 1] {{coordinate_set = #s, memory_space = #ktdp.memory_space<global>}} : memref<8x8xf32>
{}{}  %a = ktdp.load %lv_t : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
  ktdp.store %a, %yv_t : tensor<4x8xf32>, !ktdp.access_tile<4x8xindex>
  return
}}
",
        view("lv", "lx", "ct_local"),
        view("yv", "ya", "global"),
    );
    let inputs = driver::ktir_inputs(&text, &options()).unwrap();
    let lv = &inputs.scratchpads[0];
    assert_eq!(
        (lv.name.as_str(), lv.address, &lv.cores, lv.role),
        ("lv", 0, &vec![0, 1], Role::In)
    );
    let values: Vec<f64> = (0..32).map(|i| f64::from(i) + 0.5).collect();
    let files = [("lv".to_string(), npy("<f4", &[4, 8], &values))];
    let r = run_result(&text, &options(), &files).unwrap();
    let y = buffer(&r, "y");
    assert_eq!(y.len(), 64);
    for core in 0..2 {
        for i in 0..32 {
            assert_eq!(y[core * 32 + i], i as f32 + 0.5);
        }
    }
}

#[test]
fn out_of_view_points_are_masked_on_request_and_counted() {
    let text =
        std::fs::read_to_string(root().join("tests/ktir/run-errors/out_of_view.mlir")).unwrap();
    let mut o = options();
    o.out_of_bounds = OutOfBounds::Mask;
    let values: Vec<f64> = (1..=32).map(f64::from).collect();
    let files = [("x".to_string(), npy("<f4", &[4, 8], &values))];
    let r = run_result(&text, &o, &files).unwrap();
    // Columns 4..7 are outside %xv's coordinate_set: they load as 0.
    assert_eq!(r.run.masked_points, Some(16));
    let y = buffer(&r, "y");
    for row in 0..4 {
        for col in 0..8 {
            let want = if col < 4 {
                (row * 8 + col + 1) as f32
            } else {
                0.0
            };
            assert_eq!(y[row * 8 + col], want, "row {row} col {col}");
        }
    }
    // Unmasked runs report no count.
    let r = run_result(
        &constant_addresses(),
        &{
            let mut o = options();
            o.scalars.insert("scale".into(), "2".into());
            o
        },
        &[],
    )
    .unwrap();
    assert_eq!(r.run.masked_points, None);
}

#[test]
fn scalar_arguments_take_their_type_from_the_signature() {
    let text = constant_addresses()
        .replace("%scale: f32", "%scale: f16")
        .replace("tensor.splat %scale", "tensor.splat %s32")
        .replace(
            "  %src = ",
            "  %s32 = arith.extf %scale : f16 to f32\n  %src = ",
        );
    let mut o = options();
    o.scalars.insert("scale".into(), "0.1".into());
    let r = run_result(&text, &o, &[]).unwrap();
    let (src, dst) = (buffer(&r, "src"), buffer(&r, "dst"));
    // The value is rounded to f16 as the argument's type says.
    let s = half::f16::from_f64(0.1).to_f32();
    assert!(
        (dst[3] - src[3] * s).abs() < 1e-6,
        "{} {}",
        dst[3],
        src[3] * s
    );
    o.scalars.insert("scale".into(), "1e6".into());
    let e = run_result(&text, &o, &[]).unwrap_err();
    assert!(e.contains("does not fit f16"), "{e}");
}
