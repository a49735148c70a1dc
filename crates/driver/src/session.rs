//! One session over one source: open a model graph (JSON or ONNX) or a KTIR module, run it
//! with options and a progress callback, and keep the last run (its schedule included) for
//! trace export. Graphs and KTIR share one run loop and one result type.

use crate::roofline;
use crate::source_map::{kernel_links, node_links, op_links};
use crate::{
    compare, compile_with_progress, event_views, ktir_elem, DriverError, GraphView,
    InitializerView, MachineView, NodeView, OutputCheck, PassView, Progress, RunOptions, RunResult,
    SourceMap, Stage, TensorView, ValueSummary, PROGRESS_EVERY_STEPS,
};
use graph::{Graph, Tensor};
use ktir::ast::{Module, ScalarType};
use serde::Serialize;
use sim::timing::{schedule_launches, Limits, Schedule};
use sim::{KernelValue, LineLookup, Machine, Simulator};
use std::cell::RefCell;
use std::collections::BTreeMap;

/// What a source is; detected from its content, the file name only breaking ties.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum SourceKind {
    /// A model graph in the JSON graph format.
    Graph,
    /// A model graph as ONNX protobuf bytes.
    Onnx,
    /// A KTIR (MLIR text) module.
    Ktir,
}

impl SourceKind {
    /// Whether the source is a model graph (JSON or ONNX) rather than a KTIR module.
    pub fn is_graph(self) -> bool {
        !matches!(self, SourceKind::Ktir)
    }
}

/// The kind of `bytes`: bytes that start like an ONNX `ModelProto` (field 1, a varint) are
/// ONNX, a JSON object is a graph, MLIR text (a comment, `func.func`, `module`, an attribute
/// or type alias) is KTIR. When the content does not say, the extension of `file_name` does
/// (`.onnx`, `.mlir`, `.ktir`, `.json`); otherwise bytes that are not text are taken for
/// ONNX and text for JSON, whose loaders then say what is wrong. [`classify`] is the strict
/// form that refuses content fitting no kind.
pub fn detect_kind(bytes: &[u8], file_name: &str) -> SourceKind {
    classify(bytes, file_name).unwrap_or_else(|_| {
        if std::str::from_utf8(bytes).is_ok() {
            SourceKind::Graph
        } else {
            SourceKind::Onnx
        }
    })
}

/// The kind named by a file's extension (`.onnx`, `.mlir` or `.ktir`, `.json`).
fn kind_by_name(file_name: &str) -> Option<SourceKind> {
    let lower = file_name.to_ascii_lowercase();
    if lower.ends_with(".onnx") {
        Some(SourceKind::Onnx)
    } else if lower.ends_with(".mlir") || lower.ends_with(".ktir") {
        Some(SourceKind::Ktir)
    } else if lower.ends_with(".json") {
        Some(SourceKind::Graph)
    } else {
        None
    }
}

/// The kind of a file, decided by its content; the extension only breaks ties (content
/// that fits no kind, or no content). Content that fits no kind and a name that does not
/// say is an error describing what was found.
pub fn classify(bytes: &[u8], file_name: &str) -> Result<SourceKind, DriverError> {
    let by_name = kind_by_name(file_name);
    if bytes.first() == Some(&0x08) {
        return Ok(SourceKind::Onnx);
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return by_name.ok_or_else(|| {
            DriverError::new(
                Stage::Load,
                format!(
                    "{file_name}: binary content that is not an ONNX model (it does not start with a ModelProto's ir_version field)"
                ),
            )
            .in_file(file_name)
        });
    };
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        return Ok(SourceKind::Graph);
    }
    let mlir = ["//", "func.func", "module", "builtin.module", "#", "!"];
    if mlir.iter().any(|p| t.starts_with(p)) || t.contains("func.func") || t.contains("ktdp.") {
        return Ok(SourceKind::Ktir);
    }
    if let Some(kind) = by_name {
        return Ok(kind);
    }
    let first: String = t.lines().next().unwrap_or("").chars().take(40).collect();
    Err(DriverError::new(
        Stage::Load,
        if t.is_empty() {
            format!("{file_name}: the file is empty: neither a KTIR module, a JSON graph nor an ONNX model")
        } else {
            format!(
                "{file_name}: neither a KTIR module (MLIR text with func.func), a JSON graph (an object) nor an ONNX model (protobuf bytes); it starts with '{first}'"
            )
        },
    )
    .in_file(file_name))
}

/// The loaded source.
#[derive(Clone, Debug)]
enum Source {
    Graph(Box<Graph>),
    Ktir(String),
}

/// One run, for graphs and KTIR alike: what the page shows and `spyre run` prints.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Run {
    /// What was run.
    pub kind: SourceKind,
    /// The graph (for a KTIR module: its name, functions and buffers, and no nodes).
    pub graph: GraphView,
    /// Pass snapshots, in pass order (none for a KTIR module).
    pub passes: Vec<PassView>,
    /// The compile came from a store that keeps the snapshot texts apart: `passes` has each
    /// pass's name, title and data but no text (the KTIR module's aside), and the source
    /// map's ops have no SDSC lines, until [`Session::fill_passes`] reads them.
    pub passes_apart: bool,
    /// The KTIR module that ran.
    pub ktir: String,
    /// The simulation.
    pub run: RunResult,
    /// Graph node <-> device op <-> kernel <-> KTIR lines <-> events.
    pub source_map: SourceMap,
    /// The full schedule, for trace export without running again.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub schedule: Schedule,
    /// The compiler's padding reports, which the run's cycles turn into `run.padding`.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub padding: Vec<compiler::PaddingReport>,
    /// The same graph run tensor-parallel over several cards, when asked for
    /// ([`Session::run_with_tp`]); the rest of the run is the one-card run.
    pub tp: Option<crate::TpRun>,
    /// What the compile cache did, when the run used one ([`crate::RunOptions::cache`]).
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub cache: Option<crate::CacheReport>,
    /// What the whole-compile artifact store did, when the run compiled through one
    /// ([`Session::run_with_artifacts`]).
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub artifact: Option<compiler::artifact_cache::ArtifactOutcome>,
}

impl Run {
    /// The texts of the passes that have one, and each device op's SDSC lines: what
    /// [`Session::fill_passes`] adds to a run whose texts were apart, for a page that holds
    /// the rest of the run already.
    pub fn pass_texts(&self) -> crate::PassesApart {
        crate::PassesApart {
            texts: self
                .passes
                .iter()
                .filter_map(|p| {
                    Some(crate::PassText {
                        name: p.name.clone(),
                        text: p.text.clone()?,
                    })
                })
                .collect(),
            sdsc_lines: self
                .source_map
                .ops
                .iter()
                .filter_map(|o| {
                    Some(crate::OpSdscLines {
                        op: o.name.clone(),
                        lines: o.sdsc_lines?,
                    })
                })
                .collect(),
        }
    }
}

/// A source opened for running: a graph or a KTIR module, and its last run.
#[derive(Clone, Debug)]
pub struct Session {
    file_name: String,
    kind: SourceKind,
    source: Source,
    last: Option<(Machine, Run)>,
}

impl Session {
    /// Opens a file's contents; the kind comes from the content ([`detect_kind`]).
    /// An ONNX model's external data is found nowhere (see [`Session::open_with_files`]).
    pub fn open(bytes: &[u8], file_name: &str) -> Result<Session, DriverError> {
        Session::open_with_files(
            bytes,
            file_name,
            std::sync::Arc::new(BTreeMap::<String, Vec<u8>>::new()),
        )
    }

