//! The device op set as a type. Every fact about an op kind that other passes need (its
//! SDSC name, its category, the KTIR elementwise op it lowers to) is a method here, written
//! as an exhaustive `match`, so adding a kind makes the compiler point at each place that
//! must say something about it.

use ktir::ElementwiseOp;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Defines a field-less enum whose variants each have one name, with `ALL`, `name` and
/// `from_name` following from that single list.
macro_rules! named_enum {
    ($(#[$meta:meta])* pub enum $ty:ident { $($(#[$vmeta:meta])* $variant:ident = $name:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $ty {
            $($(#[$vmeta])* $variant,)+
        }

        impl $ty {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant,)+];

            /// The SDSC op name.
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }

            /// The variant named `name` (the inverse of [`Self::name`]).
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.name() == name)
            }
        }
    };
}

/// Defines the unary elementwise device ops from one line each: the variant, its SDSC name,
/// the graph op it comes from (if any) and the one KTIR op it lowers to (`None`: the
/// lowering composes several, in `lower_ktir`). Adding a unary op is one line here.
macro_rules! unary_ops {
    ($(#[$meta:meta])* pub enum $ty:ident {
        $($(#[$vmeta:meta])* $variant:ident = $name:literal, graph $graph:expr, ktir $ktir:expr;)+
    }) => {
        named_enum! {
            $(#[$meta])*
            pub enum $ty {
                $($(#[$vmeta])* $variant = $name,)+
            }
        }

        impl $ty {
            /// The graph op (ONNX name) that decomposes to this op, if one does.
            pub fn graph_op(self) -> Option<&'static str> {
                match self {
                    $($ty::$variant => $graph,)+
                }
            }

            /// The KTIR (`arith`/`math`) op this lowers to when it is one op; `None` when the
            /// lowering composes several.
            pub fn ktir_elementwise(self) -> Option<ElementwiseOp> {
                use ElementwiseOp::*;
                match self {
                    $($ty::$variant => $ktir,)+
                }
            }

            /// The op the graph op `name` decomposes to, if it is a unary one.
            pub fn from_graph_op(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|u| u.graph_op() == Some(name))
            }
        }
    };
}

unary_ops! {
    /// Elementwise ops of one float operand.
    pub enum Unary {
        Abs = "abs", graph Some("Abs"), ktir Some(AbsF);
        Neg = "neg", graph Some("Neg"), ktir Some(NegF);
        Exp = "exp", graph Some("Exp"), ktir Some(Exp);
        Log = "log", graph Some("Log"), ktir Some(Log);
        Sqrt = "sqrt", graph Some("Sqrt"), ktir Some(Sqrt);
        Rsqrt = "rsqrt", graph None, ktir Some(Rsqrt);
        Reciprocal = "reciprocal", graph Some("Reciprocal"), ktir None;
        Tanh = "tanh", graph Some("Tanh"), ktir Some(Tanh);
        Erf = "erf", graph Some("Erf"), ktir Some(Erf);
        Sigmoid = "sigmoid", graph Some("Sigmoid"), ktir None;
        Relu = "relu", graph Some("Relu"), ktir None;
        /// Exact (erf) form, or the tanh approximation when the op has `approximate = [1]`.
        Gelu = "gelu", graph Some("Gelu"), ktir None;
        Silu = "silu", graph Some("Silu"), ktir None;
        Softplus = "softplus", graph Some("Softplus"), ktir None;
        Floor = "floor", graph Some("Floor"), ktir Some(Floor);
    }
}

named_enum! {
    /// Elementwise ops of two float operands (broadcasting from the right).
    pub enum Binary {
        Add = "add",
        Sub = "sub",
        Mul = "mul",
        RealDiv = "realdiv",
        Maximum = "maximum",
        Minimum = "minimum",
    }
}

named_enum! {
    /// Elementwise comparisons of two operands of one type, giving bool.
    pub enum Comparison {
        Equal = "equal",
        Greater = "greater",
        Lesser = "lesser",
    }
}

named_enum! {
    /// Reductions over the last axis, which is kept with size 1.
    pub enum Reduction {
        Max = "max",
        Sum = "sum",
        Mean = "mean",
        Min = "min",
        Prod = "prod",
    }
}

named_enum! {
    /// Ops that move data between layouts: each lowers to a kernel that reads boxes of its
    /// inputs, rearranges them in host order and writes its slice of the result (see
    /// `movement_split` for which dims are split over cores).
    pub enum Movement {
        Reshape = "reshape",
        Transpose = "transpose",
        Expand = "expand",
        Slice = "slice",
        Concat = "concat",
        Restickify = "restickify",
        Gather = "gather",
    }
}

impl Binary {
    /// The KTIR `arith` op this lowers to (float operands).
    pub fn ktir_elementwise(self) -> ElementwiseOp {
        match self {
            Binary::Add => ElementwiseOp::AddF,
            Binary::Sub => ElementwiseOp::SubF,
            Binary::Mul => ElementwiseOp::MulF,
            Binary::RealDiv => ElementwiseOp::DivF,
            Binary::Maximum => ElementwiseOp::MaximumF,
            Binary::Minimum => ElementwiseOp::MinimumF,
        }
    }
}

impl Reduction {
    /// The binary op that combines two partial results (a mean sums, then scales).
    pub fn combiner(self) -> Binary {
        match self {
            Reduction::Sum | Reduction::Mean => Binary::Add,
            Reduction::Max => Binary::Maximum,
            Reduction::Min => Binary::Minimum,
            Reduction::Prod => Binary::Mul,
        }
    }
}

/// What kind of kernel an op is, as the planning passes group them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// `batchmatmul`.
    Matmul,
    /// Applied elementwise over the output's iteration space.
    Pointwise,
    /// Reduces the last axis, keeping it with size 1.
    Reduction,
    /// Reads whole rows (the last axis) and writes a few elements per row: rows are split
    /// over cores, a row itself never is.
    RowOp,
    /// Moves data between layouts.
    Movement,
}

/// One device op kind: the SDSC op an op of the plan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceOpKind {
    /// Batched matrix product (batch dims broadcast), on the PE array.
    BatchMatmul,
    Unary(Unary),
    Binary(Binary),
    Compare(Comparison),
    /// Element type conversion; the target type is the output tensor's.
    ToDtype,
    /// Select by a bool condition.
    Where,
    Reduce(Reduction),
    /// Values and indices of the `k` largest (or smallest) elements of each row.
    TopK,
    Movement(Movement),
}

impl DeviceOpKind {
    /// Every kind, once.
    pub fn all() -> impl Iterator<Item = DeviceOpKind> {
        [
            DeviceOpKind::BatchMatmul,
            DeviceOpKind::ToDtype,
            DeviceOpKind::Where,
            DeviceOpKind::TopK,
        ]
        .into_iter()
        .chain(Unary::ALL.iter().map(|&u| DeviceOpKind::Unary(u)))
        .chain(Binary::ALL.iter().map(|&b| DeviceOpKind::Binary(b)))
        .chain(Comparison::ALL.iter().map(|&c| DeviceOpKind::Compare(c)))
        .chain(Reduction::ALL.iter().map(|&r| DeviceOpKind::Reduce(r)))
        .chain(Movement::ALL.iter().map(|&m| DeviceOpKind::Movement(m)))
    }

    /// The SDSC op name, as snapshots, SDSC and kernel comments print it.
    pub fn name(self) -> &'static str {
        match self {
            DeviceOpKind::BatchMatmul => "batchmatmul",
            DeviceOpKind::Unary(u) => u.name(),
            DeviceOpKind::Binary(b) => b.name(),
            DeviceOpKind::Compare(c) => c.name(),
            DeviceOpKind::ToDtype => "to_dtype",
            DeviceOpKind::Where => "where",
            DeviceOpKind::Reduce(r) => r.name(),
            DeviceOpKind::TopK => "topk",
            DeviceOpKind::Movement(m) => m.name(),
        }
    }

    /// The kind named `name` (the inverse of [`Self::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::all().find(|k| k.name() == name)
    }

    /// The category the planning passes treat this kind by.
    pub fn category(self) -> Category {
        match self {
            DeviceOpKind::BatchMatmul => Category::Matmul,
            DeviceOpKind::Unary(_)
            | DeviceOpKind::Binary(_)
            | DeviceOpKind::Compare(_)
            | DeviceOpKind::ToDtype
            | DeviceOpKind::Where => Category::Pointwise,
            DeviceOpKind::Reduce(_) => Category::Reduction,
            DeviceOpKind::TopK => Category::RowOp,
            DeviceOpKind::Movement(_) => Category::Movement,
        }
    }

    /// Whether this is `batchmatmul`.
    pub fn is_matmul(self) -> bool {
        self.category() == Category::Matmul
    }

    /// Whether the op is applied elementwise.
    pub fn is_pointwise(self) -> bool {
        self.category() == Category::Pointwise
    }

    /// Whether the op moves data between layouts.
    pub fn is_movement(self) -> bool {
        self.category() == Category::Movement
    }

    /// Whether the op reduces the last axis.
    pub fn is_reduction(self) -> bool {
        self.category() == Category::Reduction
    }

    /// Whether the op reads whole rows and writes a few elements per row.
    pub fn is_row_op(self) -> bool {
        self.category() == Category::RowOp
    }

    /// Whether the op's operands and result may differ in element type (conversions,
    /// comparisons, select): such elementwise ops lower through `convert`.
    pub fn is_typed_pointwise(self) -> bool {
        match self {
            DeviceOpKind::ToDtype | DeviceOpKind::Compare(_) | DeviceOpKind::Where => true,
            DeviceOpKind::BatchMatmul
            | DeviceOpKind::Unary(_)
            | DeviceOpKind::Binary(_)
            | DeviceOpKind::Reduce(_)
            | DeviceOpKind::TopK
            | DeviceOpKind::Movement(_) => false,
        }
    }

    /// The single KTIR elementwise op this kind lowers to, where there is one.
    pub fn ktir_elementwise(self) -> Option<ElementwiseOp> {
        match self {
            DeviceOpKind::Unary(u) => u.ktir_elementwise(),
            DeviceOpKind::Binary(b) => Some(b.ktir_elementwise()),
            DeviceOpKind::BatchMatmul
            | DeviceOpKind::Compare(_)
            | DeviceOpKind::ToDtype
            | DeviceOpKind::Where
            | DeviceOpKind::Reduce(_)
            | DeviceOpKind::TopK
            | DeviceOpKind::Movement(_) => None,
        }
    }
}

