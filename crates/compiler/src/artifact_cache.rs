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
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The compiler's version, part of every key: a new compiler never reads an old kernel or
/// artifact. The package version and a fingerprint of the sources (see `build.rs`), since
/// the package version alone does not change when the code does.
pub const COMPILER_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "+",
    env!("SPYRE_COMPILER_SOURCE")
);

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

/// The kernel key of [`kernel_and_plan_keys`] without the work division's rule, which
/// explains the division in words naming the op's tensors: the key of everything a
/// kernel's time plan is chosen from, alike for the same kernel in every layer of a model.
/// It is the op spec itself, not its hash: plan keys are compared within one compile and
/// never stored, so there is nothing to gain from SHA-256, which WebAssembly computes in
/// software.
pub(crate) fn plan_key(
    c: &Compilation,
    op: &DeviceOp,
    index: usize,
    kernel: &Kernel,
    held: u64,
    double_buffer: bool,
) -> String {
    op_spec(c, op, index, kernel, held, double_buffer)
}

/// The key of the kernel of device op `op` (see the module doc), and its [`plan_key`]: the
/// spec they share is written once.
pub(crate) fn kernel_and_plan_keys(
    c: &Compilation,
    op: &DeviceOp,
    index: usize,
    kernel: &Kernel,
    held: u64,
    double_buffer: bool,
) -> (String, String) {
    let plan = op_spec(c, op, index, kernel, held, double_buffer);
    let rule = c.divisions.get(index).map_or("", |d| d.rule.as_str());
    let kernel = hex(&Sha256::new_with_prefix(plan.as_bytes())
        .chain_update(format!("rule {rule}\n"))
        .finalize());
    (kernel, plan)
}

/// The op spec of the module doc, all but the division's rule.
fn op_spec(
    c: &Compilation,
    op: &DeviceOp,
    index: usize,
    kernel: &Kernel,
    held: u64,
    double_buffer: bool,
) -> String {
    use std::fmt::Write;
    // One buffer written in place: the spec is formatted for every kernel of a compile, and
    // separate `format!`s per line were most of the keys' cost in WebAssembly.
    let mut spec = String::with_capacity(1024);
    let _ = write!(
        spec,
        "spyre-kernel v2 compiler {COMPILER_VERSION}\nop {:?}\niteration {:?}\nattrs {:?}\nheld {held}\ndouble_buffer {double_buffer}\ntarget {:?}\n",
        op.kind, op.iteration, op.attrs, c.target
    );
    if let Some(d) = c.divisions.get(index) {
        let _ = writeln!(
            spec,
            "division {:?} {} {:?}",
            d.splits, d.cores_used, d.core_to_slice
        );
    }
    let names: Vec<&String> = op.inputs.iter().chain(&op.outputs).collect();
    for (i, t) in names.iter().enumerate() {
        // Operands by position; a repeated tensor names its first position.
        let first = names.iter().position(|n| n == t).unwrap_or(i);
        let _ = write!(
            spec,
            "operand {i} same_as {first} role {} layout {:?} type {:?} placement ",
            c.role_of(t),
            c.layouts.get(*t),
            c.types.get(*t),
        );
        // A DRAM tensor's offset is its launch argument, not part of the kernel.
        match c.placements.get(*t) {
            Some(crate::Placement::Dram { .. }) | None => spec.push_str("dram"),
            Some(p) => {
                let _ = write!(spec, "{p:?}");
            }
        }
        let _ = writeln!(spec, " arg {:?}", kernel.args.iter().position(|a| a == *t));
    }
    spec
}

