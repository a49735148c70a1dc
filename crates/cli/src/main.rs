//! `spyre`: the playground's pipeline on the command line (compile, run, KTIR tools).
//!
//! A thin shell over the `driver` crate: it parses arguments, reads files and prints what
//! the pipeline returns. No algorithm lives here.

use clap::{Parser, Subcommand, ValueEnum};
use driver::{compiler, ktir, sim, DriverError, PipelineOptions, RunOptions, Session};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "spyre",
    version,
    about = "Spyre Playground: tile compiler, KTIR tools and 32-core ring simulator"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile a model graph and print a pass snapshot or an IR.
    Compile {
        /// Model file (.json or .onnx).
        file: PathBuf,
        /// What to print.
        #[arg(long, value_enum, default_value = "ktir")]
        emit: Emit,
        /// Stop after this pass and print its snapshot.
        #[arg(long)]
        after: Option<String>,
        /// Machine preset (spyre32, tiny4) or a machine description file.
        #[arg(long, default_value = "spyre32")]
        machine: String,
        #[command(flatten)]
        flags: CompileFlags,
        #[command(flatten)]
        tp: TpFlags,
        /// Write the output here instead of standard output (with `--emit sdsc`: a
        /// directory that receives the bundle's files).
        #[arg(short, long)]
        output: Option<PathBuf>,
        #[command(flatten)]
        cache: CacheFlags,
    },
    /// Simulate a model graph (compiled first, outputs compared with the reference) or a
    /// KTIR file (every function in order, buffers found from its memory views).
    Run {
        /// Model file (.json or .onnx) or KTIR file (.mlir).
        file: PathBuf,
        /// Model graphs: values of every graph input, as NAME.npy or ONNX TensorProto .pb
        /// files (an ONNX test_data_set_N directory runs as it is). KTIR files: fill buffer
        /// NAME from NAME.npy in this directory (others get seeded random values).
        #[arg(long)]
        inputs: Option<PathBuf>,
        /// Model graphs: the outputs the user expects (NAME.npy or output_K.pb); the
        /// simulated outputs are compared with them too, at the dtype's tolerance.
        #[arg(long)]
        expected: Option<PathBuf>,
        /// KTIR files: value of a scalar argument, as NAME=VALUE (repeatable); its type comes
        /// from the function signature (index and integers, or floats such as 0.0883).
        #[arg(long = "arg", value_name = "NAME=VALUE")]
        args: Vec<String>,
        /// KTIR files: place buffer NAME at DRAM element address ADDR (repeatable): an
        /// argument buffer, or the buffer the program's views at constant addresses from
        /// ADDR on belong to; its contents come from NAME.npy in --inputs.
        #[arg(long = "place", value_name = "NAME=ADDR")]
        places: Vec<String>,
        /// KTIR files: a JSON manifest of placements, `{"NAME": ADDR, ...}` (merged with
        /// --place, which wins).
        #[arg(long, value_name = "FILE")]
        place_file: Option<PathBuf>,
        /// KTIR files: what a point of an access tile outside its view is: an error (the
        /// default), or masked as the public reference interpreter does (loads read 0,
        /// stores are dropped; the output gives the count).
        #[arg(long, value_enum, default_value = "error")]
        out_of_bounds: OutOfBoundsArg,
        /// Write the simulated graph outputs (KTIR files: every buffer argument) as NAME.npy
        /// into this directory.
        #[arg(long)]
        save_outputs: Option<PathBuf>,
        /// Machine preset (spyre32, tiny4) or a machine description file.
        #[arg(long, default_value = "spyre32")]
        machine: String,
        /// Seed of the random inputs.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Write a Chrome trace (opens in Perfetto and chrome://tracing).
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// Also print the roofline report: per kernel, its work, bytes, lower bound and
        /// achieved cycles, and a whole-program line (`--json` always carries it).
        #[arg(long)]
        roofline: bool,
        /// Timing model to report: `event` (the event-level schedule) or `roofline` (also
        /// the KTIR reference interpreter's per-unit roofline latency model beside it, with
        /// the difference per kernel; `--json` always carries both).
        #[arg(long, value_enum, default_value_t = Timing::Event)]
        timing: Timing,
        /// Compute timing only: no numbers (weights are never materialised, outputs are
        /// not checked), so models too large to run with numbers can be planned.
        #[arg(long)]
        timing_only: bool,
        #[command(flatten)]
        flags: CompileFlags,
        #[command(flatten)]
        tp: TpFlags,
        #[command(flatten)]
        cache: CacheFlags,
    },
    /// Time a model graph end to end (load, reference, compile, simulate) or a KTIR file
    /// (parse, verify, run) several times and print wall times and events per second.
    Bench {
        /// Model file (.json or .onnx) or KTIR file (.mlir).
        file: PathBuf,
        /// Timed runs (after one untimed warm-up run).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Machine preset (spyre32, tiny4) or a machine description file.
        #[arg(long, default_value = "spyre32")]
        machine: String,
        /// Compute timing only (no weights, no reference, no numbers).
        #[arg(long)]
        timing_only: bool,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        flags: CompileFlags,
        #[command(flatten)]
        tp: TpFlags,
        #[command(flatten)]
        cache: CacheFlags,
    },
    /// Show a model graph's inputs, outputs, op counts and parameter count.
    Inspect {
        /// Model file (.json or .onnx).
        file: PathBuf,
    },
    /// KTIR tools.
    Ktir {
        #[command(subcommand)]
        command: KtirCommand,
    },
}

/// Compiler settings shared by `compile`, `run` and `bench` (model graphs only).
#[derive(clap::Args)]
struct CompileFlags {
    /// Scratchpad allocator: greedy, first-fit or best-fit.
    #[arg(long, default_value = "greedy")]
    allocator: String,
    /// Decompose attention as an online-softmax loop over blocks of this many keys
    /// (default: one softmax over all keys).
    #[arg(long, value_name = "KEYS")]
    attention_block: Option<usize>,
    /// Single-buffer every time loop (default: the next block loads while this one
    /// computes), to compare the two regimes.
    #[arg(long)]
    no_double_buffer: bool,
    #[command(flatten)]
    padding: PaddingFlags,
    /// Lower every device op as a kernel of its own (default: runs of elementwise ops on
    /// the same slices are fused into one kernel), to compare the two.
    #[arg(long)]
    no_fuse: bool,
    /// Divide one device op (or graph node) over the cores as given instead of as the cost
    /// model picks, to compare the two: NAME=S1,S2,... with one split per iteration dim,
    /// outermost first, as the work-division snapshot lists them (for example
    /// `layer0.mlp.gate_proj=1,2,2,8`). Repeatable.
    #[arg(long, value_name = "NAME=SPLITS")]
    split: Vec<String>,
}

