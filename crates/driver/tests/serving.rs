//! Serving scenarios: `examples/graphs/serving/paged_decode.json`, one decode step of a
//! small Llama-style layer for 8 sequences of 17 to 1,500 tokens in one ragged batch over a
//! paged KV cache, runs with numbers on spyre32 and matches the reference evaluator, and
//! reports what the public padding rules would cost it.

use driver::{run_pipeline, PipelineOptions};

#[test]
fn paged_decode_matches_its_reference_and_reports_its_padding() {
    let source = include_str!("../../../examples/graphs/serving/paged_decode.json");
    let r = run_pipeline(source, "paged_decode.json", &PipelineOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(r.run.outputs_checked);
    assert!(r.run.passed, "{:?}", r.run.outputs);
    let [p] = r.run.padding.as_slice() else {
        panic!("one PagedAttention node, got {:?}", r.run.padding);
    };
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
