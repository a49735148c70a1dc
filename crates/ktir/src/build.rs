//! A typed builder for KTIR syntax trees: code generators construct functions, blocks and
//! ops with fresh SSA names instead of writing text, and print the tree once at the edge.
//!
//! The builder keeps a stack of open blocks: ops go into the innermost one, and a region
//! (a loop body, a branch, a combiner) is opened with [`Builder::begin_block`] and closed
//! with [`Builder::end_block`], which hands back the [`Block`] for the op that holds it.
//! Each typed helper takes the full name of the value it defines (from [`Builder::fresh`]
//! or chosen by the caller) and returns that value for later uses.
//!
//! The trees it builds are what the parser reads from their printed text, spans aside:
//! result types the text leaves implicit (a comparison's `i1`, a transpose's init type) are
//! filled in the way the parser fills them.

// The op helpers take one parameter per operand, attribute and type the op carries.
#![allow(clippy::too_many_arguments)]

use crate::ast::*;

/// A use of the SSA value `name` (without `%`), with no source position.
pub fn value(name: &str) -> Value {
    Value {
        name: name.to_string(),
        span: Span::default(),
    }
}

/// `tensor<shape x elem>` with a static shape.
pub fn tensor(shape: &[usize], elem: ScalarType) -> Type {
    Type::Tensor {
        shape: shape.iter().map(|&d| Dim::Static(d)).collect(),
        elem,
    }
}

/// `memref<shape x elem>` with a static shape and no memory space.
pub fn memref(shape: &[usize], elem: ScalarType) -> Type {
    Type::MemRef {
        shape: shape.iter().map(|&d| Dim::Static(d)).collect(),
        elem,
        memory_space: None,
    }
}

/// `!ktdp.access_tile<shape x index>`.
pub fn access_tile_type(shape: &[usize]) -> Type {
    Type::AccessTile {
        shape: shape.iter().map(|&d| Dim::Static(d)).collect(),
    }
}

/// A scalar type.
pub fn scalar(elem: ScalarType) -> Type {
    Type::Scalar(elem)
}

/// The set of the box `[0, extent)` in every dimension: `d_i >= 0, -d_i + (extent_i - 1) >= 0`.
pub fn box_set(extent: &[usize]) -> AffineSet {
    let mut constraints = Vec::with_capacity(2 * extent.len());
    for (i, &e) in extent.iter().enumerate() {
        constraints.push(Constraint {
            expr: AffineExpr::Dim(i),
            equality: false,
        });
        constraints.push(Constraint {
            expr: AffineExpr::Add(
                Box::new(AffineExpr::Mul(
                    Box::new(AffineExpr::Const(-1)),
                    Box::new(AffineExpr::Dim(i)),
                )),
                Box::new(AffineExpr::Const(e.saturating_sub(1) as i64)),
            ),
            equality: false,
        });
    }
    AffineSet {
        dims: extent.len(),
        syms: 0,
        constraints,
    }
}

/// The identity map of `rank` dimensions.
pub fn identity_map(rank: usize) -> AffineMap {
    AffineMap {
        dims: rank,
        syms: 0,
        results: (0..rank).map(AffineExpr::Dim).collect(),
    }
}

/// An affine subscript over SSA index values, as an access tile writes it
/// (`%id floordiv 2 * 16 + %blk3`). [`Builder::access_tile`] numbers its values as the
/// parser does: each distinct value becomes a dimension, in order of first appearance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subscript {
    /// An SSA value of type `index` (name without `%`).
    Value(String),
    /// A literal.
    Const(i64),
    /// `a + b`.
    Add(Box<Subscript>, Box<Subscript>),
    /// `a * b`.
    Mul(Box<Subscript>, Box<Subscript>),
    /// `a floordiv b`.
    FloorDiv(Box<Subscript>, Box<Subscript>),
    /// `a mod b`.
    Mod(Box<Subscript>, Box<Subscript>),
}

impl Subscript {
    /// The SSA value `name`.
    pub fn value(name: &str) -> Subscript {
        Subscript::Value(name.to_string())
    }

