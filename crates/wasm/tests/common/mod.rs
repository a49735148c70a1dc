//! Tests shared by the Node and browser runs of the facade.

use js_sys::Reflect;
use wasm_bindgen::JsCast;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).expect("property")
}

/// How many events a run's columns hold.
fn event_count(run: &JsValue) -> usize {
    get(&get(run, "events"), "count").as_f64().unwrap() as usize
}

/// Opens `bytes` and runs it once with `options`.
fn run_with(bytes: &[u8], file_name: &str, options: JsValue) -> Result<JsValue, JsValue> {
    wasm::Session::new(bytes, file_name)?.run(options, None)
}

fn run_pipeline(source: &str, file_name: &str) -> Result<JsValue, JsValue> {
    run_with(source.as_bytes(), file_name, JsValue::UNDEFINED)
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
    let result = run_pipeline(&src, "matmul_add.json").unwrap();
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
    let events = get(&run, "events");
    assert!(event_count(&run) > 32);
    // Columns: units by index in ["dma", "pt", "sfp"]; transfers carry ring stops, compute
    // events -1.
    let unit = js_sys::Uint8Array::new(&get(&events, "unit")).to_vec();
    let src = js_sys::Int32Array::new(&get(&events, "srcStop")).to_vec();
    let route_start = js_sys::Uint32Array::new(&get(&events, "routeStart")).to_vec();
    assert_eq!(unit.len(), event_count(&run));
    assert_eq!(route_start.len(), event_count(&run) + 1);
    let dma = unit.iter().position(|&u| u == 0).unwrap();
    assert!(src[dma] >= 0);
    assert!(
        route_start[dma + 1] > route_start[dma],
        "a transfer without a route"
    );
    let pt = unit.iter().position(|&u| u == 1).unwrap();
    assert_eq!(src[pt], -1);
    let ops = js_sys::Array::from(&get(&events, "ops"));
    let op = js_sys::Uint32Array::new(&get(&events, "op")).to_vec();
    assert_eq!(
        ops.get(op[pt]).as_string().as_deref(),
        Some("linalg.matmul")
    );
    let stops = js_sys::Array::from(&get(&get(&run, "machine"), "stops"));
    assert_eq!(stops.length(), 34);
}

#[wasm_bindgen_test]
fn bad_input_throws_an_error_with_a_location() {
    let err = run_pipeline("{\n  \"format\": 3", "bad.json")
        .err()
        .unwrap();
    let message = get(&err, "message").as_string().unwrap();
    assert!(
        message.contains("bad.json") && message.contains("line"),
        "{message}"
    );
    assert!(wasm::example_source("nonesuch").is_err());
}

fn options(pairs: &[(&str, &str)]) -> JsValue {
    let o = js_sys::Object::new();
    for (k, v) in pairs {
        Reflect::set(&o, &JsValue::from_str(k), &JsValue::from_str(v)).unwrap();
    }
    o.into()
}

fn message(err: impl Into<JsValue>) -> String {
    get(&err.into(), "message").as_string().unwrap()
}

#[wasm_bindgen_test]
fn machine_presets_are_listed() {
    let list = js_sys::Array::from(&wasm::machine_presets().map_err(JsValue::from).unwrap());
    let names: Vec<String> = list.iter().map(|v| v.as_string().unwrap()).collect();
    assert!(names.contains(&"spyre32".to_string()), "{names:?}");
    assert!(names.contains(&"tiny4".to_string()), "{names:?}");
}

