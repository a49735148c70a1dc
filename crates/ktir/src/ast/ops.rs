//! The typed identities of KTIR's value ops: elementwise arithmetic, named linalg ops and
//! comparison predicates. Each is defined once here; the parser and printer convert to and
//! from their MLIR spelling, the verifier checks operands against [`ElementwiseOp::arity`]
//! and [`ElementwiseOp::kind`], and the simulator gives each variant its semantics with an
//! exhaustive `match`.

/// The element types an elementwise op accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemKind {
    /// Floating-point elements only.
    Float,
    /// Integer or `index` elements only.
    Int,
    /// Any element type (the named linalg ops, which follow their operands).
    Any,
}

/// How the vector unit charges an elementwise op per element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CostClass {
    /// One ALU pass per element.
    Simple,
    /// A transcendental function, charged `transcendental_cost_factor` times more.
    Transcendental,
}

/// Defines [`ElementwiseOp`] and its per-variant facts from one table, so adding an op is
/// one row here (plus its semantics in the simulator).
macro_rules! elementwise_ops {
    ($($variant:ident = $name:literal, $arity:literal, $kind:ident, $cost:ident;)*) => {
        /// An elementwise op: `arith.*` and `math.*` ops written `name %a[, %b[, %c]] : T`,
        /// and the elementwise named linalg ops (`linalg.add`, ..., `linalg.copy`) written
        /// with `ins(..) outs(..)` (see [`ElementwiseOp::is_linalg`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ElementwiseOp {
            $(#[doc = concat!("`", $name, "`")] $variant,)*
        }

        impl ElementwiseOp {
            /// Every elementwise op.
            pub const ALL: &'static [ElementwiseOp] = &[$(ElementwiseOp::$variant,)*];

            /// The MLIR op name.
            pub fn name(self) -> &'static str {
                match self {
                    $(ElementwiseOp::$variant => $name,)*
                }
            }

            /// The op an MLIR name stands for.
            pub fn from_name(name: &str) -> Option<ElementwiseOp> {
                match name {
                    $($name => Some(ElementwiseOp::$variant),)*
                    _ => None,
                }
            }

            /// Number of operands (inputs, for the linalg form).
            pub fn arity(self) -> usize {
                match self {
                    $(ElementwiseOp::$variant => $arity,)*
                }
            }

            /// The element types the op accepts.
            pub fn kind(self) -> ElemKind {
                match self {
                    $(ElementwiseOp::$variant => ElemKind::$kind,)*
                }
            }

            /// How the vector unit charges the op.
            pub fn cost(self) -> CostClass {
                match self {
                    $(ElementwiseOp::$variant => CostClass::$cost,)*
                }
            }
        }
    };
}

