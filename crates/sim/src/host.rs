//! The host runtime, as a program on the host: device open and close, allocation, host to
//! device and device to host transfers over the host link, kernel launches with a
//! per-launch overhead, and streams.
//!
//! # Model
//! - One host dispatch thread per card (assumed); the cards of a tensor-parallel run hold
//!   identical shards, so card 0's timeline stands for every card, and a collective starts
//!   when every card reaches it (it is in every card's stream at the same place).
//! - A launch costs the host `launch_overhead_cycles` (default 1.6 ms, the public dispatch
//!   round trip of the inference stack); the launched work is queued on a stream and may
//!   start on the device once the launch call returns and the stream's previous work has
//!   finished. The host does not wait for the device except at a synchronisation (the
//!   device-to-host copy of the output waits for the stream).
//! - Transfers cross the card's host link: its latency plus bytes over its bandwidth.
//! - Device memory is handed out by a first-fit allocator of 128-byte-aligned blocks that
//!   splits a free block on allocation and coalesces neighbours on free (the public
//!   allocator's rules).
//! - Open, close and the one-off weight upload happen before the timed inference and are
//!   reported apart from it.
//!
//! Host runtime overhead = (end-to-end - device busy) / end-to-end, where end-to-end runs
//! from the input upload to the output download and device busy is the sum of kernel and
//! collective time.

use crate::machine::{Param, Status};
use serde::Serialize;

/// Alignment of every device allocation, in bytes (public).
pub const ALLOC_ALIGN: u64 = 128;

/// A device memory allocator: first fit over 128-byte-aligned blocks, splitting on
/// allocation, coalescing on free.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Allocator {
    capacity: u64,
    /// Free blocks `(offset, size)`, sorted by offset, never adjacent.
    free: Vec<(u64, u64)>,
    /// Live blocks `(offset, size)`, sorted by offset.
    used: Vec<(u64, u64)>,
}

impl Allocator {
    /// An allocator over `capacity` bytes (rounded down to the alignment).
    pub fn new(capacity: u64) -> Allocator {
        let capacity = capacity / ALLOC_ALIGN * ALLOC_ALIGN;
        Allocator {
            capacity,
            free: if capacity > 0 {
                vec![(0, capacity)]
            } else {
                Vec::new()
            },
            used: Vec::new(),
        }
    }

    /// Allocates `bytes` (rounded up to 128) at the lowest free block that fits.
    pub fn alloc(&mut self, bytes: u64) -> Result<u64, String> {
        let size = bytes
            .max(1)
            .checked_next_multiple_of(ALLOC_ALIGN)
            .ok_or_else(|| format!("an allocation of {bytes} bytes overflows"))?;
        let i = self
            .free
            .iter()
            .position(|&(_, s)| s >= size)
            .ok_or_else(|| {
                format!(
                    "out of device memory: {size} bytes asked, largest free block {} of {} bytes",
                    self.free.iter().map(|f| f.1).max().unwrap_or(0),
                    self.capacity
                )
            })?;
        let (off, s) = self.free[i];
        if s == size {
            self.free.remove(i);
        } else {
            self.free[i] = (off + size, s - size);
        }
        let at = self.used.partition_point(|u| u.0 < off);
        self.used.insert(at, (off, size));
        Ok(off)
    }

    /// Frees the block at `offset`, merging it with free neighbours.
    pub fn free(&mut self, offset: u64) -> Result<(), String> {
        let i = self
            .used
            .binary_search_by_key(&offset, |u| u.0)
            .map_err(|_| format!("no live allocation at offset {offset}"))?;
        let (off, size) = self.used.remove(i);
        let at = self.free.partition_point(|f| f.0 < off);
        self.free.insert(at, (off, size));
        // Merge with the next, then the previous.
        if at + 1 < self.free.len() && self.free[at].0 + self.free[at].1 == self.free[at + 1].0 {
            self.free[at].1 += self.free[at + 1].1;
            self.free.remove(at + 1);
        }
        if at > 0 && self.free[at - 1].0 + self.free[at - 1].1 == self.free[at].0 {
            self.free[at - 1].1 += self.free[at].1;
            self.free.remove(at);
        }
        Ok(())
    }

    /// Number of free blocks (1 when everything is free: fully coalesced).
    pub fn free_blocks(&self) -> usize {
        self.free.len()
    }

    /// Bytes in live blocks.
    pub fn used_bytes(&self) -> u64 {
        self.used.iter().map(|u| u.1).sum()
    }
}

