//! The WebAssembly facade: the driver's session as a JavaScript class, and a few functions
//! returning plain data.
//!
//! This is the only crate that knows about JavaScript. It holds no algorithm: each export
//! calls the `driver` crate and converts the result with `serde-wasm-bindgen` (its shapes
//! are the TypeScript types generated from the driver's). Session errors become JavaScript
//! `Error`s whose message names the stage and the location, carrying the driver error's
//! fields (`stage`, `file`, `line`, `column`, `node`, `diagnostics`) as properties.

use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    // JSON-compatible: `None` becomes `null` and maps become plain objects.
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&format!("internal: could not convert the result: {e}")))
}

/// A run as JavaScript, its events as columns (`EventColumns` on the page): one typed array
/// per field, not one object per event. A large run's 200,000 event objects took longer to
/// build, and then to pack into columns again, than the rest of its result.
///
/// With `texts_apart`, the pass snapshot texts stay here (`text: null`, `passesApart: true`)
/// until [`Session::fill_passes`] gives them: copying them into JavaScript strings was about
/// a third of the handoff, for views that may never be opened.
fn run_to_js(run: &mut driver::Run, texts_apart: bool) -> Result<JsValue, JsValue> {
    let events = std::mem::take(&mut run.run.events);
    // The KTIR pass's text stays when a KTIR edit ran in its place: the page tells the edit
    // from the module as compiled at once. Otherwise it is `ktir`, which the result carries.
    let texts: Vec<Option<String>> = if texts_apart {
        run.passes
            .iter_mut()
            .map(|p| match p.text.as_deref() {
                Some(t) if p.name == "ktir" && t != run.ktir => None,
                _ => p.text.take(),
            })
            .collect()
    } else {
        Vec::new()
    };
    let apart_before = run.passes_apart;
    run.passes_apart |= texts_apart && texts.iter().any(Option::is_some);
    let value = to_js(&*run);
    run.run.events = events;
    run.passes_apart = apart_before;
    for (pass, text) in run.passes.iter_mut().zip(texts) {
        if text.is_some() {
            pass.text = text;
        }
    }
    let value = value?;
    let inner = js_sys::Reflect::get(&value, &JsValue::from_str("run"))?;
    js_sys::Reflect::set(
        &inner,
        &JsValue::from_str("events"),
        &event_columns(&run.run.events)?,
    )?;
    Ok(value)
}

/// `events` as the page's `EventColumns`: units by their index in `["dma", "pt", "sfp"]`,
/// missing ring stops as -1, each event's route a run of `route` from `routeStart`, and op
/// texts once each in `ops`.
fn event_columns(events: &[driver::EventView]) -> Result<JsValue, JsValue> {
    let n = events.len();
    let mut unit = Vec::with_capacity(n);
    let mut core = Vec::with_capacity(n);
    let mut start = Vec::with_capacity(n);
    let mut end = Vec::with_capacity(n);
    let mut bytes = Vec::with_capacity(n);
    let mut src_stop = Vec::with_capacity(n);
    let mut dst_stop = Vec::with_capacity(n);
    let mut route_start = Vec::with_capacity(n + 1);
    let mut route = Vec::new();
    let mut op = Vec::with_capacity(n);
    let mut line = Vec::with_capacity(n);
    let mut ops = Vec::new();
    // foldhash, not SipHash: the op of every event is looked up, 200,000 times in a big run,
    // and the names are the program's own.
    let mut op_index: std::collections::HashMap<&str, u32, foldhash::fast::RandomState> =
        std::collections::HashMap::default();
    let stop = |s: Option<usize>| s.map_or(-1, |s| i32::try_from(s).unwrap_or(-1));
    for e in events {
        unit.push(e.unit.index() as u8);
        core.push(i32::try_from(e.core).unwrap_or(i32::MAX));
        start.push(e.start);
        end.push(e.end);
        bytes.push(e.bytes as f64);
        src_stop.push(stop(e.src_stop));
        dst_stop.push(stop(e.dst_stop));
        route_start.push(route.len() as u32);
        route.extend(e.route.iter().map(|&s| stop(Some(s))));
        let next = ops.len() as u32;
        let o = *op_index.entry(e.op.as_str()).or_insert_with(|| {
            ops.push(JsValue::from_str(&e.op));
            next
        });
        op.push(o);
        line.push(i32::try_from(e.line).unwrap_or(i32::MAX));
    }
    route_start.push(route.len() as u32);
    let out = js_sys::Object::new();
    let set =
        |key: &str, value: &JsValue| js_sys::Reflect::set(&out, &JsValue::from_str(key), value);
    set("count", &JsValue::from_f64(n as f64))?;
    set("unit", &js_sys::Uint8Array::from(&unit[..]))?;
    set("core", &js_sys::Int32Array::from(&core[..]))?;
    set("start", &js_sys::Float64Array::from(&start[..]))?;
    set("end", &js_sys::Float64Array::from(&end[..]))?;
    set("bytes", &js_sys::Float64Array::from(&bytes[..]))?;
    set("srcStop", &js_sys::Int32Array::from(&src_stop[..]))?;
    set("dstStop", &js_sys::Int32Array::from(&dst_stop[..]))?;
    set("routeStart", &js_sys::Uint32Array::from(&route_start[..]))?;
    set("route", &js_sys::Int32Array::from(&route[..]))?;
    set("op", &js_sys::Uint32Array::from(&op[..]))?;
    set("ops", &ops.into_iter().collect::<js_sys::Array>())?;
    set("line", &js_sys::Int32Array::from(&line[..]))?;
    Ok(out.into())
}

