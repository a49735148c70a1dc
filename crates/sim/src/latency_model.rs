//! A second timing model, for comparison with the event-level schedule: the per-unit
//! roofline latency model that the KTIR reference interpreter (ktir-cpu) documents in its
//! `docs/latency.md`.
//!
//! Every executed op is charged on its own, by category, with no contention and no
//! dependencies: HBM loads and stores `bytes / hbm_bytes_per_cycle_per_core`, scratchpad
//! (LX) traffic nothing, elementwise work `elements / simd_elements_per_cycle` (times
//! `transcendental_penalty` for exp, sqrt, ...), matmuls `2·M·N·K /
//! systolic_flops_per_cycle`, inter-tile communication `bytes / ring_bytes_per_cycle`.
//! A core's time is the sum of its three categories (that project's sequential mode) or
//! their maximum (the roofline bound when the units overlap perfectly); a kernel's time
//! is its slowest core's.
//!
//! The model reads the ops the interpreter executed (with their bytes and work counts) and
//! the machine description; it never changes the event model's results.

use crate::machine::Machine;
use crate::timing::{DramAccess, Unit};
use serde::Serialize;
use std::collections::BTreeMap;

/// The model's parameters, named as ktir-cpu's `HardwareConfig` names them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyConfig {
    /// `num_cores`: cores sharing the HBM bandwidth.
    pub num_cores: usize,
    /// `clock_ghz`: converts cycles to time.
    pub clock_ghz: f64,
    /// `hbm_bandwidth_tb_s`: aggregate off-chip bandwidth in TB/s.
    pub hbm_bandwidth_tb_s: f64,
    /// `ring_bandwidth_tb_s`: ring bandwidth per direction in TB/s.
    pub ring_bandwidth_tb_s: f64,
    /// `simd_elements_per_cycle`: elementwise throughput of one core.
    pub simd_elements_per_cycle: f64,
    /// `systolic_flops_per_cycle`: matmul throughput of one core in FLOPs (2 per MAC).
    pub systolic_flops_per_cycle: f64,
    /// `transcendental_penalty`: cost multiplier of exp, sqrt, ... over add and mul.
    pub transcendental_penalty: f64,
}

/// One parameter for display: ktir-cpu's label, its value here and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyParam {
    /// The label ktir-cpu gives it.
    pub label: &'static str,
    /// Its value.
    pub value: f64,
    /// The machine-description field it is derived from.
    pub from: &'static str,
}

impl LatencyConfig {
    /// ktir-cpu's documented defaults (`HardwareConfig()`), for reference.
    pub fn ktir_cpu_defaults() -> LatencyConfig {
        LatencyConfig {
            num_cores: 32,
            clock_ghz: 1.0,
            hbm_bandwidth_tb_s: 1.0,
            ring_bandwidth_tb_s: 4.0,
            simd_elements_per_cycle: 64.0,
            systolic_flops_per_cycle: 2.0 * 64.0 * 64.0 * 64.0,
            transcendental_penalty: 4.0,
        }
    }

    /// The parameters of `machine`, so both models time the same hardware.
    pub fn of(machine: &Machine) -> LatencyConfig {
        let ghz = machine.clock_ghz.value;
        // bytes/cycle x 1e9 cycles/s per GHz = bytes/s; / 1e12 = TB/s.
        let tb_s = |bytes_per_cycle: f64| bytes_per_cycle * ghz / 1e3;
        LatencyConfig {
            num_cores: machine.cores.value,
            clock_ghz: ghz,
            hbm_bandwidth_tb_s: tb_s(machine.dram_peak_bytes_per_cycle.value),
            ring_bandwidth_tb_s: tb_s(machine.ring_bytes_per_cycle_per_direction.value),
            simd_elements_per_cycle: machine.sfp_lanes.value as f64,
            systolic_flops_per_cycle: 2.0 * machine.matmul_peak_macs_per_cycle_per_core.value,
            transcendental_penalty: machine.transcendental_cost_factor.value as f64,
        }
    }

    /// `hbm_bytes_per_cycle_per_core`: the HBM bandwidth split evenly over every core,
    /// whether or not a kernel uses them all (as ktir-cpu derives it).
    pub fn hbm_bytes_per_cycle_per_core(&self) -> f64 {
        self.hbm_bandwidth_tb_s * 1e3 / self.clock_ghz / self.num_cores.max(1) as f64
    }

