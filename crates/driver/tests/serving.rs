//! Serving scenarios (`examples/graphs/serving/`): one decode step of a small Llama-style
//! layer for 8 sequences of 17 to 1,500 tokens and one chunked-prefill step of 4 sequences
//! adding 16 tokens each to their cached prefix, both in one ragged batch over a paged KV
//! cache, and one mixed step (decode and prefill chunks together, the new tokens packed),
//! run with numbers on spyre32 and match the reference evaluator, and report what the
//! public padding rules would cost them. Their 8B-dims versions run timing-only. Bad
//! schedules given as inputs are errors naming the sequence and the page.

use driver::{run_pipeline, PaddingCost, PipelineOptions};
use graph::{DType, Tensor};

/// Runs a serving scenario with numbers, checks its outputs against the reference, and
/// returns the run and its one PagedAttention node's padding report.
fn run_matching(source: &str, name: &str) -> (driver::RunResult, PaddingCost) {
    let r = run_pipeline(source, name, &PipelineOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(r.run.outputs_checked, "{name}");
    assert!(r.run.passed, "{name}: {:?}", r.run.outputs);
    let [p] = r.run.padding.as_slice() else {
        panic!("{name}: one PagedAttention node, got {:?}", r.run.padding);
    };
    let p = p.clone();
    (r.run, p)
}

/// Each sequence's new tokens, length, and the two padded to the rules.
fn padded_lengths(p: &PaddingCost) -> Vec<(usize, usize, usize, usize)> {
    p.sequences
        .iter()
        .map(|s| (s.q_len, s.kv_len, s.padded_q, s.padded_kv))
        .collect()
}

#[test]
fn paged_decode_matches_its_reference_and_reports_its_padding() {
    let source = include_str!("../../../examples/graphs/serving/paged_decode.json");
    let (_, p) = run_matching(source, "paged_decode.json");
    let lens: Vec<usize> = p.sequences.iter().map(|s| s.kv_len).collect();
    assert_eq!(lens, [17, 48, 130, 255, 400, 640, 960, 1500]);
    assert!(p.decode_only);
    // Ragged: no sequence is padded at the public decode alignment of 1, while the
    // prefill rules (query 32, KV 256) would make almost all of the work padding.
    assert!(p.sequences.iter().all(|s| s.padded_kv == s.kv_len));
    assert_eq!(p.waste_percent, 0.0);
    assert!(p.waste_percent_without_decode_alignment > 90.0);
    assert!(p.cycles > 0.0);
    let pages: usize = p.sequences.iter().map(|s| s.pages.len()).sum();
    assert_eq!(pages, 65);
}

#[test]
fn chunked_prefill_matches_its_reference_and_reports_its_padding() {
    let source = include_str!("../../../examples/graphs/serving/chunked_prefill.json");
    let (_, p) = run_matching(source, "chunked_prefill.json");
    let seqs = padded_lengths(&p);
    // 16 new tokens over cached prefixes of 40, 100, 250 and 600: the public rules pad
    // the chunk to 32 queries and the KV length to a multiple of 256.
    assert_eq!(
        seqs,
        [
            (16, 56, 32, 256),
            (16, 116, 32, 256),
            (16, 266, 32, 512),
            (16, 616, 32, 768)
        ]
    );
    assert!(!p.decode_only);
    let useful: f64 = [56.0, 116.0, 266.0, 616.0].iter().map(|l| 16.0 * l).sum();
    let padded = 32.0 * (256.0 + 256.0 + 512.0 + 768.0);
    assert!((p.waste_percent - 100.0 * (1.0 - useful / padded)).abs() < 1e-9);
    assert!(p.cycles > 0.0 && p.wasted_cycles > p.cycles);
    let pages: Vec<usize> = p.sequences.iter().map(|s| s.pages.len()).collect();
    assert_eq!(pages, [1, 2, 5, 10]);
}

#[test]
fn a_mixed_batch_matches_its_reference_and_reports_its_padding() {
    let source = include_str!("../../../examples/graphs/serving/mixed_batch.json");
    let (run, p) = run_matching(source, "mixed_batch.json");
    // The new tokens stay packed: 4 decode tokens and chunks of 24 and 40, 68 rows.
    let y = run
        .outputs
        .iter()
        .find(|o| o.name == "y")
        .expect("output y");
    assert_eq!(y.shape, [68, 256]);
    let seqs = padded_lengths(&p);
    // A batch with prefill in it is not decode-only: the public rules pad every
    // sequence, the decoding ones too, to 32 queries and 256 keys.
    assert_eq!(
        seqs,
        [
            (1, 33, 32, 256),
            (1, 300, 32, 512),
            (1, 700, 32, 768),
            (1, 1200, 32, 1280),
            (24, 24, 32, 256),
            (40, 424, 64, 512)
        ]
    );
    assert!(!p.decode_only);
    let useful: f64 = seqs.iter().map(|s| (s.0 * s.1) as f64).sum();
    let padded: f64 = seqs.iter().map(|s| (s.2 * s.3) as f64).sum();
    assert!((p.waste_percent - 100.0 * (1.0 - useful / padded)).abs() < 1e-9);
    assert!(p.cycles > 0.0 && p.wasted_cycles > p.cycles);
}

/// A PagedAttention node whose schedule comes from graph inputs: 2 sequences, 1 new token
/// each, 4 pages of 2 tokens.
const GIVEN_SCHEDULE: &str = r#"{"format": "spyre-graph", "version": 1, "name": "p",
  "inputs": [
    {"name": "q", "dtype": "f32", "shape": [2, 1, 2, 4]},
    {"name": "k", "dtype": "f32", "shape": [2, 1, 1, 4]},
    {"name": "v", "dtype": "f32", "shape": [2, 1, 1, 4]},
    {"name": "kc", "dtype": "f32", "shape": [4, 2, 1, 4]},
    {"name": "vc", "dtype": "f32", "shape": [4, 2, 1, 4]},
    {"name": "bt", "dtype": "i64", "shape": [2, 2]},
    {"name": "sl", "dtype": "i64", "shape": [2]}],
  "nodes": [{"name": "pa", "op": "PagedAttention",
    "inputs": ["q", "k", "v", "kc", "vc", "bt", "sl"], "outputs": ["y"]}],
  "outputs": ["y"]}"#;

