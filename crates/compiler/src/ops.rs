//! Device ops and the `decompose` pass: graph ops to the device op set (SDSC op names).
//!
//! | graph op | device ops |
//! |---|---|
//! | MatMul (rank >= 2, batch dims broadcast) | batchmatmul |
//! | Gemm (alpha = beta = 1, no transposes) | batchmatmul, add (when C is given) |
//! | Add, Sub, Mul, Div, Max, Min (2+ inputs chain) | add, sub, mul, realdiv, maximum, minimum |
//! | Neg, Abs, Exp, Log, Sqrt, Reciprocal, Tanh, Sigmoid, Relu, Gelu, Silu, Softplus, Floor | same name, lowercase |
//! | Cast (any dtype to any) | to_dtype |
//! | Equal, Greater, Less | equal, greater, lesser (bool result) |
//! | Where | where |
//! | Trilu (when not folded as a constant) | where (with a constant bool mask and a zero) |
//! | Softmax (last axis) | max, sub, exp, sum, realdiv |
//! | ReduceSum, ReduceMean, ReduceMax (axes = [-1], keepdims = 1) | sum, mean, max |
//! | SimplifiedLayerNormalization / RMSNormalization (last axis) | mul, mean, add (eps), rsqrt, mul, mul (weight) |
//!
//! Reductions (max, sum, mean) reduce the last axis and keep it with size 1; their iteration
//! space is the input's, with the last dim marked as a reduction. Constants a decomposition
//! needs (the norm's epsilon, masks) become new initializers of the compilation's graph.
//!
//! Element types: movement ops move any dtype; `to_dtype` converts between any two;
//! comparisons take any dtype and give bool; `where` takes a bool condition; every other
//! device op computes on float types. (On the device an i64 tensor is held as i32: see
//! [`crate::layout`].)

use crate::{Compilation, CompileError};
use graph::{AttrValue, DType, Node, TensorType};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One device op: the unit the rest of the compiler plans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceOp {
    /// From the graph node; `node/step` when a node decomposes into several ops.
    pub name: String,
    /// SDSC op name ("batchmatmul", "add", "restickify", ...).
    pub op: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub iteration: Vec<IterDim>,
    /// Integer attributes movement kernels need (`perm`, `starts`, `axes`, `steps`, `axis`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attrs: BTreeMap<String, Vec<i64>>,
}

/// One dimension of an op's iteration space.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterDim {
    /// batchmatmul: "b0".. (batch), "mb" (M), "out" (N), "in" (K); others: "d0", "d1", ...
    pub label: String,
    /// In elements.
    pub extent: usize,
    /// Indexes the stick dim, so it is split in whole sticks.
    pub in_sticks: bool,
    pub reduction: bool,
}

/// Device ops applied elementwise.
pub const POINTWISE: &[&str] = &[
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

/// Device ops that move data between layouts: each lowers to a kernel that reads its
/// inputs whole, rearranges them in host order and writes the result (one core for now).
pub const MOVEMENT: &[&str] = &[
    "reshape",
    "transpose",
    "expand",
    "slice",
    "concat",
    "restickify",
    "gather",
];

/// Device reductions over the last axis (kept with size 1).
pub const REDUCTIONS: &[&str] = &["max", "sum", "mean", "min"];

/// Graph ops `decompose` accepts.
pub const SUPPORTED_GRAPH_OPS: &[&str] = &[
    "Abs",
    "Add",
    "Attention",
    "Cast",
    "Concat",
    "Equal",
    "Expand",
    "Flatten",
    "Reshape",
    "Slice",
    "Squeeze",
    "Transpose",
    "Unsqueeze",
    "Div",
    "Exp",
    "Floor",
    "Gather",
    "Gelu",
    "Gemm",
    "Greater",
    "LayerNormalization",
    "Less",
    "Log",
    "MatMul",
    "Max",
    "Min",
    "Mul",
    "Neg",
    "RMSNormalization",
    "Reciprocal",
    "ReduceMax",
    "ReduceMean",
    "ReduceSum",
    "Relu",
    "Sigmoid",
    "Silu",
    "SimplifiedLayerNormalization",
    "Softmax",
    "Softplus",
    "Sqrt",
    "Sub",
    "Tanh",
    "Trilu",
    "Where",
];

fn unary_device_op(op: &str) -> Option<&'static str> {
    Some(match op {
        "Abs" => "abs",
        "Neg" => "neg",
        "Exp" => "exp",
        "Log" => "log",
        "Sqrt" => "sqrt",
        "Reciprocal" => "reciprocal",
        "Tanh" => "tanh",
        "Sigmoid" => "sigmoid",
        "Relu" => "relu",
        "Gelu" => "gelu",
        "Silu" => "silu",
        "Softplus" => "softplus",
        "Floor" => "floor",
        "Cast" => "to_dtype",
        _ => return None,
    })
}

