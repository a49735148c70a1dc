//! Time tiling: a kernel whose tiles do not fit a core's scratchpad streams through its
//! slice in blocks, with `scf.for` loops whose access tiles move with the loop index.
//!
//! The budget of op `i` is the plannable scratchpad minus the bytes the scratchpad plan
//! holds there while op `i` runs; the need is the working set
//! ([`ktir::working_set::peak_live_bytes`]) of the built kernel. A kernel that fits is emitted as it is. Otherwise the loops are chosen among
//! whole-stick (or whole-row) divisors of the per-core extents, fewest time steps first:
//! - matmul: an inner loop over K blocks accumulating in an f32 `iter_args` sum (preferred:
//!   it reads each operand once), and outer loops over N, M and batch blocks, each storing
//!   its block of C;
//! - elementwise ops (and conversions, comparisons, select): loops over the result's dims;
//! - reductions: loops over the kept dims, so whole rows stay together.
//!
//! A matmul that fits whole is still cut (with double buffering) into a few steps that read
//! no more DRAM bytes, when its share moves enough bytes per step ([`pipelined`]): run whole,
//! its compute, reduction and store would wait for its one load.
//!
//! When no choice fits the budget, the smallest one that fits the machine's plannable
//! capacity is used (the plan's buffers are placed, not charged as values, so the kernel
//! still runs); when none does, lowering stops with an error naming the op, the bytes it
//! needs and the budget. Movement kernels (whose tiles could not fit even the plannable
//! capacity whole) loop over blocks of the dims a core split could cut; a transpose whose
//! stick dims differ moves 2-D blocks of whole sticks (with remainder blocks), the fewest
//! that fit with double buffering; a gather loads its rows in blocks, the fewest that fit. Other kernels (topk) are not cut and are emitted as
//! they are: one whose tiles cannot fit the plannable capacity is a compile error naming
//! the kernel.

use super::*;
use crate::ops::{Category, DeviceOpKind, Movement};
use ktir::working_set::peak_live_bytes;

/// One way to cut a kernel in time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    /// (iteration dim, steps), outermost first.
    loops: Vec<(usize, usize)>,
    /// Steps over K blocks (matmul only).
    k_steps: usize,
    /// The matmul input (0: A, 1: B) loaded once outside the innermost loop, which does
    /// not cut it (no K loop then): it stays resident while the other input streams.
    hoist: Option<usize>,
}

impl Plan {
    fn steps(&self) -> usize {
        self.loops.iter().map(|l| l.1).product::<usize>() * self.k_steps
    }
}

/// Most candidate plans tried before settling for the most finely cut one.
const MAX_TRIES: usize = 200;

/// Scratchpad bytes the plan holds in every core while each op runs, in op order: buffers
/// produced at or before it and read at or after it. A buffer that took over its input's
/// slot in place (the same offset and size) is counted once where the two meet: the op
/// that reads one writes the other into the same bytes. One pass over the ops and the
/// placements (a slot's bytes are added where its range starts and taken off after it
/// ends), so lowering stays linear in the graph.
pub(crate) fn planned_live_bytes(c: &Compilation) -> Vec<u64> {
    let n = c.ops.len();
    let mut first_producer: BTreeMap<&str, usize> = BTreeMap::new();
    let mut last_reader: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, o) in c.ops.iter().enumerate() {
        for t in &o.outputs {
            first_producer.entry(t.as_str()).or_insert(i);
        }
        for t in &o.inputs {
            last_reader.insert(t.as_str(), i);
        }
    }
    // (offset, bytes, first op, last op) of every scratchpad buffer, merged per slot where
    // the live ranges meet.
    let mut ranges: Vec<(u64, u64, usize, usize)> = Vec::new();
    for (tensor, p) in &c.placements {
        let Placement::Scratchpad {
            offset,
            bytes_per_core,
        } = p
        else {
            continue;
        };
        let t = tensor.as_str();
        if let (Some(&s), Some(&e)) = (first_producer.get(t), last_reader.get(t)) {
            if s <= e {
                ranges.push((*offset, *bytes_per_core, s, e));
            }
        }
    }
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64, usize, usize)> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if (last.0, last.1) == (r.0, r.1) && r.2 <= last.3 => {
                last.3 = last.3.max(r.3)
            }
            _ => merged.push(r),
        }
    }
    let mut delta = vec![0i128; n + 1];
    for (_, bytes, s, e) in merged {
        delta[s] += i128::from(bytes);
        delta[e + 1] -= i128::from(bytes);
    }
    let mut held = 0i128;
    delta[..n]
        .iter()
        .map(|d| {
            held += d;
            u64::try_from(held).unwrap_or(0)
        })
        .collect()
}

/// One kernel's scratchpad use per core against its budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelUse {
    /// The function's symbol name.
    pub func: String,
    /// Peak bytes of live tensor values, counted as the simulator charges them.
    pub need: u64,
    /// Plannable scratchpad minus what the scratchpad plan holds while the kernel runs.
    pub budget: u64,
    /// Time steps each core runs (1: not cut).
    pub steps: usize,
}