/// One `--split` value, `NAME=S1,S2,...`, as the op's name and its splits.
fn parse_split(arg: &str) -> Result<(String, Vec<usize>), String> {
    let bad = |why: &str| {
        format!("--split '{arg}': {why}; expected NAME=S1,S2,... (one split per iteration dim)")
    };
    let (name, splits) = arg.rsplit_once('=').ok_or_else(|| bad("no '='"))?;
    if name.is_empty() {
        return Err(bad("no op name before '='"));
    }
    let splits = splits
        .split(',')
        .map(|x| match x.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(bad(&format!("'{x}' is not a positive whole number"))),
        })
        .collect::<Result<Vec<usize>, String>>()?;
    Ok((name.to_string(), splits))
}

impl CompileFlags {
    /// The `--split` values by op name; an op named twice is an error rather than the last
    /// value silently winning.
    fn hints(&self) -> Result<std::collections::BTreeMap<String, Vec<usize>>, String> {
        let mut hints = std::collections::BTreeMap::new();
        for arg in &self.split {
            let (name, splits) = parse_split(arg)?;
            if let Some(first) = hints.insert(name.clone(), splits) {
                return Err(format!(
                    "--split '{arg}': '{name}' was already given ({}); give each op once",
                    first
                        .iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                ));
            }
        }
        Ok(hints)
    }

    fn options(&self) -> Result<compiler::Options, String> {
        Ok(compiler::Options {
            allocator: self
                .allocator
                .parse()
                .map_err(|e: compiler::CompileError| e.to_string())?,
            attention_key_block: self.attention_block,
            double_buffer: !self.no_double_buffer,
            padding: self.padding.rules()?,
            fuse: !self.no_fuse,
            hints: self.hints()?,
            ..Default::default()
        })
    }
}

/// The serving stack's padding and alignment rules whose cost PagedAttention reports
/// (sequences stay ragged; the run prints what the rules would add). Defaults are the
/// public stack's values; 1 means no padding.
#[derive(clap::Args)]
struct PaddingFlags {
    /// Pad each sequence's new (query) tokens to a multiple of this.
    #[arg(long, value_name = "TOKENS", default_value_t = compiler::PaddingRules::PUBLIC.query_align)]
    query_align: usize,
    /// Align each sequence's KV length to a multiple of this.
    #[arg(long, value_name = "TOKENS", default_value_t = compiler::PaddingRules::PUBLIC.kv_align)]
    kv_align: usize,
    /// Align query and KV lengths to this in a decode-only batch (one new token each).
    #[arg(long, value_name = "TOKENS", default_value_t = compiler::PaddingRules::PUBLIC.decode_align)]
    decode_align: usize,
    /// Pad the head size to a multiple of this (a power of two).
    #[arg(long, value_name = "N", default_value_t = compiler::PaddingRules::PUBLIC.head_multiple)]
    head_multiple: usize,
    /// Pad the block (page) size to a multiple of this (a power of two).
    #[arg(long, value_name = "N", default_value_t = compiler::PaddingRules::PUBLIC.block_multiple)]
    block_multiple: usize,
}

impl PaddingFlags {
    fn rules(&self) -> Result<compiler::PaddingRules, String> {
        let rules = compiler::PaddingRules {
            query_align: self.query_align,
            kv_align: self.kv_align,
            decode_align: self.decode_align,
            head_multiple: self.head_multiple,
            block_multiple: self.block_multiple,
        };
        rules
            .check()
            .map_err(|e| format!("--{}", e.trim_start_matches("padding rule ")))?;
        Ok(rules)
    }
}

/// The compile cache, shared by `compile`, `run` and `bench` (model graphs only).
#[derive(clap::Args)]
struct CacheFlags {
    /// Keep compile artifacts in this directory: whole compilations keyed on a SHA-256 of
    /// the graph, options, machine and compiler version (a warm compile runs no pass),
    /// and kernels keyed on their op spec (repeated layers are lowered once). Default:
    /// $SPYRE_CACHE_DIR, else the platform's cache directory. Prints whether the compile
    /// was warm or cold and its time.
    #[arg(long, visible_alias = "cache-dir", value_name = "DIR")]
    cache: Option<PathBuf>,
    /// Compile without the cache.
    #[arg(long, conflicts_with = "cache")]
    no_cache: bool,
}

impl CacheFlags {
    /// The cache directory to use, if any.
    fn dir(&self) -> Option<PathBuf> {
        if self.no_cache {
            return None;
        }
        if let Some(d) = &self.cache {
            return Some(d.clone());
        }
        if let Some(d) = std::env::var_os("SPYRE_CACHE_DIR").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(d));
        }
        // The platform's per-user cache directory (XDG on Linux, Library/Caches on
        // macOS, LocalAppData on Windows), found by `dirs` rather than by hand.
        dirs::cache_dir().map(|d| d.join("spyre-playground"))
    }
}

/// Tensor parallelism over several cards, shared by `compile`, `run` and `bench` (model
/// graphs only).
#[derive(clap::Args)]
struct TpFlags {
    /// Shard the graph Megatron-style over this many cards (1: one card, as without it).
    #[arg(long, default_value_t = 1)]
    tp: usize,
    /// System preset (drawer8, ring4) or a system description file; default: --tp cards
    /// of --machine behind a PCIe switch, with drawer8's links.
    #[arg(long)]
    system: Option<String>,
    /// All-reduce algorithm: auto (the cheaper by the stated cost estimate), ring or tree.
    #[arg(long, default_value = "auto")]
    allreduce: String,
    /// Host cost of one kernel launch, in milliseconds (default: the public 1.6 ms).
    #[arg(long, value_name = "MS")]
    launch_overhead_ms: Option<f64>,
    /// Transformer blocks the host runtime model runs back to back (the layer repeated).
    #[arg(long, default_value_t = 1)]
    blocks: usize,
}

impl TpFlags {
    /// Whether the run goes through the tensor-parallel path.
    fn active(&self) -> bool {
        self.tp != 1 || self.system.is_some()
    }

