//! The op table: every graph op is defined once, here.
//!
//! One entry per op gives its ports (arity), attributes and their kinds, the ONNX names
//! and opsets the ONNX loader and writer use, the ONNX inputs taken as attributes, a line
//! of documentation, and two function pointers: type/shape inference and the reference
//! evaluation. [`OpKind`] names an op; [`OpKind::spec`] is a table lookup, so callers
//! resolve a node's kind once ([`crate::Node::kind`]) and dispatch through the record.
//! [`SUPPORTED_OPS`], `docs/ops.md` (checked by a test) and the loaders' "unsupported op"
//! messages are derived from the table.
//!
//! Adding an elementwise op is one entry below, e.g.
//! `Erf => float_unary(|c| c.map(|v| eval::erf(f64::from(v)) as f32)),`.

use crate::blocks;
use crate::eval::{self, EvalCx};
use crate::infer::{self, InferCx};
use crate::ir::AttrValue;
use crate::norm;
use crate::onnx::MIN_OPSET;
use crate::paged;
use crate::rope;
use crate::tensor::TensorType;

/// The kind of value an attribute holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrKind {
    /// One integer (flags are integers 0 or 1).
    Int,
    /// A number; an integer is accepted too.
    Float,
    /// A list of integers.
    Ints,
    /// A string.
    Str,
}

impl AttrKind {
    /// Whether `v` is a valid value of this kind.
    pub fn accepts(self, v: &AttrValue) -> bool {
        matches!(
            (self, v),
            (AttrKind::Int, AttrValue::Int(_))
                | (AttrKind::Float, AttrValue::Float(_) | AttrValue::Int(_))
                | (AttrKind::Ints, AttrValue::Ints(_))
                | (AttrKind::Str, AttrValue::String(_))
        )
    }

    /// The kind in words, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            AttrKind::Int => "an integer",
            AttrKind::Float => "a number",
            AttrKind::Ints => "a list of integers",
            AttrKind::Str => "a string",
        }
    }

    fn short(self) -> &'static str {
        match self {
            AttrKind::Int => "int",
            AttrKind::Float => "float",
            AttrKind::Ints => "ints",
            AttrKind::Str => "string",
        }
    }
}

/// An attribute an op takes.
#[derive(Debug, Clone, Copy)]
pub struct AttrSpec {
    /// Its name (ONNX's).
    pub name: &'static str,
    /// The kind of value it holds.
    pub kind: AttrKind,
    /// Its default, in words for the docs ("required" when it has none).
    pub default: &'static str,
}

/// How many values a port (an input or an output) takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortArity {
    /// Exactly one.
    Required,
    /// Zero or one (an empty name omits it).
    Optional,
    /// One or more; only the last port may be variadic.
    Variadic,
}

/// One input or output of an op.
#[derive(Debug, Clone, Copy)]
pub struct Port {
    /// Its name in the docs (with the expected shape where that helps).
    pub name: &'static str,
    /// How many values it takes.
    pub arity: PortArity,
}

/// A name ONNX gives an op, with the opset that introduced it.
#[derive(Debug, Clone, Copy)]
pub struct OnnxName {
    /// `""` for the default domain (`ai.onnx` is read as the same), else e.g. `com.microsoft`.
    pub domain: &'static str,
    /// ONNX's `op_type`.
    pub op_type: &'static str,
    /// The default-domain opset that introduced this name (the writer imports at least
    /// this opset; 1 outside the default domain).
    pub since: i64,
    /// Whether the loader refuses this name in a model importing an older opset.
    /// RMSNormalization and Swish have always been read at any opset, so they stay so.
    pub strict: bool,
}

/// How a constant ONNX input taken as an attribute is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstForm {
    /// A 1-D int64 list.
    Ints,
    /// One int64 value as a 0-D tensor.
    Scalar,
    /// One int64 value as a 1-D tensor of one element.
    OneElement,
}

/// An input ONNX passes as a constant tensor that this crate takes as an attribute.
#[derive(Debug, Clone, Copy)]
pub struct ConstInput {
    /// Its index among the ONNX node's inputs.
    pub index: usize,
    /// The attribute it becomes.
    pub attr: &'static str,
    /// Its shape in ONNX.
    pub form: ConstForm,
    /// The opset from which ONNX takes it as an input rather than an attribute (the
    /// writer follows it; the loader folds the input at any opset).
    pub since: i64,
}

/// Type/shape inference of one node: the output types from the input types.
pub(crate) type InferFn = fn(&InferCx) -> Result<Vec<TensorType>, String>;
/// Reference evaluation of one node: the output values (f32, unrounded).
pub(crate) type EvalFn = fn(&EvalCx) -> Result<Vec<Vec<f32>>, String>;

/// Everything about one op. Get it with [`OpKind::spec`].
#[derive(Clone, Copy)]
pub struct OpSpec {
    /// The op's name in graphs (ONNX's name where ONNX has the op).
    pub name: &'static str,
    /// Its inputs, in order.
    pub inputs: &'static [Port],
    /// Its outputs, in order.
    pub outputs: &'static [Port],
    /// The attributes it takes.
    pub attrs: &'static [AttrSpec],
    /// Other names ONNX has for it. The op's own name in the default domain is always
    /// read too (from opset [`MIN_OPSET`]); the first default-domain entry here is what the
    /// writer emits.
    pub onnx: &'static [OnnxName],
    /// ONNX inputs taken as attributes.
    pub const_inputs: &'static [ConstInput],
    /// Semantics in a line, for the docs.
    pub notes: &'static str,
    /// The versions of the op's default-domain ONNX definition in force from opset
    /// [`MIN_OPSET`] to [`crate::onnx::KNOWN_OPSET`], oldest first: the opsets in which
    /// ONNX changed it (its `since_version`s, from ONNX's operator changelog). The last is
    /// the opset it was last changed in; the loader reads a model importing a newer opset
    /// than [`crate::onnx::MAX_OPSET`] only when the version in force there is one it knows.
    pub onnx_versions: &'static [i64],
    /// Whether every version in [`OpSpec::onnx_versions`] is read, including those after
    /// [`crate::onnx::MAX_OPSET`] (their changes do not touch what this crate reads).
    pub onnx_reads_all: bool,
    /// Whether the device compiler lowers the op yet (otherwise only the reference
    /// evaluator runs it).
    pub device: bool,
    pub(crate) infer: InferFn,
    pub(crate) eval: EvalFn,
}

impl std::fmt::Debug for OpSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpSpec").field("name", &self.name).finish()
    }
}

