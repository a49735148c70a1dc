//! Core state of the simulator: DRAM and scratchpads, the value domain, the recorded
//! timing tasks and their barrier, step counting and progress; per core, the frame stack,
//! the value slots and the live scratchpad bytes. The helpers every op family uses (operand
//! access, results, task recording, tensor allocation with scratchpad accounting) live here.

use crate::domain::{Domain, Numbers, ShapesOnly};
use crate::machine::Machine;
use crate::resolve::{ROp, Region};
use crate::store::{DramBuffer, Memory};
use crate::timing::{Deps, LaunchScheduler, Limits, Schedule, Task, TaskId, Unit, Work};
use crate::value::*;
use ktir::ast::*;
use std::collections::HashMap;
use std::rc::Rc;

/// A progress report: operations executed so far and the total they count towards.
pub type ProgressFn<'a> = Box<dyn FnMut(u64, u64) + 'a>;

/// The simulator's state across launches: DRAM, scratchpads and the recorded tasks.
pub struct Simulator<'m> {
    pub(crate) machine: &'m Machine,
    pub(crate) limits: ExecLimits,
    /// DRAM buffers and scratchpad contents.
    pub(crate) mem: Memory,
    next_base: i64,
    /// The recorded tasks still held (from id `task_base` on).
    pub(crate) tasks: Vec<Task>,
    /// Id of the first task in `tasks`: those before were scheduled and let go
    /// ([`Simulator::schedule_each_launch`]).
    task_base: TaskId,
    /// Schedules each launch as it ends, when set ([`Simulator::schedule_each_launch`]).
    scheduler: Option<LaunchScheduler<'m>>,
    /// What the recorded tasks keep through the run ([`crate::timing::task_footprint`]).
    task_record_bytes: u64,
    /// The first task of the launch being interpreted.
    launch_first_task: TaskId,
    /// Tasks of the largest launch so far: what scheduling one launch at a time holds.
    largest_launch_tasks: u64,
    /// Tasks every task of the next launch must wait for.
    pub(crate) barrier: Option<TaskId>,
    steps: u64,
    /// The part of `steps` that replayed launches stand for: counted in the run's total,
    /// but not against the step limit, since a replay executes no operation.
    replayed_steps: u64,
    /// Peak live tensor bytes per core over the run.
    pub peak_tensor_bytes: Vec<u64>,
    /// Peak live tensor bytes on any one core, per launch in launch order.
    pub(crate) launch_peaks: Vec<u64>,
    pub(crate) returned: Vec<Vec<KernelValue>>,
    progress: Option<(ProgressFn<'m>, u64)>,
    /// Estimate of the steps of the whole run, for progress reports (0 when unknown).
    progress_total: u64,
    /// What tensors and buffers hold, and how their contents are computed.
    pub(crate) domain: &'static dyn Domain,
    /// What timing-only mode assumed in place of values it did not compute: each distinct
    /// text, in the order first made, with the op lines that made it (ascending).
    assumptions: Vec<(String, Vec<u32>)>,
    /// The arithmetic each compute task did, for roofline reports.
    work: Vec<(TaskId, WorkCount)>,
    /// Whether points outside a view are masked (loads read 0, stores are dropped) rather
    /// than an error; see [`Simulator::set_mask_out_of_bounds`].
    pub(crate) mask_out_of_bounds: bool,
    /// Points masked so far.
    pub(crate) masked_points: u64,
    /// What each launch recorded, in launch order, so [`Simulator::replay_launch`] can
    /// repeat it without interpreting the kernel again.
    pub(crate) launch_log: Vec<LaunchLog>,
}

/// What one launch added to the simulator's records: index ranges into its lists.
#[derive(Clone, Debug, Default)]
pub(crate) struct LaunchLog {
    /// The launch's tasks, its closing barrier (when it has one) last.
    pub tasks: std::ops::Range<TaskId>,
    /// Whether the last task of `tasks` is the launch's closing barrier.
    pub has_barrier: bool,
    pub steps: u64,
    pub work: std::ops::Range<usize>,
    /// The assumptions the launch made, by their op line and text after the line.
    pub assumptions: Vec<(u32, String)>,
    pub masked_points: u64,
    pub peak: u64,
    pub returned: Vec<Vec<KernelValue>>,
    /// For a replayed launch: the launch it repeats, how far its lines are from that
    /// one's, and its closing barrier's name. Its `tasks` and `work` are then empty.
    pub repeat: Option<(usize, i64, String)>,
}

/// The arithmetic of one compute task: what a roofline divides by the machine's rates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkCount {
    /// Multiply-accumulates on the PT array.
    pub macs: u64,
    /// Element operations on the SFP vector unit (as its cycle model counts them).
    pub elementwise: u64,
}

/// Per-core execution context.
pub(crate) struct CoreCtx {
    pub core: usize,
    pub tile_id: Vec<i64>,
    pub grid_size: usize,
    pub live_bytes: u64,
    /// Tasks of this core in this launch without a successor yet (for the barrier): a
    /// set, as each task recorded removes its dependencies from it.
    pub last_tasks: std::collections::BTreeSet<TaskId>,
    /// The core's most recent store (loads wait for it).
    pub last_store: Option<TaskId>,
    /// Whether work is timed (false while running a collective's combiner).
    pub record: bool,
    /// The iteration point of the innermost `linalg.generic` whose body is running (what
    /// `linalg.index` reads); empty outside such a body.
    pub generic_point: Vec<i64>,
    /// How a region runs to completion: the driver loop's, handed to the op families
    /// that interpret regions (`linalg.generic`, reductions, collective combiners) so they
    /// need not depend on it.
    pub run_region: RunRegion,
}

