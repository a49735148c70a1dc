//! Snapshot tests of every pass on every gallery model: the readable text of each pass is
//! kept under `tests/compiler/<model>/<pass>.txt`, and the two IRs as summaries (the full
//! SDSC and KTIR texts are long; their structure is what a review needs to see change).
//! A model that does not compile yet keeps its error in `error.txt`.
//! Regenerate after a deliberate change: `UPDATE_EXPECT=1 cargo test -p compiler --test gallery_snapshots`.

use compiler::{compile, Options, Target, PASS_NAMES};
use expect_test::expect_file;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn gallery() -> Vec<(String, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/graphs");
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .expect("examples/graphs")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    out.sort();
    assert!(out.len() >= 10, "gallery not found in {}", dir.display());
    out
}

/// KTIR summary: per kernel, its signature line, its time cut as its header comment
/// states it (loops, tiles, bytes per operand and re-read factor, buffering) when it is cut,
/// and how many of each op it has.
fn ktir_summary(text: &str) -> String {
    // The parser drops comments: the header is the comment line before `func.func @name(`.
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    let mut last_comment = "";
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(c) = t.strip_prefix("// ") {
            last_comment = c;
        } else if let Some(rest) = t.strip_prefix("func.func @") {
            let name = rest.split('(').next().unwrap_or("").to_string();
            if let Some(at) = last_comment.find(" time steps per core: ") {
                // From the step count on: "N time steps per core: loops ..., ...".
                let from = last_comment[..at].rfind("; ").map_or(0, |i| i + 2);
                headers.insert(name, last_comment[from..].to_string());
            }
            last_comment = "";
        }
    }
    let (module, diags) = ktir::parse(text);
    assert!(
        diags.iter().all(|d| !d.is_error()),
        "lowered KTIR does not parse: {diags:?}"
    );
    let mut s = String::new();
    for f in &module.funcs {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        let mut stack = vec![&f.body];
        while let Some(b) = stack.pop() {
            for op in &b.ops {
                *counts.entry(op.kind.name().to_string()).or_default() += 1;
                stack.extend(op.kind.regions());
            }
        }
        s.push_str(&format!(
            "@{} grid {:?} args {}\n",
            f.name,
            f.grid.clone().unwrap_or_default(),
            f.args
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if let Some(h) = headers.get(&f.name) {
            for part in h.split("; ") {
                s.push_str(&format!("  | {part}\n"));
            }
        }
        for (op, n) in counts {
            s.push_str(&format!("  {op} x{n}\n"));
        }
    }
    s
}

/// SDSC summary: per descriptor, cores used and the slices per dim.
fn sdsc_summary(bundle: &sdsc::Bundle) -> String {
    let v = bundle.to_value();
    let mut s = format!("bundle {} with {} ops\n", bundle.name, bundle.ops.len());
    for (op, sd) in bundle
        .ops
        .iter()
        .zip(v["sdscs"].as_array().into_iter().flatten())
    {
        let text = sd.to_string();
        let field = |key: &str| -> String {
            text.find(&format!("\"{key}\":"))
                .map(|i| {
                    let rest = &text[i + key.len() + 3..];
                    let end = rest.find([',', '}']).unwrap_or(rest.len());
                    rest[..end].to_string()
                })
                .unwrap_or_else(|| "-".into())
        };
        s.push_str(&format!(
            "  {op}: cores {}, exUnit {}\n",
            field("numCoresUsed_"),
            field("exUnit")
        ));
    }
    s
}

#[test]
fn every_pass_of_every_gallery_model() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/compiler");
    for (name, path) in gallery() {
        let text = std::fs::read_to_string(&path).unwrap();
        let graph = graph::load_json(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let dir = root.join(&name);
        // expect-test writes missing files (UPDATE_EXPECT=1) but not their directories.
        let _ = std::fs::create_dir_all(&dir);
        match compile(&graph, &Target::spyre32(), &Options::default()) {
            Ok(c) => {
                assert!(
                    !dir.join("error.txt").exists(),
                    "{name} compiles now: delete tests/compiler/{name}/error.txt"
                );
                for pass in PASS_NAMES {
                    let snap = c
                        .snapshot(pass)
                        .unwrap_or_else(|| panic!("{name}: no {pass}"));
                    let body = match *pass {
                        "sdsc" => sdsc_summary(c.sdsc.as_ref().expect("bundle")),
                        "ktir" => ktir_summary(&snap.text),
                        _ => snap.text.clone(),
                    };
                    expect_file![dir.join(format!("{pass}.txt"))].assert_eq(&body);
                }
            }
            Err(e) => {
                // The passes that do run are still snapshotted.
                for pass in PASS_NAMES {
                    let options = Options {
                        stop_after: Some(pass.to_string()),
                        ..Options::default()
                    };
                    match compile(&graph, &Target::spyre32(), &options) {
                        Ok(c) => {
                            let snap = c.snapshot(pass).expect("snapshot");
                            expect_file![dir.join(format!("{pass}.txt"))].assert_eq(&snap.text);
                        }
                        Err(_) => break,
                    }
                }
                expect_file![dir.join("error.txt")].assert_eq(&format!("{e}\n"));
            }
        }
    }
}
