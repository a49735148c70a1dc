//! Memory for the interpreter: memory views (plain and distributed), access tiles (direct
//! with order maps, and indirect gather/scatter tiles), loads and stores, and the
//! transfers they time. The contents moved are the value domain's (over `store.rs`).

use crate::resolve::ROp;
use crate::state::*;
use crate::store::{Loc, Place, Span};
use crate::timing::{DramAccess, TaskId, Unit, Work};
use crate::value::*;
use ktir::ast::*;
use std::rc::Rc;

/// Points of the box `lo + [0, extents)` enumerated in the order an order map gives (its
/// last result is innermost), flat (`extents.len()` values per point).
pub(crate) fn enumerate_points(
    lo: &[i64],
    extents: &[usize],
    order: Option<&AffineMap>,
) -> Result<Vec<i64>, String> {
    let rank = extents.len();
    let total: usize = extents.iter().product();
    let mut out = Vec::with_capacity(total * rank);
    let identity: Vec<usize> = (0..rank).collect();
    let perm = match order {
        None => Some(identity),
        Some(m) => m.as_permutation().filter(|p| p.len() == rank),
    };
    if let Some(perm) = perm {
        let permuted: Vec<usize> = perm.iter().map(|&d| extents[d]).collect();
        let mut p = vec![0i64; rank];
        crate::value::for_each_point(&permuted, |_, q| {
            for (i, &d) in perm.iter().enumerate() {
                p[d] = q[i] + lo[d];
            }
            out.extend_from_slice(&p);
            Ok(())
        })
        .map_err(|e| e.message)?;
        return Ok(out);
    }
    // A general order map: sort the points by the map's results.
    let Some(m) = order else {
        return Ok(out);
    };
    let mut keyed: Vec<(Vec<i64>, Vec<i64>)> = Vec::with_capacity(total);
    crate::value::for_each_point(extents, |_, q| {
        let p: Vec<i64> = q.iter().zip(lo).map(|(a, b)| a + b).collect();
        let key = m
            .results
            .iter()
            .map(|e| e.eval(&p, &[]))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| SimError {
                message: "the order map divides by zero".into(),
                core: None,
                op: None,
            })?;
        keyed.push((key, p));
        Ok(())
    })
    .map_err(|e| e.message)?;
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, p) in keyed {
        out.extend(p);
    }
    Ok(out)
}

fn take_sizes(
    sim: &Simulator<'_>,
    slots: &[Option<RtValue>],
    rop: &ROp<'_>,
    list: &[SizeOperand],
    next: &mut usize,
) -> Result<Vec<i64>, SimError> {
    list.iter()
        .map(|s| match s {
            SizeOperand::Static(v) => Ok(*v),
            SizeOperand::Dynamic(_) => {
                let v = sim.index(slots, rop, *next)?;
                *next += 1;
                Ok(v)
            }
        })
        .collect()
}

pub(crate) fn construct_view(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &mut [Option<RtValue>],
) -> Result<(), SimError> {
    let OpKind::ConstructMemoryView {
        sizes,
        strides,
        memory_space,
        ..
    } = &rop.op.kind
    else {
        return Ok(());
    };
    let base = sim.index(slots, rop, 0)?;
    let mut next = 1;
    let size_values = take_sizes(sim, slots, rop, sizes, &mut next)?;
    let stride_values = take_sizes(sim, slots, rop, strides, &mut next)?;
    // The dialect lets SSA sizes stand for static dimensions (it checks only counts and
    // rank), so whether the value fits the type is known only now.
    if let Some(Type::MemRef { shape, .. }) = rop.op.result_types.first() {
        for (i, ((s, v), d)) in sizes.iter().zip(&size_values).zip(shape).enumerate() {
            if let (SizeOperand::Dynamic(name), Dim::Static(n)) = (s, d) {
                if *v < 0 || i64::try_from(*n).is_ok_and(|n| *v > n) {
                    return Err(sim.at(
                        rop,
                        format!(
                            "size {i} ('%{}') is {v}, which does not fit the memref's static dimension {n}",
                            name.name
                        ),
                    ));
                }
            }
        }
    }
    let dynamic: Vec<i64> = sizes
        .iter()
        .zip(&size_values)
        .filter(|(s, _)| matches!(s, SizeOperand::Dynamic(_)))
        .map(|(_, v)| *v)
        .collect();
    let set = rop.sets.first().cloned().flatten().ok_or_else(|| {
        sim.at(
            rop,
            "'coordinate_set' is missing or not an affine_set".into(),
        )
    })?;
    let elem = rop
        .op
        .result_types
        .first()
        .and_then(Type::elem)
        .unwrap_or(ScalarType::F32);
    let view = ViewVal {
        name: rop.op.results.first().cloned().unwrap_or_default(),
        base,
        sizes: size_values,
        strides: stride_values,
        elem,
        space: memory_space.clone().unwrap_or(MemorySpace::Global),
        syms: if set.syms == dynamic.len() {
            dynamic
        } else {
            vec![0; set.syms]
        },
        set: Some(set),
        parts: Vec::new(),
    };
    sim.set(slots, rop, 0, RtValue::View(Rc::new(view)));
    Ok(())
}