/// An unbounded maximum arity.
pub const VARIADIC: usize = usize::MAX;

fn arity(ports: &[Port]) -> (usize, usize) {
    ports.iter().fold((0, 0), |(lo, hi), p| match p.arity {
        PortArity::Required => (lo + 1, hi.saturating_add(1)),
        PortArity::Optional => (lo, hi.saturating_add(1)),
        PortArity::Variadic => (lo + 1, VARIADIC),
    })
}

impl OpSpec {
    /// Fewest and most inputs ([`VARIADIC`] when unbounded).
    pub fn input_arity(&self) -> (usize, usize) {
        arity(self.inputs)
    }

    /// Fewest and most outputs ([`VARIADIC`] when unbounded).
    pub fn output_arity(&self) -> (usize, usize) {
        arity(self.outputs)
    }

    /// The attribute called `name`, if the op takes it.
    pub fn attr(&self, name: &str) -> Option<&'static AttrSpec> {
        self.attrs.iter().find(|a| a.name == name)
    }

    /// The ONNX name the writer emits (default domain) and the opset it needs.
    pub fn onnx_output_name(&self) -> (&'static str, i64) {
        self.onnx
            .iter()
            .find(|n| n.domain.is_empty())
            .map_or((self.name, MIN_OPSET), |n| (n.op_type, n.since))
    }

    const fn with_attrs(mut self, attrs: &'static [AttrSpec]) -> OpSpec {
        self.attrs = attrs;
        self
    }
    const fn with_outputs(mut self, outputs: &'static [Port]) -> OpSpec {
        self.outputs = outputs;
        self
    }
    const fn with_onnx(mut self, onnx: &'static [OnnxName]) -> OpSpec {
        self.onnx = onnx;
        self
    }
    const fn with_const_inputs(mut self, c: &'static [ConstInput]) -> OpSpec {
        self.const_inputs = c;
        self
    }
    const fn with_notes(mut self, notes: &'static str) -> OpSpec {
        self.notes = notes;
        self
    }
    const fn v(mut self, versions: &'static [i64]) -> OpSpec {
        self.onnx_versions = versions;
        self
    }
    const fn reads_all(mut self) -> OpSpec {
        self.onnx_reads_all = true;
        self
    }
    /// For an op the reference evaluates before the device compiler lowers it (every op
    /// in the table is lowered today).
    #[allow(dead_code)]
    const fn host_only(mut self) -> OpSpec {
        self.device = false;
        self
    }

    /// The version of the op's ONNX definition in force at `opset` (`None` below the
    /// first one listed in [`OpSpec::onnx_versions`]).
    pub fn onnx_version_at(&self, opset: i64) -> Option<i64> {
        version_at(self.onnx_versions, opset)
    }
}

/// The version in force at `opset` among `versions` (ascending since_versions).
pub(crate) fn version_at(versions: &[i64], opset: i64) -> Option<i64> {
    versions.iter().copied().take_while(|&v| v <= opset).last()
}

// ---- building blocks of the table ----

const fn req(name: &'static str) -> Port {
    Port {
        name,
        arity: PortArity::Required,
    }
}
const fn opt(name: &'static str) -> Port {
    Port {
        name,
        arity: PortArity::Optional,
    }
}
const fn many(name: &'static str) -> Port {
    Port {
        name,
        arity: PortArity::Variadic,
    }
}
const fn attr(name: &'static str, kind: AttrKind, default: &'static str) -> AttrSpec {
    AttrSpec {
        name,
        kind,
        default,
    }
}
const fn onnx(domain: &'static str, op_type: &'static str, since: i64) -> OnnxName {
    OnnxName {
        domain,
        op_type,
        since,
        strict: true,
    }
}
const fn onnx_lenient(op_type: &'static str, since: i64) -> OnnxName {
    OnnxName {
        domain: "",
        op_type,
        since,
        strict: false,
    }
}
const fn cin(index: usize, attr: &'static str, form: ConstForm) -> ConstInput {
    ConstInput {
        index,
        attr,
        form,
        since: MIN_OPSET,
    }
}

const X: &[Port] = &[req("X")];
const AB: &[Port] = &[req("A"), req("B")];
const Y: &[Port] = &[req("Y")];

/// An op with one output, no attributes and no other ONNX names.
const fn op(inputs: &'static [Port], infer: InferFn, eval: EvalFn) -> OpSpec {
    OpSpec {
        name: "",
        inputs,
        outputs: Y,
        attrs: &[],
        onnx: &[],
        const_inputs: &[],
        notes: "",
        onnx_versions: &[],
        onnx_reads_all: false,
        device: true,
        infer,
        eval,
    }
}
/// Elementwise on one float input.
const fn float_unary(eval: EvalFn) -> OpSpec {
    op(X, infer::float_unary, eval).with_notes("float dtypes")
}
/// Elementwise on one numeric input.
const fn numeric_unary(eval: EvalFn) -> OpSpec {
    op(X, infer::numeric_unary, eval).with_notes("any numeric dtype")
}
/// Broadcasting arithmetic on two numeric inputs of one dtype.
const fn arith(eval: EvalFn) -> OpSpec {
    op(AB, infer::arith, eval)
}
/// Broadcasting comparison, bool output.
const fn compare(eval: EvalFn) -> OpSpec {
    op(AB, infer::compare, eval).with_notes("output bool")
}
/// ONNX's `axes` input of the reductions (an attribute of ReduceMean and ReduceMax before
/// opset 18).
const AXES_13: &[ConstInput] = &[cin(1, "axes", ConstForm::Ints)];
const AXES_18: &[ConstInput] = &[ConstInput {
    since: 18,
    ..cin(1, "axes", ConstForm::Ints)
}];

/// A reduction over `axes`.
const fn reduce(eval: EvalFn, axes: &'static [ConstInput]) -> OpSpec {
    op(X, infer::reduce, eval)
        .with_attrs(REDUCE_ATTRS)
        .with_const_inputs(axes)
}
const REDUCE_ATTRS: &[AttrSpec] = &[attr("axes", IS, "all"), attr("keepdims", I, "1")];
const ARG_ATTRS: &[AttrSpec] = &[
    attr("axis", I, "0"),
    attr("keepdims", I, "1"),
    attr("select_last_index", I, "0"),
];

