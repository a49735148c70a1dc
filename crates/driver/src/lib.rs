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
use sim::timing::Unit;
use sim::{ExecLimits, Machine};
use std::collections::BTreeMap;

mod by_launch;
mod error;
mod examples;
mod kernel_store;
mod ktir_plan;
mod ktir_run;
mod latency;
mod layers;
mod multi_card;
pub mod npy;
mod padding;
mod roofline;
mod serving;
mod session;
mod source_map;
pub mod user_data;
mod views;
pub use error::{DriverError, Stage};
pub use examples::{examples, Example};
pub use kernel_store::DirStore;
pub use ktir_plan::{KtirInputs, Role, ScalarSpec, ScratchpadSpec, TensorArgSpec};
pub use ktir_run::{
    buffer_specs, buffers_of, ktir_inputs, read_npy_inputs, run_ktir, BufferSpec, KtirRunOptions,
    KtirRunResult,
};
pub use latency::{
    render as render_latency_model, KernelLatency, LatencyModelReport, LatencyParamView,
};
pub use layers::{render as render_layers, LayerCycles};
pub use multi_card::{
    output_npy as tp_output_npy, render as render_tensor_parallel, run_tensor_parallel,
    trace_json as tp_trace_json, CollectiveView, HostEventView, HostView, LinkEventView,
    SegmentView, SystemCardView, SystemLinkView, SystemView, TpOptions, TpRun,
};
pub use padding::{render as render_padding, PaddingCost, SequenceView};
pub use roofline::{
    render as render_roofline, Bound, Bounds, KernelRoofline, ProgramRoofline, Rates, Roofline,
};
pub use serving::{page_plans, PageRead, PagedPlan};
pub use session::{classify, detect_kind, Run, Session, SourceKind};
pub use source_map::{KernelLink, LineRange, NodeLink, OpLink, SourceMap};
pub use views::{CoreView, LinkView, SummaryView, UnitUsageView};

pub use compiler::PASS_NAMES;
// Re-exported so the front ends name types through the driver alone.
pub use {compiler, graph, ktir, sim};

/// Loads a model graph from a file's contents; the kind comes from the content (see
/// [`detect_kind`]): ONNX protobuf bytes ([`graph::load_onnx`]) or the JSON graph format
/// ([`graph::load_json`]). Takes text (`&str`, `&String`) or bytes (`&[u8]`, `&Vec<u8>`).
pub fn load_graph<S: AsRef<[u8]> + ?Sized>(
    source: &S,
    file_name: &str,
) -> Result<Graph, DriverError> {
    let session = Session::open(source.as_ref(), file_name)?;
    session.into_graph().ok_or_else(|| {
        DriverError::new(
            Stage::Load,
            format!(
                "{file_name}: a KTIR module, not a model graph; compile takes model graphs (JSON or ONNX): run a KTIR module with `spyre run`, check it with `spyre ktir verify`"
            ),
        )
        .in_file(file_name)
    })
}

/// [`load_graph`] for an ONNX model whose initializers may be in external files, found
/// through `files` (see [`Session::open_with_files`]).
pub fn load_graph_with_files(
    source: &[u8],
    file_name: &str,
    files: std::sync::Arc<dyn graph::ExternalFiles>,
) -> Result<Graph, DriverError> {
    let session = Session::open_with_files(source, file_name, files)?;
    session.into_graph().ok_or_else(|| {
        DriverError::new(
            Stage::Load,
            format!("{file_name}: a KTIR module, not a model graph"),
        )
        .in_file(file_name)
    })
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
        ring_bytes_per_ns: machine.ring_bytes_per_cycle_per_direction.value
            * machine.clock_ghz.value,
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
    check_no_empty_tensors(graph)?;
    compiler::compile(graph, &target_for(machine), options).map_err(DriverError::from_compile)
}

/// [`compile`], reporting each pass as it starts and each kernel as it is lowered to
/// `progress` (the CLI's progress bar on long compiles).
pub fn compile_with_progress(
    graph: &Graph,
    machine: &Machine,
    options: &Options,
    progress: &mut dyn FnMut(compiler::CompileProgress),
) -> Result<Compilation, DriverError> {
    check_no_empty_tensors(graph)?;
    compiler::compile_with_progress(graph, &target_for(machine), options, progress)
        .map_err(DriverError::from_compile)
}

