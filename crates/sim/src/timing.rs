//! Timing: scheduling a task DAG on a [`Machine`] with a fluid network model.
//!
//! The interpreter emits a list of [`Task`]s as it executes a KTIR program; this module turns
//! them into a [`Schedule`] of timed [`Event`]s. Compute on a tile is a fixed latency (from the
//! machine's cost functions); the detail is spent on memory and the ring.
//!
//! # Semantics
//! - `deps` must point to earlier tasks, so the list is already in a topological order.
//! - Each `(core, unit)` pair is a serial resource that issues its tasks in list order (in-order
//!   issue): a task starts when all its deps have finished *and* every earlier task of the same
//!   unit has finished. The units of one core (DMA, PT, SFP) run concurrently.
//! - A compute task takes exactly its `cycles`.
//! - A transfer (DMA unit only) goes through three phases: `dma_setup_cycles` of setup, then
//!   streaming of its bytes as a fluid flow, then a tail of `hops * ring_hop_latency_cycles`.
//!   Alone on an idle machine it therefore takes
//!   `setup + bytes / bottleneck_bandwidth + hops * hop_latency`. A transfer that crosses no
//!   link and does not touch DRAM (source and destination are the same stop) takes only the
//!   setup; a zero-byte transfer takes setup plus the hop latency.
//! - While streaming, a flow uses every link on its (shortest) route and, if `dram` is not
//!   `None`, the shared DRAM resource. Rates are assigned by max-min fairness (progressive
//!   filling) over the link capacities (`ring_bytes_per_cycle_per_direction` each) and the DRAM
//!   capacity, and recomputed whenever a flow starts or ends. This is work-conserving: a flow
//!   throttled at one link only takes its actual rate from the other links it crosses, and
//!   whatever it leaves is shared by the rest.
//! - DRAM capacity is `dram_peak_bytes_per_cycle * dram_mixed_efficiency` while at least one
//!   read and at least one write flow are streaming at the same time, and
//!   `dram_peak_bytes_per_cycle * dram_one_way_efficiency` otherwise. The efficiency switches
//!   at the same instants the rates are recomputed.
//! - Everything is deterministic: ties between simultaneous completions are broken by task id
//!   and insertion order, never by hash order.
//! - Work is bounded by [`Limits`]; exceeding a bound is an error, never a hang or a panic.

use crate::machine::{LinkId, Machine, MachineError};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::Arc;

/// Index of a task in the task list.
pub type TaskId = usize;

/// A serial execution unit of a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// The DMA engine: loads into and stores out of the core's scratchpad.
    Dma,
    /// The systolic array (matmul).
    Pt,
    /// The vector unit (elementwise, reductions).
    Sfp,
}

impl Unit {
    /// All units in lane order.
    pub const ALL: [Unit; 3] = [Unit::Dma, Unit::Pt, Unit::Sfp];

    /// Position in [`Unit::ALL`].
    pub fn index(self) -> usize {
        match self {
            Unit::Dma => 0,
            Unit::Pt => 1,
            Unit::Sfp => 2,
        }
    }

    /// Display name: `DMA`, `PT` or `SFP`.
    pub fn label(self) -> &'static str {
        match self {
            Unit::Dma => "DMA",
            Unit::Pt => "PT",
            Unit::Sfp => "SFP",
        }
    }
}

/// Whether a transfer reads or writes off-chip memory (and so uses DRAM bandwidth).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DramAccess {
    None,
    Read,
    Write,
}

/// What a task does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Work {
    /// Move `bytes` over the ring from `src_stop` to `dst_stop` (stop indices, see
    /// [`Machine::stops`]). For a DRAM load, `src_stop` is a memory stop and `dram` is `Read`.
    Transfer {
        src_stop: usize,
        dst_stop: usize,
        bytes: u64,
        dram: DramAccess,
    },
    /// Occupy the unit for a fixed number of cycles.
    Compute { cycles: u64 },
}

/// The name of the operation behind a task or event, e.g. `"ktdp.load"`: shared, so the
/// millions of tasks and events of a large run each hold a pointer, not a copy of the text.
/// Reads as a `&str`; serialises as a string.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpName(Arc<str>);

impl OpName {
    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for OpName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for OpName {
    fn from(s: &str) -> Self {
        OpName(Arc::from(s))
    }
}

impl From<String> for OpName {
    fn from(s: String) -> Self {
        OpName(Arc::from(s))
    }
}

impl PartialEq<str> for OpName {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for OpName {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl fmt::Debug for OpName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for OpName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for OpName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for OpName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(OpName::from)
    }
}

/// Dependencies kept in the task itself.
const INLINE_DEPS: usize = 3;

/// A task's dependencies: up to three (most tasks) held in the task itself, more on the
/// heap, so recording a task allocates nothing in the common case. Reads as a slice.
#[derive(Default, PartialEq, Eq)]
pub struct Deps(SmallVec<[TaskId; INLINE_DEPS]>);

impl Clone for Deps {
    /// A copy holding exactly as many bytes as the original once normalized (a list on the
    /// heap is as long as its contents), so a clone of a recorded task costs what the
    /// task-byte limit counted for it.
    fn clone(&self) -> Self {
        if self.0.spilled() {
            Deps(SmallVec::from_vec(self.0.to_vec()))
        } else {
            Deps(self.0.clone())
        }
    }
}

impl Deps {
    /// No dependencies.
    pub const fn new() -> Deps {
        Deps(SmallVec::new_const())
    }

    /// Adds `id` at the end.
    pub fn push(&mut self, id: TaskId) {
        self.0.push(id);
    }

    /// Keeps only the dependencies on tasks before `n`, sorted and each once: what the
    /// scheduler takes.
    pub fn normalize(&mut self, n: TaskId) {
        self.0.retain(|d| *d < n);
        self.0.sort_unstable();
        self.0.dedup();
        // Held for the whole run: no spare capacity (and back in the task when it fits).
        self.0.shrink_to_fit();
    }

    /// Heap bytes the list takes beyond the task's own record.
    pub fn heap_bytes(&self) -> usize {
        if self.0.spilled() {
            self.0.capacity() * std::mem::size_of::<TaskId>()
        } else {
            0
        }
    }
}

impl std::ops::Deref for Deps {
    type Target = [TaskId];
    fn deref(&self) -> &[TaskId] {
        &self.0
    }
}

impl fmt::Debug for Deps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a Deps {
    type Item = &'a TaskId;
    type IntoIter = std::slice::Iter<'a, TaskId>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl FromIterator<TaskId> for Deps {
    fn from_iter<I: IntoIterator<Item = TaskId>>(iter: I) -> Self {
        Deps(iter.into_iter().collect())
    }
}

impl From<Vec<TaskId>> for Deps {
    fn from(v: Vec<TaskId>) -> Self {
        if v.len() <= INLINE_DEPS {
            Deps::from(v.as_slice())
        } else {
            Deps(SmallVec::from_vec(v))
        }
    }
}

impl From<&[TaskId]> for Deps {
    fn from(v: &[TaskId]) -> Self {
        Deps(SmallVec::from_slice(v))
    }
}

impl Serialize for Deps {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Deps {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<TaskId>::deserialize(d).map(Deps::from)
    }
}

/// One unit of work on one core, with its dependencies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub core: usize,
    pub unit: Unit,
    pub work: Work,
    /// Tasks that must finish before this one starts; each must be an earlier task.
    pub deps: Deps,
    /// The operation that produced the task, e.g. `"ktdp.load"`.
    pub op: OpName,
    /// KTIR source line, 0 if none.
    pub line: u32,
}

/// Bounds on the work [`schedule`] will do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Maximum number of tasks.
    pub max_tasks: usize,
    /// Maximum total number of dependency edges.
    pub max_deps: usize,
    /// Maximum number of simulation steps (distinct event instants).
    pub max_steps: usize,
    /// Maximum number of link/DRAM rate samples kept for the trace; later ones are dropped
    /// and [`Schedule::rates_truncated`] is set.
    pub max_rate_samples: usize,
}

impl Limits {
    /// Limits that admit `tasks` (already bounded by the simulator's byte limit): the
    /// defaults, raised to the task list's own size where it is larger. Each task
    /// contributes at most a setup end, a stream end and a finish to the steps.
    pub fn sized_for(tasks: &[Task]) -> Limits {
        let d = Limits::default();
        let deps: usize = tasks.iter().map(|t| t.deps.len()).sum();
        Limits {
            max_tasks: d.max_tasks.max(tasks.len()),
            max_deps: d.max_deps.max(deps),
            max_steps: d
                .max_steps
                .max(tasks.len().saturating_mul(3).saturating_add(1)),
            max_rate_samples: d.max_rate_samples,
        }
    }
}

/// Bytes one recorded task keeps through a run: its record with the dependencies that do
/// not fit in it, and its [`Event`] in the schedule. Op names are shared ([`OpName`]), one
/// copy per operation of the program, so a task adds none. With
/// [`SCHEDULER_BYTES_PER_TASK`] for the launch being scheduled, what
/// `sim::ExecLimits::max_task_bytes` counts.
pub fn task_footprint(task: &Task) -> u64 {
    let bytes = std::mem::size_of::<Task>() + task.deps.heap_bytes() + std::mem::size_of::<Event>();
    bytes as u64
}