/// The scratchpad use of every kernel of a lowered compilation, in launch order.
pub fn scratchpad_use(c: &Compilation) -> Result<Vec<KernelUse>, CompileError> {
    let module = c
        .ktir_module
        .as_ref()
        .ok_or_else(|| CompileError::new("the compilation has no KTIR yet", None))?;
    let cap = c.target.scratchpad_capacity_bytes as u64;
    let held = planned_live_bytes(c);
    let mut out = Vec::new();
    for k in kernels(c).iter() {
        let func = module
            .func(&k.func)
            .ok_or_else(|| CompileError::at(&k.op, format!("no function @{}", k.func)))?;
        let need = peak_live_bytes(func);
        let steps = time_steps(&func.body);
        out.push(KernelUse {
            func: k.func.clone(),
            need,
            budget: cap.saturating_sub(
                k.ops
                    .clone()
                    .map(|i| held.get(i).copied().unwrap_or(0))
                    .max()
                    .unwrap_or(0),
            ),
            steps,
        });
    }
    Ok(out)
}

/// How many time steps a kernel body runs: the product of the trip counts of its nested
/// `scf.for` loops (bounds are index constants of the body), the most of any nest.
pub(super) fn time_steps(body: &ktir::Block) -> usize {
    fn consts(b: &ktir::Block, out: &mut BTreeMap<String, i64>) {
        for op in &b.ops {
            if let (
                ktir::OpKind::Constant {
                    value: Literal::Int(v),
                },
                [r],
            ) = (&op.kind, op.results.as_slice())
            {
                out.insert(r.clone(), *v);
            }
            for r in op.kind.regions() {
                consts(r, out);
            }
        }
    }
    fn steps(b: &ktir::Block, k: &BTreeMap<String, i64>) -> usize {
        let mut most = 1;
        for op in &b.ops {
            let inner = op.kind.regions().into_iter().map(|r| steps(r, k)).max();
            let mut s = inner.unwrap_or(1);
            if let ktir::OpKind::For {
                lower, upper, step, ..
            } = &op.kind
            {
                let (lo, hi, st) = (
                    k.get(&lower.name).copied().unwrap_or(0),
                    k.get(&upper.name).copied().unwrap_or(1),
                    k.get(&step.name).copied().unwrap_or(1).max(1),
                );
                s *= ((hi - lo).max(0) / st).max(1) as usize;
            }
            most = most.max(s);
        }
        most
    }
    let mut k = BTreeMap::new();
    consts(body, &mut k);
    steps(body, &k)
}

/// The kernel of op `index`, cut in time when its tiles do not fit beside the `held` bytes
/// the scratchpad plan keeps while it runs ([`planned_live_bytes`]). With `double`, the
/// time loops of the chosen plan are double-buffered when the second buffers fit the budget
/// too (among the plans that move as few DRAM bytes); otherwise the kernel stays
/// single-buffered and its header says why.
pub(super) fn emit_kernel(
    c: &Compilation,
    op: &DeviceOp,
    index: usize,
    kernel: &Kernel,
    held: u64,
    double: bool,
) -> Result<ktir::Func, CompileError> {
    choose_and_emit(c, op, index, kernel, held, double).map(|(f, _)| f)
}

/// How [`emit_kernel`] settled a kernel: what a kernel with the same key
/// ([`crate::artifact_cache::plan_key`], which covers everything the choice reads)
/// settles on too, so repeated layers search their plans once.
#[derive(Debug, Clone)]
pub(crate) enum Recipe {
    /// The kernel uncut.
    Whole,
    /// Candidate plan `plan` (in [`candidate_plans`] order), double-buffered when
    /// `double`, its header noting `note`.
    Plan {
        plan: usize,
        double: bool,
        note: Option<String>,
    },
}

/// The choices made so far in one lowering, by kernel key.
pub(crate) type Recipes = std::collections::HashMap<String, Recipe>;

/// [`emit_kernel`], remembering its choice in `recipes` under `key` and taking a choice
/// found there instead of searching again. Kernels cut as movement blocks (gathers,
/// blocked transposes) search every time.
#[allow(clippy::too_many_arguments)]
pub(super) fn emit_kernel_with(
    c: &Compilation,
    op: &DeviceOp,
    index: usize,
    kernel: &Kernel,
    held: u64,
    double: bool,
    key: &str,
    recipes: &mut Recipes,
) -> Result<ktir::Func, CompileError> {
    if let Some(recipe) = recipes.get(key) {
        return follow(c, op, index, kernel, recipe);
    }
    let (f, recipe) = choose_and_emit(c, op, index, kernel, held, double)?;
    if let Some(recipe) = recipe {
        recipes.insert(key.to_string(), recipe);
    }
    Ok(f)
}

/// The kernel `recipe` describes, built without searching.
fn follow(
    c: &Compilation,
    op: &DeviceOp,
    index: usize,
    kernel: &Kernel,
    recipe: &Recipe,
) -> Result<ktir::Func, CompileError> {
    let em = KernelEmitter::new(c, op, index, kernel)?;
    match recipe {
        Recipe::Whole => em.emit(),
        Recipe::Plan {
            plan,
            double,
            note: text,
        } => {
            let plans = candidate_plans(&em);
            let chosen = plans
                .get(*plan)
                .ok_or_else(|| CompileError::at(&op.name, "a remembered time plan is missing"))?;
            let mut em = KernelEmitter::new(c, op, index, kernel)?;
            em.loops = chosen.loops.clone();
            em.k_steps = chosen.k_steps;
            em.hoist = chosen.hoist;
            let mut f = em.emit()?;
            if *double {
                double_buffer::double_buffer(&mut f);
            }
            Ok(match text {
                Some(t) => note(f, t),
                None => f,
            })
        }
    }
}