    /// [`Session::open`] for an ONNX model whose initializers may be in external files,
    /// found through `files`: the model's directory (the CLI) or the files dropped with it
    /// (a map of file names to bytes, the page). They are read only when values are
    /// needed, so a timing-only run reads none.
    pub fn open_with_files(
        bytes: &[u8],
        file_name: &str,
        files: std::sync::Arc<dyn graph::ExternalFiles>,
    ) -> Result<Session, DriverError> {
        let kind = classify(bytes, file_name)?;
        let source = match kind {
            SourceKind::Onnx => Source::Graph(Box::new(
                graph::load_onnx_with_files(bytes, files)
                    .map_err(|e| DriverError::from_graph(file_name, e, Stage::Load))?,
            )),
            SourceKind::Graph => {
                let text = std::str::from_utf8(bytes).map_err(|e| {
                    DriverError::new(
                        Stage::Load,
                        format!("{file_name}: not UTF-8 text ({e}); graph files are JSON or .onnx"),
                    )
                    .in_file(file_name)
                })?;
                Source::Graph(Box::new(
                    graph::load_json(text)
                        .map_err(|e| DriverError::from_graph(file_name, e, Stage::Load))?,
                ))
            }
            SourceKind::Ktir => {
                let text = std::str::from_utf8(bytes).map_err(|e| {
                    DriverError::new(Stage::Load, format!("{file_name}: not UTF-8 text ({e})"))
                        .in_file(file_name)
                })?;
                Source::Ktir(text.to_string())
            }
        };
        Ok(Session {
            file_name: file_name.to_string(),
            kind,
            source,
            last: None,
        })
    }

    /// What the source is.
    pub fn kind(&self) -> SourceKind {
        self.kind
    }

    /// The file name it was opened with.
    pub fn file_name(&self) -> &str {
        &self.file_name
    }

    /// The model graph, for graph sources.
    pub fn graph(&self) -> Option<&Graph> {
        match &self.source {
            Source::Graph(g) => Some(g),
            Source::Ktir(_) => None,
        }
    }

    /// The source text of a KTIR module.
    pub fn ktir_source(&self) -> Option<&str> {
        match &self.source {
            Source::Ktir(t) => Some(t),
            Source::Graph(_) => None,
        }
    }