/// Bytes the scheduler holds per task of the launch it is scheduling (route, dependents,
/// queue entry, start and end times, the launch's events before they join the run's,
/// measured generously). Launches are scheduled one at a time, so only the largest
/// launch's tasks count them.
pub const SCHEDULER_BYTES_PER_TASK: u64 = 256;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_tasks: 1_000_000,
            max_deps: 10_000_000,
            max_steps: 10_000_000,
            max_rate_samples: 250_000,
        }
    }
}

/// The timed execution of one task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub task: TaskId,
    pub unit: Unit,
    pub core: usize,
    /// Cycle the task started (for transfers: including setup).
    pub start: f64,
    /// Cycle the task finished.
    pub end: f64,
    /// Bytes moved (0 for compute).
    pub bytes: u64,
    /// Ring stop a transfer starts at: stops are few (a machine has at most 1024 cores and
    /// 64 memory stops), and a large run keeps millions of events.
    pub src_stop: Option<u16>,
    /// Ring stop a transfer ends at.
    pub dst_stop: Option<u16>,
    /// Ring hops of a transfer (0 for compute; at most the machine's stops).
    pub hops: u16,
    pub dram: DramAccess,
    pub op: OpName,
    pub line: u32,
}

impl Event {
    /// The event as a borrowed view, timing its own task (a stored event as it stands).
    pub fn view(&self) -> EventRef<'_> {
        EventRef {
            source: self.task,
            task: self.task,
            unit: self.unit,
            core: self.core,
            start: self.start,
            end: self.end,
            bytes: self.bytes,
            src_stop: self.src_stop.map(usize::from),
            dst_stop: self.dst_stop.map(usize::from),
            hops: usize::from(self.hops),
            dram: self.dram,
            op: &self.op,
            line: self.line,
        }
    }
}

/// A ring stop index (or a hop count) as an [`Event`] keeps it: every machine has fewer
/// stops than fit (`schedule` checks each transfer's stops against the machine's).
fn stop16(stop: usize) -> Option<u16> {
    u16::try_from(stop).ok()
}

/// From `time` on, the total rate over `link` is `bytes_per_cycle`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkRate {
    pub time: f64,
    pub link: LinkId,
    pub bytes_per_cycle: f64,
}

/// From `time` on, DRAM serves these read and write rates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DramRate {
    pub time: f64,
    pub read_bytes_per_cycle: f64,
    pub write_bytes_per_cycle: f64,
}

/// The result of [`schedule`] and [`schedule_launches`].
///
/// A run that repeats kernels keeps one set of events per distinct launch: `events` holds
/// those, and `launches` says where each launch of the run sits in time and which stored
/// events it repeats. Read the run's events through [`Schedule::all_events`], which
/// materialises them one at a time in task order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schedule {
    /// The stored events: for a schedule of one task list ([`schedule`]), one per task
    /// indexed by [`TaskId`]; for a launch table, those of the interpreted launches, each
    /// timed from its launch's start and naming its recorded task.
    pub events: Vec<Event>,
    /// The launches in run order, covering the run's events one after another.
    pub launches: Vec<LaunchSpan>,
    /// Completion time of the last task (0 for an empty task list).
    pub total_cycles: f64,
    /// Bytes routed over each link, for every link in [`LinkId::index`] order.
    pub link_bytes: Vec<(LinkId, u64)>,
    pub dram_read_bytes: u64,
    pub dram_write_bytes: u64,
    /// Changes of the aggregate rate on each link, in time order.
    pub link_rates: Vec<LinkRate>,
    /// Changes of the DRAM read/write rates, in time order.
    pub dram_rates: Vec<DramRate>,
    /// True if rate samples were dropped because of [`Limits::max_rate_samples`].
    pub rates_truncated: bool,
    /// Simulation steps used.
    pub steps: usize,
}

/// One launch of a [`Schedule`]: where its events are stored and where it sits in time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchSpan {
    /// Id of its first event in the run (the run's events are numbered launch after
    /// launch, as the tasks of interpreting every launch would be).
    pub first_task: TaskId,
    /// Its events in [`Schedule::events`] (shared with every launch that repeats it).
    pub events: std::ops::Range<usize>,
    /// Cycle it starts at: where the launch before it ended.
    pub start: f64,
    /// Cycle its last task ends.
    pub end: f64,
    /// How far its source lines are from the stored events' (a repeat of a kernel placed
    /// elsewhere in the text).
    pub line_shift: i64,
    /// The op name of its closing barrier (its last event) when not the stored one.
    pub barrier_op: Option<OpName>,
}

/// One event of a run as [`Schedule::event_refs`] gives it: an [`Event`] whose op name is
/// borrowed, with the recorded task it times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EventRef<'a> {
    /// The recorded task it times (the interpreted launch's, for a repeat).
    pub source: TaskId,
    pub task: TaskId,
    pub unit: Unit,
    pub core: usize,
    pub start: f64,
    pub end: f64,
    pub bytes: u64,
    pub src_stop: Option<usize>,
    pub dst_stop: Option<usize>,
    pub hops: usize,
    pub dram: DramAccess,
    pub op: &'a OpName,
    pub line: u32,
}

impl EventRef<'_> {
    /// The owned event.
    pub fn to_event(&self) -> Event {
        Event {
            task: self.task,
            unit: self.unit,
            core: self.core,
            start: self.start,
            end: self.end,
            bytes: self.bytes,
            src_stop: self.src_stop.and_then(stop16),
            dst_stop: self.dst_stop.and_then(stop16),
            hops: stop16(self.hops).unwrap_or(u16::MAX),
            dram: self.dram,
            op: self.op.clone(),
            line: self.line,
        }
    }
}

impl LaunchSpan {
    /// A time of its stored events (counted from the launch's start) as a time of the run,
    /// exactly as [`Schedule::event_refs`] places it.
    pub fn place(&self, time: f64) -> f64 {
        self.start + time
    }

    /// A source line of its stored events as this launch's line.
    pub fn line(&self, stored: u32) -> u32 {
        shift_line(stored, self.line_shift)
    }

    /// The most, in cycles, by which the duration of one of its stored events can differ
    /// from the same event's duration once placed at this launch's start (both ends
    /// rounded by the addition): 0 for a launch at cycle 0, where placing changes nothing.
    /// Reports that compute a figure once per distinct launch and reuse it for repeats
    /// check their thresholds against this, so they give exactly what a walk over every
    /// placed event gives. Not finite (so every such check fails) for an absurd schedule.
    pub fn placement_error(&self) -> f64 {
        if self.start == 0.0 {
            return 0.0;
        }
        // Every placed time is at most `end`; a rounding moves a value by at most half
        // the spacing of doubles there, a generous four spacings cover both ends and the
        // subtraction.
        let top = 2.0 * self.end.abs().max(self.start.abs());
        let spacing = f64::from_bits(top.to_bits().saturating_add(1)) - top;
        4.0 * spacing
    }

    /// Its stored event number `i` as the run's event: numbered, shifted in time and lines.
    fn view<'a>(&'a self, i: usize, stored: &'a Event) -> EventRef<'a> {
        let last = i + 1 == self.events.len();
        EventRef {
            source: stored.task,
            task: self.first_task + i,
            unit: stored.unit,
            core: stored.core,
            start: self.start + stored.start,
            end: self.start + stored.end,
            bytes: stored.bytes,
            src_stop: stored.src_stop.map(usize::from),
            dst_stop: stored.dst_stop.map(usize::from),
            hops: usize::from(stored.hops),
            dram: stored.dram,
            op: match (&self.barrier_op, last) {
                (Some(op), true) => op,
                _ => &stored.op,
            },
            line: shift_line(stored.line, self.line_shift),
        }
    }
}

/// A source line moved by `shift`; line 0 (no line) stays 0, as does a line that would
/// leave the range.
fn shift_line(line: u32, shift: i64) -> u32 {
    if line == 0 || shift == 0 {
        line
    } else {
        u32::try_from(i64::from(line) + shift).unwrap_or(0)
    }
}

/// The launch table of events scheduled as one launch from cycle 0, and its end.
fn one_launch(events: &[Event]) -> (Vec<LaunchSpan>, f64) {
    let total_cycles = events.iter().map(|e| e.end).fold(0.0, f64::max);
    let launches = vec![LaunchSpan {
        first_task: 0,
        events: 0..events.len(),
        start: 0.0,
        end: total_cycles,
        line_shift: 0,
        barrier_op: None,
    }];
    (launches, total_cycles)
}

/// The traffic figures of a schedule, as the scheduler gathered them.
#[derive(Default)]
struct Traffic {
    /// Bytes per link, in [`LinkId::index`] order.
    link_bytes: Vec<u64>,
    dram_read_bytes: u64,
    dram_write_bytes: u64,
    link_rates: Vec<LinkRate>,
    dram_rates: Vec<DramRate>,
    rates_truncated: bool,
}

impl Schedule {
    /// The one place a scheduled run becomes a [`Schedule`]: links named by their index.
    fn new(
        events: Vec<Event>,
        launches: Vec<LaunchSpan>,
        total_cycles: f64,
        t: Traffic,
        steps: usize,
    ) -> Schedule {
        Schedule {
            events,
            launches,
            total_cycles,
            link_bytes: t
                .link_bytes
                .into_iter()
                .enumerate()
                .map(|(i, b)| (LinkId::from_index(i), b))
                .collect(),
            dram_read_bytes: t.dram_read_bytes,
            dram_write_bytes: t.dram_write_bytes,
            link_rates: t.link_rates,
            dram_rates: t.dram_rates,
            rates_truncated: t.rates_truncated,
            steps,
        }
    }

