//! The per-layer breakdown of a graph's run: the cycles of each layer or block, found from
//! the names of the graph nodes its kernels came from (`layer3.attn.q_proj` belongs to
//! `layer3`). Kernels run one after another, so a layer's cycles are the sum of its
//! kernels' spans (first event start to last event end) and the layers add up to the run.

use crate::by_launch::{LineGroups, PerStored};
use crate::source_map::SourceMap;
use serde::Serialize;
use sim::timing::Schedule;

/// Cycles of one layer or block of a graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LayerCycles {
    /// The name prefix its nodes share: a node's name up to its first `.` or `/`
    /// (`layer3`, `embed`, `final_norm`, `lm_head`).
    pub layer: String,
    /// Kernels that ran for it.
    pub kernels: usize,
    /// The sum of its kernels' spans, in cycles.
    pub cycles: f64,
    /// `cycles` over the run's total (0 for an empty run).
    pub share: f64,
}

/// The layer a device op (`node` or `node/step`) belongs to.
fn layer_of(op: &str) -> &str {
    op.split(['.', '/']).next().unwrap_or(op)
}

/// The layers of a run, in the order their first kernels ran; empty when the run's kernels
/// have no device ops (a KTIR module).
pub(crate) fn compute(map: &SourceMap, schedule: &Schedule) -> Vec<LayerCycles> {
    let total_cycles = schedule.total_cycles;
    let mut spans: Vec<Option<(f64, f64)>> = vec![None; map.kernels.len()];
    // Per distinct launch, each line's first start and last end: placing a launch adds
    // its start to every time, which keeps their order, so the placed first start and
    // last end are these placed.
    let mut per: PerStored<(LineGroups, Vec<(f64, f64)>)> = PerStored::new();
    for l in &schedule.launches {
        let (groups, line_spans) = per.get(schedule, l, |stored| {
            let groups = LineGroups::of(stored);
            let mut s: Vec<Option<(f64, f64)>> = vec![None; groups.lines.len()];
            for (e, &g) in stored.iter().zip(&groups.of_event) {
                let s = s[g as usize].get_or_insert((e.start, e.end));
                s.0 = s.0.min(e.start);
                s.1 = s.1.max(e.end);
            }
            let s = s.into_iter().map(Option::unwrap_or_default).collect();
            (groups, s)
        });
        for (k, &(start, end)) in groups
            .kernels(l, &map.kernels)
            .iter()
            .zip(line_spans.iter())
        {
            let &Some(k) = k else { continue };
            let (start, end) = (l.place(start), l.place(end));
            let s = spans[k].get_or_insert((start, end));
            s.0 = s.0.min(start);
            s.1 = s.1.max(end);
        }
    }
    let mut order: Vec<(usize, f64)> = spans
        .iter()
        .enumerate()
        .filter_map(|(k, s)| s.map(|(a, _)| (k, a)))
        .collect();
    order.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let mut out: Vec<LayerCycles> = Vec::new();
    for (k, _) in order {
        let (Some((start, end)), Some(op)) = (spans[k], map.kernels[k].op) else {
            continue;
        };
        let Some(link) = map.ops.get(op) else {
            continue;
        };
        let layer = layer_of(&link.name);
        let cycles = (end - start).max(0.0);
        match out.iter_mut().find(|l| l.layer == layer) {
            Some(l) => {
                l.kernels += 1;
                l.cycles += cycles;
            }
            None => out.push(LayerCycles {
                layer: layer.to_string(),
                kernels: 1,
                cycles,
                share: 0.0,
            }),
        }
    }
    for l in &mut out {
        l.share = if total_cycles > 0.0 {
            l.cycles / total_cycles
        } else {
            0.0
        };
    }
    out
}

/// The breakdown as a text table: one row per layer with its kernels, cycles and share.
pub fn render(layers: &[LayerCycles]) -> String {
    use std::fmt::Write;
    let mut out = String::from("\nper layer\n");
    let _ = writeln!(
        out,
        "{:<24} {:>8} {:>16} {:>8}",
        "layer", "kernels", "cycles", "share"
    );
    for l in layers {
        let _ = writeln!(
            out,
            "{:<24} {:>8} {:>16.0} {:>7.2}%",
            l.layer,
            l.kernels,
            l.cycles,
            100.0 * l.share
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::layer_of;

    #[test]
    fn a_layer_is_the_node_name_up_to_its_first_dot_or_slash() {
        assert_eq!(layer_of("layer12.attn.q_proj"), "layer12");
        assert_eq!(layer_of("lm_head"), "lm_head");
        assert_eq!(layer_of("embed/1"), "embed");
    }
}
