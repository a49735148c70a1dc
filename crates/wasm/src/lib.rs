//! The WebAssembly facade: the pipeline as JavaScript functions returning plain data.
//!
//! This is the only crate that knows about JavaScript. It holds no algorithm: each export
//! calls the `driver` crate and converts the result with `serde-wasm-bindgen`. Errors become
//! JavaScript `Error`s whose message names the stage and the location.

use serde::Serialize;
use wasm_bindgen::prelude::*;

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    // JSON-compatible: `None` becomes `null` and maps become plain objects.
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&format!("internal: could not convert the result: {e}")))
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

/// Loads, compiles, lowers and simulates a model file on the spyre32 machine.
#[wasm_bindgen(js_name = runPipeline)]
pub fn run_pipeline(source: &str, file_name: &str) -> Result<JsValue, JsError> {
    let result = driver::run_pipeline(source, file_name, &driver::PipelineOptions::default())
        .map_err(|e| JsError::new(&e.to_string()))?;
    to_js(&result)
}