    /// A schedule of these events as one launch from cycle 0, with no traffic figures: for
    /// reports computed from hand-made events.
    pub fn of_events(events: Vec<Event>) -> Schedule {
        let (launches, total_cycles) = one_launch(&events);
        Schedule::new(events, launches, total_cycles, Traffic::default(), 0)
    }

    /// The number of events of the run (one per task of every launch).
    pub fn event_count(&self) -> usize {
        self.launches.iter().map(|l| l.events.len()).sum()
    }

    /// The run's events in task order, materialised one at a time.
    pub fn all_events(&self) -> impl Iterator<Item = Event> + '_ {
        self.event_refs().map(|e| e.to_event())
    }

    /// The run's events in task order, each with the recorded task it times (the
    /// interpreted launch's task, for a launch that repeats it).
    pub fn events_with_source(&self) -> impl Iterator<Item = (TaskId, Event)> + '_ {
        self.event_refs().map(|e| (e.source, e.to_event()))
    }

    /// The run's events in task order as borrowed views: times and lines as
    /// [`Schedule::all_events`] gives them, the op name borrowed from the stored event, so
    /// reports over millions of events allocate nothing per event.
    pub fn event_refs(&self) -> impl Iterator<Item = EventRef<'_>> + '_ {
        self.launches
            .iter()
            .flat_map(move |l| self.launch_event_refs(l))
    }

    /// The stored events `launch` places: its own for an interpreted launch, the repeated
    /// launch's for a repeat. Reports computed once per distinct launch key on
    /// `launch.events`.
    pub fn stored_events(&self, launch: &LaunchSpan) -> &[Event] {
        self.events.get(launch.events.clone()).unwrap_or(&[])
    }

    /// The events of one launch of the run, as [`Schedule::event_refs`] gives them.
    pub fn launch_event_refs<'a>(
        &'a self,
        launch: &'a LaunchSpan,
    ) -> impl Iterator<Item = EventRef<'a>> + 'a {
        self.stored_events(launch)
            .iter()
            .enumerate()
            .map(move |(i, e)| launch.view(i, e))
    }

    /// The run's events from number `from` on, at most `count` of them (a window for a
    /// timeline), without materialising those before.
    pub fn events_window(&self, from: usize, count: usize) -> Vec<Event> {
        let mut out = Vec::new();
        for l in &self.launches {
            let n = l.events.len();
            let first = l.first_task;
            if first + n <= from {
                continue;
            }
            if out.len() >= count {
                break;
            }
            let stored = self.events.get(l.events.clone()).unwrap_or(&[]);
            for (i, e) in stored.iter().enumerate().skip(from.saturating_sub(first)) {
                if out.len() >= count {
                    break;
                }
                out.push(l.view(i, e).to_event());
            }
        }
        out
    }
}

/// One launch handed to [`schedule_launches`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchPlan {
    /// Schedule these recorded tasks (a launch that was interpreted).
    Run {
        /// Its tasks in the task list.
        tasks: std::ops::Range<TaskId>,
    },
    /// Repeat launch number `of` (an earlier entry of the plan): the same tasks, so the same
    /// events from this launch's start.
    Repeat {
        /// The launch it repeats.
        of: usize,
        /// How far its source lines are from the repeated launch's.
        line_shift: i64,
        /// The op name of its closing barrier, when it has one.
        barrier_op: Option<String>,
    },
}

/// Why a task list could not be scheduled.
#[derive(Debug, Clone, PartialEq)]
pub enum TimingError {
    InvalidMachine(MachineError),
    TooManyTasks {
        count: usize,
        limit: usize,
    },
    TooManyDeps {
        limit: usize,
    },
    BadDependency {
        task: TaskId,
        dep: TaskId,
    },
    BadCore {
        task: TaskId,
        core: usize,
        cores: usize,
    },
    BadStop {
        task: TaskId,
        stop: usize,
        stops: usize,
    },
    TransferOnComputeUnit {
        task: TaskId,
        unit: Unit,
    },
    TooManySteps {
        limit: usize,
    },
    /// A launch of a [`LaunchPlan`] names tasks outside the list, or repeats a launch
    /// that is not an earlier one.
    BadLaunch {
        launch: usize,
        of: usize,
    },
    /// Internal consistency failure (should not happen): no task can make progress.
    Stalled {
        finished: usize,
        total: usize,
    },
}

impl fmt::Display for TimingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimingError::InvalidMachine(e) => write!(f, "{e}"),
            TimingError::TooManyTasks { count, limit } => write!(
                f,
                "too many tasks to schedule: {count} (the limit is {limit})"
            ),
            TimingError::TooManyDeps { limit } => write!(
                f,
                "too many dependency edges to schedule (the limit is {limit})"
            ),
            TimingError::BadDependency { task, dep } => write!(
                f,
                "task {task} depends on task {dep}, but dependencies must be earlier tasks"
            ),
            TimingError::BadCore { task, core, cores } => write!(
                f,
                "task {task} runs on core {core}, but the machine has {cores} cores"
            ),
            TimingError::BadStop { task, stop, stops } => write!(
                f,
                "task {task} transfers via ring stop {stop}, but the ring has {stops} stops"
            ),
            TimingError::TransferOnComputeUnit { task, unit } => write!(
                f,
                "task {task} is a transfer on the {} unit; transfers run on the DMA unit",
                unit.label()
            ),
            TimingError::TooManySteps { limit } => write!(
                f,
                "timing simulation exceeded {limit} steps; the program is too large to time"
            ),
            TimingError::BadLaunch { launch, of } if launch == of => write!(
                f,
                "launch {launch} names tasks outside the recorded task list"
            ),
            TimingError::BadLaunch { launch, of } => write!(
                f,
                "launch {launch} repeats launch {of}, which is not an earlier launch"
            ),
            TimingError::Stalled { finished, total } => write!(
                f,
                "internal error: timing simulation stalled with {finished} of {total} tasks finished"
            ),
        }
    }
}

impl std::error::Error for TimingError {}

/// A time with a total order, for the timer heap.
#[derive(Debug, Clone, Copy)]
struct Timer {
    time: f64,
    seq: u64,
    task: TaskId,
    phase: Phase,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// A compute task or the latency tail of a transfer finishes.
    Finish,
    /// The setup of a transfer finishes; streaming begins.
    SetupDone,
}

impl PartialEq for Timer {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timer {
    // Reversed so that `BinaryHeap` (a max-heap) pops the earliest timer first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .total_cmp(&self.time)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// A streaming transfer.
#[derive(Debug, Clone)]
struct Flow {
    remaining: f64,
    rate: f64,
    /// When it drains at its rate, as computed at the start of the current step.
    drain_at: f64,
}

/// A set of resource indices taken smallest first: one bit per resource, as every task
/// that ends or becomes ready adds its unit.
#[derive(Debug)]
struct ResourceSet(Vec<u64>);

impl ResourceSet {
    /// The set of `0..n`.
    fn full(n: usize) -> ResourceSet {
        let mut words = vec![0u64; n.div_ceil(64)];
        for r in 0..n {
            words[r / 64] |= 1 << (r % 64);
        }
        ResourceSet(words)
    }

    fn insert(&mut self, r: usize) {
        if let Some(w) = self.0.get_mut(r / 64) {
            *w |= 1 << (r % 64);
        }
    }

    /// Removes and returns the smallest index in the set.
    fn pop_first(&mut self) -> Option<usize> {
        let (i, w) = self.0.iter_mut().enumerate().find(|(_, w)| **w != 0)?;
        let bit = w.trailing_zeros() as usize;
        *w &= *w - 1;
        Some(i * 64 + bit)
    }
}

/// The streaming transfers by task id, in id order: a short list (a few per core) that
/// every step walks, kept sorted in one vector rather than a tree.
#[derive(Debug, Default)]
struct Flows(Vec<(TaskId, Flow)>);

impl Flows {
    fn insert(&mut self, id: TaskId, flow: Flow) {
        match self.0.binary_search_by_key(&id, |f| f.0) {
            Ok(i) => self.0[i].1 = flow,
            Err(i) => self.0.insert(i, (id, flow)),
        }
    }