#[wasm_bindgen_test]
fn verify_ktir_reports_diagnostics_with_lines() {
    let src = wasm::example_source("matmul_add")
        .map_err(JsValue::from)
        .unwrap();
    let ktir = get(&run_pipeline(&src, "matmul_add.json").unwrap(), "ktir")
        .as_string()
        .unwrap();
    let clean = js_sys::Array::from(&wasm::verify_ktir(&ktir).map_err(JsValue::from).unwrap());
    assert!(clean
        .iter()
        .all(|d| get(&d, "severity").as_string().as_deref() != Some("error")));
    let line = ktir
        .lines()
        .position(|l| l.contains("ktdp.load"))
        .expect("a ktdp.load line")
        + 1;
    let broken = ktir.replacen("ktdp.load", "ktdp.lod", 1);
    let diags = js_sys::Array::from(&wasm::verify_ktir(&broken).map_err(JsValue::from).unwrap());
    let first = diags.get(0);
    assert_eq!(
        get(&first, "severity").as_string().as_deref(),
        Some("error")
    );
    assert_eq!(get(&first, "line").as_f64(), Some(line as f64));
    assert!(get(&first, "column").as_f64().unwrap() >= 1.0);
    assert!(get(&first, "message")
        .as_string()
        .unwrap()
        .contains("ktdp.lod"));
}

#[wasm_bindgen_test]
fn run_pipeline_with_takes_bytes_options_and_an_edited_kernel() {
    let src = wasm::example_source("matmul_add")
        .map_err(JsValue::from)
        .unwrap();
    let base = run_with(src.as_bytes(), "matmul_add.json", JsValue::UNDEFINED).unwrap();
    let ktir = get(&base, "ktir").as_string().unwrap();
    // Snapshots carry their structured data.
    let passes = js_sys::Array::from(&get(&base, "passes"));
    let wd = passes
        .iter()
        .find(|p| get(p, "name").as_string().as_deref() == Some("work-division"))
        .unwrap();
    assert!(js_sys::Array::is_array(&get(
        &get(&wd, "data"),
        "divisions"
    )));
    assert!(get(&get(&base, "run"), "summary").is_object());
    // A wrong edit runs and fails the comparison: the bias (the matmul's epilogue)
    // subtracted instead of added.
    let wrong = ktir.replacen("arith.addf", "arith.subf", 1);
    assert_ne!(wrong, ktir);
    let r = run_with(
        src.as_bytes(),
        "matmul_add.json",
        options(&[("ktir", &wrong), ("machine", "spyre32")]),
    )
    .unwrap();
    assert_eq!(get(&get(&r, "run"), "passed").as_bool(), Some(false));
    // Bad options and bad bytes are errors with a reason.
    let e = run_with(
        src.as_bytes(),
        "matmul_add.json",
        options(&[("machine", "nonesuch")]),
    )
    .err()
    .unwrap();
    assert!(message(e).contains("spyre32"));
    let e = run_with(&[0xff, 0xfe, 0x00], "x.json", JsValue::NULL)
        .err()
        .unwrap();
    assert!(message(e).contains("UTF-8"));
    let e = run_with(&[0x08, 0xff, 0x01], "model.onnx", JsValue::NULL)
        .err()
        .unwrap();
    assert!(message(e).to_lowercase().contains("onnx"));
}

const ADD_ROWS: &str = include_str!("../../../../tests/ktir/valid/add_rows.mlir");

#[wasm_bindgen_test]
fn a_standalone_ktir_module_runs_and_exports_a_trace() {
    let mut session = wasm::Session::new(ADD_ROWS.as_bytes(), "add_rows.mlir").unwrap();
    assert_eq!(session.kind(), "ktir");
    let r = get(&session.run(JsValue::UNDEFINED, None).unwrap(), "run");
    assert!(get(&r, "totalCycles").as_f64().unwrap() > 0.0);
    assert!(event_count(&r) > 0);
    let functions = js_sys::Array::from(&get(&r, "functions"));
    assert_eq!(functions.get(0).as_string().as_deref(), Some("add_rows"));
    // The trace comes from the stored schedule.
    let trace = session.trace_json().map_err(JsValue::from).unwrap();
    assert!(
        trace.contains("traceEvents"),
        "{}",
        &trace[..trace.len().min(200)]
    );
    let e = run_with(
        b"module {\n  func.func @k( {\n}\n",
        "k.mlir",
        JsValue::UNDEFINED,
    )
    .err()
    .unwrap();
    assert!(message(e).starts_with("ktir:"));
}

