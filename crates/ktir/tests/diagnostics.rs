//! How diagnostics come out: in source order, one error per position, positions that
//! ignore a byte order mark, and a clear error for a module without functions.

use ktir::{check, parse, Diagnostic};

fn errors(text: &str) -> Vec<Diagnostic> {
    match check(text) {
        Ok((_, d)) | Err(d) => d,
    }
}

#[test]
fn a_byte_order_mark_is_skipped_and_not_counted_as_a_column() {
    let program = "#s = affine_set<(d0) : (d0 mod 0 >= 0)>\nmodule {\n  func.func @k() attributes {grid = [1]} {\n    return\n  }\n}\n";
    let plain = errors(program);
    let marked = errors(&format!("\u{feff}{program}"));
    assert_eq!(plain.len(), 1, "{plain:?}");
    assert_eq!(
        marked
            .iter()
            .map(|d| (d.line, d.column, &d.message))
            .collect::<Vec<_>>(),
        plain
            .iter()
            .map(|d| (d.line, d.column, &d.message))
            .collect::<Vec<_>>()
    );
    assert!(check(&format!(
        "\u{feff}{}",
        &program[program.find('\n').unwrap() + 1..]
    ))
    .is_ok());
}

#[test]
fn empty_and_comment_only_modules_are_errors() {
    for text in [
        "",
        "// nothing here\n",
        "module {\n}\n",
        "#s = affine_set<(d0) : (d0 >= 0)>\n",
    ] {
        let d = check(text).expect_err(text);
        assert_eq!(d.len(), 1, "{text:?}: {d:?}");
        assert!(d[0].message.contains("no functions"), "{}", d[0]);
        assert_eq!((d[0].line, d[0].column), (1, 1));
    }
}

#[test]
fn input_cut_short_inside_a_function_is_reported_once_at_the_end() {
    let mut text = String::from("module {\n  func.func @k(%a: index) attributes {grid = [1]} {\n");
    for _ in 0..30 {
        text.push_str("    %w = ktdp.load %q : !ktdp.access_tile<4xindex> -> tensor<4xf16> {\n");
    }
    text.push_str("    return\n  }\n}\n");
    let (_, d) = parse(&text);
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(d[1].message.contains("expected '}'"), "{}", d[1]);
}

#[test]
fn many_errors_come_out_in_line_order_and_one_per_line() {
    let mut text = String::from("module {\n  func.func @k(%a: index) attributes {grid = [1]} {\n");
    let bad = [
        "    %x = arith.frobnicate %a : index",
        "    %y = arith.constant 1.0 : flaot",
        "    %z = arith.addi %a, %a",
        "    %v = tensor.empty() : tensor<4x?xf16",
        "    scf.for %i = %a to %a step %a {\n      %q = arith.bogus %a : index\n    }",
    ];
    let mut expected_lines = 0;
    for i in 0..200 {
        let b = bad[i % bad.len()];
        text.push_str(b);
        text.push('\n');
        expected_lines += 1;
    }
    text.push_str("    return\n  }\n}\n");
    let (_, d) = parse(&text);
    assert_eq!(
        d.len(),
        expected_lines,
        "{}",
        ktir::render_diagnostics("", &d)
    );
    assert!(
        d.windows(2)
            .all(|w| (w[0].line, w[0].column) < (w[1].line, w[1].column)),
        "{}",
        ktir::render_diagnostics("", &d)
    );
}