/// A digest as lowercase hex.
fn hex(digest: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(2 * digest.len());
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Somewhere whole compile artifacts outlive a compile (the CLI's directory, the page's
/// IndexedDB): opaque bytes by key. The bytes carry their own key, version and digest
/// ([`encode_artifact`]), so a store need not be trusted.
pub trait ArtifactStore {
    /// The bytes stored under `key`, if any.
    fn get_artifact(&mut self, key: &str) -> Option<Vec<u8>>;
    /// Stores `bytes` under `key` (failures are the store's to report; the compile goes on).
    fn put_artifact(&mut self, key: &str, bytes: &[u8]);
}

/// What the artifact cache did for one compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactOutcome {
    /// The whole compilation came from the store: no pass ran.
    Hit,
    /// Not in the store: compiled, then stored.
    Miss,
    /// In the store but unusable (the reason): compiled again and stored over it.
    Rebuilt(String),
    /// Not cacheable (the reason): compiled without the artifact cache.
    Bypassed(String),
}

/// A `std::io::Write` into a hasher, so large values are hashed as they serialise.
struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The key of a whole compile: the SHA-256 of the graph's canonical serialisation (its
/// JSON form: nodes in order, attributes sorted, initializers by their specs or values),
/// the options, the target machine and the compiler's version. `Err` names why a graph
/// cannot be keyed: initializers held in external files, whose contents the key would
/// have to read.
pub fn compile_key(
    graph: &graph::Graph,
    target: &crate::Target,
    options: &crate::Options,
) -> Result<String, String> {
    if graph
        .initializers
        .iter()
        .any(|i| matches!(i.init, graph::InitSpec::External(_)))
    {
        return Err("the graph's weights live in external files".to_string());
    }
    let mut w = HashWriter(Sha256::new());
    let head = format!(
        "spyre-compile v1 compiler {COMPILER_VERSION}\ntarget {target:?}\noptions {options:?}\ngraph "
    );
    w.0.update(head.as_bytes());
    serde_json::to_writer(&mut w, graph)
        .map_err(|e| format!("the graph does not serialise: {e}"))?;
    Ok(hex(&w.0.finalize()))
}

const ARTIFACT_MAGIC: &str = "spyre-artifact v4";
const PASSES_MAGIC: &str = "spyre-passes v2";

/// Whether a pass's snapshot text is in the artifact a run reads (the KTIR module's, which
/// is the compilation's KTIR), rather than only in the entry under [`passes_key`].
pub fn text_in_artifact(pass: &str) -> bool {
    pass == "ktir"
}

/// A snapshot as the artifact a run reads keeps it: everything but its text, which only
/// the views that show it need (stored apart, [`encode_passes`]). A snapshot whose data
/// only repeats its text (the KTIR module's) keeps no data: it is restored from the text.
#[derive(Serialize, Deserialize)]
struct SnapshotHead {
    pass: String,
    title: String,
    data: serde_json::Value,
    #[serde(default)]
    data_is_text: bool,
}

/// Whether `s.data` is `{"text": s.text}`, nothing but its text again.
fn data_is_text(s: &crate::Snapshot) -> bool {
    s.data.as_object().is_some_and(|o| {
        o.len() == 1 && o.get("text").and_then(|t| t.as_str()) == Some(s.text.as_str())
    })
}

/// The key a compilation's pass snapshots (and SDSC bundle) are stored under, beside its
/// artifact under `key` ([`encode_passes`]).
pub fn passes_key(key: &str) -> String {
    format!("{key}.passes")
}

/// `body` behind a header naming the format, the key, the compiler's version, the body's
/// SHA-256 and `extra` (one more line).
fn seal(magic: &str, key: &str, extra: &str, body: &[u8]) -> Vec<u8> {
    let digest = hex(&Sha256::digest(body));
    let mut out =
        format!("{magic}\nkey {key}\ncompiler {COMPILER_VERSION}\nsha256 {digest}\n{extra}\n\n")
            .into_bytes();
    out.extend_from_slice(body);
    out
}

/// The body of bytes [`seal`]ed as `magic` for `key` by this compiler, and the header's
/// extra line; `Err` says why not (stale: another key or version; corrupted: a digest that
/// does not match the body, a header that does not read).
fn unseal<'a>(magic: &str, key: &str, bytes: &'a [u8]) -> Result<(&'a [u8], &'a str), String> {
    let split = bytes
        .windows(2)
        .position(|w| w == b"\n\n")
        .ok_or("corrupted: no header")?;
    let header = std::str::from_utf8(&bytes[..split]).map_err(|_| "corrupted: header not text")?;
    let body = &bytes[split + 2..];
    let mut lines = header.lines();
    if lines.next() != Some(magic) {
        return Err("stale or corrupted: not an artifact of this format".to_string());
    }
    let mut field = |name: &str| -> Result<&'a str, String> {
        lines
            .next()
            .and_then(|l| l.strip_prefix(name))
            .and_then(|l| l.strip_prefix(' '))
            .ok_or_else(|| format!("corrupted: no {name} line"))
    };
    let stored_key = field("key")?;
    let version = field("compiler")?;
    let digest = field("sha256")?;
    let extra = lines.next().ok_or("corrupted: short header")?;
    if stored_key != key {
        return Err("stale: stored for another key".to_string());
    }
    if version != COMPILER_VERSION {
        return Err(format!("stale: from compiler {version}"));
    }
    if hex(&Sha256::digest(body)) != digest {
        return Err("corrupted: the body does not match its digest".to_string());
    }
    Ok((body, extra))
}

