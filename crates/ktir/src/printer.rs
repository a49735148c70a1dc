//! The canonical KTIR printer: output parses back to the same tree, in the newest
//! spellings (`#ktdp.memory_space<...>`, `!ktdp.access_tile<...>`).

use crate::ast::*;
use std::fmt::Write;

/// Prints a module in canonical form.
pub fn print(module: &Module) -> String {
    let mut out = String::new();
    for a in &module.aliases {
        let _ = writeln!(out, "#{} = {}", a.name, attr(&a.value));
    }
    if !module.aliases.is_empty() {
        out.push('\n');
    }
    out.push_str("module {\n");
    for (i, f) in module.funcs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        func(&mut out, f);
    }
    out.push_str("}\n");
    out
}

fn func(out: &mut String, f: &Func) {
    let args: Vec<String> = f
        .args
        .iter()
        .map(|(n, t)| format!("%{n}: {}", ty(t)))
        .collect();
    let _ = write!(out, "  func.func @{}({})", f.name, args.join(", "));
    match f.results.len() {
        0 => {}
        1 => {
            let _ = write!(out, " -> {}", ty(&f.results[0]));
        }
        _ => {
            let r: Vec<String> = f.results.iter().map(ty).collect();
            let _ = write!(out, " -> ({})", r.join(", "));
        }
    }
    if let Some(g) = &f.grid {
        let _ = write!(out, " attributes {{grid = [{}]}}", join(g));
    }
    out.push_str(" {\n");
    block(out, &f.body, 2);
    out.push_str("  }\n");
}

fn block(out: &mut String, b: &Block, indent: usize) {
    for op in &b.ops {
        for _ in 0..indent {
            out.push_str("  ");
        }
        self::op(out, op, indent);
        out.push('\n');
    }
}