fn driver_error(e: driver::DriverError) -> JsError {
    JsError::new(&e.to_string())
}

/// A driver error as a JavaScript `Error` (message: stage and message) with the error's
/// structured fields as properties, so the page can point at the line and column.
fn structured_error(e: driver::DriverError) -> JsValue {
    let error = js_sys::Error::new(&e.to_string());
    if let Ok(fields) = to_js(&e) {
        let message = JsValue::from_str("message");
        let fields = js_sys::Object::from(fields);
        // The message property stays the Error's own (stage included).
        let _ = js_sys::Reflect::delete_property(&fields, &message);
        js_sys::Object::assign(&error, &fields);
    }
    error.into()
}

/// What the progress callback receives: `{ phase, done, total, pass? }`, the phase being
/// "compile" (a model graph's passes, `pass` the one running), "execute" (KTIR operations
/// run against the static estimate) or "schedule" (tasks timed).
#[derive(Serialize)]
struct ProgressReport {
    phase: &'static str,
    done: u64,
    total: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pass: Option<&'static str>,
}

/// Calls `callback` with the driver's progress, at most once per percent of each phase
/// (and at each phase's start and end), so a long run does not flood JavaScript.
struct Throttled<'a> {
    callback: &'a js_sys::Function,
    last: Option<(&'static str, Option<&'static str>, u64)>,
}

impl Throttled<'_> {
    fn report(&mut self, p: driver::Progress) {
        let (phase, pass, done, total) = match p {
            driver::Progress::Compile { pass, done, total } => ("compile", Some(pass), done, total),
            driver::Progress::Execute { steps, total } => ("execute", None, steps, total),
            driver::Progress::Schedule { done, total } => ("schedule", None, done, total),
        };
        // The estimate can fall short: never report more done than total.
        let total = total.max(done).max(1);
        let percent = done.saturating_mul(100) / total;
        // A new pass is worth a report even within the same percent.
        let key = (phase, pass, percent);
        if self.last == Some(key) && done != total {
            return;
        }
        self.last = Some(key);
        let report = ProgressReport {
            phase,
            done,
            total,
            pass,
        };
        if let Ok(v) = to_js(&report) {
            // A throwing callback must not abort the run.
            let _ = self.callback.call1(&JsValue::NULL, &v);
        }
    }
}

/// Settings of a run, as the page sends them (every field optional).
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RunOptions {
    /// A machine preset name or a machine description's JSON text (default "spyre32").
    machine: Option<String>,
    /// Seed of the random inputs.
    seed: Option<u64>,
    /// A KTIR module to simulate in place of the lowered one or of the source.
    ktir: Option<String>,
    /// Compute timing only: no numbers, weights never materialised, outputs not checked.
    timing_only: Option<bool>,
    /// KTIR modules: scalar argument values as text, typed by the function signature.
    args: Option<std::collections::BTreeMap<String, String>>,
    /// KTIR modules: fixed DRAM element addresses of buffers, by name.
    places: Option<std::collections::BTreeMap<String, i64>>,
    /// KTIR modules: "error" (default) or "mask" for points outside their views.
    out_of_bounds: Option<String>,
    /// Model graphs: the scratchpad allocator, "greedy" (default), "first-fit" or "best-fit".
    allocator: Option<String>,
    /// Model graphs: decompose attention as an online-softmax loop over blocks of this many
    /// keys (default: one softmax over all keys).
    attention_block: Option<usize>,
    /// Model graphs: double-buffer the loads of time loops (default true).
    double_buffer: Option<bool>,
    /// Leave the pass snapshot texts out of the result (default false): the passes come with
    /// `text: null` and `passesApart: true`, and [`Session::fill_passes`] gives the texts
    /// when a view asks for them.
    texts_apart: Option<bool>,
    /// Model graphs: fuse runs of elementwise ops into one kernel (default true).
    fuse: Option<bool>,
    /// Model graphs: also run tensor-parallel over this many cards (`--tp`; 1 or absent:
    /// one card only).
    tp: Option<usize>,
    /// With `tp`: a system preset name ("drawer8", "ring4") or a system description's JSON
    /// text (`--system`); absent: `tp` cards of the machine behind a PCIe switch.
    system: Option<String>,
    /// With `tp`: the all-reduce algorithm, "auto" (default), "ring" or "tree".
    allreduce: Option<String>,
    /// Model graphs: the serving stack's padding rules whose cost PagedAttention reports:
    /// queries padded to a multiple of this many tokens (default: the public 32).
    query_align: Option<usize>,
    /// KV length aligned to a multiple of this (default: the public 256).
    kv_align: Option<usize>,
    /// Query and KV alignment of decode-only batches (default: the public 1).
    decode_align: Option<usize>,
}