/// [`emit_kernel`] and, where the kernel came from the whole kernel or a candidate plan,
/// the recipe that rebuilds it.
fn choose_and_emit(
    c: &Compilation,
    op: &DeviceOp,
    index: usize,
    kernel: &Kernel,
    held: u64,
    double: bool,
) -> Result<(ktir::Func, Option<Recipe>), CompileError> {
    let fail = |m: String| CompileError::at(&op.name, m);
    let need = |f: &ktir::Func| -> Result<u64, CompileError> { Ok(peak_live_bytes(f)) };
    let whole = KernelEmitter::new(c, op, index, kernel)?.emit()?;
    let cap = c.target.scratchpad_capacity_bytes as u64;
    let budget = cap.saturating_sub(held);
    let whole_need = need(&whole)?;
    // Kinds cut only since full-size models: cut only when they could not run whole (over
    // the plannable capacity), so every kernel that ran before runs as it did.
    if whole_need <= budget || (!is_cut_kind(op) && whole_need <= cap) {
        // A matmul that fits whole may still gain from a pipelined cut.
        if double && whole_need <= budget && op.kind.is_matmul() {
            if let Some((f, recipe)) = pipelined(c, op, index, kernel, budget)? {
                return Ok((f, Some(recipe)));
            }
        }
        return Ok((whole, Some(Recipe::Whole)));
    }
    if op.kind == DeviceOpKind::Movement(Movement::Gather) {
        return gather_in_blocks(c, op, index, kernel, whole_need, budget).map(|f| (f, None));
    }
    if let Some(crossing) = crate::movement_split::stick_crossing(c, op) {
        let k = BlockedKernel {
            c,
            op,
            index,
            kernel,
        };
        return k
            .transpose_in_blocks(crossing, whole_need, budget, double)
            .map(|f| (f, None));
    }
    let probe = KernelEmitter::new(c, op, index, kernel)?;
    let plans = candidate_plans(&probe);
    let emit = |plan: &Plan| -> Result<ktir::Func, CompileError> {
        let mut em = KernelEmitter::new(c, op, index, kernel)?;
        em.loops = plan.loops.clone();
        em.k_steps = plan.k_steps;
        em.hoist = plan.hoist;
        em.emit()
    };
    let mut best: Option<(u64, ktir::Func)> = None;
    let last = plans.len().saturating_sub(1);
    let planned = |plan: usize, double: bool, text: &str| Recipe::Plan {
        plan,
        double,
        note: Some(text.to_string()),
    };
    // The most finely cut plan first: when it does not fit, nothing does.
    if let Some(finest) = plans.last() {
        let text = emit(finest)?;
        let n = need(&text)?;
        best = Some((n, text));
        if n <= budget {
            for (i, plan) in plans.iter().enumerate().take(MAX_TRIES) {
                let text = emit(plan)?;
                let n = need(&text)?;
                if n <= budget {
                    return if double && is_cut_kind(op) {
                        let (f, recipe) = buffered(&probe, i, &plans[i..], text, budget, &emit)?;
                        Ok((f, Some(recipe)))
                    } else {
                        let why = "single buffering (double buffering is off)";
                        Ok((note(text, why), Some(planned(i, false, why))))
                    };
                }
            }
            let why = "single buffering (the most finely cut plan only just fits)";
            return Ok(match best {
                Some((_, text)) => (note(text, why), Some(planned(last, false, why))),
                None => (note(whole, why), None),
            });
        }
    }
    let (least, text, recipe) = match best {
        Some((n, t)) if n < whole_need => (
            n,
            t,
            Recipe::Plan {
                plan: last,
                double: false,
                note: None,
            },
        ),
        _ => (whole_need, whole, Recipe::Whole),
    };
    // Over the budget but within the plannable capacity it still runs: the plan's buffers
    // are placed, not charged as values.
    if least <= cap {
        return Ok((text, Some(recipe)));
    }
    let how = if !is_cut_kind(op) {
        "a kernel of this kind is not cut in time"
    } else if plans.is_empty() {
        "its slice has no dim to cut into time steps"
    } else {
        "even cut into the smallest time steps"
    };
    Err(fail(format!(
        "kernel @{}: a core's tiles need {least} bytes of scratchpad ({how}), but the budget is {budget} bytes ({cap} plannable, {held} held by the scratchpad plan)",
        kernel.func
    )))
}

/// Time steps [`pipelined`] aims for: enough that the first block's load and the last
/// block's compute, reduction and store (the parts no overlap hides) are a small share of
/// the kernel, few enough that each step's fixed costs (a reduction chain's fill, a DMA
/// task's latency) stay small beside its transfers.
const PIPELINE_STEPS: usize = 4;

/// Least DRAM bytes per core per step for [`pipelined`] to cut a kernel: below a few KiB a
/// step's load is short beside a DMA task's fixed latency and the extra steps cost more than
/// the overlap saves (measured on the gallery's small layers).
const PIPELINE_MIN_STEP_BYTES: u64 = 4096;

