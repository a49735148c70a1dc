//! The roofline report of a run: per kernel, the arithmetic it did, the bytes it moved and
//! the fewest cycles the machine could do that in, against the cycles the schedule took.
//! Computed once per run from the schedule, the simulator's work counts and the source
//! map's kernels; every rate comes from the machine description.

use crate::by_launch::{shortest_idle_duration, takes_part, LineGroups, PerStored};
use crate::KernelLink;
use serde::Serialize;
use sim::timing::{DramAccess, Event, EventRef, LaunchSpan, Schedule, TaskId, Unit};
use sim::{Machine, WorkCount};
use std::collections::BTreeSet;

/// Which of the machine's rates limits a kernel (or the program) the most.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Bound {
    /// Off-chip memory bandwidth.
    Dram,
    /// The PT arrays' multiply-accumulate rate.
    Matmul,
    /// The SFP vector units' element rate.
    Vector,
}

impl Bound {
    /// A short name for tables.
    pub fn label(self) -> &'static str {
        match self {
            Bound::Dram => "dram",
            Bound::Matmul => "matmul",
            Bound::Vector => "vector",
        }
    }
}

/// The machine's rates a roofline divides by.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Rates {
    /// DRAM bytes per cycle: peak times the one-way efficiency.
    pub dram_bytes_per_cycle: f64,
    /// Peak multiply-accumulates per cycle per core.
    pub macs_per_cycle_per_core: f64,
    /// Element operations per cycle per core (SFP lanes of one corelet).
    pub elementwise_per_cycle_per_core: f64,
    /// Cores of the machine.
    pub cores: usize,
}

impl Rates {
    /// The rates of `machine`.
    pub fn of(machine: &Machine) -> Rates {
        Rates {
            dram_bytes_per_cycle: machine.dram_bytes_per_cycle(false),
            macs_per_cycle_per_core: machine.matmul_peak_macs_per_cycle_per_core.value,
            elementwise_per_cycle_per_core: machine.sfp_lanes.value as f64,
            cores: machine.cores.value,
        }
    }
}

/// The three lower bounds of some work, in cycles, and the one that applies.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Bounds {
    /// DRAM bytes / DRAM bytes per cycle.
    pub dram_cycles: f64,
    /// MACs / (cores x MACs per cycle per core).
    pub matmul_cycles: f64,
    /// Element operations / (cores x element operations per cycle per core).
    pub vector_cycles: f64,
    /// The largest of the three: no schedule of this work is faster.
    pub lower_bound_cycles: f64,
    /// Which one it is.
    pub bound: Bound,
}

/// `x / rate`, 0 when there is nothing to do or no rate to divide by.
fn over(x: f64, rate: f64) -> f64 {
    if x > 0.0 && rate > 0.0 && rate.is_finite() {
        x / rate
    } else {
        0.0
    }
}

/// The lower bounds of `work` moving `dram_bytes` on `cores` cores at `rates`.
pub fn bounds(rates: &Rates, work: WorkCount, dram_bytes: u64, cores: usize) -> Bounds {
    let cores = cores.max(1) as f64;
    let dram_cycles = over(dram_bytes as f64, rates.dram_bytes_per_cycle);
    let matmul_cycles = over(work.macs as f64, cores * rates.macs_per_cycle_per_core);
    let vector_cycles = over(
        work.elementwise as f64,
        cores * rates.elementwise_per_cycle_per_core,
    );
    let (bound, lower_bound_cycles) = [
        (Bound::Dram, dram_cycles),
        (Bound::Matmul, matmul_cycles),
        (Bound::Vector, vector_cycles),
    ]
    .into_iter()
    .fold(
        (Bound::Dram, 0.0),
        |best, (b, c)| {
            if c > best.1 {
                (b, c)
            } else {
                best
            }
        },
    );
    Bounds {
        dram_cycles,
        matmul_cycles,
        vector_cycles,
        lower_bound_cycles,
        bound,
    }
}

/// `achieved / bound` (0 when the bound is 0).
fn ratio(achieved: f64, bound: f64) -> f64 {
    if bound > 0.0 {
        achieved / bound
    } else {
        0.0
    }
}

