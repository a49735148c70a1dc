//! Machine descriptions as data.
//!
//! A [`Machine`] describes a ring-connected dataflow accelerator: its cores and their units
//! (DMA, the PT systolic array, the SFP vector unit), the scratchpad, the bidirectional ring,
//! where off-chip memory attaches to the ring, and the off-chip bandwidth. Every number is a
//! [`Param`] carrying its provenance (`public` or `assumed`, plus a source note), so the UI and
//! the CLI can list exactly which figures are assumptions ([`Machine::assumptions`]).
//!
//! No accelerator-specific constant lives in this code: the presets are JSON files under
//! `crates/sim/machines/` (embedded at build time), and users can load their own with
//! [`Machine::from_json`], which validates every field and names the offending one.
//!
//! # Ring topology
//! The ring's *stops* are the cores and the memory stops, in ring order: core 0, then any
//! memory stops whose `position` is 0 (in the order listed), core 1, and so on. A memory stop
//! with `position = p` sits between core `p` and core `p + 1` (or core 0 when `p` is the last
//! core). Each stop has two outgoing links: clockwise (to the next stop index, wrapping) and
//! counter-clockwise (to the previous one). Each link direction is an independent resource.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Whether a number is documented publicly or assumed by the preset's author.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Public,
    #[default]
    Assumed,
}

/// A machine parameter with provenance.
///
/// JSON form: `{"value": 128, "status": "public", "source": "..."}`. `status` defaults to
/// `assumed` and `source` to the empty string, so hand-written machine files may omit them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Param<T> {
    pub value: T,
    #[serde(default)]
    pub status: Status,
    #[serde(default)]
    pub source: String,
}

impl<T> Param<T> {
    /// A parameter with the given value, status and source note.
    pub fn new(value: T, status: Status, source: &str) -> Self {
        Param {
            value,
            status,
            source: source.to_string(),
        }
    }
}

/// Size of the systolic (PT) array of one corelet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeArray {
    pub rows: usize,
    pub cols: usize,
}

/// A point where off-chip memory attaches to the ring.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryStop {
    /// A unique name, e.g. `"mem0"`.
    pub name: String,
    /// Index of the core after which this stop sits in ring order.
    pub position: usize,
}

/// A machine description. See the module documentation for the ring layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Number of cores (ring stops that compute).
    pub cores: Param<usize>,
    /// Corelets per core (they share the core's scratchpad).
    pub corelets_per_core: Param<usize>,
    /// Systolic array size of one corelet.
    pub pe_array: Param<PeArray>,
    /// Number of `pe_array.rows`-row passes over M needed to fill the PT pipeline.
    pub pipeline_fill_row_passes: Param<u64>,
    /// Elements processed per cycle by the SFP vector unit.
    pub sfp_lanes: Param<u64>,
    /// Cost multiplier of a transcendental elementwise op (exp, gelu, ...) on the SFP.
    pub transcendental_cost_factor: Param<u64>,
    /// Peak multiply-accumulates per cycle of one core's PT unit.
    pub matmul_peak_macs_per_cycle_per_core: Param<f64>,
    /// Scratchpad size per core in bytes.
    pub scratchpad_bytes: Param<u64>,
    /// Fraction of the scratchpad reserved by the backend, in [0, 1).
    pub scratchpad_reserve_fraction: Param<f64>,
    /// Allocation granule ("stick") of the scratchpad and of tensor layouts, in bytes.
    pub stick_bytes: Param<u64>,
    /// Bandwidth of one ring link in one direction.
    pub ring_bytes_per_cycle_per_direction: Param<f64>,
    /// Latency added per ring hop.
    pub ring_hop_latency_cycles: Param<u64>,
    /// Where off-chip memory attaches to the ring.
    pub memory_stops: Param<Vec<MemoryStop>>,
    /// Aggregate off-chip peak bandwidth shared by all memory stops.
    pub dram_peak_bytes_per_cycle: Param<f64>,
    /// Fraction of the peak achieved when traffic goes one way only (all reads or all writes).
    pub dram_one_way_efficiency: Param<f64>,
    /// Fraction of the peak achieved when reads and writes are both active.
    pub dram_mixed_efficiency: Param<f64>,
    /// Clock frequency; converts cycles to time.
    pub clock_ghz: Param<f64>,
    /// Fixed cost of starting one DMA transfer.
    pub dma_setup_cycles: Param<u64>,
}