/// A matmul whose share fits the scratchpad whole would run load, reorder, multiply,
/// reduce and store one after the other, its compute hidden behind nothing. Cut into a few
/// double-buffered time steps that read no more DRAM bytes (no K loop, so each output
/// block's reduction and store overlap the next block's load), its compute overlaps its
/// loads. Picks, among such plans of 2 to 2 x [`PIPELINE_STEPS`] steps, the one nearest
/// [`PIPELINE_STEPS`] (fewer steps on a tie) whose second buffers fit `budget`; `None`
/// when the share moves too few bytes to gain or no plan fits.
fn pipelined(
    c: &Compilation,
    op: &DeviceOp,
    index: usize,
    kernel: &Kernel,
    budget: u64,
) -> Result<Option<(ktir::Func, Recipe)>, CompileError> {
    let probe = KernelEmitter::new(c, op, index, kernel)?;
    let whole_plan = Plan {
        loops: Vec::new(),
        k_steps: 1,
        hoist: None,
    };
    let bytes = dram_bytes_per_core(&probe, &whole_plan);
    if bytes < PIPELINE_MIN_STEP_BYTES * PIPELINE_STEPS as u64 {
        return Ok(None);
    }
    let plans = candidate_plans(&probe);
    // Plans are sorted by DRAM bytes first: those reading no more than the whole share
    // come first.
    let mut fitting: Vec<usize> = plans
        .iter()
        .take(MAX_TRIES)
        .take_while(|p| dram_bytes_per_core(&probe, p) == bytes)
        .enumerate()
        .filter(|(_, p)| p.k_steps == 1 && (2..=2 * PIPELINE_STEPS).contains(&p.steps()))
        .map(|(i, _)| i)
        .collect();
    fitting.sort_by_key(|&i| (plans[i].steps().abs_diff(PIPELINE_STEPS), plans[i].steps()));
    for i in fitting {
        let plan = &plans[i];
        let mut em = KernelEmitter::new(c, op, index, kernel)?;
        em.loops = plan.loops.clone();
        em.k_steps = plan.k_steps;
        em.hoist = plan.hoist;
        let mut f = em.emit()?;
        let loads = double_buffer::double_buffer(&mut f);
        if loads == 0 {
            continue;
        }
        let n = peak_live_bytes(&f);
        if n <= budget {
            let text = format!(
                "fits whole, cut in {} steps to overlap compute with loads; double buffering ({loads} load(s) prefetched one step ahead, {n} B of {budget} B)",
                plan.steps()
            );
            return Ok(Some((
                note(f, &text),
                Recipe::Plan {
                    plan: i,
                    double: true,
                    note: Some(text),
                },
            )));
        }
    }
    Ok(None)
}

/// A gather too big for its budget (`whole_need` bytes) loads its rows in blocks: the
/// fewest blocks (dividing the rows evenly) whose working set fits the budget; failing
/// that, the fewest that fit the plannable capacity. None fitting is a compile error
/// naming the kernel, found before anything runs.
fn gather_in_blocks(
    c: &Compilation,
    op: &DeviceOp,
    index: usize,
    kernel: &Kernel,
    whole_need: u64,
    budget: u64,
) -> Result<ktir::Func, CompileError> {
    let cap = c.target.scratchpad_capacity_bytes as u64;
    // This core's rows (cores may split the ids).
    let rows = KernelEmitter::new(c, op, index, kernel)?
        .operands
        .last()
        .and_then(|o| o.full_extent.get(1).copied())
        .unwrap_or(1);
    // Fewest blocks first; the ids are read by row, so a block need not be whole sticks.
    let mut capped: Option<ktir::Func> = None;
    for steps in (2..=rows).filter(|s| rows % s == 0) {
        let mut em = KernelEmitter::new(c, op, index, kernel)?;
        em.gather_steps = steps;
        let f = em.emit()?;
        let need = peak_live_bytes(&f);
        if need <= budget {
            return Ok(f);
        }
        if need <= cap && capped.is_none() {
            capped = Some(f);
        }
    }
    if let Some(f) = capped {
        return Ok(note(
            f,
            "no block of rows fits beside the scratchpad plan's buffers; the fewest that fit the plannable capacity",
        ));
    }
    Err(CompileError::at(
        &op.name,
        format!(
            "kernel @{}: the gather's tiles need {whole_need} bytes of scratchpad per core, and no block of its {rows} rows fits the budget of {budget} bytes ({cap} plannable)",
            kernel.func
        ),
    ))
}

/// The most candidate blocks a blocked transpose enumerates (block sizes per dim are
/// whole sticks, so this bounds only rank-4-and-up cases with many free dims).
const MAX_BLOCK_COMBOS: usize = 200_000;

/// One movement kernel to be moved in blocks.
struct BlockedKernel<'a> {
    c: &'a Compilation,
    op: &'a DeviceOp,
    index: usize,
    kernel: &'a Kernel,
}

