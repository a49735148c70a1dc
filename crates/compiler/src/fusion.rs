//! The `fusion` pass: runs of consecutive elementwise ops (and row reductions a core does
//! whole) that every core runs on the same slice become one kernel.
//!
//! A fused kernel loads each external input once, computes the chain on scratchpad tiles
//! and stores only the values read outside the chain (see `lower_ktir::fuse`). What it
//! saves: the reloads of inputs several members read (the norm reads `x` twice), the
//! stores and loads of intermediates, and one launch (a barrier over every core) per
//! member after the first.
//!
//! An op joins the run before it when
//! - it is pointwise or a reduction, or a slice or concat that splits no axis it cuts or
//!   joins (each core then slices or joins its own tiles: RoPE's halves and their rotation
//!   join the multiplies around them); other movement ops, matmuls and row ops end a run:
//!   they change the iteration space or need a cross-core step;
//! - its work division is the run's: the same splits and the same core-to-slice table, so
//!   every core holds the same slice of every member;
//! - no reduction dim of it is split over cores;
//! - every tensor it reads from the run is in the cores' scratchpads (one held in DRAM
//!   could be written by another core, and a kernel has no barrier inside);
//! - its kernel is not cut into time steps (its slice fits the scratchpad at once);
//! - the fused kernel's working set fits the scratchpad budget of its members.
//!
//! Each run that fails one of these says why in the snapshot.
//!
//! [`crate::Options::fuse`] turns the pass off: every op is then a kernel of its own.

use crate::movement_split::keeps_core_slices;
use crate::ops::{Category, DeviceOp, DeviceOpKind};
use crate::{Compilation, CompileError, Placement};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One fused kernel: consecutive device ops lowered as one KTIR function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FusionGroup {
    /// The kernel's name: the members' common graph node, else first and last member.
    pub name: String,
    /// Index in `c.ops` of the first member.
    pub first: usize,
    /// Number of members (at least 2).
    pub len: usize,
    /// Tensors the members produce that only later members read: never stored.
    pub internal: Vec<String>,
}

impl FusionGroup {
    /// The member op indices.
    pub fn ops(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.len
    }
}

/// What the pass decided: the groups, and why neighbouring candidates stayed apart.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FusionReport {
    /// Whether the pass ran (off with `--no-fuse`).
    pub enabled: bool,
    pub groups: Vec<FusionGroup>,
    /// (op, reason): an elementwise op left out of every fused kernel, an op next to one, or
    /// a run that does not join the op before it, and why.
    pub left_alone: Vec<(String, String)>,
}

/// The layer or block a device op belongs to, for names that say (`layer3.attn.scale` and
/// `final_norm/mean` give `layer3` and `final_norm`; a plain `mean` gives `None`): the same
/// rule as the per-layer breakdown, which credits a kernel to one block.
fn block_of(op: &str) -> Option<&str> {
    op.find(['.', '/']).map(|at| &op[..at])
}

/// Why op `i` cannot join a run whose last member is `prev` (`None`: it may).
fn join_reason(
    c: &Compilation,
    produced: &BTreeSet<&str>,
    prev: usize,
    i: usize,
) -> Option<String> {
    if let (Some(x), Some(y)) = (block_of(&c.ops[prev].name), block_of(&c.ops[i].name)) {
        if x != y {
            return Some(format!(
                "it starts block `{y}` and the chain is in `{x}`: a kernel stays within one \
                 layer or block, so each block's cycles stay its own"
            ));
        }
    }
    let (a, b) = (&c.divisions[prev], &c.divisions[i]);
    if a.splits != b.splits || a.core_to_slice != b.core_to_slice {
        return Some(format!(
            "its work division ({:?} over {} cores) is not the chain's ({:?} over {} cores)",
            b.splits, b.cores_used, a.splits, a.cores_used
        ));
    }
    let op = &c.ops[i];
    for t in &op.inputs {
        if produced.contains(t.as_str())
            && !matches!(c.placements.get(t), Some(Placement::Scratchpad { .. }))
        {
            return Some(format!(
                "'{t}' goes through DRAM between them (a core may read another core's slice)"
            ));
        }
    }
    None
}

