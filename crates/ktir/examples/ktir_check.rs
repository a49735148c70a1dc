//! `cargo run -p ktir --example ktir_check -- FILE...`: prints every diagnostic, then the
//! canonical form of each file that parses.

fn main() {
    for path in std::env::args().skip(1) {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{path}: {e}");
                continue;
            }
        };
        let (module, mut diags) = ktir::parse(&text);
        if !diags.iter().any(ktir::Diagnostic::is_error) {
            diags.extend(ktir::verify(&module, &text));
            print!("{}", ktir::print(&module));
        }
        eprint!("{}", ktir::render_diagnostics(&path, &diags));
    }
}