#[wasm_bindgen_test]
fn errors_are_structured_and_progress_is_reported() {
    let bad = "func.func @f() {\n  %x = arith.bogus\n}\n";
    let e = run_with(bad.as_bytes(), "bad.mlir", JsValue::UNDEFINED)
        .err()
        .unwrap();
    assert!(e.is_instance_of::<js_sys::Error>());
    assert!(message(e.clone()).starts_with("ktir:"));
    assert_eq!(get(&e, "stage").as_string().as_deref(), Some("ktir"));
    assert_eq!(get(&e, "file").as_string().as_deref(), Some("bad.mlir"));
    assert_eq!(get(&e, "line").as_f64(), Some(2.0));
    assert_eq!(get(&e, "column").as_f64(), Some(8.0));
    assert!(get(&e, "node").is_null());
    assert!(js_sys::Array::from(&get(&e, "diagnostics")).length() > 0);

    let reports = js_sys::Array::new();
    let sink = reports.clone();
    let callback = wasm_bindgen::closure::Closure::<dyn FnMut(JsValue)>::new(move |v: JsValue| {
        sink.push(&v);
    });
    let f: js_sys::Function = callback
        .as_ref()
        .unchecked_ref::<js_sys::Function>()
        .clone();
    let mut session = wasm::Session::new(ADD_ROWS.as_bytes(), "add_rows.mlir").unwrap();
    let r = session.run(JsValue::UNDEFINED, Some(f)).unwrap();
    assert!(reports.length() > 0);
    let last = reports.get(reports.length() - 1);
    assert_eq!(get(&last, "phase").as_string().as_deref(), Some("schedule"));
    assert_eq!(get(&last, "done").as_f64(), get(&last, "total").as_f64());
    // At most one report per percent of each phase, plus the ends.
    assert!(reports.length() <= 2 * 102, "{}", reports.length());
    // Every transfer carries its route, and the source map its kernels.
    let map = get(&r, "sourceMap");
    assert_eq!(js_sys::Array::from(&get(&map, "kernels")).length(), 1);
}

#[wasm_bindgen_test]
fn a_pipeline_trace_is_chrome_trace_json() {
    let src = wasm::example_source("matmul_add")
        .map_err(JsValue::from)
        .unwrap();
    let mut session = wasm::Session::new(src.as_bytes(), "matmul_add.json").unwrap();
    assert!(session.trace_json().is_err(), "nothing has run yet");
    session.run(JsValue::UNDEFINED, None).unwrap();
    let trace = session.trace_json().map_err(JsValue::from).unwrap();
    let parsed = js_sys::JSON::parse(&trace).unwrap();
    let events = js_sys::Array::from(&get(&parsed, "traceEvents"));
    assert!(events.length() > 32);
}