/// The window attributes every pooling op takes.
macro_rules! pool_window_attrs {
    ($($extra:expr),*) => {
        &[
            attr("kernel_shape", IS, "required"),
            attr("strides", IS, "1 per axis"),
            attr("pads", IS, "0s: begins, then ends"),
            attr("dilations", IS, "1 per axis"),
            attr("auto_pad", S, "\"NOTSET\"; VALID, SAME_UPPER, SAME_LOWER"),
            attr("ceil_mode", I, "0"),
            $($extra),*
        ]
    };
}
const POOL_ATTRS_MAX: &[AttrSpec] =
    pool_window_attrs!(attr("storage_order", I, "0 (affects only Indices)"));
const POOL_ATTRS_AVERAGE: &[AttrSpec] = pool_window_attrs!(attr("count_include_pad", I, "0"));
const POOL_ATTRS_LP: &[AttrSpec] = pool_window_attrs!(attr("p", I, "2"));

fn b2f(b: bool) -> f32 {
    if b {
        1.0
    } else {
        0.0
    }
}

use AttrKind::{Float as F, Int as I, Ints as IS, Str as S};

/// Defines [`OpKind`], its lookups and [`SUPPORTED_OPS`] from one list of
/// `Name => spec` entries, so an op's name is written once.
macro_rules! op_table {
    ($($kind:ident => $spec:expr,)*) => {
        /// A graph op. Its record is [`OpKind::spec`]; its name is [`OpKind::name`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum OpKind {
            $(
                #[doc = concat!("`", stringify!($kind), "` (see `docs/ops.md`).")]
                $kind,
            )*
        }

        impl OpKind {
            /// Every op, in table order.
            pub const ALL: &'static [OpKind] = &[$(OpKind::$kind,)*];

            /// The op's name in graphs.
            pub const fn name(self) -> &'static str {
                match self {
                    $(OpKind::$kind => stringify!($kind),)*
                }
            }

            /// The op called `name` in graphs, if there is one.
            pub fn from_name(name: &str) -> Option<OpKind> {
                match name {
                    $(stringify!($kind) => Some(OpKind::$kind),)*
                    _ => None,
                }
            }

            /// The op's record in the table.
            pub fn spec(self) -> &'static OpSpec {
                match self {
                    $(OpKind::$kind => {
                        static SPEC: OpSpec = OpSpec { name: stringify!($kind), ..$spec };
                        &SPEC
                    })*
                }
            }
        }

        /// Every op the IR accepts, type-infers and evaluates, in table order.
        pub const SUPPORTED_OPS: &[&str] = &[$(stringify!($kind),)*];
    };
}