/// A validation or parse error; `field` names the offending field (`"json"` for syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for MachineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field == "json" {
            write!(f, "invalid machine description: {}", self.message)
        } else {
            write!(f, "machine field `{}`: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for MachineError {}

fn err(field: &str, message: String) -> MachineError {
    MachineError {
        field: field.to_string(),
        message,
    }
}

/// What sits at a ring stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StopKind {
    Core(usize),
    Memory(String),
}

/// One ring stop: what it is and its index in ring order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StopInfo {
    pub kind: StopKind,
    pub index: usize,
}

/// Direction of travel on the ring. Clockwise goes to increasing stop indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Clockwise,
    CounterClockwise,
}

/// One directed ring link: leaves `from_stop` in `direction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LinkId {
    pub from_stop: usize,
    pub direction: Direction,
}

impl LinkId {
    /// Dense index in `0..2 * stop_count`: `2 * from_stop` (+1 if counter-clockwise).
    pub fn index(&self) -> usize {
        self.from_stop * 2
            + match self.direction {
                Direction::Clockwise => 0,
                Direction::CounterClockwise => 1,
            }
    }

    /// Inverse of [`LinkId::index`].
    pub fn from_index(index: usize) -> LinkId {
        LinkId {
            from_stop: index / 2,
            direction: match index % 2 {
                0 => Direction::Clockwise,
                _ => Direction::CounterClockwise,
            },
        }
    }

    /// The stop this link arrives at on a ring of `stop_count` stops.
    pub fn to_stop(&self, stop_count: usize) -> usize {
        if stop_count == 0 {
            return 0;
        }
        match self.direction {
            Direction::Clockwise => (self.from_stop + 1) % stop_count,
            Direction::CounterClockwise => (self.from_stop + stop_count - 1) % stop_count,
        }
    }
}

impl fmt::Display for LinkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = match self.direction {
            Direction::Clockwise => "cw",
            Direction::CounterClockwise => "ccw",
        };
        write!(f, "s{}-{}", self.from_stop, d)
    }
}

/// A path on the ring.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Route {
    pub direction: Direction,
    /// Links traversed, in order. Empty when source and destination coincide.
    pub links: Vec<LinkId>,
    pub hops: usize,
}

/// One row of [`Machine::parameters`]: a field, its value rendered as text, and provenance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamInfo {
    pub field: &'static str,
    pub value: String,
    pub status: Status,
    pub source: String,
}

const PRESETS: &[(&str, &str)] = &[
    ("spyre32", include_str!("../machines/spyre32.json")),
    ("tiny4", include_str!("../machines/tiny4.json")),
];

const PRESET_NAMES: &[&str] = &["spyre32", "tiny4"];

/// Upper bounds that keep user-supplied machines within what the simulator can handle.
const MAX_CORES: usize = 1024;
const MAX_MEMORY_STOPS: usize = 64;
const MAX_SMALL_COUNT: u64 = 1 << 20;
const MAX_BYTES: u64 = 1 << 44;
const MAX_CYCLES_PARAM: u64 = 1 << 32;
/// Largest stick: a stick is one DMA granule, far below a page.
const MAX_STICK_BYTES: u64 = 1 << 16;
/// Smallest and largest rate (per cycle, or GHz): outside this range modelled times stop
/// being numbers a person can read (1e-300 bytes per cycle gives 300-digit cycle counts).
const MIN_RATE: f64 = 1e-3;
const MAX_RATE: f64 = 1e12;