#[wasm_bindgen_test]
fn a_run_with_texts_apart_gives_its_pass_texts_when_asked() {
    let src = wasm::example_source("matmul_add")
        .map_err(JsValue::from)
        .unwrap();
    let texts = |passes: &JsValue| -> Vec<(String, Option<String>)> {
        js_sys::Array::from(passes)
            .iter()
            .map(|p| {
                (
                    get(&p, "name").as_string().unwrap(),
                    get(&p, "text").as_string(),
                )
            })
            .collect()
    };
    let mut with = wasm::Session::new(src.as_bytes(), "matmul_add.json").unwrap();
    let full = with.run(JsValue::UNDEFINED, None).unwrap();
    assert_eq!(get(&full, "passesApart").as_bool(), Some(false));
    let full_texts = texts(&get(&full, "passes"));
    assert!(full_texts.iter().filter(|(_, t)| t.is_some()).count() >= 3);

    let o = js_sys::Object::new();
    Reflect::set(&o, &JsValue::from_str("textsApart"), &JsValue::TRUE).unwrap();
    let mut session = wasm::Session::new(src.as_bytes(), "matmul_add.json").unwrap();
    let apart = session.run(o.into(), None).unwrap();
    assert_eq!(get(&apart, "passesApart").as_bool(), Some(true));
    let apart_texts = texts(&get(&apart, "passes"));
    assert!(apart_texts.iter().all(|(_, t)| t.is_none()));
    // The same run otherwise: cycles, and every pass's data.
    assert_eq!(
        get(&get(&full, "run"), "totalCycles").as_f64(),
        get(&get(&apart, "run"), "totalCycles").as_f64()
    );
    // Asked for, the texts are those a run with its texts carries.
    let filled = session.fill_passes(None).unwrap();
    assert_eq!(get(&filled, "outcome").as_string().as_deref(), Some("none"));
    let given: Vec<(String, Option<String>)> = js_sys::Array::from(&get(&filled, "texts"))
        .iter()
        .map(|t| {
            (
                get(&t, "name").as_string().unwrap(),
                get(&t, "text").as_string(),
            )
        })
        .collect();
    let expected: Vec<(String, Option<String>)> = full_texts
        .into_iter()
        .filter(|(_, t)| t.is_some())
        .collect();
    assert_eq!(given, expected);
    // And again: the session keeps them.
    let again = session.fill_passes(None).unwrap();
    assert_eq!(
        js_sys::Array::from(&get(&again, "texts")).length() as usize,
        expected.len()
    );
    // A KTIR edit's run keeps the module as compiled, which its `ktir` (the edit) is not.
    let compiled = expected
        .iter()
        .find(|(n, _)| n == "ktir")
        .and_then(|(_, t)| t.clone())
        .unwrap();
    let edit = format!("{compiled}\n// reviewed\n");
    let o = js_sys::Object::new();
    Reflect::set(&o, &JsValue::from_str("textsApart"), &JsValue::TRUE).unwrap();
    Reflect::set(&o, &JsValue::from_str("ktir"), &JsValue::from_str(&edit)).unwrap();
    let edited = session.run(o.into(), None).unwrap();
    assert_eq!(get(&edited, "ktir").as_string(), Some(edit));
    for (name, text) in texts(&get(&edited, "passes")) {
        assert_eq!(text.is_some(), name == "ktir", "{name}");
        if name == "ktir" {
            assert_eq!(text.as_deref(), Some(compiled.as_str()));
        }
    }
}

fn timing_only() -> JsValue {
    let o = js_sys::Object::new();
    Reflect::set(&o, &JsValue::from_str("timingOnly"), &JsValue::TRUE).unwrap();
    o.into()
}

#[wasm_bindgen_test]
fn timing_only_runs_schedule_the_same_without_numbers() {
    let src = wasm::example_source("matmul_add")
        .map_err(JsValue::from)
        .unwrap();
    let full = get(
        &run_with(src.as_bytes(), "matmul_add.json", JsValue::UNDEFINED).unwrap(),
        "run",
    );
    let timed = get(
        &run_with(src.as_bytes(), "matmul_add.json", timing_only()).unwrap(),
        "run",
    );
    assert_eq!(get(&full, "timingOnly").as_bool(), Some(false));
    assert_eq!(get(&timed, "timingOnly").as_bool(), Some(true));
    assert_eq!(get(&timed, "outputsChecked").as_bool(), Some(false));
    assert_eq!(js_sys::Array::from(&get(&timed, "outputs")).length(), 0);
    assert_eq!(
        get(&full, "totalCycles").as_f64(),
        get(&timed, "totalCycles").as_f64()
    );
    assert_eq!(event_count(&full), event_count(&timed));
    let k = get(
        &run_with(ADD_ROWS.as_bytes(), "add_rows.mlir", timing_only()).unwrap(),
        "run",
    );
    let f = get(
        &run_with(ADD_ROWS.as_bytes(), "add_rows.mlir", JsValue::UNDEFINED).unwrap(),
        "run",
    );
    assert_eq!(
        get(&k, "totalCycles").as_f64(),
        get(&f, "totalCycles").as_f64()
    );
    // Buffers are [spec, contents] pairs; a timing-only run holds no contents.
    let buffers = js_sys::Array::from(&get(&k, "buffers"));
    assert!(buffers.length() > 0);
    for b in buffers.iter() {
        assert_eq!(
            js_sys::Array::from(&js_sys::Array::from(&b).get(1)).length(),
            0
        );
    }
}

