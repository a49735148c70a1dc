//! Verifier rules for the ops beyond the core subset: distributed and indirect views,
//! runtime arguments, inter-tile communication (rules R1-R4, R8, R13, R14 of the
//! inter-tile design), structured control flow, tensor and linalg ops, the generic form,
//! and the warnings for programs that touch the spec's known gaps.

use super::{type_str, Scope, ValueInfo, Verifier};
use crate::ast::*;
use foldhash::{HashMap, HashMapExt};
use std::collections::BTreeSet;

/// Most points a set may have for the verifier to enumerate it.
const ENUM_LIMIT: i64 = 1 << 12;

/// What defines a value, for rules that look across ops.
#[derive(Clone)]
pub(super) enum Def {
    /// `ktdp.construct_memory_view`.
    View { set: Option<Attr> },
    /// `ktdp.inter_tile_produce`.
    Produce { set: Attr, span: Span },
}

fn walk<'b>(b: &'b Block, f: &mut dyn FnMut(&'b Op)) {
    for op in &b.ops {
        f(op);
        for r in op.kind.regions() {
            walk(r, f);
        }
    }
}

impl<'m, 't> Verifier<'m, 't> {
    /// Collects what the function-level rules need before the ops are checked.
    pub(super) fn prepare(&mut self, f: &Func) {
        self.all_names.clear();
        self.defs.clear();
        self.uses.clear();
        self.remote_store = None;
        self.remote_load = false;
        let mut names = Vec::new();
        let mut defs = Vec::new();
        fn args(b: &Block, names: &mut Vec<String>) {
            names.extend(b.args.iter().map(|(n, _)| n.clone()));
        }
        walk(&f.body, &mut |op| {
            names.extend(op.results.iter().cloned());
            for r in op.kind.regions() {
                args(r, &mut names);
            }
            if let OpKind::ConstructIndirectAccessTile { variables, .. } = &op.kind {
                names.extend(variables.iter().cloned());
            }
            let def = match &op.kind {
                OpKind::ConstructMemoryView {
                    coordinate_set,
                    sizes,
                    ..
                } => Some(Def::View {
                    set: Some(
                        coordinate_set
                            .clone()
                            .unwrap_or_else(|| Attr::Set(AffineSet::whole_view(sizes))),
                    ),
                }),
                OpKind::InterTileProduce {
                    producer_tiles_per_group,
                    ..
                } => Some(Def::Produce {
                    set: producer_tiles_per_group.clone(),
                    span: op.span,
                }),
                _ => None,
            };
            if let (Some(d), Some(r)) = (def, op.results.first()) {
                defs.push((r.clone(), d));
            }
        });
        self.all_names.extend(names);
        self.defs.extend(defs);
    }

    /// Function-level rules that need every use: R2 and the cross-core ordering gap.
    pub(super) fn finish(&mut self, _f: &Func) {
        let mut futures: Vec<(String, Span)> = self
            .defs
            .iter()
            .filter_map(|(n, d)| match d {
                Def::Produce { span, .. } => Some((n.clone(), *span)),
                _ => None,
            })
            .collect();
        futures.sort_by_key(|(_, s)| s.start);
        for (name, span) in futures {
            let n = self.uses.get(&name).copied().unwrap_or(0);
            if n != 1 {
                self.diags.error(
                    span,
                    format!(
                        "'ktdp.inter_tile_produce' future '%{name}' must have exactly one use (one delivery op), found {n}"
                    ),
                );
            }
        }
        if let (Some(span), true) = (self.remote_store, self.remote_load) {
            self.diags.warning(
                span,
                "this kernel stores into a specific core's scratchpad and loads from one: the spec has no memory-ordering rule or barrier for plain cross-core loads and stores (known gap); use inter-tile produce/consume",
            );
        }
    }

    /// Rules on types wherever they appear.
    pub(super) fn check_type(&mut self, t: &Type, span: Span) {
        match t {
            Type::RuntimeArg {
                granularity,
                upperbound,
                underlying,
            } => {
                for (what, v) in [("granularity", granularity), ("upperbound", upperbound)] {
                    if let Some(v) = v {
                        if *v <= 0 {
                            self.diags.error(
                                span,
                                format!("'!ktdp.runtime_arg' {what} must be positive, found {v}"),
                            );
                        }
                    }
                }
                if !matches!(**underlying, Type::Scalar(_)) {
                    self.diags.error(
                        span,
                        format!(
                            "'!ktdp.runtime_arg' needs a builtin scalar type, not '{}'",
                            type_str(underlying)
                        ),
                    );
                }
            }
            Type::TileFuture { partials, groups } => {
                if partials.is_empty() {
                    self.diags.error(
                        span,
                        "'!ktdp.tile_future' must carry at least one partial type",
                    );
                }
                for p in partials {
                    if !matches!(p, Type::Tensor { .. }) {
                        self.diags.error(
                            span,
                            format!(
                                "'!ktdp.tile_future' partials must be ranked tensors, not '{}'",
                                type_str(p)
                            ),
                        );
                    }
                }
                match self.module.resolve(groups) {
                    Some(Attr::Set(s)) => {
                        if s.dims != 1 || s.syms != 0 {
                            self.diags.error(
                                span,
                                "'groups' of a tile_future must be a set over one dimension (g) without symbols",
                            );
                        }
                    }
                    _ => self
                        .diags
                        .error(span, "'groups' of a tile_future must be an affine_set"),
                }
            }
            _ => {}
        }
    }

