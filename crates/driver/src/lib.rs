//! The pipeline, end to end: load a model graph, compile it pass by pass, lower it to KTIR,
//! simulate the kernels on a machine description, and compare the simulated outputs with
//! the f32 reference evaluator.
//!
//! This is the one place that strings the other crates together; the `wasm` facade and the
//! `cli` call it and only translate its plain-data results. It holds no algorithm of its
//! own beyond moving tensors between host order and device layouts and comparing numbers.

use compiler::{Compilation, Options, Target};
use graph::{DType, Graph, Tensor};
use serde::Serialize;
use sim::timing::{schedule_with_progress, Limits, Unit};
use sim::{ExecLimits, LineLookup, Machine, Simulator};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;

mod examples;
mod ktir_run;
pub use examples::{examples, Example};
pub use ktir_run::{
    buffer_specs, run_ktir, run_ktir_with_progress, BufferSpec, KtirRunOptions, KtirRunResult,
};

pub use compiler::PASS_NAMES;
// Re-exported so the front ends name types through the driver alone.
pub use {compiler, graph, ktir, sim};

/// A failure anywhere in the pipeline, with the stage it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DriverError {
    /// "load", "compile", "ktir", "simulate" or "machine".
    pub stage: String,
    /// The message, including its location (line and column, node, core or op).
    pub message: String,
}

impl DriverError {
    fn new(stage: &str, message: impl Into<String>) -> DriverError {
        DriverError {
            stage: stage.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.stage, self.message)
    }
}

impl std::error::Error for DriverError {}

/// Loads a model graph from a file's contents; the file name picks the format: `.onnx`
/// is read as ONNX protobuf bytes ([`graph::load_onnx`]), anything else as the JSON graph
/// format ([`graph::load_json`]). Takes text (`&str`, `&String`) or bytes (`&[u8]`,
/// `&Vec<u8>`); binary ONNX files need the bytes, as reading them into a `String` fails.
pub fn load_graph<S: AsRef<[u8]> + ?Sized>(
    source: &S,
    file_name: &str,
) -> Result<Graph, DriverError> {
    let bytes = source.as_ref();
    let lower = file_name.to_ascii_lowercase();
    if lower.ends_with(".onnx") {
        return graph::load_onnx(bytes)
            .map_err(|e| DriverError::new("load", format!("{file_name}: {e}")));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        DriverError::new(
            "load",
            format!("{file_name}: not UTF-8 text ({e}); graph files are JSON or .onnx"),
        )
    })?;
    graph::load_json(text).map_err(|e| DriverError::new("load", format!("{file_name}:{e}")))
}

/// The compiler's view of a machine description.
pub fn target_for(machine: &Machine) -> Target {
    Target {
        cores: machine.cores.value,
        stick_bytes: machine.stick_bytes.value as usize,
        scratchpad_capacity_bytes: machine.scratchpad_capacity_bytes() as usize,
        // The per-core address span of one tensor is a property of the device's address
        // translation; the spyre32 figure is 256 MiB and the description has no field for it.
        span_limit_bytes: 256 * 1024 * 1024,
        matmul_macs_per_ns: machine.matmul_peak_macs_per_cycle_per_core.value
            * machine.clock_ghz.value,
        dram_bytes_per_ns: machine.dram_peak_bytes_per_cycle.value * machine.clock_ghz.value,
        pe_rows: machine.pe_array.value.rows,
        fill_row_passes: machine.pipeline_fill_row_passes.value as usize,
    }
}

/// Runs the compiler's passes on `graph` for `machine`.
pub fn compile(
    graph: &Graph,
    machine: &Machine,
    options: &Options,
) -> Result<Compilation, DriverError> {
    compiler::compile(graph, &target_for(machine), options)
        .map_err(|e| DriverError::new("compile", e.to_string()))
}

/// Accuracy demanded of a simulated output, by dtype: pass when every element satisfies
/// `|sim - ref| <= atol + rtol * |ref|`.
pub fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F32 => (1e-4, 1e-4),
        DType::F16 => (1e-2, 1e-2),
        DType::BF16 => (5e-2, 2e-2),
        DType::F8E4M3 | DType::F8E5M2 => (0.25, 0.125),
        _ => (0.0, 0.0),
    }
}

/// How one simulated output compares with the reference.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputCheck {
    /// The graph output.
    pub name: String,
    /// Its dtype.
    pub dtype: String,
    /// Its host shape.
    pub shape: Vec<usize>,
    /// Largest `|sim - ref|`.
    pub max_abs_error: f64,
    /// Largest `|sim - ref| / |ref|` over elements whose reference is not tiny.
    pub max_rel_error: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
    /// Whether every element is within tolerance.
    pub passed: bool,
}