    /// Runs the source: a graph is compiled through every pass (with `options.ktir` in place
    /// of the lowered module, when given) and simulated with its outputs compared with the
    /// reference; a KTIR module (or `options.ktir`) runs every function in order.
    pub fn run(
        &mut self,
        options: &RunOptions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<&Run, DriverError> {
        self.run_stored(options, progress, None)
    }

    /// The key a graph's compile is stored under in a whole-compile artifact store
    /// ([`compiler::artifact_cache::compile_key`], with the options a run compiles with):
    /// `None` for a KTIR module, `Some(Err)` naming why a graph cannot be keyed.
    pub fn compile_key(&self, options: &RunOptions) -> Option<Result<String, String>> {
        let g = self.graph()?;
        let mut compile_options = options.compile.clone();
        compile_options.stop_after = None;
        Some(compiler::artifact_cache::compile_key(
            g,
            &crate::target_for(&options.machine),
            &compile_options,
        ))
    }

    /// The pass snapshots a run through `store` left there ([`Run::passes_apart`]), read
    /// when sound, else compiled again with `options` (as the run took them) and stored
    /// over; `None` for a KTIR module.
    pub fn passes_apart(
        &self,
        options: &RunOptions,
        progress: &mut dyn FnMut(Progress),
        store: &mut dyn compiler::artifact_cache::ArtifactStore,
    ) -> Option<
        Result<
            (
                crate::PassesApart,
                compiler::artifact_cache::ArtifactOutcome,
            ),
            DriverError,
        >,
    > {
        let g = self.graph()?;
        let mut compile_options = options.compile.clone();
        compile_options.stop_after = None;
        let mut report = |p| progress(Progress::compile(p));
        Some(crate::passes_with_store(
            g,
            &options.machine,
            &compile_options,
            &mut report,
            store,
        ))
    }

    /// Fills the last run's pass snapshot texts and its ops' SDSC lines in from `store` when
    /// the run left them there ([`Run::passes_apart`]; as [`Session::passes_apart`], an
    /// unsound entry is compiled again and stored over). Texts go to the passes of their
    /// name, so a pass the run added (tensor-parallel) stays. `Ok(None)` when there was
    /// nothing to fill.
    pub fn fill_passes(
        &mut self,
        options: &RunOptions,
        progress: &mut dyn FnMut(Progress),
        store: &mut dyn compiler::artifact_cache::ArtifactStore,
    ) -> Result<Option<compiler::artifact_cache::ArtifactOutcome>, DriverError> {
        if !self.last_run().is_some_and(|r| r.passes_apart) {
            return Ok(None);
        }
        let Some(got) = self.passes_apart(options, progress, store) else {
            return Ok(None);
        };
        let (p, outcome) = got?;
        if let Some((_, run)) = self.last.as_mut() {
            let lines: BTreeMap<&str, crate::LineRange> = p
                .sdsc_lines
                .iter()
                .rev()
                .map(|l| (l.op.as_str(), l.lines))
                .collect();
            for op in &mut run.source_map.ops {
                op.sdsc_lines = lines.get(op.name.as_str()).copied();
            }
            let mut texts: BTreeMap<String, String> =
                p.texts.into_iter().map(|t| (t.name, t.text)).collect();
            for pass in run.passes.iter_mut().filter(|p| p.text.is_none()) {
                pass.text = Some(texts.remove(&pass.name).ok_or_else(|| {
                    DriverError::new(
                        Stage::Compile,
                        format!(
                            "the stored snapshots have no text for the pass {}",
                            pass.name
                        ),
                    )
                })?);
            }
            run.passes_apart = false;
        }
        Ok(Some(outcome))
    }

    /// [`Session::run_with_tp`], a graph's compile going through `store` (the page's
    /// IndexedDB, through the wasm facade): a sound artifact under the compile's key is
    /// used as it is, no pass running; otherwise the graph compiles and the artifact is
    /// put in the store. `Run::artifact` says which.
    pub fn run_with_artifacts(
        &mut self,
        options: &RunOptions,
        tp: Option<&crate::TpOptions>,
        progress: &mut dyn FnMut(Progress),
        store: &mut dyn compiler::artifact_cache::ArtifactStore,
    ) -> Result<&Run, DriverError> {
        self.run_with_tp_stored(options, tp, progress, Some(store))
    }

    fn run_stored(
        &mut self,
        options: &RunOptions,
        progress: &mut dyn FnMut(Progress),
        store: Option<&mut dyn compiler::artifact_cache::ArtifactStore>,
    ) -> Result<&Run, DriverError> {
        let mut run = match &self.source {
            Source::Graph(g) => run_graph(g, options, progress, store)?,
            Source::Ktir(text) => {
                let text = options.ktir.as_deref().unwrap_or(text);
                run_ktir_module(text, &self.file_name, options, progress)?
            }
        };
        let unique_dram_bytes = match &self.source {
            Source::Graph(g) => roofline::graph_unique_bytes(g),
            Source::Ktir(_) => roofline::buffer_unique_bytes(&run.run.buffers),
        };
        let work = std::mem::take(&mut run.run.work);
        run.run.roofline = roofline::compute(roofline::Inputs {
            machine: &options.machine,
            schedule: &run.schedule,
            work: &work,
            kernels: &run.source_map.kernels,
            total_cycles: run.schedule.total_cycles,
            unique_dram_bytes,
        });
        run.run.latency_model = crate::latency::compute(crate::latency::Inputs {
            machine: &options.machine,
            schedule: &run.schedule,
            work: &work,
            kernels: &run.source_map.kernels,
            total_cycles: run.schedule.total_cycles,
        });
        run.run.layers = crate::layers::compute(&run.source_map, &run.schedule);
        run.run.padding = crate::padding::compute(&run.padding, &run.source_map, &run.run.roofline);
        let (_, run) = self.last.insert((options.machine.clone(), run));
        Ok(run)
    }

    /// [`Session::run`], then for a model graph with `tp` given, the same graph
    /// tensor-parallel ([`crate::run_tensor_parallel`]) with the same options: the result
    /// goes in `tp`, and the `tensor-parallel` pass joins the pass list after
    /// `canonicalize`, as that state with a `shard:` line on every tensor and node.
    pub fn run_with_tp(
        &mut self,
        options: &RunOptions,
        tp: Option<&crate::TpOptions>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<&Run, DriverError> {
        self.run_with_tp_stored(options, tp, progress, None)
    }

    fn run_with_tp_stored(
        &mut self,
        options: &RunOptions,
        tp: Option<&crate::TpOptions>,
        progress: &mut dyn FnMut(Progress),
        store: Option<&mut dyn compiler::artifact_cache::ArtifactStore>,
    ) -> Result<&Run, DriverError> {
        let graph = match (&self.source, tp) {
            (Source::Graph(g), Some(_)) => Some(g.as_ref().clone()),
            _ => None,
        };
        let (Some(g), Some(tp)) = (graph, tp) else {
            return self.run_stored(options, progress, store);
        };
        match store {
            Some(store) => {
                self.run_stored(options, progress, Some(&mut *store))?;
                // The tensor-parallel pass is built on the canonical state's text and
                // placed among the snapshots, so snapshots a stored compile keeps apart
                // are read in first (filling them later would drop that pass).
                self.fill_passes(options, progress, store)?;
            }
            None => {
                self.run_stored(options, progress, None)?;
            }
        }
        let r = crate::run_tensor_parallel(&g, options, tp, progress)?;
        let plan = compiler::tp::shard(&g, tp.degree).map_err(DriverError::from_compile)?;
        let Some((_, run)) = self.last.as_mut() else {
            return Err(DriverError::new(Stage::Simulate, "the run left no result"));
        };
        let at = run
            .passes
            .iter()
            .position(|p| p.name == "canonicalize")
            .map_or(0, |i| i + 1);
        let canonical = at
            .checked_sub(1)
            .and_then(|i| run.passes.get(i))
            .and_then(|p| p.text.clone())
            .unwrap_or_default();
        run.passes.insert(
            at,
            PassView {
                name: r.pass.name.clone(),
                title: r.pass.title.clone(),
                text: Some(plan.state_text(&canonical)),
                data: r.pass.data.clone(),
            },
        );
        run.tp = Some(r);
        Ok(run)
    }

    /// Reads the user's input files (file name and bytes: `NAME.npy`, or ONNX
    /// `TensorProto` `.pb` files such as an ONNX test data set's `input_K.pb`) as values
    /// for every graph input, for [`RunOptions::inputs`]. Missing, extra, mis-typed and
    /// mis-shaped inputs are errors naming the input (see [`crate::user_data::bind`]).
    pub fn read_inputs(
        &self,
        files: &[(String, Vec<u8>)],
    ) -> Result<BTreeMap<String, Tensor>, DriverError> {
        self.bind(files, crate::user_data::Role::Inputs)
    }

    /// Reads the values the user expects of every graph output (`NAME.npy` or
    /// `output_K.pb`), for [`RunOptions::expected`].
    pub fn read_expected(
        &self,
        files: &[(String, Vec<u8>)],
    ) -> Result<BTreeMap<String, Tensor>, DriverError> {
        self.bind(files, crate::user_data::Role::Outputs)
    }

    /// [`Session::read_inputs`] or [`Session::read_expected`] (by `role`) where tensors may
    /// go without a file: inputs left out stay seeded random, outputs left out are compared
    /// with the reference only.
    pub fn read_some(
        &self,
        files: &[(String, Vec<u8>)],
        role: crate::user_data::Role,
    ) -> Result<BTreeMap<String, Tensor>, DriverError> {
        crate::user_data::bind_some(self.graph_for_files()?, files, role)
    }

    fn bind(
        &self,
        files: &[(String, Vec<u8>)],
        role: crate::user_data::Role,
    ) -> Result<BTreeMap<String, Tensor>, DriverError> {
        crate::user_data::bind(self.graph_for_files()?, files, role)
    }

    /// The graph that user files bind to; an error for a KTIR module.
    fn graph_for_files(&self) -> Result<&Graph, DriverError> {
        self.graph().ok_or_else(|| {
            DriverError::new(
                Stage::Load,
                "a KTIR module has buffers, not graph inputs and outputs",
            )
        })
    }

    /// The simulated outputs of the last run as `.npy` files: (`NAME.npy`, bytes), in the
    /// graph's output order. Empty for KTIR modules; an error after a timing-only run,
    /// which computes no values.
    pub fn output_npy(&self) -> Result<Vec<(String, Vec<u8>)>, DriverError> {
        let (_, run) = self
            .last
            .as_ref()
            .ok_or_else(|| DriverError::new(Stage::Simulate, "nothing has run yet"))?;
        if run.run.timing_only {
            return Err(DriverError::new(
                Stage::Simulate,
                "a timing-only run computes no output values",
            ));
        }
        let mut out = Vec::new();
        for o in &run.graph.outputs {
            if let Some(t) = run.run.output_values.get(&o.name) {
                let bytes = crate::npy::write_tensor(t).map_err(|m| {
                    DriverError::new(Stage::Simulate, format!("output '{}': {m}", o.name))
                })?;
                // ONNX names such as `/model/Add_output_0` must not make directories.
                out.push((format!("{}.npy", o.name.replace(['/', '\\'], "_")), bytes));
            }
        }
        Ok(out)
    }

    /// The model graph, taken out of the session.
    pub fn into_graph(self) -> Option<Graph> {
        match self.source {
            Source::Graph(g) => Some(*g),
            Source::Ktir(_) => None,
        }
    }

    /// The last run, taken out of the session.
    pub fn into_run(self) -> Option<Run> {
        self.last.map(|(_, r)| r)
    }

    /// The last run, if any.
    pub fn last_run(&self) -> Option<&Run> {
        self.last.as_ref().map(|(_, r)| r)
    }

    /// The last run, to hand over in parts (a facade moving its event list aside while it
    /// converts the rest).
    pub fn last_run_mut(&mut self) -> Option<&mut Run> {
        self.last.as_mut().map(|(_, r)| r)
    }

    /// The last run as Chrome trace JSON (for Perfetto and chrome://tracing), from its
    /// stored schedule.
    pub fn trace_json(&self) -> Result<String, DriverError> {
        let (machine, run) = self.last.as_ref().ok_or_else(|| {
            DriverError::new(Stage::Simulate, "nothing has run yet: run before tracing")
        })?;
        Ok(sim::trace::chrome_trace_json(machine, &run.schedule))
    }
}

/// How a buffer starts in device memory.
pub(crate) enum Init {
    /// These values.
    Data(Vec<f32>),
    /// This many elements, no values (timing-only runs, intermediates).
    Reserve(usize),
}

/// A buffer to place in DRAM before the kernels run.
pub(crate) struct Placement {
    pub name: String,
    pub elem: ScalarType,
    /// A fixed element address (placements with one come first, in address order).
    pub at: Option<i64>,
    pub init: Init,
}

/// Initial scratchpad contents: `data[k]` at element address `addrs[k]` of `core`'s
/// scratchpad.
pub(crate) struct ScratchInit {
    /// The view it fills, for errors.
    pub name: String,
    pub core: usize,
    pub elem: ScalarType,
    pub addrs: Vec<i64>,
    pub data: Vec<f32>,
}

/// A kernel argument.
pub(crate) enum Arg {
    /// The base address of a placed buffer (0 for one not placed).
    Buffer(String),
    /// A value.
    Value(KernelValue),
}

/// A kernel launch.
pub(crate) struct Launch {
    pub func: String,
    pub args: Vec<Arg>,
}

/// What the one run loop executes.
pub(crate) struct Program<'a> {
    pub text: &'a str,
    pub module: &'a Module,
    pub placements: Vec<Placement>,
    pub scratch: Vec<ScratchInit>,
    pub launches: Vec<Launch>,
    /// Whether identical kernels are interpreted once and replayed (timing-only runs of
    /// compiled graphs, whose kernels take buffer addresses alone; see
    /// [`RunOptions::reuse_kernels`]).
    pub reuse: bool,
}

/// The run loop: builds the simulator, wires progress, places the buffers, launches the
/// kernels in order, schedules the recorded tasks and hands the finished simulation to
/// `finish` (which reads the buffers it wants).
pub(crate) fn execute<R>(
    program: Program<'_>,
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
    finish: impl FnOnce(&mut Simulator<'_>, &Schedule) -> Result<R, DriverError>,
) -> Result<(R, Schedule), DriverError> {
    let machine = &options.machine;
    // Shared by the simulator's hook and the scheduler's, which never run at once.
    let progress = RefCell::new(progress);
    let mut sim = if options.timing_only {
        Simulator::new_timing_only(machine, options.limits.clone())
    } else {
        Simulator::new(machine, options.limits.clone())
    };
    let total: u64 = program
        .launches
        .iter()
        .filter_map(|l| sim::estimate_steps(program.module, &l.func))
        .sum();
    sim.set_progress_total(total.max(1));
    sim.set_progress(
        Box::new(|steps, total| (*progress.borrow_mut())(Progress::Execute { steps, total })),
        PROGRESS_EVERY_STEPS,
    );
    sim.set_mask_out_of_bounds(options.out_of_bounds == crate::OutOfBounds::Mask);
    if options.timing_only {
        // A large model's tasks fit in memory one launch at a time, not all at once.
        sim.schedule_each_launch()
            .map_err(|e| DriverError::new(Stage::Simulate, e.to_string()))?;
    }
    let mut bases: BTreeMap<String, i64> = BTreeMap::new();
    let lens: BTreeMap<&str, (ScalarType, usize)> = program
        .placements
        .iter()
        .map(|p| {
            let len = match &p.init {
                Init::Data(d) => d.len(),
                Init::Reserve(n) => *n,
            };
            (p.name.as_str(), (p.elem, len))
        })
        .collect();
    let keys = if program.reuse {
        launch_keys(&program, &lens)
    } else {
        Vec::new()
    };
    for p in program.placements {
        let base = match (p.init, p.at) {
            (Init::Data(data), Some(at)) => sim.alloc_at(&p.name, p.elem, at, data),
            (Init::Reserve(n), Some(at)) => sim.reserve_at(&p.name, p.elem, at, n),
            (Init::Data(data), None) => sim.alloc(&p.name, p.elem, data),
            (Init::Reserve(n), None) => sim.reserve(&p.name, p.elem, n),
        }
        .map_err(|e| DriverError::new(Stage::Simulate, e.to_string()))?;
        bases.insert(p.name, base);
    }
    for s in &program.scratch {
        sim.init_scratchpad(s.core, s.elem, &s.addrs, &s.data)
            .map_err(|e| {
                DriverError::new(
                    Stage::Simulate,
                    format!("initial contents of scratchpad view '%{}': {e}", s.name),
                )
            })?;
    }
    let lines = LineLookup::new(program.text);
    // The first launch of each kernel key, and its function's header line.
    let mut first: std::collections::HashMap<&LaunchKey, (usize, u32)> =
        std::collections::HashMap::new();
    for (i, l) in program.launches.iter().enumerate() {
        if let Some(Some(key)) = keys.get(i) {
            match first.get(key) {
                Some(&(j, line)) => {
                    let shift = i64::from(key.line) - i64::from(line);
                    sim.replay_launch(j, &l.func, shift)
                        .map_err(|e| DriverError::from_sim(&l.func, e))?;
                    continue;
                }
                None => {
                    first.insert(key, (i, key.line));
                }
            }
        }
        let args: Vec<KernelValue> = l
            .args
            .iter()
            .map(|a| match a {
                Arg::Buffer(name) => KernelValue::Int(bases.get(name).copied().unwrap_or(0)),
                Arg::Value(v) => v.clone(),
            })
            .collect();
        sim.launch_values(program.module, &lines, &l.func, &args)
            .map_err(|e| DriverError::from_sim(&l.func, e))?;
    }
    sim::release_pooled_buffers();
    let sched = match sim.take_schedule() {
        Some(sched) => {
            let n = sched.event_count() as u64;
            (*progress.borrow_mut())(Progress::Schedule { done: n, total: n });
            sched
        }
        None => {
            let plan = sim
                .launch_plan()
                .map_err(|e| DriverError::new(Stage::Simulate, format!("timing: {e}")))?;
            schedule_launches(
                machine,
                sim.tasks(),
                &plan,
                &Limits::sized_for(sim.tasks()),
                &mut |d, t| {
                    (*progress.borrow_mut())(Progress::Schedule {
                        done: d as u64,
                        total: t as u64,
                    })
                },
            )
            .map_err(|e| DriverError::new(Stage::Simulate, format!("timing: {e}")))?
        }
    };
    let r = finish(&mut sim, &sched)?;
    Ok((r, sched))
}

/// What makes two launches record the same tasks: the kernel's text up to names, and
/// the element type and length of each buffer it is given. `line` (the function's
/// header line) is not part of the key; it places the replayed tasks' lines.
#[derive(Debug)]
pub(crate) struct LaunchKey {
    text: String,
    buffers: Vec<(ScalarType, usize)>,
    line: u32,
}

impl PartialEq for LaunchKey {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text && self.buffers == other.buffers
    }
}

impl Eq for LaunchKey {}

impl std::hash::Hash for LaunchKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.text.hash(state);
        self.buffers.hash(state);
    }
}

