//! The fuzz targets' bodies (parsers and loaders, and a KTIR run under small limits), shared by the libFuzzer binaries (`cargo fuzz run NAME`) and
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

/// `ktir::check` (parse and verify) on arbitrary UTF-8, then the printer on what verifies.
pub fn ktir_parse(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        // Parse, verify and (for modules that verify) print again: the printer must take
        // whatever the verifier accepts.
        if let Ok((module, _)) = ktir::check(text) {
            let _ = ktir::print(&module);
        }
    }
}

/// `graph::load_json` on arbitrary UTF-8; whatever loads is type-checked (an error is
/// fine, a panic is not).
pub fn graph_json(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(g) = graph::load_json(text) {
            let _ = g.infer_types();
        }
    }
}

/// `sim::Machine::from_json` on arbitrary UTF-8; a machine that loads must describe
/// itself (its derived rates and ring) without panicking.
pub fn machine_json(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(m) = sim::Machine::from_json(text) {
            let _ = m.dram_bytes_per_cycle(false);
            let _ = m.nearest_memory_stop(0);
        }
    }
}

/// `driver::npy::read` on arbitrary bytes, with a small element limit.
pub fn npy_read(data: &[u8]) {
    let _ = driver::npy::read(data, 1 << 16);
}

/// `driver::run_ktir` on arbitrary UTF-8 under small limits (steps, tensor and DRAM
/// elements, tasks), so every run ends quickly: it must return, never panic or abort.
pub fn ktir_run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some(machine) = sim::Machine::preset("tiny4") else {
        return;
    };
    let options = driver::KtirRunOptions {
        machine,
        limits: sim::ExecLimits {
            max_steps: 20_000,
            max_tensor_elements: 1 << 12,
            max_dram_elements: 1 << 16,
            // About 20,000 tasks at a few hundred bytes each (`sim::timing::task_footprint`).
            max_task_bytes: 20_000 * 512,
        },
        // Sizes that depend on runtime values get small ones.
        args: ["n", "m", "k", "v"]
            .iter()
            .map(|n| (n.to_string(), 16))
            .collect(),
        ..driver::KtirRunOptions::default()
    };
    let _ = driver::run_ktir(text, &options);
}

/// The whole pipeline on an arbitrary JSON graph: load, reference, compile through every
/// pass, simulate on tiny4 and compare, under small limits ([`run_small_graph`]). It must
/// return, never panic or abort.
pub fn graph_run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(g) = graph::load_json(text) {
        run_small_graph(&g, data, "fuzz.json");
    }
}

/// [`graph_run`] for arbitrary ONNX bytes: whatever loads runs through the whole pipeline.
pub fn onnx_run(data: &[u8]) {
    if let Ok(g) = graph::load_onnx(data) {
        run_small_graph(&g, data, "fuzz.onnx");
    }
}

/// Runs `source` (which loaded as `g`) through [`driver::run_pipeline`] on tiny4 under
/// small limits. Graphs that hold more than 2^14 elements in all are skipped: large valid
/// models are the limits' business (tested elsewhere), and every input here must finish
/// in well under a second.
fn run_small_graph(g: &graph::Graph, source: &[u8], file_name: &str) {
    let Ok(types) = g.infer_types() else {
        return;
    };
    let mut elements = 0usize;
    for t in types.values() {
        let n = t
            .shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d));
        match n.and_then(|n| elements.checked_add(n)) {
            Some(total) if total <= 1 << 14 => elements = total,
            _ => return,
        }
    }
    let Some(machine) = sim::Machine::preset("tiny4") else {
        return;
    };
    let options = driver::RunOptions {
        machine,
        limits: sim::ExecLimits {
            max_steps: 200_000,
            max_tensor_elements: 1 << 14,
            max_dram_elements: 1 << 18,
            max_task_bytes: 100_000 * 512,
        },
        ..driver::RunOptions::default()
    };
    let _ = driver::run_pipeline(source, file_name, &options);
}

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// The targets by name.
pub const TARGETS: &[(&str, Target)] = &[
    ("onnx_load", onnx_load),
    ("ktir_parse", ktir_parse),
    ("graph_json", graph_json),
    ("machine_json", machine_json),
    ("npy_read", npy_read),
    ("ktir_run", ktir_run),
    ("graph_run", graph_run),
    ("onnx_run", onnx_run),
];
