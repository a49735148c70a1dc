//! Elementwise ops of the interpreter: `arith`/`math` ops, compares, selects and casts on
//! scalars or tensors (scalars broadcast). Scalar results are computed here; tensor
//! contents by the value domain, over [`crate::exec_ew`]'s per-element semantics.

use crate::domain::Arg;
use crate::exec_ew;
use crate::resolve::ROp;
use crate::state::{CoreCtx, Simulator};
use crate::value::{scalar_value, RtValue, SimError, TensorVal};
use ktir::ast::*;
use ktir::ast::{CostClass, ElementwiseOp, Predicate};

/// The first operand timing-only mode did not compute, if any.
pub(crate) fn first_unknown(args: &[Arg]) -> Option<u32> {
    args.iter().find_map(|a| match a {
        Arg::Unknown(line) => Some(*line),
        _ => None,
    })
}

pub(crate) fn tensors(args: &[Arg]) -> Vec<&TensorVal> {
    args.iter()
        .filter_map(|a| match a {
            Arg::Tensor(t) => Some(t.as_ref()),
            _ => None,
        })
        .collect()
}

pub(crate) fn scalar_of(v: &RtValue) -> Option<f64> {
    match v {
        RtValue::Index(i) => Some(*i as f64),
        RtValue::Float(f) => Some(*f),
        _ => None,
    }
}

pub(crate) fn args(
    sim: &Simulator<'_>,
    slots: &[Option<RtValue>],
    rop: &ROp<'_>,
    range: std::ops::Range<usize>,
) -> Result<Vec<Arg>, SimError> {
    range
        .map(|i| match sim.get(slots, rop, i)? {
            RtValue::Tensor(t) => Ok(Arg::Tensor(t.clone())),
            RtValue::Unknown(line) => Ok(Arg::Unknown(*line)),
            v => scalar_of(v)
                .map(Arg::Scalar)
                .ok_or_else(|| sim.at(rop, format!("operand {i} is not a number or tensor"))),
        })
        .collect()
}

