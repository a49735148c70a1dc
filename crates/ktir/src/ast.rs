//! The KTIR syntax tree: modules, functions, operations, types and affine structures.
//!
//! Operations are a typed enum rather than MLIR's generic operation record: every op the
//! playground understands has its operands and attributes as fields, so the verifier and
//! the simulator match on them instead of looking attributes up by name.

use std::fmt;

mod ops;
pub use ops::*;

/// A byte range in the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// A span covering `start..end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
}

/// A whole KTIR file: aliases and functions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    /// Module-level `#name = ...` definitions, in source order.
    pub aliases: Vec<Alias>,
    /// Module-level `!name = type` definitions, in source order (uses are resolved while
    /// parsing, so types in the tree never refer to them).
    pub type_aliases: Vec<(String, Type)>,
    /// Kernel functions, in source order.
    pub funcs: Vec<Func>,
    /// Comment lines (without `// `) printed before everything else. The parser skips
    /// comments, so this is empty for parsed modules; built modules use it to explain
    /// themselves.
    pub comments: Vec<String>,
}

impl Module {
    /// The function with this name, if any.
    pub fn func(&self, name: &str) -> Option<&Func> {
        self.funcs.iter().find(|f| f.name == name)
    }
}

/// A `#name = affine_set<...>` or `#name = affine_map<...>` definition.
#[derive(Clone, Debug, PartialEq)]
pub struct Alias {
    /// Name without the `#`.
    pub name: String,
    /// The aliased attribute.
    pub value: Attr,
    /// Where it was defined.
    pub span: Span,
}

/// A `func.func` kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    /// Symbol name without the `@`.
    pub name: String,
    /// Arguments: SSA name (without `%`) and type.
    pub args: Vec<(String, Type)>,
    /// Result types.
    pub results: Vec<Type>,
    /// The compute grid (`attributes {grid = [..]}`); `None` when absent.
    pub grid: Option<Vec<usize>>,
    /// The body.
    pub body: Block,
    /// Where the function header is.
    pub span: Span,
    /// A comment line (without `// `) printed before the header; `None` when parsed.
    pub comment: Option<String>,
}

impl Func {
    /// Number of compute tiles the grid asks for (1 when there is no grid).
    pub fn grid_size(&self) -> usize {
        self.grid.as_ref().map(|g| g.iter().product()).unwrap_or(1)
    }
}

/// A straight-line list of operations (one block per region in this subset).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    /// Block arguments (loop induction variables and iteration arguments).
    pub args: Vec<(String, Type)>,
    /// The operations.
    pub ops: Vec<Op>,
}

/// A use of an SSA value.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    /// Name without the `%`.
    pub name: String,
    /// Where it is used.
    pub span: Span,
}

/// One operation with its results.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    /// Names (without `%`) of the values the op defines.
    pub results: Vec<String>,
    /// What the op does.
    pub kind: OpKind,
    /// Types of the results, in order.
    pub result_types: Vec<Type>,
    /// Where the op is written.
    pub span: Span,
    /// A comment (without `// `) printed after the op on its line; `None` when parsed.
    pub comment: Option<String>,
}

/// A size or stride: a literal or an SSA value.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeOperand {
    /// A literal.
    Static(i64),
    /// An SSA value of type `index`.
    Dynamic(Value),
}