    /// `self + other`.
    pub fn plus(self, other: Subscript) -> Subscript {
        Subscript::Add(Box::new(self), Box::new(other))
    }

    /// `self * k`.
    pub fn times(self, k: i64) -> Subscript {
        Subscript::Mul(Box::new(self), Box::new(Subscript::Const(k)))
    }

    /// `self floordiv k`.
    pub fn floordiv(self, k: i64) -> Subscript {
        Subscript::FloorDiv(Box::new(self), Box::new(Subscript::Const(k)))
    }

    /// `self mod k`.
    pub fn modulo(self, k: i64) -> Subscript {
        Subscript::Mod(Box::new(self), Box::new(Subscript::Const(k)))
    }

    /// The affine expression, adding the values it reads to `operands` (each distinct value
    /// becomes the dimension at its position there), as an indirect access tile's
    /// subscripts take it.
    pub fn lower(&self, operands: &mut Vec<Value>) -> AffineExpr {
        let bin = |a: &Subscript, b: &Subscript, ops: &mut Vec<Value>| {
            (Box::new(a.lower(ops)), Box::new(b.lower(ops)))
        };
        match self {
            Subscript::Value(name) => {
                let i = match operands.iter().position(|o| &o.name == name) {
                    Some(i) => i,
                    None => {
                        operands.push(value(name));
                        operands.len() - 1
                    }
                };
                AffineExpr::Dim(i)
            }
            Subscript::Const(c) => AffineExpr::Const(*c),
            Subscript::Add(a, b) => {
                let (a, b) = bin(a, b, operands);
                AffineExpr::Add(a, b)
            }
            Subscript::Mul(a, b) => {
                let (a, b) = bin(a, b, operands);
                AffineExpr::Mul(a, b)
            }
            Subscript::FloorDiv(a, b) => {
                let (a, b) = bin(a, b, operands);
                AffineExpr::FloorDiv(a, b)
            }
            Subscript::Mod(a, b) => {
                let (a, b) = bin(a, b, operands);
                AffineExpr::Mod(a, b)
            }
        }
    }
}

/// Static sizes as the size operands of views and slices.
pub fn static_sizes(v: &[usize]) -> Vec<SizeOperand> {
    v.iter().map(|&x| SizeOperand::Static(x as i64)).collect()
}

/// Builds one function body (or any block) op by op.
#[derive(Debug)]
pub struct Builder {
    /// Counter behind [`Builder::fresh`].
    next: usize,
    /// Open blocks, innermost last; the first is the body being built.
    stack: Vec<Block>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// A builder with an empty body open.
    pub fn new() -> Builder {
        Builder {
            next: 0,
            stack: vec![Block::default()],
        }
    }

    /// A fresh SSA name: `base` followed by a number no other fresh name of this builder
    /// has.
    pub fn fresh(&mut self, base: &str) -> String {
        self.next += 1;
        format!("{base}{}", self.next)
    }

    /// Appends `op` to the innermost open block.
    pub fn push(&mut self, op: Op) {
        if let Some(b) = self.stack.last_mut() {
            b.ops.push(op);
        }
    }

    /// Appends an op defining `results` (of `result_types`).
    pub fn op(&mut self, results: Vec<String>, kind: OpKind, result_types: Vec<Type>) {
        self.push(Op {
            results,
            kind,
            result_types,
            span: Span::default(),
            comment: None,
        });
    }

    /// Appends an op with one result named `name`; returns the value.
    pub fn def(&mut self, name: &str, kind: OpKind, ty: Type) -> Value {
        self.op(vec![name.to_string()], kind, vec![ty]);
        value(name)
    }

    /// Appends an op without results.
    pub fn effect(&mut self, kind: OpKind) {
        self.op(Vec::new(), kind, Vec::new());
    }

    /// Sets the trailing comment of the last op of the innermost block.
    pub fn comment_last(&mut self, text: &str) {
        if let Some(op) = self.stack.last_mut().and_then(|b| b.ops.last_mut()) {
            op.comment = Some(text.to_string());
        }
    }

