#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| spyre_fuzz::graph_run(data));

// Most inputs get a structural mutation (a graph that loads, with one thing changed); the
// rest, and anything that does not load as a graph, get libFuzzer's byte mutations, which
// reach the loader's own errors.
libfuzzer_sys::fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    if !seed.is_multiple_of(4) {
        if let Some(text) = spyre_fuzz::mutate_graph_json(&data[..size], u64::from(seed)) {
            if text.len() <= max_size {
                data[..text.len()].copy_from_slice(text.as_bytes());
                return text.len();
            }
        }
    }
    libfuzzer_sys::fuzzer_mutate(data, size, max_size)
});