/// What an operation does, with its operands and attributes.
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// `func.return`.
    Return {
        values: Vec<Value>,
        types: Vec<Type>,
    },
    /// `arith.constant`.
    Constant { value: Literal },
    /// An `arith`/`math` elementwise op written `name %a[, %b[, %c]] : T`, on scalars or
    /// tensors; `operands` has `op.arity()` values.
    Elementwise {
        op: ElementwiseOp,
        operands: Vec<Value>,
    },
    /// `ktdp.get_compute_tile_id`: one result per grid dimension, or with `{dim = N}` (the
    /// reference interpreter's spelling) the one coordinate along dimension `N`.
    GetComputeTileId { dim: Option<usize> },
    /// `ktdp.construct_memory_view`.
    ConstructMemoryView {
        base: Value,
        sizes: Vec<SizeOperand>,
        strides: Vec<SizeOperand>,
        coordinate_set: Option<Attr>,
        memory_space: Option<MemorySpace>,
    },
    /// `ktdp.construct_access_tile`.
    ConstructAccessTile {
        view: Value,
        /// One affine expression per view dimension; `Dim(i)` refers to `operands[i]`.
        subscripts: Vec<AffineExpr>,
        /// The SSA values the subscripts refer to.
        operands: Vec<Value>,
        access_tile_set: Option<Attr>,
        access_tile_order: Option<Attr>,
        /// Values bound to the set's symbols (`symbols(...)`).
        symbols: Vec<Value>,
        /// Type of the view operand.
        view_type: Type,
    },
    /// `ktdp.load`.
    Load { tile: Value, tile_type: Type },
    /// `ktdp.store`.
    Store {
        value: Value,
        tile: Value,
        value_type: Type,
        tile_type: Type,
    },
    /// `tensor.empty`.
    TensorEmpty { dynamic_sizes: Vec<Value> },
    /// `tensor.collapse_shape`.
    CollapseShape {
        source: Value,
        reassociation: Vec<Vec<usize>>,
        source_type: Type,
    },
    /// `tensor.expand_shape`.
    ExpandShape {
        source: Value,
        reassociation: Vec<Vec<usize>>,
        output_shape: Vec<SizeOperand>,
        source_type: Type,
    },
    /// `linalg.fill`.
    Fill {
        value: Value,
        value_type: Type,
        init: Value,
        init_type: Type,
    },
    /// `linalg.matmul`.
    Matmul {
        lhs: Value,
        rhs: Value,
        init: Value,
        input_types: Vec<Type>,
        init_type: Type,
    },
    /// `linalg.transpose`.
    Transpose {
        input: Value,
        input_type: Type,
        init: Value,
        init_type: Type,
        permutation: Vec<usize>,
    },
    /// `linalg.broadcast`.
    Broadcast {
        input: Value,
        input_type: Type,
        init: Value,
        init_type: Type,
        dimensions: Vec<usize>,
    },
    /// `scf.for` with optional `iter_args`.
    For {
        induction: String,
        lower: Value,
        upper: Value,
        step: Value,
        /// (block argument name, initial value).
        iter_args: Vec<(String, Value)>,
        body: Block,
    },
    /// `scf.yield`.
    Yield {
        values: Vec<Value>,
        types: Vec<Type>,
    },
    /// `arith.cmpi` / `arith.cmpf`, told apart by the predicate.
    Compare {
        predicate: Predicate,
        lhs: Value,
        rhs: Value,
        operand_type: Type,
    },
    /// `arith.select %c, %a, %b : [cond type,] T`.
    Select {
        cond: Value,
        true_value: Value,
        false_value: Value,
        /// Written when the condition is a tensor of `i1`.
        cond_type: Option<Type>,
    },
    /// `arith.extf %x : A to B` and the other casts of [`CAST_OPS`].
    Cast {
        name: String,
        operand: Value,
        source_type: Type,
    },
    /// `ktdp.construct_distributed_memory_view (%a, %b : T, T) : R`.
    ConstructDistributedMemoryView {
        views: Vec<Value>,
        view_types: Vec<Type>,
    },
    /// `ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %X[ind(%I[%m, %k]), (%k)] {...}`.
    ConstructIndirectAccessTile {
        /// Names (without `%`) of the intermediate variables.
        variables: Vec<String>,
        base: Value,
        /// One per base dimension; `Dim(i)` refers to `dims[i]`.
        subscripts: Vec<IndirectSubscript>,
        /// Every SSA name the subscripts mention (captured values and intermediate
        /// variables), in order of first appearance.
        dims: Vec<Value>,
        symbols: Vec<Value>,
        variables_space_set: Option<Attr>,
        variables_space_order: Option<Attr>,
        base_type: Type,
        /// Types of the index views, one per `ind(...)`.
        index_types: Vec<Type>,
    },
    /// `ktdp.runtime_arg_extract value|granularity|upperbound from %a : T -> R`.
    RuntimeArgExtract {
        field: RuntimeArgField,
        input: Value,
        input_type: Type,
    },
    /// `ktdp.inter_tile_produce producer_tiles_per_group = S -> F { ^bb0(%g: index): ... }`.
    InterTileProduce {
        producer_tiles_per_group: Attr,
        body: Block,
    },
    /// `ktdp.inter_tile_consume(%f) consumer_tiles_per_group = S[, producer_dependency_per_consumer = D] : F -> T`.
    InterTileConsume {
        future: Value,
        consumer_tiles_per_group: Attr,
        producer_dependency_per_consumer: Option<Attr>,
        future_type: Type,
    },
    /// `ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = S, [producer_dependency_per_consumer = D,] identity(%i : T) : F -> T { combiner }`.
    InterTileReduce {
        future: Value,
        consumer_tiles_per_group: Attr,
        producer_dependency_per_consumer: Option<Attr>,
        identity: Vec<Value>,
        identity_types: Vec<Type>,
        future_type: Type,
        combiner: Block,
    },
    /// `ktdp.yield_partial`.
    YieldPartial {
        values: Vec<Value>,
        types: Vec<Type>,
    },
    /// `ktdp.yield_reduced`.
    YieldReduced {
        values: Vec<Value>,
        types: Vec<Type>,
    },
    /// `scf.if %c [-> (T..)] { .. } [else { .. }]`.
    If {
        cond: Value,
        then_block: Block,
        else_block: Option<Block>,
    },
    /// `tensor.splat %v[dynamic sizes] : T`.
    TensorSplat {
        value: Value,
        dynamic_sizes: Vec<Value>,
    },
    /// `tensor.extract %t[%i, ..] : T`.
    TensorExtract {
        tensor: Value,
        indices: Vec<Value>,
        tensor_type: Type,
    },
    /// `tensor.insert %s into %t[%i, ..] : T`.
    TensorInsert {
        scalar: Value,
        dest: Value,
        indices: Vec<Value>,
        dest_type: Type,
    },
    /// `tensor.extract_slice %t[offsets] [sizes] [strides] : T to R`.
    ExtractSlice {
        source: Value,
        offsets: Vec<SizeOperand>,
        sizes: Vec<SizeOperand>,
        strides: Vec<SizeOperand>,
        source_type: Type,
    },
    /// `tensor.insert_slice %s into %d[offsets] [sizes] [strides] : S into D`.
    InsertSlice {
        source: Value,
        dest: Value,
        offsets: Vec<SizeOperand>,
        sizes: Vec<SizeOperand>,
        strides: Vec<SizeOperand>,
        source_type: Type,
        dest_type: Type,
    },
    /// Named linalg ops without attributes: elementwise (`linalg.add`, `linalg.exp`, ...),
    /// `linalg.copy`, `linalg.batch_matmul`, `linalg.matmul_transpose_b`, ...
    LinalgNamed {
        op: LinalgNamedOp,
        inputs: Vec<(Value, Type)>,
        inits: Vec<(Value, Type)>,
    },
    /// `linalg.generic {indexing_maps = [..], iterator_types = [..]} ins(..) outs(..) { .. }`.
    LinalgGeneric {
        indexing_maps: Vec<Attr>,
        /// `parallel` or `reduction` per loop.
        iterator_types: Vec<String>,
        inputs: Vec<(Value, Type)>,
        inits: Vec<(Value, Type)>,
        body: Block,
    },
    /// `linalg.reduce` with a combiner region or the `{ arith.addf }` shorthand.
    LinalgReduce {
        inputs: Vec<(Value, Type)>,
        inits: Vec<(Value, Type)>,
        dimensions: Vec<usize>,
        /// The combiner region; empty for the shorthand form.
        body: Block,
        /// `Some(op)` when written as `linalg.reduce { arith.addf } ...`; always a binary
        /// `arith`/`math` op.
        shorthand: Option<ElementwiseOp>,
    },
    /// `linalg.index N : index`: the current iteration's index along loop dimension `N`
    /// of the enclosing `linalg.generic`.
    LinalgIndex { dim: usize },
    /// `linalg.yield`.
    LinalgYield {
        values: Vec<Value>,
        types: Vec<Type>,
    },
    /// An op in MLIR's generic form (`"dialect.op"(%a) ({..}) {attrs} : (T) -> R`) that the
    /// parser does not turn into one of the typed ops above.
    Generic {
        name: String,
        operands: Vec<Value>,
        operand_types: Vec<Type>,
        /// Attribute names with their values as written (canonical spacing).
        attrs: Vec<(String, String)>,
        regions: Vec<Block>,
    },
}

