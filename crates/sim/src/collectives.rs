//! Inter-tile collectives: `ktdp.inter_tile_produce` membership, and the execution and
//! timing of `ktdp.inter_tile_reduce` and `ktdp.inter_tile_consume` once every participant
//! has arrived (see the suspension notes in `exec.rs`).
//!
//! Semantics (the spec leaves several points open; these are the playground's choices):
//! - Groups are the `g` of the future's `groups` set, enumerated over the set's box (or
//!   `0..grid` when it is not a box). Tile `t` produces for group `g` when
//!   `producer_tiles_per_group` holds at `(t)[g]`; a tile produces for its first such group.
//! - Consumers of group `g` are the tiles where `consumer_tiles_per_group` holds at `(t)[g]`;
//!   consumer `c` depends on the producers `p` of its group where
//!   `producer_dependency_per_consumer` holds at `(p)[c]` (one symbol) or `(p)[c, g]` (two),
//!   on all of them when there is no dependency set. A tile consumes from its first group.
//! - Participants of one collective instance are all producers and consumers; the
//!   collective fires when all of them wait at the same op and the same dynamic occurrence.
//!   A tile that takes no part passes straight through.
//! - Reduce: consumer `c` receives `identity (+) partial(p0) (+) partial(p1) ...` over its
//!   sources in ascending tile order, computed by interpreting the combiner region (so every
//!   consumer of an all-reduce gets bit-identical values). Tiles that do not consume get
//!   their identity value back. Consume: consumer `c` receives its single source's partial;
//!   tiles that do not consume get zeros.
//!
//! Timing model (all transfers are ring DMA tasks on the sending core, combines are SFP
//! tasks on the receiving core):
//! - All-reduce (every producer consumes, each over all producers): a ring
//!   reduce-scatter + all-gather over the participants in ring order. The partial is split
//!   into `n` chunks; `n - 1` reduce-scatter steps each send one chunk to the next
//!   participant, which combines it with its own; `n - 1` all-gather steps circulate the
//!   reduced chunks. Each step's send waits for the sender's previous step, so the cost is
//!   `2 (n - 1)` chunk transfers plus `n - 1` chunk combines, and bandwidth-optimal.
//!   For two adjacent cores (a K-split matmul over a pair) that is one half-size exchange
//!   each way, a half-size combine, and one more half-size exchange.
//! - Reduce to a subset (typically one leader): for each consumer, a pipelined chain on
//!   each side of the ring toward it: the partial is cut into pieces
//!   ([`ktir::reduce::reduce_pipeline_pieces`], four per hop, none under 32 KiB); the farthest source sends each piece to
//!   the next one on the same side, which combines it with its own and forwards it while
//!   the next piece arrives; the consumer combines what arrives from both sides. Every link
//!   carries the partial once, so with `h` hops on a side the cost is about
//!   `(1 + (h - 1) / pieces)` full-partial transfers, not `h`; a single hop sends the
//!   partial whole.
//! - Consume: one transfer of the partial from the source to the consumer (none when they
//!   are the same tile).

#![allow(clippy::needless_range_loop)]

use crate::resolve::ROp;
use crate::state::*;
use crate::timing::{DramAccess, Task, TaskId, Unit, Work};
use crate::value::*;
use ktir::ast::*;
use std::cell::OnceCell;
use std::rc::Rc;

/// What a collective op's sets give for a grid of `tiles`, kept on the op once worked out:
/// the sets are fixed when the op is resolved (their symbols are the group and the tile,
/// never run-time values), so every core and every occurrence of the op would otherwise
/// test the same points again, once per group and tile.
#[derive(Default)]
pub(crate) struct CollectiveMemo {
    /// `inter_tile_produce`: for each tile, the group it produces for (grid size first).
    producer_of: OnceCell<(usize, Vec<Option<i64>>)>,
    /// `inter_tile_reduce` and `inter_tile_consume`: who takes part (grid size first).
    plan: OnceCell<(usize, Rc<Plan>)>,
}

/// One group of a collective: its id, producers, and consumers with their sources.
pub(crate) type GroupPlan = (i64, Vec<usize>, Vec<(usize, Vec<usize>)>);

