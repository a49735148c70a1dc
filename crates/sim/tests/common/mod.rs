//! What the simulator's test files share: reading a program of `tests/ktir/valid` and
//! checking it into a module.

use std::path::Path;

/// The text of `tests/ktir/valid/<name>`.
#[allow(dead_code)]
pub fn program(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/ktir/valid")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `text` parsed and verified; a program with diagnostics fails the test with them.
pub fn module(text: &str) -> ktir::Module {
    match ktir::check(text) {
        Ok((m, _)) => m,
        Err(d) => panic!("{}", ktir::render_diagnostics("", &d)),
    }
}
