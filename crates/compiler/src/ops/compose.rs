//! Graph ops the device has no op for, written as short chains of the ops it has.
//!
//! | graph op | device ops |
//! |---|---|
//! | Pow (constant 2, 0.5, -0.5, 1, -1) | mul, sqrt, rsqrt, copy, reciprocal |
//! | Pow (other) | exp(y log\|x\|), with the sign of a negative base from the parity of an integer y, NaN for a fractional one, and 1 where y = 0 (abs, log, mul, exp, floor, equal, lesser, neg, where) |
//! | LogSoftmax, Softmax (any axis) | transpose (axis last), max, sub, exp, sum, log or realdiv, transpose back |
//! | ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp | abs / mul, sum, sqrt / log; LogSumExp as max + log(sum(exp(x - max))) |
//! | ArgMax, ArgMin | max / min, equal, where over a constant index row, min / max, to_dtype |
//! | Hardmax | ArgMax's steps up to the first index, then equal against the candidate row, where (1, 0), transpose back |
//! | Mod | C fmod as a - trunc(a / b) b (trunc from floor, neg and where; a itself for an infinite b), then for fmod 0 the divisor's sign by an add and where; integers through f32 |
//! | And, Or, Xor, Not | where, equal (on bool) |
//! | LessOrEqual, GreaterOrEqual | lesser / greater, equal, where |
//! | IsNaN, IsInf | equal (x with itself, abs x with inf) |
//! | Sign, Ceil, Round | greater, lesser, where; neg, floor, neg; floor with a tie-to-even fix-up |
//! | Sum, Mean (variadic) | add chain (mul by 1/n) |
//! | Clip | maximum, minimum |
//! | HardSigmoid, HardSwish, LeakyRelu, Elu, Selu, Celu, ThresholdedRelu, PRelu, Softsign, Shrink | mul, add, maximum, minimum, lesser, greater, where, exp, abs, realdiv |
//! | Mish | softplus, tanh, mul |
//! | SwiGlu | silu of A (alpha 1) or A sigmoid(alpha A) (mul, sigmoid, mul), mul by B |
//! | Tan | in f32: Sin's and Cos's steps on the same input, realdiv |
//! | Sinh, Cosh | in f32: (exp x -/+ exp(-x)) / 2 (neg, exp, sub / add, mul) |
//! | Asinh, Acosh, Atanh | in f32: sign(x) log(\|x\| + sqrt(x^2 + 1)); log(x + sqrt(x^2 - 1)); log((1 + x) / (1 - x)) / 2 (abs, mul, add, sub, sqrt, log, realdiv, lesser, neg, where) |
//! | Atan, Asin, Acos | in f32: atan by \|x\| > 1 to 1/\|x\| (pi/2 - atan), two half-angle steps t / (1 + sqrt(1 + t^2)) into [0, 0.2], an odd Taylor polynomial to degree 11, times 4, the sign of x back; asin x = atan(x / sqrt((1 - x)(1 + x))); acos x = 2 atan(sqrt((1 - x) / (1 + x))) (abs, greater, lesser, realdiv, sqrt, mul, add, sub, neg, where) |
//! | Sin, Cos | in f32: range reduction by 2 pi (mul, add, floor, a three-part Cody-Waite subtraction), a fold into [-pi/2, pi/2] (greater, lesser, sub, where; abs for Cos), an odd Taylor polynomial to degree 13 in Horner form (mul, add); to_dtype around it for f16 and bf16 |
//!
//! Each is exact in the arithmetic it uses except where a transcendental is involved (Pow
//! through exp/log: relative error about `|y ln x|` ulps; Elu/Selu/Celu's `exp(x) - 1` loses
//! relative precision near 0 but stays within the absolute tolerance; Sin and Cos: see
//! [`Builder::sine`]).

use super::*;

/// The ops of this module, each with its own rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Composite {
    Pow,
    LogSoftmax,
    ReduceL1,
    ReduceL2,
    ReduceSumSquare,
    ReduceLogSum,
    ReduceLogSumExp,
    ArgMax,
    ArgMin,
    Mod,
    And,
    Or,
    Xor,
    Not,
    LessOrEqual,
    GreaterOrEqual,
    IsNaN,
    IsInf,
    Sign,
    Ceil,
    Round,
    Sum,
    Mean,
    Clip,
    HardSigmoid,
    HardSwish,
    LeakyRelu,
    Elu,
    Selu,
    Celu,
    ThresholdedRelu,
    PRelu,
    Softsign,
    Shrink,
    Sin,
    Cos,
    Tan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Asin,
    Acos,
    Atan,
    Hardmax,
    Mish,
    SwiGlu,
}

/// Graph op names of the composites.
pub const COMPOSITES: &[(&str, Composite)] = {
    use Composite as C;
    &[
        ("Acos", C::Acos),
        ("Acosh", C::Acosh),
        ("And", C::And),
        ("ArgMax", C::ArgMax),
        ("ArgMin", C::ArgMin),
        ("Asin", C::Asin),
        ("Asinh", C::Asinh),
        ("Atan", C::Atan),
        ("Atanh", C::Atanh),
        ("Ceil", C::Ceil),
        ("Celu", C::Celu),
        ("Clip", C::Clip),
        ("Cos", C::Cos),
        ("Cosh", C::Cosh),
        ("Elu", C::Elu),
        ("GreaterOrEqual", C::GreaterOrEqual),
        ("HardSigmoid", C::HardSigmoid),
        ("Hardmax", C::Hardmax),
        ("HardSwish", C::HardSwish),
        ("IsInf", C::IsInf),
        ("IsNaN", C::IsNaN),
        ("LeakyRelu", C::LeakyRelu),
        ("LessOrEqual", C::LessOrEqual),
        ("LogSoftmax", C::LogSoftmax),
        ("Mean", C::Mean),
        ("Mish", C::Mish),
        ("Mod", C::Mod),
        ("Not", C::Not),
        ("Or", C::Or),
        ("PRelu", C::PRelu),
        ("Pow", C::Pow),
        ("ReduceL1", C::ReduceL1),
        ("ReduceL2", C::ReduceL2),
        ("ReduceLogSum", C::ReduceLogSum),
        ("ReduceLogSumExp", C::ReduceLogSumExp),
        ("ReduceSumSquare", C::ReduceSumSquare),
        ("Round", C::Round),
        ("Selu", C::Selu),
        ("Shrink", C::Shrink),
        ("Sign", C::Sign),
        ("Sin", C::Sin),
        ("Sinh", C::Sinh),
        ("Softsign", C::Softsign),
        ("Sum", C::Sum),
        ("SwiGlu", C::SwiGlu),
        ("Tan", C::Tan),
        ("ThresholdedRelu", C::ThresholdedRelu),
        ("Xor", C::Xor),
    ]
};

/// What [`Builder::extreme_index`] leaves: the transpose that moved the axis last, each
/// element's index where it is an extreme (else the miss value), and the picked index.
struct ExtremeIndex {
    perm: Vec<usize>,
    candidates: String,
    index: String,
}

fn with_dtype(t: &TensorType, dtype: DType) -> TensorType {
    TensorType {
        dtype,
        shape: t.shape.clone(),
    }
}