/// Why op `j` cannot extend the epilogue of matmul `m`, whose chain of values (the
/// matmul's result, then each member's) is `chain` (`None`: it can). A member computes on
/// the matmul's output blocks as they are completed, so it must be elementwise over exactly
/// the matmul's result, in its layout, and read its other inputs from DRAM.
fn epilogue_member_reason(
    c: &Compilation,
    m: usize,
    chain: &[&str],
    j: usize,
    placed: bool,
) -> Option<String> {
    let (matmul, op) = (&c.ops[m], &c.ops[j]);
    if !matches!(
        op.kind,
        DeviceOpKind::Unary(_) | DeviceOpKind::Binary(_) | DeviceOpKind::ToDtype
    ) {
        return Some(format!(
            "{} is not an elementwise arithmetic op or cast",
            op.kind.name()
        ));
    }
    if let (Some(x), Some(y)) = (block_of(&matmul.name), block_of(&op.name)) {
        if x != y {
            return Some(format!("it is in block `{y}` and the matmul in `{x}`"));
        }
    }
    if !op.inputs.iter().any(|t| chain.contains(&t.as_str())) {
        return Some(format!("it does not read '{}'", chain[chain.len() - 1]));
    }
    let (Some(c_out), [out]) = (matmul.outputs.first(), op.outputs.as_slice()) else {
        return Some("it does not have exactly one result".into());
    };
    let same = match (c.layout(c_out, &matmul.name), c.layout(out, &op.name)) {
        (Ok(a), Ok(b)) => {
            a.host_shape == b.host_shape
                && a.device_size == b.device_size
                && a.stride_map == b.stride_map
                && a.host_dim_of_device_dim == b.host_dim_of_device_dim
        }
        _ => false,
    };
    if !same {
        return Some(format!(
            "its result '{out}' is not laid out like the matmul's '{c_out}'"
        ));
    }
    let in_scratchpad =
        |t: &str| placed && matches!(c.placements.get(t), Some(Placement::Scratchpad { .. }));
    if in_scratchpad(out) {
        return Some(format!("its result '{out}' is planned in the scratchpad"));
    }
    for t in op.inputs.iter().filter(|t| !chain.contains(&t.as_str())) {
        if matmul.inputs.contains(t) {
            return Some(format!("it reads the matmul's input '{t}' again"));
        }
        if in_scratchpad(t) {
            return Some(format!("its input '{t}' is planned in the scratchpad"));
        }
    }
    None
}

/// The matmul epilogue chains of `c`: for each matmul, the longest run of ops right after
/// it that [`epilogue_member_reason`] accepts (placements aside: the scratchpad plan is
/// made after) and whose intermediate values (the matmul's result among them) nothing
/// after the run reads. Also, for a pointwise op right after a matmul that joins no chain,
/// the op and why.
fn epilogue_chains(
    c: &Compilation,
    last_reader: &BTreeMap<&str, usize>,
    outputs: &BTreeSet<&str>,
) -> (Vec<FusionGroup>, Vec<(String, String)>) {
    let (mut groups, mut notes) = (Vec::new(), Vec::new());
    for (m, matmul) in c.ops.iter().enumerate() {
        let Some(c_out) = matmul.outputs.first().filter(|_| matmul.kind.is_matmul()) else {
            continue;
        };
        let mut chain: Vec<&str> = vec![c_out.as_str()];
        let mut j = m + 1;
        let mut stopped = None;
        while j < c.ops.len() {
            match epilogue_member_reason(c, m, &chain, j, false) {
                None => {
                    chain.extend(c.ops[j].outputs.iter().map(|s| s.as_str()));
                    j += 1;
                }
                Some(why) => {
                    stopped = Some(why);
                    break;
                }
            }
        }
        // The longest prefix whose intermediates stay inside it.
        let mut len = j - m - 1;
        while len > 0 {
            let end = m + len;
            let inside = chain[..len]
                .iter()
                .all(|t| !outputs.contains(t) && last_reader.get(t).is_none_or(|&r| r <= end));
            if inside {
                break;
            }
            len -= 1;
        }
        if len == 0 {
            if let Some(next) = c.ops.get(m + 1).filter(|o| o.kind.is_pointwise()) {
                let why = match stopped.filter(|_| j == m + 1) {
                    Some(why) => why,
                    None => format!(
                        "'{c_out}' is read after it, so the matmul's result must be stored anyway"
                    ),
                };
                notes.push((
                    next.name.clone(),
                    format!("not in the epilogue of {}: {why}", matmul.name),
                ));
            }
            continue;
        }
        groups.push(FusionGroup {
            name: group_name(&c.ops[m..=m + len]),
            first: m,
            len: len + 1,
            internal: chain[..len].iter().map(|t| t.to_string()).collect(),
        });
    }
    (groups, notes)
}

/// The planned matmul epilogues (`planned`, from [`plan_epilogues`]) whose chains still
/// hold over the scratchpad plan and whose kernels build and fit the scratchpad budget
/// without a finer time cut than the matmul's own, each with its kernel; `report` notes
/// those that do not.
fn epilogues(
    c: &Compilation,
    held: &[u64],
    planned: &[FusionGroup],
    double_buffer: bool,
    report: &mut FusionReport,
) -> Result<Vec<(FusionGroup, ktir::Func)>, CompileError> {
    let mut recipes = crate::lower_ktir::Recipes::new();
    let mut groups = Vec::new();
    'group: for group in planned {
        let mut chain: Vec<&str> = c.ops[group.first]
            .outputs
            .iter()
            .map(|s| s.as_str())
            .collect();
        for j in group.ops().skip(1) {
            if let Some(why) = epilogue_member_reason(c, group.first, &chain, j, true) {
                report.left_alone.push((
                    c.ops[j].name.clone(),
                    format!("not in the epilogue of {}: {why}", c.ops[group.first].name),
                ));
                continue 'group;
            }
            chain.extend(c.ops[j].outputs.iter().map(|s| s.as_str()));
        }
        match crate::lower_ktir::epilogue_fits(c, held, group, double_buffer, &mut recipes)? {
            Ok(kernel) => groups.push((group.clone(), kernel)),
            Err(why) => report
                .left_alone
                .push((c.ops[group.first].name.clone(), why)),
        }
    }
    Ok(groups)
}