/// Runs a region to completion with the given block arguments and returns what its
/// terminator yields.
pub(crate) type RunRegion = fn(
    &mut Simulator<'_>,
    &Region<'_>,
    Vec<RtValue>,
    &mut [Option<RtValue>],
    &mut CoreCtx,
) -> Result<Vec<RtValue>, SimError>;

/// What a run of a frame stack ended with.
pub(crate) enum Outcome<'r, 'a> {
    /// The base block finished with these values.
    Finished(Vec<RtValue>),
    /// The core reached a collective and waits there.
    Suspended(&'r ROp<'a>),
}

#[derive(Clone, Copy)]
pub(crate) enum FrameKind<'r, 'a> {
    Root,
    For {
        owner: &'r ROp<'a>,
        iv: i64,
        upper: i64,
        step: i64,
    },
    If {
        owner: &'r ROp<'a>,
    },
    Produce {
        owner: &'r ROp<'a>,
        group: i64,
    },
}

pub(crate) struct Frame<'r, 'a> {
    pub ops: &'r [ROp<'a>],
    pub pc: usize,
    pub kind: FrameKind<'r, 'a>,
}

#[derive(Clone, Copy)]
pub(crate) enum CoreState<'r, 'a> {
    Ready,
    Waiting(&'r ROp<'a>, u64),
    Done,
}

/// One core's execution state within a launch.
pub(crate) struct CoreRun<'r, 'a> {
    pub frames: Vec<Frame<'r, 'a>>,
    pub slots: Vec<Option<RtValue>>,
    pub ctx: CoreCtx,
    pub state: CoreState<'r, 'a>,
    /// Dynamic occurrences of each collective op passed so far.
    pub occurrences: HashMap<usize, u64>,
}

impl<'m> Simulator<'m> {
    /// A simulator for `machine` with empty DRAM.
    pub fn new(machine: &'m Machine, limits: ExecLimits) -> Self {
        Simulator::in_domain(machine, limits, &Numbers)
    }

    fn in_domain(machine: &'m Machine, limits: ExecLimits, domain: &'static dyn Domain) -> Self {
        let cores = machine.cores.value;
        Simulator {
            machine,
            limits,
            mem: Memory {
                dram: Vec::new(),
                scratchpads: vec![Vec::new(); cores],
                dram_sorted: true,
            },
            next_base: 0,
            tasks: Vec::new(),
            task_base: 0,
            scheduler: None,
            task_record_bytes: 0,
            launch_first_task: 0,
            largest_launch_tasks: 0,
            barrier: None,
            steps: 0,
            replayed_steps: 0,
            peak_tensor_bytes: vec![0; cores],
            launch_peaks: Vec::new(),
            returned: Vec::new(),
            progress: None,
            progress_total: 0,
            domain,
            assumptions: Vec::new(),
            work: Vec::new(),
            mask_out_of_bounds: false,
            masked_points: 0,
            launch_log: Vec::new(),
        }
    }

    /// Masks points of an access tile that fall outside its view (outside the view's
    /// sizes or `coordinate_set`, or outside every DRAM buffer) as the public reference
    /// interpreter does: a load reads 0 there and a store drops the value. Off by default,
    /// where such a point is an error (the spec does not say points are masked). A view
    /// reaching into another buffer stays an error either way.
    pub fn set_mask_out_of_bounds(&mut self, mask: bool) {
        self.mask_out_of_bounds = mask;
    }

    /// How many points were masked (see [`Simulator::set_mask_out_of_bounds`]).
    pub fn masked_points(&self) -> u64 {
        self.masked_points
    }

    /// Places a buffer of `data` at DRAM element address `base` (programs whose kernels
    /// use constant addresses). Fixed buffers are placed before any other, in increasing
    /// address order, so buffers stay sorted and never overlap.
    pub fn alloc_at(
        &mut self,
        name: &str,
        elem: ScalarType,
        base: i64,
        data: Vec<f32>,
    ) -> Result<i64, SimError> {
        let len = data.len();
        self.check_dram(name, len)?;
        let data = self.domain.buffer(elem, data);
        self.place_at(name, elem, base, len, data)
    }

    /// Reserves a buffer of `len` zeros at DRAM element address `base`, as
    /// [`Simulator::alloc_at`] places one (a timing-only run of a program whose kernels use
    /// constant addresses: its buffers have a size but no contents).
    pub fn reserve_at(
        &mut self,
        name: &str,
        elem: ScalarType,
        base: i64,
        len: usize,
    ) -> Result<i64, SimError> {
        self.check_dram(name, len)?;
        let data = self.domain.filled(len, 0.0);
        self.place_at(name, elem, base, len, data)
    }