impl Builder<'_> {
    /// A one-element constant of `dtype` (it broadcasts against anything).
    pub(super) fn scalar(&mut self, step: &str, dtype: DType, v: f32) -> String {
        self.constant(
            step,
            TensorType {
                dtype,
                shape: vec![1],
            },
            graph::InitSpec::Constant(v),
        )
    }

    /// One elementwise step whose result has type `ty`: into `out` when given, else into
    /// a new `node/step`.
    pub(super) fn ew(
        &mut self,
        step: &str,
        kind: impl Into<DeviceOpKind>,
        inputs: Vec<String>,
        ty: &TensorType,
        out: Option<String>,
    ) -> String {
        let y = self.target(step, ty.clone(), out);
        self.push(
            Some(step),
            kind,
            inputs,
            y.clone(),
            pointwise_iteration(&ty.shape),
        );
        y
    }

    /// `x sigmoid(alpha x)` with the node's `alpha` (default 1), of type `ty`, into `out`
    /// when given: the device's silu at alpha 1, else mul, sigmoid, mul.
    pub(super) fn swish(
        &mut self,
        x: String,
        ty: &TensorType,
        out: Option<String>,
    ) -> Result<String, CompileError> {
        let alpha = self.float_attr("alpha", 1.0)?;
        if alpha == 1.0 {
            return Ok(self.ew("silu", Unary::Silu, vec![x], ty, out));
        }
        let a = self.scalar("alpha", ty.dtype, alpha);
        let ax = self.ew("alpha_x", Binary::Mul, vec![x.clone(), a], ty, None);
        let s = self.ew("sigmoid", Unary::Sigmoid, vec![ax], ty, None);
        Ok(self.ew("swish", Binary::Mul, vec![x, s], ty, out))
    }

    /// `y = a op b (op c ...)` on integer tensors, which the device's arithmetic does not
    /// take: the operands converted to f32, the op (a chain, left to right, for variadic
    /// Max and Min), Div truncated toward zero, and the result converted back. Exact while
    /// every operand and result is below 2^24 in magnitude (2^22 for Div, whose rounded
    /// quotient must not reach the next integer).
    pub(super) fn integer_binary(
        &mut self,
        kind: Binary,
        inputs: Vec<String>,
        y: String,
    ) -> Result<(), CompileError> {
        let yt = self.ty(&y)?;
        let ft = with_dtype(&yt, DType::F32);
        let mut floats = Vec::with_capacity(inputs.len());
        for (i, x) in inputs.into_iter().enumerate() {
            let xt = with_dtype(&self.ty(&x)?, DType::F32);
            floats.push(self.ew(
                &format!("in{i}_f32"),
                DeviceOpKind::ToDtype,
                vec![x],
                &xt,
                None,
            ));
        }
        let mut rest = floats.into_iter();
        let mut acc = rest
            .next()
            .ok_or_else(|| self.err(format!("{} needs inputs", self.node.op)))?;
        for (i, rhs) in rest.enumerate() {
            acc = self.ew(
                &format!("{}_{}", kind.name(), i + 1),
                kind,
                vec![acc, rhs],
                &ft,
                None,
            );
        }
        if kind == Binary::RealDiv {
            // trunc q = floor q for q >= 0, else -floor(-q).
            let down = self.ew("floor", Unary::Floor, vec![acc.clone()], &ft, None);
            let neg = self.ew("neg", Unary::Neg, vec![acc.clone()], &ft, None);
            let neg_down = self.ew("neg_floor", Unary::Floor, vec![neg], &ft, None);
            let up = self.ew("ceil", Unary::Neg, vec![neg_down], &ft, None);
            let zero = self.scalar("zero", DType::F32, 0.0);
            let bt = with_dtype(&yt, DType::Bool);
            let below = self.ew("negative", Comparison::Lesser, vec![acc, zero], &bt, None);
            acc = self.ew(
                "trunc",
                DeviceOpKind::Where,
                vec![below, up, down],
                &ft,
                None,
            );
        }
        self.ew("to_int", DeviceOpKind::ToDtype, vec![acc], &yt, Some(y));
        Ok(())
    }

    /// A copy of `x` into `y` (a reshape to the same shape).
    pub(super) fn copy(&mut self, x: String, y: String) -> Result<(), CompileError> {
        self.push_movement("copy", Movement::Reshape, x, y, &[])
    }

    /// The single value of a constant initializer `name`, if it is one.
    fn constant_value(&self, name: &str) -> Option<f32> {
        let init = self.c.graph.initializers.iter().find(|i| i.name == name)?;
        match &init.init {
            graph::InitSpec::Constant(v) => Some(*v),
            graph::InitSpec::Zeros => Some(0.0),
            graph::InitSpec::Ones => Some(1.0),
            graph::InitSpec::Data(d) if !d.is_empty() && d.iter().all(|v| *v == d[0]) => Some(d[0]),
            _ => None,
        }
    }

    pub(super) fn composite(&mut self, op: Composite) -> Result<(), CompileError> {
        use Composite as C;
        match op {
            C::Pow => self.pow(),
            C::LogSoftmax => self.softmax(true),
            C::ReduceL1
            | C::ReduceL2
            | C::ReduceSumSquare
            | C::ReduceLogSum
            | C::ReduceLogSumExp => self.reduce_composite(op),
            C::ArgMax => self.arg_extreme(true),
            C::Hardmax => self.hardmax(),
            C::ArgMin => self.arg_extreme(false),
            C::Mod => self.modulo(),
            C::And | C::Or | C::Xor => self.logic(op),
            C::Not => {
                let (x, y) = (self.input(0)?, self.output()?);
                let yt = self.ty(&y)?;
                let f = self.scalar("false", DType::Bool, 0.0);
                self.ew("not", Comparison::Equal, vec![x, f], &yt, Some(y));
                Ok(())
            }
            C::LessOrEqual | C::GreaterOrEqual => {
                let (a, b, y) = (self.input(0)?, self.input(1)?, self.output()?);
                let yt = self.ty(&y)?;
                let strict = if op == C::LessOrEqual {
                    Comparison::Lesser
                } else {
                    Comparison::Greater
                };
                let s = self.ew("strict", strict, vec![a.clone(), b.clone()], &yt, None);
                let e = self.ew("equal", Comparison::Equal, vec![a, b], &yt, None);
                let t = self.scalar("true", DType::Bool, 1.0);
                self.ew("either", DeviceOpKind::Where, vec![s, t, e], &yt, Some(y));
                Ok(())
            }
            C::IsNaN => {
                let (x, y) = (self.input(0)?, self.output()?);
                let yt = self.ty(&y)?;
                let same = self.ew("same", Comparison::Equal, vec![x.clone(), x], &yt, None);
                let f = self.scalar("false", DType::Bool, 0.0);
                self.ew("nan", Comparison::Equal, vec![same, f], &yt, Some(y));
                Ok(())
            }
            C::IsInf => {
                let (x, y) = (self.input(0)?, self.output()?);
                let (xt, yt) = (self.ty(&x)?, self.ty(&y)?);
                let neg = self.int_attr("detect_negative", 1)? != 0;
                let pos = self.int_attr("detect_positive", 1)? != 0;
                let (v, limit, cmp) = match (neg, pos) {
                    (true, true) => (
                        self.ew("abs", Unary::Abs, vec![x], &xt, None),
                        f32::INFINITY,
                        Comparison::Equal,
                    ),
                    (false, true) => (x, f32::INFINITY, Comparison::Equal),
                    (true, false) => (x, f32::NEG_INFINITY, Comparison::Equal),
                    // Nothing is below -inf: all false.
                    (false, false) => (x, f32::NEG_INFINITY, Comparison::Lesser),
                };
                let l = self.scalar("inf", xt.dtype, limit);
                self.ew("inf_test", cmp, vec![v, l], &yt, Some(y));
                Ok(())
            }
            C::Sign => {
                let (x, y) = (self.input(0)?, self.output()?);
                let yt = self.ty(&y)?;
                let bt = with_dtype(&yt, DType::Bool);
                let zero = self.scalar("zero", yt.dtype, 0.0);
                let pos = self.ew(
                    "positive",
                    Comparison::Greater,
                    vec![x.clone(), zero.clone()],
                    &bt,
                    None,
                );
                let neg = self.ew(
                    "negative",
                    Comparison::Lesser,
                    vec![x.clone(), zero],
                    &bt,
                    None,
                );
                let (one, minus) = (
                    self.scalar("one", yt.dtype, 1.0),
                    self.scalar("minus_one", yt.dtype, -1.0),
                );
                // Zero and NaN stay as they are.
                let t = self.ew("below", DeviceOpKind::Where, vec![neg, minus, x], &yt, None);
                self.ew("sign", DeviceOpKind::Where, vec![pos, one, t], &yt, Some(y));
                Ok(())
            }
            C::Ceil => {
                let (x, y) = (self.input(0)?, self.output()?);
                let yt = self.ty(&y)?;
                let n = self.ew("neg", Unary::Neg, vec![x], &yt, None);
                let f = self.ew("floor", Unary::Floor, vec![n], &yt, None);
                self.ew("ceil", Unary::Neg, vec![f], &yt, Some(y));
                Ok(())
            }
            C::Round => self.round(),
            C::Sin
            | C::Cos
            | C::Tan
            | C::Sinh
            | C::Cosh
            | C::Asinh
            | C::Acosh
            | C::Atanh
            | C::Asin
            | C::Acos
            | C::Atan => self.in_f32(op),
            C::Mish => {
                let (x, y) = (self.input(0)?, self.output()?);
                let yt = self.ty(&y)?;
                let sp = self.ew("softplus", Unary::Softplus, vec![x.clone()], &yt, None);
                let t = self.ew("tanh", Unary::Tanh, vec![sp], &yt, None);
                self.ew("mish", Binary::Mul, vec![x, t], &yt, Some(y));
                Ok(())
            }
            C::SwiGlu => {
                let (a, b, y) = (self.input(0)?, self.input(1)?, self.output()?);
                let yt = self.ty(&y)?;
                let gate = self.swish(a, &yt, None)?;
                self.ew("swiglu", Binary::Mul, vec![gate, b], &yt, Some(y));
                Ok(())
            }
            C::Sum | C::Mean => self.sum_mean(op == C::Mean),
            C::Clip => self.clip(),
            C::HardSigmoid | C::HardSwish => {
                let (x, y) = (self.input(0)?, self.output()?);
                let yt = self.ty(&y)?;
                let (alpha, beta) = if op == C::HardSwish {
                    (1.0 / 6.0, 0.5)
                } else {
                    (
                        self.float_attr("alpha", 0.2)?,
                        self.float_attr("beta", 0.5)?,
                    )
                };
                let a = self.scalar("alpha", yt.dtype, alpha);
                let b = self.scalar("beta", yt.dtype, beta);
                let (zero, one) = (
                    self.scalar("zero", yt.dtype, 0.0),
                    self.scalar("one", yt.dtype, 1.0),
                );
                let t = self.ew("scale", Binary::Mul, vec![x.clone(), a], &yt, None);
                let u = self.ew("shift", Binary::Add, vec![t, b], &yt, None);
                let v = self.ew("floor_zero", Binary::Maximum, vec![u, zero], &yt, None);
                if op == C::HardSwish {
                    let h = self.ew("cap_one", Binary::Minimum, vec![v, one], &yt, None);
                    self.ew("gate", Binary::Mul, vec![x, h], &yt, Some(y));
                } else {
                    self.ew("cap_one", Binary::Minimum, vec![v, one], &yt, Some(y));
                }
                Ok(())
            }
            C::LeakyRelu | C::PRelu => {
                let (x, y) = (self.input(0)?, self.output()?);
                let yt = self.ty(&y)?;
                let slope = if op == C::PRelu {
                    self.input(1)?
                } else {
                    let a = self.float_attr("alpha", 0.01)?;
                    self.scalar("alpha", yt.dtype, a)
                };
                let zero = self.scalar("zero", yt.dtype, 0.0);
                let bt = with_dtype(&yt, DType::Bool);
                let n = self.ew(
                    "negative",
                    Comparison::Lesser,
                    vec![x.clone(), zero],
                    &bt,
                    None,
                );
                let s = self.ew("scaled", Binary::Mul, vec![x.clone(), slope], &yt, None);
                self.ew("select", DeviceOpKind::Where, vec![n, s, x], &yt, Some(y));
                Ok(())
            }
            C::Elu | C::Selu | C::Celu => {
                let (x, y) = (self.input(0)?, self.output()?);
                let yt = self.ty(&y)?;
                let (alpha, gamma) = match op {
                    C::Selu => (
                        self.float_attr("alpha", 1.673_263_2)?,
                        self.float_attr("gamma", 1.050_701)?,
                    ),
                    _ => (self.float_attr("alpha", 1.0)?, 1.0),
                };
                let zero = self.scalar("zero", yt.dtype, 0.0);
                let bt = with_dtype(&yt, DType::Bool);
                let p = self.ew(
                    "positive",
                    Comparison::Greater,
                    vec![x.clone(), zero],
                    &bt,
                    None,
                );
                // Celu is alpha (exp(x / alpha) - 1) below zero.
                let arg = if op == C::Celu {
                    let inv = self.scalar("inv_alpha", yt.dtype, 1.0 / alpha);
                    self.ew("over_alpha", Binary::Mul, vec![x.clone(), inv], &yt, None)
                } else {
                    x.clone()
                };
                let e = self.ew("exp", Unary::Exp, vec![arg], &yt, None);
                let one = self.scalar("one", yt.dtype, 1.0);
                let em = self.ew("expm1", Binary::Sub, vec![e, one], &yt, None);
                let a = self.scalar("alpha", yt.dtype, alpha);
                let s = self.ew("scaled", Binary::Mul, vec![em, a], &yt, None);
                if op == C::Selu {
                    let t = self.ew("select", DeviceOpKind::Where, vec![p, x, s], &yt, None);
                    let g = self.scalar("gamma", yt.dtype, gamma);
                    self.ew("gamma_scale", Binary::Mul, vec![t, g], &yt, Some(y));
                } else {
                    self.ew("select", DeviceOpKind::Where, vec![p, x, s], &yt, Some(y));
                }
                Ok(())
            }
            C::ThresholdedRelu => {
                let (x, y) = (self.input(0)?, self.output()?);
                let yt = self.ty(&y)?;
                let alpha = self.float_attr("alpha", 1.0)?;
                let a = self.scalar("alpha", yt.dtype, alpha);
                let zero = self.scalar("zero", yt.dtype, 0.0);
                let bt = with_dtype(&yt, DType::Bool);
                let p = self.ew("above", Comparison::Greater, vec![x.clone(), a], &bt, None);
                self.ew(
                    "select",
                    DeviceOpKind::Where,
                    vec![p, x, zero],
                    &yt,
                    Some(y),
                );
                Ok(())
            }
            C::Softsign => {
                let (x, y) = (self.input(0)?, self.output()?);
                let yt = self.ty(&y)?;
                let a = self.ew("abs", Unary::Abs, vec![x.clone()], &yt, None);
                let one = self.scalar("one", yt.dtype, 1.0);
                let d = self.ew("denominator", Binary::Add, vec![a, one], &yt, None);
                self.ew("softsign", Binary::RealDiv, vec![x, d], &yt, Some(y));
                Ok(())
            }
            C::Shrink => {
                let (x, y) = (self.input(0)?, self.output()?);
                let yt = self.ty(&y)?;
                let lambd = self.float_attr("lambd", 0.5)?;
                let bias = self.float_attr("bias", 0.0)?;
                let bt = with_dtype(&yt, DType::Bool);
                let (lo, hi) = (
                    self.scalar("minus_lambd", yt.dtype, -lambd),
                    self.scalar("lambd", yt.dtype, lambd),
                );
                let below = self.ew("below", Comparison::Lesser, vec![x.clone(), lo], &bt, None);
                let above = self.ew("above", Comparison::Greater, vec![x.clone(), hi], &bt, None);
                let (pb, mb, zero) = (
                    self.scalar("plus_bias", yt.dtype, bias),
                    self.scalar("minus_bias", yt.dtype, -bias),
                    self.scalar("zero", yt.dtype, 0.0),
                );
                let up = self.ew("up", Binary::Add, vec![x.clone(), pb], &yt, None);
                let down = self.ew("down", Binary::Add, vec![x, mb], &yt, None);
                let t = self.ew(
                    "above_select",
                    DeviceOpKind::Where,
                    vec![above, down, zero],
                    &yt,
                    None,
                );
                self.ew(
                    "select",
                    DeviceOpKind::Where,
                    vec![below, up, t],
                    &yt,
                    Some(y),
                );
                Ok(())
            }
        }
    }

    /// Pow: the cheap exponents as their own ops, others through exp and log.
    fn pow(&mut self) -> Result<(), CompileError> {
        let (x, e, y) = (self.input(0)?, self.input(1)?, self.output()?);
        let (yt, et) = (self.ty(&y)?, self.ty(&e)?);
        let exponent = self.constant_value(&e);
        // The cheap exponents: one op each.
        let cheap: &[(f32, &str, DeviceOpKind)] = &[
            (2.0, "square", DeviceOpKind::Binary(Binary::Mul)),
            (0.5, "sqrt", DeviceOpKind::Unary(Unary::Sqrt)),
            (-0.5, "rsqrt", DeviceOpKind::Unary(Unary::Rsqrt)),
            (-1.0, "reciprocal", DeviceOpKind::Unary(Unary::Reciprocal)),
        ];
        if let Some(&(_, step, kind)) = cheap.iter().find(|c| exponent == Some(c.0)) {
            let inputs = if step == "square" {
                vec![x.clone(), x]
            } else {
                vec![x]
            };
            self.ew(step, kind, inputs, &yt, Some(y));
            return Ok(());
        }
        if exponent == Some(1.0) && self.ty(&x)?.shape == yt.shape {
            return self.copy(x, y);
        }
        let dt = yt.dtype;
        let bt = with_dtype(&yt, DType::Bool);
        // The exponent in the base's type.
        let e = if et.dtype == dt {
            e
        } else {
            self.ew(
                "exponent",
                DeviceOpKind::ToDtype,
                vec![e],
                &with_dtype(&et, dt),
                None,
            )
        };
        let et = with_dtype(&et, dt);
        let a = self.ew("abs", Unary::Abs, vec![x.clone()], &yt, None);
        let l = self.ew("log", Unary::Log, vec![a], &yt, None);
        let m = self.ew("scaled_log", Binary::Mul, vec![l, e.clone()], &yt, None);
        let r = self.ew("magnitude", Unary::Exp, vec![m], &yt, None);
        // A negative base: the sign from an integer exponent's parity, NaN otherwise.
        let f = self.ew("exponent_floor", Unary::Floor, vec![e.clone()], &et, None);
        let ebt = with_dtype(&et, DType::Bool);
        let integer = self.ew("integer", Comparison::Equal, vec![f, e.clone()], &ebt, None);
        let half = self.scalar("half", dt, 0.5);
        let h = self.ew(
            "half_exponent",
            Binary::Mul,
            vec![e.clone(), half],
            &et,
            None,
        );
        let hf = self.ew("half_floor", Unary::Floor, vec![h.clone()], &et, None);
        let even = self.ew("even", Comparison::Equal, vec![hf, h], &ebt, None);
        let nr = self.ew("negated", Unary::Neg, vec![r.clone()], &yt, None);
        let signed = self.ew(
            "signed",
            DeviceOpKind::Where,
            vec![even, r.clone(), nr],
            &yt,
            None,
        );
        let nan = self.scalar("nan", dt, f32::NAN);
        let neg_base = self.ew(
            "negative_base",
            DeviceOpKind::Where,
            vec![integer, signed, nan],
            &yt,
            None,
        );
        let zero = self.scalar("zero", dt, 0.0);
        let neg = self.ew(
            "base_negative",
            Comparison::Lesser,
            vec![x, zero.clone()],
            &bt,
            None,
        );
        let v = self.ew(
            "value",
            DeviceOpKind::Where,
            vec![neg, neg_base, r],
            &yt,
            None,
        );
        // x^0 is 1 for every x, NaN and 0 included.
        let z = self.ew(
            "exponent_zero",
            Comparison::Equal,
            vec![e, zero],
            &ebt,
            None,
        );
        let one = self.scalar("one", dt, 1.0);
        self.ew("pow", DeviceOpKind::Where, vec![z, one, v], &yt, Some(y));
        Ok(())
    }

    /// `f(moved, out)` on `x` with axis `axis` moved last, its result moved back into `y`.
    fn along_last(
        &mut self,
        x: String,
        y: String,
        axis: usize,
        f: impl FnOnce(&mut Self, String, String) -> Result<(), CompileError>,
    ) -> Result<(), CompileError> {
        let xt = self.ty(&x)?;
        let r = xt.shape.len();
        if r == 0 || axis == r - 1 {
            return f(self, x, y);
        }
        let perm: Vec<usize> = (0..r).filter(|&a| a != axis).chain([axis]).collect();
        let inverse: Vec<usize> = (0..r)
            .map(|a| perm.iter().position(|&p| p == a).unwrap_or(a))
            .collect();
        let moved = self.transposed("axis_last", x, &perm, None)?;
        let yt = self.ty(&y)?;
        let shape: Vec<usize> = perm.iter().map(|&p| yt.shape[p]).collect();
        let out = self.temp(
            "moved_result",
            TensorType {
                dtype: yt.dtype,
                shape,
            },
        );
        f(self, moved, out.clone())?;
        self.transposed("axis_back", out, &inverse, Some(y))?;
        Ok(())
    }

    /// Softmax or LogSoftmax over any axis (moved last when it is not).
    pub(super) fn softmax(&mut self, log: bool) -> Result<(), CompileError> {
        let (x, y) = (self.input(0)?, self.output()?);
        let xt = self.ty(&x)?;
        let rank = xt.shape.len();
        if rank == 0 {
            return Err(self.err(format!("{} of a rank-0 tensor", self.node.op)));
        }
        let axis = self.axis(self.int_attr("axis", -1)?, rank)?;
        self.along_last(x, y, axis, |b, x, y| b.softmax_rows(x, y, log))
    }

    /// Softmax (or its log) of each row: max, sub, exp, sum, then realdiv (or log, sub).
    fn softmax_rows(&mut self, x: String, y: String, log: bool) -> Result<(), CompileError> {
        let xt = self.ty(&x)?;
        let red_t = row_statistic(&xt);
        let full = pointwise_iteration(&xt.shape);
        let rit = reduction_iteration(&xt.shape);
        let m = self.temp("max", red_t.clone());
        self.push(
            Some("max"),
            Reduction::Max,
            vec![x.clone()],
            m.clone(),
            rit.clone(),
        );
        let s = self.temp("sub", xt.clone());
        self.push(
            Some("sub"),
            Binary::Sub,
            vec![x, m],
            s.clone(),
            full.clone(),
        );
        let e = self.temp("exp", xt.clone());
        self.push(
            Some("exp"),
            Unary::Exp,
            vec![s.clone()],
            e.clone(),
            full.clone(),
        );
        let z = self.temp("sum", red_t.clone());
        self.push(Some("sum"), Reduction::Sum, vec![e.clone()], z.clone(), rit);
        if log {
            let lz = self.ew("log", Unary::Log, vec![z], &red_t, None);
            self.push(Some("logsoftmax"), Binary::Sub, vec![s, lz], y, full);
        } else {
            self.push(Some("realdiv"), Binary::RealDiv, vec![e, z], y, full);
        }
        Ok(())
    }

    /// The reductions that are a plain one with steps before or after it.
    fn reduce_composite(&mut self, op: Composite) -> Result<(), CompileError> {
        use Composite as C;
        let (x, y) = (self.input(0)?, self.output()?);
        let (xt, yt) = (self.ty(&x)?, self.ty(&y)?);
        match op {
            C::ReduceL1 | C::ReduceL2 | C::ReduceSumSquare => {
                let pre = if op == C::ReduceL1 {
                    self.ew("abs", Unary::Abs, vec![x], &xt, None)
                } else {
                    self.ew("square", Binary::Mul, vec![x.clone(), x], &xt, None)
                };
                if op == C::ReduceL2 {
                    let s = self.temp("sum_squares", yt.clone());
                    self.reduce_into(Reduction::Sum, pre, s.clone(), None)?;
                    self.ew("sqrt", Unary::Sqrt, vec![s], &yt, Some(y));
                } else {
                    self.reduce_into(Reduction::Sum, pre, y, None)?;
                }
            }
            C::ReduceLogSum => {
                let s = self.temp("sum", yt.clone());
                self.reduce_into(Reduction::Sum, x, s.clone(), None)?;
                self.ew("log", Unary::Log, vec![s], &yt, Some(y));
            }
            _ => {
                // max + log(sum(exp(x - max))), the max kept as a broadcastable row.
                let kept_t = TensorType {
                    dtype: xt.dtype,
                    shape: self.kept_shape(&xt.shape)?,
                };
                let m = self.temp("max", kept_t.clone());
                self.reduce_into(Reduction::Max, x.clone(), m.clone(), Some(true))?;
                let d = self.ew("sub", Binary::Sub, vec![x, m.clone()], &xt, None);
                let e = self.ew("exp", Unary::Exp, vec![d], &xt, None);
                let s = self.temp("sum", kept_t.clone());
                self.reduce_into(Reduction::Sum, e, s.clone(), Some(true))?;
                let l = self.ew("log", Unary::Log, vec![s], &kept_t, None);
                if kept_t.shape == yt.shape {
                    self.ew("add_max", Binary::Add, vec![l, m], &kept_t, Some(y));
                } else {
                    let r = self.ew("add_max", Binary::Add, vec![l, m], &kept_t, None);
                    self.reshaped("result", r, yt.shape.clone(), Some(y))?;
                }
            }
        }
        Ok(())
    }

    /// The node's reduced axes (its `axes`, or all) of a rank-`r` input, sorted.
    fn reduced_axes(&self, r: usize) -> Result<Vec<usize>, CompileError> {
        let mut axes = match self.ints_attr("axes")? {
            Some(v) if !v.is_empty() => v
                .iter()
                .map(|&a| self.axis(a, r))
                .collect::<Result<Vec<_>, _>>()?,
            _ => (0..r).collect(),
        };
        axes.sort_unstable();
        axes.dedup();
        Ok(axes)
    }

    /// `shape` with the node's reduced axes kept with size 1.
    fn kept_shape(&self, shape: &[usize]) -> Result<Vec<usize>, CompileError> {
        let axes = self.reduced_axes(shape.len())?;
        Ok(shape
            .iter()
            .enumerate()
            .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
            .collect())
    }

    /// ArgMax / ArgMin: the row's extreme, where each element equals it, the first (or
    /// last) such index through a min (max) over a constant index row, as integers.
    fn arg_extreme(&mut self, largest: bool) -> Result<(), CompileError> {
        let (x, y) = (self.input(0)?, self.output()?);
        let yt = self.ty(&y)?;
        let r = self.ty(&x)?.shape.len();
        if r == 0 {
            return Err(self.err(format!("{} of a rank-0 tensor", self.node.op)));
        }
        let axis = self.axis(self.int_attr("axis", 0)?, r)?;
        let last = self.int_attr("select_last_index", 0)? != 0;
        let e = self.extreme_index(x, axis, largest, last)?;
        // The reduced axis has size 1 now, so moving it back is a reshape.
        let shaped = self.reshaped("result_shape", e.index, yt.shape.clone(), None)?;
        self.ew(
            "to_index",
            DeviceOpKind::ToDtype,
            vec![shaped],
            &yt,
            Some(y),
        );
        Ok(())
    }

    /// Hardmax: 1 at the first maximum along `axis`, 0 elsewhere; the candidate row of
    /// [`Builder::extreme_index`] equals the first index only there.
    fn hardmax(&mut self) -> Result<(), CompileError> {
        let (x, y) = (self.input(0)?, self.output()?);
        let yt = self.ty(&y)?;
        let r = yt.shape.len();
        if r == 0 {
            return Err(self.err("Hardmax of a rank-0 tensor".to_string()));
        }
        let axis = self.axis(self.int_attr("axis", -1)?, r)?;
        let e = self.extreme_index(x, axis, true, false)?;
        let ct = self.ty(&e.candidates)?;
        let first = self.ew(
            "first",
            Comparison::Equal,
            vec![e.candidates, e.index],
            &with_dtype(&ct, DType::Bool),
            None,
        );
        let (one, zero) = (
            self.scalar("one", yt.dtype, 1.0),
            self.scalar("zero", yt.dtype, 0.0),
        );
        let mut inverse = vec![0; r];
        for (i, &p) in e.perm.iter().enumerate() {
            inverse[p] = i;
        }
        if inverse.iter().enumerate().all(|(i, &p)| i == p) {
            self.ew(
                "one_hot",
                DeviceOpKind::Where,
                vec![first, one, zero],
                &yt,
                Some(y),
            );
        } else {
            let h = self.ew(
                "one_hot",
                DeviceOpKind::Where,
                vec![first, one, zero],
                &with_dtype(&ct, yt.dtype),
                None,
            );
            self.transposed("axis_back", h, &inverse, Some(y))?;
        }
        Ok(())
    }

    /// The index of the first (or last) maximum (or minimum) along `axis`, in f32, with
    /// that axis moved last: the max / min, the positions equal to it, where over a
    /// constant index row (n elsewhere, or -1 for the last), min / max.
    fn extreme_index(
        &mut self,
        x: String,
        axis: usize,
        largest: bool,
        last: bool,
    ) -> Result<ExtremeIndex, CompileError> {
        let r = self.ty(&x)?.shape.len();
        let n = self.ty(&x)?.shape[axis];
        if n > 1 << 24 {
            return Err(self.err(format!(
                "{} over an axis of {n} elements (indices above 2^24 are not exact in f32)",
                self.node.op
            )));
        }
        let perm: Vec<usize> = (0..r).filter(|&a| a != axis).chain([axis]).collect();
        let moved = self.transposed("axis_last", x, &perm, None)?;
        let mt = self.ty(&moved)?;
        let red_t = row_statistic(&mt);
        let rit = reduction_iteration(&mt.shape);
        let extreme = if largest {
            Reduction::Max
        } else {
            Reduction::Min
        };
        let m = self.temp("extreme", red_t.clone());
        self.push(
            Some("extreme"),
            extreme,
            vec![moved.clone()],
            m.clone(),
            rit.clone(),
        );
        let hit = self.ew(
            "hit",
            Comparison::Equal,
            vec![moved, m],
            &with_dtype(&mt, DType::Bool),
            None,
        );
        let index = self.table("index row", 1, n)?;
        let iota = self.constant(
            "indices",
            TensorType {
                dtype: DType::F32,
                shape: vec![n],
            },
            graph::InitSpec::Data((0..index).map(|i| i as f32).collect()),
        );
        let (miss, pick) = if last {
            (-1.0, Reduction::Max)
        } else {
            (n as f32, Reduction::Min)
        };
        let miss = self.scalar("miss", DType::F32, miss);
        let ft = with_dtype(&mt, DType::F32);
        let candidates = self.ew(
            "candidates",
            DeviceOpKind::Where,
            vec![hit, iota, miss],
            &ft,
            None,
        );
        let idx_t = with_dtype(&red_t, DType::F32);
        let idx = self.temp("index", idx_t);
        self.push(
            Some("index"),
            pick,
            vec![candidates.clone()],
            idx.clone(),
            rit,
        );
        Ok(ExtremeIndex {
            perm,
            candidates,
            index: idx,
        })
    }

    /// Mod as the reference computes it: C's fmod `a - trunc(a / b) b` (a for a finite a
    /// and an infinite b), and for fmod 0 a non-zero remainder whose sign differs from b's
    /// moved by b. Integers are converted to f32 and back.
    fn modulo(&mut self) -> Result<(), CompileError> {
        let (a, b, y) = (self.input(0)?, self.input(1)?, self.output()?);
        let yt = self.ty(&y)?;
        let fmod = self.int_attr("fmod", 0)? != 0;
        let integer = !yt.dtype.is_float();
        let ft = with_dtype(&yt, if integer { DType::F32 } else { yt.dtype });
        let bt = with_dtype(&ft, DType::Bool);
        let (a, b) = if integer {
            let (at, btt) = (self.ty(&a)?, self.ty(&b)?);
            (
                self.ew(
                    "a_float",
                    DeviceOpKind::ToDtype,
                    vec![a],
                    &with_dtype(&at, DType::F32),
                    None,
                ),
                self.ew(
                    "b_float",
                    DeviceOpKind::ToDtype,
                    vec![b],
                    &with_dtype(&btt, DType::F32),
                    None,
                ),
            )
        } else {
            (a, b)
        };
        let dt = ft.dtype;
        let zero = self.scalar("zero", dt, 0.0);
        let (fls, tru) = (
            self.scalar("false", DType::Bool, 0.0),
            self.scalar("true", DType::Bool, 1.0),
        );
        let inf = self.scalar("inf", dt, f32::INFINITY);
        // trunc(q) = q < 0 ? -floor(-q) : floor(q)
        let q = self.ew(
            "quotient",
            Binary::RealDiv,
            vec![a.clone(), b.clone()],
            &ft,
            None,
        );
        let fl = self.ew("floor", Unary::Floor, vec![q.clone()], &ft, None);
        let nq = self.ew("neg_quotient", Unary::Neg, vec![q.clone()], &ft, None);
        let nf = self.ew("neg_floor", Unary::Floor, vec![nq], &ft, None);
        let c = self.ew("ceil", Unary::Neg, vec![nf], &ft, None);
        let q_neg = self.ew(
            "q_negative",
            Comparison::Lesser,
            vec![q, zero.clone()],
            &bt,
            None,
        );
        let t = self.ew("trunc", DeviceOpKind::Where, vec![q_neg, c, fl], &ft, None);
        let tb = self.ew("multiple", Binary::Mul, vec![t, b.clone()], &ft, None);
        let r = self.ew("fmod", Binary::Sub, vec![a.clone(), tb], &ft, None);
        // fmod(a, +-inf) is a for a finite a (the quotient's 0 times inf is NaN).
        let abs_b = self.ew("abs_b", Unary::Abs, vec![b.clone()], &ft, None);
        let abs_a = self.ew("abs_a", Unary::Abs, vec![a.clone()], &ft, None);
        let b_inf = self.ew(
            "b_infinite",
            Comparison::Equal,
            vec![abs_b, inf.clone()],
            &bt,
            None,
        );
        let a_fin = self.ew("a_finite", Comparison::Lesser, vec![abs_a, inf], &bt, None);
        let keep_a = self.ew(
            "keep_a",
            DeviceOpKind::Where,
            vec![b_inf, a_fin, fls],
            &bt,
            None,
        );
        let last = |integer: bool, y: &String| if integer { None } else { Some(y.clone()) };
        let r = if fmod {
            self.ew(
                "fmod_inf",
                DeviceOpKind::Where,
                vec![keep_a, a, r],
                &ft,
                last(integer, &y),
            )
        } else {
            let r = self.ew(
                "fmod_inf",
                DeviceOpKind::Where,
                vec![keep_a, a, r],
                &ft,
                None,
            );
            let r_neg = self.ew(
                "r_negative",
                Comparison::Lesser,
                vec![r.clone(), zero.clone()],
                &bt,
                None,
            );
            let b_neg = self.ew(
                "b_negative",
                Comparison::Lesser,
                vec![b.clone(), zero.clone()],
                &bt,
                None,
            );
            let same = self.ew(
                "same_sign",
                Comparison::Equal,
                vec![r_neg, b_neg],
                &bt,
                None,
            );
            let r_zero = self.ew(
                "r_zero",
                Comparison::Equal,
                vec![r.clone(), zero],
                &bt,
                None,
            );
            let keep = self.ew(
                "keep",
                DeviceOpKind::Where,
                vec![r_zero, tru, same],
                &bt,
                None,
            );
            let shifted = self.ew("shifted", Binary::Add, vec![r.clone(), b], &ft, None);
            self.ew(
                "floor_mod",
                DeviceOpKind::Where,
                vec![keep, r, shifted],
                &ft,
                last(integer, &y),
            )
        };
        if integer {
            self.ew("to_integer", DeviceOpKind::ToDtype, vec![r], &yt, Some(y));
        }
        Ok(())
    }

    /// And, Or and Xor on bools, as selects and comparisons.
    fn logic(&mut self, op: Composite) -> Result<(), CompileError> {
        let (a, b, y) = (self.input(0)?, self.input(1)?, self.output()?);
        let yt = self.ty(&y)?;
        match op {
            Composite::And => {
                let f = self.scalar("false", DType::Bool, 0.0);
                self.ew("and", DeviceOpKind::Where, vec![a, b, f], &yt, Some(y));
            }
            Composite::Or => {
                let t = self.scalar("true", DType::Bool, 1.0);
                self.ew("or", DeviceOpKind::Where, vec![a, t, b], &yt, Some(y));
            }
            _ => {
                let e = self.ew("same", Comparison::Equal, vec![a, b], &yt, None);
                let f = self.scalar("false", DType::Bool, 0.0);
                self.ew("xor", Comparison::Equal, vec![e, f], &yt, Some(y));
            }
        }
        Ok(())
    }

    /// Round half to even: floor, then up when the fraction is above a half, and at a half
    /// to the even neighbour; integers (and infinities) stay as they are.
    fn round(&mut self) -> Result<(), CompileError> {
        let (x, y) = (self.input(0)?, self.output()?);
        let yt = self.ty(&y)?;
        let bt = with_dtype(&yt, DType::Bool);
        let dt = yt.dtype;
        let f = self.ew("floor", Unary::Floor, vec![x.clone()], &yt, None);
        let frac = self.ew(
            "fraction",
            Binary::Sub,
            vec![x.clone(), f.clone()],
            &yt,
            None,
        );
        let half = self.scalar("half", dt, 0.5);
        let up = self.ew(
            "above_half",
            Comparison::Greater,
            vec![frac.clone(), half.clone()],
            &bt,
            None,
        );
        let down = self.ew(
            "below_half",
            Comparison::Lesser,
            vec![frac, half.clone()],
            &bt,
            None,
        );
        // f + (f mod 2) is the even one of f and f + 1.
        let h = self.ew("half_floor", Binary::Mul, vec![f.clone(), half], &yt, None);
        let hf = self.ew("half_floor_floor", Unary::Floor, vec![h.clone()], &yt, None);
        let odd_half = self.ew("odd_half", Binary::Sub, vec![h, hf], &yt, None);
        let odd = self.ew(
            "parity",
            Binary::Add,
            vec![odd_half.clone(), odd_half],
            &yt,
            None,
        );
        let tie = self.ew("tie", Binary::Add, vec![f.clone(), odd], &yt, None);
        let one = self.scalar("one", dt, 1.0);
        let next = self.ew("next", Binary::Add, vec![f.clone(), one], &yt, None);
        let t = self.ew(
            "down_or_tie",
            DeviceOpKind::Where,
            vec![down, f.clone(), tie],
            &yt,
            None,
        );
        let r = self.ew("rounded", DeviceOpKind::Where, vec![up, next, t], &yt, None);
        let whole = self.ew("whole", Comparison::Equal, vec![f, x.clone()], &bt, None);
        self.ew(
            "round",
            DeviceOpKind::Where,
            vec![whole, x, r],
            &yt,
            Some(y),
        );
        Ok(())
    }

    /// Sin, Cos, Tan, the hyperbolic functions and their inverses, computed in f32 (f16
    /// and bf16 inputs converted there and the result back, so large intermediates such
    /// as `exp x` or `x^2` do not overflow, and the polynomials keep f32's precision).
    fn in_f32(&mut self, op: Composite) -> Result<(), CompileError> {
        use Composite as C;
        let (x, y) = (self.input(0)?, self.output()?);
        let yt = self.ty(&y)?;
        let ft = with_dtype(&yt, DType::F32);
        let bt = with_dtype(&yt, DType::Bool);
        let narrow = yt.dtype != DType::F32;
        let x = if narrow {
            self.ew("to_f32", DeviceOpKind::ToDtype, vec![x], &ft, None)
        } else {
            x
        };
        let out = if narrow { None } else { Some(y.clone()) };
        let f32_scalar = |b: &mut Self, step: &str, v: f32| b.scalar(step, DType::F32, v);
        let v = match op {
            C::Sin | C::Cos => self.sine(x, op == C::Cos, "", out)?,
            C::Tan => {
                let s = self.sine(x.clone(), false, "sin_", None)?;
                let c = self.sine(x, true, "cos_", None)?;
                self.ew("tan", Binary::RealDiv, vec![s, c], &ft, out)
            }
            C::Sinh | C::Cosh => {
                let e = self.ew("exp", Unary::Exp, vec![x.clone()], &ft, None);
                let n = self.ew("neg", Unary::Neg, vec![x], &ft, None);
                let en = self.ew("exp_neg", Unary::Exp, vec![n], &ft, None);
                let (step, kind) = if op == C::Sinh {
                    ("difference", Binary::Sub)
                } else {
                    ("sum", Binary::Add)
                };
                let d = self.ew(step, kind, vec![e, en], &ft, None);
                let half = f32_scalar(self, "half", 0.5);
                self.ew("halved", Binary::Mul, vec![d, half], &ft, out)
            }
            C::Asinh | C::Acosh => {
                // asinh x = sign(x) log(|x| + sqrt(x^2 + 1)) (odd, and accurate for
                // negative x); acosh x = log(x + sqrt((x - 1)(x + 1))), NaN below 1, where
                // `x - 1` is exact near 1 and `x^2 - 1` would cancel.
                let one = f32_scalar(self, "one", 1.0);
                let (a, r) = if op == C::Asinh {
                    let a = self.ew("abs", Unary::Abs, vec![x.clone()], &ft, None);
                    let sq = self.ew("square", Binary::Mul, vec![a.clone(), a.clone()], &ft, None);
                    (
                        a,
                        self.ew("radicand", Binary::Add, vec![sq, one], &ft, None),
                    )
                } else {
                    let below = self.ew(
                        "minus_one",
                        Binary::Sub,
                        vec![x.clone(), one.clone()],
                        &ft,
                        None,
                    );
                    let above = self.ew("plus_one", Binary::Add, vec![x.clone(), one], &ft, None);
                    (
                        x.clone(),
                        self.ew("radicand", Binary::Mul, vec![below, above], &ft, None),
                    )
                };
                let root = self.ew("root", Unary::Sqrt, vec![r], &ft, None);
                let t = self.ew("argument", Binary::Add, vec![a, root], &ft, None);
                if op == C::Asinh {
                    let l = self.ew("log", Unary::Log, vec![t], &ft, None);
                    let zero = f32_scalar(self, "zero", 0.0);
                    let neg = self.ew("negative", Comparison::Lesser, vec![x, zero], &bt, None);
                    let m = self.ew("minus_log", Unary::Neg, vec![l.clone()], &ft, None);
                    self.ew("signed", DeviceOpKind::Where, vec![neg, m, l], &ft, out)
                } else {
                    self.ew("log", Unary::Log, vec![t], &ft, out)
                }
            }
            C::Atanh => {
                let one = f32_scalar(self, "one", 1.0);
                let p = self.ew(
                    "one_plus",
                    Binary::Add,
                    vec![one.clone(), x.clone()],
                    &ft,
                    None,
                );
                let m = self.ew("one_minus", Binary::Sub, vec![one, x], &ft, None);
                let q = self.ew("ratio", Binary::RealDiv, vec![p, m], &ft, None);
                let l = self.ew("log", Unary::Log, vec![q], &ft, None);
                let half = f32_scalar(self, "half", 0.5);
                self.ew("halved", Binary::Mul, vec![l, half], &ft, out)
            }
            C::Atan => self.arctan(x, "", out)?,
            C::Asin | C::Acos => {
                // Through atan, which is accurate for every argument, rather than
                // pi/2 - asin for acos, which would cancel near x = 1; (1 - x)(1 + x)
                // does not cancel as 1 - x^2 would. |x| > 1 gives a negative radicand
                // or ratio, so NaN.
                let one = f32_scalar(self, "one", 1.0);
                let m = self.ew(
                    "one_minus",
                    Binary::Sub,
                    vec![one.clone(), x.clone()],
                    &ft,
                    None,
                );
                let p = self.ew("one_plus", Binary::Add, vec![one, x.clone()], &ft, None);
                if op == C::Asin {
                    let r = self.ew("radicand", Binary::Mul, vec![m, p], &ft, None);
                    let c = self.ew("cosine", Unary::Sqrt, vec![r], &ft, None);
                    let t = self.ew("tangent", Binary::RealDiv, vec![x, c], &ft, None);
                    self.arctan(t, "", out)?
                } else {
                    let q = self.ew("ratio", Binary::RealDiv, vec![m, p], &ft, None);
                    let t = self.ew("half_tangent", Unary::Sqrt, vec![q], &ft, None);
                    let a = self.arctan(t, "", None)?;
                    let two = f32_scalar(self, "two", 2.0);
                    self.ew("doubled", Binary::Mul, vec![a, two], &ft, out)
                }
            }
            _ => return Err(self.err(format!("{op:?} is not computed through f32"))),
        };
        if narrow {
            self.ew("to_dtype", DeviceOpKind::ToDtype, vec![v], &yt, Some(y));
        }
        Ok(())
    }

    /// `atan x` of an f32 `x` from ops the device has, into `out` when given; `prefix`
    /// starts every step's name.
    ///
    /// 1. `a = |x|`, and `t = 1/a` where `a > 1` (`atan a = pi/2 - atan(1/a)`), so `t` is
    ///    in `[0, 1]` and no square below overflows.
    /// 2. Two half-angle steps `t / (1 + sqrt(1 + t^2))` (`atan t = 2 atan` of it) take `t`
    ///    into `[0, tan(pi/16)] = [0, 0.199]`, each off by a few ulps of `t`.
    /// 3. `t - t^3/3 + ... - t^11/11` in Horner form in `t^2`: the Taylor remainder there
    ///    is below `0.199^13 / 13 = 6e-11`; times 4 undoes the two steps.
    /// 4. `pi/2 -` it where `a > 1`, and the sign of `x` back (atan is odd).
    ///
    /// Infinities give `+-pi/2`; NaN stays NaN (no comparison holds for it). The same
    /// steps in correctly rounded f32 arithmetic, against f64 on 400001 points each, are
    /// within 2.7e-7 of atan (|x| <= 1e4), 2.6e-7 of asin and 5.5e-7 of acos (on [-1, 1]).
    fn arctan(
        &mut self,
        x: String,
        prefix: &str,
        out: Option<String>,
    ) -> Result<String, CompileError> {
        let ft = with_dtype(&self.ty(&x)?, DType::F32);
        let bt = with_dtype(&ft, DType::Bool);
        let st = |step: &str| format!("{prefix}atan_{step}");
        let sc = |b: &mut Self, step: &str, v: f64| b.scalar(&st(step), DType::F32, v as f32);
        let one = sc(self, "one", 1.0);
        let a = self.ew(&st("abs"), Unary::Abs, vec![x.clone()], &ft, None);
        let big = self.ew(
            &st("above_one"),
            Comparison::Greater,
            vec![a.clone(), one.clone()],
            &bt,
            None,
        );
        let inv = self.ew(
            &st("inverse"),
            Binary::RealDiv,
            vec![one.clone(), a.clone()],
            &ft,
            None,
        );
        let mut t = self.ew(
            &st("folded"),
            DeviceOpKind::Where,
            vec![big.clone(), inv, a],
            &ft,
            None,
        );
        for i in 0..2 {
            let sq = self.ew(
                &st(&format!("halving{i}_square")),
                Binary::Mul,
                vec![t.clone(), t.clone()],
                &ft,
                None,
            );
            let r = self.ew(
                &st(&format!("halving{i}_radicand")),
                Binary::Add,
                vec![sq, one.clone()],
                &ft,
                None,
            );
            let s = self.ew(
                &st(&format!("halving{i}_root")),
                Unary::Sqrt,
                vec![r],
                &ft,
                None,
            );
            let d = self.ew(
                &st(&format!("halving{i}_denominator")),
                Binary::Add,
                vec![s, one.clone()],
                &ft,
                None,
            );
            t = self.ew(
                &st(&format!("halving{i}")),
                Binary::RealDiv,
                vec![t, d],
                &ft,
                None,
            );
        }
        let t2 = self.ew(
            &st("square"),
            Binary::Mul,
            vec![t.clone(), t.clone()],
            &ft,
            None,
        );
        // (-1)^n / (2n + 1), n = 5 down to 0.
        let mut p = sc(self, "coefficient5", -1.0 / 11.0);
        for n in (0..5).rev() {
            let m = self.ew(
                &st(&format!("horner{n}_mul")),
                Binary::Mul,
                vec![p, t2.clone()],
                &ft,
                None,
            );
            let c = sc(
                self,
                &format!("coefficient{n}"),
                (-1f64).powi(n) / f64::from(2 * n + 1),
            );
            p = self.ew(
                &st(&format!("horner{n}_add")),
                Binary::Add,
                vec![m, c],
                &ft,
                None,
            );
        }
        let v = self.ew(&st("odd"), Binary::Mul, vec![p, t], &ft, None);
        let four = sc(self, "four", 4.0);
        let v = self.ew(&st("unhalved"), Binary::Mul, vec![v, four], &ft, None);
        let hp = sc(self, "half_pi", std::f64::consts::FRAC_PI_2);
        let c = self.ew(
            &st("complement"),
            Binary::Sub,
            vec![hp, v.clone()],
            &ft,
            None,
        );
        let v = self.ew(
            &st("unfolded"),
            DeviceOpKind::Where,
            vec![big, c, v],
            &ft,
            None,
        );
        let zero = sc(self, "zero", 0.0);
        let neg = self.ew(
            &st("negative"),
            Comparison::Lesser,
            vec![x, zero],
            &bt,
            None,
        );
        let m = self.ew(&st("minus"), Unary::Neg, vec![v.clone()], &ft, None);
        Ok(self.ew(
            &st("signed"),
            DeviceOpKind::Where,
            vec![neg, m, v],
            &ft,
            out,
        ))
    }

    /// Sin and Cos from ops the device has (it has no trigonometric op), computed in f32 (by [`Builder::in_f32`]).
    ///
    /// 1. Range reduction: `k = floor(x / 2pi + 1/2)`, `r = x - 2pi k` in `[-pi, pi]`, with
    ///    2pi split in three parts (Cody-Waite) whose products with `k` are exact, so `r`
    ///    is accurate to an ulp of itself, not of `x`.
    /// 2. A fold into `[-pi/2, pi/2]`: for Sin, `pi - r` above `pi/2` and `-pi - r` below
    ///    `-pi/2` (`sin(pi - r) = sin r`); for Cos, `pi/2 - |r|` (`cos r = sin(pi/2 - |r|)`).
    /// 3. `sin s = s (1 - s^2/3! + ... + s^12/13!)` in Horner form in `s^2`: the Taylor
    ///    remainder on `[-pi/2, pi/2]` is below `(pi/2)^15 / 15! = 7e-10`.
    ///
    /// Measured against `f32::sin`/`cos` on 16384 uniform points per range, the absolute
    /// error is at most 2.4e-7 (a few f32 ulps of 1) for `|x| < 1e4`, and 1.2e-6 for
    /// `|x| < 1e5`, where `k C2` starts to round; infinities and NaN give NaN. f16 and bf16
    /// inputs are converted to f32 and the result back, so their result is within one ulp
    /// of theirs (4.9e-4 for f16 results in [0.5, 1)).
    ///
    /// `sin x` (or `cos x`) of an f32 `x`, into `out` when given; `prefix` starts every
    /// step's name, so one node can take both (Tan).
    fn sine(
        &mut self,
        x: String,
        cos: bool,
        prefix: &str,
        out: Option<String>,
    ) -> Result<String, CompileError> {
        let ft = with_dtype(&self.ty(&x)?, DType::F32);
        let bt = with_dtype(&ft, DType::Bool);
        let f32_scalar = |b: &mut Self, step: &str, v: f64| {
            b.scalar(&format!("{prefix}{step}"), DType::F32, v as f32)
        };
        let st = |step: &str| format!("{prefix}{step}");
        let two_pi = 2.0 * std::f64::consts::PI;
        let inv = f32_scalar(self, "inv_two_pi", 1.0 / two_pi);
        let t = self.ew(&st("turns"), Binary::Mul, vec![x.clone(), inv], &ft, None);
        let half = f32_scalar(self, "half", 0.5);
        let t = self.ew(&st("turns_shifted"), Binary::Add, vec![t, half], &ft, None);
        let k = self.ew(&st("turns_whole"), Unary::Floor, vec![t], &ft, None);
        // C1 = 201/32 has 8 significant bits and C2 = 2029/2^20 has 11, so `k C1` and
        // `k C2` are exact in f32 for |k| < 2^13; C3 is the rest of 2pi.
        let c1 = 6.28125_f64;
        let c2 = ((two_pi - c1) * 1_048_576.0).round() / 1_048_576.0;
        let c3 = two_pi - c1 - c2;
        let mut r = x;
        for (i, c) in [c1, c2, c3].into_iter().enumerate() {
            let cs = f32_scalar(self, &format!("two_pi_part{i}"), c);
            let kc = self.ew(
                &st(&format!("turns_part{i}")),
                Binary::Mul,
                vec![k.clone(), cs],
                &ft,
                None,
            );
            r = self.ew(
                &st(&format!("reduced{i}")),
                Binary::Sub,
                vec![r, kc],
                &ft,
                None,
            );
        }
        let half_pi = std::f64::consts::FRAC_PI_2;
        let s = if cos {
            let a = self.ew(&st("abs"), Unary::Abs, vec![r], &ft, None);
            let hp = f32_scalar(self, "half_pi", half_pi);
            self.ew(&st("folded"), Binary::Sub, vec![hp, a], &ft, None)
        } else {
            let (hp, mhp) = (
                f32_scalar(self, "half_pi", half_pi),
                f32_scalar(self, "minus_half_pi", -half_pi),
            );
            let (pi, mpi) = (
                f32_scalar(self, "pi", std::f64::consts::PI),
                f32_scalar(self, "minus_pi", -std::f64::consts::PI),
            );
            let above = self.ew(
                &st("above"),
                Comparison::Greater,
                vec![r.clone(), hp],
                &bt,
                None,
            );
            let below = self.ew(
                &st("below"),
                Comparison::Lesser,
                vec![r.clone(), mhp],
                &bt,
                None,
            );
            let up = self.ew(
                &st("reflect_up"),
                Binary::Sub,
                vec![pi, r.clone()],
                &ft,
                None,
            );
            let down = self.ew(
                &st("reflect_down"),
                Binary::Sub,
                vec![mpi, r.clone()],
                &ft,
                None,
            );
            let t = self.ew(
                &st("fold_below"),
                DeviceOpKind::Where,
                vec![below, down, r],
                &ft,
                None,
            );
            self.ew(
                &st("folded"),
                DeviceOpKind::Where,
                vec![above, up, t],
                &ft,
                None,
            )
        };
        let s2 = self.ew(
            &st("square"),
            Binary::Mul,
            vec![s.clone(), s.clone()],
            &ft,
            None,
        );
        // (-1)^n / (2n + 1)!, n = 6 down to 0.
        let coefficients: Vec<f64> = (0..=6)
            .rev()
            .map(|n: i32| {
                let fact: f64 = (1..=2 * n + 1).map(f64::from).product();
                (-1f64).powi(n) / fact
            })
            .collect();
        let mut p = f32_scalar(self, "coefficient6", coefficients[0]);
        for (i, c) in coefficients.iter().enumerate().skip(1) {
            let n = 6 - i;
            let m = self.ew(
                &st(&format!("horner{n}_mul")),
                Binary::Mul,
                vec![p, s2.clone()],
                &ft,
                None,
            );
            let cs = f32_scalar(self, &format!("coefficient{n}"), *c);
            p = self.ew(
                &st(&format!("horner{n}_add")),
                Binary::Add,
                vec![m, cs],
                &ft,
                None,
            );
        }
        Ok(self.ew(&st("sin"), Binary::Mul, vec![s, p], &ft, out))
    }

    /// Variadic Sum and Mean: an add chain, scaled by 1/n for the mean.
    fn sum_mean(&mut self, mean: bool) -> Result<(), CompileError> {
        let inputs: Vec<String> = self
            .node
            .inputs
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        let y = self.output()?;
        let yt = self.ty(&y)?;
        let n = inputs.len();
        if n == 0 {
            return Err(self.err(format!("{} needs at least one input", self.node.op)));
        }
        let mut acc = inputs[0].clone();
        for (i, rhs) in inputs.iter().enumerate().skip(1) {
            let out = if i + 1 == n && !mean {
                Some(y.clone())
            } else {
                None
            };
            acc = self.ew(
                &format!("add_{i}"),
                Binary::Add,
                vec![acc, rhs.clone()],
                &yt,
                out,
            );
        }
        if mean && n > 1 {
            let k = self.scalar("inv_count", yt.dtype, 1.0 / n as f32);
            self.ew("mean", Binary::Mul, vec![acc, k], &yt, Some(y));
        } else if n == 1 {
            self.copy(acc, y)?;
        }
        Ok(())
    }

    /// Clip: maximum with the lower bound, minimum with the upper (either may be absent).
    fn clip(&mut self) -> Result<(), CompileError> {
        let (x, y) = (self.input(0)?, self.output()?);
        let yt = self.ty(&y)?;
        let bound = |b: &mut Self, i: usize, attr: &str| -> Result<Option<String>, CompileError> {
            if let Some(t) = b.node.inputs.get(i).filter(|s| !s.is_empty()) {
                return Ok(Some(t.clone()));
            }
            match b.node.attrs.get(attr) {
                Some(_) => {
                    let v = b.float_attr(attr, 0.0)?;
                    Ok(Some(b.scalar(attr, yt.dtype, v)))
                }
                None => Ok(None),
            }
        };
        let lo = bound(self, 1, "min")?;
        let hi = bound(self, 2, "max")?;
        match (lo, hi) {
            (None, None) => self.copy(x, y)?,
            (Some(lo), None) => {
                self.ew("lower", Binary::Maximum, vec![x, lo], &yt, Some(y));
            }
            (None, Some(hi)) => {
                self.ew("upper", Binary::Minimum, vec![x, hi], &yt, Some(y));
            }
            (Some(lo), Some(hi)) => {
                let t = self.ew("lower", Binary::Maximum, vec![x, lo], &yt, None);
                self.ew("upper", Binary::Minimum, vec![t, hi], &yt, Some(y));
            }
        }
        Ok(())
    }
}

