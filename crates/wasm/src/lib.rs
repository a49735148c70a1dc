//! The WebAssembly facade: the driver's session as a JavaScript class, and a few functions
//! returning plain data.
//!
//! This is the only crate that knows about JavaScript. It holds no algorithm: each export
//! calls the `driver` crate and converts the result with `serde-wasm-bindgen` (its shapes
//! are the TypeScript types generated from the driver's). Errors become JavaScript `Error`s
//! whose message names the stage and the location.

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

fn pipeline_options(o: &RunOptions) -> Result<driver::PipelineOptions, JsError> {
    let mut opts = driver::PipelineOptions::default();
    if let Some(m) = &o.machine {
        opts.machine = driver::machine(m).map_err(driver_error)?;
    }
    if let Some(seed) = o.seed {
        opts.seed = seed;
    }
    opts.timing_only = o.timing_only.unwrap_or(false);
    Ok(opts)
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
    pub fn new(bytes: &[u8], file_name: &str) -> Result<Session, JsError> {
        driver::Session::open(bytes, file_name)
            .map(|inner| Session { inner })
            .map_err(driver_error)
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
    /// computed (`run.outputsChecked` is false).
    pub fn run(&mut self, options: JsValue) -> Result<JsValue, JsError> {
        let o = run_options(options)?;
        let mut opts = pipeline_options(&o)?;
        opts.ktir = o.ktir;
        let run = self.inner.run(&opts, &mut |_| {}).map_err(driver_error)?;
        to_js(run)
    }

    /// The last run as Chrome trace JSON (opens in Perfetto and chrome://tracing), from its
    /// stored schedule: nothing runs again.
    #[wasm_bindgen(js_name = traceJson)]
    pub fn trace_json(&self) -> Result<String, JsError> {
        self.inner.trace_json().map_err(driver_error)
    }
}
