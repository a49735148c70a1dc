//! Kernels fit the scratchpad: every kernel of the Llama-3.1-8B-dims layer, compiled for
//! spyre32, needs no more scratchpad per core than its budget (the plannable capacity minus
//! what the scratchpad plan holds while it runs), counted the way the simulator charges
//! tensor values. Too big to simulate in a debug test; the counting itself is checked
//! against the simulator by the tiny4 cases of `pipeline_tiling.rs`.

use driver::compiler::lower_ktir::scratchpad_use;
use driver::compiler::Options;
use driver::{compile, load_graph, machine};
use std::path::Path;

#[test]
fn every_kernel_of_the_8b_layer_fits_its_budget() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/graphs/llama3_8b_layer.json");
    let source = std::fs::read_to_string(&path).expect("llama3_8b_layer.json");
    let g = load_graph(&source, "llama3_8b_layer.json").unwrap_or_else(|e| panic!("{e}"));
    let m = machine("spyre32").expect("preset");
    let c = compile(&g, &m, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let uses = scratchpad_use(&c).unwrap_or_else(|e| panic!("{e}"));
    let mut cut = 0;
    for u in &uses {
        eprintln!(
            "{:<40} {:>9} / {:>9} bytes, {} step(s)",
            u.func, u.need, u.budget, u.steps
        );
        assert!(
            u.need <= u.budget,
            "@{} needs {} of {} bytes",
            u.func,
            u.need,
            u.budget
        );
        cut += usize::from(u.steps > 1);
    }
    // The projections outgrow a core untiled; they are the ones cut.
    assert!(cut > 0);
}