/// Gemm and MatMul's numpy forms, around the one `batchmatmul`.
impl Builder<'_> {
    /// Gemm: `alpha op(A) op(B) + beta C`, the transposes as movement ops.
    pub(super) fn gemm(&mut self) -> Result<(), CompileError> {
        let (ta, tb) = (self.int_attr("transA", 0)?, self.int_attr("transB", 0)?);
        let (alpha, beta) = (
            self.float_attr("alpha", 1.0)?,
            self.float_attr("beta", 1.0)?,
        );
        let (a, b, y) = (self.input(0)?, self.input(1)?, self.output()?);
        let yt = self.ty(&y)?;
        let c = self.node.inputs.get(2).filter(|s| !s.is_empty()).cloned();
        for (t, name) in [(&a, "A"), (&b, "B")] {
            let r = self.ty(t)?.shape.len();
            if r != 2 {
                return Err(self.err(format!("Gemm's {name} must be 2-D, got rank {r}")));
            }
        }
        let a = if ta != 0 {
            self.transposed("a_t", a, &[1, 0], None)?
        } else {
            a
        };
        let b = if tb != 0 {
            self.transposed("b_t", b, &[1, 0], None)?
        } else {
            b
        };
        // C scaled by beta (nothing to add when beta is 0).
        let c = match c {
            Some(c) if beta == 0.0 => {
                let _ = c;
                None
            }
            Some(c) if beta != 1.0 => {
                let ct = self.ty(&c)?;
                let k = self.scalar("beta", ct.dtype, beta);
                Some(self.ew("beta_c", Binary::Mul, vec![c, k], &ct, None))
            }
            other => other,
        };
        let scaled = alpha != 1.0;
        if c.is_none() && !scaled {
            return self.matmul(a, b, y, None);
        }
        let ab = self.temp("matmul", yt.clone());
        self.matmul(a, b, ab.clone(), Some("matmul"))?;
        let ab = if scaled {
            let k = self.scalar("alpha", yt.dtype, alpha);
            let out = if c.is_none() { Some(y.clone()) } else { None };
            self.ew("alpha_ab", Binary::Mul, vec![ab, k], &yt, out)
        } else {
            ab
        };
        if let Some(c) = c {
            self.ew("add", Binary::Add, vec![ab, c], &yt, Some(y));
        }
        Ok(())
    }

    /// MatMul with numpy's rules: a 1-D `a` is a row, a 1-D `b` a column, and the unit
    /// dim they add is dropped from the result.
    pub(super) fn matmul_numpy(
        &mut self,
        a: String,
        b: String,
        y: String,
    ) -> Result<(), CompileError> {
        let (at, bt, yt) = (self.ty(&a)?, self.ty(&b)?, self.ty(&y)?);
        let (a1, b1) = (at.shape.len() == 1, bt.shape.len() == 1);
        let ra = at.shape.len();
        let batches: usize = at.shape[..ra.saturating_sub(2)].iter().product();
        // Dims the fold below merges that are more than 1: with one, the reshape only drops
        // unit dims and splits over the cores as its input does.
        let merged = at.shape[..ra.saturating_sub(1)]
            .iter()
            .filter(|&&e| e > 1)
            .count();
        if bt.shape.len() == 2 && ra > 2 && batches > 1 && merged == 1 {
            // One weight shared by every batch entry (a decode batch's [batch, 1, hidden]
            // activations): the batch entries become rows of one 2-D matmul, so each
            // weight tile is read once for all of them rather than once per entry, and the
            // rows split over the cores like any others. (Merging a batch dim with a
            // sequence dim is a reshape that cannot be cut; those stay batched.)
            let rows = batches * at.shape[ra - 2];
            let k = at.shape[ra - 1];
            let n = bt.shape[1];
            let a = self.reshaped("rows", a, vec![rows, k], None)?;
            let out = self.temp(
                "matmul",
                TensorType {
                    dtype: yt.dtype,
                    shape: vec![rows, n],
                },
            );
            self.matmul(a, b, out.clone(), Some("matmul"))?;
            self.reshaped("result", out, yt.shape.clone(), Some(y))?;
            return Ok(());
        }
        if !a1 && !b1 {
            return self.matmul(a, b, y, None);
        }
        let mut shape = yt.shape.clone();
        let b = if b1 {
            shape.push(1);
            self.reshaped("b_column", b, vec![bt.shape[0], 1], None)?
        } else {
            b
        };
        let a = if a1 {
            let at_len = shape.len();
            shape.insert(at_len - 1, 1);
            self.reshaped("a_row", a, vec![1, at.shape[0]], None)?
        } else {
            a
        };
        let out = self.temp(
            "matmul",
            TensorType {
                dtype: yt.dtype,
                shape,
            },
        );
        self.matmul(a, b, out.clone(), Some("matmul"))?;
        self.reshaped("result", out, yt.shape.clone(), Some(y))?;
        Ok(())
    }
}