impl Machine {
    /// Names of the built-in presets.
    pub fn preset_names() -> &'static [&'static str] {
        PRESET_NAMES
    }

    /// A built-in preset by name (`None` if unknown).
    pub fn preset(name: &str) -> Option<Machine> {
        PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, text)| Machine::from_json(text).ok())
    }

    /// Parses and validates a machine description.
    pub fn from_json(text: &str) -> Result<Machine, MachineError> {
        // Editors on some systems save JSON with a byte-order mark; it carries no meaning.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let machine: Machine =
            serde_json::from_str(text).map_err(|e| err("json", json_message(&e)))?;
        machine.validate()?;
        Ok(machine)
    }

    /// Serialises to pretty JSON (the same format [`Machine::from_json`] reads).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks every field; the error names the first offending field.
    pub fn validate(&self) -> Result<(), MachineError> {
        if self.name.trim().is_empty() {
            return Err(err("name", "must not be empty".into()));
        }
        let cores = self.cores.value;
        if !(1..=MAX_CORES).contains(&cores) {
            return Err(err(
                "cores",
                format!("must be between 1 and {MAX_CORES}, got {cores}"),
            ));
        }
        check_count(
            "corelets_per_core",
            self.corelets_per_core.value as u64,
            MAX_SMALL_COUNT,
        )?;
        check_count(
            "pe_array.rows",
            self.pe_array.value.rows as u64,
            MAX_SMALL_COUNT,
        )?;
        check_count(
            "pe_array.cols",
            self.pe_array.value.cols as u64,
            MAX_SMALL_COUNT,
        )?;
        check_count(
            "pipeline_fill_row_passes",
            self.pipeline_fill_row_passes.value,
            MAX_SMALL_COUNT,
        )?;
        check_count("sfp_lanes", self.sfp_lanes.value, MAX_SMALL_COUNT)?;
        check_count(
            "transcendental_cost_factor",
            self.transcendental_cost_factor.value,
            MAX_SMALL_COUNT,
        )?;
        check_rate(
            "matmul_peak_macs_per_cycle_per_core",
            self.matmul_peak_macs_per_cycle_per_core.value,
        )?;
        check_count("scratchpad_bytes", self.scratchpad_bytes.value, MAX_BYTES)?;
        let reserve = self.scratchpad_reserve_fraction.value;
        if !(reserve.is_finite() && (0.0..1.0).contains(&reserve)) {
            return Err(err(
                "scratchpad_reserve_fraction",
                format!("must be in [0, 1), got {reserve}"),
            ));
        }
        check_count("stick_bytes", self.stick_bytes.value, MAX_STICK_BYTES)?;
        if !self.stick_bytes.value.is_multiple_of(8) {
            // A stick must hold a whole number of elements of every type (up to 8 bytes).
            return Err(err(
                "stick_bytes",
                format!(
                    "must be a multiple of 8 (the widest element type), got {}",
                    self.stick_bytes.value
                ),
            ));
        }
        if self.scratchpad_capacity_bytes() == 0 {
            return Err(err(
                "scratchpad_bytes",
                format!(
                    "plannable capacity ({} bytes minus reserve {}, rounded down to the stick of {} bytes) is zero",
                    self.scratchpad_bytes.value, reserve, self.stick_bytes.value
                ),
            ));
        }
        check_rate(
            "ring_bytes_per_cycle_per_direction",
            self.ring_bytes_per_cycle_per_direction.value,
        )?;
        if self.ring_hop_latency_cycles.value > MAX_CYCLES_PARAM {
            return Err(err(
                "ring_hop_latency_cycles",
                format!(
                    "must be at most {MAX_CYCLES_PARAM}, got {}",
                    self.ring_hop_latency_cycles.value
                ),
            ));
        }
        let stops = &self.memory_stops.value;
        if stops.is_empty() || stops.len() > MAX_MEMORY_STOPS {
            return Err(err(
                "memory_stops",
                format!(
                    "must list between 1 and {MAX_MEMORY_STOPS} memory stops, got {}",
                    stops.len()
                ),
            ));
        }
        for (i, stop) in stops.iter().enumerate() {
            let field = format!("memory_stops[{i}]");
            if stop.name.trim().is_empty() {
                return Err(err(&format!("{field}.name"), "must not be empty".into()));
            }
            if stops[..i].iter().any(|s| s.name == stop.name) {
                return Err(err(
                    &format!("{field}.name"),
                    format!("duplicate memory stop name `{}`", stop.name),
                ));
            }
            if stop.position >= cores {
                return Err(err(
                    &format!("{field}.position"),
                    format!(
                        "must be a core index below {cores} (the stop sits after that core), got {}",
                        stop.position
                    ),
                ));
            }
        }
        check_rate(
            "dram_peak_bytes_per_cycle",
            self.dram_peak_bytes_per_cycle.value,
        )?;
        check_fraction(
            "dram_one_way_efficiency",
            self.dram_one_way_efficiency.value,
        )?;
        check_fraction("dram_mixed_efficiency", self.dram_mixed_efficiency.value)?;
        check_rate("clock_ghz", self.clock_ghz.value)?;
        if self.dma_setup_cycles.value > MAX_CYCLES_PARAM {
            return Err(err(
                "dma_setup_cycles",
                format!(
                    "must be at most {MAX_CYCLES_PARAM}, got {}",
                    self.dma_setup_cycles.value
                ),
            ));
        }
        Ok(())
    }

    /// Every parameter with its value and provenance, in declaration order.
    pub fn parameters(&self) -> Vec<ParamInfo> {
        fn row<T>(field: &'static str, p: &Param<T>, value: String) -> ParamInfo {
            ParamInfo {
                field,
                value,
                status: p.status,
                source: p.source.clone(),
            }
        }
        let pe = self.pe_array.value;
        let stops = self
            .memory_stops
            .value
            .iter()
            .map(|s| format!("{} after core {}", s.name, s.position))
            .collect::<Vec<_>>()
            .join(", ");
        vec![
            row("cores", &self.cores, self.cores.value.to_string()),
            row(
                "corelets_per_core",
                &self.corelets_per_core,
                self.corelets_per_core.value.to_string(),
            ),
            row(
                "pe_array",
                &self.pe_array,
                format!("{}x{}", pe.rows, pe.cols),
            ),
            row(
                "pipeline_fill_row_passes",
                &self.pipeline_fill_row_passes,
                self.pipeline_fill_row_passes.value.to_string(),
            ),
            row(
                "sfp_lanes",
                &self.sfp_lanes,
                self.sfp_lanes.value.to_string(),
            ),
            row(
                "transcendental_cost_factor",
                &self.transcendental_cost_factor,
                self.transcendental_cost_factor.value.to_string(),
            ),
            row(
                "matmul_peak_macs_per_cycle_per_core",
                &self.matmul_peak_macs_per_cycle_per_core,
                self.matmul_peak_macs_per_cycle_per_core.value.to_string(),
            ),
            row(
                "scratchpad_bytes",
                &self.scratchpad_bytes,
                self.scratchpad_bytes.value.to_string(),
            ),
            row(
                "scratchpad_reserve_fraction",
                &self.scratchpad_reserve_fraction,
                self.scratchpad_reserve_fraction.value.to_string(),
            ),
            row(
                "stick_bytes",
                &self.stick_bytes,
                self.stick_bytes.value.to_string(),
            ),
            row(
                "ring_bytes_per_cycle_per_direction",
                &self.ring_bytes_per_cycle_per_direction,
                self.ring_bytes_per_cycle_per_direction.value.to_string(),
            ),
            row(
                "ring_hop_latency_cycles",
                &self.ring_hop_latency_cycles,
                self.ring_hop_latency_cycles.value.to_string(),
            ),
            row("memory_stops", &self.memory_stops, stops),
            row(
                "dram_peak_bytes_per_cycle",
                &self.dram_peak_bytes_per_cycle,
                self.dram_peak_bytes_per_cycle.value.to_string(),
            ),
            row(
                "dram_one_way_efficiency",
                &self.dram_one_way_efficiency,
                self.dram_one_way_efficiency.value.to_string(),
            ),
            row(
                "dram_mixed_efficiency",
                &self.dram_mixed_efficiency,
                self.dram_mixed_efficiency.value.to_string(),
            ),
            row(
                "clock_ghz",
                &self.clock_ghz,
                self.clock_ghz.value.to_string(),
            ),
            row(
                "dma_setup_cycles",
                &self.dma_setup_cycles,
                self.dma_setup_cycles.value.to_string(),
            ),
        ]
    }

    /// The assumed parameters as `(field, note)`; the note is the value and the source.
    pub fn assumptions(&self) -> Vec<(String, String)> {
        self.parameters()
            .into_iter()
            .filter(|p| p.status == Status::Assumed)
            .map(|p| {
                let note = if p.source.is_empty() {
                    format!("{} (assumed)", p.value)
                } else {
                    format!("{} (assumed: {})", p.value, p.source)
                };
                (p.field.to_string(), note)
            })
            .collect()
    }

    // ---- ring topology -------------------------------------------------------------------

    /// Number of ring stops: cores plus memory stops.
    pub fn stop_count(&self) -> usize {
        self.cores
            .value
            .saturating_add(self.memory_stops.value.len())
    }

    /// Ring stop index of `core`: the core index plus the memory stops sitting before it.
    /// For `core >= cores` the result is `>= stop_count()` (the scheduler rejects it).
    pub fn core_stop(&self, core: usize) -> usize {
        if core >= self.cores.value {
            return self.stop_count().saturating_add(core);
        }
        let before = self
            .memory_stops
            .value
            .iter()
            .filter(|s| s.position < core)
            .count();
        core + before
    }

    /// Ring stop indices of the memory stops, in the order they are listed.
    pub fn memory_stop_ids(&self) -> Vec<usize> {
        let stops = &self.memory_stops.value;
        stops
            .iter()
            .enumerate()
            .map(|(i, s)| {
                // After core `position` and after earlier-listed stops at the same or a lower
                // position.
                let earlier = stops
                    .iter()
                    .enumerate()
                    .filter(|(j, t)| {
                        t.position < s.position || (t.position == s.position && *j < i)
                    })
                    .count();
                s.position.saturating_add(1).saturating_add(earlier)
            })
            .collect()
    }

    /// Stop index of the memory stop with the fewest hops from `core`; ties go to the lower
    /// stop index. Returns 0 if the machine has no memory stops (validation forbids that).
    pub fn nearest_memory_stop(&self, core: usize) -> usize {
        let from = self.core_stop(core);
        let n = self.stop_count();
        let mut ids = self.memory_stop_ids();
        ids.sort_unstable();
        ids.into_iter()
            .min_by_key(|&m| (ring_distance(from % n.max(1), m, n), m))
            .unwrap_or(0)
    }

    /// All stops in ring order.
    pub fn stops(&self) -> Vec<StopInfo> {
        let n = self.stop_count();
        let mut kinds: Vec<Option<StopKind>> = vec![None; n];
        for (i, id) in self.memory_stop_ids().into_iter().enumerate() {
            if let (Some(slot), Some(s)) = (kinds.get_mut(id), self.memory_stops.value.get(i)) {
                *slot = Some(StopKind::Memory(s.name.clone()));
            }
        }
        let mut core = 0;
        kinds
            .into_iter()
            .enumerate()
            .map(|(index, k)| {
                let kind = k.unwrap_or_else(|| {
                    core += 1;
                    StopKind::Core(core - 1)
                });
                StopInfo { kind, index }
            })
            .collect()
    }

    /// Human-readable name of a stop: `core3`, or the memory stop's name.
    pub fn stop_name(&self, stop: usize) -> String {
        match self.stops().into_iter().nth(stop).map(|s| s.kind) {
            Some(StopKind::Core(c)) => format!("core{c}"),
            Some(StopKind::Memory(name)) => name,
            None => format!("stop{stop}"),
        }
    }

    /// Shortest route from `src_stop` to `dst_stop`; on a tie the clockwise direction wins.
    /// `None` if either stop is out of range.
    pub fn route(&self, src_stop: usize, dst_stop: usize) -> Option<Route> {
        let (direction, links) = self.route_links(src_stop, dst_stop)?;
        let links: Vec<LinkId> = links.collect();
        Some(Route {
            direction,
            hops: links.len(),
            links,
        })
    }

    /// The direction and the links, in order, of [`Machine::route`], without collecting
    /// them: the timing model walks a route per transfer, hundreds of thousands in a large
    /// run.
    pub fn route_links(
        &self,
        src_stop: usize,
        dst_stop: usize,
    ) -> Option<(Direction, impl ExactSizeIterator<Item = LinkId>)> {
        let n = self.stop_count();
        if src_stop >= n || dst_stop >= n {
            return None;
        }
        let cw = (dst_stop + n - src_stop) % n;
        let ccw = (src_stop + n - dst_stop) % n;
        let (direction, hops) = if cw <= ccw {
            (Direction::Clockwise, cw)
        } else {
            (Direction::CounterClockwise, ccw)
        };
        let mut at = src_stop;
        let links = (0..hops).map(move |_| {
            let link = LinkId {
                from_stop: at,
                direction,
            };
            at = link.to_stop(n);
            link
        });
        Some((direction, links))
    }

    // ---- cost functions ------------------------------------------------------------------

    /// Cycles for an `m x k` by `k x n` matmul tile on one core's PT unit:
    ///
    /// `ceil(m*n*k / (peak * efficiency))`, with
    /// `efficiency = min(1, sqrt(row_passes / pipeline_fill_row_passes))` and
    /// `row_passes = ceil(m / pe_array.rows)`. Zero-sized tiles take 0 cycles.
    pub fn matmul_cycles(&self, m: u64, n: u64, k: u64) -> u64 {
        if m == 0 || n == 0 || k == 0 {
            return 0;
        }
        let macs = (m as f64) * (n as f64) * (k as f64);
        let cycles =
            macs / (self.matmul_peak_macs_per_cycle_per_core.value * self.matmul_efficiency(m));
        to_cycles(cycles)
    }

    /// The PT efficiency factor for a tile of `m` rows (see [`Machine::matmul_cycles`]).
    pub fn matmul_efficiency(&self, m: u64) -> f64 {
        let rows = (self.pe_array.value.rows as u64).max(1);
        let passes = m.div_ceil(rows).max(1) as f64;
        let fill = self.pipeline_fill_row_passes.value.max(1) as f64;
        (passes / fill).sqrt().min(1.0)
    }

    /// Cycles for `elements` elementwise operations on the SFP:
    /// `ceil(elements / sfp_lanes)`, times `transcendental_cost_factor` if transcendental.
    pub fn sfp_cycles(&self, elements: u64, transcendental: bool) -> u64 {
        let base = elements.div_ceil(self.sfp_lanes.value.max(1));
        if transcendental {
            base.saturating_mul(self.transcendental_cost_factor.value)
        } else {
            base
        }
    }

    /// Plannable scratchpad bytes per core: `scratchpad_bytes * (1 - reserve)`, rounded down
    /// to a multiple of `stick_bytes`.
    pub fn scratchpad_capacity_bytes(&self) -> u64 {
        let reserve = self.scratchpad_reserve_fraction.value;
        if !(reserve.is_finite() && (0.0..1.0).contains(&reserve)) {
            return 0;
        }
        let usable = (self.scratchpad_bytes.value as f64 * (1.0 - reserve)).floor();
        let usable = to_cycles_floor(usable);
        let stick = self.stick_bytes.value.max(1);
        usable / stick * stick
    }

    /// Effective DRAM bandwidth in bytes per cycle: peak times the one-way efficiency, or the
    /// mixed efficiency when reads and writes are both in flight.
    pub fn dram_bytes_per_cycle(&self, mixed: bool) -> f64 {
        let eff = if mixed {
            self.dram_mixed_efficiency.value
        } else {
            self.dram_one_way_efficiency.value
        };
        self.dram_peak_bytes_per_cycle.value * eff
    }

    /// Converts cycles to microseconds with the machine clock.
    pub fn cycles_to_us(&self, cycles: f64) -> f64 {
        let ghz = self.clock_ghz.value;
        if ghz > 0.0 && ghz.is_finite() {
            cycles / (ghz * 1000.0)
        } else {
            0.0
        }
    }
}