op_table! {
    MatMul => op(AB, infer::matmul, eval::matmul)
        .with_notes("numpy matmul: 1-D operands, batch broadcasting")
        .v(&[13]),
    Add => arith(|c| c.zip(|p, q| p + q))
        .v(&[13, 14]),
    Sub => arith(|c| c.zip(|p, q| p - q))
        .v(&[13, 14]),
    Mul => arith(|c| c.zip(|p, q| p * q))
        .v(&[13, 14]),
    Div => arith(|c| c.zip(|p, q| p / q)).with_notes("integer Div truncates")
        .v(&[13, 14]),
    Neg => numeric_unary(|c| c.map(|v| -v))
        .v(&[13]),
    Relu => numeric_unary(|c| c.map(|v| if v > 0.0 { v } else { 0.0 }))
        .v(&[13, 14]),
    Exp => float_unary(|c| c.map(f32::exp))
        .v(&[13]),
    Log => float_unary(|c| c.map(f32::ln))
        .v(&[13]),
    Sqrt => float_unary(|c| c.map(f32::sqrt))
        .v(&[13]),
    Reciprocal => float_unary(|c| c.map(|v| 1.0 / v))
        .v(&[13]),
    Tanh => float_unary(|c| c.map(f32::tanh))
        .v(&[13]),
    Sigmoid => float_unary(|c| c.map(eval::sigmoid))
        .v(&[13]),
    Softmax => op(X, infer::softmax, eval::softmax).with_attrs(&[attr("axis", I, "-1")])
        .v(&[13]),
    Gemm => op(&[req("A"), req("B"), opt("C")], infer::gemm, eval::gemm)
        .with_attrs(&[
            attr("alpha", F, "1.0"),
            attr("beta", F, "1.0"),
            attr("transA", I, "0"),
            attr("transB", I, "0"),
        ])
        .with_notes("A, B 2-D; C broadcasts to [M, N]")
        .v(&[13]),
    Gelu => op(X, infer::gelu, eval::gelu_op)
        .with_attrs(&[attr("approximate", S, "\"none\"; or \"tanh\"")])
        .with_onnx(&[onnx("", "Gelu", 20), onnx("com.microsoft", "Gelu", 1)])
        .with_notes("float dtypes; exact (erf) or tanh approximation")
        .v(&[20]),
    Silu => float_unary(eval::swish)
        .with_attrs(&[attr("alpha", F, "1.0")])
        .with_onnx(&[onnx_lenient("Swish", 24)])
        .with_notes("float dtypes; x * sigmoid(alpha x) (ONNX Swish; SiLU at alpha 1)")
        .v(&[24]),
    RotaryEmbedding => op(
        &[
            req("X [B, H, S, D] or [B, S, H*D]"),
            req("cos_cache [B, S, R/2] or [P, R/2]"),
            req("sin_cache"),
            opt("position_ids [B, S]"),
        ],
        rope::infer,
        rope::eval,
    )
        .with_attrs(&[
            attr("interleaved", I, "0"),
            attr("num_heads", I, "0; set for a 3-D X"),
            attr("rotary_embedding_dim", I, "0: all of D"),
        ])
        .with_onnx(&[onnx("", "RotaryEmbedding", 23)])
        .with_notes("float dtypes; each head's first R channels as pairs (halves, or neighbours when interleaved) rotated by the caches' cos and sin at the token, or at its integer position id")
        .v(&[23]),
    SwiGlu => op(&[req("A"), req("B")], infer::same_shape_float, eval::swiglu)
        .with_attrs(&[attr("alpha", F, "1.0")])
        .with_onnx(&[onnx("", "SwiGLU", 28)])
        .with_notes("float dtypes, A and B of one shape (no broadcasting); A * sigmoid(alpha A) * B")
        .v(&[28])
        .reads_all(),
    Softplus => float_unary(|c| c.map(eval::softplus))
        .v(&[1, 22]),
    Pow => op(&[req("X"), req("Y")], infer::pow, |c| c.zip(f32::powf))
        .with_notes("Y may have another dtype; output has X's")
        .v(&[13, 15]),
    Clip => op(&[req("X"), opt("min"), opt("max")], infer::clip, eval::clip)
        .with_attrs(&[attr("min", F, "-inf"), attr("max", F, "inf")])
        .with_notes("bounds as attributes or single-element inputs")
        .v(&[13]),
    Max => op(&[many("X")], infer::extremum, |c| eval::extremum(c, true))
        .with_notes("variadic, broadcasting; NaN propagates")
        .v(&[13]),
    Min => op(&[many("X")], infer::extremum, |c| eval::extremum(c, false))
        .with_notes("variadic, broadcasting; NaN propagates")
        .v(&[13]),
    Where => op(&[req("cond (bool)"), req("X"), req("Y")], infer::where_op, eval::where_op)
        .v(&[9, 16]),
    Equal => compare(|c| c.zip(|p, q| b2f(p == q)))
        .v(&[13, 19]),
    Less => compare(|c| c.zip(|p, q| b2f(p < q)))
        .v(&[13]),
    Greater => compare(|c| c.zip(|p, q| b2f(p > q)))
        .v(&[13]),
    Cast => op(X, infer::cast, |c| c.map(|v| v))
        .with_attrs(&[attr("to", S, "required; a dtype name")])
        .v(&[13, 19, 21, 23, 24, 25, 28])
        .reads_all(),
    LayerNormalization => op(&[req("X"), req("scale"), opt("bias")], infer::layer_norm, eval::layer_norm)
        .with_outputs(&[req("Y"), opt("Mean (f32)"), opt("InvStdDev (f32)")])
        .with_attrs(&[attr("axis", I, "-1"), attr("epsilon", F, "1e-5")])
        .with_notes("normalises over axes axis..")
        .v(&[17]),
    LpNormalization => op(X, norm::infer, norm::eval)
        .with_attrs(&[attr("axis", I, "-1"), attr("p", I, "2; 1 or 2")])
        .with_notes("x / ||x||_p along axis (a lane of zeros stays zeros)")
        .v(&[1, 22]),
    BatchNormalization => op(
        &[req("X"), req("scale [C]"), req("B [C]"), req("input_mean [C]"), req("input_var [C]")],
        norm::infer,
        norm::eval,
    )
        .with_outputs(&[req("Y"), opt("running_mean (training mode; refused)"), opt("running_var (training mode; refused)")])
        .with_attrs(&[
            attr("epsilon", F, "1e-5"),
            attr("momentum", F, "0.9 (training only)"),
            attr("training_mode", I, "0; 1 is refused"),
        ])
        .with_notes("inference only: scale (x - mean) / sqrt(var + epsilon) + B per channel (axis 1); the running mean/var outputs of training mode are refused")
        .v(&[9, 14, 15]),
    InstanceNormalization => op(&[req("input"), req("scale [C]"), req("B [C]")], norm::infer, norm::eval)
        .with_attrs(&[attr("epsilon", F, "1e-5")])
        .with_notes("per instance and channel over the spatial axes, then scale and B per channel")
        .v(&[6, 22]),
    GroupNormalization => op(&[req("X"), req("scale"), req("bias")], norm::infer, norm::eval)
        .with_attrs(&[
            attr("num_groups", I, "required"),
            attr("epsilon", F, "1e-5"),
            attr("stash_type", I, "1 (the reference always computes in f32)"),
        ])
        // Written at opset 21, whose per-channel scale the writer's graphs have; read from
        // opset 18 on, the scale's shape telling the two forms apart.
        .with_onnx(&[onnx_lenient("GroupNormalization", 21)])
        .with_notes("per instance over each of num_groups channel groups; scale and bias per channel [C] (opset 21) or per group [num_groups] (opset 18), told apart by their shape")
        .v(&[18, 21]),
    MeanVarianceNormalization => op(X, norm::infer, norm::eval)
        .with_attrs(&[attr("axes", IS, "[0, 2, 3]")])
        .with_notes("(x - mean) / (sqrt(variance) + 1e-9) over axes")
        .v(&[9, 13]),
    LRN => op(X, norm::lrn_infer, norm::lrn_eval)
        .with_attrs(&[
            attr("size", I, "required"),
            attr("alpha", F, "0.0001"),
            attr("beta", F, "0.75"),
            attr("bias", F, "1.0"),
        ])
        .with_notes("x / (bias + alpha / size * sum of x^2 over the size channels around)^beta, the window clipped at the edges")
        .v(&[13]),
    SimplifiedLayerNormalization => op(&[req("X"), req("scale")], infer::layer_norm, eval::layer_norm)
        .with_attrs(&[attr("axis", I, "-1"), attr("epsilon", F, "1e-5")])
        .with_onnx(&[
            onnx_lenient("RMSNormalization", 23),
            onnx("com.microsoft", "SimplifiedLayerNormalization", 1),
        ])
        .with_notes("RMS norm: x / sqrt(mean(x^2) + eps) * scale")
        .v(&[23]),
    ReduceSum => reduce(eval::reduce, AXES_13)
        .v(&[13]),
    ReduceMean => reduce(eval::reduce, AXES_18)
        .v(&[13, 18]),
    ReduceMax => reduce(eval::reduce, AXES_18)
        .v(&[13, 18, 20]),
    Transpose => op(X, infer::transpose, eval::transpose)
        .with_attrs(&[attr("perm", IS, "reversed")])
        .v(&[13, 21, 23, 24, 25]),
    SpaceToDepth => op(X, blocks::infer, blocks::eval)
        .with_attrs(&[
            attr("blocksize", I, "required"),
            attr("mode", S, "\"DCR\"; or CRD (opset 28)"),
        ])
        .with_notes("[N, C, H, W] to [N, C b^2, H/b, W/b], any dtype; DCR puts the block offsets before the channel")
        .v(&[13, 28])
        .reads_all(),
    DepthToSpace => op(X, blocks::infer, blocks::eval)
        .with_attrs(&[
            attr("blocksize", I, "required"),
            attr("mode", S, "\"DCR\"; or CRD"),
        ])
        .with_notes("[N, C, H, W] to [N, C/b^2, H b, W b], any dtype; the inverse of SpaceToDepth in the same mode")
        .v(&[13, 28])
        .reads_all(),
    Reshape => op(X, infer::reshape, eval::same_data)
        .with_attrs(&[attr("shape", IS, "required; 0 copies, one -1 inferred")])
        .with_const_inputs(&[cin(1, "shape", ConstForm::Ints)])
        .v(&[13, 14, 19, 21, 23, 24, 25]),
    Flatten => op(X, infer::flatten, eval::same_data).with_attrs(&[attr("axis", I, "1")])
        .v(&[13, 21, 23, 24, 25]),
    Squeeze => op(X, infer::squeeze, eval::same_data)
        .with_attrs(&[attr("axes", IS, "all size-1 axes")])
        .with_const_inputs(&[cin(1, "axes", ConstForm::Ints)])
        .v(&[13, 21, 23, 24, 25]),
    Unsqueeze => op(X, infer::unsqueeze, eval::same_data)
        .with_attrs(&[attr("axes", IS, "required")])
        .with_const_inputs(&[cin(1, "axes", ConstForm::Ints)])
        .v(&[13, 21, 23, 24, 25]),
    Concat => op(&[many("X")], infer::concat, eval::concat)
        .with_attrs(&[attr("axis", I, "required")])
        .v(&[13]),
    Split => op(X, infer::split, eval::split)
        .with_outputs(&[many("Y")])
        .with_attrs(&[attr("axis", I, "0"), attr("split", IS, "equal parts")])
        .with_const_inputs(&[cin(1, "split", ConstForm::Ints)])
        .with_notes("one output per part")
        .v(&[13, 18]),
    Slice => op(X, infer::slice, eval::slice)
        .with_attrs(&[
            attr("starts", IS, "required"),
            attr("ends", IS, "required"),
            attr("axes", IS, "0, 1, ..."),
            attr("steps", IS, "1, 1, ..."),
        ])
        .with_const_inputs(&[
            cin(1, "starts", ConstForm::Ints),
            cin(2, "ends", ConstForm::Ints),
            cin(3, "axes", ConstForm::Ints),
            cin(4, "steps", ConstForm::Ints),
        ])
        .with_notes("ONNX clamping rules, negative steps")
        .v(&[13]),
    Gather => op(&[req("data"), req("indices (integer)")], infer::gather, eval::gather)
        .with_attrs(&[attr("axis", I, "0")])
        .with_notes("negative indices count from the end")
        .v(&[13]),
    Expand => op(X, infer::expand, eval::expand)
        .with_attrs(&[attr("shape", IS, "required")])
        .with_const_inputs(&[cin(1, "shape", ConstForm::Ints)])
        .with_notes("bidirectional broadcast")
        .v(&[13]),
    Sin => float_unary(|c| c.map(f32::sin))
        .v(&[7, 22]),
    Cos => float_unary(|c| c.map(f32::cos))
        .v(&[7, 22]),
    Erf => float_unary(|c| c.map(|v| eval::erf(f64::from(v)) as f32))
        .v(&[9, 13]),
    CumSum => op(X, infer::cumsum, eval::cumsum)
        .with_attrs(&[
            attr("axis", I, "0"),
            attr("exclusive", I, "0"),
            attr("reverse", I, "0"),
        ])
        .with_const_inputs(&[cin(1, "axis", ConstForm::Scalar)])
        .v(&[11, 14]),
    Trilu => op(X, infer::trilu, eval::trilu)
        .with_attrs(&[attr("upper", I, "1"), attr("k", I, "0")])
        .with_const_inputs(&[cin(1, "k", ConstForm::Scalar)])
        .with_notes("rank >= 2")
        .v(&[14]),
    Conv => op(&[req("X [N, C, L]"), req("W [M, C/group, K]"), opt("B [M]")], infer::conv, eval::conv)
        .with_attrs(&[
            attr("group", I, "1"),
            attr("pads", IS, "[0, 0]: begin, end"),
            attr("strides", IS, "[1]"),
            attr("dilations", IS, "[1]"),
            attr("kernel_shape", IS, "from W"),
        ])
        .with_notes("1-D only; group = C is the depthwise conv of Mamba (pads [K-1, 0] makes it causal)")
        .v(&[11, 22]),
    MaxPool => op(&[req("X [N, C, D1, ...]")], infer::pool, eval::pool)
        .with_attrs(POOL_ATTRS_MAX)
        .with_notes("1-D, 2-D, 3-D, ...; float or int8; the Indices output is not produced (a model reading it is refused)")
        .v(&[12, 22]),
    AveragePool => op(&[req("X [N, C, D1, ...]")], infer::pool, eval::pool)
        .with_attrs(POOL_ATTRS_AVERAGE)
        .with_notes("1-D, 2-D, 3-D, ...; divides by the taps inside the input, or inside the padded input with count_include_pad (never those ceil_mode adds)")
        .v(&[11, 19, 22]),
    LpPool => op(&[req("X [N, C, D1, ...]")], infer::pool, eval::pool)
        .with_attrs(POOL_ATTRS_LP)
        .with_notes("(sum over the window of |x|^p)^(1/p); padding adds nothing")
        .v(&[11, 18, 22]),
    GlobalAveragePool => op(&[req("X [N, C, D1, ...]")], infer::global_pool, eval::global_pool)
        .with_notes("mean over every spatial axis, kept with size 1")
        .v(&[1, 22]),
    GlobalMaxPool => op(&[req("X [N, C, D1, ...]")], infer::global_pool, eval::global_pool)
        .with_notes("maximum over every spatial axis, kept with size 1")
        .v(&[1, 22]),
    GlobalLpPool => op(&[req("X [N, C, D1, ...]")], infer::global_pool, eval::global_pool)
        .with_attrs(&[attr("p", I, "2")])
        .with_notes("(sum of |x|^p over every spatial axis)^(1/p), kept with size 1")
        .v(&[2, 22]),
    TopK => op(X, infer::topk, eval::topk)
        .with_outputs(&[req("Values"), req("Indices")])
        .with_attrs(&[
            attr("k", I, "required"),
            attr("axis", I, "-1"),
            attr("largest", I, "1"),
            attr("sorted", I, "1"),
        ])
        .with_const_inputs(&[cin(1, "k", ConstForm::OneElement)])
        .with_notes("values (X's dtype) and indices (i64); ties keep the lower index first, NaN ranks above every number; results are always sorted")
        .v(&[11, 24]),
    Attention => op(
        &[
            req("Q [B, Hq, Sq, D] or [B, Sq, Hq*D]"),
            req("K [B, Hkv, Skv, D] or [B, Skv, Hkv*D]"),
            req("V [B, Hkv, Skv, Dv] or [B, Skv, Hkv*Dv]"),
            opt("attn_mask (bool or additive)"),
            opt("past_key [B, Hkv, P, D]"),
            opt("past_value [B, Hkv, P, Dv]"),
            opt("nonpad_kv_seqlen [B] (integers)"),
        ],
        infer::attention,
        eval::attention,
    )
        .with_outputs(&[
            req("Y"),
            opt("present_key"),
            opt("present_value"),
            opt("qk_matmul_output"),
        ])
        .with_attrs(&[
            attr("is_causal", I, "0"),
            attr("scale", F, "1/sqrt(D)"),
            attr("q_num_heads", I, "required for 3-D inputs"),
            attr("kv_num_heads", I, "required for 3-D inputs"),
            attr("softcap", F, "0 (none)"),
            attr("qk_matmul_output_mode", I, "0"),
            attr("left_window_size", I, "-1 (no limit)"),
            attr("right_window_size", I, "-1 (no limit)"),
        ])
        .with_onnx(&[onnx("", "Attention", 23)])
        .with_notes("grouped-query scaled dot-product attention; see docs/graph-format.md. Masks, past key/value, 3-D inputs, softcap and the QK output are reference-only")
        .v(&[23, 24, 25]),
    CastLike => op(&[req("X"), req("target_type")], infer::cast_like, |c| c.map(|v| v))
        .with_notes("X converted to target_type's dtype (only its dtype is read)")
        .v(&[15, 19, 21, 23, 24, 25]),
    Hardmax => op(X, infer::softmax, eval::hardmax)
        .with_attrs(&[attr("axis", I, "-1")])
        .with_notes("1 at the first maximum along axis, 0 elsewhere (opset 13: no coercion to 2-D)")
        .v(&[13]),
    LogSoftmax => op(X, infer::softmax, eval::log_softmax)
        .with_attrs(&[attr("axis", I, "-1")])
        .v(&[13]),
    ReduceMin => reduce(eval::reduce, AXES_18).v(&[13, 18, 20]),
    ReduceProd => reduce(eval::reduce, AXES_18).v(&[13, 18]),
    ReduceL2 => reduce(eval::reduce, AXES_18)
        .with_notes("sqrt of the sum of squares")
        .v(&[13, 18]),
    ReduceLogSumExp => reduce(eval::reduce, AXES_18)
        .with_notes("log(sum(exp(x))), computed stably")
        .v(&[13, 18, 28])
        .reads_all(),
    ArgMax => op(X, infer::arg_reduce, eval::arg_reduce)
        .with_attrs(ARG_ATTRS)
        .with_notes("i64 indices; ties give the first index (the last with select_last_index)")
        .v(&[13]),
    ArgMin => op(X, infer::arg_reduce, eval::arg_reduce)
        .with_attrs(ARG_ATTRS)
        .with_notes("i64 indices; ties give the first index (the last with select_last_index)")
        .v(&[13]),
    Mod => op(AB, infer::modulo, eval::modulo)
        .with_attrs(&[attr("fmod", I, "0")])
        .with_notes("fmod 0: a - floor(a / b) * b (the divisor's sign); fmod 1: C fmod")
        .v(&[13, 28])
        .reads_all(),
    And => op(AB, infer::logical, |c| c.zip(|p, q| b2f(p != 0.0 && q != 0.0)))
        .with_notes("bool")
        .v(&[7]),
    Or => op(AB, infer::logical, |c| c.zip(|p, q| b2f(p != 0.0 || q != 0.0)))
        .with_notes("bool")
        .v(&[7]),
    Xor => op(AB, infer::logical, |c| c.zip(|p, q| b2f((p != 0.0) != (q != 0.0))))
        .with_notes("bool")
        .v(&[7]),
    Not => op(X, infer::not, |c| c.map(|v| b2f(v == 0.0)))
        .with_notes("bool")
        .v(&[1]),
    LessOrEqual => compare(|c| c.zip(|p, q| b2f(p <= q))).v(&[12, 16]),
    GreaterOrEqual => compare(|c| c.zip(|p, q| b2f(p >= q))).v(&[12, 16]),
    IsNaN => op(X, infer::float_test, |c| c.map(|v| b2f(v.is_nan())))
        .with_notes("output bool")
        .v(&[13, 20]),
    IsInf => op(X, infer::float_test, eval::is_inf)
        .with_attrs(&[attr("detect_negative", I, "1"), attr("detect_positive", I, "1")])
        .with_notes("output bool")
        .v(&[10, 20]),
    Abs => numeric_unary(|c| c.map(f32::abs)).v(&[13]),
    Sign => numeric_unary(|c| c.map(|v| if v > 0.0 { 1.0 } else if v < 0.0 { -1.0 } else { v }))
        .v(&[13]),
    Floor => float_unary(|c| c.map(f32::floor)).v(&[13]),
    Ceil => float_unary(|c| c.map(f32::ceil)).v(&[13]),
    Round => float_unary(|c| c.map(f32::round_ties_even))
        .with_notes("float dtypes; halves round to even")
        .v(&[11, 22]),
    Sum => op(&[many("X")], infer::extremum, eval::sum_mean)
        .with_notes("variadic, broadcasting")
        .v(&[13]),
    Mean => op(&[many("X")], infer::extremum, eval::sum_mean)
        .with_notes("variadic, broadcasting")
        .v(&[13]),
    HardSigmoid => float_unary(eval::hard_sigmoid)
        .with_attrs(&[attr("alpha", F, "0.2"), attr("beta", F, "0.5")])
        .with_notes("float dtypes; max(0, min(1, alpha x + beta))")
        .v(&[6, 22]),
    HardSwish => float_unary(|c| c.map(|v| v * (v / 6.0 + 0.5).clamp(0.0, 1.0)))
        .with_notes("float dtypes; x * max(0, min(1, x / 6 + 1/2))")
        .v(&[14, 22]),
    LeakyRelu => float_unary(eval::leaky_relu)
        .with_attrs(&[attr("alpha", F, "0.01")])
        .v(&[6, 16]),
    Elu => float_unary(eval::elu)
        .with_attrs(&[attr("alpha", F, "1.0")])
        .v(&[6, 22]),
    Selu => float_unary(eval::selu)
        .with_attrs(&[
            attr("alpha", F, "1.67326319217681884765625"),
            attr("gamma", F, "1.05070102214813232421875"),
        ])
        .v(&[6, 22]),
    Softsign => float_unary(|c| c.map(|v| v / (1.0 + v.abs())))
        .v(&[1, 22]),
    Celu => float_unary(eval::celu)
        .with_attrs(&[attr("alpha", F, "1.0")])
        .with_notes("float dtypes; max(0, x) + min(0, alpha (exp(x / alpha) - 1))")
        .v(&[12, 28])
        .reads_all(),
    ThresholdedRelu => float_unary(eval::thresholded_relu)
        .with_attrs(&[attr("alpha", F, "1.0")])
        .with_notes("float dtypes; x where x > alpha, else 0")
        .v(&[10, 22]),
    Shrink => float_unary(eval::shrink)
        .with_attrs(&[attr("lambd", F, "0.5"), attr("bias", F, "0.0")])
        .with_notes("float dtypes; x + bias below -lambd, x - bias above lambd, else 0")
        .v(&[9]),
    PRelu => op(&[req("X"), req("slope")], infer::prelu, |c| {
        c.zip(|x, slope| if x < 0.0 { slope * x } else { x })
    })
        .with_notes("slope broadcasts to X")
        .v(&[9, 16]),
    Mish => float_unary(|c| c.map(eval::mish))
        .with_onnx(&[onnx("", "Mish", 18)])
        .with_notes("float dtypes; x tanh(softplus(x))")
        .v(&[18, 22]),
    Tan => float_unary(|c| c.map(f32::tan))
        .v(&[7, 22]),
    Sinh => float_unary(|c| c.map(f32::sinh))
        .v(&[9, 22]),
    Cosh => float_unary(|c| c.map(f32::cosh))
        .v(&[9, 22]),
    Asinh => float_unary(|c| c.map(f32::asinh))
        .v(&[9, 22]),
    Acosh => float_unary(|c| c.map(f32::acosh))
        .v(&[9, 22]),
    Atanh => float_unary(|c| c.map(f32::atanh))
        .v(&[9, 22]),
    Asin => float_unary(|c| c.map(f32::asin))
        .v(&[7, 22]),
    Acos => float_unary(|c| c.map(f32::acos))
        .v(&[7, 22]),
    Atan => float_unary(|c| c.map(f32::atan))
        .v(&[7, 22]),
    GatherElements => op(&[req("data"), req("indices (integer)")], infer::gather_elements, eval::gather_elements)
        .with_attrs(&[attr("axis", I, "0")])
        .with_notes("output shaped like indices; negative indices count from the end")
        .v(&[13]),
    ScatterND => op(
        &[req("data"), req("indices (i64) [..., k]"), req("updates")],
        infer::scatter_nd,
        eval::scatter_nd,
    )
        .with_attrs(&[attr("reduction", S, "\"none\"; or add, mul, max, min")])
        .with_notes("data with the slices at indices replaced by updates (the KV-cache update); later duplicates win")
        .v(&[13, 16, 18]),
    Einsum => op(&[many("Inputs")], infer::einsum, eval::einsum)
        .with_attrs(&[attr("equation", S, "required")])
        .with_notes("any equation: explicit or implicit output, ellipsis broadcasting, repeated labels (diagonals)")
        .v(&[12]),
    PagedAttention => op(
        &[
            req("query [B, Q, Hq, D] or packed [T, Hq, D]"),
            req("key [B, Q, Hkv, D] or [T, Hkv, D]"),
            req("value [B, Q, Hkv, Dv] or [T, Hkv, Dv]"),
            req("key_cache [blocks, block_size, Hkv, D]"),
            req("value_cache [blocks, block_size, Hkv, Dv]"),
            req("block_tables (integer) [B, max_blocks]"),
            req("seq_lens (integer) [B]"),
            opt("query_lens (integer) [B]: new tokens per sequence, with a packed query"),
        ],
        paged::infer,
        paged::eval,
    )
        .with_outputs(&[req("Y [B, Q, Hq, Dv] or [T, Hq, Dv]"), opt("key_cache_out"), opt("value_cache_out")])
        .with_attrs(&[attr("scale", F, "1/sqrt(D)")])
        .with_notes("not an ONNX op (read by name; version 1 is this table's). Decode (Q = 1), chunked prefill, or with query_lens a mixed batch whose T new tokens are packed sequence after sequence, over a paged KV cache: the new keys/values of sequence b go to positions seq_lens[b] - Q .. seq_lens[b] - 1 of its pages (ScatterND-style, Q = query_lens[b] when packed), each new token attends causally to its sequence; see docs/serving.md")
        .v(&[1]),
}

