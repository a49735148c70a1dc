//! KTIR (KernelTile IR, the `ktdp` MLIR dialect): syntax tree, parser, printer and
//! verifier, with diagnostics that carry line and column.
//!
//! This crate is hardware-agnostic: it knows the dialect's rules, not any machine's sizes,
//! and it does not execute programs (the `sim` crate does). It never panics on input: the
//! parser recovers and returns every problem it finds.

pub mod ast;
pub mod build;
pub mod diag;
pub mod parser;
pub mod printer;
pub mod reduce;
pub mod verify;
pub mod working_set;

pub use ast::*;
pub use diag::{Diagnostic, Severity};
pub use parser::parse;
pub use printer::{print, print_assigning_spans};
pub use verify::verify;

/// Parses and verifies `text`. Returns the module when there is no error, together with
/// every diagnostic (warnings included); otherwise all diagnostics.
pub fn check(text: &str) -> Result<(Module, Vec<Diagnostic>), Vec<Diagnostic>> {
    let (module, mut diags) = parse(text);
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    diags.extend(verify(&module, text));
    if diags.iter().any(Diagnostic::is_error) {
        Err(diags)
    } else {
        Ok((module, diags))
    }
}

/// Formats diagnostics one per line, `line:col: severity: message`, prefixed by `name`.
pub fn render_diagnostics(name: &str, diags: &[Diagnostic]) -> String {
    diags.iter().map(|d| format!("{name}:{d}\n")).collect()
}