/// Hops along the shorter direction between two stops on a ring of `n` stops.
fn ring_distance(a: usize, b: usize, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let cw = (b + n - a % n) % n;
    cw.min(n - cw)
}

/// Rounds a non-negative cycle count up to an integer, saturating (NaN becomes 0).
fn to_cycles(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        0
    } else {
        x.ceil() as u64
    }
}

fn to_cycles_floor(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        0
    } else {
        x.floor() as u64
    }
}

fn check_count(field: &str, value: u64, max: u64) -> Result<(), MachineError> {
    if value == 0 || value > max {
        return Err(err(
            field,
            format!("must be between 1 and {max}, got {value}"),
        ));
    }
    Ok(())
}

fn check_rate(field: &str, value: f64) -> Result<(), MachineError> {
    if !(value.is_finite() && (MIN_RATE..=MAX_RATE).contains(&value)) {
        return Err(err(
            field,
            format!("must be a number between {MIN_RATE:e} and {MAX_RATE:e}, got {value:e}"),
        ));
    }
    Ok(())
}

/// A JSON syntax or shape error in words, with its line and column; numbers too large for a
/// 64-bit float get a message of their own instead of serde's bare "number out of range".
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if text.starts_with("number out of range") {
        return format!(
            "a number is too large to represent (larger than about 1.8e308) at line {} column {}",
            e.line(),
            e.column()
        );
    }
    text
}

