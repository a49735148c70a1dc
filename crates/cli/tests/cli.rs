//! The `spyre` binary end to end: the thin path's commands print what they promise and
//! exit with the right status.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The compile cache the tests' runs use: a temporary directory, never the user's.
fn test_cache_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("spyre-cli-test-cache-{}", std::process::id()))
}

fn spyre(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spyre"))
        .args(args)
        .env("SPYRE_CACHE_DIR", test_cache_dir())
        .current_dir(root())
        .output()
        .expect("run spyre")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const EXAMPLE: &str = "examples/graphs/matmul_add.json";

#[test]
fn compile_emits_ktir_that_verifies() {
    let o = spyre(&["compile", EXAMPLE, "--emit", "ktir"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("func.func @k0_matmul"), "{text}");
    assert!(text.contains("linalg.matmul"));
    assert!(ktir::check(&text).is_ok(), "emitted KTIR does not verify");
}

#[test]
fn run_prints_cycles_and_the_error_against_the_reference() {
    let trace = std::env::temp_dir().join(format!("spyre-cli-trace-{}.json", std::process::id()));
    let o = spyre(&["run", EXAMPLE, "--trace", trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("cycles"), "{text}");
    assert!(
        text.contains("max abs error") && text.contains("PASS"),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert!(json["traceEvents"]
        .as_array()
        .is_some_and(|e| !e.is_empty()));
    let _ = std::fs::remove_file(trace);
}

#[test]
fn compile_after_a_pass_prints_its_snapshot() {
    let o = spyre(&["compile", EXAMPLE, "--after", "work-division"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("core -> "), "{}", stdout(&o));
    let o = spyre(&["compile", EXAMPLE, "--after", "nonesuch"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("work-division"), "{}", stderr(&o));
}

#[test]
fn ktir_verify_reports_errors_on_stderr_with_status_1() {
    let o = spyre(&["ktir", "verify", "tests/ktir/invalid/several_errors.mlir"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("several_errors.mlir:5:10: error: unknown or unsupported operation"),
        "{err}"
    );
    let o = spyre(&["ktir", "verify", "tests/ktir/valid/add_rows.mlir"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn ktir_fmt_prints_canonical_text() {
    let o = spyre(&["ktir", "fmt", "tests/ktir/valid/aliases_old_spelling.mlir"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("#ktdp.memory_space<global>"), "{text}");
    assert!(!text.contains("spyre_memory_space"));
}

#[test]
fn bad_files_are_errors_not_crashes() {
    let dir = std::env::temp_dir().join(format!("spyre-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{ \"format\": \"spyre-graph\", \"version\": 1,").unwrap();
    let o = spyre(&["run", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("bad.json") && stderr(&o).contains("line"),
        "{}",
        stderr(&o)
    );
    let o = spyre(&["run", "no/such/file.json"]);
    assert_eq!(o.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn compile_writes_an_sdsc_bundle_directory_that_reads_back() {
    let dir = std::env::temp_dir().join(format!("spyre-cli-sdsc-{}", std::process::id()));
    let o = spyre(&[
        "compile",
        EXAMPLE,
        "--emit",
        "sdsc",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let manifest = std::fs::read_to_string(dir.join("bundle.json")).unwrap();
    let bundle = sdsc::Bundle::from_json(&manifest).unwrap();
    assert_eq!(bundle.ops.len(), 2);
    for (i, op) in bundle.ops.iter().enumerate() {
        let file = dir.join(sdsc::Bundle::op_file_name(i, op));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("numCoresUsed_"), "{}", file.display());
    }
    let mlir = std::fs::read_to_string(dir.join("bundle.mlir")).unwrap();
    assert!(mlir.contains(&sdsc::Bundle::op_file_name(0, &bundle.ops[0])));
    let _ = std::fs::remove_dir_all(dir);
}

const SCALE: &str = r#"
func.func @double(%x: index, %y: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %id = ktdp.get_compute_tile_id : index
  %r = arith.muli %id, %c2 : index
  %xv = ktdp.construct_memory_view %x, sizes: [4, 8], strides: [8, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 >= 0, 7 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<4x8xf16>
  %yv = ktdp.construct_memory_view %y, sizes: [4, 8], strides: [8, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 >= 0, 7 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<4x8xf16>
  %xt = ktdp.construct_access_tile %xv[%r, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, 1 - d0 >= 0, d1 >= 0, 7 - d1 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<4x8xf16> -> !ktdp.access_tile<2x8xindex>
  %yt = ktdp.construct_access_tile %yv[%r, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, 1 - d0 >= 0, d1 >= 0, 7 - d1 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<4x8xf16> -> !ktdp.access_tile<2x8xindex>
  %a = ktdp.load %xt : !ktdp.access_tile<2x8xindex> -> tensor<2x8xf16>
  %b = arith.addf %a, %a : tensor<2x8xf16>
  ktdp.store %b, %yt : tensor<2x8xf16>, !ktdp.access_tile<2x8xindex>
  return
}
"#;

#[test]
fn run_on_a_ktir_file_reads_and_writes_npy_buffers() {
    let dir = std::env::temp_dir().join(format!("spyre-cli-ktir-{}", std::process::id()));
    let (ins, outs) = (dir.join("in"), dir.join("out"));
    std::fs::create_dir_all(&ins).unwrap();
    let prog = dir.join("double.mlir");
    std::fs::write(&prog, SCALE).unwrap();
    // First run: random inputs, outputs saved; then feed x back in and check y = 2x.
    let o = spyre(&[
        "run",
        prog.to_str().unwrap(),
        "--machine",
        "tiny4",
        "--save-outputs",
        outs.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("buffer x") && stdout(&o).contains("[4, 8]"),
        "{}",
        stdout(&o)
    );
    std::fs::copy(outs.join("x.npy"), ins.join("x.npy")).unwrap();
    let o = spyre(&[
        "run",
        prog.to_str().unwrap(),
        "--machine",
        "tiny4",
        "--inputs",
        ins.to_str().unwrap(),
        "--save-outputs",
        outs.to_str().unwrap(),
        "--seed",
        "9",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let read = |p: &std::path::Path| -> Vec<half::f16> {
        let bytes = std::fs::read(p).unwrap();
        npyz::NpyFile::new(&bytes[..])
            .unwrap()
            .into_vec::<half::f16>()
            .unwrap()
    };
    let (x, y) = (read(&ins.join("x.npy")), read(&outs.join("y.npy")));
    assert_eq!(x.len(), 32);
    for (a, b) in x.iter().zip(&y) {
        assert_eq!(f32::from(*b), f32::from(*a) * 2.0);
    }
    // A wrong-size input is a clear error.
    std::fs::write(
        ins.join("x.npy"),
        &std::fs::read(outs.join("x.npy")).unwrap()[..10],
    )
    .unwrap();
    let o = spyre(&[
        "run",
        prog.to_str().unwrap(),
        "--inputs",
        ins.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    // A right-sized array of the wrong shape, and a misspelt name, are errors too.
    let mut header = "{'descr': '<f4', 'fortran_order': False, 'shape': (8, 4), }".to_string();
    while !(11 + header.len()).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut f = b"\x93NUMPY\x01\x00".to_vec();
    f.extend((header.len() as u16).to_le_bytes());
    f.extend(header.bytes());
    f.extend([0u8; 32 * 4]);
    std::fs::write(ins.join("x.npy"), &f).unwrap();
    let run = |ins: &std::path::Path| {
        spyre(&[
            "run",
            prog.to_str().unwrap(),
            "--machine",
            "tiny4",
            "--inputs",
            ins.to_str().unwrap(),
        ])
    };
    let o = run(&ins);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("shape [8, 4]"), "{}", stderr(&o));
    std::fs::remove_file(ins.join("x.npy")).unwrap();
    std::fs::copy(outs.join("x.npy"), ins.join("xx.npy")).unwrap();
    let o = run(&ins);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("input 'xx'") && stderr(&o).contains("did you mean 'x'"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bench_refuses_absurd_run_counts_with_the_limit() {
    for runs in ["18446744073709551615", "1000000000"] {
        let o = spyre(&["bench", EXAMPLE, "--runs", runs]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("at most 1000"), "{}", stderr(&o));
    }
}

#[test]
fn run_on_invalid_ktir_prints_located_diagnostics() {
    let dir = std::env::temp_dir().join(format!("spyre-cli-badktir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("bad.mlir");
    std::fs::write(&prog, SCALE.replace("arith.addf", "arith.addff")).unwrap();
    let o = spyre(&["run", prog.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("bad.mlir:24:8: error: unknown or unsupported operation"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn inspect_reads_onnx_models() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/graph/onnx");
    let model = std::fs::read_dir(&dir)
        .expect("tests/graph/onnx")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "onnx"))
        .expect("an .onnx file in tests/graph/onnx");
    let o = spyre(&["inspect", model.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("input") && text.contains("parameters"),
        "{text}"
    );
    let bad = std::env::temp_dir().join(format!("spyre-bad-{}.onnx", std::process::id()));
    std::fs::write(&bad, [0x0a, 0xff, 0xff, 0x01]).unwrap();
    let o = spyre(&["inspect", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(".onnx"), "{}", stderr(&o));
    let _ = std::fs::remove_file(bad);
}

/// The line of `text` that starts with `key`, without the key.
fn field<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no '{key}' in:\n{text}"))
        .trim()
}

#[test]
fn run_timing_only_prints_the_same_time_and_says_no_numbers_were_computed() {
    let full = spyre(&["run", EXAMPLE]);
    let timed = spyre(&["run", EXAMPLE, "--timing-only"]);
    assert!(timed.status.success(), "{}", stderr(&timed));
    let (f, t) = (stdout(&full), stdout(&timed));
    assert_eq!(field(&f, "cycles"), field(&t, "cycles"));
    assert_eq!(field(&f, "events"), field(&t, "events"));
    assert!(t.contains("not computed (timing-only run)"), "{t}");
    assert!(!t.contains("PASS") && !t.contains("max abs error"), "{t}");
    let json = spyre(&["run", EXAMPLE, "--timing-only", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["timingOnly"], true);
    assert_eq!(v["outputsChecked"], false);
    // KTIR files too; their buffers have no contents to save.
    let k = spyre(&[
        "run",
        "tests/ktir/valid/indirect_gather.mlir",
        "--timing-only",
    ]);
    assert!(k.status.success(), "{}", stderr(&k));
    let text = stdout(&k);
    assert!(text.contains("not computed"), "{text}");
    assert!(
        text.contains("assumption     line 18: 'ktdp.construct_indirect_access_tile'"),
        "{text}"
    );
    let dir = std::env::temp_dir().join(format!("spyre-cli-timing-{}", std::process::id()));
    let o = spyre(&[
        "run",
        "tests/ktir/valid/add_rows.mlir",
        "--timing-only",
        "--save-outputs",
        dir.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--save-outputs"), "{}", stderr(&o));
}

#[test]
fn the_8b_layer_runs_timing_only_with_cycles_and_a_bottleneck() {
    let model = "examples/graphs/llama3_8b_layer.json";
    // With numbers it is refused: its weights are not materialised.
    let o = spyre(&["run", model]);
    assert!(
        stderr(&o).contains("planning and timing only"),
        "{}",
        stderr(&o)
    );
    // Timing-only, its kernels (cut in time where a core's slice outgrows the
    // scratchpad) run on spyre32.
    let o = spyre(&["run", model, "--timing-only"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let cycles: f64 = field(&text, "cycles")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(cycles > 1e6, "{text}");
    assert!(field(&text, "bottleneck").starts_with("Memory"), "{text}");
    assert!(text.contains("not computed"), "{text}");
}

#[test]
fn a_long_run_draws_no_progress_bar_when_stderr_is_not_a_terminal() {
    // Long enough (over the bar's delay) for a bar to appear on a terminal.
    let started = std::time::Instant::now();
    let o = spyre(&["run", "examples/graphs/llama_decoder_layer.json"]);
    let took = started.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{took:?}: {}", stderr(&o));
    assert!(stdout(&o).contains("cycles"));
}

#[test]
fn bench_times_the_pipeline_and_reports_events_per_second() {
    let o = spyre(&["bench", EXAMPLE, "--runs", "2", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ms"].as_array().map(Vec::len), Some(2));
    let events = v["events"].as_f64().unwrap();
    let median = v["medianMs"].as_f64().unwrap();
    assert!(events > 0.0 && median > 0.0, "{v}");
    let rate = v["eventsPerSecond"].as_f64().unwrap();
    assert!((rate - events / (median / 1e3)).abs() <= 1e-6 * rate, "{v}");
    // The same events as a run.
    let run = spyre(&["run", EXAMPLE]);
    assert_eq!(field(&stdout(&run), "events"), events.to_string());
    let o = spyre(&["bench", EXAMPLE, "--runs", "1", "--timing-only"]);
    let text = stdout(&o);
    assert!(
        text.contains("timing only") && text.contains("events/s"),
        "{text}"
    );
}

#[test]
fn attention_can_be_compiled_as_an_online_softmax_over_key_blocks() {
    let model = "examples/graphs/gqa_attention_op.json";
    let o = spyre(&[
        "compile",
        model,
        "--after",
        "decompose",
        "--attention-block",
        "16",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("/scores3:") && !text.contains("/scores4:"),
        "{text}"
    );
    let o = spyre(&["run", model, "--attention-block", "16"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("PASS"), "{}", stdout(&o));
}

/// Every key of `v` (objects at any depth) that is not camelCase.
fn snake_keys(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, x) in map {
                if k.contains('_') || k.starts_with(|c: char| c.is_ascii_uppercase()) {
                    out.push(format!("{path}/{k}"));
                }
                snake_keys(x, &format!("{path}/{k}"), out);
            }
        }
        serde_json::Value::Array(xs) => {
            for (i, x) in xs.iter().enumerate() {
                snake_keys(x, &format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn run_json_is_camel_case_throughout() {
    for file in [EXAMPLE, "tests/ktir/valid/add_rows.mlir"] {
        let o = spyre(&["run", file, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v["summary"]["totalCycles"].as_f64().unwrap() > 0.0);
        let mut bad = Vec::new();
        snake_keys(&v, "", &mut bad);
        assert!(bad.is_empty(), "{file}: snake_case keys {bad:?}");
    }
}

#[test]
fn the_kind_of_a_file_comes_from_its_content() {
    // A KTIR module under a name that says nothing still runs as KTIR.
    let dir = std::env::temp_dir().join(format!("spyre-cli-kind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("program.txt");
    std::fs::copy(root().join("tests/ktir/valid/add_rows.mlir"), &path).unwrap();
    let o = spyre(&["run", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("functions      add_rows"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn run_roofline_prints_a_row_per_kernel_and_a_program_line_and_json_carries_it() {
    // Unfused, the matmul and its bias add are two kernels.
    let o = spyre(&["run", EXAMPLE, "--roofline", "--no-fuse"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let header = text
        .lines()
        .position(|l| l.starts_with("kernel "))
        .expect(&text);
    let rows: Vec<&str> = text.lines().skip(header + 1).take(2).collect();
    assert!(
        rows[0].starts_with("k0_matmul") && rows[0].contains("dram"),
        "{text}"
    );
    assert!(rows[1].starts_with("k1_add_bias"), "{text}");
    assert!(
        text.contains("program: ") && text.contains("ratio"),
        "{text}"
    );
    assert!(
        text.contains("assumption: DRAM bound: bytes / 150.0 B/cycle"),
        "{text}"
    );
    // Without the flag, no table.
    let plain = stdout(&spyre(&["run", EXAMPLE]));
    assert!(!plain.contains("program: "), "{plain}");

    // Fused, the bias add is the matmul's epilogue: one kernel.
    let fused = stdout(&spyre(&["run", EXAMPLE, "--roofline"]));
    let header = fused
        .lines()
        .position(|l| l.starts_with("kernel "))
        .expect(&fused);
    let row = fused.lines().nth(header + 1).unwrap_or_default();
    assert!(row.starts_with("k0_matmul_add_bias"), "{fused}");
    assert!(
        fused
            .lines()
            .nth(header + 2)
            .is_some_and(|l| l.starts_with("program: ")),
        "{fused}"
    );

    let o = spyre(&["run", EXAMPLE, "--json", "--no-fuse"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let r = &v["roofline"];
    assert_eq!(r["kernels"].as_array().map(Vec::len), Some(2), "{r}");
    // As executed: 128 x 130 x 100 padded to whole sticks, 128 x 192 x 128.
    assert_eq!(r["kernels"][0]["macs"], 128 * 192 * 128);
    assert!(r["program"]["bounds"]["lowerBoundCycles"].as_f64().unwrap() > 0.0);
    assert_eq!(r["rates"]["dramBytesPerCycle"], 150.0);
}

#[test]
fn timing_roofline_shows_both_models_per_kernel_and_json_carries_them() {
    for file in [EXAMPLE, "tests/ktir/run/softmax.mlir"] {
        let o = spyre(&["run", file, "--timing", "roofline"]);
        assert!(o.status.success(), "{file}: {}", stderr(&o));
        let text = stdout(&o);
        let header = text
            .lines()
            .position(|l| l.starts_with("kernel ") && l.contains("difference"))
            .expect(&text);
        let first = text.lines().nth(header + 1).unwrap_or_default();
        let cols: Vec<&str> = first.split_whitespace().collect();
        // kernel, event, roofline, difference, ...
        let event: f64 = cols[1].parse().expect(first);
        let model: f64 = cols[2].parse().expect(first);
        let diff: f64 = cols[3].parse().expect(first);
        assert!(event > 0.0 && model > 0.0, "{first}");
        assert!((model - event - diff).abs() < 1.0, "{first}");
        assert!(text.contains("hbm_bytes_per_cycle_per_core"), "{text}");
        let plain = stdout(&spyre(&["run", file]));
        assert!(!plain.contains("timing models"), "{plain}");
    }
    let o = spyre(&["run", EXAMPLE, "--json", "--no-fuse"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let m = &v["latencyModel"];
    assert_eq!(m["kernels"].as_array().map(Vec::len), Some(2), "{m}");
    assert!(m["kernels"][0]["sequentialCycles"].as_f64().unwrap() > 0.0);
    assert!(m["params"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["label"] == "systolic_flops_per_cycle"));
}

/// Writes `A.npy` (f16 [128, 100], the input of the matmul_add example) into `dir`.
fn write_example_input(dir: &std::path::Path, name: &str, shape: &[u64], shift: u64) {
    use npyz::WriterBuilder;
    let n: u64 = shape.iter().product();
    let file = std::fs::File::create(dir.join(format!("{name}.npy"))).unwrap();
    let mut w = npyz::WriteOptions::<half::f16>::new()
        .default_dtype()
        .shape(shape)
        .writer(std::io::BufWriter::new(file))
        .begin_nd()
        .unwrap();
    w.extend((0..n).map(|i| half::f16::from_f32((((i + shift) % 17) as f32 - 8.0) / 16.0)))
        .unwrap();
    w.finish().unwrap();
}

#[test]
fn run_on_a_graph_reads_the_users_inputs_and_compares_with_the_users_outputs() {
    let dir = std::env::temp_dir().join(format!("spyre-cli-user-data-{}", std::process::id()));
    let (ins, outs) = (dir.join("in"), dir.join("out"));
    std::fs::create_dir_all(&ins).unwrap();
    write_example_input(&ins, "A", &[128, 100], 0);
    let o = spyre(&[
        "run",
        EXAMPLE,
        "--inputs",
        ins.to_str().unwrap(),
        "--save-outputs",
        outs.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(outs.join("C.npy").is_file());
    // The saved outputs are what the user expects: they match.
    let o = spyre(&[
        "run",
        EXAMPLE,
        "--inputs",
        ins.to_str().unwrap(),
        "--expected",
        outs.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("expected C") && text.contains("PASS"),
        "{text}"
    );
    // Outputs of other inputs do not.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    write_example_input(&other, "A", &[128, 100], 5);
    let o = spyre(&[
        "run",
        EXAMPLE,
        "--inputs",
        other.to_str().unwrap(),
        "--expected",
        outs.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("FAIL"), "{}", stdout(&o));
    // A misnamed input is an error naming the closest input.
    std::fs::rename(ins.join("A.npy"), ins.join("a.npy")).unwrap();
    let o = spyre(&["run", EXAMPLE, "--inputs", ins.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("did you mean 'A'"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_onnx_model_with_external_data_runs_its_own_test_data_set_as_it_is() {
    let dir = "tests/graph/onnx_external";
    let model = format!("{dir}/mlp_external.onnx");
    let set = format!("{dir}/test_data_set_0");
    let o = spyre(&["run", &model, "--inputs", &set, "--expected", &set]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("output y") && text.contains("expected y") && !text.contains("FAIL"),
        "{text}"
    );
    let o = spyre(&["inspect", &model]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn bench_reads_an_onnx_models_external_data_as_run_does() {
    let model = "tests/graph/onnx_external/mlp_external.onnx";
    let o = spyre(&["bench", model, "--runs", "1", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["timingOnly"], false, "{v}");
    assert!(v["events"].as_f64().unwrap() > 0.0, "{v}");
    // Without its weights file it times only, as a run does, and a run with numbers
    // names the missing file.
    let dir = std::env::temp_dir().join(format!("spyre-cli-bench-external-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("mlp_external.onnx");
    std::fs::copy(root().join(model), &copy).unwrap();
    let p = copy.to_str().unwrap();
    let o = spyre(&["bench", p, "--runs", "1", "--timing-only"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = spyre(&["bench", p, "--runs", "1"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("weights.bin"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_timing_only_run_never_reads_external_data() {
    let dir = std::env::temp_dir().join(format!("spyre-cli-external-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("mlp_external.onnx");
    std::fs::copy(
        root().join("tests/graph/onnx_external/mlp_external.onnx"),
        &model,
    )
    .unwrap();
    // weights.bin is not there: planning and timing need only the shapes.
    let o = spyre(&["run", model.to_str().unwrap(), "--timing-only"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("cycles"), "{}", stdout(&o));
    let o = spyre(&["run", model.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("weights.bin"), "{}", stderr(&o));
}

#[test]
fn ktir_inputs_lists_buffers_and_scalars_and_run_takes_places_and_masks() {
    let dir = std::env::temp_dir().join(format!("spyre-cli-inputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A .ktir file whose views sit at constant addresses, and a run-error program.
    let text =
        std::fs::read_to_string(root().join("tests/ktir/run-errors/place_unused.mlir")).unwrap();
    let prog = dir.join("copy.ktir");
    std::fs::write(&prog, &text).unwrap();
    let p = prog.to_str().unwrap();
    let o = spyre(&["ktir", "inputs", p]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("buffer      src            f32    [4, 8]           0          in"),
        "{out}"
    );
    assert!(
        out.contains("buffer      dst            f32    [4, 8]           64         out"),
        "{out}"
    );
    let o = spyre(&["ktir", "inputs", p, "--json", "--place", "input=0"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["buffers"][0]["name"], "input");
    assert_eq!(v["buffers"][0]["address"], 0);
    assert_eq!(v["buffers"][1]["role"], "out");
    // A manifest names placements too; the run says so in the buffers it prints.
    let manifest = dir.join("places.json");
    std::fs::write(&manifest, r#"{"input": 0, "output": 64}"#).unwrap();
    let o = spyre(&[
        "run",
        p,
        "--machine",
        "tiny4",
        "--place-file",
        manifest.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("buffer input"), "{}", stdout(&o));
    assert!(stdout(&o).contains("buffer output"), "{}", stdout(&o));
    // Masking is announced with its count.
    let oob = root().join("tests/ktir/run-errors/out_of_view.mlir");
    let o = spyre(&["run", oob.to_str().unwrap(), "--machine", "tiny4"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--out-of-bounds mask"),
        "{}",
        stderr(&o)
    );
    let o = spyre(&[
        "run",
        oob.to_str().unwrap(),
        "--machine",
        "tiny4",
        "--out-of-bounds",
        "mask",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("masked         16 points outside their views"),
        "{}",
        stdout(&o)
    );
    // Float scalars, typed by the signature, and a KTIR file given to compile.
    let scale = root().join("tests/ktir/run-errors/unknown_arg.mlir");
    let o = spyre(&[
        "run",
        scale.to_str().unwrap(),
        "--machine",
        "tiny4",
        "--arg",
        "n=1",
        "--arg",
        "h=0.0883",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = spyre(&["compile", p]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("a KTIR module, not a model graph"),
        "{}",
        stderr(&o)
    );
    // Content that fits no kind is a clear error.
    let junk = dir.join("notes.txt");
    std::fs::write(&junk, "hello world\n").unwrap();
    let o = spyre(&["run", junk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("neither a KTIR module"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn run_timing_only_prints_cycles_per_layer() {
    let o = spyre(&[
        "run",
        "examples/graphs/tiny_two_layer.json",
        "--timing-only",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let total: f64 = field(&text, "cycles")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let table = text.split("per layer").nth(1).expect("a per-layer table");
    let rows: Vec<(&str, f64)> = table
        .lines()
        .skip(2)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((*f.first()?, f.get(2)?.parse().ok()?))
        })
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r.0).collect();
    for want in ["embed", "layer0", "layer1", "final_norm", "lm_head"] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    // Kernels run one after another: the layers add up to the run, to within rounding.
    let sum: f64 = rows.iter().map(|r| r.1).sum();
    assert!(
        (sum - total).abs() <= rows.len() as f64 + 1.0,
        "{sum} vs {total}"
    );
}

const LLAMA: &str = "examples/graphs/llama_decoder_layer.json";

#[test]
fn compile_with_tp_prints_the_tensor_parallel_pass_and_each_segment_once() {
    let o = spyre(&["compile", LLAMA, "--tp", "4", "--emit", "ktir"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("==== tensor-parallel"), "{text}");
    assert!(text.contains("replicated"), "{text}");
    assert_eq!(text.matches("compiled once for all 4 cards").count(), 3);
}

#[test]
fn tensor_parallel_runs_take_inputs_compare_expected_save_outputs_and_trace() {
    let dir = std::env::temp_dir().join(format!("spyre-cli-tp-data-{}", std::process::id()));
    let (ins, one, two) = (dir.join("in"), dir.join("one"), dir.join("two"));
    std::fs::create_dir_all(&ins).unwrap();
    write_example_input(&ins, "hidden_states", &[1, 64, 256], 3);
    let i = ins.to_str().unwrap();
    // The one-card run's outputs for these inputs...
    let o = spyre(&[
        "run",
        LLAMA,
        "--inputs",
        i,
        "--save-outputs",
        one.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // ...are what the TP 2 run of the same inputs gives, gathered from the cards.
    let trace = dir.join("trace.json");
    let o = spyre(&[
        "run",
        LLAMA,
        "--tp",
        "2",
        "--inputs",
        i,
        "--expected",
        one.to_str().unwrap(),
        "--save-outputs",
        two.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("output y vs expected") && !text.contains("FAIL"),
        "{text}"
    );
    assert!(two.join("y.npy").is_file());
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let names: Vec<String> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["args"]["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("card link ")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("host runtime")),
        "{names:?}"
    );
    // Other inputs do not give those outputs.
    write_example_input(&ins, "hidden_states", &[1, 64, 256], 9);
    let o = spyre(&[
        "run",
        LLAMA,
        "--tp",
        "2",
        "--inputs",
        i,
        "--expected",
        one.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("FAIL"), "{}", stdout(&o));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_tensor_parallel_input_names_the_problem() {
    let o = spyre(&["run", LLAMA, "--tp", "3"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("attention heads (8)"), "{}", stderr(&o));
    let o = spyre(&["run", LLAMA, "--tp", "8", "--system", "ring4"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("has 4"), "{}", stderr(&o));
    let file = std::env::temp_dir().join(format!("spyre-cli-system-{}.json", std::process::id()));
    let mut v: serde_json::Value =
        serde_json::from_str(include_str!("../../sim/systems/ring4.json")).unwrap();
    v["card_links"].as_array_mut().unwrap().remove(1);
    std::fs::write(&file, v.to_string()).unwrap();
    let o = spyre(&[
        "run",
        LLAMA,
        "--tp",
        "2",
        "--system",
        file.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_file(&file);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("missing link card1 <-> card2"),
        "{}",
        stderr(&o)
    );
    let o = spyre(&["run", LLAMA, "--tp", "2", "--allreduce", "star"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("unknown all-reduce algorithm"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn compile_with_a_cache_dir_lowers_repeated_layers_once_and_comes_back_warm() {
    let dir = std::env::temp_dir().join(format!("spyre-cli-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_string_lossy().into_owned();
    let model = "examples/graphs/tiny_two_layer.json";
    let cold = spyre(&["compile", model, "--cache-dir", &d]);
    assert!(cold.status.success(), "{}", stderr(&cold));
    let e = stderr(&cold);
    assert!(e.contains("reused within the compile"), "{e}");
    assert!(!e.contains(" 0 reused within"), "{e}");
    let warm = spyre(&["compile", model, "--cache-dir", &d]);
    assert!(warm.status.success(), "{}", stderr(&warm));
    assert!(stderr(&warm).contains(": 0 lowered"), "{}", stderr(&warm));
    assert!(
        stderr(&warm).contains("warm, the whole compile from the cache"),
        "{}",
        stderr(&warm)
    );
    // The warm module has the cold one's kernels, under their own names (the parser
    // drops trailing comments, so the texts differ in those).
    let funcs = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.trim_start().starts_with("func.func"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(funcs(&stdout(&cold)), funcs(&stdout(&warm)));
    // The whole artifact holds the cold module as it was printed.
    assert_eq!(stdout(&cold), stdout(&warm));
    // `run` and `bench` take the same cache; `run` comes back warm and says so.
    let run = spyre(&["run", model, "--cache", &d]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stdout(&run).contains("compile cache"), "{}", stdout(&run));
    let run = spyre(&["run", model, "--cache", &d]);
    assert!(stdout(&run).contains("warm"), "{}", stdout(&run));
    let bench = spyre(&["bench", model, "--runs", "1", "--cache", &d]);
    assert!(bench.status.success(), "{}", stderr(&bench));
    // --no-cache compiles without it, and says nothing of a cache.
    let none = spyre(&["compile", model, "--no-cache"]);
    assert!(none.status.success(), "{}", stderr(&none));
    assert!(
        !stderr(&none).contains("compile cache"),
        "{}",
        stderr(&none)
    );
    assert_eq!(funcs(&stdout(&none)).len(), funcs(&stdout(&cold)).len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The graph of a PagedAttention per-op case (`tests/graph/ops/NAME.json`), written alone
/// to a temporary file the CLI loads.
fn paged_case(name: &str, test: &str) -> PathBuf {
    let text = std::fs::read_to_string(root().join(format!("tests/graph/ops/{name}.json")))
        .expect("read the case");
    let case: serde_json::Value = serde_json::from_str(&text).expect("case JSON");
    let path = std::env::temp_dir().join(format!(
        "spyre-cli-{test}-{name}-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, case["graph"].to_string()).expect("write the graph");
    path
}

/// Alignment 1 everywhere but the flags given.
fn padding_run(file: &Path, flags: &[&str]) -> serde_json::Value {
    let f = file.to_string_lossy();
    let mut args = vec!["run", &*f, "--json", "--no-cache"];
    for flag in [
        "--query-align",
        "--kv-align",
        "--decode-align",
        "--head-multiple",
        "--block-multiple",
    ] {
        if !flags.contains(&flag) {
            args.extend([flag, "1"]);
        }
    }
    args.extend(flags);
    let o = spyre(&args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("run JSON")
}

#[test]
fn each_padding_flag_adds_its_waste_against_alignment_1_and_shows_in_json() {
    let prefill = paged_case("paged_attention_chunked_prefill", "flags");
    let decode = paged_case("paged_attention_decode", "flags");
    let waste = |v: &serde_json::Value| {
        (
            v["padding"][0]["wastePercent"].as_f64().expect("waste"),
            v["padding"][0]["wastedCycles"]
                .as_f64()
                .expect("wasted cycles"),
        )
    };
    let kv = |v: &serde_json::Value| -> Vec<u64> {
        v["padding"][0]["sequences"]
            .as_array()
            .expect("sequences")
            .iter()
            .map(|s| s["paddedKv"].as_u64().expect("paddedKv"))
            .collect()
    };
    // Alignment 1: the ragged batch as it is, nothing wasted.
    let none = padding_run(&prefill, &[]);
    assert_eq!(waste(&none), (0.0, 0.0));
    assert_eq!(none["paddingRules"]["kvAlign"], 1);
    assert!(none["padding"][0]["cycles"].as_f64().expect("cycles") > 0.0);
    // 3 sequences of 5, 2 and 9 tokens, 2 new each, heads of 16, pages of 4 (2, 1 and 3
    // pages), each rule alone at its public value.
    let q = padding_run(&prefill, &["--query-align", "32"]);
    assert_eq!(q["padding"][0]["sequences"][0]["paddedQ"], 32);
    assert!((waste(&q).0 - 100.0 * 30.0 / 32.0).abs() < 1e-9);
    let k = padding_run(&prefill, &["--kv-align", "256"]);
    assert_eq!(kv(&k), [256, 256, 256]);
    assert!((waste(&k).0 - 100.0 * (1.0 - 16.0 / 768.0)).abs() < 1e-9);
    let h = padding_run(&prefill, &["--head-multiple", "64"]);
    assert_eq!(h["padding"][0]["paddedHeadDim"], 64);
    assert_eq!(waste(&h).0, 75.0);
    let b = padding_run(&prefill, &["--block-multiple", "64"]);
    assert_eq!(b["padding"][0]["paddedBlockSize"], 64);
    assert_eq!(kv(&b), [5 + 2 * 60, 2 + 60, 9 + 3 * 60]);
    for (name, v) in [("query", &q), ("kv", &k), ("head", &h), ("block", &b)] {
        let (w, cycles) = waste(v);
        assert!(w > 0.0 && cycles > 0.0, "{name}: {w}% {cycles}");
    }
    // Decode only: the decode alignment applies in place of the query and KV ones.
    let d1 = padding_run(&decode, &["--query-align", "32", "--kv-align", "256"]);
    assert_eq!(d1["padding"][0]["decodeOnly"], true);
    assert_eq!(waste(&d1), (0.0, 0.0));
    assert!(d1["padding"][0]["wastePercentWithoutDecodeAlignment"].as_f64() > Some(90.0));
    let d = padding_run(&decode, &["--decode-align", "32"]);
    assert_eq!(kv(&d), [32, 32, 32, 32]);
    let (w, cycles) = waste(&d);
    assert!(w > 90.0 && cycles > 0.0, "{w}% {cycles}");
    // No flag: the public rules, in the JSON of run and of bench.
    let f = prefill.to_string_lossy();
    let public = spyre(&["run", &f, "--json", "--no-cache"]);
    let public: serde_json::Value = serde_json::from_str(&stdout(&public)).expect("run JSON");
    let rules = serde_json::json!({
        "queryAlign": 32, "kvAlign": 256, "decodeAlign": 1, "headMultiple": 64, "blockMultiple": 64
    });
    assert_eq!(public["paddingRules"], rules);
    assert!(waste(&public).0 > waste(&q).0);
    let bench = spyre(&["bench", &f, "--runs", "1", "--json", "--no-cache"]);
    assert!(bench.status.success(), "{}", stderr(&bench));
    let bench: serde_json::Value = serde_json::from_str(&stdout(&bench)).expect("bench JSON");
    assert_eq!(bench["paddingRules"], rules);
    let _ = std::fs::remove_file(&prefill);
    let _ = std::fs::remove_file(&decode);
}

#[test]
fn bad_padding_flags_are_clear_errors_on_compile_run_and_bench() {
    for command in ["compile", "run", "bench"] {
        for (flags, says) in [
            (
                ["--kv-align", "0"],
                "--kv-align 0: an alignment is at least 1",
            ),
            (["--query-align", "0"], "--query-align 0"),
            (["--decode-align", "0"], "--decode-align 0"),
            (
                ["--head-multiple", "48"],
                "--head-multiple 48: must be a power of two",
            ),
            (
                ["--block-multiple", "96"],
                "--block-multiple 96: must be a power of two",
            ),
            (["--kv-align", "1000000"], "--kv-align 1000000: at most"),
        ] {
            let mut args = vec![command, EXAMPLE, "--no-cache"];
            args.extend(flags);
            let o = spyre(&args);
            assert!(!o.status.success(), "{args:?}");
            assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        }
    }
}

#[test]
fn the_padding_rules_are_part_of_the_compile_cache_key() {
    let dir = std::env::temp_dir().join(format!("spyre-cli-pad-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_string_lossy().into_owned();
    let graph = paged_case("paged_attention_decode", "key");
    let g = graph.to_string_lossy().into_owned();
    let compile = |flags: &[&str]| {
        let mut args = vec!["compile", &*g, "--cache", &*d];
        args.extend(flags);
        let o = spyre(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stderr(&o).contains("warm, the whole compile")
    };
    assert!(!compile(&[]), "the first compile is cold");
    assert!(compile(&[]), "the same compile again is warm");
    assert!(
        !compile(&["--kv-align", "128"]),
        "other rules miss the cache"
    );
    assert!(compile(&["--kv-align", "128"]));
    assert!(
        compile(&["--kv-align", "256"]),
        "the public rules' entry stays"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&graph);
}

#[test]
fn split_overrides_the_cost_model_for_one_op_and_bad_values_are_errors() {
    let o = spyre(&[
        "compile",
        EXAMPLE,
        "--after",
        "work-division",
        "--split",
        "matmul=4,1,1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("split: mb=4 out=1 in=1 -> 4 cores") && text.contains("rule: hint: mb=4"),
        "{text}"
    );
    // Without it, the cost model divides the matmul some other way.
    let plain = stdout(&spyre(&["compile", EXAMPLE, "--after", "work-division"]));
    assert!(!plain.contains("rule: hint"), "{plain}");
    // The run takes the same flag and times the split it was given.
    let o = spyre(&["run", EXAMPLE, "--split", "matmul=4,1,1"]);
    assert!(o.status.success(), "{}", stderr(&o));

    for (arg, says) in [
        ("matmul=4,x,1", "'x' is not a positive whole number"),
        ("matmul=4,0,1", "'0' is not a positive whole number"),
        ("=4,1,1", "no op name before '='"),
        ("matmul", "no '='"),
        (
            "matmul=4,1",
            "hint has 2 splits but batchmatmul has 3 iteration dims",
        ),
        ("matmul=3,1,1", "which does not divide it evenly"),
        ("nosuchop=1,1,1", "hint names no device op"),
    ] {
        let o = spyre(&["compile", EXAMPLE, "--split", arg]);
        assert!(!o.status.success(), "{arg}");
        assert!(stderr(&o).contains(says), "{arg}: {}", stderr(&o));
    }
    // The same op twice is an error, not the last value winning.
    let o = spyre(&[
        "compile",
        EXAMPLE,
        "--split",
        "matmul=4,1,1",
        "--split",
        "matmul=2,1,1",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--split 'matmul=2,1,1': 'matmul' was already given (4,1,1)"),
        "{}",
        stderr(&o)
    );
}
