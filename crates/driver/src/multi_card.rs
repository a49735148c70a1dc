//! Tensor-parallel runs over several cards: the `tensor-parallel` pass cuts the graph into
//! one card's shard segments, each segment compiles once through the single-card pipeline
//! and is simulated per card (timing-only: once, since the shards are identical); the
//! all-reduces between segments are timed over the system's card links and computed on the
//! cards' values in the algorithm's order; the host runtime model then runs the whole
//! program in two launch regimes.

use crate::session::simulate_compilation;
use crate::{compare, compile, DriverError, OutputCheck, PassView, Progress, RunOptions, Stage};
use graph::{Graph, Tensor};
use serde::Serialize;
use sim::cards::{self, AlgorithmChoice, CollectiveKind};
use sim::host::{self, DeviceWork, Grouping, HostJob, RuntimeParams};
use sim::system::System;
use std::collections::BTreeMap;

/// Settings of a tensor-parallel run.
#[derive(Clone, Debug)]
pub struct TpOptions {
    /// Cards (the tensor-parallel degree).
    pub degree: usize,
    /// The system; `None`: `degree` cards of the run's machine behind a PCIe switch.
    pub system: Option<System>,
    /// All-reduce algorithm: by the cost estimate, or forced.
    pub algorithm: AlgorithmChoice,
    /// Host runtime figures.
    pub runtime: RuntimeParams,
    /// Transformer blocks the host model runs back to back (the layer repeated).
    pub blocks: usize,
}

impl Default for TpOptions {
    fn default() -> Self {
        TpOptions {
            degree: 1,
            system: None,
            algorithm: AlgorithmChoice::Auto,
            runtime: RuntimeParams::default(),
            blocks: 1,
        }
    }
}

/// One transfer on a card link, for the card-link lanes.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LinkEventView {
    /// The link direction (`card0->switch`).
    pub channel: String,
    /// Start and end in cycles from the start of the run.
    pub start: f64,
    pub end: f64,
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes: u64,
}

/// One collective of the run.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CollectiveView {
    /// The tensor reduced.
    pub tensor: String,
    /// "all-reduce".
    pub kind: String,
    /// "ring" or "tree".
    pub algorithm: String,
    /// Why that algorithm.
    pub reason: String,
    /// Bytes per card.
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes: u64,
    /// Start and modelled cycles.
    pub start: f64,
    pub cycles: f64,
    /// The estimates (ring, tree).
    pub estimate_ring: f64,
    pub estimate_tree: f64,
    /// The order the values were summed in.
    pub reduction_order: String,
}

/// One segment of the shard program.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SegmentView {
    /// Graph nodes in it.
    pub nodes: usize,
    /// Kernels it compiled to (once for every card).
    pub kernels: usize,
    /// Start and modelled cycles on each card.
    pub start: f64,
    pub cycles: f64,
    /// Card-segments simulated (1 when timing-only: the shards are identical).
    pub simulated: usize,
}

/// One span of the host runtime model, for the host lane.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct HostEventView {
    /// "host" (launch calls), "host-link" (copies) or "device" (the launched work).
    pub lane: String,
    /// What it is (`launch (3 item(s))`, `copy in 4096 B`, a kernel's name).
    pub what: String,
    /// Start and end in cycles from the input upload.
    pub start: f64,
    pub end: f64,
}

/// A card of the system, for the system view.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SystemCardView {
    /// Its name in the system (`card0`).
    pub name: String,
    /// Its machine description's name.
    pub machine: String,
    /// Cores on its ring.
    pub cores: usize,
    /// Whether the run used it (card index below the TP degree).
    pub used: bool,
}

/// A link of the system with its figures' provenance and the bytes the run moved on it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SystemLinkView {
    /// Endpoints: card names, `switch`, or `host`.
    pub from: String,
    pub to: String,
    /// Bandwidth per direction and its status ("public" or "assumed").
    pub bytes_per_cycle: f64,
    pub bandwidth_status: String,
    /// Latency and its status.
    #[cfg_attr(test, ts(type = "number"))]
    pub latency_cycles: u64,
    pub latency_status: String,
    /// Bytes the run moved from `from` to `to`, and back.
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes_forward: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes_back: u64,
}