// ---- lookups the loaders use ----

fn is_default_domain(domain: &str) -> bool {
    domain.is_empty() || domain == "ai.onnx"
}

/// The op an ONNX node `(domain, op_type)` called `node` reads as, in a model importing
/// default-domain `opset`. The error says what is supported (and the closest name, if any).
pub(crate) fn from_onnx(
    domain: &str,
    op_type: &str,
    opset: i64,
    node: &str,
) -> Result<OpKind, String> {
    let default = is_default_domain(domain);
    for &kind in OpKind::ALL {
        for n in kind.spec().onnx {
            let same_domain = n.domain == domain || (default && n.domain.is_empty());
            if n.op_type != op_type || !same_domain {
                continue;
            }
            if default && n.strict && opset < n.since {
                return Err(format!(
                    "{op_type} is an ONNX op from opset {} on; this model imports an older opset",
                    n.since
                ));
            }
            return Ok(kind);
        }
    }
    if default {
        if let Some(kind) = OpKind::from_name(op_type) {
            return Ok(kind);
        }
    }
    Err(unsupported_onnx(domain, op_type, node))
}

fn unsupported_onnx(domain: &str, op_type: &str, node: &str) -> String {
    let mut renamed = Vec::new();
    let mut other: Vec<(&str, Vec<&str>)> = Vec::new();
    for &kind in OpKind::ALL {
        for n in kind.spec().onnx {
            if n.domain.is_empty() {
                if n.op_type != kind.name() {
                    renamed.push(format!("{} for {}", n.op_type, kind.name()));
                }
            } else {
                match other.iter_mut().find(|(d, _)| *d == n.domain) {
                    Some((_, names)) => names.push(n.op_type),
                    None => other.push((n.domain, vec![n.op_type])),
                }
            }
        }
    }
    let others = other
        .iter()
        .map(|(d, names)| format!("{d} {}", names.join(" and ")))
        .collect::<Vec<_>>()
        .join("; ");
    let supported = SUPPORTED_OPS.join(", ");
    if is_default_domain(domain) {
        let mut candidates: Vec<&str> = SUPPORTED_OPS.to_vec();
        for &kind in OpKind::ALL {
            candidates.extend(kind.spec().onnx.iter().map(|n| n.op_type));
        }
        format!(
            "unsupported ONNX op '{op_type}' in node '{node}'{}; supported ops: {supported} (ONNX names: {}; Constant and Identity are folded away)",
            did_you_mean(op_type, &candidates),
            renamed.join(", ")
        )
    } else {
        format!(
            "unsupported op '{op_type}' of domain '{domain}' in node '{node}'; supported ops: {supported} (default domain; {others})"
        )
    }
}

