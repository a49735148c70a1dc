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

/// What the progress callback receives: `{ phase, done, total }`, the phase being
/// "execute" (KTIR operations run against the static estimate) or "schedule" (tasks timed).
#[derive(Serialize)]
struct ProgressReport {
    phase: &'static str,
    done: u64,
    total: u64,
}

/// Calls `callback` with the driver's progress, at most once per percent of each phase
/// (and at each phase's start and end), so a long run does not flood JavaScript.
struct Throttled<'a> {
    callback: &'a js_sys::Function,
    last: Option<(&'static str, u64)>,
}

impl Throttled<'_> {
    fn report(&mut self, p: driver::Progress) {
        let (phase, done, total) = match p {
            driver::Progress::Execute { steps, total } => ("execute", steps, total),
            driver::Progress::Schedule { done, total } => ("schedule", done, total),
        };
        // The estimate can fall short: never report more done than total.
        let total = total.max(done).max(1);
        let percent = done.saturating_mul(100) / total;
        let key = (phase, percent);
        if self.last == Some(key) && done != total {
            return;
        }
        self.last = Some(key);
        if let Ok(v) = to_js(&ProgressReport { phase, done, total }) {
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
}

fn run_options(options: JsValue) -> Result<RunOptions, JsError> {
    if options.is_undefined() || options.is_null() {
        return Ok(RunOptions::default());
    }
    serde_wasm_bindgen::from_value(options).map_err(|e| JsError::new(&format!("options: {e}")))
}

/// The playground's version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
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
}

#[wasm_bindgen]
impl Session {
    /// Opens a file's bytes; the kind comes from the content, the name only breaking ties.
    #[wasm_bindgen(constructor)]
    pub fn new(bytes: &[u8], file_name: &str) -> Result<Session, JsValue> {
        driver::Session::open(bytes, file_name)
            .map(|inner| Session { inner })
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

    /// Runs the source with options `{ machine?, seed?, ktir?, timingOnly? }` and returns the
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
        let mut opts = driver::PipelineOptions::default();
        if let Some(m) = &o.machine {
            opts.machine = driver::machine(m).map_err(structured_error)?;
        }
        opts.seed = o.seed.unwrap_or(opts.seed);
        opts.timing_only = o.timing_only.unwrap_or(false);
        opts.ktir = o.ktir;
        let run = match &progress {
            Some(callback) => {
                let mut t = Throttled {
                    callback,
                    last: None,
                };
                self.inner.run(&opts, &mut |p| t.report(p))
            }
            None => self.inner.run(&opts, &mut |_| {}),
        }
        .map_err(structured_error)?;
        Ok(to_js(run)?)
    }

    /// The last run as Chrome trace JSON (opens in Perfetto and chrome://tracing), from its
    /// stored schedule: nothing runs again.
    #[wasm_bindgen(js_name = traceJson)]
    pub fn trace_json(&self) -> Result<String, JsError> {
        self.inner.trace_json().map_err(driver_error)
    }
}