/// [`compile_with_progress`] through a kernel cache over `store` (see
/// [`compiler::artifact_cache`]): identical kernels are lowered once; the stats say how
/// many were reused within the compile and from the store.
pub fn compile_cached(
    graph: &Graph,
    machine: &Machine,
    options: &Options,
    progress: &mut dyn FnMut(compiler::CompileProgress),
    store: Option<&mut dyn compiler::artifact_cache::KernelStore>,
) -> Result<(Compilation, compiler::artifact_cache::CacheStats), DriverError> {
    check_no_empty_tensors(graph)?;
    let mut cache = compiler::artifact_cache::KernelCache::new(store);
    let c = compiler::compile_cached(graph, &target_for(machine), options, progress, &mut cache)
        .map_err(DriverError::from_compile)?;
    Ok((c, cache.stats))
}

/// [`compile_with_progress`] through a page's artifact store (see
/// [`compiler::artifact_cache::run_artifact_with_artifacts`]; kernels are shared within the
/// compile): a sound artifact for this graph, options, machine and compiler is used as it
/// is, no pass running, without the pass snapshots and SDSC bundle, which stay in the store
/// until [`passes_with_store`] reads them; otherwise the graph compiles and both go in the
/// store.
pub fn compile_with_store(
    graph: &Graph,
    machine: &Machine,
    options: &Options,
    progress: &mut dyn FnMut(compiler::CompileProgress),
    store: &mut dyn compiler::artifact_cache::ArtifactStore,
) -> Result<(Compilation, compiler::artifact_cache::ArtifactOutcome), DriverError> {
    check_no_empty_tensors(graph)?;
    let mut kernels = compiler::artifact_cache::KernelCache::new(None);
    compiler::artifact_cache::run_artifact_with_artifacts(
        graph,
        &target_for(machine),
        options,
        progress,
        &mut kernels,
        store,
    )
    .map_err(DriverError::from_compile)
}

/// The pass snapshot texts a run through a store left there ([`Run::passes_apart`]), with
/// the SDSC lines of each device op that the run's source map then lacks.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PassesApart {
    /// Snapshot texts by pass, in pass order.
    pub texts: Vec<PassText>,
    /// Each device op's lines in the `sdsc` snapshot's text (`OpLink::sdsc_lines`).
    pub sdsc_lines: Vec<OpSdscLines>,
}

/// One pass's snapshot text.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PassText {
    /// The pass name.
    pub name: String,
    /// Its snapshot's text.
    pub text: String,
}

/// A device op's lines in the SDSC text.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct OpSdscLines {
    /// The device op's name.
    pub op: String,
    /// Its lines.
    pub lines: LineRange,
}

/// The pass snapshot texts of the compile [`compile_with_store`] would make, from the
/// store when its entry is sound (key, version and digest checked; the texts the artifact
/// itself holds left out, [`compiler::artifact_cache::text_in_artifact`]), else compiled
/// again (every text) and stored over; the outcome says which.
pub fn passes_with_store(
    graph: &Graph,
    machine: &Machine,
    options: &Options,
    progress: &mut dyn FnMut(compiler::CompileProgress),
    store: &mut dyn compiler::artifact_cache::ArtifactStore,
) -> Result<(PassesApart, compiler::artifact_cache::ArtifactOutcome), DriverError> {
    check_no_empty_tensors(graph)?;
    let mut kernels = compiler::artifact_cache::KernelCache::new(None);
    let (p, outcome) = compiler::artifact_cache::passes_with_artifacts(
        graph,
        &target_for(machine),
        options,
        progress,
        &mut kernels,
        store,
    )
    .map_err(DriverError::from_compile)?;
    let sdsc_lines = match (&p.sdsc, p.texts.iter().find(|t| t.pass == "sdsc")) {
        (Some(b), Some(t)) => source_map::sdsc_lines(b, &t.text),
        _ => Vec::new(),
    };
    let texts = p
        .texts
        .into_iter()
        .map(|t| PassText {
            name: t.pass,
            text: t.text,
        })
        .collect();
    Ok((
        PassesApart {
            texts,
            sdsc_lines: sdsc_lines
                .into_iter()
                .map(|(op, lines)| OpSdscLines { op, lines })
                .collect(),
        },
        outcome,
    ))
}

/// What the compile caches did for one compile, for the CLI to print.
#[derive(Debug, Clone)]
pub struct CacheReport {
    /// The cache directory.
    pub dir: std::path::PathBuf,
    /// Whether the whole compilation came from the cache, and if not why.
    pub outcome: compiler::artifact_cache::ArtifactOutcome,
    /// The kernel cache's hits and misses (all zero on a whole-compile hit).
    pub kernels: compiler::artifact_cache::CacheStats,
    /// Problems met: an unwritable directory, a stale or corrupted entry.
    pub warnings: Vec<String>,
    /// Wall time of the compile, cache included, in seconds.
    pub seconds: f64,
}