/// A compilation as stored bytes, without what only some views need (the pass snapshots'
/// texts and the SDSC bundle, stored apart by [`encode_passes`]): a header naming the key,
/// the compiler's version, the SHA-256 of the body and the lengths of its first two
/// sections; then the body: the KTIR text, then each snapshot's name, title and structured
/// data as JSON ([`SnapshotHead`]: the graph, cores and ring views read the data as soon as
/// a run arrives), then the rest of the compilation in postcard's compact binary form
/// (which unlike JSON keeps the infinities and NaNs of float attributes; being positional,
/// every field of the types it holds is written, none skipped, and its decoder is a small
/// part of the page's module, where a self-describing format's was the largest single
/// serde cost). The KTIR comes first and apart so that a
/// caller wanting only the module ([`ArtifactView::ktir`]) reads it without decoding the
/// rest. Leaving the texts and the bundle out makes a 32-layer model's artifact a small
/// part of the whole and many times quicker to decode.
pub fn encode_artifact(key: &str, c: &Compilation) -> Result<Vec<u8>, String> {
    let ktir = c.ktir.as_deref().unwrap_or("");
    let mut body = ktir.as_bytes().to_vec();
    #[derive(Serialize)]
    struct Head<'a> {
        pass: &'a str,
        title: &'a str,
        data: &'a serde_json::Value,
        data_is_text: bool,
    }
    let null = serde_json::Value::Null;
    let heads: Vec<Head> = c
        .snapshots
        .iter()
        .map(|s| {
            let repeated = data_is_text(s);
            Head {
                pass: &s.pass,
                title: &s.title,
                data: if repeated { &null } else { &s.data },
                data_is_text: repeated,
            }
        })
        .collect();
    let before = body.len();
    serde_json::to_writer(&mut body, &heads)
        .map_err(|e| format!("the snapshots do not serialise: {e}"))?;
    let heads_len = body.len() - before;
    let rest = Compilation {
        graph: c.graph.clone(),
        types: c.types.clone(),
        ops: c.ops.clone(),
        layouts: c.layouts.clone(),
        divisions: c.divisions.clone(),
        placements: c.placements.clone(),
        fusion: c.fusion.clone(),
        sdsc: None,
        ktir: None,
        ktir_module: None,
        epilogue_notes: Vec::new(),
        fused_kernels: Default::default(),
        snapshots: Vec::new(),
        target: c.target.clone(),
        padding: c.padding.clone(),
        views: c.views.clone(),
    };
    postcard::to_io(&rest, &mut body)
        .map_err(|e| format!("the compilation does not serialise: {e}"))?;
    let has_ktir = u8::from(c.ktir.is_some());
    Ok(seal(
        ARTIFACT_MAGIC,
        key,
        &format!("ktir {has_ktir} {} passes {heads_len}", ktir.len()),
        &body,
    ))
}

/// One pass's snapshot text, by pass name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassText {
    /// The pass.
    pub pass: String,
    /// Its snapshot's text.
    pub text: String,
}