elementwise_ops! {
    AddF = "arith.addf", 2, Float, Simple;
    SubF = "arith.subf", 2, Float, Simple;
    MulF = "arith.mulf", 2, Float, Simple;
    DivF = "arith.divf", 2, Float, Simple;
    MaximumF = "arith.maximumf", 2, Float, Simple;
    MinimumF = "arith.minimumf", 2, Float, Simple;
    RemF = "arith.remf", 2, Float, Simple;
    MaxNumF = "arith.maxnumf", 2, Float, Simple;
    MinNumF = "arith.minnumf", 2, Float, Simple;
    NegF = "arith.negf", 1, Float, Simple;
    AddI = "arith.addi", 2, Int, Simple;
    SubI = "arith.subi", 2, Int, Simple;
    MulI = "arith.muli", 2, Int, Simple;
    DivSI = "arith.divsi", 2, Int, Simple;
    RemSI = "arith.remsi", 2, Int, Simple;
    FloorDivSI = "arith.floordivsi", 2, Int, Simple;
    CeilDivSI = "arith.ceildivsi", 2, Int, Simple;
    MaxSI = "arith.maxsi", 2, Int, Simple;
    MinSI = "arith.minsi", 2, Int, Simple;
    AndI = "arith.andi", 2, Int, Simple;
    OrI = "arith.ori", 2, Int, Simple;
    XorI = "arith.xori", 2, Int, Simple;
    ShlI = "arith.shli", 2, Int, Simple;
    ShrSI = "arith.shrsi", 2, Int, Simple;
    ShrUI = "arith.shrui", 2, Int, Simple;
    DivUI = "arith.divui", 2, Int, Simple;
    RemUI = "arith.remui", 2, Int, Simple;
    CeilDivUI = "arith.ceildivui", 2, Int, Simple;
    MaxUI = "arith.maxui", 2, Int, Simple;
    MinUI = "arith.minui", 2, Int, Simple;
    PowF = "math.powf", 2, Float, Transcendental;
    Atan2 = "math.atan2", 2, Float, Transcendental;
    CopySign = "math.copysign", 2, Float, Simple;
    Fma = "math.fma", 3, Float, Simple;
    Exp = "math.exp", 1, Float, Transcendental;
    Exp2 = "math.exp2", 1, Float, Transcendental;
    Expm1 = "math.expm1", 1, Float, Transcendental;
    Log = "math.log", 1, Float, Transcendental;
    Log2 = "math.log2", 1, Float, Transcendental;
    Log10 = "math.log10", 1, Float, Transcendental;
    Log1p = "math.log1p", 1, Float, Transcendental;
    Sqrt = "math.sqrt", 1, Float, Transcendental;
    Rsqrt = "math.rsqrt", 1, Float, Transcendental;
    Tanh = "math.tanh", 1, Float, Transcendental;
    AbsF = "math.absf", 1, Float, Simple;
    Erf = "math.erf", 1, Float, Transcendental;
    Sin = "math.sin", 1, Float, Transcendental;
    Cos = "math.cos", 1, Float, Transcendental;
    Tan = "math.tan", 1, Float, Transcendental;
    Atan = "math.atan", 1, Float, Transcendental;
    Sinh = "math.sinh", 1, Float, Transcendental;
    Cosh = "math.cosh", 1, Float, Transcendental;
    Cbrt = "math.cbrt", 1, Float, Transcendental;
    Floor = "math.floor", 1, Float, Simple;
    Ceil = "math.ceil", 1, Float, Simple;
    Round = "math.round", 1, Float, Simple;
    RoundEven = "math.roundeven", 1, Float, Simple;
    Trunc = "math.trunc", 1, Float, Simple;
    AbsI = "math.absi", 1, Int, Simple;
    LinalgAdd = "linalg.add", 2, Any, Simple;
    LinalgSub = "linalg.sub", 2, Any, Simple;
    LinalgMul = "linalg.mul", 2, Any, Simple;
    LinalgDiv = "linalg.div", 2, Any, Simple;
    LinalgMax = "linalg.max", 2, Any, Simple;
    LinalgMin = "linalg.min", 2, Any, Simple;
    LinalgPowF = "linalg.powf", 2, Any, Transcendental;
    LinalgExp = "linalg.exp", 1, Any, Transcendental;
    LinalgLog = "linalg.log", 1, Any, Transcendental;
    LinalgAbs = "linalg.abs", 1, Any, Simple;
    LinalgNegF = "linalg.negf", 1, Any, Simple;
    LinalgSqrt = "linalg.sqrt", 1, Any, Transcendental;
    LinalgRsqrt = "linalg.rsqrt", 1, Any, Transcendental;
    LinalgTanh = "linalg.tanh", 1, Any, Transcendental;
    LinalgErf = "linalg.erf", 1, Any, Transcendental;
    LinalgFloor = "linalg.floor", 1, Any, Simple;
    LinalgCeil = "linalg.ceil", 1, Any, Simple;
    LinalgReciprocal = "linalg.reciprocal", 1, Any, Simple;
    LinalgSquare = "linalg.square", 1, Any, Simple;
    LinalgCopy = "linalg.copy", 1, Any, Simple;
}

impl ElementwiseOp {
    /// Whether the op is a named linalg op (`ins(..) outs(..)` form, carried by
    /// [`crate::OpKind::LinalgNamed`]) rather than an `arith`/`math` op (carried by
    /// [`crate::OpKind::Elementwise`]).
    pub fn is_linalg(self) -> bool {
        self.name().starts_with("linalg.")
    }

    /// The `arith`/`math` op of this name, if it is one (the linalg spellings are not).
    pub fn from_arith_name(name: &str) -> Option<ElementwiseOp> {
        ElementwiseOp::from_name(name).filter(|op| !op.is_linalg())
    }
}

/// A named linalg op without attributes, carried by [`crate::OpKind::LinalgNamed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinalgNamedOp {
    /// An elementwise op applied per element; always one with [`ElementwiseOp::is_linalg`].
    Elementwise(ElementwiseOp),
    /// `linalg.batch_matmul`.
    BatchMatmul,
    /// `linalg.matmul_transpose_a`.
    MatmulTransposeA,
    /// `linalg.matmul_transpose_b`.
    MatmulTransposeB,
    /// `linalg.matvec`.
    Matvec,
    /// `linalg.dot`.
    Dot,
}

impl LinalgNamedOp {
    /// The named ops that are not elementwise, with their MLIR names.
    pub const CONTRACTIONS: &'static [(LinalgNamedOp, &'static str)] = &[
        (LinalgNamedOp::BatchMatmul, "linalg.batch_matmul"),
        (LinalgNamedOp::MatmulTransposeB, "linalg.matmul_transpose_b"),
        (LinalgNamedOp::MatmulTransposeA, "linalg.matmul_transpose_a"),
        (LinalgNamedOp::Matvec, "linalg.matvec"),
        (LinalgNamedOp::Dot, "linalg.dot"),
    ];

    /// The MLIR op name.
    pub fn name(self) -> &'static str {
        match self {
            LinalgNamedOp::Elementwise(op) => op.name(),
            LinalgNamedOp::BatchMatmul => "linalg.batch_matmul",
            LinalgNamedOp::MatmulTransposeA => "linalg.matmul_transpose_a",
            LinalgNamedOp::MatmulTransposeB => "linalg.matmul_transpose_b",
            LinalgNamedOp::Matvec => "linalg.matvec",
            LinalgNamedOp::Dot => "linalg.dot",
        }
    }

    /// The op an MLIR name stands for.
    pub fn from_name(name: &str) -> Option<LinalgNamedOp> {
        if let Some(op) = ElementwiseOp::from_name(name).filter(|op| op.is_linalg()) {
            return Some(LinalgNamedOp::Elementwise(op));
        }
        Self::CONTRACTIONS
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(op, _)| *op)
    }

    /// Number of inputs (`ins(..)`); there is always one init.
    pub fn inputs(self) -> usize {
        match self {
            LinalgNamedOp::Elementwise(op) => op.arity(),
            _ => 2,
        }
    }
}

