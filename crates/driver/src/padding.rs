//! What the serving stack's padding rules would cost a run's PagedAttention nodes: the
//! compiler's per-node report ([`compiler::PaddingReport`]) with the cycles the node's
//! kernels took unpadded (alignment 1) and the cycles the padding would add to them.

use crate::roofline::Roofline;
use crate::source_map::SourceMap;
use serde::Serialize;

/// One sequence of a ragged batch, as the padding rules see it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SequenceView {
    /// New (query) tokens.
    pub q_len: usize,
    /// KV length after the step.
    pub kv_len: usize,
    /// Query tokens after padding.
    pub padded_q: usize,
    /// KV length after alignment.
    pub padded_kv: usize,
    /// The pages its block table names, in order.
    pub pages: Vec<usize>,
}

/// The padding cost of one PagedAttention node.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PaddingCost {
    /// The graph node.
    pub node: String,
    /// The rules: query alignment, KV alignment, decode-only alignment, head-size and
    /// block-size multiples.
    pub query_align: usize,
    pub kv_align: usize,
    pub decode_align: usize,
    pub head_multiple: usize,
    pub block_multiple: usize,
    /// Whether every sequence brings one new token.
    pub decode_only: bool,
    /// The batch.
    pub sequences: Vec<SequenceView>,
    /// Head size and page size, as given and after the rules.
    pub head_dim: usize,
    pub padded_head_dim: usize,
    pub block_size: usize,
    pub padded_block_size: usize,
    /// Share of the padded attention work that is padding, in percent.
    pub waste_percent: f64,
    /// The same if decode-only batches had no exception.
    pub waste_percent_without_decode_alignment: f64,
    /// Cycles the node's kernels took, ragged (alignment 1).
    pub cycles: f64,
    /// Cycles the padding would add (cycles taken as proportional to the work).
    pub wasted_cycles: f64,
}

impl PaddingCost {
    /// The cost of `report` whose node's kernels took `cycles`.
    pub fn of(report: &compiler::PaddingReport, cycles: f64) -> PaddingCost {
        let r = &report.rules;
        PaddingCost {
            node: report.node.clone(),
            query_align: r.query_align,
            kv_align: r.kv_align,
            decode_align: r.decode_align,
            head_multiple: r.head_multiple,
            block_multiple: r.block_multiple,
            decode_only: report.decode_only,
            sequences: report
                .sequences
                .iter()
                .map(|s| SequenceView {
                    q_len: s.q_len,
                    kv_len: s.kv_len,
                    padded_q: s.padded_q,
                    padded_kv: s.padded_kv,
                    pages: s.pages.clone(),
                })
                .collect(),
            head_dim: report.head_dim,
            padded_head_dim: report.padded_head_dim,
            block_size: report.block_size,
            padded_block_size: report.padded_block_size,
            waste_percent: report.waste_percent,
            waste_percent_without_decode_alignment: report.waste_percent_without_decode_alignment,
            cycles,
            wasted_cycles: report.wasted_cycles(cycles),
        }
    }
}

/// The padding costs of a run: each report with its node's kernels' achieved cycles.
pub(crate) fn compute(
    reports: &[compiler::PaddingReport],
    map: &SourceMap,
    roofline: &Roofline,
) -> Vec<PaddingCost> {
    reports
        .iter()
        .map(|r| {
            let prefix = format!("{}/", r.node);
            let cycles: f64 = roofline
                .kernels
                .iter()
                .filter(|k| {
                    map.kernels
                        .get(k.kernel)
                        .and_then(|l| l.op)
                        .and_then(|o| map.ops.get(o))
                        .is_some_and(|o| o.name == r.node || o.name.starts_with(&prefix))
                })
                .map(|k| k.achieved_cycles)
                .sum();
            PaddingCost::of(r, cycles)
        })
        .collect()
}

/// The padding costs as text, for `spyre run`.
pub fn render(costs: &[PaddingCost]) -> String {
    let mut s = String::new();
    for c in costs {
        s.push_str(&format!(
            "padding {}: {} sequences{}, rules query {} / KV {} / decode {} / head x{} / block x{}\n",
            c.node,
            c.sequences.len(),
            if c.decode_only { " (decode only)" } else { "" },
            c.query_align,
            c.kv_align,
            c.decode_align,
            c.head_multiple,
            c.block_multiple
        ));
        for (i, q) in c.sequences.iter().enumerate() {
            s.push_str(&format!(
                "  seq {i}: {} new / {} tokens -> padded {} / {}; pages {:?}\n",
                q.q_len, q.kv_len, q.padded_q, q.padded_kv, q.pages
            ));
        }
        s.push_str(&format!(
            "  waste {:.1}% of the padded work ({:.1}% without the decode alignment); head {} -> {}, block {} -> {}\n",
            c.waste_percent,
            c.waste_percent_without_decode_alignment,
            c.head_dim,
            c.padded_head_dim,
            c.block_size,
            c.padded_block_size
        ));
        s.push_str(&format!(
            "  attention cycles {:.0} at alignment 1; the rules would add {:.0} cycles\n",
            c.cycles, c.wasted_cycles
        ));
    }
    s
}