/// One kernel's roofline figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct KernelRoofline {
    /// Index into `sourceMap.kernels`.
    pub kernel: usize,
    /// The KTIR function.
    pub func: String,
    /// Multiply-accumulates.
    #[cfg_attr(test, ts(type = "number"))]
    pub macs: u64,
    /// Element operations on the vector unit.
    #[cfg_attr(test, ts(type = "number"))]
    pub elementwise: u64,
    /// Bytes read from DRAM.
    #[cfg_attr(test, ts(type = "number"))]
    pub dram_read_bytes: u64,
    /// Bytes written to DRAM.
    #[cfg_attr(test, ts(type = "number"))]
    pub dram_write_bytes: u64,
    /// Bytes moved core to core over the ring (transfers that touch no memory stop).
    #[cfg_attr(test, ts(type = "number"))]
    pub ring_bytes: u64,
    /// Cores its events ran on.
    pub cores_used: usize,
    /// Its bounds over the bytes it moved, on the cores it used.
    pub bounds: Bounds,
    /// First event start to last event end.
    pub achieved_cycles: f64,
    /// `achievedCycles / bounds.lowerBoundCycles` (0 when the bound is 0).
    pub ratio: f64,
}

impl KernelRoofline {
    /// The work the chart plots: MACs, or element operations for a kernel without any.
    pub fn work(&self) -> u64 {
        if self.macs > 0 {
            self.macs
        } else {
            self.elementwise
        }
    }
}

/// The whole program's roofline.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ProgramRoofline {
    /// Multiply-accumulates.
    #[cfg_attr(test, ts(type = "number"))]
    pub macs: u64,
    /// Element operations.
    #[cfg_attr(test, ts(type = "number"))]
    pub elementwise: u64,
    /// Bytes read from DRAM.
    #[cfg_attr(test, ts(type = "number"))]
    pub dram_read_bytes: u64,
    /// Bytes written to DRAM.
    #[cfg_attr(test, ts(type = "number"))]
    pub dram_write_bytes: u64,
    /// Every input, weight and output counted once (graphs), or every buffer (KTIR).
    #[cfg_attr(test, ts(type = "number"))]
    pub unique_dram_bytes: u64,
    /// Core-to-core ring bytes.
    #[cfg_attr(test, ts(type = "number"))]
    pub ring_bytes: u64,
    /// Bounds over the unique bytes, on every core.
    pub bounds: Option<Bounds>,
    /// Modelled cycles of the run.
    pub achieved_cycles: f64,
    /// `achievedCycles / bounds.lowerBoundCycles`.
    pub ratio: f64,
    /// `(dramReadBytes + dramWriteBytes) / uniqueDramBytes`: how often data crossed the
    /// DRAM interface (0 when unknown).
    pub reread_factor: f64,
}

/// The roofline report of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Roofline {
    /// The machine's rates (none before a run).
    pub rates: Option<Rates>,
    /// One entry per kernel that ran, in source-map order.
    pub kernels: Vec<KernelRoofline>,
    /// The whole program.
    pub program: ProgramRoofline,
    /// What the figures assume.
    pub assumptions: Vec<String>,
}

/// What a roofline is computed from.
pub(crate) struct Inputs<'a> {
    pub machine: &'a Machine,
    /// The run's events (read through [`Schedule::events_with_source`]).
    pub schedule: &'a Schedule,
    /// The arithmetic of the compute tasks, by recorded task id.
    pub work: &'a [(TaskId, WorkCount)],
    pub kernels: &'a [KernelLink],
    pub total_cycles: f64,
    pub unique_dram_bytes: u64,
}

/// Running totals of one kernel (or the program).
#[derive(Default)]
struct Tally {
    work: WorkCount,
    read: u64,
    written: u64,
    ring: u64,
    cores: BTreeSet<usize>,
    start: f64,
    end: f64,
    any: bool,
}

impl Tally {
    fn add(&mut self, e: &EventRef<'_>, work: Option<WorkCount>) {
        if let Some(w) = work {
            self.work.macs = self.work.macs.saturating_add(w.macs);
            self.work.elementwise = self.work.elementwise.saturating_add(w.elementwise);
        }
        match (e.unit, e.dram) {
            (Unit::Dma, DramAccess::Read) => self.read = self.read.saturating_add(e.bytes),
            (Unit::Dma, DramAccess::Write) => self.written = self.written.saturating_add(e.bytes),
            (Unit::Dma, DramAccess::None) => self.ring = self.ring.saturating_add(e.bytes),
            _ => {}
        }
        if takes_part(e.start, e.end, e.bytes) {
            self.cores.insert(e.core);
            self.span(e.start, e.end);
        }
    }

    /// Widens the span of the events taking part to `start..end`.
    fn span(&mut self, start: f64, end: f64) {
        if self.any {
            self.start = self.start.min(start);
            self.end = self.end.max(end);
        } else {
            (self.start, self.end, self.any) = (start, end, true);
        }
    }