/// The message for node `node` whose op is not in the table.
pub(crate) fn unknown_op(op: &str, node: &str) -> String {
    format!(
        "unknown op '{op}' in node '{node}'{}; supported ops: {}",
        did_you_mean(op, SUPPORTED_OPS),
        SUPPORTED_OPS.join(", ")
    )
}

/// " (did you mean 'X'?)" when one candidate is close to `name`: the same but for case,
/// or at most two edits away (one for short names).
pub fn did_you_mean(name: &str, candidates: &[&str]) -> String {
    let lower = name.to_lowercase();
    let limit = if name.chars().count() <= 4 { 1 } else { 2 };
    let best = candidates
        .iter()
        .map(|c| {
            let d = edit_distance(&lower, &c.to_lowercase());
            (if d == 0 { 0 } else { d + 1 }, *c)
        })
        .filter(|(d, _)| *d <= limit + 1)
        .min_by_key(|(d, _)| *d);
    match best {
        Some((_, c)) if c != name => format!(" (did you mean '{c}'?)"),
        _ => String::new(),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = Vec::with_capacity(b.len() + 1);
        cur.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let sub = prev.get(j).copied().unwrap_or(0) + usize::from(ca != *cb);
            let del = prev.get(j + 1).copied().unwrap_or(0) + 1;
            let ins = cur.get(j).copied().unwrap_or(0) + 1;
            cur.push(sub.min(del).min(ins));
        }
        prev = cur;
    }
    prev.last().copied().unwrap_or(0)
}