/// Readers and graph outputs, for deciding which values stay inside a chain.
fn readers(c: &Compilation) -> (BTreeMap<&str, usize>, BTreeSet<&str>) {
    let outputs: BTreeSet<&str> = c.graph.outputs.iter().map(|s| s.as_str()).collect();
    let mut last_reader: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, o) in c.ops.iter().enumerate() {
        for t in &o.inputs {
            last_reader.insert(t.as_str(), i);
        }
    }
    (last_reader, outputs)
}

/// The matmul epilogues worth fusing, decided before the scratchpad plan (which then keeps
/// their tensors in DRAM, see [`epilogue_tensors`]). Of the chains [`epilogue_chains`]
/// finds, one is kept when fusing it saves a DRAM round trip rather than moving one:
/// - its last value is a graph output or read only by ops that would store their input's
///   neighbours anyway (matmuls, movements, row ops) or by members of other kept
///   epilogues; a chain whose result an elementwise run would have carried on would only
///   trade the matmul's store for its own;
/// - in the plan made without epilogues (`allocator`'s), the matmul's result goes
///   through DRAM (else there is no trip to save); so does its last value, unless only
///   members of other kept epilogues read it; and so does every other input its members
///   read, unless it is a kept epilogue's result. A tensor that plan keeps in the
///   scratchpad would otherwise have to go to DRAM for the epilogue.
///
/// Kept chains are settled together, dropping any that fails until none does.
pub fn plan_epilogues(
    c: &Compilation,
    allocator: crate::Allocator,
) -> Result<EpiloguePlan, CompileError> {
    let (last_reader, outputs) = readers(c);
    let (chains, mut notes) = epilogue_chains(c, &last_reader, &outputs);
    if chains.is_empty() {
        return Ok(EpiloguePlan {
            groups: chains,
            notes,
        });
    }
    let baseline = crate::scratchpad::plan(c, allocator, &BTreeMap::new())?;
    let in_dram: BTreeSet<&str> = baseline.dram.iter().map(|(t, _, _)| t.as_str()).collect();
    let mut readers_of: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, op) in c.ops.iter().enumerate() {
        for t in &op.inputs {
            readers_of.entry(t.as_str()).or_default().push(i);
        }
    }
    let mut kept = vec![true; chains.len()];
    let mut why: Vec<String> = vec![String::new(); chains.len()];
    loop {
        let member_of_kept = |j: usize| {
            chains
                .iter()
                .zip(&kept)
                .any(|(g, &k)| k && j > g.first && j < g.first + g.len)
        };
        let result_of_kept = |t: &str| {
            chains
                .iter()
                .zip(&kept)
                .any(|(g, &k)| k && c.ops[g.first + g.len - 1].outputs.iter().any(|o| o == t))
        };
        let mut next = kept.clone();
        for (n, g) in chains.iter().enumerate() {
            if !kept[n] {
                continue;
            }
            let members = &c.ops[g.first + 1..g.first + g.len];
            let last = members.last().and_then(|m| m.outputs.first());
            let z = last.map_or("", |z| z.as_str());
            let carried_on = readers_of.get(z).and_then(|rs| {
                rs.iter().copied().find(|&j| {
                    matches!(
                        c.ops[j].kind.category(),
                        Category::Pointwise | Category::Reduction
                    ) && !member_of_kept(j)
                })
            });
            let terminal = outputs.contains(z) || carried_on.is_none();
            let chain: BTreeSet<&str> = std::iter::once(&c.ops[g.first])
                .chain(members)
                .flat_map(|o| o.outputs.iter().map(|s| s.as_str()))
                .collect();
            let held_input = members
                .iter()
                .flat_map(|m| m.inputs.iter())
                .filter(|t| !chain.contains(t.as_str()))
                .find(|t| !in_dram.contains(t.as_str()) && !result_of_kept(t));
            // Nothing is saved unless the matmul's result went through DRAM, and a result
            // the plan held in the scratchpad for its reader would now take the trip.
            let c_out = c.ops[g.first].outputs.first().map_or("", |t| t.as_str());
            let z_ok = in_dram.contains(z)
                || readers_of
                    .get(z)
                    .is_some_and(|rs| rs.iter().all(|&j| member_of_kept(j)));
            let reason = if !terminal {
                carried_on.map(|j| {
                    format!(
                        "fusing saves no DRAM round trip: '{z}' goes on to '{}', which would \
                         carry the elementwise run on",
                        c.ops[j].name
                    )
                })
            } else if !in_dram.contains(c_out) {
                Some(format!(
                    "fusing saves no DRAM round trip: the scratchpad plan holds '{c_out}' for it"
                ))
            } else if !z_ok {
                Some(format!(
                    "'{z}' would have to leave the scratchpad, where the plan holds it for its reader"
                ))
            } else {
                held_input.map(|t| {
                    format!("its input '{t}' would have to leave the scratchpad, where the plan holds it")
                })
            };
            if let Some(r) = reason {
                next[n] = false;
                why[n] = r;
            }
        }
        if next == kept {
            break;
        }
        kept = next;
    }
    let mut groups = Vec::new();
    for ((g, k), why) in chains.into_iter().zip(kept).zip(why) {
        if k {
            groups.push(g);
        } else {
            notes.push((
                c.ops[g.first + 1].name.clone(),
                format!("not in the epilogue of {}: {why}", c.ops[g.first].name),
            ));
        }
    }
    Ok(EpiloguePlan { groups, notes })
}