impl CacheReport {
    /// One line for the user: warm or cold, the kernels, the time.
    pub fn line(&self) -> String {
        use compiler::artifact_cache::ArtifactOutcome as O;
        let how = match &self.outcome {
            O::Hit => "warm, the whole compile from the cache (no pass ran)".to_string(),
            O::Miss => "cold, compiled and stored".to_string(),
            O::Rebuilt(why) => format!("cold, the entry was {why}: compiled and stored again"),
            O::Bypassed(why) => format!("not cached ({why})"),
        };
        let k = &self.kernels;
        format!(
            "compile cache {}: {how}; kernels: {} lowered, {} reused within the compile, {} from the cache; compile {:.3} s",
            self.dir.display(),
            k.misses,
            k.hits_in_compile,
            k.hits_from_store,
            self.seconds
        )
    }
}

/// [`compile_with_progress`] through the compile caches in directory `dir` (see
/// [`compiler::artifact_cache`]): a sound whole-compile artifact for this graph, options,
/// machine and compiler is used as it is, no pass running; otherwise the compile lowers
/// each distinct kernel once (reusing kernels from the directory) and stores the result.
/// A directory that cannot be made or written gives a warning, and the compile goes on
/// without it.
pub fn compile_with_cache_dir(
    graph: &Graph,
    machine: &Machine,
    options: &Options,
    progress: &mut dyn FnMut(compiler::CompileProgress),
    dir: &std::path::Path,
) -> Result<(Compilation, CacheReport), DriverError> {
    with_cache_dir(
        graph,
        machine,
        options,
        progress,
        dir,
        compiler::artifact_cache::compile_with_artifacts,
    )
}

/// [`compile_with_cache_dir`] for a caller that wants only the KTIR text (`spyre compile`):
/// a warm compile reads the stored module without decoding the rest of the compilation.
pub fn ktir_with_cache_dir(
    graph: &Graph,
    machine: &Machine,
    options: &Options,
    progress: &mut dyn FnMut(compiler::CompileProgress),
    dir: &std::path::Path,
) -> Result<(Option<String>, CacheReport), DriverError> {
    with_cache_dir(
        graph,
        machine,
        options,
        progress,
        dir,
        compiler::artifact_cache::ktir_with_artifacts,
    )
}

/// One of the compiler's artifact-cache entry points.
type WithArtifacts<T> =
    fn(
        &Graph,
        &Target,
        &Options,
        &mut dyn FnMut(compiler::CompileProgress),
        &mut compiler::artifact_cache::KernelCache<'_>,
        &mut dyn compiler::artifact_cache::ArtifactStore,
    ) -> Result<(T, compiler::artifact_cache::ArtifactOutcome), compiler::CompileError>;

fn with_cache_dir<T>(
    graph: &Graph,
    machine: &Machine,
    options: &Options,
    progress: &mut dyn FnMut(compiler::CompileProgress),
    dir: &std::path::Path,
    entry: WithArtifacts<T>,
) -> Result<(T, CacheReport), DriverError> {
    check_no_empty_tensors(graph)?;
    let started = web_time_now();
    let mut artifacts = DirStore::open(dir.to_path_buf());
    let mut kernel_store = DirStore::open(dir.to_path_buf());
    let mut kernels = compiler::artifact_cache::KernelCache::new(Some(&mut kernel_store));
    let (c, outcome) = entry(
        graph,
        &target_for(machine),
        options,
        progress,
        &mut kernels,
        &mut artifacts,
    )
    .map_err(DriverError::from_compile)?;
    let stats = kernels.stats;
    let mut warnings = artifacts.warnings;
    // Both stores warn of the same unwritable directory: say it once.
    for w in kernel_store.warnings {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    Ok((
        c,
        CacheReport {
            dir: dir.to_path_buf(),
            outcome,
            kernels: stats,
            warnings,
            seconds: started.map_or(0.0, |t| t.elapsed().as_secs_f64()),
        },
    ))
}

/// The time now where there is a clock (not in the browser's wasm, where `Instant`
/// panics; the page times its own compiles).
fn web_time_now() -> Option<std::time::Instant> {
    if cfg!(target_arch = "wasm32") {
        None
    } else {
        Some(std::time::Instant::now())
    }
}

/// A tensor with no elements is an input error, named here, rather than a kernel the
/// compiler cannot build (its tiles would span no points).
fn check_no_empty_tensors(graph: &Graph) -> Result<(), DriverError> {
    // Types that do not infer are left for the compiler to report.
    let Ok(types) = graph.infer_types() else {
        return Ok(());
    };
    if let Some((name, t)) = types.iter().find(|(_, t)| t.shape.contains(&0)) {
        return Err(DriverError::new(
            Stage::Compile,
            format!(
                "tensor '{name}' has shape {:?}, with no elements; the playground compiles tensors of at least one element",
                t.shape
            ),
        ));
    }
    Ok(())
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
#[cfg_attr(test, derive(ts_rs::TS))]
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
    /// Elements where both sides hold the same infinity, or both a NaN: these match, and
    /// take no part in the errors above.
    pub special_matches: usize,
}

/// One timed event, as the page and trace views want it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct EventView {
    /// "dma", "pt" or "sfp".
    #[cfg_attr(test, ts(as = "views::UnitName"))]
    pub unit: Unit,
    /// The core whose unit ran it.
    pub core: usize,
    /// Start, in cycles.
    pub start: f64,
    /// End, in cycles.
    pub end: f64,
    /// Bytes moved (transfers).
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes: u64,
    /// Ring stop the data left (transfers).
    pub src_stop: Option<usize>,
    /// Ring stop the data reached (transfers).
    pub dst_stop: Option<usize>,
    /// The ring stops a transfer passes, from `srcStop` to `dstStop` inclusive, in order
    /// (the scheduler's route; empty for compute).
    pub route: Vec<usize>,
    /// The KTIR op.
    pub op: String,
    /// Its line in the KTIR text.
    pub line: u32,
}

