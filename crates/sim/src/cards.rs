//! Collectives across the cards of a [`System`]: all-reduce (ring or tree), all-gather and
//! reduce-scatter, timed over the card links and computed on values.
//!
//! # Timing
//! A collective is a sequence of steps; a step is a set of card-to-card transfers that start
//! together once the previous step has finished everywhere (steps are synchronous). The
//! transfers of a step share the channels (link directions) they cross: bandwidth is split
//! max-min fairly (progressive filling), which is work-conserving: a flow throttled on one
//! channel leaves the rest of its other channels to the others. A transfer pays its route's
//! latency before its first byte moves. A reducing step also charges the receiving card the
//! time to add the chunk it received to its own: three passes over the chunk (read both,
//! write the sum) at the card's mixed read/write DRAM bandwidth; an assumption, since the
//! transfer lands in device memory and the sum is DRAM-bound.
//!
//! # Algorithms (B bytes per card, N cards)
//! - ring all-reduce: a reduce-scatter then an all-gather, each N-1 steps of B/N per card
//!   to its ring successor (card i sends to card i+1 mod N);
//! - tree all-reduce: a binary-tree reduce to card 0 (level d: card i with i mod 2d = d
//!   sends its partial sum to card i-d) then a broadcast down the same tree, 2 ceil(log2 N)
//!   steps of B;
//! - all-gather and reduce-scatter: the ring's halves alone.
//!
//! The choice of all-reduce algorithm is a stated cost estimate, with a = the slowest route's
//! latency and b = the narrowest channel on it: ring `2 (N-1) (a + B / (N b))`, tree
//! `2 ceil(log2 N) (a + B / b)`; the cheaper wins (ring on a tie) unless overridden.
//!
//! # Values and reduction order
//! [`all_reduce_values`] computes the result the algorithm gives, in its order, rounding to
//! the tensor's dtype after every addition (partial sums travel in the tensor's dtype):
//! - ring: the vector is cut into N chunks of `ceil(len / N)` elements; chunk j is summed
//!   `((x[j] + x[j+1]) + x[j+2]) + ... + x[j+N-1]`, card indices mod N;
//! - tree: pairs at distance 1 first, then 2, 4, ...: for 4 cards `(x0 + x1) + (x2 + x3)`.

use crate::machine::Machine;
use crate::system::{Channel, System};
use serde::Serialize;

/// Which all-reduce algorithm to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// Reduce-scatter then all-gather around the ring of cards.
    Ring,
    /// Binary-tree reduce then broadcast.
    Tree,
}

/// The all-reduce algorithm choice: by the cost estimate, or forced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AlgorithmChoice {
    /// The cheaper by the stated estimate.
    #[default]
    Auto,
    /// Always ring.
    Ring,
    /// Always tree.
    Tree,
}

impl std::str::FromStr for AlgorithmChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(AlgorithmChoice::Auto),
            "ring" => Ok(AlgorithmChoice::Ring),
            "tree" => Ok(AlgorithmChoice::Tree),
            _ => Err(format!(
                "unknown all-reduce algorithm '{s}' (auto, ring, tree)"
            )),
        }
    }
}

/// Which collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CollectiveKind {
    /// Every card ends with the sum.
    AllReduce,
    /// Every card ends with every card's piece.
    AllGather,
    /// Card i ends with the sum of piece i.
    ReduceScatter,
}

/// One transfer over one channel, for the card-link lanes of a timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkEvent {
    /// The channel's name (`card0->switch`).
    pub channel: String,
    /// Start and end in cycles from the collective's start.
    pub start: f64,
    pub end: f64,
    pub bytes: u64,
}

/// A timed collective.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectiveTiming {
    pub kind: CollectiveKind,
    /// Ring or tree (all-gather and reduce-scatter: ring).
    pub algorithm: Algorithm,
    /// Bytes each card contributes.
    pub bytes: u64,
    pub cards: usize,
    /// Modelled cycles from start to the last card done.
    pub cycles: f64,
    /// The estimates the choice was made by (ring, tree), in cycles.
    pub estimate_ring: f64,
    pub estimate_tree: f64,
    /// Why this algorithm: the estimate or the override.
    pub reason: String,
    /// Every transfer, per channel crossed.
    pub events: Vec<LinkEvent>,
}