/// What [`plan_epilogues`] settles on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpiloguePlan {
    /// The matmul epilogues kept, in op order.
    pub groups: Vec<FusionGroup>,
    /// Each dropped chain's first member, and why it was dropped.
    pub notes: Vec<(String, String)>,
}

/// The tensors the matmul epilogues `groups` read or write (every tensor of their members,
/// the matmul's result included), each with its matmul: the scratchpad plan keeps them in
/// DRAM, since an epilogue runs on the matmul's cores and output blocks, not on the slices
/// its members' own work divisions give.
pub fn epilogue_tensors(c: &Compilation, groups: &[FusionGroup]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for g in groups {
        let matmul = &c.ops[g.first];
        for op in &c.ops[g.first + 1..g.first + g.len] {
            for t in op.inputs.iter().chain(&op.outputs) {
                out.entry(t.clone()).or_insert_with(|| matmul.name.clone());
            }
        }
    }
    out
}

/// Settles the matmul epilogues before the scratchpad plan: orders the ops so that each
/// matmul's possible epilogue follows it ([`epilogue_order`]), keeps the chains worth
/// fusing ([`plan_epilogues`]), then puts back the original order except for the moves
/// those chains need (a move nothing fuses over would only split an elementwise run).
/// Divisions move with their ops.
pub fn settle_epilogues(
    c: &mut Compilation,
    allocator: crate::Allocator,
) -> Result<Vec<FusionGroup>, CompileError> {
    let (ops, divisions) = (c.ops.clone(), c.divisions.clone());
    epilogue_order(c, None);
    let EpiloguePlan {
        groups: tentative,
        notes: tentative_notes,
    } = plan_epilogues(c, allocator)?;
    let movable: BTreeSet<String> = tentative
        .iter()
        .flat_map(|g| c.ops[g.ops()].iter().skip(1).map(|o| o.name.clone()))
        .collect();
    c.ops = ops;
    c.divisions = divisions;
    if !movable.is_empty() {
        epilogue_order(c, Some(&movable));
    }
    let EpiloguePlan { groups, mut notes } = plan_epilogues(c, allocator)?;
    // A chain dropped in the trial order may have no chain left to drop in the final one
    // (its op stays where it was): its reason still stands.
    // Notes name the op and its matmul ("not in the epilogue of M: ..."): one per pair.
    let pair =
        |(op, why): &(String, String)| (op.clone(), why.split(':').next().map(str::to_string));
    for note in tentative_notes {
        if !notes.iter().any(|n| pair(n) == pair(&note)) {
            notes.push(note);
        }
    }
    c.epilogue_notes = notes;
    Ok(groups)
}

/// Ops looked at past a matmul for its epilogue when ordering ops.
const EPILOGUE_WINDOW: usize = 8;

