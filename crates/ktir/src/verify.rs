//! The verifier: SSA and type rules, the `ktdp` op rules, and warnings for programs that
//! touch gaps the spec leaves open.

use crate::ast::*;
use crate::diag::{Diagnostic, Diagnostics};
use crate::printer::ty as type_str;
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

mod ext;

/// Checks a parsed module; `text` is the source it came from (for line numbers).
pub fn verify(module: &Module, text: &str) -> Vec<Diagnostic> {
    let mut v = Verifier {
        module,
        diags: Diagnostics::new(text),
        all_names: HashSet::new(),
        defs: HashMap::new(),
        uses: HashMap::new(),
        remote_store: None,
        remote_load: false,
        enum_budget: 1 << 22,
    };
    if module.funcs.is_empty() {
        // An empty, comment-only or cut-short file must not pass as a program that ran.
        v.diags.error(
            Span::new(0, 0),
            "the module defines no functions: nothing to verify or run (is the file empty or cut short?)",
        );
    }
    let mut names = HashMap::new();
    for (i, f) in module.funcs.iter().enumerate() {
        if let Some(prev) = names.insert(f.name.as_str(), i) {
            let _ = prev;
            v.diags
                .error(f.span, format!("redefinition of function '@{}'", f.name));
        }
        v.func(f);
    }
    for a in &module.aliases {
        if module.aliases.iter().filter(|b| b.name == a.name).count() > 1 {
            v.diags
                .error(a.span, format!("redefinition of alias '#{}'", a.name));
        }
    }
    let mut list = v.diags.list;
    list.sort_by_key(|d| (d.span.start, d.severity));
    list.dedup();
    list
}

struct Verifier<'m, 't> {
    module: &'m Module,
    diags: Diagnostics<'t>,
    /// Every value name defined anywhere in the current function (for dominance errors).
    all_names: HashSet<String>,
    /// What defines some values of the current function (views and futures).
    defs: HashMap<String, ext::Def>,
    /// How many times each value of the current function is used.
    uses: HashMap<String, usize>,
    /// A store into a specific core's scratchpad in the current function.
    remote_store: Option<Span>,
    /// A load from a specific core's scratchpad in the current function.
    remote_load: bool,
    /// Set points the inter-tile rules may still enumerate (bounds the verifier's work).
    enum_budget: usize,
}

/// What the verifier knows about a defined value.
#[derive(Clone)]
struct ValueInfo {
    ty: Type,
    /// For access tiles: the element type of the view behind them.
    tile_elem: Option<ScalarType>,
    /// For views and tiles: whether they address a specific core's scratchpad.
    remote: bool,
}

type Scope = Vec<HashMap<String, ValueInfo>>;

fn lookup<'s>(scope: &'s Scope, name: &str) -> Option<&'s ValueInfo> {
    scope.iter().rev().find_map(|s| s.get(name))
}

