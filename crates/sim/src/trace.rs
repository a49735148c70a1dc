//! Trace exports and the utilisation summary of a [`Schedule`].
//!
//! - [`summarize`] condenses a schedule into per-core unit utilisation, bytes per link and
//!   DRAM traffic, and names the bottleneck (`memory`, `compute` or `communication`).
//! - [`chrome_trace_json`] writes the Chrome trace event format, which opens in Perfetto
//!   (ui.perfetto.dev) and `chrome://tracing`.

use crate::machine::{LinkId, Machine, StopKind};
use crate::timing::{DramAccess, Schedule, Unit};
use serde::Serialize;
use std::collections::BTreeMap;

/// Busy time of one serial unit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnitUsage {
    pub busy_cycles: f64,
    /// `busy_cycles / total_cycles` (0 for an empty schedule).
    pub utilisation: f64,
    pub tasks: usize,
}

/// Per-core figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoreSummary {
    pub core: usize,
    pub dma: UnitUsage,
    pub pt: UnitUsage,
    pub sfp: UnitUsage,
    /// Bytes moved by this core's DMA engine.
    pub dma_bytes: u64,
}

/// Per-link figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkSummary {
    pub link: LinkId,
    /// `s<from>-cw` / `s<from>-ccw`.
    pub name: String,
    pub from_stop: usize,
    pub to_stop: usize,
    pub bytes: u64,
    /// `bytes / (link bandwidth * total_cycles)`.
    pub utilisation: f64,
}

/// What limits the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bottleneck {
    Memory,
    Compute,
    Communication,
}

/// A condensed view of a schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub machine: String,
    pub total_cycles: f64,
    pub clock_ghz: f64,
    /// `total_cycles` converted with the machine clock.
    pub time_us: f64,
    pub cores: Vec<CoreSummary>,
    /// Every link, in [`LinkId::index`] order.
    pub links: Vec<LinkSummary>,
    pub dram_read_bytes: u64,
    pub dram_write_bytes: u64,
    /// Fraction of the run during which DRAM delivered its effective bandwidth: the time
    /// integral of `(read + write rate) / capacity`, where capacity uses the mixed efficiency
    /// while reads and writes overlap and the one-way efficiency otherwise, divided by
    /// `total_cycles`.
    pub dram_utilisation: f64,
    pub bottleneck: Bottleneck,
    /// One line explaining the choice.
    pub bottleneck_reason: String,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        (a / b).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// Formats a byte count with a binary unit.
fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// DRAM busy fraction from the rate samples (see [`Summary::dram_utilisation`]); falls back to
/// bytes over one-way bandwidth when samples were truncated.
fn dram_utilisation(machine: &Machine, schedule: &Schedule) -> f64 {
    let total = schedule.total_cycles;
    if total <= 0.0 {
        return 0.0;
    }
    if schedule.rates_truncated {
        let bytes = schedule.dram_read_bytes as f64 + schedule.dram_write_bytes as f64;
        return ratio(bytes, machine.dram_bytes_per_cycle(false) * total);
    }
    let mut busy = 0.0;
    for (i, r) in schedule.dram_rates.iter().enumerate() {
        let until = schedule
            .dram_rates
            .get(i + 1)
            .map(|n| n.time)
            .unwrap_or(total);
        let mixed = r.read_bytes_per_cycle > 0.0 && r.write_bytes_per_cycle > 0.0;
        let cap = machine.dram_bytes_per_cycle(mixed);
        let load = r.read_bytes_per_cycle + r.write_bytes_per_cycle;
        busy += ratio(load, cap) * (until - r.time).max(0.0);
    }
    ratio(busy, total)
}