/// The tensor-parallel settings of the page's options, `None` for a one-card run.
fn tp_options(o: &RunOptions) -> Result<Option<driver::TpOptions>, JsValue> {
    let degree = o.tp.unwrap_or(1);
    if degree == 0 || degree > driver::sim::system::MAX_CARDS {
        return Err(JsError::new(&format!(
            "options: tp is a number of cards from 1 to {}, not {degree}",
            driver::sim::system::MAX_CARDS
        ))
        .into());
    }
    if degree == 1 {
        return Ok(None);
    }
    let system = match o.system.as_deref() {
        None | Some("") => None,
        Some(text) if text.trim_start().starts_with('{') => Some(
            driver::sim::system::System::from_json(text)
                .map_err(|e| JsError::new(&format!("options: system: {e}")))?,
        ),
        Some(name) => Some(driver::sim::system::System::preset(name).ok_or_else(|| {
            JsError::new(&format!(
                "options: system: no preset named '{name}'; presets are {}",
                driver::sim::system::System::preset_names().join(", ")
            ))
        })?),
    };
    let algorithm = o
        .allreduce
        .as_deref()
        .unwrap_or("auto")
        .parse()
        .map_err(|e: String| JsError::new(&format!("options: allreduce: {e}")))?;
    Ok(Some(driver::TpOptions {
        degree,
        system,
        algorithm,
        ..driver::TpOptions::default()
    }))
}

/// The driver's options from the page's.
fn driver_options(o: RunOptions) -> Result<driver::RunOptions, JsValue> {
    let mut opts = driver::PipelineOptions::default();
    if let Some(m) = &o.machine {
        opts.machine = driver::machine(m).map_err(structured_error)?;
    }
    opts.seed = o.seed.unwrap_or(opts.seed);
    opts.timing_only = o.timing_only.unwrap_or(false);
    opts.ktir = o.ktir;
    if let Some(a) = &o.allocator {
        opts.compile.allocator = a
            .parse()
            .map_err(|e: driver::compiler::CompileError| JsError::new(&format!("options: {e}")))?;
    }
    if o.attention_block == Some(0) {
        return Err(JsError::new("options: attentionBlock is a number of keys, at least 1").into());
    }
    opts.compile.attention_key_block = o.attention_block;
    opts.compile.double_buffer = o.double_buffer.unwrap_or(true);
    for (value, field, name) in [
        (
            o.query_align,
            &mut opts.compile.padding.query_align,
            "queryAlign",
        ),
        (o.kv_align, &mut opts.compile.padding.kv_align, "kvAlign"),
        (
            o.decode_align,
            &mut opts.compile.padding.decode_align,
            "decodeAlign",
        ),
    ] {
        match value {
            Some(0) => {
                return Err(JsError::new(&format!(
                    "options: {name} is a number of tokens, at least 1"
                ))
                .into())
            }
            Some(n) => *field = n,
            None => {}
        }
    }
    opts.compile.fuse = o.fuse.unwrap_or(true);
    opts.scalars = o.args.unwrap_or_default();
    opts.places = o.places.unwrap_or_default();
    opts.out_of_bounds = match o.out_of_bounds.as_deref() {
        None | Some("error") => driver::OutOfBounds::Error,
        Some("mask") => driver::OutOfBounds::Mask,
        Some(other) => {
            return Err(JsError::new(&format!(
                "options: outOfBounds is \"error\" or \"mask\", not \"{other}\""
            ))
            .into())
        }
    };
    Ok(opts)
}

fn run_options(options: JsValue) -> Result<RunOptions, JsError> {
    if options.is_undefined() || options.is_null() {
        return Ok(RunOptions::default());
    }
    serde_wasm_bindgen::from_value(options).map_err(|e| JsError::new(&format!("options: {e}")))
}