/// A ring stop for the page.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StopView {
    /// "core" or "memory".
    #[cfg_attr(test, ts(type = "\"core\" | \"memory\""))]
    pub kind: &'static str,
    /// Core id for cores, position for memory stops.
    pub index: usize,
    /// A short label.
    pub label: String,
}

/// The machine as the page draws it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
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

/// What a simulation produced, for graphs and KTIR modules alike.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
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
    /// Per-output accuracy against the values the user expects ([`RunOptions::expected`];
    /// empty when none were given).
    pub expected: Vec<OutputCheck>,
    /// The simulated graph outputs, by name, in host order (empty for KTIR modules and
    /// timing-only runs); [`Session::output_npy`] writes them as `.npy`.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub output_values: BTreeMap<String, Tensor>,
    /// What a timing-only run assumed in place of values it did not compute.
    pub assumptions: Vec<String>,
    /// Timed events, in task order: the first [`EVENT_VIEW_LIMIT`] of the run's, a window
    /// when there are more.
    pub events: Vec<EventView>,
    /// How many timed events the run has in all (more than `events` holds when it is a
    /// window).
    #[cfg_attr(test, ts(type = "number"))]
    pub events_total: u64,
    /// Utilisation and bottleneck.
    pub summary: SummaryView,
    /// KTIR operations executed over all cores.
    #[cfg_attr(test, ts(type = "number"))]
    pub steps: u64,
    /// Functions run, in order (KTIR modules; empty for graphs).
    pub functions: Vec<String>,
    /// The buffers of a KTIR module and their final contents (empty contents in
    /// timing-only mode; no buffers for graphs).
    pub buffers: Vec<(BufferSpec, Vec<f32>)>,
    /// Warnings the verifier gave (spec gaps the program touches).
    pub warnings: Vec<String>,
    /// Peak bytes of live tensor values on any one core, per launch in launch order (what
    /// `ktir::working_set` predicts for each kernel).
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub launch_peak_bytes: Vec<u64>,
    /// Per kernel and for the whole program: work, bytes, lower bound and achieved cycles.
    pub roofline: Roofline,
    /// Per kernel: the reference interpreter's per-unit roofline latency model beside the
    /// event-level cycles (`--timing roofline`).
    pub latency_model: LatencyModelReport,
    /// Cycles per layer or block of a graph (from its nodes' name prefixes), in run order;
    /// empty for KTIR modules.
    pub layers: Vec<LayerCycles>,
    /// What the serving stack's padding rules would cost each PagedAttention node (empty
    /// without one).
    pub padding: Vec<PaddingCost>,
    /// Which cores read which KV-cache pages, per PagedAttention node, from the compiled
    /// plan (empty without one).
    pub paged: Vec<PagedPlan>,
    /// The arithmetic of each compute task, by task id (what the roofline is computed from).
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub work: Vec<(sim::timing::TaskId, sim::WorkCount)>,
    /// Points outside their views that were masked (loads read 0, stores dropped), when
    /// the run masked them (`--out-of-bounds mask`); `None` when such points are errors.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub masked_points: Option<u64>,
}