fn binary_device_op(op: &str) -> Option<&'static str> {
    Some(match op {
        "Add" => "add",
        "Sub" => "sub",
        "Mul" => "mul",
        "Div" => "realdiv",
        "Max" => "maximum",
        "Min" => "minimum",
        _ => return None,
    })
}

/// Which iteration dim indexes each dim of an operand (`None`: broadcast or reduced away).
/// `operand` counts the op's inputs first, then its outputs.
pub fn access_map(op: &DeviceOp, operand: usize, shape: &[usize]) -> Vec<Option<usize>> {
    let it = &op.iteration;
    let r = shape.len();
    if MOVEMENT.contains(&op.op.as_str()) && operand < op.inputs.len() {
        // Movement kernels read their inputs whole.
        return vec![None; r];
    }
    let aligned = |i: usize, offset_from_right: usize, iter_end: usize| -> Option<usize> {
        // dim i of a tensor whose dims [0, r - offset_from_right) align right with iteration
        // dims [0, iter_end).
        let lead = r.checked_sub(offset_from_right)?;
        let pos = (iter_end + i).checked_sub(lead)?;
        let d = it.get(pos)?;
        if shape[i] == 1 && d.extent != 1 {
            None
        } else {
            Some(pos)
        }
    };
    if op.op == "batchmatmul" && it.len() >= 3 && r >= 2 {
        let nb = it.len() - 3;
        let (mb, out, k) = (nb, nb + 1, nb + 2);
        let (second_last, last) = match operand {
            0 => (mb, k),
            1 => (k, out),
            _ => (mb, out),
        };
        return (0..r)
            .map(|i| {
                if i == r - 1 {
                    Some(last)
                } else if i == r - 2 {
                    Some(second_last)
                } else {
                    aligned(i, 2, nb)
                }
            })
            .collect();
    }
    (0..r).map(|i| aligned(i, 0, it.len())).collect()
}

fn pointwise_iteration(shape: &[usize]) -> Vec<IterDim> {
    if shape.is_empty() {
        return vec![IterDim {
            label: "d0".into(),
            extent: 1,
            in_sticks: true,
            reduction: false,
        }];
    }
    let last = shape.len() - 1;
    shape
        .iter()
        .enumerate()
        .map(|(i, &e)| IterDim {
            label: format!("d{i}"),
            extent: e,
            in_sticks: i == last,
            reduction: false,
        })
        .collect()
}

/// The iteration of an elementwise op over a tensor of this shape ("d0", "d1", ...).
pub fn pointwise_iteration_pub(shape: &[usize]) -> Vec<IterDim> {
    pointwise_iteration(shape)
}

fn reduction_iteration(input_shape: &[usize]) -> Vec<IterDim> {
    let mut it = pointwise_iteration(input_shape);
    if let Some(d) = it.last_mut() {
        d.reduction = true;
    }
    it
}

/// Builds the ops of one node, naming intermediates `node/step`.
struct Builder<'a> {
    c: &'a mut Compilation,
    node: &'a Node,
    ops: Vec<DeviceOp>,
}

