//! What the per-kernel reports (roofline, latency model, per-layer breakdown, the event
//! count of the result) need from a run's events, computed once per distinct launch.
//!
//! A full model repeats the same kernels layer after layer: its schedule stores the events
//! of each distinct launch once, and a repeat places them again later in time and further
//! down the text ([`sim::timing::LaunchSpan`]). Walking every placed event of every repeat
//! takes most of such a run's time, while what a report needs from a repeat (bytes, work,
//! cores, first start and last end) is the distinct launch's figures, shifted. Here the
//! stored events are grouped by source line, since a line belongs to one kernel once the
//! launch's line shift is applied; reports add a group's figures per launch.

use crate::source_map::kernel_at;
use crate::KernelLink;
use sim::timing::{Event, LaunchSpan, Schedule};
use std::collections::HashMap;

/// The stored events of one distinct launch, grouped by source line.
pub(crate) struct LineGroups {
    /// The distinct lines, in order of first appearance.
    pub lines: Vec<u32>,
    /// Per stored event, the index of its line in `lines`.
    pub of_event: Vec<u32>,
}

impl LineGroups {
    /// The groups of `events`.
    pub fn of(events: &[Event]) -> LineGroups {
        let mut index: HashMap<u32, u32> = HashMap::new();
        let mut lines = Vec::new();
        let of_event = events
            .iter()
            .map(|e| {
                *index.entry(e.line).or_insert_with(|| {
                    lines.push(e.line);
                    (lines.len() - 1) as u32
                })
            })
            .collect();
        LineGroups { lines, of_event }
    }

    /// The kernel of each line as `launch` places it (`None` outside every kernel).
    pub fn kernels(&self, launch: &LaunchSpan, kernels: &[KernelLink]) -> Vec<Option<usize>> {
        self.lines
            .iter()
            .map(|&l| kernel_at(kernels, launch.line(l)))
            .collect()
    }
}

/// Values computed once per distinct launch of a schedule, on the first launch placing its
/// stored events.
pub(crate) struct PerStored<T> {
    map: HashMap<(usize, usize), T>,
}

impl<T> PerStored<T> {
    /// An empty cache.
    pub fn new() -> Self {
        PerStored {
            map: HashMap::new(),
        }
    }

    /// The value for the events `launch` places, computed by `make` from them the first
    /// time.
    pub fn get<'s>(
        &'s mut self,
        schedule: &Schedule,
        launch: &LaunchSpan,
        make: impl FnOnce(&[Event]) -> T,
    ) -> &'s mut T {
        self.map
            .entry((launch.events.start, launch.events.end))
            .or_insert_with(|| make(schedule.stored_events(launch)))
    }
}

/// Whether a report counts `e` as taking part (it takes time or moves bytes); launch
/// barriers and other bookkeeping events do not.
pub(crate) fn takes_part(start: f64, end: f64, bytes: u64) -> bool {
    end > start || bytes > 0
}

/// The shortest positive duration of the stored events that move no bytes (infinite when
/// there is none): placed at a launch whose [`LaunchSpan::placement_error`] is smaller,
/// every such event still takes time, so [`takes_part`] gives the same answer for the
/// stored and the placed event.
pub(crate) fn shortest_idle_duration(events: &[Event]) -> f64 {
    events
        .iter()
        .filter(|e| e.bytes == 0 && e.end > e.start)
        .map(|e| e.end - e.start)
        .fold(f64::INFINITY, f64::min)
}

