//! The fuzz targets' bodies, shared by the libFuzzer binaries (`cargo fuzz run NAME`) and
//! the stable, deterministic `mutate` harness. A target fails by panicking.

/// `graph::load_onnx` on arbitrary bytes; whatever loads must also type-check and write
/// back to ONNX that loads again.
pub fn onnx_load(data: &[u8]) {
    if let Ok(g) = graph::load_onnx(data) {
        let types = g.infer_types().expect("a loaded graph type-checks");
        // Writing materialises initializers: only for graphs of modest size.
        if graph::eval_work(&g, &types) < 1 << 22 {
            let bytes = graph::to_onnx(&g).expect("a loaded graph can be written");
            graph::load_onnx(&bytes).expect("a written graph loads again");
        }
    }
}

/// `ktir::parse` on arbitrary UTF-8.
pub fn ktir_parse(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ktir::parse(text);
    }
}

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// The targets by name.
pub const TARGETS: &[(&str, Target)] = &[("onnx_load", onnx_load), ("ktir_parse", ktir_parse)];
