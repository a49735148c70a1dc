//! The `spyre` binary end to end: the thin path's commands print what they promise and
//! exit with the right status.

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn spyre(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spyre"))
        .args(args)
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