impl BlockedKernel<'_> {
    /// The kernel moved in `blocks` ((iteration dim, block elements), outermost first),
    /// double-buffered when `double`; with its peak working set.
    fn emit(
        &self,
        blocks: &[(usize, usize)],
        double: bool,
    ) -> Result<(u64, ktir::Func), CompileError> {
        let mut em = KernelEmitter::new(self.c, self.op, self.index, self.kernel)?;
        em.blocks = blocks.to_vec();
        let mut f = em.emit()?;
        if double {
            double_buffer::double_buffer(&mut f);
        }
        Ok((peak_live_bytes(&f), f))
    }

    /// A transpose whose input and output hold their sticks along different dims
    /// (`crossing`: the iteration dims of the input's and the output's stick dims), too
    /// big for its `budget` whole (`whole_need` bytes): each core moves its slice in 2-D
    /// blocks of whole sticks on both sides (and, when even the smallest such block is too
    /// big, blocks of its other free dims), loaded, transposed in the scratchpad and
    /// stored one at a time. A block need not divide the slice: each dim ends with a
    /// remainder block. The blocks chosen are the fewest that fit the budget with their
    /// loads double-buffered (when `double`), else the fewest that fit single-buffered,
    /// else the smallest, when it fits the plannable capacity; otherwise a compile error
    /// naming the kernel.
    fn transpose_in_blocks(
        &self,
        (a, b): (usize, usize),
        whole_need: u64,
        budget: u64,
        double: bool,
    ) -> Result<ktir::Func, CompileError> {
        let (c, op) = (self.c, self.op);
        let cap = c.target.scratchpad_capacity_bytes as u64;
        let eps = crate::workdiv::op_eps(c, op).max(1);
        let probe = KernelEmitter::new(c, op, self.index, self.kernel)?;
        let fixed = crate::movement_split::fixed_dims(c, op).unwrap_or_default();
        // Block dims, outermost first: other free dims, then the input's stick dim, then
        // the output's (so the innermost loop walks the output's sticks).
        let mut dims: Vec<usize> = (0..op.iteration.len())
            .filter(|&d| {
                d != a
                    && d != b
                    && fixed.get(d).is_some_and(Option::is_none)
                    && !op.iteration[d].reduction
                    && probe.iter_elems(d) > 1
            })
            .collect();
        dims.extend([a, b]);
        // Block sizes per dim, smallest first: whole sticks on the stick dims (or the
        // whole extent), divisors elsewhere.
        let options: Vec<Vec<usize>> = dims
            .iter()
            .map(|&d| {
                let e = probe.iter_elems(d).max(1);
                if d == a || d == b {
                    let mut v: Vec<usize> = (1..e.div_ceil(eps)).map(|k| k * eps).collect();
                    v.push(e);
                    v
                } else {
                    (1..=e).filter(|x| e % x == 0).collect()
                }
            })
            .collect();
        let extents: Vec<usize> = dims.iter().map(|&d| probe.iter_elems(d).max(1)).collect();
        let finest: Vec<(usize, usize)> = dims
            .iter()
            .zip(&options)
            .map(|(&d, o)| (d, o.first().copied().unwrap_or(1)))
            .collect();
        let (finest_need, finest_f) = self.emit(&finest, false)?;
        if finest_need > cap {
            return Err(CompileError::at(
                &op.name,
                format!(
                    "kernel @{}: a core's tiles need {whole_need} bytes of scratchpad whole and {finest_need} bytes in the smallest blocks of whole sticks, but the budget is {budget} bytes ({cap} plannable)",
                    self.kernel.func
                ),
            ));
        }
        let (finest_db, _) = self.emit(&finest, true)?;
        // Every combination of block sizes, with its steps, remainder count, squareness
        // and area (elements of one block).
        let mut combos: Vec<(Vec<usize>, u64, usize, usize, u64)> = vec![(Vec::new(), 1, 0, 0, 1)];
        for (k, opts) in options.iter().enumerate() {
            let mut next = Vec::new();
            for (v, steps, rems, _, area) in &combos {
                for &x in opts {
                    let e = extents[k];
                    let n = e.div_ceil(x) as u64;
                    let mut w = v.clone();
                    w.push(x);
                    next.push((
                        w,
                        steps * n,
                        rems + usize::from(e % x != 0),
                        0,
                        area * x as u64,
                    ));
                }
            }
            combos = next;
            if combos.len() > MAX_BLOCK_COMBOS {
                break;
            }
        }
        combos.retain(|x| x.0.len() == dims.len());
        let ia = dims.len() - 2;
        for x in &mut combos {
            // Squareness of the 2-D block: the ratio of its longer side to its shorter.
            let (p, q) = (x.0[ia].max(1), x.0[ia + 1].max(1));
            x.3 = p.max(q) / p.min(q);
        }
        // Fewest steps; then fewest remainder blocks; then the squarer block.
        combos.sort_by_key(|x| (x.1, x.2, x.3, std::cmp::Reverse(x.4)));
        let area_f: u64 = finest.iter().map(|f| f.1 as u64).product::<u64>().max(1);
        let estimate = |need: u64, area: u64| need.saturating_mul(area) / area_f;
        let as_blocks = |v: &[usize]| -> Vec<(usize, usize)> {
            dims.iter().copied().zip(v.iter().copied()).collect()
        };
        let modes: &[bool] = if double { &[true, false] } else { &[false] };
        for &db in modes {
            let base = if db { finest_db } else { finest_need };
            let mut tries = 0;
            for (v, _, _, _, area) in &combos {
                if estimate(base, *area) > budget {
                    continue;
                }
                tries += 1;
                if tries > MAX_TRIES {
                    break;
                }
                let (need, f) = self.emit(&as_blocks(v), db)?;
                if need <= budget {
                    let how = if db {
                        format!("double buffering ({need} B of {budget} B)")
                    } else if double {
                        format!("single buffering (no double-buffered block fits the budget of {budget} B)")
                    } else {
                        "single buffering (double buffering is off)".to_string()
                    };
                    return Ok(note(f, &how));
                }
            }
        }
        Ok(note(
            finest_f,
            "single buffering (the smallest blocks fit only the plannable capacity, not beside the scratchpad plan's buffers)",
        ))
    }
}

/// Appends `text` to a kernel's header comment.
fn note(mut f: ktir::Func, text: &str) -> ktir::Func {
    f.comment = Some(match f.comment.take() {
        Some(c) => format!("{c}; {text}"),
        None => text.to_string(),
    });
    f
}

/// Fewest time steps [`buffered`] gives a matmul whose B tiles are shared over the ring,
/// when a plan moving as few DRAM bytes allows it (measured on the Llama-3.1-8B layer at
/// sequence 512, where 4-step K/V projections ran 1.2x slower than with 16 steps).
const SHARED_B_MIN_STEPS: usize = 16;