    fn options(&self, machine: &sim::Machine) -> Result<driver::TpOptions, String> {
        let system = match &self.system {
            None => None,
            Some(spec) => Some(match sim::system::System::preset(spec) {
                Some(s) => s,
                None => {
                    let text = read(Path::new(spec))?;
                    sim::system::System::from_json(&text).map_err(|e| format!("{spec}: {e}"))?
                }
            }),
        };
        let mut runtime = sim::host::RuntimeParams::default();
        if let Some(ms) = self.launch_overhead_ms {
            if !(ms.is_finite() && (0.0..=1e6).contains(&ms)) {
                return Err(format!(
                    "--launch-overhead-ms {ms}: must be between 0 and 1e6"
                ));
            }
            runtime.launch_overhead_cycles = sim::machine::Param::new(
                ms * 1e6 * machine.clock_ghz.value,
                sim::machine::Status::Assumed,
                "set with --launch-overhead-ms",
            );
        }
        if self.blocks == 0 || self.blocks > 1024 {
            return Err(format!(
                "--blocks {}: must be between 1 and 1024",
                self.blocks
            ));
        }
        Ok(driver::TpOptions {
            degree: self.tp,
            system,
            algorithm: self.allreduce.parse()?,
            runtime,
            blocks: self.blocks,
        })
    }
}

/// `--out-of-bounds`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutOfBoundsArg {
    /// A point outside its view stops the run with an error.
    Error,
    /// Loads read 0 there and stores are dropped.
    Mask,
}

/// The KTIR inputs given on the command line: scalar values and placements.
#[derive(clap::Args)]
struct KtirInputFlags {
    /// Value of a scalar argument, as NAME=VALUE (repeatable).
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    args: Vec<String>,
    /// Place buffer NAME at DRAM element address ADDR (repeatable).
    #[arg(long = "place", value_name = "NAME=ADDR")]
    places: Vec<String>,
    /// A JSON manifest of placements, `{"NAME": ADDR, ...}`.
    #[arg(long, value_name = "FILE")]
    place_file: Option<PathBuf>,
}