    fn place_at(
        &mut self,
        name: &str,
        elem: ScalarType,
        base: i64,
        len: usize,
        data: Vec<f32>,
    ) -> Result<i64, SimError> {
        if base < self.next_base {
            let prev = self.mem.dram.last().map_or(String::new(), |b| {
                format!(" (buffer '{}' ends at {})", b.name, b.base + b.len as i64)
            });
            return err(format!(
                "DRAM buffer '{name}' at address {base} overlaps the buffers placed before it{prev}"
            ));
        }
        if self.mem.dram.iter().any(|b| b.name == name) {
            return err(format!("DRAM buffer '{name}' is allocated twice"));
        }
        let len_i = i64::try_from(len).map_err(|_| SimError {
            message: format!("DRAM buffer '{name}' of {len} elements is too large"),
            core: None,
            op: None,
        })?;
        self.next_base = base.checked_add(len_i).ok_or_else(|| SimError {
            message: "DRAM addresses overflow".into(),
            core: None,
            op: None,
        })?;
        self.mem.push_dram(DramBuffer {
            name: name.to_string(),
            base,
            elem,
            len,
            data,
        });
        Ok(base)
    }

    /// Writes initial scratchpad contents: `values[k]` at element address `addrs[k]` of
    /// core `core`'s scratchpad, as `elem`. Addresses beyond the scratchpad's capacity
    /// are an error.
    pub fn init_scratchpad(
        &mut self,
        core: usize,
        elem: ScalarType,
        addrs: &[i64],
        values: &[f32],
    ) -> Result<(), SimError> {
        if core >= self.mem.scratchpads.len() {
            return err(format!(
                "the scratchpad of core {core} does not exist on this machine"
            ));
        }
        let size = elem.size_bytes() as u64;
        let cap = self.machine.scratchpad_bytes.value;
        for (&addr, &x) in addrs.iter().zip(values) {
            let byte = u64::try_from(addr).ok().and_then(|a| a.checked_mul(size));
            match byte {
                Some(b) if b.saturating_add(size) <= cap => self.mem.write_loc(
                    crate::store::Loc::Local {
                        core,
                        byte: b as usize,
                    },
                    elem,
                    x,
                ),
                _ => {
                    return err(format!(
                        "scratchpad element {addr} of core {core} is beyond its capacity of {cap} bytes"
                    ))
                }
            }
        }
        Ok(())
    }

    /// A simulator that computes time but no numbers: tensors and DRAM buffers carry their
    /// shapes and element types only, while index arithmetic, control flow and every
    /// timing task are exactly those of a full run, so the schedule is the same.
    ///
    /// Where a value the program needs would come from tensor data, the run either
    /// assumes one and says so in [`Simulator::assumptions`] (the indices of an indirect
    /// access tile), or stops with an error naming both ops (a `tensor.extract` whose
    /// result becomes a loop bound, a condition, an address or a size). The DRAM element
    /// limit does not apply, as nothing is stored.
    pub fn new_timing_only(machine: &'m Machine, limits: ExecLimits) -> Self {
        Simulator::in_domain(machine, limits, &ShapesOnly)
    }

    /// Whether this simulator computes no numbers (see [`Simulator::new_timing_only`]).
    pub fn is_timing_only(&self) -> bool {
        !self.domain.computes_numbers()
    }

    /// What timing-only mode assumed in place of values it did not compute, one line per
    /// distinct assumption naming the op and its line (`line 18: ...`), or the lines of
    /// every op that made it when several did, as a model's repeated layers do
    /// (`lines 31, 68, 105, 142, 179 and 27 more (32 ops): ...`); empty for a full run.
    pub fn assumptions(&self) -> Vec<String> {
        self.assumptions
            .iter()
            .map(|(rest, lines)| assumption_line(rest, lines))
            .collect()
    }

    pub(crate) fn assume(&mut self, rop: &ROp<'_>, what: &str) {
        self.assume_at(rop.line, &format!("'{}': {what}", rop.op.kind.name()));
    }

    /// Notes an assumption made at `line` (once per line and text), for the launch
    /// running too so a replay makes it again at its own line.
    fn assume_at(&mut self, line: u32, rest: &str) {
        match self.assumptions.iter_mut().find(|(r, _)| r == rest) {
            Some((_, lines)) => {
                if let Err(at) = lines.binary_search(&line) {
                    lines.insert(at, line);
                }
            }
            None => self.assumptions.push((rest.to_string(), vec![line])),
        }
        if let Some(log) = self.launch_log.last_mut() {
            if !log.assumptions.iter().any(|(l, r)| *l == line && r == rest) {
                log.assumptions.push((line, rest.to_string()));
            }
        }
    }

