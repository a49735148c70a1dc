//! Tensor compute ops of the interpreter: tensor construction, element access and
//! slicing, transposes, broadcasts and reshapes; linalg named ops, `linalg.generic` (a body
//! of float arithmetic run once over whole tensors, any other region interpreted per
//! iteration point) and `linalg.reduce`
//! (a fast path for single-op combiners, the region interpreted otherwise).

use crate::elementwise;
use crate::resolve::{ROp, Region};
use crate::state::*;
use crate::timing::{Unit, Work};
use crate::value::*;
use ktir::ast::*;
use ktir::ast::{CostClass, LinalgNamedOp};
use std::rc::Rc;

/// Offsets, sizes and strides of a slice op from literals and index operands.
#[allow(clippy::type_complexity)]
fn slice_params(
    sim: &Simulator<'_>,
    slots: &[Option<RtValue>],
    rop: &ROp<'_>,
    first: usize,
    lists: [&[SizeOperand]; 3],
) -> Result<(Vec<i64>, Vec<usize>, Vec<i64>), SimError> {
    let mut next = first;
    // Dynamic operands are taken in order: the offsets', then the sizes', then the strides'.
    let mut value = |s: &SizeOperand| -> Result<i64, SimError> {
        match s {
            SizeOperand::Static(x) => Ok(*x),
            SizeOperand::Dynamic(_) => {
                let x = sim.index(slots, rop, next)?;
                next += 1;
                Ok(x)
            }
        }
    };
    let [offsets, sizes, strides] = lists;
    let offsets = offsets
        .iter()
        .map(&mut value)
        .collect::<Result<Vec<_>, _>>()?;
    let sizes = sizes
        .iter()
        .map(|s| value(s).map(|x| x.max(0) as usize))
        .collect::<Result<Vec<_>, _>>()?;
    let strides = strides
        .iter()
        .map(&mut value)
        .collect::<Result<Vec<_>, _>>()?;
    sim.check_size(rop, &sizes)?;
    Ok((offsets, sizes, strides))
}