/// Normalisations over several trailing axes, and LayerNormalization's statistics.
impl Builder<'_> {
    /// LayerNormalization / RMSNormalization over axes `axis..` (merged into one last axis
    /// by reshapes, the scale and bias expanded to the normalised shape and flattened), and
    /// LayerNormalization's Mean and InvStdDev outputs (the row statistics, converted to
    /// their f32 and reshaped). Returns false, building nothing, for the plain case (last
    /// axis, one output), which the caller decomposes itself.
    pub(super) fn normalization_general(&mut self) -> Result<bool, CompileError> {
        let x = self.input(0)?;
        let xt = self.ty(&x)?;
        let r = xt.shape.len();
        if r == 0 {
            return Err(self.err(format!("{} of a rank-0 tensor", self.node.op)));
        }
        let axis = self.axis(self.int_attr("axis", -1)?, r)?;
        let outputs: Vec<String> = self.node.outputs.clone();
        let stats = outputs.iter().skip(1).any(|o| !o.is_empty());
        if axis == r - 1 && !stats {
            return Ok(false);
        }
        let y = self.output()?;
        let norm: usize = xt.shape[axis..].iter().product();
        let mut rows = xt.shape[..axis].to_vec();
        rows.push(norm);
        let dt = xt.dtype;
        let x2 = self.reshaped("rows", x, rows.clone(), None)?;
        // Scale and bias as [norm] vectors.
        let mut params = Vec::new();
        for (i, what) in [(1, "scale"), (2, "bias")] {
            let Some(p) = self.node.inputs.get(i).filter(|s| !s.is_empty()).cloned() else {
                continue;
            };
            let pt = self.ty(&p)?;
            let full: Vec<usize> = xt.shape[axis..].to_vec();
            let p = if pt.shape == full {
                p
            } else {
                let e = self.temp(
                    &format!("{what}_full"),
                    TensorType {
                        dtype: pt.dtype,
                        shape: full,
                    },
                );
                self.push_movement(&format!("{what}_full"), Movement::Expand, p, e.clone(), &[])?;
                e
            };
            params.push(self.reshaped(&format!("{what}_flat"), p, vec![norm], None)?);
        }
        let y2 = self.temp(
            "rows_result",
            TensorType {
                dtype: dt,
                shape: rows,
            },
        );
        let mut inner_node = self.node.clone();
        inner_node.inputs = std::iter::once(x2).chain(params).collect();
        inner_node.outputs = vec![y2.clone()];
        inner_node.attrs.insert("axis".into(), AttrValue::Int(-1));
        let mut inner = Builder {
            c: &mut *self.c,
            node: &inner_node,
            ops: Vec::new(),
            key_block: None,
            padding: crate::PaddingRules::PUBLIC,
        };
        inner.decompose()?;
        let inner_ops = std::mem::take(&mut inner.ops);
        let produced = |step: &str| -> Option<String> {
            let name = format!("{}/{step}", self.node.name);
            inner_ops
                .iter()
                .find(|o| o.name == name)
                .and_then(|o| o.outputs.first().cloned())
        };
        let (mean, inv) = (produced("mean"), produced("rsqrt"));
        self.ops.extend(inner_ops);
        self.reshaped("result", y2, xt.shape.clone(), Some(y))?;
        for (k, stat) in [(1, mean), (2, inv)] {
            let Some(out) = outputs.get(k).filter(|o| !o.is_empty()).cloned() else {
                continue;
            };
            let stat = stat.ok_or_else(|| self.err("no row statistic to return"))?;
            let (st, ot) = (self.ty(&stat)?, self.ty(&out)?);
            let step = if k == 1 {
                "mean_out"
            } else {
                "inv_std_dev_out"
            };
            let converted = if st.dtype == ot.dtype {
                stat
            } else {
                self.ew(
                    &format!("{step}_dtype"),
                    DeviceOpKind::ToDtype,
                    vec![stat],
                    &with_dtype(&st, ot.dtype),
                    None,
                )
            };
            self.push_movement(step, Movement::Reshape, converted, out, &[])?;
        }
        Ok(true)
    }
}