/// The run-error corpus's program whose views sit at constant addresses 0 and 64.
const CONSTANT_ADDRESSES: &str =
    include_str!("../../../../tests/ktir/run-errors/place_unused.mlir");

/// A version-1 `.npy` file of f32 values of the given shape.
fn npy_f32(shape: &str, values: &[f32]) -> Vec<u8> {
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    while !(11 + header.len()).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.bytes());
    for x in values {
        out.extend(x.to_le_bytes());
    }
    out
}

#[wasm_bindgen_test]
fn a_ktir_module_lists_its_inputs_runs_with_npy_files_and_gives_buffers_as_npy() {
    let mut session = wasm::Session::new(CONSTANT_ADDRESSES.as_bytes(), "copy.ktir").unwrap();
    assert_eq!(session.kind(), "ktir");
    let inputs = session.ktir_inputs(JsValue::UNDEFINED).unwrap();
    let buffers = js_sys::Array::from(&get(&inputs, "buffers"));
    let src = buffers.get(0);
    assert_eq!(get(&src, "name").as_string().as_deref(), Some("src"));
    assert_eq!(get(&src, "address").as_f64(), Some(0.0));
    assert_eq!(get(&src, "role").as_string().as_deref(), Some("in"));
    assert_eq!(
        get(&buffers.get(1), "role").as_string().as_deref(),
        Some("out")
    );
    // Run with src given: dst holds a copy, and comes back as .npy bytes.
    let values: Vec<f32> = (0..32).map(|i| i as f32).collect();
    let files = js_sys::Array::new();
    files.push(&js_sys::Uint8Array::from(&npy_f32("(4, 8)", &values)[..]));
    session
        .run_with_inputs(JsValue::UNDEFINED, vec!["src".into()], files, None)
        .unwrap();
    let bytes = session.buffer_npy("dst").map_err(JsValue::from).unwrap();
    let data: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
    assert!(bytes.starts_with(b"\x93NUMPY") && bytes.ends_with(&data));
    let header = String::from_utf8_lossy(&bytes[..bytes.len() - data.len()]).into_owned();
    assert!(
        header.contains("'<f4'") && header.contains("(4, 8"),
        "{header}"
    );
    // A misspelt file name (with the closest name) and too little data are errors.
    let files = js_sys::Array::new();
    files.push(&js_sys::Uint8Array::from(&npy_f32("(4, 8)", &values)[..]));
    let e = session
        .run_with_inputs(JsValue::UNDEFINED, vec!["srd".into()], files, None)
        .unwrap_err();
    assert!(message(e).contains("did you mean 'src'"));
    let files = js_sys::Array::new();
    files.push(&js_sys::Uint8Array::from(
        &npy_f32("(2, 8)", &values[..16])[..],
    ));
    let e = session
        .run_with_inputs(JsValue::UNDEFINED, vec!["src".into()], files, None)
        .unwrap_err();
    assert!(message(e).contains("the views at address 0 reach 32 elements"));
    assert!(session.buffer_npy("nope").is_err());
}

const MLP_EXTERNAL: &[u8] =
    include_bytes!("../../../../tests/graph/onnx_external/mlp_external.onnx");
