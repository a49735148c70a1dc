//! Tensor and scalar compute ops of the interpreter: elementwise arith/math, compares,
//! selects and casts on scalars or tensors; tensor construction and slicing; linalg named
//! ops, `linalg.generic` (its region interpreted per iteration point) and `linalg.reduce`
//! (a fast path for single-op combiners, the region interpreted otherwise).

use crate::domain::Arg;
use crate::exec::{
    for_each_point, strides_of, CoreCtx, ROp, RtValue, SimError, Simulator, TensorVal,
};
use crate::exec_ew;
use crate::timing::{Unit, Work};
use ktir::ast::*;
use ktir::ast::{CostClass, ElementwiseOp, LinalgNamedOp, Predicate};
use std::rc::Rc;

/// The first operand timing-only mode did not compute, if any.
fn first_unknown(args: &[Arg]) -> Option<u32> {
    args.iter().find_map(|a| match a {
        Arg::Unknown(line) => Some(*line),
        _ => None,
    })
}

fn tensors(args: &[Arg]) -> Vec<&TensorVal> {
    args.iter()
        .filter_map(|a| match a {
            Arg::Tensor(t) => Some(t.as_ref()),
            _ => None,
        })
        .collect()
}

fn scalar_of(v: &RtValue) -> Option<f64> {
    match v {
        RtValue::Index(i) => Some(*i as f64),
        RtValue::Float(f) => Some(*f),
        _ => None,
    }
}

pub(crate) fn scalar_value(x: f64, elem: ScalarType) -> RtValue {
    if elem.is_float() {
        RtValue::Float(x)
    } else {
        RtValue::Index(x as i64)
    }
}