/// A transfer of one step.
struct Transfer {
    src: usize,
    dst: usize,
    bytes: f64,
}

/// The stated cost estimates `(ring, tree)` of an all-reduce of `bytes` over `n` cards.
pub fn estimates(system: &System, n: usize, bytes: u64) -> (f64, f64) {
    let (mut a, mut b) = (0.0f64, f64::INFINITY);
    for s in 0..n {
        for d in 0..n {
            if let Some(r) = system.route(s, d) {
                a = a.max(r.latency_cycles as f64);
                for c in &r.channels {
                    b = b.min(system.channel_bandwidth(*c));
                }
            }
        }
    }
    if n <= 1 || !b.is_finite() {
        return (0.0, 0.0);
    }
    let nf = n as f64;
    let bytes = bytes as f64;
    let ring = 2.0 * (nf - 1.0) * (a + bytes / (nf * b));
    let tree = 2.0 * (nf.log2().ceil()) * (a + bytes / b);
    (ring, tree)
}

/// Times a collective of `bytes` per card over the first `n` cards of `system`.
pub fn time_collective(
    system: &System,
    n: usize,
    kind: CollectiveKind,
    bytes: u64,
    choice: AlgorithmChoice,
) -> CollectiveTiming {
    let (estimate_ring, estimate_tree) = estimates(system, n, bytes);
    let (algorithm, reason) = match (kind, choice) {
        (CollectiveKind::AllReduce, AlgorithmChoice::Ring) => {
            (Algorithm::Ring, "ring: set by the override".to_string())
        }
        (CollectiveKind::AllReduce, AlgorithmChoice::Tree) => {
            (Algorithm::Tree, "tree: set by the override".to_string())
        }
        (CollectiveKind::AllReduce, AlgorithmChoice::Auto) => {
            if estimate_tree < estimate_ring {
                (
                    Algorithm::Tree,
                    format!("tree: estimate {estimate_tree:.0} < ring {estimate_ring:.0} cycles"),
                )
            } else {
                (
                    Algorithm::Ring,
                    format!("ring: estimate {estimate_ring:.0} <= tree {estimate_tree:.0} cycles"),
                )
            }
        }
        _ => (Algorithm::Ring, "ring (the only algorithm modelled)".into()),
    };
    let steps = steps(kind, algorithm, n, bytes as f64);
    let machine = system.machine(0);
    let mut t = 0.0;
    let mut events = Vec::new();
    for (transfers, reduces) in &steps {
        let ends = run_step(system, transfers, t, &mut events);
        let mut step_end = ends.iter().copied().fold(t, f64::max);
        if *reduces {
            if let Some(m) = machine {
                let add = transfers
                    .iter()
                    .zip(&ends)
                    .map(|(tr, e)| e + reduce_cycles(m, tr.bytes))
                    .fold(t, f64::max);
                step_end = step_end.max(add);
            }
        }
        t = step_end;
    }
    CollectiveTiming {
        kind,
        algorithm,
        bytes,
        cards: n,
        cycles: t,
        estimate_ring,
        estimate_tree,
        reason,
        events,
    }
}

/// Cycles for a card to add a received chunk of `bytes` to its own (DRAM-bound, see the
/// module doc).
fn reduce_cycles(m: &Machine, bytes: f64) -> f64 {
    3.0 * bytes / m.dram_bytes_per_cycle(true).max(1e-9)
}