    /// Opens a nested block with these arguments; ops go into it until [`Builder::end_block`].
    pub fn begin_block(&mut self, args: Vec<(String, Type)>) {
        self.stack.push(Block {
            args,
            ops: Vec::new(),
        });
    }

    /// Closes the innermost nested block and returns it (an empty block when none is open).
    pub fn end_block(&mut self) -> Block {
        if self.stack.len() > 1 {
            self.stack.pop().unwrap_or_default()
        } else {
            Block::default()
        }
    }

    /// How many nested blocks are open.
    pub fn depth(&self) -> usize {
        self.stack.len() - 1
    }

    /// The body built so far, closing any nested block still open into nothing.
    pub fn finish(mut self) -> Block {
        self.stack.truncate(1);
        self.stack.pop().unwrap_or_default()
    }

    // ---- typed helpers -----------------------------------------------------------------

    /// `arith.constant value : ty`.
    pub fn constant(&mut self, name: &str, value: Literal, ty: Type) -> Value {
        self.def(name, OpKind::Constant { value }, ty)
    }

    /// `arith.constant n : index`.
    pub fn index(&mut self, name: &str, n: i64) -> Value {
        self.constant(name, Literal::Int(n), Type::index())
    }

    /// `ktdp.get_compute_tile_id : index`.
    pub fn compute_tile_id(&mut self, name: &str) -> Value {
        self.def(name, OpKind::GetComputeTileId { dim: None }, Type::index())
    }

    /// `ktdp.construct_memory_view` over `base` with static sizes and strides.
    pub fn memory_view(
        &mut self,
        name: &str,
        base: &Value,
        sizes: &[usize],
        strides: &[usize],
        coordinate_set: Option<AffineSet>,
        memory_space: Option<MemorySpace>,
        ty: Type,
    ) -> Value {
        self.def(
            name,
            OpKind::ConstructMemoryView {
                base: base.clone(),
                sizes: static_sizes(sizes),
                strides: static_sizes(strides),
                coordinate_set: coordinate_set.map(Attr::Set),
                memory_space,
            },
            ty,
        )
    }

    /// `ktdp.construct_access_tile view[subscripts] {access_tile_set, access_tile_order}`.
    pub fn access_tile(
        &mut self,
        name: &str,
        view: &Value,
        subscripts: &[Subscript],
        set: Option<AffineSet>,
        order: Option<AffineMap>,
        view_type: Type,
        ty: Type,
    ) -> Value {
        let mut operands = Vec::new();
        let subscripts = subscripts.iter().map(|s| s.lower(&mut operands)).collect();
        self.def(
            name,
            OpKind::ConstructAccessTile {
                view: view.clone(),
                subscripts,
                operands,
                access_tile_set: set.map(Attr::Set),
                access_tile_order: order.map(Attr::Map),
                symbols: Vec::new(),
                view_type,
            },
            ty,
        )
    }

    /// `ktdp.load tile : tile_type -> ty`.
    pub fn load(&mut self, name: &str, tile: &Value, tile_type: Type, ty: Type) -> Value {
        self.def(
            name,
            OpKind::Load {
                tile: tile.clone(),
                tile_type,
            },
            ty,
        )
    }

    /// `ktdp.store value, tile : value_type, tile_type`.
    pub fn store(&mut self, value: &Value, tile: &Value, value_type: Type, tile_type: Type) {
        self.effect(OpKind::Store {
            value: value.clone(),
            tile: tile.clone(),
            value_type,
            tile_type,
        });
    }

    /// `tensor.empty() : ty`.
    pub fn empty(&mut self, name: &str, ty: Type) -> Value {
        self.def(
            name,
            OpKind::TensorEmpty {
                dynamic_sizes: Vec::new(),
            },
            ty,
        )
    }

    /// `linalg.fill ins(value) outs(init) -> init_type`.
    pub fn fill(
        &mut self,
        name: &str,
        value: &Value,
        value_type: Type,
        init: &Value,
        init_type: Type,
    ) -> Value {
        self.def(
            name,
            OpKind::Fill {
                value: value.clone(),
                value_type,
                init: init.clone(),
                init_type: init_type.clone(),
            },
            init_type,
        )
    }