impl Simulator<'_> {
    fn args(
        &self,
        slots: &[Option<RtValue>],
        rop: &ROp<'_>,
        range: std::ops::Range<usize>,
    ) -> Result<Vec<Arg>, SimError> {
        range
            .map(|i| match self.get(slots, rop, i)? {
                RtValue::Tensor(t) => Ok(Arg::Tensor(t.clone())),
                RtValue::Unknown(line) => Ok(Arg::Unknown(*line)),
                v => scalar_of(v)
                    .map(Arg::Scalar)
                    .ok_or_else(|| self.at(rop, format!("operand {i} is not a number or tensor"))),
            })
            .collect()
    }

    /// The common shape of the tensor operands (scalars broadcast).
    fn common_shape(&self, rop: &ROp<'_>, args: &[Arg]) -> Result<Option<Vec<usize>>, SimError> {
        let mut shape: Option<&Vec<usize>> = None;
        for a in args {
            if let Arg::Tensor(t) = a {
                match shape {
                    None => shape = Some(&t.shape),
                    Some(s) if *s != t.shape => {
                        return Err(self.at(
                            rop,
                            format!("operand shapes {s:?} and {:?} differ", t.shape),
                        ))
                    }
                    _ => {}
                }
            }
        }
        Ok(shape.cloned())
    }

    /// A scalar operand whose value only feeds tensor data: in timing-only mode, where no
    /// data is computed, one that was not computed either is accepted (as 0, never read).
    fn data_scalar(
        &self,
        slots: &[Option<RtValue>],
        rop: &ROp<'_>,
        i: usize,
        what: &str,
    ) -> Result<f64, SimError> {
        match self.get(slots, rop, i)? {
            // Only the shapes-only domain makes unknown scalars, and it reads no data.
            RtValue::Unknown(_) => Ok(0.0),
            v => scalar_of(v).ok_or_else(|| self.at(rop, what.into())),
        }
    }

    /// Elementwise `ew` over operands `range`; the result has the op's result element type
    /// (or `elem` when given).
    pub(crate) fn elementwise(
        &mut self,
        rop: &ROp<'_>,
        slots: &[Option<RtValue>],
        ctx: &mut CoreCtx,
        ew: ElementwiseOp,
        range: std::ops::Range<usize>,
    ) -> Result<RtValue, SimError> {
        self.elementwise_as(rop, slots, ctx, ew, range, None)
    }

    fn elementwise_as(
        &mut self,
        rop: &ROp<'_>,
        slots: &[Option<RtValue>],
        ctx: &mut CoreCtx,
        ew: ElementwiseOp,
        range: std::ops::Range<usize>,
        elem: Option<ScalarType>,
    ) -> Result<RtValue, SimError> {
        let args = self.args(slots, rop, range)?;
        let elem = elem
            .or_else(|| rop.op.result_types.first().and_then(Type::elem))
            .unwrap_or(ScalarType::F32);
        let int = exec_ew::computes_on_ints(ew, elem);
        let Some(shape) = self.common_shape(rop, &args)? else {
            if let Some(line) = first_unknown(&args) {
                return Ok(RtValue::Unknown(line));
            }
            let vals: Vec<f64> = args
                .iter()
                .map(|a| match a {
                    Arg::Scalar(x) => *x,
                    _ => 0.0,
                })
                .collect();
            let r = crate::domain::apply(ew, elem, int, &vals)
                .ok_or_else(|| self.at(rop, "integer division by zero".into()))?;
            return Ok(scalar_value(r, elem));
        };
        let n: usize = shape.iter().product();
        let data = self
            .domain
            .elementwise(ew, elem, int, &args, n)
            .map_err(|i| self.at(rop, format!("integer division by zero at element {i}")))?;
        let inputs = tensors(&args);
        let transcendental = ew.cost() == CostClass::Transcendental;
        let task = self.sfp(ctx, rop, n, transcendental, &inputs)?;
        self.new_tensor(ctx, rop, shape, elem, data, Some(task))
    }

    pub(crate) fn compare(
        &mut self,
        rop: &ROp<'_>,
        slots: &[Option<RtValue>],
        ctx: &mut CoreCtx,
        predicate: Predicate,
    ) -> Result<RtValue, SimError> {
        let OpKind::Compare { operand_type, .. } = &rop.op.kind else {
            return Err(self.at(rop, "not a compare".into()));
        };
        let elem = operand_type.elem().unwrap_or(ScalarType::F32);
        let args = self.args(slots, rop, 0..2)?;
        let Some(shape) = self.common_shape(rop, &args)? else {
            if let Some(line) = first_unknown(&args) {
                return Ok(RtValue::Unknown(line));
            }
            let (Arg::Scalar(a), Arg::Scalar(b)) = (&args[0], &args[1]) else {
                return Err(self.at(rop, "operands are of different kinds".into()));
            };
            return Ok(RtValue::Index(i64::from(exec_ew::compare(
                predicate, *a, *b, elem,
            ))));
        };
        let n: usize = shape.iter().product();
        let data = self.domain.compare(predicate, elem, &args, n);
        let inputs = tensors(&args);
        let task = self.sfp(ctx, rop, n, false, &inputs)?;
        self.new_tensor(ctx, rop, shape, ScalarType::I1, data, Some(task))
    }

    pub(crate) fn select(
        &mut self,
        rop: &ROp<'_>,
        slots: &[Option<RtValue>],
        ctx: &mut CoreCtx,
    ) -> Result<RtValue, SimError> {
        let cond = self.get(slots, rop, 0)?.clone();
        if let Some(c) = scalar_of(&cond) {
            return Ok(self.get(slots, rop, if c != 0.0 { 1 } else { 2 })?.clone());
        }
        if let RtValue::Unknown(line) = cond {
            // Choosing between scalars leaves a scalar no more unknown than before; choosing
            // between tensors picks whose readiness the result has, which timing needs.
            let branches = [self.get(slots, rop, 1)?, self.get(slots, rop, 2)?];
            if branches.iter().any(|v| matches!(v, RtValue::Tensor(_))) {
                return Err(self.unknown(rop, 0, line));
            }
            return Ok(RtValue::Unknown(line));
        }
        let args = self.args(slots, rop, 0..3)?;
        let shape = self
            .common_shape(rop, &args)?
            .ok_or_else(|| self.at(rop, "condition is neither a scalar nor a tensor".into()))?;
        let n: usize = shape.iter().product();
        let elem = rop
            .op
            .result_types
            .first()
            .and_then(Type::elem)
            .unwrap_or(ScalarType::F32);
        let data = self.domain.select(&args, n);
        let inputs = tensors(&args);
        let task = self.sfp(ctx, rop, n, false, &inputs)?;
        self.new_tensor(ctx, rop, shape, elem, data, Some(task))
    }

    pub(crate) fn cast(
        &mut self,
        rop: &ROp<'_>,
        slots: &[Option<RtValue>],
        ctx: &mut CoreCtx,
        name: &str,
        source_type: &Type,
    ) -> Result<RtValue, SimError> {
        let to = rop
            .op
            .result_types
            .first()
            .and_then(Type::elem)
            .ok_or_else(|| self.at(rop, "cast without a result type".into()))?;
        let from = source_type.elem().unwrap_or(ScalarType::F32);
        match self.get(slots, rop, 0)?.clone() {
            RtValue::Tensor(x) => {
                let data = self.domain.cast(name, &x, from, to);
                let task = self.sfp(ctx, rop, x.numel(), false, &[&x])?;
                self.new_tensor(ctx, rop, x.shape.clone(), to, data, Some(task))
            }
            RtValue::Unknown(line) => Ok(RtValue::Unknown(line)),
            v => {
                let x = scalar_of(&v)
                    .ok_or_else(|| self.at(rop, "operand cannot be converted".into()))?;
                Ok(scalar_value(exec_ew::cast(name, x, from, to), to))
            }
        }
    }

    /// Offsets, sizes and strides of a slice op from literals and index operands.
    #[allow(clippy::type_complexity)]
    fn slice_params(
        &self,
        slots: &[Option<RtValue>],
        rop: &ROp<'_>,
        first: usize,
        lists: [&[SizeOperand]; 3],
    ) -> Result<(Vec<i64>, Vec<usize>, Vec<i64>), SimError> {
        let mut next = first;
        let mut out: Vec<Vec<i64>> = Vec::new();
        for list in lists {
            let mut v = Vec::with_capacity(list.len());
            for s in list {
                v.push(match s {
                    SizeOperand::Static(x) => *x,
                    SizeOperand::Dynamic(_) => {
                        let x = self.index(slots, rop, next)?;
                        next += 1;
                        x
                    }
                });
            }
            out.push(v);
        }
        let sizes: Vec<usize> = out[1].iter().map(|&s| s.max(0) as usize).collect();
        self.check_size(rop, &sizes)?;
        Ok((out[0].clone(), sizes, out[2].clone()))
    }

    pub(crate) fn exec_tensor(
        &mut self,
        rop: &ROp<'_>,
        slots: &mut [Option<RtValue>],
        ctx: &mut CoreCtx,
    ) -> Result<(), SimError> {
        match &rop.op.kind {
            OpKind::TensorEmpty { .. } => {
                let (shape, elem) = self.dynamic_result_shape(slots, rop, 0)?;
                let data = self.domain.filled(shape.iter().product(), 0.0);
                let v = self.new_tensor(ctx, rop, shape, elem, data, None)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::TensorSplat { .. } => {
                let x = self.data_scalar(slots, rop, 0, "splat value must be a scalar")?;
                let (shape, elem) = self.dynamic_result_shape(slots, rop, 1)?;
                let n = shape.iter().product::<usize>();
                let data = self.domain.filled(n, crate::exec::round_to(elem, x as f32));
                let task = self.record(
                    ctx,
                    Unit::Sfp,
                    Work::Compute {
                        cycles: self.machine.sfp_cycles(n as u64, false),
                    },
                    Vec::new(),
                    rop,
                )?;
                let v = self.new_tensor(ctx, rop, shape, elem, data, Some(task))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::TensorExtract { indices, .. } => {
                let t = self.tensor(slots, rop, 0)?;
                let flat = self.flat_index(slots, rop, &t.shape, 1, indices.len())?;
                let v = self
                    .domain
                    .extract(&t, flat, rop.line)
                    .ok_or_else(|| self.at(rop, "the tensor holds no data".into()))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::TensorInsert { indices, .. } => {
                let x = self.data_scalar(slots, rop, 0, "inserted value must be a scalar")?;
                let t = self.tensor(slots, rop, 1)?;
                let flat = self.flat_index(slots, rop, &t.shape, 2, indices.len())?;
                let data = self.domain.insert(&t, flat, x as f32);
                let task = self.sfp(ctx, rop, 1, false, &[&t])?;
                let v = self.new_tensor(ctx, rop, t.shape.clone(), t.elem, data, Some(task))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::ExtractSlice {
                offsets,
                sizes,
                strides,
                ..
            } => {
                let x = self.tensor(slots, rop, 0)?;
                let (offs, szs, strs) =
                    self.slice_params(slots, rop, 1, [offsets, sizes, strides])?;
                let data = self
                    .domain
                    .extract_slice(&x, &offs, &szs, &strs)
                    .map_err(|m| self.at(rop, m))?;
                let len: usize = szs.iter().product();
                // Result shape: the result type's, which may drop unit dims of the slice.
                let shape = match rop.op.result_types.first().and_then(Type::static_shape) {
                    Some(s) => s,
                    None => szs.clone(),
                };
                if shape.iter().product::<usize>() != len {
                    return Err(self.at(
                        rop,
                        format!("slice of {len} elements does not fill the result shape {shape:?}"),
                    ));
                }
                let v = self.new_tensor(ctx, rop, shape, x.elem, data, x.ready)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::InsertSlice {
                offsets,
                sizes,
                strides,
                ..
            } => {
                let src = self.tensor(slots, rop, 0)?;
                let dst = self.tensor(slots, rop, 1)?;
                let (offs, szs, strs) =
                    self.slice_params(slots, rop, 2, [offsets, sizes, strides])?;
                let data = self
                    .domain
                    .insert_slice(&src, &dst, &offs, &szs, &strs)
                    .map_err(|m| self.at(rop, m))?;
                let task = self.sfp(ctx, rop, src.numel(), false, &[&src, &dst])?;
                let v = self.new_tensor(ctx, rop, dst.shape.clone(), dst.elem, data, Some(task))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Fill { .. } => {
                let x = self.data_scalar(slots, rop, 0, "fill value must be a scalar")?;
                let init = self.tensor(slots, rop, 1)?;
                let data = self
                    .domain
                    .filled(init.numel(), crate::exec::round_to(init.elem, x as f32));
                let task = self.sfp(ctx, rop, init.numel(), false, &[&init])?;
                let v =
                    self.new_tensor(ctx, rop, init.shape.clone(), init.elem, data, Some(task))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Matmul { .. } => {
                let (a, b, c) = (
                    self.tensor(slots, rop, 0)?,
                    self.tensor(slots, rop, 1)?,
                    self.tensor(slots, rop, 2)?,
                );
                let v = self.matmul(rop, ctx, &a, &b, &c, false, false)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Transpose { permutation, .. } => {
                let x = self.tensor(slots, rop, 0)?;
                if permutation.iter().any(|&p| p >= x.shape.len()) {
                    return Err(
                        self.at(rop, format!("permutation {permutation:?} exceeds the rank"))
                    );
                }
                let out_shape: Vec<usize> = permutation.iter().map(|&p| x.shape[p]).collect();
                let in_strides = strides_of(&x.shape);
                let from: Vec<usize> = permutation.iter().map(|&p| in_strides[p]).collect();
                let out = self.domain.gather(&x, &out_shape, &from);
                let task = self.sfp(ctx, rop, x.numel(), false, &[&x])?;
                let v = self.new_tensor(ctx, rop, out_shape, x.elem, out, Some(task))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::Broadcast { dimensions, .. } => {
                let x = self.tensor(slots, rop, 0)?;
                let init = self.tensor(slots, rop, 1)?;
                let in_strides = strides_of(&x.shape);
                // Broadcast dimensions step nowhere in the source; the others step
                // through its dimensions in order.
                let mut kept = in_strides.iter().copied();
                let from: Vec<usize> = (0..init.shape.len())
                    .map(|d| {
                        if dimensions.contains(&d) {
                            0
                        } else {
                            kept.next().unwrap_or(0)
                        }
                    })
                    .collect();
                let out = self.domain.gather(&x, &init.shape, &from);
                let task = self.sfp(ctx, rop, init.numel(), false, &[&x, &init])?;
                let v =
                    self.new_tensor(ctx, rop, init.shape.clone(), init.elem, out, Some(task))?;
                self.set(slots, rop, 0, v);
            }
            OpKind::CollapseShape { .. } | OpKind::ExpandShape { .. } => {
                // A reshape of a row-major tile is free: same data, new shape.
                let x = self.tensor(slots, rop, 0)?;
                let shape = match rop.op.result_types.first().and_then(Type::static_shape) {
                    Some(s) => s,
                    None => {
                        // One dynamic dimension: infer it from the element count.
                        let t = rop.op.result_types.first();
                        let known: usize = t
                            .map(|t| {
                                t.shape()
                                    .iter()
                                    .map(|d| match d {
                                        Dim::Static(n) => *n,
                                        Dim::Dynamic => 1,
                                    })
                                    .product()
                            })
                            .unwrap_or(1);
                        let missing = x.numel() / known.max(1);
                        t.map(|t| {
                            t.shape()
                                .iter()
                                .map(|d| match d {
                                    Dim::Static(n) => *n,
                                    Dim::Dynamic => missing,
                                })
                                .collect()
                        })
                        .unwrap_or_default()
                    }
                };
                if shape.iter().product::<usize>() != x.numel() {
                    return Err(self.at(rop, format!("cannot reshape {:?} to {shape:?}", x.shape)));
                }
                let v = self.new_tensor(ctx, rop, shape, x.elem, x.data.clone(), x.ready)?;
                self.set(slots, rop, 0, v);
            }
            OpKind::LinalgNamed { op, inputs, .. } => {
                let k = inputs.len();
                let init = self.tensor(slots, rop, k)?;
                let v = match *op {
                    LinalgNamedOp::BatchMatmul => {
                        let (a, b) = (self.tensor(slots, rop, 0)?, self.tensor(slots, rop, 1)?);
                        self.batch_matmul(rop, ctx, &a, &b, &init)?
                    }
                    LinalgNamedOp::MatmulTransposeB | LinalgNamedOp::MatmulTransposeA => {
                        let (a, b) = (self.tensor(slots, rop, 0)?, self.tensor(slots, rop, 1)?);
                        let ta = *op == LinalgNamedOp::MatmulTransposeA;
                        self.matmul(rop, ctx, &a, &b, &init, ta, !ta)?
                    }
                    LinalgNamedOp::Matvec | LinalgNamedOp::Dot => {
                        let (a, b) = (self.tensor(slots, rop, 0)?, self.tensor(slots, rop, 1)?);
                        let dot = *op == LinalgNamedOp::Dot;
                        let (m, kk) = if dot {
                            (1, a.numel())
                        } else {
                            match a.shape.as_slice() {
                                [m, k] => (*m, *k),
                                _ => return Err(self.at(rop, "matvec needs a matrix".into())),
                            }
                        };
                        if b.numel() != kk || init.numel() != m {
                            return Err(self.at(
                                rop,
                                format!(
                                    "shapes {:?}, {:?} -> {:?} do not agree",
                                    a.shape, b.shape, init.shape
                                ),
                            ));
                        }
                        let a2 = Rc::new(TensorVal {
                            shape: vec![m, kk],
                            ..(*a).clone()
                        });
                        let b2 = Rc::new(TensorVal {
                            shape: vec![kk, 1],
                            ..(*b).clone()
                        });
                        let c2 = Rc::new(TensorVal {
                            shape: vec![m, 1],
                            ..(*init).clone()
                        });
                        let RtValue::Tensor(r) =
                            self.matmul(rop, ctx, &a2, &b2, &c2, false, false)?
                        else {
                            return Err(self.at(rop, "matmul gave no tensor".into()));
                        };
                        RtValue::Tensor(Rc::new(TensorVal {
                            shape: init.shape.clone(),
                            ..(*r).clone()
                        }))
                    }
                    LinalgNamedOp::Elementwise(ew) => {
                        let v = self.elementwise_as(rop, slots, ctx, ew, 0..k, Some(init.elem))?;
                        if let RtValue::Tensor(t) = &v {
                            if t.shape != init.shape {
                                return Err(self.at(
                                    rop,
                                    format!(
                                        "result shape {:?} differs from the init's {:?}",
                                        t.shape, init.shape
                                    ),
                                ));
                            }
                        }
                        v
                    }
                };
                self.set(slots, rop, 0, v);
            }
            OpKind::LinalgGeneric { inputs, inits, .. } => {
                self.linalg_generic(rop, slots, ctx, inputs.len(), inits.len())?
            }
            OpKind::LinalgReduce {
                inputs,
                inits,
                dimensions,
                ..
            } => self.linalg_reduce(rop, slots, ctx, inputs.len(), inits.len(), dimensions)?,
            _ => {
                return Err(self.at(
                    rop,
                    format!(
                        "'{}' is not executed by the simulator yet",
                        rop.op.kind.name()
                    ),
                ))
            }
        }
        Ok(())
    }

    fn flat_index(
        &self,
        slots: &[Option<RtValue>],
        rop: &ROp<'_>,
        shape: &[usize],
        first: usize,
        count: usize,
    ) -> Result<usize, SimError> {
        if count != shape.len() {
            return Err(self.at(
                rop,
                format!("{count} indices for a rank-{} tensor", shape.len()),
            ));
        }
        let strides = strides_of(shape);
        let mut flat = 0usize;
        for d in 0..count {
            let i = self.index(slots, rop, first + d)?;
            if i < 0 || i as usize >= shape[d] {
                return Err(self.at(
                    rop,
                    format!("index {i} of dimension {d} is outside the tensor's {shape:?} (out of bounds)"),
                ));
            }
            flat += i as usize * strides[d];
        }
        Ok(flat)
    }

    /// `c + op(a) x op(b)` accumulated in f32 and stored in `c`'s type.
    #[allow(clippy::too_many_arguments)]
    fn matmul(
        &mut self,
        rop: &ROp<'_>,
        ctx: &mut CoreCtx,
        a: &TensorVal,
        b: &TensorVal,
        c: &TensorVal,
        transpose_a: bool,
        transpose_b: bool,
    ) -> Result<RtValue, SimError> {
        let dims = |t: &TensorVal, tr: bool| match t.shape.as_slice() {
            [r, c] if tr => Some((*c, *r)),
            [r, c] => Some((*r, *c)),
            _ => None,
        };
        let (m, k, n) = match (
            dims(a, transpose_a),
            dims(b, transpose_b),
            c.shape.as_slice(),
        ) {
            (Some((m, k)), Some((k2, n)), [m2, n2]) if k == k2 && m == *m2 && n == *n2 => (m, k, n),
            _ => {
                return Err(self.at(
                    rop,
                    format!(
                        "shapes {:?} x {:?} -> {:?} do not agree",
                        a.shape, b.shape, c.shape
                    ),
                ))
            }
        };
        let out = self
            .domain
            .matmul(a, b, c, (m, k, n), transpose_a, transpose_b)
            .ok_or_else(|| self.at(rop, "operand data does not match its shape".into()))?;
        let cycles = self.machine.matmul_cycles(m as u64, n as u64, k as u64);
        let deps = a.ready.into_iter().chain(b.ready).chain(c.ready).collect();
        let task = self.record(ctx, Unit::Pt, Work::Compute { cycles }, deps, rop)?;
        self.new_tensor(ctx, rop, c.shape.clone(), c.elem, out, Some(task))
    }

    fn batch_matmul(
        &mut self,
        rop: &ROp<'_>,
        ctx: &mut CoreCtx,
        a: &TensorVal,
        b: &TensorVal,
        c: &TensorVal,
    ) -> Result<RtValue, SimError> {
        let (bt, m, k, n) = match (a.shape.as_slice(), b.shape.as_slice(), c.shape.as_slice()) {
            ([b1, m, k], [b2, k2, n], [b3, m2, n2])
                if b1 == b2 && b2 == b3 && k == k2 && m == m2 && n == n2 =>
            {
                (*b1, *m, *k, *n)
            }
            _ => {
                return Err(self.at(
                    rop,
                    format!(
                        "shapes {:?} x {:?} -> {:?} do not agree",
                        a.shape, b.shape, c.shape
                    ),
                ))
            }
        };
        let out = self
            .domain
            .batch_matmul(a, b, c, (bt, m, k, n))
            .map_err(|e| self.at(rop, e))?;
        let cycles = self
            .machine
            .matmul_cycles(m as u64, n as u64, k as u64)
            .saturating_mul(bt as u64);
        let deps = a.ready.into_iter().chain(b.ready).chain(c.ready).collect();
        let task = self.record(ctx, Unit::Pt, Work::Compute { cycles }, deps, rop)?;
        self.new_tensor(ctx, rop, c.shape.clone(), c.elem, out, Some(task))
    }

    fn linalg_generic(
        &mut self,
        rop: &ROp<'_>,
        slots: &mut [Option<RtValue>],
        ctx: &mut CoreCtx,
        n_in: usize,
        n_out: usize,
    ) -> Result<(), SimError> {
        let operands: Vec<RtValue> = (0..n_in + n_out)
            .map(|i| self.get(slots, rop, i).cloned())
            .collect::<Result<_, _>>()?;
        let maps: Vec<AffineMap> = rop
            .maps
            .iter()
            .cloned()
            .collect::<Option<Vec<_>>>()
            .filter(|m| m.len() == n_in + n_out)
            .ok_or_else(|| {
                self.at(
                    rop,
                    "indexing_maps are missing or not one affine_map per operand".into(),
                )
            })?;
        let loops = maps.first().map_or(0, |m| m.dims);
        let mut extents: Vec<Option<usize>> = vec![None; loops];
        for (v, m) in operands.iter().zip(&maps) {
            if let RtValue::Tensor(t) = v {
                if m.results.len() != t.shape.len() {
                    return Err(self.at(
                        rop,
                        format!(
                            "an indexing map with {} results for a rank-{} operand",
                            m.results.len(),
                            t.shape.len()
                        ),
                    ));
                }
                for (r, e) in m.results.iter().enumerate() {
                    if let AffineExpr::Dim(d) = e {
                        if let Some(x) = extents.get_mut(*d) {
                            x.get_or_insert(t.shape[r]);
                        }
                    }
                }
            }
        }
        let extents: Vec<usize> =
            extents
                .into_iter()
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    self.at(
                        rop,
                        "a loop's extent is not determined by any operand".into(),
                    )
                })?;
        let points = self.check_size(rop, &extents)?;
        let mut outs: Vec<Rc<TensorVal>> = Vec::with_capacity(n_out);
        for v in &operands[n_in..] {
            match v {
                RtValue::Tensor(t) => outs.push(t.clone()),
                _ => return Err(self.at(rop, "outputs must be tensors".into())),
            }
        }
        let mut out_data: Vec<Vec<f32>> = outs.iter().map(|t| t.data.clone()).collect();
        let strides: Vec<Vec<usize>> = operands
            .iter()
            .map(|v| match v {
                RtValue::Tensor(t) => strides_of(&t.shape),
                _ => Vec::new(),
            })
            .collect();
        let region = rop
            .regions
            .first()
            .ok_or_else(|| self.at(rop, "linalg.generic has no region".into()))?;
        let offset = |j: usize, p: &[i64]| -> Option<usize> {
            let mut o = 0usize;
            for (r, e) in maps[j].results.iter().enumerate() {
                let i = e.eval(p, &[])?;
                o += usize::try_from(i).ok()? * strides[j].get(r)?;
            }
            Some(o)
        };
        let mut err = None;
        let points_to_run = self.domain.region_space(&extents);
        for_each_point(&points_to_run, |_, p| {
            let mut args = Vec::with_capacity(n_in + n_out);
            for (j, v) in operands.iter().enumerate() {
                args.push(match v {
                    RtValue::Tensor(t) => {
                        let o = offset(j, p).ok_or_else(|| {
                            self.at(rop, "an indexing map leaves its operand".into())
                        })?;
                        let x = if j < n_in {
                            t.data.get(o).copied()
                        } else {
                            out_data[j - n_in].get(o).copied()
                        }
                        .ok_or_else(|| self.at(rop, "an indexing map leaves its operand".into()))?;
                        scalar_value(x as f64, t.elem)
                    }
                    other => other.clone(),
                });
            }
            let ys = match self.run_region(region, args, slots, ctx) {
                Ok(y) => y,
                Err(e) => {
                    err = Some(e.clone());
                    return Err(e);
                }
            };
            for (k, y) in ys.iter().enumerate().take(n_out) {
                let o = offset(n_in + k, p)
                    .ok_or_else(|| self.at(rop, "an indexing map leaves its operand".into()))?;
                let x = scalar_of(y)
                    .ok_or_else(|| self.at(rop, "linalg.yield must yield scalars".into()))?;
                if let Some(slot) = out_data[k].get_mut(o) {
                    *slot = crate::exec::round_to(outs[k].elem, x as f32);
                }
            }
            Ok(())
        })?;
        if let Some(e) = err {
            return Err(e);
        }
        let body_ops = region.ops.len().saturating_sub(1).max(1);
        let transcendental = region
            .ops
            .iter()
            .any(|o| o.ew.is_some_and(|e| e.cost() == CostClass::Transcendental));
        let inputs: Vec<&TensorVal> = operands
            .iter()
            .filter_map(|v| match v {
                RtValue::Tensor(t) => Some(t.as_ref()),
                _ => None,
            })
            .collect();
        let task = self.sfp(ctx, rop, points * body_ops, transcendental, &inputs)?;
        for (k, (t, data)) in outs.iter().zip(out_data).enumerate() {
            let v = self.new_tensor(ctx, rop, t.shape.clone(), t.elem, data, Some(task))?;
            self.set(slots, rop, k, v);
        }
        Ok(())
    }

    fn linalg_reduce(
        &mut self,
        rop: &ROp<'_>,
        slots: &mut [Option<RtValue>],
        ctx: &mut CoreCtx,
        n_in: usize,
        n_out: usize,
        dimensions: &[usize],
    ) -> Result<(), SimError> {
        let ins: Vec<Rc<TensorVal>> = (0..n_in)
            .map(|i| self.tensor(slots, rop, i))
            .collect::<Result<_, _>>()?;
        let inits: Vec<Rc<TensorVal>> = (0..n_out)
            .map(|i| self.tensor(slots, rop, n_in + i))
            .collect::<Result<_, _>>()?;
        let Some(x) = ins.first().cloned() else {
            return Err(self.at(rop, "a reduction needs an input".into()));
        };
        let inputs: Vec<&TensorVal> = ins.iter().chain(&inits).map(|t| t.as_ref()).collect();
        let task = self.sfp(ctx, rop, x.numel() * n_in.max(1), false, &inputs)?;
        let combiner = match rop.ints.first() {
            Some(1) => Some(crate::exec_ops::Combiner::Add),
            Some(2) => Some(crate::exec_ops::Combiner::Mul),
            Some(3) => Some(crate::exec_ops::Combiner::Max),
            Some(4) => Some(crate::exec_ops::Combiner::Min),
            _ => None,
        };
        if let (Some(c), 1, 1) = (combiner, n_in, n_out) {
            let init = &inits[0];
            let data = self
                .domain
                .reduce(&x, dimensions, init, c)
                .map_err(|m| self.at(rop, m))?;
            let v = self.new_tensor(ctx, rop, init.shape.clone(), init.elem, data, Some(task))?;
            self.set(slots, rop, 0, v);
            return Ok(());
        }
        // General combiner: interpret the region, folding in row-major order.
        let region = rop
            .regions
            .first()
            .filter(|r| !r.ops.is_empty())
            .ok_or_else(|| self.at(rop, "the reduction has no combiner region".into()))?;
        if dimensions.iter().any(|&d| d >= x.shape.len()) || ins.iter().any(|t| t.shape != x.shape)
        {
            return Err(self.at(
                rop,
                format!("cannot reduce {:?} over {dimensions:?}", x.shape),
            ));
        }
        let kept: Vec<usize> = (0..x.shape.len())
            .filter(|d| !dimensions.contains(d))
            .collect();
        let out_shape: Vec<usize> = kept.iter().map(|&d| x.shape[d]).collect();
        let out_strides = strides_of(&out_shape);
        if inits.iter().any(|t| t.shape != out_shape) {
            return Err(self.at(
                rop,
                format!(
                    "reducing {:?} over {dimensions:?} needs inits of shape {out_shape:?}",
                    x.shape
                ),
            ));
        }
        let mut acc: Vec<Vec<f32>> = inits.iter().map(|t| t.data.clone()).collect();
        let shape = self.domain.region_space(&x.shape);
        for_each_point(&shape, |flat, p| {
            let o: usize = kept
                .iter()
                .enumerate()
                .map(|(k, &d)| p[d] as usize * out_strides[k])
                .sum();
            let mut args = Vec::with_capacity(n_in + n_out);
            for t in &ins {
                args.push(scalar_value(t.data[flat] as f64, t.elem));
            }
            for (a, t) in acc.iter().zip(&inits) {
                args.push(scalar_value(a[o] as f64, t.elem));
            }
            let ys = self.run_region(region, args, slots, ctx)?;
            for (k, y) in ys.iter().enumerate().take(n_out) {
                let v = scalar_of(y)
                    .ok_or_else(|| self.at(rop, "the combiner must yield scalars".into()))?;
                acc[k][o] = crate::exec::round_to(inits[k].elem, v as f32);
            }
            Ok(())
        })?;
        for (k, (t, data)) in inits.iter().zip(acc).enumerate() {
            let v = self.new_tensor(ctx, rop, out_shape.clone(), t.elem, data, Some(task))?;
            self.set(slots, rop, k, v);
        }
        Ok(())
    }
}