    /// Adds the events of one line of a distinct launch as `launch` places them (their
    /// figures are the same wherever it runs; their span moves by its start).
    fn add_placed(&mut self, line: &Tally, launch: &LaunchSpan) {
        self.work.macs = self.work.macs.saturating_add(line.work.macs);
        self.work.elementwise = self.work.elementwise.saturating_add(line.work.elementwise);
        self.read = self.read.saturating_add(line.read);
        self.written = self.written.saturating_add(line.written);
        self.ring = self.ring.saturating_add(line.ring);
        if line.any {
            self.cores.extend(line.cores.iter().copied());
            self.span(launch.place(line.start), launch.place(line.end));
        }
    }
}

/// One distinct launch's events tallied per source line, and the shortest duration the
/// placement of a repeat must not blur ([`crate::by_launch::shortest_idle_duration`]).
struct StoredTally {
    groups: LineGroups,
    lines: Vec<Tally>,
    shortest_idle: f64,
}

impl StoredTally {
    fn of(stored: &[Event], work: &[WorkCount]) -> StoredTally {
        let groups = LineGroups::of(stored);
        let mut lines: Vec<Tally> = groups.lines.iter().map(|_| Tally::default()).collect();
        for (e, &g) in stored.iter().zip(&groups.of_event) {
            lines[g as usize].add(&e.view(), work.get(e.task).copied());
        }
        StoredTally {
            groups,
            lines,
            shortest_idle: shortest_idle_duration(stored),
        }
    }
}

/// The assumptions every roofline makes, with the machine's figures in them.
fn assumptions(rates: &Rates) -> Vec<String> {
    vec![
        format!(
            "DRAM bound: bytes / {:.1} B/cycle (peak x one-way efficiency; mixed read/write traffic is slower)",
            rates.dram_bytes_per_cycle
        ),
        format!(
            "matmul bound: MACs / (cores used x {} MAC/cycle), the peak rate; the PT array's pipeline fill is ignored",
            rates.macs_per_cycle_per_core
        ),
        format!(
            "vector bound: element operations / (cores used x {} lanes), one corelet; transcendental cost ignored",
            rates.elementwise_per_cycle_per_core
        ),
        "a kernel's bound uses the DRAM bytes it moved; the program's uses unique bytes (inputs, weights and outputs once), so re-reads show in its ratio".into(),
        "MACs and element operations as the cores executed them, padding to whole sticks included".into(),
        "ring bytes: core-to-core transfers only (DRAM traffic also crosses the ring)".into(),
        "cycles at the machine's clock (assumed)".into(),
    ]
}

/// The work counts indexed by recorded task id (zero for a task that did no arithmetic;
/// a later count of the same task wins), so reports over millions of events look each
/// one up without a search.
pub(crate) fn work_by_task(work: &[(TaskId, WorkCount)]) -> Vec<WorkCount> {
    let len = work
        .iter()
        .map(|(t, _)| t.saturating_add(1))
        .max()
        .unwrap_or(0);
    let mut by_task = vec![WorkCount::default(); len];
    for &(t, w) in work {
        by_task[t] = w;
    }
    by_task
}

/// The roofline of a finished run.
pub(crate) fn compute(inp: Inputs<'_>) -> Roofline {
    let rates = Rates::of(inp.machine);
    let work = work_by_task(inp.work);
    let mut per_kernel: Vec<Tally> = inp.kernels.iter().map(|_| Tally::default()).collect();
    let mut program = Tally::default();
    let mut per: PerStored<StoredTally> = PerStored::new();
    for l in &inp.schedule.launches {
        let stored = per.get(inp.schedule, l, |stored| StoredTally::of(stored, &work));
        if l.placement_error() < stored.shortest_idle {
            let kernels = stored.groups.kernels(l, inp.kernels);
            for (line, k) in stored.lines.iter().zip(kernels) {
                program.add_placed(line, l);
                if let Some(k) = k {
                    per_kernel[k].add_placed(line, l);
                }
            }
            continue;
        }
        // Placing it could make a short event take no time: event by event.
        for e in inp.schedule.launch_event_refs(l) {
            let w = work.get(e.source).copied();
            program.add(&e, w);
            if let Some(k) = crate::source_map::kernel_at(inp.kernels, e.line) {
                per_kernel[k].add(&e, w);
            }
        }
    }
    let kernels = per_kernel
        .into_iter()
        .enumerate()
        .filter(|(_, t)| t.any)
        .map(|(i, t)| {
            let cores_used = t.cores.len().max(1);
            let b = bounds(&rates, t.work, t.read.saturating_add(t.written), cores_used);
            let achieved = t.end - t.start;
            KernelRoofline {
                kernel: i,
                func: inp.kernels[i].func.clone(),
                macs: t.work.macs,
                elementwise: t.work.elementwise,
                dram_read_bytes: t.read,
                dram_write_bytes: t.written,
                ring_bytes: t.ring,
                cores_used,
                bounds: b,
                achieved_cycles: achieved,
                ratio: ratio(achieved, b.lower_bound_cycles),
            }
        })
        .collect();
    let pb = bounds(&rates, program.work, inp.unique_dram_bytes, rates.cores);
    let moved = program.read.saturating_add(program.written);
    Roofline {
        rates: Some(rates),
        kernels,
        program: ProgramRoofline {
            macs: program.work.macs,
            elementwise: program.work.elementwise,
            dram_read_bytes: program.read,
            dram_write_bytes: program.written,
            unique_dram_bytes: inp.unique_dram_bytes,
            ring_bytes: program.ring,
            bounds: Some(pb),
            achieved_cycles: inp.total_cycles,
            ratio: ratio(inp.total_cycles, pb.lower_bound_cycles),
            reread_factor: if inp.unique_dram_bytes > 0 {
                moved as f64 / inp.unique_dram_bytes as f64
            } else {
                0.0
            },
        },
        assumptions: assumptions(&rates),
    }
}