/// What a compilation keeps for the views that show its passes' texts: the snapshot texts
/// (but those in the artifact, [`text_in_artifact`]) and the SDSC bundle, stored apart
/// from the artifact a run needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredPasses {
    /// The snapshot texts, in pass order.
    pub texts: Vec<PassText>,
    /// The SDSC bundle (`None` when the compile stopped before the `sdsc` pass).
    pub sdsc: Option<sdsc::Bundle>,
}

impl StoredPasses {
    /// The texts and bundle of compilation `c`, every pass's text included.
    pub fn of(c: Compilation) -> StoredPasses {
        StoredPasses {
            texts: c
                .snapshots
                .into_iter()
                .map(|s| PassText {
                    pass: s.pass,
                    text: s.text,
                })
                .collect(),
            sdsc: c.sdsc,
        }
    }
}

/// A compilation's snapshot texts and SDSC bundle as stored bytes, for [`passes_key`]: the
/// same header as [`encode_artifact`] (key, version, digest), then JSON. Both are text or
/// JSON values already (the bundle is what the `sdsc` pass prints), so nothing is lost,
/// and `serde_json` reads them several times faster than CBOR did.
pub fn encode_passes(key: &str, c: &Compilation) -> Result<Vec<u8>, String> {
    #[derive(Serialize)]
    struct Text<'a> {
        pass: &'a str,
        text: &'a str,
    }
    #[derive(Serialize)]
    struct Borrowed<'a> {
        texts: Vec<Text<'a>>,
        sdsc: &'a Option<sdsc::Bundle>,
    }
    let texts = c
        .snapshots
        .iter()
        .filter(|s| !text_in_artifact(&s.pass))
        .map(|s| Text {
            pass: &s.pass,
            text: &s.text,
        })
        .collect();
    let body = serde_json::to_vec(&Borrowed {
        texts,
        sdsc: &c.sdsc,
    })
    .map_err(|e| format!("the snapshots do not serialise: {e}"))?;
    Ok(seal(PASSES_MAGIC, &passes_key(key), "passes", &body))
}

/// The snapshot texts and bundle `bytes` hold, when they are a sound [`encode_passes`]
/// entry for `key` from this compiler; `Err` says why not.
pub fn decode_passes(key: &str, bytes: &[u8]) -> Result<StoredPasses, String> {
    let (body, _) = unseal(PASSES_MAGIC, &passes_key(key), bytes)?;
    serde_json::from_slice(body).map_err(|e| format!("corrupted: {e}"))
}

/// A stored artifact whose header and digest have been checked (see [`encode_artifact`]).
pub struct ArtifactView<'a> {
    ktir: Option<&'a str>,
    heads: &'a [u8],
    rest: &'a [u8],
}

impl<'a> ArtifactView<'a> {
    /// The artifact `bytes` hold, when they are a sound one for `key` from this compiler;
    /// `Err` says why not (another key or version: stale; a digest that does not match
    /// the body, or a header that does not read: corrupted).
    pub fn open(key: &str, bytes: &'a [u8]) -> Result<ArtifactView<'a>, String> {
        let (body, extra) = unseal(ARTIFACT_MAGIC, key, bytes)?;
        let bad = || "corrupted: bad ktir line".to_string();
        let words: Vec<&str> = extra.split(' ').collect();
        let [_, has, len, _, heads_len] = words[..] else {
            return Err(bad());
        };
        if words[0] != "ktir" || words[3] != "passes" {
            return Err(bad());
        }
        let len: usize = len.parse().map_err(|_| bad())?;
        let heads_len: usize = heads_len.parse().map_err(|_| bad())?;
        if len
            .checked_add(heads_len)
            .is_none_or(|end| end > body.len())
        {
            return Err(bad());
        }
        let (text, rest) = body.split_at(len);
        let (heads, rest) = rest.split_at(heads_len);
        let text = std::str::from_utf8(text).map_err(|_| "corrupted: KTIR not text")?;
        Ok(ArtifactView {
            ktir: (has == "1").then_some(text),
            heads,
            rest,
        })
    }

    /// The KTIR module's text (`None` when the compile stopped before the `ktir` pass).
    pub fn ktir(&self) -> Option<&'a str> {
        self.ktir
    }