/// Who takes part in one collective.
pub(crate) struct Plan {
    /// Per group: its id, producers, and consumers with their sources.
    pub groups: Vec<GroupPlan>,
    /// Every producer and consumer, ascending.
    pub participants: Vec<usize>,
}

/// The error when no core can run and no collective can fire.
pub(crate) fn deadlock(cores: &[CoreRun<'_, '_>]) -> SimError {
    let mut first = None;
    let mut lines = Vec::new();
    for (c, run) in cores.iter().enumerate() {
        match run.state {
            CoreState::Waiting(rop, occ) => {
                first.get_or_insert((c, rop));
                lines.push(format!(
                    "core {c} waits at '{}' (line {}, occurrence {})",
                    rop.op.kind.name(),
                    rop.line,
                    occ + 1
                ));
            }
            CoreState::Done => lines.push(format!("core {c} has finished")),
            CoreState::Ready => {}
        }
    }
    let (core, op) = match first {
        Some((c, rop)) => (Some(c), Some((rop.op.kind.name().to_string(), rop.line))),
        None => (None, None),
    };
    SimError {
        message: format!(
            "deadlock: no collective can complete because a participant never arrives ({})",
            lines.join("; ")
        ),
        core,
        op,
    }
}

fn group_ids(
    sim: &Simulator<'_>,
    rop: &ROp<'_>,
    groups: &AffineSet,
    tiles: usize,
) -> Result<Vec<i64>, SimError> {
    let (lo, hi) = match groups.box_bounds(&vec![0; groups.syms]) {
        Some(b) if b.len() == 1 => b[0],
        _ => (0, tiles as i64 - 1),
    };
    if hi - lo > 4096 {
        return Err(sim.at(
            rop,
            format!(
                "the groups set spans {} groups; at most 4097 are executed",
                hi - lo + 1
            ),
        ));
    }
    Ok((lo..=hi)
        .filter(|g| groups.contains(&[*g], &vec![0; groups.syms]))
        .collect())
}

fn sets<'s>(
    sim: &Simulator<'_>,
    rop: &'s ROp<'_>,
    which: &[usize],
) -> Result<Vec<&'s AffineSet>, SimError> {
    which
        .iter()
        .map(|&i| {
            rop.sets.get(i).and_then(|s| s.as_deref()).ok_or_else(|| {
                sim.at(
                    rop,
                    "the producer or group set of this collective is unknown (the future must come from an inter_tile_produce in the same function)".into(),
                )
            })
        })
        .collect()
}

/// The group tile `ctx.core` produces for at an `inter_tile_produce`, if any.
pub(crate) fn producer_group(
    sim: &Simulator<'_>,
    rop: &ROp<'_>,
    ctx: &CoreCtx,
) -> Result<Option<i64>, SimError> {
    let tiles = ctx.grid_size;
    if let Some((n, of)) = rop.collective.producer_of.get() {
        if *n == tiles && ctx.core < of.len() {
            return Ok(of[ctx.core]);
        }
    }
    let s = sets(sim, rop, &[0, 1])?;
    let (producers, groups) = (s[0], s[1]);
    let ids = group_ids(sim, rop, groups, tiles)?;
    let first_group = |t: usize| {
        ids.iter()
            .copied()
            .find(|&g| producers.contains(&[t as i64], &[g]))
    };
    if ctx.core >= tiles {
        return Ok(first_group(ctx.core));
    }
    let of: Vec<Option<i64>> = (0..tiles).map(first_group).collect();
    let mine = of[ctx.core];
    // A grid of another size (not seen in one launch) is worked out again each time.
    let _ = rop.collective.producer_of.set((tiles, of));
    Ok(mine)
}

/// [`plan`], worked out once per op and grid size.
fn plan_of(sim: &Simulator<'_>, rop: &ROp<'_>, tiles: usize) -> Result<Rc<Plan>, SimError> {
    if let Some((n, p)) = rop.collective.plan.get() {
        if *n == tiles {
            return Ok(Rc::clone(p));
        }
    }
    let p = Rc::new(plan(sim, rop, tiles)?);
    let _ = rop.collective.plan.set((tiles, Rc::clone(&p)));
    Ok(p)
}