/// The system a run used: its cards and links, for the system view.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SystemView {
    /// "pcie_switch" or "ring".
    pub topology: String,
    /// Every card of the system.
    pub cards: Vec<SystemCardView>,
    /// Card-to-card (or card-to-switch) links.
    pub card_links: Vec<SystemLinkView>,
    /// Each card's host link (the same figures per card); bytes are per card for the
    /// inputs, card 0's for the outputs.
    pub host_links: Vec<SystemLinkView>,
}

/// The host runtime model's report for one launch regime.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct HostView {
    /// "per-kernel" or "per-block".
    pub grouping: String,
    /// How launches were grouped.
    pub note: String,
    /// Launches per card.
    pub launches: usize,
    /// Input upload to output download, in cycles.
    pub end_to_end_cycles: f64,
    /// Kernels and collectives.
    pub device_busy_cycles: f64,
    /// (end-to-end - device busy) / end-to-end.
    pub overhead: f64,
    /// Whether it is under the roadmap's 5%.
    pub under5_percent: bool,
    /// Open, allocations and the weight upload, before the timed run.
    pub setup_cycles: f64,
    /// Host, host-link and device spans of the first block.
    pub events: Vec<HostEventView>,
}

/// A tensor-parallel run.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TpRun {
    /// Cards used.
    pub degree: usize,
    /// The system's name.
    pub system: String,
    /// Its cards and links, with the bytes the run moved on each.
    pub system_view: SystemView,
    /// How key/value heads were placed.
    pub kv: String,
    /// The `tensor-parallel` pass snapshot.
    pub pass: PassView,
    /// The segments of one card's program, in order.
    pub segments: Vec<SegmentView>,
    /// The all-reduces between them.
    pub collectives: Vec<CollectiveView>,
    /// Card-link transfers, for the timeline.
    pub link_events: Vec<LinkEventView>,
    /// Modelled device cycles: segments and collectives back to back.
    pub total_cycles: f64,
    /// Cycles in collectives.
    pub collective_cycles: f64,
    /// Their share of the total.
    pub collective_share: f64,
    /// Whether numbers were computed (false: timing only).
    pub outputs_checked: bool,
    /// Every output against the TP-1 reference evaluator.
    pub outputs: Vec<OutputCheck>,
    /// Every output against the values the user expects ([`RunOptions::expected`]).
    pub expected: Vec<OutputCheck>,
    /// Whether every output is within tolerance (of the reference and of the expected).
    pub passed: bool,
    /// The gathered outputs (card 0's, equal on every card after the last all-reduce), by
    /// name; empty when timing-only. [`output_npy`] writes them.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub output_values: BTreeMap<String, Tensor>,
    /// The host runtime in both launch regimes: per kernel, per block.
    pub host: Vec<HostView>,
    /// Figures the run assumed (system links, runtime), as "field: note".
    pub assumptions: Vec<String>,
}