/// A model graph's inputs and outputs with their types, for the page's Run inputs panel.
#[derive(Serialize)]
struct GraphIo {
    inputs: Vec<driver::TensorView>,
    outputs: Vec<driver::TensorView>,
}

/// Names and `Uint8Array`s given side by side, as (name, bytes) pairs.
fn pairs(names: Vec<String>, files: &js_sys::Array) -> Result<Vec<(String, Vec<u8>)>, JsValue> {
    if names.len() != files.length() as usize {
        return Err(JsError::new("one file per name").into());
    }
    Ok(names
        .into_iter()
        .zip(files.iter())
        .map(|(n, f)| (n, js_sys::Uint8Array::new(&f).to_vec()))
        .collect())
}

/// The file name the driver binds a tensor's bytes by: `NAME.npy` for `.npy` contents
/// (they start with the numpy magic), else an ONNX `TensorProto` (matched by
/// the name inside it, else by `prefix_K.pb`, K being the tensor's position `at`).
fn npy_or_pb_name(name: &str, bytes: &[u8], prefix: &str, at: Option<usize>) -> String {
    match at {
        _ if bytes.starts_with(b"\x93NUMPY") => format!("{name}.npy"),
        Some(k) => format!("{prefix}{k}.pb"),
        None => format!("{name}.pb"),
    }
}

/// Marks an error as concerning one input (`input`: its name; `role`: "input" or
/// "expected"), so the page shows it on that input's row.
fn about_input(error: JsValue, name: &str, role: &str) -> JsValue {
    let _ = js_sys::Reflect::set(
        &error,
        &JsValue::from_str("input"),
        &JsValue::from_str(name),
    );
    let _ = js_sys::Reflect::set(&error, &JsValue::from_str("role"), &JsValue::from_str(role));
    error
}

/// The playground's version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The compiler's version, part of every compile key: the page drops stored artifacts of
/// another version without reading them.
#[wasm_bindgen(js_name = compilerVersion)]
pub fn compiler_version() -> String {
    driver::compiler::artifact_cache::COMPILER_VERSION.to_string()
}

/// The page's artifact store for one run: the bytes the worker read from IndexedDB under
/// the compile's key and under its snapshots' key (checked by the compiler, never
/// trusted), and what the compile put back for the worker to store.
#[derive(Default)]
struct ArtifactSlot {
    given: Option<Vec<u8>>,
    given_passes: Option<Vec<u8>>,
    put: Option<Vec<u8>>,
    put_passes: Option<Vec<u8>>,
}

/// Whether `key` is a snapshots key (`passes_key` of a compile key) rather than a compile key.
fn is_passes_key(key: &str) -> bool {
    key.ends_with(&driver::compiler::artifact_cache::passes_key(""))
}

impl driver::compiler::artifact_cache::ArtifactStore for ArtifactSlot {
    fn get_artifact(&mut self, key: &str) -> Option<Vec<u8>> {
        if is_passes_key(key) {
            self.given_passes.take()
        } else {
            self.given.take()
        }
    }
    fn put_artifact(&mut self, key: &str, bytes: &[u8]) {
        if is_passes_key(key) {
            self.put_passes = Some(bytes.to_vec());
        } else {
            self.put = Some(bytes.to_vec());
        }
    }
}

/// What the compile cache did in the last run: `outcome` is "hit" (no pass ran), "miss"
/// (compiled, an artifact to store), "rebuilt" (the stored one was stale or corrupted:
/// `reason`; compiled again), "bypassed" (not cacheable: `reason`) or "off" (the run did
/// not use the cache); `compileMs` is the compile's wall time (the cache included).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CompileCacheReport {
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    compile_ms: f64,
}

/// The example gallery: `[{ name, description }]`.
#[wasm_bindgen(js_name = listExamples)]
pub fn list_examples() -> Result<JsValue, JsError> {
    to_js(&driver::examples())
}

/// The text of a gallery example.
#[wasm_bindgen(js_name = exampleSource)]
pub fn example_source(name: &str) -> Result<String, JsError> {
    driver::examples()
        .into_iter()
        .find(|e| e.name == name)
        .map(|e| e.source.to_string())
        .ok_or_else(|| JsError::new(&format!("no example named '{name}'")))
}

/// The machine presets: `["spyre32", "tiny4", ...]`.
#[wasm_bindgen(js_name = machinePresets)]
pub fn machine_presets() -> Result<JsValue, JsError> {
    to_js(&driver::sim::Machine::preset_names())
}

