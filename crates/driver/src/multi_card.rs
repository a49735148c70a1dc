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
    /// Whether every output is within tolerance.
    pub passed: bool,
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
    let mut run_options = options.clone();
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
    if !timing_only {
        for o in &graph.outputs {
            let (Some(want), Some(got)) = (reference.get(o), cards[0].get(o)) else {
                return Err(DriverError::new(
                    Stage::Simulate,
                    format!("output '{o}' was not produced"),
                ));
            };
            outputs.push(compare(o, want, &got.data));
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
    let passed = !outputs.is_empty() && outputs.iter().all(|o| o.passed);
    Ok(TpRun {
        degree: n,
        system: system.name.clone(),
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
            text: plan.snapshot.text.clone(),
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
        passed,
        host: host_views,
        assumptions,
    })
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
}