/// The key of each launch, `None` for one that cannot be replayed (an argument that is
/// not a placed buffer, or a function missing from the module).
fn launch_keys(
    program: &Program<'_>,
    lens: &BTreeMap<&str, (ScalarType, usize)>,
) -> Vec<Option<LaunchKey>> {
    let text = program.text;
    let lines = LineLookup::new(text);
    // Each function's text: from its header to the next function's header.
    let funcs = &program.module.funcs;
    let mut texts: std::collections::HashMap<&str, (String, u32)> =
        std::collections::HashMap::new();
    for (k, f) in funcs.iter().enumerate() {
        let start = f.span.start as usize;
        let end = funcs
            .get(k + 1)
            .map_or(text.len(), |g| g.span.start as usize);
        let Some(body) = text.get(start..end) else {
            continue;
        };
        texts.insert(
            f.name.as_str(),
            (canonical_function(body, &f.name), lines.line(f.span.start)),
        );
    }
    program
        .launches
        .iter()
        .map(|l| {
            let (text, line) = texts.get(l.func.as_str())?;
            let buffers = l
                .args
                .iter()
                .map(|a| match a {
                    Arg::Buffer(name) => lens.get(name.as_str()).copied(),
                    Arg::Value(_) => None,
                })
                .collect::<Option<Vec<_>>>()?;
            Some(LaunchKey {
                text: text.clone(),
                buffers,
                line: *line,
            })
        })
        .collect()
}

