//! The public serving stack's padding and alignment rules, and what they would cost a
//! ragged batch this compiler keeps unpadded.
//!
//! The public Spyre inference stack pads each query to 32 tokens, aligns the KV length to
//! 256, and needs head size and block size to be multiples of 64; decode-only batches may
//! align to 1. [`PaddingRules`] holds those numbers as options (its default is the public
//! values); the PagedAttention decomposition attends each sequence over exactly its own
//! length, and records, per node, the work the rules would add ([`PaddingReport`]): the
//! attention's multiply-adds scale with `query tokens x KV tokens x head size` per head,
//! so the waste is the share of the padded product that is padding. A page padded to the
//! block-size rule carries its padding slots into every sequence that holds it, so each
//! of a sequence's pages adds `padded block size - block size` KV slots before the KV
//! alignment.

use serde::{Deserialize, Serialize};

/// Padding and alignment rules of a serving stack (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaddingRules {
    /// Query tokens per sequence are padded to a multiple of this (public: 32).
    pub query_align: usize,
    /// KV length per sequence is aligned to a multiple of this (public: 256).
    pub kv_align: usize,
    /// Alignment of query and KV lengths in a decode-only batch (public: 1).
    pub decode_align: usize,
    /// Head size must be a multiple of this; smaller heads are padded (public: 64).
    pub head_multiple: usize,
    /// Block (page) size must be a multiple of this; pages are padded (public: 64).
    pub block_multiple: usize,
}

impl Default for PaddingRules {
    fn default() -> Self {
        PaddingRules::PUBLIC
    }
}

impl PaddingRules {
    /// The public stack's values.
    pub const PUBLIC: PaddingRules = PaddingRules {
        query_align: 32,
        kv_align: 256,
        decode_align: 1,
        head_multiple: 64,
        block_multiple: 64,
    };

    /// Alignment 1 everywhere: no padding.
    pub const NONE: PaddingRules = PaddingRules {
        query_align: 1,
        kv_align: 1,
        decode_align: 1,
        head_multiple: 1,
        block_multiple: 1,
    };

    /// The largest alignment or multiple accepted: far beyond any sequence or head a
    /// step holds, and small enough that padded work cannot overflow.
    pub const MAX: usize = 1 << 16;

    /// Whether the rules make sense: every alignment and multiple at least 1 (1 is no
    /// padding) and at most [`PaddingRules::MAX`], and the head-size and block-size
    /// multiples powers of two, as the device's stick and tile widths they stand for
    /// are. `Err` names the rule (by its CLI flag) and why.
    pub fn check(&self) -> Result<(), String> {
        let rules = [
            ("query-align", self.query_align, false),
            ("kv-align", self.kv_align, false),
            ("decode-align", self.decode_align, false),
            ("head-multiple", self.head_multiple, true),
            ("block-multiple", self.block_multiple, true),
        ];
        for (name, v, pow2) in rules {
            if v == 0 {
                return Err(format!(
                    "padding rule {name} 0: an alignment is at least 1 (1 means no padding)"
                ));
            }
            if v > Self::MAX {
                return Err(format!(
                    "padding rule {name} {v}: at most {} (see docs/serving.md)",
                    Self::MAX
                ));
            }
            if pow2 && !v.is_power_of_two() {
                return Err(format!(
                    "padding rule {name} {v}: must be a power of two (head and block sizes are laid out in power-of-two sticks and tiles)"
                ));
            }
        }
        Ok(())
    }
}

fn align(n: usize, to: usize) -> usize {
    n.div_ceil(to.max(1)).saturating_mul(to.max(1))
}

/// One sequence of a ragged batch: its lengths and what the rules pad them to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SequencePadding {
    /// New (query) tokens.
    pub q_len: usize,
    /// KV length after the step.
    pub kv_len: usize,
    /// Query tokens after padding.
    pub padded_q: usize,
    /// KV length after alignment.
    pub padded_kv: usize,
    /// The pages the sequence's block table names, in order.
    pub pages: Vec<usize>,
}

/// The cost of the padding rules for one PagedAttention node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaddingReport {
    /// The graph node.
    pub node: String,
    /// The rules applied.
    pub rules: PaddingRules,
    /// Whether every sequence brings one new token (the decode alignment applies).
    pub decode_only: bool,
    /// Per sequence.
    pub sequences: Vec<SequencePadding>,
    /// Head size, and after the head-size rule.
    pub head_dim: usize,
    pub padded_head_dim: usize,
    /// Page size, and after the block-size rule.
    pub block_size: usize,
    pub padded_block_size: usize,
    /// Attention multiply-adds per head of the ragged batch (alignment 1).
    pub useful_work: u64,
    /// The same with the rules' padding.
    pub padded_work: u64,
    /// Share of the padded work that is padding, in percent.
    pub waste_percent: f64,
    /// The same share if decode-only batches got no exception (query and KV aligned as
    /// in prefill): the padding the decode alignment saves.
    pub waste_percent_without_decode_alignment: f64,
}