/// A pass snapshot for the page.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PassView {
    /// The pass name (see [`PASS_NAMES`]).
    pub name: String,
    /// A title for the list.
    pub title: String,
    /// The snapshot text; `None` while it waits in the compile store ([`Run::passes_apart`],
    /// read by [`Session::fill_passes`]): a warm run brings the data the views read at once,
    /// and the texts, most of a large model's snapshots, only when a view shows them.
    pub text: Option<String>,
    /// The snapshot's structured data (layouts, core splits, scratchpad allocations).
    #[cfg_attr(test, ts(type = "unknown"))]
    pub data: serde_json::Value,
}

impl From<compiler::Snapshot> for PassView {
    fn from(s: compiler::Snapshot) -> Self {
        PassView {
            name: s.pass,
            title: s.title,
            text: Some(s.text),
            data: s.data,
        }
    }
}

/// A tensor in the graph summary.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
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
    /// The graph's weights, in graph order.
    pub initializers: Vec<InitializerView>,
}

/// A weight of the graph, for the page's node details: its type, and its values in
/// summary when the run held them.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct InitializerView {
    /// Name.
    pub name: String,
    /// Dtype name.
    pub dtype: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// The values in summary; `None` when the run did not hold them (timing-only).
    pub values: Option<ValueSummary>,
}

/// A few of a tensor's values and their range, so a weight can be inspected without
/// sending all of it to the page.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ValueSummary {
    /// The first values in row-major order (at most [`ValueSummary::SAMPLES`]).
    pub samples: Vec<f32>,
    /// Smallest value (0 for an empty tensor); NaN values are left out of min, max and mean.
    pub min: f32,
    /// Largest value (0 for an empty tensor).
    pub max: f32,
    /// Mean value (0 for an empty tensor).
    pub mean: f64,
    /// NaN values, which min, max and mean leave out.
    pub nans: usize,
}

impl ValueSummary {
    /// How many leading values a summary keeps.
    pub const SAMPLES: usize = 8;

    /// The summary of `data`.
    pub fn of(data: &[f32]) -> ValueSummary {
        let mut min = f32::INFINITY;
        let mut max = f32::NEG_INFINITY;
        let mut sum = 0.0f64;
        let mut nans = 0usize;
        for &v in data {
            if v.is_nan() {
                nans += 1;
                continue;
            }
            // Compare and select: `f32::min` and `max` handle NaN (excluded above), which
            // in WebAssembly makes each a library call.
            if v < min {
                min = v;
            }
            if v > max {
                max = v;
            }
            sum += f64::from(v);
        }
        let counted = data.len() - nans;
        if counted == 0 {
            (min, max) = (0.0, 0.0);
        }
        ValueSummary {
            samples: data.iter().take(Self::SAMPLES).copied().collect(),
            min,
            max,
            mean: if counted == 0 {
                0.0
            } else {
                sum / counted as f64
            },
            nans,
        }
    }
}

/// Everything one run of the pipeline produces (the session's run).
pub type PipelineResult = Run;

/// Settings of one run, of a graph or a KTIR module.
#[derive(Clone, Debug)]
pub struct RunOptions {
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
    /// Values the user expects of graph outputs, by name: the simulated outputs are
    /// compared with them too ([`RunResult::expected`]), at the dtype's tolerance.
    pub expected: BTreeMap<String, Tensor>,
    /// Compute timing only: the graph's weights are never materialised, no numbers are
    /// computed, the reference is not run and the outputs are not checked (see
    /// [`sim::Simulator::new_timing_only`]). For models too large to run with numbers.
    pub timing_only: bool,
    /// A KTIR module to simulate in place of the lowered one (graphs: an edited module
    /// whose kernels keep the lowered names and arguments) or of the source (KTIR).
    pub ktir: Option<String>,
    /// KTIR modules: values of scalar `index` arguments, by name.
    pub args: BTreeMap<String, i64>,
    /// KTIR modules: contents of buffers, by name (others get seeded random values).
    pub buffers: BTreeMap<String, Vec<f32>>,
    /// KTIR modules: values of scalar arguments as text, by name, typed by the function
    /// signature (`index` and integers, or floats); a value that does not fit its type
    /// is an error.
    pub scalars: BTreeMap<String, String>,
    /// KTIR modules: fixed DRAM element addresses of buffers, by name (`--place`): an
    /// argument buffer's, or a buffer holding the views at constant addresses from there.
    pub places: BTreeMap<String, i64>,
    /// What a point outside its view is: an error (the default) or masked.
    pub out_of_bounds: OutOfBounds,
    /// Timing-only graph runs: interpret each distinct kernel once and replay its tasks
    /// for every later launch of an identical kernel (same program up to names, equally
    /// long buffers), as in stacked layers. The tasks, and so the timing, are the same as
    /// interpreting every launch; off only to check exactly that.
    pub reuse_kernels: bool,
    /// Graphs: the compile-cache directory (`spyre run --cache`); `None` compiles
    /// without it. See [`compile_with_cache_dir`].
    pub cache: Option<std::path::PathBuf>,
}