/// A function's text with its own name removed and its SSA names numbered in order of
/// first appearance, so functions that differ only in names compare equal. Comment lines
/// become a bare `//` (keeping every op on the same line relative to the header) and
/// trailing comments and blank lines are dropped.
fn canonical_function(body: &str, name: &str) -> String {
    let mut names: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out = String::with_capacity(body.len());
    let own = format!("@{name}(");
    for (n, line) in body.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") || trimmed.is_empty() {
            out.push_str("//\n");
            continue;
        }
        let line = if n == 0 {
            std::borrow::Cow::Owned(line.replacen(&own, "@(", 1))
        } else {
            std::borrow::Cow::Borrowed(line)
        };
        let mut rest: &str = &line;
        while let Some(at) = rest.find('%') {
            out.push_str(&rest[..=at]);
            let after = &rest[at + 1..];
            let len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.'))
                .unwrap_or(after.len());
            let ident = &after[..len];
            if !ident.is_empty() {
                let id = match names.get(ident) {
                    Some(id) => *id,
                    None => {
                        let id = names.len();
                        names.insert(ident.to_string(), id);
                        id
                    }
                };
                out.push_str(&id.to_string());
            }
            rest = &after[len..];
        }
        out.push_str(rest);
        out.push('\n');
    }
    while out.ends_with("//\n") {
        out.truncate(out.len() - 3);
    }
    out
}

/// Fills a run result from a finished simulation.
pub(crate) fn result(
    sim: &Simulator<'_>,
    sched: &Schedule,
    options: &RunOptions,
    outputs: Option<Vec<OutputCheck>>,
) -> RunResult {
    let machine = &options.machine;
    let checked = outputs.is_some();
    let outputs = outputs.unwrap_or_default();
    let (events, events_total) = event_views(machine, sched, crate::EVENT_VIEW_LIMIT);
    RunResult {
        machine: MachineView::of(machine),
        total_cycles: sched.total_cycles,
        timing_only: options.timing_only,
        outputs_checked: checked,
        passed: checked && outputs.iter().all(|o| o.passed),
        outputs,
        expected: Vec::new(),
        output_values: BTreeMap::new(),
        assumptions: sim.assumptions(),
        events,
        events_total,
        summary: sim::trace::summarize(machine, sched).into(),
        steps: sim.steps(),
        functions: Vec::new(),
        buffers: Vec::new(),
        warnings: Vec::new(),
        launch_peak_bytes: sim.launch_peak_bytes().to_vec(),
        roofline: crate::Roofline::default(),
        layers: Vec::new(),
        padding: Vec::new(),
        paged: Vec::new(),
        latency_model: crate::LatencyModelReport::default(),
        work: sim.work_counts().to_vec(),
        masked_points: (options.out_of_bounds == crate::OutOfBounds::Mask)
            .then(|| sim.masked_points()),
    }
}

/// Checks the values the user expects against the graph's outputs.
pub(crate) fn check_expected(
    graph: &Graph,
    expected: &BTreeMap<String, Tensor>,
) -> Result<(), DriverError> {
    if expected.is_empty() {
        return Ok(());
    }
    let types = graph
        .infer_types()
        .map_err(|e| DriverError::from_graph("", e, Stage::Simulate))?;
    for (name, t) in expected {
        let ty = graph
            .outputs
            .iter()
            .find(|o| *o == name)
            .and_then(|o| types.get(o))
            .ok_or_else(|| {
                DriverError::new(
                    Stage::Simulate,
                    format!(
                        "the graph has no output named '{name}'{}",
                        graph::did_you_mean(
                            name,
                            &graph.outputs.iter().map(String::as_str).collect::<Vec<_>>()
                        )
                    ),
                )
            })?;
        if ty.shape != t.shape || ty.dtype != t.dtype {
            return Err(DriverError::new(
                Stage::Simulate,
                format!(
                    "output '{name}' is {ty}; the expected value given is {}",
                    t.ty()
                ),
            ));
        }
    }
    Ok(())
}

/// Checks given input values against the graph's inputs.
fn check_given_inputs(graph: &Graph, given: &BTreeMap<String, Tensor>) -> Result<(), DriverError> {
    for (name, t) in given {
        match graph.inputs.iter().find(|v| &v.name == name) {
            Some(v) if v.ty.shape == t.shape && v.ty.dtype == t.dtype => {}
            Some(v) => {
                return Err(DriverError::new(
                    Stage::Simulate,
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
                    Stage::Simulate,
                    format!("the graph has no input named '{name}'"),
                ))
            }
        }
    }
    Ok(())
}

