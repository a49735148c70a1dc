//! Which cores read which KV-cache pages, from a compilation's plan: for each
//! PagedAttention node, each sequence's pages (its block table) with the cores whose
//! kernels read the page out of the cache and the cores that attend over it.
//!
//! The compiler attends over a sequence's pages in key blocks of whole pages. Block `k` of
//! sequence `b` of node `N` gathers its pages with the device ops `N/seq{b}_block{k}_k` and
//! `N/seq{b}_block{k}_v` (the first dim of their output counts the block's pages), and the
//! online-softmax step over it is `N/seq{b}_scores{k}` (keys) and `N/seq{b}_partial{k}`
//! (values) (see `compiler::ops::paged`); a device op runs on cores `0..cores_used` of its
//! work division.

use compiler::Compilation;
use serde::Serialize;

/// One page of a sequence, and the cores that touch it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PageRead {
    /// The cache page (block) id the block table names.
    pub page: usize,
    /// The sequence's tokens held in it.
    pub tokens: usize,
    /// Cores whose kernels read its keys and values out of the cache.
    pub readers: Vec<usize>,
    /// Cores whose kernels attend over it (scores against its keys, weights times its
    /// values).
    pub users: Vec<usize>,
}

/// The page plan of one PagedAttention node.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PagedPlan {
    /// The graph node.
    pub node: String,
    /// Pages in the cache.
    pub cache_pages: usize,
    /// Tokens per page.
    pub block_size: usize,
    /// Cores of the target.
    pub cores: usize,
    /// Per sequence, its pages in block-table order.
    pub sequences: Vec<Vec<PageRead>>,
}

/// The page plans of every PagedAttention node `c` compiled, with the padding reports
/// that name each sequence's pages (the compile moves them out of `c`).
pub fn page_plans(c: &Compilation, reports: &[compiler::PaddingReport]) -> Vec<PagedPlan> {
    let index: std::collections::HashMap<&str, usize> = c
        .ops
        .iter()
        .enumerate()
        .map(|(i, op)| (op.name.as_str(), i))
        .collect();
    let cores_of = |names: &[String]| -> Vec<usize> {
        let mut cores: Vec<usize> = names
            .iter()
            .filter_map(|n| index.get(n.as_str()))
            .filter_map(|&i| c.divisions.get(i))
            .flat_map(|d| 0..d.cores_used.max(1))
            .collect();
        cores.sort_unstable();
        cores.dedup();
        cores
    };
    reports
        .iter()
        .map(|r| {
            let cache_pages = c
                .graph
                .nodes
                .iter()
                .find(|n| n.name == r.node)
                .and_then(|n| n.inputs.get(3))
                .and_then(|t| c.types.get(t))
                .and_then(|t| t.shape.first().copied())
                .unwrap_or(0);
            let n = &r.node;
            // The key block of each of sequence `b`'s pages, in order: block `k` holds as
            // many pages as its key gather's output has rows.
            let blocks_of = |b: usize, pages: usize| -> Vec<usize> {
                let mut of = Vec::with_capacity(pages);
                let mut k = 0;
                while of.len() < pages {
                    let count = index
                        .get(format!("{n}/seq{b}_block{k}_k").as_str())
                        .and_then(|&i| c.ops[i].outputs.first())
                        .and_then(|t| c.types.get(t))
                        .and_then(|t| t.shape.first().copied())
                        .unwrap_or(0);
                    if count == 0 {
                        break;
                    }
                    of.extend(std::iter::repeat_n(k, count.min(pages - of.len())));
                    k += 1;
                }
                of
            };
            let sequences = r
                .sequences
                .iter()
                .enumerate()
                .map(|(b, s)| {
                    let blocks = blocks_of(b, s.pages.len());
                    s.pages
                        .iter()
                        .enumerate()
                        .map(|(j, &page)| {
                            let start = j * r.block_size;
                            let tokens = s.kv_len.saturating_sub(start).min(r.block_size);
                            let (readers, users) = match blocks.get(j) {
                                Some(k) => (
                                    cores_of(&[
                                        format!("{n}/seq{b}_block{k}_k"),
                                        format!("{n}/seq{b}_block{k}_v"),
                                    ]),
                                    cores_of(&[
                                        format!("{n}/seq{b}_scores{k}"),
                                        format!("{n}/seq{b}_partial{k}"),
                                    ]),
                                ),
                                None => (Vec::new(), Vec::new()),
                            };
                            PageRead {
                                page,
                                tokens,
                                readers,
                                users,
                            }
                        })
                        .collect()
                })
                .collect();
            PagedPlan {
                node: r.node.clone(),
                cache_pages,
                block_size: r.block_size,
                cores: c.target.cores,
                sequences,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paged_decode_names_every_page_with_the_cores_that_read_it() {
        let ex = crate::examples();
        let e = ex.iter().find(|e| e.name == "paged_decode").unwrap();
        let g = graph::load_json(e.source).unwrap();
        let m = sim::Machine::preset("spyre32").unwrap();
        let mut c = crate::compile(&g, &m, &compiler::Options::default()).unwrap();
        let reports = std::mem::take(&mut c.padding);
        let plans = page_plans(&c, &reports);
        assert_eq!(plans.len(), 1);
        let p = &plans[0];
        assert_eq!((p.cache_pages, p.block_size, p.cores), (66, 64, 32));
        assert_eq!(p.sequences.len(), 8);
        let pages: Vec<&PageRead> = p.sequences.iter().flatten().collect();
        assert_eq!(pages.len(), 65);
        // The shortest sequence's 17 tokens fill part of one page; the longest's last
        // page holds what is left of its 1,500.
        assert_eq!(p.sequences[0][0].tokens, 17);
        assert_eq!(p.sequences[7].last().unwrap().tokens, 1500 - 23 * 64);
        for r in &pages {
            assert!(!r.readers.is_empty(), "page {} has no reader", r.page);
            // A page's gather splits its pages and each page's sticks over the cores.
            assert!(r.readers.len() > 1, "page {} is read on one core", r.page);
            assert!(!r.users.is_empty(), "page {} has no user", r.page);
            assert!(r.readers.iter().chain(&r.users).all(|&k| k < 32));
        }
        let distinct: std::collections::BTreeSet<usize> = pages.iter().map(|r| r.page).collect();
        assert_eq!(distinct.len(), 65);
    }
}