fn check_fraction(field: &str, value: f64) -> Result<(), MachineError> {
    if !(value.is_finite() && value > 0.0 && value <= 1.0) {
        return Err(err(field, format!("must be in (0, 1], got {value}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spyre() -> Machine {
        Machine::preset("spyre32").expect("spyre32 preset parses")
    }

    fn tiny() -> Machine {
        Machine::preset("tiny4").expect("tiny4 preset parses")
    }

    #[test]
    fn presets_parse_and_validate() {
        for name in Machine::preset_names() {
            let m = Machine::preset(name).unwrap_or_else(|| panic!("preset {name}"));
            assert_eq!(&m.name, name);
            m.validate().unwrap();
            // Round trip through JSON.
            assert_eq!(Machine::from_json(&m.to_json()).unwrap(), m);
        }
        assert!(Machine::preset("nope").is_none());
        assert_eq!(PRESETS.len(), PRESET_NAMES.len());
    }

    #[test]
    fn hostile_machine_files_get_clear_errors() {
        let json = tiny().to_json();
        // A byte-order mark is accepted and ignored.
        assert_eq!(
            Machine::from_json(&format!("\u{feff}{json}")).unwrap(),
            tiny()
        );
        // A stick that cannot hold a whole element of every type is refused up front.
        let mut m = tiny();
        m.stick_bytes.value = 1;
        let e = m.validate().unwrap_err();
        assert_eq!(e.field, "stick_bytes");
        assert!(e.message.contains("multiple of 8"), "{e}");
        // Absurdly small rates would print hundreds of digits of cycles.
        let mut m = tiny();
        m.dram_peak_bytes_per_cycle.value = 1e-300;
        let e = m.validate().unwrap_err();
        assert_eq!(e.field, "dram_peak_bytes_per_cycle");
        assert!(e.message.contains("1e-300"), "{e}");
        // A number beyond f64 names what is wrong and where.
        let big = json.replacen(
            "\"clock_ghz\": {\n    \"value\": 1.0",
            "\"clock_ghz\": {\n    \"value\": 1e400",
            1,
        );
        assert_ne!(big, json, "the test edits the clock");
        let e = Machine::from_json(&big).unwrap_err();
        assert!(
            e.message.contains("too large") && e.message.contains("line"),
            "{e}"
        );
    }

    #[test]
    fn spyre32_numbers() {
        let m = spyre();
        assert_eq!(m.cores.value, 32);
        assert_eq!(m.stop_count(), 34);
        assert_eq!(m.ring_bytes_per_cycle_per_direction.value, 128.0);
        assert_eq!(m.ring_bytes_per_cycle_per_direction.status, Status::Public);
        // 2 MiB * 0.8 = 1677721.6 -> 1677721 -> rounded down to 128.
        assert_eq!(m.scratchpad_capacity_bytes(), 1_677_696);
        assert_eq!(m.scratchpad_capacity_bytes() % 128, 0);
        let assumed: Vec<String> = m.assumptions().into_iter().map(|(f, _)| f).collect();
        for f in [
            "ring_hop_latency_cycles",
            "memory_stops",
            "clock_ghz",
            "dma_setup_cycles",
            "sfp_lanes",
            "transcendental_cost_factor",
        ] {
            assert!(assumed.iter().any(|a| a == f), "{f} should be assumed");
        }
        assert!(!assumed.iter().any(|a| a == "cores"));
    }

    #[test]
    fn ring_layout_spyre32() {
        let m = spyre();
        // mem0 after core 15, mem1 after core 31.
        assert_eq!(m.memory_stop_ids(), vec![16, 33]);
        assert_eq!(m.core_stop(0), 0);
        assert_eq!(m.core_stop(15), 15);
        assert_eq!(m.core_stop(16), 17);
        assert_eq!(m.core_stop(31), 32);
        let stops = m.stops();
        assert_eq!(stops.len(), 34);
        assert_eq!(stops[16].kind, StopKind::Memory("mem0".into()));
        assert_eq!(stops[17].kind, StopKind::Core(16));
        assert_eq!(stops[33].kind, StopKind::Memory("mem1".into()));
        for (i, s) in stops.iter().enumerate() {
            assert_eq!(s.index, i);
            if let StopKind::Core(c) = s.kind {
                assert_eq!(m.core_stop(c), i);
            }
        }
        assert_eq!(m.nearest_memory_stop(15), 16);
        assert_eq!(m.nearest_memory_stop(16), 16);
        assert_eq!(m.nearest_memory_stop(0), 33);
        assert_eq!(m.nearest_memory_stop(31), 33);
        assert_eq!(m.stop_name(16), "mem0");
        assert_eq!(m.stop_name(17), "core16");
    }

    #[test]
    fn multiple_memory_stops_at_same_position() {
        let mut m = tiny();
        m.memory_stops.value = vec![
            MemoryStop {
                name: "b".into(),
                position: 1,
            },
            MemoryStop {
                name: "a".into(),
                position: 0,
            },
            MemoryStop {
                name: "c".into(),
                position: 1,
            },
        ];
        m.validate().unwrap();
        // Order: core0, a, core1, b, c, core2, core3.
        assert_eq!(m.memory_stop_ids(), vec![3, 1, 4]);
        assert_eq!(m.core_stop(1), 2);
        assert_eq!(m.core_stop(2), 5);
        let kinds: Vec<StopKind> = m.stops().into_iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            vec![
                StopKind::Core(0),
                StopKind::Memory("a".into()),
                StopKind::Core(1),
                StopKind::Memory("b".into()),
                StopKind::Memory("c".into()),
                StopKind::Core(2),
                StopKind::Core(3),
            ]
        );
    }

    #[test]
    fn routes_take_shorter_direction() {
        let m = tiny(); // 5 stops: c0 c1 c2 c3 mem0
        let r = m.route(0, 2).unwrap();
        assert_eq!(r.direction, Direction::Clockwise);
        assert_eq!(r.hops, 2);
        assert_eq!(
            r.links,
            vec![
                LinkId {
                    from_stop: 0,
                    direction: Direction::Clockwise
                },
                LinkId {
                    from_stop: 1,
                    direction: Direction::Clockwise
                }
            ]
        );
        let r = m.route(0, 4).unwrap();
        assert_eq!(r.direction, Direction::CounterClockwise);
        assert_eq!(r.hops, 1);
        assert_eq!(r.links[0].to_stop(5), 4);
        let r = m.route(3, 3).unwrap();
        assert_eq!(r.hops, 0);
        assert!(r.links.is_empty());
        assert!(m.route(0, 5).is_none());
        // Tie on an even ring goes clockwise.
        let mut even = m.clone();
        even.cores.value = 5; // 6 stops
        let r = even.route(1, 4).unwrap();
        assert_eq!((r.direction, r.hops), (Direction::Clockwise, 3));
        let r = even.route(4, 1).unwrap();
        assert_eq!((r.direction, r.hops), (Direction::Clockwise, 3));
        assert_eq!(r.links.last().unwrap().to_stop(6), 1);
    }

    #[test]
    fn link_index_round_trip() {
        for i in 0..20 {
            assert_eq!(LinkId::from_index(i).index(), i);
        }
    }

    #[test]
    fn cost_functions() {
        let m = spyre();
        // 64 rows = 8 passes = full efficiency.
        assert_eq!(m.matmul_efficiency(64), 1.0);
        assert_eq!(m.matmul_cycles(64, 64, 96), 64 * 64 * 96 / 1536);
        // 8 rows = 1 pass: efficiency sqrt(1/8).
        let e = (1.0f64 / 8.0).sqrt();
        assert!((m.matmul_efficiency(8) - e).abs() < 1e-12);
        assert_eq!(
            m.matmul_cycles(8, 64, 64),
            (8.0 * 64.0 * 64.0 / (1536.0 * e)).ceil() as u64
        );
        assert_eq!(m.matmul_cycles(0, 64, 64), 0);
        // Huge sizes saturate rather than panic.
        assert!(m.matmul_cycles(u64::MAX, u64::MAX, u64::MAX) > 0);
        assert_eq!(m.sfp_cycles(0, false), 0);
        assert_eq!(m.sfp_cycles(1, false), 1);
        assert_eq!(m.sfp_cycles(65, false), 2);
        assert_eq!(m.sfp_cycles(65, true), 8);
        assert_eq!(m.sfp_cycles(u64::MAX, true), u64::MAX.div_ceil(64) * 4);
    }

    fn with(mut f: impl FnMut(&mut serde_json::Value)) -> Result<Machine, MachineError> {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../machines/tiny4.json")).unwrap();
        f(&mut v);
        Machine::from_json(&v.to_string())
    }

    #[test]
    fn validation_names_fields() {
        type Edit = Box<dyn Fn(&mut serde_json::Value)>;
        let cases: Vec<(&str, Edit)> = vec![
            ("cores", Box::new(|v| v["cores"]["value"] = 0.into())),
            ("cores", Box::new(|v| v["cores"]["value"] = 5000.into())),
            (
                "ring_bytes_per_cycle_per_direction",
                Box::new(|v| v["ring_bytes_per_cycle_per_direction"]["value"] = 0.into()),
            ),
            (
                "scratchpad_reserve_fraction",
                Box::new(|v| v["scratchpad_reserve_fraction"]["value"] = 1.0.into()),
            ),
            (
                "memory_stops[0].position",
                Box::new(|v| v["memory_stops"]["value"][0]["position"] = 4.into()),
            ),
            (
                "memory_stops",
                Box::new(|v| v["memory_stops"]["value"] = serde_json::json!([])),
            ),
            (
                "dram_mixed_efficiency",
                Box::new(|v| v["dram_mixed_efficiency"]["value"] = 1.5.into()),
            ),
            (
                "pe_array.rows",
                Box::new(|v| v["pe_array"]["value"]["rows"] = 0.into()),
            ),
            ("name", Box::new(|v| v["name"] = "".into())),
            (
                "scratchpad_bytes",
                Box::new(|v| v["scratchpad_bytes"]["value"] = 100.into()),
            ),
        ];
        for (field, edit) in cases {
            let e = with(|v| edit(v)).unwrap_err();
            assert_eq!(e.field, field, "{e}");
            assert!(e.to_string().contains(field));
        }
        // Duplicate names.
        let e = with(|v| {
            v["memory_stops"]["value"] =
                serde_json::json!([{"name":"m","position":0},{"name":"m","position":1}])
        })
        .unwrap_err();
        assert_eq!(e.field, "memory_stops[1].name");
        // Syntax errors and unknown fields are values, not panics.
        let e = Machine::from_json("{").unwrap_err();
        assert_eq!(e.field, "json");
        let e = with(|v| v["bogus"] = 1.into()).unwrap_err();
        assert!(e.message.contains("bogus"), "{e}");
        // Negative numbers for unsigned fields are parse errors.
        assert!(with(|v| v["cores"]["value"] = (-1).into()).is_err());
    }

    #[test]
    fn minimal_params_default_to_assumed() {
        let m = with(|v| v["ring_hop_latency_cycles"] = serde_json::json!({"value": 3})).unwrap();
        assert_eq!(m.ring_hop_latency_cycles.status, Status::Assumed);
        assert!(m
            .assumptions()
            .iter()
            .any(|(f, n)| f == "ring_hop_latency_cycles" && n.contains('3')));
    }
}