/// Bytes of every graph input, weight and output, each once, at its dtype's size.
pub(crate) fn graph_unique_bytes(graph: &graph::Graph) -> u64 {
    let Ok(types) = graph.infer_types() else {
        return 0;
    };
    let names: BTreeSet<&str> = graph
        .inputs
        .iter()
        .map(|v| v.name.as_str())
        .chain(graph.initializers.iter().map(|i| i.name.as_str()))
        .chain(graph.outputs.iter().map(String::as_str))
        .collect();
    names
        .into_iter()
        .filter_map(|n| types.get(n))
        .map(|t| (t.numel() as u64).saturating_mul(t.dtype.size_bytes() as u64))
        .fold(0u64, u64::saturating_add)
}

/// Bytes of every buffer of a KTIR run, each once.
pub(crate) fn buffer_unique_bytes(buffers: &[(crate::BufferSpec, Vec<f32>)]) -> u64 {
    buffers
        .iter()
        .map(|(b, _)| {
            let size = ktir::ast::ScalarType::parse(&b.elem).map_or(4, |t| t.size_bytes());
            (b.elements as u64).saturating_mul(size as u64)
        })
        .fold(0u64, u64::saturating_add)
}

/// The report as a table and a whole-program line, for `spyre run --roofline`.
pub fn render(r: &Roofline) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:<28} {:>14} {:>12} {:>12} {:>12} {:>10} {:>5} {:>12} {:>7} {:>12} {:>6}\n",
        "kernel",
        "MACs",
        "elementwise",
        "DRAM read",
        "DRAM write",
        "ring",
        "cores",
        "bound cyc",
        "by",
        "achieved",
        "ratio"
    ));
    for k in &r.kernels {
        out.push_str(&format!(
            "{:<28} {:>14} {:>12} {:>12} {:>12} {:>10} {:>5} {:>12.0} {:>7} {:>12.0} {:>6.2}\n",
            k.func,
            k.macs,
            k.elementwise,
            k.dram_read_bytes,
            k.dram_write_bytes,
            k.ring_bytes,
            k.cores_used,
            k.bounds.lower_bound_cycles,
            k.bounds.bound.label(),
            k.achieved_cycles,
            k.ratio
        ));
    }
    let p = &r.program;
    if let Some(b) = &p.bounds {
        out.push_str(&format!(
            "program: {:.0} cycles, bound {:.0} ({}: dram {:.0}, matmul {:.0}, vector {:.0}), ratio {:.2}; \
             DRAM read {} B, written {} B, unique {} B (x{:.2}); {} MACs, {} element ops\n",
            p.achieved_cycles,
            b.lower_bound_cycles,
            b.bound.label(),
            b.dram_cycles,
            b.matmul_cycles,
            b.vector_cycles,
            p.ratio,
            p.dram_read_bytes,
            p.dram_write_bytes,
            p.unique_dram_bytes,
            p.reread_factor,
            p.macs,
            p.elementwise
        ));
    }
    for a in &r.assumptions {
        out.push_str(&format!("assumption: {a}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LineRange;
    use sim::timing::Event;

    fn spyre32() -> Rates {
        Rates::of(&Machine::preset("spyre32").unwrap())
    }

    #[test]
    fn a_matmul_tile_is_bound_by_whichever_rate_is_slower() {
        let r = spyre32();
        // 204.8 B/cycle x 0.732421875 one-way efficiency, 1536 MAC/cycle/core, 64 lanes.
        assert!((r.dram_bytes_per_cycle - 150.0).abs() < 1e-9);
        assert_eq!(r.macs_per_cycle_per_core, 1536.0);
        assert_eq!(r.elementwise_per_cycle_per_core, 64.0);
        // 256x256x256 fp16 on 4 cores: 16,777,216 MACs / (4 x 1536) = 2730.67 cycles;
        // A, B and C once: 3 x 131,072 B / 150 = 2621.44 cycles.
        let work = WorkCount {
            macs: 256 * 256 * 256,
            elementwise: 0,
        };
        let b = bounds(&r, work, 3 * 256 * 256 * 2, 4);
        assert!(
            (b.matmul_cycles - 16_777_216.0 / 6144.0).abs() < 1e-9,
            "{b:?}"
        );
        assert!((b.dram_cycles - 2621.44).abs() < 1e-9, "{b:?}");
        assert_eq!(b.vector_cycles, 0.0);
        assert_eq!(b.bound, Bound::Matmul);
        assert_eq!(b.lower_bound_cycles, b.matmul_cycles);
        // The same tile on 8 cores: compute halves and memory now limits it.
        let b = bounds(&r, work, 3 * 256 * 256 * 2, 8);
        assert_eq!(b.bound, Bound::Dram);
        // 65,536 element operations on 2 cores of 64 lanes: 512 cycles of SFP.
        let add = WorkCount {
            macs: 0,
            elementwise: 65_536,
        };
        let b = bounds(&r, add, 0, 2);
        assert_eq!((b.vector_cycles, b.bound), (512.0, Bound::Vector));
        assert_eq!(
            bounds(&r, WorkCount::default(), 0, 0).lower_bound_cycles,
            0.0
        );
    }

    fn event(
        task: usize,
        unit: Unit,
        core: usize,
        span: (f64, f64),
        bytes: u64,
        dram: DramAccess,
    ) -> Event {
        Event {
            task,
            unit,
            core,
            start: span.0,
            end: span.1,
            bytes,
            src_stop: None,
            dst_stop: None,
            hops: 0,
            dram,
            op: "".into(),
            line: 2,
        }
    }

    #[test]
    fn kernels_total_their_events_and_the_program_uses_unique_bytes() {
        let machine = Machine::preset("spyre32").unwrap();
        let events = vec![
            event(0, Unit::Dma, 0, (0.0, 100.0), 4096, DramAccess::Read),
            event(1, Unit::Dma, 1, (0.0, 100.0), 4096, DramAccess::Read),
            event(2, Unit::Pt, 0, (100.0, 300.0), 0, DramAccess::None),
            event(3, Unit::Pt, 1, (100.0, 300.0), 0, DramAccess::None),
            event(4, Unit::Dma, 0, (300.0, 350.0), 2048, DramAccess::None),
            event(5, Unit::Dma, 1, (350.0, 400.0), 2048, DramAccess::Write),
        ];
        let mm = WorkCount {
            macs: 64 * 64 * 64,
            elementwise: 0,
        };
        let kernels = vec![KernelLink {
            func: "mm".into(),
            lines: LineRange { from: 1, to: 9 },
            op: None,
            events: Vec::new(),
        }];
        let r = compute(Inputs {
            machine: &machine,
            schedule: &Schedule::of_events(events),
            work: &[(2, mm), (3, mm)],
            kernels: &kernels,
            total_cycles: 400.0,
            unique_dram_bytes: 6144,
        });
        let k = &r.kernels[0];
        assert_eq!((k.macs, k.cores_used), (2 * 64 * 64 * 64, 2));
        assert_eq!(
            (k.dram_read_bytes, k.dram_write_bytes, k.ring_bytes),
            (8192, 2048, 2048)
        );
        assert_eq!(k.achieved_cycles, 400.0);
        // 10,240 B / 150 = 68.27 cycles; 524,288 MACs / 3072 = 170.67 cycles.
        assert_eq!(k.bounds.bound, Bound::Matmul);
        assert!((k.ratio - 400.0 / (524_288.0 / 3072.0)).abs() < 1e-9);
        let p = &r.program;
        assert_eq!(p.unique_dram_bytes, 6144);
        assert!((p.reread_factor - 10_240.0 / 6144.0).abs() < 1e-12);
        let pb = p.bounds.unwrap();
        assert!((pb.matmul_cycles - 524_288.0 / (32.0 * 1536.0)).abs() < 1e-9);
        assert!(render(&r).contains("program: 400 cycles"));
    }
}
