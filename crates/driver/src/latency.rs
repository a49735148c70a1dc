//! The second timing model's report: per kernel, what the KTIR reference interpreter's
//! per-unit roofline latency model ([`sim::latency_model`]) estimates, beside the cycles the
//! event-level schedule took and the difference. Computed once per run from the executed
//! ops (the schedule's events, the simulator's work counts) and the machine description.

use crate::by_launch::{LineGroups, PerStored};
use crate::KernelLink;
use serde::Serialize;
use sim::latency_model::{self, Category, LatencyConfig, LatencyEstimate, OpRecord, Overlap};
use sim::timing::{Event, EventRef, Schedule, TaskId, Unit};
use sim::{Machine, WorkCount};
use std::collections::HashMap;

/// One parameter of the model, labelled as the reference interpreter labels it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LatencyParamView {
    /// The reference interpreter's name for it (`hbm_bandwidth_tb_s`, ...).
    pub label: String,
    /// Its value for this machine.
    pub value: f64,
    /// The machine-description field it is derived from.
    pub from: String,
}

/// One kernel under both models.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct KernelLatency {
    /// Index into `sourceMap.kernels`.
    pub kernel: usize,
    /// The KTIR function.
    pub func: String,
    /// Compute cycles of the model's critical core.
    pub compute_cycles: f64,
    /// HBM cycles of the critical core.
    pub memory_cycles: f64,
    /// Ring communication cycles of the critical core.
    pub comm_cycles: f64,
    /// The model's time with no overlap (`compute + memory + comm`, slowest core): the
    /// reference interpreter's cycle model.
    pub sequential_cycles: f64,
    /// The model's time with perfect overlap (`max` of the three, slowest core).
    pub overlapped_cycles: f64,
    /// "compute", "memory" or "comm": the critical core's largest category.
    pub bottleneck: String,
    /// Cycles the event-level schedule took (first event start to last event end).
    pub event_cycles: f64,
    /// `sequentialCycles - eventCycles`.
    pub difference_cycles: f64,
}

/// The second timing model's report of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LatencyModelReport {
    /// The model's parameters (empty before a run).
    pub params: Vec<LatencyParamView>,
    /// One entry per kernel that ran, in source-map order.
    pub kernels: Vec<KernelLatency>,
    /// Sum of the kernels' sequential cycles (kernels run one after another).
    pub sequential_cycles: f64,
    /// Sum of the kernels' overlapped cycles.
    pub overlapped_cycles: f64,
    /// The event-level model's cycles for the whole run.
    pub event_cycles: f64,
    /// What the model assumes and why it differs from the event-level one.
    pub notes: Vec<String>,
}

/// What the report is computed from.
pub(crate) struct Inputs<'a> {
    pub machine: &'a Machine,
    /// The run's events (read through [`Schedule::events_with_source`]).
    pub schedule: &'a Schedule,
    pub work: &'a [(TaskId, WorkCount)],
    pub kernels: &'a [KernelLink],
    pub total_cycles: f64,
}

fn notes() -> Vec<String> {
    vec![
        "per-unit roofline latency model of the KTIR reference interpreter (ktir-cpu docs/latency.md), parameters from this machine description".into(),
        "sequential: a core's compute + memory + comm cycles, the reference interpreter's cycle model; overlapped: their maximum; a kernel takes its slowest core's".into(),
        "memory: HBM bytes / hbm_bytes_per_cycle_per_core (the peak split over every core, no read/write efficiency); scratchpad (LX) traffic is free".into(),
        "compute: elements / simd_elements_per_cycle (x transcendental_penalty), 2 x MACs / systolic_flops_per_cycle; no pipeline fill, no dependencies".into(),
        "comm: inter-tile transfer bytes / ring_bytes_per_cycle, no hop latency or link contention".into(),
        "the event-level model schedules the same ops with DMA setup, ring routes, shared DRAM and dependencies".into(),
    ]
}