/// Every verifier diagnostic of a KTIR text:
/// `[{ severity, message, line, column, start, end }]` (byte offsets).
#[wasm_bindgen(js_name = verifyKtir)]
pub fn verify_ktir(text: &str) -> Result<JsValue, JsError> {
    to_js(&driver::verify_ktir(text))
}

/// One opened source (a model graph as JSON or ONNX bytes, or a KTIR module), run with
/// options and kept with its last run, as the driver's session: JavaScript holds it across
/// runs and trace exports.
#[wasm_bindgen]
pub struct Session {
    inner: driver::Session,
    /// The artifact store armed for the next run ([`Session::use_artifacts`]).
    armed: Option<ArtifactSlot>,
    /// What the last run's compile cache did.
    cache_report: Option<CompileCacheReport>,
    /// The artifact the last run's compile made, for the worker to store.
    made: Option<Vec<u8>>,
    /// The snapshots entry the last run's compile made, for the worker to store.
    made_passes: Option<Vec<u8>>,
    /// The options of the last run through the compile store, which [`Session::fill_passes`]
    /// compiles with again when the stored snapshot texts are unsound.
    stored_run: Option<driver::RunOptions>,
}

impl Session {
    fn of(inner: driver::Session) -> Session {
        Session {
            inner,
            armed: None,
            cache_report: None,
            made: None,
            made_passes: None,
            stored_run: None,
        }
    }
}

#[wasm_bindgen]
impl Session {
    /// Opens a file's bytes; the kind comes from the content, the name only breaking ties.
    #[wasm_bindgen(constructor)]
    pub fn new(bytes: &[u8], file_name: &str) -> Result<Session, JsValue> {
        driver::Session::open(bytes, file_name)
            .map(Session::of)
            .map_err(structured_error)
    }

    /// Opens a model with the files dropped with it: `names[i]` is the file name of the
    /// bytes `files[i]` (a `Uint8Array`), where an ONNX model's external data is looked up
    /// (read only when values are needed, so a timing-only run reads none).
    #[wasm_bindgen(js_name = openWithFiles)]
    pub fn open_with_files(
        bytes: &[u8],
        file_name: &str,
        names: Vec<String>,
        files: js_sys::Array,
    ) -> Result<Session, JsValue> {
        let given = pairs(names, &files)?;
        let map: std::collections::BTreeMap<String, Vec<u8>> = given.into_iter().collect();
        driver::Session::open_with_files(bytes, file_name, std::sync::Arc::new(map))
            .map(Session::of)
            .map_err(structured_error)
    }

    /// What the source is: "graph", "onnx" or "ktir".
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> String {
        match self.inner.kind() {
            driver::SourceKind::Graph => "graph",
            driver::SourceKind::Onnx => "onnx",
            driver::SourceKind::Ktir => "ktir",
        }
        .to_string()
    }

    /// Runs the source with options `{ machine?, seed?, ktir?, timingOnly?, allocator?,
    /// attentionBlock?, doubleBuffer?, fuse?, args?, places?, outOfBounds? }` (the compiler's three
    /// as `spyre compile`'s flags; the last three for KTIR: scalar values as text, fixed
    /// buffer addresses, "error" or "mask") and returns the
    /// run (`Run` in the generated types): with `ktir`, that module runs in place of the
    /// lowered one (graphs) or of the source (KTIR); with `timingOnly`, no numbers are
    /// computed (`run.outputsChecked` is false). `progress`, when given, is called with
    /// `{ phase, done, total }` as the run goes (throttled). A failure throws an `Error`
    /// carrying `stage`, `file`, `line`, `column`, `node` and `diagnostics`.
    pub fn run(
        &mut self,
        options: JsValue,
        progress: Option<js_sys::Function>,
    ) -> Result<JsValue, JsValue> {
        let o = run_options(options)?;
        let tp = tp_options(&o)?;
        let apart = o.texts_apart.unwrap_or(false);
        let opts = driver_options(o)?;
        self.run_now(&opts, tp.as_ref(), apart, progress)
    }

    /// What a run of this KTIR module takes (`KtirInputs` in the generated types: buffers
    /// with dtype, shape, address and role, scratchpad views, scalars, tensor arguments and
    /// what is missing), given the options' `args` and `places`; with `ktir`, of that
    /// module, which a run would run in place of the source. Throws for a graph.
    #[wasm_bindgen(js_name = ktirInputs)]
    pub fn ktir_inputs(&self, options: JsValue) -> Result<JsValue, JsValue> {
        let opts = driver_options(run_options(options)?)?;
        let source = self.inner.ktir_source().ok_or_else(|| {
            JsValue::from(JsError::new(
                "ktirInputs: the source is a model graph, not KTIR",
            ))
        })?;
        let text = opts.ktir.as_deref().unwrap_or(source);
        let inputs = driver::ktir_inputs(text, &opts).map_err(structured_error)?;
        Ok(to_js(&inputs)?)
    }