#[derive(Subcommand)]
enum KtirCommand {
    /// List the buffers, scratchpad views and scalars a run of a KTIR file takes: name,
    /// dtype, shape, address and role (in, out, inout).
    Inputs {
        /// KTIR file.
        file: PathBuf,
        #[command(flatten)]
        given: KtirInputFlags,
        /// Print the list as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Parse and verify KTIR files; diagnostics go to standard error.
    Verify {
        /// KTIR files (.mlir).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print a KTIR file in canonical form.
    Fmt {
        /// KTIR file (.mlir).
        file: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Emit {
    /// The KTIR module.
    Ktir,
    /// The SuperDSC bundle (JSON).
    Sdsc,
    /// Every pass snapshot, in order.
    Snapshots,
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A model file's bytes (ONNX files are binary).
fn read_model(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// ONNX external data read from the model's directory. The loader has checked each
/// location is relative with no `..`; the resolved path must also stay inside the
/// directory (no symbolic link out of it), and the file must hold `offset + length`
/// bytes, checked before reading just that range.
struct ModelDir(PathBuf);

impl driver::graph::ExternalFiles for ModelDir {
    fn read(&self, location: &str, offset: u64, length: u64) -> Result<Vec<u8>, String> {
        use std::io::{Read, Seek, SeekFrom};
        let shown = |e: std::io::Error| format!("external data file '{location}': {e}");
        let dir = self.0.canonicalize().map_err(shown)?;
        let path = dir.join(location).canonicalize().map_err(shown)?;
        if !path.starts_with(&dir) {
            return Err(format!(
                "external data file '{location}' lies outside the model's directory"
            ));
        }
        let mut file = std::fs::File::open(&path).map_err(shown)?;
        let size = file.metadata().map_err(shown)?.len();
        if offset.checked_add(length).is_none_or(|end| end > size) {
            return Err(format!(
                "external data file '{location}' has {size} bytes; the tensor needs bytes {offset} to {offset} + {length}"
            ));
        }
        let n = usize::try_from(length).map_err(|_| format!("{length} bytes is too many"))?;
        file.seek(SeekFrom::Start(offset)).map_err(shown)?;
        let mut out = vec![0u8; n];
        file.read_exact(&mut out).map_err(shown)?;
        Ok(out)
    }
}

/// The model's directory, where its external data files are.
fn model_dir(path: &Path) -> std::sync::Arc<ModelDir> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::sync::Arc::new(ModelDir(dir))
}

/// Loads a model graph, its ONNX external data from the model's directory.
fn load_graph_file(path: &Path) -> Result<driver::graph::Graph, String> {
    driver::load_graph_with_files(&read_model(path)?, &file_name(path), model_dir(path))
        .map_err(derr)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

fn load_machine(spec: &str) -> Result<sim::Machine, String> {
    if sim::Machine::preset(spec).is_some() {
        return driver::machine(spec).map_err(|e| e.to_string());
    }
    let text = read(Path::new(spec))?;
    driver::machine(&text).map_err(|e| format!("{spec}: {e}"))
}

/// The compile cache's warnings and its warm-or-cold line, on standard error.
fn print_cache_report(r: &driver::CacheReport) {
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    eprintln!("{}", r.line());
}

fn derr(e: DriverError) -> String {
    e.to_string()
}

fn write_out(output: &Option<PathBuf>, text: &str) -> Result<(), String> {
    match output {
        Some(p) => std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display())),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Compile {
            file,
            emit,
            after,
            machine,
            flags,
            tp,
            output,
            cache,
        } => {
            let machine = load_machine(&machine)?;
            let graph = load_graph_file(&file)?;
            let mut options = flags.options()?;
            if tp.active() {
                return compile_tensor_parallel(&graph, &machine, &options, &tp, emit, &output);
            }
            // KTIR out needs no pass snapshots, which are most of a large compile's cost.
            options.skip_snapshots = after.is_none() && matches!(emit, Emit::Ktir);
            if let Some(pass) = &after {
                options.stop_after = Some(pass.clone());
                let c = driver::compile(&graph, &machine, &options).map_err(derr)?;
                let snap = c
                    .snapshot(pass)
                    .ok_or_else(|| format!("pass '{pass}' recorded no snapshot"))?;
                write_out(&output, &snap.text)?;
                return Ok(ExitCode::SUCCESS);
            }
            let mut bar = RunProgress::on_stderr(true);
            let cache_dir = cache.dir();
            // A warm compile that only prints KTIR reads the stored module alone.
            if let (Emit::Ktir, Some(dir)) = (emit, &cache_dir) {
                let r = driver::ktir_with_cache_dir(
                    &graph,
                    &machine,
                    &options,
                    &mut |p| bar.update_compile(p),
                    dir,
                );
                bar.finish();
                let (text, report) = r.map_err(derr)?;
                print_cache_report(&report);
                write_out(&output, &text.unwrap_or_default())?;
                return Ok(ExitCode::SUCCESS);
            }
            let (c, report) = match cache_dir {
                None => (
                    driver::compile_with_progress(&graph, &machine, &options, &mut |p| {
                        bar.update_compile(p)
                    }),
                    None,
                ),
                Some(dir) => match driver::compile_with_cache_dir(
                    &graph,
                    &machine,
                    &options,
                    &mut |p| bar.update_compile(p),
                    &dir,
                ) {
                    Ok((c, r)) => (Ok(c), Some(r)),
                    Err(e) => (Err(e), None),
                },
            };
            bar.finish();
            if let Some(r) = &report {
                print_cache_report(r);
            }
            let c = c.map_err(derr)?;
            if let (Emit::Sdsc, Some(dir)) = (emit, &output) {
                let bundle = c
                    .sdsc
                    .as_ref()
                    .ok_or_else(|| "the compilation produced no SDSC bundle".to_string())?;
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                let files = bundle.files();
                for (name, text) in &files {
                    let path = dir.join(name);
                    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
                }
                eprintln!("wrote {} files to {}", files.len(), dir.display());
                return Ok(ExitCode::SUCCESS);
            }
            let text = match emit {
                Emit::Ktir => c.ktir.clone().unwrap_or_default(),
                Emit::Sdsc => c
                    .snapshot("sdsc")
                    .map(|s| s.text.clone())
                    .unwrap_or_default(),
                Emit::Snapshots => c
                    .snapshots
                    .iter()
                    .map(|s| format!("==== {} ({}) ====\n{}\n", s.pass, s.title, s.text))
                    .collect(),
            };
            write_out(&output, &text)?;
            // The process ends here: freeing a large compilation piece by piece would cost
            // a fifth of the compile again.
            std::mem::forget(c);
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            file,
            inputs,
            expected,
            args,
            places,
            place_file,
            out_of_bounds,
            save_outputs,
            machine,
            seed,
            trace,
            json,
            roofline,
            timing,
            timing_only,
            flags,
            tp,
            cache,
        } => {
            let started = Instant::now();
            let source = read_model(&file)?;
            let name = file_name(&file);
            let mut session =
                Session::open_with_files(&source, &name, model_dir(&file)).map_err(derr)?;
            if !session.kind().is_graph() {
                if expected.is_some() {
                    return Err(
                        "--expected applies to model graphs; a KTIR run has no reference outputs"
                            .into(),
                    );
                }
                return run_ktir_file(
                    session,
                    RunKtir {
                        file,
                        inputs,
                        given: KtirInputFlags {
                            args,
                            places,
                            place_file,
                        },
                        out_of_bounds,
                        save_outputs,
                        machine,
                        seed,
                        trace,
                        json,
                        roofline,
                        timing,
                        timing_only,
                        started,
                    },
                );
            }
            if !args.is_empty()
                || !places.is_empty()
                || place_file.is_some()
                || out_of_bounds != OutOfBoundsArg::Error
            {
                return Err(
                    "--arg, --place, --place-file and --out-of-bounds apply to KTIR files".into(),
                );
            }
            if timing_only && (save_outputs.is_some() || expected.is_some()) {
                return Err(
                    "--save-outputs and --expected need output values, which a --timing-only run does not compute"
                        .into(),
                );
            }
            let mut options = RunOptions {
                machine: load_machine(&machine)?,
                seed,
                timing_only,
                compile: compiler::Options {
                    // A run prints results, never the pass snapshots, whose texts (the SDSC
                    // bundle's JSON above all) are a large share of a big model's compile.
                    skip_snapshots: true,
                    ..flags.options()?
                },
                cache: cache.dir(),
                ..RunOptions::default()
            };
            if let Some(dir) = &inputs {
                let files = read_tensor_files(dir)?;
                options.inputs = session
                    .read_inputs(&files)
                    .map_err(|e| format!("--inputs {}: {}", dir.display(), e.message))?;
            }
            if let Some(dir) = &expected {
                let files = read_tensor_files(dir)?;
                options.expected = session
                    .read_expected(&files)
                    .map_err(|e| format!("--expected {}: {}", dir.display(), e.message))?;
            }
            if tp.active() {
                let graph = session.graph().ok_or("--tp takes a model graph")?;
                let tpo = tp.options(&options.machine)?;
                // Every card takes the inputs as the one-card program would; the outputs
                // are gathered from the cards after the last all-reduce.
                let r = driver::run_tensor_parallel(graph, &options, &tpo, &mut |_| {})
                    .map_err(derr)?;
                if let Some(path) = &trace {
                    let text = driver::tp_trace_json(&r, options.machine.clock_ghz.value);
                    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
                }
                if let Some(dir) = &save_outputs {
                    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                    for (name, bytes) in driver::tp_output_npy(graph, &r).map_err(derr)? {
                        let path = dir.join(name);
                        std::fs::write(&path, bytes)
                            .map_err(|e| format!("{}: {e}", path.display()))?;
                    }
                }
                if json {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?
                    );
                } else {
                    print!("{}", driver::render_tensor_parallel(&r));
                    println!("{}", wall_line(started.elapsed()));
                }
                return Ok(if r.outputs_checked && !r.passed {
                    ExitCode::FAILURE
                } else {
                    ExitCode::SUCCESS
                });
            }
            let mut bar = RunProgress::on_stderr(!json);
            let run = session.run(&options, &mut |p| bar.update(p)).map(|_| ());
            bar.finish();
            run.map_err(derr)?;
            if let Some(path) = &trace {
                let text = session.trace_json().map_err(derr)?;
                std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            if let Some(dir) = &save_outputs {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                for (name, bytes) in session.output_npy().map_err(derr)? {
                    let path = dir.join(name);
                    std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
                }
            }
            let last = session.last_run().ok_or("the run left no result")?;
            if let Some(r) = &last.cache {
                for w in &r.warnings {
                    eprintln!("warning: {w}");
                }
            }
            let result = &last.run;
            let wall = started.elapsed();
            if json {
                println!(
                    "{}",
                    json_with_wall_time(result, wall, Some(options.compile.padding))?
                );
            } else {
                let s = &result.summary;
                println!("machine        {}", result.machine.name);
                println!(
                    "cycles         {:.0} ({:.3} us at {} GHz, assumed clock)",
                    result.total_cycles, s.time_us, s.clock_ghz
                );
                println!("bottleneck     {:?}: {}", s.bottleneck, s.bottleneck_reason);
                println!("ktir ops run   {}", result.steps);
                println!("events         {}", result.events_total);
                println!("{}", wall_line(wall));
                if let Some(r) = &last.cache {
                    println!("{}", r.line());
                }
                if result.timing_only {
                    println!("{TIMING_ONLY_NOTE}");
                }
                for a in &result.assumptions {
                    println!("assumption     {a}");
                }
                for o in &result.outputs {
                    let special = if o.special_matches > 0 {
                        format!(", {} matching inf/NaN", o.special_matches)
                    } else {
                        String::new()
                    };
                    println!(
                        "output {:<8} {} {:?}: max abs error {:.3e}, max rel error {:.3e} (atol {:e}, rtol {:e}{special}) {}",
                        o.name,
                        o.dtype,
                        o.shape,
                        o.max_abs_error,
                        o.max_rel_error,
                        o.atol,
                        o.rtol,
                        if o.passed { "PASS" } else { "FAIL" }
                    );
                }
                for o in &result.expected {
                    println!(
                        "expected {:<6} {} {:?}: max abs error {:.3e}, max rel error {:.3e} (atol {:e}, rtol {:e}) {}",
                        o.name,
                        o.dtype,
                        o.shape,
                        o.max_abs_error,
                        o.max_rel_error,
                        o.atol,
                        o.rtol,
                        if o.passed { "PASS" } else { "FAIL" }
                    );
                }
                if roofline {
                    print!("{}", driver::render_roofline(&result.roofline));
                }
                if timing == Timing::Roofline {
                    print!("{}", driver::render_latency_model(&result.latency_model));
                }
                if result.timing_only && !result.layers.is_empty() {
                    print!("{}", driver::render_layers(&result.layers));
                }
                print!("{}", driver::render_padding(&result.padding));
            }
            Ok(if result.passed || !result.outputs_checked {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Bench {
            file,
            runs,
            machine,
            timing_only,
            json,
            flags,
            tp,
            cache,
        } => {
            if runs > MAX_BENCH_RUNS {
                return Err(format!(
                    "--runs {runs}: at most {MAX_BENCH_RUNS} timed runs (see docs/limits.md)"
                ));
            }
            let options = PipelineOptions {
                machine: load_machine(&machine)?,
                timing_only,
                compile: flags.options()?,
                cache: cache.dir(),
                ..PipelineOptions::default()
            };
            let source = read_model(&file)?;
            let name = file_name(&file);
            if tp.active() {
                let graph = load_graph_file(&file)?;
                let tpo = tp.options(&options.machine)?;
                let once = || {
                    driver::run_tensor_parallel(&graph, &options, &tpo, &mut |_| {}).map_err(derr)
                };
                let mut ms = Vec::new();
                let first = once()?;
                for _ in 0..runs {
                    let t = Instant::now();
                    std::hint::black_box(once()?);
                    ms.push(t.elapsed().as_secs_f64() * 1e3);
                }
                if json {
                    let v = serde_json::json!({ "run": first, "wallMs": ms });
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
                    );
                } else {
                    print!("{}", driver::render_tensor_parallel(&first));
                    println!(
                        "wall ms per run {:?}",
                        ms.iter().map(|m| m.round()).collect::<Vec<_>>()
                    );
                }
                return Ok(ExitCode::SUCCESS);
            }
            let ktir = !driver::detect_kind(&source, &name).is_graph();
            let figures = if ktir {
                let text = String::from_utf8(source)
                    .map_err(|_| format!("{}: not UTF-8 text", file.display()))?;
                bench_ktir(&text, &name, &options, runs)?
            } else {
                bench(&source, &name, model_dir(&file), &options, runs)?
            };
            if json {
                let v = serde_json::json!({
                    "file": figures.file,
                    "timingOnly": figures.timing_only,
                    "events": figures.events,
                    "totalCycles": figures.total_cycles,
                    "ms": figures.ms,
                    "medianMs": figures.median_ms,
                    "medianJsonMs": figures.median_json_ms,
                    "eventsPerSecond": figures.events_per_second,
                    "paddingRules": (!ktir).then_some(options.compile.padding),
                });
                println!(
                    "{}",
                    serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
                );
            } else {
                println!(
                    "{}{name}",
                    if ktir {
                        "ktir file      "
                    } else {
                        "model          "
                    }
                );
                println!(
                    "mode           {}",
                    match (timing_only, ktir) {
                        (true, _) => "timing only",
                        (false, true) => "numbers (parse, verify, run)",
                        (false, false) => "numbers (reference, compile, simulate)",
                    }
                );
                println!("events         {}", figures.events);
                println!("cycles         {:.0}", figures.total_cycles);
                let ms: Vec<String> = figures.ms.iter().map(|m| format!("{m:.1}")).collect();
                println!("wall ms        {}", ms.join(" "));
                println!(
                    "median         {:.1} ms, {:.0} events/s",
                    figures.median_ms, figures.events_per_second
                );
                println!(
                    "result as JSON {:.1} ms more (median)",
                    figures.median_json_ms
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Inspect { file } => {
            let graph = load_graph_file(&file)?;
            print!("{}", driver::inspect(&graph).map_err(derr)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Ktir { command } => match command {
            KtirCommand::Inputs { file, given, json } => {
                let text = read(&file)?;
                let name = file.display().to_string();
                let mut options = RunOptions::default();
                given.apply(&mut options)?;
                let inputs = driver::ktir_inputs(&text, &options).map_err(|e| {
                    if e.diagnostics.is_empty() {
                        format!("{name}: {e}")
                    } else {
                        e.message
                            .lines()
                            .map(|l| format!("{name}:{l}"))
                            .collect::<Vec<_>>()
                            .join("\n")
                    }
                })?;
                if json {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&inputs).map_err(|e| e.to_string())?
                    );
                } else {
                    print!("{}", render_inputs(&inputs));
                }
                Ok(ExitCode::SUCCESS)
            }
            KtirCommand::Verify { files } => {
                let mut ok = true;
                for f in &files {
                    let text = read(f)?;
                    let name = f.display().to_string();
                    match ktir::check(&text) {
                        Ok((_, warnings)) => {
                            eprint!("{}", ktir::render_diagnostics(&name, &warnings));
                        }
                        Err(diags) => {
                            ok = false;
                            eprint!("{}", ktir::render_diagnostics(&name, &diags));
                        }
                    }
                }
                Ok(if ok {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                })
            }
            KtirCommand::Fmt { file } => {
                let text = read(&file)?;
                let (module, diags) = ktir::parse(&text);
                if diags.iter().any(ktir::Diagnostic::is_error) {
                    eprint!(
                        "{}",
                        ktir::render_diagnostics(&file.display().to_string(), &diags)
                    );
                    return Ok(ExitCode::FAILURE);
                }
                print!("{}", ktir::print(&module));
                Ok(ExitCode::SUCCESS)
            }
        },
    }
}

/// How long a run goes before its progress bar appears: quick runs print nothing.
const PROGRESS_DELAY: Duration = Duration::from_millis(400);

/// The progress bar of `spyre run` on standard error, fed by the driver's progress
/// reports: operations executed against the static estimate, then tasks scheduled. It is
/// drawn only when standard error is a terminal and the run has lasted
/// [`PROGRESS_DELAY`], and is cleared when the run ends, so pipes, logs and `--json`
/// output never see it.
struct RunProgress {
    bar: indicatif::ProgressBar,
    /// Whether to draw at all (standard error is a terminal and output is not JSON).
    enabled: bool,
    started: Instant,
    /// The phase shown, to restyle the bar when the next one starts.
    phase: Option<Phase>,
    /// The compile pass shown (compiles only).
    pass: Option<&'static str>,
}

impl RunProgress {
    /// A bar drawn on standard error when `wanted` and standard error is a terminal.
    fn on_stderr(wanted: bool) -> RunProgress {
        RunProgress::new(wanted && std::io::stderr().is_terminal())
    }

    fn new(enabled: bool) -> RunProgress {
        // Hidden until the run proves long; see `update`.
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(1),
            indicatif::ProgressDrawTarget::hidden(),
        );
        RunProgress {
            bar,
            enabled,
            started: Instant::now(),
            phase: None,
            pass: None,
        }
    }

    /// A compile's progress: the pass running and, while lowering, kernels done.
    fn update_compile(&mut self, p: compiler::CompileProgress) {
        if self.pass != Some(p.pass) {
            self.pass = Some(p.pass);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{msg:>12} [{wide_bar}] {pos}/{len} ops")
            {
                self.bar.set_style(style.progress_chars("=> "));
            }
            self.bar.set_message(p.pass);
        }
        self.bar.set_length(p.total.max(p.done) as u64);
        self.bar.set_position(p.done as u64);
        if self.enabled && self.bar.is_hidden() && self.started.elapsed() >= PROGRESS_DELAY {
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
    }

    fn update(&mut self, p: driver::Progress) {
        let (phase, done, total) = match p {
            driver::Progress::Compile { done, total, .. } => (Phase::Compile, done, total),
            driver::Progress::Execute { steps, total } => (Phase::Execute, steps, total),
            driver::Progress::Schedule { done, total } => (Phase::Schedule, done, total),
        };
        if self.phase != Some(phase) {
            self.phase = Some(phase);
            // Counts of the previous phase must not show against this one's total.
            self.bar.set_position(0);
            self.bar.set_length(total.max(done));
            let (template, message) = match phase {
                Phase::Compile => ("{msg:>10} [{wide_bar}] {percent}%", "compiling"),
                Phase::Execute => (
                    "{msg:>10} [{wide_bar}] {pos}/{len} ops (estimated)",
                    "executing",
                ),
                Phase::Schedule => ("{msg:>10} [{wide_bar}] {pos}/{len} tasks", "scheduling"),
            };
            if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
                self.bar.set_style(style.progress_chars("=> "));
            }
            self.bar.set_message(message);
        }
        // A compile names the pass running.
        if let driver::Progress::Compile { pass, .. } = p {
            if self.pass != Some(pass) {
                self.pass = Some(pass);
                self.bar.set_message(pass);
            }
        }
        // The estimate can fall short (per-element regions are not counted): grow it.
        self.bar.set_length(total.max(done));
        self.bar.set_position(done);
        if self.enabled && self.bar.is_hidden() && self.started.elapsed() >= PROGRESS_DELAY {
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// The phases of a run the bar shows, each styled on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// A model graph's passes.
    Compile,
    /// KTIR operations run.
    Execute,
    /// Tasks timed.
    Schedule,
}

/// What `spyre bench` measured.
struct BenchFigures {
    /// The model file.
    file: String,
    /// Whether the runs computed timing only.
    timing_only: bool,
    /// Timed events of one run (the trace's events).
    events: usize,
    /// Modelled cycles of one run.
    total_cycles: f64,
    /// Wall time of each timed run, in milliseconds.
    ms: Vec<f64>,
    /// The median of `ms`.
    median_ms: f64,
    /// The median time to serialize a run's result as JSON (what `spyre run --json`
    /// adds; the native counterpart of handing the result to JavaScript), in milliseconds.
    median_json_ms: f64,
    /// `events` per second of the median run.
    events_per_second: f64,
}

/// The most timed runs `spyre bench` makes: enough for a stable median, and the per-run
/// figures it keeps stay small (docs/limits.md).
const MAX_BENCH_RUNS: usize = 1000;

/// Runs `once` untimed, then `runs` times timed: the first result, and the wall times of
/// each run and of serialising its result to JSON, in milliseconds.
fn time_runs<R: serde::Serialize>(
    once: impl Fn() -> Result<R, String>,
    runs: usize,
) -> Result<(R, Vec<f64>, Vec<f64>), String> {
    let first = once()?;
    let mut ms = Vec::with_capacity(runs);
    let mut json_ms = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let r = once()?;
        ms.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        let text = serde_json::to_string(&r).map_err(|e| e.to_string())?;
        json_ms.push(started.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box((r, text));
    }
    Ok((first, ms, json_ms))
}

/// `spyre compile --tp N`: the tensor-parallel snapshot, then each segment of one card's
/// shard compiled once, emitted as asked.
fn compile_tensor_parallel(
    graph: &driver::graph::Graph,
    machine: &sim::Machine,
    options: &compiler::Options,
    tp: &TpFlags,
    emit: Emit,
    output: &Option<PathBuf>,
) -> Result<ExitCode, String> {
    let tpo = tp.options(machine)?;
    let system = match tpo.system.clone() {
        Some(s) => s,
        None => {
            sim::system::System::switch_of(machine, tpo.degree.max(1)).map_err(|e| e.to_string())?
        }
    };
    system.check_degree(tpo.degree).map_err(|e| e.to_string())?;
    let machine = system.machine(0).unwrap_or(machine);
    let plan = compiler::tp::shard(graph, tpo.degree).map_err(|e| e.to_string())?;
    let mut text = format!(
        "==== {} ({}) ====\n{}\n",
        plan.snapshot.pass, plan.snapshot.title, plan.snapshot.text
    );
    for (k, seg) in plan.segments.iter().enumerate() {
        let c = driver::compile(&seg.graph, machine, options).map_err(derr)?;
        let body = match emit {
            Emit::Ktir => c.ktir.clone().unwrap_or_default(),
            Emit::Sdsc => c
                .snapshot("sdsc")
                .map(|s| s.text.clone())
                .unwrap_or_default(),
            Emit::Snapshots => c
                .snapshots
                .iter()
                .map(|s| format!("==== {} ({}) ====\n{}\n", s.pass, s.title, s.text))
                .collect(),
        };
        text.push_str(&format!(
            "==== segment {k} (compiled once for all {} cards) ====\n{body}\n",
            tpo.degree
        ));
    }
    write_out(output, &text)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs the whole pipeline on `source` once untimed, then `runs` times timed. Each run
/// opens a session as `spyre run` does, so an ONNX model's external data is read from
/// `files` (its directory), and only when the run needs values.
fn bench(
    source: &[u8],
    name: &str,
    files: std::sync::Arc<ModelDir>,
    options: &PipelineOptions,
    runs: usize,
) -> Result<BenchFigures, String> {
    let once = || -> Result<driver::PipelineResult, String> {
        let mut session = Session::open_with_files(source, name, files.clone()).map_err(derr)?;
        session.run(options, &mut |_| {}).map_err(derr)?;
        session
            .into_run()
            .ok_or_else(|| "the run left no result".to_string())
    };
    let (first, ms, json_ms) = time_runs(once, runs)?;
    Ok(figures(
        name,
        options.timing_only,
        first.run.events_total as usize,
        first.run.total_cycles,
        ms,
        &json_ms,
    ))
}

/// Runs a KTIR module (parse, verify, run every function) once untimed, then `runs`
/// times timed.
fn bench_ktir(
    text: &str,
    name: &str,
    options: &PipelineOptions,
    runs: usize,
) -> Result<BenchFigures, String> {
    let options = RunOptions {
        machine: options.machine.clone(),
        timing_only: options.timing_only,
        ..RunOptions::default()
    };
    let once = || -> Result<driver::RunResult, String> {
        let mut session = Session::open(text.as_bytes(), name).map_err(derr)?;
        session.run(&options, &mut |_| {}).map_err(derr)?;
        session
            .into_run()
            .map(|r| r.run)
            .ok_or_else(|| "the run left no result".to_string())
    };
    let (first, ms, json_ms) = time_runs(once, runs)?;
    Ok(figures(
        name,
        options.timing_only,
        first.events_total as usize,
        first.total_cycles,
        ms,
        &json_ms,
    ))
}

/// The figures of `runs` timed runs.
fn figures(
    name: &str,
    timing_only: bool,
    events: usize,
    total_cycles: f64,
    ms: Vec<f64>,
    json_ms: &[f64],
) -> BenchFigures {
    let median = |xs: &[f64]| {
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
    };
    let median_ms = median(&ms);
    BenchFigures {
        file: name.to_string(),
        timing_only,
        events,
        total_cycles,
        median_ms,
        median_json_ms: median(json_ms),
        events_per_second: events as f64 / (median_ms / 1e3),
        ms,
    }
}

/// The wall-time line of `spyre run`: the whole command (reading, parsing, verifying or
/// compiling, simulating), output excluded.
fn wall_line(wall: Duration) -> String {
    format!("wall time      {:.1} ms", wall.as_secs_f64() * 1e3)
}

/// A run result as `spyre run --json` prints it: the result's own fields (serialized as
/// they are, not through a JSON value, so numbers print alike), its wall time as `wallMs`
/// (the command's, not the model's; see [`wall_line`]) and, for model graphs, the
/// padding rules the compile applied as `paddingRules`.
fn json_with_wall_time(
    result: &driver::RunResult,
    wall: Duration,
    padding_rules: Option<compiler::PaddingRules>,
) -> Result<String, String> {
    #[derive(serde::Serialize)]
    struct WithWallTime<'a> {
        #[serde(flatten)]
        result: &'a driver::RunResult,
        #[serde(rename = "wallMs")]
        wall_ms: f64,
        #[serde(rename = "paddingRules", skip_serializing_if = "Option::is_none")]
        padding_rules: Option<compiler::PaddingRules>,
    }
    serde_json::to_string_pretty(&WithWallTime {
        result,
        wall_ms: wall.as_secs_f64() * 1e3,
        padding_rules,
    })
    .map_err(|e| e.to_string())
}

/// The `.npy` and `.pb` files of a directory, as (file name, bytes), for binding to a
/// graph's inputs or outputs.
fn read_tensor_files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if !path.is_file() || !path.extension().is_some_and(|e| e == "npy" || e == "pb") {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        files.push((file_name(&path), bytes));
    }
    Ok(files)
}

/// What a timing-only run prints in place of the numbers it did not compute.
const TIMING_ONLY_NOTE: &str = "numbers        not computed (timing-only run): tensors carry shapes only, outputs are not checked";

/// Arguments of `spyre run` on a KTIR module.
struct RunKtir {
    file: PathBuf,
    inputs: Option<PathBuf>,
    given: KtirInputFlags,
    out_of_bounds: OutOfBoundsArg,
    save_outputs: Option<PathBuf>,
    machine: String,
    seed: u64,
    trace: Option<PathBuf>,
    json: bool,
    roofline: bool,
    timing: Timing,
    timing_only: bool,
    /// When the command started (for its wall time).
    started: Instant,
}

/// The timing models `spyre run` can report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Timing {
    /// The event-level schedule only.
    Event,
    /// The event-level schedule and the per-unit roofline latency model beside it.
    Roofline,
}

fn run_ktir_file(mut session: Session, r: RunKtir) -> Result<ExitCode, String> {
    if r.timing_only && r.save_outputs.is_some() {
        return Err(
            "--save-outputs needs buffer contents, which a --timing-only run does not compute"
                .into(),
        );
    }
    let mut options = RunOptions {
        machine: load_machine(&r.machine)?,
        seed: r.seed,
        timing_only: r.timing_only,
        out_of_bounds: match r.out_of_bounds {
            OutOfBoundsArg::Error => driver::OutOfBounds::Error,
            OutOfBoundsArg::Mask => driver::OutOfBounds::Mask,
        },
        ..RunOptions::default()
    };
    r.given.apply(&mut options)?;
    if let (Some(dir), Some(text)) = (&r.inputs, session.ktir_source()) {
        // Every NAME.npy of the directory fills NAME; the driver checks each against the
        // buffer, scratchpad view or tensor argument it fills.
        let mut files = Vec::new();
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "npy"))
            .collect();
        entries.sort();
        for path in entries {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            files.push((name, bytes));
        }
        options.buffers = driver::read_npy_inputs(text, &options, &files)
            .map_err(|e| format!("{}: {}", dir.display(), e.message))?;
    }
    let name = r.file.display().to_string();
    let mut bar = RunProgress::on_stderr(!r.json);
    let run = session.run(&options, &mut |p| bar.update(p)).map(|_| ());
    bar.finish();
    run.map_err(|e| {
        // Verifier diagnostics, each with the file name in front of its line and column.
        if e.diagnostics.is_empty() {
            format!("{name}: {e}")
        } else {
            e.message
                .lines()
                .map(|l| format!("{name}:{l}"))
                .collect::<Vec<_>>()
                .join("\n")
        }
    })?;
    let result = &session.last_run().ok_or("the run left no result")?.run;
    for w in &result.warnings {
        eprintln!("{name}:{w}");
    }
    if let Some(path) = &r.trace {
        let text = session.trace_json().map_err(derr)?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(dir) = &r.save_outputs {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (spec, data) in &result.buffers {
            npy::write(&dir.join(format!("{}.npy", spec.name)), spec, data)?;
        }
    }
    let wall = r.started.elapsed();
    if r.json {
        println!("{}", json_with_wall_time(result, wall, None)?);
    } else {
        let s = &result.summary;
        println!("machine        {}", result.machine.name);
        println!("functions      {}", result.functions.join(", "));
        println!(
            "cycles         {:.0} ({:.3} us at {} GHz, assumed clock)",
            result.total_cycles, s.time_us, s.clock_ghz
        );
        println!("bottleneck     {:?}: {}", s.bottleneck, s.bottleneck_reason);
        println!("events         {}", result.events_total);
        println!("{}", wall_line(wall));
        if result.timing_only {
            println!("{TIMING_ONLY_NOTE}");
        }
        for a in &result.assumptions {
            println!("assumption     {a}");
        }
        if let Some(n) = result.masked_points {
            println!(
                "masked         {n} points outside their views (--out-of-bounds mask: loads read 0, stores dropped)"
            );
        }
        for (spec, _) in &result.buffers {
            println!(
                "buffer {:<8} {} {:?} ({} elements)",
                spec.name, spec.elem, spec.shape, spec.elements
            );
        }
        if r.roofline {
            print!("{}", driver::render_roofline(&result.roofline));
        }
        if r.timing == Timing::Roofline {
            print!("{}", driver::render_latency_model(&result.latency_model));
        }
    }
    Ok(ExitCode::SUCCESS)
}

impl KtirInputFlags {
    /// Puts the scalar values and placements into `options`; `--place` wins over the
    /// manifest.
    fn apply(&self, options: &mut RunOptions) -> Result<(), String> {
        for a in &self.args {
            let (name, value) = a
                .split_once('=')
                .ok_or_else(|| format!("--arg '{a}': expected NAME=VALUE"))?;
            options.scalars.insert(
                name.trim().trim_start_matches('%').to_string(),
                value.trim().to_string(),
            );
        }
        if let Some(path) = &self.place_file {
            let text = read(path)?;
            let map: std::collections::BTreeMap<String, i64> = serde_json::from_str(&text)
                .map_err(|e| {
                    format!(
                        "{}: {e} (expected a JSON object of names and element addresses, {{\"x\": 4096}})",
                        path.display()
                    )
                })?;
            options.places.extend(map);
        }
        for p in &self.places {
            let (name, addr) = p
                .split_once('=')
                .ok_or_else(|| format!("--place '{p}': expected NAME=ADDR"))?;
            let addr: i64 = addr
                .trim()
                .parse()
                .map_err(|_| format!("--place '{p}': '{addr}' is not an element address"))?;
            if addr < 0 {
                return Err(format!("--place '{p}': addresses are not negative"));
            }
            options
                .places
                .insert(name.trim().trim_start_matches('%').to_string(), addr);
        }
        Ok(())
    }
}

/// The table `spyre ktir inputs` prints.
fn render_inputs(i: &driver::KtirInputs) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<11} {:<14} {:<6} {:<16} {:<10} role",
        "kind", "name", "dtype", "shape", "address"
    );
    for b in &i.buffers {
        let _ = writeln!(
            out,
            "{:<11} {:<14} {:<6} {:<16} {:<10} {}",
            "buffer",
            b.name,
            b.elem,
            format!("{:?}", b.shape),
            b.address.map_or("-".to_string(), |a| a.to_string()),
            b.role.name()
        );
    }
    for s in &i.scratchpads {
        let _ = writeln!(
            out,
            "{:<11} {:<14} {:<6} {:<16} {:<10} {} (cores {})",
            "scratchpad",
            s.name,
            s.elem,
            format!("{:?}", s.shape),
            s.address,
            s.role.name(),
            if s.cores.len() > 4 {
                format!("0..{}", s.cores.len())
            } else {
                format!("{:?}", s.cores)
            }
        );
    }
    for t in &i.tensors {
        let _ = writeln!(
            out,
            "{:<11} {:<14} {:<6} {:<16} {:<10} in",
            "tensor",
            t.name,
            t.elem,
            format!("{:?}", t.shape),
            "-"
        );
    }
    for s in &i.scalars {
        let _ = writeln!(
            out,
            "{:<11} {:<14} {:<6} {:<16} {:<10} in{}",
            "scalar",
            s.name,
            s.dtype,
            "[]",
            "-",
            s.value
                .as_ref()
                .map_or(String::new(), |v| format!(" (given: {v})"))
        );
    }
    for m in &i.missing {
        let _ = writeln!(out, "missing     {m}");
    }
    out
}

/// `.npy` writing for KTIR buffers (the bytes come from `driver::npy`).
mod npy {
    use driver::BufferSpec;
    use std::path::Path;

    /// Writes a buffer as `.npy` (see [`driver::npy::to_bytes`]).
    pub fn write(path: &Path, spec: &BufferSpec, data: &[f32]) -> Result<(), String> {
        let bytes =
            driver::npy::to_bytes(spec, data).map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_follows_both_phases_and_stays_hidden_when_disabled() {
        let mut bar = RunProgress::new(false);
        bar.update(driver::Progress::Compile {
            pass: "decompose",
            done: 100,
            total: 700,
        });
        assert_eq!((bar.bar.position(), bar.bar.length()), (100, Some(700)));
        assert_eq!(bar.bar.message(), "decompose");
        bar.update(driver::Progress::Compile {
            pass: "ktir",
            done: 650,
            total: 700,
        });
        assert_eq!(bar.bar.position(), 650);
        assert_eq!(bar.bar.message(), "ktir");
        bar.update(driver::Progress::Execute {
            steps: 30,
            total: 100,
        });
        assert_eq!(bar.bar.message(), "executing");
        assert_eq!((bar.bar.position(), bar.bar.length()), (30, Some(100)));
        // An estimate that falls short grows with the count.
        bar.update(driver::Progress::Execute {
            steps: 120,
            total: 100,
        });
        assert_eq!(bar.bar.length(), Some(120));
        bar.update(driver::Progress::Schedule { done: 5, total: 40 });
        assert_eq!((bar.bar.position(), bar.bar.length()), (5, Some(40)));
        assert_eq!(bar.bar.message(), "scheduling");
        // Never drawn, however long the run.
        if let Some(earlier) = bar.started.checked_sub(PROGRESS_DELAY * 2) {
            bar.started = earlier;
        }
        bar.update(driver::Progress::Schedule {
            done: 40,
            total: 40,
        });
        assert!(bar.bar.is_hidden());
        bar.finish();
    }
}