/// The duration above which the model takes an SFP event's vector work as
/// transcendental: the interpreter timed such work longer than its plain rate.
pub(crate) fn transcendental_above(w: WorkCount, lanes: u64) -> f64 {
    w.elementwise.div_ceil(lanes) as f64 + 0.5
}

/// An event as the model sees the op behind it.
fn record<'e>(e: &EventRef<'e>, source: TaskId, work: &[WorkCount], lanes: u64) -> OpRecord<'e> {
    let w = work.get(source).copied().unwrap_or_default();
    OpRecord {
        core: e.core,
        op: e.op.as_str(),
        unit: e.unit,
        bytes: e.bytes,
        dram: e.dram,
        macs: w.macs,
        elements: w.elementwise,
        transcendental: e.unit == Unit::Sfp && e.end - e.start > transcendental_above(w, lanes),
    }
}

/// A kernel's estimate, with its first event start and last event end.
type KernelEstimate = (LatencyEstimate, f64, f64);

/// One distinct launch's events by source line, with what decides whether a repeat of it
/// can take its estimates as they are.
struct StoredLatency {
    groups: LineGroups,
    /// Per line: how far the durations of its SFP events are from the duration at which
    /// the model calls them transcendental (infinite without any). A repeat placed with a
    /// smaller [`LaunchSpan::placement_error`] classifies every event as they do.
    margins: Vec<f64>,
    /// The estimate of the events of a set of lines (one flag per line), once computed,
    /// with their first start and last end before placing.
    estimates: HashMap<Vec<bool>, KernelEstimate>,
}

impl StoredLatency {
    fn of(stored: &[Event], work: &[WorkCount], lanes: u64) -> StoredLatency {
        let groups = LineGroups::of(stored);
        let mut margins = vec![f64::INFINITY; groups.lines.len()];
        for (e, &g) in stored.iter().zip(&groups.of_event) {
            if e.unit == Unit::Sfp {
                let w = work.get(e.task).copied().unwrap_or_default();
                let margin = ((e.end - e.start) - transcendental_above(w, lanes)).abs();
                margins[g as usize] = margins[g as usize].min(margin);
            }
        }
        StoredLatency {
            groups,
            margins,
            estimates: HashMap::new(),
        }
    }

    /// The estimate of the stored events on the lines `lines` flags.
    fn estimate(
        &mut self,
        stored: &[Event],
        lines: Vec<bool>,
        config: &LatencyConfig,
        work: &[WorkCount],
        lanes: u64,
    ) -> &KernelEstimate {
        let groups = &self.groups;
        self.estimates.entry(lines).or_insert_with_key(|lines| {
            let of = || {
                stored
                    .iter()
                    .zip(&groups.of_event)
                    .filter(|(_, &g)| lines[g as usize])
                    .map(|(e, _)| e)
            };
            let est = latency_model::estimate(
                config,
                of().map(|e| record(&e.view(), e.task, work, lanes)),
            );
            let start = of().map(|e| e.start).fold(f64::INFINITY, f64::min);
            let end = of().map(|e| e.end).fold(f64::NEG_INFINITY, f64::max);
            (est, start, end)
        })
    }
}