/// The common shape of the tensor operands (scalars broadcast).
pub(crate) fn common_shape(
    sim: &Simulator<'_>,
    rop: &ROp<'_>,
    args: &[Arg],
) -> Result<Option<Vec<usize>>, SimError> {
    let mut shape: Option<&Vec<usize>> = None;
    for a in args {
        if let Arg::Tensor(t) = a {
            match shape {
                None => shape = Some(&t.shape),
                Some(s) if *s != t.shape => {
                    return Err(sim.at(
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
pub(crate) fn data_scalar(
    sim: &Simulator<'_>,
    slots: &[Option<RtValue>],
    rop: &ROp<'_>,
    i: usize,
    what: &str,
) -> Result<f64, SimError> {
    match sim.get(slots, rop, i)? {
        // Only the shapes-only domain makes unknown scalars, and it reads no data.
        RtValue::Unknown(_) => Ok(0.0),
        v => scalar_of(v).ok_or_else(|| sim.at(rop, what.into())),
    }
}

/// Elementwise `ew` over operands `range`; the result has the op's result element type
/// (or `elem` when given).
pub(crate) fn elementwise(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &[Option<RtValue>],
    ctx: &mut CoreCtx,
    ew: ElementwiseOp,
    range: std::ops::Range<usize>,
) -> Result<RtValue, SimError> {
    elementwise_as(sim, rop, slots, ctx, ew, range, None)
}

pub(crate) fn elementwise_as(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &[Option<RtValue>],
    ctx: &mut CoreCtx,
    ew: ElementwiseOp,
    range: std::ops::Range<usize>,
    elem: Option<ScalarType>,
) -> Result<RtValue, SimError> {
    let args = args(sim, slots, rop, range)?;
    let elem = elem
        .or_else(|| rop.op.result_types.first().and_then(Type::elem))
        .unwrap_or(ScalarType::F32);
    let int = exec_ew::computes_on_ints(ew, elem);
    let Some(shape) = common_shape(sim, rop, &args)? else {
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
        let r = crate::domain::apply(ew, elem, int, &vals).ok_or_else(|| {
            let message = if vals.get(1) == Some(&0.0) {
                "integer division by zero"
            } else {
                "integer division overflows (the minimum value divided by -1)"
            };
            sim.at(rop, message.into())
        })?;
        return Ok(scalar_value(r, elem));
    };
    let n: usize = shape.iter().product();
    let data = sim
        .domain
        .elementwise(ew, elem, int, &args, n)
        .map_err(|i| {
            sim.at(
                rop,
                format!("integer division by zero or overflow (the minimum value divided by -1) at element {i}"),
            )
        })?;
    let inputs = tensors(&args);
    let transcendental = ew.cost() == CostClass::Transcendental;
    let task = sim.sfp(ctx, rop, n, transcendental, &inputs)?;
    sim.new_tensor(ctx, rop, shape, elem, data, Some(task))
}

pub(crate) fn compare(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &[Option<RtValue>],
    ctx: &mut CoreCtx,
    predicate: Predicate,
) -> Result<RtValue, SimError> {
    let OpKind::Compare { operand_type, .. } = &rop.op.kind else {
        return Err(sim.at(rop, "not a compare".into()));
    };
    let elem = operand_type.elem().unwrap_or(ScalarType::F32);
    let args = args(sim, slots, rop, 0..2)?;
    let Some(shape) = common_shape(sim, rop, &args)? else {
        if let Some(line) = first_unknown(&args) {
            return Ok(RtValue::Unknown(line));
        }
        let (Arg::Scalar(a), Arg::Scalar(b)) = (&args[0], &args[1]) else {
            return Err(sim.at(rop, "operands are of different kinds".into()));
        };
        return Ok(RtValue::Index(i64::from(exec_ew::compare(
            predicate, *a, *b, elem,
        ))));
    };
    let n: usize = shape.iter().product();
    let data = sim.domain.compare(predicate, elem, &args, n);
    let inputs = tensors(&args);
    let task = sim.sfp(ctx, rop, n, false, &inputs)?;
    sim.new_tensor(ctx, rop, shape, ScalarType::I1, data, Some(task))
}

pub(crate) fn select(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &[Option<RtValue>],
    ctx: &mut CoreCtx,
) -> Result<RtValue, SimError> {
    let cond = sim.get(slots, rop, 0)?.clone();
    if let Some(c) = scalar_of(&cond) {
        return Ok(sim.get(slots, rop, if c != 0.0 { 1 } else { 2 })?.clone());
    }
    if let RtValue::Unknown(line) = cond {
        // Choosing between scalars leaves a scalar no more unknown than before; choosing
        // between tensors picks whose readiness the result has, which timing needs.
        let branches = [sim.get(slots, rop, 1)?, sim.get(slots, rop, 2)?];
        if branches.iter().any(|v| matches!(v, RtValue::Tensor(_))) {
            return Err(sim.unknown(rop, 0, line));
        }
        return Ok(RtValue::Unknown(line));
    }
    let args = args(sim, slots, rop, 0..3)?;
    let shape = common_shape(sim, rop, &args)?
        .ok_or_else(|| sim.at(rop, "condition is neither a scalar nor a tensor".into()))?;
    let n: usize = shape.iter().product();
    let elem = rop
        .op
        .result_types
        .first()
        .and_then(Type::elem)
        .unwrap_or(ScalarType::F32);
    let data = sim.domain.select(&args, n);
    let inputs = tensors(&args);
    let task = sim.sfp(ctx, rop, n, false, &inputs)?;
    sim.new_tensor(ctx, rop, shape, elem, data, Some(task))
}

pub(crate) fn cast(
    sim: &mut Simulator<'_>,
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
        .ok_or_else(|| sim.at(rop, "cast without a result type".into()))?;
    let from = source_type.elem().unwrap_or(ScalarType::F32);
    match sim.get(slots, rop, 0)?.clone() {
        RtValue::Tensor(x) => {
            let data = sim.domain.cast(name, &x, from, to);
            let task = sim.sfp(ctx, rop, x.numel(), false, &[&x])?;
            sim.new_tensor(ctx, rop, x.shape.clone(), to, data, Some(task))
        }
        RtValue::Unknown(line) => Ok(RtValue::Unknown(line)),
        v => {
            let x =
                scalar_of(&v).ok_or_else(|| sim.at(rop, "operand cannot be converted".into()))?;
            Ok(scalar_value(exec_ew::cast(name, x, from, to), to))
        }
    }
}