pub(crate) fn exec_tensor(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &mut [Option<RtValue>],
    ctx: &mut CoreCtx,
) -> Result<(), SimError> {
    match &rop.op.kind {
        OpKind::TensorEmpty { .. } => {
            let (shape, elem) = sim.dynamic_result_shape(slots, rop, 0)?;
            // Only a destination: the op that writes into it charges its result, so the
            // empty itself takes no scratchpad (as the working-set analysis counts it).
            let data = sim.domain.filled(shape.iter().product(), 0.0);
            let v = RtValue::Tensor(Rc::new(TensorVal {
                shape,
                elem,
                data,
                ready: None,
                charged: false,
            }));
            sim.set(slots, rop, 0, v);
        }
        OpKind::TensorSplat { .. } => {
            let x = elementwise::data_scalar(sim, slots, rop, 0, "splat value must be a scalar")?;
            let (shape, elem) = sim.dynamic_result_shape(slots, rop, 1)?;
            let n = shape.iter().product::<usize>();
            let data = sim.domain.filled(n, crate::value::round_to(elem, x as f32));
            let task = sim.record(
                ctx,
                Unit::Sfp,
                Work::Compute {
                    cycles: sim.machine.sfp_cycles(n as u64, false),
                },
                Vec::new(),
                rop,
            )?;
            let v = sim.new_tensor(ctx, rop, shape, elem, data, Some(task))?;
            sim.set(slots, rop, 0, v);
        }
        OpKind::TensorExtract { indices, .. } => {
            let t = sim.tensor(slots, rop, 0)?;
            let flat = flat_index(sim, slots, rop, &t.shape, 1, indices.len())?;
            let v = sim
                .domain
                .extract(&t, flat, rop.line)
                .ok_or_else(|| sim.at(rop, "the tensor holds no data".into()))?;
            sim.set(slots, rop, 0, v);
        }
        OpKind::TensorInsert { indices, .. } => {
            let x =
                elementwise::data_scalar(sim, slots, rop, 0, "inserted value must be a scalar")?;
            let t = sim.tensor(slots, rop, 1)?;
            let flat = flat_index(sim, slots, rop, &t.shape, 2, indices.len())?;
            let data = sim.domain.insert(&t, flat, x as f32);
            let task = sim.sfp(ctx, rop, 1, false, &[&t])?;
            let v = sim.new_tensor(ctx, rop, t.shape.clone(), t.elem, data, Some(task))?;
            sim.set(slots, rop, 0, v);
        }
        OpKind::ExtractSlice {
            offsets,
            sizes,
            strides,
            ..
        } => {
            let x = sim.tensor(slots, rop, 0)?;
            let (offs, szs, strs) = slice_params(sim, slots, rop, 1, [offsets, sizes, strides])?;
            let data = sim
                .domain
                .extract_slice(&x, &offs, &szs, &strs)
                .map_err(|m| sim.at(rop, m))?;
            let len: usize = szs.iter().product();
            // Result shape: the result type's, which may drop unit dims of the slice.
            let shape = match rop.op.result_types.first().and_then(Type::static_shape) {
                Some(s) => s,
                None => szs.clone(),
            };
            if shape.iter().product::<usize>() != len {
                return Err(sim.at(
                    rop,
                    format!("slice of {len} elements does not fill the result shape {shape:?}"),
                ));
            }
            let v = sim.new_tensor(ctx, rop, shape, x.elem, data, x.ready)?;
            sim.set(slots, rop, 0, v);
        }
        OpKind::InsertSlice {
            offsets,
            sizes,
            strides,
            ..
        } => {
            let src = sim.tensor(slots, rop, 0)?;
            let dst = sim.tensor(slots, rop, 1)?;
            let (offs, szs, strs) = slice_params(sim, slots, rop, 2, [offsets, sizes, strides])?;
            let data = sim
                .domain
                .insert_slice(&src, &dst, &offs, &szs, &strs)
                .map_err(|m| sim.at(rop, m))?;
            let task = sim.sfp(ctx, rop, src.numel(), false, &[&src, &dst])?;
            let v = sim.new_tensor(ctx, rop, dst.shape.clone(), dst.elem, data, Some(task))?;
            sim.set(slots, rop, 0, v);
        }
        OpKind::Fill { .. } => {
            let x = elementwise::data_scalar(sim, slots, rop, 0, "fill value must be a scalar")?;
            let init = sim.tensor(slots, rop, 1)?;
            let data = sim
                .domain
                .filled(init.numel(), crate::value::round_to(init.elem, x as f32));
            let task = sim.sfp(ctx, rop, init.numel(), false, &[&init])?;
            let v = sim.new_tensor(ctx, rop, init.shape.clone(), init.elem, data, Some(task))?;
            sim.set(slots, rop, 0, v);
        }
        OpKind::Matmul { .. } => {
            let (a, b, c) = (
                sim.tensor(slots, rop, 0)?,
                sim.tensor(slots, rop, 1)?,
                sim.tensor(slots, rop, 2)?,
            );
            let v = matmul(sim, rop, ctx, &a, &b, &c, false, false)?;
            sim.set(slots, rop, 0, v);
        }
        OpKind::Transpose { permutation, .. } => {
            let x = sim.tensor(slots, rop, 0)?;
            if permutation.iter().any(|&p| p >= x.shape.len()) {
                return Err(sim.at(rop, format!("permutation {permutation:?} exceeds the rank")));
            }
            let out_shape: Vec<usize> = permutation.iter().map(|&p| x.shape[p]).collect();
            let in_strides = strides_of(&x.shape);
            let from: Vec<usize> = permutation.iter().map(|&p| in_strides[p]).collect();
            let out = sim.domain.gather(&x, &out_shape, &from);
            let task = sim.sfp(ctx, rop, x.numel(), false, &[&x])?;
            let v = sim.new_tensor(ctx, rop, out_shape, x.elem, out, Some(task))?;
            sim.set(slots, rop, 0, v);
        }
        OpKind::Broadcast { dimensions, .. } => {
            let x = sim.tensor(slots, rop, 0)?;
            let init = sim.tensor(slots, rop, 1)?;
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
            let out = sim.domain.gather(&x, &init.shape, &from);
            let task = sim.sfp(ctx, rop, init.numel(), false, &[&x, &init])?;
            let v = sim.new_tensor(ctx, rop, init.shape.clone(), init.elem, out, Some(task))?;
            sim.set(slots, rop, 0, v);
        }
        OpKind::CollapseShape { .. } | OpKind::ExpandShape { .. } => {
            // A reshape of a row-major tile is free: same data, new shape.
            let x = sim.tensor(slots, rop, 0)?;
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
                return Err(sim.at(rop, format!("cannot reshape {:?} to {shape:?}", x.shape)));
            }
            let data = crate::pool::copy_of(&x.data);
            let v = sim.new_tensor(ctx, rop, shape, x.elem, data, x.ready)?;
            sim.set(slots, rop, 0, v);
        }
        OpKind::LinalgNamed { op, inputs, .. } => {
            let k = inputs.len();
            let init = sim.tensor(slots, rop, k)?;
            let v = match *op {
                LinalgNamedOp::BatchMatmul => {
                    let (a, b) = (sim.tensor(slots, rop, 0)?, sim.tensor(slots, rop, 1)?);
                    batch_matmul(sim, rop, ctx, &a, &b, &init)?
                }
                LinalgNamedOp::MatmulTransposeB | LinalgNamedOp::MatmulTransposeA => {
                    let (a, b) = (sim.tensor(slots, rop, 0)?, sim.tensor(slots, rop, 1)?);
                    let ta = *op == LinalgNamedOp::MatmulTransposeA;
                    matmul(sim, rop, ctx, &a, &b, &init, ta, !ta)?
                }
                LinalgNamedOp::Matvec | LinalgNamedOp::Dot => {
                    let (a, b) = (sim.tensor(slots, rop, 0)?, sim.tensor(slots, rop, 1)?);
                    let dot = *op == LinalgNamedOp::Dot;
                    let (m, kk) = if dot {
                        (1, a.numel())
                    } else {
                        match a.shape.as_slice() {
                            [m, k] => (*m, *k),
                            _ => return Err(sim.at(rop, "matvec needs a matrix".into())),
                        }
                    };
                    if b.numel() != kk || init.numel() != m {
                        return Err(sim.at(
                            rop,
                            format!(
                                "shapes {:?}, {:?} -> {:?} do not agree",
                                a.shape, b.shape, init.shape
                            ),
                        ));
                    }
                    let reshaped = |t: &TensorVal, shape: Vec<usize>| {
                        let mut t = t.clone();
                        t.shape = shape;
                        Rc::new(t)
                    };
                    let a2 = reshaped(&a, vec![m, kk]);
                    let b2 = reshaped(&b, vec![kk, 1]);
                    let c2 = reshaped(&init, vec![m, 1]);
                    let RtValue::Tensor(r) = matmul(sim, rop, ctx, &a2, &b2, &c2, false, false)?
                    else {
                        return Err(sim.at(rop, "matmul gave no tensor".into()));
                    };
                    RtValue::Tensor(reshaped(&r, init.shape.clone()))
                }
                LinalgNamedOp::Elementwise(ew) => {
                    let v = elementwise::elementwise_as(
                        sim,
                        rop,
                        slots,
                        ctx,
                        ew,
                        0..k,
                        Some(init.elem),
                    )?;
                    if let RtValue::Tensor(t) = &v {
                        if t.shape != init.shape {
                            return Err(sim.at(
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
            sim.set(slots, rop, 0, v);
        }
        OpKind::LinalgGeneric { inputs, inits, .. } => {
            linalg_generic(sim, rop, slots, ctx, inputs.len(), inits.len())?
        }
        OpKind::LinalgReduce {
            inputs,
            inits,
            dimensions,
            ..
        } => linalg_reduce(sim, rop, slots, ctx, inputs.len(), inits.len(), dimensions)?,
        _ => {
            return Err(sim.at(
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
    sim: &Simulator<'_>,
    slots: &[Option<RtValue>],
    rop: &ROp<'_>,
    shape: &[usize],
    first: usize,
    count: usize,
) -> Result<usize, SimError> {
    if count != shape.len() {
        return Err(sim.at(
            rop,
            format!("{count} indices for a rank-{} tensor", shape.len()),
        ));
    }
    let strides = strides_of(shape);
    let mut flat = 0usize;
    for d in 0..count {
        let i = sim.index(slots, rop, first + d)?;
        if i < 0 || i as usize >= shape[d] {
            return Err(sim.at(
                rop,
                format!(
                    "index {i} of dimension {d} is outside the tensor's {shape:?} (out of bounds)"
                ),
            ));
        }
        flat += i as usize * strides[d];
    }
    Ok(flat)
}

/// `c + op(a) x op(b)` accumulated in f32 and stored in `c`'s type.
#[allow(clippy::too_many_arguments)]
fn matmul(
    sim: &mut Simulator<'_>,
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
            return Err(sim.at(
                rop,
                format!(
                    "shapes {:?} x {:?} -> {:?} do not agree",
                    a.shape, b.shape, c.shape
                ),
            ))
        }
    };
    let out = sim
        .domain
        .matmul(a, b, c, (m, k, n), transpose_a, transpose_b)
        .ok_or_else(|| sim.at(rop, "operand data does not match its shape".into()))?;
    let cycles = sim.machine.matmul_cycles(m as u64, n as u64, k as u64);
    let deps = a.ready.into_iter().chain(b.ready).chain(c.ready).collect();
    let task = sim.record(ctx, Unit::Pt, Work::Compute { cycles }, deps, rop)?;
    let macs = (m as u64).saturating_mul(n as u64).saturating_mul(k as u64);
    sim.count_work(
        task,
        WorkCount {
            macs,
            elementwise: 0,
        },
    );
    sim.new_tensor(ctx, rop, c.shape.clone(), c.elem, out, Some(task))
}

fn batch_matmul(
    sim: &mut Simulator<'_>,
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
            return Err(sim.at(
                rop,
                format!(
                    "shapes {:?} x {:?} -> {:?} do not agree",
                    a.shape, b.shape, c.shape
                ),
            ))
        }
    };
    let out = sim
        .domain
        .batch_matmul(a, b, c, (bt, m, k, n))
        .map_err(|e| sim.at(rop, e))?;
    let cycles = sim
        .machine
        .matmul_cycles(m as u64, n as u64, k as u64)
        .saturating_mul(bt as u64);
    let deps = a.ready.into_iter().chain(b.ready).chain(c.ready).collect();
    let task = sim.record(ctx, Unit::Pt, Work::Compute { cycles }, deps, rop)?;
    let macs = [bt, m, n, k]
        .iter()
        .fold(1u64, |acc, &d| acc.saturating_mul(d as u64));
    sim.count_work(
        task,
        WorkCount {
            macs,
            elementwise: 0,
        },
    );
    sim.new_tensor(ctx, rop, c.shape.clone(), c.elem, out, Some(task))
}

fn linalg_generic(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &mut [Option<RtValue>],
    ctx: &mut CoreCtx,
    n_in: usize,
    n_out: usize,
) -> Result<(), SimError> {
    let operands: Vec<RtValue> = (0..n_in + n_out)
        .map(|i| sim.get(slots, rop, i).cloned())
        .collect::<Result<_, _>>()?;
    let maps: Vec<AffineMap> = rop
        .maps
        .iter()
        .cloned()
        .collect::<Option<Vec<_>>>()
        .filter(|m| m.len() == n_in + n_out)
        .ok_or_else(|| {
            sim.at(
                rop,
                "indexing_maps are missing or not one affine_map per operand".into(),
            )
        })?;
    let loops = maps.first().map_or(0, |m| m.dims);
    let mut extents: Vec<Option<usize>> = vec![None; loops];
    for (v, m) in operands.iter().zip(&maps) {
        if let RtValue::Tensor(t) = v {
            if m.results.len() != t.shape.len() {
                return Err(sim.at(
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
    let extents: Vec<usize> = extents
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            sim.at(
                rop,
                "a loop's extent is not determined by any operand".into(),
            )
        })?;
    let points = sim.check_size(rop, &extents)?;
    let mut outs: Vec<Rc<TensorVal>> = Vec::with_capacity(n_out);
    for v in &operands[n_in..] {
        match v {
            RtValue::Tensor(t) => outs.push(t.clone()),
            _ => return Err(sim.at(rop, "outputs must be tensors".into())),
        }
    }
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
        .ok_or_else(|| sim.at(rop, "linalg.generic has no region".into()))?;
    let offset = |j: usize, p: &[i64]| -> Option<usize> {
        let mut o = 0usize;
        for (r, e) in maps[j].results.iter().enumerate() {
            let i = e.eval(p, &[])?;
            o += usize::try_from(i).ok()? * strides[j].get(r)?;
        }
        Some(o)
    };
    // A body of float arithmetic runs once over whole tensors; anything else point by
    // point (no points left when it already ran).
    let whole = whole_tensor_body(sim, rop, region, slots, &operands, &maps, &extents, n_in)?;
    let ran_whole = whole.is_some();
    let mut out_data: Vec<Vec<f32>> = match whole {
        Some(data) => data,
        None => outs.iter().map(|t| crate::pool::copy_of(&t.data)).collect(),
    };
    let mut err = None;
    let points_to_run = if ran_whole {
        vec![0]
    } else {
        sim.domain.region_space(&extents)
    };
    for_each_point(&points_to_run, |_, p| {
        let mut args = Vec::with_capacity(n_in + n_out);
        for (j, v) in operands.iter().enumerate() {
            args.push(match v {
                RtValue::Tensor(t) => {
                    let o = offset(j, p)
                        .ok_or_else(|| sim.at(rop, "an indexing map leaves its operand".into()))?;
                    let x = if j < n_in {
                        t.data.get(o).copied()
                    } else {
                        out_data[j - n_in].get(o).copied()
                    }
                    .ok_or_else(|| sim.at(rop, "an indexing map leaves its operand".into()))?;
                    scalar_value(x as f64, t.elem)
                }
                other => other.clone(),
            });
        }
        // The body may read its point through `linalg.index`; a nested generic saves and
        // restores the outer point.
        let outer = std::mem::replace(&mut ctx.generic_point, p.to_vec());
        let ran = (ctx.run_region)(sim, region, args, slots, ctx);
        ctx.generic_point = outer;
        let ys = match ran {
            Ok(y) => y,
            Err(e) => {
                err = Some(e.clone());
                return Err(e);
            }
        };
        for (k, y) in ys.iter().enumerate().take(n_out) {
            let o = offset(n_in + k, p)
                .ok_or_else(|| sim.at(rop, "an indexing map leaves its operand".into()))?;
            let x = elementwise::scalar_of(y)
                .ok_or_else(|| sim.at(rop, "linalg.yield must yield scalars".into()))?;
            if let Some(slot) = out_data[k].get_mut(o) {
                *slot = crate::value::round_to(outs[k].elem, x as f32);
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
    let task = sim.sfp(ctx, rop, points * body_ops, transcendental, &inputs)?;
    for (k, (t, data)) in outs.iter().zip(out_data).enumerate() {
        let v = sim.new_tensor(ctx, rop, t.shape.clone(), t.elem, data, Some(task))?;
        sim.set(slots, rop, k, v);
    }
    Ok(())
}

/// A slot's value while a body runs over whole tensors: one element per point of the
/// iteration space, or a scalar every point shares.
type WholeValue = crate::domain::Arg;

/// Runs a `linalg.generic` body once over whole tensors, when that computes exactly what
/// running it point by point does: numbers are computed, the body is float `arith`/`math`
/// ops (no integer, index, compare or region ops) ending in `linalg.yield`, every input
/// map picks whole dimensions of its operand (permutations, projections and broadcasts),
/// every output map is the identity, and the step limit leaves room for every point. Each
/// op then rounds exactly as its scalar form does, element for element. Returns the
/// outputs' contents, or `None` for the point-by-point walk.
#[allow(clippy::too_many_arguments)]
fn whole_tensor_body(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    region: &Region<'_>,
    slots: &[Option<RtValue>],
    operands: &[RtValue],
    maps: &[AffineMap],
    extents: &[usize],
    n_in: usize,
) -> Result<Option<Vec<Vec<f32>>>, SimError> {
    use crate::domain::Arg;
    if !sim.domain.computes_numbers() || extents.contains(&0) {
        return Ok(None);
    }
    let n: usize = extents.iter().product();
    let Some((yield_op, body)) = region.ops.split_last() else {
        return Ok(None);
    };
    if !matches!(yield_op.op.kind, OpKind::LinalgYield { .. })
        || yield_op.operands.len() != operands.len() - n_in
    {
        return Ok(None);
    }
    let steps = (n as u64).saturating_mul(region.ops.len() as u64);
    if !sim.has_steps_left(steps) {
        return Ok(None);
    }
    let mut values: Vec<(usize, WholeValue)> = Vec::new();
    for (j, (v, m)) in operands.iter().zip(maps).enumerate() {
        let Some(&slot) = region.args.get(j) else {
            return Ok(None);
        };
        let value = match v {
            RtValue::Tensor(t) => {
                if !t.elem.is_float() || t.data.len() != t.numel() {
                    return Ok(None);
                }
                // Element steps of the operand per loop dimension.
                let strides = strides_of(&t.shape);
                let mut from = vec![0usize; extents.len()];
                for (r, e) in m.results.iter().enumerate() {
                    match e {
                        AffineExpr::Dim(d) if t.shape.get(r) == extents.get(*d) => {
                            from[*d] += strides[r];
                        }
                        _ => return Ok(None),
                    }
                }
                let identity = m.results.len() == extents.len()
                    && m.results
                        .iter()
                        .enumerate()
                        .all(|(r, e)| matches!(e, AffineExpr::Dim(d) if *d == r));
                if j >= n_in && !identity {
                    return Ok(None);
                }
                let data = if identity {
                    crate::pool::copy_of(&t.data)
                } else {
                    sim.domain.gather(t, extents, &from)
                };
                Arg::Tensor(Rc::new(TensorVal {
                    shape: vec![n],
                    elem: t.elem,
                    data,
                    ready: None,
                    charged: true,
                }))
            }
            RtValue::Float(x) => Arg::Scalar(*x),
            _ => return Ok(None),
        };
        values.push((slot, value));
    }
    let lookup = |values: &[(usize, WholeValue)], slot: usize| -> Option<WholeValue> {
        let found = values
            .iter()
            .rev()
            .find(|(s, _)| *s == slot)
            .map(|(_, v)| match v {
                Arg::Tensor(t) => Arg::Tensor(t.clone()),
                Arg::Scalar(x) => Arg::Scalar(*x),
                Arg::Unknown(l) => Arg::Unknown(*l),
            });
        // Values from outside the body are scalars every point shares.
        found.or_else(|| match slots.get(slot) {
            Some(Some(RtValue::Float(x))) => Some(Arg::Scalar(*x)),
            _ => None,
        })
    };
    for op in body {
        let OpKind::Elementwise { op: ew, .. } = op.op.kind else {
            return Ok(None);
        };
        let elem = op
            .op
            .result_types
            .first()
            .and_then(Type::elem)
            .unwrap_or(ScalarType::F32);
        if !elem.is_float()
            || crate::exec_ew::computes_on_ints(ew, elem)
            || op.results.len() != 1
            || !op.regions.is_empty()
        {
            return Ok(None);
        }
        let Some(args) = op
            .operands
            .iter()
            .map(|&s| lookup(&values, s))
            .collect::<Option<Vec<_>>>()
        else {
            return Ok(None);
        };
        let data = match sim.domain.elementwise(ew, elem, false, &args, n) {
            Ok(d) => d,
            Err(_) => return Ok(None),
        };
        values.push((
            op.results[0],
            Arg::Tensor(Rc::new(TensorVal {
                shape: vec![n],
                elem,
                data,
                ready: None,
                charged: true,
            })),
        ));
    }
    let mut outs = Vec::with_capacity(yield_op.operands.len());
    for (k, &s) in yield_op.operands.iter().enumerate() {
        let RtValue::Tensor(t) = &operands[n_in + k] else {
            return Ok(None);
        };
        let mut data = match lookup(&values, s) {
            Some(Arg::Tensor(v)) => crate::pool::copy_of(&v.data),
            Some(Arg::Scalar(x)) => vec![x as f32; n],
            _ => return Ok(None),
        };
        crate::value::round_slice(t.elem, &mut data);
        outs.push(data);
    }
    sim.count_steps(rop, steps)?;
    Ok(Some(outs))
}

fn linalg_reduce(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &mut [Option<RtValue>],
    ctx: &mut CoreCtx,
    n_in: usize,
    n_out: usize,
    dimensions: &[usize],
) -> Result<(), SimError> {
    let ins: Vec<Rc<TensorVal>> = (0..n_in)
        .map(|i| sim.tensor(slots, rop, i))
        .collect::<Result<_, _>>()?;
    let inits: Vec<Rc<TensorVal>> = (0..n_out)
        .map(|i| sim.tensor(slots, rop, n_in + i))
        .collect::<Result<_, _>>()?;
    let Some(x) = ins.first().cloned() else {
        return Err(sim.at(rop, "a reduction needs an input".into()));
    };
    let inputs: Vec<&TensorVal> = ins.iter().chain(&inits).map(|t| t.as_ref()).collect();
    let task = sim.sfp(ctx, rop, x.numel() * n_in.max(1), false, &inputs)?;
    let combiner = match rop.ints.first() {
        Some(1) => Some(crate::exec_ops::Combiner::Add),
        Some(2) => Some(crate::exec_ops::Combiner::Mul),
        Some(3) => Some(crate::exec_ops::Combiner::Max),
        Some(4) => Some(crate::exec_ops::Combiner::Min),
        _ => None,
    };
    if let (Some(c), 1, 1) = (combiner, n_in, n_out) {
        let init = &inits[0];
        let data = sim
            .domain
            .reduce(&x, dimensions, init, c)
            .map_err(|m| sim.at(rop, m))?;
        let v = sim.new_tensor(ctx, rop, init.shape.clone(), init.elem, data, Some(task))?;
        sim.set(slots, rop, 0, v);
        return Ok(());
    }
    // General combiner: interpret the region, folding in row-major order.
    let region = rop
        .regions
        .first()
        .filter(|r| !r.ops.is_empty())
        .ok_or_else(|| sim.at(rop, "the reduction has no combiner region".into()))?;
    if dimensions.iter().any(|&d| d >= x.shape.len()) || ins.iter().any(|t| t.shape != x.shape) {
        return Err(sim.at(
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
        return Err(sim.at(
            rop,
            format!(
                "reducing {:?} over {dimensions:?} needs inits of shape {out_shape:?}",
                x.shape
            ),
        ));
    }
    let mut acc: Vec<Vec<f32>> = inits.iter().map(|t| t.data.clone()).collect();
    let shape = sim.domain.region_space(&x.shape);
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
        let ys = (ctx.run_region)(sim, region, args, slots, ctx)?;
        for (k, y) in ys.iter().enumerate().take(n_out) {
            let v = elementwise::scalar_of(y)
                .ok_or_else(|| sim.at(rop, "the combiner must yield scalars".into()))?;
            acc[k][o] = crate::value::round_to(inits[k].elem, v as f32);
        }
        Ok(())
    })?;
    for (k, (t, data)) in inits.iter().zip(acc).enumerate() {
        let v = sim.new_tensor(ctx, rop, out_shape.clone(), t.elem, data, Some(task))?;
        sim.set(slots, rop, k, v);
    }
    Ok(())
}