/// The double-buffered kernel of the first of `plans` (the one chosen single-buffered,
/// `single`) whose second buffers fit `budget`, looking only at plans that move as many
/// DRAM bytes as the chosen one (a finer cut that reads no more is worth its extra steps
/// when it overlaps), and, for a matmul sharing B over the ring, passing over plans of
/// fewer than [`SHARED_B_MIN_STEPS`] steps when one of as many bytes has that many;
/// `single` with the reason when none fits.
///
/// With the kernel, its recipe: `plans` are the candidates from number `first` on.
fn buffered(
    em: &KernelEmitter<'_>,
    first: usize,
    plans: &[Plan],
    single: ktir::Func,
    budget: u64,
    emit: &dyn Fn(&Plan) -> Result<ktir::Func, CompileError>,
) -> Result<(ktir::Func, Recipe), CompileError> {
    let settled = |plan: usize, double: bool, note: Option<String>| Recipe::Plan {
        plan: first + plan,
        double,
        note,
    };
    let Some(chosen) = plans.first() else {
        return Ok((single, settled(0, false, None)));
    };
    let bytes = dram_bytes_per_core(em, chosen);
    let mut first_need = None;
    for (i, plan) in plans.iter().take(MAX_TRIES).enumerate() {
        if dram_bytes_per_core(em, plan) != bytes {
            break;
        }
        // A shared B tile's ring forward queues on the DMA engine between loads: finer
        // steps (when a plan moving the same bytes has them) shorten each such wait and
        // the first and last blocks no overlap hides.
        if shared_group(em) > 1
            && plan.steps() < SHARED_B_MIN_STEPS
            && plans
                .iter()
                .skip(i + 1)
                .take_while(|p| dram_bytes_per_core(em, p) == bytes)
                .any(|p| p.steps() >= SHARED_B_MIN_STEPS)
        {
            continue;
        }
        let mut f = if i == 0 { single.clone() } else { emit(plan)? };
        let loads = double_buffer::double_buffer(&mut f);
        if loads == 0 {
            if i == 0 {
                let why = "single buffering (no load to prefetch)";
                return Ok((note(single, why), settled(0, false, Some(why.to_string()))));
            }
            continue;
        }
        let n = peak_live_bytes(&f);
        first_need.get_or_insert(n);
        if n <= budget {
            let why = overlap_note(em, plan);
            let text = format!("double buffering ({loads} load(s) prefetched one step ahead, {n} B of {budget} B){why}");
            return Ok((note(f, &text), settled(i, true, Some(text))));
        }
    }
    let need = first_need.unwrap_or(0);
    let text = format!(
        "single buffering (the second buffers would need {need} B, the budget is {budget} B)"
    );
    Ok((note(single, &text), settled(0, false, Some(text))))
}

/// Whether DMA or compute dominates a step, roughly, for the header: where DMA is shorter
/// than compute the overlap only hides the DMA, and the header says so instead of
/// claiming a gain beyond it.
fn overlap_note(em: &KernelEmitter<'_>, plan: &Plan) -> String {
    let t = &em.c.target;
    let cores = em.division().map_or(1, |d| d.cores_used.max(1)) as f64;
    let bytes = dram_bytes_per_core(em, plan) as f64;
    // DRAM bandwidth is shared by the cores working at once (one-way efficiency as in the
    // roofline).
    let dma = bytes / (t.dram_bytes_per_ns * 0.732 / cores).max(1e-9);
    let per_core: f64 = em
        .op
        .iteration
        .iter()
        .enumerate()
        .map(|(d, x)| {
            let split = em
                .division()
                .and_then(|w| w.splits.get(d).copied())
                .unwrap_or(1)
                .max(1);
            (x.extent as f64 / split as f64).max(1.0)
        })
        .product();
    let compute = if em.op.kind.is_matmul() {
        per_core / t.matmul_macs_per_ns.max(1.0)
    } else {
        // One vector op per 64 lanes per cycle.
        per_core / 64.0
    };
    if dma < compute {
        format!(
            "; DMA (~{:.0} cycles) is shorter than compute (~{:.0} cycles) per core: overlap hides the DMA, compute bounds the kernel",
            dma, compute
        )
    } else {
        format!(
            "; DMA (~{:.0} cycles) is longer than compute (~{:.0} cycles) per core: overlap hides the compute, DMA bounds the kernel",
            dma, compute
        )
    }
}

/// Kernels this pass cuts in time: matmuls, elementwise ops and reductions.
fn is_cut_kind(op: &DeviceOp) -> bool {
    match op.kind.category() {
        Category::Matmul | Category::Reduction | Category::Pointwise => true,
        Category::RowOp | Category::Movement => false,
    }
}

/// Step counts that cut iteration dim `d` of every operand's tile into equal whole blocks
/// (whole sticks in stick dims), the same elements in every operand.
fn valid_steps(em: &KernelEmitter<'_>, d: usize) -> Vec<usize> {
    let mut cuts: Vec<(usize, usize)> = Vec::new(); // (extent, elements per unit)
    for o in &em.operands {
        for (j, dim) in o.dims.iter().enumerate() {
            if dim.iter != Some(d) || !matches!(dim.kind, Kind::Elem | Kind::Sticks) {
                continue;
            }
            let per_unit = if dim.kind == Kind::Sticks {
                (0..o.dims.len())
                    .find(|&l| o.dims[l].kind == Kind::Lane && o.dims[l].iter == Some(d))
                    .map(|l| o.extent[l])
                    .unwrap_or(1)
            } else {
                1
            };
            cuts.push((o.extent[j], per_unit));
        }
    }
    let Some(&(first, _)) = cuts.first() else {
        return Vec::new();
    };
    (2..=first)
        .filter(|s| {
            let block = |&(e, u): &(usize, usize)| (e % s == 0).then_some(e / s * u);
            let b0 = block(&cuts[0]);
            b0.is_some() && cuts.iter().all(|c| block(c) == b0)
        })
        .collect()
}

