//! Fused kernels: one KTIR function for a fusion group (see [`crate::fusion`]).
//!
//! Every member is lowered as it would be alone, then the bodies are put one after the
//! other in one function, in member order, with
//! - SSA names made unique across members;
//! - identical constants, tile ids, memory views and access tiles built once;
//! - a load of a tile a member before already loaded or stored replaced by that value, so
//!   each external input is loaded once and an intermediate is read from the value that
//!   computed it;
//! - the stores of intermediates nothing outside the chain reads dropped, with the views
//!   and tiles only they used.
//!
//! Members are never cut into time steps (the pass leaves such ops alone), so every
//! value of the chain is a whole per-core tile and the forwarding is exact.

use super::*;
use crate::fusion::FusionGroup;
use ktir::working_set::peak_live_bytes;
use ktir::{Op, OpKind};
use std::collections::BTreeSet;

/// The ops (index, time steps) among those `want` accepts whose kernel alone is cut into
/// time steps: they are not fused. `held` is [`tiling::planned_live_bytes`] of `c`.
pub(crate) fn time_tiled(
    c: &Compilation,
    held: &[u64],
    double: bool,
    want: impl Fn(usize) -> bool,
) -> Result<BTreeMap<usize, usize>, CompileError> {
    let mut out = BTreeMap::new();
    // Repeated layers repeat their kernels: each distinct kernel (by the key of what its
    // time plan is chosen from) is built once, not once per layer.
    let mut known: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, op) in c.ops.iter().enumerate() {
        if !want(i) {
            continue;
        }
        let kernel = single_kernel(c, i, op);
        let held_i = held.get(i).copied().unwrap_or(0);
        let key = crate::artifact_cache::plan_key(c, op, i, &kernel, held_i, double);
        let steps = match known.get(&key) {
            Some(&steps) => steps,
            None => {
                let f = tiling::emit_kernel(c, op, i, &kernel, held_i, double)?;
                let steps = tiling::time_steps(&f.body);
                known.insert(key, steps);
                steps
            }
        };
        if steps > 1 {
            out.insert(i, steps);
        }
    }
    Ok(out)
}

/// The fused kernel of `group` when it builds, verifies and fits its members' scratchpad
/// budget; otherwise why not. `held` is [`tiling::planned_live_bytes`] of `c`.
pub(crate) fn fused_fits(
    c: &Compilation,
    held: &[u64],
    group: &FusionGroup,
    double: bool,
) -> Result<Result<ktir::Func, String>, CompileError> {
    let kernel = Kernel {
        func: format!("k{}_{}", group.first, ident(&group.name)),
        op: group.name.clone(),
        args: kernel_args(c, &c.ops[group.ops()]),
        ops: group.ops(),
    };
    let f = match fused_kernel(c, group, &kernel, held, double) {
        Ok(f) => f,
        Err(e) => {
            return Ok(Err(format!(
                "its fused kernel does not build: {}",
                e.message
            )))
        }
    };
    if tiling::time_steps(&f.body) > 1 {
        return Ok(Err("a member is cut into time steps".into()));
    }
    let need = peak_live_bytes(&f);
    let budget = fused_budget(c, group, held);
    if need > budget {
        return Ok(Err(format!(
            "the chain's tiles need {need} bytes of scratchpad per core at once, over the budget of {budget}"
        )));
    }
    Ok(Ok(f))
}

/// The scratchpad budget of a fused kernel: the plannable capacity minus the most the plan
/// holds while any member runs.
fn fused_budget(c: &Compilation, group: &FusionGroup, held: &[u64]) -> u64 {
    let most = group
        .ops()
        .map(|i| held.get(i).copied().unwrap_or(0))
        .max()
        .unwrap_or(0);
    (c.target.scratchpad_capacity_bytes as u64).saturating_sub(most)
}