    /// The compilation without its SDSC bundle (its KTIR as text only), its snapshots with
    /// their names, titles and data, their texts empty but those in the artifact
    /// ([`text_in_artifact`]).
    pub fn compilation(&self) -> Result<Compilation, String> {
        let mut c: Compilation =
            postcard::from_bytes(self.rest).map_err(|e| format!("corrupted: {e}"))?;
        let heads: Vec<SnapshotHead> =
            serde_json::from_slice(self.heads).map_err(|e| format!("corrupted: {e}"))?;
        let ktir = self.ktir.unwrap_or("");
        c.snapshots = heads
            .into_iter()
            .map(|h| {
                let text = if text_in_artifact(&h.pass) {
                    ktir.to_string()
                } else {
                    String::new()
                };
                let data = if h.data_is_text {
                    serde_json::json!({ "text": text })
                } else {
                    h.data
                };
                crate::Snapshot {
                    pass: h.pass,
                    title: h.title,
                    text,
                    data,
                }
            })
            .collect();
        c.ktir = self.ktir.map(str::to_string);
        Ok(c)
    }
}

/// The compilation `bytes` hold, without its snapshot texts and SDSC bundle, when they are a
/// sound artifact for `key` from this compiler (see [`ArtifactView::open`]).
pub fn decode_artifact(key: &str, bytes: &[u8]) -> Result<Compilation, String> {
    ArtifactView::open(key, bytes)?.compilation()
}

/// What a hit reads from the store: `None` when nothing is stored under the key, else the
/// value or why the stored entry cannot be used.
type FromHit<'f, T> = &'f dyn Fn(&str, &mut dyn ArtifactStore) -> Option<Result<T, String>>;

/// The artifact stored under `key`, opened and read by `read` (`None`: nothing stored).
fn read_artifact<T>(
    key: &str,
    store: &mut dyn ArtifactStore,
    read: impl FnOnce(&ArtifactView) -> Result<T, String>,
) -> Option<Result<T, String>> {
    let bytes = store.get_artifact(key)?;
    Some(ArtifactView::open(key, &bytes).and_then(|v| read(&v)))
}

/// The snapshots stored under [`passes_key`] of `key` (`None`: nothing stored).
fn read_passes(key: &str, store: &mut dyn ArtifactStore) -> Option<Result<StoredPasses, String>> {
    let bytes = store.get_artifact(&passes_key(key))?;
    Some(decode_passes(key, &bytes))
}

/// [`crate::compile_cached`] through a whole-compile artifact cache: the compilation
/// stored under [`compile_key`] (with its snapshots and bundle under [`passes_key`]) is
/// used when both are sound (no pass runs); otherwise the passes run, through `kernels`
/// (the per-kernel cache), and the result is stored. An unusable entry is never used; the
/// outcome says what happened.
pub fn compile_with_artifacts(
    graph: &graph::Graph,
    target: &crate::Target,
    options: &crate::Options,
    progress: &mut dyn FnMut(crate::CompileProgress),
    kernels: &mut KernelCache<'_>,
    store: &mut dyn ArtifactStore,
) -> Result<(Compilation, ArtifactOutcome), crate::CompileError> {
    with_artifacts(
        graph,
        target,
        options,
        progress,
        kernels,
        store,
        &|key, store| {
            let c = read_artifact(key, store, |v| v.compilation())?;
            let p = read_passes(key, store)
                .unwrap_or_else(|| Err("incomplete: its snapshots are missing".to_string()));
            Some(c.and_then(|mut c| {
                let p = p?;
                let mut texts = p.texts.into_iter();
                for s in c
                    .snapshots
                    .iter_mut()
                    .filter(|s| !text_in_artifact(&s.pass))
                {
                    match texts.next() {
                        Some(t) if t.pass == s.pass => s.text = t.text,
                        _ => return Err(format!("corrupted: no text for the pass {}", s.pass)),
                    }
                }
                c.sdsc = p.sdsc;
                Ok(c)
            }))
        },
        |c| c,
    )
}