/// The steps of a collective: transfers, and whether the receivers reduce.
fn steps(kind: CollectiveKind, alg: Algorithm, n: usize, bytes: f64) -> Vec<(Vec<Transfer>, bool)> {
    if n <= 1 {
        return Vec::new();
    }
    let ring_round = |reduce: bool| {
        (
            (0..n)
                .map(|i| Transfer {
                    src: i,
                    dst: (i + 1) % n,
                    bytes: bytes / n as f64,
                })
                .collect::<Vec<_>>(),
            reduce,
        )
    };
    let mut out = Vec::new();
    match (kind, alg) {
        (CollectiveKind::AllReduce, Algorithm::Ring) => {
            out.extend((0..n - 1).map(|_| ring_round(true)));
            out.extend((0..n - 1).map(|_| ring_round(false)));
        }
        (CollectiveKind::AllReduce, Algorithm::Tree) => {
            let mut levels = Vec::new();
            let mut d = 1;
            while d < n {
                levels.push(d);
                d *= 2;
            }
            for &d in &levels {
                let tr = (0..n)
                    .filter(|i| i % (2 * d) == d)
                    .map(|i| Transfer {
                        src: i,
                        dst: i - d,
                        bytes,
                    })
                    .collect();
                out.push((tr, true));
            }
            for &d in levels.iter().rev() {
                let tr = (0..n)
                    .filter(|i| i % (2 * d) == d)
                    .map(|i| Transfer {
                        src: i - d,
                        dst: i,
                        bytes,
                    })
                    .collect();
                out.push((tr, false));
            }
        }
        (CollectiveKind::ReduceScatter, _) => out.extend((0..n - 1).map(|_| ring_round(true))),
        (CollectiveKind::AllGather, _) => out.extend((0..n - 1).map(|_| ring_round(false))),
    }
    out
}

/// Runs one step's transfers from time `t0` with max-min fair sharing of the channels;
/// returns each transfer's end and appends per-channel events.
fn run_step(
    system: &System,
    transfers: &[Transfer],
    t0: f64,
    events: &mut Vec<LinkEvent>,
) -> Vec<f64> {
    let routes: Vec<_> = transfers
        .iter()
        .map(|tr| system.route(tr.src, tr.dst))
        .collect();
    let mut start = vec![t0; transfers.len()];
    let mut left: Vec<f64> = transfers.iter().map(|t| t.bytes).collect();
    let mut end = vec![f64::NAN; transfers.len()];
    for (i, r) in routes.iter().enumerate() {
        match r {
            Some(r) => start[i] = t0 + r.latency_cycles as f64,
            None => end[i] = t0,
        }
        if left[i] <= 0.0 && end[i].is_nan() {
            end[i] = start[i];
        }
    }
    let mut t = t0;
    // Each round either finishes a flow or admits one, so the loop is bounded.
    for _ in 0..(4 * transfers.len() + 4) {
        let active: Vec<usize> = (0..transfers.len())
            .filter(|&i| end[i].is_nan() && start[i] <= t)
            .collect();
        let pending = (0..transfers.len())
            .filter(|&i| end[i].is_nan() && start[i] > t)
            .map(|i| start[i])
            .fold(f64::INFINITY, f64::min);
        if active.is_empty() {
            if pending.is_finite() {
                t = pending;
                continue;
            }
            break;
        }
        let rates = fair_rates(system, &routes, &active);
        let finish = active
            .iter()
            .map(|&i| t + left[i] / rates[&i].max(1e-12))
            .fold(f64::INFINITY, f64::min);
        let next = finish.min(pending);
        let dt = next - t;
        for &i in &active {
            left[i] -= rates[&i] * dt;
            if left[i] <= 1e-6 * transfers[i].bytes.max(1.0) {
                left[i] = 0.0;
                end[i] = next;
            }
        }
        t = next;
    }
    for (i, tr) in transfers.iter().enumerate() {
        if end[i].is_nan() {
            end[i] = t;
        }
        if let Some(r) = &routes[i] {
            for c in &r.channels {
                events.push(LinkEvent {
                    channel: system.channel_name(*c),
                    start: start[i],
                    end: end[i],
                    bytes: tr.bytes.round() as u64,
                });
            }
        }
    }
    end
}