    /// Terminators must sit in the region kind they terminate.
    pub(super) fn check_terminator_parent(&mut self, op: &Op, parent: &str) {
        let allowed: &[&str] = match &op.kind {
            OpKind::Return { .. } => &["func.func"],
            OpKind::Yield { .. } => &["scf.for", "scf.if"],
            OpKind::YieldPartial { .. } => &["ktdp.inter_tile_produce"],
            OpKind::YieldReduced { .. } => &["ktdp.inter_tile_reduce"],
            OpKind::LinalgYield { .. } => &["linalg.generic", "linalg.reduce"],
            _ => return,
        };
        if !allowed.contains(&parent) {
            self.diags.error(
                op.span,
                format!(
                    "'{}' must terminate a region of {}, not of '{parent}'",
                    op.kind.name(),
                    allowed
                        .iter()
                        .map(|a| format!("'{a}'"))
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            );
        }
    }

    /// Checks a region with its own scope for the block arguments.
    pub(super) fn region(&mut self, b: &Block, scope: &mut Scope, parent: &str) {
        let mut inner = HashMap::new();
        for (n, t) in &b.args {
            self.check_type(t, Span::default());
            inner.insert(
                n.clone(),
                ValueInfo {
                    ty: t.clone(),
                    tile_elem: None,
                    remote: false,
                },
            );
        }
        scope.push(inner);
        self.block(b, scope, parent);
        scope.pop();
    }

    /// The region's last op must be `want`; returns its (values, types) when it is.
    fn terminator<'b>(
        &mut self,
        op: &Op,
        b: &'b Block,
        want: &str,
    ) -> Option<(&'b [Value], &'b [Type], Span)> {
        match b.ops.last() {
            Some(last) if last.kind.name() == want => match &last.kind {
                OpKind::Yield { values, types }
                | OpKind::YieldPartial { values, types }
                | OpKind::YieldReduced { values, types }
                | OpKind::LinalgYield { values, types } => Some((values, types, last.span)),
                _ => None,
            },
            _ => {
                self.err(op, format!("region must end with '{want}'"));
                None
            }
        }
    }

    /// Warning for a tile that cannot fit inside its view's coordinate_set.
    pub(super) fn check_tile_inside_view(
        &mut self,
        op: &Op,
        view: &Value,
        set: Option<&AffineSet>,
    ) {
        let Some(Def::View {
            set: Some(view_set),
            ..
        }) = self.defs.get(&view.name).cloned()
        else {
            return;
        };
        let Some(Attr::Set(vs)) = self.module.resolve(&view_set).cloned() else {
            return;
        };
        let Some(ts) = set else { return };
        if vs.syms != 0 || ts.syms != 0 || vs.dims != ts.dims {
            return;
        }
        let (Some(vb), Some(tb)) = (vs.box_bounds(&[]), ts.box_bounds(&[])) else {
            return;
        };
        for (d, ((vl, vh), (tl, th))) in vb.iter().zip(&tb).enumerate() {
            if th - tl > vh - vl {
                self.diags.warning(
                    op.span,
                    format!(
                        "the access tile spans {} point(s) in dimension {d} but the view's coordinate_set only {}: the spec does not say what happens to points outside a view's coordinate_set (known gap)",
                        th - tl + 1,
                        vh - vl + 1
                    ),
                );
                return;
            }
        }
    }

    fn set_attr(&mut self, op: &Op, a: &Attr, what: &str) -> Option<AffineSet> {
        match self.module.resolve(a) {
            Some(Attr::Set(s)) => Some(s.clone()),
            Some(_) => {
                self.err(op, format!("'{what}' must be an affine_set"));
                None
            }
            None => {
                self.err(op, format!("'{what}' refers to an undefined alias"));
                None
            }
        }
    }

    fn map_attr(&mut self, op: &Op, a: &Option<Attr>, what: &str) -> Option<AffineMap> {
        let Some(a) = a else {
            self.err(op, format!("requires the '{what}' attribute"));
            return None;
        };
        match self.module.resolve(a) {
            Some(Attr::Map(m)) => Some(m.clone()),
            _ => {
                self.err(op, format!("'{what}' must be an affine_map"));
                None
            }
        }
    }

