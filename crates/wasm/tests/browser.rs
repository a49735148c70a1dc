//! The facade's tests in a real browser (`wasm-pack test --headless --chrome`).
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
mod common;