/// Summarises a schedule produced for `machine`.
pub fn summarize(machine: &Machine, schedule: &Schedule) -> Summary {
    let total = schedule.total_cycles;
    let cores_n = machine.cores.value;
    let stop_count = machine.stop_count();
    let mut busy = vec![[0.0f64; 3]; cores_n];
    let mut counts = vec![[0usize; 3]; cores_n];
    let mut dma_bytes = vec![0u64; cores_n];
    // Counts and bytes are the same for every launch placing the same stored events, so
    // they are added once per distinct launch and multiplied. Busy time is summed event by
    // event in run order over the placed times, as rounding makes each placed duration
    // depend on where its launch starts, but without building the run's events.
    // Per distinct launch (its stored events' range): tasks per core and unit, DMA bytes
    // per core, and how many launches place it.
    type Stored = (Vec<[usize; 3]>, Vec<u64>, usize);
    let mut per_stored: BTreeMap<(usize, usize), Stored> = BTreeMap::new();
    for l in &schedule.launches {
        let stored = schedule.stored_events(l);
        for e in stored {
            if e.core < cores_n {
                busy[e.core][e.unit.index()] += (l.place(e.end) - l.place(e.start)).max(0.0);
            }
        }
        let entry = per_stored
            .entry((l.events.start, l.events.end))
            .or_insert_with(|| {
                let mut c = vec![[0usize; 3]; cores_n];
                let mut b = vec![0u64; cores_n];
                for e in stored.iter().filter(|e| e.core < cores_n) {
                    c[e.core][e.unit.index()] += 1;
                    if e.unit == Unit::Dma {
                        b[e.core] = b[e.core].saturating_add(e.bytes);
                    }
                }
                (c, b, 0)
            });
        entry.2 += 1;
    }
    for (c, b, times) in per_stored.values() {
        for core in 0..cores_n {
            for u in 0..3 {
                counts[core][u] += c[core][u] * times;
            }
            dma_bytes[core] = dma_bytes[core].saturating_add(b[core].saturating_mul(*times as u64));
        }
    }
    let usage = |c: usize, u: usize| UnitUsage {
        busy_cycles: busy[c][u],
        utilisation: ratio(busy[c][u], total),
        tasks: counts[c][u],
    };
    let cores: Vec<CoreSummary> = (0..cores_n)
        .map(|c| CoreSummary {
            core: c,
            dma: usage(c, 0),
            pt: usage(c, 1),
            sfp: usage(c, 2),
            dma_bytes: dma_bytes[c],
        })
        .collect();
    let link_cap = machine.ring_bytes_per_cycle_per_direction.value;
    let links: Vec<LinkSummary> = schedule
        .link_bytes
        .iter()
        .map(|(link, bytes)| LinkSummary {
            link: *link,
            name: link.to_string(),
            from_stop: link.from_stop,
            to_stop: link.to_stop(stop_count),
            bytes: *bytes,
            utilisation: ratio(*bytes as f64, link_cap * total),
        })
        .collect();
    let dram_util = dram_utilisation(machine, schedule);

    // Busiest resource of each kind; first one wins ties, so results are deterministic.
    let busiest_link = links
        .iter()
        .fold(None::<&LinkSummary>, |best, l| match best {
            Some(b) if b.utilisation >= l.utilisation => Some(b),
            _ => Some(l),
        });
    let mut busiest_compute: Option<(usize, Unit, f64)> = None;
    let mut busiest_dma: Option<(usize, f64)> = None;
    for c in &cores {
        for (unit, u) in [(Unit::Pt, &c.pt), (Unit::Sfp, &c.sfp)] {
            if busiest_compute.is_none_or(|(_, _, best)| u.utilisation > best) {
                busiest_compute = Some((c.core, unit, u.utilisation));
            }
        }
        if busiest_dma.is_none_or(|(_, best)| c.dma.utilisation > best) {
            busiest_dma = Some((c.core, c.dma.utilisation));
        }
    }
    let link_util = busiest_link.map(|l| l.utilisation).unwrap_or(0.0);
    let compute_util = busiest_compute.map(|b| b.2).unwrap_or(0.0);
    let dma_util = busiest_dma.map(|b| b.1).unwrap_or(0.0);

    let link_text = busiest_link
        .map(|l| format!("busiest link {} {}", l.name, pct(l.utilisation)))
        .unwrap_or_else(|| "no links".into());
    let compute_text = busiest_compute
        .map(|(c, u, x)| format!("busiest compute unit core {c} {} {}", u.label(), pct(x)))
        .unwrap_or_else(|| "no compute units".into());
    let dram_text = format!(
        "DRAM busy {} ({} read, {} written)",
        pct(dram_util),
        human_bytes(schedule.dram_read_bytes),
        human_bytes(schedule.dram_write_bytes)
    );

    // A DMA engine is busy whenever its transfers stream, so DMA time only decides the
    // verdict when neither DRAM nor any link is near saturation (latency-bound transfers).
    let latency_bound = dram_util.max(link_util) < 0.5
        && dma_util > compute_util
        && dma_util > dram_util.max(link_util);
    let (bottleneck, reason) = if schedule.event_count() == 0 || total <= 0.0 {
        (Bottleneck::Compute, "nothing took any time".to_string())
    } else if latency_bound {
        let (c, x) = busiest_dma.unwrap_or((0, 0.0));
        (
            Bottleneck::Communication,
            format!(
                "core {c} DMA busy {} with neither DRAM nor links saturated (transfer setup and hop latency dominate); {dram_text}; {link_text}; {compute_text}",
                pct(x)
            ),
        )
    } else if dram_util >= link_util && dram_util >= compute_util {
        (
            Bottleneck::Memory,
            format!("{dram_text}; {link_text}; {compute_text}"),
        )
    } else if link_util >= compute_util {
        (
            Bottleneck::Communication,
            format!("{link_text}; {dram_text}; {compute_text}"),
        )
    } else {
        (
            Bottleneck::Compute,
            format!("{compute_text}; {dram_text}; {link_text}"),
        )
    };

    Summary {
        machine: machine.name.clone(),
        total_cycles: total,
        clock_ghz: machine.clock_ghz.value,
        time_us: machine.cycles_to_us(total),
        cores,
        links,
        dram_read_bytes: schedule.dram_read_bytes,
        dram_write_bytes: schedule.dram_write_bytes,
        dram_utilisation: dram_util,
        bottleneck,
        bottleneck_reason: reason,
    }
}

