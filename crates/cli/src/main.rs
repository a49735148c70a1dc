//! `spyre`: the playground's pipeline on the command line (compile, run, KTIR tools).
//!
//! A thin shell over the `driver` crate: it parses arguments, reads files and prints what
//! the pipeline returns. No algorithm lives here.

use clap::{Parser, Subcommand, ValueEnum};
use driver::{compiler, ktir, sim, DriverError, PipelineOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
        /// Model file (.json).
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
        /// Scratchpad allocator: greedy, first-fit or best-fit.
        #[arg(long, default_value = "greedy")]
        allocator: String,
        /// Write the output here instead of standard output (with `--emit sdsc`: a
        /// directory that receives the bundle's files).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Compile and simulate a model graph; compare the outputs with the reference.
    Run {
        /// Model file (.json).
        file: PathBuf,
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
    },
    /// Show a model graph's inputs, outputs, op counts and parameter count.
    Inspect {
        /// Model file (.json).
        file: PathBuf,
    },
    /// KTIR tools.
    Ktir {
        #[command(subcommand)]
        command: KtirCommand,
    },
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
            allocator,
            output,
        } => {
            let machine = load_machine(&machine)?;
            let graph = driver::load_graph(&read(&file)?, &file_name(&file)).map_err(derr)?;
            let mut options = compiler::Options {
                allocator: allocator
                    .parse()
                    .map_err(|e: compiler::CompileError| e.to_string())?,
                ..Default::default()
            };
            if let Some(pass) = &after {
                options.stop_after = Some(pass.clone());
                let c = driver::compile(&graph, &machine, &options).map_err(derr)?;
                let snap = c
                    .snapshot(pass)
                    .ok_or_else(|| format!("pass '{pass}' recorded no snapshot"))?;
                write_out(&output, &snap.text)?;
                return Ok(ExitCode::SUCCESS);
            }
            let c = driver::compile(&graph, &machine, &options).map_err(derr)?;
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
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            file,
            machine,
            seed,
            trace,
            json,
        } => {
            let options = PipelineOptions {
                machine: load_machine(&machine)?,
                seed,
                ..PipelineOptions::default()
            };
            let source = read(&file)?;
            let graph = driver::load_graph(&source, &file_name(&file)).map_err(derr)?;
            let c = driver::compile(&graph, &options.machine, &options.compile).map_err(derr)?;
            let (result, schedule) = driver::simulate_with_schedule(&c, &options).map_err(derr)?;
            if let Some(path) = &trace {
                let text = sim::trace::chrome_trace_json(&options.machine, &schedule);
                std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?
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
            }
            Ok(if result.passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Inspect { file } => {
            let graph = driver::load_graph(&read(&file)?, &file_name(&file)).map_err(derr)?;
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

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
