//! The whole-compile artifact cache: a warm compile runs no pass and gives the cold
//! compile's program, a run through the cache matches the reference, the key follows the
//! graph, options and machine, and a stale, corrupted or unwritable cache is never used.

use driver::compiler::artifact_cache::{
    compile_key, passes_key, text_in_artifact, ArtifactOutcome,
};
use driver::{
    compile_with_cache_dir, ktir_with_cache_dir, load_graph, target_for, PipelineOptions,
};
use std::path::PathBuf;

const MODEL: &str = include_str!("../../../examples/graphs/tiny_two_layer.json");

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("spyre-artifacts-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn artifact(dir: &PathBuf) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.extension().is_some_and(|x| x == "artifact")
                && !p.to_string_lossy().ends_with(".passes.artifact")
        })
        .expect("an artifact was stored")
}

/// The kernels' signature lines of a module.
fn funcs(ktir: &Option<String>) -> Vec<String> {
    ktir.as_deref()
        .unwrap_or("")
        .lines()
        .filter(|l| l.trim_start().starts_with("func.func"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_warm_compile_runs_no_pass_and_gives_the_cold_program() {
    let graph = load_graph(MODEL, "tiny_two_layer").unwrap();
    let o = PipelineOptions::default();
    let dir = temp("warm");
    let mut passes = 0;
    let (cold, r) =
        compile_with_cache_dir(&graph, &o.machine, &o.compile, &mut |_| passes += 1, &dir).unwrap();
    assert_eq!(r.outcome, ArtifactOutcome::Miss, "{r:?}");
    assert!(passes > 0);
    let mut passes = 0;
    let (warm, r) =
        compile_with_cache_dir(&graph, &o.machine, &o.compile, &mut |_| passes += 1, &dir).unwrap();
    assert_eq!(r.outcome, ArtifactOutcome::Hit, "{r:?}");
    assert_eq!(passes, 0, "a warm compile reports no pass");
    assert!(r.line().contains("warm"), "{}", r.line());
    assert_eq!(warm.ktir, cold.ktir);
    assert_eq!(warm.ops, cold.ops);
    assert_eq!(warm.layouts, cold.layouts);
    assert_eq!(warm.placements, cold.placements);
    assert_eq!(warm.sdsc, cold.sdsc);
    assert_eq!(warm.snapshots, cold.snapshots);
    assert_eq!(warm.graph, cold.graph);
    let (text, r) = ktir_with_cache_dir(&graph, &o.machine, &o.compile, &mut |_| {}, &dir).unwrap();
    assert_eq!(r.outcome, ArtifactOutcome::Hit);
    assert_eq!(text, cold.ktir);

    // A run through the cache (warm now) still matches the reference.
    let opts = PipelineOptions {
        cache: Some(dir.clone()),
        ..PipelineOptions::default()
    };
    let run = driver::run_pipeline(MODEL, "tiny_two_layer.json", &opts).unwrap();
    assert!(run.run.passed, "{:?}", run.run.outputs);
    assert_eq!(
        run.cache.as_ref().map(|c| c.outcome.clone()),
        Some(ArtifactOutcome::Hit)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_key_follows_the_graph_the_options_and_the_machine() {
    let graph = load_graph(MODEL, "tiny_two_layer").unwrap();
    let o = PipelineOptions::default();
    let t = target_for(&o.machine);
    let k = compile_key(&graph, &t, &o.compile).unwrap();
    assert_eq!(k.len(), 64);
    assert_eq!(k, compile_key(&graph, &t, &o.compile).unwrap());
    let mut other = o.compile.clone();
    other.double_buffer = false;
    assert_ne!(k, compile_key(&graph, &t, &other).unwrap());
    let tiny = target_for(&driver::machine("tiny4").unwrap());
    assert_ne!(k, compile_key(&graph, &tiny, &o.compile).unwrap());
    let mut g = graph.clone();
    g.nodes[0].name.push('x');
    assert_ne!(k, compile_key(&g, &t, &o.compile).unwrap());
}

#[test]
fn stale_corrupted_and_unwritable_caches_are_never_used() {
    let graph = load_graph(MODEL, "tiny_two_layer").unwrap();
    let o = PipelineOptions::default();
    let dir = temp("bad");
    let compile = |dir: &PathBuf| {
        compile_with_cache_dir(&graph, &o.machine, &o.compile, &mut |_| {}, dir).unwrap()
    };
    let (cold, _) = compile(&dir);
    let path = artifact(&dir);
    let good = std::fs::read(&path).unwrap();

    // One byte of the body changed: the digest catches it.
    let mut bytes = good.clone();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    std::fs::write(&path, &bytes).unwrap();
    let (c, r) = compile(&dir);
    assert!(
        matches!(&r.outcome, ArtifactOutcome::Rebuilt(why) if why.contains("corrupted")),
        "{r:?}"
    );
    // Rebuilt from the kernel files, whose text drops trailing comments: the same
    // program, its kernels' signatures and ops equal.
    assert_eq!(funcs(&c.ktir), funcs(&cold.ktir));
    assert_eq!(c.ops, cold.ops);
    let (_, r) = compile(&dir);
    assert_eq!(r.outcome, ArtifactOutcome::Hit, "rebuilt and stored again");

    // Another compiler's entry is stale.
    let text = String::from_utf8_lossy(&good).into_owned();
    let stale = text.replacen("\ncompiler ", "\ncompiler 0.0.0-old", 1);
    std::fs::write(&path, stale).unwrap();
    let (_, r) = compile(&dir);
    assert!(
        matches!(&r.outcome, ArtifactOutcome::Rebuilt(why) if why.contains("stale")),
        "{r:?}"
    );

    // Garbage and a truncated file.
    for junk in [&b"not an artifact"[..], &good[..good.len() / 2]] {
        std::fs::write(&path, junk).unwrap();
        let (c, r) = compile(&dir);
        assert!(matches!(r.outcome, ArtifactOutcome::Rebuilt(_)), "{r:?}");
        assert_eq!(funcs(&c.ktir), funcs(&cold.ktir));
    }
    let _ = std::fs::remove_dir_all(&dir);

    // A directory that cannot be made: a warning and a compile without the cache.
    let blocked = temp("blocked");
    std::fs::write(&blocked, "").unwrap();
    let (c, r) = compile(&blocked.join("sub"));
    assert!(!r.warnings.is_empty(), "{r:?}");
    assert_eq!(funcs(&c.ktir), funcs(&cold.ktir));
    let _ = std::fs::remove_file(&blocked);
}

/// An in-memory store, as the page's IndexedDB.
#[derive(Default)]
struct Memory(std::collections::BTreeMap<String, Vec<u8>>);

impl driver::compiler::artifact_cache::ArtifactStore for Memory {
    fn get_artifact(&mut self, key: &str) -> Option<Vec<u8>> {
        self.0.get(key).cloned()
    }
    fn put_artifact(&mut self, key: &str, bytes: &[u8]) {
        self.0.insert(key.to_string(), bytes.to_vec());
    }
}

/// Each device op's SDSC lines in a run's source map.
fn sdsc_of(r: &driver::Run) -> Vec<(String, Option<driver::LineRange>)> {
    r.source_map
        .ops
        .iter()
        .map(|o| (o.name.clone(), o.sdsc_lines))
        .collect()
}

/// The passes of a run: name, title, text and data.
fn passes_of(r: &driver::Run) -> Vec<(String, String, Option<String>, serde_json::Value)> {
    r.passes
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                p.title.clone(),
                p.text.clone(),
                p.data.clone(),
            )
        })
        .collect()
}

/// Flips a byte near the end of the entry under `key`.
fn corrupt(store: &mut Memory, key: &str) {
    let entry = store.0.get_mut(key).unwrap();
    let last = entry.len() - 1;
    entry[last] ^= 0x55;
}

/// A cold run through an empty store, then a warm one: the warm run has every pass with
/// its title and data but only the artifact's texts, until they are filled in.
fn cold_and_warm(
    source: &str,
    name: &str,
    o: &driver::RunOptions,
    store: &mut Memory,
) -> (driver::Session, driver::Run, driver::Run) {
    let mut s = driver::Session::open(source.as_bytes(), name).unwrap();
    let cold = s
        .run_with_artifacts(o, None, &mut |_| {}, store)
        .unwrap()
        .clone();
    assert_eq!(cold.artifact, Some(ArtifactOutcome::Miss), "{name}");
    assert!(!cold.passes_apart && !cold.passes.is_empty(), "{name}");
    assert!(cold.passes.iter().all(|p| p.text.is_some()), "{name}");
    assert_eq!(
        store.0.len(),
        2,
        "{name}: the artifact and its snapshots, apart"
    );
    let warm = s
        .run_with_artifacts(o, None, &mut |_| {}, store)
        .unwrap()
        .clone();
    assert_eq!(warm.artifact, Some(ArtifactOutcome::Hit), "{name}");
    assert!(warm.passes_apart, "{name}");
    assert_eq!(warm.ktir, cold.ktir, "{name}");
    assert_eq!(warm.run.total_cycles, cold.run.total_cycles, "{name}");
    assert_eq!(warm.passes.len(), cold.passes.len(), "{name}");
    for (w, c) in warm.passes.iter().zip(&cold.passes) {
        // What the graph, cores and ring views read comes with the run.
        assert_eq!(
            (&w.name, &w.title, &w.data),
            (&c.name, &c.title, &c.data),
            "{name}"
        );
        if text_in_artifact(&w.name) {
            assert_eq!(w.text, c.text, "{name}: {} keeps its text", w.name);
        } else {
            assert_eq!(w.text, None, "{name}: {} waits in the store", w.name);
        }
    }
    assert!(
        warm.source_map.ops.iter().all(|o| o.sdsc_lines.is_none()),
        "{name}: the SDSC lines come with the texts"
    );
    (s, cold, warm)
}

#[test]
fn a_warm_run_has_each_pass_data_and_its_texts_after_a_fill() {
    let o = driver::RunOptions::default();
    let ex = driver::examples();
    let cases: Vec<(&str, &str)> = std::iter::once((MODEL, "tiny_two_layer.json"))
        .chain(["matmul_add", "llama_decoder_layer"].iter().map(|n| {
            let e = ex.iter().find(|e| e.name == *n).unwrap();
            (e.source, e.name)
        }))
        .collect();
    for (source, name) in cases {
        let mut store = Memory::default();
        let (mut s, cold, warm) = cold_and_warm(source, name, &o, &mut store);
        assert!(warm.run.passed, "{name}");
        // The texts the fill brings are the cold run's, and so are the SDSC lines.
        let filled = s.fill_passes(&o, &mut |_| {}, &mut store).unwrap();
        assert_eq!(filled, Some(ArtifactOutcome::Hit), "{name}");
        let run = s.last_run().unwrap();
        assert!(!run.passes_apart, "{name}");
        assert_eq!(passes_of(run), passes_of(&cold), "{name}");
        assert_eq!(sdsc_of(run), sdsc_of(&cold), "{name}");
        let texts = run.pass_texts();
        assert_eq!(texts.texts.len(), cold.passes.len(), "{name}");
        assert_eq!(s.fill_passes(&o, &mut |_| {}, &mut store).unwrap(), None);
    }
}

#[test]
fn a_corrupted_or_missing_snapshot_entry_is_compiled_again_when_filled() {
    let o = driver::RunOptions::default();
    for damage in ["corrupted", "missing"] {
        let mut store = Memory::default();
        let (mut s, cold, _) = cold_and_warm(MODEL, "tiny_two_layer.json", &o, &mut store);
        let key = passes_key(&s.compile_key(&o).unwrap().unwrap());
        if damage == "corrupted" {
            corrupt(&mut store, &key);
        } else {
            store.0.remove(&key);
        }
        let filled = s.fill_passes(&o, &mut |_| {}, &mut store).unwrap();
        match (damage, &filled) {
            ("corrupted", Some(ArtifactOutcome::Rebuilt(why))) => {
                assert!(why.contains("corrupted"), "{why}")
            }
            ("missing", Some(ArtifactOutcome::Miss)) => {}
            _ => panic!("{damage}: {filled:?}"),
        }
        let run = s.last_run().unwrap();
        assert_eq!(passes_of(run), passes_of(&cold), "{damage}");
        assert_eq!(sdsc_of(run), sdsc_of(&cold), "{damage}");
        // Stored over: the next warm run fills from the store.
        s.run_with_artifacts(&o, None, &mut |_| {}, &mut store)
            .unwrap();
        let filled = s.fill_passes(&o, &mut |_| {}, &mut store).unwrap();
        assert_eq!(filled, Some(ArtifactOutcome::Hit), "{damage}");
        assert_eq!(passes_of(s.last_run().unwrap()), passes_of(&cold));
    }
}

#[test]
fn the_stored_texts_alone_are_read_from_the_store() {
    let o = driver::RunOptions::default();
    let mut store = Memory::default();
    let (s, cold, _) = cold_and_warm(MODEL, "tiny_two_layer.json", &o, &mut store);
    let (p, outcome) = s
        .passes_apart(&o, &mut |_| {}, &mut store)
        .unwrap()
        .unwrap();
    assert_eq!(outcome, ArtifactOutcome::Hit);
    // The texts the artifact holds are not stored twice.
    let names: Vec<&str> = p.texts.iter().map(|t| t.name.as_str()).collect();
    let apart: Vec<&str> = cold
        .passes
        .iter()
        .map(|p| p.name.as_str())
        .filter(|n| !text_in_artifact(n))
        .collect();
    assert_eq!(names, apart);
    for t in &p.texts {
        let c = cold.passes.iter().find(|c| c.name == t.name).unwrap();
        assert_eq!(Some(&t.text), c.text.as_ref(), "{}", t.name);
    }
    let lines: Vec<(String, Option<driver::LineRange>)> = cold
        .source_map
        .ops
        .iter()
        .map(|op| {
            let l = p
                .sdsc_lines
                .iter()
                .find(|l| l.op == op.name)
                .map(|l| l.lines);
            (op.name.clone(), l)
        })
        .collect();
    assert_eq!(lines, sdsc_of(&cold));
}

#[test]
fn a_warm_tensor_parallel_run_keeps_its_pass_among_the_stored_snapshots() {
    let ex = driver::examples();
    let e = ex.iter().find(|e| e.name == "llama_decoder_layer").unwrap();
    let mut s = driver::Session::open(e.source.as_bytes(), e.name).unwrap();
    let o = driver::RunOptions::default();
    let tp = driver::TpOptions {
        degree: 2,
        ..driver::TpOptions::default()
    };
    let mut store = Memory::default();
    let names =
        |r: &driver::Run| -> Vec<String> { r.passes.iter().map(|p| p.name.clone()).collect() };
    let cold = s
        .run_with_artifacts(&o, Some(&tp), &mut |_| {}, &mut store)
        .unwrap()
        .clone();
    assert_eq!(cold.artifact, Some(ArtifactOutcome::Miss));
    let warm = s
        .run_with_artifacts(&o, Some(&tp), &mut |_| {}, &mut store)
        .unwrap()
        .clone();
    assert_eq!(warm.artifact, Some(ArtifactOutcome::Hit));
    // The snapshots kept apart are read in before the tensor-parallel pass joins them,
    // so it stands after `canonicalize`, built on that state's text, as in the cold run.
    assert!(!warm.passes_apart);
    assert_eq!(names(&warm), names(&cold));
    assert_eq!(names(&warm)[1], "tensor-parallel");
    assert_eq!(warm.passes[1].text, cold.passes[1].text);
    assert!(warm.passes[1]
        .text
        .as_deref()
        .is_some_and(|t| t.contains("  shard: column-parallel")));
    assert!(warm.tp.as_ref().is_some_and(|t| t.passed));
}