/// Simulates a compiled graph: host tensors are packed into their device layouts in DRAM,
/// the kernels run in order, and every graph output is unpacked and compared with the
/// reference evaluator.
pub(crate) fn simulate_compilation(
    c: &compiler::Compilation,
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(RunResult, Schedule), DriverError> {
    let (module, text) = ktir_to_run(c, c.ktir_module.clone(), None)?;
    simulate_mapped(c, &module, &text, options, progress, &mut BTreeMap::new())
        .map(|((r, _), s)| (r, s))
}

/// The KTIR a compiled graph runs, and its text. An edited module is an input: it is
/// parsed and verified. Otherwise the compiler's tree runs as it is, its spans set to the
/// lines of the text printed from it, so events name the lines the page shows; text a
/// caller put in place of the printed module is parsed like an edited one.
fn ktir_to_run(
    c: &compiler::Compilation,
    tree: Option<Module>,
    edited: Option<&str>,
) -> Result<(Module, String), DriverError> {
    let text = match (edited, tree) {
        (Some(text), _) => text,
        (None, Some(mut module)) => {
            let text = ktir::print_assigning_spans(&mut module);
            match c.ktir.as_deref() {
                Some(given) if given != text => given,
                _ => return Ok((module, text)),
            }
        }
        (None, None) => c.ktir.as_deref().ok_or_else(|| {
            DriverError::new(
                Stage::Simulate,
                "the compilation stopped before the ktir pass",
            )
        })?,
    };
    match ktir::check(text) {
        Ok((m, _)) => Ok((m, text.to_string())),
        Err(diags) => Err(DriverError::from_ktir(
            format!(
                "the lowered KTIR does not verify:\n{}",
                ktir::render_diagnostics("ktir", &diags)
            ),
            None,
            &diags,
        )),
    }
}

/// [`simulate_compilation`] of `module` (printed as `text`), also returning the source map
/// of the device ops and kernels (its nodes left empty). `held` receives a summary of each
/// initializer's values when the run materialises them (not timing-only).
fn simulate_mapped(
    c: &compiler::Compilation,
    module: &Module,
    text: &str,
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
    held: &mut BTreeMap<String, ValueSummary>,
) -> Result<((RunResult, SourceMap), Schedule), DriverError> {
    check_given_inputs(&c.graph, &options.inputs)?;
    check_expected(&c.graph, &options.expected)?;
    check_device_memory(c, options)?;
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
                    Stage::Simulate,
                    format!("{e}; run it timing-only"),
                ));
            }
        }
        let mut inputs = graph::random_inputs(&c.graph, options.seed)
            .map_err(|e| DriverError::from_graph("", e, Stage::Simulate))?;
        inputs.extend(options.inputs.clone());
        let mut reference = graph::evaluate(&c.graph, &inputs).map_err(|e| {
            let mut err = DriverError::from_graph("", e, Stage::Simulate);
            err.message = format!("reference evaluator: {}", err.message);
            err
        })?;
        // The evaluator returns the initializers it materialised: take them from there
        // rather than generating every weight a second time. Only weights and inputs are
        // placed in DRAM; intermediate tensors start zeroed. Past this point the reference
        // is read for the outputs only, so a weight that is not an output moves out of it
        // rather than being copied.
        let mut values: BTreeMap<String, Tensor> = BTreeMap::new();
        for init in &c.graph.initializers {
            let missing = || {
                DriverError::new(
                    Stage::Simulate,
                    format!("the reference has no value for initializer '{}'", init.name),
                )
            };
            let t = if c.graph.outputs.contains(&init.name) {
                reference.get(&init.name).cloned().ok_or_else(missing)?
            } else {
                reference.remove(&init.name).ok_or_else(missing)?
            };
            held.insert(init.name.clone(), ValueSummary::of(&t.data));
            values.insert(init.name.clone(), t);
        }
        values.extend(inputs);
        (values, Some(reference))
    };

    let kernels = compiler::lower_ktir::kernels(c);
    let mut placements = Vec::new();
    let mut placed = std::collections::BTreeSet::new();
    for k in &kernels {
        // A view's readers take the buffer it shares.
        for t in k.args.iter().map(|t| c.buffer_of(t)) {
            if !placed.insert(t.to_string()) {
                continue;
            }
            let layout = c.layouts.get(t).ok_or_else(|| {
                DriverError::new(Stage::Simulate, format!("tensor '{t}' has no layout"))
            })?;
            placements.push(Placement {
                name: t.to_string(),
                elem: ktir_elem(layout.dtype),
                at: None,
                init: match values.get(t) {
                    Some(host) => Init::Data(layout.pack(&host.data)),
                    None => Init::Reserve(layout.device_elems()),
                },
            });
        }
    }
    let launches = kernels
        .iter()
        .map(|k| Launch {
            func: k.func.clone(),
            args: k
                .args
                .iter()
                .map(|t| Arg::Buffer(c.buffer_of(t).to_string()))
                .collect(),
        })
        .collect();
    let program = Program {
        text,
        module,
        placements,
        scratch: Vec::new(),
        launches,
        reuse: options.timing_only && options.reuse_kernels,
    };
    execute(program, options, progress, |sim, sched| {
        let mut outputs = Vec::new();
        let mut expected = Vec::new();
        let mut values = BTreeMap::new();
        for name in &c.graph.outputs {
            let (Some(buf), Some(layout)) = (sim.buffer(name), c.layouts.get(name)) else {
                return Err(DriverError::new(
                    Stage::Simulate,
                    format!("output '{name}' was not produced by any kernel"),
                ));
            };
            if let Some(reference) = &reference {
                let want = reference.get(name).ok_or_else(|| {
                    DriverError::new(
                        Stage::Simulate,
                        format!("output '{name}' was not produced by any kernel"),
                    )
                })?;
                let got = layout.unpack(&buf.data);
                outputs.push(compare(name, want, &got));
                if let Some(user) = options.expected.get(name) {
                    expected.push(compare(name, user, &got));
                }
                let value = Tensor {
                    dtype: want.dtype,
                    shape: want.shape.clone(),
                    data: got,
                };
                values.insert(name.clone(), value);
            }
        }
        let mut r = result(sim, sched, options, reference.map(|_| outputs));
        r.passed &= expected.iter().all(|o| o.passed);
        r.expected = expected;
        r.output_values = values;
        let mut kernels = kernel_links(module, text, &r.events);
        let ops = op_links(c, &mut kernels);
        let map = SourceMap {
            nodes: Vec::new(),
            ops,
            kernels,
        };
        Ok((r, map))
    })
}

/// Compiles a graph through every pass and simulates it.
/// PagedAttention schedules (block tables, sequence lengths) that the user gives as
/// input values are checked before anything compiles, so that a table pointing outside
/// the cache, a length beyond its pages or a page two sequences write is an error naming
/// the node, the sequence and the page. Schedules fixed in the graph were checked when it
/// loaded.
fn check_given_schedules(
    graph: &Graph,
    types: &BTreeMap<String, graph::TensorType>,
    given: &BTreeMap<String, Tensor>,
) -> Result<(), DriverError> {
    for node in graph.nodes.iter().filter(|n| n.op == "PagedAttention") {
        let name = |i: usize| node.inputs.get(i).map(String::as_str).unwrap_or("");
        if ![5, 6, 7].iter().any(|&i| given.contains_key(name(i))) {
            continue;
        }
        let values = |i: usize| -> Option<Vec<f32>> {
            if let Some(t) = given.get(name(i)) {
                return Some(t.data.clone());
            }
            let init = graph.initializers.iter().find(|t| t.name == name(i))?;
            match &init.init {
                graph::InitSpec::Data(d) => Some(d.clone()),
                _ => None,
            }
        };
        let (Some(tables), Some(lens)) = (values(5), values(6)) else {
            continue;
        };
        let packed = !name(7).is_empty();
        let query_lens = if packed {
            match values(7) {
                Some(q) => Some(q),
                None => continue,
            }
        } else {
            None
        };
        let inputs = if packed { 8 } else { 7 };
        let ts: Option<Vec<&graph::TensorType>> = (0..inputs).map(|i| types.get(name(i))).collect();
        let Some(ts) = ts else { continue };
        let fail = |m: String| {
            DriverError::new(
                Stage::Load,
                format!(
                    "the inputs given for node '{}' (PagedAttention): {m}",
                    node.name
                ),
            )
        };
        let dims = graph::PagedDims::of(&ts).map_err(fail)?;
        graph::check_paged_batch(&dims, &tables, &lens, query_lens.as_deref()).map_err(fail)?;
    }
    Ok(())
}

