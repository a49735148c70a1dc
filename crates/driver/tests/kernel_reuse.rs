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
    assert!(reused.schedule.event_count() > 0);
    assert_eq!(
        reused.run.total_cycles.to_bits(),
        each.run.total_cycles.to_bits(),
        "cycles"
    );
    let events = |r: &driver::Run| r.schedule.all_events().collect::<Vec<_>>();
    assert_eq!(events(reused), events(each), "events");
    assert_eq!(
        reused.schedule.event_count(),
        each.schedule.event_count(),
        "event count"
    );
    // The replayed launches are a table entry each: their events are not stored again.
    assert_eq!(reused.schedule.launches.len(), each.schedule.launches.len());
    assert_eq!(each.schedule.events.len(), each.schedule.event_count());
    assert!(
        reused.schedule.events.len() * 2 < each.schedule.events.len(),
        "{} events stored for {}",
        reused.schedule.events.len(),
        each.schedule.event_count()
    );
    for (k, (a, b)) in reused
        .schedule
        .launches
        .iter()
        .zip(&each.schedule.launches)
        .enumerate()
    {
        assert_eq!(a.start.to_bits(), b.start.to_bits(), "launch {k} start");
        assert_eq!(a.end.to_bits(), b.end.to_bits(), "launch {k} end");
        assert_eq!(a.first_task, b.first_task, "launch {k} first task");
    }
    assert_eq!(
        reused.schedule.link_rates, each.schedule.link_rates,
        "link rates"
    );
    assert_eq!(
        reused.schedule.dram_rates, each.schedule.dram_rates,
        "DRAM rates"
    );
    assert_eq!(
        reused.schedule.link_bytes, each.schedule.link_bytes,
        "link bytes"
    );
    assert_eq!(
        reused.schedule.steps, each.schedule.steps,
        "scheduling steps"
    );
    // A window of the timeline reads the same events without materialising the rest.
    let all = events(reused);
    let from = all.len() / 2;
    assert_eq!(
        reused.schedule.events_window(from, 50),
        all[from..from + 50]
    );
    // The borrowed views the reports read are those events, each naming the recorded
    // task it times (the interpreted launch's, for a replay).
    let mut n = 0;
    for (r, (source, e)) in reused
        .schedule
        .event_refs()
        .zip(reused.schedule.events_with_source())
    {
        assert_eq!(r.source, source, "event {n} source");
        assert_eq!(r.to_event(), e, "event {n}");
        assert_eq!(e, all[n], "event {n}");
        n += 1;
    }
    assert_eq!(n, all.len());
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