    /// `linalg.matmul ins(lhs, rhs) outs(init) -> init_type`.
    pub fn matmul(
        &mut self,
        name: &str,
        (lhs, lhs_type): (&Value, Type),
        (rhs, rhs_type): (&Value, Type),
        init: &Value,
        init_type: Type,
    ) -> Value {
        self.def(
            name,
            OpKind::Matmul {
                lhs: lhs.clone(),
                rhs: rhs.clone(),
                init: init.clone(),
                input_types: vec![lhs_type, rhs_type],
                init_type: init_type.clone(),
            },
            init_type,
        )
    }

    /// `linalg.transpose ins(input) outs(init) permutation = [..]` (the result has the
    /// init's type).
    pub fn transpose(
        &mut self,
        name: &str,
        input: &Value,
        input_type: Type,
        init: &Value,
        init_type: Type,
        permutation: Vec<usize>,
    ) -> Value {
        self.def(
            name,
            OpKind::Transpose {
                input: input.clone(),
                input_type,
                init: init.clone(),
                init_type: init_type.clone(),
                permutation,
            },
            init_type,
        )
    }

    /// `linalg.broadcast ins(input) outs(init) dimensions = [..]` (the result has the
    /// init's type).
    pub fn broadcast(
        &mut self,
        name: &str,
        input: &Value,
        input_type: Type,
        init: &Value,
        init_type: Type,
        dimensions: Vec<usize>,
    ) -> Value {
        self.def(
            name,
            OpKind::Broadcast {
                input: input.clone(),
                input_type,
                init: init.clone(),
                init_type: init_type.clone(),
                dimensions,
            },
            init_type,
        )
    }

    /// An `arith`/`math` elementwise op on operands of type `ty`.
    pub fn elementwise(
        &mut self,
        name: &str,
        op: ElementwiseOp,
        operands: &[&Value],
        ty: Type,
    ) -> Value {
        self.def(
            name,
            OpKind::Elementwise {
                op,
                operands: operands.iter().map(|v| (*v).clone()).collect(),
            },
            ty,
        )
    }

    /// `arith.cmpf` / `arith.cmpi`; the result is `i1` of the operands' shape.
    pub fn compare(
        &mut self,
        name: &str,
        predicate: Predicate,
        lhs: &Value,
        rhs: &Value,
        operand_type: Type,
    ) -> Value {
        let ty = match &operand_type {
            Type::Tensor { shape, .. } => Type::Tensor {
                shape: shape.clone(),
                elem: ScalarType::I1,
            },
            _ => Type::Scalar(ScalarType::I1),
        };
        self.def(
            name,
            OpKind::Compare {
                predicate,
                lhs: lhs.clone(),
                rhs: rhs.clone(),
                operand_type,
            },
            ty,
        )
    }

    /// `arith.select cond, a, b : [cond_type,] ty`.
    pub fn select(
        &mut self,
        name: &str,
        cond: &Value,
        true_value: &Value,
        false_value: &Value,
        cond_type: Option<Type>,
        ty: Type,
    ) -> Value {
        self.def(
            name,
            OpKind::Select {
                cond: cond.clone(),
                true_value: true_value.clone(),
                false_value: false_value.clone(),
                cond_type,
            },
            ty,
        )
    }

    /// A cast of [`CAST_OPS`] (`arith.extf %x : A to B`).
    pub fn cast(
        &mut self,
        name: &str,
        cast: &str,
        operand: &Value,
        source_type: Type,
        ty: Type,
    ) -> Value {
        self.def(
            name,
            OpKind::Cast {
                name: cast.to_string(),
                operand: operand.clone(),
                source_type,
            },
            ty,
        )
    }

    /// `tensor.collapse_shape source [groups] : source_type into ty`.
    pub fn collapse_shape(
        &mut self,
        name: &str,
        source: &Value,
        reassociation: Vec<Vec<usize>>,
        source_type: Type,
        ty: Type,
    ) -> Value {
        self.def(
            name,
            OpKind::CollapseShape {
                source: source.clone(),
                reassociation,
                source_type,
            },
            ty,
        )
    }

