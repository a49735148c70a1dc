//! The canonical KTIR printer: output parses back to the same tree, in the newest
//! spellings (`#ktdp.memory_space<...>`, `!ktdp.access_tile<...>`).

use crate::ast::*;
use std::fmt::Write;

/// Prints a module in canonical form.
pub fn print(module: &Module) -> String {
    print_marked(module).0
}

/// Prints a module in canonical form and sets the spans of its functions and operations to
/// where they landed in the returned text, as parsing that text would set them. A tree that
/// was built rather than parsed then runs with the line numbers of the text shown for it,
/// without parsing the text back.
pub fn print_assigning_spans(module: &mut Module) -> String {
    let (text, marks) = print_marked(module);
    let mut ops = marks.ops.into_iter();
    for (f, s) in module.funcs.iter_mut().zip(marks.funcs) {
        // The parser's header ends after its argument list's trailing blanks, or right
        // after the result types.
        let end = if f.results.is_empty() {
            skip_blank(&text, s.end as usize)
        } else {
            s.end as usize
        };
        f.span = Span::new(s.start as usize, end);
        assign(&mut f.body, &mut ops, &text);
    }
    text
}

/// Where each function header and each op landed in the printed text, in print order
/// (regions in [`OpKind::regions`] order, so [`assign`] can walk the tree the same way).
#[derive(Default)]
struct Marks {
    funcs: Vec<Span>,
    ops: Vec<Span>,
}

/// Sets the spans of `b`'s ops (nested ones included) from `spans`, in print order. An op
/// ends where the parser's does: after the whitespace and comments that follow it.
fn assign(b: &mut Block, spans: &mut impl Iterator<Item = Span>, text: &str) {
    for op in &mut b.ops {
        if let Some(s) = spans.next() {
            op.span = Span::new(s.start as usize, skip_blank(text, s.end as usize));
        }
        for r in op.kind.regions_mut() {
            assign(r, spans, text);
        }
    }
}

/// The first offset at or after `at` that is neither whitespace nor in a `//` comment.
fn skip_blank(text: &str, mut at: usize) -> usize {
    loop {
        let rest = text.get(at..).unwrap_or("");
        let trimmed = rest.trim_start();
        at += rest.len() - trimmed.len();
        if trimmed.starts_with("//") {
            at += trimmed.find('\n').unwrap_or(trimmed.len());
        } else {
            return at;
        }
    }
}

fn print_marked(module: &Module) -> (String, Marks) {
    let mut out = String::new();
    let mut marks = Marks::default();
    for c in &module.comments {
        let _ = writeln!(out, "// {c}");
    }
    for (n, t) in &module.type_aliases {
        let _ = writeln!(out, "!{n} = {}", ty(t));
    }
    for a in &module.aliases {
        let _ = writeln!(out, "#{} = {}", a.name, attr(&a.value));
    }
    if !module.aliases.is_empty() || !module.type_aliases.is_empty() {
        out.push('\n');
    }
    out.push_str("module {\n");
    for (i, f) in module.funcs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        func(&mut out, &mut marks, f);
    }
    out.push_str("}\n");
    (out, marks)
}

fn func(out: &mut String, m: &mut Marks, f: &Func) {
    if let Some(c) = &f.comment {
        let _ = writeln!(out, "  // {c}");
    }
    let args: Vec<String> = f
        .args
        .iter()
        .map(|(n, t)| format!("%{n}: {}", ty(t)))
        .collect();
    out.push_str("  ");
    let start = out.len();
    let _ = write!(out, "func.func @{}({})", f.name, args.join(", "));
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
    m.funcs.push(Span::new(start, out.len()));
    if let Some(g) = &f.grid {
        let _ = write!(out, " attributes {{grid = [{}]}}", join(g));
    }
    out.push_str(" {\n");
    block(out, m, &f.body, 2);
    out.push_str("  }\n");
}