impl<'m, 't> Verifier<'m, 't> {
    fn func(&mut self, f: &Func) {
        if f.grid.is_none() {
            self.diags.warning(
                f.span,
                format!(
                    "function '@{}' has no 'grid' attribute; the spec does not say what that means (known gap); the playground runs it on one core",
                    f.name
                ),
            );
        }
        let mut top = HashMap::new();
        for (n, t) in &f.args {
            if top
                .insert(
                    n.clone(),
                    ValueInfo {
                        ty: t.clone(),
                        tile_elem: None,
                        remote: false,
                    },
                )
                .is_some()
            {
                self.diags
                    .error(f.span, format!("argument '%{n}' is defined twice"));
            }
        }
        self.prepare(f);
        for (_, t) in &f.args {
            self.check_type(t, f.span);
        }
        let mut scope = vec![top];
        self.block(&f.body, &mut scope, "func.func");
        self.finish(f);
        match f.body.ops.last() {
            Some(op) if matches!(op.kind, OpKind::Return { .. }) => {
                if let OpKind::Return { types, .. } = &op.kind {
                    if types != &f.results {
                        self.diags.error(
                            op.span,
                            format!(
                                "'func.return' returns ({}) but '@{}' is declared to return ({})",
                                types.iter().map(type_str).collect::<Vec<_>>().join(", "),
                                f.name,
                                f.results
                                    .iter()
                                    .map(type_str)
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        );
                    }
                }
            }
            Some(op) => self.diags.error(
                op.span,
                format!("function '@{}' must end with 'func.return'", f.name),
            ),
            None => self.diags.error(
                f.span,
                format!("function '@{}' must end with 'func.return'", f.name),
            ),
        }
    }

    /// Checks a block whose owner is `parent` (an op name, or `func.func`).
    fn block(&mut self, b: &Block, scope: &mut Scope, parent: &str) {
        for (i, op) in b.ops.iter().enumerate() {
            let is_last = i + 1 == b.ops.len();
            if op.kind.is_terminator() {
                if !is_last {
                    self.diags.error(
                        op.span,
                        format!(
                            "'{}' must be the last operation of its block",
                            op.kind.name()
                        ),
                    );
                }
                self.check_terminator_parent(op, parent);
            }
            if let OpKind::LinalgIndex { .. } = op.kind {
                if parent != "linalg.generic" {
                    self.err(
                        op,
                        format!(
                            "must be directly inside a 'linalg.generic' body, not in '{parent}'"
                        ),
                    );
                }
                if op.result_types != [Type::index()] {
                    self.err(op, "must have one result of type 'index'".into());
                }
            }
            self.op(op, scope);
        }
    }

    fn use_value(&mut self, v: &Value, scope: &Scope) -> Option<ValueInfo> {
        *self.uses.entry(v.name.clone()).or_insert(0) += 1;
        match lookup(scope, &v.name) {
            Some(info) => Some(info.clone()),
            None if self.all_names.contains(&v.name) => {
                self.diags.error(
                    v.span,
                    format!(
                        "operand '%{}' does not dominate this use (it is defined later or inside another region)",
                        v.name
                    ),
                );
                None
            }
            None => {
                self.diags
                    .error(v.span, format!("use of undefined value '%{}'", v.name));
                None
            }
        }
    }

    fn expect_type(&mut self, v: &Value, got: &Option<ValueInfo>, want: &Type, what: &str) {
        if let Some(info) = got {
            if &info.ty != want {
                self.diags.error(
                    v.span,
                    format!(
                        "{what} '%{}' has type '{}' but '{}' is expected",
                        v.name,
                        type_str(&info.ty),
                        type_str(want)
                    ),
                );
            }
        }
    }

    fn define(&mut self, op: &Op, scope: &mut Scope, tile_elem: Option<ScalarType>, remote: bool) {
        for t in &op.result_types {
            self.check_type(t, op.span);
        }
        let Some(current) = scope.last_mut() else {
            return;
        };
        for (name, t) in op.results.iter().zip(&op.result_types) {
            if current
                .insert(
                    name.clone(),
                    ValueInfo {
                        ty: t.clone(),
                        tile_elem,
                        remote,
                    },
                )
                .is_some()
            {
                self.diags
                    .error(op.span, format!("redefinition of value '%{name}'"));
            }
        }
    }

    fn err(&mut self, op: &Op, msg: String) {
        self.diags
            .error(op.span, format!("'{}' {msg}", op.kind.name()));
    }

    fn resolve_set(&mut self, op: &Op, a: &Option<Attr>, attr_name: &str) -> Option<AffineSet> {
        let Some(a) = a else {
            self.err(op, format!("requires the '{attr_name}' attribute"));
            return None;
        };
        match self.module.resolve(a) {
            Some(Attr::Set(s)) => Some(s.clone()),
            Some(_) => {
                self.err(op, format!("'{attr_name}' must be an affine_set"));
                None
            }
            None => {
                self.err(op, format!("'{attr_name}' refers to an undefined alias"));
                None
            }
        }
    }

    fn op(&mut self, op: &Op, scope: &mut Scope) {
        // Operands first: every use must be defined.
        let operand_infos: Vec<Option<ValueInfo>> = op
            .kind
            .operands()
            .into_iter()
            .map(|v| self.use_value(v, scope))
            .collect();
        let mut tile_elem = None;
        let mut remote = false;
        let rt = op.result_types.first().cloned();
        match &op.kind {
            OpKind::Return { values, types } => {
                for (i, (v, t)) in values.iter().zip(types).enumerate() {
                    self.expect_type(v, &operand_infos[i], t, "returned value");
                }
                if values.len() != types.len() {
                    self.err(op, "lists a different number of values and types".into());
                }
            }
            OpKind::Constant { value } => {
                if let Some(t) = &rt {
                    let ok = match (value, t) {
                        (Literal::Int(_), Type::Scalar(_)) => true,
                        (Literal::Float(_), Type::Scalar(s)) => s.is_float(),
                        (Literal::DenseSplat(_), Type::Tensor { .. }) => true,
                        (Literal::Dense(v), Type::Tensor { .. }) => {
                            t.static_shape().map(|s| s.iter().product::<usize>()) == Some(v.len())
                        }
                        _ => false,
                    };
                    if !ok {
                        self.err(op, format!("value does not fit type '{}'", type_str(t)));
                    }
                }
            }
            OpKind::Elementwise { op: ew, operands } => {
                if let Some(t) = &rt {
                    for (i, v) in operands.iter().enumerate() {
                        self.expect_type(v, &operand_infos[i], t, "operand");
                    }
                    let want_float = match ew.kind() {
                        ElemKind::Float => Some(true),
                        ElemKind::Int => Some(false),
                        ElemKind::Any => None,
                    };
                    if let Some(want_float) = want_float {
                        if t.elem().map(|e| e.is_float()) != Some(want_float) {
                            self.err(
                                op,
                                format!(
                                    "works on {} values, not '{}'",
                                    if want_float {
                                        "floating-point"
                                    } else {
                                        "integer"
                                    },
                                    type_str(t)
                                ),
                            );
                        }
                    }
                }
            }
            OpKind::GetComputeTileId { dim } => {
                if op.result_types.is_empty() {
                    self.err(op, "must have at least one result".into());
                }
                if dim.is_some() && op.result_types.len() != 1 {
                    self.err(op, "with 'dim' it has exactly one result".into());
                }
                if op.result_types.iter().any(|t| *t != Type::index()) {
                    self.err(op, "results must all be of type 'index'".into());
                }
            }
            OpKind::ConstructMemoryView {
                base,
                sizes,
                strides,
                coordinate_set,
                memory_space,
            } => {
                self.expect_type(base, &operand_infos[0], &Type::index(), "base address");
                let dynamic = sizes.iter().chain(strides).filter_map(|s| match s {
                    SizeOperand::Dynamic(v) => Some(v),
                    SizeOperand::Static(_) => None,
                });
                for (v, info) in dynamic.zip(operand_infos.iter().skip(1)) {
                    self.expect_type(v, info, &Type::index(), "size or stride");
                }
                // KTDP declares the attribute required, but the reference interpreter's
                // examples leave it out where the view is dense; read those as the view
                // over every point of its sizes, which is what the dialect says a dense
                // view's set is, and say so.
                let set = if coordinate_set.is_none() {
                    self.diags.warning(
                        op.span,
                        "has no 'coordinate_set' (KTDP requires one): read as every point of its sizes",
                    );
                    Some(AffineSet::whole_view(sizes))
                } else {
                    self.resolve_set(op, coordinate_set, "coordinate_set")
                };
                if memory_space.is_none() {
                    self.err(op, "requires the 'memory_space' attribute".into());
                }
                if let Some(MemorySpace::Local { core: Some(c) }) = memory_space {
                    if *c < 0 {
                        self.err(op, format!("'ct_id' must be >= 0, found {c}"));
                    }
                    remote = true;
                }
                match &rt {
                    Some(Type::MemRef {
                        shape,
                        memory_space: type_space,
                        ..
                    }) => {
                        if sizes.len() != shape.len() || strides.len() != shape.len() {
                            self.err(
                                op,
                                format!(
                                    "has {} sizes and {} strides but the memref has rank {}",
                                    sizes.len(),
                                    strides.len(),
                                    shape.len()
                                ),
                            );
                        } else {
                            for (i, (s, d)) in sizes.iter().zip(shape).enumerate() {
                                match (s, d) {
                                    (SizeOperand::Static(n), Dim::Static(m)) if *n as usize != *m || *n < 0 => {
                                        self.err(op, format!("size {i} is {n} but the memref says {m}"));
                                    }
                                    (SizeOperand::Static(n), Dim::Dynamic) => self.err(
                                        op,
                                        format!("size {i} is the literal {n} but the memref dimension is '?' (use an SSA value)"),
                                    ),
                                    // An SSA size over a static dimension is legal (the
                                    // dialect checks only counts and rank, and the RFC's
                                    // paged copy writes it): whoever runs the program must
                                    // check that the value fits the dimension.
                                    _ => {}
                                }
                            }
                        }
                        if let Some(set) = &set {
                            if set.dims != shape.len() {
                                self.err(
                                    op,
                                    format!(
                                        "coordinate_set has {} dimension(s) but the memref has rank {}",
                                        set.dims,
                                        shape.len()
                                    ),
                                );
                            }
                            let dynamic = sizes
                                .iter()
                                .filter(|s| matches!(s, SizeOperand::Dynamic(_)))
                                .count();
                            if set.syms != 0 && set.syms != dynamic {
                                self.err(
                                    op,
                                    format!(
                                        "coordinate_set has {} symbol(s) but {} size(s) are SSA values",
                                        set.syms, dynamic
                                    ),
                                );
                            }
                        }
                        if type_space.is_some() && type_space != memory_space {
                            self.err(
                                op,
                                "memory_space disagrees with the memref type's memory space".into(),
                            );
                        }
                    }
                    Some(t) => {
                        self.err(op, format!("must produce a memref, not '{}'", type_str(t)))
                    }
                    None => {}
                }
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
                self.expect_type(view, &operand_infos[0], view_type, "view");
                for (i, o) in operands.iter().enumerate() {
                    self.expect_type(o, &operand_infos[1 + i], &Type::index(), "subscript");
                }
                let set = self.resolve_set(op, access_tile_set, "access_tile_set");
                let order = match access_tile_order {
                    None => {
                        self.err(op, "requires the 'access_tile_order' attribute".into());
                        None
                    }
                    Some(a) => match self.module.resolve(a) {
                        Some(Attr::Map(m)) => Some(m.clone()),
                        _ => {
                            self.err(op, "'access_tile_order' must be an affine_map".into());
                            None
                        }
                    },
                };
                let view_rank = view_type.shape().len();
                if !matches!(view_type, Type::MemRef { .. }) {
                    self.err(
                        op,
                        format!("needs a memref view, not '{}'", type_str(view_type)),
                    );
                }
                if subscripts.len() != view_rank {
                    self.err(
                        op,
                        format!(
                            "has {} subscript(s) but the view has rank {view_rank}",
                            subscripts.len()
                        ),
                    );
                }
                let rank = rt.as_ref().map(|t| t.shape().len()).unwrap_or(0);
                if !matches!(rt, Some(Type::AccessTile { .. })) {
                    self.err(op, "must produce a '!ktdp.access_tile<...>'".into());
                }
                if rank != view_rank {
                    self.err(
                        op,
                        format!("produces a rank-{rank} tile from a rank-{view_rank} view"),
                    );
                }
                if let Some(set) = &set {
                    if set.dims != rank {
                        self.err(
                            op,
                            format!(
                                "access_tile_set has {} dimension(s) but the tile has rank {rank}",
                                set.dims
                            ),
                        );
                    }
                    if set.syms != symbols.len() {
                        self.err(
                            op,
                            format!(
                                "access_tile_set has {} symbol(s) but {} value(s) are bound with symbols(...)",
                                set.syms,
                                symbols.len()
                            ),
                        );
                    }
                    // The set must fit the tile's static shape when both are known.
                    if let (Some(bounds), Some(Type::AccessTile { shape })) =
                        (set.box_bounds(&vec![0; set.syms]), &rt)
                    {
                        // The tile lists the set's dimensions in the order map's order.
                        let perm = order
                            .as_ref()
                            .and_then(AffineMap::as_permutation)
                            .filter(|p| p.len() == shape.len() && p.len() == bounds.len())
                            .unwrap_or_else(|| (0..shape.len()).collect());
                        if set.syms == 0 {
                            for (i, (lo, hi)) in bounds.iter().enumerate() {
                                let Some(at) = perm.iter().position(|&d| d == i) else {
                                    continue;
                                };
                                if let Some(Dim::Static(n)) = shape.get(at) {
                                    if hi - lo + 1 != *n as i64 {
                                        let which = if at == i {
                                            String::new()
                                        } else {
                                            format!(
                                                " in its dimension {at} (access_tile_order puts set dimension {i} there)"
                                            )
                                        };
                                        self.err(
                                            op,
                                            format!(
                                                "access_tile_set spans {} point(s) in dimension {i} but the tile type says {n}{which}",
                                                hi - lo + 1
                                            ),
                                        );
                                    }
                                }
                            }
                        }
                    }
                }
                if let Some(m) = &order {
                    if m.dims != m.results.len() || m.dims != rank {
                        self.err(
                            op,
                            format!(
                                "access_tile_order must be a square map over the tile's {rank} dimension(s), found {} -> {}",
                                m.dims,
                                m.results.len()
                            ),
                        );
                    } else if m.as_permutation().is_none() {
                        self.err(
                            op,
                            "access_tile_order must permute the tile's dimensions".into(),
                        );
                    }
                }
                tile_elem = view_type.elem();
                remote = operand_infos[0].as_ref().is_some_and(|i| i.remote);
                self.check_tile_inside_view(op, view, set.as_ref());
            }
            OpKind::Load { tile, tile_type } => {
                self.expect_type(tile, &operand_infos[0], tile_type, "tile");
                if operand_infos[0].as_ref().is_some_and(|i| i.remote) {
                    self.remote_load = true;
                }
                if let Some(t) = &rt {
                    if t.shape() != tile_type.shape() {
                        self.err(
                            op,
                            format!(
                                "result '{}' does not have the access tile's shape '{}'",
                                type_str(t),
                                type_str(tile_type)
                            ),
                        );
                    }
                    if !matches!(t, Type::Tensor { .. }) {
                        self.err(op, "must produce a tensor".into());
                    }
                    if let (Some(Some(info)), Some(e)) = (operand_infos.first(), t.elem()) {
                        if let Some(te) = info.tile_elem {
                            if te != e {
                                self.err(
                                    op,
                                    format!(
                                        "loads '{}' elements from a view of '{}'",
                                        e.name(),
                                        te.name()
                                    ),
                                );
                            }
                        }
                    }
                }
            }
            OpKind::Store {
                value,
                tile,
                value_type,
                tile_type,
            } => {
                self.expect_type(value, &operand_infos[0], value_type, "value");
                self.expect_type(tile, &operand_infos[1], tile_type, "tile");
                if operand_infos[1].as_ref().is_some_and(|i| i.remote)
                    && self.remote_store.is_none()
                {
                    self.remote_store = Some(op.span);
                }
                if value_type.shape() != tile_type.shape() {
                    self.err(
                        op,
                        format!(
                            "stores '{}' through an access tile of shape '{}'",
                            type_str(value_type),
                            type_str(tile_type)
                        ),
                    );
                }
                if let (Some(Some(info)), Some(e)) = (operand_infos.get(1), value_type.elem()) {
                    if let Some(te) = info.tile_elem {
                        if te != e {
                            self.err(
                                op,
                                format!(
                                    "stores '{}' elements into a view of '{}'",
                                    e.name(),
                                    te.name()
                                ),
                            );
                        }
                    }
                }
            }
            OpKind::TensorEmpty { dynamic_sizes } => {
                if let Some(t) = &rt {
                    let dynamic = t.shape().iter().filter(|d| **d == Dim::Dynamic).count();
                    if dynamic != dynamic_sizes.len() {
                        self.err(
                            op,
                            format!(
                                "has {} size operand(s) for {dynamic} dynamic dimension(s)",
                                dynamic_sizes.len()
                            ),
                        );
                    }
                }
            }
            OpKind::CollapseShape {
                source,
                reassociation,
                source_type,
            } => {
                self.expect_type(source, &operand_infos[0], source_type, "source");
                if let Some(t) = &rt {
                    self.check_reassociation(op, reassociation, source_type, t);
                }
            }
            OpKind::ExpandShape {
                source,
                reassociation,
                source_type,
                output_shape,
            } => {
                self.expect_type(source, &operand_infos[0], source_type, "source");
                if let Some(t) = &rt {
                    self.check_reassociation(op, reassociation, t, source_type);
                    if output_shape.len() != t.shape().len() {
                        self.err(op, "output_shape must list every result dimension".into());
                    }
                }
            }
            OpKind::Fill {
                value,
                value_type,
                init,
                init_type,
            } => {
                self.expect_type(value, &operand_infos[0], value_type, "value");
                self.expect_type(init, &operand_infos[1], init_type, "init");
                if value_type.elem() != init_type.elem() || !matches!(value_type, Type::Scalar(_)) {
                    self.err(
                        op,
                        format!(
                            "fills '{}' with '{}'",
                            type_str(init_type),
                            type_str(value_type)
                        ),
                    );
                }
                self.result_is_init(op, init_type);
            }
            OpKind::Matmul {
                lhs,
                rhs,
                init,
                input_types,
                init_type,
            } => {
                if let [a, b] = input_types.as_slice() {
                    self.expect_type(lhs, &operand_infos[0], a, "lhs");
                    self.expect_type(rhs, &operand_infos[1], b, "rhs");
                    self.expect_type(init, &operand_infos[2], init_type, "init");
                    match (a.static_shape(), b.static_shape(), init_type.static_shape()) {
                        (Some(a), Some(b), Some(c))
                            if a.len() == 2 && b.len() == 2 && c.len() == 2 =>
                        {
                            if a[1] != b[0] || c[0] != a[0] || c[1] != b[1] {
                                self.err(
                                    op,
                                    format!(
                                        "shapes do not agree: {}x{} times {}x{} into {}x{}",
                                        a[0], a[1], b[0], b[1], c[0], c[1]
                                    ),
                                );
                            }
                        }
                        _ => self.err(op, "needs rank-2 operands with static shapes".into()),
                    }
                }
                self.result_is_init(op, init_type);
            }
            OpKind::Transpose {
                input,
                input_type,
                init,
                init_type,
                permutation,
            } => {
                self.expect_type(input, &operand_infos[0], input_type, "input");
                self.expect_type(init, &operand_infos[1], init_type, "init");
                let n = input_type.shape().len();
                let mut seen = vec![false; n];
                let valid = permutation.len() == n
                    && permutation
                        .iter()
                        .all(|&p| p < n && !std::mem::replace(&mut seen[p], true));
                if !valid {
                    self.err(
                        op,
                        format!(
                            "permutation {permutation:?} is not a permutation of {n} dimension(s)"
                        ),
                    );
                } else {
                    let want: Vec<Dim> =
                        permutation.iter().map(|&p| input_type.shape()[p]).collect();
                    if want != init_type.shape() || input_type.elem() != init_type.elem() {
                        self.err(
                            op,
                            format!("init '{}' is not the permuted input", type_str(init_type)),
                        );
                    }
                }
                self.result_is_init(op, init_type);
            }
            OpKind::Broadcast {
                input,
                input_type,
                init,
                init_type,
                dimensions,
            } => {
                self.expect_type(input, &operand_infos[0], input_type, "input");
                self.expect_type(init, &operand_infos[1], init_type, "init");
                let out = init_type.shape();
                let kept: Vec<Dim> = (0..out.len())
                    .filter(|d| !dimensions.contains(d))
                    .map(|d| out[d])
                    .collect();
                let sorted = dimensions.windows(2).all(|w| w[0] < w[1]);
                if !sorted
                    || dimensions.iter().any(|&d| d >= out.len())
                    || kept != input_type.shape()
                    || input_type.elem() != init_type.elem()
                {
                    self.err(
                        op,
                        format!(
                            "cannot broadcast '{}' to '{}' along dimensions {dimensions:?}",
                            type_str(input_type),
                            type_str(init_type)
                        ),
                    );
                }
                self.result_is_init(op, init_type);
            }
            OpKind::For {
                induction: _,
                lower,
                upper,
                step,
                iter_args,
                body,
            } => {
                for (i, v) in [lower, upper, step].into_iter().enumerate() {
                    self.expect_type(v, &operand_infos[i], &Type::index(), "loop bound");
                }
                for (i, ((_, init), t)) in iter_args.iter().zip(&op.result_types).enumerate() {
                    self.expect_type(init, &operand_infos[3 + i], t, "iter_arg");
                }
                self.region(body, scope, "scf.for");
                match body.ops.last() {
                    Some(Op {
                        kind: OpKind::Yield { types, .. },
                        span,
                        ..
                    }) => {
                        if types != &op.result_types {
                            self.diags.error(
                                *span,
                                "'scf.yield' types must match the loop's iter_args".to_string(),
                            );
                        }
                    }
                    _ if iter_args.is_empty() => {}
                    _ => self.err(op, "body must end with 'scf.yield'".into()),
                }
            }
            OpKind::Yield { values, types } => {
                if values.len() != types.len() {
                    self.err(op, "lists a different number of values and types".into());
                }
                for (i, (v, t)) in values.iter().zip(types).enumerate() {
                    self.expect_type(v, &operand_infos[i], t, "yielded value");
                }
            }
            _ => self.op_ext(op, scope, &operand_infos, &mut tile_elem, &mut remote),
        }
        self.define(op, scope, tile_elem, remote);
    }

    fn result_is_init(&mut self, op: &Op, init_type: &Type) {
        if let Some(t) = op.result_types.first() {
            if t != init_type {
                self.err(
                    op,
                    format!(
                        "result type '{}' must equal the init type '{}'",
                        type_str(t),
                        type_str(init_type)
                    ),
                );
            }
        }
    }

    /// `big` collapses to `small` by `groups`.
    fn check_reassociation(&mut self, op: &Op, groups: &[Vec<usize>], big: &Type, small: &Type) {
        // Reshaping to or from rank 0 takes no groups; every dim of the other side must be 1.
        if groups.is_empty() && small.shape().is_empty() {
            if big.shape().iter().any(|d| *d != Dim::Static(1)) {
                self.err(
                    op,
                    format!(
                        "'{}' has dimensions other than 1, so it does not reshape to rank 0",
                        type_str(big)
                    ),
                );
            }
            if big.elem() != small.elem() {
                self.err(op, "changes the element type".into());
            }
            return;
        }
        let flat: Vec<usize> = groups.iter().flatten().copied().collect();
        let in_order = flat.iter().enumerate().all(|(i, &d)| i == d);
        if !in_order || flat.len() != big.shape().len() || groups.len() != small.shape().len() {
            self.err(
                op,
                format!(
                    "reassociation {groups:?} does not group the {} dimension(s) of '{}' into the {} of '{}'",
                    big.shape().len(),
                    type_str(big),
                    small.shape().len(),
                    type_str(small)
                ),
            );
            return;
        }
        if big.elem() != small.elem() {
            self.err(op, "changes the element type".into());
        }
        if let (Some(b), Some(s)) = (big.static_shape(), small.static_shape()) {
            for (g, want) in groups.iter().zip(&s) {
                let got: usize = g.iter().map(|&d| b[d]).product();
                if got != *want {
                    self.err(
                        op,
                        format!(
                            "group {g:?} has {got} element(s) but the matching dimension is {want}"
                        ),
                    );
                }
            }
        }
    }
}
