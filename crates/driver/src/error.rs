//! The driver's one error type: a stage, a message, and where known the file, line,
//! column and graph node, plus every KTIR diagnostic when the module did not verify.

use crate::DiagnosticView;
use serde::Serialize;
use std::fmt;

/// The pipeline stage a failure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Stage {
    /// Reading the source (graph JSON, ONNX, KTIR text).
    Load,
    /// The compiler's passes.
    Compile,
    /// Parsing and verifying KTIR, or finding a module's buffers and arguments.
    Ktir,
    /// Running the kernels, the reference and the timing model.
    Simulate,
    /// Loading a machine description.
    Machine,
}

impl Stage {
    /// The stage's name, as errors print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Load => "load",
            Stage::Compile => "compile",
            Stage::Ktir => "ktir",
            Stage::Simulate => "simulate",
            Stage::Machine => "machine",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Stage {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A failure anywhere in the pipeline, with the stage it came from and, where known, its
/// location.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DriverError {
    /// The stage.
    pub stage: Stage,
    /// The message, including its location in words (line and column, node, core or op).
    pub message: String,
    /// The file, when the source came from one.
    pub file: Option<String>,
    /// 1-based line in the file (graph JSON or KTIR text).
    pub line: Option<u32>,
    /// 1-based column.
    pub column: Option<u32>,
    /// The graph node.
    pub node: Option<String>,
    /// Every KTIR diagnostic, when a module did not verify.
    pub diagnostics: Vec<DiagnosticView>,
}

impl DriverError {
    /// An error with no location beyond its message.
    pub fn new(stage: Stage, message: impl Into<String>) -> DriverError {
        DriverError {
            stage,
            message: message.into(),
            file: None,
            line: None,
            column: None,
            node: None,
            diagnostics: Vec::new(),
        }
    }

    /// The same error, located in `file`.
    pub fn in_file(mut self, file: &str) -> DriverError {
        self.file = Some(file.to_string());
        self
    }

    /// A graph error; `file` (when not empty) prefixes the message.
    pub fn from_graph(file: &str, e: graph::GraphError, stage: Stage) -> DriverError {
        let message = match (&e.location, file) {
            (_, "") => e.to_string(),
            (graph::Location::Json { .. }, _) => format!("{file}:{e}"),
            _ => format!("{file}: {e}"),
        };
        let mut err = DriverError::new(stage, message);
        if !file.is_empty() {
            err.file = Some(file.to_string());
        }
        match e.location {
            graph::Location::Json { line, column, .. } => {
                err.line = u32::try_from(line).ok();
                err.column = u32::try_from(column).ok();
            }
            graph::Location::Node { node, .. } => err.node = Some(node),
            graph::Location::Graph => {}
        }
        err
    }

    /// A compiler error, with its node.
    pub fn from_compile(e: compiler::CompileError) -> DriverError {
        let mut err = DriverError::new(Stage::Compile, e.to_string());
        err.node = e.node;
        err
    }

    /// A module that did not verify: `message`, the first error's position, and every
    /// diagnostic.
    pub fn from_ktir(
        message: String,
        file: Option<&str>,
        diags: &[ktir::Diagnostic],
    ) -> DriverError {
        let mut err = DriverError::new(Stage::Ktir, message);
        err.file = file.map(str::to_string);
        if let Some(d) = diags.iter().find(|d| d.is_error()).or(diags.first()) {
            err.line = Some(d.line);
            err.column = Some(d.column);
        }
        err.diagnostics = diags.iter().map(DiagnosticView::of).collect();
        err
    }

    /// A simulation error in kernel `func`, at the line of the op that failed.
    pub fn from_sim(func: &str, e: sim::SimError) -> DriverError {
        let mut err = DriverError::new(Stage::Simulate, format!("@{func}: {e}"));
        err.line = e.op.as_ref().map(|(_, line)| *line);
        err
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.stage, self.message)
    }
}

impl std::error::Error for DriverError {}