    /// Repeats launch number `earlier` (0-based, in launch order) as a launch of `func`
    /// without interpreting it again: its steps, assumptions and scratchpad peak count
    /// once more, and the launch table ([`Simulator::launch_plan`]) names the launch it
    /// repeats, its source lines moved by `line_shift` and its closing barrier named after
    /// `func`. Its tasks and arithmetic are not copied: the schedule places the earlier
    /// launch's events again.
    ///
    /// The caller vouches that interpreting `func` here would record exactly that: the
    /// two functions are the same program up to names and position in the text, and the
    /// arguments differ at most in the base addresses of equally long buffers (tasks name
    /// ring stops, bytes and cycles, never addresses). A timing-only run of repeated
    /// kernels, as in stacked transformer layers, then interprets each kernel once.
    pub fn replay_launch(
        &mut self,
        earlier: usize,
        func: &str,
        line_shift: i64,
    ) -> Result<(), SimError> {
        let Some(log) = self.launch_log.get(earlier) else {
            return err(format!(
                "no launch {earlier} to replay ({} launches so far)",
                self.launch_log.len()
            ));
        };
        let (peak, returned, has_barrier, log_steps, masked, assumptions) = (
            log.peak,
            log.returned.clone(),
            log.has_barrier,
            log.steps,
            log.masked_points,
            log.assumptions.clone(),
        );
        let steps = self.steps.saturating_add(log_steps);
        self.replayed_steps = self.replayed_steps.saturating_add(log_steps);
        // The tasks are not copied: the launch table names the launch it repeats (see
        // `launch_plan`), and the schedule places that launch's events once more.
        self.launch_log.push(LaunchLog {
            peak,
            returned: returned.clone(),
            has_barrier,
            steps: log_steps,
            masked_points: masked,
            tasks: self.next_task_id()..self.next_task_id(),
            work: self.work.len()..self.work.len(),
            repeat: Some((earlier, line_shift, format!("end of @{func}"))),
            ..LaunchLog::default()
        });
        if let Some(s) = &mut self.scheduler {
            let barrier = has_barrier.then(|| format!("end of @{func}"));
            s.repeat(earlier, line_shift, barrier.as_deref())
                .map_err(|e| SimError {
                    message: format!("timing: {e}"),
                    core: None,
                    op: None,
                })?;
        }
        self.launch_peaks.push(peak);
        let shift = |line: u32| -> u32 {
            if line == 0 {
                0
            } else {
                u32::try_from(i64::from(line) + line_shift).unwrap_or(0)
            }
        };
        for (line, rest) in &assumptions {
            self.assume_at(shift(*line), rest);
        }
        let before = self.steps;
        self.steps = steps;
        self.masked_points = self.masked_points.saturating_add(masked);
        self.returned = returned;
        if let Some((f, every)) = &mut self.progress {
            if steps / *every > before / *every {
                let total = if self.progress_total > 0 {
                    self.progress_total
                } else {
                    self.limits.max_steps
                };
                f(steps / *every * *every, total);
            }
        }
        Ok(())
    }

    /// The run's launches as the schedule takes them: each interpreted launch's recorded
    /// tasks, or the launch a replayed one repeats. Tasks recorded with no launch at all
    /// make one launch. Launches whose tasks do not cover the task list one after another
    /// (a launch that failed and was not dropped, tasks recorded between launches) are an
    /// error: scheduling them as one launch would drop the replays' events.
    pub fn launch_plan(&self) -> Result<Vec<crate::timing::LaunchPlan>, SimError> {
        use crate::timing::LaunchPlan;
        if self.scheduler.is_some() || self.task_base > 0 {
            return crate::value::err(
                "the launches were scheduled as they ended (Simulator::schedule_each_launch): take the schedule instead",
            );
        }
        if self.launch_log.is_empty() {
            return Ok(vec![LaunchPlan::Run {
                tasks: 0..self.tasks.len(),
            }]);
        }
        let mut next = 0;
        let mut plan = Vec::with_capacity(self.launch_log.len());
        for (i, log) in self.launch_log.iter().enumerate() {
            match &log.repeat {
                Some((of, line_shift, op)) => plan.push(LaunchPlan::Repeat {
                    of: *of,
                    line_shift: *line_shift,
                    barrier_op: log.has_barrier.then(|| op.clone()),
                }),
                None => {
                    if log.tasks.start != next {
                        return crate::value::err(format!(
                            "launch {i} recorded tasks {}..{}, but the launches before it end at task {next}",
                            log.tasks.start, log.tasks.end
                        ));
                    }
                    next = log.tasks.end;
                    plan.push(LaunchPlan::Run {
                        tasks: log.tasks.clone(),
                    });
                }
            }
        }
        if next != self.tasks.len() {
            return crate::value::err(format!(
                "tasks {next}..{} were recorded after the last launch's",
                self.tasks.len()
            ));
        }
        Ok(plan)
    }

    /// Calls `f(steps, total)` every `every` operations, where `total` is the estimate
    /// given to [`Simulator::set_progress_total`] or else the step limit.
    pub fn set_progress(&mut self, f: ProgressFn<'m>, every: u64) {
        self.progress = Some((f, every.max(1)));
    }

    /// Sets the total that progress reports count towards (for example the sum of
    /// [`crate::estimate_steps`] over the launches to come).
    pub fn set_progress_total(&mut self, total: u64) {
        self.progress_total = total;
    }

    /// Places a buffer in DRAM and returns its base address (in elements). In
    /// timing-only mode only its length is kept.
    pub fn alloc(&mut self, name: &str, elem: ScalarType, data: Vec<f32>) -> Result<i64, SimError> {
        let len = data.len();
        let data = self.domain.buffer(elem, data);
        self.place(name, elem, len, data)
    }

    /// Places a zero-filled buffer of `len` elements in DRAM (no contents at all in
    /// timing-only mode) and returns its base address.
    pub fn reserve(&mut self, name: &str, elem: ScalarType, len: usize) -> Result<i64, SimError> {
        // Checked before the zeros are built, not after.
        self.check_dram(name, len)?;
        let data = self.domain.filled(len, 0.0);
        self.place(name, elem, len, data)
    }