    /// `ring_bytes_per_cycle`: ring bandwidth in bytes per cycle, one direction.
    pub fn ring_bytes_per_cycle(&self) -> f64 {
        self.ring_bandwidth_tb_s * 1e3 / self.clock_ghz
    }

    /// Every parameter with its ktir-cpu label and the machine field it comes from.
    pub fn params(&self) -> Vec<LatencyParam> {
        vec![
            LatencyParam {
                label: "num_cores",
                value: self.num_cores as f64,
                from: "cores",
            },
            LatencyParam {
                label: "clock_ghz",
                value: self.clock_ghz,
                from: "clock_ghz",
            },
            LatencyParam {
                label: "hbm_bandwidth_tb_s",
                value: self.hbm_bandwidth_tb_s,
                from: "dram_peak_bytes_per_cycle x clock_ghz",
            },
            LatencyParam {
                label: "ring_bandwidth_tb_s",
                value: self.ring_bandwidth_tb_s,
                from: "ring_bytes_per_cycle_per_direction x clock_ghz",
            },
            LatencyParam {
                label: "simd_elements_per_cycle",
                value: self.simd_elements_per_cycle,
                from: "sfp_lanes",
            },
            LatencyParam {
                label: "systolic_flops_per_cycle",
                value: self.systolic_flops_per_cycle,
                from: "2 x matmul_peak_macs_per_cycle_per_core",
            },
            LatencyParam {
                label: "transcendental_penalty",
                value: self.transcendental_penalty,
                from: "transcendental_cost_factor",
            },
            LatencyParam {
                label: "hbm_bytes_per_cycle_per_core",
                value: self.hbm_bytes_per_cycle_per_core(),
                from: "derived: hbm_bandwidth_tb_s / clock_ghz / num_cores",
            },
            LatencyParam {
                label: "ring_bytes_per_cycle",
                value: self.ring_bytes_per_cycle(),
                from: "derived: ring_bandwidth_tb_s / clock_ghz",
            },
        ]
    }
}

/// One executed op as the model sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct OpRecord<'a> {
    /// The core that executed it.
    pub core: usize,
    /// The op's name, e.g. `"ktdp.load"`.
    pub op: &'a str,
    /// The unit the interpreter gave it.
    pub unit: Unit,
    /// Bytes moved (transfers).
    pub bytes: u64,
    /// Whether it read or wrote off-chip memory.
    pub dram: DramAccess,
    /// Multiply-accumulates (matmuls).
    pub macs: u64,
    /// Element operations (vector work).
    pub elements: u64,
    /// Whether the vector work is transcendental.
    pub transcendental: bool,
}

/// ktir-cpu's cost categories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Category {
    /// HBM (and free LX) loads and stores.
    Memory,
    /// SIMD, transcendental and matmul work.
    Compute,
    /// Ring communication between tiles.
    Comm,
}

impl Category {
    /// The name ktir-cpu reports.
    pub fn label(self) -> &'static str {
        match self {
            Category::Memory => "memory",
            Category::Compute => "compute",
            Category::Comm => "comm",
        }
    }
}

/// How a core's categories combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Overlap {
    /// `compute + memory + comm`: ktir-cpu's documented cycle model (no overlap).
    Sequential,
    /// `max(compute, memory, comm)`: the units pipelined perfectly (the roofline bound).
    Overlapped,
}

/// Cycles and counts of one core.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CoreLatency {
    /// The core.
    pub core: usize,
    /// Cycles on the compute units.
    pub compute_cycles: f64,
    /// Cycles of HBM traffic.
    pub memory_cycles: f64,
    /// Cycles of ring communication.
    pub comm_cycles: f64,
    /// FLOPs (2 per MAC, 1 per element operation).
    pub flops: f64,
    /// HBM bytes.
    pub hbm_bytes: u64,
}

impl CoreLatency {
    /// The core's time under `overlap`.
    pub fn cycles(&self, overlap: Overlap) -> f64 {
        match overlap {
            Overlap::Sequential => self.compute_cycles + self.memory_cycles + self.comm_cycles,
            Overlap::Overlapped => self
                .compute_cycles
                .max(self.memory_cycles)
                .max(self.comm_cycles),
        }
    }