/// One subscript of an indirect access tile.
#[derive(Clone, Debug, PartialEq)]
pub enum IndirectSubscript {
    /// `(expr)`: the coordinate is computed directly.
    Direct(AffineExpr),
    /// `ind(%view[exprs])`: the coordinate is loaded from an index view.
    Indirect { view: Value, exprs: Vec<AffineExpr> },
}

/// What `ktdp.runtime_arg_extract` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeArgField {
    Value,
    Granularity,
    Upperbound,
}

impl RuntimeArgField {
    /// The keyword.
    pub fn name(self) -> &'static str {
        match self {
            RuntimeArgField::Value => "value",
            RuntimeArgField::Granularity => "granularity",
            RuntimeArgField::Upperbound => "upperbound",
        }
    }
}

/// Casts of [`OpKind::Cast`].
pub const CAST_OPS: &[&str] = &[
    "arith.extf",
    "arith.truncf",
    "arith.sitofp",
    "arith.uitofp",
    "arith.fptosi",
    "arith.fptoui",
    "arith.extsi",
    "arith.extui",
    "arith.trunci",
    "arith.index_cast",
    "arith.index_castui",
    "arith.bitcast",
];

/// The dialects a KTIR program may use.
pub const LEGAL_DIALECTS: &[&str] = &[
    "ktdp", "arith", "func", "linalg", "math", "memref", "scf", "tensor",
];

/// The body of [`OpKind::regions`] and [`OpKind::regions_mut`], for shared (`iter`) and
/// mutable (`iter_mut`) borrows alike.
macro_rules! regions_of {
    ($op:expr, $iter:ident) => {
        match $op {
            OpKind::For { body, .. }
            | OpKind::InterTileProduce { body, .. }
            | OpKind::LinalgGeneric { body, .. }
            | OpKind::LinalgReduce { body, .. } => vec![body],
            OpKind::InterTileReduce { combiner, .. } => vec![combiner],
            OpKind::If {
                then_block,
                else_block,
                ..
            } => std::iter::once(then_block).chain(else_block).collect(),
            OpKind::Generic { regions, .. } => regions.$iter().collect(),
            _ => vec![],
        }
    };
}