    fn place(
        &mut self,
        name: &str,
        elem: ScalarType,
        len: usize,
        data: Vec<f32>,
    ) -> Result<i64, SimError> {
        if !data.is_empty() {
            self.check_dram(name, data.len())?;
        }
        if self.mem.dram.iter().any(|b| b.name == name) {
            return err(format!("DRAM buffer '{name}' is allocated twice"));
        }
        // Bases are element addresses on 128-byte boundaries; buffers never overlap.
        let per_line = (128 / elem.size_bytes().max(1)) as i64;
        let base = (self.next_base + per_line - 1) / per_line * per_line;
        let len_i = i64::try_from(len).map_err(|_| SimError {
            message: format!("DRAM buffer '{name}' of {len} elements is too large"),
            core: None,
            op: None,
        })?;
        self.next_base = base
            .checked_add(len_i.max(1) + per_line)
            .ok_or_else(|| SimError {
                message: "DRAM addresses overflow".into(),
                core: None,
                op: None,
            })?;
        self.mem.push_dram(DramBuffer {
            name: name.to_string(),
            base,
            elem,
            len,
            data,
        });
        Ok(base)
    }

    /// Whether `len` more elements of stored DRAM data stay within `max_dram_elements`
    /// (see docs/limits.md). Timing-only runs store nothing, so no limit applies.
    fn check_dram(&self, name: &str, len: usize) -> Result<(), SimError> {
        if !self.domain.computes_numbers() {
            return Ok(());
        }
        let held: usize = self.mem.dram.iter().map(|b| b.data.len()).sum();
        let total = held.saturating_add(len);
        if total > self.limits.max_dram_elements {
            return err(format!(
                "DRAM buffer '{name}' of {len} elements would bring DRAM to {total} elements, more than the limit of {} (max_dram_elements, see docs/limits.md)",
                self.limits.max_dram_elements
            ));
        }
        Ok(())
    }

    /// A DRAM buffer by name.
    pub fn buffer(&self, name: &str) -> Option<&DramBuffer> {
        self.mem.dram.iter().find(|b| b.name == name)
    }

    /// All DRAM buffers.
    pub fn buffers(&self) -> &[DramBuffer] {
        &self.mem.dram
    }

    /// Moves the contents of the DRAM buffer `name` out, leaving it empty: for handing
    /// results over after a run without copying them.
    pub fn take_buffer_data(&mut self, name: &str) -> Option<Vec<f32>> {
        self.mem
            .dram
            .iter_mut()
            .find(|b| b.name == name)
            .map(|b| std::mem::take(&mut b.data))
    }

    /// The timing tasks recorded so far (those of the launch running, when launches are
    /// scheduled as they end).
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// The id the next recorded task gets.
    pub(crate) fn next_task_id(&self) -> TaskId {
        self.task_base + self.tasks.len()
    }

    /// Schedules each launch as soon as it ends, then lets its tasks go, so a run holds
    /// the tasks of one launch at a time and the events of all: what a large model's
    /// timing-only run needs to fit in memory. Launches wait for the one before them, so
    /// the schedule ([`Simulator::take_schedule`]) is exactly the one
    /// [`crate::timing::schedule_launches`] gives for [`Simulator::launch_plan`]. Takes
    /// effect from the next launch on; an error if tasks were recorded already.
    pub fn schedule_each_launch(&mut self) -> Result<(), SimError> {
        if !self.tasks.is_empty() || self.task_base > 0 || !self.launch_log.is_empty() {
            return err("launches can be scheduled as they end only from the start of a run");
        }
        let defaults = Limits::default();
        // Each launch's own scheduling is bounded by its size; all together, by the tasks
        // the byte limit admits, each taking at most three steps.
        let scheduler = LaunchScheduler::new(self.machine, usize::MAX, defaults.max_rate_samples)
            .map_err(|e| SimError {
            message: format!("timing: {e}"),
            core: None,
            op: None,
        })?;
        self.scheduler = Some(scheduler);
        Ok(())
    }

    /// The schedule of the launches run so far, when they were scheduled as they ended
    /// ([`Simulator::schedule_each_launch`]); `None` otherwise. Scheduling stops there.
    pub fn take_schedule(&mut self) -> Option<Schedule> {
        self.scheduler.take().map(LaunchScheduler::finish)
    }

    /// Schedules the tasks of the launch that just ended and lets them go (when launches
    /// are scheduled as they end): they no longer count against
    /// [`ExecLimits::max_task_bytes`], their events do.
    pub(crate) fn schedule_ended_launch(&mut self) -> Result<(), SimError> {
        let Some(s) = &mut self.scheduler else {
            return Ok(());
        };
        let tasks = std::mem::take(&mut self.tasks);
        s.run(
            &tasks,
            self.task_base,
            &Limits::sized_for(&tasks),
            &mut |_, _| {},
        )
        .map_err(|e| SimError {
            message: format!("timing: {e}"),
            core: None,
            op: None,
        })?;
        let event = std::mem::size_of::<crate::timing::Event>() as u64;
        let records: u64 = tasks
            .iter()
            .map(|t| crate::timing::task_footprint(t) - event)
            .sum();
        self.task_record_bytes = self.task_record_bytes.saturating_sub(records);
        self.task_base += tasks.len();
        // The next launch records into the same storage: a large launch's list is not
        // given back to the system only to be asked for (and its pages cleared) again.
        let mut tasks = tasks;
        tasks.clear();
        self.tasks = tasks;
        Ok(())
    }