    /// Runs a KTIR module with `.npy` files: `names[i]` is filled from the bytes
    /// `files[i]` (a `Uint8Array`), each checked against what it fills (dtype, shape, a
    /// name that exists); then as [`Session::run`].
    #[wasm_bindgen(js_name = runWithInputs)]
    pub fn run_with_inputs(
        &mut self,
        options: JsValue,
        names: Vec<String>,
        files: js_sys::Array,
        progress: Option<js_sys::Function>,
    ) -> Result<JsValue, JsValue> {
        let o = run_options(options)?;
        let tp = tp_options(&o)?;
        let apart = o.texts_apart.unwrap_or(false);
        let mut opts = driver_options(o)?;
        let given = pairs(names, &files)?;
        let source = self.inner.ktir_source().ok_or_else(|| {
            JsValue::from(JsError::new(
                "runWithInputs: the source is a model graph, not KTIR",
            ))
        })?;
        // Files fill the module that runs: the edited one, when given.
        let ktir = opts.ktir.clone();
        let text = ktir.as_deref().unwrap_or(source);
        // One file at a time, so an error names the input it concerns (the page shows it on
        // that input's row).
        for file in &given {
            let one = std::slice::from_ref(file);
            let values = driver::read_npy_inputs(text, &opts, one)
                .map_err(|e| about_input(structured_error(e), &file.0, "input"))?;
            opts.buffers.extend(values);
        }
        self.run_now(&opts, tp.as_ref(), apart, progress)
    }

    /// What a run of this model graph takes and gives (`{ inputs, outputs }`, each a list
    /// of `{ name, dtype, shape }`), without running it. Throws for a KTIR module.
    #[wasm_bindgen(js_name = graphIo)]
    pub fn graph_io(&self) -> Result<JsValue, JsValue> {
        let g = self.inner.graph().ok_or_else(|| {
            JsValue::from(JsError::new(
                "graphIo: the source is KTIR, not a model graph",
            ))
        })?;
        let types = g.infer_types().map_err(|e| {
            structured_error(driver::DriverError::from_graph(
                self.inner.file_name(),
                e,
                driver::Stage::Load,
            ))
        })?;
        let view = |name: &str| driver::TensorView {
            name: name.to_string(),
            dtype: types
                .get(name)
                .map(|t| t.dtype.name().to_string())
                .unwrap_or_default(),
            shape: types.get(name).map(|t| t.shape.clone()).unwrap_or_default(),
        };
        let io = GraphIo {
            inputs: g.inputs.iter().map(|i| view(&i.name)).collect(),
            outputs: g.outputs.iter().map(|o| view(o)).collect(),
        };
        Ok(to_js(&io)?)
    }

    /// Runs a model graph with the user's tensors: `inputNames[i]` is filled from the
    /// `.npy` or ONNX `TensorProto` bytes `inputFiles[i]` (inputs left out stay seeded
    /// random), and `expectedNames[j]`'s simulated value is compared with `expectedFiles[j]`
    /// (as `spyre run --expected`: `run.run.expected`). A file that does not fit (dtype,
    /// shape, unknown name) throws an error carrying `input` (the name) and `role`
    /// ("input" or "expected"). Then as [`Session::run`].
    #[wasm_bindgen(js_name = runGraphWithInputs)]
    pub fn run_graph_with_inputs(
        &mut self,
        options: JsValue,
        input_names: Vec<String>,
        input_files: js_sys::Array,
        expected_names: Vec<String>,
        expected_files: js_sys::Array,
        progress: Option<js_sys::Function>,
    ) -> Result<JsValue, JsValue> {
        let o = run_options(options)?;
        let tp = tp_options(&o)?;
        let apart = o.texts_apart.unwrap_or(false);
        let mut opts = driver_options(o)?;
        let (graph_inputs, graph_outputs): (Vec<String>, Vec<String>) = match self.inner.graph() {
            Some(g) => (
                g.inputs.iter().map(|i| i.name.clone()).collect(),
                g.outputs.clone(),
            ),
            None => {
                return Err(JsError::new(
                    "runGraphWithInputs: the source is KTIR, not a model graph",
                )
                .into())
            }
        };
        let groups = [
            (
                input_names,
                input_files,
                driver::user_data::Role::Inputs,
                "input",
                "input_",
                &graph_inputs,
            ),
            (
                expected_names,
                expected_files,
                driver::user_data::Role::Outputs,
                "expected",
                "output_",
                &graph_outputs,
            ),
        ];
        for (names, files, role, word, prefix, order) in groups {
            for (name, bytes) in pairs(names, &files)? {
                let at = order.iter().position(|n| *n == name);
                let file = (npy_or_pb_name(&name, &bytes, prefix, at), bytes);
                let values = self
                    .inner
                    .read_some(std::slice::from_ref(&file), role)
                    .map_err(|e| about_input(structured_error(e), &name, word))?;
                match role {
                    driver::user_data::Role::Inputs => opts.inputs.extend(values),
                    driver::user_data::Role::Outputs => opts.expected.extend(values),
                }
            }
        }
        self.run_now(&opts, tp.as_ref(), apart, progress)
    }