/// Every plan for this kernel's kind, fewest DRAM bytes first (see [`dram_bytes_per_core`]),
/// then fewest time steps; among equals, the one that cuts the cheaper dims (matmul: K
/// blocks before N, N before M, M before batch).
fn candidate_plans(em: &KernelEmitter<'_>) -> Vec<Plan> {
    let op = em.op;
    let it = &op.iteration;
    // (dim, is K) in order of preference: a cut on an earlier dim is cheaper.
    let dims: Vec<(usize, bool)> = if op.kind.is_matmul() && it.len() >= 3 {
        let nb = it.len() - 3;
        let mut v = vec![(nb + 2, true), (nb + 1, false), (nb, false)];
        v.extend((0..nb).rev().map(|b| (b, false)));
        v
    } else if is_cut_kind(op) {
        (0..it.len())
            .filter(|&d| !it[d].reduction)
            .map(|d| (d, false))
            .collect()
    } else if op.kind.is_movement() && op.kind != DeviceOpKind::Movement(Movement::Gather) {
        // A movement op is cut in time along the dims it could be split over cores by:
        // a block of them reads a box of every input, as a finer split would.
        let fixed = crate::movement_split::fixed_dims(em.c, op).unwrap_or_default();
        (0..it.len())
            .filter(|&d| fixed.get(d).is_some_and(Option::is_none) && !it[d].reduction)
            .map(|d| (d, false))
            .collect()
    } else {
        Vec::new()
    };
    let options: Vec<(usize, bool, Vec<usize>)> = dims
        .into_iter()
        .map(|(d, k)| {
            let mut s = vec![1];
            s.extend(valid_steps(em, d));
            (d, k, s)
        })
        .filter(|(_, _, s)| s.len() > 1)
        .collect();
    if options.is_empty() {
        return Vec::new();
    }
    // Cartesian product of the options, bounded: keep the smallest step counts per dim
    // when there are too many.
    let mut combos: Vec<Vec<usize>> = vec![Vec::new()];
    for (_, _, steps) in &options {
        let mut next = Vec::new();
        for c in &combos {
            for &s in steps {
                let mut v = c.clone();
                v.push(s);
                next.push(v);
            }
        }
        combos = next;
        if combos.len() > 100_000 {
            break;
        }
    }
    combos.retain(|c| c.len() == options.len() && c.iter().any(|&s| s > 1));
    // A matmul without a K loop may also keep one input resident: its tile is loaded
    // outside the innermost loop, over the dim that input lacks (N for A, M for B).
    let matmul_dims = (op.kind.is_matmul() && it.len() >= 3 && !same_inputs(em))
        .then(|| (it.len() - 3, it.len() - 2));
    let mut plans: Vec<(Vec<u64>, Plan)> = Vec::new();
    for c in combos {
        let mut loops = Vec::new();
        let mut k_steps = 1;
        // Outer loops go from the least preferred dim (batch) inwards.
        for (i, (d, k, _)) in options.iter().enumerate().rev() {
            if *k {
                k_steps = c[i];
            } else if c[i] > 1 {
                loops.push((*d, c[i]));
            }
        }
        let mut variants = vec![Plan {
            loops: loops.clone(),
            k_steps,
            hoist: None,
        }];
        if let (Some((mb, out)), 1) = (matmul_dims, k_steps) {
            // (hoisted input, the dim its innermost loop runs over)
            for (h, inner) in [(0, out), (1, mb)] {
                if let Some(p) = loops.iter().position(|l| l.0 == inner) {
                    let mut l = loops.clone();
                    let last = l.remove(p);
                    l.push(last);
                    variants.push(Plan {
                        loops: l,
                        k_steps,
                        hoist: Some(h),
                    });
                }
            }
        }
        for plan in variants {
            // Sort key: DRAM bytes moved (re-reads included); then a plan without a hoist
            // (its stores wait for the K loop, so its loads stream back to back, while a
            // hoisted plan stores a block every step and its next load queues behind
            // that store); then total steps and the steps on each dim from the least
            // preferred.
            let mut key = vec![
                dram_bytes_per_core(em, &plan),
                plan.hoist.map_or(0, |h| h as u64 + 1),
                plan.steps() as u64,
            ];
            key.extend(c.iter().rev().map(|&s| s as u64));
            plans.push((key, plan));
        }
    }
    plans.sort_by(|a, b| a.0.cmp(&b.0));
    plans.into_iter().map(|(_, p)| p).collect()
}

/// Whether a matmul multiplies a tensor by itself (one load serves both inputs).
fn same_inputs(em: &KernelEmitter<'_>) -> bool {
    em.operands.len() >= 2 && em.operands[0].tensor == em.operands[1].tensor
}