    /// `tensor.expand_shape source [groups] output_shape [..] : source_type into ty`
    /// (the output shape is the static shape of `ty`).
    pub fn expand_shape(
        &mut self,
        name: &str,
        source: &Value,
        reassociation: Vec<Vec<usize>>,
        source_type: Type,
        ty: Type,
    ) -> Value {
        let output_shape = ty
            .static_shape()
            .map(|s| static_sizes(&s))
            .unwrap_or_default();
        self.def(
            name,
            OpKind::ExpandShape {
                source: source.clone(),
                reassociation,
                output_shape,
                source_type,
            },
            ty,
        )
    }

    /// `tensor.extract_slice source[offsets] [sizes] [strides] : source_type to ty`.
    pub fn extract_slice(
        &mut self,
        name: &str,
        source: &Value,
        offsets: Vec<SizeOperand>,
        sizes: Vec<SizeOperand>,
        strides: Vec<SizeOperand>,
        source_type: Type,
        ty: Type,
    ) -> Value {
        self.def(
            name,
            OpKind::ExtractSlice {
                source: source.clone(),
                offsets,
                sizes,
                strides,
                source_type,
            },
            ty,
        )
    }

    /// `tensor.insert_slice source into dest[offsets] [sizes] [strides]` (the result has the
    /// destination's type).
    pub fn insert_slice(
        &mut self,
        name: &str,
        source: &Value,
        dest: &Value,
        offsets: Vec<SizeOperand>,
        sizes: Vec<SizeOperand>,
        strides: Vec<SizeOperand>,
        source_type: Type,
        dest_type: Type,
    ) -> Value {
        self.def(
            name,
            OpKind::InsertSlice {
                source: source.clone(),
                dest: dest.clone(),
                offsets,
                sizes,
                strides,
                source_type,
                dest_type: dest_type.clone(),
            },
            dest_type,
        )
    }

    /// `linalg.reduce { combiner } ins(input) outs(init) dimensions = [..]` (the shorthand
    /// form; the result has the init's type).
    pub fn reduce(
        &mut self,
        name: &str,
        combiner: ElementwiseOp,
        (input, input_type): (&Value, Type),
        (init, init_type): (&Value, Type),
        dimensions: Vec<usize>,
    ) -> Value {
        self.def(
            name,
            OpKind::LinalgReduce {
                inputs: vec![(input.clone(), input_type)],
                inits: vec![(init.clone(), init_type.clone())],
                dimensions,
                body: Block::default(),
                shorthand: Some(combiner),
            },
            init_type,
        )
    }

    /// `linalg.generic` with `body` (built between [`Builder::begin_block`] and
    /// [`Builder::end_block`]); results `results` of `result_types`.
    pub fn generic(
        &mut self,
        results: Vec<String>,
        indexing_maps: Vec<AffineMap>,
        iterator_types: Vec<&str>,
        inputs: Vec<(Value, Type)>,
        inits: Vec<(Value, Type)>,
        body: Block,
        result_types: Vec<Type>,
    ) -> Vec<Value> {
        let values = results.iter().map(|r| value(r)).collect();
        self.op(
            results,
            OpKind::LinalgGeneric {
                indexing_maps: indexing_maps.into_iter().map(Attr::Map).collect(),
                iterator_types: iterator_types.into_iter().map(str::to_string).collect(),
                inputs,
                inits,
                body,
            },
            result_types,
        );
        values
    }

    /// `scf.for induction = lower to upper step step iter_args(..) -> (..)` around `body`,
    /// whose arguments must be the induction variable and the iteration arguments.
    pub fn for_loop(
        &mut self,
        results: Vec<String>,
        induction: &str,
        lower: &Value,
        upper: &Value,
        step: &Value,
        iter_args: Vec<(String, Value)>,
        result_types: Vec<Type>,
        body: Block,
    ) -> Vec<Value> {
        let values = results.iter().map(|r| value(r)).collect();
        self.op(
            results,
            OpKind::For {
                induction: induction.to_string(),
                lower: lower.clone(),
                upper: upper.clone(),
                step: step.clone(),
                iter_args,
                body,
            },
            result_types,
        );
        values
    }