/// The fused kernel of `group` (launched as `kernel`), verified.
pub(super) fn fused_kernel(
    c: &Compilation,
    group: &FusionGroup,
    kernel: &Kernel,
    held: &[u64],
    double: bool,
) -> Result<ktir::Func, CompileError> {
    let fail = |m: String| CompileError::at(&group.name, m);
    let internal: BTreeSet<&str> = group.internal.iter().map(|s| s.as_str()).collect();
    let mut s = Splicer::default();
    let mut grid = None;
    let mut parts = Vec::new();
    for i in group.ops() {
        let op = c
            .ops
            .get(i)
            .ok_or_else(|| fail(format!("fusion group names op {i}, which does not exist")))?;
        let single = single_kernel(c, i, op);
        let f = tiling::emit_kernel(c, op, i, &single, held.get(i).copied().unwrap_or(0), double)?;
        if grid.is_some() && grid != f.grid {
            return Err(fail(format!("member '{}' runs on another grid", op.name)));
        }
        grid = f.grid.clone();
        // Arguments: one per tensor, named by the first member that has it.
        let mut map: BTreeMap<String, String> = BTreeMap::new();
        for (t, (name, ty)) in single.args.iter().zip(&f.args) {
            let fused = match s.arg_of.get(t) {
                Some(n) => n.clone(),
                None => {
                    let n = s.fresh(name);
                    s.arg_of.insert(t.clone(), n.clone());
                    s.args.push((n.clone(), ty.clone()));
                    n
                }
            };
            map.insert(name.clone(), fused);
        }
        let dead_store = op.outputs.iter().all(|t| internal.contains(t.as_str()));
        s.member(f.body, &mut map, dead_store);
        parts.push(format!("{} ({})", op.name, op.kind));
    }
    s.drop_dead_stores();
    s.drop_unused();
    s.body.ops.push(Op {
        results: Vec::new(),
        kind: OpKind::Return {
            values: Vec::new(),
            types: Vec::new(),
        },
        result_types: Vec::new(),
        span: Default::default(),
        comment: None,
    });
    // The arguments in the launch's order.
    let mut args = Vec::new();
    for t in &kernel.args {
        let name = s
            .arg_of
            .get(t)
            .ok_or_else(|| fail(format!("tensor '{t}' is no member's argument")))?;
        let ty = s
            .args
            .iter()
            .find(|(n, _)| n == name)
            .map(|a| a.1.clone())
            .unwrap_or_else(Type::index);
        args.push((name.clone(), ty));
    }
    let div = c.divisions.get(group.first);
    let division = div
        .map(|d| format!("splits {:?} over {} core(s)", d.splits, d.cores_used))
        .unwrap_or_default();
    let kept = if group.internal.is_empty() {
        String::new()
    } else {
        format!("; never stored: {}", group.internal.join(", "))
    };
    let comment = format!(
        "fused {}: {}; {division}; each input loaded once{kept}",
        group.name,
        parts.join(", ")
    );
    let func = build::func(
        &kernel.func,
        args,
        grid.unwrap_or_else(|| vec![1]),
        s.body,
        Some(comment),
    );
    let first = &c.ops[group.first];
    verified(first, func)
}

/// Builds the fused body member by member.
#[derive(Default)]
struct Splicer {
    body: ktir::Block,
    /// Every SSA name defined so far.
    used: BTreeSet<String>,
    /// Fused argument name per tensor.
    arg_of: BTreeMap<String, String>,
    args: Vec<(String, Type)>,
    /// Pure top-level ops built so far, for reuse.
    pure: Vec<(OpKind, Vec<Type>, Vec<String>)>,
    /// The view each access tile was built on.
    view_of: BTreeMap<String, String>,
    /// Per tile: the value it holds (from a load or a store before) and its type.
    avail: BTreeMap<String, (String, Type)>,
    /// Top-level indices of stores that write a value only the chain reads.
    droppable: Vec<usize>,
}

impl Splicer {
    /// `base` if unused, else `base_2`, `base_3`, ...; marked used.
    fn fresh(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut k = 2;
        while self.used.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(name.clone());
        name
    }

    /// Renames a nested block's definitions and uses (no reuse inside regions).
    fn rename_region(&mut self, b: &mut ktir::Block, map: &mut BTreeMap<String, String>) {
        for (name, _) in b.args.iter_mut() {
            let n = self.fresh(name);
            map.insert(name.clone(), n.clone());
            *name = n;
        }
        for op in b.ops.iter_mut() {
            self.rename_op(op, map);
            for r in op.results.iter_mut() {
                let n = self.fresh(r);
                map.insert(r.clone(), n.clone());
                *r = n;
            }
        }
    }

    /// Renames an op's operands (and its regions) through `map`.
    fn rename_op(&mut self, op: &mut Op, map: &mut BTreeMap<String, String>) {
        for v in op.kind.operands_mut() {
            if let Some(n) = map.get(&v.name) {
                v.name = n.clone();
            }
        }
        for r in op.kind.regions_mut() {
            self.rename_region(r, map);
        }
    }