    fn remove(&mut self, id: TaskId) {
        if let Ok(i) = self.0.binary_search_by_key(&id, |f| f.0) {
            self.0.remove(i);
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn ids(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.0.iter().map(|f| f.0)
    }
}

/// Lists of task ids or resource indices, one list per task, in one allocation: a launch
/// of millions of tasks would otherwise allocate (and free) a vector per task.
#[derive(Debug, Default)]
struct PerTask {
    /// Where each task's list starts in `items`; its end is the next task's start.
    starts: Vec<usize>,
    items: Vec<usize>,
}

impl PerTask {
    /// One list per length given, each that long and filled with zeros.
    fn with_lens(lens: impl Iterator<Item = usize>) -> PerTask {
        let mut starts = Vec::new();
        let mut at = 0usize;
        for len in lens {
            starts.push(at);
            at += len;
        }
        starts.push(at);
        PerTask {
            starts,
            items: vec![0; at],
        }
    }

    fn get(&self, task: TaskId) -> &[usize] {
        &self.items[self.starts[task]..self.starts[task + 1]]
    }
}

struct Sim<'a> {
    tasks: &'a [Task],
    limits: &'a Limits,
    setup: f64,
    hop_latency: f64,
    link_capacity: f64,
    dram_one_way: f64,
    dram_mixed: f64,
    link_count: usize,
    dram_resource: usize,
    /// Per transfer, the resources it streams through: link indices, then the DRAM
    /// resource if used (empty for compute tasks).
    routes: PerTask,
    /// Per task, the ring hops of its route.
    hops: Vec<usize>,
    remaining_deps: Vec<usize>,
    /// Per task, the tasks that wait for it, in id order.
    dependents: PerTask,
    queues: Vec<Vec<TaskId>>,
    heads: Vec<usize>,
    busy: Vec<bool>,
    start: Vec<f64>,
    end: Vec<f64>,
    finished: usize,
    now: f64,
    seq: u64,
    timers: BinaryHeap<Timer>,
    flows: Flows,
    flows_changed: bool,
    worklist: ResourceSet,
    // Rate samples.
    last_link_rate: Vec<f64>,
    last_dram: (f64, f64),
    link_rates: Vec<LinkRate>,
    dram_rates: Vec<DramRate>,
    rates_truncated: bool,
    /// Scratch space of each step, kept to spare an allocation per step.
    scratch: Scratch,
}

/// Buffers the scheduling loop and the rate computation reuse from step to step.
#[derive(Default)]
struct Scratch {
    drained: Vec<TaskId>,
    ids: Vec<TaskId>,
    cap: Vec<f64>,
    count: Vec<usize>,
    rate: Vec<f64>,
    frozen: Vec<bool>,
    bottleneck: Vec<bool>,
    link: Vec<f64>,
}

/// Steps between progress reports of [`schedule_with_progress`].
const PROGRESS_EVERY: usize = 4096;

fn resource_of(task: &Task) -> usize {
    task.core * 3 + task.unit.index()
}

/// Schedules `tasks` on `machine`. See the module documentation for the semantics.
pub fn schedule(
    machine: &Machine,
    tasks: &[Task],
    limits: &Limits,
) -> Result<Schedule, TimingError> {
    schedule_with_progress(machine, tasks, limits, &mut |_, _| {})
}

/// [`schedule`], calling `progress(finished, total)` with the number of tasks finished
/// every few thousand steps and once at the end.
pub fn schedule_with_progress(
    machine: &Machine,
    tasks: &[Task],
    limits: &Limits,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Schedule, TimingError> {
    let mut events = Vec::with_capacity(tasks.len());
    let part = schedule_part(machine, tasks, 0, limits, progress, &mut events)?;
    let (launches, total_cycles) = one_launch(&events);
    Ok(Schedule::new(
        events,
        launches,
        total_cycles,
        part.traffic,
        part.steps,
    ))
}

/// What scheduling one list of tasks gave besides its events.
struct Part {
    traffic: Traffic,
    steps: usize,
}

/// The dependencies of `task` on tasks from `from` on, counted from `from`.
fn local_deps(task: &Task, from: TaskId) -> impl Iterator<Item = TaskId> + '_ {
    task.deps
        .iter()
        .filter(move |d| **d >= from)
        .map(move |d| d - from)
}

/// [`schedule_with_progress`] of the tasks of a longer list that start at task `from`:
/// dependencies on tasks before `from` are dropped, the others and the events' ids count
/// from `from`, so a launch is scheduled without copying its tasks.
fn schedule_part(
    machine: &Machine,
    tasks: &[Task],
    from: TaskId,
    limits: &Limits,
    progress: &mut dyn FnMut(usize, usize),
    events: &mut Vec<Event>,
) -> Result<Part, TimingError> {
    machine.validate().map_err(TimingError::InvalidMachine)?;
    if tasks.len() > limits.max_tasks {
        return Err(TimingError::TooManyTasks {
            count: tasks.len(),
            limit: limits.max_tasks,
        });
    }
    let cores = machine.cores.value;
    let stop_count = machine.stop_count();
    let link_count = 2 * stop_count;
    let dram_resource = link_count;

    // Validate and precompute routes.
    let mut total_deps = 0usize;
    let mut hops = Vec::with_capacity(tasks.len());
    let mut route_items: Vec<usize> = Vec::new();
    let mut route_starts: Vec<usize> = Vec::with_capacity(tasks.len() + 1);
    let mut link_bytes = vec![0u64; link_count];
    let mut dram_read_bytes = 0u64;
    let mut dram_write_bytes = 0u64;
    for (id, task) in tasks.iter().enumerate() {
        if task.core >= cores {
            return Err(TimingError::BadCore {
                task: id,
                core: task.core,
                cores,
            });
        }
        total_deps = total_deps.saturating_add(local_deps(task, from).count());
        if total_deps > limits.max_deps {
            return Err(TimingError::TooManyDeps {
                limit: limits.max_deps,
            });
        }
        if let Some(dep) = local_deps(task, from).find(|&d| d >= id) {
            return Err(TimingError::BadDependency { task: id, dep });
        }
        route_starts.push(route_items.len());
        let task_hops = match &task.work {
            Work::Compute { .. } => 0,
            Work::Transfer {
                src_stop,
                dst_stop,
                bytes,
                dram,
            } => {
                if task.unit != Unit::Dma {
                    return Err(TimingError::TransferOnComputeUnit {
                        task: id,
                        unit: task.unit,
                    });
                }
                for &stop in [src_stop, dst_stop] {
                    if stop >= stop_count {
                        return Err(TimingError::BadStop {
                            task: id,
                            stop,
                            stops: stop_count,
                        });
                    }
                }
                let (_, links) =
                    machine
                        .route_links(*src_stop, *dst_stop)
                        .ok_or(TimingError::BadStop {
                            task: id,
                            stop: *src_stop,
                            stops: stop_count,
                        })?;
                let route_hops = links.len();
                for l in links {
                    let r = l.index();
                    route_items.push(r);
                    if let Some(b) = link_bytes.get_mut(r) {
                        *b = b.saturating_add(*bytes);
                    }
                }
                match dram {
                    DramAccess::None => {}
                    DramAccess::Read => {
                        dram_read_bytes = dram_read_bytes.saturating_add(*bytes);
                        route_items.push(dram_resource);
                    }
                    DramAccess::Write => {
                        dram_write_bytes = dram_write_bytes.saturating_add(*bytes);
                        route_items.push(dram_resource);
                    }
                }
                route_hops
            }
        };
        hops.push(task_hops);
    }
    route_starts.push(route_items.len());
    let routes = PerTask {
        starts: route_starts,
        items: route_items,
    };

    let resources = cores * 3;
    let mut queues = vec![Vec::new(); resources];
    let mut remaining_deps = vec![0usize; tasks.len()];
    let mut dependent_count = vec![0usize; tasks.len()];
    let mut unique: Vec<TaskId> = Vec::new();
    // Each task's distinct dependencies, in task order, then the dependents of each task
    // from them: every list in id order.
    let mut dep_lists: Vec<TaskId> = Vec::with_capacity(total_deps);
    for (id, task) in tasks.iter().enumerate() {
        queues[resource_of(task)].push(id);
        // Duplicate deps count once.
        unique.clear();
        unique.extend(local_deps(task, from));
        unique.sort_unstable();
        unique.dedup();
        remaining_deps[id] = unique.len();
        for &d in &unique {
            dependent_count[d] += 1;
        }
        dep_lists.extend_from_slice(&unique);
    }
    let mut dependents = PerTask::with_lens(dependent_count.iter().copied());
    let mut next_slot: Vec<usize> = dependents.starts[..tasks.len()].to_vec();
    let mut at = 0usize;
    for (id, &n) in remaining_deps.iter().enumerate() {
        for &d in &dep_lists[at..at + n] {
            dependents.items[next_slot[d]] = id;
            next_slot[d] += 1;
        }
        at += n;
    }
    drop((dep_lists, next_slot, dependent_count));

    let mut sim = Sim {
        tasks,
        limits,
        setup: machine.dma_setup_cycles.value as f64,
        hop_latency: machine.ring_hop_latency_cycles.value as f64,
        link_capacity: machine.ring_bytes_per_cycle_per_direction.value,
        dram_one_way: machine.dram_bytes_per_cycle(false),
        dram_mixed: machine.dram_bytes_per_cycle(true),
        link_count,
        dram_resource,
        routes,
        hops,
        remaining_deps,
        dependents,
        queues,
        heads: vec![0; resources],
        busy: vec![false; resources],
        start: vec![0.0; tasks.len()],
        end: vec![0.0; tasks.len()],
        finished: 0,
        now: 0.0,
        seq: 0,
        timers: BinaryHeap::new(),
        flows: Flows::default(),
        flows_changed: false,
        worklist: ResourceSet::full(resources),
        last_link_rate: vec![0.0; link_count],
        last_dram: (0.0, 0.0),
        link_rates: Vec::new(),
        dram_rates: Vec::new(),
        rates_truncated: false,
        scratch: Scratch::default(),
    };
    let steps = sim.run(progress)?;

    // Appended where the caller keeps them: a run's launches go straight into its one list
    // of events, with no copy per launch.
    events.extend(tasks.iter().enumerate().map(|(id, task)| {
        let (bytes, src, dst, dram) = match &task.work {
            Work::Transfer {
                src_stop,
                dst_stop,
                bytes,
                dram,
            } => (*bytes, stop16(*src_stop), stop16(*dst_stop), *dram),
            Work::Compute { .. } => (0, None, None, DramAccess::None),
        };
        Event {
            task: id + from,
            unit: task.unit,
            core: task.core,
            start: sim.start[id],
            end: sim.end[id],
            bytes,
            src_stop: src,
            dst_stop: dst,
            hops: stop16(sim.hops[id]).unwrap_or(u16::MAX),
            dram,
            op: task.op.clone(),
            line: task.line,
        }
    }));
    Ok(Part {
        traffic: Traffic {
            link_bytes,
            dram_read_bytes,
            dram_write_bytes,
            link_rates: sim.link_rates,
            dram_rates: sim.dram_rates,
            rates_truncated: sim.rates_truncated,
        },
        steps,
    })
}

/// Schedules a run of kernel launches, each of which waits for the one before it to
/// finish (its closing barrier). The machine is therefore idle when a launch starts and
/// its events do not depend on when that is: each interpreted launch's tasks are
/// scheduled once from cycle 0, and every launch is placed where the one before it ended.
/// A [`LaunchPlan::Repeat`] takes no scheduling work and stores no events of its own.
///
/// Task dependencies on tasks before their launch (its barrier) are implied by the
/// placement and dropped. `limits` bound each interpreted launch's scheduling and the
/// steps of the whole run; rate samples are kept up to `limits.max_rate_samples` over the
/// run. `progress(finished, total)` counts the run's tasks, repeats included.
pub fn schedule_launches(
    machine: &Machine,
    tasks: &[Task],
    plan: &[LaunchPlan],
    limits: &Limits,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Schedule, TimingError> {
    let mut scheduler = LaunchScheduler::new(machine, limits.max_steps, limits.max_rate_samples)?;
    if tasks.len() > limits.max_tasks {
        return Err(TimingError::TooManyTasks {
            count: tasks.len(),
            limit: limits.max_tasks,
        });
    }
    let mut lens = Vec::with_capacity(plan.len());
    for (k, p) in plan.iter().enumerate() {
        let len = match p {
            LaunchPlan::Run { tasks: r } => {
                if r.start > r.end || r.end > tasks.len() {
                    return Err(TimingError::BadLaunch { launch: k, of: k });
                }
                r.len()
            }
            LaunchPlan::Repeat { of, .. } => match lens.get(*of) {
                Some(&n) if *of < k => n,
                _ => return Err(TimingError::BadLaunch { launch: k, of: *of }),
            },
        };
        lens.push(len);
    }
    let total_tasks: usize = lens.iter().sum();
    let stored: usize = plan
        .iter()
        .map(|p| match p {
            LaunchPlan::Run { tasks: r } => r.len(),
            LaunchPlan::Repeat { .. } => 0,
        })
        .sum();
    scheduler.events.reserve_exact(stored);
    for p in plan {
        let done = scheduler.tasks_placed();
        match p {
            LaunchPlan::Run { tasks: r } => {
                scheduler.run(&tasks[r.clone()], r.start, limits, &mut |d, _| {
                    progress(done + d, total_tasks)
                })?;
            }
            LaunchPlan::Repeat {
                of,
                line_shift,
                barrier_op,
            } => scheduler.repeat(*of, *line_shift, barrier_op.as_deref())?,
        }
        progress(scheduler.tasks_placed(), total_tasks);
    }
    Ok(scheduler.finish())
}

/// What one interpreted launch's scheduling gave, kept once however often it runs.
struct Segment {
    events: std::ops::Range<usize>,
    link_bytes: Vec<u64>,
    read: u64,
    write: u64,
    steps: usize,
    total: f64,
    link_rates: Vec<LinkRate>,
    dram_rates: Vec<DramRate>,
    truncated: bool,
}

/// [`schedule_launches`] one launch at a time, as a run interprets them: each
/// interpreted launch's tasks are scheduled when it ends ([`LaunchScheduler::run`]) and
/// can then be let go, so a run holds the tasks of one launch and the events of all.
/// Launches wait for the one before them, so scheduling them apart gives exactly the
/// schedule of the whole task list.
pub struct LaunchScheduler<'m> {
    machine: &'m Machine,
    /// Bound on the scheduling steps of all launches together.
    max_steps: usize,
    max_rate_samples: usize,
    segments: Vec<Segment>,
    /// Per launch so far: its segment and its line shift from the segment's lines.
    resolved: Vec<(usize, i64)>,
    events: Vec<Event>,
    launches: Vec<LaunchSpan>,
    link_bytes: Vec<u64>,
    dram_read_bytes: u64,
    dram_write_bytes: u64,
    link_rates: Vec<LinkRate>,
    dram_rates: Vec<DramRate>,
    rates_truncated: bool,
    steps: usize,
    scheduling_steps: usize,
    now: f64,
    first: TaskId,
}

impl<'m> LaunchScheduler<'m> {
    /// A scheduler of launches on `machine`, taking at most `max_steps` scheduling steps
    /// over every launch and keeping at most `max_rate_samples` rate samples.
    pub fn new(
        machine: &'m Machine,
        max_steps: usize,
        max_rate_samples: usize,
    ) -> Result<Self, TimingError> {
        machine.validate().map_err(TimingError::InvalidMachine)?;
        Ok(LaunchScheduler {
            machine,
            max_steps,
            max_rate_samples,
            segments: Vec::new(),
            resolved: Vec::new(),
            events: Vec::new(),
            launches: Vec::new(),
            link_bytes: vec![0; 2 * machine.stop_count()],
            dram_read_bytes: 0,
            dram_write_bytes: 0,
            link_rates: Vec::new(),
            dram_rates: Vec::new(),
            rates_truncated: false,
            steps: 0,
            scheduling_steps: 0,
            now: 0.0,
            first: 0,
        })
    }

