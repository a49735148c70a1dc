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
        /// Write the output here instead of standard output (with `--emit sdsc`: a
        /// directory that receives the bundle's files).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Simulate a model graph (compiled first, outputs compared with the reference) or a
    /// KTIR file (every function in order, buffers found from its memory views).
    Run {
        /// Model file (.json or .onnx) or KTIR file (.mlir).
        file: PathBuf,
        /// KTIR files: fill buffer NAME from NAME.npy in this directory (others get seeded
        /// random values).
        #[arg(long)]
        inputs: Option<PathBuf>,
        /// KTIR files: value of a scalar index argument, as NAME=VALUE (repeatable).
        #[arg(long = "arg", value_name = "NAME=VALUE")]
        args: Vec<String>,
        /// KTIR files: write every buffer argument as NAME.npy into this directory.
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
        /// Compute timing only: no numbers (weights are never materialised, outputs are
        /// not checked), so models too large to run with numbers can be planned.
        #[arg(long)]
        timing_only: bool,
        #[command(flatten)]
        flags: CompileFlags,
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
}

impl CompileFlags {
    fn options(&self) -> Result<compiler::Options, String> {
        Ok(compiler::Options {
            allocator: self
                .allocator
                .parse()
                .map_err(|e: compiler::CompileError| e.to_string())?,
            attention_key_block: self.attention_block,
            ..Default::default()
        })
    }
}

