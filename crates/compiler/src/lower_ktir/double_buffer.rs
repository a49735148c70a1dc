//! Double buffering of time loops: the load of block i+1 is issued before the compute on
//! block i.
//!
//! Each core's DMA engine issues in program order, and a load waits for the core's last
//! store; in a plain time loop the load of the next block therefore queues behind the store
//! of this one, which waits for its compute, so DMA and compute never overlap. The rewrite
//! is software pipelining with two buffers and a phase (the dataflow scheduler's
//! double-buffering pass): block 0 is loaded before the loop, each step carries the block
//! loaded for it as an `iter_args` value (buffer `i % 2`), loads block i+1 into the other
//! buffer under `scf.if i + 1 < steps`, computes on the carried block and yields the new
//! one. Only the innermost loops that load are rewritten, and only loads whose address
//! depends on pure scalar ops of the body (access tiles, index arithmetic).

use ktir::build::{value, Builder};
use ktir::{Block, CmpIPredicate, ElementwiseOp, Func, Op, OpKind, Predicate, Type};
use std::collections::{BTreeMap, BTreeSet};

/// Rewrites every innermost time loop of `func` that loads; returns how many loads were
/// double-buffered (0: the kernel is unchanged).
pub(super) fn double_buffer(func: &mut Func) -> usize {
    let mut names = BTreeSet::new();
    collect_names(&func.body, &mut names);
    for (a, _) in &func.args {
        names.insert(a.clone());
    }
    let mut fresh = Fresh { names, next: 0 };
    rewrite_block(&mut func.body, &mut fresh).0
}

/// Fresh SSA names that collide with none in the function.
struct Fresh {
    names: BTreeSet<String>,
    next: usize,
}

impl Fresh {
    fn name(&mut self, base: &str) -> String {
        loop {
            self.next += 1;
            let n = format!("{base}_db{}", self.next);
            if self.names.insert(n.clone()) {
                return n;
            }
        }
    }
}

fn collect_names(b: &Block, out: &mut BTreeSet<String>) {
    for (a, _) in &b.args {
        out.insert(a.clone());
    }
    for op in &b.ops {
        out.extend(op.results.iter().cloned());
        if let OpKind::For { induction, .. } = &op.kind {
            out.insert(induction.clone());
        }
        for r in op.kind.regions() {
            collect_names(r, out);
        }
    }
}

/// Rewrites the loops of `b` (inner ones first); returns (loads double-buffered, whether
/// `b` holds a loop that loads, rewritten or not).
fn rewrite_block(b: &mut Block, fresh: &mut Fresh) -> (usize, bool) {
    let mut done = 0;
    let mut loads_inside = false;
    let mut i = 0;
    while i < b.ops.len() {
        let mut inner_loads = false;
        for r in b.ops[i].kind.regions_mut() {
            let (n, l) = rewrite_block(r, fresh);
            done += n;
            inner_loads |= l;
        }
        let is_for = matches!(b.ops[i].kind, OpKind::For { .. });
        if is_for {
            let top_loads = match &b.ops[i].kind {
                OpKind::For { body, .. } => body.ops.iter().any(|o| {
                    matches!(
                        o.kind,
                        OpKind::Load { .. } | OpKind::InterTileConsume { .. }
                    )
                }),
                _ => false,
            };
            loads_inside |= top_loads || inner_loads;
            if top_loads && !inner_loads {
                if let Some(prologue) = pipeline(&mut b.ops[i], fresh, &mut done) {
                    let n = prologue.len();
                    b.ops.splice(i..i, prologue);
                    i += n;
                }
            }
        } else {
            loads_inside |= inner_loads;
        }
        i += 1;
    }
    (done, loads_inside)
}

/// Whether an op may be copied to compute the next block's address: no regions, no
/// effects, and no tensor results (a copy would take scratchpad).
fn pure_scalar(op: &Op) -> bool {
    op.kind.regions().is_empty()
        && !op.kind.is_terminator()
        && !matches!(
            op.kind,
            OpKind::Load { .. }
                | OpKind::Store { .. }
                | OpKind::InterTileProduce { .. }
                | OpKind::InterTileConsume { .. }
                | OpKind::InterTileReduce { .. }
                | OpKind::ConstructIndirectAccessTile { .. }
        )
        && op
            .result_types
            .iter()
            .all(|t| !matches!(t, Type::Tensor { .. }))
}