impl Builder<'_> {
    fn err(&self, msg: impl Into<String>) -> CompileError {
        CompileError::at(&self.node.name, msg)
    }

    fn ty(&self, t: &str) -> Result<TensorType, CompileError> {
        self.c
            .types
            .get(t)
            .cloned()
            .ok_or_else(|| self.err(format!("tensor '{t}' has no known type")))
    }

    /// A fresh tensor name for step `step` of this node.
    fn temp(&mut self, step: &str, ty: TensorType) -> String {
        let base = format!("{}/{step}", self.node.name);
        let mut name = base.clone();
        let mut k = 1;
        while self.c.types.contains_key(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.c.types.insert(name.clone(), ty);
        name
    }

    fn push(
        &mut self,
        step: Option<&str>,
        op: &str,
        inputs: Vec<String>,
        out: String,
        it: Vec<IterDim>,
    ) {
        let name = match step {
            Some(s) => format!("{}/{s}", self.node.name),
            None => self.node.name.clone(),
        };
        // Integer attributes travel with single-op nodes (movement kernels read them).
        let attrs = if step.is_none() {
            self.node
                .attrs
                .iter()
                .filter_map(|(k, v)| match v {
                    AttrValue::Int(i) => Some((k.clone(), vec![*i])),
                    AttrValue::Ints(l) => Some((k.clone(), l.clone())),
                    _ => None,
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        self.ops.push(DeviceOp {
            name,
            op: op.to_string(),
            inputs,
            outputs: vec![out],
            iteration: it,
            attrs,
        });
    }

    /// `1 / sqrt(x + eps)` for the per-row statistic `x` of a normalisation: the epsilon
    /// becomes a constant initializer, then an add and an rsqrt.
    fn inverse_root(
        &mut self,
        x: String,
        ty: TensorType,
        eps: f32,
    ) -> Result<String, CompileError> {
        let eps_t = TensorType {
            dtype: ty.dtype,
            shape: vec![1],
        };
        let eps_name = self.temp("epsilon", eps_t.clone());
        self.c.graph.initializers.push(graph::Initializer {
            name: eps_name.clone(),
            ty: eps_t,
            init: graph::InitSpec::Constant(eps),
        });
        let it = pointwise_iteration(&ty.shape);
        let sum = self.temp("add_eps", ty.clone());
        self.push(
            Some("add_eps"),
            "add",
            vec![x, eps_name],
            sum.clone(),
            it.clone(),
        );
        let r = self.temp("rsqrt", ty);
        self.push(Some("rsqrt"), "rsqrt", vec![sum], r.clone(), it);
        Ok(r)
    }

    /// A movement step of a decomposition, with its integer attributes.
    fn push_movement(
        &mut self,
        step: &str,
        op: &str,
        input: String,
        out: String,
        attrs: &[(&str, Vec<i64>)],
    ) -> Result<(), CompileError> {
        let it = pointwise_iteration(&self.ty(&out)?.shape);
        self.push(Some(step), op, vec![input], out, it);
        if let Some(last) = self.ops.last_mut() {
            last.attrs = attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
        }
        Ok(())
    }

    fn input(&self, i: usize) -> Result<String, CompileError> {
        match self.node.inputs.get(i) {
            Some(s) if !s.is_empty() => Ok(s.clone()),
            _ => Err(self.err(format!(
                "{} needs input {} but it is missing",
                self.node.op,
                i + 1
            ))),
        }
    }

    fn output(&self) -> Result<String, CompileError> {
        match self.node.outputs.first() {
            Some(s) if !s.is_empty() => Ok(s.clone()),
            _ => Err(self.err(format!("{} has no output", self.node.op))),
        }
    }

    fn int_attr(&self, name: &str, default: i64) -> Result<i64, CompileError> {
        match self.node.attrs.get(name) {
            None => Ok(default),
            Some(AttrValue::Int(v)) => Ok(*v),
            Some(v) => Err(self.err(format!(
                "attribute '{name}' must be an integer, got {}",
                v.kind_name()
            ))),
        }
    }

    fn float_attr(&self, name: &str, default: f32) -> Result<f32, CompileError> {
        match self.node.attrs.get(name) {
            None => Ok(default),
            Some(AttrValue::Float(v)) => Ok(*v),
            Some(AttrValue::Int(v)) => Ok(*v as f32),
            Some(v) => Err(self.err(format!(
                "attribute '{name}' must be a float, got {}",
                v.kind_name()
            ))),
        }
    }

    /// Checks that `axis` names the last axis of a rank-`rank` tensor.
    fn require_last_axis(&self, axis: i64, rank: usize) -> Result<(), CompileError> {
        let r = rank as i64;
        let a = if axis < 0 { axis + r } else { axis };
        if a != r - 1 {
            return Err(self.err(format!(
                "{} over axis {axis} of a rank-{rank} tensor is not supported; only the last axis (-1)",
                self.node.op
            )));
        }
        Ok(())
    }

    fn matmul(
        &mut self,
        a: String,
        b: String,
        out: String,
        step: Option<&str>,
    ) -> Result<(), CompileError> {
        let (ta, tb, tc) = (self.ty(&a)?, self.ty(&b)?, self.ty(&out)?);
        if ta.shape.len() < 2 || tb.shape.len() < 2 {
            return Err(self.err(format!(
                "matmul of {}-D by {}-D operands is not supported; both must be at least 2-D",
                ta.shape.len(),
                tb.shape.len()
            )));
        }
        let rc = tc.shape.len();
        if rc < 2 {
            return Err(self.err("matmul result must be at least 2-D"));
        }
        let k = ta.shape[ta.shape.len() - 1];
        if tb.shape[tb.shape.len() - 2] != k {
            return Err(self.err(format!(
                "matmul inner dims differ: A has K = {k}, B has K = {}",
                tb.shape[tb.shape.len() - 2]
            )));
        }
        let mut it: Vec<IterDim> = tc.shape[..rc - 2]
            .iter()
            .enumerate()
            .map(|(i, &e)| IterDim {
                label: format!("b{i}"),
                extent: e,
                in_sticks: false,
                reduction: false,
            })
            .collect();
        it.push(IterDim {
            label: "mb".into(),
            extent: tc.shape[rc - 2],
            in_sticks: false,
            reduction: false,
        });
        it.push(IterDim {
            label: "out".into(),
            extent: tc.shape[rc - 1],
            in_sticks: true,
            reduction: false,
        });
        it.push(IterDim {
            label: "in".into(),
            extent: k,
            in_sticks: true,
            reduction: true,
        });
        self.push(step, "batchmatmul", vec![a, b], out, it);
        Ok(())
    }

    fn decompose(&mut self) -> Result<(), CompileError> {
        let op = self.node.op.clone();
        let movement = match op.as_str() {
            "Reshape" | "Unsqueeze" | "Squeeze" | "Flatten" => Some("reshape"),
            "Transpose" => Some("transpose"),
            "Expand" => Some("expand"),
            "Slice" => Some("slice"),
            "Concat" => Some("concat"),
            "Gather" => Some("gather"),
            _ => None,
        };
        if let Some(dop) = movement {
            let inputs: Vec<String> = self
                .node
                .inputs
                .iter()
                .filter(|s| !s.is_empty())
                .cloned()
                .collect();
            let y = self.output()?;
            let it = pointwise_iteration(&self.ty(&y)?.shape);
            self.push(None, dop, inputs, y, it);
            return Ok(());
        }
        if let Some(dop) = unary_device_op(&op) {
            let (x, y) = (self.input(0)?, self.output()?);
            let it = pointwise_iteration(&self.ty(&y)?.shape);
            self.push(None, dop, vec![x], y, it);
            return Ok(());
        }
        if let Some(dop) = binary_device_op(&op) {
            let inputs: Vec<String> = self
                .node
                .inputs
                .iter()
                .filter(|s| !s.is_empty())
                .cloned()
                .collect();
            let y = self.output()?;
            let yt = self.ty(&y)?;
            if inputs.len() < 2 {
                return Err(self.err(format!(
                    "{op} needs at least 2 inputs, got {}",
                    inputs.len()
                )));
            }
            if inputs.len() > 2 && !matches!(op.as_str(), "Max" | "Min") {
                return Err(self.err(format!("{op} takes 2 inputs, got {}", inputs.len())));
            }
            // Variadic Max/Min chain left to right; the chain's partial results have the
            // output's type (broadcasting widens monotonically).
            let mut acc = inputs[0].clone();
            for (i, rhs) in inputs.iter().enumerate().skip(1) {
                let last = i + 1 == inputs.len();
                let out = if last {
                    y.clone()
                } else {
                    self.temp(&format!("{dop}_{i}"), yt.clone())
                };
                let step = if inputs.len() > 2 {
                    Some(format!("{dop}_{i}"))
                } else {
                    None
                };
                self.push(
                    step.as_deref(),
                    dop,
                    vec![acc, rhs.clone()],
                    out.clone(),
                    pointwise_iteration(&yt.shape),
                );
                acc = out;
            }
            return Ok(());
        }
        match op.as_str() {
            "MatMul" => {
                let (a, b, y) = (self.input(0)?, self.input(1)?, self.output()?);
                self.matmul(a, b, y, None)
            }
            "Gemm" => {
                let (ta, tb) = (self.int_attr("transA", 0)?, self.int_attr("transB", 0)?);
                let (alpha, beta) = (
                    self.float_attr("alpha", 1.0)?,
                    self.float_attr("beta", 1.0)?,
                );
                if ta != 0 || tb != 0 {
                    return Err(self.err(format!(
                        "Gemm with transA={ta}, transB={tb} is not supported (needs a transposing restickify); only transA=transB=0"
                    )));
                }
                if alpha != 1.0 || beta != 1.0 {
                    return Err(self.err(format!(
                        "Gemm with alpha={alpha}, beta={beta} is not supported; only alpha=beta=1"
                    )));
                }
                let (a, b, y) = (self.input(0)?, self.input(1)?, self.output()?);
                let c = self.node.inputs.get(2).filter(|s| !s.is_empty()).cloned();
                match c {
                    None => self.matmul(a, b, y, None),
                    Some(c) => {
                        let yt = self.ty(&y)?;
                        let ab = self.temp("matmul", yt.clone());
                        self.matmul(a, b, ab.clone(), Some("matmul"))?;
                        self.push(
                            Some("add"),
                            "add",
                            vec![ab, c],
                            y,
                            pointwise_iteration(&yt.shape),
                        );
                        Ok(())
                    }
                }
            }
            "Attention" => {
                // GQA heads repeated by movement ops, K transposed, Q K^T scaled and masked,
                // softmax, then the weighted sum of V: all device ops the machine has.
                let (q, k, v, y) = (
                    self.input(0)?,
                    self.input(1)?,
                    self.input(2)?,
                    self.output()?,
                );
                let (qt, kt, vt) = (self.ty(&q)?, self.ty(&k)?, self.ty(&v)?);
                if qt.shape.len() != 4 || kt.shape.len() != 4 || vt.shape.len() != 4 {
                    return Err(
                        self.err("Attention is lowered for 4-D [batch, heads, seq, dim] inputs")
                    );
                }
                let (b, hq, sq, d) = (qt.shape[0], qt.shape[1], qt.shape[2], qt.shape[3]);
                let (hkv, skv, dv) = (kt.shape[1], kt.shape[2], vt.shape[3]);
                if hkv == 0 || hq % hkv != 0 {
                    return Err(self.err(format!(
                        "{hq} query heads do not share {hkv} key/value heads evenly"
                    )));
                }
                let group = hq / hkv;
                let dt = qt.dtype;
                let t = |shape: Vec<usize>| TensorType { dtype: dt, shape };
                let repeat = |this: &mut Self,
                              x: String,
                              name: &str,
                              last: usize|
                 -> Result<String, CompileError> {
                    if group == 1 {
                        return Ok(x);
                    }
                    let u = this.temp(&format!("{name}_heads"), t(vec![b, hkv, 1, skv, last]));
                    this.push_movement(&format!("{name}_heads"), "reshape", x, u.clone(), &[])?;
                    let e = this.temp(&format!("{name}_repeat"), t(vec![b, hkv, group, skv, last]));
                    this.push_movement(&format!("{name}_repeat"), "expand", u, e.clone(), &[])?;
                    let r = this.temp(&format!("{name}_grouped"), t(vec![b, hq, skv, last]));
                    this.push_movement(&format!("{name}_grouped"), "reshape", e, r.clone(), &[])?;
                    Ok(r)
                };
                let k_all = repeat(self, k, "k", d)?;
                let v_all = repeat(self, v, "v", dv)?;
                let k_t = self.temp("k_t", t(vec![b, hq, d, skv]));
                self.push_movement(
                    "k_t",
                    "transpose",
                    k_all,
                    k_t.clone(),
                    &[("perm", vec![0, 1, 3, 2])],
                )?;
                let scores = self.temp("scores", t(vec![b, hq, sq, skv]));
                self.matmul(q, k_t, scores.clone(), Some("scores"))?;
                let scale = match self.node.attrs.get("scale") {
                    Some(AttrValue::Float(f)) => *f,
                    _ => 1.0 / (d as f32).sqrt(),
                };
                let scale_name = self.temp("scale_value", t(vec![1]));
                self.c.graph.initializers.push(graph::Initializer {
                    name: scale_name.clone(),
                    ty: t(vec![1]),
                    init: graph::InitSpec::Constant(scale),
                });
                let full = pointwise_iteration(&[b, hq, sq, skv]);
                let scaled = self.temp("scaled", t(vec![b, hq, sq, skv]));
                self.push(
                    Some("scaled"),
                    "mul",
                    vec![scores, scale_name],
                    scaled.clone(),
                    full.clone(),
                );
                let mut logits = scaled;
                if self.int_attr("is_causal", 0)? != 0 {
                    let mask: Vec<f32> = (0..sq * skv)
                        .map(|i| {
                            if i % skv > i / skv {
                                f32::NEG_INFINITY
                            } else {
                                0.0
                            }
                        })
                        .collect();
                    let mask_name = self.temp("causal_mask", t(vec![sq, skv]));
                    self.c.graph.initializers.push(graph::Initializer {
                        name: mask_name.clone(),
                        ty: t(vec![sq, skv]),
                        init: graph::InitSpec::Data(mask),
                    });
                    let masked = self.temp("masked", t(vec![b, hq, sq, skv]));
                    self.push(
                        Some("masked"),
                        "add",
                        vec![logits, mask_name],
                        masked.clone(),
                        full.clone(),
                    );
                    logits = masked;
                }
                let red = row_statistic(&t(vec![b, hq, sq, skv]));
                let rit = reduction_iteration(&[b, hq, sq, skv]);
                let m = self.temp("max", red.clone());
                self.push(
                    Some("max"),
                    "max",
                    vec![logits.clone()],
                    m.clone(),
                    rit.clone(),
                );
                let sub = self.temp("sub", t(vec![b, hq, sq, skv]));
                self.push(
                    Some("sub"),
                    "sub",
                    vec![logits, m],
                    sub.clone(),
                    full.clone(),
                );
                let e = self.temp("exp", t(vec![b, hq, sq, skv]));
                self.push(Some("exp"), "exp", vec![sub], e.clone(), full.clone());
                let z = self.temp("sum", red);
                self.push(Some("sum"), "sum", vec![e.clone()], z.clone(), rit);
                let p = self.temp("probs", t(vec![b, hq, sq, skv]));
                self.push(Some("probs"), "realdiv", vec![e, z], p.clone(), full);
                self.matmul(p, v_all, y, Some("context"))?;
                Ok(())
            }
            "Softmax" => {
                let (x, y) = (self.input(0)?, self.output()?);
                let xt = self.ty(&x)?;
                self.require_last_axis(self.int_attr("axis", -1)?, xt.shape.len())?;
                let red_t = row_statistic(&xt);
                let full = pointwise_iteration(&xt.shape);
                let rit = reduction_iteration(&xt.shape);
                let m = self.temp("max", red_t.clone());
                self.push(Some("max"), "max", vec![x.clone()], m.clone(), rit.clone());
                let s = self.temp("sub", xt.clone());
                self.push(Some("sub"), "sub", vec![x, m], s.clone(), full.clone());
                let e = self.temp("exp", xt.clone());
                self.push(Some("exp"), "exp", vec![s], e.clone(), full.clone());
                let z = self.temp("sum", red_t);
                self.push(Some("sum"), "sum", vec![e.clone()], z.clone(), rit);
                self.push(Some("realdiv"), "realdiv", vec![e, z], y, full);
                Ok(())
            }
            "ReduceSum" | "ReduceMean" | "ReduceMax" => {
                let (x, y) = (self.input(0)?, self.output()?);
                let xt = self.ty(&x)?;
                let r = xt.shape.len() as i64;
                let axes = match self.node.attrs.get("axes") {
                    Some(AttrValue::Ints(v)) => v.clone(),
                    Some(AttrValue::Int(v)) => vec![*v],
                    _ => vec![],
                };
                let last_only = axes.len() == 1 && (axes[0] == r - 1 || axes[0] == -1);
                if !last_only || self.int_attr("keepdims", 1)? != 1 || r == 0 {
                    return Err(self.err(format!(
                        "{op} with axes {axes:?} and keepdims={} is not supported; only axes=[-1] with keepdims=1",
                        self.int_attr("keepdims", 1)?
                    )));
                }
                let dop = match op.as_str() {
                    "ReduceSum" => "sum",
                    "ReduceMean" => "mean",
                    _ => "max",
                };
                self.push(None, dop, vec![x], y, reduction_iteration(&xt.shape));
                Ok(())
            }
            "Equal" | "Greater" | "Less" => {
                let (a, b, y) = (self.input(0)?, self.input(1)?, self.output()?);
                let dop = match op.as_str() {
                    "Equal" => "equal",
                    "Greater" => "greater",
                    _ => "lesser",
                };
                let it = pointwise_iteration(&self.ty(&y)?.shape);
                self.push(None, dop, vec![a, b], y, it);
                Ok(())
            }
            "Where" => {
                let (cond, a, b, y) = (
                    self.input(0)?,
                    self.input(1)?,
                    self.input(2)?,
                    self.output()?,
                );
                let it = pointwise_iteration(&self.ty(&y)?.shape);
                self.push(None, "where", vec![cond, a, b], y, it);
                Ok(())
            }
            "Trilu" => self.trilu(),
            "LayerNormalization" => {
                // mean, subtract, mean of squares, add eps, rsqrt, normalise, scale, shift.
                // (The device's fused layernormscale/layernormnorm ops are not used: the
                // generic ops show each step in the snapshots.)
                let (x, w, y) = (self.input(0)?, self.input(1)?, self.output()?);
                let bias = self.node.inputs.get(2).filter(|b| !b.is_empty()).cloned();
                let xt = self.ty(&x)?;
                self.require_last_axis(self.int_attr("axis", -1)?, xt.shape.len())?;
                let eps = self.float_attr("epsilon", 1e-5)?;
                let red_t = row_statistic(&xt);
                let full = pointwise_iteration(&xt.shape);
                let reduce = reduction_iteration(&xt.shape);
                let mean = self.temp("mean", red_t.clone());
                self.push(
                    Some("mean"),
                    "mean",
                    vec![x.clone()],
                    mean.clone(),
                    reduce.clone(),
                );
                let xc = self.temp("center", xt.clone());
                self.push(
                    Some("center"),
                    "sub",
                    vec![x, mean],
                    xc.clone(),
                    full.clone(),
                );
                let sq = self.temp("square", xt.clone());
                self.push(
                    Some("square"),
                    "mul",
                    vec![xc.clone(), xc.clone()],
                    sq.clone(),
                    full.clone(),
                );
                let var = self.temp("variance", red_t.clone());
                self.push(Some("variance"), "mean", vec![sq], var.clone(), reduce);
                let r = self.inverse_root(var, red_t, eps)?;
                let n = self.temp("normalize", xt.clone());
                self.push(
                    Some("normalize"),
                    "mul",
                    vec![xc, r],
                    n.clone(),
                    full.clone(),
                );
                match bias {
                    Some(b) => {
                        let s = self.temp("scale", xt.clone());
                        self.push(Some("scale"), "mul", vec![n, w], s.clone(), full.clone());
                        self.push(Some("shift"), "add", vec![s, b], y, full);
                    }
                    None => self.push(Some("scale"), "mul", vec![n, w], y, full),
                }
                Ok(())
            }
            "SimplifiedLayerNormalization" | "RMSNormalization" => {
                let (x, w, y) = (self.input(0)?, self.input(1)?, self.output()?);
                let xt = self.ty(&x)?;
                self.require_last_axis(self.int_attr("axis", -1)?, xt.shape.len())?;
                let eps = self.float_attr("epsilon", 1e-5)?;
                let red_t = row_statistic(&xt);
                let full = pointwise_iteration(&xt.shape);
                let sq = self.temp("square", xt.clone());
                self.push(
                    Some("square"),
                    "mul",
                    vec![x.clone(), x.clone()],
                    sq.clone(),
                    full.clone(),
                );
                let ms = self.temp("mean", red_t.clone());
                self.push(
                    Some("mean"),
                    "mean",
                    vec![sq],
                    ms.clone(),
                    reduction_iteration(&xt.shape),
                );
                let r = self.inverse_root(ms, red_t, eps)?;
                let n = self.temp("normalize", xt.clone());
                self.push(
                    Some("normalize"),
                    "mul",
                    vec![x, r],
                    n.clone(),
                    full.clone(),
                );
                self.push(Some("scale"), "mul", vec![n, w], y, full);
                Ok(())
            }
            _ => Err(self.err(format!(
                "no lowering for op {op} at node {}; supported: {}",
                self.node.name,
                SUPPORTED_GRAPH_OPS.join(", ")
            ))),
        }
    }
}

/// Largest constant table (elements) a decomposition creates: masks grow with the square
/// of an axis, and a table this size is already 2 MB in fp16.
const TABLE_LIMIT: usize = 1 << 20;

/// Decompositions that need constant tables.
impl Builder<'_> {
    /// Checks that a constant table of `rows` x `cols` elements is small enough to make.
    fn table(&self, what: &str, rows: usize, cols: usize) -> Result<usize, CompileError> {
        match rows.checked_mul(cols) {
            Some(n) if n <= TABLE_LIMIT => Ok(n),
            _ => Err(self.err(format!(
                "{} needs a {rows} x {cols} constant {what}, more than the {TABLE_LIMIT} elements this compiler makes",
                self.node.op
            ))),
        }
    }

    /// A new constant initializer of this node.
    fn constant(&mut self, step: &str, ty: TensorType, init: graph::InitSpec) -> String {
        let name = self.temp(step, ty.clone());
        self.c.graph.initializers.push(graph::Initializer {
            name: name.clone(),
            ty,
            init,
        });
        name
    }

    /// Trilu on data (a constant Trilu folds away in canonicalize): a `where` keeping the
    /// triangle through a constant bool mask, zero elsewhere (a select, so an infinity
    /// outside the triangle still gives zero).
    fn trilu(&mut self) -> Result<(), CompileError> {
        let (x, y) = (self.input(0)?, self.output()?);
        let xt = self.ty(&x)?;
        let r = xt.shape.len();
        if r < 2 {
            return Err(self.err(format!("Trilu needs a rank >= 2 tensor, got rank {r}")));
        }
        let (rows, cols) = (xt.shape[r - 2], xt.shape[r - 1]);
        let n = self.table("mask", rows, cols)?;
        let upper = self.int_attr("upper", 1)? != 0;
        let k = self.int_attr("k", 0)?;
        let mask: Vec<f32> = (0..n)
            .map(|f| {
                let (i, j) = ((f / cols) as i64, (f % cols) as i64);
                let keep = if upper { j - i >= k } else { j - i <= k };
                f32::from(u8::from(keep))
            })
            .collect();
        let m = self.constant(
            "mask",
            TensorType {
                dtype: DType::Bool,
                shape: vec![rows, cols],
            },
            graph::InitSpec::Data(mask),
        );
        let zero = self.constant(
            "zero",
            TensorType {
                dtype: xt.dtype,
                shape: vec![],
            },
            graph::InitSpec::Zeros,
        );
        let it = pointwise_iteration(&xt.shape);
        self.push(Some("select"), "where", vec![m, x, zero], y, it);
        Ok(())
    }
}

/// The type of a per-row statistic of `t` (its last axis kept with size 1), as softmax and
/// the normalisations compute.
fn row_statistic(t: &TensorType) -> TensorType {
    let mut shape = t.shape.clone();
    if let Some(l) = shape.last_mut() {
        *l = 1;
    }
    TensorType {
        dtype: t.dtype,
        shape,
    }
}

/// The `decompose` pass: fills `c.ops`.
pub fn decompose(c: &mut Compilation) -> Result<(), CompileError> {
    let nodes = c.graph.nodes.clone();
    let mut all = Vec::new();
    for node in &nodes {
        if node.outputs.iter().filter(|o| !o.is_empty()).count() > 1 {
            return Err(CompileError::at(
                &node.name,
                format!("{} with more than one output is not supported", node.op),
            ));
        }
        let mut b = Builder {
            c,
            node,
            ops: Vec::new(),
        };
        b.decompose()?;
        all.extend(b.ops);
    }
    for op in &all {
        check_dtypes(c, op)?;
    }
    c.ops = all;
    Ok(())
}

/// Checks a device op's element types against what the device computes on (see the
/// module doc), so integer or bool data reaching a float op fails here, by name.
fn check_dtypes(c: &Compilation, op: &DeviceOp) -> Result<(), CompileError> {
    let dtype = |t: &String| -> Result<DType, CompileError> { Ok(c.ty(t, &op.name)?.dtype) };
    let refuse = |t: &str, dt: DType, why: &str| {
        Err(CompileError::at(
            &op.name,
            format!(
                "{} on {} tensor '{t}' is not supported; {why}",
                op.op,
                dt.name()
            ),
        ))
    };
    let name = op.op.as_str();
    if MOVEMENT.contains(&name) || matches!(name, "to_dtype" | "equal" | "greater" | "lesser") {
        // Moved or converted as data; a comparison's result is bool by type inference.
        return Ok(());
    }
    for (i, t) in op.inputs.iter().chain(&op.outputs).enumerate() {
        let dt = dtype(t)?;
        let ok = match name {
            "where" if i == 0 => dt == DType::Bool,
            // The values chosen between may be of any type.
            "where" => true,
            _ => dt.is_float(),
        };
        if !ok {
            let why = match name {
                "where" if i == 0 => "the condition must be bool",
                _ => "device ops compute on float types",
            };
            return refuse(t, dt, why);
        }
    }
    Ok(())
}

/// Element size, guarding against a zero-size dtype.
pub(crate) fn dsize(dt: DType) -> usize {
    dt.size_bytes().max(1)
}

/// One line per op, for the decompose snapshot.
pub fn describe_op(op: &DeviceOp) -> String {
    let it: Vec<String> = op
        .iteration
        .iter()
        .map(|d| {
            let mut s = format!("{}={}", d.label, d.extent);
            if d.in_sticks {
                s.push_str(" sticks");
            }
            if d.reduction {
                s.push_str(" red");
            }
            s
        })
        .collect();
    format!(
        "{}: {}({}) -> {}  iter [{}]",
        op.name,
        op.op,
        op.inputs.join(", "),
        op.outputs.join(", "),
        it.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use crate::passes::tests::{graph_of, upto};
    use crate::{compile, Compilation, CompileError, Target};
    use graph::InitSpec;

    fn decompose(inputs: &str, inits: &str, nodes: &str, outputs: &str) -> Compilation {
        try_decompose(inputs, inits, nodes, outputs).unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_decompose(
        inputs: &str,
        inits: &str,
        nodes: &str,
        outputs: &str,
    ) -> Result<Compilation, CompileError> {
        let g = graph_of(inputs, inits, nodes, outputs);
        compile(&g, &Target::spyre32(), &upto("decompose"))
    }

    /// (op name, device op) of every op.
    fn ops(c: &Compilation) -> Vec<(String, String)> {
        c.ops
            .iter()
            .map(|o| (o.name.clone(), o.op.clone()))
            .collect()
    }

    fn data(c: &Compilation, name: &str) -> Vec<f32> {
        match &c
            .graph
            .initializers
            .iter()
            .find(|i| i.name == name)
            .unwrap()
            .init
        {
            InitSpec::Data(d) => d.clone(),
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn trilu_on_data_selects_with_a_mask() {
        let c = decompose(
            r#"{"name": "x", "dtype": "f16", "shape": [2, 3]}"#,
            "",
            r#"{"name": "t", "op": "Trilu", "inputs": ["x"], "outputs": ["y"], "attrs": {"upper": 0, "k": -1}}"#,
            r#""y""#,
        );
        assert_eq!(ops(&c), [("t/select".into(), "where".into())]);
        assert_eq!(c.ops[0].inputs, ["t/mask", "x", "t/zero"]);
        assert_eq!(c.types["t/mask"].dtype, graph::DType::Bool);
        assert_eq!(data(&c, "t/mask"), [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn comparisons_where_and_casts_keep_their_types() {
        let c = decompose(
            r#"{"name": "a", "dtype": "f16", "shape": [4, 8]}, {"name": "b", "dtype": "f16", "shape": [8]}"#,
            "",
            r#"{"name": "lt", "op": "Less", "inputs": ["a", "b"], "outputs": ["c"]},
               {"name": "sel", "op": "Where", "inputs": ["c", "a", "b"], "outputs": ["m"]},
               {"name": "eq", "op": "Equal", "inputs": ["m", "a"], "outputs": ["e"]},
               {"name": "cast", "op": "Cast", "inputs": ["e"], "outputs": ["y"], "attrs": {"to": "i32"}}"#,
            r#""y""#,
        );
        let kinds: Vec<String> = c.ops.iter().map(|o| o.op.clone()).collect();
        assert_eq!(kinds, ["lesser", "where", "equal", "to_dtype"]);
        assert_eq!(c.types["c"].dtype, graph::DType::Bool);
    }

    #[test]
    fn integer_data_in_a_float_op_is_an_error_naming_it() {
        let e = try_decompose(
            r#"{"name": "a", "dtype": "f16", "shape": [4, 8]}"#,
            "",
            r#"{"name": "cast", "op": "Cast", "inputs": ["a"], "outputs": ["ai"], "attrs": {"to": "i32"}},
               {"name": "twice", "op": "Add", "inputs": ["ai", "ai"], "outputs": ["y"]}"#,
            r#""y""#,
        )
        .unwrap_err();
        assert_eq!(e.node.as_deref(), Some("twice"));
        assert_eq!(
            e.message,
            "add on i32 tensor 'ai' is not supported; device ops compute on float types"
        );
    }
}