/// The body of [`OpKind::operands`] and [`OpKind::operands_mut`]: one list of which fields
/// are operands, for shared (`iter`) and mutable (`iter_mut`) borrows alike.
macro_rules! operands_of {
    ($op:expr, $iter:ident) => {{
        macro_rules! dynamic_sizes {
            ($v:ident, $s:expr) => {
                for x in $s.$iter() {
                    if let SizeOperand::Dynamic(d) = x {
                        $v.push(d);
                    }
                }
            };
        }
        match $op {
            OpKind::Return { values, .. }
            | OpKind::Yield { values, .. }
            | OpKind::YieldPartial { values, .. }
            | OpKind::YieldReduced { values, .. }
            | OpKind::LinalgYield { values, .. }
            | OpKind::Elementwise {
                operands: values, ..
            }
            | OpKind::Generic {
                operands: values, ..
            }
            | OpKind::ConstructDistributedMemoryView { views: values, .. } => {
                values.$iter().collect()
            }
            OpKind::Compare { lhs, rhs, .. } => vec![lhs, rhs],
            OpKind::Select {
                cond,
                true_value,
                false_value,
                ..
            } => vec![cond, true_value, false_value],
            OpKind::Cast { operand, .. } => vec![operand],
            OpKind::ConstructIndirectAccessTile {
                variables,
                base,
                subscripts,
                dims,
                symbols,
                ..
            } => {
                let mut v = vec![base];
                for s in subscripts.$iter() {
                    if let IndirectSubscript::Indirect { view, .. } = s {
                        v.push(view);
                    }
                }
                v.extend(dims.$iter().filter(|d| !variables.contains(&d.name)));
                v.extend(symbols);
                v
            }
            OpKind::RuntimeArgExtract { input, .. } => vec![input],
            OpKind::InterTileProduce { .. } => vec![],
            OpKind::InterTileConsume { future, .. } => vec![future],
            OpKind::InterTileReduce {
                future, identity, ..
            } => std::iter::once(future).chain(identity).collect(),
            OpKind::If { cond, .. } => vec![cond],
            OpKind::TensorSplat {
                value,
                dynamic_sizes,
            } => std::iter::once(value).chain(dynamic_sizes).collect(),
            OpKind::TensorExtract {
                tensor, indices, ..
            } => std::iter::once(tensor).chain(indices).collect(),
            OpKind::TensorInsert {
                scalar,
                dest,
                indices,
                ..
            } => [scalar, dest].into_iter().chain(indices).collect(),
            OpKind::ExtractSlice {
                source,
                offsets,
                sizes: sz,
                strides,
                ..
            } => {
                let mut v = vec![source];
                dynamic_sizes!(v, offsets);
                dynamic_sizes!(v, sz);
                dynamic_sizes!(v, strides);
                v
            }
            OpKind::InsertSlice {
                source,
                dest,
                offsets,
                sizes: sz,
                strides,
                ..
            } => {
                let mut v = vec![source, dest];
                dynamic_sizes!(v, offsets);
                dynamic_sizes!(v, sz);
                dynamic_sizes!(v, strides);
                v
            }
            OpKind::LinalgNamed { inputs, inits, .. }
            | OpKind::LinalgGeneric { inputs, inits, .. }
            | OpKind::LinalgReduce { inputs, inits, .. } => {
                inputs.$iter().chain(inits).map(|(v, _)| v).collect()
            }
            OpKind::Constant { .. }
            | OpKind::GetComputeTileId { .. }
            | OpKind::LinalgIndex { .. } => {
                vec![]
            }
            OpKind::ConstructMemoryView {
                base,
                sizes,
                strides,
                ..
            } => {
                let mut v = vec![base];
                for s in sizes.$iter().chain(strides.$iter()) {
                    if let SizeOperand::Dynamic(d) = s {
                        v.push(d);
                    }
                }
                v
            }
            OpKind::ConstructAccessTile {
                view,
                operands,
                symbols,
                ..
            } => std::iter::once(view)
                .chain(operands)
                .chain(symbols)
                .collect(),
            OpKind::Load { tile, .. } => vec![tile],
            OpKind::Store { value, tile, .. } => vec![value, tile],
            OpKind::TensorEmpty { dynamic_sizes } => dynamic_sizes.$iter().collect(),
            OpKind::CollapseShape { source, .. } => vec![source],
            OpKind::ExpandShape {
                source,
                output_shape,
                ..
            } => {
                let mut v = vec![source];
                for s in output_shape.$iter() {
                    if let SizeOperand::Dynamic(d) = s {
                        v.push(d);
                    }
                }
                v
            }
            OpKind::Fill { value, init, .. } => vec![value, init],
            OpKind::Matmul { lhs, rhs, init, .. } => vec![lhs, rhs, init],
            OpKind::Transpose { input, init, .. } | OpKind::Broadcast { input, init, .. } => {
                vec![input, init]
            }
            OpKind::For {
                lower,
                upper,
                step,
                iter_args,
                ..
            } => {
                let mut v = vec![lower, upper, step];
                v.extend(iter_args.$iter().map(|(_, init)| init));
                v
            }
        }
    }};
}

impl OpKind {
    /// The MLIR name of the op.
    pub fn name(&self) -> &str {
        match self {
            OpKind::Cast { name, .. } | OpKind::Generic { name, .. } => name,
            OpKind::Elementwise { op, .. } => op.name(),
            OpKind::LinalgNamed { op, .. } => op.name(),
            OpKind::Compare { predicate, .. } => predicate.op_name(),
            OpKind::Select { .. } => "arith.select",
            OpKind::ConstructDistributedMemoryView { .. } => {
                "ktdp.construct_distributed_memory_view"
            }
            OpKind::ConstructIndirectAccessTile { .. } => "ktdp.construct_indirect_access_tile",
            OpKind::RuntimeArgExtract { .. } => "ktdp.runtime_arg_extract",
            OpKind::InterTileProduce { .. } => "ktdp.inter_tile_produce",
            OpKind::InterTileConsume { .. } => "ktdp.inter_tile_consume",
            OpKind::InterTileReduce { .. } => "ktdp.inter_tile_reduce",
            OpKind::YieldPartial { .. } => "ktdp.yield_partial",
            OpKind::YieldReduced { .. } => "ktdp.yield_reduced",
            OpKind::If { .. } => "scf.if",
            OpKind::TensorSplat { .. } => "tensor.splat",
            OpKind::TensorExtract { .. } => "tensor.extract",
            OpKind::TensorInsert { .. } => "tensor.insert",
            OpKind::ExtractSlice { .. } => "tensor.extract_slice",
            OpKind::InsertSlice { .. } => "tensor.insert_slice",
            OpKind::LinalgGeneric { .. } => "linalg.generic",
            OpKind::LinalgReduce { .. } => "linalg.reduce",
            OpKind::LinalgYield { .. } => "linalg.yield",
            OpKind::LinalgIndex { .. } => "linalg.index",
            OpKind::Return { .. } => "func.return",
            OpKind::Constant { .. } => "arith.constant",
            OpKind::GetComputeTileId { .. } => "ktdp.get_compute_tile_id",
            OpKind::ConstructMemoryView { .. } => "ktdp.construct_memory_view",
            OpKind::ConstructAccessTile { .. } => "ktdp.construct_access_tile",
            OpKind::Load { .. } => "ktdp.load",
            OpKind::Store { .. } => "ktdp.store",
            OpKind::TensorEmpty { .. } => "tensor.empty",
            OpKind::CollapseShape { .. } => "tensor.collapse_shape",
            OpKind::ExpandShape { .. } => "tensor.expand_shape",
            OpKind::Fill { .. } => "linalg.fill",
            OpKind::Matmul { .. } => "linalg.matmul",
            OpKind::Transpose { .. } => "linalg.transpose",
            OpKind::Broadcast { .. } => "linalg.broadcast",
            OpKind::For { .. } => "scf.for",
            OpKind::Yield { .. } => "scf.yield",
        }
    }

    /// The regions (blocks) the op carries, in order.
    pub fn regions(&self) -> Vec<&Block> {
        regions_of!(self, iter)
    }

    /// The regions (blocks) the op carries, in order, to change in place.
    pub fn regions_mut(&mut self) -> Vec<&mut Block> {
        regions_of!(self, iter_mut)
    }

