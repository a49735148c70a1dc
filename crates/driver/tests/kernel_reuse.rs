//! Timing-only runs interpret each distinct kernel once and replay its tasks for the
//! identical kernels of later layers. The replay must be exact: the same tasks, events,
//! cycles, operation count and assumptions as interpreting every launch.

use driver::{PipelineOptions, Session};

const STACK: &str = include_str!("../../../tests/stacked/llama_small_x3.json");

#[test]
fn replayed_kernels_schedule_exactly_like_interpreting_every_launch() {
    let options = PipelineOptions {
        timing_only: true,
        ..PipelineOptions::default()
    };
    let every = PipelineOptions {
        reuse_kernels: false,
        ..options.clone()
    };
    let mut runs = Vec::new();
    for o in [&options, &every] {
        let mut s = Session::open(STACK.as_bytes(), "llama_small_x3.json").unwrap();
        s.run(o, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
        runs.push(s.into_run().unwrap());
    }
    let (reused, each) = (&runs[0], &runs[1]);
    assert!(!reused.schedule.events.is_empty());
    assert_eq!(
        reused.run.total_cycles.to_bits(),
        each.run.total_cycles.to_bits(),
        "cycles"
    );
    assert_eq!(reused.schedule.events, each.schedule.events, "events");
    assert_eq!(reused.run.steps, each.run.steps, "operations run");
    assert_eq!(reused.run.assumptions, each.run.assumptions, "assumptions");
    // Everything the page and the CLI receive: summary, roofline, layers, source map.
    assert_eq!(
        serde_json::to_string(&reused.run).unwrap(),
        serde_json::to_string(&each.run).unwrap()
    );
    assert_eq!(
        serde_json::to_string(&reused.source_map).unwrap(),
        serde_json::to_string(&each.source_map).unwrap()
    );
}