fn block(out: &mut String, m: &mut Marks, b: &Block, indent: usize) {
    for op in &b.ops {
        for _ in 0..indent {
            out.push_str("  ");
        }
        // Reserved before the op prints, so nested ops come after it: print order.
        let i = m.ops.len();
        let start = out.len();
        m.ops.push(Span::new(start, start));
        self::op(out, m, op, indent);
        if let Some(s) = m.ops.get_mut(i) {
            *s = Span::new(start, out.len());
        }
        if let Some(c) = &op.comment {
            let _ = write!(out, "  // {c}");
        }
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

/// `%r:2` when the results are `r#0, r#1`, else the names one by one.
fn result_names(results: &[String]) -> String {
    if results.len() > 1 {
        if let Some((base, _)) = results[0].split_once('#') {
            let grouped = results
                .iter()
                .enumerate()
                .all(|(i, r)| *r == format!("{base}#{i}"));
            if grouped {
                return format!("%{base}:{}", results.len());
            }
        }
    }
    let names: Vec<String> = results.iter().map(|r| format!("%{r}")).collect();
    names.join(", ")
}

fn pad(out: &mut String, indent: usize) {
    for _ in 0..indent {
        out.push_str("  ");
    }
}

/// ` {\n ^bb0(args):\n ops }` for regions whose arguments are written in a label.
fn labelled_region(out: &mut String, m: &mut Marks, b: &Block, indent: usize) {
    out.push_str(" {\n");
    if !b.args.is_empty() {
        pad(out, indent);
        let args: Vec<String> = b
            .args
            .iter()
            .map(|(n, t)| format!("%{n}: {}", ty(t)))
            .collect();
        let _ = writeln!(out, "^bb0({}):", args.join(", "));
    }
    block(out, m, b, indent + 1);
    pad(out, indent);
    out.push('}');
}

/// ` {\n ops }` for regions whose arguments are implicit.
fn plain_region(out: &mut String, m: &mut Marks, b: &Block, indent: usize) {
    out.push_str(" {\n");
    block(out, m, b, indent + 1);
    pad(out, indent);
    out.push('}');
}

fn typed_group(keyword: &str, group: &[(Value, Type)]) -> String {
    let v: Vec<String> = group.iter().map(|(v, _)| val(v)).collect();
    let t: Vec<String> = group.iter().map(|(_, t)| ty(t)).collect();
    format!("{keyword}({} : {})", v.join(", "), t.join(", "))
}

fn arrow_types(t: &[Type]) -> String {
    match t.len() {
        0 => String::new(),
        1 => format!(" -> {}", ty(&t[0])),
        _ => format!(" -> ({})", types(t)),
    }
}

fn op(out: &mut String, m: &mut Marks, op: &Op, indent: usize) {
    if !op.results.is_empty() {
        let _ = write!(out, "{} = ", result_names(&op.results));
    }
    let name = op.kind.name();
    let rt = |i: usize| op.result_types.get(i).map(ty).unwrap_or_default();
    let elem = op.result_types.first().and_then(Type::elem);
    match &op.kind {
        OpKind::Return { values, types: t } => {
            out.push_str("func.return");
            if !values.is_empty() {
                let _ = write!(out, " {} : {}", vals(values), types(t));
            }
        }
        OpKind::Constant { value } => {
            let _ = write!(out, "{name} {} : {}", literal(value, elem), rt(0));
        }
        OpKind::GetComputeTileId { dim } => match dim {
            Some(d) => {
                let _ = write!(out, "{name} {{dim = {d}}} : {}", types(&op.result_types));
            }
            None => {
                let _ = write!(out, "{name} : {}", types(&op.result_types));
            }
        },
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
            self::block(out, m, body, indent + 1);
            for _ in 0..indent {
                out.push_str("  ");
            }
            out.push('}');
        }
        OpKind::Yield { values, types: t }
        | OpKind::YieldPartial { values, types: t }
        | OpKind::YieldReduced { values, types: t }
        | OpKind::LinalgYield { values, types: t } => {
            out.push_str(name);
            if !values.is_empty() {
                let _ = write!(out, " {} : {}", vals(values), types(t));
            }
        }
        OpKind::LinalgIndex { dim } => {
            let _ = write!(out, "{name} {dim} : {}", rt(0));
        }
        OpKind::Elementwise { operands, .. } => {
            let _ = write!(out, "{name} {} : {}", vals(operands), rt(0));
        }
        OpKind::Compare {
            predicate,
            lhs,
            rhs,
            operand_type,
            ..
        } => {
            let _ = write!(
                out,
                "{name} {}, {}, {} : {}",
                predicate.name(),
                val(lhs),
                val(rhs),
                ty(operand_type)
            );
        }
        OpKind::Select {
            cond,
            true_value,
            false_value,
            cond_type,
        } => {
            let _ = write!(
                out,
                "{name} {}, {}, {} : ",
                val(cond),
                val(true_value),
                val(false_value)
            );
            if let Some(c) = cond_type {
                let _ = write!(out, "{}, ", ty(c));
            }
            out.push_str(&rt(0));
        }
        OpKind::Cast {
            operand,
            source_type,
            ..
        } => {
            let _ = write!(
                out,
                "{name} {} : {} to {}",
                val(operand),
                ty(source_type),
                rt(0)
            );
        }
        OpKind::ConstructDistributedMemoryView { views, view_types } => {
            let _ = write!(
                out,
                "{name} ({} : {}) : {}",
                vals(views),
                types(view_types),
                rt(0)
            );
        }
        OpKind::ConstructIndirectAccessTile {
            variables,
            base,
            subscripts,
            dims,
            symbols,
            variables_space_set,
            variables_space_order,
            base_type,
            index_types,
        } => {
            let names: Vec<String> = dims.iter().map(val).collect();
            let vars: Vec<String> = variables.iter().map(|v| format!("%{v}")).collect();
            let subs: Vec<String> = subscripts
                .iter()
                .map(|s| match s {
                    IndirectSubscript::Direct(e) => format!("({})", expr(e, &names, &[])),
                    IndirectSubscript::Indirect { view, exprs } => {
                        let e: Vec<String> = exprs.iter().map(|e| expr(e, &names, &[])).collect();
                        format!("ind({}[{}])", val(view), e.join(", "))
                    }
                })
                .collect();
            let _ = write!(
                out,
                "{name} intermediate_variables({}) {}[{}]",
                vars.join(", "),
                val(base),
                subs.join(", ")
            );
            if !symbols.is_empty() {
                let _ = write!(out, " symbols({})", vals(symbols));
            }
            let mut attrs = Vec::new();
            if let Some(s) = variables_space_set {
                attrs.push(format!("variables_space_set = {}", attr(s)));
            }
            if let Some(o) = variables_space_order {
                attrs.push(format!("variables_space_order = {}", attr(o)));
            }
            attr_dict(out, &attrs, indent);
            let _ = write!(out, " : {}", ty(base_type));
            for t in index_types {
                let _ = write!(out, ", {}", ty(t));
            }
            let _ = write!(out, " -> {}", rt(0));
        }
        OpKind::RuntimeArgExtract {
            field,
            input,
            input_type,
        } => {
            let _ = write!(
                out,
                "{name} {} from {} : {} -> {}",
                field.name(),
                val(input),
                ty(input_type),
                rt(0)
            );
        }
        OpKind::InterTileProduce {
            producer_tiles_per_group,
            body,
        } => {
            // The inter-tile document's spelling, which names the partial types twice.
            let partials = match op.result_types.first() {
                Some(Type::TileFuture { partials, .. }) if !partials.is_empty() => {
                    format!(" : {}", types(partials))
                }
                _ => String::new(),
            };
            let _ = write!(
                out,
                "{name} producer_tiles_per_group = {}{partials} -> {}",
                attr(producer_tiles_per_group),
                rt(0)
            );
            labelled_region(out, m, body, indent);
        }
        OpKind::InterTileConsume {
            future,
            consumer_tiles_per_group,
            producer_dependency_per_consumer,
            future_type,
        } => {
            let _ = write!(
                out,
                "{name}({}) consumer_tiles_per_group = {}",
                val(future),
                attr(consumer_tiles_per_group)
            );
            if let Some(d) = producer_dependency_per_consumer {
                let _ = write!(out, ", producer_dependency_per_consumer = {}", attr(d));
            }
            let _ = write!(out, " : {} -> {}", ty(future_type), types(&op.result_types));
        }
        OpKind::InterTileReduce {
            future,
            consumer_tiles_per_group,
            producer_dependency_per_consumer,
            identity,
            identity_types,
            future_type,
            combiner,
        } => {
            let _ = write!(
                out,
                "{name}({}) consumer_tiles_per_group = {}, ",
                val(future),
                attr(consumer_tiles_per_group)
            );
            if let Some(d) = producer_dependency_per_consumer {
                let _ = write!(out, "producer_dependency_per_consumer = {}, ", attr(d));
            }
            if identity.is_empty() {
                out.push_str("identity()");
            } else {
                let _ = write!(
                    out,
                    "identity({} : {})",
                    vals(identity),
                    types(identity_types)
                );
            }
            let _ = write!(out, " : {} -> {}", ty(future_type), types(&op.result_types));
            labelled_region(out, m, combiner, indent);
        }
        OpKind::If {
            cond,
            then_block,
            else_block,
        } => {
            let _ = write!(out, "{name} {}", val(cond));
            if !op.result_types.is_empty() {
                let _ = write!(out, " -> ({})", types(&op.result_types));
            }
            plain_region(out, m, then_block, indent);
            if let Some(e) = else_block {
                out.push_str(" else");
                plain_region(out, m, e, indent);
            }
        }
        OpKind::TensorSplat {
            value,
            dynamic_sizes,
        } => {
            let _ = write!(out, "{name} {}", val(value));
            if !dynamic_sizes.is_empty() {
                let _ = write!(out, "[{}]", vals(dynamic_sizes));
            }
            let _ = write!(out, " : {}", rt(0));
        }
        OpKind::TensorExtract {
            tensor,
            indices,
            tensor_type,
        } => {
            let _ = write!(
                out,
                "{name} {}[{}] : {}",
                val(tensor),
                vals(indices),
                ty(tensor_type)
            );
        }
        OpKind::TensorInsert {
            scalar,
            dest,
            indices,
            dest_type,
        } => {
            let _ = write!(
                out,
                "{name} {} into {}[{}] : {}",
                val(scalar),
                val(dest),
                vals(indices),
                ty(dest_type)
            );
        }
        OpKind::ExtractSlice {
            source,
            offsets,
            sizes: sz,
            strides,
            source_type,
        } => {
            let _ = write!(
                out,
                "{name} {}[{}] [{}] [{}] : {} to {}",
                val(source),
                sizes(offsets),
                sizes(sz),
                sizes(strides),
                ty(source_type),
                rt(0)
            );
        }
        OpKind::InsertSlice {
            source,
            dest,
            offsets,
            sizes: sz,
            strides,
            source_type,
            dest_type,
        } => {
            let _ = write!(
                out,
                "{name} {} into {}[{}] [{}] [{}] : {} into {}",
                val(source),
                val(dest),
                sizes(offsets),
                sizes(sz),
                sizes(strides),
                ty(source_type),
                ty(dest_type)
            );
        }
        OpKind::LinalgNamed { inputs, inits, .. } => {
            let _ = write!(
                out,
                "{name} {} {}{}",
                typed_group("ins", inputs),
                typed_group("outs", inits),
                arrow_types(&op.result_types)
            );
        }
        OpKind::LinalgGeneric {
            indexing_maps,
            iterator_types,
            inputs,
            inits,
            body,
        } => {
            let maps: Vec<String> = indexing_maps.iter().map(attr).collect();
            let its: Vec<String> = iterator_types.iter().map(|i| format!("\"{i}\"")).collect();
            let _ = write!(
                out,
                "{name} {{indexing_maps = [{}], iterator_types = [{}]}} {} {}",
                maps.join(", "),
                its.join(", "),
                typed_group("ins", inputs),
                typed_group("outs", inits)
            );
            labelled_region(out, m, body, indent);
            out.push_str(&arrow_types(&op.result_types));
        }
        OpKind::LinalgReduce {
            inputs,
            inits,
            dimensions,
            body,
            shorthand,
        } => {
            out.push_str(name);
            if let Some(s) = shorthand {
                let _ = write!(out, " {{ {} }}", s.name());
            }
            let _ = write!(
                out,
                " {} {} dimensions = [{}]",
                typed_group("ins", inputs),
                typed_group("outs", inits),
                join(dimensions)
            );
            if shorthand.is_none() {
                let args: Vec<String> = body
                    .args
                    .iter()
                    .map(|(n, t)| format!("%{n}: {}", ty(t)))
                    .collect();
                let _ = write!(out, " ({})", args.join(", "));
                plain_region(out, m, body, indent);
            }
        }
        OpKind::Generic {
            operands,
            operand_types,
            attrs,
            regions,
            ..
        } => {
            let _ = write!(out, "\"{name}\"({})", vals(operands));
            if !regions.is_empty() {
                out.push_str(" (");
                for (i, r) in regions.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    labelled_region(out, m, r, indent);
                    if i + 1 == regions.len() {
                        out.push(' ');
                    }
                }
                out.push(')');
            }
            if !attrs.is_empty() {
                let a: Vec<String> = attrs
                    .iter()
                    .map(|(k, v)| {
                        let key = if k
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                            && k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                        {
                            k.clone()
                        } else {
                            format!("\"{k}\"")
                        };
                        if v.is_empty() {
                            key
                        } else {
                            format!("{key} = {v}")
                        }
                    })
                    .collect();
                let _ = write!(out, " {{{}}}", a.join(", "));
            }
            let _ = write!(out, " : ({})", types(operand_types));
            match op.result_types.len() {
                1 => {
                    let _ = write!(out, " -> {}", rt(0));
                }
                _ => {
                    let _ = write!(out, " -> ({})", types(&op.result_types));
                }
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

fn literal(l: &Literal, elem: Option<ScalarType>) -> String {
    let int_elem = elem.is_some_and(|e| !e.is_float());
    let item = |f: f64| {
        if int_elem && f == f.trunc() && f.abs() < 1e15 {
            format!("{}", f as i64)
        } else {
            float(f, elem)
        }
    };
    match l {
        Literal::Int(i) => i.to_string(),
        Literal::Float(f) => float(*f, elem),
        Literal::DenseSplat(f) => format!("dense<{}>", item(*f)),
        Literal::Dense(v) => {
            let items: Vec<String> = v.iter().map(|f| item(*f)).collect();
            format!("dense<[{}]>", items.join(", "))
        }
    }
}

/// Floats always carry a `.` or an exponent so they read back as floats; infinities and
/// NaN print as the hexadecimal bit pattern of `elem`, as MLIR does.
fn float(f: f64, elem: Option<ScalarType>) -> String {
    if !f.is_finite() {
        return match elem {
            Some(ScalarType::F16) => format!("0x{:04X}", crate::ast::f16_bits(f)),
            Some(ScalarType::BF16) => format!("0x{:04X}", (f as f32).to_bits() >> 16),
            Some(ScalarType::F64) => format!("0x{:016X}", f.to_bits()),
            _ => format!("0x{:08X}", (f as f32).to_bits()),
        };
    }
    if f == f.trunc() && f.abs() < 1e15 {
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
        Type::TileFuture { partials, groups } if partials.is_empty() => {
            format!("!ktdp.tile_future<(), groups = {}>", attr(groups))
        }
        Type::TileFuture { partials, groups } => format!(
            "!ktdp.tile_future<{}, groups = {}>",
            types(partials),
            attr(groups)
        ),
        Type::RuntimeArg {
            underlying,
            granularity,
            upperbound,
        } => {
            let mut s = format!("!ktdp.runtime_arg<{}", ty(underlying));
            if let Some(g) = granularity {
                let _ = write!(s, ", granularity = {g}");
            }
            if let Some(u) = upperbound {
                let _ = write!(s, ", upperbound = {u}");
            }
            s.push('>');
            s
        }
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
        Attr::Other(s) => s.clone(),
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