    /// The category with the most cycles.
    pub fn bottleneck(&self) -> Category {
        let mut best = (Category::Compute, self.compute_cycles);
        for (c, v) in [
            (Category::Memory, self.memory_cycles),
            (Category::Comm, self.comm_cycles),
        ] {
            if v > best.1 {
                best = (c, v);
            }
        }
        best.0
    }
}

/// The model's estimate for a set of ops (one kernel or a whole program).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LatencyEstimate {
    /// Per core, in core order.
    pub cores: Vec<CoreLatency>,
    /// The slowest core's `compute + memory + comm`.
    pub sequential_cycles: f64,
    /// The slowest core's `max(compute, memory, comm)`.
    pub overlapped_cycles: f64,
    /// The critical core under the sequential mode, if any op ran.
    pub critical_core: Option<CoreLatency>,
}

impl LatencyEstimate {
    /// The kernel's time under `overlap`.
    pub fn cycles(&self, overlap: Overlap) -> f64 {
        match overlap {
            Overlap::Sequential => self.sequential_cycles,
            Overlap::Overlapped => self.overlapped_cycles,
        }
    }

    /// The bottleneck category of the critical core.
    pub fn bottleneck(&self) -> Option<Category> {
        self.critical_core.map(|c| c.bottleneck())
    }
}

/// Whether the model charges an op of this name as ring communication: ktir-cpu
/// classifies communication by op name, whatever stops its transfers cross. The only
/// thing [`cost`] reads from a name.
pub fn is_comm_op(op: &str) -> bool {
    op.starts_with("ktdp.inter_tile")
}

/// Which category an op falls in and what it costs, `(category, cycles, flops, hbm bytes)`.
pub fn cost(config: &LatencyConfig, r: &OpRecord<'_>) -> (Category, f64, f64, u64) {
    let over = |x: f64, rate: f64| if rate > 0.0 { x / rate } else { 0.0 };
    if is_comm_op(r.op) {
        let cycles = over(r.bytes as f64, config.ring_bytes_per_cycle());
        return (Category::Comm, cycles, 0.0, 0);
    }
    match r.unit {
        Unit::Dma => match r.dram {
            DramAccess::Read | DramAccess::Write => (
                Category::Memory,
                over(r.bytes as f64, config.hbm_bytes_per_cycle_per_core()),
                0.0,
                r.bytes,
            ),
            // Scratchpad to scratchpad: free, as LX traffic is in ktir-cpu.
            DramAccess::None => (Category::Memory, 0.0, 0.0, 0),
        },
        Unit::Pt => {
            let flops = 2.0 * r.macs as f64;
            (
                Category::Compute,
                over(flops, config.systolic_flops_per_cycle),
                flops,
                0,
            )
        }
        Unit::Sfp => {
            let n = r.elements as f64;
            let penalty = if r.transcendental {
                config.transcendental_penalty
            } else {
                1.0
            };
            (
                Category::Compute,
                over(n, config.simd_elements_per_cycle) * penalty,
                n,
                0,
            )
        }
    }
}

