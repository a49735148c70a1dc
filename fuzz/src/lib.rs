//! The fuzz targets' bodies (parsers and loaders, a KTIR run and whole graph runs under small limits), shared by the libFuzzer binaries (`cargo fuzz run NAME`) and
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
    // `numel` saturates, so an absurd shape counts as too big rather than wrapping.
    let elements = types
        .values()
        .fold(0usize, |sum, t| sum.saturating_add(t.numel()));
    if elements > 1 << 14 {
        return;
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

/// A structural mutation of a JSON graph for `graph_run`'s custom mutator: byte flips
/// rarely keep a graph loadable, so this loads `text`, changes one thing a graph author
/// could get wrong (a dim, a rank, a dtype, an op, an attribute, a node's input) and
/// writes the graph back. `None` when `text` is not a graph that loads.
pub fn mutate_graph_json(text: &[u8], seed: u64) -> Option<String> {
    let mut g = graph::load_json(std::str::from_utf8(text).ok()?).ok()?;
    let mut rng = graph::SplitMix64::new(seed);
    let mut below = |n: usize| (rng.next_u64() % n.max(1) as u64) as usize;
    // Sizes that sit on boundaries: empty, unit, odd, a stick's width and either side.
    const DIMS: [usize; 12] = [0, 1, 2, 3, 5, 7, 31, 32, 33, 63, 64, 65];
    const INTS: [i64; 10] = [i64::MIN, -3, -2, -1, 0, 1, 2, 3, 64, i64::MAX];
    let tensors = g.inputs.len() + g.initializers.len();
    match below(6) {
        0 | 1 if tensors > 0 => {
            let t = below(tensors);
            let ty = if t < g.inputs.len() {
                &mut g.inputs[t].ty
            } else {
                &mut g.initializers[t - g.inputs.len()].ty
            };
            let rank = ty.shape.len();
            match below(4) {
                0 if rank > 0 => {
                    ty.shape.remove(below(rank));
                }
                1 => ty.shape.insert(below(rank + 1), DIMS[below(DIMS.len())]),
                2 => ty.dtype = graph::DType::ALL[below(graph::DType::ALL.len())],
                _ if rank > 0 => ty.shape[below(rank)] = DIMS[below(DIMS.len())],
                _ => {}
            }
        }
        2 if !g.nodes.is_empty() => {
            let n = below(g.nodes.len());
            g.nodes[n].op = graph::SUPPORTED_OPS[below(graph::SUPPORTED_OPS.len())].to_string();
        }
        3 | 4 if !g.nodes.is_empty() => {
            let n = below(g.nodes.len());
            let names: Vec<String> = g.nodes[n].attrs.keys().cloned().collect();
            let key = if names.is_empty() || below(4) == 0 {
                [
                    "axis", "axes", "perm", "keepdims", "epsilon", "k", "transB", "to",
                ][below(8)]
                .to_string()
            } else {
                names[below(names.len())].clone()
            };
            let value = match g.nodes[n].attrs.get(&key) {
                Some(graph::AttrValue::Ints(xs)) if !xs.is_empty() && below(2) == 0 => {
                    let mut xs = xs.clone();
                    let i = below(xs.len());
                    xs[i] = INTS[below(INTS.len())];
                    graph::AttrValue::Ints(xs)
                }
                Some(graph::AttrValue::Ints(_)) => {
                    graph::AttrValue::Ints((0..below(5)).map(|_| INTS[below(INTS.len())]).collect())
                }
                Some(graph::AttrValue::Float(_)) => {
                    graph::AttrValue::Float([0.0, -1.0, 1e-30, 1e30, f32::NAN][below(5)])
                }
                Some(graph::AttrValue::String(_)) => graph::AttrValue::String(
                    ["f16", "f32", "bf16", "i8", "bool", "tanh", "none", ""][below(8)].to_string(),
                ),
                _ => graph::AttrValue::Int(INTS[below(INTS.len())]),
            };
            g.nodes[n].attrs.insert(key, value);
        }
        _ if !g.nodes.is_empty() => {
            // Any value the graph defines (the graph's own rules decide whether it may be
            // read here).
            let values: Vec<&String> = g
                .inputs
                .iter()
                .map(|v| &v.name)
                .chain(g.initializers.iter().map(|i| &i.name))
                .chain(g.nodes.iter().flat_map(|n| &n.outputs))
                .collect();
            if let Some(v) = values.get(below(values.len())).map(|v| v.to_string()) {
                let n = below(g.nodes.len());
                let arity = g.nodes[n].inputs.len();
                if arity > 0 && below(4) > 0 {
                    g.nodes[n].inputs[below(arity)] = v;
                } else {
                    g.nodes[n].inputs.push(v);
                }
            }
        }
        _ => {}
    }
    Some(graph::to_json(&g))
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