fn plan(sim: &Simulator<'_>, rop: &ROp<'_>, tiles: usize) -> Result<Plan, SimError> {
    let s = sets(sim, rop, &[0, 1, 2])?;
    let (producers, groups, consumers) = (s[0], s[1], s[2]);
    let dep = rop.sets.get(3).and_then(|d| d.as_deref());
    let mut taken = vec![false; tiles];
    let mut plan = Plan {
        groups: Vec::new(),
        participants: Vec::new(),
    };
    let mut produced = vec![false; tiles];
    for g in group_ids(sim, rop, groups, tiles)? {
        let ps: Vec<usize> = (0..tiles)
            .filter(|&t| !produced[t] && producers.contains(&[t as i64], &[g]))
            .collect();
        for &p in &ps {
            produced[p] = true;
        }
        let mut cs = Vec::new();
        for c in 0..tiles {
            if taken[c] || !consumers.contains(&[c as i64], &[g]) {
                continue;
            }
            taken[c] = true;
            let srcs: Vec<usize> = ps
                .iter()
                .copied()
                .filter(|&p| match dep {
                    None => true,
                    Some(d) => {
                        let syms: Vec<i64> = [c as i64, g].into_iter().take(d.syms).collect();
                        d.contains(&[p as i64], &syms)
                    }
                })
                .collect();
            cs.push((c, srcs));
        }
        plan.participants.extend(&ps);
        plan.participants.extend(cs.iter().map(|(c, _)| *c));
        plan.groups.push((g, ps, cs));
    }
    plan.participants.sort_unstable();
    plan.participants.dedup();
    Ok(plan)
}

/// Performs one collective whose participants have all arrived (or lets tiles that take
/// no part pass). Returns whether anything moved.
pub(crate) fn fire_collectives(
    sim: &mut Simulator<'_>,
    cores: &mut [CoreRun<'_, '_>],
) -> Result<bool, SimError> {
    let tiles = cores.len();
    let mut tried: Vec<(usize, u64)> = Vec::new();
    for c in 0..tiles {
        let CoreState::Waiting(rop, occ) = cores[c].state else {
            continue;
        };
        if tried.contains(&(rop.id, occ)) {
            continue;
        }
        tried.push((rop.id, occ));
        let plan = plan_of(sim, rop, tiles).map_err(|mut e| {
            e.core.get_or_insert(c);
            e
        })?;
        let here = |t: usize| matches!(cores[t].state, CoreState::Waiting(r, o) if r.id == rop.id && o == occ);
        if plan.participants.iter().all(|&t| here(t)) {
            let waiting: Vec<usize> = (0..tiles).filter(|&t| here(t)).collect();
            perform(sim, rop, &plan, &waiting, cores)?;
            return Ok(true);
        }
        let passers: Vec<usize> = (0..tiles)
            .filter(|t| here(*t) && plan.participants.binary_search(t).is_err())
            .collect();
        if !passers.is_empty() {
            let empty = Plan {
                groups: Vec::new(),
                participants: Vec::new(),
            };
            perform(sim, rop, &empty, &passers, cores)?;
            return Ok(true);
        }
    }
    Ok(false)
}

fn future_of(
    sim: &Simulator<'_>,
    rop: &ROp<'_>,
    cores: &[CoreRun<'_, '_>],
    t: usize,
) -> Result<Rc<FutureVal>, SimError> {
    match rop
        .operands
        .first()
        .and_then(|s| cores[t].slots.get(*s))
        .and_then(|v| v.as_ref())
    {
        Some(RtValue::Future(f)) => Ok(f.clone()),
        _ => Err(SimError {
            core: Some(t),
            ..sim.at(rop, "the future operand has no value".into())
        }),
    }
}