    /// Whether the op ends a block (`func.return` and the yields).
    pub fn is_terminator(&self) -> bool {
        matches!(
            self,
            OpKind::Return { .. }
                | OpKind::Yield { .. }
                | OpKind::YieldPartial { .. }
                | OpKind::YieldReduced { .. }
                | OpKind::LinalgYield { .. }
        )
    }

    /// The SSA values this op reads, in order (not counting values used inside regions).
    pub fn operands(&self) -> Vec<&Value> {
        operands_of!(self, iter)
    }

    /// [`OpKind::operands`], to change in place (a transform renaming values).
    pub fn operands_mut(&mut self) -> Vec<&mut Value> {
        operands_of!(self, iter_mut)
    }
}

/// A constant's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// An integer or index.
    Int(i64),
    /// A float.
    Float(f64),
    /// `dense<v>`: one value splatted over a tensor type.
    DenseSplat(f64),
    /// `dense<[...]>`: every element, row-major.
    Dense(Vec<f64>),
}

/// Scalar element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    Index,
    I1,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
    F8E4M3,
    F8E5M2,
}

impl ScalarType {
    /// Every scalar type with its MLIR spelling.
    pub const ALL: &'static [(ScalarType, &'static str)] = &[
        (ScalarType::Index, "index"),
        (ScalarType::I1, "i1"),
        (ScalarType::I8, "i8"),
        (ScalarType::I16, "i16"),
        (ScalarType::I32, "i32"),
        (ScalarType::I64, "i64"),
        (ScalarType::F16, "f16"),
        (ScalarType::BF16, "bf16"),
        (ScalarType::F32, "f32"),
        (ScalarType::F64, "f64"),
        (ScalarType::F8E4M3, "f8E4M3FN"),
        (ScalarType::F8E5M2, "f8E5M2"),
    ];

    /// The MLIR spelling.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(t, _)| *t == self)
            .map(|(_, n)| *n)
            .unwrap_or("?")
    }

    /// Parses an MLIR spelling.
    pub fn parse(s: &str) -> Option<ScalarType> {
        Self::ALL.iter().find(|(_, n)| *n == s).map(|(t, _)| *t)
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            ScalarType::F16
                | ScalarType::BF16
                | ScalarType::F32
                | ScalarType::F64
                | ScalarType::F8E4M3
                | ScalarType::F8E5M2
        )
    }

    /// Storage size in bytes (index counts as 8).
    pub fn size_bytes(self) -> usize {
        match self {
            ScalarType::I1 | ScalarType::I8 | ScalarType::F8E4M3 | ScalarType::F8E5M2 => 1,
            ScalarType::I16 | ScalarType::F16 | ScalarType::BF16 => 2,
            ScalarType::I32 | ScalarType::F32 => 4,
            ScalarType::I64 | ScalarType::F64 | ScalarType::Index => 8,
        }
    }
}

/// One dimension of a shaped type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// A known extent.
    Static(usize),
    /// `?`.
    Dynamic,
}

/// Where a memref lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemorySpace {
    /// Off-chip memory (`global`, old spelling `HBM`).
    Global,
    /// A core's scratchpad (`ct_local`, old spelling `LX`); `core` names a specific core's.
    Local {
        /// `ct_id = N` (old: `core = N`); `None` means the executing core.
        core: Option<i64>,
    },
}

/// A KTIR type.
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// A scalar.
    Scalar(ScalarType),
    /// `tensor<AxBxT>`.
    Tensor { shape: Vec<Dim>, elem: ScalarType },
    /// `memref<AxBxT>` with an optional memory space.
    MemRef {
        shape: Vec<Dim>,
        elem: ScalarType,
        memory_space: Option<MemorySpace>,
    },
    /// `!ktdp.access_tile<AxBxindex>`.
    AccessTile { shape: Vec<Dim> },
    /// `!ktdp.tile_future<(T, ..), groups = affine_set<(g) : ..>>`.
    TileFuture { partials: Vec<Type>, groups: Attr },
    /// `!ktdp.runtime_arg<T, granularity = G, upperbound = U>`.
    RuntimeArg {
        underlying: Box<Type>,
        granularity: Option<i64>,
        upperbound: Option<i64>,
    },
}

impl Type {
    /// The shape of a shaped type; empty for scalars.
    pub fn shape(&self) -> &[Dim] {
        match self {
            Type::Scalar(_) | Type::TileFuture { .. } | Type::RuntimeArg { .. } => &[],
            Type::Tensor { shape, .. }
            | Type::MemRef { shape, .. }
            | Type::AccessTile { shape } => shape,
        }
    }

    /// The static shape, if every dimension is known.
    pub fn static_shape(&self) -> Option<Vec<usize>> {
        self.shape()
            .iter()
            .map(|d| match d {
                Dim::Static(n) => Some(*n),
                Dim::Dynamic => None,
            })
            .collect()
    }

    /// The element type of scalars, tensors and memrefs.
    pub fn elem(&self) -> Option<ScalarType> {
        match self {
            Type::Scalar(s) => Some(*s),
            Type::Tensor { elem, .. } | Type::MemRef { elem, .. } => Some(*elem),
            Type::AccessTile { .. } => Some(ScalarType::Index),
            Type::TileFuture { .. } => None,
            Type::RuntimeArg { underlying, .. } => underlying.elem(),
        }
    }