/// The number of events of the run that [`takes_part`] counts, from event number `from`
/// on (earlier ones were counted by the caller): once per distinct launch where its
/// placement cannot change the answer, event by event elsewhere.
pub(crate) fn count_taking_part(schedule: &Schedule, from: usize) -> u64 {
    let mut per: PerStored<(u64, f64)> = PerStored::new();
    let mut total = 0u64;
    for l in &schedule.launches {
        let n = l.events.len();
        if l.first_task + n <= from {
            continue;
        }
        if l.first_task >= from {
            let &mut (count, shortest) = per.get(schedule, l, |stored| {
                let count = stored
                    .iter()
                    .filter(|e| takes_part(e.start, e.end, e.bytes))
                    .count() as u64;
                (count, shortest_idle_duration(stored))
            });
            if l.placement_error() < shortest {
                total += count;
                continue;
            }
        }
        total += schedule
            .launch_event_refs(l)
            .skip(from.saturating_sub(l.first_task))
            .filter(|e| takes_part(e.start, e.end, e.bytes))
            .count() as u64;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source_map::{OpLink, SourceMap};
    use crate::LineRange;
    use sim::latency_model::{self, LatencyConfig};
    use sim::timing::{schedule_launches, DramAccess, LaunchPlan, Limits, Task, Unit, Work};
    use sim::{Machine, WorkCount};

    /// Three kernels of ten lines each (lines 1-10, 11-20, 21-30); the first is
    /// interpreted, the next two repeat it ten and twenty lines further down, then the
    /// first runs again. The tasks' durations are fractional (transfers share DRAM), and
    /// one bookkeeping task is `idle` cycles long.
    fn run(machine: &Machine, idle: u64) -> (Schedule, Vec<(usize, WorkCount)>) {
        let dma = |core: usize, bytes: u64, dram: DramAccess, line: u32| Task {
            core,
            unit: Unit::Dma,
            work: Work::Transfer {
                src_stop: machine.stop_count() - 1,
                dst_stop: core,
                bytes,
                dram,
            },
            deps: Default::default(),
            op: "ktdp.load".into(),
            line,
        };
        let compute = |core: usize, unit: Unit, cycles: u64, dep: usize, line: u32| Task {
            core,
            unit,
            work: Work::Compute { cycles },
            deps: vec![dep].into(),
            op: "arith.addf".into(),
            line,
        };
        let tasks = vec![
            dma(0, 3001, DramAccess::Read, 2),
            dma(1, 1999, DramAccess::Read, 2),
            compute(0, Unit::Sfp, 7, 0, 3),
            compute(1, Unit::Pt, 11, 1, 4),
            compute(1, Unit::Sfp, idle, 3, 5),
            dma(0, 777, DramAccess::Write, 6),
            compute(0, Unit::Sfp, 0, 5, 0),
        ];
        let n = tasks.len();
        let plan = vec![
            LaunchPlan::Run { tasks: 0..n },
            LaunchPlan::Repeat {
                of: 0,
                line_shift: 10,
                barrier_op: Some("end of @k1".into()),
            },
            LaunchPlan::Repeat {
                of: 1,
                line_shift: 10,
                barrier_op: Some("end of @k2".into()),
            },
            LaunchPlan::Repeat {
                of: 0,
                line_shift: 0,
                barrier_op: None,
            },
        ];
        let s = schedule_launches(
            machine,
            &tasks,
            &plan,
            &Limits::sized_for(&tasks),
            &mut |_, _| {},
        )
        .unwrap();
        let work = vec![
            (
                2,
                WorkCount {
                    macs: 0,
                    elementwise: 7 * machine.sfp_lanes.value,
                },
            ),
            (
                3,
                WorkCount {
                    macs: 1 << 20,
                    elementwise: 0,
                },
            ),
            (
                4,
                WorkCount {
                    macs: 0,
                    elementwise: 1,
                },
            ),
        ];
        (s, work)
    }

    fn kernels() -> Vec<KernelLink> {
        (0..3)
            .map(|k| KernelLink {
                func: format!("k{k}"),
                lines: LineRange {
                    from: 10 * k + 1,
                    to: 10 * k + 10,
                },
                op: Some(k as usize),
                events: Vec::new(),
            })
            .collect()
    }

    /// Per kernel: MACs, DRAM bytes read and written, cores used, the span of the events
    /// taking part, the latency model's sequential and overlapped cycles and the span of
    /// all its events.
    type Figures = (u64, u64, u64, usize, f64, f64, f64, f64);

    /// What the roofline and latency reports take from each kernel, walking every event.
    fn walked(machine: &Machine, s: &Schedule, work: &[(usize, WorkCount)]) -> Vec<Figures> {
        let by_task = crate::roofline::work_by_task(work);
        let lanes = machine.sfp_lanes.value;
        let config = LatencyConfig::of(machine);
        kernels()
            .iter()
            .enumerate()
            .map(|(k, _)| {
                let evs: Vec<_> = s
                    .event_refs()
                    .filter(|e| crate::source_map::kernel_at(&kernels(), e.line) == Some(k))
                    .collect();
                let part: Vec<_> = evs
                    .iter()
                    .filter(|e| takes_part(e.start, e.end, e.bytes))
                    .collect();
                let macs = evs
                    .iter()
                    .map(|e| by_task.get(e.source).map_or(0, |w| w.macs))
                    .sum();
                let read = evs
                    .iter()
                    .filter(|e| e.dram == DramAccess::Read)
                    .map(|e| e.bytes)
                    .sum();
                let cores: std::collections::BTreeSet<usize> =
                    part.iter().map(|e| e.core).collect();
                let start = part.iter().map(|e| e.start).fold(f64::INFINITY, f64::min);
                let end = part.iter().map(|e| e.end).fold(0.0, f64::max);
                let est = latency_model::estimate(
                    &config,
                    evs.iter().map(|e| {
                        let w = by_task.get(e.source).copied().unwrap_or_default();
                        latency_model::OpRecord {
                            core: e.core,
                            op: e.op.as_str(),
                            unit: e.unit,
                            bytes: e.bytes,
                            dram: e.dram,
                            macs: w.macs,
                            elements: w.elementwise,
                            transcendental: e.unit == Unit::Sfp
                                && e.end - e.start > crate::latency::transcendental_above(w, lanes),
                        }
                    }),
                );
                let written = evs
                    .iter()
                    .filter(|e| e.dram == DramAccess::Write)
                    .map(|e| e.bytes)
                    .sum();
                let all_start = evs.iter().map(|e| e.start).fold(f64::INFINITY, f64::min);
                let all_end = evs.iter().map(|e| e.end).fold(0.0, f64::max);
                assert_eq!(
                    end - start,
                    all_end - all_start,
                    "no bookkeeping at either end"
                );
                (
                    macs,
                    read,
                    written,
                    cores.len(),
                    start,
                    end,
                    est.sequential_cycles,
                    est.overlapped_cycles,
                )
            })
            .collect()
    }

    fn reported(machine: &Machine, s: &Schedule, work: &[(usize, WorkCount)]) -> Vec<Figures> {
        let ks = kernels();
        let r = crate::roofline::compute(crate::roofline::Inputs {
            machine,
            schedule: s,
            work,
            kernels: &ks,
            total_cycles: s.total_cycles,
            unique_dram_bytes: 1,
        });
        let l = crate::latency::compute(crate::latency::Inputs {
            machine,
            schedule: s,
            work,
            kernels: &ks,
            total_cycles: s.total_cycles,
        });
        (0..ks.len())
            .map(|k| {
                let r = r.kernels.iter().find(|x| x.kernel == k).unwrap();
                let l = l.kernels.iter().find(|x| x.kernel == k).unwrap();
                (
                    r.macs,
                    r.dram_read_bytes,
                    r.dram_write_bytes,
                    r.cores_used,
                    r.achieved_cycles,
                    l.event_cycles,
                    l.sequential_cycles,
                    l.overlapped_cycles,
                )
            })
            .collect()
    }

    #[test]
    fn reports_by_distinct_launch_match_a_walk_over_every_event() {
        let machine = Machine::preset("tiny4").unwrap();
        // A bookkeeping task of 3 cycles; and one of 0, which takes no part anywhere.
        for idle in [3, 0] {
            let (s, work) = run(&machine, idle);
            assert_eq!(s.events.len() * 4, s.event_count());
            let want = walked(&machine, &s, &work);
            let got = reported(&machine, &s, &work);
            for (k, (w, g)) in want.iter().zip(&got).enumerate() {
                // Kernel 0 runs twice: its span covers both, the others' one launch.
                assert_eq!((w.0, w.1, w.2, w.3), (g.0, g.1, g.2, g.3), "kernel {k}");
                assert_eq!(w.5 - w.4, g.4, "roofline span of kernel {k}");
                assert_eq!(w.5 - w.4, g.5, "latency span of kernel {k}");
                assert_eq!(w.6.to_bits(), g.6.to_bits(), "latency of kernel {k}");
                assert_eq!(w.7.to_bits(), g.7.to_bits(), "latency of kernel {k}");
            }
            let total: u64 = s
                .event_refs()
                .filter(|e| takes_part(e.start, e.end, e.bytes))
                .count() as u64;
            for from in 0..s.event_count() {
                let walked = s
                    .event_refs()
                    .skip(from)
                    .filter(|e| takes_part(e.start, e.end, e.bytes))
                    .count() as u64;
                assert_eq!(count_taking_part(&s, from), walked, "from {from}");
            }
            assert_eq!(count_taking_part(&s, 0), total);
            // The per-layer breakdown: one layer per kernel, its span.
            let map = SourceMap {
                nodes: Vec::new(),
                ops: (0..3)
                    .map(|k| OpLink {
                        name: format!("layer{k}.mlp"),
                        kind: "add".into(),
                        node: None,
                        kernel: Some(k),
                        sdsc_lines: None,
                    })
                    .collect(),
                kernels: kernels(),
            };
            let layers = crate::layers::compute(&map, &s);
            assert_eq!(layers.len(), 3);
            for (k, l) in layers.iter().enumerate() {
                let evs: Vec<_> = s
                    .event_refs()
                    .filter(|e| crate::source_map::kernel_at(&map.kernels, e.line) == Some(k))
                    .collect();
                let start = evs.iter().map(|e| e.start).fold(f64::INFINITY, f64::min);
                let end = evs.iter().map(|e| e.end).fold(0.0, f64::max);
                assert_eq!(l.cycles, end - start, "layer {k}");
            }
        }
    }

    /// A launch placed far into a run can blur an event shorter than the rounding there:
    /// the reports then walk that launch's events rather than reuse its figures.
    #[test]
    fn a_launch_placed_past_its_events_precision_is_walked() {
        let stored = vec![Event {
            task: 0,
            unit: Unit::Sfp,
            core: 0,
            start: 0.25,
            end: 0.25 + 1e-9,
            bytes: 0,
            src_stop: None,
            dst_stop: None,
            hops: 0,
            dram: DramAccess::None,
            op: "arith.addf".into(),
            line: 2,
        }];
        let mut s = Schedule::of_events(stored);
        let mut far = s.launches[0].clone();
        far.start = 1e12;
        far.end += 1e12;
        far.first_task = 1;
        s.launches.push(far);
        assert!(s.launches[1].placement_error() > shortest_idle_duration(&s.events));
        let walked = s
            .event_refs()
            .filter(|e| takes_part(e.start, e.end, e.bytes))
            .count() as u64;
        // At 1e12 cycles the nanocycle-long event takes no time: only the first counts.
        assert_eq!(walked, 1);
        assert_eq!(count_taking_part(&s, 0), walked);
    }
}