/// What happens to a point of an access tile outside its view (its sizes or
/// `coordinate_set`, or every DRAM buffer); the spec does not say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutOfBounds {
    /// The run stops with an error naming the point and the view.
    #[default]
    Error,
    /// As the public reference interpreter does: a load reads 0 there and a store drops
    /// the value; the result counts the masked points.
    Mask,
}

/// The settings of a pipeline run (the name the tests and benchmarks know).
pub type PipelineOptions = RunOptions;

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            // The preset is compiled in and its loading is tested in the sim crate.
            machine: Machine::preset("spyre32").expect("the built-in spyre32 preset loads"),
            compile: Options::default(),
            seed: 0,
            limits: ExecLimits::default(),
            inputs: BTreeMap::new(),
            expected: BTreeMap::new(),
            timing_only: false,
            ktir: None,
            args: BTreeMap::new(),
            buffers: BTreeMap::new(),
            scalars: BTreeMap::new(),
            places: BTreeMap::new(),
            out_of_bounds: OutOfBounds::Error,
            reuse_kernels: true,
            cache: None,
        }
    }
}

/// How far a long run has come, for progress bars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Compiling a model graph: the pass running, and the compile's work done out of its
    /// total. Every pass counts [`COMPILE_PASS_WORK`]; a pass that reports its device ops
    /// (`ktir`) moves through its share op by op. The reports of one compile never go
    /// back, and the last has `done == total`.
    Compile {
        /// The pass running (one of [`compiler::PASS_NAMES`]).
        pass: &'static str,
        /// Work done.
        done: u64,
        /// All the work of the compile (the same in each of its reports).
        total: u64,
    },
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

/// The share of one compiler pass in [`Progress::Compile`]'s work.
pub const COMPILE_PASS_WORK: u64 = 100;

impl Progress {
    /// A compiler report as the whole compile's progress (see [`Progress::Compile`]).
    pub fn compile(p: compiler::CompileProgress) -> Progress {
        let index = compiler::PASS_NAMES
            .iter()
            .position(|n| *n == p.pass)
            .unwrap_or(0) as u64;
        let within = match p.total {
            0 => 0,
            total => (p.done.min(total) as u64).saturating_mul(COMPILE_PASS_WORK) / total as u64,
        };
        Progress::Compile {
            pass: p.pass,
            done: index * COMPILE_PASS_WORK + within,
            total: Progress::compile_total(),
        }
    }

    /// The report of a compile that has finished: all its work done.
    pub fn compiled() -> Progress {
        let total = Progress::compile_total();
        Progress::Compile {
            pass: compiler::PASS_NAMES.last().copied().unwrap_or("ktir"),
            done: total,
            total,
        }
    }

    fn compile_total() -> u64 {
        compiler::PASS_NAMES.len() as u64 * COMPILE_PASS_WORK
    }
}

/// Operations between two [`Progress::Execute`] reports.
pub(crate) const PROGRESS_EVERY_STEPS: u64 = 256;

/// Loads a machine: a preset name, or the text of a machine description.
pub fn machine(name_or_json: &str) -> Result<Machine, DriverError> {
    if let Some(m) = Machine::preset(name_or_json) {
        return Ok(m);
    }
    if name_or_json.trim_start().starts_with('{') {
        return Machine::from_json(name_or_json)
            .map_err(|e| DriverError::new(Stage::Machine, e.to_string()));
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
        Stage::Machine,
        format!("{what}; presets: {}", Machine::preset_names().join(", ")),
    ))
}

