//! Pins the full schedule of every gallery model and gallery KTIR program: total cycles (as
//! bits), event count and a hash of every event, so a change to the driver that is meant to
//! move nothing provably moves nothing. Regenerate with `UPDATE_EXPECT=1` only when a change
//! to the compiler or the timing model is intended.

use driver::{examples, KtirRunOptions, PipelineOptions};

/// FNV-1a over the debug form of every event (f64 debug output round-trips exactly).
fn fingerprint(events: &[driver::sim::timing::Event]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for e in events {
        for b in format!("{e:?}").bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn line(name: &str, cycles: f64, events: &[driver::sim::timing::Event]) -> String {
    format!(
        "{name:<28} cycles {:#018x} ({cycles}) events {:>7} hash {:#018x}\n",
        cycles.to_bits(),
        events.len(),
        fingerprint(events)
    )
}

#[test]
fn gallery_schedules_are_pinned() {
    let mut out = String::new();
    for ex in examples() {
        let schedule = if ex.kind == "ktir" {
            let options = KtirRunOptions {
                seed: 1,
                ..Default::default()
            };
            let (_, s) = driver::run_ktir(ex.source, &options).unwrap();
            s
        } else {
            let mut options = PipelineOptions {
                timing_only: ex.timing_only,
                ..PipelineOptions::default()
            };
            if ex.timing_only {
                options.machine.scratchpad_bytes.value = 64 << 20;
            }
            let graph = driver::load_graph(ex.source, ex.name).unwrap();
            let c = driver::compile(&graph, &options.machine, &options.compile).unwrap();
            let (_, s) = driver::simulate_with_schedule(&c, &options)
                .unwrap_or_else(|e| panic!("{}: {e}", ex.name));
            s
        };
        let events: Vec<_> = schedule.all_events().collect();
        out.push_str(&line(ex.name, schedule.total_cycles, &events));
    }
    expect_test::expect_file!["pinned/gallery.txt"].assert_eq(&out);
}

/// FNV-1a over the bits of every buffer's final contents, in buffer order.
fn contents_hash(buffers: &[(driver::BufferSpec, Vec<f32>)]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (spec, data) in buffers {
        for b in spec
            .name
            .bytes()
            .chain(data.iter().flat_map(|x| x.to_bits().to_le_bytes()))
        {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The benchmark kernels (`cargo bench -p driver --bench ktir_kernels`) at full size: their
/// schedules and the final contents of their buffers, so speeding up the interpreter
/// provably changes neither the timing model's results nor the numbers.
#[test]
fn bench_kernel_schedules_and_results_are_pinned() {
    const KERNELS: [(&str, &str); 4] = [
        ("softmax", include_str!("../../../bench/ktir/softmax.mlir")),
        (
            "layernorm",
            include_str!("../../../bench/ktir/layernorm.mlir"),
        ),
        ("matmul", include_str!("../../../bench/ktir/matmul.mlir")),
        ("rope", include_str!("../../../bench/ktir/rope.mlir")),
    ];
    let mut out = String::new();
    for (name, text) in KERNELS {
        let (result, schedule) = driver::run_ktir(text, &KtirRunOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let pinned = line(name, schedule.total_cycles, &schedule.events);
        out.push_str(pinned.trim_end());
        out.push_str(&format!(
            " buffers {:#018x}\n",
            contents_hash(&result.buffers)
        ));
    }
    expect_test::expect_file!["pinned/bench_kernels.txt"].assert_eq(&out);
}

/// Every gallery model on `tiny4`, whose 64 KiB scratchpad forces time loops: cycles with
/// double buffering on and off. `spyre32` holds most slices whole, so a schedule that loses
/// its second buffers on a small machine (and with them the DMA/compute overlap) shows only
/// here. The timing-only 8B layer is left out: it is sized for `spyre32`.
#[test]
fn tiny4_gallery_cycles_with_and_without_double_buffering_are_pinned() {
    let machine = driver::machine("tiny4").unwrap();
    let mut out = String::new();
    for ex in examples()
        .into_iter()
        .filter(|e| e.kind == "graph" && !e.timing_only)
    {
        let graph = driver::load_graph(ex.source, ex.name).unwrap();
        let run = |on: bool| -> Result<f64, driver::DriverError> {
            let mut options = PipelineOptions {
                machine: machine.clone(),
                timing_only: true,
                ..PipelineOptions::default()
            };
            options.compile.double_buffer = on;
            let c = driver::compile(&graph, &options.machine, &options.compile)?;
            Ok(driver::simulate_with_schedule(&c, &options)?.1.total_cycles)
        };
        match (run(true), run(false)) {
            (Ok(on), Ok(off)) => out.push_str(&format!(
                "{:<28} double-buffered {on:>12.2} single {off:>12.2} ratio {:.3}\n",
                ex.name,
                on / off
            )),
            // A model too big for tiny4 is pinned by the stage that stops it.
            (Err(e), _) | (_, Err(e)) => out.push_str(&format!(
                "{:<28} does not run on tiny4 ({:?})\n",
                ex.name, e.stage
            )),
        }
    }
    expect_test::expect_file!["pinned/gallery_tiny4.txt"].assert_eq(&out);
}
