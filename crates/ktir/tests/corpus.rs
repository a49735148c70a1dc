//! Data-driven tests over `tests/ktir/`: every program in `valid/` parses, verifies without
//! errors and survives a print/parse round trip; every program in `invalid/` produces
//! exactly the diagnostics its `// expected-error@+N {{...}}` and
//! `// expected-warning@+N {{...}}` comments announce, on the announced lines.

use ktir::{check, parse, print, verify, Diagnostic, Severity};
use std::fs;
use std::path::{Path, PathBuf};

fn corpus(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/ktir")
        .join(dir);
    let mut files: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "mlir"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no programs in {}", root.display());
    files
}

struct Expectation {
    line: u32,
    severity: Severity,
    text: String,
}

fn expectations(text: &str) -> Vec<Expectation> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for (marker, severity) in [
            ("expected-error", Severity::Error),
            ("expected-warning", Severity::Warning),
        ] {
            let Some(at) = line.find(marker) else {
                continue;
            };
            let rest = &line[at + marker.len()..];
            let (offset, rest) = match rest.strip_prefix("@+") {
                Some(r) => {
                    let n: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
                    (n.parse::<u32>().expect("offset"), &r[n.len()..])
                }
                None => (0, rest),
            };
            let open = rest.find("{{").expect("{{ in expectation");
            let close = rest.rfind("}}").expect("}} in expectation");
            out.push(Expectation {
                line: i as u32 + 1 + offset,
                severity,
                text: rest[open + 2..close].to_string(),
            });
        }
    }
    out
}

fn all_diagnostics(text: &str) -> Vec<Diagnostic> {
    let (module, mut diags) = parse(text);
    if !diags.iter().any(Diagnostic::is_error) {
        diags.extend(verify(&module, text));
    }
    diags
}