    /// Peak bytes of tensor values live at once on any one core, per launch in launch
    /// order: what `ktir::working_set` predicts for the launched function.
    pub fn launch_peak_bytes(&self) -> &[u64] {
        &self.launch_peaks
    }

    /// The arithmetic of the compute tasks recorded so far, by task id (tasks that do no
    /// arithmetic are left out).
    pub fn work_counts(&self) -> &[(TaskId, WorkCount)] {
        &self.work
    }

    /// Notes the arithmetic `task` does (nothing for a task that was not recorded).
    pub(crate) fn count_work(&mut self, task: TaskId, work: WorkCount) {
        if task != NO_TASK && work != WorkCount::default() {
            self.work.push((task, work));
        }
    }

    /// Operations executed so far, each replayed launch counted as its first run executed.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// What each core's `func.return` gave in the last launch (index = core).
    pub fn returned(&self) -> &[Vec<KernelValue>] {
        &self.returned
    }

    pub(crate) fn arg_value(
        &self,
        a: &KernelValue,
        t: &Type,
        name: &str,
    ) -> Result<RtValue, SimError> {
        Ok(match (a, t) {
            (KernelValue::Int(i), Type::Scalar(s)) if s.is_float() => {
                RtValue::Float(round_to(*s, *i as f32) as f64)
            }
            (KernelValue::Int(i), _) => RtValue::Index(*i),
            (KernelValue::Float(x), Type::Scalar(s)) if !s.is_float() => RtValue::Index(*x as i64),
            (KernelValue::Float(x), _) => RtValue::Float(*x),
            (KernelValue::Tensor { shape, data }, Type::Tensor { elem, shape: ts }) => {
                let n: usize = shape.iter().product();
                let fits = ts.len() == shape.len()
                    && ts.iter().zip(shape).all(|(d, s)| match d {
                        Dim::Static(x) => x == s,
                        Dim::Dynamic => true,
                    });
                let held = self.domain.tensor_arg(*elem, data, n);
                let (Some(held), true) = (held, fits && n <= self.limits.max_tensor_elements)
                else {
                    return err(format!(
                        "argument '%{name}' is a tensor of shape {shape:?} with {} elements, which does not fit its type",
                        data.len()
                    ));
                };
                RtValue::Tensor(Rc::new(TensorVal {
                    shape: shape.clone(),
                    elem: *elem,
                    data: held,
                    ready: None,
                    charged: true,
                }))
            }
            (KernelValue::Tensor { .. }, _) => {
                return err(format!("argument '%{name}' is not a tensor"))
            }
            (KernelValue::Unknown, _) => {
                return err(format!(
                    "argument '%{name}' has no value (a scalar a timing-only run did not compute)"
                ))
            }
        })
    }

    /// Marks where the tasks of the launch about to be interpreted begin, for the
    /// scheduler's share of [`ExecLimits::max_task_bytes`].
    pub(crate) fn begin_launch_tasks(&mut self) {
        self.launch_first_task = self.next_task_id();
    }

    /// Records `task` unless the tasks would then take more than
    /// [`ExecLimits::max_task_bytes`]: what every task keeps, plus the scheduler's state
    /// for the largest launch (launches are scheduled one at a time).
    pub(crate) fn push_task(&mut self, mut task: Task) -> Result<TaskId, SimError> {
        // The task as it will be kept, so its dependencies count as they will be held.
        if let Some(b) = self.barrier {
            if !task.deps.contains(&b) {
                task.deps.push(b);
            }
        }
        let id = self.next_task_id();
        task.deps.normalize(id);
        let record = self
            .task_record_bytes
            .saturating_add(crate::timing::task_footprint(&task));
        let launch_tasks = (id + 1).saturating_sub(self.launch_first_task) as u64;
        let largest = self.largest_launch_tasks.max(launch_tasks);
        let bytes =
            record.saturating_add(largest.saturating_mul(crate::timing::SCHEDULER_BYTES_PER_TASK));
        if bytes > self.limits.max_task_bytes {
            return err(format!(
                "the run's timing tasks would take {bytes} bytes ({} tasks), over the limit of {} bytes (ExecLimits::max_task_bytes) by {} bytes; shrink the problem or raise the limit",
                id + 1,
                self.limits.max_task_bytes,
                bytes - self.limits.max_task_bytes
            ));
        }
        self.task_record_bytes = record;
        self.largest_launch_tasks = largest;
        self.tasks.push(task);
        Ok(id)
    }

    pub(crate) fn record(
        &mut self,
        ctx: &mut CoreCtx,
        unit: Unit,
        work: Work,
        deps: Vec<TaskId>,
        rop: &ROp<'_>,
    ) -> Result<TaskId, SimError> {
        if !ctx.record {
            return Ok(NO_TASK);
        }
        let id = self.push_task(Task {
            core: ctx.core,
            unit,
            work,
            deps: Deps::from(deps.as_slice()),
            op: rop.name.clone(),
            line: rop.line,
        })?;
        for d in &deps {
            ctx.last_tasks.remove(d);
        }
        ctx.last_tasks.insert(id);
        Ok(id)
    }

