//! Every elementwise op's declared arity and element kind agree with what the parser and
//! verifier enforce, and its printed form is the one it was parsed from.

use ktir::{check, parse, print, verify, Diagnostic, ElemKind, ElementwiseOp, LinalgNamedOp};

fn func(body: &str) -> String {
    format!(
        "func.func @f(%a: f32, %b: f32, %c: f32, %d: f32, %i: i32, %j: i32, %k: i32, %l: i32, \
         %t: tensor<4xf32>, %u: tensor<4xi32>) attributes {{grid = [1]}} {{\n{body}  return\n}}\n"
    )
}

fn errors(text: &str) -> Vec<Diagnostic> {
    let (m, mut d) = parse(text);
    if !d.iter().any(Diagnostic::is_error) {
        d.extend(verify(&m, text));
    }
    d.into_iter().filter(Diagnostic::is_error).collect()
}

#[test]
fn arith_and_math_ops_take_their_arity_and_kind() {
    for &op in ElementwiseOp::ALL.iter().filter(|o| !o.is_linalg()) {
        let name = op.name();
        let (floats, ints) = (["%a", "%b", "%c", "%d"], ["%i", "%j", "%k", "%l"]);
        let (good, bad, good_ty, bad_ty) = match op.kind() {
            ElemKind::Float => (floats, ints, "f32", "i32"),
            ElemKind::Int => (ints, floats, "i32", "f32"),
            ElemKind::Any => panic!("{name}: arith/math ops fix their element kind"),
        };
        let n = op.arity();
        let line = format!("  %r = {name} {} : {good_ty}\n", good[..n].join(", "));
        let text = func(&line);
        let (m, diags) = check(&text).unwrap_or_else(|d| panic!("{name}: {d:?}"));
        assert!(diags.is_empty(), "{name}: {diags:?}");
        assert!(
            print(&m).contains(line.trim()),
            "{name}: printed as\n{}",
            print(&m)
        );

        let wrong_kind = func(&format!(
            "  %r = {name} {} : {bad_ty}\n",
            bad[..n].join(", ")
        ));
        let e = errors(&wrong_kind);
        assert!(
            e.iter().any(|d| d.message.contains("works on")),
            "{name}: {e:?}"
        );

        for m in [n - 1, n + 1] {
            if m == 0 {
                continue;
            }
            let wrong_arity = func(&format!(
                "  %r = {name} {} : {good_ty}\n",
                good[..m].join(", ")
            ));
            let e = errors(&wrong_arity);
            assert!(
                e.iter()
                    .any(|d| d.message.contains(&format!("takes {n} operand(s)"))),
                "{name} with {m} operands: {e:?}"
            );
        }
    }
}

#[test]
fn linalg_elementwise_ops_take_their_arity_on_any_element_type() {
    for &op in ElementwiseOp::ALL.iter().filter(|o| o.is_linalg()) {
        let name = op.name();
        assert_eq!(op.kind(), ElemKind::Any, "{name}");
        let n = op.arity();
        assert_eq!(LinalgNamedOp::Elementwise(op).inputs(), n);
        for (v, t) in [("%t", "tensor<4xf32>"), ("%u", "tensor<4xi32>")] {
            let ins = vec![v; n].join(", ");
            let tys = vec![t; n].join(", ");
            let line = format!("  %r = {name} ins({ins} : {tys}) outs({v} : {t}) -> {t}\n");
            let text = func(&line);
            let (m, diags) = check(&text).unwrap_or_else(|d| panic!("{name}: {d:?}"));
            assert!(diags.is_empty(), "{name}: {diags:?}");
            assert!(print(&m).contains(line.trim()), "{name}: {}", print(&m));

            let ins = vec![v; n + 1].join(", ");
            let tys = vec![t; n + 1].join(", ");
            let wrong = func(&format!(
                "  %r = {name} ins({ins} : {tys}) outs({v} : {t}) -> {t}\n"
            ));
            let e = errors(&wrong);
            assert!(
                e.iter()
                    .any(|d| d.message.contains(&format!("takes {n} input(s)"))),
                "{name}: {e:?}"
            );
        }
    }
}