/// Orders the device ops so that pointwise ops that could be a matmul's epilogue come
/// right after it: an op within [`EPILOGUE_WINDOW`] ops after a matmul that reads its
/// result (or an op already moved), has that result's shape, stays in its block, and reads
/// nothing produced after the matmul's epilogue so far, moves up to join it. A SwiGLU's
/// `silu(gate)` so moves ahead of the `up` projection, and `silu * up` can then follow
/// `up`. Moving an op earlier keeps the order a valid one: everything it reads is produced
/// before its new place. The search is bounded, so ordering stays linear in the ops.
fn epilogue_order(c: &mut Compilation, movable: Option<&BTreeSet<String>>) {
    let mut produced_at: BTreeMap<String, usize> = BTreeMap::new();
    let rebuild = |ops: &[DeviceOp], at: &mut BTreeMap<String, usize>, from: usize| {
        for (i, op) in ops.iter().enumerate().skip(from) {
            for o in &op.outputs {
                at.insert(o.clone(), i);
            }
        }
    };
    rebuild(&c.ops, &mut produced_at, 0);
    let mut m = 0;
    while m < c.ops.len() {
        let matmul = &c.ops[m];
        let Some(c_out) = matmul.outputs.first().filter(|_| matmul.kind.is_matmul()) else {
            m += 1;
            continue;
        };
        let shape = c.types.get(c_out).map(|t| t.shape.clone());
        let (block, a_b) = (
            block_of(&matmul.name).map(str::to_string),
            matmul.inputs.clone(),
        );
        let mut chain: Vec<String> = vec![c_out.clone()];
        let mut pos = m + 1;
        loop {
            let fits = |op: &DeviceOp| {
                movable.is_none_or(|m| m.contains(&op.name))
                    && matches!(
                        op.kind,
                        DeviceOpKind::Unary(_) | DeviceOpKind::Binary(_) | DeviceOpKind::ToDtype
                    )
                    && (block.is_none()
                        || block_of(&op.name).is_none_or(|b| Some(b) == block.as_deref()))
                    && op.outputs.len() == 1
                    && c.types.get(&op.outputs[0]).map(|t| &t.shape) == shape.as_ref()
                    && op.inputs.iter().any(|t| chain.contains(t))
                    && op
                        .inputs
                        .iter()
                        .all(|t| !a_b.contains(t) || chain.contains(t))
                    && op
                        .inputs
                        .iter()
                        .all(|t| produced_at.get(t).is_none_or(|&p| p < pos))
            };
            let end = (pos + EPILOGUE_WINDOW).min(c.ops.len());
            let Some(j) = (pos..end).find(|&j| fits(&c.ops[j])) else {
                break;
            };
            if j > pos {
                c.ops[pos..=j].rotate_right(1);
                if let Some(d) = c.divisions.get_mut(pos..=j) {
                    d.rotate_right(1);
                }
                rebuild(&c.ops[..=j], &mut produced_at, pos);
            }
            chain.extend(c.ops[pos].outputs.iter().cloned());
            pos += 1;
        }
        m = pos.max(m + 1);
    }
}

/// Why op `i` cannot be a member of any fused kernel (`None`: it can).
fn candidate_reason(c: &Compilation, i: usize, tiled: &BTreeMap<usize, usize>) -> Option<String> {
    let op: &DeviceOp = &c.ops[i];
    match op.kind.category() {
        Category::Pointwise | Category::Reduction => {}
        Category::Movement if keeps_core_slices(c, op, &c.divisions[i].splits) => {}
        Category::Movement => {
            return Some(format!(
                "{} is a movement op: it changes the iteration space",
                op.kind.name()
            ))
        }
        Category::Matmul => {
            return Some("a matmul: pointwise ops join it only as its epilogue".into())
        }
        Category::RowOp => return Some(format!("{} is a row op", op.kind.name())),
    }
    let div = &c.divisions[i];
    if op
        .iteration
        .iter()
        .zip(&div.splits)
        .any(|(d, &s)| d.reduction && s > 1)
    {
        return Some("its reduction is split over cores".into());
    }
    if let Some(steps) = tiled.get(&i) {
        return Some(format!(
            "its slice does not fit the scratchpad at once (cut into {steps} time steps)"
        ));
    }
    None
}

/// The name of a group: the common graph node of its members (`node/step` names), else
/// `first+last`.
fn group_name(ops: &[DeviceOp]) -> String {
    let node = |n: &str| n.split('/').next().unwrap_or(n).to_string();
    let first = node(&ops[0].name);
    if ops.iter().all(|o| node(&o.name) == first) {
        first
    } else {
        format!("{}+{}", ops[0].name, ops[ops.len() - 1].name)
    }
}