/// Copies of body ops `slice` (indices, in order) with the loop index renamed to `iv` and
/// every result renamed; returns the ops and the renaming.
fn copy_slice(
    body: &Block,
    slice: &[usize],
    induction: &str,
    iv: &str,
    fresh: &mut Fresh,
) -> (Vec<Op>, BTreeMap<String, String>) {
    let mut map = BTreeMap::new();
    map.insert(induction.to_string(), iv.to_string());
    let mut ops = Vec::new();
    for &j in slice {
        let mut op = body.ops[j].clone();
        for v in op.kind.operands_mut() {
            if let Some(n) = map.get(&v.name) {
                v.name = n.clone();
            }
        }
        for r in op.kind.regions_mut() {
            rename_region(r, &mut map, fresh);
        }
        for r in &mut op.results {
            let n = fresh.name(r);
            map.insert(r.clone(), n.clone());
            *r = n;
        }
        op.comment = None;
        ops.push(op);
    }
    (ops, map)
}

/// Renames, inside a copied region, the uses of renamed values and every value the region
/// defines (its arguments and results), so the copy's names collide with none.
fn rename_region(b: &mut Block, map: &mut BTreeMap<String, String>, fresh: &mut Fresh) {
    for (a, _) in &mut b.args {
        let n = fresh.name(a);
        map.insert(a.clone(), n.clone());
        *a = n;
    }
    for op in &mut b.ops {
        for v in op.kind.operands_mut() {
            if let Some(n) = map.get(&v.name) {
                v.name = n.clone();
            }
        }
        for r in op.kind.regions_mut() {
            rename_region(r, map, fresh);
        }
        for r in &mut op.results {
            let n = fresh.name(r);
            map.insert(r.clone(), n.clone());
            *r = n;
        }
    }
}

/// Every value name the ops of `b` (and their regions) use.
fn region_uses(b: &Block, out: &mut Vec<String>) {
    for op in &b.ops {
        out.extend(op.kind.operands().iter().map(|v| v.name.clone()));
        for r in op.kind.regions() {
            region_uses(r, out);
        }
    }
}

/// How many times the ops of `b` (and their regions) use `name`.
fn uses_of(b: &Block, name: &str) -> usize {
    let mut all = Vec::new();
    region_uses(b, &mut all);
    all.iter().filter(|n| n.as_str() == name).count()
}