/// Process id of the "ring & DRAM" counters process; cores use pids `0..cores` and memory
/// stop `j` (in listed order) uses `cores + 1 + j`.
fn ring_pid(machine: &Machine) -> usize {
    machine.cores.value
}

/// Chrome trace event format (`{"traceEvents": [...]}`), for Perfetto and chrome://tracing.
///
/// - One process per core (pid = core index) with threads `DMA` (tid 0), `PT` (tid 1) and
///   `SFP` (tid 2), named with `M` metadata events; one complete (`X`) event per task, with
///   `ts`/`dur` in microseconds and `args` holding task, bytes, op, line and stops.
/// - One process per memory stop (pid = cores + 1 + j) with a thread per core that touched
///   it (tid = core), holding an `X` event per DRAM transfer; flow events (`s` then `f`) link
///   the memory-stop slice and the core's DMA slice in the direction the data moves.
/// - A `ring & DRAM` process (pid = cores) with counter (`C`) events: per-link load in
///   bytes/cycle and DRAM read/write rates.
pub fn chrome_trace_json(machine: &Machine, schedule: &Schedule) -> String {
    let us = |cycles: f64| machine.cycles_to_us(cycles);
    let cores = machine.cores.value;
    let stop_names: Vec<String> = machine
        .stops()
        .into_iter()
        .map(|s| match s.kind {
            StopKind::Core(c) => format!("core{c}"),
            StopKind::Memory(name) => name,
        })
        .collect();
    let stop_name = |s: usize| -> &str { stop_names.get(s).map(String::as_str).unwrap_or("?") };
    let memory_ids = machine.memory_stop_ids();
    let memory_pid = |stop: usize| {
        memory_ids
            .iter()
            .position(|&m| m == stop)
            .map(|j| cores + 1 + j)
    };
    let rp = ring_pid(machine);

    let mut w = TraceWriter::new();
    for c in 0..cores {
        w.meta(c, 0, "process_name", named(format!("core {c}")));
        w.meta(c, 0, "process_sort_index", sorted(c));
        for u in Unit::ALL {
            w.meta(c, u.index(), "thread_name", named(u.label().into()));
            w.meta(c, u.index(), "thread_sort_index", sorted(u.index()));
        }
    }
    w.meta(rp, 0, "process_name", named("ring & DRAM".into()));
    w.meta(rp, 0, "process_sort_index", sorted(rp));
    for (j, m) in machine.memory_stops.value.iter().enumerate() {
        let pid = cores + 1 + j;
        w.meta(
            pid,
            0,
            "process_name",
            named(format!("memory stop {}", m.name)),
        );
        w.meta(pid, 0, "process_sort_index", sorted(pid));
    }

    let mut memory_threads: Vec<(usize, usize)> = Vec::new();
    for e in schedule.event_refs() {
        let e = &e;
        let transfer = match (e.src_stop, e.dst_stop) {
            (Some(src), Some(dst)) => Some((src, dst)),
            _ => None,
        };
        let args = TaskArgs {
            task: e.task,
            bytes: e.bytes,
            op: e.op,
            line: e.line,
            cycles: e.end - e.start,
            src_stop: transfer.map(|t| t.0),
            dst_stop: transfer.map(|t| t.1),
            src: transfer.map(|t| stop_name(t.0)),
            dst: transfer.map(|t| stop_name(t.1)),
            hops: transfer.map(|_| e.hops),
        };
        let name = if e.op.is_empty() {
            e.unit.label()
        } else {
            e.op
        };
        let mut slice = TraceEvent {
            name,
            cat: Some(e.unit.label()),
            ph: "X",
            pid: e.core,
            tid: e.unit.index(),
            ts: Some(us(e.start)),
            dur: Some(us((e.end - e.start).max(0.0))),
            id: None,
            bp: None,
            args: Some(Args::Task(args)),
        };
        w.event(&slice);
        // The memory-stop side of a DRAM transfer, and the flow between the two slices.
        let mem_side = match (e.dram, transfer) {
            (DramAccess::Read, Some((src, _))) => memory_pid(src).map(|p| (p, true)),
            (DramAccess::Write, Some((_, dst))) => memory_pid(dst).map(|p| (p, false)),
            _ => None,
        };
        if let Some((pid, read)) = mem_side {
            if !memory_threads.contains(&(pid, e.core)) {
                memory_threads.push((pid, e.core));
            }
            slice.pid = pid;
            slice.tid = e.core;
            w.event(&slice);
            let core_end = (e.core, Unit::Dma.index());
            let mem_end = (pid, e.core);
            let (from, to) = if read {
                (mem_end, core_end)
            } else {
                (core_end, mem_end)
            };
            let name = if read { "dram read" } else { "dram write" };
            let mid = Some(us((e.start + e.end) / 2.0));
            for (ph, (pid, tid), bp) in [("s", from, None), ("f", to, Some("e"))] {
                w.event(&TraceEvent {
                    name,
                    cat: Some("dram"),
                    ph,
                    pid,
                    tid,
                    ts: mid,
                    dur: None,
                    id: Some(e.task),
                    bp,
                    args: None,
                });
            }
        }
    }
    for (pid, core) in memory_threads {
        w.meta(pid, core, "thread_name", named(format!("core {core} DMA")));
    }

    let mut link_names: Vec<Option<String>> = vec![None; 2 * machine.stop_count()];
    for r in &schedule.link_rates {
        let i = r.link.index();
        let name = match link_names.get_mut(i) {
            Some(slot) => slot
                .get_or_insert_with(|| format!("link {}", r.link))
                .clone(),
            None => format!("link {}", r.link),
        };
        w.event(&TraceEvent {
            name: &name,
            cat: None,
            ph: "C",
            pid: rp,
            tid: 0,
            ts: Some(us(r.time)),
            dur: None,
            id: None,
            bp: None,
            args: Some(Args::Link {
                bytes_per_cycle: r.bytes_per_cycle,
            }),
        });
    }
    for r in &schedule.dram_rates {
        w.event(&TraceEvent {
            name: "DRAM",
            cat: None,
            ph: "C",
            pid: rp,
            tid: 0,
            ts: Some(us(r.time)),
            dur: None,
            id: None,
            bp: None,
            args: Some(Args::Dram {
                read: r.read_bytes_per_cycle,
                write: r.write_bytes_per_cycle,
            }),
        });
    }

    let other = OtherData {
        machine: &machine.name,
        total_cycles: schedule.total_cycles,
        clock_ghz: machine.clock_ghz.value,
        rates_truncated: schedule.rates_truncated,
    };
    w.finish(&other)
}