    /// A graph output of the last run as `.npy` bytes, for download.
    #[wasm_bindgen(js_name = outputNpy)]
    pub fn output_npy(&self, name: &str) -> Result<Vec<u8>, JsError> {
        let file = format!("{}.npy", name.replace(['/', '\\'], "_"));
        self.inner
            .output_npy()
            .map_err(driver_error)?
            .into_iter()
            .find(|(f, _)| *f == file)
            .map(|(_, bytes)| bytes)
            .ok_or_else(|| JsError::new(&format!("outputNpy: no output named '{name}'")))
    }

    /// A buffer of the last run as `.npy` bytes (f16 buffers as float16, others float32,
    /// shaped like their largest view), for download.
    #[wasm_bindgen(js_name = bufferNpy)]
    pub fn buffer_npy(&self, name: &str) -> Result<Vec<u8>, JsError> {
        let run = self
            .inner
            .last_run()
            .ok_or_else(|| JsError::new("bufferNpy: nothing has run yet"))?;
        let (spec, data) = run
            .run
            .buffers
            .iter()
            .find(|(s, _)| s.name == name)
            .ok_or_else(|| JsError::new(&format!("bufferNpy: no buffer named '{name}'")))?;
        if run.run.timing_only {
            return Err(JsError::new(
                "bufferNpy: a timing-only run computes no buffer contents",
            ));
        }
        driver::npy::to_bytes(spec, data).map_err(|e| JsError::new(&e))
    }

    fn run_now(
        &mut self,
        opts: &driver::RunOptions,
        tp: Option<&driver::TpOptions>,
        texts_apart: bool,
        progress: Option<js_sys::Function>,
    ) -> Result<JsValue, JsValue> {
        use driver::compiler::artifact_cache::ArtifactOutcome as O;
        self.cache_report = None;
        self.made = None;
        self.made_passes = None;
        let mut throttled = progress.as_ref().map(|callback| Throttled {
            callback,
            last: None,
        });
        // The compile ends at its last report (the driver reports it finished before
        // anything else runs); a tensor-parallel run's second compile comes later.
        let started = js_sys::Date::now();
        let mut compiled_at = None;
        let mut compiling = true;
        let mut report = |p: driver::Progress| {
            if compiling && matches!(p, driver::Progress::Compile { .. }) {
                compiled_at = Some(js_sys::Date::now());
            } else {
                compiling = false;
            }
            if let Some(t) = throttled.as_mut() {
                t.report(p);
            }
        };
        let armed = self.armed.take();
        self.stored_run = None;
        let (outcome, slot) = match armed {
            Some(mut slot) => {
                let run = self
                    .inner
                    .run_with_artifacts(opts, tp, &mut report, &mut slot)
                    .map_err(structured_error)?;
                // A hit leaves the snapshot texts in their own entry: the run brings the
                // passes' data the views read at once, and the texts come when a view asks
                // for them ([`Session::fill_passes`]).
                let outcome = run.artifact.clone();
                self.stored_run = Some(opts.clone());
                (outcome, Some(slot))
            }
            None => {
                self.inner
                    .run_with_tp(opts, tp, &mut report)
                    .map_err(structured_error)?;
                (None, None)
            }
        };
        let value = match self.inner.last_run_mut() {
            Some(run) => run_to_js(run, texts_apart)?,
            None => JsValue::UNDEFINED,
        };
        if self.inner.graph().is_some() {
            let (word, reason) = match outcome {
                Some(O::Hit) => ("hit", None),
                Some(O::Miss) => ("miss", None),
                Some(O::Rebuilt(why)) => ("rebuilt", Some(why)),
                Some(O::Bypassed(why)) => ("bypassed", Some(why)),
                None => ("off", None),
            };
            self.cache_report = Some(CompileCacheReport {
                outcome: word,
                reason,
                compile_ms: compiled_at.map_or(0.0, |t| (t - started).max(0.0)),
            });
        }
        if let Some(s) = slot {
            self.made = s.put;
            self.made_passes = s.put_passes;
        }
        Ok(value)
    }