/// Runtime figures, each labelled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuntimeParams {
    /// Host cost of one launch, in device cycles.
    pub launch_overhead_cycles: Param<f64>,
    /// Host cost of one allocation call.
    pub alloc_cycles: Param<f64>,
    /// Host cost of opening (and of closing) a device.
    pub open_cycles: Param<f64>,
    /// Device memory the allocator manages, per card.
    pub device_memory_bytes: Param<u64>,
}

impl Default for RuntimeParams {
    fn default() -> Self {
        RuntimeParams {
            launch_overhead_cycles: Param::new(
                1.6e6,
                Status::Public,
                "a dispatch round trip costs about 1.6 ms in the public inference stack (spyre-inference issue 507); cycles at the assumed 1 GHz clock",
            ),
            alloc_cycles: Param::new(
                10_000.0,
                Status::Assumed,
                "not public; assumed 10 us per allocation call",
            ),
            open_cycles: Param::new(
                100e6,
                Status::Assumed,
                "not public; assumed 100 ms to open or close a device",
            ),
            device_memory_bytes: Param::new(
                112 << 30,
                Status::Public,
                "LPDDR5 up to 128 GB per card, 112 GB usable (public)",
            ),
        }
    }
}

/// How launches are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Grouping {
    /// Every kernel and every collective is its own launch.
    PerKernel,
    /// One launch per transformer block (everything of a layer, collectives included).
    PerBlock,
}

/// One piece of device work of a block, in stream order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum DeviceWork {
    /// A kernel and its modelled cycles.
    Kernel { name: String, cycles: f64 },
    /// A collective across the cards and its modelled cycles.
    Collective { name: String, cycles: f64 },
}

impl DeviceWork {
    fn cycles(&self) -> f64 {
        match self {
            DeviceWork::Kernel { cycles, .. } | DeviceWork::Collective { cycles, .. } => *cycles,
        }
    }
}

/// What the host program moves and runs for one inference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostJob {
    /// The work of one transformer block, in order.
    pub block: Vec<DeviceWork>,
    /// Blocks run back to back (a whole model's layers).
    pub blocks: usize,
    /// Buffer sizes allocated per card before the run (weights, activations).
    pub buffers: Vec<(String, u64)>,
    /// Bytes of weights uploaded once per card before the timed run.
    pub weight_bytes: u64,
    /// Bytes uploaded per card for the inference (activations in).
    pub input_bytes: u64,
    /// Bytes downloaded from card 0 after it (activations out).
    pub output_bytes: u64,
}

/// One span on the host or device lane.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostEvent {
    /// `host`, `host-link` or `device`.
    pub lane: &'static str,
    pub what: String,
    pub start: f64,
    pub end: f64,
}

/// The host runtime's report for one grouping.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostReport {
    pub grouping: Grouping,
    /// Launches issued per card.
    pub launches: usize,
    /// How launches were grouped, in words.
    pub grouping_note: String,
    /// From the start of the input upload to the end of the output download.
    pub end_to_end_cycles: f64,
    /// Kernels and collectives.
    pub device_busy_cycles: f64,
    /// (end-to-end - device busy) / end-to-end.
    pub overhead: f64,
    /// Whether the overhead is under the roadmap's 5%.
    pub under_5_percent: bool,
    /// Open, allocations and the weight upload, before the timed run.
    pub setup_cycles: f64,
    /// Free blocks after every buffer was freed (1: fully coalesced).
    pub free_blocks_after: usize,
    /// Host, host-link and device spans (the first block only, to stay small).
    pub events: Vec<HostEvent>,
}

