//! The parser, verifier and printer never panic: every corpus program is cut, spliced and
//! sprinkled with MLIR punctuation (a deterministic mutation fuzzer), and hostile inputs
//! (deep nesting, huge numbers, long lines) are fed as well.

use std::fs;
use std::path::Path;

fn all_programs() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ktir");
    let mut out = Vec::new();
    for dir in ["valid", "invalid"] {
        let mut files: Vec<_> = fs::read_dir(root.join(dir))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        for f in files {
            out.push(fs::read_to_string(f).unwrap());
        }
    }
    out
}

/// Parses, verifies when clean, and prints; must not panic.
fn exercise(text: &str) {
    let (module, diags) = ktir::parse(text);
    if !diags.iter().any(ktir::Diagnostic::is_error) {
        let _ = ktir::verify(&module, text);
    }
    let printed = ktir::print(&module);
    let _ = ktir::parse(&printed);
    for d in &diags {
        assert!(
            d.line >= 1 && d.column >= 1,
            "diagnostic without position: {d}"
        );
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    ",",
    ":",
    "=",
    "->",
    "%",
    "#",
    "!",
    "^bb0(",
    "\"",
    "?x",
    "0x",
    "-",
    "floordiv",
    "mod",
    " / ",
    " % ",
    "loc(",
    "dense<",
    "affine_set<(d0)",
    "affine_map<(d0) -> (d0)>",
    "!ktdp.tile_future<(",
    "!ktdp.runtime_arg<",
    "ind(",
    "\n",
    "é",
    "99999999999999999999",
    "%r:3",
    "%x#1",
    "scf.for",
    "ktdp.inter_tile_reduce(",
];

fn char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i.min(s.len())
}

#[test]
fn mutated_corpus_programs_do_not_panic() {
    let programs = all_programs();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for p in &programs {
        exercise(p);
        for _ in 0..60 {
            let mut s = p.clone();
            for _ in 0..1 + rng.below(4) {
                let at = char_boundary(&s, rng.below(s.len() + 1));
                match rng.below(4) {
                    0 => s.insert_str(at, PIECES[rng.below(PIECES.len())]),
                    1 => {
                        let end = char_boundary(&s, at + rng.below(40));
                        s.replace_range(at..end, "");
                    }
                    2 => s.truncate(at),
                    _ => {
                        let other = &programs[rng.below(programs.len())];
                        let from = char_boundary(other, rng.below(other.len() + 1));
                        let to = char_boundary(other, from + rng.below(200));
                        let piece = other[from..to].to_string();
                        s.insert_str(at, &piece);
                    }
                }
            }
            exercise(&s);
        }
    }
}

#[test]
fn hostile_inputs_do_not_panic() {
    let deep_parens = format!(
        "#s = affine_set<(d0) : ({}d0{} >= 0)>\n",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    let deep_regions = format!(
        "module {{ func.func @k() attributes {{grid = [1]}} {{ {} }} }}",
        "scf.if %c { ".repeat(5_000)
    );
    let deep_dense = format!(
        "module {{ func.func @k() {{ %c = arith.constant dense<{}1.0{}> : tensor<1xf32>\n return }} }}",
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    let long_line = format!("module {{ {} }}", "%a = ".repeat(20_000));
    let deep_modules = "module { ".repeat(200_000);
    let inputs = [
        deep_modules,
        deep_parens,
        deep_regions,
        deep_dense,
        long_line,
        String::new(),
        "module".into(),
        "module {".into(),
        "}}}}".into(),
        "\u{0}\u{1}\u{ffff}".into(),
        "#a = #a\nmodule { func.func @k() attributes {grid = [1]} { %x = ktdp.construct_memory_view %b, sizes: [1], strides: [1] {coordinate_set = #a, memory_space = #ktdp.memory_space<global>} : memref<1xf16>\n return } }".into(),
        "module { func.func @k() attributes {grid = [99999999999999999999]} { return } }".into(),
        "module { func.func @k() attributes {grid = [4294967296, 4294967296]} { return } }".into(),
        "!t = !t\n".into(),
        "module { func.func @k(%a: tensor<99999999999999999999x2xf32>) { return } }".into(),
    ];
    for i in &inputs {
        exercise(i);
    }
}

/// Inputs that once crashed the parser (found by fuzzing), kept as regressions: each must
/// give diagnostics, not a panic.
#[test]
fn past_crashes_stay_fixed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ktir/crashes");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/ktir/crashes") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("read");
        let text = String::from_utf8_lossy(&bytes);
        let (module, diags) = ktir::parse(&text);
        if !diags.iter().any(ktir::Diagnostic::is_error) {
            let _ = ktir::verify(&module, &text);
        }
        count += 1;
    }
    assert!(count >= 3, "expected the crash corpus in {}", dir.display());
}