    /// The key this graph's compile is stored under with `options` (as [`Session::run`]
    /// takes them): a SHA-256 of the graph, the compiler options, the machine and the
    /// compiler's version. `undefined` for a KTIR module and for a graph that cannot be
    /// cached (weights in external files).
    #[wasm_bindgen(js_name = compileKey)]
    pub fn compile_key(&self, options: JsValue) -> Result<Option<String>, JsValue> {
        let opts = driver_options(run_options(options)?)?;
        Ok(self.inner.compile_key(&opts).and_then(Result::ok))
    }

    /// Arms the compile cache for the next run: `stored` is what the page's store holds
    /// under [`Session::compile_key`] (`undefined`: nothing). The compiler checks its key,
    /// version and digest: a sound artifact is used with no pass running, anything else is
    /// rebuilt, and the new artifact waits in [`Session::take_artifact`].
    /// `stored_passes` is what it holds under the snapshots' key (the compile key with
    /// `.passes` after it): only a tensor-parallel run reads it (its pass is built on the
    /// canonical state's text); other runs leave the texts for [`Session::fill_passes`].
    #[wasm_bindgen(js_name = useArtifacts)]
    pub fn use_artifacts(&mut self, stored: Option<Vec<u8>>, stored_passes: Option<Vec<u8>>) {
        self.armed = Some(ArtifactSlot {
            given: stored,
            given_passes: stored_passes,
            ..ArtifactSlot::default()
        });
    }

    /// The last run's pass snapshot texts and each device op's SDSC lines
    /// (`{ texts: [{ name, text }], sdscLines: [{ op, lines }], outcome, reason? }`). A run
    /// whose texts stayed in the page's store (a cache hit) reads them from
    /// `stored_passes`, what the store holds under the snapshots' key; a missing, stale or
    /// corrupted entry is compiled again (`outcome` "rebuilt" or "miss", the new entry
    /// waiting in [`Session::take_passes_artifact`]). A run that has its texts gives them
    /// (`outcome` "none").
    #[wasm_bindgen(js_name = fillPasses)]
    pub fn fill_passes(&mut self, stored_passes: Option<Vec<u8>>) -> Result<JsValue, JsValue> {
        use driver::compiler::artifact_cache::ArtifactOutcome as O;
        let mut slot = ArtifactSlot {
            given_passes: stored_passes,
            ..ArtifactSlot::default()
        };
        let filled = match &self.stored_run {
            Some(opts) => self
                .inner
                .fill_passes(opts, &mut |_| {}, &mut slot)
                .map_err(structured_error)?,
            None => None,
        };
        if slot.put_passes.is_some() {
            self.made_passes = slot.put_passes;
        }
        let (outcome, reason) = match filled {
            None => ("none", None),
            Some(O::Hit) => ("hit", None),
            Some(O::Miss) => ("miss", None),
            Some(O::Rebuilt(why)) => ("rebuilt", Some(why)),
            Some(O::Bypassed(why)) => ("bypassed", Some(why)),
        };
        let run = self
            .inner
            .last_run()
            .ok_or_else(|| JsError::new("fillPasses: nothing has run yet"))?;
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Filled {
            #[serde(flatten)]
            passes: driver::PassesApart,
            outcome: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            reason: Option<String>,
        }
        Ok(to_js(&Filled {
            passes: run.pass_texts(),
            outcome,
            reason,
        })?)
    }

    /// What the last run's compile cache did (`{ outcome, reason?, compileMs }`, see
    /// `CompileCacheReport`); `undefined` after a KTIR module's run.
    #[wasm_bindgen(js_name = compileCache)]
    pub fn compile_cache(&self) -> Result<JsValue, JsError> {
        match &self.cache_report {
            Some(r) => to_js(r),
            None => Ok(JsValue::UNDEFINED),
        }
    }

    /// The artifact the last run's compile made (a miss or a rebuild), for the page's
    /// store; `undefined` when there is none. Taken once.
    #[wasm_bindgen(js_name = takeArtifact)]
    pub fn take_artifact(&mut self) -> Option<Vec<u8>> {
        self.made.take()
    }

    /// The snapshots entry the last run's compile made (a miss, or snapshots rebuilt), for
    /// the page's store under the snapshots' key; `undefined` when there is none. Taken once.
    #[wasm_bindgen(js_name = takePassesArtifact)]
    pub fn take_passes_artifact(&mut self) -> Option<Vec<u8>> {
        self.made_passes.take()
    }

    /// The last run as Chrome trace JSON (opens in Perfetto and chrome://tracing), from its
    /// stored schedule: nothing runs again.
    #[wasm_bindgen(js_name = traceJson)]
    pub fn trace_json(&self) -> Result<String, JsError> {
        self.inner.trace_json().map_err(driver_error)
    }
}