    /// `scf.if cond -> (..) { then } else { else }`.
    pub fn if_op(
        &mut self,
        results: Vec<String>,
        cond: &Value,
        then_block: Block,
        else_block: Option<Block>,
        result_types: Vec<Type>,
    ) -> Vec<Value> {
        let values = results.iter().map(|r| value(r)).collect();
        self.op(
            results,
            OpKind::If {
                cond: cond.clone(),
                then_block,
                else_block,
            },
            result_types,
        );
        values
    }

    /// `scf.yield values : types`.
    pub fn yield_(&mut self, values: &[&Value], types: Vec<Type>) {
        self.effect(OpKind::Yield {
            values: values.iter().map(|v| (*v).clone()).collect(),
            types,
        });
    }

    /// `linalg.yield values : types`.
    pub fn linalg_yield(&mut self, values: &[&Value], types: Vec<Type>) {
        self.effect(OpKind::LinalgYield {
            values: values.iter().map(|v| (*v).clone()).collect(),
            types,
        });
    }

    /// `ktdp.yield_partial values : types`.
    pub fn yield_partial(&mut self, values: &[&Value], types: Vec<Type>) {
        self.effect(OpKind::YieldPartial {
            values: values.iter().map(|v| (*v).clone()).collect(),
            types,
        });
    }

    /// `ktdp.yield_reduced values : types`.
    pub fn yield_reduced(&mut self, values: &[&Value], types: Vec<Type>) {
        self.effect(OpKind::YieldReduced {
            values: values.iter().map(|v| (*v).clone()).collect(),
            types,
        });
    }

    /// `func.return` without values.
    pub fn ret(&mut self) {
        self.effect(OpKind::Return {
            values: Vec::new(),
            types: Vec::new(),
        });
    }

    /// `ktdp.inter_tile_produce producer_tiles_per_group = set -> future_type { body }`.
    pub fn inter_tile_produce(
        &mut self,
        name: &str,
        producer_tiles_per_group: AffineSet,
        body: Block,
        future_type: Type,
    ) -> Value {
        self.def(
            name,
            OpKind::InterTileProduce {
                producer_tiles_per_group: Attr::Set(producer_tiles_per_group),
                body,
            },
            future_type,
        )
    }

    /// `ktdp.inter_tile_reduce(future) consumer_tiles_per_group = set, identity(..) :
    /// future_type -> ty { combiner }`.
    pub fn inter_tile_reduce(
        &mut self,
        name: &str,
        future: &Value,
        consumer_tiles_per_group: AffineSet,
        producer_dependency_per_consumer: Option<AffineSet>,
        identity: Vec<(Value, Type)>,
        future_type: Type,
        combiner: Block,
        ty: Type,
    ) -> Value {
        let (identity, identity_types) = identity.into_iter().unzip();
        self.def(
            name,
            OpKind::InterTileReduce {
                future: future.clone(),
                consumer_tiles_per_group: Attr::Set(consumer_tiles_per_group),
                producer_dependency_per_consumer: producer_dependency_per_consumer.map(Attr::Set),
                identity,
                identity_types,
                future_type,
                combiner,
            },
            ty,
        )
    }
}