/// One Chrome trace event; optional fields are omitted when `None`.
#[derive(Serialize)]
struct TraceEvent<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'a str>,
    ph: &'a str,
    pid: usize,
    tid: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Args<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Args<'a> {
    Name { name: String },
    Sort { sort_index: usize },
    Task(TaskArgs<'a>),
    Link { bytes_per_cycle: f64 },
    Dram { read: f64, write: f64 },
}

#[derive(Serialize)]
struct TaskArgs<'a> {
    task: usize,
    bytes: u64,
    op: &'a str,
    line: u32,
    cycles: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    src_stop: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dst_stop: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    src: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dst: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hops: Option<usize>,
}

#[derive(Serialize)]
struct OtherData<'a> {
    machine: &'a str,
    total_cycles: f64,
    clock_ghz: f64,
    rates_truncated: bool,
}

fn named(name: String) -> Args<'static> {
    Args::Name { name }
}

fn sorted(sort_index: usize) -> Args<'static> {
    Args::Sort { sort_index }
}

/// Streams events into one JSON document without building a tree.
struct TraceWriter {
    buf: Vec<u8>,
    first: bool,
}

impl TraceWriter {
    fn new() -> Self {
        TraceWriter {
            buf: b"{\"traceEvents\":[".to_vec(),
            first: true,
        }
    }