    /// Appends one member's body (its `func.return` left out).
    fn member(&mut self, body: ktir::Block, map: &mut BTreeMap<String, String>, dead_store: bool) {
        for mut op in body.ops {
            if matches!(op.kind, OpKind::Return { .. }) {
                continue;
            }
            self.rename_op(&mut op, map);
            if is_pure(&op.kind) {
                if let Some((_, _, results)) = self
                    .pure
                    .iter()
                    .find(|(k, t, _)| *k == op.kind && *t == op.result_types)
                {
                    for (r, existing) in op.results.iter().zip(results.clone()) {
                        map.insert(r.clone(), existing);
                    }
                    continue;
                }
            }
            if let OpKind::Load { tile, .. } = &op.kind {
                if let (Some((v, ty)), [r], [rt]) = (
                    self.avail.get(&tile.name),
                    op.results.as_slice(),
                    op.result_types.as_slice(),
                ) {
                    if ty == rt {
                        map.insert(r.clone(), v.clone());
                        continue;
                    }
                }
            }
            for r in op.results.iter_mut() {
                let n = self.fresh(r);
                map.insert(r.clone(), n.clone());
                *r = n;
            }
            match &op.kind {
                OpKind::ConstructAccessTile { view, .. } => {
                    if let [r] = op.results.as_slice() {
                        self.view_of.insert(r.clone(), view.name.clone());
                    }
                }
                OpKind::Load { tile, .. } => {
                    if let ([r], [rt]) = (op.results.as_slice(), op.result_types.as_slice()) {
                        self.avail
                            .insert(tile.name.clone(), (r.clone(), rt.clone()));
                    }
                }
                OpKind::Store {
                    value,
                    tile,
                    value_type,
                    ..
                } => {
                    let view = self.view_of.get(&tile.name).cloned();
                    let view_of = &self.view_of;
                    self.avail
                        .retain(|t, _| view.is_none() || view_of.get(t) != view.as_ref());
                    self.avail
                        .insert(tile.name.clone(), (value.name.clone(), value_type.clone()));
                    if dead_store {
                        self.droppable.push(self.body.ops.len());
                    }
                }
                _ => {}
            }
            if is_pure(&op.kind) {
                self.pure
                    .push((op.kind.clone(), op.result_types.clone(), op.results.clone()));
            }
            self.body.ops.push(op);
        }
    }

    /// Drops the stores of values only the chain reads, when no load left reads their view.
    fn drop_dead_stores(&mut self) {
        let mut read_views: BTreeSet<String> = BTreeSet::new();
        fn loads(b: &ktir::Block, out: &mut Vec<String>) {
            for op in &b.ops {
                if let OpKind::Load { tile, .. } = &op.kind {
                    out.push(tile.name.clone());
                }
                for r in op.kind.regions() {
                    loads(r, out);
                }
            }
        }
        let mut tiles = Vec::new();
        loads(&self.body, &mut tiles);
        for t in tiles {
            // A tile whose view is unknown could be any view: keep every store.
            match self.view_of.get(&t) {
                Some(v) => {
                    read_views.insert(v.clone());
                }
                None => return,
            }
        }
        let drop: BTreeSet<usize> = self
            .droppable
            .iter()
            .copied()
            .filter(|&k| match &self.body.ops[k].kind {
                OpKind::Store { tile, .. } => self
                    .view_of
                    .get(&tile.name)
                    .is_some_and(|v| !read_views.contains(v)),
                _ => false,
            })
            .collect();
        let ops = std::mem::take(&mut self.body.ops);
        self.body.ops = ops
            .into_iter()
            .enumerate()
            .filter(|(k, _)| !drop.contains(k))
            .map(|(_, op)| op)
            .collect();
        self.droppable.clear();
    }

    /// Drops pure top-level ops none of whose results is used, until none is left.
    fn drop_unused(&mut self) {
        fn uses(b: &ktir::Block, out: &mut BTreeSet<String>) {
            for op in &b.ops {
                for v in op.kind.operands() {
                    out.insert(v.name.clone());
                }
                for r in op.kind.regions() {
                    uses(r, out);
                }
            }
        }
        loop {
            let mut used = BTreeSet::new();
            uses(&self.body, &mut used);
            let before = self.body.ops.len();
            self.body
                .ops
                .retain(|op| !is_pure(&op.kind) || op.results.iter().any(|r| used.contains(r)));
            if self.body.ops.len() == before {
                break;
            }
        }
    }
}

/// Ops with no effect beyond their results (constants, the tile id, views and access
/// tiles): members repeat them, so the fused body keeps one of each and drops unused ones.
fn is_pure(kind: &OpKind) -> bool {
    matches!(
        kind,
        OpKind::Constant { .. }
            | OpKind::GetComputeTileId { .. }
            | OpKind::ConstructMemoryView { .. }
            | OpKind::ConstructAccessTile { .. }
    )
}
