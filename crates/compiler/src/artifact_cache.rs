//! The compile-artifact cache: lowered KTIR kernels, content-addressed.
//!
//! A kernel's key is the SHA-256 of its canonical op spec: the device op's kind,
//! iteration, attributes and work division, and per operand (by position, not name) its
//! layout, its role (input, initializer or computed) and its scratchpad placement, with
//! the scratchpad bytes held around it, the buffering mode, the target machine and the
//! compiler's version. Tensor and op names are not part of it, so the kernels of repeated
//! transformer blocks share one key: the first is lowered, the others reuse it within the
//! compile, renamed. A [`KernelStore`] keeps kernels across compiles (the CLI's directory
//! store); a store that returns a kernel not matching its key is never trusted: the
//! lowering checks the kernel it gets back verifies and rebuilds it otherwise.

use crate::lower_ktir::Kernel;
use crate::{Compilation, DeviceOp};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The compiler's version, part of every key: a new compiler never reads an old kernel.
pub const COMPILER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Somewhere kernels outlive a compile (a directory, the page's IndexedDB).
pub trait KernelStore {
    /// The kernel stored under `key`, if there is a sound one.
    fn get(&mut self, key: &str) -> Option<ktir::Func>;
    /// Stores `func` under `key` (failures are the store's to report; the compile goes on).
    fn put(&mut self, key: &str, func: &ktir::Func);
}

/// Hits and misses of one compile's kernel cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Kernels reused from an identical one earlier in the same compile.
    pub hits_in_compile: u64,
    /// Kernels reused from the store (an earlier compile).
    pub hits_from_store: u64,
    /// Kernels lowered.
    pub misses: u64,
}

/// The kernel cache of one compile: kernels lowered so far, by key, over an optional store.
pub struct KernelCache<'s> {
    seen: HashMap<String, ktir::Func>,
    store: Option<&'s mut dyn KernelStore>,
    /// What the cache did.
    pub stats: CacheStats,
}

impl<'s> KernelCache<'s> {
    /// A cache over `store` (`None`: reuse within the compile only).
    pub fn new(store: Option<&'s mut dyn KernelStore>) -> KernelCache<'s> {
        KernelCache {
            seen: HashMap::new(),
            store,
            stats: CacheStats::default(),
        }
    }

    /// The kernel for `key`, renamed `name`, when one is known; `None` counts a miss.
    pub(crate) fn lookup(&mut self, key: &str, name: &str) -> Option<ktir::Func> {
        let (mut f, from_store) = match self.seen.get(key) {
            Some(f) => (f.clone(), false),
            None => {
                let f = self.store.as_mut().and_then(|s| s.get(key))?;
                let one = ktir::Module {
                    funcs: vec![f.clone()],
                    ..ktir::Module::default()
                };
                if ktir::verify(&one, "").iter().any(|d| d.is_error()) {
                    return None;
                }
                self.seen.insert(key.to_string(), f.clone());
                (f, true)
            }
        };
        if from_store {
            self.stats.hits_from_store += 1;
        } else {
            self.stats.hits_in_compile += 1;
        }
        f.name = name.to_string();
        Some(f)
    }

    /// Records a kernel just lowered under `key`.
    pub(crate) fn insert(&mut self, key: &str, func: &ktir::Func) {
        self.stats.misses += 1;
        self.seen.insert(key.to_string(), func.clone());
        if let Some(s) = self.store.as_mut() {
            s.put(key, func);
        }
    }
}

/// The key of the kernel of device op `op` (see the module doc).
pub(crate) fn kernel_key(
    c: &Compilation,
    op: &DeviceOp,
    index: usize,
    kernel: &Kernel,
    held: u64,
    double_buffer: bool,
) -> String {
    let mut spec = format!(
        "spyre-kernel v1 compiler {COMPILER_VERSION}\nop {:?}\niteration {:?}\nattrs {:?}\nheld {held}\ndouble_buffer {double_buffer}\ntarget {:?}\n",
        op.kind, op.iteration, op.attrs, c.target
    );
    if let Some(d) = c.divisions.get(index) {
        spec.push_str(&format!(
            "division {:?} {} {:?} {}\n",
            d.splits, d.cores_used, d.core_to_slice, d.rule
        ));
    }
    let names: Vec<&String> = op.inputs.iter().chain(&op.outputs).collect();
    for (i, t) in names.iter().enumerate() {
        // Operands by position; a repeated tensor names its first position.
        let first = names.iter().position(|n| n == t).unwrap_or(i);
        // A DRAM tensor's offset is its launch argument, not part of the kernel.
        let placement = match c.placements.get(*t) {
            Some(crate::Placement::Dram { .. }) | None => "dram".to_string(),
            Some(p) => format!("{p:?}"),
        };
        spec.push_str(&format!(
            "operand {i} same_as {first} role {} layout {:?} type {:?} placement {placement} arg {:?}\n",
            c.role_of(t),
            c.layouts.get(*t),
            c.types.get(*t),
            kernel.args.iter().position(|a| a == *t)
        ));
    }
    let digest = Sha256::digest(spec.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