pub(crate) fn ktir_elem(dtype: DType) -> ktir::ScalarType {
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
pub fn simulate(c: &Compilation, options: &RunOptions) -> Result<RunResult, DriverError> {
    simulate_with_schedule(c, options).map(|(r, _)| r)
}

/// [`simulate`], also returning the full schedule.
pub fn simulate_with_schedule(
    c: &Compilation,
    options: &RunOptions,
) -> Result<(RunResult, sim::timing::Schedule), DriverError> {
    session::simulate_compilation(c, options, &mut |_| {})
}

/// The most events a run result carries ([`RunResult::events`]): a full model has tens of
/// millions, which neither the page's memory nor its timeline could hold; the result
/// says how many there are in all ([`RunResult::events_total`]).
pub const EVENT_VIEW_LIMIT: usize = 200_000;

/// The events of a schedule as the page wants them (zero-length bookkeeping events, such as
/// launch barriers, left out), each transfer with its route on `machine`'s ring: the first
/// `limit` of them, and how many there are in all.
pub fn event_views(
    machine: &Machine,
    sched: &sim::timing::Schedule,
    limit: usize,
) -> (Vec<EventView>, u64) {
    let n = machine.stop_count();
    // Events of the run looked at for the views; the rest are only counted, once per
    // distinct launch where that gives the same count.
    let mut seen = 0usize;
    let views: Vec<EventView> = sched
        .event_refs()
        .take_while(|_| {
            seen += 1;
            true
        })
        .filter(|e| by_launch::takes_part(e.start, e.end, e.bytes))
        .take(limit)
        .map(|e| EventView {
            route: match (e.unit, e.src_stop, e.dst_stop) {
                (Unit::Dma, Some(s), Some(d)) => machine
                    .route(s, d)
                    .map(|r| {
                        std::iter::once(s)
                            .chain(r.links.iter().map(|l| l.to_stop(n)))
                            .collect()
                    })
                    .unwrap_or_default(),
                _ => Vec::new(),
            },
            unit: e.unit,
            core: e.core,
            start: e.start,
            end: e.end,
            bytes: e.bytes,
            src_stop: e.src_stop,
            dst_stop: e.dst_stop,
            op: e.op.to_string(),
            line: e.line,
        })
        .collect();
    let total = views.len() as u64 + by_launch::count_taking_part(sched, seen);
    (views, total)
}

/// A verifier diagnostic for an editor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DiagnosticView {
    /// "error" or "warning".
    #[cfg_attr(test, ts(type = "\"error\" | \"warning\""))]
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
    diags.iter().map(DiagnosticView::of).collect()
}

impl DiagnosticView {
    /// The view of a KTIR diagnostic.
    pub fn of(d: &ktir::Diagnostic) -> DiagnosticView {
        DiagnosticView {
            severity: if d.is_error() { "error" } else { "warning" },
            message: d.message.clone(),
            line: d.line,
            column: d.column,
            start: d.span.start,
            end: d.span.end,
        }
    }
}