fn perform(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    plan: &Plan,
    waiting: &[usize],
    cores: &mut [CoreRun<'_, '_>],
) -> Result<(), SimError> {
    let reduce = matches!(rop.op.kind, OpKind::InterTileReduce { .. });
    let mut results: Vec<Option<Vec<RtValue>>> = vec![None; cores.len()];
    for (g, producers, consumers) in &plan.groups {
        // Every producer's partial values and the tasks that make them ready.
        let mut partials: Vec<(usize, Vec<RtValue>, Vec<TaskId>)> = Vec::new();
        for &p in producers {
            let f = future_of(sim, rop, cores, p)?;
            if f.group != Some(*g) {
                return Err(SimError {
                    core: Some(p),
                    ..sim.at(
                        rop,
                        format!(
                            "tile {p} should produce for group {g} but its future holds group {:?}",
                            f.group
                        ),
                    )
                });
            }
            let ready = f
                .values
                .iter()
                .filter_map(|v| match v {
                    RtValue::Tensor(t) => t.ready,
                    _ => None,
                })
                .collect();
            partials.push((p, f.values.clone(), ready));
        }
        let bytes: u64 = partials
            .first()
            .map(|(_, v, _)| v.iter().map(value_bytes).sum())
            .unwrap_or(0);
        let elems: u64 = partials
            .first()
            .map(|(_, v, _)| v.iter().map(value_elems).sum())
            .unwrap_or(0);
        let ready_of = |p: usize| -> Vec<TaskId> {
            partials
                .iter()
                .find(|(q, _, _)| *q == p)
                .map(|(_, _, r)| r.clone())
                .unwrap_or_default()
        };
        if !reduce {
            for (c, srcs) in consumers {
                let [src] = srcs.as_slice() else {
                    return Err(SimError {
                        core: Some(*c),
                        ..sim.at(
                            rop,
                            format!(
                                "consumer tile {c} has {} sources; a consume needs exactly one",
                                srcs.len()
                            ),
                        )
                    });
                };
                let values = partials
                    .iter()
                    .find(|(q, _, _)| q == src)
                    .map_or(&[][..], |(_, v, _)| v.as_slice());
                let ready = if src == c {
                    ready_of(*src)
                } else {
                    vec![ring_send(sim, rop, *src, *c, bytes, ready_of(*src))?]
                };
                let v = deliver(sim, rop, cores, *c, values, ready)?;
                results[*c] = Some(v);
            }
            continue;
        }
        // Reduce: numbers first (per distinct source list), then the timing model.
        let mut sums: Vec<(Vec<usize>, Vec<RtValue>)> = Vec::new();
        for (c, srcs) in consumers {
            if sums.iter().any(|(s, _)| s == srcs) {
                continue;
            }
            let mut acc: Vec<RtValue> = (1..rop.operands.len())
                .map(|i| sim.get(&cores[*c].slots, rop, i).cloned())
                .collect::<Result<_, _>>()
                .map_err(|mut e| {
                    e.core = Some(*c);
                    e
                })?;
            let region = rop
                .regions
                .first()
                .ok_or_else(|| sim.at(rop, "the reduce has no combiner".into()))?;
            let mut tmp = CoreCtx {
                core: *c,
                tile_id: Vec::new(),
                grid_size: cores.len(),
                live_bytes: 0,
                last_tasks: std::collections::BTreeSet::new(),
                last_store: None,
                record: false,
                generic_point: Vec::new(),
                run_region: cores[*c].ctx.run_region,
            };
            for s in srcs {
                let part = partials
                    .iter()
                    .find(|(q, _, _)| q == s)
                    .map(|(_, v, _)| v.clone())
                    .unwrap_or_default();
                let mut args = acc.clone();
                args.extend(part);
                acc = (tmp.run_region)(sim, region, args, &mut cores[*c].slots, &mut tmp).map_err(
                    |mut e| {
                        e.core.get_or_insert(*c);
                        e
                    },
                )?;
            }
            sums.push((srcs.clone(), acc));
        }
        let all_reduce = !producers.is_empty()
            && consumers.len() == producers.len()
            && consumers
                .iter()
                .all(|(c, s)| producers.contains(c) && s == producers);
        let finals: Vec<(usize, Vec<TaskId>)> = if all_reduce {
            let mut members = producers.clone();
            members.sort_by_key(|&t| sim.machine.core_stop(t));
            let ready: Vec<Vec<TaskId>> = members.iter().map(|&t| ready_of(t)).collect();
            let f = ring_all_reduce(sim, rop, &members, bytes, elems, &ready)?;
            members.into_iter().zip(f).collect()
        } else {
            let mut out = Vec::new();
            for (c, srcs) in consumers {
                let r = chain_reduce(sim, rop, *c, srcs, bytes, elems, &ready_of)?;
                out.push((*c, r));
            }
            out
        };
        for (c, srcs) in consumers {
            let values = sums
                .iter()
                .find(|(s, _)| s == srcs)
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let ready = finals
                .iter()
                .find(|(t, _)| t == c)
                .map(|(_, r)| r.clone())
                .unwrap_or_default();
            let v = deliver(sim, rop, cores, *c, &values, ready)?;
            results[*c] = Some(v);
        }
    }
    // Everyone waiting here resumes; those that received nothing get the identity
    // (reduce) or zeros (consume).
    for &t in waiting {
        let values = match results[t].take() {
            Some(v) => v,
            None if reduce => (1..rop.operands.len())
                .map(|i| sim.get(&cores[t].slots, rop, i).cloned())
                .collect::<Result<_, _>>()?,
            None => {
                let mut v = Vec::new();
                for i in 0..rop.results.len() {
                    let (shape, elem) = sim.result_shape_of(rop, i)?;
                    let zeros = sim.filled(&shape, 0.0);
                    v.push(sim.new_tensor(&mut cores[t].ctx, rop, shape, elem, zeros, None)?);
                }
                v
            }
        };
        let run = &mut cores[t];
        for (k, v) in values.into_iter().enumerate() {
            sim.set(&mut run.slots, rop, k, v);
        }
        sim.finish(&mut run.frames, rop, &mut run.slots, &mut run.ctx);
        *run.occurrences.entry(rop.id).or_insert(0) += 1;
        run.state = CoreState::Ready;
    }
    Ok(())
}