pub(crate) fn construct_distributed_view(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &mut [Option<RtValue>],
) -> Result<(), SimError> {
    let mut parts = Vec::new();
    for i in 0..rop.operands.len() {
        let RtValue::View(v) = sim.get(slots, rop, i)? else {
            return Err(sim.at(rop, format!("partition {i} is not a memory view")));
        };
        let set = v
            .set
            .as_ref()
            .ok_or_else(|| sim.at(rop, format!("partition {i} is itself distributed")))?;
        let lo: Vec<i64> = set
            .box_bounds(&v.syms)
            .ok_or_else(|| {
                sim.at(
                    rop,
                    format!(
                        "partition {i} ('%{}'): its coordinate_set is not a box, so its place in the global view is unknown",
                        v.name
                    ),
                )
            })?
            .iter()
            .map(|(l, _)| *l)
            .collect();
        parts.push((v.clone(), lo));
    }
    let t = rop.op.result_types.first();
    let sizes: Vec<i64> = match t.and_then(Type::static_shape) {
        Some(s) => s.iter().map(|&d| d as i64).collect(),
        None => {
            // The union of the partitions' boxes.
            let rank = parts.first().map_or(0, |(v, _)| v.sizes.len());
            (0..rank)
                .map(|d| {
                    parts
                        .iter()
                        .map(|(v, lo)| lo[d] + v.sizes.get(d).copied().unwrap_or(0))
                        .max()
                        .unwrap_or(0)
                })
                .collect()
        }
    };
    let elem = t.and_then(Type::elem).unwrap_or(ScalarType::F32);
    if let Some((v, _)) = parts.iter().find(|(v, _)| v.elem != elem) {
        return Err(sim.at(
            rop,
            format!(
                "partition '%{}' holds {} but the distributed view is of {}",
                v.name,
                v.elem.name(),
                elem.name()
            ),
        ));
    }
    let view = ViewVal {
        name: rop.op.results.first().cloned().unwrap_or_default(),
        base: 0,
        strides: Vec::new(),
        sizes,
        elem,
        space: MemorySpace::Global,
        set: None,
        syms: Vec::new(),
        parts,
    };
    sim.set(slots, rop, 0, RtValue::View(Rc::new(view)));
    Ok(())
}