/// Runs `graph` tensor-parallel.
pub fn run_tensor_parallel(
    graph: &Graph,
    options: &RunOptions,
    tp: &TpOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<TpRun, DriverError> {
    let n = tp.degree;
    let system = match &tp.system {
        Some(s) => s.clone(),
        None => System::switch_of(&options.machine, n.max(1))
            .map_err(|e| DriverError::new(Stage::Machine, e.to_string()))?,
    };
    system
        .check_degree(n)
        .map_err(|e| DriverError::new(Stage::Machine, e.to_string()))?;
    crate::session::check_expected(graph, &options.expected)?;
    let mut run_options = options.clone();
    // Segments are compared with the reference at the end, on the gathered outputs.
    run_options.expected.clear();
    if let Some(m) = system.machine(0) {
        run_options.machine = m.clone();
    }
    let plan = compiler::tp::shard(graph, n).map_err(DriverError::from_compile)?;

    // Values per card (numbers only): the graph's inputs and each card's weight pieces.
    let timing_only = options.timing_only;
    let mut cards: Vec<BTreeMap<String, Tensor>> = vec![BTreeMap::new(); n];
    let mut reference = BTreeMap::new();
    if !timing_only {
        let mut inputs = graph::random_inputs(graph, options.seed)
            .map_err(|e| DriverError::from_graph("", e, Stage::Simulate))?;
        inputs.extend(options.inputs.clone());
        let weights = graph
            .initializer_tensors()
            .map_err(|e| DriverError::from_graph("", e, Stage::Simulate))?;
        reference = graph::evaluate(graph, &inputs)
            .map_err(|e| DriverError::from_graph("", e, Stage::Simulate))?;
        for (c, values) in cards.iter_mut().enumerate() {
            values.extend(inputs.clone());
            for w in &plan.weights {
                let full = weights.get(&w.name).ok_or_else(|| {
                    DriverError::new(Stage::Simulate, format!("no value for weight '{}'", w.name))
                })?;
                let piece = plan.shard_weight(&w.name, full, c).ok_or_else(|| {
                    DriverError::new(Stage::Simulate, format!("cannot cut weight '{}'", w.name))
                })?;
                values.insert(w.name.clone(), piece);
            }
        }
    }

    let mut t = 0.0;
    let mut segments = Vec::new();
    let mut collectives = Vec::new();
    let mut link_events = Vec::new();
    let mut block = Vec::new();
    let mut buffers: Vec<(String, u64)> = Vec::new();
    let mut weight_bytes = 0u64;
    for (k, seg) in plan.segments.iter().enumerate() {
        let c = compile(&seg.graph, &run_options.machine, &run_options.compile)?;
        let types = seg
            .graph
            .infer_types()
            .map_err(|e| DriverError::from_graph("", e, Stage::Compile))?;
        for i in &seg.graph.initializers {
            buffers.push((i.name.clone(), i.ty.size_bytes() as u64));
            weight_bytes += i.ty.size_bytes() as u64;
        }
        for i in &seg.graph.inputs {
            buffers.push((format!("seg{k}.{}", i.name), i.ty.size_bytes() as u64));
            if plan.weights.iter().any(|w| w.name == i.name) {
                weight_bytes += i.ty.size_bytes() as u64;
            }
        }
        let simulate = if timing_only { 1 } else { n };
        let mut cycles = 0.0f64;
        let mut kernel_cycles = Vec::new();
        for (card, values) in cards.iter_mut().enumerate().take(simulate) {
            let mut opts = run_options.clone();
            opts.inputs = seg
                .graph
                .inputs
                .iter()
                .filter_map(|i| values.get(&i.name).map(|v| (i.name.clone(), v.clone())))
                .collect();
            let (r, _) = simulate_compilation(&c, &opts, progress)?;
            if card == 0 {
                kernel_cycles = kernel_spans(c.ktir.as_deref().unwrap_or(""), &r);
            }
            cycles = cycles.max(r.total_cycles);
            values.extend(r.output_values);
        }
        let kernels = compiler::lower_ktir::kernels(&c);
        for (i, kc) in kernel_cycles.iter().enumerate() {
            block.push(DeviceWork::Kernel {
                name: kernels
                    .get(i)
                    .map_or_else(|| format!("seg{k}.k{i}"), |x| x.func.clone()),
                cycles: *kc,
            });
        }
        segments.push(SegmentView {
            nodes: seg.graph.nodes.len(),
            kernels: kernels.len(),
            start: t,
            cycles,
            simulated: simulate,
        });
        t += cycles;
        for name in &seg.all_reduce {
            let ty = types.get(name).ok_or_else(|| {
                DriverError::new(Stage::Compile, format!("tensor '{name}' has no type"))
            })?;
            let bytes = ty.size_bytes() as u64;
            let timing =
                cards::time_collective(&system, n, CollectiveKind::AllReduce, bytes, tp.algorithm);
            let order = match timing.algorithm {
                _ if n == 1 => "none: one card holds the whole sum".to_string(),
                cards::Algorithm::Ring => format!(
                    "ring: {n} chunks of ceil(len/{n}) elements; chunk j summed from card j onwards, ((x[j] + x[j+1]) + ...) + x[j+{}] (cards mod {n}), rounded to {} after each addition",
                    n.saturating_sub(1),
                    ty.dtype.name()
                ),
                cards::Algorithm::Tree => format!(
                    "tree: pairs at distance 1, 2, 4, ... ((x0 + x1) + (x2 + x3)), rounded to {} after each addition",
                    ty.dtype.name()
                ),
            };
            if !timing_only && n > 1 {
                let parts: Vec<Vec<f32>> = cards
                    .iter()
                    .map(|v| v.get(name).map(|t| t.data.clone()).unwrap_or_default())
                    .collect();
                let dtype = ty.dtype;
                let sum = cards::all_reduce_values(&parts, timing.algorithm, &|x| dtype.round(x))
                    .map_err(|m| DriverError::new(Stage::Simulate, format!("{name}: {m}")))?;
                let reduced = Tensor::new(dtype, ty.shape.clone(), sum)
                    .map_err(|m| DriverError::new(Stage::Simulate, format!("{name}: {m}")))?;
                for v in cards.iter_mut() {
                    v.insert(name.clone(), reduced.clone());
                }
            }
            for e in &timing.events {
                link_events.push(LinkEventView {
                    channel: e.channel.clone(),
                    start: t + e.start,
                    end: t + e.end,
                    bytes: e.bytes,
                });
            }
            if n > 1 {
                block.push(DeviceWork::Collective {
                    name: format!("all-reduce {name}"),
                    cycles: timing.cycles,
                });
            }
            collectives.push(CollectiveView {
                tensor: name.clone(),
                kind: "all-reduce".into(),
                algorithm: format!("{:?}", timing.algorithm).to_lowercase(),
                reason: if n == 1 {
                    "one card: no communication".into()
                } else {
                    timing.reason.clone()
                },
                bytes,
                start: t,
                cycles: timing.cycles,
                estimate_ring: timing.estimate_ring,
                estimate_tree: timing.estimate_tree,
                reduction_order: order,
            });
            t += timing.cycles;
        }
    }
    let collective_cycles: f64 = collectives.iter().map(|c| c.cycles).sum();

    let mut outputs = Vec::new();
    let mut expected = Vec::new();
    let mut output_values = BTreeMap::new();
    if !timing_only {
        for o in &graph.outputs {
            let (Some(want), Some(got)) = (reference.get(o), cards[0].get(o)) else {
                return Err(DriverError::new(
                    Stage::Simulate,
                    format!("output '{o}' was not produced"),
                ));
            };
            outputs.push(compare(o, want, &got.data));
            if let Some(user) = options.expected.get(o) {
                expected.push(compare(o, user, &got.data));
            }
            output_values.insert(o.clone(), got.clone());
        }
    }

    let io_bytes = |names: &mut dyn Iterator<Item = &String>| -> u64 {
        let types = graph.infer_types().unwrap_or_default();
        names
            .filter_map(|nm| types.get(nm))
            .map(|t| t.size_bytes() as u64)
            .sum()
    };
    let job = HostJob {
        block,
        blocks: tp.blocks.max(1),
        buffers,
        weight_bytes,
        input_bytes: io_bytes(&mut graph.inputs.iter().map(|i| &i.name)),
        output_bytes: io_bytes(&mut graph.outputs.iter()),
    };
    let mut host_views = Vec::new();
    for g in [Grouping::PerKernel, Grouping::PerBlock] {
        let r = host::run_host(
            &job,
            g,
            &tp.runtime,
            system.host_link.bytes_per_cycle.value,
            system.host_link.latency_cycles.value as f64,
        )
        .map_err(|m| DriverError::new(Stage::Simulate, format!("host runtime: {m}")))?;
        host_views.push(HostView {
            grouping: match g {
                Grouping::PerKernel => "per-kernel".into(),
                Grouping::PerBlock => "per-block".into(),
            },
            note: r.grouping_note,
            launches: r.launches,
            end_to_end_cycles: r.end_to_end_cycles,
            device_busy_cycles: r.device_busy_cycles,
            overhead: r.overhead,
            under5_percent: r.under_5_percent,
            setup_cycles: r.setup_cycles,
            events: r
                .events
                .iter()
                .map(|e| HostEventView {
                    lane: e.lane.to_string(),
                    what: e.what.clone(),
                    start: e.start,
                    end: e.end,
                })
                .collect(),
        });
    }
    let mut assumptions: Vec<String> = system
        .parameters()
        .into_iter()
        .filter(|p| p.2 == sim::machine::Status::Assumed)
        .map(|p| format!("{}: {} ({})", p.0, p.1, p.3))
        .collect();
    for (field, p) in [
        ("launch_overhead_cycles", &tp.runtime.launch_overhead_cycles),
        ("alloc_cycles", &tp.runtime.alloc_cycles),
        ("open_cycles", &tp.runtime.open_cycles),
    ] {
        let status = match p.status {
            sim::machine::Status::Public => "public",
            sim::machine::Status::Assumed => "assumed",
        };
        assumptions.push(format!("{field}: {} ({status}: {})", p.value, p.source));
    }
    let passed = !outputs.is_empty()
        && outputs.iter().all(|o| o.passed)
        && expected.iter().all(|o| o.passed);
    let system_view = system_view(&system, n, &link_events, job.input_bytes, job.output_bytes);
    Ok(TpRun {
        degree: n,
        system: system.name.clone(),
        system_view,
        kv: match plan.kv {
            compiler::tp::KvSharding::Split => format!(
                "key/value heads split: {} per card",
                plan.kv_heads / n.max(1)
            ),
            compiler::tp::KvSharding::Replicated { copies } => format!(
                "key/value heads replicated: each card computes 1, each held by {copies} cards"
            ),
        },
        pass: PassView {
            name: plan.snapshot.pass.clone(),
            title: plan.snapshot.title.clone(),
            text: Some(plan.snapshot.text.clone()),
            data: plan.snapshot.data.clone(),
        },
        segments,
        collectives,
        link_events,
        total_cycles: t,
        collective_cycles,
        collective_share: if t > 0.0 { collective_cycles / t } else { 0.0 },
        outputs_checked: !timing_only,
        outputs,
        expected,
        passed,
        output_values,
        host: host_views,
        assumptions,
    })
}

fn status_name(s: sim::machine::Status) -> String {
    match s {
        sim::machine::Status::Public => "public".into(),
        sim::machine::Status::Assumed => "assumed".into(),
    }
}

/// The system's cards and links, with the bytes `events` moved on each link direction.
fn system_view(
    system: &System,
    degree: usize,
    events: &[LinkEventView],
    input_bytes: u64,
    output_bytes: u64,
) -> SystemView {
    let mut moved: BTreeMap<&str, u64> = BTreeMap::new();
    for e in events {
        *moved.entry(e.channel.as_str()).or_default() += e.bytes;
    }
    let bytes = |a: &str, b: &str| {
        moved
            .get(format!("{a}->{b}").as_str())
            .copied()
            .unwrap_or(0)
    };
    let cards = system
        .cards
        .value
        .iter()
        .enumerate()
        .map(|(i, c)| SystemCardView {
            name: c.name.clone(),
            machine: system.machine(i).map_or(String::new(), |m| m.name.clone()),
            cores: system.machine(i).map_or(0, |m| m.cores.value),
            used: i < degree,
        })
        .collect::<Vec<_>>();
    let card_links = system
        .card_links
        .iter()
        .map(|l| SystemLinkView {
            from: l.from.clone(),
            to: l.to.clone(),
            bytes_per_cycle: l.bytes_per_cycle.value,
            bandwidth_status: status_name(l.bytes_per_cycle.status),
            latency_cycles: l.latency_cycles.value,
            latency_status: status_name(l.latency_cycles.status),
            bytes_forward: bytes(&l.from, &l.to),
            bytes_back: bytes(&l.to, &l.from),
        })
        .collect();
    let h = &system.host_link;
    let host_links = cards
        .iter()
        .enumerate()
        .map(|(i, c)| SystemLinkView {
            from: "host".into(),
            to: c.name.clone(),
            bytes_per_cycle: h.bytes_per_cycle.value,
            bandwidth_status: status_name(h.bytes_per_cycle.status),
            latency_cycles: h.latency_cycles.value,
            latency_status: status_name(h.latency_cycles.status),
            bytes_forward: if c.used { input_bytes } else { 0 },
            bytes_back: if i == 0 { output_bytes } else { 0 },
        })
        .collect();
    SystemView {
        topology: system.topology_name().to_string(),
        cards,
        card_links,
        host_links,
    }
}

/// Each kernel's share of the schedule, in module order: from the previous kernel's end to
/// its own last event, so the shares add up to the run's cycles. Kernels are found by the
/// lines of their `func.func` in the KTIR text the events point into.
fn kernel_spans(ktir: &str, r: &crate::RunResult) -> Vec<f64> {
    let starts: Vec<u32> = ktir
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("func.func @"))
        .map(|(i, _)| i as u32 + 1)
        .collect();
    if starts.is_empty() {
        return vec![r.total_cycles];
    }
    let mut ends = vec![0.0f64; starts.len()];
    for e in &r.events {
        let k = starts.partition_point(|&s| s <= e.line).saturating_sub(1);
        ends[k] = ends[k].max(e.end);
    }
    let mut spans = Vec::with_capacity(ends.len());
    let mut last = 0.0f64;
    for (i, end) in ends.iter().enumerate() {
        let end = if i + 1 == ends.len() {
            end.max(r.total_cycles)
        } else {
            *end
        };
        let next = last.max(end);
        spans.push(next - last);
        last = next;
    }
    spans
}