/// Max-min fair rates of the `active` flows (progressive filling).
fn fair_rates(
    system: &System,
    routes: &[Option<crate::system::CardRoute>],
    active: &[usize],
) -> std::collections::BTreeMap<usize, f64> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut cap: BTreeMap<Channel, f64> = BTreeMap::new();
    for &i in active {
        if let Some(r) = &routes[i] {
            for c in &r.channels {
                cap.insert(*c, system.channel_bandwidth(*c));
            }
        }
    }
    let mut rate: BTreeMap<usize, f64> = BTreeMap::new();
    let mut open: BTreeSet<usize> = active.iter().copied().collect();
    while !open.is_empty() {
        // The channel offering the least per open flow fixes those flows' rate.
        let mut best: Option<(Channel, f64)> = None;
        for (c, left) in &cap {
            let users = open
                .iter()
                .filter(|&&i| routes[i].as_ref().is_some_and(|r| r.channels.contains(c)))
                .count();
            if users > 0 {
                let share = left / users as f64;
                if best.is_none_or(|(_, s)| share < s) {
                    best = Some((*c, share));
                }
            }
        }
        let Some((c, share)) = best else {
            // Flows on no channel (same card): unlimited, finish at once.
            for i in open {
                rate.insert(i, f64::INFINITY);
            }
            break;
        };
        let fixed: Vec<usize> = open
            .iter()
            .copied()
            .filter(|&i| routes[i].as_ref().is_some_and(|r| r.channels.contains(&c)))
            .collect();
        for i in fixed {
            open.remove(&i);
            rate.insert(i, share);
            if let Some(r) = &routes[i] {
                for ch in &r.channels {
                    if let Some(v) = cap.get_mut(ch) {
                        *v = (*v - share).max(0.0);
                    }
                }
            }
        }
    }
    rate
}

/// The all-reduce of `parts` (one equal-length vector per card) in `algorithm`'s order
/// (see the module doc), rounding with `round` after every addition.
pub fn all_reduce_values(
    parts: &[Vec<f32>],
    algorithm: Algorithm,
    round: &dyn Fn(f32) -> f32,
) -> Result<Vec<f32>, String> {
    let n = parts.len();
    let len = parts.first().map_or(0, Vec::len);
    if parts.iter().any(|p| p.len() != len) {
        return Err("all-reduce parts differ in length".into());
    }
    if n <= 1 {
        return Ok(parts.first().cloned().unwrap_or_default());
    }
    let mut out = vec![0.0f32; len];
    match algorithm {
        Algorithm::Ring => {
            let chunk = len.div_ceil(n).max(1);
            for (e, o) in out.iter_mut().enumerate() {
                let j = (e / chunk) % n;
                let mut acc = parts[j][e];
                for k in 1..n {
                    acc = round(acc + parts[(j + k) % n][e]);
                }
                *o = acc;
            }
        }
        Algorithm::Tree => {
            let mut acc: Vec<Vec<f32>> = parts.to_vec();
            let mut d = 1;
            while d < n {
                for i in (0..n).filter(|i| i % (2 * d) == d) {
                    let (lo, hi) = acc.split_at_mut(i);
                    for (a, b) in lo[i - d].iter_mut().zip(&hi[0]) {
                        *a = round(*a + *b);
                    }
                }
                d *= 2;
            }
            out = acc.swap_remove(0);
        }
    }
    Ok(out)
}

/// Reduce-scatter in ring order: card i gets the sum of chunk i (chunks of
/// `ceil(len / N)` elements, the last one shorter).
pub fn reduce_scatter_values(
    parts: &[Vec<f32>],
    round: &dyn Fn(f32) -> f32,
) -> Result<Vec<Vec<f32>>, String> {
    let n = parts.len().max(1);
    let full = all_reduce_values(parts, Algorithm::Ring, round)?;
    let chunk = full.len().div_ceil(n).max(1);
    Ok((0..n)
        .map(|i| {
            full.get(i * chunk..((i + 1) * chunk).min(full.len()))
                .map(<[f32]>::to_vec)
                .unwrap_or_default()
        })
        .collect())
}