    /// Events of the run placed so far (one per task of every launch, repeats included).
    pub fn tasks_placed(&self) -> usize {
        self.first
    }

    /// Schedules the next launch: `tasks`, an interpreted launch's, whose first has id
    /// `from` (dependencies on earlier tasks are its barrier's, implied by placing it after
    /// the launch before). `limits` bound its own scheduling; `progress(finished, total)`
    /// counts its tasks.
    pub fn run(
        &mut self,
        tasks: &[Task],
        from: TaskId,
        limits: &Limits,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(), TimingError> {
        let base = self.events.len();
        let part = match schedule_part(
            self.machine,
            tasks,
            from,
            limits,
            progress,
            &mut self.events,
        ) {
            Ok(part) => part,
            Err(e) => {
                self.events.truncate(base);
                return Err(e);
            }
        };
        self.scheduling_steps = self.scheduling_steps.saturating_add(part.steps);
        if self.scheduling_steps > self.max_steps {
            self.events.truncate(base);
            return Err(TimingError::TooManySteps {
                limit: self.max_steps,
            });
        }
        let stored = &self.events[base..];
        let total = stored.iter().map(|e| e.end).fold(0.0, f64::max);
        let t = part.traffic;
        self.segments.push(Segment {
            events: base..self.events.len(),
            link_bytes: t.link_bytes,
            read: t.dram_read_bytes,
            write: t.dram_write_bytes,
            steps: part.steps,
            total,
            link_rates: t.link_rates,
            dram_rates: t.dram_rates,
            truncated: t.rates_truncated,
        });
        self.place(self.segments.len() - 1, 0, None);
        Ok(())
    }

    /// Places launch number `of` (0-based, in run order) again as the next launch: its
    /// source lines moved by `line_shift`, its closing barrier (when it has one) named
    /// `barrier_op`. Takes no scheduling work and stores no events.
    pub fn repeat(
        &mut self,
        of: usize,
        line_shift: i64,
        barrier_op: Option<&str>,
    ) -> Result<(), TimingError> {
        let launch = self.resolved.len();
        let Some(&(segment, shift)) = self.resolved.get(of) else {
            return Err(TimingError::BadLaunch { launch, of });
        };
        self.place(segment, shift + line_shift, barrier_op.map(OpName::from));
        Ok(())
    }

    /// Places `segment`'s events as the next launch, from where the last one ended.
    fn place(&mut self, segment: usize, line_shift: i64, barrier_op: Option<OpName>) {
        self.resolved.push((segment, line_shift));
        let seg = &self.segments[segment];
        let start = self.now;
        let end = if seg.events.is_empty() {
            start
        } else {
            start + seg.total
        };
        for (sum, b) in self.link_bytes.iter_mut().zip(&seg.link_bytes) {
            *sum = sum.saturating_add(*b);
        }
        self.dram_read_bytes = self.dram_read_bytes.saturating_add(seg.read);
        self.dram_write_bytes = self.dram_write_bytes.saturating_add(seg.write);
        self.steps = self.steps.saturating_add(seg.steps);
        self.rates_truncated |= seg.truncated;
        for r in &seg.link_rates {
            if self.link_rates.len() + self.dram_rates.len() < self.max_rate_samples {
                self.link_rates.push(LinkRate {
                    time: start + r.time,
                    ..r.clone()
                });
            } else {
                self.rates_truncated = true;
            }
        }
        for r in &seg.dram_rates {
            if self.link_rates.len() + self.dram_rates.len() < self.max_rate_samples {
                self.dram_rates.push(DramRate {
                    time: start + r.time,
                    ..r.clone()
                });
            } else {
                self.rates_truncated = true;
            }
        }
        let n = seg.events.len();
        self.launches.push(LaunchSpan {
            first_task: self.first,
            events: seg.events.clone(),
            start,
            end,
            line_shift,
            barrier_op: if n > 0 { barrier_op } else { None },
        });
        self.now = end;
        self.first += n;
    }

    /// The schedule of the launches placed.
    pub fn finish(self) -> Schedule {
        let total_cycles = self.launches.iter().map(|l| l.end).fold(0.0, f64::max);
        Schedule::new(
            self.events,
            self.launches,
            total_cycles,
            Traffic {
                link_bytes: self.link_bytes,
                dram_read_bytes: self.dram_read_bytes,
                dram_write_bytes: self.dram_write_bytes,
                link_rates: self.link_rates,
                dram_rates: self.dram_rates,
                rates_truncated: self.rates_truncated,
            },
            self.steps,
        )
    }
}

impl Sim<'_> {
    fn run(&mut self, progress: &mut dyn FnMut(usize, usize)) -> Result<usize, TimingError> {
        let mut steps = 0usize;
        loop {
            if steps.is_multiple_of(PROGRESS_EVERY) {
                progress(self.finished, self.tasks.len());
            }
            self.start_ready();
            if self.flows_changed {
                self.recompute_rates();
                self.flows_changed = false;
            }
            if self.timers.is_empty() && self.flows.is_empty() {
                break;
            }
            steps += 1;
            if steps > self.limits.max_steps {
                return Err(TimingError::TooManySteps {
                    limit: self.limits.max_steps,
                });
            }

            // Next instant: the earliest timer or flow drain.
            let mut next = self.timers.peek().map(|t| t.time).unwrap_or(f64::INFINITY);
            for (_, flow) in self.flows.0.iter_mut() {
                if flow.rate > 0.0 {
                    flow.drain_at = self.now + flow.remaining / flow.rate;
                    next = min_time(next, flow.drain_at);
                } else {
                    flow.drain_at = f64::INFINITY;
                }
            }
            if !next.is_finite() {
                return Err(TimingError::Stalled {
                    finished: self.finished,
                    total: self.tasks.len(),
                });
            }
            let next = max_time(next, self.now);
            let dt = next - self.now;

            // Advance flows; collect those that drain at `next`.
            let tolerance = 1e-12 * max_time(next.abs(), 1.0);
            let mut drained = std::mem::take(&mut self.scratch.drained);
            drained.clear();
            for (id, flow) in self.flows.0.iter_mut() {
                flow.remaining = max_time(flow.remaining - flow.rate * dt, 0.0);
                if flow.drain_at <= next + tolerance || flow.remaining <= 1e-9 {
                    drained.push(*id);
                }
            }
            self.now = next;

            for &id in &drained {
                self.flows.remove(id);
                self.flows_changed = true;
                self.after_stream(id);
            }
            self.scratch.drained = drained;
            while let Some(timer) = self.timers.peek().copied() {
                if timer.time > self.now {
                    break;
                }
                self.timers.pop();
                match timer.phase {
                    Phase::Finish => self.finish(timer.task),
                    Phase::SetupDone => self.begin_stream(timer.task),
                }
            }
        }
        if self.finished != self.tasks.len() {
            return Err(TimingError::Stalled {
                finished: self.finished,
                total: self.tasks.len(),
            });
        }
        progress(self.finished, self.tasks.len());
        Ok(steps)
    }