    /// A zero-cost task joining several; `None` when there is nothing to join.
    pub(crate) fn join(
        &mut self,
        ctx: &mut CoreCtx,
        deps: Vec<TaskId>,
        rop: &ROp<'_>,
    ) -> Result<Option<TaskId>, SimError> {
        let deps: Vec<TaskId> = deps.into_iter().filter(|d| *d != NO_TASK).collect();
        match deps.len() {
            0 => Ok(None),
            1 => Ok(Some(deps[0])),
            _ => Ok(Some(self.record(
                ctx,
                Unit::Sfp,
                Work::Compute { cycles: 0 },
                deps,
                rop,
            )?)),
        }
    }

    pub(crate) fn count_step(&mut self, rop: &ROp<'_>) -> Result<(), SimError> {
        self.steps += 1;
        if self.executed_steps() > self.limits.max_steps {
            return Err(self.at(rop, format!(
                "the run executed more than {} operations; stopping (raise the step limit if this is expected)",
                self.limits.max_steps
            )));
        }
        if let Some((f, every)) = &mut self.progress {
            if self.steps.is_multiple_of(*every) {
                let total = if self.progress_total > 0 {
                    self.progress_total
                } else {
                    self.limits.max_steps
                };
                f(self.steps, total);
            }
        }
        Ok(())
    }

    /// Whether `n` more steps stay within the step limit.
    pub(crate) fn has_steps_left(&self, n: u64) -> bool {
        self.executed_steps()
            .checked_add(n)
            .is_some_and(|s| s <= self.limits.max_steps)
    }

    /// Operations really executed: what the step limit bounds (replays execute none).
    fn executed_steps(&self) -> u64 {
        self.steps.saturating_sub(self.replayed_steps)
    }

    /// Counts `n` steps at once (ops run over whole tensors on behalf of every point),
    /// with a progress report when a reporting multiple is passed on the way.
    pub(crate) fn count_steps(&mut self, rop: &ROp<'_>, n: u64) -> Result<(), SimError> {
        if n == 0 {
            return Ok(());
        }
        let before = self.steps;
        self.steps = before.saturating_add(n - 1);
        let after = self.steps.saturating_add(1);
        if let Some((f, every)) = &mut self.progress {
            // The last step's own report is `count_step`'s.
            if after / *every > before / *every && !after.is_multiple_of(*every) {
                let total = if self.progress_total > 0 {
                    self.progress_total
                } else {
                    self.limits.max_steps
                };
                f(after / *every * *every, total);
            }
        }
        self.count_step(rop)
    }

    pub(crate) fn at(&self, rop: &ROp<'_>, message: String) -> SimError {
        SimError {
            message,
            core: None,
            op: Some((rop.op.kind.name().to_string(), rop.line)),
        }
    }