/// A text summary of a graph: inputs, outputs, op counts and parameter count.
pub fn inspect(graph: &Graph) -> Result<String, DriverError> {
    use std::fmt::Write;
    let types = graph
        .infer_types()
        .map_err(|e| DriverError::from_graph("", e, Stage::Load))?;
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
    let mut special_matches = 0;
    for (g, w) in got.iter().zip(&want.data) {
        let (g, w) = (*g as f64, *w as f64);
        if (g.is_nan() && w.is_nan()) || (g.is_infinite() && g == w) {
            special_matches += 1;
            continue;
        }
        let d = (g - w).abs();
        // An unmatched infinity on either side is off by inf (the tolerance would be
        // infinite too when the reference is).
        if d.is_nan() || w.is_infinite() || g.is_infinite() || d > atol + rtol * w.abs() {
            passed = false;
        }
        // Compare and select, as in `ValueSummary::of`: a NaN difference counts as an
        // infinite absolute error and leaves the relative one as it was.
        let abs = if d.is_nan() { f64::INFINITY } else { d };
        if abs > max_abs {
            max_abs = abs;
        }
        if w.abs() > 1e-6 {
            let rel = d / w.abs();
            if rel > max_rel {
                max_rel = rel;
            }
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
        special_matches,
    }
}

/// The whole pipeline on one model file: load, compile through every pass, simulate.
pub fn run_pipeline<S: AsRef<[u8]> + ?Sized>(
    source: &S,
    file_name: &str,
    options: &RunOptions,
) -> Result<PipelineResult, DriverError> {
    run_pipeline_with_ktir(source, file_name, None, options)
}

/// [`run_pipeline`], but simulating `ktir` (an edited module for the same graph) in place
/// of the lowered one; its kernels must keep the lowered names and arguments.
pub fn run_pipeline_with_ktir<S: AsRef<[u8]> + ?Sized>(
    source: &S,
    file_name: &str,
    ktir: Option<&str>,
    options: &RunOptions,
) -> Result<PipelineResult, DriverError> {
    let mut session = Session::open(source.as_ref(), file_name)?;
    let owned;
    let options = match ktir {
        Some(text) => {
            owned = RunOptions {
                ktir: Some(text.to_string()),
                ..options.clone()
            };
            &owned
        }
        None => options,
    };
    session.run(options, &mut |_| {})?;
    session
        .into_run()
        .ok_or_else(|| DriverError::new(Stage::Simulate, "the run left no result"))
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
        // Every core of the kernel's grid took part and data crossed the ring. The bias
        // add is the matmul's epilogue: one kernel, on the matmul's cores.
        assert!(
            r.ktir
                .contains("matmul (batchmatmul) with epilogue add_bias (add)"),
            "{}",
            r.ktir
        );
        let grid: usize = r
            .ktir
            .split("grid = [")
            .nth(1)
            .and_then(|g| g.split(']').next())
            .and_then(|g| g.parse().ok())
            .expect("a grid");
        let cores: std::collections::BTreeSet<usize> =
            r.run.events.iter().map(|e| e.core).collect();
        assert_eq!(cores.len(), grid);
        assert!(r
            .run
            .events
            .iter()
            .any(|e| e.unit == Unit::Dma && e.src_stop != e.dst_stop));
        assert!(r.run.events.iter().any(|e| e.unit == Unit::Pt));
        let names: Vec<&str> = r.passes.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, PASS_NAMES);
        assert!(r.ktir.contains("linalg.matmul"));
        // Unfused, the add is a kernel of its own over all 32 cores.
        let mut opts = PipelineOptions::default();
        opts.compile.fuse = false;
        let src = include_str!("../../../examples/graphs/matmul_add.json");
        let r = run_pipeline(src, "matmul_add.json", &opts).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.run.passed, "{:?}", r.run.outputs);
        assert!(r.ktir.contains("grid = [32]"));
        let cores: std::collections::BTreeSet<usize> =
            r.run.events.iter().map(|e| e.core).collect();
        assert_eq!(cores.len(), 32);
    }

    #[test]
    fn an_edited_kernel_runs_and_a_wrong_edit_fails_the_comparison() {
        let ex = examples();
        let opts = PipelineOptions::default();
        let base = run_pipeline(ex[0].source, "matmul_add.json", &opts).unwrap();
        // Same program, still correct.
        let same = run_pipeline_with_ktir(ex[0].source, "m.json", Some(&base.ktir), &opts).unwrap();
        assert!(same.run.passed);
        // Subtracting the bias instead of adding it (the matmul's epilogue) must be caught.
        let wrong = base.ktir.replacen("arith.addf", "arith.subf", 1);
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
        // Unfused, so each op's kernel reads its input from the scratchpad plan.
        let mut o = PipelineOptions::default();
        o.compile.fuse = false;
        let r = run_pipeline(CHAIN, "chain.json", &o).unwrap_or_else(|e| panic!("{e}"));
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
        // Unfused (two kernels, enough operations for several reports) and single-buffered
        // (with double buffering its matmul is cut into steps to overlap its loads, and the
        // estimate is exact only for kernels without loops).
        let mut opts = PipelineOptions::default();
        opts.compile.fuse = false;
        opts.compile.double_buffer = false;
        let mut session = Session::open(ex[0].source.as_bytes(), "matmul_add.json").unwrap();
        let mut reports = Vec::new();
        let run = session.run(&opts, &mut |p| reports.push(p)).unwrap();
        let (r, sched) = (&run.run, &run.schedule);
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
    fn equal_infinities_and_nans_match_and_are_counted() {
        let want = Tensor {
            dtype: DType::F32,
            shape: vec![5],
            data: vec![f32::NEG_INFINITY, f32::INFINITY, f32::NAN, 1.0, 2.0],
        };
        let got = [f32::NEG_INFINITY, f32::INFINITY, f32::NAN, 1.0, 2.0];
        let check = compare("y", &want, &got);
        assert!(check.passed, "{check:?}");
        assert_eq!(check.special_matches, 3);
        assert_eq!(check.max_abs_error, 0.0);
        // An infinity of the other sign or against a number, or a NaN against a number,
        // still fails.
        for bad in [
            [f32::NEG_INFINITY, 5.0, f32::NAN, 1.0, 2.0],
            [f32::INFINITY, f32::INFINITY, f32::NAN, 1.0, 2.0],
            [f32::NEG_INFINITY, f32::INFINITY, 0.0, 1.0, 2.0],
            [f32::NEG_INFINITY, f32::INFINITY, f32::NAN, f32::NAN, 2.0],
        ] {
            assert!(!compare("y", &want, &bad).passed, "{bad:?}");
        }
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

#[cfg(test)]
mod ts_types;