    fn push_timer(&mut self, time: f64, task: TaskId, phase: Phase) {
        self.seq += 1;
        self.timers.push(Timer {
            time,
            seq: self.seq,
            task,
            phase,
        });
    }

    /// Starts the head task of every resource on the worklist if it is ready.
    fn start_ready(&mut self) {
        while let Some(r) = self.worklist.pop_first() {
            if self.busy[r] {
                continue;
            }
            let Some(&id) = self.queues[r].get(self.heads[r]) else {
                continue;
            };
            if self.remaining_deps[id] > 0 {
                continue;
            }
            self.busy[r] = true;
            self.heads[r] += 1;
            self.start[id] = self.now;
            match self.tasks[id].work {
                Work::Compute { cycles } => {
                    self.push_timer(self.now + cycles as f64, id, Phase::Finish)
                }
                Work::Transfer { .. } => {
                    if self.setup > 0.0 {
                        self.push_timer(self.now + self.setup, id, Phase::SetupDone);
                    } else {
                        self.begin_stream(id);
                    }
                }
            }
        }
    }

    fn begin_stream(&mut self, id: TaskId) {
        let bytes = match self.tasks[id].work {
            Work::Transfer { bytes, .. } => bytes,
            Work::Compute { .. } => 0,
        };
        if bytes == 0 || self.routes.get(id).is_empty() {
            self.after_stream(id);
        } else {
            self.flows.insert(
                id,
                Flow {
                    remaining: bytes as f64,
                    rate: 0.0,
                    drain_at: f64::INFINITY,
                },
            );
            self.flows_changed = true;
        }
    }

    /// The bytes of a transfer are delivered; add the hop latency tail.
    fn after_stream(&mut self, id: TaskId) {
        let tail = self.hops[id] as f64 * self.hop_latency;
        if tail > 0.0 {
            self.push_timer(self.now + tail, id, Phase::Finish);
        } else {
            self.finish(id);
        }
    }

    fn finish(&mut self, id: TaskId) {
        self.end[id] = self.now;
        self.finished += 1;
        let r = resource_of(&self.tasks[id]);
        self.busy[r] = false;
        self.worklist.insert(r);
        for i in self.dependents.starts[id]..self.dependents.starts[id + 1] {
            let d = self.dependents.items[i];
            self.remaining_deps[d] = self.remaining_deps[d].saturating_sub(1);
            if self.remaining_deps[d] == 0 {
                self.worklist.insert(resource_of(&self.tasks[d]));
            }
        }
    }

    /// Max-min fair rates by progressive filling, then rate samples for the trace.
    fn recompute_rates(&mut self) {
        let mut reads = false;
        let mut writes = false;
        for id in self.flows.ids() {
            if let Work::Transfer { dram, .. } = self.tasks[id].work {
                reads |= dram == DramAccess::Read;
                writes |= dram == DramAccess::Write;
            }
        }
        let Scratch {
            ids,
            cap,
            count,
            rate,
            frozen,
            bottleneck,
            ..
        } = &mut self.scratch;
        cap.clear();
        cap.resize(self.link_count + 1, self.link_capacity);
        cap[self.dram_resource] = if reads && writes {
            self.dram_mixed
        } else {
            self.dram_one_way
        };
        ids.clear();
        ids.extend(self.flows.ids());
        count.clear();
        count.resize(cap.len(), 0);
        for &id in ids.iter() {
            for &r in self.routes.get(id) {
                count[r] += 1;
            }
        }
        rate.clear();
        rate.resize(ids.len(), 0.0);
        frozen.clear();
        frozen.resize(ids.len(), false);
        let mut left = ids.len();
        while left > 0 {
            let mut share = f64::INFINITY;
            for (r, &c) in count.iter().enumerate() {
                if c > 0 {
                    share = min_time(share, max_time(cap[r], 0.0) / c as f64);
                }
            }
            if !share.is_finite() {
                break;
            }
            bottleneck.clear();
            bottleneck.extend(
                count.iter().enumerate().map(|(r, &c)| {
                    c > 0 && max_time(cap[r], 0.0) / c as f64 <= share * (1.0 + 1e-12)
                }),
            );
            let mut progressed = false;
            for (i, &id) in ids.iter().enumerate() {
                if frozen[i] || !self.routes.get(id).iter().any(|&r| bottleneck[r]) {
                    continue;
                }
                frozen[i] = true;
                progressed = true;
                left -= 1;
                rate[i] = share;
                for &r in self.routes.get(id) {
                    cap[r] -= share;
                    count[r] -= 1;
                }
            }
            if !progressed {
                break;
            }
        }
        // `ids` lists the flows in their order.
        for ((_, flow), r) in self.flows.0.iter_mut().zip(rate.iter()) {
            flow.rate = *r;
        }
        self.record_rates();
    }