/// Gives `values` to core `c` as fresh tensors ready after `ready`.
fn deliver(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    cores: &mut [CoreRun<'_, '_>],
    c: usize,
    values: &[RtValue],
    ready: Vec<TaskId>,
) -> Result<Vec<RtValue>, SimError> {
    let ctx = &mut cores[c].ctx;
    let ready: Vec<TaskId> = ready.into_iter().filter(|t| *t != NO_TASK).collect();
    let joined = match ready.as_slice() {
        [] => None,
        [one] => Some(*one),
        _ => Some(sim.push_task(Task {
            core: c,
            unit: Unit::Sfp,
            work: Work::Compute { cycles: 0 },
            deps: ready.as_slice().into(),
            op: rop.name.clone(),
            line: rop.line,
        })?),
    };
    if let Some(j) = joined {
        ctx.last_tasks.insert(j);
    }
    let mut out = Vec::with_capacity(values.len());
    for v in values {
        out.push(match v {
            RtValue::Tensor(t) => {
                let data = crate::pool::copy_of(&t.data);
                sim.new_tensor(ctx, rop, t.shape.clone(), t.elem, data, joined)
                    .map_err(|mut e| {
                        e.core = Some(c);
                        e
                    })?
            }
            other => other.clone(),
        });
    }
    Ok(out)
}

fn ring_send(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    from: usize,
    to: usize,
    bytes: u64,
    deps: Vec<TaskId>,
) -> Result<TaskId, SimError> {
    sim.push_task(Task {
        core: from,
        unit: Unit::Dma,
        work: Work::Transfer {
            src_stop: sim.machine.core_stop(from),
            dst_stop: sim.machine.core_stop(to),
            bytes,
            dram: DramAccess::None,
        },
        deps: deps.into(),
        op: rop.name.clone(),
        line: rop.line,
    })
}

fn combine_task(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    core: usize,
    elems: u64,
    deps: Vec<TaskId>,
) -> Result<TaskId, SimError> {
    let cycles = sim.machine.sfp_cycles(elems, false);
    sim.push_task(Task {
        core,
        unit: Unit::Sfp,
        work: Work::Compute { cycles },
        deps: deps.into(),
        op: rop.name.clone(),
        line: rop.line,
    })
}