/// Defines a comparison predicate enum with its MLIR spellings.
macro_rules! predicates {
    ($(#[$doc:meta])* $enum:ident { $($variant:ident = $name:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $enum {
            $(#[doc = concat!("`", $name, "`")] $variant,)*
        }

        impl $enum {
            /// Every predicate.
            pub const ALL: &'static [$enum] = &[$($enum::$variant,)*];

            /// The MLIR spelling.
            pub fn name(self) -> &'static str {
                match self {
                    $($enum::$variant => $name,)*
                }
            }

            /// The predicate an MLIR spelling stands for.
            pub fn from_name(name: &str) -> Option<$enum> {
                match name {
                    $($name => Some($enum::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

predicates! {
    /// An `arith.cmpf` predicate (`o*` ordered, `u*` unordered: true when either is NaN).
    CmpFPredicate {
        False = "false",
        Oeq = "oeq",
        Ogt = "ogt",
        Oge = "oge",
        Olt = "olt",
        Ole = "ole",
        One = "one",
        Ord = "ord",
        Ueq = "ueq",
        Ugt = "ugt",
        Uge = "uge",
        Ult = "ult",
        Ule = "ule",
        Une = "une",
        Uno = "uno",
        True = "true",
    }
}

predicates! {
    /// An `arith.cmpi` predicate (`s*` signed, `u*` unsigned).
    CmpIPredicate {
        Eq = "eq",
        Ne = "ne",
        Slt = "slt",
        Sle = "sle",
        Sgt = "sgt",
        Sge = "sge",
        Ult = "ult",
        Ule = "ule",
        Ugt = "ugt",
        Uge = "uge",
    }
}

/// The predicate of an `arith.cmpf` or `arith.cmpi`; which op it is follows from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Predicate {
    /// `arith.cmpf`.
    Float(CmpFPredicate),
    /// `arith.cmpi`.
    Int(CmpIPredicate),
}

impl Predicate {
    /// Whether this is an `arith.cmpf` predicate.
    pub fn is_float(self) -> bool {
        matches!(self, Predicate::Float(_))
    }

    /// The spelling of the predicate.
    pub fn name(self) -> &'static str {
        match self {
            Predicate::Float(p) => p.name(),
            Predicate::Int(p) => p.name(),
        }
    }

    /// The compare op's MLIR name.
    pub fn op_name(self) -> &'static str {
        match self {
            Predicate::Float(_) => "arith.cmpf",
            Predicate::Int(_) => "arith.cmpi",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_round_trips_through_its_name() {
        for &op in ElementwiseOp::ALL {
            assert_eq!(ElementwiseOp::from_name(op.name()), Some(op), "{op:?}");
            assert!((1..=3).contains(&op.arity()), "{op:?}");
            // The linalg spellings follow their operands; the others fix the element kind.
            assert_eq!(op.is_linalg(), op.kind() == ElemKind::Any, "{op:?}");
            assert_eq!(
                ElementwiseOp::from_arith_name(op.name()).is_some(),
                !op.is_linalg()
            );
        }
        for &(op, name) in LinalgNamedOp::CONTRACTIONS {
            assert_eq!(op.name(), name);
            assert_eq!(LinalgNamedOp::from_name(name), Some(op));
        }
        for &op in ElementwiseOp::ALL.iter().filter(|o| o.is_linalg()) {
            let named = LinalgNamedOp::Elementwise(op);
            assert_eq!(LinalgNamedOp::from_name(op.name()), Some(named));
            assert_eq!(named.inputs(), op.arity());
        }
        assert_eq!(LinalgNamedOp::from_name("arith.addf"), None);
        assert_eq!(ElementwiseOp::from_name("arith.bogus"), None);
        for &p in CmpFPredicate::ALL {
            assert_eq!(CmpFPredicate::from_name(p.name()), Some(p));
        }
        for &p in CmpIPredicate::ALL {
            assert_eq!(CmpIPredicate::from_name(p.name()), Some(p));
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = ElementwiseOp::ALL.iter().map(|o| o.name()).collect();
        names.extend(LinalgNamedOp::CONTRACTIONS.iter().map(|(_, n)| *n));
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
