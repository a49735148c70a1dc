//! The WebAssembly facade: the pipeline as JavaScript functions returning plain data.
//!
//! This is the only crate that knows about JavaScript. It holds no algorithm: each export
//! calls the `driver` crate and converts the result with `serde-wasm-bindgen`. Errors become
//! JavaScript `Error`s whose message names the stage and the location.

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
    /// An edited KTIR module to simulate in place of the lowered one.
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

/// Loads, compiles, lowers and simulates a model file on the spyre32 machine.
#[wasm_bindgen(js_name = runPipeline)]
pub fn run_pipeline(source: &str, file_name: &str) -> Result<JsValue, JsError> {
    let result = driver::run_pipeline(source, file_name, &driver::PipelineOptions::default())
        .map_err(driver_error)?;
    to_js(&result)
}

/// [`run_pipeline`] on a file's bytes with options `{ machine?, seed?, ktir?, timingOnly? }`;
/// with `ktir`, the edited module is simulated in place of the lowered one; with
/// `timingOnly`, no numbers are computed (the result's `outputsChecked` is false).
#[wasm_bindgen(js_name = runPipelineWith)]
pub fn run_pipeline_with(
    bytes: &[u8],
    file_name: &str,
    options: JsValue,
) -> Result<JsValue, JsError> {
    let o = run_options(options)?;
    let opts = pipeline_options(&o)?;
    let result = driver::run_pipeline_with_ktir(bytes, file_name, o.ktir.as_deref(), &opts)
        .map_err(driver_error)?;
    to_js(&result)
}

/// Every verifier diagnostic of a KTIR text:
/// `[{ severity, message, line, column, start, end }]` (byte offsets).
#[wasm_bindgen(js_name = verifyKtir)]
pub fn verify_ktir(text: &str) -> Result<JsValue, JsError> {
    to_js(&driver::verify_ktir(text))
}

fn ktir_options(o: &RunOptions) -> Result<driver::KtirRunOptions, JsError> {
    let p = pipeline_options(o)?;
    Ok(driver::KtirRunOptions {
        machine: p.machine,
        args: Default::default(),
        inputs: Default::default(),
        seed: p.seed,
        limits: p.limits,
        timing_only: p.timing_only,
    })
}

/// Runs a standalone KTIR module (buffers found from its memory views, random inputs)
/// with options `{ machine?, seed?, timingOnly? }`.
#[wasm_bindgen(js_name = runKtir)]
pub fn run_ktir(text: &str, options: JsValue) -> Result<JsValue, JsError> {
    let opts = ktir_options(&run_options(options)?)?;
    let (result, _) = driver::run_ktir(text, &opts).map_err(driver_error)?;
    to_js(&result)
}

/// The Chrome trace JSON (opens in Perfetto and chrome://tracing) of a model file's run,
/// with the same options as [`run_pipeline_with`].
#[wasm_bindgen(js_name = pipelineTrace)]
pub fn pipeline_trace(bytes: &[u8], file_name: &str, options: JsValue) -> Result<String, JsError> {
    let o = run_options(options)?;
    let opts = pipeline_options(&o)?;
    driver::trace_pipeline(bytes, file_name, o.ktir.as_deref(), &opts).map_err(driver_error)
}

/// The Chrome trace JSON of a standalone KTIR module's run.
#[wasm_bindgen(js_name = ktirTrace)]
pub fn ktir_trace(text: &str, options: JsValue) -> Result<String, JsError> {
    let opts = ktir_options(&run_options(options)?)?;
    let (_, schedule) = driver::run_ktir(text, &opts).map_err(driver_error)?;
    Ok(driver::sim::trace::chrome_trace_json(
        &opts.machine,
        &schedule,
    ))
}