/// All-gather: every card gets the pieces concatenated in card order.
pub fn all_gather_values(parts: &[Vec<f32>]) -> Vec<f32> {
    parts.concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(x: f32) -> f32 {
        x
    }

    #[test]
    fn ring_and_tree_sum_every_part() {
        let parts: Vec<Vec<f32>> = (0..4)
            .map(|c| (0..10).map(|e| (c * 10 + e) as f32).collect())
            .collect();
        let want: Vec<f32> = (0..10)
            .map(|e| (0..4).map(|c| (c * 10 + e) as f32).sum())
            .collect();
        assert_eq!(
            all_reduce_values(&parts, Algorithm::Ring, &exact).unwrap(),
            want
        );
        assert_eq!(
            all_reduce_values(&parts, Algorithm::Tree, &exact).unwrap(),
            want
        );
        let rs = reduce_scatter_values(&parts, &exact).unwrap();
        assert_eq!(rs.concat(), want);
        assert_eq!(all_gather_values(&rs), want);
    }

    #[test]
    fn the_reduction_order_is_the_stated_one() {
        // Rounding to integers after each addition makes the order visible. Card c holds
        // v[c] in every element; 3 cards, 3 elements, so ring chunk j is element j.
        let round = |x: f32| x.round();
        let v = [0.4f32, 0.4, 0.6];
        let parts: Vec<Vec<f32>> = v.iter().map(|&x| vec![x; 3]).collect();
        // Element 0: (0.4 + 0.4) -> 1, + 0.6 -> 2; element 1: (0.4 + 0.6) -> 1, + 0.4 -> 1;
        // element 2: (0.6 + 0.4) -> 1, + 0.4 -> 1.
        assert_eq!(
            all_reduce_values(&parts, Algorithm::Ring, &round).unwrap(),
            vec![2.0, 1.0, 1.0]
        );
        // Tree: (x0 + x1) -> 1, + x2 -> 2 everywhere.
        assert_eq!(
            all_reduce_values(&parts, Algorithm::Tree, &round).unwrap(),
            vec![2.0, 2.0, 2.0]
        );
    }

    #[test]
    fn link_sharing_is_work_conserving_and_contention_slows_the_ring_tree() {
        let ring = System::preset("ring4").unwrap();
        let bytes = 1 << 20;
        // On a ring of cards each ring step uses disjoint links: no contention.
        let t = time_collective(
            &ring,
            4,
            CollectiveKind::AllGather,
            bytes,
            AlgorithmChoice::Auto,
        );
        let bw = ring.card_links[0].bytes_per_cycle.value;
        let lat = ring.card_links[0].latency_cycles.value as f64;
        let one = lat + bytes as f64 / 4.0 / bw;
        assert!(
            (t.cycles - 3.0 * one).abs() < 1.0,
            "{} vs {}",
            t.cycles,
            one
        );
        // Tree on a ring: card 2 -> card 0 crosses two links while 3 -> 2 shares one.
        let tree = time_collective(
            &ring,
            4,
            CollectiveKind::AllReduce,
            bytes,
            AlgorithmChoice::Tree,
        );
        assert_eq!(tree.algorithm, Algorithm::Tree);
        assert!(tree.reason.contains("override"));
        let auto = time_collective(
            &ring,
            4,
            CollectiveKind::AllReduce,
            bytes,
            AlgorithmChoice::Auto,
        );
        assert_eq!(auto.algorithm, Algorithm::Ring, "{}", auto.reason);
        assert!(auto.cycles < tree.cycles);
    }

    #[test]
    fn flows_sharing_a_channel_split_it_and_others_run_at_full_speed() {
        let ring = System::preset("ring4").unwrap();
        let bw = ring.card_links[0].bytes_per_cycle.value;
        let lat = ring.card_links[0].latency_cycles.value as f64;
        let b = 480_000.0;
        let tr = |src, dst| Transfer { src, dst, bytes: b };
        let mut ev = Vec::new();
        // 0 -> 2 (via 1) and 1 -> 2 share the channel card1->card2; 3 -> 0 is alone.
        let ends = run_step(&ring, &[tr(0, 2), tr(1, 2), tr(3, 0)], 0.0, &mut ev);
        let alone = lat + b / bw;
        assert!((ends[2] - alone).abs() < 1e-6, "{ends:?}");
        assert!(ends[1] > alone + 0.5 * b / bw, "{ends:?}");
        // Work-conserving: once one sharer is done the other gets the whole channel, so
        // both are done within the time of the two transfers back to back.
        assert!(
            ends[0].max(ends[1]) <= 2.0 * lat + 2.0 * b / bw + 1e-6,
            "{ends:?}"
        );
    }

    #[test]
    fn small_messages_pick_the_tree_on_many_cards() {
        let d = System::preset("drawer8").unwrap();
        let t = time_collective(&d, 8, CollectiveKind::AllReduce, 64, AlgorithmChoice::Auto);
        assert_eq!(t.algorithm, Algorithm::Tree, "{}", t.reason);
        let t = time_collective(
            &d,
            8,
            CollectiveKind::AllReduce,
            1 << 24,
            AlgorithmChoice::Auto,
        );
        assert_eq!(t.algorithm, Algorithm::Ring, "{}", t.reason);
    }
}