/// [`compile_with_artifacts`] for a run, which needs neither the pass snapshots' texts nor
/// the SDSC bundle: a hit reads and decodes only the artifact under [`compile_key`], and
/// the compilation it gives has its snapshots' names, titles and data but no texts (those
/// in the artifact aside, [`text_in_artifact`]) and no bundle ([`passes_with_artifacts`]
/// reads them when they are wanted). A miss compiles in full and stores both.
pub fn run_artifact_with_artifacts(
    graph: &graph::Graph,
    target: &crate::Target,
    options: &crate::Options,
    progress: &mut dyn FnMut(crate::CompileProgress),
    kernels: &mut KernelCache<'_>,
    store: &mut dyn ArtifactStore,
) -> Result<(Compilation, ArtifactOutcome), crate::CompileError> {
    with_artifacts(
        graph,
        target,
        options,
        progress,
        kernels,
        store,
        &|key, store| read_artifact(key, store, |v| v.compilation()),
        |c| c,
    )
}

/// The pass snapshots' texts and SDSC bundle of a compile, read from under [`passes_key`]
/// when sound (without the texts the artifact holds, [`text_in_artifact`]); otherwise the
/// graph compiles again, both entries are stored, and every pass's text is given.
pub fn passes_with_artifacts(
    graph: &graph::Graph,
    target: &crate::Target,
    options: &crate::Options,
    progress: &mut dyn FnMut(crate::CompileProgress),
    kernels: &mut KernelCache<'_>,
    store: &mut dyn ArtifactStore,
) -> Result<(StoredPasses, ArtifactOutcome), crate::CompileError> {
    with_artifacts(
        graph,
        target,
        options,
        progress,
        kernels,
        store,
        &read_passes,
        StoredPasses::of,
    )
}

/// [`compile_with_artifacts`] for a caller that wants only the KTIR text (`None` when the
/// compile stops before the `ktir` pass): a hit reads the artifact's KTIR section alone,
/// without decoding the rest of the compilation.
pub fn ktir_with_artifacts(
    graph: &graph::Graph,
    target: &crate::Target,
    options: &crate::Options,
    progress: &mut dyn FnMut(crate::CompileProgress),
    kernels: &mut KernelCache<'_>,
    store: &mut dyn ArtifactStore,
) -> Result<(Option<String>, ArtifactOutcome), crate::CompileError> {
    with_artifacts(
        graph,
        target,
        options,
        progress,
        kernels,
        store,
        &|key, store| read_artifact(key, store, |v| Ok(v.ktir().map(str::to_string))),
        |c| c.ktir,
    )
}

#[allow(clippy::too_many_arguments)]
fn with_artifacts<T>(
    graph: &graph::Graph,
    target: &crate::Target,
    options: &crate::Options,
    progress: &mut dyn FnMut(crate::CompileProgress),
    kernels: &mut KernelCache<'_>,
    store: &mut dyn ArtifactStore,
    from_hit: FromHit<'_, T>,
    from_compile: impl FnOnce(Compilation) -> T,
) -> Result<(T, ArtifactOutcome), crate::CompileError> {
    let key = match compile_key(graph, target, options) {
        Ok(k) => k,
        Err(why) => {
            let c = crate::compile_cached(graph, target, options, progress, kernels)?;
            return Ok((from_compile(c), ArtifactOutcome::Bypassed(why)));
        }
    };
    let mut outcome = ArtifactOutcome::Miss;
    match from_hit(&key, store) {
        Some(Ok(t)) => return Ok((t, ArtifactOutcome::Hit)),
        Some(Err(why)) => outcome = ArtifactOutcome::Rebuilt(why),
        None => {}
    }
    let c = crate::compile_cached(graph, target, options, progress, kernels)?;
    match encode_artifact(&key, &c).and_then(|a| Ok((a, encode_passes(&key, &c)?))) {
        Ok((artifact, passes)) => {
            store.put_artifact(&key, &artifact);
            store.put_artifact(&passes_key(&key), &passes);
        }
        Err(why) => outcome = ArtifactOutcome::Bypassed(why),
    }
    Ok((from_compile(c), outcome))
}