fn run_graph(
    graph: &Graph,
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
    store: Option<&mut dyn compiler::artifact_cache::ArtifactStore>,
) -> Result<Run, DriverError> {
    let types = graph
        .infer_types()
        .map_err(|e| DriverError::from_graph("", e, Stage::Load))?;
    check_given_schedules(graph, &types, &options.inputs)?;
    let mut compile_options = options.compile.clone();
    compile_options.stop_after = None;
    let mut report = |p| progress(Progress::compile(p));
    let mut artifact = None;
    let (mut c, cache) = match (&options.cache, store) {
        (None, None) => (
            compile_with_progress(graph, &options.machine, &compile_options, &mut report)?,
            None,
        ),
        (None, Some(store)) => {
            let (c, outcome) = crate::compile_with_store(
                graph,
                &options.machine,
                &compile_options,
                &mut report,
                store,
            )?;
            artifact = Some(outcome);
            (c, None)
        }
        (Some(dir), _) => {
            let (c, r) = crate::compile_with_cache_dir(
                graph,
                &options.machine,
                &compile_options,
                &mut report,
                dir,
            )?;
            (c, Some(r))
        }
    };
    progress(Progress::compiled());
    let passes_apart = matches!(
        artifact,
        Some(compiler::artifact_cache::ArtifactOutcome::Hit)
    );
    let padding = std::mem::take(&mut c.padding);
    let paged = crate::page_plans(&c, &padding);
    let tree = c.ktir_module.take();
    let (module, ktir) = ktir_to_run(&c, tree, options.ktir.as_deref())?;
    let mut held = BTreeMap::new();
    let ((mut run, mut source_map), schedule) =
        simulate_mapped(&c, &module, &ktir, options, progress, &mut held)?;
    run.paged = paged;
    source_map.nodes = node_links(&graph.nodes, &mut source_map.ops);
    let view = |name: &String| TensorView {
        name: name.clone(),
        dtype: types
            .get(name)
            .map(|t| t.dtype.name().to_string())
            .unwrap_or_default(),
        shape: types.get(name).map(|t| t.shape.clone()).unwrap_or_default(),
    };
    Ok(Run {
        kind: SourceKind::Graph,
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
            initializers: graph
                .initializers
                .iter()
                .map(|i| InitializerView {
                    name: i.name.clone(),
                    dtype: i.ty.dtype.name().to_string(),
                    shape: i.ty.shape.clone(),
                    values: held.remove(&i.name),
                })
                .collect(),
        },
        // The compilation is done with: move its snapshots rather than copy them. A hit
        // brings no texts but the artifact's own (they wait in the store).
        passes: c
            .snapshots
            .into_iter()
            .map(|s| {
                let apart = passes_apart && !compiler::artifact_cache::text_in_artifact(&s.pass);
                let mut p = PassView::from(s);
                if apart {
                    p.text = None;
                }
                p
            })
            .collect(),
        ktir,
        run,
        source_map,
        schedule,
        padding,
        tp: None,
        cache,
        passes_apart,
        artifact,
    })
}

