//! Tests shared by the Node and browser runs of the facade.

use js_sys::Reflect;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).expect("property")
}

#[wasm_bindgen_test]
fn examples_are_listed_with_descriptions() {
    let list = wasm::list_examples().map_err(JsValue::from).unwrap();
    let arr = js_sys::Array::from(&list);
    assert!(arr.length() >= 1);
    let first = arr.get(0);
    assert_eq!(get(&first, "name").as_string().unwrap(), "matmul_add");
    assert!(!get(&first, "description").as_string().unwrap().is_empty());
}

#[wasm_bindgen_test]
fn the_thin_path_runs_and_matches_the_reference() {
    let src = wasm::example_source("matmul_add")
        .map_err(JsValue::from)
        .unwrap();
    let result = wasm::run_pipeline(&src, "matmul_add.json")
        .map_err(JsValue::from)
        .unwrap();
    let passes = js_sys::Array::from(&get(&result, "passes"));
    let names: Vec<String> = passes
        .iter()
        .map(|p| get(&p, "name").as_string().unwrap())
        .collect();
    assert_eq!(names.last().map(String::as_str), Some("ktir"));
    let ktir = get(&result, "ktir").as_string().unwrap();
    assert!(ktir.contains("linalg.matmul") && ktir.contains("ktdp.load"));
    let run = get(&result, "run");
    assert_eq!(get(&run, "passed").as_bool(), Some(true));
    assert!(get(&run, "totalCycles").as_f64().unwrap() > 0.0);
    let outputs = js_sys::Array::from(&get(&run, "outputs"));
    let err = get(&outputs.get(0), "maxAbsError").as_f64().unwrap();
    assert!(err <= 1e-2, "max abs error {err}");
    let events = js_sys::Array::from(&get(&run, "events"));
    assert!(events.length() > 32);
    // Transfers carry ring stops; compute events carry null.
    let dma = events
        .iter()
        .find(|e| get(e, "unit").as_string().as_deref() == Some("dma"))
        .unwrap();
    assert!(get(&dma, "srcStop").as_f64().is_some());
    let pt = events
        .iter()
        .find(|e| get(e, "unit").as_string().as_deref() == Some("pt"))
        .unwrap();
    assert!(get(&pt, "srcStop").is_null());
    let stops = js_sys::Array::from(&get(&get(&run, "machine"), "stops"));
    assert_eq!(stops.length(), 34);
}

#[wasm_bindgen_test]
fn bad_input_throws_an_error_with_a_location() {
    let err = wasm::run_pipeline("{\n  \"format\": 3", "bad.json")
        .err()
        .map(JsValue::from)
        .unwrap();
    let message = get(&err, "message").as_string().unwrap();
    assert!(
        message.contains("bad.json") && message.contains("line"),
        "{message}"
    );
    assert!(wasm::example_source("nonesuch").is_err());
}