#[test]
fn valid_programs_verify_and_round_trip() {
    let mut failures = Vec::new();
    // The run corpus (numeric tests in the driver) must verify and round-trip too.
    for path in corpus("valid").into_iter().chain(corpus("run")) {
        let text = fs::read_to_string(&path).unwrap();
        let name = path.display();
        let (module, diags) = match check(&text) {
            Ok(ok) => ok,
            Err(d) => {
                failures.push(format!("{name}:\n{}", ktir::render_diagnostics("", &d)));
                continue;
            }
        };
        // A program may announce warnings (`expected-warning`); any other is a failure.
        let announced = expectations(&text);
        let unannounced = |diags: &[Diagnostic]| -> Vec<Diagnostic> {
            diags
                .iter()
                .filter(|d| {
                    !announced
                        .iter()
                        .any(|e| e.severity == d.severity && d.message.contains(&e.text))
                })
                .cloned()
                .collect()
        };
        let unexpected = unannounced(&diags);
        if !unexpected.is_empty() {
            failures.push(format!(
                "{name} has warnings:\n{}",
                ktir::render_diagnostics("", &unexpected)
            ));
        }
        let printed = print(&module);
        let (again, diags) = parse(&printed);
        if !diags.is_empty() {
            failures.push(format!(
                "{name}: printed form does not parse:\n{printed}\n{diags:?}"
            ));
            continue;
        }
        if module_without_spans(again) != module_without_spans(module.clone()) {
            failures.push(format!("{name}: round trip changed the tree:\n{printed}"));
        }
        if print(&parse(&printed).0) != printed {
            failures.push(format!("{name}: printing is not stable"));
        }
        if !unannounced(&verify(&parse(&printed).0, &printed)).is_empty() {
            failures.push(format!("{name}: printed form does not verify cleanly"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn corpus_is_large_enough() {
    assert!(corpus("valid").len() >= 40, "fewer than 40 valid programs");
    assert!(
        corpus("invalid").len() >= 30,
        "fewer than 30 invalid programs"
    );
}

#[test]
fn invalid_programs_report_the_expected_diagnostics() {
    let mut failures = Vec::new();
    for path in corpus("invalid") {
        let text = fs::read_to_string(&path).unwrap();
        let name = path.display();
        let expected = expectations(&text);
        if expected.is_empty() {
            failures.push(format!("{name} announces no diagnostic"));
            continue;
        }
        let diags = all_diagnostics(&text);
        for e in &expected {
            if !diags.iter().any(|d| {
                d.line == e.line && d.severity == e.severity && d.message.contains(&e.text)
            }) {
                failures.push(format!(
                    "{name}:{}: expected {:?} containing {:?}; got:\n{}",
                    e.line,
                    e.severity,
                    e.text,
                    ktir::render_diagnostics("", &diags)
                ));
            }
        }
        for d in &diags {
            if !expected.iter().any(|e| {
                d.line == e.line && d.severity == e.severity && d.message.contains(&e.text)
            }) {
                failures.push(format!("{name}: unexpected diagnostic {d}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Spans differ between the source and its printed form; compare everything else.
fn module_without_spans(m: ktir::Module) -> String {
    let text = format!("{m:?}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = rest.find("Span { start: ") {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let end = after.find('}').map_or(after.len(), |e| e + 1);
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Every function's and op's span, nested ops included, in tree order.
fn spans(m: &ktir::Module) -> Vec<(String, ktir::Span)> {
    fn block(b: &ktir::Block, out: &mut Vec<(String, ktir::Span)>) {
        for op in &b.ops {
            out.push((op.kind.name().to_string(), op.span));
            for r in op.kind.regions() {
                block(r, out);
            }
        }
    }
    let mut out = Vec::new();
    for f in &m.funcs {
        out.push((format!("@{}", f.name), f.span));
        block(&f.body, &mut out);
    }
    out
}

#[test]
fn printing_assigns_the_spans_parsing_the_printed_text_would() {
    for path in corpus("valid") {
        let text = fs::read_to_string(&path).unwrap();
        let Ok((mut module, _)) = check(&text) else {
            continue;
        };
        let printed = ktir::print_assigning_spans(&mut module);
        assert_eq!(printed, print(&module), "{}", path.display());
        let (reparsed, diags) = parse(&printed);
        assert!(
            !diags.iter().any(Diagnostic::is_error),
            "{}",
            path.display()
        );
        assert_eq!(spans(&module), spans(&reparsed), "{}", path.display());
    }
}

/// Every op of `block` and of the regions inside it, depth first.
fn each_op_mut(block: &mut ktir::Block, f: &mut dyn FnMut(&mut ktir::Op)) {
    for op in &mut block.ops {
        f(op);
        for region in op.kind.regions_mut() {
            each_op_mut(region, f);
        }
    }
}

#[test]
fn operands_in_place_are_the_operands_read() {
    // A transform renames values through `operands_mut`; analyses read `operands`. The two
    // must name the same fields of every op, or a rename misses a use.
    let mut ops_seen = 0;
    for path in corpus("valid") {
        let text = fs::read_to_string(&path).expect("read");
        let (mut module, _) = parse(&text);
        for func in &mut module.funcs {
            each_op_mut(&mut func.body, &mut |op| {
                ops_seen += 1;
                let read: Vec<String> = op.kind.operands().iter().map(|v| v.name.clone()).collect();
                let in_place: Vec<String> = op
                    .kind
                    .operands_mut()
                    .iter()
                    .map(|v| v.name.clone())
                    .collect();
                assert_eq!(read, in_place, "{}: {}", path.display(), op.kind.name());
                for v in op.kind.operands_mut() {
                    v.name = format!("renamed_{}", v.name);
                }
                assert!(
                    op.kind
                        .operands()
                        .iter()
                        .all(|v| v.name.starts_with("renamed_")),
                    "{}: {} kept a use through the rename",
                    path.display(),
                    op.kind.name()
                );
            });
        }
    }
    assert!(ops_seen > 500, "only {ops_seen} ops in the corpus");
}