/// One timed event, as the page and trace views want it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventView {
    /// "dma", "pt" or "sfp".
    pub unit: Unit,
    /// The core whose unit ran it.
    pub core: usize,
    /// Start, in cycles.
    pub start: f64,
    /// End, in cycles.
    pub end: f64,
    /// Bytes moved (transfers).
    pub bytes: u64,
    /// Ring stop the data left (transfers).
    pub src_stop: Option<usize>,
    /// Ring stop the data reached (transfers).
    pub dst_stop: Option<usize>,
    /// The KTIR op.
    pub op: String,
    /// Its line in the KTIR text.
    pub line: u32,
}

/// A ring stop for the page.
#[derive(Clone, Debug, Serialize)]
pub struct StopView {
    /// "core" or "memory".
    pub kind: &'static str,
    /// Core id for cores, position for memory stops.
    pub index: usize,
    /// A short label.
    pub label: String,
}

/// The machine as the page draws it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineView {
    /// Preset or file name.
    pub name: String,
    /// Core count.
    pub cores: usize,
    /// Clock, to turn cycles into time.
    pub clock_ghz: f64,
    /// Stops in ring order.
    pub stops: Vec<StopView>,
    /// Every assumed number: (field, note).
    pub assumptions: Vec<(String, String)>,
}

impl MachineView {
    /// The view of `machine`.
    pub fn of(machine: &Machine) -> MachineView {
        let stops = machine
            .stops()
            .into_iter()
            .map(|s| match s.kind {
                sim::machine::StopKind::Core(c) => StopView {
                    kind: "core",
                    index: c,
                    label: c.to_string(),
                },
                sim::machine::StopKind::Memory(name) => StopView {
                    kind: "memory",
                    index: s.index,
                    label: name,
                },
            })
            .collect();
        MachineView {
            name: machine.name.clone(),
            cores: machine.cores.value,
            clock_ghz: machine.clock_ghz.value,
            stops,
            assumptions: machine.assumptions(),
        }
    }
}

/// What a simulation produced.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The machine it ran on.
    pub machine: MachineView,
    /// Modelled cycles from the first task to the last.
    pub total_cycles: f64,
    /// Whether the run computed timing only: no numbers, no reference, no comparison.
    pub timing_only: bool,
    /// Whether the outputs were compared with the reference (false in timing-only mode).
    pub outputs_checked: bool,
    /// Whether every output is within tolerance (false when they were not checked).
    pub passed: bool,
    /// Per-output accuracy (empty when the outputs were not checked).
    pub outputs: Vec<OutputCheck>,
    /// What a timing-only run assumed in place of values it did not compute.
    pub assumptions: Vec<String>,
    /// Timed events, in task order.
    pub events: Vec<EventView>,
    /// Utilisation and bottleneck.
    pub summary: sim::trace::Summary,
    /// KTIR operations executed over all cores.
    pub steps: u64,
}

/// A pass snapshot for the page.
#[derive(Clone, Debug, Serialize)]
pub struct PassView {
    /// The pass name (see [`PASS_NAMES`]).
    pub name: String,
    /// A title for the list.
    pub title: String,
    /// The snapshot text.
    pub text: String,
    /// The snapshot's structured data (layouts, core splits, scratchpad allocations).
    pub data: serde_json::Value,
}

/// A tensor in the graph summary.
#[derive(Clone, Debug, Serialize)]
pub struct TensorView {
    /// Name.
    pub name: String,
    /// Dtype name.
    pub dtype: String,
    /// Host shape.
    pub shape: Vec<usize>,
}

/// A node in the graph summary.
#[derive(Clone, Debug, Serialize)]
pub struct NodeView {
    /// Name.
    pub name: String,
    /// ONNX op.
    pub op: String,
    /// Input tensors.
    pub inputs: Vec<String>,
    /// Output tensors.
    pub outputs: Vec<String>,
}

/// The loaded graph, summarised.
#[derive(Clone, Debug, Serialize)]
pub struct GraphView {
    /// Graph name.
    pub name: String,
    /// One-line description.
    pub description: String,
    /// Graph inputs.
    pub inputs: Vec<TensorView>,
    /// Graph outputs.
    pub outputs: Vec<TensorView>,
    /// Nodes in order.
    pub nodes: Vec<NodeView>,
}