    /// The typed ops the core verifier does not know.
    pub(super) fn op_ext(
        &mut self,
        op: &Op,
        scope: &mut Scope,
        infos: &[Option<ValueInfo>],
        tile_elem: &mut Option<ScalarType>,
        remote: &mut bool,
    ) {
        let rt = op.result_types.first().cloned();
        match &op.kind {
            OpKind::Compare {
                predicate,
                lhs,
                rhs,
                operand_type,
                ..
            } => {
                self.expect_type(lhs, &infos[0], operand_type, "operand");
                self.expect_type(rhs, &infos[1], operand_type, "operand");
                let float = predicate.is_float();
                if operand_type.elem().is_some_and(|e| e.is_float()) != float {
                    self.err(
                        op,
                        format!(
                            "compares {} values, not '{}'",
                            if float { "floating-point" } else { "integer" },
                            type_str(operand_type)
                        ),
                    );
                }
            }
            OpKind::Select {
                cond,
                true_value,
                false_value,
                cond_type,
            } => {
                let want_cond = cond_type.clone().unwrap_or(Type::Scalar(ScalarType::I1));
                self.expect_type(cond, &infos[0], &want_cond, "condition");
                if want_cond.elem() != Some(ScalarType::I1) {
                    self.err(op, "condition must be 'i1' or a tensor of 'i1'".into());
                }
                if let Some(t) = &rt {
                    self.expect_type(true_value, &infos[1], t, "operand");
                    self.expect_type(false_value, &infos[2], t, "operand");
                    if cond_type.is_some() && want_cond.shape() != t.shape() {
                        self.err(op, "condition shape must match the result shape".into());
                    }
                }
            }
            OpKind::Cast {
                name,
                operand,
                source_type,
            } => {
                self.expect_type(operand, &infos[0], source_type, "operand");
                if let (Some(t), Some(from)) = (&rt, source_type.elem()) {
                    if t.shape() != source_type.shape() {
                        self.err(op, "must keep the operand's shape".into());
                    }
                    let Some(to) = t.elem() else { return };
                    let ok = match name.as_str() {
                        "arith.extf" => {
                            from.is_float() && to.is_float() && to.size_bytes() > from.size_bytes()
                        }
                        "arith.truncf" => {
                            from.is_float() && to.is_float() && to.size_bytes() < from.size_bytes()
                        }
                        "arith.sitofp" | "arith.uitofp" => !from.is_float() && to.is_float(),
                        "arith.fptosi" | "arith.fptoui" => from.is_float() && !to.is_float(),
                        "arith.index_cast" | "arith.index_castui" => {
                            !from.is_float()
                                && !to.is_float()
                                && ((from == ScalarType::Index) != (to == ScalarType::Index))
                        }
                        "arith.extsi" | "arith.extui" => {
                            !from.is_float()
                                && !to.is_float()
                                && to.size_bytes() > from.size_bytes()
                        }
                        "arith.trunci" => {
                            !from.is_float()
                                && !to.is_float()
                                && to.size_bytes() < from.size_bytes()
                        }
                        _ => from.size_bytes() == to.size_bytes(),
                    };
                    if !ok {
                        self.err(
                            op,
                            format!(
                                "cannot cast '{}' to '{}'",
                                type_str(source_type),
                                type_str(t)
                            ),
                        );
                    }
                }
            }
            OpKind::ConstructDistributedMemoryView { views, view_types } => {
                self.distributed_view(op, views, view_types, infos, rt.as_ref());
                *remote = infos.iter().flatten().any(|i| i.remote);
            }
            OpKind::ConstructIndirectAccessTile { .. } => {
                self.indirect_tile(op, scope, infos);
                if let OpKind::ConstructIndirectAccessTile { base_type, .. } = &op.kind {
                    *tile_elem = base_type.elem();
                }
                *remote = infos
                    .first()
                    .and_then(|i| i.as_ref())
                    .is_some_and(|i| i.remote);
            }
            OpKind::RuntimeArgExtract {
                field,
                input,
                input_type,
            } => {
                self.expect_type(input, &infos[0], input_type, "operand");
                let Type::RuntimeArg {
                    underlying,
                    granularity,
                    upperbound,
                } = input_type
                else {
                    self.err(
                        op,
                        format!(
                            "needs a '!ktdp.runtime_arg', not '{}'",
                            type_str(input_type)
                        ),
                    );
                    return;
                };
                let Some(t) = &rt else { return };
                match field {
                    RuntimeArgField::Value => {
                        if t != &**underlying {
                            self.err(
                                op,
                                format!(
                                    "result type '{}' must match the runtime_arg's underlying type '{}' when extracting value",
                                    type_str(t),
                                    type_str(underlying)
                                ),
                            );
                        }
                    }
                    RuntimeArgField::Granularity | RuntimeArgField::Upperbound => {
                        let present = if *field == RuntimeArgField::Granularity {
                            granularity.is_some()
                        } else {
                            upperbound.is_some()
                        };
                        if !present {
                            self.err(
                                op,
                                format!(
                                    "cannot extract {} from a runtime_arg that does not have one",
                                    field.name()
                                ),
                            );
                        }
                        if *t != Type::index() {
                            self.err(
                                op,
                                format!(
                                    "result type must be 'index' when extracting {}",
                                    field.name()
                                ),
                            );
                        }
                    }
                }
            }
            OpKind::InterTileProduce {
                producer_tiles_per_group,
                body,
            } => self.produce(op, producer_tiles_per_group, body, scope),
            OpKind::InterTileConsume {
                future,
                consumer_tiles_per_group,
                producer_dependency_per_consumer,
                future_type,
            } => {
                self.expect_type(future, &infos[0], future_type, "future");
                self.delivery(
                    op,
                    future,
                    future_type,
                    consumer_tiles_per_group,
                    producer_dependency_per_consumer.as_ref(),
                    false,
                );
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
                self.expect_type(future, &infos[0], future_type, "future");
                for (i, (v, t)) in identity.iter().zip(identity_types).enumerate() {
                    self.expect_type(v, &infos[1 + i], t, "identity");
                }
                let partials = match future_type {
                    Type::TileFuture { partials, .. } => partials.clone(),
                    _ => Vec::new(),
                };
                if !partials.is_empty() && identity_types != &partials {
                    self.err(
                        op,
                        "identity types must match the future's partial types".into(),
                    );
                }
                let n = partials.len();
                if !partials.is_empty() {
                    let args: Vec<Type> = combiner.args.iter().map(|(_, t)| t.clone()).collect();
                    let want: Vec<Type> = partials.iter().chain(&partials).cloned().collect();
                    if args.len() != 2 * n {
                        self.err(
                            op,
                            format!(
                                "reducer region must take 2*{n} arguments, got {}",
                                args.len()
                            ),
                        );
                    } else if args != want {
                        self.err(
                            op,
                            "reducer region arguments (lhs..., rhs...) must have the partial types"
                                .into(),
                        );
                    }
                }
                self.region(combiner, scope, "ktdp.inter_tile_reduce");
                if let Some((_, types, span)) = self.terminator(op, combiner, "ktdp.yield_reduced")
                {
                    if !partials.is_empty() && types != partials.as_slice() {
                        self.diags.error(
                            span,
                            "'ktdp.yield_reduced' must yield one value of each partial type",
                        );
                    }
                }
                self.delivery(
                    op,
                    future,
                    future_type,
                    consumer_tiles_per_group,
                    producer_dependency_per_consumer.as_ref(),
                    true,
                );
            }
            OpKind::YieldPartial { values, types }
            | OpKind::YieldReduced { values, types }
            | OpKind::LinalgYield { values, types } => {
                if values.len() != types.len() {
                    self.err(op, "lists a different number of values and types".into());
                }
                for (i, (v, t)) in values.iter().zip(types).enumerate() {
                    self.expect_type(v, &infos[i], t, "yielded value");
                }
            }
            OpKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.expect_type(cond, &infos[0], &Type::Scalar(ScalarType::I1), "condition");
                self.region(then_block, scope, "scf.if");
                if let Some(e) = else_block {
                    self.region(e, scope, "scf.if");
                }
                if !op.result_types.is_empty() {
                    if else_block.is_none() {
                        self.err(op, "with results needs an 'else' region".into());
                    }
                    for b in std::iter::once(then_block).chain(else_block) {
                        if let Some((_, types, span)) = self.terminator(op, b, "scf.yield") {
                            if types != op.result_types.as_slice() {
                                self.diags.error(
                                    span,
                                    "'scf.yield' types must match the results of 'scf.if'",
                                );
                            }
                        }
                    }
                }
            }
            OpKind::TensorSplat {
                value,
                dynamic_sizes,
            } => {
                if let Some(t) = &rt {
                    if let Some(e) = t.elem() {
                        self.expect_type(value, &infos[0], &Type::Scalar(e), "splat value");
                    }
                    let dynamic = t.shape().iter().filter(|d| **d == Dim::Dynamic).count();
                    if dynamic != dynamic_sizes.len() || !matches!(t, Type::Tensor { .. }) {
                        self.err(
                            op,
                            format!(
                                "must produce a tensor with one size operand per '?' ({} given for {dynamic})",
                                dynamic_sizes.len()
                            ),
                        );
                    }
                }
                for (i, d) in dynamic_sizes.iter().enumerate() {
                    self.expect_type(d, &infos[1 + i], &Type::index(), "size");
                }
            }
            OpKind::TensorExtract {
                tensor,
                indices,
                tensor_type,
            } => {
                self.expect_type(tensor, &infos[0], tensor_type, "tensor");
                self.indices(op, indices, &infos[1..], tensor_type);
            }
            OpKind::TensorInsert {
                scalar,
                dest,
                indices,
                dest_type,
            } => {
                if let Some(e) = dest_type.elem() {
                    self.expect_type(scalar, &infos[0], &Type::Scalar(e), "scalar");
                }
                self.expect_type(dest, &infos[1], dest_type, "destination");
                self.indices(op, indices, &infos[2..], dest_type);
            }
            OpKind::ExtractSlice {
                source,
                offsets,
                sizes,
                strides,
                source_type,
            } => {
                self.expect_type(source, &infos[0], source_type, "source");
                if let Some(t) = &rt {
                    self.slice(op, offsets, sizes, strides, source_type, t);
                }
            }
            OpKind::InsertSlice {
                source,
                dest,
                offsets,
                sizes,
                strides,
                source_type,
                dest_type,
            } => {
                self.expect_type(source, &infos[0], source_type, "source");
                self.expect_type(dest, &infos[1], dest_type, "destination");
                self.slice(op, offsets, sizes, strides, dest_type, source_type);
            }
            OpKind::LinalgNamed {
                op: named,
                inputs,
                inits,
            } => self.linalg_named(op, *named, inputs, inits, infos),
            OpKind::LinalgGeneric {
                indexing_maps,
                iterator_types,
                inputs,
                inits,
                body,
            } => {
                self.typed_operands(inputs, inits, infos);
                for inner in &body.ops {
                    if let OpKind::LinalgIndex { dim } = inner.kind {
                        if dim >= iterator_types.len() {
                            self.err(
                                inner,
                                format!(
                                    "dimension {dim} is out of range: the enclosing 'linalg.generic' has {} loop(s)",
                                    iterator_types.len()
                                ),
                            );
                        }
                    }
                }
                let n = inputs.len() + inits.len();
                if indexing_maps.len() != n {
                    self.err(
                        op,
                        format!(
                            "has {} indexing map(s) for {n} operand(s)",
                            indexing_maps.len()
                        ),
                    );
                }
                for (i, (m, (_, t))) in indexing_maps
                    .iter()
                    .zip(inputs.iter().chain(inits))
                    .enumerate()
                {
                    let Some(map) = self.map_attr(op, &Some(m.clone()), "indexing_maps") else {
                        continue;
                    };
                    if map.dims != iterator_types.len() {
                        self.err(
                            op,
                            format!(
                                "indexing map #{i} has {} dimension(s) but there are {} iterator type(s)",
                                map.dims,
                                iterator_types.len()
                            ),
                        );
                    }
                    if map.results.len() != t.shape().len() {
                        self.err(
                            op,
                            format!(
                                "indexing map #{i} has {} result(s) but operand #{i} has rank {}",
                                map.results.len(),
                                t.shape().len()
                            ),
                        );
                    }
                }
                let want: Vec<Type> = inputs
                    .iter()
                    .chain(inits)
                    .filter_map(|(_, t)| t.elem().map(Type::Scalar))
                    .collect();
                let args: Vec<Type> = body.args.iter().map(|(_, t)| t.clone()).collect();
                if args != want {
                    self.err(
                        op,
                        "region arguments must be the element types of the inputs and inits".into(),
                    );
                }
                self.region(body, scope, "linalg.generic");
                if let Some((_, types, span)) = self.terminator(op, body, "linalg.yield") {
                    let want: Vec<Type> = inits
                        .iter()
                        .filter_map(|(_, t)| t.elem().map(Type::Scalar))
                        .collect();
                    if types != want.as_slice() {
                        self.diags.error(
                            span,
                            "'linalg.yield' must yield one element per init, of its element type",
                        );
                    }
                }
                self.results_are_inits(op, inits);
            }
            OpKind::LinalgReduce {
                inputs,
                inits,
                dimensions,
                body,
                shorthand,
            } => {
                self.typed_operands(inputs, inits, infos);
                if let (Some((_, input)), Some((_, init))) = (inputs.first(), inits.first()) {
                    let sorted = dimensions.windows(2).all(|w| w[0] < w[1]);
                    let rank = input.shape().len();
                    let kept: Vec<Dim> = (0..rank)
                        .filter(|d| !dimensions.contains(d))
                        .map(|d| input.shape()[d])
                        .collect();
                    if !sorted || dimensions.iter().any(|&d| d >= rank) || kept != init.shape() {
                        self.err(
                            op,
                            format!(
                                "reducing '{}' over dimensions {dimensions:?} does not give '{}'",
                                type_str(input),
                                type_str(init)
                            ),
                        );
                    }
                }
                if inputs.len() != inits.len() {
                    self.err(op, "needs as many inits as inputs".into());
                }
                // The parser only accepts binary arith/math ops as the shorthand combiner.
                match shorthand {
                    Some(_) => {}
                    None => {
                        let want: Vec<Type> = inputs
                            .iter()
                            .chain(inits)
                            .filter_map(|(_, t)| t.elem().map(Type::Scalar))
                            .collect();
                        let args: Vec<Type> = body.args.iter().map(|(_, t)| t.clone()).collect();
                        if args != want {
                            self.err(
                                op,
                                "combiner arguments must be the element types of the inputs and inits"
                                    .into(),
                            );
                        }
                        self.region(body, scope, "linalg.reduce");
                        self.terminator(op, body, "linalg.yield");
                    }
                }
                self.results_are_inits(op, inits);
            }
            OpKind::Generic { name, regions, .. } => {
                let dialect = name.split('.').next().unwrap_or(name);
                if !LEGAL_DIALECTS.contains(&dialect) {
                    self.err(
                        op,
                        format!(
                            "belongs to dialect '{dialect}', which is not legal in KTIR (legal: {})",
                            LEGAL_DIALECTS.join(", ")
                        ),
                    );
                } else {
                    self.diags.warning(
                        op.span,
                        format!(
                            "'{name}' in generic form is parsed but its rules are not checked; write it in its custom form to verify it"
                        ),
                    );
                }
                for r in regions {
                    self.region(r, scope, name);
                }
            }
            _ => {}
        }
    }

    fn typed_operands(
        &mut self,
        inputs: &[(Value, Type)],
        inits: &[(Value, Type)],
        infos: &[Option<ValueInfo>],
    ) {
        for (i, (v, t)) in inputs.iter().chain(inits).enumerate() {
            if let Some(info) = infos.get(i) {
                self.expect_type(v, info, t, "operand");
            }
        }
    }

    /// On tensors, linalg ops return their results; dropping them is a known gap of the
    /// spec's examples.
    fn results_are_inits(&mut self, op: &Op, inits: &[(Value, Type)]) {
        let tensor_inits: Vec<Type> = inits
            .iter()
            .filter(|(_, t)| matches!(t, Type::Tensor { .. }))
            .map(|(_, t)| t.clone())
            .collect();
        if op.results.is_empty() && !tensor_inits.is_empty() {
            self.diags.warning(
                op.span,
                format!(
                    "the result of '{}' is discarded: on tensors a linalg op returns a new value and leaves its init unchanged (known gap: spec examples discard it)",
                    op.kind.name()
                ),
            );
        } else if !op.result_types.is_empty() && op.result_types != tensor_inits {
            self.err(op, "result types must equal the init types".into());
        }
    }

    fn linalg_named(
        &mut self,
        op: &Op,
        named: LinalgNamedOp,
        inputs: &[(Value, Type)],
        inits: &[(Value, Type)],
        infos: &[Option<ValueInfo>],
    ) {
        self.typed_operands(inputs, inits, infos);
        let want = named.inputs();
        if inputs.len() != want || inits.len() != 1 {
            self.err(
                op,
                format!(
                    "takes {want} input(s) and 1 init, found {} and {}",
                    inputs.len(),
                    inits.len()
                ),
            );
            return;
        }
        let init = &inits[0].1;
        let shapes: Vec<Option<Vec<usize>>> =
            inputs.iter().map(|(_, t)| t.static_shape()).collect();
        let out = init.static_shape();
        let mismatch = |msg: String| msg;
        let problem = match named {
            LinalgNamedOp::BatchMatmul => match (&shapes[0], &shapes[1], &out) {
                (Some(a), Some(b), Some(c)) if a.len() == 3 && b.len() == 3 && c.len() == 3 => {
                    (a[0] != b[0] || c[0] != a[0] || a[2] != b[1] || c[1] != a[1] || c[2] != b[2])
                        .then(|| {
                            mismatch(format!("shapes do not agree: {a:?} times {b:?} into {c:?}"))
                        })
                }
                _ => Some("needs rank-3 operands with static shapes".to_string()),
            },
            LinalgNamedOp::MatmulTransposeB | LinalgNamedOp::MatmulTransposeA => {
                let transpose_a = named == LinalgNamedOp::MatmulTransposeA;
                match (&shapes[0], &shapes[1], &out) {
                    (Some(a), Some(b), Some(c)) if a.len() == 2 && b.len() == 2 && c.len() == 2 => {
                        let (m, k1) = if transpose_a {
                            (a[1], a[0])
                        } else {
                            (a[0], a[1])
                        };
                        let (k2, n) = if !transpose_a {
                            (b[1], b[0])
                        } else {
                            (b[0], b[1])
                        };
                        (k1 != k2 || c[0] != m || c[1] != n)
                            .then(|| format!("shapes do not agree: {a:?} and {b:?} into {c:?}"))
                    }
                    _ => Some("needs rank-2 operands with static shapes".to_string()),
                }
            }
            LinalgNamedOp::Matvec | LinalgNamedOp::Dot => None,
            LinalgNamedOp::Elementwise(_) => {
                // Elementwise and copy: every operand has the init's shape.
                let bad = inputs
                    .iter()
                    .find(|(_, t)| t.shape() != init.shape() || t.elem() != init.elem());
                bad.map(|(v, t)| {
                    format!(
                        "input '%{}' of type '{}' does not match the init '{}'",
                        v.name,
                        type_str(t),
                        type_str(init)
                    )
                })
            }
        };
        if let Some(p) = problem {
            self.err(op, p);
        }
        self.results_are_inits(op, inits);
    }

    fn indices(&mut self, op: &Op, indices: &[Value], infos: &[Option<ValueInfo>], t: &Type) {
        for (i, v) in indices.iter().enumerate() {
            if let Some(info) = infos.get(i) {
                self.expect_type(v, info, &Type::index(), "index");
            }
        }
        if indices.len() != t.shape().len() {
            self.err(
                op,
                format!(
                    "has {} index(es) for a tensor of rank {}",
                    indices.len(),
                    t.shape().len()
                ),
            );
        }
    }

    /// `big[offsets][sizes][strides]` is `small` (possibly rank-reduced).
    fn slice(
        &mut self,
        op: &Op,
        offsets: &[SizeOperand],
        sizes: &[SizeOperand],
        strides: &[SizeOperand],
        big: &Type,
        small: &Type,
    ) {
        let rank = big.shape().len();
        if offsets.len() != rank || sizes.len() != rank || strides.len() != rank {
            self.err(
                op,
                format!(
                    "needs {rank} offsets, sizes and strides for '{}', found {}, {} and {}",
                    type_str(big),
                    offsets.len(),
                    sizes.len(),
                    strides.len()
                ),
            );
            return;
        }
        if big.elem() != small.elem() {
            self.err(op, "changes the element type".into());
        }
        let want: Vec<Dim> = sizes
            .iter()
            .map(|s| match s {
                SizeOperand::Static(n) => Dim::Static((*n).max(0) as usize),
                SizeOperand::Dynamic(_) => Dim::Dynamic,
            })
            .collect();
        let reduced: Vec<Dim> = want
            .iter()
            .copied()
            .filter(|d| *d != Dim::Static(1))
            .collect();
        if small.shape() != want.as_slice() && small.shape() != reduced.as_slice() {
            self.err(
                op,
                format!(
                    "sizes [{}] do not give '{}'",
                    want.iter()
                        .map(|d| d.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    type_str(small)
                ),
            );
        }
        for (i, (o, s)) in offsets.iter().zip(sizes).enumerate() {
            if let (SizeOperand::Static(o), SizeOperand::Static(s), Dim::Static(n)) =
                (o, s, big.shape()[i])
            {
                if *o < 0 || o + s > n as i64 {
                    self.err(
                        op,
                        format!("slice [{o}, {}) leaves dimension {i} of size {n}", o + s),
                    );
                }
            }
        }
    }

    fn distributed_view(
        &mut self,
        op: &Op,
        views: &[Value],
        view_types: &[Type],
        infos: &[Option<ValueInfo>],
        rt: Option<&Type>,
    ) {
        for (i, (v, t)) in views.iter().zip(view_types).enumerate() {
            self.expect_type(v, &infos[i], t, "partition");
        }
        let Some(result) = rt else { return };
        if !matches!(result, Type::MemRef { .. }) {
            self.err(
                op,
                format!("must produce a memref, not '{}'", type_str(result)),
            );
            return;
        }
        if views.is_empty() {
            self.err(op, "needs at least one partition".into());
        }
        for (i, t) in view_types.iter().enumerate() {
            if !matches!(t, Type::MemRef { .. }) {
                self.err(
                    op,
                    format!("partition #{i} must be a memref, not '{}'", type_str(t)),
                );
            } else if t.elem() != result.elem() {
                self.err(
                    op,
                    format!(
                        "partition #{i} has element type '{}' but the result has '{}'",
                        t.elem().map_or("?", |e| e.name()),
                        result.elem().map_or("?", |e| e.name())
                    ),
                );
            } else if t.shape().len() != result.shape().len() {
                self.err(
                    op,
                    format!(
                        "partition #{i} has rank {} but the result has rank {}",
                        t.shape().len(),
                        result.shape().len()
                    ),
                );
            }
        }
        // Overlapping partitions: a known gap.
        let mut boxes: Vec<(usize, Vec<(i64, i64)>)> = Vec::new();
        for (i, v) in views.iter().enumerate() {
            if let Some(Def::View { set: Some(a), .. }) = self.defs.get(&v.name) {
                if let Some(Attr::Set(s)) = self.module.resolve(a) {
                    if s.syms == 0 {
                        if let Some(b) = s.box_bounds(&[]) {
                            boxes.push((i, b));
                        }
                    }
                }
            }
        }
        for (x, (i, a)) in boxes.iter().enumerate() {
            for (j, b) in boxes.iter().skip(x + 1) {
                let overlap = a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((al, ah), (bl, bh))| al <= bh && bl <= ah);
                if overlap {
                    self.diags.warning(
                        op.span,
                        format!(
                            "partitions #{i} and #{j} have overlapping coordinate sets: the spec does not say what overlapping distributed partitions mean (known gap)"
                        ),
                    );
                    return;
                }
            }
        }
    }

    fn indirect_tile(&mut self, op: &Op, scope: &mut Scope, infos: &[Option<ValueInfo>]) {
        let OpKind::ConstructIndirectAccessTile {
            variables,
            base,
            subscripts,
            dims,
            symbols,
            variables_space_set,
            variables_space_order,
            base_type,
            index_types,
        } = &op.kind
        else {
            return;
        };
        self.expect_type(base, &infos[0], base_type, "base");
        let views: Vec<&Value> = subscripts
            .iter()
            .filter_map(|s| match s {
                IndirectSubscript::Indirect { view, .. } => Some(view),
                _ => None,
            })
            .collect();
        if views.len() != index_types.len() {
            self.err(
                op,
                format!(
                    "has {} indirect subscript(s) but {} index view type(s)",
                    views.len(),
                    index_types.len()
                ),
            );
        }
        for (i, (v, t)) in views.iter().zip(index_types).enumerate() {
            self.expect_type(v, &infos[1 + i], t, "index view");
            if !matches!(t, Type::MemRef { .. }) || t.elem().is_some_and(|e| e.is_float()) {
                self.err(
                    op,
                    format!(
                        "index view #{i} must be a memref of integers, not '{}'",
                        type_str(t)
                    ),
                );
            }
        }
        // Captured values must be defined; intermediate variables must not shadow them.
        let _ = scope;
        let mut seen = BTreeSet::new();
        for v in variables {
            if !seen.insert(v) {
                self.err(op, format!("intermediate variable '%{v}' is listed twice"));
            }
        }
        let captured = dims.iter().filter(|d| !variables.contains(&d.name)).count();
        for (i, s) in symbols.iter().enumerate() {
            let at = 1 + views.len() + captured + i;
            if let Some(info) = infos.get(at) {
                self.expect_type(s, info, &Type::index(), "symbol");
            }
        }
        for (k, d) in dims
            .iter()
            .filter(|d| !variables.contains(&d.name))
            .enumerate()
        {
            if let Some(info) = infos.get(1 + views.len() + k) {
                self.expect_type(d, info, &Type::index(), "captured value");
            }
        }
        if !matches!(base_type, Type::MemRef { .. } | Type::Tensor { .. }) {
            self.err(op, "base must be a ranked memref or tensor".into());
        }
        let base_rank = base_type.shape().len();
        if subscripts.len() != base_rank {
            self.err(
                op,
                format!(
                    "number of subscripts ({}) must match the base rank ({base_rank})",
                    subscripts.len()
                ),
            );
        }
        let mut k = 0;
        for (i, s) in subscripts.iter().enumerate() {
            if let IndirectSubscript::Indirect { exprs, .. } = s {
                if let Some(t) = index_types.get(k) {
                    if exprs.len() != t.shape().len() {
                        self.err(
                            op,
                            format!(
                                "indirect subscript for dimension {i} has {} subscript(s) but its index view has rank {}",
                                exprs.len(),
                                t.shape().len()
                            ),
                        );
                    }
                }
                k += 1;
            }
        }
        let set = match variables_space_set {
            None => {
                self.err(op, "requires the 'variables_space_set' attribute".into());
                None
            }
            Some(a) => self.set_attr(op, a, "variables_space_set"),
        };
        let order = self.map_attr(op, variables_space_order, "variables_space_order");
        let n = variables.len();
        if let Some(set) = &set {
            if set.dims != n {
                self.err(
                    op,
                    format!(
                        "number of intermediate variables ({n}) must match variables_space_set dimensions ({})",
                        set.dims
                    ),
                );
            }
            if set.syms != symbols.len() {
                self.err(
                    op,
                    format!(
                        "variables_space_set has {} symbol(s) but {} value(s) are bound with symbols(...)",
                        set.syms,
                        symbols.len()
                    ),
                );
            }
        }
        if let Some(m) = &order {
            if m.dims != m.results.len() {
                self.err(
                    op,
                    format!(
                        "variables_space_order must have equal numbers of inputs ({}) and outputs ({})",
                        m.dims,
                        m.results.len()
                    ),
                );
            } else if m.dims != n {
                self.err(
                    op,
                    format!(
                        "variables_space_order has {} input(s) but there are {n} intermediate variable(s)",
                        m.dims
                    ),
                );
            } else if m.as_permutation().is_none() {
                self.err(
                    op,
                    "variables_space_order must permute the variables".into(),
                );
            }
        }
        if let Some(t) = op.result_types.first() {
            if !matches!(t, Type::AccessTile { .. }) {
                self.err(op, "must produce a '!ktdp.access_tile<...>'".into());
            } else if t.shape().len() != n {
                self.err(
                    op,
                    format!(
                        "result rank ({}) must match the number of intermediate variables ({n})",
                        t.shape().len()
                    ),
                );
            }
        }
    }

    fn produce(&mut self, op: &Op, set_attr: &Attr, body: &Block, scope: &mut Scope) {
        let future = op.result_types.first();
        let partials = match future {
            Some(Type::TileFuture { partials, .. }) => partials.clone(),
            Some(t) => {
                self.err(
                    op,
                    format!("must produce a '!ktdp.tile_future', not '{}'", type_str(t)),
                );
                Vec::new()
            }
            None => Vec::new(),
        };
        if body.args.len() != 1 || body.args[0].1 != Type::index() {
            self.err(
                op,
                "producer region must take a single 'index' group-id argument (^bb0(%g: index))"
                    .into(),
            );
        }
        let set = self.set_attr(op, set_attr, "producer_tiles_per_group");
        if let Some(s) = &set {
            if s.dims != 1 || s.syms != 1 {
                self.err(
                    op,
                    "'producer_tiles_per_group' must be a set (i)[g] over one tile id with the group index as its only symbol"
                        .into(),
                );
            }
        }
        self.region(body, scope, "ktdp.inter_tile_produce");
        if let Some((_, types, span)) = self.terminator(op, body, "ktdp.yield_partial") {
            if types != partials.as_slice() && !partials.is_empty() {
                self.diags.error(
                    span,
                    format!(
                        "'ktdp.yield_partial' yields ({}) but the future carries ({})",
                        types.iter().map(type_str).collect::<Vec<_>>().join(", "),
                        partials.iter().map(type_str).collect::<Vec<_>>().join(", ")
                    ),
                );
            }
        }
        // R1: producer groups are disjoint.
        let (Some(s), Some(groups)) = (set, future.and_then(|f| self.groups(f))) else {
            return;
        };
        if s.dims != 1 || s.syms != 1 {
            return;
        }
        let mut owner: HashMap<i64, i64> = HashMap::new();
        for g in groups {
            let Some(tiles) = enumerate(&mut self.enum_budget, &s, &[g]) else {
                continue;
            };
            for t in tiles {
                if let Some(prev) = owner.insert(t, g) {
                    if prev != g {
                        self.err(
                            op,
                            format!(
                                "producer_tiles_per_group for groups {prev} and {g} are not disjoint (tile {t} is in both)"
                            ),
                        );
                        return;
                    }
                }
            }
        }
    }

    /// An `inter_tile_reduce` result is its partial, or the partial with its within-group
    /// tile axes collapsed: only size-1 axes dropped, the same ones for every role (the
    /// earlier inter-tile reduction design; the dialect now keeps the axes, and both
    /// spellings circulate).
    fn reduce_results(&mut self, op: &Op, partials: &[Type]) {
        if op.result_types.len() != partials.len() {
            self.err(
                op,
                format!(
                    "has {} result(s) but the future carries {} partial(s)",
                    op.result_types.len(),
                    partials.len()
                ),
            );
            return;
        }
        let mut first: Option<Vec<usize>> = None;
        for (i, (r, p)) in op.result_types.iter().zip(partials).enumerate() {
            match p.dropped_unit_axes(r) {
                None => {
                    self.err(
                        op,
                        format!(
                            "result #{i} '{}' is neither partial #{i} '{}' nor that partial with size-1 within-group tile axes collapsed",
                            type_str(r),
                            type_str(p)
                        ),
                    );
                    return;
                }
                Some(axes) => match &first {
                    None => first = Some(axes),
                    Some(f) if *f != axes => {
                        self.err(
                            op,
                            format!(
                                "every result must collapse the same tile axes: result #0 drops {f:?}, result #{i} drops {axes:?}"
                            ),
                        );
                        return;
                    }
                    Some(_) => {}
                },
            }
        }
    }

    /// The group indices of a tile_future type, when enumerable.
    fn groups(&mut self, future: &Type) -> Option<Vec<i64>> {
        let Type::TileFuture { groups, .. } = future else {
            return None;
        };
        match self.module.resolve(groups) {
            Some(Attr::Set(s)) if s.dims == 1 && s.syms == 0 => {
                enumerate(&mut self.enum_budget, s, &[])
            }
            _ => None,
        }
    }

    /// Consume and reduce: structure, and rules R3, R4, R8, R13, R14.
    fn delivery(
        &mut self,
        op: &Op,
        future: &Value,
        future_type: &Type,
        consumer_attr: &Attr,
        dep_attr: Option<&Attr>,
        reduce: bool,
    ) {
        let Type::TileFuture { partials, .. } = future_type else {
            self.err(
                op,
                format!(
                    "needs a '!ktdp.tile_future' operand, not '{}'",
                    type_str(future_type)
                ),
            );
            return;
        };
        if !reduce && &op.result_types != partials {
            self.err(
                op,
                "result types must match the future's partial types".into(),
            );
        }
        if reduce {
            self.reduce_results(op, partials);
        }
        let consumers = self.set_attr(op, consumer_attr, "consumer_tiles_per_group");
        if let Some(c) = &consumers {
            if c.dims != 1 || c.syms != 1 {
                self.err(
                    op,
                    "'consumer_tiles_per_group' must be a set (i)[g] over one tile id with the group index as its only symbol"
                        .into(),
                );
                return;
            }
        }
        let dep = match dep_attr {
            Some(a) => {
                let d = self.set_attr(op, a, "producer_dependency_per_consumer");
                if let Some(d) = &d {
                    if d.dims != 1 || (d.syms != 1 && d.syms != 2) {
                        self.err(
                            op,
                            "'producer_dependency_per_consumer' must be a set (p)[c] or (p)[c, g] over one producer tile id"
                                .into(),
                        );
                        return;
                    }
                }
                d
            }
            None => None,
        };
        let Some(consumers) = consumers else { return };
        let Some(Def::Produce { set, .. }) = self.defs.get(&future.name).cloned() else {
            return;
        };
        let Some(Attr::Set(producers)) = self.module.resolve(&set).cloned() else {
            return;
        };
        if producers.dims != 1 || producers.syms != 1 {
            return;
        }
        let Some(groups) = self.groups(future_type) else {
            return;
        };
        for g in groups {
            let (Some(c), Some(p)) = (
                enumerate(&mut self.enum_budget, &consumers, &[g]),
                enumerate(&mut self.enum_budget, &producers, &[g]),
            ) else {
                continue;
            };
            let pset: BTreeSet<i64> = p.iter().copied().collect();
            let cset: BTreeSet<i64> = c.iter().copied().collect();
            if reduce {
                // R13 and R14.
                if let Some(t) = c.iter().find(|t| !pset.contains(t)) {
                    self.err(
                        op,
                        format!(
                            "consumer_tiles_per_group for group {g} is not a subset of producer_tiles_per_group (tile {t} consumes but does not produce)"
                        ),
                    );
                    return;
                }
                if cset != pset && cset.len() != 1 {
                    self.err(
                        op,
                        format!(
                            "consumer_tiles_per_group for group {g} is a strict subset of the producers with more than one tile; only all-reduce (every producer consumes) and reduce-to-one are defined"
                        ),
                    );
                    return;
                }
            }
            match &dep {
                None => {
                    // R8: without dependencies, each consumer receives from every producer.
                    if !reduce && pset.len() > 1 {
                        self.err(
                            op,
                            format!(
                                "group {g} has {} producers, so each consumer would receive several values; name one source per consumer with producer_dependency_per_consumer",
                                pset.len()
                            ),
                        );
                        return;
                    }
                }
                Some(d) => {
                    let mut claimed = BTreeSet::new();
                    // A consumer whose producers cannot be listed (an unbounded or
                    // non-box dependency set, or one past the enumeration budget) may
                    // cover any producer: coverage is then left to run time.
                    let mut all_listed = true;
                    for &ct in &c {
                        let syms: Vec<i64> = if d.syms == 2 { vec![ct, g] } else { vec![ct] };
                        let Some(deps) = enumerate(&mut self.enum_budget, d, &syms) else {
                            all_listed = false;
                            continue;
                        };
                        // R3.
                        if let Some(p) = deps.iter().find(|p| !pset.contains(p)) {
                            self.err(
                                op,
                                format!(
                                    "producer_dependency_per_consumer for consumer {ct} group {g} references producer tile {p} which is not in producer_tiles_per_group"
                                ),
                            );
                            return;
                        }
                        // R8.
                        if !reduce && deps.len() != 1 {
                            self.err(
                                op,
                                format!(
                                    "consumer tile {ct} in group {g} depends on {} producer tile(s); 'ktdp.inter_tile_consume' delivers exactly one source per consumer",
                                    deps.len()
                                ),
                            );
                            return;
                        }
                        claimed.extend(deps);
                    }
                    // R4.
                    if let Some(p) = pset.iter().find(|p| all_listed && !claimed.contains(p)) {
                        self.err(
                            op,
                            format!(
                                "producer_dependency_per_consumer for group {g} does not cover producer tile {p} (no consumer depends on it, so its value is never consumed)"
                            ),
                        );
                        return;
                    }
                }
            }
        }
    }
}

/// The points of a one-dimensional set with the given symbol values, when boxed and small
/// and the verifier's enumeration budget allows.
fn enumerate(budget: &mut usize, set: &AffineSet, syms: &[i64]) -> Option<Vec<i64>> {
    if set.dims != 1 {
        return None;
    }
    let b = set.box_bounds(syms)?;
    let (lo, hi) = *b.first()?;
    if hi < lo {
        return Some(Vec::new());
    }
    let n = hi.checked_sub(lo)?;
    if n > ENUM_LIMIT || (n as usize) >= *budget {
        return None;
    }
    *budget -= n as usize + 1;
    Some((lo..=hi).filter(|x| set.contains(&[*x], syms)).collect())
}