impl PaddingReport {
    /// The report for a batch of `(q_len, kv_len, pages)` sequences under `rules`.
    pub fn new(
        node: &str,
        rules: PaddingRules,
        seqs: &[(usize, usize, Vec<usize>)],
        head_dim: usize,
        block_size: usize,
    ) -> PaddingReport {
        let decode_only = seqs.iter().all(|s| s.0 == 1);
        let (qa, ka) = if decode_only {
            (rules.decode_align, rules.decode_align)
        } else {
            (rules.query_align, rules.kv_align)
        };
        let padded_head_dim = align(head_dim, rules.head_multiple);
        let padded_block_size = align(block_size, rules.block_multiple);
        // Every page the sequence holds brings its padding slots along.
        let page_padding = |pages: &[usize]| {
            pages
                .len()
                .saturating_mul(padded_block_size.saturating_sub(block_size))
        };
        let sequences: Vec<SequencePadding> = seqs
            .iter()
            .map(|(q, kv, pages)| SequencePadding {
                q_len: *q,
                kv_len: *kv,
                padded_q: align(*q, qa),
                padded_kv: align(kv.saturating_add(page_padding(pages)), ka),
                pages: pages.clone(),
            })
            .collect();
        let work = |q: usize, kv: usize, d: usize| {
            (q as u64)
                .saturating_mul(kv as u64)
                .saturating_mul(d as u64)
        };
        let useful_work: u64 = sequences
            .iter()
            .map(|s| work(s.q_len, s.kv_len, head_dim))
            .sum();
        let padded_work: u64 = sequences
            .iter()
            .map(|s| work(s.padded_q, s.padded_kv, padded_head_dim))
            .sum();
        let waste = |padded: u64| {
            if padded == 0 {
                0.0
            } else {
                100.0 * (padded - useful_work.min(padded)) as f64 / padded as f64
            }
        };
        let strict_work: u64 = sequences
            .iter()
            .map(|s| {
                work(
                    align(s.q_len, rules.query_align),
                    align(
                        s.kv_len.saturating_add(page_padding(&s.pages)),
                        rules.kv_align,
                    ),
                    padded_head_dim,
                )
            })
            .sum();
        PaddingReport {
            node: node.to_string(),
            rules,
            decode_only,
            sequences,
            head_dim,
            padded_head_dim,
            block_size,
            padded_block_size,
            useful_work,
            padded_work,
            waste_percent: waste(padded_work),
            waste_percent_without_decode_alignment: waste(strict_work),
        }
    }

    /// Cycles the padding would add to attention that took `cycles` unpadded, assuming
    /// cycles scale with the multiply-adds.
    pub fn wasted_cycles(&self, cycles: f64) -> f64 {
        if self.useful_work == 0 {
            return 0.0;
        }
        cycles * (self.padded_work as f64 / self.useful_work as f64 - 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_rules_pad_prefill_queries_to_32_and_kv_to_256() {
        let r = PaddingReport::new("n", PaddingRules::PUBLIC, &[(2, 300, vec![])], 64, 64);
        assert_eq!(r.sequences[0].padded_q, 32);
        assert_eq!(r.sequences[0].padded_kv, 512);
        assert_eq!(r.useful_work, 2 * 300 * 64);
        assert_eq!(r.padded_work, 32 * 512 * 64);
    }

    #[test]
    fn decode_only_batches_use_the_decode_alignment() {
        let r = PaddingReport::new(
            "n",
            PaddingRules::PUBLIC,
            &[(1, 17, vec![]), (1, 1500, vec![])],
            64,
            64,
        );
        assert!(r.decode_only);
        assert_eq!(r.waste_percent, 0.0);
        let strict = PaddingRules {
            decode_align: 256,
            ..PaddingRules::PUBLIC
        };
        let r = PaddingReport::new("n", strict, &[(1, 17, vec![])], 64, 64);
        assert_eq!(r.sequences[0].padded_kv, 256);
        assert!(r.waste_percent > 90.0);
        // Query 1 -> 256 and KV 17 -> 256: the padded work is 256 * 256 / 17 times the work.
        assert!((r.wasted_cycles(17.0) - (256.0 * 256.0 - 17.0)).abs() < 1e-6);
    }

    #[test]
    fn small_heads_are_padded_to_the_head_multiple() {
        let r = PaddingReport::new("n", PaddingRules::PUBLIC, &[(1, 4, vec![])], 16, 4);
        assert_eq!(r.padded_head_dim, 64);
        assert_eq!(r.padded_block_size, 64);
        assert_eq!(r.waste_percent, 75.0);
    }

    #[test]
    fn padded_pages_add_their_padding_slots_to_each_sequence() {
        // Two pages of 16 slots padded to 64: 96 padding slots on 20 tokens.
        let rules = PaddingRules {
            block_multiple: 64,
            ..PaddingRules::NONE
        };
        let r = PaddingReport::new("n", rules, &[(1, 20, vec![3, 5])], 64, 16);
        assert_eq!(r.padded_block_size, 64);
        assert_eq!(r.sequences[0].padded_kv, 20 + 2 * 48);
        assert!((r.waste_percent - 100.0 * 96.0 / 116.0).abs() < 1e-9);
        // Pages already a multiple of the rule add nothing.
        let r = PaddingReport::new("n", PaddingRules::PUBLIC, &[(1, 20, vec![3])], 64, 64);
        assert_eq!(r.sequences[0].padded_kv, 20);
        assert_eq!(r.waste_percent, 0.0);
    }

    #[test]
    fn rules_are_checked_with_the_rule_named() {
        assert_eq!(PaddingRules::PUBLIC.check(), Ok(()));
        assert_eq!(PaddingRules::NONE.check(), Ok(()));
        let zero = PaddingRules {
            kv_align: 0,
            ..PaddingRules::PUBLIC
        };
        assert!(zero.check().unwrap_err().contains("kv-align 0"));
        let odd = PaddingRules {
            head_multiple: 48,
            ..PaddingRules::PUBLIC
        };
        assert!(odd.check().unwrap_err().contains("power of two"));
        // Alignments need not be powers of two: padding to 48 tokens is well defined.
        let q48 = PaddingRules {
            query_align: 48,
            ..PaddingRules::PUBLIC
        };
        assert_eq!(q48.check(), Ok(()));
        let huge = PaddingRules {
            block_multiple: 1 << 20,
            ..PaddingRules::PUBLIC
        };
        assert!(huge.check().unwrap_err().contains("at most"));
    }
}