/// Everything one run of the pipeline produces.
#[derive(Clone, Debug, Serialize)]
pub struct PipelineResult {
    /// The graph.
    pub graph: GraphView,
    /// Snapshots, in pass order.
    pub passes: Vec<PassView>,
    /// The KTIR module.
    pub ktir: String,
    /// The simulation.
    pub run: RunResult,
}

/// Settings of one pipeline run.
#[derive(Clone, Debug)]
pub struct PipelineOptions {
    /// The machine to compile for and simulate.
    pub machine: Machine,
    /// Compiler settings.
    pub compile: Options,
    /// Seed of the random graph inputs.
    pub seed: u64,
    /// Execution bounds.
    pub limits: ExecLimits,
    /// Values for graph inputs, by name; inputs not named here are seeded random.
    pub inputs: BTreeMap<String, Tensor>,
    /// Compute timing only: the graph's weights are never materialised, no numbers are
    /// computed, the reference is not run and the outputs are not checked (see
    /// [`sim::Simulator::new_timing_only`]). For models too large to run with numbers.
    pub timing_only: bool,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        PipelineOptions {
            // The preset is compiled in and its loading is tested in the sim crate.
            machine: Machine::preset("spyre32").expect("the built-in spyre32 preset loads"),
            compile: Options::default(),
            seed: 0,
            limits: ExecLimits::default(),
            inputs: BTreeMap::new(),
            timing_only: false,
        }
    }
}

/// How far a long run has come, for progress bars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Executing the kernels: KTIR operations run so far, and the total they count towards
    /// (a static estimate, see [`sim::estimate_steps`]; runs with numbers may exceed it).
    Execute {
        /// Operations run.
        steps: u64,
        /// The estimated total.
        total: u64,
    },
    /// Scheduling the recorded tasks in time.
    Schedule {
        /// Tasks finished.
        done: u64,
        /// All tasks.
        total: u64,
    },
}

/// Operations between two [`Progress::Execute`] reports.
const PROGRESS_EVERY_STEPS: u64 = 256;

/// Loads a machine: a preset name, or the text of a machine description.
pub fn machine(name_or_json: &str) -> Result<Machine, DriverError> {
    if let Some(m) = Machine::preset(name_or_json) {
        return Ok(m);
    }
    if name_or_json.trim_start().starts_with('{') {
        return Machine::from_json(name_or_json)
            .map_err(|e| DriverError::new("machine", e.to_string()));
    }
    // A long argument is a file's contents, not a name: quote only its start.
    let shown: String = name_or_json.chars().take(40).collect();
    let what = if shown.len() < name_or_json.len() || shown.contains('\n') {
        format!(
            "a machine is a preset name or a JSON object; this text starts with {:?}",
            shown.lines().next().unwrap_or("")
        )
    } else {
        format!("unknown machine '{shown}'")
    };
    Err(DriverError::new(
        "machine",
        format!("{what}; presets: {}", Machine::preset_names().join(", ")),
    ))
}

fn ktir_elem(dtype: DType) -> ktir::ScalarType {
    match dtype {
        DType::F16 => ktir::ScalarType::F16,
        DType::BF16 => ktir::ScalarType::BF16,
        DType::F32 => ktir::ScalarType::F32,
        DType::F8E4M3 => ktir::ScalarType::F8E4M3,
        DType::F8E5M2 => ktir::ScalarType::F8E5M2,
        DType::I64 => ktir::ScalarType::I64,
        DType::I32 => ktir::ScalarType::I32,
        DType::I8 => ktir::ScalarType::I8,
        DType::Bool => ktir::ScalarType::I1,
    }
}

/// Simulates a compiled graph: host tensors are packed into their device layouts in DRAM,
/// the kernels run in order, and every graph output is unpacked and compared with the
/// reference evaluator.
pub fn simulate(c: &Compilation, options: &PipelineOptions) -> Result<RunResult, DriverError> {
    simulate_with_schedule(c, options).map(|(r, _)| r)
}

/// [`simulate`], also returning the full schedule (for trace exports).
pub fn simulate_with_schedule(
    c: &Compilation,
    options: &PipelineOptions,
) -> Result<(RunResult, sim::timing::Schedule), DriverError> {
    simulate_with_progress(c, options, &mut |_| {})
}

/// Checks given input values against the graph's inputs.
fn check_given_inputs(graph: &Graph, given: &BTreeMap<String, Tensor>) -> Result<(), DriverError> {
    for (name, t) in given {
        match graph.inputs.iter().find(|v| &v.name == name) {
            Some(v) if v.ty.shape == t.shape && v.ty.dtype == t.dtype => {}
            Some(v) => {
                return Err(DriverError::new(
                    "simulate",
                    format!(
                        "input '{name}' is {} {:?}; the value given is {} {:?}",
                        v.ty.dtype.name(),
                        v.ty.shape,
                        t.dtype.name(),
                        t.shape
                    ),
                ))
            }
            None => {
                return Err(DriverError::new(
                    "simulate",
                    format!("the graph has no input named '{name}'"),
                ))
            }
        }
    }
    Ok(())
}