    /// When `result` is this tensor type with some size-1 axes removed (the within-group
    /// tile axes an `inter_tile_reduce` may collapse), the removed axes of `self`, in
    /// increasing order; `Some(vec![])` when the types are equal, `None` when `result` is
    /// not such a collapse (other element type, or a non-unit axis differs).
    pub fn dropped_unit_axes(&self, result: &Type) -> Option<Vec<usize>> {
        let (Type::Tensor { shape: p, elem: pe }, Type::Tensor { shape: r, elem: re }) =
            (self, result)
        else {
            return None;
        };
        if pe != re || r.len() > p.len() {
            return None;
        }
        // Matching greedily is enough: a unit axis matched early could equally be dropped
        // later, since only unit axes are ever dropped.
        let mut dropped = Vec::new();
        let mut j = 0;
        for (i, d) in p.iter().enumerate() {
            if j < r.len() && r[j] == *d {
                j += 1;
            } else if *d == Dim::Static(1) {
                dropped.push(i);
            } else {
                return None;
            }
        }
        (j == r.len()).then_some(dropped)
    }

    /// The `index` type.
    pub fn index() -> Type {
        Type::Scalar(ScalarType::Index)
    }
}

/// An affine expression over dimensions `d0..` and symbols `s0..`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AffineExpr {
    Dim(usize),
    Sym(usize),
    Const(i64),
    Add(Box<AffineExpr>, Box<AffineExpr>),
    Mul(Box<AffineExpr>, Box<AffineExpr>),
    FloorDiv(Box<AffineExpr>, Box<AffineExpr>),
    CeilDiv(Box<AffineExpr>, Box<AffineExpr>),
    Mod(Box<AffineExpr>, Box<AffineExpr>),
}

impl AffineExpr {
    /// Whether dimension `d` appears under a floordiv, ceildiv or mod.
    pub fn divides_dim(&self, d: usize) -> bool {
        fn has_dim(e: &AffineExpr, d: usize) -> bool {
            match e {
                AffineExpr::Dim(i) => *i == d,
                AffineExpr::Sym(_) | AffineExpr::Const(_) => false,
                AffineExpr::Add(a, b)
                | AffineExpr::Mul(a, b)
                | AffineExpr::FloorDiv(a, b)
                | AffineExpr::CeilDiv(a, b)
                | AffineExpr::Mod(a, b) => has_dim(a, d) || has_dim(b, d),
            }
        }
        match self {
            AffineExpr::Dim(_) | AffineExpr::Sym(_) | AffineExpr::Const(_) => false,
            AffineExpr::Add(a, b) | AffineExpr::Mul(a, b) => a.divides_dim(d) || b.divides_dim(d),
            AffineExpr::FloorDiv(a, b) | AffineExpr::CeilDiv(a, b) | AffineExpr::Mod(a, b) => {
                has_dim(a, d) || has_dim(b, d)
            }
        }
    }

    /// Evaluates with the given dimension and symbol values; `None` on division by zero
    /// or overflow.
    pub fn eval(&self, dims: &[i64], syms: &[i64]) -> Option<i64> {
        Some(match self {
            AffineExpr::Dim(i) => *dims.get(*i)?,
            AffineExpr::Sym(i) => *syms.get(*i)?,
            AffineExpr::Const(c) => *c,
            AffineExpr::Add(a, b) => a.eval(dims, syms)?.checked_add(b.eval(dims, syms)?)?,
            AffineExpr::Mul(a, b) => a.eval(dims, syms)?.checked_mul(b.eval(dims, syms)?)?,
            AffineExpr::FloorDiv(a, b) => {
                let (x, y) = (a.eval(dims, syms)?, b.eval(dims, syms)?);
                if y == 0 {
                    return None;
                }
                x.div_euclid(y) - if y < 0 && x.rem_euclid(y) != 0 { 1 } else { 0 }
            }
            AffineExpr::CeilDiv(a, b) => {
                let (x, y) = (a.eval(dims, syms)?, b.eval(dims, syms)?);
                if y == 0 {
                    return None;
                }
                let q = x.checked_div(y)?;
                if (x % y != 0) && ((x < 0) == (y < 0)) {
                    q + 1
                } else {
                    q
                }
            }
            AffineExpr::Mod(a, b) => {
                let (x, y) = (a.eval(dims, syms)?, b.eval(dims, syms)?);
                if y == 0 {
                    return None;
                }
                x.rem_euclid(y)
            }
        })
    }

    /// The largest dimension index used plus one, and the same for symbols.
    pub fn arity(&self) -> (usize, usize) {
        match self {
            AffineExpr::Dim(i) => (i + 1, 0),
            AffineExpr::Sym(i) => (0, i + 1),
            AffineExpr::Const(_) => (0, 0),
            AffineExpr::Add(a, b)
            | AffineExpr::Mul(a, b)
            | AffineExpr::FloorDiv(a, b)
            | AffineExpr::CeilDiv(a, b)
            | AffineExpr::Mod(a, b) => {
                let (x, y) = (a.arity(), b.arity());
                (x.0.max(y.0), x.1.max(y.1))
            }
        }
    }
}

/// A constraint of an integer set: `expr >= 0` or `expr == 0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    /// The left-hand side after moving everything to the left.
    pub expr: AffineExpr,
    /// `true` for `== 0`, `false` for `>= 0`.
    pub equality: bool,
}

/// `affine_set<(d..)[s..] : (constraints)>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffineSet {
    /// Number of dimensions.
    pub dims: usize,
    /// Number of symbols.
    pub syms: usize,
    /// The constraints; a point is in the set when all hold.
    pub constraints: Vec<Constraint>,
}

impl AffineSet {
    /// Whether the point satisfies every constraint.
    pub fn contains(&self, point: &[i64], syms: &[i64]) -> bool {
        self.constraints
            .iter()
            .all(|c| match c.expr.eval(point, syms) {
                Some(v) => {
                    if c.equality {
                        v == 0
                    } else {
                        v >= 0
                    }
                }
                None => false,
            })
    }