// ---- the docs table ----

fn ports_text(ports: &[Port]) -> String {
    ports
        .iter()
        .map(|p| match p.arity {
            PortArity::Required => p.name.to_string(),
            PortArity::Optional => format!("{}?", p.name),
            PortArity::Variadic => format!("{}...", p.name),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn onnx_text(kind: OpKind) -> String {
    let spec = kind.spec();
    let mut names: Vec<String> = Vec::new();
    for n in spec.onnx {
        let domain = if n.domain.is_empty() {
            String::new()
        } else {
            format!("{}:", n.domain)
        };
        let since = if n.domain.is_empty() && n.since > MIN_OPSET {
            format!(" ({})", n.since)
        } else {
            String::new()
        };
        names.push(format!("{domain}{}{since}", n.op_type));
    }
    if !spec
        .onnx
        .iter()
        .any(|n| n.domain.is_empty() && n.op_type == spec.name)
    {
        names.push(spec.name.to_string());
    }
    names.join(", ")
}

/// The supported-ops table in Markdown: `docs/ops.md`, generated from the op table (a
/// test keeps the checked-in file in step).
pub fn ops_markdown() -> String {
    let mut s = String::from(
        "# Graph ops\n\n\
         <!-- Generated from crates/graph/src/spec.rs; do not edit. Regenerate with\n\
         `UPDATE_EXPECT=1 cargo test -p graph --lib spec`. -->\n\n\
         Every op a graph may use, from the op table in `crates/graph/src/spec.rs`. Inputs\n\
         marked `?` are optional (an empty name omits them), `...` takes one or more values.\n\
         Attributes give their kind and default. The ONNX column lists the names the ONNX\n\
         loader reads (with the opset that introduced a name, where it is after 13; the first\n\
         is what the writer emits); `docs/graph-format.md` says how inputs and attributes are written\n\
         and `docs/onnx.md` how ONNX maps onto them. \"ONNX versions\" lists the opsets in\n\
         which ONNX's definition changed, from the one in force at opset 13 to the newest\n\
         known (ONNX's operator changelog up to opset 28); a model importing an older opset\n\
         is read where the first is no newer than its opset. \"device\" says whether the device\n\
         compiler lowers the op yet; ops marked \"no\" run in the reference evaluator only.\n\n\
         | op | inputs | outputs | attributes | ONNX | ONNX versions | device | notes |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for &kind in OpKind::ALL {
        let spec = kind.spec();
        let attrs = spec
            .attrs
            .iter()
            .map(|a| format!("{} {} ({})", a.name, a.kind.short(), a.default))
            .collect::<Vec<_>>()
            .join(", ");
        let row = [
            spec.name.to_string(),
            ports_text(spec.inputs),
            ports_text(spec.outputs),
            attrs,
            onnx_text(kind),
            spec.onnx_versions
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if spec.device { "yes" } else { "no" }.to_string(),
            spec.notes.to_string(),
        ]
        .map(|c| c.replace('|', "\\|"));
        s.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &k in OpKind::ALL {
            assert_eq!(OpKind::from_name(k.name()), Some(k));
            assert_eq!(k.spec().name, k.name());
        }
        let names: Vec<&str> = OpKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, SUPPORTED_OPS);
    }

    #[test]
    fn every_op_knows_its_onnx_versions() {
        for &k in OpKind::ALL {
            let v = k.spec().onnx_versions;
            assert!(!v.is_empty(), "{}", k.name());
            assert!(v.windows(2).all(|w| w[0] < w[1]), "{}", k.name());
            assert!(
                v.iter().all(|&x| x <= crate::onnx::KNOWN_OPSET),
                "{}",
                k.name()
            );
        }
    }

    #[test]
    fn only_the_last_port_is_variadic() {
        for &k in OpKind::ALL {
            let s = k.spec();
            for ports in [s.inputs, s.outputs] {
                let n = ports.len();
                for (i, p) in ports.iter().enumerate() {
                    assert!(p.arity != PortArity::Variadic || i + 1 == n, "{}", s.name);
                }
            }
        }
    }

    #[test]
    fn did_you_mean_finds_close_names() {
        assert_eq!(
            did_you_mean("Addd", SUPPORTED_OPS),
            " (did you mean 'Add'?)"
        );
        assert_eq!(
            did_you_mean("matmul", SUPPORTED_OPS),
            " (did you mean 'MatMul'?)"
        );
        assert_eq!(did_you_mean("Frobnicate", SUPPORTED_OPS), "");
    }

    /// `docs/ops.md` is the table above; regenerate it with `UPDATE_EXPECT=1`.
    #[test]
    fn ops_doc_matches_the_table() {
        expect_test::expect_file!["../../../docs/ops.md"].assert_eq(&ops_markdown());
    }
}