/// The gathered outputs of a tensor-parallel run as `.npy` files (`NAME.npy`, bytes), in
/// the graph's output order; an error after a timing-only run.
pub fn output_npy(graph: &Graph, r: &TpRun) -> Result<Vec<(String, Vec<u8>)>, DriverError> {
    if !r.outputs_checked {
        return Err(DriverError::new(
            Stage::Simulate,
            "a timing-only run computes no output values",
        ));
    }
    let mut out = Vec::new();
    for o in &graph.outputs {
        if let Some(t) = r.output_values.get(o) {
            let bytes = crate::npy::write_tensor(t)
                .map_err(|m| DriverError::new(Stage::Simulate, format!("output '{o}': {m}")))?;
            out.push((format!("{}.npy", o.replace(['/', '\\'], "_")), bytes));
        }
    }
    Ok(out)
}

/// A tensor-parallel run as Chrome trace JSON (Perfetto, chrome://tracing): one process for
/// the cards (segments and all-reduces) with a thread per card-link direction carrying the
/// collectives' transfers, and one per launch regime of the host runtime (host calls, host
/// link copies, device work). Times in microseconds at `clock_ghz`.
pub fn trace_json(r: &TpRun, clock_ghz: f64) -> String {
    let us = |cycles: f64| cycles / (clock_ghz.max(1e-9) * 1e3);
    let mut events = Vec::new();
    let mut meta = |pid: usize, tid: usize, process: &str, thread: &str| {
        events.push(serde_json::json!({"ph": "M", "name": "process_name", "pid": pid, "tid": tid, "args": {"name": process}}));
        events.push(serde_json::json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": thread}}));
    };
    meta(
        1,
        0,
        &format!("cards (TP {}, {})", r.degree, r.system),
        "every card",
    );
    let mut channels: Vec<&str> = r.link_events.iter().map(|e| e.channel.as_str()).collect();
    channels.sort_unstable();
    channels.dedup();
    for (i, ch) in channels.iter().enumerate() {
        meta(
            1,
            i + 1,
            &format!("cards (TP {}, {})", r.degree, r.system),
            &format!("card link {ch}"),
        );
    }
    let lanes = ["host", "host-link", "device"];
    for (k, h) in r.host.iter().enumerate() {
        for (j, lane) in lanes.iter().enumerate() {
            meta(2 + k, j, &format!("host runtime, {}", h.grouping), lane);
        }
    }
    let mut span = |name: String, cat: &str, pid: usize, tid: usize, start: f64, end: f64| {
        events.push(serde_json::json!({
            "name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid,
            "ts": us(start), "dur": us((end - start).max(0.0)),
        }));
    };
    for (k, s) in r.segments.iter().enumerate() {
        span(
            format!("segment {k}"),
            "segment",
            1,
            0,
            s.start,
            s.start + s.cycles,
        );
    }
    for c in &r.collectives {
        span(
            format!("{} {} ({})", c.kind, c.tensor, c.algorithm),
            "collective",
            1,
            0,
            c.start,
            c.start + c.cycles,
        );
    }
    for e in &r.link_events {
        let tid = channels
            .iter()
            .position(|c| *c == e.channel)
            .map_or(0, |i| i + 1);
        span(
            format!("{} B", e.bytes),
            "card-link",
            1,
            tid,
            e.start,
            e.end,
        );
    }
    for (k, h) in r.host.iter().enumerate() {
        for e in &h.events {
            let tid = lanes.iter().position(|l| *l == e.lane).unwrap_or(0);
            span(e.what.clone(), &e.lane, 2 + k, tid, e.start, e.end);
        }
    }
    serde_json::json!({"traceEvents": events, "displayTimeUnit": "ns"}).to_string()
}

/// Renders a tensor-parallel run as text.
pub fn render(r: &TpRun) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "tensor parallel: {} card(s) of system '{}'; {}",
        r.degree, r.system, r.kv
    );
    for (k, seg) in r.segments.iter().enumerate() {
        let _ = writeln!(
            s,
            "  segment {k}: {} nodes, {} kernels (compiled once), {:.0} cycles from {:.0}",
            seg.nodes, seg.kernels, seg.cycles, seg.start
        );
    }
    for c in &r.collectives {
        let _ = writeln!(
            s,
            "  {} {} ({} B per card): {:.0} cycles from {:.0}; {}",
            c.kind, c.tensor, c.bytes, c.cycles, c.start, c.reason
        );
        let _ = writeln!(s, "    reduction order: {}", c.reduction_order);
    }
    let _ = writeln!(
        s,
        "total {:.0} cycles, collectives {:.0} ({:.1}%)",
        r.total_cycles,
        r.collective_cycles,
        100.0 * r.collective_share
    );
    for h in &r.host {
        let _ = writeln!(
            s,
            "host runtime {:<10} {} launches/card, end-to-end {:.0}, device busy {:.0}, overhead {:.1}%{} ({})",
            h.grouping,
            h.launches,
            h.end_to_end_cycles,
            h.device_busy_cycles,
            100.0 * h.overhead,
            if h.under5_percent { ", under 5%" } else { "" },
            h.note
        );
    }
    if r.outputs_checked {
        for o in &r.expected {
            let _ = writeln!(
                s,
                "output {} vs expected: max abs error {:.3e} (atol {}, rtol {}) {}",
                o.name,
                o.max_abs_error,
                o.atol,
                o.rtol,
                if o.passed { "PASS" } else { "FAIL" }
            );
        }
        for o in &r.outputs {
            let _ = writeln!(
                s,
                "output {} vs TP-1 reference: max abs error {:.3e} (atol {}, rtol {}) {}",
                o.name,
                o.max_abs_error,
                o.atol,
                o.rtol,
                if o.passed { "PASS" } else { "FAIL" }
            );
        }
    } else {
        let _ = writeln!(s, "timing only: numbers not computed");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama() -> Graph {
        let ex = crate::examples();
        let src = ex
            .iter()
            .find(|e| e.name == "llama_decoder_layer")
            .map(|e| e.source)
            .unwrap_or_default();
        graph::load_json(src).unwrap()
    }

    fn run(degree: usize, algorithm: AlgorithmChoice) -> TpRun {
        let tp = TpOptions {
            degree,
            algorithm,
            ..TpOptions::default()
        };
        run_tensor_parallel(&llama(), &RunOptions::default(), &tp, &mut |_| {})
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_small_llama_layer_matches_its_reference_at_tp_2_and_4() {
        for (degree, algorithm) in [
            (2, AlgorithmChoice::Auto),
            (4, AlgorithmChoice::Ring),
            (4, AlgorithmChoice::Tree),
        ] {
            let r = run(degree, algorithm);
            assert!(r.outputs_checked);
            assert!(r.passed, "TP {degree}: {:?}", r.outputs);
            assert_eq!(r.segments.len(), 3);
            assert_eq!(r.collectives.len(), 2);
            assert!(r.collective_share > 0.0 && r.collective_share < 1.0);
            assert!(r.segments.iter().all(|s| s.simulated == degree));
            assert_eq!(r.host.len(), 2);
            assert!(r.host[0].launches > r.host[1].launches);
        }
        assert!(run(4, AlgorithmChoice::Auto).kv.contains("replicated"));
        assert!(run(2, AlgorithmChoice::Auto).kv.contains("split"));
    }

    #[test]
    fn bad_degrees_are_errors_that_name_the_dimension_or_the_cards() {
        let tp = TpOptions {
            degree: 3,
            ..TpOptions::default()
        };
        let e =
            run_tensor_parallel(&llama(), &RunOptions::default(), &tp, &mut |_| {}).unwrap_err();
        assert!(e.message.contains("attention heads (8)"), "{e}");
        let tp = TpOptions {
            degree: 8,
            system: System::preset("ring4"),
            ..TpOptions::default()
        };
        let e =
            run_tensor_parallel(&llama(), &RunOptions::default(), &tp, &mut |_| {}).unwrap_err();
        assert!(e.message.contains("has 4"), "{e}");
    }

    #[test]
    fn a_session_run_with_tp_carries_the_run_the_pass_and_the_system() {
        let ex = crate::examples();
        let e = ex.iter().find(|e| e.name == "llama_decoder_layer").unwrap();
        let mut s = crate::Session::open(e.source.as_bytes(), e.name).unwrap();
        let tp = TpOptions {
            degree: 2,
            ..TpOptions::default()
        };
        let r = s
            .run_with_tp(&RunOptions::default(), Some(&tp), &mut |_| {})
            .unwrap_or_else(|e| panic!("{e}"));
        let t = r.tp.as_ref().unwrap();
        assert!(t.passed);
        let names: Vec<&str> = r.passes.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            &names[..3],
            ["canonicalize", "tensor-parallel", "decompose"]
        );
        assert!(r.passes[1].text.as_deref().unwrap().starts_with("program "));
        assert!(r.passes[1]
            .text
            .as_deref()
            .unwrap()
            .contains("  shard: column-parallel"));
        let sys = &t.system_view;
        assert_eq!(sys.cards.iter().filter(|c| c.used).count(), 2);
        assert!(sys.card_links.iter().any(|l| l.bytes_forward > 0));
        assert!(sys.host_links[0].bytes_forward > 0 && sys.host_links[0].bytes_back > 0);
        assert!(t
            .host
            .iter()
            .all(|h| h.events.iter().any(|e| e.lane == "host")));
        // Without tp the run is the one-card run.
        let r = s
            .run_with_tp(&RunOptions::default(), None, &mut |_| {})
            .unwrap();
        assert!(r.tp.is_none());
    }
}