/// Each operand's DRAM traffic for one core under `plan`: (operand index, bytes of its
/// slice, re-read factor). Only a matmul re-reads: its loop nest runs batch, M and N blocks
/// outside the K loop, so A (batch, M, K) is loaded again for every N block and B (batch,
/// K, N) for every M block, except a hoisted input, loaded once per block of the loops
/// outside the innermost one (which does not cut it): its factor is 1. C is stored once.
/// A B shared over the ring counts its bytes once per sharing group, spread over its cores.
/// Every other kind touches each element once, whatever the cut. Operands the scratchpad
/// plan holds move no DRAM bytes (left out).
fn operand_traffic(em: &KernelEmitter<'_>, plan: &Plan) -> Vec<(usize, u64, u64)> {
    let it = &em.op.iteration;
    let steps_on = |d: usize| -> u64 {
        plan.loops
            .iter()
            .filter(|l| l.0 == d)
            .map(|l| l.1 as u64)
            .product()
    };
    let reread = |i: usize| -> u64 {
        if !em.op.kind.is_matmul() || it.len() < 3 {
            return 1;
        }
        let (mb, out) = (it.len() - 3, it.len() - 2);
        match (i, plan.hoist) {
            (0, Some(0)) | (1, Some(1)) => 1,
            (0, _) => steps_on(out),
            (1, _) => steps_on(mb),
            _ => 1,
        }
    };
    let group = shared_group(em) as u64;
    em.operands
        .iter()
        .enumerate()
        .filter(|(_, o)| o.local.is_none())
        .map(|(i, o)| {
            let elems: u64 = o.full_extent.iter().map(|&e| e as u64).product();
            let bytes = elems.saturating_mul(o.elem.size_bytes() as u64);
            // A shared B is loaded by one core of its group for all of them.
            let bytes = if i == 1 { bytes.div_ceil(group) } else { bytes };
            (i, bytes, reread(i))
        })
        .collect()
}

/// The number of cores sharing each B tile of a matmul over the ring (1: not shared).
fn shared_group(em: &KernelEmitter<'_>) -> usize {
    let shared = em.op.kind.is_matmul()
        && em.operands.len() >= 2
        && em.operands[0].tensor != em.operands[1].tensor;
    em.division()
        .and_then(|d| d.shared_b)
        .filter(|_| shared)
        .unwrap_or(1)
        .max(1)
}

/// The DRAM bytes one core moves for its slice under `plan`, re-reads included.
fn dram_bytes_per_core(em: &KernelEmitter<'_>, plan: &Plan) -> u64 {
    operand_traffic(em, plan)
        .into_iter()
        .map(|(_, bytes, reread)| bytes.saturating_mul(reread))
        .fold(0u64, u64::saturating_add)
}

/// A kernel's time cut for its header comment: the loops (outermost first, K innermost),
/// each operand's block shape, and each operand's DRAM bytes per core with its re-read
/// factor, so a reader sees why the plan was chosen.
pub(super) fn plan_note(em: &KernelEmitter<'_>) -> String {
    let it = &em.op.iteration;
    let plan = Plan {
        loops: em.loops.clone(),
        k_steps: em.k_steps,
        hoist: em.hoist,
    };
    let mut loops: Vec<String> = plan
        .loops
        .iter()
        .map(|&(d, n)| format!("{} x{n}", it.get(d).map_or("?", |x| x.label.as_str())))
        .collect();
    if plan.k_steps > 1 {
        let k = it.last().map_or("in", |x| x.label.as_str());
        loops.push(format!("{k} x{}", plan.k_steps));
    }
    let traffic = operand_traffic(em, &plan);
    let operands: Vec<String> = em
        .operands
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let tile = o
                .extent
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("x");
            let group = shared_group(em);
            match traffic.iter().find(|t| t.0 == i) {
                Some((_, bytes, reread)) if i == 1 && group > 1 => format!(
                    "{} tile {tile}, {bytes} B x{reread} (loaded by one core of {group}, the others take it from the ring)",
                    o.tensor
                ),
                Some((_, bytes, reread)) => {
                    format!("{} tile {tile}, {bytes} B x{reread}", o.tensor)
                }
                None => format!("{} tile {tile}, in scratchpad", o.tensor),
            }
        })
        .collect();
    let resident = match plan.hoist.and_then(|h| em.operands.get(h)) {
        Some(o) => format!("; {} resident across the innermost loop", o.tensor),
        None => String::new(),
    };
    format!(
        "loops {} (outermost first){resident}; {}",
        loops.join(", "),
        operands.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use crate::passes::tests::{graph_of, upto};
    use crate::{compile, Placement, Target};

    #[test]
    fn a_slot_taken_over_in_place_is_held_once() {
        // The second exp reads `a` and writes `b` into the same slot: while it runs, the
        // plan holds that slot once, not once per tensor (which left it no budget at all
        // once the slot passed half the scratchpad).
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [64, 256]}"#,
            "",
            r#"{"name": "e1", "op": "Exp", "inputs": ["x"], "outputs": ["a"]},
               {"name": "e2", "op": "Exp", "inputs": ["a"], "outputs": ["b"]},
               {"name": "sum", "op": "Add", "inputs": ["b", "b"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let c = compile(&g, &Target::spyre32(), &upto("scratchpad")).unwrap();
        let slot = |t: &str| match c.placements.get(t) {
            Some(Placement::Scratchpad {
                offset,
                bytes_per_core,
            }) => (*offset, *bytes_per_core),
            other => panic!("{t} is not in the scratchpad: {other:?}"),
        };
        let (a, b) = (slot("a"), slot("b"));
        assert_eq!(a, b, "b does not take a's slot");
        let at = |name: &str| c.ops.iter().position(|o| o.name == name).unwrap();
        let held = super::planned_live_bytes(&c);
        assert_eq!(held[at("e1")], a.1);
        assert_eq!(held[at("e2")], a.1);
        assert_eq!(held[at("sum")], a.1);
    }
}