/// Ring reduce-scatter + all-gather over `members` (in ring order); the tasks after
/// which each member holds the full result.
fn ring_all_reduce(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    members: &[usize],
    bytes: u64,
    elems: u64,
    ready: &[Vec<TaskId>],
) -> Result<Vec<Vec<TaskId>>, SimError> {
    let n = members.len();
    if n <= 1 {
        return Ok(ready.to_vec());
    }
    let chunk_b = bytes.div_ceil(n as u64);
    let chunk_e = elems.div_ceil(n as u64);
    let mut cur: Vec<Vec<TaskId>> = ready.to_vec();
    for _ in 0..n - 1 {
        let mut sends = Vec::with_capacity(n);
        for k in 0..n {
            sends.push(ring_send(
                sim,
                rop,
                members[k],
                members[(k + 1) % n],
                chunk_b,
                cur[k].clone(),
            )?);
        }
        let mut next = cur.clone();
        for k in 0..n {
            let r = (k + 1) % n;
            let mut deps = vec![sends[k]];
            deps.extend(&cur[r]);
            deps.extend(&ready[r]);
            next[r] = vec![combine_task(sim, rop, members[r], chunk_e, deps)?];
        }
        cur = next;
    }
    let mut finals: Vec<Vec<TaskId>> = cur.clone();
    for _ in 0..n - 1 {
        let mut sends = Vec::with_capacity(n);
        for k in 0..n {
            sends.push(ring_send(
                sim,
                rop,
                members[k],
                members[(k + 1) % n],
                chunk_b,
                cur[k].clone(),
            )?);
        }
        for k in 0..n {
            let r = (k + 1) % n;
            cur[r] = vec![sends[k]];
            finals[r].push(sends[k]);
        }
    }
    Ok(finals)
}

/// Pipelined chains toward consumer `c` from both sides of the ring; the tasks after which
/// `c` holds the result.
fn chain_reduce(
    sim: &mut Simulator<'_>,
    rop: &ROp<'_>,
    c: usize,
    srcs: &[usize],
    bytes: u64,
    elems: u64,
    ready_of: &dyn Fn(usize) -> Vec<TaskId>,
) -> Result<Vec<TaskId>, SimError> {
    let stops = sim.machine.stop_count().max(1) as i64;
    let pos = |t: usize| sim.machine.core_stop(t) as i64;
    let fwd = |t: usize| (pos(c) - pos(t)).rem_euclid(stops);
    let mut side_a: Vec<usize> = srcs
        .iter()
        .copied()
        .filter(|&t| t != c && fwd(t) * 2 <= stops)
        .collect();
    let mut side_b: Vec<usize> = srcs
        .iter()
        .copied()
        .filter(|&t| t != c && fwd(t) * 2 > stops)
        .collect();
    side_a.sort_by_key(|&t| std::cmp::Reverse(fwd(t)));
    side_b.sort_by_key(|&t| std::cmp::Reverse(stops - fwd(t)));
    let mut at_c: Vec<TaskId> = if srcs.contains(&c) {
        ready_of(c)
    } else {
        Vec::new()
    };
    for side in [side_a, side_b] {
        if side.is_empty() {
            continue;
        }
        // Piece `j` covers bytes [bytes * j / n, bytes * (j + 1) / n), never empty.
        let n = ktir::reduce::reduce_pipeline_pieces(side.len() as u64, bytes)
            .min(elems.max(1))
            .max(1);
        let share = |total: u64, j: u64| total * (j + 1) / n - total * j / n;
        let mut arrived = Vec::with_capacity(n as usize);
        // Piece-major order: each core's DMA and SFP issue the pieces in order, so piece
        // j + 1 leaves a core while the next core combines piece j.
        for j in 0..n {
            let (pb, pe) = (share(bytes, j), share(elems, j));
            let mut carry: Option<(usize, Vec<TaskId>)> = None;
            for &t in &side {
                carry = Some(match carry {
                    None => (t, ready_of(t)),
                    Some((prev, deps)) => {
                        let send = ring_send(sim, rop, prev, t, pb, deps)?;
                        let mut d = vec![send];
                        d.extend(ready_of(t));
                        (t, vec![combine_task(sim, rop, t, pe, d)?])
                    }
                });
            }
            if let Some((last, deps)) = carry {
                let send = ring_send(sim, rop, last, c, pb, deps)?;
                let mut d = vec![send];
                d.extend(at_c.iter().copied());
                arrived.push(combine_task(sim, rop, c, pe, d)?);
            }
        }
        at_c = arrived;
    }
    Ok(at_c)
}

fn value_bytes(v: &RtValue) -> u64 {
    match v {
        RtValue::Tensor(t) => crate::value::tensor_bytes(t),
        _ => 8,
    }
}

fn value_elems(v: &RtValue) -> u64 {
    match v {
        RtValue::Tensor(t) => t.numel() as u64,
        _ => 1,
    }
}