impl From<Unary> for DeviceOpKind {
    fn from(u: Unary) -> Self {
        DeviceOpKind::Unary(u)
    }
}

impl From<Binary> for DeviceOpKind {
    fn from(b: Binary) -> Self {
        DeviceOpKind::Binary(b)
    }
}

impl From<Comparison> for DeviceOpKind {
    fn from(c: Comparison) -> Self {
        DeviceOpKind::Compare(c)
    }
}

impl From<Reduction> for DeviceOpKind {
    fn from(r: Reduction) -> Self {
        DeviceOpKind::Reduce(r)
    }
}

impl From<Movement> for DeviceOpKind {
    fn from(m: Movement) -> Self {
        DeviceOpKind::Movement(m)
    }
}

impl fmt::Display for DeviceOpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Serialized as its name, so snapshot data keeps `"op": "add"`.
impl Serialize for DeviceOpKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for DeviceOpKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        DeviceOpKind::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown device op '{name}'")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The category tables as they were written before the kinds were a type.
    const OLD_POINTWISE: &[&str] = &[
        "abs",
        "add",
        "sub",
        "mul",
        "realdiv",
        "neg",
        "exp",
        "log",
        "sqrt",
        "rsqrt",
        "reciprocal",
        "tanh",
        "sigmoid",
        "relu",
        "gelu",
        "silu",
        "softplus",
        "floor",
        "maximum",
        "minimum",
        "to_dtype",
        "equal",
        "greater",
        "lesser",
        "where",
    ];
    const OLD_MOVEMENT: &[&str] = &[
        "reshape",
        "transpose",
        "expand",
        "slice",
        "concat",
        "restickify",
        "gather",
    ];
    const OLD_REDUCTIONS: &[&str] = &["max", "sum", "mean", "min"];
    const OLD_ROW_OPS: &[&str] = &["topk"];
    const OLD_TYPED_POINTWISE: &[&str] = &["to_dtype", "equal", "greater", "lesser", "where"];

    fn names(pred: impl Fn(DeviceOpKind) -> bool) -> BTreeSet<&'static str> {
        DeviceOpKind::all()
            .filter(|&k| pred(k))
            .map(|k| k.name())
            .collect()
    }

    #[test]
    fn every_name_round_trips_and_is_unique() {
        let all: Vec<DeviceOpKind> = DeviceOpKind::all().collect();
        let unique: BTreeSet<&str> = all.iter().map(|k| k.name()).collect();
        assert_eq!(unique.len(), all.len(), "two kinds share a name");
        for k in all {
            assert_eq!(DeviceOpKind::from_name(k.name()), Some(k));
            assert_eq!(k.to_string(), k.name());
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()));
            assert_eq!(serde_json::from_str::<DeviceOpKind>(&json).unwrap(), k);
        }
        assert_eq!(DeviceOpKind::from_name("Add"), None);
        assert!(serde_json::from_str::<DeviceOpKind>("\"nope\"").is_err());
    }

    /// Each op the old tables named is still a kind, in the same category and no other.
    /// (Kinds added since are free: the old tables are the record, not a list to extend.)
    #[test]
    fn categories_agree_with_the_old_tables() {
        type Pred = fn(DeviceOpKind) -> bool;
        let tables: [(&[&str], Pred); 6] = [
            (OLD_POINTWISE, DeviceOpKind::is_pointwise),
            (OLD_MOVEMENT, DeviceOpKind::is_movement),
            (OLD_REDUCTIONS, DeviceOpKind::is_reduction),
            (OLD_ROW_OPS, DeviceOpKind::is_row_op),
            (&["batchmatmul"], DeviceOpKind::is_matmul),
            (OLD_TYPED_POINTWISE, DeviceOpKind::is_typed_pointwise),
        ];
        let old: BTreeSet<&str> = tables[..5]
            .iter()
            .flat_map(|(t, _)| t.iter().copied())
            .collect();
        for name in &old {
            let kind = DeviceOpKind::from_name(name).unwrap_or_else(|| panic!("{name} is gone"));
            for (table, pred) in &tables {
                assert_eq!(pred(kind), table.contains(name), "{name}");
            }
        }
        // The old tables plus batchmatmul were the whole op set, each op in one table.
        let listed: usize = tables[..5].iter().map(|(t, _)| t.len()).sum();
        assert_eq!(listed, old.len(), "an op is in two old tables");
        assert!(old.iter().all(|n| names(|_| true).contains(n)));
    }

    #[test]
    fn ktir_names_are_those_the_lowering_wrote() {
        let old: &[(&str, &str)] = &[
            ("add", "arith.addf"),
            ("sub", "arith.subf"),
            ("mul", "arith.mulf"),
            ("realdiv", "arith.divf"),
            ("maximum", "arith.maximumf"),
            ("minimum", "arith.minimumf"),
            ("neg", "arith.negf"),
            ("exp", "math.exp"),
            ("log", "math.log"),
            ("sqrt", "math.sqrt"),
            ("rsqrt", "math.rsqrt"),
            ("tanh", "math.tanh"),
            ("abs", "math.absf"),
        ];
        for (name, ktir) in old {
            let kind = DeviceOpKind::from_name(name).unwrap();
            assert_eq!(
                kind.ktir_elementwise().map(|o| o.name()),
                Some(*ktir),
                "{name}"
            );
        }
        // Composed in the lowering from several ops, or not lowered.
        for name in ["reciprocal", "sigmoid", "relu", "gelu", "silu", "softplus"] {
            let kind = DeviceOpKind::from_name(name).unwrap();
            assert_eq!(kind.ktir_elementwise(), None, "{name}");
        }
        let combiners: Vec<(&str, &str)> = Reduction::ALL
            .iter()
            .map(|r| (r.name(), r.combiner().ktir_elementwise().name()))
            .collect();
        assert_eq!(
            combiners,
            [
                ("max", "arith.maximumf"),
                ("sum", "arith.addf"),
                ("mean", "arith.addf"),
                ("min", "arith.minimumf"),
                ("prod", "arith.mulf")
            ]
        );
    }
}