const MLP_WEIGHTS: &[u8] = include_bytes!("../../../../tests/graph/onnx_external/weights.bin");
const MLP_INPUT: &[u8] =
    include_bytes!("../../../../tests/graph/onnx_external/test_data_set_0/input_0.pb");
const MLP_OUTPUT: &[u8] =
    include_bytes!("../../../../tests/graph/onnx_external/test_data_set_0/output_0.pb");

fn one_file(bytes: &[u8]) -> js_sys::Array {
    let files = js_sys::Array::new();
    files.push(&js_sys::Uint8Array::from(bytes));
    files
}

#[wasm_bindgen_test]
fn a_model_opens_with_its_external_data_runs_on_the_users_tensors_and_gives_outputs_as_npy() {
    let mut session = wasm::Session::open_with_files(
        MLP_EXTERNAL,
        "mlp_external.onnx",
        vec!["weights.bin".into()],
        one_file(MLP_WEIGHTS),
    )
    .unwrap();
    let io = session.graph_io().unwrap();
    let input = js_sys::Array::from(&get(&io, "inputs")).get(0);
    assert_eq!(get(&input, "name").as_string().as_deref(), Some("x"));
    assert_eq!(get(&input, "dtype").as_string().as_deref(), Some("f32"));
    let output = js_sys::Array::from(&get(&io, "outputs")).get(0);
    assert_eq!(get(&output, "name").as_string().as_deref(), Some("y"));
    let shape = js_sys::Array::from(&get(&output, "shape"));
    assert_eq!(
        (shape.get(0).as_f64(), shape.get(1).as_f64()),
        (Some(4.0), Some(32.0))
    );
    // The ONNX test data set's own input and output: the simulated output matches theirs.
    let result = session
        .run_graph_with_inputs(
            JsValue::UNDEFINED,
            vec!["x".into()],
            one_file(MLP_INPUT),
            vec!["y".into()],
            one_file(MLP_OUTPUT),
            None,
        )
        .unwrap();
    let expected = js_sys::Array::from(&get(&get(&result, "run"), "expected"));
    assert_eq!(expected.length(), 1);
    assert_eq!(get(&expected.get(0), "passed").as_bool(), Some(true));
    let npy = session.output_npy("y").map_err(JsValue::from).unwrap();
    assert!(npy.starts_with(b"\x93NUMPY"));
    let header = String::from_utf8_lossy(&npy[..npy.len() - 4 * 4 * 32]).replace(' ', "");
    assert!(header.contains("'shape':(4,32"), "{header}");
    assert!(session.output_npy("z").is_err());
    // A .npy of the wrong shape is an error that names the input.
    let e = session
        .run_graph_with_inputs(
            JsValue::UNDEFINED,
            vec!["x".into()],
            one_file(&npy_f32("(2, 64)", &[0.0; 128])),
            vec![],
            js_sys::Array::new(),
            None,
        )
        .unwrap_err();
    assert_eq!(get(&e, "input").as_string().as_deref(), Some("x"));
    assert_eq!(get(&e, "role").as_string().as_deref(), Some("input"));
    assert!(message(e).contains("shape"));
    // Inputs left out stay seeded random.
    session
        .run_graph_with_inputs(
            JsValue::UNDEFINED,
            vec![],
            js_sys::Array::new(),
            vec![],
            js_sys::Array::new(),
            None,
        )
        .unwrap();
}

#[wasm_bindgen_test]
fn a_model_without_its_external_data_runs_timing_only_and_names_the_missing_file() {
    let mut session = wasm::Session::new(MLP_EXTERNAL, "mlp_external.onnx").unwrap();
    let timing = js_sys::Object::new();
    js_sys::Reflect::set(&timing, &"timingOnly".into(), &JsValue::TRUE).unwrap();
    session.run(timing.into(), None).unwrap();
    let e = session.run(JsValue::UNDEFINED, None).unwrap_err();
    assert!(message(e).contains("weights.bin"));
}