/// Runs every function of a KTIR module in order.
fn run_ktir_module(
    text: &str,
    file_name: &str,
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Run, DriverError> {
    let ((run, kernels), schedule) =
        crate::ktir_run::run_mapped(text, options, progress).map_err(|e| {
            if file_name.is_empty() {
                e
            } else {
                e.in_file(file_name)
            }
        })?;
    let stem = file_name
        .rsplit_once('.')
        .map(|(s, _)| s)
        .filter(|s| !s.is_empty())
        .unwrap_or(file_name);
    let functions: Vec<String> = run.functions.iter().map(|f| format!("@{f}")).collect();
    Ok(Run {
        kind: SourceKind::Ktir,
        graph: GraphView {
            name: stem.to_string(),
            description: format!("KTIR module: {}", functions.join(", ")),
            inputs: Vec::new(),
            outputs: run
                .buffers
                .iter()
                .map(|(b, _)| TensorView {
                    name: b.name.clone(),
                    dtype: b.elem.clone(),
                    shape: b.shape.clone(),
                })
                .collect(),
            nodes: Vec::new(),
            initializers: Vec::new(),
        },
        passes: Vec::new(),
        passes_apart: false,
        ktir: text.to_string(),
        run,
        source_map: SourceMap {
            kernels,
            ..SourceMap::default()
        },
        schedule,
        padding: Vec::new(),
        tp: None,
        cache: None,
        artifact: None,
    })
}

/// Refuses, before any input, reference or packed buffer is built, a compiled program
/// whose device buffers together exceed the simulator's DRAM limit (`max_dram_elements`,
/// see docs/limits.md), so the limit is the same one the simulator would apply later.
fn check_device_memory(c: &compiler::Compilation, options: &RunOptions) -> Result<(), DriverError> {
    if options.timing_only {
        return Ok(());
    }
    let limit = options.limits.max_dram_elements;
    let mut placed = std::collections::BTreeSet::new();
    let mut total: usize = 0;
    for k in compiler::lower_ktir::kernels(c) {
        for t in k.args.iter().map(|t| c.buffer_of(t).to_string()) {
            let Some(layout) = c.layouts.get(&t) else {
                continue;
            };
            if !placed.insert(t.clone()) {
                continue;
            }
            let n = layout
                .device_size
                .iter()
                .try_fold(1usize, |n, &d| n.checked_mul(d))
                .unwrap_or(usize::MAX);
            total = total.saturating_add(n);
            if total > limit {
                return Err(DriverError::new(
                    Stage::Simulate,
                    format!(
                        "the device buffers need more than {limit} elements of DRAM (max_dram_elements, see docs/limits.md; tensor '{t}' alone takes {n}); run it timing-only"
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_comes_from_the_content() {
        assert_eq!(
            detect_kind(b"  {\"format\": 1}", "x.mlir"),
            SourceKind::Graph
        );
        assert_eq!(
            detect_kind(b"func.func @f() {\n return\n}", "x.json"),
            SourceKind::Ktir
        );
        assert_eq!(detect_kind(b"// comment\nmodule {}", "x"), SourceKind::Ktir);
        assert_eq!(detect_kind(&[0x08, 0x07, 0x12], "x.json"), SourceKind::Onnx);
        assert_eq!(detect_kind(&[0xff, 0xfe], "x"), SourceKind::Onnx);
        assert_eq!(detect_kind(&[0xff, 0xfe], "x.json"), SourceKind::Graph);
        // Content that says nothing: the name decides.
        assert_eq!(detect_kind(b"", "x.onnx"), SourceKind::Onnx);
        assert_eq!(detect_kind(b"", "x.ktir"), SourceKind::Ktir);
        // KTIR by content whatever the extension, a byte order mark or leading text
        // before the first function included.
        assert_eq!(
            detect_kind("\u{feff}func.func @f() {\n return\n}".as_bytes(), "x.ktir"),
            SourceKind::Ktir
        );
        assert_eq!(
            detect_kind(b"  \n#map = affine_map<(d0) -> (d0)>", "kernel.txt"),
            SourceKind::Ktir
        );
        assert_eq!(
            detect_kind(b"x = 1\nfunc.func @f() {}", "x.json"),
            SourceKind::Ktir
        );
        assert_eq!(detect_kind(b"", "x.mlir"), SourceKind::Ktir);
        assert_eq!(detect_kind(b"nonsense", "x"), SourceKind::Graph);
    }

    #[test]
    fn a_graph_run_reports_its_compile_monotone_to_the_end_before_executing() {
        let ex = crate::examples();
        let model = ex.iter().find(|e| e.name == "gelu_mlp").unwrap();
        let mut s = Session::open(model.source.as_bytes(), "model").unwrap();
        let mut seen = Vec::new();
        s.run(&RunOptions::default(), &mut |p| seen.push(p))
            .unwrap();
        let compile: Vec<(&str, u64, u64)> = seen
            .iter()
            .filter_map(|p| match *p {
                Progress::Compile { pass, done, total } => Some((pass, done, total)),
                _ => None,
            })
            .collect();
        let total = compiler::PASS_NAMES.len() as u64 * crate::COMPILE_PASS_WORK;
        assert!(
            compile.iter().all(|&(_, done, t)| t == total && done <= t),
            "{compile:?}"
        );
        assert!(compile.windows(2).all(|w| w[0].1 <= w[1].1), "{compile:?}");
        assert_eq!(
            compile.first().map(|c| (c.0, c.1)),
            Some(("canonicalize", 0))
        );
        assert_eq!(compile.last().map(|c| (c.0, c.1)), Some(("ktir", total)));
        // Every pass is reported, in order, and the ktir pass op by op in between.
        let mut passes: Vec<&str> = compile.iter().map(|c| c.0).collect();
        passes.dedup();
        assert_eq!(passes, compiler::PASS_NAMES);
        let ktir_reports = compile.iter().filter(|c| c.0 == "ktir").count();
        assert!(ktir_reports > 2, "{compile:?}");
        // The compile ends before anything executes.
        let first_other = seen
            .iter()
            .position(|p| !matches!(p, Progress::Compile { .. }));
        let last_compile = seen
            .iter()
            .rposition(|p| matches!(p, Progress::Compile { .. }));
        assert!(
            first_other.is_some() && last_compile < first_other,
            "{seen:?}"
        );
    }

    #[test]
    fn content_that_fits_no_kind_is_a_clear_error() {
        // The extension breaks the tie: a .ktir file is KTIR, whose verifier says more.
        assert_eq!(classify(b"hello", "notes.ktir").unwrap(), SourceKind::Ktir);
        let e = classify(b"hello world", "notes.txt").unwrap_err();
        assert!(e.message.contains("neither a KTIR module"), "{e}");
        assert!(e.message.contains("'hello world'"), "{e}");
        let e = Session::open(&[0xff, 0xfe, 0x00], "blob.bin").unwrap_err();
        assert!(e.message.contains("not an ONNX model"), "{e}");
        let e = Session::open(b"   ", "empty").unwrap_err();
        assert!(e.message.contains("empty"), "{e}");
    }

    #[test]
    fn a_session_runs_graphs_and_ktir_and_traces_without_running_again() {
        let ex = crate::examples();
        let graph = ex.iter().find(|e| e.name == "matmul_add").unwrap();
        let mut s = Session::open(graph.source.as_bytes(), "model").unwrap();
        assert_eq!(s.kind(), SourceKind::Graph);
        assert!(s.trace_json().is_err());
        let mut reports = 0;
        let r = s
            .run(&RunOptions::default(), &mut |_| reports += 1)
            .unwrap();
        assert!(r.run.passed && r.run.outputs_checked);
        assert!(reports > 0);
        let events = r.schedule.event_count();
        let trace = s.trace_json().unwrap();
        assert!(trace.contains("traceEvents"));
        assert!(events > 0);

        let prog = ex.iter().find(|e| e.kind == "ktir").unwrap();
        let mut s = Session::open(prog.source.as_bytes(), prog.name).unwrap();
        assert_eq!(s.kind(), SourceKind::Ktir);
        let r = s.run(&RunOptions::default(), &mut |_| {}).unwrap();
        assert!(!r.run.outputs_checked && !r.run.buffers.is_empty());
        assert!(r.graph.description.starts_with("KTIR module: @"));
        assert_eq!(r.graph.outputs.len(), r.run.buffers.len());
    }

    #[test]
    fn a_graph_run_summarises_the_weights_it_held_and_a_timing_only_run_holds_none() {
        let ex = crate::examples();
        let graph = ex.iter().find(|e| e.name == "matmul_add").unwrap();
        let mut s = Session::open(graph.source.as_bytes(), "model").unwrap();
        let r = s.run(&RunOptions::default(), &mut |_| {}).unwrap();
        assert!(!r.graph.initializers.is_empty());
        for i in &r.graph.initializers {
            let v = i.values.as_ref().expect("a numeric run holds its weights");
            assert!(!i.dtype.is_empty() && !i.shape.is_empty(), "{i:?}");
            assert!(!v.samples.is_empty() && v.samples.len() <= ValueSummary::SAMPLES);
            assert!(v.min <= v.max && f64::from(v.min) <= v.mean && v.mean <= f64::from(v.max));
        }
        let timing = RunOptions {
            timing_only: true,
            ..RunOptions::default()
        };
        let r = s.run(&timing, &mut |_| {}).unwrap();
        assert!(r.graph.initializers.iter().all(|i| i.values.is_none()));
    }

    #[test]
    fn a_value_summary_leaves_nans_out_of_the_range() {
        let v = ValueSummary::of(&[1.0, f32::NAN, -3.0, 5.0]);
        assert_eq!((v.min, v.max, v.mean, v.nans), (-3.0, 5.0, 1.0, 1));
        assert_eq!(v.samples.len(), 4);
        let e = ValueSummary::of(&[]);
        assert_eq!((e.min, e.max, e.mean, e.nans), (0.0, 0.0, 0.0, 0));
        let long: Vec<f32> = (0..100).map(|i| i as f32).collect();
        assert_eq!(ValueSummary::of(&long).samples.len(), ValueSummary::SAMPLES);
    }

    /// Keys of `v` (objects at any depth) that are not camelCase, except the keys of maps
    /// keyed by names (tensors, attributes) and the SDSC bundle, whose field names are its
    /// file format's.
    fn non_camel_keys(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                let named = ["/layouts", "/placements", "/types", "/notes", "/attrs"]
                    .iter()
                    .any(|m| path.ends_with(m));
                for (k, x) in map {
                    let here = format!("{path}/{k}");
                    if here.starts_with("/passes/sdsc/data") {
                        continue;
                    }
                    if !named && (k.contains('_') || k.starts_with(|c: char| c.is_uppercase())) {
                        out.push(here.clone());
                    }
                    non_camel_keys(x, &here, out);
                }
            }
            serde_json::Value::Array(xs) => {
                for (i, x) in xs.iter().enumerate() {
                    // Passes by name, so the SDSC exemption can name its pass.
                    let seg = x
                        .get("name")
                        .and_then(|n| n.as_str())
                        .filter(|_| path == "/passes")
                        .map(str::to_string)
                        .unwrap_or_else(|| i.to_string());
                    non_camel_keys(x, &format!("{path}/{seg}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn everything_the_page_receives_is_camel_case() {
        let ex = crate::examples();
        let ktir = ex.iter().find(|e| e.kind == "ktir").unwrap();
        for e in [ex.iter().find(|e| e.name == "matmul_add").unwrap(), ktir] {
            let mut s = Session::open(e.source.as_bytes(), e.name).unwrap();
            let r = s.run(&RunOptions::default(), &mut |_| {}).unwrap();
            let v = serde_json::to_value(r).unwrap();
            if r.kind.is_graph() {
                let names: Vec<&str> = r.passes.iter().map(|p| p.name.as_str()).collect();
                assert_eq!(names, crate::PASS_NAMES);
                assert!(v["passes"][3]["data"]["divisions"][0]["coresUsed"].is_number());
                assert!(v["passes"][4]["data"]["plan"]["capacityBytes"].is_number());
            }
            let mut bad = Vec::new();
            non_camel_keys(&v, "", &mut bad);
            assert!(bad.is_empty(), "{}: not camelCase: {bad:?}", e.name);
        }
    }

    #[test]
    fn errors_carry_their_location() {
        let e = Session::open(b"{ \"format\": ", "broken.json").unwrap_err();
        assert_eq!(e.stage, Stage::Load);
        assert_eq!(e.file.as_deref(), Some("broken.json"));
        assert!(e.line.is_some() && e.column.is_some(), "{e:?}");

        let bad = "func.func @f() {\n  %x = arith.bogus\n}\n";
        let mut s = Session::open(bad.as_bytes(), "bad.mlir").unwrap();
        let e = s.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
        assert_eq!(e.stage, Stage::Ktir);
        assert_eq!((e.line, e.column), (Some(2), Some(8)));
        assert_eq!(e.file.as_deref(), Some("bad.mlir"));
        assert!(!e.diagnostics.is_empty());
    }
}