    /// The coordinate set of a memory view that names none: every point of its sizes,
    /// `0 <= d_i <= size_i - 1`. An SSA size becomes the next symbol, since the dialect
    /// binds a view's set symbols to its SSA sizes left to right.
    pub fn whole_view(sizes: &[SizeOperand]) -> AffineSet {
        let mut syms = 0;
        let mut constraints = Vec::with_capacity(2 * sizes.len());
        for (d, size) in sizes.iter().enumerate() {
            let last = match size {
                SizeOperand::Static(n) => AffineExpr::Const(n - 1),
                SizeOperand::Dynamic(_) => {
                    syms += 1;
                    AffineExpr::Add(
                        Box::new(AffineExpr::Sym(syms - 1)),
                        Box::new(AffineExpr::Const(-1)),
                    )
                }
            };
            constraints.push(Constraint {
                expr: AffineExpr::Dim(d),
                equality: false,
            });
            constraints.push(Constraint {
                expr: AffineExpr::Add(
                    Box::new(last),
                    Box::new(AffineExpr::Mul(
                        Box::new(AffineExpr::Const(-1)),
                        Box::new(AffineExpr::Dim(d)),
                    )),
                ),
                equality: false,
            });
        }
        AffineSet {
            dims: sizes.len(),
            syms,
            constraints,
        }
    }

    /// Per-dimension inclusive bounds `[lo, hi]` read off constraints of the form
    /// `d - c >= 0` and `-d + c >= 0`; `None` when a dimension is not boxed that way.
    pub fn box_bounds(&self, syms: &[i64]) -> Option<Vec<(i64, i64)>> {
        let mut lo = vec![None; self.dims];
        let mut hi = vec![None; self.dims];
        for c in &self.constraints {
            // Probe the expression as a linear function of one dimension.
            let zero = vec![0i64; self.dims];
            let base = c.expr.eval(&zero, syms)?;
            let mut dep = None;
            for d in 0..self.dims {
                let mut p = zero.clone();
                p[d] = 1;
                let coef = c.expr.eval(&p, syms)? - base;
                if coef != 0 {
                    if dep.is_some() {
                        dep = None;
                        break;
                    }
                    dep = Some((d, coef));
                }
            }
            let Some((d, coef)) = dep else { continue };
            // A floordiv, ceildiv or mod over the dimension is not linear in it, however
            // linear it looks near zero (`d0 mod 8` is `d0` up to 7): such a constraint
            // bounds nothing here, and `contains` tests it point by point.
            if c.expr.divides_dim(d) {
                continue;
            }
            if c.equality {
                // `coef * d + base == 0` pins d when coef divides base (otherwise no
                // point satisfies it, which `contains` finds point by point).
                if base.checked_rem(coef) == Some(0) {
                    let v = base.checked_neg()?.checked_div(coef)?;
                    lo[d] = Some(v);
                    hi[d] = Some(v);
                }
            } else if coef > 0 {
                // coef * d >= -base: d >= ceil(-base / coef).
                let l = ceil_div(base.checked_neg()?, coef)?;
                lo[d] = Some(lo[d].map_or(l, |x: i64| x.max(l)));
            } else {
                // -coef * d <= base: d <= floor(base / -coef).
                let h = base.checked_div_euclid(coef.checked_neg()?)?;
                hi[d] = Some(hi[d].map_or(h, |x: i64| x.min(h)));
            }
        }
        lo.into_iter()
            .zip(hi)
            .map(|(l, h)| Some((l?, h?)))
            .collect()
    }
}

/// `ceil(a / b)` for a positive `b`; `None` on overflow.
fn ceil_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div_euclid(b)?;
    if a.checked_rem_euclid(b)? == 0 {
        Some(q)
    } else {
        q.checked_add(1)
    }
}

/// `affine_map<(d..)[s..] -> (results)>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffineMap {
    /// Number of dimensions.
    pub dims: usize,
    /// Number of symbols.
    pub syms: usize,
    /// Result expressions.
    pub results: Vec<AffineExpr>,
}

impl AffineMap {
    /// If the map is a permutation of its dimensions, the permutation
    /// (`result i = dim perm[i]`).
    pub fn as_permutation(&self) -> Option<Vec<usize>> {
        if self.results.len() != self.dims {
            return None;
        }
        let mut seen = vec![false; self.dims];
        let mut perm = Vec::with_capacity(self.dims);
        for r in &self.results {
            match r {
                AffineExpr::Dim(d) if *d < self.dims && !seen[*d] => {
                    seen[*d] = true;
                    perm.push(*d);
                }
                _ => return None,
            }
        }
        Some(perm)
    }
}

/// An attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// An integer set.
    Set(AffineSet),
    /// An affine map.
    Map(AffineMap),
    /// A reference to a module alias (`#name`), resolved by [`Module::resolve`].
    AliasRef(String),
    /// Any other attribute (for example `loc(...)`), kept as written.
    Other(String),
}

impl Module {
    /// Follows alias references to the attribute they name.
    pub fn resolve<'a>(&'a self, attr: &'a Attr) -> Option<&'a Attr> {
        let mut cur = attr;
        for _ in 0..16 {
            match cur {
                Attr::AliasRef(name) => {
                    cur = &self.aliases.iter().find(|a| &a.name == name)?.value;
                }
                other => return Some(other),
            }
        }
        None
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Static(n) => write!(f, "{n}"),
            Dim::Dynamic => write!(f, "?"),
        }
    }
}

/// The IEEE half-precision bit pattern of a non-finite or exactly representable value
/// (used to print infinities and NaN as MLIR does).
pub fn f16_bits(f: f64) -> u16 {
    if f.is_nan() {
        0x7E00
    } else if f.is_infinite() {
        if f > 0.0 {
            0x7C00
        } else {
            0xFC00
        }
    } else {
        let x = f as f32;
        let bits = x.to_bits();
        let sign = ((bits >> 16) & 0x8000) as u16;
        let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
        let man = (bits >> 13) & 0x3ff;
        if x == 0.0 || exp <= 0 {
            sign
        } else if exp >= 31 {
            sign | 0x7C00
        } else {
            sign | ((exp as u16) << 10) | man as u16
        }
    }
}

