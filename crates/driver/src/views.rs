//! The simulator's utilisation summary as the page and `--json` see it: the same figures
//! as [`sim::trace::Summary`], in camelCase.

use serde::Serialize;

/// The name of an execution unit, for the generated TypeScript types.
#[cfg(test)]
#[derive(ts_rs::TS)]
#[ts(rename_all = "lowercase")]
#[allow(dead_code)]
pub(crate) enum UnitName {
    Dma,
    Pt,
    Sfp,
}

/// Busy time of one serial unit.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct UnitUsageView {
    /// Cycles the unit was busy.
    pub busy_cycles: f64,
    /// `busy_cycles / total_cycles` (0 for an empty schedule).
    pub utilisation: f64,
    /// Tasks it ran.
    pub tasks: usize,
}

/// Per-core figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CoreView {
    /// Core id.
    pub core: usize,
    /// The DMA engine.
    pub dma: UnitUsageView,
    /// The PT (matrix) array.
    pub pt: UnitUsageView,
    /// The SFP (vector) unit.
    pub sfp: UnitUsageView,
    /// Bytes moved by this core's DMA engine.
    #[cfg_attr(test, ts(type = "number"))]
    pub dma_bytes: u64,
}

/// Per-link figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LinkView {
    /// Dense link index (`2 * fromStop`, +1 counter-clockwise).
    pub index: usize,
    /// `s<from>-cw` / `s<from>-ccw`.
    pub name: String,
    /// The stop the link leaves.
    pub from_stop: usize,
    /// The stop it reaches.
    pub to_stop: usize,
    /// Bytes carried.
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes: u64,
    /// `bytes / (link bandwidth * total_cycles)`.
    pub utilisation: f64,
}

/// A condensed view of a schedule: utilisation per unit, link and DRAM, and the bottleneck.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SummaryView {
    /// Machine name.
    pub machine: String,
    /// Modelled cycles.
    pub total_cycles: f64,
    /// The assumed clock.
    pub clock_ghz: f64,
    /// `totalCycles` converted with the clock.
    pub time_us: f64,
    /// Per core.
    pub cores: Vec<CoreView>,
    /// Every link, in index order.
    pub links: Vec<LinkView>,
    /// Bytes read from DRAM.
    #[cfg_attr(test, ts(type = "number"))]
    pub dram_read_bytes: u64,
    /// Bytes written to DRAM.
    #[cfg_attr(test, ts(type = "number"))]
    pub dram_write_bytes: u64,
    /// Fraction of the run during which DRAM delivered its effective bandwidth.
    pub dram_utilisation: f64,
    /// What limits the run.
    #[cfg_attr(test, ts(type = "\"memory\" | \"compute\" | \"communication\""))]
    pub bottleneck: sim::trace::Bottleneck,
    /// One line explaining the choice.
    pub bottleneck_reason: String,
}

fn usage(u: sim::trace::UnitUsage) -> UnitUsageView {
    UnitUsageView {
        busy_cycles: u.busy_cycles,
        utilisation: u.utilisation,
        tasks: u.tasks,
    }
}

impl From<sim::trace::Summary> for SummaryView {
    fn from(s: sim::trace::Summary) -> SummaryView {
        SummaryView {
            machine: s.machine,
            total_cycles: s.total_cycles,
            clock_ghz: s.clock_ghz,
            time_us: s.time_us,
            cores: s
                .cores
                .into_iter()
                .map(|c| CoreView {
                    core: c.core,
                    dma: usage(c.dma),
                    pt: usage(c.pt),
                    sfp: usage(c.sfp),
                    dma_bytes: c.dma_bytes,
                })
                .collect(),
            links: s
                .links
                .into_iter()
                .map(|l| LinkView {
                    index: l.link.index(),
                    name: l.name,
                    from_stop: l.from_stop,
                    to_stop: l.to_stop,
                    bytes: l.bytes,
                    utilisation: l.utilisation,
                })
                .collect(),
            dram_read_bytes: s.dram_read_bytes,
            dram_write_bytes: s.dram_write_bytes,
            dram_utilisation: s.dram_utilisation,
            bottleneck: s.bottleneck,
            bottleneck_reason: s.bottleneck_reason,
        }
    }
}