    fn event(&mut self, e: &TraceEvent<'_>) {
        if !self.first {
            self.buf.push(b',');
        }
        // Serialising plain structs into a Vec cannot fail; on the impossible error the event
        // is dropped rather than corrupting the document.
        let mark = self.buf.len();
        if serde_json::to_writer(&mut self.buf, e).is_err() {
            self.buf.truncate(if self.first { mark } else { mark - 1 });
            return;
        }
        self.first = false;
    }

    fn meta(&mut self, pid: usize, tid: usize, name: &str, args: Args<'_>) {
        self.event(&TraceEvent {
            name,
            cat: None,
            ph: "M",
            pid,
            tid,
            ts: None,
            dur: None,
            id: None,
            bp: None,
            args: Some(args),
        });
    }

    fn finish(mut self, other: &OtherData<'_>) -> String {
        self.buf
            .extend_from_slice(b"],\"displayTimeUnit\":\"ns\",\"otherData\":");
        if serde_json::to_writer(&mut self.buf, other).is_err() {
            self.buf.extend_from_slice(b"{}");
        }
        self.buf.push(b'}');
        String::from_utf8(self.buf).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::{schedule, Deps, Limits, Task, Work};
    use serde_json::{json, Value};

    fn load(m: &Machine, core: usize, bytes: u64) -> Task {
        Task {
            core,
            unit: Unit::Dma,
            work: Work::Transfer {
                src_stop: m.nearest_memory_stop(core),
                dst_stop: m.core_stop(core),
                bytes,
                dram: DramAccess::Read,
            },
            deps: Deps::new(),
            op: "ktdp.load".into(),
            line: 3,
        }
    }

    fn store(m: &Machine, core: usize, bytes: u64, deps: Vec<usize>) -> Task {
        Task {
            core,
            unit: Unit::Dma,
            work: Work::Transfer {
                src_stop: m.core_stop(core),
                dst_stop: m.nearest_memory_stop(core),
                bytes,
                dram: DramAccess::Write,
            },
            deps: deps.into(),
            op: "ktdp.store".into(),
            line: 9,
        }
    }

    fn compute(core: usize, unit: Unit, cycles: u64, deps: Vec<usize>) -> Task {
        Task {
            core,
            unit,
            work: Work::Compute { cycles },
            deps: deps.into(),
            op: "linalg.matmul".into(),
            line: 5,
        }
    }

    /// Per core: load, matmul, sfp, store.
    fn program(m: &Machine, load_bytes: u64, pt_cycles: u64) -> Vec<Task> {
        let mut tasks = Vec::new();
        for c in 0..m.cores.value {
            let base = tasks.len();
            tasks.push(load(m, c, load_bytes));
            tasks.push(compute(c, Unit::Pt, pt_cycles, vec![base]));
            tasks.push(compute(c, Unit::Sfp, 10, vec![base + 1]));
            tasks.push(store(m, c, 1024, vec![base + 2]));
        }
        tasks
    }

    #[test]
    fn summary_memory_bound() {
        let m = Machine::preset("spyre32").unwrap();
        let tasks = program(&m, 1 << 20, 100);
        let s = schedule(&m, &tasks, &Limits::default()).unwrap();
        let sum = summarize(&m, &s);
        assert_eq!(
            sum.bottleneck,
            Bottleneck::Memory,
            "{}",
            sum.bottleneck_reason
        );
        assert!(sum.bottleneck_reason.contains("DRAM"));
        assert!(sum.dram_utilisation > 0.8, "{}", sum.dram_utilisation);
        assert_eq!(sum.cores.len(), 32);
        assert_eq!(sum.cores[0].dma_bytes, (1 << 20) + 1024);
        assert_eq!(sum.cores[0].dma.tasks, 2);
        assert_eq!(sum.dram_read_bytes, 32 << 20);
        assert_eq!(sum.dram_write_bytes, 32 * 1024);
        assert_eq!(sum.links.len(), 2 * m.stop_count());
        assert!((sum.time_us - s.total_cycles / 1000.0).abs() < 1e-9);
        for c in &sum.cores {
            for u in [&c.dma, &c.pt, &c.sfp] {
                assert!((0.0..=1.0).contains(&u.utilisation));
            }
        }
        // Serialises, with the lowercase bottleneck name.
        let v: Value = serde_json::to_value(&sum).unwrap();
        assert_eq!(v["bottleneck"], "memory");
    }

    #[test]
    fn summary_compute_bound() {
        let m = Machine::preset("spyre32").unwrap();
        let tasks = program(&m, 1024, 1_000_000);
        let s = schedule(&m, &tasks, &Limits::default()).unwrap();
        let sum = summarize(&m, &s);
        assert_eq!(
            sum.bottleneck,
            Bottleneck::Compute,
            "{}",
            sum.bottleneck_reason
        );
        assert!(sum.cores[0].pt.utilisation > 0.99);
    }

    #[test]
    fn summary_communication_bound() {
        let m = Machine::preset("spyre32").unwrap();
        // Core-to-core traffic all crossing link 0cw.
        let tasks: Vec<Task> = (1..8)
            .map(|i| Task {
                core: 0,
                unit: Unit::Dma,
                work: Work::Transfer {
                    src_stop: m.core_stop(0),
                    dst_stop: m.core_stop(i),
                    bytes: 1 << 20,
                    dram: DramAccess::None,
                },
                deps: Deps::new(),
                op: "ktdp.transfer".into(),
                line: 0,
            })
            .collect();
        let s = schedule(&m, &tasks, &Limits::default()).unwrap();
        let sum = summarize(&m, &s);
        assert_eq!(
            sum.bottleneck,
            Bottleneck::Communication,
            "{}",
            sum.bottleneck_reason
        );
        assert!(sum.bottleneck_reason.starts_with("busiest link s0-cw"));
    }

    #[test]
    fn summary_of_empty_schedule() {
        let m = Machine::preset("tiny4").unwrap();
        let s = schedule(&m, &[], &Limits::default()).unwrap();
        let sum = summarize(&m, &s);
        assert_eq!(sum.total_cycles, 0.0);
        assert_eq!(sum.dram_utilisation, 0.0);
        assert_eq!(sum.bottleneck, Bottleneck::Compute);
        // An empty trace is still valid.
        let v: Value = serde_json::from_str(&chrome_trace_json(&m, &s)).unwrap();
        assert!(v["traceEvents"].is_array());
    }

    #[test]
    fn chrome_trace_is_valid_and_complete() {
        let m = Machine::preset("tiny4").unwrap();
        let tasks = program(&m, 4096, 100);
        let s = schedule(&m, &tasks, &Limits::default()).unwrap();
        let text = chrome_trace_json(&m, &s);
        let v: Value = serde_json::from_str(&text).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let of = |ph: &str| events.iter().filter(|e| e["ph"] == ph).collect::<Vec<_>>();

        // Lanes: every core has DMA/PT/SFP threads.
        let threads: Vec<(u64, u64, String)> = of("M")
            .into_iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| {
                (
                    e["pid"].as_u64().unwrap(),
                    e["tid"].as_u64().unwrap(),
                    e["args"]["name"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        for c in 0..4u64 {
            for (tid, name) in [(0, "DMA"), (1, "PT"), (2, "SFP")] {
                assert!(threads.contains(&(c, tid, name.to_string())), "{c} {name}");
            }
        }
        let processes = of("M")
            .into_iter()
            .filter(|e| e["name"] == "process_name")
            .count();
        assert_eq!(processes, 4 + 1 + 1); // cores, ring & DRAM, one memory stop

        // One X per task, plus one memory-side X per DRAM transfer (a load and a store per core).
        let dram_transfers = 8;
        let x = of("X");
        assert_eq!(x.len(), tasks.len() + dram_transfers);
        assert_eq!(of("s").len(), dram_transfers);
        assert_eq!(of("f").len(), dram_transfers);
        assert_eq!(of("C").len(), s.link_rates.len() + s.dram_rates.len());
        assert!(!s.link_rates.is_empty());

        // Times are microseconds at 1 GHz; args carry bytes/op/line/stops.
        let first = x.iter().find(|e| e["args"]["task"] == 0).unwrap();
        assert_eq!(first["pid"], 0);
        assert_eq!(first["tid"], 0);
        assert_eq!(first["args"]["bytes"], 4096);
        assert_eq!(first["args"]["op"], "ktdp.load");
        assert_eq!(first["args"]["line"], 3);
        assert_eq!(first["args"]["src"], "mem0");
        let dur = first["dur"].as_f64().unwrap();
        assert!((dur - s.events[0].end / 1000.0).abs() < 1e-9);

        // Read flows start at the memory stop and finish on the core's DMA lane.
        let start = of("s").into_iter().find(|e| e["id"] == 0).cloned().unwrap();
        assert_eq!(start["pid"], 5);
        let finish = of("f").into_iter().find(|e| e["id"] == 0).cloned().unwrap();
        assert_eq!(
            (finish["pid"].clone(), finish["tid"].clone()),
            (json!(0), json!(0))
        );

        // Deterministic output.
        assert_eq!(text, chrome_trace_json(&m, &s));
    }

    #[test]
    fn latency_bound_transfers_are_communication() {
        let m = Machine::preset("spyre32").unwrap();
        // Many tiny loads: setup and hop latency dominate, nothing saturates.
        let tasks: Vec<Task> = (0..50).map(|_| load(&m, 8, 64)).collect();
        let s = schedule(&m, &tasks, &Limits::default()).unwrap();
        let sum = summarize(&m, &s);
        assert_eq!(sum.bottleneck, Bottleneck::Communication);
        assert!(
            sum.bottleneck_reason.contains("latency"),
            "{}",
            sum.bottleneck_reason
        );
    }

    #[test]
    fn truncated_rate_samples_still_summarise() {
        let m = Machine::preset("tiny4").unwrap();
        let tasks = program(&m, 4096, 100);
        let limits = Limits {
            max_rate_samples: 3,
            ..Limits::default()
        };
        let s = schedule(&m, &tasks, &limits).unwrap();
        assert!(s.rates_truncated);
        assert_eq!(s.link_rates.len() + s.dram_rates.len(), 3);
        let sum = summarize(&m, &s);
        assert!(sum.dram_utilisation > 0.0 && sum.dram_utilisation <= 1.0);
        let v: Value = serde_json::from_str(&chrome_trace_json(&m, &s)).unwrap();
        assert_eq!(v["otherData"]["rates_truncated"], true);
    }

    #[test]
    fn human_bytes_formats() {
        assert_eq!(human_bytes(12), "12 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(1 << 20), "1.0 MiB");
    }
}