    /// Rate samples of the links and DRAM whose rates changed, from the flows' rates just
    /// computed (`scratch.ids`, `scratch.rate`).
    fn record_rates(&mut self) {
        let Scratch {
            ids, rate, link, ..
        } = &mut self.scratch;
        link.clear();
        link.resize(self.link_count, 0.0);
        let (mut read, mut write) = (0.0f64, 0.0f64);
        for (&id, &r) in ids.iter().zip(rate.iter()) {
            for &res in self.routes.get(id) {
                if let Some(l) = link.get_mut(res) {
                    *l += r;
                }
            }
            if let Work::Transfer { dram, .. } = self.tasks[id].work {
                match dram {
                    DramAccess::Read => read += r,
                    DramAccess::Write => write += r,
                    DramAccess::None => {}
                }
            }
        }
        let max = self.limits.max_rate_samples;
        for (i, &value) in link.iter().enumerate() {
            if (value - self.last_link_rate[i]).abs() > 1e-9 {
                self.last_link_rate[i] = value;
                if self.link_rates.len() + self.dram_rates.len() < max {
                    self.link_rates.push(LinkRate {
                        time: self.now,
                        link: LinkId::from_index(i),
                        bytes_per_cycle: value,
                    });
                } else {
                    self.rates_truncated = true;
                }
            }
        }
        if (read - self.last_dram.0).abs() > 1e-9 || (write - self.last_dram.1).abs() > 1e-9 {
            self.last_dram = (read, write);
            if self.link_rates.len() + self.dram_rates.len() < max {
                self.dram_rates.push(DramRate {
                    time: self.now,
                    read_bytes_per_cycle: read,
                    write_bytes_per_cycle: write,
                });
            } else {
                self.rates_truncated = true;
            }
        }
    }
}

/// The smaller of two times or rates, neither NaN. `f64::min` returns the other operand
/// when one is NaN, which WebAssembly's `f64.min` does not do, so there it is a call to a
/// library function; the event loop takes thousands of these per step, and a compare and
/// select is what they need.
#[inline(always)]
fn min_time(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

/// The larger of two times or rates, neither NaN (see [`min_time`]).
#[inline(always)]
fn max_time(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Direction;

    /// tiny4 with round numbers: 5 stops (core0..core3, mem0 after core 3), links of
    /// 100 B/cycle, hop latency 2, setup 10, DRAM 1000 B/cycle peak with 0.5 one-way and 0.25
    /// mixed efficiency.
    fn machine() -> Machine {
        let mut m = Machine::preset("tiny4").unwrap();
        m.ring_bytes_per_cycle_per_direction.value = 100.0;
        m.ring_hop_latency_cycles.value = 2;
        m.dma_setup_cycles.value = 10;
        m.dram_peak_bytes_per_cycle.value = 1000.0;
        m.dram_one_way_efficiency.value = 0.5;
        m.dram_mixed_efficiency.value = 0.25;
        m.validate().unwrap();
        m
    }

    fn bare(mut m: Machine) -> Machine {
        m.ring_hop_latency_cycles.value = 0;
        m.dma_setup_cycles.value = 0;
        m
    }

    fn xfer(core: usize, src: usize, dst: usize, bytes: u64, dram: DramAccess) -> Task {
        Task {
            core,
            unit: Unit::Dma,
            work: Work::Transfer {
                src_stop: src,
                dst_stop: dst,
                bytes,
                dram,
            },
            deps: Deps::new(),
            op: "ktdp.load".into(),
            line: 0,
        }
    }

    fn compute(core: usize, unit: Unit, cycles: u64) -> Task {
        Task {
            core,
            unit,
            work: Work::Compute { cycles },
            deps: Deps::new(),
            op: "linalg.matmul".into(),
            line: 7,
        }
    }

    fn with_deps(mut t: Task, deps: &[TaskId]) -> Task {
        t.deps = deps.into();
        t
    }

    fn run(m: &Machine, tasks: &[Task]) -> Schedule {
        schedule(m, tasks, &Limits::default()).unwrap()
    }

    fn close(a: f64, b: f64) {
        assert!(
            (a - b).abs() <= 1e-6 * b.abs().max(1.0),
            "expected {b}, got {a}"
        );
    }

    #[test]
    fn deps_normalize_like_a_sorted_deduplicated_vec() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..500 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 9) as usize;
            let ids: Vec<TaskId> = (0..len).map(|i| ((x >> (i * 5)) % 12) as usize).collect();
            let n = (x >> 50) as usize % 14;
            let mut want = ids.clone();
            want.retain(|d| *d < n);
            want.sort_unstable();
            want.dedup();
            let mut pushed = Deps::new();
            for &d in &ids {
                pushed.push(d);
            }
            assert_eq!(&*pushed, ids.as_slice());
            assert_eq!(pushed.heap_bytes() > 0, len > INLINE_DEPS);
            pushed.normalize(n);
            assert_eq!(&*pushed, want.as_slice(), "{ids:?} below {n}");
            let mut from_vec = Deps::from(ids.clone());
            from_vec.normalize(n);
            assert_eq!(from_vec, pushed);
            assert_eq!(from_vec.heap_bytes() > 0, want.len() > INLINE_DEPS);
        }
    }

    /// What the task-byte limit counts per task natively (docs/limits.md quotes these):
    /// a held task, and the event every recorded task keeps to the end of a run.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn tasks_and_events_stay_compact() {
        assert_eq!(std::mem::size_of::<Deps>(), 32);
        assert_eq!(std::mem::size_of::<Task>(), 96);
        assert_eq!(std::mem::size_of::<Event>(), 72);
    }

    #[test]
    fn op_names_read_and_serialise_as_text() {
        let op = OpName::from("ktdp.load");
        assert_eq!(op, "ktdp.load");
        assert_eq!(op.to_string(), "ktdp.load");
        assert_eq!(serde_json::to_string(&op).unwrap(), "\"ktdp.load\"");
        let back: OpName = serde_json::from_str("\"ktdp.load\"").unwrap();
        assert_eq!(back, op);
    }

    #[test]
    fn empty_task_list() {
        let s = run(&machine(), &[]);
        assert_eq!(s.total_cycles, 0.0);
        assert!(s.events.is_empty());
        assert_eq!(s.link_bytes.len(), 10);
    }

    #[test]
    fn single_transfer_alone() {
        let m = machine();
        let s = run(&m, &[xfer(0, 0, 2, 10_000, DramAccess::None)]);
        let e = &s.events[0];
        assert_eq!(e.start, 0.0);
        // setup + bytes / bandwidth + hops * latency
        close(e.end, 10.0 + 10_000.0 / 100.0 + 2.0 * 2.0);
        assert_eq!(e.hops, 2);
        close(s.total_cycles, e.end);
        let used: Vec<_> = s.link_bytes.iter().filter(|(_, b)| *b > 0).collect();
        assert_eq!(used.len(), 2);
        assert!(used
            .iter()
            .all(|(l, b)| *b == 10_000 && l.direction == Direction::Clockwise));
    }

    #[test]
    fn core_local_transfer_takes_only_setup() {
        let m = machine();
        let s = run(&m, &[xfer(1, 1, 1, 1 << 20, DramAccess::None)]);
        close(s.events[0].end, 10.0);
        let s = run(&bare(m), &[xfer(1, 1, 1, 1 << 20, DramAccess::None)]);
        close(s.events[0].end, 0.0);
    }

    #[test]
    fn two_transfers_sharing_a_link_take_twice_as_long() {
        let m = machine();
        // Both cross link 1cw (core1 -> core2).
        let s = run(
            &m,
            &[
                xfer(0, 0, 2, 10_000, DramAccess::None),
                xfer(1, 1, 2, 10_000, DramAccess::None),
            ],
        );
        close(s.events[0].end, 10.0 + 200.0 + 4.0);
        close(s.events[1].end, 10.0 + 200.0 + 2.0);
        // The shared link never exceeds its capacity.
        assert!(s
            .link_rates
            .iter()
            .all(|r| r.bytes_per_cycle <= 100.0 + 1e-9));
    }

    #[test]
    fn disjoint_links_and_opposite_directions_do_not_interact() {
        let m = machine();
        let alone = 10.0 + 100.0 + 2.0;
        // core0->core1 (0cw) and core2->core3 (2cw): disjoint.
        let s = run(
            &m,
            &[
                xfer(0, 0, 1, 10_000, DramAccess::None),
                xfer(2, 2, 3, 10_000, DramAccess::None),
            ],
        );
        close(s.events[0].end, alone);
        close(s.events[1].end, alone);
        // core0->core1 (0cw) and core1->core0 (1ccw): opposite directions of one segment.
        let s = run(
            &m,
            &[
                xfer(0, 0, 1, 10_000, DramAccess::None),
                xfer(1, 1, 0, 10_000, DramAccess::None),
            ],
        );
        close(s.events[0].end, alone);
        close(s.events[1].end, alone);
    }

    #[test]
    fn link_sharing_is_work_conserving() {
        let m = bare(machine());
        // A: 0->2 uses 0cw,1cw. B: 1->2 uses 1cw. D1: mem(4)->1 uses 4cw,0cw. D2: 0->1 uses 0cw.
        // Link 0cw is shared three ways (33.3 each), so A only takes 33.3 of link 1cw and B gets
        // the remaining 66.7, not the 50 a non-work-conserving model would give it.
        let big = 1_000_000;
        let s = run(
            &m,
            &[
                xfer(0, 0, 2, big, DramAccess::None),
                xfer(1, 1, 2, 6_000, DramAccess::None),
                xfer(2, 4, 1, big, DramAccess::None),
                xfer(3, 0, 1, big, DramAccess::None),
            ],
        );
        close(s.events[1].end, 6_000.0 / (200.0 / 3.0));
        // After B ends the three others still share 0cw equally: all finish together.
        close(s.events[0].end, 3.0 * big as f64 / 100.0);
        close(s.events[2].end, s.events[0].end);
        close(s.events[3].end, s.events[0].end);
    }

    #[test]
    fn rates_are_recomputed_when_a_flow_ends() {
        let m = bare(machine());
        // Two flows share 0cw at 50 B/cycle each; the short one ends at cycle 100, then the
        // long one speeds up to the full 100 B/cycle for its remaining 15000 bytes.
        let s = run(
            &m,
            &[
                xfer(0, 0, 1, 5_000, DramAccess::None),
                xfer(1, 4, 1, 20_000, DramAccess::None),
            ],
        );
        close(s.events[0].end, 100.0); // 5000 B at 50 B/cycle
        close(s.events[1].end, 100.0 + 15_000.0 / 100.0);
    }

    #[test]
    fn dram_bandwidth_caps_many_parallel_reads() {
        let m = Machine::preset("spyre32").unwrap();
        let bytes = 1u64 << 20;
        let tasks: Vec<Task> = (0..m.cores.value)
            .map(|c| {
                xfer(
                    c,
                    m.nearest_memory_stop(c),
                    m.core_stop(c),
                    bytes,
                    DramAccess::Read,
                )
            })
            .collect();
        let s = run(&m, &tasks);
        let dram = m.dram_bytes_per_cycle(false);
        // Links are not the bottleneck: 8 flows per link at dram/32 each.
        assert!(8.0 * dram / 32.0 < m.ring_bytes_per_cycle_per_direction.value);
        let stream = (m.cores.value as u64 * bytes) as f64 / dram;
        let setup = m.dma_setup_cycles.value as f64;
        let lat = m.ring_hop_latency_cycles.value as f64;
        for e in &s.events {
            close(e.end, setup + stream + e.hops as f64 * lat);
        }
        assert_eq!(s.dram_read_bytes, 32 * bytes);
        assert_eq!(s.dram_write_bytes, 0);
        let peak_rate = s
            .dram_rates
            .iter()
            .map(|r| r.read_bytes_per_cycle)
            .fold(0.0, f64::max);
        close(peak_rate, dram);
    }