/// Runs the host program of `job` with launches grouped by `grouping`, over a host link of
/// `link_bytes_per_cycle` and `link_latency`.
pub fn run_host(
    job: &HostJob,
    grouping: Grouping,
    params: &RuntimeParams,
    link_bytes_per_cycle: f64,
    link_latency: f64,
) -> Result<HostReport, String> {
    let xfer = |bytes: u64| link_latency + bytes as f64 / link_bytes_per_cycle.max(1e-9);
    let mut alloc = Allocator::new(params.device_memory_bytes.value);
    let mut setup = params.open_cycles.value;
    let mut offsets = Vec::new();
    for (name, bytes) in &job.buffers {
        offsets.push(
            alloc
                .alloc(*bytes)
                .map_err(|e| format!("allocating '{name}': {e}"))?,
        );
        setup += params.alloc_cycles.value;
    }
    setup += xfer(job.weight_bytes);

    let overhead = params.launch_overhead_cycles.value;
    let mut events = Vec::new();
    let mut host = 0.0f64;
    // Upload the input (a synchronous copy: the host waits for it).
    let upload = xfer(job.input_bytes);
    events.push(HostEvent {
        lane: "host-link",
        what: format!("copy in {} B", job.input_bytes),
        start: 0.0,
        end: upload,
    });
    host += upload;
    let mut device = host;
    let mut busy = 0.0;
    let mut launches = 0;
    for b in 0..job.blocks {
        let groups: Vec<&[DeviceWork]> = match grouping {
            Grouping::PerKernel => job.block.chunks(1).collect(),
            Grouping::PerBlock => vec![&job.block[..]],
        };
        for g in groups {
            let issued = host + overhead;
            if b == 0 {
                events.push(HostEvent {
                    lane: "host",
                    what: format!("launch ({} item(s))", g.len()),
                    start: host,
                    end: issued,
                });
            }
            host = issued;
            launches += 1;
            device = device.max(issued);
            for w in g {
                let start = device;
                device += w.cycles();
                busy += w.cycles();
                if b == 0 {
                    let what = match w {
                        DeviceWork::Kernel { name, .. } | DeviceWork::Collective { name, .. } => {
                            name.clone()
                        }
                    };
                    events.push(HostEvent {
                        lane: "device",
                        what,
                        start,
                        end: device,
                    });
                }
            }
        }
    }
    // The download waits for the stream.
    let start = device.max(host);
    let end = start + xfer(job.output_bytes);
    events.push(HostEvent {
        lane: "host-link",
        what: format!("copy out {} B", job.output_bytes),
        start,
        end,
    });
    for off in offsets {
        alloc.free(off)?;
    }
    let overhead_frac = if end > 0.0 { (end - busy) / end } else { 0.0 };
    let per_card = launches;
    Ok(HostReport {
        grouping,
        launches: per_card,
        grouping_note: match grouping {
            Grouping::PerKernel => format!(
                "one launch per kernel or collective: {} per block, {} block(s)",
                job.block.len(),
                job.blocks
            ),
            Grouping::PerBlock => format!(
                "one launch per transformer block ({} kernels and collectives each), {} block(s)",
                job.block.len(),
                job.blocks
            ),
        },
        end_to_end_cycles: end,
        device_busy_cycles: busy,
        overhead: overhead_frac,
        under_5_percent: overhead_frac < 0.05,
        setup_cycles: setup + params.open_cycles.value,
        free_blocks_after: alloc.free_blocks(),
        events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allocator_aligns_splits_and_coalesces() {
        let mut a = Allocator::new(1024);
        let x = a.alloc(1).unwrap();
        let y = a.alloc(200).unwrap();
        let z = a.alloc(128).unwrap();
        assert_eq!((x, y, z), (0, 128, 384));
        assert_eq!(a.used_bytes(), 512);
        a.free(y).unwrap();
        assert_eq!(a.free_blocks(), 2);
        // First fit reuses the hole.
        assert_eq!(a.alloc(100).unwrap(), 128);
        a.free(128).unwrap();
        a.free(x).unwrap();
        a.free(z).unwrap();
        assert_eq!(a.free_blocks(), 1, "neighbours coalesce");
        assert!(a.alloc(2048).unwrap_err().contains("out of device memory"));
        assert!(a.free(5).is_err());
    }

    fn job(blocks: usize) -> HostJob {
        HostJob {
            block: (0..10)
                .map(|i| DeviceWork::Kernel {
                    name: format!("k{i}"),
                    cycles: 300_000.0,
                })
                .collect(),
            blocks,
            buffers: vec![("w".into(), 1000), ("x".into(), 300)],
            weight_bytes: 1000,
            input_bytes: 300,
            output_bytes: 300,
        }
    }

    #[test]
    fn batching_launches_hides_the_overhead_behind_the_device() {
        let p = RuntimeParams::default();
        let k = run_host(&job(32), Grouping::PerKernel, &p, 63.0, 1000.0).unwrap();
        let b = run_host(&job(32), Grouping::PerBlock, &p, 63.0, 1000.0).unwrap();
        assert_eq!(k.launches, 320);
        assert_eq!(b.launches, 32);
        assert_eq!(k.device_busy_cycles, b.device_busy_cycles);
        // Per kernel the host is the bottleneck (1.6 ms per 0.3 ms kernel).
        assert!(k.overhead > 0.8, "{}", k.overhead);
        // Per block, launches overlap the previous block's 3 ms on the device.
        assert!(b.overhead < 0.05, "{}", b.overhead);
        assert!(b.under_5_percent && !k.under_5_percent);
        assert_eq!(b.free_blocks_after, 1);
    }
}