/// Charges every op to its core and combines the cores.
pub fn estimate<'a>(
    config: &LatencyConfig,
    ops: impl IntoIterator<Item = OpRecord<'a>>,
) -> LatencyEstimate {
    let mut cores: BTreeMap<usize, CoreLatency> = BTreeMap::new();
    for r in ops {
        let (cat, cycles, flops, bytes) = cost(config, &r);
        let c = cores.entry(r.core).or_insert(CoreLatency {
            core: r.core,
            ..CoreLatency::default()
        });
        match cat {
            Category::Memory => c.memory_cycles += cycles,
            Category::Compute => c.compute_cycles += cycles,
            Category::Comm => c.comm_cycles += cycles,
        }
        c.flops += flops;
        c.hbm_bytes = c.hbm_bytes.saturating_add(bytes);
    }
    let cores: Vec<CoreLatency> = cores.into_values().collect();
    let critical_core = cores.iter().copied().reduce(|a, b| {
        if b.cycles(Overlap::Sequential) > a.cycles(Overlap::Sequential) {
            b
        } else {
            a
        }
    });
    let max_of = |o: Overlap| cores.iter().map(|c| c.cycles(o)).fold(0.0, f64::max);
    LatencyEstimate {
        sequential_cycles: max_of(Overlap::Sequential),
        overlapped_cycles: max_of(Overlap::Overlapped),
        critical_core,
        cores,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(op: &str, unit: Unit, bytes: u64, dram: DramAccess) -> OpRecord<'_> {
        OpRecord {
            core: 0,
            op,
            unit,
            bytes,
            dram,
            macs: 0,
            elements: 0,
            transcendental: false,
        }
    }

    #[test]
    fn defaults_derive_the_documented_rates() {
        let c = LatencyConfig::ktir_cpu_defaults();
        assert!((c.hbm_bytes_per_cycle_per_core() - 31.25).abs() < 1e-9);
        assert!((c.ring_bytes_per_cycle() - 4000.0).abs() < 1e-9);
    }

    #[test]
    fn vector_add_of_1024_halfs_costs_as_documented() {
        // Two 2048-byte loads, one add of 1024 elements, one 2048-byte store, one core.
        let c = LatencyConfig::ktir_cpu_defaults();
        let mut add = rec("arith.addf", Unit::Sfp, 0, DramAccess::None);
        add.elements = 1024;
        let ops = vec![
            rec("ktdp.load", Unit::Dma, 2048, DramAccess::Read),
            rec("ktdp.load", Unit::Dma, 2048, DramAccess::Read),
            add,
            rec("ktdp.store", Unit::Dma, 2048, DramAccess::Write),
        ];
        let e = estimate(&c, ops);
        let core = e.critical_core.unwrap();
        assert!((core.memory_cycles - 3.0 * 65.536).abs() < 1e-9);
        assert!((core.compute_cycles - 16.0).abs() < 1e-9);
        assert!((e.sequential_cycles - (16.0 + 196.608)).abs() < 1e-9);
        assert!((e.overlapped_cycles - 196.608).abs() < 1e-9);
        assert_eq!(e.bottleneck(), Some(Category::Memory));
    }

    #[test]
    fn matmul_transcendentals_scratchpad_and_comm() {
        let c = LatencyConfig::ktir_cpu_defaults();
        let mut mm = rec("linalg.matmul", Unit::Pt, 0, DramAccess::None);
        mm.macs = 64 * 64 * 64;
        assert_eq!(cost(&c, &mm).1, 1.0);
        let mut ex = rec("math.exp", Unit::Sfp, 0, DramAccess::None);
        ex.elements = 128;
        ex.transcendental = true;
        assert_eq!(cost(&c, &ex).1, 8.0);
        let lx = rec("ktdp.load", Unit::Dma, 4096, DramAccess::None);
        assert_eq!(cost(&c, &lx), (Category::Memory, 0.0, 0.0, 0));
        let ring = rec("ktdp.inter_tile_reduce", Unit::Dma, 8000, DramAccess::None);
        assert_eq!(cost(&c, &ring).0, Category::Comm);
        assert_eq!(cost(&c, &ring).1, 2.0);
    }

    #[test]
    fn the_slowest_core_sets_the_kernel_time() {
        let c = LatencyConfig::ktir_cpu_defaults();
        let mut a = rec("ktdp.load", Unit::Dma, 3125, DramAccess::Read);
        a.core = 3;
        let b = rec("ktdp.load", Unit::Dma, 312_500, DramAccess::Read);
        let e = estimate(&c, vec![a, b]);
        assert_eq!(e.cores.len(), 2);
        assert_eq!(e.critical_core.unwrap().core, 0);
        assert!((e.sequential_cycles - 10_000.0).abs() < 1e-6);
    }

    #[test]
    fn no_ops_cost_nothing() {
        let e = estimate(&LatencyConfig::ktir_cpu_defaults(), Vec::new());
        assert_eq!(e.sequential_cycles, 0.0);
        assert!(e.critical_core.is_none());
    }

    #[test]
    fn the_machine_parameters_carry_ktir_cpu_labels() {
        let m = Machine::preset("spyre32").unwrap();
        let c = LatencyConfig::of(&m);
        assert_eq!(c.num_cores, m.cores.value);
        let labels: Vec<&str> = c.params().iter().map(|p| p.label).collect();
        assert!(labels.contains(&"hbm_bandwidth_tb_s"));
        assert!(labels.contains(&"systolic_flops_per_cycle"));
        assert!(c.hbm_bytes_per_cycle_per_core() > 0.0);
    }
}