#[test]
fn a_bad_schedule_given_as_inputs_names_the_sequence_and_the_page() {
    for (tables, lens, says) in [
        (
            [0., 1., 7., 2.],
            [3., 1.],
            "sequence 1: block table entry 0 points at page 7",
        ),
        ([0., 1., 2., 3.], [5., 1.], "sequence 0: length 5 is beyond"),
        ([0., 1., 1., 3.], [3., 1.], "sequence 1: page 1"),
    ] {
        let mut options = PipelineOptions::default();
        let t = |shape: Vec<usize>, data: &[f32]| {
            Tensor::new(DType::I64, shape, data.to_vec()).expect("tensor")
        };
        options.inputs.insert("bt".into(), t(vec![2, 2], &tables));
        options.inputs.insert("sl".into(), t(vec![2], &lens));
        for timing_only in [false, true] {
            options.timing_only = timing_only;
            let e = run_pipeline(GIVEN_SCHEDULE, "p.json", &options)
                .err()
                .unwrap_or_else(|| panic!("{tables:?} {lens:?} ran"))
                .to_string();
            assert!(e.contains(says) && e.contains("node 'pa'"), "{e}");
        }
    }
}

/// A packed PagedAttention node whose query lengths come from a graph input: 2 sequences
/// of 3 and 2 tokens, 4 new tokens between them, 4 pages of 2 tokens.
const PACKED_SCHEDULE: &str = r#"{"format": "spyre-graph", "version": 1, "name": "p",
  "inputs": [
    {"name": "q", "dtype": "f32", "shape": [4, 2, 4]},
    {"name": "k", "dtype": "f32", "shape": [4, 1, 4]},
    {"name": "v", "dtype": "f32", "shape": [4, 1, 4]},
    {"name": "kc", "dtype": "f32", "shape": [4, 2, 1, 4]},
    {"name": "vc", "dtype": "f32", "shape": [4, 2, 1, 4]},
    {"name": "ql", "dtype": "i64", "shape": [2]}],
  "initializers": [
    {"name": "bt", "dtype": "i64", "shape": [2, 2], "data": [0, 1, 2, 3]},
    {"name": "sl", "dtype": "i64", "shape": [2], "data": [3, 2]}],
  "nodes": [{"name": "pa", "op": "PagedAttention",
    "inputs": ["q", "k", "v", "kc", "vc", "bt", "sl", "ql"], "outputs": ["y"]}],
  "outputs": ["y"]}"#;

#[test]
fn query_lengths_given_as_inputs_are_checked_against_the_packed_rows() {
    for (lens, says) in [
        ([1., 2.], "add up to 3 new tokens, but the query has 4 rows"),
        ([0., 4.], "sequence 0: query length 0"),
        (
            [1., 3.],
            "sequence 1: length 2 does not cover its 3 new tokens",
        ),
    ] {
        let mut options = PipelineOptions::default();
        let ql = Tensor::new(DType::I64, vec![2], lens.to_vec()).expect("tensor");
        options.inputs.insert("ql".into(), ql);
        for timing_only in [false, true] {
            options.timing_only = timing_only;
            let e = run_pipeline(PACKED_SCHEDULE, "p.json", &options)
                .err()
                .unwrap_or_else(|| panic!("{lens:?} ran"))
                .to_string();
            assert!(e.contains(says) && e.contains("node 'pa'"), "{e}");
        }
    }
}

/// The 8B-dims scenarios plan and time on spyre32 without numbers; the cycles they take
/// are printed for the record (`cargo test -p driver --test serving -- --nocapture`).
#[test]
fn the_8b_serving_steps_run_timing_only() {
    for (name, source) in [
        (
            "paged_decode_8b.json",
            include_str!("../../../examples/graphs/serving/paged_decode_8b.json"),
        ),
        (
            "chunked_prefill_8b.json",
            include_str!("../../../examples/graphs/serving/chunked_prefill_8b.json"),
        ),
        (
            "mixed_batch_8b.json",
            include_str!("../../../examples/graphs/serving/mixed_batch_8b.json"),
        ),
    ] {
        let options = PipelineOptions {
            timing_only: true,
            ..PipelineOptions::default()
        };
        let r = run_pipeline(source, name, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(r.run.timing_only && r.run.total_cycles > 0.0, "{name}");
        let [p] = r.run.padding.as_slice() else {
            panic!("{name}: one PagedAttention node, got {:?}", r.run.padding);
        };
        assert!(p.cycles > 0.0, "{name}");
        println!(
            "{name}: {:.0} cycles; attention {:.0} cycles ragged, padding waste {:.1}% at the public rules, {:.0} cycles more",
            r.run.total_cycles, p.cycles, p.waste_percent, p.wasted_cycles
        );
    }
}