/// Runs the pass: fills `c.fusion` (empty when `enabled` is false).
pub fn run(
    c: &mut Compilation,
    enabled: bool,
    double_buffer: bool,
) -> Result<FusionReport, CompileError> {
    let planned = std::mem::take(&mut c.fusion);
    let mut report = FusionReport {
        enabled,
        left_alone: std::mem::take(&mut c.epilogue_notes),
        ..FusionReport::default()
    };
    if !enabled {
        return Ok(report);
    }
    let n = c.ops.len();
    if c.divisions.len() != n {
        return Err(CompileError::new(
            "fusion needs a work division per op",
            None,
        ));
    }
    // What the scratchpad plan holds while each op runs: the same for every candidate.
    let held = crate::lower_ktir::planned_live_bytes(c);
    let tiled = crate::lower_ktir::time_tiled(c, &held, double_buffer, |i| {
        match c.ops[i].kind.category() {
            Category::Pointwise | Category::Reduction => true,
            Category::Movement => keeps_core_slices(c, &c.ops[i], &c.divisions[i].splits),
            Category::Matmul | Category::RowOp => false,
        }
    })?;
    let (last_reader, outputs) = readers(c);
    let epilogues = epilogues(c, &held, &planned, double_buffer, &mut report)?;
    let mut in_epilogue = vec![false; n];
    for (g, _) in &epilogues {
        in_epilogue[g.ops()].iter_mut().for_each(|x| *x = true);
    }
    let ok: Vec<Option<String>> = (0..n).map(|i| candidate_reason(c, i, &tiled)).collect();
    // Runs of candidates, cut where an op cannot join.
    let mut runs: Vec<Vec<usize>> = Vec::new();
    let mut produced: BTreeSet<&str> = BTreeSet::new();
    for i in 0..n {
        if in_epilogue[i] {
            produced.clear();
            continue;
        }
        match &ok[i] {
            Some(why) => {
                let prev_candidate = i > 0 && ok[i - 1].is_none();
                let next_candidate = i + 1 < n && ok[i + 1].is_none();
                let elementwise = matches!(
                    c.ops[i].kind.category(),
                    Category::Pointwise | Category::Reduction
                );
                if elementwise || prev_candidate || next_candidate {
                    report.left_alone.push((c.ops[i].name.clone(), why.clone()));
                }
                produced.clear();
            }
            None => {
                let joined = match runs.last() {
                    Some(run) if run.last() == Some(&(i.wrapping_sub(1))) && i > 0 => {
                        match join_reason(c, &produced, i - 1, i) {
                            None => true,
                            Some(why) => {
                                report.left_alone.push((c.ops[i].name.clone(), why));
                                false
                            }
                        }
                    }
                    _ => false,
                };
                if joined {
                    if let Some(run) = runs.last_mut() {
                        run.push(i);
                    }
                } else {
                    produced.clear();
                    runs.push(vec![i]);
                }
                produced.extend(c.ops[i].outputs.iter().map(|s| s.as_str()));
            }
        }
    }
    let mut built: BTreeMap<usize, ktir::Func> = BTreeMap::new();
    let mut groups = Vec::new();
    for (g, kernel) in epilogues {
        built.insert(g.first, kernel);
        groups.push(g);
    }
    for run in runs.into_iter().filter(|r| r.len() > 1) {
        let (first, len) = (run[0], run.len());
        let end = first + len;
        let internal: Vec<String> = c.ops[first..end]
            .iter()
            .flat_map(|o| o.outputs.iter())
            .filter(|t| !outputs.contains(t.as_str()))
            .filter(|t| last_reader.get(t.as_str()).is_some_and(|&r| r < end))
            .cloned()
            .collect();
        let group = FusionGroup {
            name: group_name(&c.ops[first..end]),
            first,
            len,
            internal,
        };
        match crate::lower_ktir::fused_fits(c, &held, &group, double_buffer)? {
            Ok(kernel) => {
                built.insert(first, kernel);
                groups.push(group);
            }
            Err(why) => report.left_alone.push((c.ops[first].name.clone(), why)),
        }
    }
    groups.sort_by_key(|g| g.first);
    c.fusion = groups.clone();
    c.fused_kernels = built;
    report.groups = groups;
    Ok(report)
}