#[derive(Subcommand)]
enum KtirCommand {
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
            output,
        } => {
            let machine = load_machine(&machine)?;
            let graph = driver::load_graph(&read_model(&file)?, &file_name(&file)).map_err(derr)?;
            let mut options = flags.options()?;
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
            let c = driver::compile_with_progress(&graph, &machine, &options, &mut |p| {
                bar.update_compile(p)
            });
            bar.finish();
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
            args,
            save_outputs,
            machine,
            seed,
            trace,
            json,
            roofline,
            timing_only,
            flags,
        } => {
            let started = Instant::now();
            let source = read_model(&file)?;
            let name = file_name(&file);
            let mut session = Session::open(&source, &name).map_err(derr)?;
            if !session.kind().is_graph() {
                return run_ktir_file(
                    session,
                    RunKtir {
                        file,
                        inputs,
                        args,
                        save_outputs,
                        machine,
                        seed,
                        trace,
                        json,
                        roofline,
                        timing_only,
                        started,
                    },
                );
            }
            if inputs.is_some() || !args.is_empty() || save_outputs.is_some() {
                return Err(
                    "--inputs, --arg and --save-outputs apply to KTIR (.mlir) files; model graphs use seeded inputs (--seed)"
                        .into(),
                );
            }
            let options = RunOptions {
                machine: load_machine(&machine)?,
                seed,
                timing_only,
                compile: flags.options()?,
                ..RunOptions::default()
            };
            let mut bar = RunProgress::on_stderr(!json);
            let run = session.run(&options, &mut |p| bar.update(p)).map(|_| ());
            bar.finish();
            run.map_err(derr)?;
            if let Some(path) = &trace {
                let text = session.trace_json().map_err(derr)?;
                std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            let result = &session.last_run().ok_or("the run left no result")?.run;
            let wall = started.elapsed();
            if json {
                println!("{}", json_with_wall_time(result, wall)?);
            } else {
                let s = &result.summary;
                println!("machine        {}", result.machine.name);
                println!(
                    "cycles         {:.0} ({:.3} us at {} GHz, assumed clock)",
                    result.total_cycles, s.time_us, s.clock_ghz
                );
                println!("bottleneck     {:?}: {}", s.bottleneck, s.bottleneck_reason);
                println!("ktir ops run   {}", result.steps);
                println!("events         {}", result.events.len());
                println!("{}", wall_line(wall));
                if result.timing_only {
                    println!("{TIMING_ONLY_NOTE}");
                }
                for a in &result.assumptions {
                    println!("assumption     {a}");
                }
                for o in &result.outputs {
                    println!(
                        "output {:<8} {} {:?}: max abs error {:.3e}, max rel error {:.3e} (atol {:e}, rtol {:e}) {}",
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
                ..PipelineOptions::default()
            };
            let source = read_model(&file)?;
            let name = file_name(&file);
            let ktir = !driver::detect_kind(&source, &name).is_graph();
            let figures = if ktir {
                let text = String::from_utf8(source)
                    .map_err(|_| format!("{}: not UTF-8 text", file.display()))?;
                bench_ktir(&text, &name, &options, runs)?
            } else {
                bench(&source, &name, &options, runs)?
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
            let graph = driver::load_graph(&read_model(&file)?, &file_name(&file)).map_err(derr)?;
            print!("{}", driver::inspect(&graph).map_err(derr)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Ktir { command } => match command {
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
    scheduling: Option<bool>,
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
            scheduling: None,
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
        let (scheduling, done, total) = match p {
            driver::Progress::Execute { steps, total } => (false, steps, total),
            driver::Progress::Schedule { done, total } => (true, done, total),
        };
        if self.scheduling != Some(scheduling) {
            self.scheduling = Some(scheduling);
            // Counts of the previous phase must not show against this one's total.
            self.bar.set_position(0);
            self.bar.set_length(total.max(done));
            let (template, message) = if scheduling {
                ("{msg:>10} [{wide_bar}] {pos}/{len} tasks", "scheduling")
            } else {
                (
                    "{msg:>10} [{wide_bar}] {pos}/{len} ops (estimated)",
                    "executing",
                )
            };
            if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
                self.bar.set_style(style.progress_chars("=> "));
            }
            self.bar.set_message(message);
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

/// Runs the whole pipeline on `source` once untimed, then `runs` times timed.
fn bench(
    source: &[u8],
    name: &str,
    options: &PipelineOptions,
    runs: usize,
) -> Result<BenchFigures, String> {
    let once = || driver::run_pipeline(source, name, options).map_err(derr);
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
    Ok(figures(
        name,
        options.timing_only,
        first.run.events.len(),
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
    Ok(figures(
        name,
        options.timing_only,
        first.events.len(),
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
/// they are, not through a JSON value, so numbers print alike) and its wall time as
/// `wallMs` (the command's, not the model's; see [`wall_line`]).
fn json_with_wall_time(result: &driver::RunResult, wall: Duration) -> Result<String, String> {
    #[derive(serde::Serialize)]
    struct WithWallTime<'a> {
        #[serde(flatten)]
        result: &'a driver::RunResult,
        #[serde(rename = "wallMs")]
        wall_ms: f64,
    }
    serde_json::to_string_pretty(&WithWallTime {
        result,
        wall_ms: wall.as_secs_f64() * 1e3,
    })
    .map_err(|e| e.to_string())
}

/// What a timing-only run prints in place of the numbers it did not compute.
const TIMING_ONLY_NOTE: &str = "numbers        not computed (timing-only run): tensors carry shapes only, outputs are not checked";

/// Arguments of `spyre run` on a KTIR module.
struct RunKtir {
    file: PathBuf,
    inputs: Option<PathBuf>,
    args: Vec<String>,
    save_outputs: Option<PathBuf>,
    machine: String,
    seed: u64,
    trace: Option<PathBuf>,
    json: bool,
    roofline: bool,
    timing_only: bool,
    /// When the command started (for its wall time).
    started: Instant,
}

fn run_ktir_file(mut session: Session, r: RunKtir) -> Result<ExitCode, String> {
    if r.timing_only && r.save_outputs.is_some() {
        return Err(
            "--save-outputs needs buffer contents, which a --timing-only run does not compute"
                .into(),
        );
    }
    let mut args = std::collections::BTreeMap::new();
    for a in &r.args {
        let (name, value) = a
            .split_once('=')
            .ok_or_else(|| format!("--arg '{a}': expected NAME=VALUE"))?;
        let v: i64 = value
            .trim()
            .parse()
            .map_err(|_| format!("--arg '{a}': '{value}' is not an integer"))?;
        args.insert(name.trim().trim_start_matches('%').to_string(), v);
    }
    let mut inputs = std::collections::BTreeMap::new();
    if let Some(dir) = &r.inputs {
        // Shapes are checked against the buffers the module's views need.
        let specs = match session.ktir_source() {
            Some(text) => driver::buffers_of(text, &args).map_err(derr)?,
            None => Vec::new(),
        };
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "npy") {
                let name = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                let array =
                    driver::npy::read(&bytes, RunOptions::default().limits.max_dram_elements)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                if let Some(spec) = specs.iter().find(|s| s.name == name) {
                    driver::npy::check_shape(&array, spec)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                }
                inputs.insert(name, array.data);
            }
        }
    }
    let options = RunOptions {
        machine: load_machine(&r.machine)?,
        args,
        buffers: inputs,
        seed: r.seed,
        timing_only: r.timing_only,
        ..RunOptions::default()
    };
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
        println!("{}", json_with_wall_time(result, wall)?);
    } else {
        let s = &result.summary;
        println!("machine        {}", result.machine.name);
        println!("functions      {}", result.functions.join(", "));
        println!(
            "cycles         {:.0} ({:.3} us at {} GHz, assumed clock)",
            result.total_cycles, s.time_us, s.clock_ghz
        );
        println!("bottleneck     {:?}: {}", s.bottleneck, s.bottleneck_reason);
        println!("events         {}", result.events.len());
        println!("{}", wall_line(wall));
        if result.timing_only {
            println!("{TIMING_ONLY_NOTE}");
        }
        for a in &result.assumptions {
            println!("assumption     {a}");
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
    }
    Ok(ExitCode::SUCCESS)
}

/// `.npy` writing for KTIR buffers (reading is `driver::npy`).
mod npy {
    use driver::BufferSpec;
    use std::path::Path;

    /// Writes a buffer as `.npy`: float16 buffers as float16, everything else as float32,
    /// shaped like the largest view over it when that covers it exactly.
    pub fn write(path: &Path, spec: &BufferSpec, data: &[f32]) -> Result<(), String> {
        use npyz::WriterBuilder;
        let err = |e: std::io::Error| format!("{}: {e}", path.display());
        let shape: Vec<u64> = if spec.shape.iter().product::<usize>() == data.len() {
            spec.shape.iter().map(|&d| d as u64).collect()
        } else {
            vec![data.len() as u64]
        };
        let file = std::fs::File::create(path).map_err(err)?;
        let out = std::io::BufWriter::new(file);
        if spec.elem == "f16" {
            let mut w = npyz::WriteOptions::<half::f16>::new()
                .default_dtype()
                .shape(&shape)
                .writer(out)
                .begin_nd()
                .map_err(err)?;
            w.extend(data.iter().map(|&x| half::f16::from_f32(x)))
                .map_err(err)?;
            w.finish().map_err(err)
        } else {
            let mut w = npyz::WriteOptions::<f32>::new()
                .default_dtype()
                .shape(&shape)
                .writer(out)
                .begin_nd()
                .map_err(err)?;
            w.extend(data.iter().copied()).map_err(err)?;
            w.finish().map_err(err)
        }
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
        bar.update(driver::Progress::Execute {
            steps: 30,
            total: 100,
        });
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