/// [`simulate_with_schedule`], reporting progress to `progress` as it goes.
pub fn simulate_with_progress(
    c: &Compilation,
    options: &PipelineOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(RunResult, sim::timing::Schedule), DriverError> {
    let text = c.ktir.as_deref().ok_or_else(|| {
        DriverError::new("simulate", "the compilation stopped before the ktir pass")
    })?;
    let module = match ktir::check(text) {
        Ok((m, _)) => m,
        Err(diags) => {
            return Err(DriverError::new(
                "ktir",
                format!(
                    "the lowered KTIR does not verify:\n{}",
                    ktir::render_diagnostics("ktir", &diags)
                ),
            ))
        }
    };
    let machine = &options.machine;
    check_given_inputs(&c.graph, &options.inputs)?;
    // Host values of the inputs and weights, and the reference outputs; a timing-only run
    // materialises none of them.
    let (values, reference) = if options.timing_only {
        (BTreeMap::new(), None)
    } else {
        // Weights too many to materialise: the graph's own check fails before generating
        // anything, and says why.
        if c.graph.parameter_count() > graph::MAX_MATERIALISED_ELEMENTS {
            if let Err(e) = c.graph.initializer_tensors() {
                return Err(DriverError::new(
                    "simulate",
                    format!("{e}; run it timing-only"),
                ));
            }
        }
        let mut inputs = graph::random_inputs(&c.graph, options.seed)
            .map_err(|e| DriverError::new("simulate", e.to_string()))?;
        inputs.extend(options.inputs.clone());
        let reference = graph::evaluate(&c.graph, &inputs)
            .map_err(|e| DriverError::new("simulate", format!("reference evaluator: {e}")))?;
        // The evaluator returns the initializers it materialised: take them from there
        // rather than generating every weight a second time. Only weights and inputs are
        // placed in DRAM; intermediate tensors start zeroed.
        let mut values: BTreeMap<String, Tensor> = BTreeMap::new();
        for init in &c.graph.initializers {
            let t = reference.get(&init.name).ok_or_else(|| {
                DriverError::new(
                    "simulate",
                    format!("the reference has no value for initializer '{}'", init.name),
                )
            })?;
            values.insert(init.name.clone(), t.clone());
        }
        values.extend(inputs);
        (values, Some(reference))
    };

    // Shared by the simulator's hook and the scheduler's, which never run at once.
    let progress = RefCell::new(progress);
    let mut sim = if options.timing_only {
        Simulator::new_timing_only(machine, options.limits.clone())
    } else {
        Simulator::new(machine, options.limits.clone())
    };
    let kernels = compiler::lower_ktir::kernels(c);
    let total: u64 = kernels
        .iter()
        .filter_map(|k| sim::estimate_steps(&module, &k.func))
        .sum();
    sim.set_progress_total(total.max(1));
    sim.set_progress(
        Box::new(|steps, total| (*progress.borrow_mut())(Progress::Execute { steps, total })),
        PROGRESS_EVERY_STEPS,
    );
    let mut bases: BTreeMap<String, i64> = BTreeMap::new();
    for k in &kernels {
        for t in &k.args {
            if bases.contains_key(t) {
                continue;
            }
            let layout = c.layouts.get(t).ok_or_else(|| {
                DriverError::new("simulate", format!("tensor '{t}' has no layout"))
            })?;
            let elem = ktir_elem(layout.dtype);
            let base = match values.get(t) {
                Some(host) => sim.alloc(t, elem, layout.pack(&host.data)),
                None => sim.reserve(t, elem, layout.device_elems()),
            }
            .map_err(|e| DriverError::new("simulate", e.to_string()))?;
            bases.insert(t.clone(), base);
        }
    }
    let lines = LineLookup::new(text);
    for k in &kernels {
        let args: Vec<i64> = k
            .args
            .iter()
            .map(|t| bases.get(t).copied().unwrap_or(0))
            .collect();
        sim.launch(&module, &lines, &k.func, &args)
            .map_err(|e| DriverError::new("simulate", format!("@{}: {e}", k.func)))?;
    }

    let mut outputs = Vec::new();
    for name in &c.graph.outputs {
        let (Some(buf), Some(layout)) = (sim.buffer(name), c.layouts.get(name)) else {
            return Err(DriverError::new(
                "simulate",
                format!("output '{name}' was not produced by any kernel"),
            ));
        };
        if let Some(reference) = &reference {
            let want = reference.get(name).ok_or_else(|| {
                DriverError::new(
                    "simulate",
                    format!("output '{name}' was not produced by any kernel"),
                )
            })?;
            let got = layout.unpack(&buf.data);
            outputs.push(compare(name, want, &got));
        }
    }

    let sched = schedule_with_progress(machine, sim.tasks(), &Limits::default(), &mut |d, t| {
        (*progress.borrow_mut())(Progress::Schedule {
            done: d as u64,
            total: t as u64,
        })
    })
    .map_err(|e| DriverError::new("simulate", format!("timing: {e}")))?;
    let summary = sim::trace::summarize(machine, &sched);
    let events = event_views(&sched);
    let checked = reference.is_some();
    let result = RunResult {
        machine: MachineView::of(machine),
        total_cycles: sched.total_cycles,
        timing_only: options.timing_only,
        outputs_checked: checked,
        passed: checked && outputs.iter().all(|o| o.passed),
        outputs,
        assumptions: sim.assumptions().to_vec(),
        events,
        summary,
        steps: sim.steps(),
    };
    Ok((result, sched))
}

/// The events of a schedule as the page wants them (zero-length bookkeeping events, such as
/// launch barriers, left out).
pub fn event_views(sched: &sim::timing::Schedule) -> Vec<EventView> {
    sched
        .events
        .iter()
        .filter(|e| e.end > e.start || e.bytes > 0)
        .map(|e| EventView {
            unit: e.unit,
            core: e.core,
            start: e.start,
            end: e.end,
            bytes: e.bytes,
            src_stop: e.src_stop,
            dst_stop: e.dst_stop,
            op: e.op.clone(),
            line: e.line,
        })
        .collect()
}

/// A verifier diagnostic for an editor.
#[derive(Clone, Debug, Serialize)]
pub struct DiagnosticView {
    /// "error" or "warning".
    pub severity: &'static str,
    /// What is wrong.
    pub message: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// Byte offsets of the span.
    pub start: u32,
    /// End byte offset.
    pub end: u32,
}

/// Parses and verifies KTIR text; every diagnostic, errors and warnings.
pub fn verify_ktir(text: &str) -> Vec<DiagnosticView> {
    let diags = match ktir::check(text) {
        Ok((_, warnings)) => warnings,
        Err(d) => d,
    };
    diags
        .into_iter()
        .map(|d| DiagnosticView {
            severity: if d.is_error() { "error" } else { "warning" },
            message: d.message,
            line: d.line,
            column: d.column,
            start: d.span.start,
            end: d.span.end,
        })
        .collect()
}

/// A text summary of a graph: inputs, outputs, op counts and parameter count.
pub fn inspect(graph: &Graph) -> Result<String, DriverError> {
    use std::fmt::Write;
    let types = graph
        .infer_types()
        .map_err(|e| DriverError::new("load", e.to_string()))?;
    let mut out = String::new();
    let _ = writeln!(out, "graph       {}", graph.name);
    if !graph.description.is_empty() {
        let _ = writeln!(out, "            {}", graph.description);
    }
    for i in &graph.inputs {
        let _ = writeln!(out, "input       {} {}", i.name, i.ty);
    }
    for o in &graph.outputs {
        match types.get(o) {
            Some(t) => {
                let _ = writeln!(out, "output      {o} {t}");
            }
            None => {
                let _ = writeln!(out, "output      {o}");
            }
        }
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for n in &graph.nodes {
        *counts.entry(n.op.as_str()).or_default() += 1;
    }
    let _ = writeln!(out, "nodes       {}", graph.nodes.len());
    for (op, n) in counts {
        let _ = writeln!(out, "  {op:<30} {n}");
    }
    let _ = writeln!(
        out,
        "parameters  {} in {} initializer(s)",
        graph.parameter_count(),
        graph.initializers.len()
    );
    Ok(out)
}

/// Compares a simulated output (host order) with the reference.
pub fn compare(name: &str, want: &Tensor, got: &[f32]) -> OutputCheck {
    let (atol, rtol) = tolerance(want.dtype);
    let mut max_abs = 0.0f64;
    let mut max_rel = 0.0f64;
    let mut passed = got.len() == want.data.len();
    for (g, w) in got.iter().zip(&want.data) {
        let (g, w) = (*g as f64, *w as f64);
        let d = (g - w).abs();
        if d.is_nan() || d > atol + rtol * w.abs() {
            passed = false;
        }
        max_abs = max_abs.max(if d.is_nan() { f64::INFINITY } else { d });
        if w.abs() > 1e-6 {
            max_rel = max_rel.max(d / w.abs());
        }
    }
    OutputCheck {
        name: name.to_string(),
        dtype: want.dtype.name().to_string(),
        shape: want.shape.clone(),
        max_abs_error: max_abs,
        max_rel_error: max_rel,
        atol,
        rtol,
        passed,
    }
}

/// The whole pipeline on one model file: load, compile through every pass, simulate.
pub fn run_pipeline<S: AsRef<[u8]> + ?Sized>(
    source: &S,
    file_name: &str,
    options: &PipelineOptions,
) -> Result<PipelineResult, DriverError> {
    run_pipeline_with_ktir(source, file_name, None, options)
}

/// Loads, compiles (with `ktir` in place of the lowered module, when given) and
/// simulates a model file, returning the run as Chrome trace JSON (for Perfetto and
/// chrome://tracing).
pub fn trace_pipeline<S: AsRef<[u8]> + ?Sized>(
    source: &S,
    file_name: &str,
    ktir: Option<&str>,
    options: &PipelineOptions,
) -> Result<String, DriverError> {
    let graph = load_graph(source, file_name)?;
    let mut compile_options = options.compile.clone();
    compile_options.stop_after = None;
    let mut c = compile(&graph, &options.machine, &compile_options)?;
    if let Some(text) = ktir {
        c.ktir = Some(text.to_string());
    }
    let (_, schedule) = simulate_with_schedule(&c, options)?;
    Ok(sim::trace::chrome_trace_json(&options.machine, &schedule))
}

/// [`run_pipeline`], but simulating `ktir` (an edited module for the same graph) in place
/// of the lowered one; its kernels must keep the lowered names and arguments.
pub fn run_pipeline_with_ktir<S: AsRef<[u8]> + ?Sized>(
    source: &S,
    file_name: &str,
    ktir: Option<&str>,
    options: &PipelineOptions,
) -> Result<PipelineResult, DriverError> {
    let graph = load_graph(source, file_name)?;
    let types = graph
        .infer_types()
        .map_err(|e| DriverError::new("load", e.to_string()))?;
    let mut compile_options = options.compile.clone();
    compile_options.stop_after = None;
    let mut c = compile(&graph, &options.machine, &compile_options)?;
    if let Some(text) = ktir {
        c.ktir = Some(text.to_string());
    }
    let run = simulate(&c, options)?;
    let view = |name: &String| TensorView {
        name: name.clone(),
        dtype: types
            .get(name)
            .map(|t| t.dtype.name().to_string())
            .unwrap_or_default(),
        shape: types.get(name).map(|t| t.shape.clone()).unwrap_or_default(),
    };
    Ok(PipelineResult {
        graph: GraphView {
            name: graph.name.clone(),
            description: graph.description.clone(),
            inputs: graph.inputs.iter().map(|i| view(&i.name)).collect(),
            outputs: graph.outputs.iter().map(view).collect(),
            nodes: graph
                .nodes
                .iter()
                .map(|n| NodeView {
                    name: n.name.clone(),
                    op: n.op.clone(),
                    inputs: n.inputs.clone(),
                    outputs: n.outputs.clone(),
                })
                .collect(),
        },
        // The compilation is done with: move its snapshots rather than copy them.
        passes: c
            .snapshots
            .into_iter()
            .map(|s| PassView {
                name: s.pass,
                title: s.title,
                text: s.text,
                data: s.data,
            })
            .collect(),
        ktir: c.ktir.unwrap_or_default(),
        run,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_errors_quote_only_the_start_of_long_text() {
        let e = machine("nope").unwrap_err();
        assert!(e.message.contains("unknown machine 'nope'"), "{e}");
        assert!(e.message.contains("spyre32"), "{e}");
        let garbage = "x".repeat(100_000);
        let e = machine(&garbage).unwrap_err();
        assert!(
            e.message.len() < 300,
            "the error echoes the file: {}",
            e.message.len()
        );
        assert!(e.message.contains("preset name or a JSON object"), "{e}");
    }

    fn matmul_add() -> PipelineResult {
        let ex = examples();
        let src = ex.iter().find(|e| e.name == "matmul_add").unwrap().source;
        run_pipeline(src, "matmul_add.json", &PipelineOptions::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn matmul_add_runs_end_to_end_within_tolerance() {
        let r = matmul_add();
        assert!(r.run.passed, "{:?}", r.run.outputs);
        let c = &r.run.outputs[0];
        assert_eq!(c.name, "C");
        assert_eq!(c.shape, vec![128, 130]);
        assert!(c.max_abs_error <= 1e-2, "{c:?}");
        assert!(r.run.total_cycles > 0.0);
        // Every core took part and data crossed the ring.
        let cores: std::collections::BTreeSet<usize> =
            r.run.events.iter().map(|e| e.core).collect();
        assert_eq!(cores.len(), 32);
        assert!(r
            .run
            .events
            .iter()
            .any(|e| e.unit == Unit::Dma && e.src_stop != e.dst_stop));
        assert!(r.run.events.iter().any(|e| e.unit == Unit::Pt));
        let names: Vec<&str> = r.passes.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, PASS_NAMES);
        assert!(r.ktir.contains("linalg.matmul"));
        assert!(r.ktir.contains("grid = [32]"));
    }

    #[test]
    fn an_edited_kernel_runs_and_a_wrong_edit_fails_the_comparison() {
        let ex = examples();
        let opts = PipelineOptions::default();
        let base = run_pipeline(ex[0].source, "matmul_add.json", &opts).unwrap();
        // Same program, still correct.
        let same = run_pipeline_with_ktir(ex[0].source, "m.json", Some(&base.ktir), &opts).unwrap();
        assert!(same.run.passed);
        // Adding the bias twice must be caught.
        let wrong = base
            .ktir
            .replacen("arith.addf %AB_data", "arith.subf %AB_data", 1);
        assert_ne!(wrong, base.ktir);
        let r = run_pipeline_with_ktir(ex[0].source, "m.json", Some(&wrong), &opts).unwrap();
        assert!(!r.run.passed, "{:?}", r.run.outputs);
        // A broken edit reports where.
        let broken = base.ktir.replacen("ktdp.load", "ktdp.lod", 1);
        let e = run_pipeline_with_ktir(ex[0].source, "m.json", Some(&broken), &opts).unwrap_err();
        assert_eq!(e.stage, "ktir");
        assert!(
            e.message
                .contains("unknown or unsupported operation 'ktdp.lod'"),
            "{e}"
        );
        let diags = verify_ktir(&broken);
        assert!(diags.iter().any(|d| d.severity == "error" && d.line > 1));
    }

    /// A pointwise chain whose intermediates the scratchpad plan keeps on chip.
    const CHAIN: &str = r#"{
      "format": "spyre-graph", "version": 1, "name": "chain", "description": "exp(a + b) * a",
      "inputs": [ { "name": "a", "dtype": "f16", "shape": [64, 200] },
                  { "name": "b", "dtype": "f16", "shape": [64, 200] } ],
      "initializers": [],
      "nodes": [
        { "name": "add", "op": "Add", "inputs": ["a", "b"], "outputs": ["s"] },
        { "name": "exp", "op": "Exp", "inputs": ["s"], "outputs": ["e"] },
        { "name": "mul", "op": "Mul", "inputs": ["e", "a"], "outputs": ["y"] }
      ],
      "outputs": ["y"]
    }"#;

    #[test]
    fn scratchpad_intermediates_stay_on_chip() {
        let r = run_pipeline(CHAIN, "chain.json", &PipelineOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(r.run.passed, "{:?}", r.run.outputs);
        assert!(
            r.ktir.contains("#ktdp.memory_space<ct_local>"),
            "{}",
            r.ktir
        );
        // s and e never touch DRAM: reads are a and b (twice a), writes are y only.
        let bytes = 64 * 256 * 2; // device size of one [64, 200] f16 tensor
        assert_eq!(r.run.summary.dram_read_bytes, 3 * bytes);
        assert_eq!(r.run.summary.dram_write_bytes, bytes);
        // Without the plan (everything in DRAM) the same numbers come out.
        let text = r.ktir.clone();
        assert!(
            !text.contains("%s: index"),
            "s must not be a kernel argument"
        );
    }

    /// Reductions over a last axis that is not a whole number of sticks (200 = 3 sticks and
    /// 8 lanes): padding must not take part in max or sum.
    const NORMS: &str = r#"{
      "format": "spyre-graph", "version": 1, "name": "norms", "description": "softmax, rms norm and layer norm",
      "inputs": [ { "name": "x", "dtype": "f16", "shape": [64, 200] } ],
      "initializers": [ { "name": "w", "dtype": "f16", "shape": [200],
                          "init": { "uniform": { "seed": 3, "low": 0.5, "high": 1.5 } } } ],
      "nodes": [
        { "name": "shift", "op": "Sub", "inputs": ["x", "w"], "outputs": ["xs"] },
        { "name": "sm", "op": "Softmax", "inputs": ["xs"], "outputs": ["p"], "attrs": { "axis": -1 } },
        { "name": "rms", "op": "SimplifiedLayerNormalization", "inputs": ["x", "w"], "outputs": ["n"],
          "attrs": { "axis": -1, "epsilon": 1e-5 } },
        { "name": "ln", "op": "LayerNormalization", "inputs": ["x", "w", "w"], "outputs": ["l"],
          "attrs": { "axis": -1, "epsilon": 1e-5 } }
      ],
      "outputs": ["p", "n", "l"]
    }"#;

    #[test]
    fn reductions_ignore_stick_padding() {
        let r = run_pipeline(NORMS, "norms.json", &PipelineOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(r.run.passed, "{:?}", r.run.outputs);
        assert!(r.ktir.contains("linalg.reduce { arith.maximumf }"));
        assert!(
            r.ktir.contains("tensor.extract_slice"),
            "padding must be sliced away"
        );
        // All-negative rows would expose a max that saw the zero padding.
        let shifted = NORMS.replace("\"low\": 0.5, \"high\": 1.5", "\"low\": 2.5, \"high\": 3.5");
        let r = run_pipeline(&shifted, "norms.json", &PipelineOptions::default()).unwrap();
        assert!(r.run.passed, "{:?}", r.run.outputs);
    }

    #[test]
    fn progress_counts_operations_then_scheduled_tasks() {
        let ex = examples();
        let opts = PipelineOptions::default();
        let graph = load_graph(ex[0].source, "matmul_add.json").unwrap();
        let c = compile(&graph, &opts.machine, &opts.compile).unwrap();
        let mut reports = Vec::new();
        let (r, sched) = simulate_with_progress(&c, &opts, &mut |p| reports.push(p)).unwrap();
        let executes: Vec<(u64, u64)> = reports
            .iter()
            .filter_map(|p| match p {
                Progress::Execute { steps, total } => Some((*steps, *total)),
                _ => None,
            })
            .collect();
        assert!(!executes.is_empty());
        assert!(executes.windows(2).all(|w| w[0].0 < w[1].0));
        // The estimate is exact for a kernel without loops or per-element regions.
        assert!(executes.iter().all(|(_, t)| *t == r.steps), "{executes:?}");
        let first_schedule = reports
            .iter()
            .position(|p| matches!(p, Progress::Schedule { .. }))
            .unwrap();
        assert!(reports[first_schedule..]
            .iter()
            .all(|p| matches!(p, Progress::Schedule { .. })));
        assert_eq!(
            reports.last(),
            Some(&Progress::Schedule {
                done: sched.events.len() as u64,
                total: sched.events.len() as u64
            })
        );
    }

    #[test]
    fn a_wrong_kernel_is_caught_by_the_comparison() {
        // Corrupting one simulated element must fail the check.
        let ex = examples();
        let g = graph::load_json(ex[0].source).unwrap();
        let inputs = graph::random_inputs(&g, 0).unwrap();
        let reference = graph::evaluate(&g, &inputs).unwrap();
        let want = &reference["C"];
        let mut got = want.data.clone();
        assert!(compare("C", want, &got).passed);
        got[17] += 0.5;
        let check = compare("C", want, &got);
        assert!(!check.passed);
        assert!((check.max_abs_error - 0.5).abs() < 1e-3);
    }

    #[test]
    fn bad_input_is_an_error_with_a_location() {
        let e =
            run_pipeline("{ \"format\": ", "broken.json", &PipelineOptions::default()).unwrap_err();
        assert_eq!(e.stage, "load");
        assert!(
            e.message.contains("broken.json") && e.message.contains("line"),
            "{e}"
        );
        let e = machine("nonesuch").unwrap_err();
        assert!(e.message.contains("spyre32"), "{e}");
    }

    #[test]
    fn a_kernel_too_big_for_the_scratchpad_is_cut_in_time() {
        // tiny4 has 64 KiB of scratchpad per core; the hinted matmul's whole slice needs
        // more, so its kernel loops over blocks of it and still matches the reference.
        let ex = examples();
        let mut compile = Options::default();
        compile.hints.insert("matmul".into(), vec![4, 1, 1]);
        let opts = PipelineOptions {
            machine: machine("tiny4").unwrap(),
            compile,
            ..PipelineOptions::default()
        };
        let r = run_pipeline(ex[0].source, "matmul_add.json", &opts).unwrap();
        assert!(r.run.passed, "{:?}", r.run.outputs);
        assert!(r.ktir.contains("scf.for"), "{}", r.ktir);
    }
}