/// Pipelines the loads of loop `op`; returns the prologue to put before it (`None`: the
/// loop is left as it is).
fn pipeline(op: &mut Op, fresh: &mut Fresh, done: &mut usize) -> Option<Vec<Op>> {
    let OpKind::For {
        induction,
        lower,
        upper,
        step,
        iter_args,
        body,
    } = &mut op.kind
    else {
        return None;
    };
    let defined: BTreeMap<&str, usize> = body
        .ops
        .iter()
        .enumerate()
        .flat_map(|(j, o)| o.results.iter().map(move |r| (r.as_str(), j)))
        .collect();
    // Each load with the body ops its address needs. A tile shared over the ring (an
    // `inter_tile_consume` of a future whose producer region loads) moves as one unit with
    // its producer: the loading core prefetches it and the group takes it one step ahead.
    let mut loads: Vec<usize> = Vec::new();
    let mut slice: BTreeSet<usize> = BTreeSet::new();
    let mut producers: BTreeSet<usize> = BTreeSet::new();
    for (j, o) in body.ops.iter().enumerate() {
        if o.results.len() != 1 {
            continue;
        }
        let mut need = BTreeSet::new();
        let mut work: Vec<String> = match &o.kind {
            OpKind::Load { .. } => o.kind.operands().iter().map(|v| v.name.clone()).collect(),
            OpKind::InterTileConsume { future, .. } => {
                let Some(&k) = defined.get(future.name.as_str()) else {
                    continue;
                };
                let p = &body.ops[k];
                let OpKind::InterTileProduce { body: region, .. } = &p.kind else {
                    continue;
                };
                if !region
                    .ops
                    .iter()
                    .any(|x| matches!(x.kind, OpKind::Load { .. }))
                    || uses_of(body, &future.name) != 1
                {
                    continue;
                }
                need.insert(k);
                producers.insert(k);
                let mut free = Vec::new();
                region_uses(region, &mut free);
                free
            }
            _ => continue,
        };
        let mut ok = true;
        while let Some(n) = work.pop() {
            let Some(&k) = defined.get(n.as_str()) else {
                continue;
            };
            if !need.insert(k) {
                continue;
            }
            if !pure_scalar(&body.ops[k]) {
                ok = false;
                break;
            }
            work.extend(body.ops[k].kind.operands().iter().map(|v| v.name.clone()));
        }
        if ok {
            loads.push(j);
            slice.extend(need);
        }
    }
    if loads.is_empty() {
        return None;
    }
    let mut order: Vec<usize> = slice.iter().copied().collect();
    order.extend(&loads);
    order.sort_unstable();
    let load_types: Vec<Type> = loads
        .iter()
        .filter_map(|&j| body.ops[j].result_types.first().cloned())
        .collect();
    if load_types.len() != loads.len() {
        return None;
    }
    let load_names: Vec<String> = loads
        .iter()
        .map(|&j| body.ops[j].results[0].clone())
        .collect();

    // Block 0, before the loop.
    let (prologue, first) = copy_slice(body, &order, induction, &lower.name, fresh);
    let initial: Option<Vec<String>> = load_names.iter().map(|n| first.get(n).cloned()).collect();
    // The buffer each step computes on, carried from the step before.
    let current: Vec<String> = load_names.iter().map(|n| fresh.name(n)).collect();
    // Block i+1, loaded while block i computes.
    let (nx, more) = (fresh.name("next"), fresh.name("more"));
    let (ahead, after) = copy_slice(body, &order, induction, &nx, fresh);
    let prefetched: Vec<String> = load_names.iter().map(|n| fresh.name(n)).collect();
    let mut b = Builder::new();
    b.elementwise(
        &nx,
        ElementwiseOp::AddI,
        &[&value(induction), &value(&step.name)],
        Type::index(),
    );
    b.compare(
        &more,
        Predicate::Int(CmpIPredicate::Slt),
        &value(&nx),
        &value(&upper.name),
        Type::index(),
    );
    b.begin_block(Vec::new());
    for o in ahead {
        b.push(o);
    }
    let next: Option<Vec<String>> = load_names.iter().map(|n| after.get(n).cloned()).collect();
    let (Some(initial), Some(next)) = (initial, next) else {
        return None;
    };
    let loaded: Vec<_> = next.iter().map(|n| value(n)).collect();
    b.yield_(&loaded.iter().collect::<Vec<_>>(), load_types.clone());
    let then = b.end_block();
    b.begin_block(Vec::new());
    let carried: Vec<_> = current.iter().map(|n| value(n)).collect();
    b.yield_(&carried.iter().collect::<Vec<_>>(), load_types.clone());
    let otherwise = b.end_block();
    b.if_op(
        prefetched.clone(),
        &value(&more),
        then,
        Some(otherwise),
        load_types.clone(),
    );
    let mut head = b.finish().ops;
    if let Some(o) = head
        .iter_mut()
        .find(|o| matches!(o.kind, OpKind::If { .. }))
    {
        o.comment = Some("double buffering: the next block loads while this one computes".into());
    }

    // The body without its loads (and the address ops only they used), reading the
    // carried buffers.
    let rename: BTreeMap<&str, &str> = load_names
        .iter()
        .map(String::as_str)
        .zip(current.iter().map(String::as_str))
        .collect();
    let mut rest: Vec<Op> = Vec::new();
    for (j, o) in std::mem::take(&mut body.ops).into_iter().enumerate() {
        if loads.contains(&j) || producers.contains(&j) {
            continue;
        }
        let mut o = o;
        rename_uses(&mut o, &rename);
        rest.push(o);
    }
    drop_unused(&mut rest);
    let mut ops = head;
    ops.extend(rest);
    match ops.last_mut() {
        Some(Op {
            kind: OpKind::Yield { values, types },
            ..
        }) => {
            values.extend(prefetched.iter().map(|n| value(n)));
            types.extend(load_types.iter().cloned());
        }
        _ => {
            let mut y = Builder::new();
            let v: Vec<_> = prefetched.iter().map(|n| value(n)).collect();
            y.yield_(&v.iter().collect::<Vec<_>>(), load_types.clone());
            ops.extend(y.finish().ops);
        }
    }
    body.ops = ops;
    body.args
        .extend(current.iter().cloned().zip(load_types.iter().cloned()));
    iter_args.extend(
        current
            .iter()
            .cloned()
            .zip(initial.iter().map(|n| value(n))),
    );
    for n in &load_names {
        op.results.push(fresh.name(n));
    }
    op.result_types.extend(load_types);
    *done += loads.len();
    Some(prologue)
}

/// Renames uses of values in `op` and its regions.
fn rename_uses(op: &mut Op, map: &BTreeMap<&str, &str>) {
    for v in op.kind.operands_mut() {
        if let Some(n) = map.get(v.name.as_str()) {
            v.name = n.to_string();
        }
    }
    for r in op.kind.regions_mut() {
        for o in &mut r.ops {
            rename_uses(o, map);
        }
    }
}

/// Removes pure scalar ops whose results nothing uses any more (the old address ops).
fn drop_unused(ops: &mut Vec<Op>) {
    fn used(op: &Op, out: &mut BTreeSet<String>) {
        out.extend(op.kind.operands().iter().map(|v| v.name.clone()));
        for r in op.kind.regions() {
            for o in &r.ops {
                used(o, out);
            }
        }
    }
    loop {
        let mut uses = BTreeSet::new();
        for o in ops.iter() {
            used(o, &mut uses);
        }
        let before = ops.len();
        ops.retain(|o| {
            !(matches!(o.kind, OpKind::ConstructAccessTile { .. })
                && o.results.iter().all(|r| !uses.contains(r)))
        });
        if ops.len() == before {
            break;
        }
    }
}
