//! Fingerprints the sources the compiler's output depends on (this crate and the graph,
//! SDSC and KTIR crates), so the version in every cache key changes with the code and not
//! only with the package version: a rebuilt compiler never reads an older one's artifacts.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut hasher = Sha256::new();
    for dir in ["src", "../graph/src", "../sdsc/src", "../ktir/src"] {
        let root = here.join(dir);
        println!("cargo:rerun-if-changed={}", root.display());
        let mut list = Vec::new();
        files(&root, &mut list);
        list.sort();
        for p in list {
            let rel = p.strip_prefix(&here).unwrap_or(&p);
            hasher.update(rel.to_string_lossy().as_bytes());
            hasher.update(std::fs::read(&p).unwrap_or_default());
        }
    }
    let digest: String = hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!("cargo:rustc-env=SPYRE_COMPILER_SOURCE={digest}");
}