    pub(crate) fn get<'s>(
        &self,
        slots: &'s [Option<RtValue>],
        rop: &ROp<'_>,
        i: usize,
    ) -> Result<&'s RtValue, SimError> {
        rop.operands
            .get(i)
            .and_then(|s| slots.get(*s))
            .and_then(|v| v.as_ref())
            .ok_or_else(|| {
                self.at(
                    rop,
                    format!("operand {i} has no value (used after it was freed?)"),
                )
            })
    }

    pub(crate) fn index(
        &self,
        slots: &[Option<RtValue>],
        rop: &ROp<'_>,
        i: usize,
    ) -> Result<i64, SimError> {
        match self.get(slots, rop, i)? {
            RtValue::Index(v) => Ok(*v),
            RtValue::Unknown(line) => Err(self.unknown(rop, i, *line)),
            _ => Err(self.at(rop, format!("operand {i} is not an integer value"))),
        }
    }

    /// The error for a use of a value timing-only mode did not compute.
    pub(crate) fn unknown(&self, rop: &ROp<'_>, i: usize, from_line: u32) -> SimError {
        self.at(
            rop,
            format!(
                "operand {i} comes from tensor data (the 'tensor.extract' on line {from_line}), which a timing-only run does not compute, but its value is needed here (a loop bound, condition, address, size or index); run with numbers to simulate this program"
            ),
        )
    }

    pub(crate) fn tensor(
        &self,
        slots: &[Option<RtValue>],
        rop: &ROp<'_>,
        i: usize,
    ) -> Result<Rc<TensorVal>, SimError> {
        match self.get(slots, rop, i)? {
            RtValue::Tensor(t) => Ok(t.clone()),
            _ => Err(self.at(rop, format!("operand {i} is not a tensor"))),
        }
    }

    pub(crate) fn new_tensor(
        &mut self,
        ctx: &mut CoreCtx,
        rop: &ROp<'_>,
        shape: Vec<usize>,
        elem: ScalarType,
        data: Vec<f32>,
        ready: Option<TaskId>,
    ) -> Result<RtValue, SimError> {
        let t = TensorVal {
            shape,
            elem,
            data,
            ready: ready.filter(|r| *r != NO_TASK),
            charged: true,
        };
        if ctx.record {
            ctx.live_bytes += tensor_bytes(&t);
            let cap = self.machine.scratchpad_capacity_bytes();
            if ctx.live_bytes > cap {
                return Err(self.at(
                    rop,
                    format!(
                        "scratchpad overflow on core {}: live tensors need {} bytes after this {} of {} bytes, but the plannable capacity is {} bytes",
                        ctx.core,
                        ctx.live_bytes,
                        rop.op.kind.name(),
                        tensor_bytes(&t),
                        cap
                    ),
                ));
            }
            if let Some(peak) = self.peak_tensor_bytes.get_mut(ctx.core) {
                *peak = (*peak).max(ctx.live_bytes);
            }
            if let Some(peak) = self.launch_peaks.last_mut() {
                *peak = (*peak).max(ctx.live_bytes);
            }
        }
        Ok(RtValue::Tensor(Rc::new(t)))
    }

    /// `numel(shape)` copies of `x`, as the domain holds them.
    pub(crate) fn filled(&self, shape: &[usize], x: f32) -> Vec<f32> {
        self.domain.filled(shape.iter().product(), x)
    }

    pub(crate) fn check_size(&self, rop: &ROp<'_>, shape: &[usize]) -> Result<usize, SimError> {
        let n = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .filter(|n| *n <= self.limits.max_tensor_elements);
        n.ok_or_else(|| {
            self.at(
                rop,
                format!(
                    "tensor of shape {shape:?} exceeds the limit of {} elements",
                    self.limits.max_tensor_elements
                ),
            )
        })
    }

    /// The static shape and element type of result `i`.
    pub(crate) fn result_shape_of(
        &self,
        rop: &ROp<'_>,
        i: usize,
    ) -> Result<(Vec<usize>, ScalarType), SimError> {
        let t = rop
            .op
            .result_types
            .get(i)
            .ok_or_else(|| self.at(rop, "has no result type".into()))?;
        let shape = t
            .static_shape()
            .ok_or_else(|| self.at(rop, "the result shape is dynamic here".into()))?;
        let elem = t.elem().unwrap_or(ScalarType::F32);
        self.check_size(rop, &shape)?;
        Ok((shape, elem))
    }

    pub(crate) fn result_shape(&self, rop: &ROp<'_>) -> Result<(Vec<usize>, ScalarType), SimError> {
        self.result_shape_of(rop, 0)
    }

    /// The result shape with `?` dimensions taken, in order, from the index operands
    /// starting at `first`.
    pub(crate) fn dynamic_result_shape(
        &self,
        slots: &[Option<RtValue>],
        rop: &ROp<'_>,
        first: usize,
    ) -> Result<(Vec<usize>, ScalarType), SimError> {
        let t = rop
            .op
            .result_types
            .first()
            .ok_or_else(|| self.at(rop, "has no result type".into()))?;
        let mut next = first;
        let mut shape = Vec::new();
        for d in t.shape() {
            shape.push(match d {
                Dim::Static(n) => *n,
                Dim::Dynamic => {
                    let v = self.index(slots, rop, next)?;
                    next += 1;
                    usize::try_from(v)
                        .map_err(|_| self.at(rop, format!("negative dynamic size {v}")))?
                }
            });
        }
        self.check_size(rop, &shape)?;
        Ok((shape, t.elem().unwrap_or(ScalarType::F32)))
    }

    pub(crate) fn set(&self, slots: &mut [Option<RtValue>], rop: &ROp<'_>, i: usize, v: RtValue) {
        set_slot(slots, rop.results.get(i), v);
    }

    /// Records an SFP task over the ready times of `inputs`.
    pub(crate) fn sfp(
        &mut self,
        ctx: &mut CoreCtx,
        rop: &ROp<'_>,
        elements: usize,
        transcendental: bool,
        inputs: &[&TensorVal],
    ) -> Result<TaskId, SimError> {
        let cycles = self.machine.sfp_cycles(elements as u64, transcendental);
        let deps = inputs.iter().filter_map(|t| t.ready).collect();
        let task = self.record(ctx, Unit::Sfp, Work::Compute { cycles }, deps, rop)?;
        self.count_work(
            task,
            WorkCount {
                macs: 0,
                elementwise: elements as u64,
            },
        );
        Ok(task)
    }
}

/// Most op lines an assumption names before it counts the rest.
const ASSUMPTION_LINES_SHOWN: usize = 5;

/// One assumption as [`Simulator::assumptions`] states it: `rest` after the op line, or
/// after the first few of the lines and a count of all when several ops made it.
fn assumption_line(rest: &str, lines: &[u32]) -> String {
    let list = |ls: &[u32]| ls.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    match lines {
        [] => rest.to_string(),
        [one] => format!("line {one}: {rest}"),
        [first @ .., last] if lines.len() <= ASSUMPTION_LINES_SHOWN => {
            format!("lines {} and {last}: {rest}", list(first))
        }
        _ => format!(
            "lines {} and {} more ({} ops): {rest}",
            list(&lines[..ASSUMPTION_LINES_SHOWN]),
            lines.len() - ASSUMPTION_LINES_SHOWN,
            lines.len()
        ),
    }
}

#[cfg(test)]
mod assumption_tests {
    use super::assumption_line;

    #[test]
    fn one_op_names_its_line() {
        assert_eq!(assumption_line("x", &[18]), "line 18: x");
    }

    #[test]
    fn a_few_ops_name_every_line() {
        assert_eq!(assumption_line("x", &[3, 9, 12]), "lines 3, 9 and 12: x");
    }

    #[test]
    fn many_ops_name_the_first_lines_and_count_all() {
        let lines: Vec<u32> = (0..32).map(|k| 31 + 37 * k).collect();
        assert_eq!(
            assumption_line("x", &lines),
            "lines 31, 68, 105, 142, 179 and 27 more (32 ops): x"
        );
    }
}