/// The report of a finished run: per kernel, the model's estimate over its events in run
/// order, as a walk over every event would give it.
pub(crate) fn compute(inp: Inputs<'_>) -> LatencyModelReport {
    let config = LatencyConfig::of(inp.machine);
    let work = crate::roofline::work_by_task(inp.work);
    let lanes = inp.machine.sfp_lanes.value.max(1);
    let sched = inp.schedule;
    let mut kernels = Vec::new();
    // Per launch, the kernel of each line of its stored events; per kernel, the launches
    // its events come from.
    let mut per: PerStored<StoredLatency> = PerStored::new();
    let mut kernels_of: Vec<Vec<Option<usize>>> = Vec::with_capacity(sched.launches.len());
    let mut launches_of: Vec<Vec<usize>> = vec![Vec::new(); inp.kernels.len()];
    for (i, l) in sched.launches.iter().enumerate() {
        let s = per.get(sched, l, |stored| StoredLatency::of(stored, &work, lanes));
        let ks = s.groups.kernels(l, inp.kernels);
        for &k in ks.iter().flatten() {
            if launches_of[k].last() != Some(&i) {
                launches_of[k].push(i);
            }
        }
        kernels_of.push(ks);
    }
    let mut estimates = Vec::new();
    // A kernel whose events are one launch's is estimated once per distinct launch and
    // set of lines: the model sums per core in event order, which a repeat keeps, and
    // reads names, bytes and work, which it repeats. Its span moves by the launch's start.
    let mut slow = vec![false; inp.kernels.len()];
    for (k, launches) in launches_of.iter().enumerate() {
        let &[i] = launches.as_slice() else {
            slow[k] = !launches.is_empty();
            continue;
        };
        let l = &sched.launches[i];
        let stored = sched.stored_events(l);
        let lines: Vec<bool> = kernels_of[i].iter().map(|x| *x == Some(k)).collect();
        let s = per.get(sched, l, |stored| StoredLatency::of(stored, &work, lanes));
        let margin = lines
            .iter()
            .zip(&s.margins)
            .filter(|(on, _)| **on)
            .map(|(_, m)| *m)
            .fold(f64::INFINITY, f64::min);
        // A repeat's closing barrier is named after its own function.
        let renamed = match (&l.barrier_op, stored.last(), s.groups.of_event.last()) {
            (Some(op), Some(last), Some(&g)) => {
                lines[g as usize]
                    && latency_model::is_comm_op(op) != latency_model::is_comm_op(&last.op)
            }
            _ => false,
        };
        if renamed || l.placement_error() >= margin {
            slow[k] = true;
            continue;
        }
        let (est, start, end) = s.estimate(stored, lines, &config, &work, lanes);
        estimates.push((k, est.clone(), l.place(*start), l.place(*end).max(0.0)));
    }
    // The others event by event over the launches they ran in, in run order, each let go
    // after its last launch.
    let mut by_kernel: Vec<Vec<EventRef<'_>>> = vec![Vec::new(); inp.kernels.len()];
    for (i, l) in sched.launches.iter().enumerate() {
        if !kernels_of[i].iter().flatten().any(|&k| slow[k]) {
            continue;
        }
        for e in sched.launch_event_refs(l) {
            if let Some(k) = crate::source_map::kernel_at(inp.kernels, e.line) {
                if slow[k] {
                    by_kernel[k].push(e);
                }
            }
        }
        for k in (0..inp.kernels.len()).filter(|&k| slow[k] && launches_of[k].last() == Some(&i)) {
            let evs = std::mem::take(&mut by_kernel[k]);
            let est = latency_model::estimate(
                &config,
                evs.iter().map(|e| record(e, e.source, &work, lanes)),
            );
            let start = evs.iter().map(|e| e.start).fold(f64::INFINITY, f64::min);
            let end = evs.iter().map(|e| e.end).fold(0.0, f64::max);
            estimates.push((k, est, start, end));
        }
    }
    estimates.sort_by_key(|(k, ..)| *k);
    for (i, est, start, end) in estimates {
        let k = &inp.kernels[i];
        let event_cycles = (end - start).max(0.0);
        let critical = est.critical_core.unwrap_or_default();
        let sequential = est.cycles(Overlap::Sequential);
        kernels.push(KernelLatency {
            kernel: i,
            func: k.func.clone(),
            compute_cycles: critical.compute_cycles,
            memory_cycles: critical.memory_cycles,
            comm_cycles: critical.comm_cycles,
            sequential_cycles: sequential,
            overlapped_cycles: est.cycles(Overlap::Overlapped),
            bottleneck: est
                .bottleneck()
                .unwrap_or(Category::Compute)
                .label()
                .to_string(),
            event_cycles,
            difference_cycles: sequential - event_cycles,
        });
    }
    LatencyModelReport {
        params: config
            .params()
            .into_iter()
            .map(|p| LatencyParamView {
                label: p.label.to_string(),
                value: p.value,
                from: p.from.to_string(),
            })
            .collect(),
        sequential_cycles: kernels.iter().map(|k| k.sequential_cycles).sum(),
        overlapped_cycles: kernels.iter().map(|k| k.overlapped_cycles).sum(),
        event_cycles: inp.total_cycles,
        kernels,
        notes: notes(),
    }
}