/// A kernel function `@name(args) attributes {grid = [grid]}` around `body`.
pub fn func(
    name: &str,
    args: Vec<(String, Type)>,
    grid: Vec<usize>,
    body: Block,
    comment: Option<String>,
) -> Func {
    let mut body = body;
    // The parser gives the body the function's arguments.
    body.args = args.clone();
    Func {
        name: name.to_string(),
        args,
        results: Vec::new(),
        grid: Some(grid),
        body,
        span: Span::default(),
        comment,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse, print, verify};

    /// The tree's debug form with every span and comment erased, to compare built trees
    /// with parsed ones.
    fn shape_of(m: &Module) -> String {
        let s = format!("{m:?}");
        let mut out = String::with_capacity(s.len());
        let mut rest = s.as_str();
        while let Some(i) = rest.find("span: Span {") {
            out.push_str(&rest[..i]);
            let tail = &rest[i..];
            let end = tail.find('}').map_or(tail.len(), |e| e + 1);
            rest = &tail[end..];
        }
        out.push_str(rest);
        out.replace(", comment: None", "")
    }

    fn kernel() -> Module {
        let f16 = ScalarType::F16;
        let mut b = Builder::new();
        let id = b.compute_tile_id("id");
        let c0 = b.index("c0", 0);
        let x = value("x");
        let xv = b.memory_view(
            "x_view",
            &x,
            &[4, 64],
            &[64, 1],
            Some(box_set(&[4, 64])),
            Some(MemorySpace::Global),
            memref(&[4, 64], f16),
        );
        let sub = Subscript::value(&id.name).floordiv(2).modulo(4).times(16);
        let xt = b.access_tile(
            "x_tile",
            &xv,
            &[Subscript::value(&c0.name), sub],
            Some(box_set(&[4, 16])),
            Some(identity_map(2)),
            memref(&[4, 64], f16),
            access_tile_type(&[4, 16]),
        );
        let xd = b.load(
            "x_data",
            &xt,
            access_tile_type(&[4, 16]),
            tensor(&[4, 16], f16),
        );
        let n = b.fresh("steps");
        let steps = b.index(&n, 2);
        let n = b.fresh("one");
        let one = b.index(&n, 1);
        let iv = b.fresh("blk");
        let acc = b.fresh("acc");
        let t = tensor(&[4, 16], f16);
        b.begin_block(vec![(iv.clone(), Type::index()), (acc.clone(), t.clone())]);
        let n = b.fresh("v");
        let v = b.elementwise(&n, ElementwiseOp::AddF, &[&value(&acc), &xd], t.clone());
        let n = b.fresh("e");
        let e = b.elementwise(&n, ElementwiseOp::Exp, &[&v], t.clone());
        let n = b.fresh("c");
        let c = b.compare(&n, Predicate::Float(CmpFPredicate::Oge), &e, &v, t.clone());
        let n = b.fresh("s");
        let s = b.select(
            &n,
            &c,
            &e,
            &v,
            Some(tensor(&[4, 16], ScalarType::I1)),
            t.clone(),
        );
        b.yield_(&[&s], vec![t.clone()]);
        let body = b.end_block();
        let r = b.fresh("sum");
        let sum = b.for_loop(
            vec![r],
            &iv,
            &c0,
            &steps,
            &one,
            vec![(acc, xd.clone())],
            vec![t.clone()],
            body,
        );
        let n = b.fresh("empty");
        let empty = b.empty(&n, tensor(&[16, 4], f16));
        let n = b.fresh("tr");
        let tr = b.transpose(
            &n,
            &sum[0],
            t.clone(),
            &empty,
            tensor(&[16, 4], f16),
            vec![1, 0],
        );
        let n = b.fresh("wide");
        let w = b.cast(
            &n,
            "arith.extf",
            &tr,
            tensor(&[16, 4], f16),
            tensor(&[16, 4], ScalarType::F32),
        );
        let n = b.fresh("z");
        let z = b.constant(&n, Literal::Float(-3.0e38), scalar(ScalarType::F32));
        let n = b.fresh("init");
        let init0 = b.empty(&n, tensor(&[16], ScalarType::F32));
        let n = b.fresh("init");
        let init = b.fill(
            &n,
            &z,
            scalar(ScalarType::F32),
            &init0,
            tensor(&[16], ScalarType::F32),
        );
        let n = b.fresh("red");
        let red = b.reduce(
            &n,
            ElementwiseOp::MaximumF,
            (&w, tensor(&[16, 4], ScalarType::F32)),
            (&init, tensor(&[16], ScalarType::F32)),
            vec![1],
        );
        let n = b.fresh("rows");
        let rows = b.expand_shape(
            &n,
            &red,
            vec![vec![0, 1]],
            tensor(&[16], ScalarType::F32),
            tensor(&[16, 1], ScalarType::F32),
        );
        let n = b.fresh("part");
        b.extract_slice(
            &n,
            &rows,
            static_sizes(&[0, 0]),
            static_sizes(&[8, 1]),
            static_sizes(&[1, 1]),
            tensor(&[16, 1], ScalarType::F32),
            tensor(&[8, 1], ScalarType::F32),
        );
        b.store(&xd, &xt, tensor(&[4, 16], f16), access_tile_type(&[4, 16]));
        b.ret();
        let f = func(
            "k0_x",
            vec![("x".into(), Type::index())],
            vec![4],
            b.finish(),
            Some("a kernel".into()),
        );
        Module {
            funcs: vec![f],
            comments: vec!["built".into()],
            ..Module::default()
        }
    }

    #[test]
    fn built_trees_print_as_expected_and_parse_back_to_the_same_tree() {
        let m = kernel();
        let text = print(&m);
        let expected = "// built
module {
  // a kernel
  func.func @k0_x(%x: index) attributes {grid = [4]} {
    %id = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %x_view = ktdp.construct_memory_view %x, sizes: [4, 64], strides: [64, 1] {
        coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
        memory_space = #ktdp.memory_space<global>
    } : memref<4x64xf16>
    %x_tile = ktdp.construct_access_tile %x_view[%c0, %id floordiv 2 mod 4 * 16] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 15 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<4x64xf16> -> !ktdp.access_tile<4x16xindex>
    %x_data = ktdp.load %x_tile : !ktdp.access_tile<4x16xindex> -> tensor<4x16xf16>
    %steps1 = arith.constant 2 : index
    %one2 = arith.constant 1 : index
    %sum9 = scf.for %blk3 = %c0 to %steps1 step %one2 iter_args(%acc4 = %x_data) -> (tensor<4x16xf16>) {
      %v5 = arith.addf %acc4, %x_data : tensor<4x16xf16>
      %e6 = math.exp %v5 : tensor<4x16xf16>
      %c7 = arith.cmpf oge, %e6, %v5 : tensor<4x16xf16>
      %s8 = arith.select %c7, %e6, %v5 : tensor<4x16xi1>, tensor<4x16xf16>
      scf.yield %s8 : tensor<4x16xf16>
    }
    %empty10 = tensor.empty() : tensor<16x4xf16>
    %tr11 = linalg.transpose ins(%sum9 : tensor<4x16xf16>) outs(%empty10 : tensor<16x4xf16>) permutation = [1, 0]
    %wide12 = arith.extf %tr11 : tensor<16x4xf16> to tensor<16x4xf32>
    %z13 = arith.constant -3e38 : f32
    %init14 = tensor.empty() : tensor<16xf32>
    %init15 = linalg.fill ins(%z13 : f32) outs(%init14 : tensor<16xf32>) -> tensor<16xf32>
    %red16 = linalg.reduce { arith.maximumf } ins(%wide12 : tensor<16x4xf32>) outs(%init15 : tensor<16xf32>) dimensions = [1]
    %rows17 = tensor.expand_shape %red16 [[0, 1]] output_shape [16, 1] : tensor<16xf32> into tensor<16x1xf32>
    %part18 = tensor.extract_slice %rows17[0, 0] [8, 1] [1, 1] : tensor<16x1xf32> to tensor<8x1xf32>
    ktdp.store %x_data, %x_tile : tensor<4x16xf16>, !ktdp.access_tile<4x16xindex>
    func.return
  }
}
";
        assert_eq!(text, expected);
        let (parsed, diags) = parse(&text);
        assert!(diags.is_empty(), "{diags:?}");
        let mut built = m.clone();
        built.comments.clear();
        assert_eq!(
            shape_of(&parsed),
            shape_of(&built)
                .replace("comment: Some(\"a kernel\"), ", "")
                .replace(", comment: Some(\"a kernel\")", "")
        );
        let diags = verify(&built, "");
        assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    }
}
