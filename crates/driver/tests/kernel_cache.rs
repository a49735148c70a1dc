//! The compile-artifact cache: a model with repeated layers lowers each distinct kernel
//! once, the module built from reused kernels runs and matches the reference, a second
//! compile over the same directory lowers nothing, and a corrupted entry is rebuilt.

use driver::{compile_cached, load_graph, run_pipeline_with_ktir, DirStore, PipelineOptions};

const MODEL: &str = include_str!("../../../examples/graphs/tiny_two_layer.json");

#[test]
fn repeated_layers_compile_once_run_right_and_come_back_warm() {
    let graph = load_graph(MODEL, "tiny_two_layer").unwrap();
    let options = PipelineOptions::default();
    let (c, stats) = compile_cached(
        &graph,
        &options.machine,
        &options.compile,
        &mut |_| {},
        None,
    )
    .unwrap();
    assert!(stats.hits_in_compile > 0, "{stats:?}");
    assert_eq!(stats.hits_from_store, 0);
    let ktir = driver::ktir::print(c.ktir_module.as_ref().unwrap());
    let r = run_pipeline_with_ktir(MODEL, "tiny_two_layer.json", Some(&ktir), &options).unwrap();
    assert!(r.run.passed, "{:?}", r.run.outputs);

    let dir = std::env::temp_dir().join(format!("spyre-kernel-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut store = DirStore::open(dir.clone());
    let (_, cold) = compile_cached(
        &graph,
        &options.machine,
        &options.compile,
        &mut |_| {},
        Some(&mut store),
    )
    .unwrap();
    let mut store = DirStore::open(dir.clone());
    let (warm_c, warm) = compile_cached(
        &graph,
        &options.machine,
        &options.compile,
        &mut |_| {},
        Some(&mut store),
    )
    .unwrap();
    assert_eq!(warm.misses, 0, "{warm:?}");
    assert_eq!(warm.hits_from_store, cold.misses);
    assert_eq!(warm_c.ops.len(), c.ops.len());
    // A corrupted entry is detected and rebuilt, never used.
    let entry = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&entry, "// spyre kernel nonsense\nfunc.func @x(").unwrap();
    let mut store = DirStore::open(dir.clone());
    let (_, again) = compile_cached(
        &graph,
        &options.machine,
        &options.compile,
        &mut |_| {},
        Some(&mut store),
    )
    .unwrap();
    assert_eq!(again.misses, 1, "{again:?}");
    assert!(
        store.warnings.iter().any(|w| w.contains("corrupted")),
        "{:?}",
        store.warnings
    );
    let _ = std::fs::remove_dir_all(&dir);
    // A directory that cannot be made gives a warning and a compile without it.
    let blocked = dir.with_extension("file");
    std::fs::write(&blocked, "").unwrap();
    let mut store = DirStore::open(blocked.join("sub"));
    assert!(!store.warnings.is_empty());
    compile_cached(
        &graph,
        &options.machine,
        &options.compile,
        &mut |_| {},
        Some(&mut store),
    )
    .unwrap();
    let _ = std::fs::remove_file(&blocked);
}