pub(crate) fn construct_tile(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &mut [Option<RtValue>],
) -> Result<(), SimError> {
    let OpKind::ConstructAccessTile {
        subscripts,
        operands,
        symbols,
        ..
    } = &rop.op.kind
    else {
        return Ok(());
    };
    let view = match sim.get(slots, rop, 0)? {
        RtValue::View(v) => v.clone(),
        _ => return Err(sim.at(rop, "operand 0 is not a memory view".into())),
    };
    let mut vals = Vec::with_capacity(operands.len());
    for i in 0..operands.len() {
        vals.push(sim.index(slots, rop, 1 + i)?);
    }
    let mut syms = Vec::with_capacity(symbols.len());
    for i in 0..symbols.len() {
        syms.push(sim.index(slots, rop, 1 + operands.len() + i)?);
    }
    let origin = subscripts
        .iter()
        .map(|e| {
            e.eval(&vals, &syms)
                .ok_or_else(|| sim.at(rop, "subscript overflows or divides by zero".into()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let set = rop.sets.first().cloned().flatten().ok_or_else(|| {
        sim.at(
            rop,
            "'access_tile_set' is missing or not an affine_set".into(),
        )
    })?;
    let order = rop.maps.first().and_then(Option::as_ref);
    // The tile type lists the set's extents in the order map's order (KTDP: a transposing
    // order turns a 2x64 set into a 64x2 tile); `shape` here is in the set's own order.
    let shape = match rop.op.result_types.first().and_then(Type::static_shape) {
        Some(s) => match order.and_then(AffineMap::as_permutation) {
            Some(perm) if perm.len() == s.len() => {
                let mut set_order = vec![0; s.len()];
                for (i, &d) in perm.iter().enumerate() {
                    set_order[d] = s[i];
                }
                set_order
            }
            _ => s,
        },
        None => set
            .box_bounds(&syms)
            .map(|b| {
                b.iter()
                    .map(|(lo, hi)| (hi - lo + 1).max(0) as usize)
                    .collect()
            })
            .ok_or_else(|| {
                sim.at(
                    rop,
                    "cannot size a dynamic access tile whose set is not a box".into(),
                )
            })?,
    };
    sim.check_size(rop, &shape)?;
    let rank = shape.len();
    if origin.len() != rank {
        return Err(sim.at(
            rop,
            format!("{} subscripts for a rank-{rank} tile", origin.len()),
        ));
    }
    let n = shape.iter().product::<usize>();
    let perm = match order {
        None => Some((0..rank).collect::<Vec<_>>()),
        Some(m) => m.as_permutation().filter(|p| p.len() == rank),
    };
    // A tile whose set holds its whole box (the usual case) is kept as the box.
    let whole_box = perm.filter(|_| n > 0).filter(|_| {
        let hi: Vec<i64> = shape.iter().map(|&s| s as i64 - 1).collect();
        crate::affine::box_inside(&set, &syms, &vec![0; rank], &hi) == Some(true)
    });
    let points = match whole_box {
        Some(order) => TilePoints::Box { origin, order },
        None => {
            let points =
                enumerate_points(&vec![0; rank], &shape, order).map_err(|m| sim.at(rop, m))?;
            let mut coords = Vec::with_capacity(n * rank);
            let mut valid = Vec::with_capacity(n);
            for p in points.chunks(rank.max(1)).take(n) {
                valid.push(set.contains(p, &syms));
                coords.extend(p.iter().zip(&origin).map(|(a, b)| a + b));
            }
            if rank == 0 {
                valid = vec![true];
            }
            TilePoints::List { coords, valid }
        }
    };
    let tile = TileVal {
        view,
        shape,
        rank,
        points,
        ready: None,
    };
    sim.set(slots, rop, 0, RtValue::Tile(Rc::new(tile)));
    Ok(())
}

pub(crate) fn construct_indirect_tile(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &mut [Option<RtValue>],
    ctx: &mut CoreCtx,
) -> Result<(), SimError> {
    let OpKind::ConstructIndirectAccessTile {
        subscripts,
        symbols,
        ..
    } = &rop.op.kind
    else {
        return Ok(());
    };
    let view = match sim.get(slots, rop, 0)? {
        RtValue::View(v) => v.clone(),
        _ => return Err(sim.at(rop, "the base is not a memory view".into())),
    };
    let n_ind = subscripts
        .iter()
        .filter(|s| matches!(s, IndirectSubscript::Indirect { .. }))
        .count();
    let mut index_views = Vec::with_capacity(n_ind);
    for i in 0..n_ind {
        match sim.get(slots, rop, 1 + i)? {
            RtValue::View(v) => index_views.push(v.clone()),
            _ => return Err(sim.at(rop, format!("index operand {i} is not a memory view"))),
        }
    }
    let n_captured = rop.ints.iter().filter(|v| **v < 0).count();
    let mut captured = Vec::with_capacity(n_captured);
    for i in 0..n_captured {
        captured.push(sim.index(slots, rop, 1 + n_ind + i)?);
    }
    let mut syms = Vec::with_capacity(symbols.len());
    for i in 0..symbols.len() {
        syms.push(sim.index(slots, rop, 1 + n_ind + n_captured + i)?);
    }
    let set = rop.sets.first().cloned().flatten().ok_or_else(|| {
        sim.at(
            rop,
            "'variables_space_set' is missing or not an affine_set".into(),
        )
    })?;
    let order = rop.maps.first().and_then(Option::as_ref);
    let bounds = set.box_bounds(&syms).ok_or_else(|| {
        sim.at(
            rop,
            "the variables_space_set is not a box, so the tile cannot be enumerated".into(),
        )
    })?;
    let lo: Vec<i64> = bounds.iter().map(|b| b.0).collect();
    let extents: Vec<usize> = bounds
        .iter()
        .map(|(l, h)| (h - l + 1).max(0) as usize)
        .collect();
    sim.check_size(rop, &extents)?;
    let shape = match rop.op.result_types.first().and_then(Type::static_shape) {
        Some(s) => s,
        None => match order.and_then(AffineMap::as_permutation) {
            Some(perm) if perm.len() == extents.len() => perm.iter().map(|&d| extents[d]).collect(),
            _ => extents.clone(),
        },
    };
    let n: usize = extents.iter().product();
    if shape.iter().product::<usize>() != n {
        return Err(sim.at(
            rop,
            format!("a tile of shape {shape:?} cannot hold the {n} points of its variable space"),
        ));
    }
    let points = enumerate_points(&lo, &extents, order).map_err(|m| sim.at(rop, m))?;
    let vars = extents.len();
    let rank = subscripts.len();
    let mut coords = Vec::with_capacity(n * rank);
    let mut valid = Vec::with_capacity(n);
    let mut reads = vec![0u64; index_views.len()];
    let mut dims = vec![0i64; rop.ints.len()];
    let mut assumed = false;
    for v in points.chunks(vars.max(1)).take(n) {
        let ok = set.contains(v, &syms);
        valid.push(ok);
        if !ok {
            coords.extend(std::iter::repeat_n(0, rank));
            continue;
        }
        for (d, src) in dims.iter_mut().zip(&rop.ints) {
            *d = if *src >= 0 {
                v.get(*src as usize).copied().unwrap_or(0)
            } else {
                captured.get((-src - 1) as usize).copied().unwrap_or(0)
            };
        }
        let mut k = 0;
        for (dim, s) in subscripts.iter().enumerate() {
            let c = match s {
                IndirectSubscript::Direct(e) => e
                    .eval(&dims, &syms)
                    .ok_or_else(|| sim.at(rop, "subscript overflows or divides by zero".into()))?,
                IndirectSubscript::Indirect { exprs, .. } => {
                    let iv = &index_views[k];
                    let at = exprs
                        .iter()
                        .map(|e| e.eval(&dims, &syms))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| {
                            sim.at(rop, "index subscript overflows or divides by zero".into())
                        })?;
                    let (loc, _) = locate(sim, rop, iv, &at, ctx.core)?;
                    reads[k] += 1;
                    k += 1;
                    let size = view.sizes.get(dim).copied().unwrap_or(1);
                    let (x, guessed) = sim.domain.index_value(&sim.mem, loc, iv, &at, size);
                    assumed |= guessed;
                    if !x.is_finite() {
                        return Err(sim.at(rop, format!("index value {x} is not an integer")));
                    }
                    x as i64
                }
            };
            coords.push(c);
        }
    }
    if assumed {
        sim.assume(rop, crate::domain::ASSUMED_INDICES);
    }
    // Reading the indices is a transfer into the core.
    let mut ready = Vec::new();
    for (iv, count) in index_views.iter().zip(&reads) {
        if *count == 0 {
            continue;
        }
        let (src, dram) = view_stop(sim, iv, ctx.core);
        let work = Work::Transfer {
            src_stop: src,
            dst_stop: sim.machine.core_stop(ctx.core),
            bytes: count * iv.elem.size_bytes() as u64,
            dram,
        };
        let deps = ctx.last_store.into_iter().collect();
        ready.push(sim.record(ctx, Unit::Dma, work, deps, rop)?);
    }
    let ready = sim.join(ctx, ready, rop)?;
    let tile = TileVal {
        view,
        shape,
        rank,
        points: TilePoints::List { coords, valid },
        ready,
    };
    sim.set(slots, rop, 0, RtValue::Tile(Rc::new(tile)));
    Ok(())
}

/// The ring stop a (plain) view's data comes from, and whether DRAM is involved.
fn view_stop(sim: &Simulator<'_>, view: &ViewVal, core: usize) -> (usize, DramAccess) {
    match view.space {
        // Assumption: a core's DRAM traffic goes through its nearest memory stop.
        MemorySpace::Global => (sim.machine.nearest_memory_stop(core), DramAccess::Read),
        MemorySpace::Local { core: None } => (sim.machine.core_stop(core), DramAccess::None),
        MemorySpace::Local { core: Some(c) } => {
            let c = (c.max(0) as usize).min(sim.machine.cores.value.saturating_sub(1));
            (sim.machine.core_stop(c), DramAccess::None)
        }
    }
}

/// Where view coordinate `coord` lives, and the ring stop of its partition.
pub(crate) fn locate(
    sim: &Simulator<'_>,
    rop: &ROp<'_>,
    view: &ViewVal,
    coord: &[i64],
    core: usize,
) -> Result<(Loc, (usize, DramAccess)), SimError> {
    match locate_in(sim, rop, view, coord, core, true)? {
        Located::At(loc, stop) => Ok((loc, stop)),
        Located::Outside(message) => Err(sim.at(rop, message)),
    }
}

/// Where a point of a load or store lives: `None` when it is outside its view and the
/// simulator masks such points (counted in [`Simulator::masked_points`]).
fn locate_masked(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    view: &ViewVal,
    coord: &[i64],
    core: usize,
) -> Result<Option<Where>, SimError> {
    match locate_in(sim, rop, view, coord, core, true)? {
        Located::At(loc, stop) => Ok(Some((loc, stop))),
        Located::Outside(_) if sim.mask_out_of_bounds => {
            sim.masked_points += 1;
            Ok(None)
        }
        Located::Outside(message) => Err(sim.at(rop, message)),
    }
}

/// A point's place and the ring stop of its partition.
type Where = (Loc, (usize, DramAccess));

/// A point's place, or why it is outside its view (an error unless points are masked).
enum Located {
    At(Loc, (usize, DramAccess)),
    Outside(String),
}

fn locate_in(
    sim: &Simulator<'_>,
    rop: &ROp<'_>,
    view: &ViewVal,
    coord: &[i64],
    core: usize,
    check_set: bool,
) -> Result<Located, SimError> {
    if !view.parts.is_empty() {
        if coord.iter().zip(&view.sizes).any(|(c, n)| *c < 0 || c >= n) {
            return Ok(Located::Outside(format!(
                "point {coord:?} is outside the distributed view '%{}' of sizes {:?} (out of bounds)",
                view.name, view.sizes
            )));
        }
        for (part, lo) in &view.parts {
            let inside = part
                .set
                .as_ref()
                .is_some_and(|s| s.contains(coord, &part.syms));
            if inside {
                let local: Vec<i64> = coord.iter().zip(lo).map(|(c, l)| c - l).collect();
                return locate_in(sim, rop, part, &local, core, false);
            }
        }
        return Ok(Located::Outside(format!(
            "point {coord:?} of the distributed view '%{}' is in none of its partitions",
            view.name
        )));
    }
    if coord.len() != view.sizes.len()
        || coord.iter().zip(&view.sizes).any(|(c, n)| *c < 0 || c >= n)
    {
        return Ok(Located::Outside(format!(
            "point {coord:?} is outside the view '%{}' of sizes {:?} (out of bounds; --out-of-bounds mask masks such points)",
            view.name, view.sizes
        )));
    }
    if let Some(set) = view.set.as_ref().filter(|_| check_set) {
        // (A partition's set is in global coordinates and was checked by the caller.)
        if !set.contains(coord, &view.syms) {
            return Ok(Located::Outside(format!(
                "point {coord:?} lies outside the coordinate_set of view '%{}' (known gap: the spec does not say whether such points are masked, so the playground stops; --out-of-bounds mask masks them)",
                view.name
            )));
        }
    }
    let mut addr = view.base;
    for (c, s) in coord.iter().zip(&view.strides) {
        addr = c
            .checked_mul(*s)
            .and_then(|x| addr.checked_add(x))
            .ok_or_else(|| sim.at(rop, "address computation overflows".into()))?;
    }
    let stop = view_stop(sim, view, core);
    match view.space {
        MemorySpace::Global => match dram_slot(sim, rop, view, addr)? {
            Some((buf, idx)) => Ok(Located::At(Loc::Dram { buf, idx }, stop)),
            None => {
                // Name the buffer the view starts in, when there is one.
                let home = sim
                    .mem
                    .dram
                    .iter()
                    .rev()
                    .find(|h| h.base <= view.base)
                    .map_or(String::new(), |h| {
                        format!(
                            "; the view starts at element {} of buffer '{}', which has {}",
                            view.base - h.base,
                            h.name,
                            h.len
                        )
                    });
                Ok(Located::Outside(format!(
                    "view '%{}': DRAM address {addr} is outside every buffer (out of bounds{home})",
                    view.name
                )))
            }
        },
        MemorySpace::Local { core: which } => {
            let c = match which {
                Some(c) => usize::try_from(c).unwrap_or(usize::MAX),
                None => core,
            };
            if c >= sim.mem.scratchpads.len() {
                return Err(sim.at(
                    rop,
                    format!(
                        "view '%{}': the scratchpad of core {c} does not exist on this machine",
                        view.name
                    ),
                ));
            }
            let size = view.elem.size_bytes() as u64;
            let cap = sim.machine.scratchpad_bytes.value;
            let byte = (addr.max(0) as u64).saturating_mul(size);
            if addr < 0 || byte.saturating_add(size) > cap {
                return Err(sim.at(
                    rop,
                    format!(
                        "view '%{}' reaches element {addr} (bytes {byte}..{}) of core {c}'s scratchpad, beyond its capacity of {cap} bytes",
                        view.name,
                        byte.saturating_add(size)
                    ),
                ));
            }
            Ok(Located::At(
                Loc::Local {
                    core: c,
                    byte: byte as usize,
                },
                stop,
            ))
        }
    }
}

fn dram_slot(
    sim: &Simulator<'_>,
    rop: &ROp<'_>,
    view: &ViewVal,
    addr: i64,
) -> Result<Option<(usize, usize)>, SimError> {
    let Some(bi) = sim.mem.dram_containing(addr) else {
        return Ok(None);
    };
    let b = &sim.mem.dram[bi];
    // Buffers are placed in order; the view belongs to the last one starting at or
    // before its base, and must not read its neighbours.
    let home = sim.mem.dram_home(view.base);
    if let Some(h) = home.filter(|&h| h != bi) {
        let h = &sim.mem.dram[h];
        return Err(sim.at(
                rop,
                format!(
                    "view '%{}' over buffer '{}' (at element {} of it) reaches element {} of buffer '{}' (out of bounds)",
                    view.name,
                    h.name,
                    view.base - h.base,
                    addr - b.base,
                    b.name
                ),
            ));
    }
    if b.elem != view.elem {
        return Err(sim.at(
            rop,
            format!(
                "view '%{}' of {} reads DRAM buffer '{}' which holds {}",
                view.name,
                view.elem.name(),
                b.name,
                b.elem.name()
            ),
        ));
    }
    Ok(Some((bi, (addr - b.base) as usize)))
}

fn tile_operand(
    sim: &Simulator<'_>,
    slots: &[Option<RtValue>],
    rop: &ROp<'_>,
    i: usize,
) -> Result<Rc<TileVal>, SimError> {
    match sim.get(slots, rop, i)? {
        RtValue::Tile(t) => Ok(t.clone()),
        _ => Err(sim.at(rop, format!("operand {i} is not an access tile"))),
    }
}

/// Records one transfer per ring stop touched.
fn transfers(
    sim: &mut Simulator<'_>,
    ctx: &mut CoreCtx,
    rop: &ROp<'_>,
    per_stop: Vec<((usize, DramAccess), u64)>,
    store: bool,
    deps: Vec<TaskId>,
) -> Result<Option<TaskId>, SimError> {
    let me = sim.machine.core_stop(ctx.core);
    let mut ids = Vec::new();
    for ((stop, dram), bytes) in per_stop {
        let work = if store {
            Work::Transfer {
                src_stop: me,
                dst_stop: stop,
                bytes,
                dram: if dram == DramAccess::Read {
                    DramAccess::Write
                } else {
                    dram
                },
            }
        } else {
            Work::Transfer {
                src_stop: stop,
                dst_stop: me,
                bytes,
                dram,
            }
        };
        ids.push(sim.record(ctx, Unit::Dma, work, deps.clone(), rop)?);
    }
    if ids.is_empty() {
        // Nothing moved (every point masked): still order after the inputs.
        let view_stop = me;
        let work = Work::Transfer {
            src_stop: view_stop,
            dst_stop: me,
            bytes: 0,
            dram: DramAccess::None,
        };
        ids.push(sim.record(ctx, Unit::Dma, work, deps, rop)?);
    }
    sim.join(ctx, ids, rop)
}

/// Where a box tile over a plain view lands, when the walk would find every point in
/// bounds, inside the view's set, and inside one DRAM buffer of the view's element type
/// (or the scratchpad); `None` sends the caller to the point-by-point walk, which
/// masks, reports the exact error, or handles distributed views.
fn box_span(sim: &Simulator<'_>, tile: &TileVal, core: usize) -> Option<Span> {
    let TilePoints::Box { origin, order } = &tile.points else {
        return None;
    };
    let view = &tile.view;
    let rank = origin.len();
    if !view.parts.is_empty() || view.sizes.len() != rank || view.strides.len() != rank {
        return None;
    }
    if tile.shape.contains(&0) {
        return None;
    }
    let lo = origin.clone();
    let hi = origin
        .iter()
        .zip(&tile.shape)
        .map(|(o, &s)| o.checked_add(s as i64 - 1))
        .collect::<Option<Vec<i64>>>()?;
    if lo
        .iter()
        .zip(&hi)
        .zip(&view.sizes)
        .any(|((l, h), n)| *l < 0 || h >= n)
    {
        return None;
    }
    if let Some(set) = &view.set {
        if crate::affine::box_inside(set, &view.syms, &lo, &hi) != Some(true) {
            return None;
        }
    }
    // The walk sums `base + c0 * s0 + c1 * s1 + ...` with overflow checks: bounds on
    // every term and every partial sum over the whole box must fit.
    let (mut min, mut max) = (view.base, view.base);
    for d in 0..rank {
        let (a, b) = (
            lo[d].checked_mul(view.strides[d])?,
            hi[d].checked_mul(view.strides[d])?,
        );
        min = min.checked_add(a.min(b))?;
        max = max.checked_add(a.max(b))?;
    }
    let first = lo
        .iter()
        .zip(&view.strides)
        .fold(view.base, |a, (c, s)| a + c * s);
    let place = match view.space {
        MemorySpace::Global => {
            // A model has thousands of buffers: found by binary search, not a scan.
            let bi = sim.mem.dram_containing(min)?;
            let b = &sim.mem.dram[bi];
            if max >= b.base + b.len as i64 || b.elem != view.elem {
                return None;
            }
            Place::Dram(bi)
        }
        MemorySpace::Local { core: which } => {
            let c = match which {
                Some(c) => usize::try_from(c).ok()?,
                None => core,
            };
            let size = view.elem.size_bytes() as u64;
            let end = (max as u64).checked_add(1)?.checked_mul(size)?;
            if c >= sim.mem.scratchpads.len() || min < 0 || end > sim.machine.scratchpad_bytes.value
            {
                return None;
            }
            Place::Local(c)
        }
    };
    Some(Span {
        place,
        first,
        loops: order
            .iter()
            .map(|&d| (tile.shape[d], view.strides[d]))
            .collect(),
        end: max,
        stop: view_stop(sim, view, core),
    })
}

pub(crate) fn load(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &mut [Option<RtValue>],
    ctx: &mut CoreCtx,
) -> Result<(), SimError> {
    let tile = tile_operand(sim, slots, rop, 0)?;
    let rt = rop.op.result_types.first();
    let shape = rt
        .and_then(Type::static_shape)
        .unwrap_or_else(|| tile.shape.clone());
    let elem = rt.and_then(Type::elem).unwrap_or(tile.view.elem);
    sim.check_size(rop, &shape)?;
    let n = tile.len();
    if shape.iter().product::<usize>() != n {
        return Err(sim.at(
            rop,
            format!(
                "tensor shape {shape:?} differs from the tile's {:?}",
                tile.shape
            ),
        ));
    }
    if elem != tile.view.elem {
        return Err(sim.at(
            rop,
            format!(
                "loads {} from view '%{}' of {}",
                elem.name(),
                tile.view.name,
                tile.view.elem.name()
            ),
        ));
    }
    let size = elem.size_bytes() as u64;
    let (data, per_stop) = match box_span(sim, &tile, ctx.core) {
        Some(span) => {
            let data = sim.domain.load_span(&sim.mem, &span, elem, n);
            (data, vec![(span.stop, n as u64 * size)])
        }
        None => {
            // Filled in where the domain holds contents.
            let mut data = sim.domain.load_points(n);
            let mut per_stop: Vec<((usize, DramAccess), u64)> = Vec::new();
            tile.visit(|k, coord| {
                let Some((loc, stop)) = locate_masked(sim, rop, &tile.view, coord, ctx.core)?
                else {
                    // Masked: the value stays 0 and nothing moves.
                    if let Some(slot) = data.get_mut(k) {
                        *slot = 0.0;
                    }
                    return Ok(());
                };
                if let Some(slot) = data.get_mut(k) {
                    *slot = sim.mem.read_loc(loc, elem);
                }
                match per_stop.iter_mut().find(|(s, _)| *s == stop) {
                    Some((_, b)) => *b += size,
                    None => per_stop.push((stop, size)),
                }
                Ok(())
            })?;
            (data, per_stop)
        }
    };
    let deps: Vec<TaskId> = tile.ready.into_iter().chain(ctx.last_store).collect();
    let ready = transfers(sim, ctx, rop, per_stop, false, deps)?;
    let v = sim.new_tensor(ctx, rop, shape, elem, data, ready)?;
    sim.set(slots, rop, 0, v);
    Ok(())
}

pub(crate) fn store(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    slots: &mut [Option<RtValue>],
    ctx: &mut CoreCtx,
) -> Result<(), SimError> {
    let value: Rc<TensorVal> = sim.tensor(slots, rop, 0)?;
    let tile = tile_operand(sim, slots, rop, 1)?;
    let n = tile.len();
    if value.numel() != n {
        return Err(sim.at(
            rop,
            format!(
                "tensor shape {:?} differs from the tile's {:?}",
                value.shape, tile.shape
            ),
        ));
    }
    let elem = tile.view.elem;
    let size = elem.size_bytes() as u64;
    let per_stop = match box_span(sim, &tile, ctx.core) {
        Some(span) => {
            sim.domain
                .store_span(&mut sim.mem, &span, elem, &value.data);
            vec![(span.stop, n as u64 * size)]
        }
        None => {
            let mut per_stop: Vec<((usize, DramAccess), u64)> = Vec::new();
            tile.visit(|k, coord| {
                let Some((loc, stop)) = locate_masked(sim, rop, &tile.view, coord, ctx.core)?
                else {
                    // Masked: the value is dropped.
                    return Ok(());
                };
                // Written where the value holds contents.
                if let Some(x) = value.data.get(k) {
                    sim.mem.write_loc(loc, elem, *x);
                }
                match per_stop.iter_mut().find(|(s, _)| *s == stop) {
                    Some((_, b)) => *b += size,
                    None => per_stop.push((stop, size)),
                }
                Ok(())
            })?;
            per_stop
        }
    };
    let deps: Vec<TaskId> = value
        .ready
        .into_iter()
        .chain(tile.ready)
        .chain(ctx.last_store)
        .filter(|t| *t != NO_TASK)
        .collect();
    let done = transfers(sim, ctx, rop, per_stop, true, deps)?;
    if done.is_some() {
        ctx.last_store = done;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_maps_enumerate_innermost_last() {
        let swap = AffineMap {
            dims: 2,
            syms: 0,
            results: vec![AffineExpr::Dim(1), AffineExpr::Dim(0)],
        };
        let p = enumerate_points(&[0, 0], &[2, 3], Some(&swap)).unwrap();
        assert_eq!(p, vec![0, 0, 1, 0, 0, 1, 1, 1, 0, 2, 1, 2]);
        let id = enumerate_points(&[1, 0], &[2, 2], None).unwrap();
        assert_eq!(id, vec![1, 0, 1, 1, 2, 0, 2, 1]);
    }
}
