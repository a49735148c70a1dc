//! Attention decomposed as an online-softmax loop over key blocks: the same results as the
//! reference, for block sizes that divide the keys, leave a short last block, or cover all
//! keys in one block, with and without a causal mask, on both machine presets.

use driver::{run_pipeline, PipelineOptions};

/// A one-node Attention graph: q [1, hq, sq, d], k and v [1, hkv, skv, d].
fn attention_graph(hq: usize, hkv: usize, sq: usize, skv: usize, d: usize, causal: bool) -> String {
    format!(
        r#"{{"format": "spyre-graph", "version": 1, "name": "attn", "description": "",
          "inputs": [
            {{"name": "q", "dtype": "f16", "shape": [1, {hq}, {sq}, {d}]}},
            {{"name": "k", "dtype": "f16", "shape": [1, {hkv}, {skv}, {d}]}},
            {{"name": "v", "dtype": "f16", "shape": [1, {hkv}, {skv}, {d}]}}],
          "initializers": [],
          "nodes": [{{"name": "a", "op": "Attention", "inputs": ["q", "k", "v"], "outputs": ["y"],
                      "attrs": {{"is_causal": {}}}}}],
          "outputs": ["y"]}}"#,
        u8::from(causal)
    )
}

/// Device ops (not new tensors) of the decompose snapshot whose name has this step prefix.
fn steps(r: &driver::PipelineResult, prefix: &str) -> usize {
    let text = &r
        .passes
        .iter()
        .find(|p| p.name == "decompose")
        .expect("a decompose snapshot")
        .text;
    let text = text
        .as_deref()
        .expect("a run without a store has its texts");
    text.lines()
        .filter(|l| l.contains(" -> ") && l.starts_with(&format!("op a/{prefix}")))
        .count()
}

#[test]
fn online_attention_matches_the_reference() {
    // (hq, hkv, sq, skv, d, causal, block, blocks the loop must run)
    let cases = [
        (4, 2, 64, 64, 32, true, 16, 4),
        (4, 2, 64, 64, 32, false, 24, 3),
        (2, 2, 40, 40, 64, true, 64, 1),
        // Queries shorter than keys: blocks past the last query are skipped under the mask.
        (2, 1, 16, 64, 32, true, 16, 1),
        (2, 1, 16, 64, 32, false, 16, 4),
    ];
    for machine in ["spyre32", "tiny4"] {
        for &(hq, hkv, sq, skv, d, causal, block, blocks) in &cases {
            let g = attention_graph(hq, hkv, sq, skv, d, causal);
            let mut options = PipelineOptions {
                machine: sim::Machine::preset(machine).expect("preset"),
                ..PipelineOptions::default()
            };
            options.compile.attention_key_block = Some(block);
            let what = format!(
                "hq {hq} hkv {hkv} sq {sq} skv {skv} causal {causal} block {block} on {machine}"
            );
            let r =
                run_pipeline(&g, "attn.json", &options).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(r.run.passed, "{what}: {:?}", r.run.outputs);
            assert_eq!(steps(&r, "scores"), blocks, "{what}");
            assert_eq!(steps(&r, "partial"), blocks, "{what}");
            assert_eq!(steps(&r, "rescale"), blocks - 1, "{what}");
        }
    }
}

#[test]
fn a_key_block_of_zero_is_an_error_naming_the_node() {
    let g = attention_graph(2, 2, 16, 16, 32, true);
    let mut options = PipelineOptions::default();
    options.compile.attention_key_block = Some(0);
    let e = run_pipeline(&g, "attn.json", &options).unwrap_err();
    assert!(e.message.contains("node 'a'"), "{e}");
    assert!(e.message.contains("at least one key"), "{e}");
}