fn join<T: ToString>(v: &[T]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn val(v: &Value) -> String {
    format!("%{}", v.name)
}

fn vals(v: &[Value]) -> String {
    v.iter().map(val).collect::<Vec<_>>().join(", ")
}

fn size(s: &SizeOperand) -> String {
    match s {
        SizeOperand::Static(n) => n.to_string(),
        SizeOperand::Dynamic(v) => val(v),
    }
}

fn sizes(s: &[SizeOperand]) -> String {
    s.iter().map(size).collect::<Vec<_>>().join(", ")
}

fn types(t: &[Type]) -> String {
    t.iter().map(ty).collect::<Vec<_>>().join(", ")
}

fn op(out: &mut String, op: &Op, indent: usize) {
    if !op.results.is_empty() {
        let names: Vec<String> = op.results.iter().map(|r| format!("%{r}")).collect();
        let _ = write!(out, "{} = ", names.join(", "));
    }
    let name = op.kind.name();
    let rt = |i: usize| op.result_types.get(i).map(ty).unwrap_or_default();
    match &op.kind {
        OpKind::Return { values } => {
            out.push_str("func.return");
            if !values.is_empty() {
                // Types of returned values are not tracked by this tree; functions in this
                // subset return nothing.
                let _ = write!(out, " {}", vals(values));
            }
        }
        OpKind::Constant { value } => {
            let _ = write!(out, "{name} {} : {}", literal(value), rt(0));
        }
        OpKind::Binary { lhs, rhs, .. } => {
            let _ = write!(out, "{name} {}, {} : {}", val(lhs), val(rhs), rt(0));
        }
        OpKind::Unary { operand, .. } => {
            let _ = write!(out, "{name} {} : {}", val(operand), rt(0));
        }
        OpKind::GetComputeTileId => {
            let _ = write!(out, "{name} : {}", types(&op.result_types));
        }
        OpKind::ConstructMemoryView {
            base,
            sizes: sz,
            strides,
            coordinate_set,
            memory_space,
        } => {
            let _ = write!(
                out,
                "{name} {}, sizes: [{}], strides: [{}]",
                val(base),
                sizes(sz),
                sizes(strides)
            );
            let mut attrs = Vec::new();
            if let Some(c) = coordinate_set {
                attrs.push(format!("coordinate_set = {}", attr(c)));
            }
            if let Some(m) = memory_space {
                attrs.push(format!("memory_space = {}", mem_space(m)));
            }
            attr_dict(out, &attrs, indent);
            let _ = write!(out, " : {}", rt(0));
        }
        OpKind::ConstructAccessTile {
            view,
            subscripts,
            operands,
            access_tile_set,
            access_tile_order,
            symbols,
            view_type,
        } => {
            let names: Vec<String> = operands.iter().map(val).collect();
            let subs: Vec<String> = subscripts.iter().map(|e| expr(e, &names, &[])).collect();
            let _ = write!(out, "{name} {}[{}]", val(view), subs.join(", "));
            if !symbols.is_empty() {
                let _ = write!(out, " symbols({})", vals(symbols));
            }
            let mut attrs = Vec::new();
            if let Some(s) = access_tile_set {
                attrs.push(format!("access_tile_set = {}", attr(s)));
            }
            if let Some(o) = access_tile_order {
                attrs.push(format!("access_tile_order = {}", attr(o)));
            }
            attr_dict(out, &attrs, indent);
            let _ = write!(out, " : {} -> {}", ty(view_type), rt(0));
        }
        OpKind::Load { tile, tile_type } => {
            let _ = write!(out, "{name} {} : {} -> {}", val(tile), ty(tile_type), rt(0));
        }
        OpKind::Store {
            value,
            tile,
            value_type,
            tile_type,
        } => {
            let _ = write!(
                out,
                "{name} {}, {} : {}, {}",
                val(value),
                val(tile),
                ty(value_type),
                ty(tile_type)
            );
        }
        OpKind::TensorEmpty { dynamic_sizes } => {
            let _ = write!(out, "{name}({}) : {}", vals(dynamic_sizes), rt(0));
        }
        OpKind::CollapseShape {
            source,
            reassociation,
            source_type,
        } => {
            let _ = write!(
                out,
                "{name} {} {} : {} into {}",
                val(source),
                reassoc(reassociation),
                ty(source_type),
                rt(0)
            );
        }
        OpKind::ExpandShape {
            source,
            reassociation,
            output_shape,
            source_type,
        } => {
            let _ = write!(
                out,
                "{name} {} {} output_shape [{}] : {} into {}",
                val(source),
                reassoc(reassociation),
                sizes(output_shape),
                ty(source_type),
                rt(0)
            );
        }
        OpKind::Fill {
            value,
            value_type,
            init,
            init_type,
        } => {
            let _ = write!(
                out,
                "{name} ins({} : {}) outs({} : {}) -> {}",
                val(value),
                ty(value_type),
                val(init),
                ty(init_type),
                rt(0)
            );
        }
        OpKind::Matmul {
            lhs,
            rhs,
            init,
            input_types,
            init_type,
        } => {
            let _ = write!(
                out,
                "{name} ins({}, {} : {}) outs({} : {}) -> {}",
                val(lhs),
                val(rhs),
                types(input_types),
                val(init),
                ty(init_type),
                rt(0)
            );
        }
        OpKind::Transpose {
            input,
            input_type,
            init,
            init_type,
            permutation,
        } => {
            let _ = write!(
                out,
                "{name} ins({} : {}) outs({} : {}) permutation = [{}]",
                val(input),
                ty(input_type),
                val(init),
                ty(init_type),
                join(permutation)
            );
        }
        OpKind::Broadcast {
            input,
            input_type,
            init,
            init_type,
            dimensions,
        } => {
            let _ = write!(
                out,
                "{name} ins({} : {}) outs({} : {}) dimensions = [{}]",
                val(input),
                ty(input_type),
                val(init),
                ty(init_type),
                join(dimensions)
            );
        }
        OpKind::For {
            induction,
            lower,
            upper,
            step,
            iter_args,
            body,
        } => {
            let _ = write!(
                out,
                "{name} %{induction} = {} to {} step {}",
                val(lower),
                val(upper),
                val(step)
            );
            if !iter_args.is_empty() {
                let a: Vec<String> = iter_args
                    .iter()
                    .map(|(n, v)| format!("%{n} = {}", val(v)))
                    .collect();
                let _ = write!(
                    out,
                    " iter_args({}) -> ({})",
                    a.join(", "),
                    types(&op.result_types)
                );
            }
            out.push_str(" {\n");
            self::block(out, body, indent + 1);
            for _ in 0..indent {
                out.push_str("  ");
            }
            out.push('}');
        }
        OpKind::Yield { values, types: t } => {
            out.push_str(name);
            if !values.is_empty() {
                let _ = write!(out, " {} : {}", vals(values), types(t));
            }
        }
    }
}

fn attr_dict(out: &mut String, attrs: &[String], indent: usize) {
    if attrs.is_empty() {
        return;
    }
    out.push_str(" {\n");
    let pad = "  ".repeat(indent + 2);
    for (i, a) in attrs.iter().enumerate() {
        let _ = write!(
            out,
            "{pad}{a}{}",
            if i + 1 < attrs.len() { ",\n" } else { "\n" }
        );
    }
    let _ = write!(out, "{}}}", "  ".repeat(indent));
}

fn reassoc(r: &[Vec<usize>]) -> String {
    let groups: Vec<String> = r.iter().map(|g| format!("[{}]", join(g))).collect();
    format!("[{}]", groups.join(", "))
}

fn literal(l: &Literal) -> String {
    match l {
        Literal::Int(i) => i.to_string(),
        Literal::Float(f) => float(*f),
        Literal::DenseSplat(f) => format!("dense<{}>", float(*f)),
        Literal::Dense(v) => {
            let items: Vec<String> = v.iter().map(|f| float(*f)).collect();
            format!("dense<[{}]>", items.join(", "))
        }
    }
}

/// Floats always carry a `.` or an exponent so they read back as floats.
fn float(f: f64) -> String {
    if f.is_finite() && f == f.trunc() && f.abs() < 1e15 {
        format!("{f:.1}")
    } else {
        format!("{f:e}")
    }
}

/// Prints a type in canonical form.
pub fn ty(t: &Type) -> String {
    let shape = |s: &[Dim]| -> String { s.iter().map(|d| format!("{d}x")).collect() };
    match t {
        Type::Scalar(s) => s.name().to_string(),
        Type::Tensor { shape: s, elem } => format!("tensor<{}{}>", shape(s), elem.name()),
        Type::MemRef {
            shape: s,
            elem,
            memory_space,
        } => match memory_space {
            Some(m) => format!("memref<{}{}, {}>", shape(s), elem.name(), mem_space(m)),
            None => format!("memref<{}{}>", shape(s), elem.name()),
        },
        Type::AccessTile { shape: s } => format!("!ktdp.access_tile<{}index>", shape(s)),
    }
}

fn mem_space(m: &MemorySpace) -> String {
    match m {
        MemorySpace::Global => "#ktdp.memory_space<global>".into(),
        MemorySpace::Local { core: None } => "#ktdp.memory_space<ct_local>".into(),
        MemorySpace::Local { core: Some(c) } => {
            format!("#ktdp.memory_space<ct_local, ct_id = {c}>")
        }
    }
}

/// Prints an attribute.
pub fn attr(a: &Attr) -> String {
    match a {
        Attr::AliasRef(n) => format!("#{n}"),
        Attr::Set(s) => {
            let dims: Vec<String> = (0..s.dims).map(|i| format!("d{i}")).collect();
            let syms: Vec<String> = (0..s.syms).map(|i| format!("s{i}")).collect();
            let cons: Vec<String> = s
                .constraints
                .iter()
                .map(|c| {
                    format!(
                        "{} {} 0",
                        expr(&c.expr, &dims, &syms),
                        if c.equality { "==" } else { ">=" }
                    )
                })
                .collect();
            format!(
                "affine_set<({}){} : ({})>",
                dims.join(", "),
                sym_list(&syms),
                cons.join(", ")
            )
        }
        Attr::Map(m) => {
            let dims: Vec<String> = (0..m.dims).map(|i| format!("d{i}")).collect();
            let syms: Vec<String> = (0..m.syms).map(|i| format!("s{i}")).collect();
            let res: Vec<String> = m.results.iter().map(|e| expr(e, &dims, &syms)).collect();
            format!(
                "affine_map<({}){} -> ({})>",
                dims.join(", "),
                sym_list(&syms),
                res.join(", ")
            )
        }
    }
}

fn sym_list(syms: &[String]) -> String {
    if syms.is_empty() {
        String::new()
    } else {
        format!("[{}]", syms.join(", "))
    }
}

/// Prints an affine expression; `Dim(i)` prints as `dims[i]`.
pub fn expr(e: &AffineExpr, dims: &[String], syms: &[String]) -> String {
    expr_prec(e, dims, syms, 0)
}

fn expr_prec(e: &AffineExpr, dims: &[String], syms: &[String], prec: u8) -> String {
    let wrap = |s: String, mine: u8| if mine < prec { format!("({s})") } else { s };
    match e {
        AffineExpr::Dim(i) => dims.get(*i).cloned().unwrap_or_else(|| format!("d{i}")),
        AffineExpr::Sym(i) => syms.get(*i).cloned().unwrap_or_else(|| format!("s{i}")),
        AffineExpr::Const(c) => {
            if *c < 0 && prec > 0 {
                format!("({c})")
            } else {
                c.to_string()
            }
        }
        AffineExpr::Add(a, b) => {
            let left = expr_prec(a, dims, syms, 1);
            // `a + -1 * b` prints as `a - b`, and `a + -3` as `a - 3`.
            let s = match b.as_ref() {
                AffineExpr::Mul(c, rest) if **c == AffineExpr::Const(-1) => {
                    format!("{left} - {}", expr_prec(rest, dims, syms, 2))
                }
                AffineExpr::Const(c) if *c < 0 => format!("{left} - {}", c.unsigned_abs()),
                _ => format!("{left} + {}", expr_prec(b, dims, syms, 1)),
            };
            wrap(s, 1)
        }
        AffineExpr::Mul(a, b) => {
            if **a == AffineExpr::Const(-1) {
                return wrap(format!("-{}", expr_prec(b, dims, syms, 3)), 2);
            }
            wrap(
                format!(
                    "{} * {}",
                    expr_prec(a, dims, syms, 2),
                    expr_prec(b, dims, syms, 3)
                ),
                2,
            )
        }
        AffineExpr::FloorDiv(a, b) => wrap(
            format!(
                "{} floordiv {}",
                expr_prec(a, dims, syms, 2),
                expr_prec(b, dims, syms, 3)
            ),
            2,
        ),
        AffineExpr::CeilDiv(a, b) => wrap(
            format!(
                "{} ceildiv {}",
                expr_prec(a, dims, syms, 2),
                expr_prec(b, dims, syms, 3)
            ),
            2,
        ),
        AffineExpr::Mod(a, b) => wrap(
            format!(
                "{} mod {}",
                expr_prec(a, dims, syms, 2),
                expr_prec(b, dims, syms, 3)
            ),
            2,
        ),
    }
}