    #[test]
    fn mixed_reads_and_writes_use_mixed_efficiency() {
        let m = bare(machine());
        // Read mem->core3 (4ccw, 1 hop) and write core0->mem (0ccw, 1 hop): disjoint links,
        // DRAM shared at the mixed 250 B/cycle -> 125 each, but links cap each at 100.
        // Use a tighter DRAM to make it the bottleneck.
        let mut m = m;
        m.dram_peak_bytes_per_cycle.value = 200.0; // one-way 100, mixed 50
        let s = run(
            &m,
            &[
                xfer(3, 4, 3, 5_000, DramAccess::Read),
                xfer(0, 0, 4, 5_000, DramAccess::Write),
            ],
        );
        // Both at 25 B/cycle (mixed 50 shared by two).
        close(s.events[0].end, 200.0);
        close(s.events[1].end, 200.0);
        // Two reads alone: one-way 100 shared by two = 50 each.
        let s = run(
            &m,
            &[
                xfer(3, 4, 3, 5_000, DramAccess::Read),
                xfer(0, 4, 0, 5_000, DramAccess::Read),
            ],
        );
        close(s.events[0].end, 100.0);
        close(s.events[1].end, 100.0);
    }

    #[test]
    fn compute_bound_matmul_runs_at_peak_times_efficiency() {
        let m = Machine::preset("spyre32").unwrap();
        let peak = m.matmul_peak_macs_per_cycle_per_core.value;
        for (mm, n, k) in [(64u64, 64u64, 1536u64), (8, 64, 64), (128, 256, 512)] {
            let cycles = m.matmul_cycles(mm, n, k);
            let load = xfer(
                0,
                m.nearest_memory_stop(0),
                m.core_stop(0),
                4096,
                DramAccess::Read,
            );
            let mat = with_deps(compute(0, Unit::Pt, cycles), &[0]);
            let s = run(&m, &[load, mat]);
            let e = &s.events[1];
            let macs = (mm * n * k) as f64;
            let expected = macs / (peak * m.matmul_efficiency(mm));
            assert!(
                (e.end - e.start) >= expected && (e.end - e.start) < expected + 1.0,
                "{mm}x{n}x{k}: {} vs {expected}",
                e.end - e.start
            );
        }
        // Full tiles are at peak.
        close(m.matmul_efficiency(64), 1.0);
    }

    #[test]
    fn in_order_units_serialize() {
        let m = machine();
        // Task 1 (PT) waits for the load; task 2 (PT, no deps) is behind it in order.
        let s = run(
            &m,
            &[
                xfer(0, 4, 0, 1_000, DramAccess::Read),
                with_deps(compute(0, Unit::Pt, 50), &[0]),
                compute(0, Unit::Pt, 30),
            ],
        );
        let load_end = s.events[0].end;
        close(s.events[1].start, load_end);
        close(s.events[2].start, load_end + 50.0);
        close(s.events[2].end, load_end + 80.0);
        // Two transfers on one DMA engine do not overlap.
        let s = run(
            &m,
            &[
                xfer(0, 0, 1, 1_000, DramAccess::None),
                xfer(0, 0, 2, 1_000, DramAccess::None),
            ],
        );
        close(s.events[1].start, s.events[0].end);
    }

    #[test]
    fn deps_are_honoured_across_cores_and_units() {
        let m = machine();
        let s = run(
            &m,
            &[
                compute(0, Unit::Pt, 100),
                with_deps(compute(1, Unit::Sfp, 10), &[0]),
                with_deps(xfer(2, 1, 2, 500, DramAccess::None), &[1, 1, 0]),
            ],
        );
        close(s.events[1].start, 100.0);
        close(s.events[2].start, 110.0);
        close(s.total_cycles, 110.0 + 10.0 + 5.0 + 2.0);
    }

    #[test]
    fn dma_overlaps_compute_on_one_core() {
        let m = machine();
        let s = run(
            &m,
            &[
                xfer(0, 4, 0, 10_000, DramAccess::Read),
                compute(0, Unit::Pt, 100),
                compute(0, Unit::Sfp, 80),
            ],
        );
        for e in &s.events {
            assert_eq!(e.start, 0.0);
        }
        close(s.total_cycles, 10.0 + 10_000.0 / 100.0 + 2.0);
        close(s.events[1].end, 100.0);
        close(s.events[2].end, 80.0);
    }

    #[test]
    fn errors_are_values() {
        let m = machine();
        let lim = Limits::default();
        let e = schedule(&m, &[with_deps(compute(0, Unit::Pt, 1), &[0])], &lim).unwrap_err();
        assert_eq!(e, TimingError::BadDependency { task: 0, dep: 0 });
        assert!(e.to_string().contains("earlier"));
        let e = schedule(&m, &[compute(9, Unit::Pt, 1)], &lim).unwrap_err();
        assert!(matches!(e, TimingError::BadCore { core: 9, .. }));
        let e = schedule(&m, &[xfer(0, 0, 5, 1, DramAccess::None)], &lim).unwrap_err();
        assert!(matches!(e, TimingError::BadStop { stop: 5, .. }));
        let mut t = xfer(0, 0, 1, 1, DramAccess::None);
        t.unit = Unit::Pt;
        let e = schedule(&m, &[t], &lim).unwrap_err();
        assert!(e.to_string().contains("DMA"));
        let small = Limits {
            max_tasks: 1,
            ..Limits::default()
        };
        let e = schedule(
            &m,
            &[compute(0, Unit::Pt, 1), compute(0, Unit::Pt, 1)],
            &small,
        )
        .unwrap_err();
        assert!(matches!(
            e,
            TimingError::TooManyTasks { count: 2, limit: 1 }
        ));
        let few_steps = Limits {
            max_steps: 3,
            ..Limits::default()
        };
        let tasks: Vec<Task> = (0..10).map(|_| compute(0, Unit::Pt, 1)).collect();
        let e = schedule(&m, &tasks, &few_steps).unwrap_err();
        assert!(matches!(e, TimingError::TooManySteps { limit: 3 }));
        let mut bad = m.clone();
        bad.cores.value = 0;
        assert!(matches!(
            schedule(&bad, &[], &lim),
            Err(TimingError::InvalidMachine(_))
        ));
        // Huge numbers do not panic.
        let s = schedule(
            &m,
            &[
                compute(0, Unit::Pt, u64::MAX),
                xfer(0, 0, 3, u64::MAX, DramAccess::Write),
            ],
            &lim,
        )
        .unwrap();
        assert!(s.total_cycles.is_finite());
    }

    /// A pseudo-random DAG: deterministic, every invariant holds.
    fn stress_tasks(m: &Machine, count: usize) -> Vec<Task> {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let stops = m.stop_count();
        (0..count)
            .map(|i| {
                let core = (next() % m.cores.value as u64) as usize;
                let mut t = match next() % 4 {
                    0 => compute(core, Unit::Pt, next() % 500),
                    1 => compute(core, Unit::Sfp, next() % 200),
                    2 => xfer(
                        core,
                        m.nearest_memory_stop(core),
                        m.core_stop(core),
                        next() % 100_000,
                        DramAccess::Read,
                    ),
                    _ => {
                        let dst = (next() % stops as u64) as usize;
                        let dram = if m.memory_stop_ids().contains(&dst) {
                            DramAccess::Write
                        } else {
                            DramAccess::None
                        };
                        xfer(core, m.core_stop(core), dst, next() % 50_000, dram)
                    }
                };
                if i > 0 {
                    for _ in 0..(next() % 3) {
                        t.deps.push((next() % i as u64) as usize);
                    }
                }
                t
            })
            .collect()
    }

    #[test]
    fn stress_invariants_and_determinism() {
        let m = Machine::preset("spyre32").unwrap();
        let tasks = stress_tasks(&m, 2_000);
        let a = run(&m, &tasks);
        let b = run(&m, &tasks);
        assert_eq!(a, b);
        let cap = m.ring_bytes_per_cycle_per_direction.value;
        assert!(a
            .link_rates
            .iter()
            .all(|r| r.bytes_per_cycle <= cap * (1.0 + 1e-9)));
        let dram = m.dram_bytes_per_cycle(false);
        assert!(a
            .dram_rates
            .iter()
            .all(|r| r.read_bytes_per_cycle + r.write_bytes_per_cycle <= dram * (1.0 + 1e-9)));
        for (i, t) in tasks.iter().enumerate() {
            let e = &a.events[i];
            assert!(e.end >= e.start);
            for &d in &t.deps {
                assert!(e.start >= a.events[d].end);
            }
        }
        // In-order per unit.
        let mut last: std::collections::BTreeMap<(usize, Unit), f64> =
            std::collections::BTreeMap::new();
        for e in &a.events {
            let prev = last.insert((e.core, e.unit), e.end).unwrap_or(0.0);
            assert!(e.start >= prev);
        }
    }
}