/// The snapshot text of the pass: one line per fused kernel, then what was left alone.
pub fn render(c: &Compilation, report: &FusionReport) -> String {
    let mut s = String::new();
    if !report.enabled {
        s.push_str("fusion off: every device op is a kernel of its own\n");
        return s;
    }
    let fused: usize = report.groups.iter().map(|g| g.len).sum();
    s.push_str(&format!(
        "{} fused kernels of {fused} device ops; {} kernels in all (from {} device ops)\n",
        report.groups.len(),
        c.ops.len() - fused + report.groups.len(),
        c.ops.len()
    ));
    for g in &report.groups {
        let names: Vec<String> = c.ops[g.ops()]
            .iter()
            .map(|o| format!("{} ({})", o.name, o.kind.name()))
            .collect();
        s.push_str(&format!(
            "fused {} [ops {}..{}]: {}\n",
            g.name,
            g.first,
            g.first + g.len - 1,
            names.join(", ")
        ));
        if c.ops[g.first].kind.is_matmul() {
            s.push_str(
                "  matmul epilogue: each output block goes through the chain before its store\n",
            );
        }
        if g.internal.is_empty() {
            s.push_str("  every member's result is read outside the chain, so each is stored\n");
        } else {
            s.push_str(&format!(
                "  never stored (only the chain reads them): {}\n",
                g.internal.join(", ")
            ));
        }
    }
    for (op, why) in &report.left_alone {
        s.push_str(&format!("not fused: {op}: {why}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use crate::passes::tests::{example, graph_of};
    use crate::{compile, Options, Target};

    fn fused(g: &graph::Graph, fuse: bool) -> crate::Compilation {
        let o = Options {
            fuse,
            ..Options::default()
        };
        compile(g, &Target::spyre32(), &o).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_fused_kernel_stays_within_one_layer_or_block() {
        let c = fused(&example("tiny_two_layer.json"), true);
        assert!(!c.fusion.is_empty());
        for g in &c.fusion {
            let blocks: std::collections::BTreeSet<_> = c.ops[g.ops()]
                .iter()
                .map(|o| super::block_of(&o.name))
                .collect();
            assert_eq!(blocks.len(), 1, "{} spans {blocks:?}", g.name);
        }
        // The residual add that ends a layer would fuse with the next layer's norm but for
        // the boundary; the snapshot says why it did not.
        let snap = &c.snapshot("fusion").expect("snapshot").text;
        assert!(
            snap.contains("not fused: final_norm/square: it starts block `final_norm`"),
            "{snap}"
        );
    }

    #[test]
    fn the_rms_norm_is_one_kernel_loading_x_once_and_storing_only_y() {
        let c = fused(&example("rmsnorm.json"), true);
        assert_eq!(c.fusion.len(), 1);
        assert_eq!((c.fusion[0].first, c.fusion[0].len), (0, 7));
        let text = c.ktir.as_deref().expect("ktir");
        if let Err(d) = ktir::check(text) {
            panic!("{}\n{text}", ktir::render_diagnostics("ktir", &d));
        }
        assert_eq!(text.matches("func.func").count(), 1, "{text}");
        assert!(text.contains(
            "func.func @k0_square_scale(%x: index, %eps: index, %weight: index, %y: index)"
        ));
        // x is read by the square and the normalize, but loaded once.
        assert_eq!(text.matches("ktdp.load %x_tile").count(), 1, "{text}");
        // Only y is stored; the intermediates never leave the chain.
        assert_eq!(text.matches("ktdp.store").count(), 1, "{text}");
        assert!(text.contains("ktdp.store %v3, %y_tile"), "{text}");
        assert!(!text.contains("memory_space<ct_local>"), "{text}");
        let snap = &c.snapshot("fusion").expect("snapshot").text;
        assert!(snap.contains("fused square+scale [ops 0..6]"), "{snap}");
        assert!(snap.contains("never stored (only the chain reads them): square, mean_square, add_eps, sqrt, rsqrt, normalize"), "{snap}");
        // Off, every op is a kernel of its own.
        let off = fused(&example("rmsnorm.json"), false);
        assert!(off.fusion.is_empty());
        assert_eq!(
            off.ktir
                .as_deref()
                .unwrap_or("")
                .matches("func.func")
                .count(),
            7
        );
        assert!(off
            .snapshot("fusion")
            .expect("snapshot")
            .text
            .starts_with("fusion off"));
    }

    #[test]
    fn a_shape_change_ends_a_chain_and_says_why() {
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [64, 128]}"#,
            "",
            r#"{"name": "double", "op": "Add", "inputs": ["x", "x"], "outputs": ["a"]},
               {"name": "flip", "op": "Reshape", "inputs": ["a"], "outputs": ["b"], "attrs": {"shape": [128, 64]}},
               {"name": "relu", "op": "Relu", "inputs": ["b"], "outputs": ["c"]},
               {"name": "neg", "op": "Neg", "inputs": ["c"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let c = fused(&g, true);
        let snap = &c.snapshot("fusion").expect("snapshot").text;
        assert!(snap.contains("fused relu+neg [ops 2..3]"), "{snap}");
        assert!(
            snap.contains(
                "not fused: flip: reshape is a movement op: it changes the iteration space"
            ),
            "{snap}"
        );
        assert_eq!(c.fusion.len(), 1);
    }

    #[test]
    fn a_slice_too_large_for_the_scratchpad_is_left_alone_and_says_why() {
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [32, 1048576]}"#,
            "",
            r#"{"name": "relu", "op": "Relu", "inputs": ["x"], "outputs": ["r"]},
               {"name": "neg", "op": "Neg", "inputs": ["r"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let o = Options {
            stop_after: Some("fusion".into()),
            ..Options::default()
        };
        let c = compile(&g, &Target::spyre32(), &o).unwrap_or_else(|e| panic!("{e}"));
        assert!(c.fusion.is_empty());
        let snap = &c.snapshot("fusion").expect("snapshot").text;
        assert!(
            snap.contains(
                "not fused: relu: its slice does not fit the scratchpad at once (cut into"
            ),
            "{snap}"
        );
    }

    #[test]
    fn split_mismatch_between_neighbours_is_named() {
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [2, 196608]}"#,
            "",
            r#"{"name": "square", "op": "Mul", "inputs": ["x", "x"], "outputs": ["sq"]},
               {"name": "mean", "op": "ReduceMean", "inputs": ["sq"], "outputs": ["y"], "attrs": {"axes": [-1], "keepdims": 1}}"#,
            r#""y""#,
        );
        let c = fused(&g, true);
        let snap = &c.snapshot("fusion").expect("snapshot").text;
        assert!(
            snap.contains("not fused: mean: its work division ([2, 1] over 2 cores) is not the chain's ([1, 32] over 32 cores)"),
            "{snap}"
        );
    }

    fn pipeline_case(name: &str) -> graph::Graph {
        let path = format!("{}/../../tests/pipeline/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("pipeline case");
        graph::load_json(&text).expect("pipeline case loads")
    }

    fn checked_ktir(c: &crate::Compilation) -> &str {
        let text = c.ktir.as_deref().expect("ktir");
        if let Err(d) = ktir::check(text) {
            panic!("{}\n{text}", ktir::render_diagnostics("ktir", &d));
        }
        text
    }

    #[test]
    fn a_bias_add_and_activation_run_in_the_matmul_kernel_and_its_product_is_never_stored() {
        let c = fused(&pipeline_case("matmul_epilogue_bias_gelu.json"), true);
        let snap = &c.snapshot("fusion").expect("snapshot").text;
        assert!(
            snap.contains(
                "fused fc1+act [ops 0..2]: fc1 (batchmatmul), fc1_bias (add), act (gelu)"
            ),
            "{snap}"
        );
        assert!(snap.contains("matmul epilogue"), "{snap}");
        assert!(
            snap.contains("never stored (only the chain reads them): h, hb"),
            "{snap}"
        );
        let text = checked_ktir(&c);
        // Two kernels: fc1 with its epilogue, fc2.
        assert_eq!(text.matches("func.func").count(), 2, "{text}");
        assert!(
            text.contains("fc1 (batchmatmul) with epilogue fc1_bias (add), act (gelu)"),
            "{text}"
        );
        // The product h and the biased hb are never stored; the activation a is, once.
        let stores: Vec<&str> = text.lines().filter(|l| l.contains("ktdp.store")).collect();
        assert_eq!(stores.len(), 2, "{text}");
        assert!(stores[0].contains(", %a_tile :"), "{text}");
        assert!(stores[1].contains(", %y_tile :"), "{text}");
        // Only fc2 loads the activation.
        let fc2 = text.split("func.func").nth(2).unwrap_or_default();
        assert!(fc2.contains("ktdp.load %a_tile"), "{text}");
        assert_eq!(
            text.matches("ktdp.load %a_tile").count(),
            fc2.matches("ktdp.load %a_tile").count()
        );
        assert!(
            !text.contains("%h_tile") && !text.contains("%hb_tile"),
            "{text}"
        );
        // The scratchpad plan keeps the epilogue's tensors in DRAM and says why.
        let plan = &c.snapshot("scratchpad").expect("snapshot").text;
        assert!(
            plan.contains("the epilogue fused into 'fc1' reads or writes it"),
            "{plan}"
        );
        // Off, the matmul and the two pointwise ops are kernels of their own.
        let off = fused(&pipeline_case("matmul_epilogue_bias_gelu.json"), false);
        assert!(off.fusion.is_empty());
        assert_eq!(checked_ktir(&off).matches("func.func").count(), 4);
    }

    #[test]
    fn a_swiglu_moves_its_silu_ahead_of_the_up_projection_and_fuses_three_epilogues() {
        let c = fused(&pipeline_case("matmul_epilogue_swiglu.json"), true);
        let names: Vec<&str> = c.ops.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            ["gate", "silu", "up", "gate_mul_up", "down", "residual"]
        );
        let groups: Vec<(usize, usize)> = c.fusion.iter().map(|g| (g.first, g.len)).collect();
        assert_eq!(groups, [(0, 2), (2, 2), (4, 2)]);
        assert_eq!(checked_ktir(&c).matches("func.func").count(), 3);
        // Without fusion the graph's own order stands.
        let off = fused(&pipeline_case("matmul_epilogue_swiglu.json"), false);
        let names: Vec<&str> = off.ops.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            ["gate", "up", "silu", "gate_mul_up", "down", "residual"]
        );
    }

    #[test]
    fn an_epilogue_that_an_elementwise_run_would_carry_on_is_not_taken() {
        // The scale's result goes on to a row reduction, which would have read it from the
        // scale's own fused run: fusing the scale into the matmul saves no round trip.
        let g = graph_of(
            r#"{"name": "q", "dtype": "f16", "shape": [64, 128]}, {"name": "k", "dtype": "f16", "shape": [128, 256]}"#,
            "",
            r#"{"name": "scores", "op": "MatMul", "inputs": ["q", "k"], "outputs": ["s"]},
               {"name": "scale", "op": "Mul", "inputs": ["s", "s"], "outputs": ["t"]},
               {"name": "max", "op": "ReduceMax", "inputs": ["t"], "outputs": ["y"], "attrs": {"axes": [-1], "keepdims": 1}}"#,
            r#""y""#,
        );
        let c = fused(&g, true);
        assert!(
            c.fusion.iter().all(|g| !c.ops[g.first].kind.is_matmul()),
            "{:?}",
            c.fusion
        );
        let snap = &c.snapshot("fusion").expect("snapshot").text;
        assert!(
            snap.contains("not fused: scale: not in the epilogue of scores: fusing saves no DRAM round trip: 't' goes on to"),
            "{snap}"
        );
    }
}