/// The report as a text table: per kernel, the event-level cycles beside the model's, and
/// the difference.
pub fn render(r: &LatencyModelReport) -> String {
    use std::fmt::Write;
    let mut out =
        String::from("\ntiming models: event-level schedule vs per-unit roofline latency model\n");
    let _ = writeln!(
        out,
        "{:<24} {:>12} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10}  bound",
        "kernel", "event", "roofline", "difference", "compute", "memory", "comm", "overlap",
    );
    for k in &r.kernels {
        let _ = writeln!(
            out,
            "{:<24} {:>12.0} {:>12.1} {:>+12.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1}  {}",
            k.func,
            k.event_cycles,
            k.sequential_cycles,
            k.difference_cycles,
            k.compute_cycles,
            k.memory_cycles,
            k.comm_cycles,
            k.overlapped_cycles,
            k.bottleneck
        );
    }
    let _ = writeln!(
        out,
        "{:<24} {:>12.0} {:>12.1} {:>+12.1} {:>43.1}",
        "program",
        r.event_cycles,
        r.sequential_cycles,
        r.sequential_cycles - r.event_cycles,
        r.overlapped_cycles
    );
    out.push_str("parameters (labelled as ktir-cpu labels them):\n");
    for p in &r.params {
        let _ = writeln!(out, "  {:<30} {:>14.4}  from {}", p.label, p.value, p.from);
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::timing::{DramAccess, Event};

    fn event(task: usize, unit: Unit, start: f64, end: f64, bytes: u64, dram: DramAccess) -> Event {
        Event {
            task,
            unit,
            core: 0,
            start,
            end,
            bytes,
            src_stop: None,
            dst_stop: None,
            hops: 0,
            dram,
            op: "ktdp.load".into(),
            line: 3,
        }
    }

    #[test]
    fn a_kernel_gets_both_models_and_their_difference() {
        let machine = Machine::preset("spyre32").unwrap();
        let events = vec![
            event(0, Unit::Dma, 0.0, 100.0, 4096, DramAccess::Read),
            event(1, Unit::Sfp, 100.0, 132.0, 0, DramAccess::None),
        ];
        let work = vec![(
            1,
            WorkCount {
                macs: 0,
                elementwise: 32 * machine.sfp_lanes.value,
            },
        )];
        let kernels = vec![KernelLink {
            func: "k".into(),
            lines: crate::LineRange { from: 1, to: 9 },
            op: None,
            events: Vec::new(),
        }];
        let r = compute(Inputs {
            machine: &machine,
            schedule: &Schedule::of_events(events),
            work: &work,
            kernels: &kernels,
            total_cycles: 132.0,
        });
        assert_eq!(r.kernels.len(), 1);
        let k = &r.kernels[0];
        let c = LatencyConfig::of(&machine);
        let mem = 4096.0 / c.hbm_bytes_per_cycle_per_core();
        assert!((k.memory_cycles - mem).abs() < 1e-9);
        assert!((k.compute_cycles - 32.0).abs() < 1e-9, "not transcendental");
        assert!((k.sequential_cycles - (mem + 32.0)).abs() < 1e-9);
        assert_eq!(k.event_cycles, 132.0);
        assert!((k.difference_cycles - (mem + 32.0 - 132.0)).abs() < 1e-9);
        assert!(render(&r).contains("hbm_bandwidth_tb_s"));
    }
}
