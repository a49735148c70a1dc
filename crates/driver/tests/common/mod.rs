//! What the `tests/ktir/valid` programs need to run: scalar arguments and valid index
//! buffers. Shared by the tests that run the whole corpus.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The directory of the runnable corpus.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ktir/valid")
}

/// Scalar arguments a corpus program needs (`// ARGS:` header first, then the table the
/// corpus test uses).
pub fn args_for(name: &str, text: &str) -> BTreeMap<String, i64> {
    let mut args = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.trim().strip_prefix("// ARGS:") {
            for kv in rest.split_whitespace() {
                if let Some((k, v)) = kv.split_once('=') {
                    args.insert(k.to_string(), v.parse().expect("ARGS value"));
                }
            }
        }
    }
    let table: &[(&str, &[(&str, i64)])] = &[
        ("add_runtime_arg.mlir", &[("m", 96), ("n", 96)]),
        ("affine_structures.mlir", &[("n", 16)]),
        ("distributed_view_copy.mlir", &[("lx", 0)]),
        ("dynamic_access_tile.mlir", &[("rows", 5)]),
        ("indirect_two_dims.mlir", &[("len", 64)]),
        ("memory_space_spellings.mlir", &[("lx", 0)]),
        ("scratchpad_staging.mlir", &[("lx", 0)]),
        ("arith_ops.mlir", &[("a", 12), ("b", 3), ("x", 5), ("y", 2)]),
        ("scf_results.mlir", &[("n", 6)]),
        ("tensor_reshape.mlir", &[("n", 3), ("v", 2)]),
        ("runtime_arg_types.mlir", &[("a", 10), ("b", 20), ("c", 30)]),
    ];
    for (f, kv) in table {
        if *f == name {
            for (k, v) in kv.iter() {
                args.entry(k.to_string()).or_insert(*v);
            }
        }
    }
    args
}

/// Index buffers with valid contents, as the corpus test gives them.
pub fn inputs_for(name: &str) -> BTreeMap<String, Vec<f32>> {
    let mut m = BTreeMap::new();
    match name {
        "indirect_gather.mlir" => {
            m.insert(
                "idx".into(),
                (0..256).map(|i| ((i * 37 + 5) % 1000) as f32).collect(),
            );
        }
        "indirect_scatter.mlir" => {
            m.insert(
                "idx".into(),
                (0..64).map(|i| ((i * 7 + 3) % 512) as f32).collect(),
            );
        }
        "indirect_two_dims.mlir" => {
            m.insert(
                "i1a".into(),
                (0..192).map(|i| ((i * 5) % 64) as f32).collect(),
            );
            m.insert(
                "i2a".into(),
                (0..192).map(|i| ((i * 11 + 1) % 64) as f32).collect(),
            );
        }
        _ => {}
    }
    m
}
