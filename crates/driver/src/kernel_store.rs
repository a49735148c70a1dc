//! A directory of compile artifacts (the CLI's `--cache`): whole compilations, one
//! `<key>.artifact` file per compile key (checked by the compiler's
//! [`compiler::artifact_cache::decode_artifact`]), and compiled kernels, one file per key,
//! `<key>.ktir`, holding a header line with the key and the compiler version and the
//! kernel as KTIR text. A file whose header does not name its key and this compiler, or
//! whose text does not parse to exactly one function, is stale or corrupted: it is not
//! used (the kernel is lowered again and the file rewritten). A directory that cannot be
//! created or written gives a warning and the compile goes on without it.

use compiler::artifact_cache::{ArtifactStore, KernelStore, COMPILER_VERSION};
use std::path::PathBuf;

/// Kernels and whole compilations kept in a directory across compiles.
pub struct DirStore {
    dir: Option<PathBuf>,
    /// Problems met (an unwritable directory, a corrupted entry), for the user.
    pub warnings: Vec<String>,
}

impl DirStore {
    /// A store in `dir`, created when missing; when that fails the store keeps nothing and
    /// says so in its warnings.
    pub fn open(dir: PathBuf) -> DirStore {
        match std::fs::create_dir_all(&dir) {
            Ok(()) => DirStore {
                dir: Some(dir),
                warnings: Vec::new(),
            },
            Err(e) => DirStore {
                warnings: vec![format!(
                    "compile cache {}: {e}; compiling without it",
                    dir.display()
                )],
                dir: None,
            },
        }
    }

    fn header(key: &str) -> String {
        format!("// spyre kernel {key} compiler {COMPILER_VERSION}")
    }
}

impl KernelStore for DirStore {
    fn get(&mut self, key: &str) -> Option<ktir::Func> {
        let path = self.dir.as_ref()?.join(format!("{key}.ktir"));
        let text = std::fs::read_to_string(&path).ok()?;
        let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
        let (module, diags) = ktir::parse(rest);
        if first != Self::header(key)
            || diags.iter().any(|d| d.is_error())
            || module.funcs.len() != 1
        {
            self.warnings.push(format!(
                "compile cache {}: stale or corrupted, rebuilt",
                path.display()
            ));
            return None;
        }
        // The parser drops comments; the kernel's header comment is the line before its
        // `func.func`.
        let mut comment = None;
        let mut prev = "";
        for line in rest.lines() {
            let t = line.trim_start();
            if t.starts_with("func.func") {
                comment = prev.strip_prefix("// ").map(str::to_string);
                break;
            }
            prev = t;
        }
        module.funcs.into_iter().next().map(|mut f| {
            f.comment = comment;
            f
        })
    }

    fn put(&mut self, key: &str, func: &ktir::Func) {
        if self.dir.is_none() {
            return;
        }
        let module = ktir::Module {
            funcs: vec![func.clone()],
            ..ktir::Module::default()
        };
        let text = format!("{}\n{}", Self::header(key), ktir::print(&module));
        self.write(&format!("{key}.ktir"), text.as_bytes());
    }
}

impl DirStore {
    /// Write then rename, so a reader never sees half a file; a failure turns the store
    /// off with a warning.
    fn write(&mut self, name: &str, bytes: &[u8]) {
        let Some(dir) = &self.dir else {
            return;
        };
        let path = dir.join(name);
        // A name of its own per write: compiles running at once may store the same key.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dir.join(format!("{name}.{}-{n}.tmp", std::process::id()));
        if let Err(e) = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, &path)) {
            self.warnings.push(format!(
                "compile cache {}: {e}; compiling without it",
                dir.display()
            ));
            let _ = std::fs::remove_file(&tmp);
            self.dir = None;
        }
    }
}

impl ArtifactStore for DirStore {
    fn get_artifact(&mut self, key: &str) -> Option<Vec<u8>> {
        std::fs::read(self.dir.as_ref()?.join(format!("{key}.artifact"))).ok()
    }

    fn put_artifact(&mut self, key: &str, bytes: &[u8]) {
        self.write(&format!("{key}.artifact"), bytes);
    }
}