/// The value of a float bit pattern written as a hexadecimal literal for type `elem`.
pub fn float_from_bits(bits: u64, elem: ScalarType) -> f64 {
    match elem {
        ScalarType::F16 => {
            let b = bits as u16;
            let sign = if b & 0x8000 != 0 { -1.0 } else { 1.0 };
            let exp = ((b >> 10) & 0x1f) as i32;
            let man = (b & 0x3ff) as f64;
            sign * match exp {
                0 => man * 2f64.powi(-24),
                31 if man == 0.0 => f64::INFINITY,
                31 => f64::NAN,
                e => (1.0 + man / 1024.0) * 2f64.powi(e - 15),
            }
        }
        ScalarType::BF16 => f32::from_bits((bits as u32) << 16) as f64,
        ScalarType::F64 => f64::from_bits(bits),
        _ => f32::from_bits(bits as u32) as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floordiv_and_mod_round_toward_negative_infinity() {
        let e = AffineExpr::FloorDiv(Box::new(AffineExpr::Dim(0)), Box::new(AffineExpr::Const(4)));
        assert_eq!(e.eval(&[-1], &[]), Some(-1));
        assert_eq!(e.eval(&[7], &[]), Some(1));
        let m = AffineExpr::Mod(Box::new(AffineExpr::Dim(0)), Box::new(AffineExpr::Const(4)));
        assert_eq!(m.eval(&[-1], &[]), Some(3));
        let c = AffineExpr::CeilDiv(Box::new(AffineExpr::Dim(0)), Box::new(AffineExpr::Const(4)));
        assert_eq!(c.eval(&[5], &[]), Some(2));
        assert_eq!(c.eval(&[-5], &[]), Some(-1));
        let z = AffineExpr::Mod(Box::new(AffineExpr::Dim(0)), Box::new(AffineExpr::Const(0)));
        assert_eq!(z.eval(&[3], &[]), None);
    }

    #[test]
    fn scaled_constraints_bound_a_dimension() {
        // (p)[c] : c - 2p >= 0, -c + 2p + 1 >= 0, i.e. p = c floordiv 2; and 3p - 7 >= 0,
        // -3p + 20 >= 0, i.e. 3 <= p <= 6; and 2p - 6 == 0, i.e. p = 3.
        let (p, c) = (AffineExpr::Dim(0), AffineExpr::Sym(0));
        let k = AffineExpr::Const;
        let mul = |a: AffineExpr, b: AffineExpr| AffineExpr::Mul(Box::new(a), Box::new(b));
        let add = |a: AffineExpr, b: AffineExpr| AffineExpr::Add(Box::new(a), Box::new(b));
        let ge = |expr| Constraint {
            expr,
            equality: false,
        };
        let half = AffineSet {
            dims: 1,
            syms: 1,
            constraints: vec![
                ge(add(c.clone(), mul(k(-2), p.clone()))),
                ge(add(add(mul(k(-1), c), mul(k(2), p.clone())), k(1))),
            ],
        };
        for cv in 0..8 {
            assert_eq!(
                half.box_bounds(&[cv]),
                Some(vec![(cv / 2, cv / 2)]),
                "c = {cv}"
            );
        }
        let thirds = AffineSet {
            dims: 1,
            syms: 0,
            constraints: vec![
                ge(add(mul(k(3), p.clone()), k(-7))),
                ge(add(mul(k(-3), p.clone()), k(20))),
            ],
        };
        assert_eq!(thirds.box_bounds(&[]), Some(vec![(3, 6)]));
        let pinned = AffineSet {
            dims: 1,
            syms: 0,
            constraints: vec![Constraint {
                expr: add(mul(k(2), p), k(-6)),
                equality: true,
            }],
        };
        assert_eq!(pinned.box_bounds(&[]), Some(vec![(3, 3)]));
    }

    #[test]
    fn a_mod_constraint_bounds_no_dimension() {
        // (d0)[s0] : d0 - s0 >= 0, -d0 + s0 + 16 >= 0, (d0 - s0) mod 8 == 0: at s0 = 8 the
        // points are 8, 16 and 24. `(d0 - 8) mod 8` is `d0` for d0 in 0..8, which once
        // read as the equality d0 == 0.
        let (d0, s0) = (AffineExpr::Dim(0), AffineExpr::Sym(0));
        let neg = |e: AffineExpr| AffineExpr::Mul(Box::new(e), Box::new(AffineExpr::Const(-1)));
        let add = |a: AffineExpr, b: AffineExpr| AffineExpr::Add(Box::new(a), Box::new(b));
        let set = AffineSet {
            dims: 1,
            syms: 1,
            constraints: vec![
                Constraint {
                    expr: add(d0.clone(), neg(s0.clone())),
                    equality: false,
                },
                Constraint {
                    expr: add(add(neg(d0.clone()), s0.clone()), AffineExpr::Const(16)),
                    equality: false,
                },
                Constraint {
                    expr: AffineExpr::Mod(
                        Box::new(add(d0.clone(), neg(s0))),
                        Box::new(AffineExpr::Const(8)),
                    ),
                    equality: true,
                },
            ],
        };
        assert_eq!(set.box_bounds(&[8]), Some(vec![(8, 24)]));
        let points: Vec<i64> = (8..=24).filter(|&x| set.contains(&[x], &[8])).collect();
        assert_eq!(points, vec![8, 16, 24]);
        let by_sym = AffineExpr::Mod(Box::new(AffineExpr::Sym(0)), Box::new(AffineExpr::Const(8)));
        assert!(!by_sym.divides_dim(0));
        assert!(AffineExpr::FloorDiv(Box::new(d0), Box::new(AffineExpr::Const(2))).divides_dim(0));
    }
}
