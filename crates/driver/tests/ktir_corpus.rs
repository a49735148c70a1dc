//! Runs every program of `tests/ktir/valid` on a machine with seeded inputs and checks it
//! completes (deterministically); checks the numbers of a representative subset against
//! values computed directly here.
//!
//! Scalar arguments come from a `// ARGS: name=value ...` header line in the program when
//! it has one, else from the table in [`args_for`]; buffer arguments are found from memory
//! views and filled with seeded values, index buffers from [`inputs_for`].
//!
//! A program that verifies but that the simulator cannot execute yet says so in a
//! `// RUN-SKIP: reason` header line; the run tests leave it out (the `ktir` crate's corpus
//! test still verifies and round-trips it).

mod common;

use common::{args_for, dir, inputs_for};
use driver::{run_ktir, KtirRunOptions, KtirRunResult};
use half::{bf16, f16};

/// The reason a program gives for not being run, from its `// RUN-SKIP:` header line.
fn skip_reason(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("// RUN-SKIP:"))
        .map(|r| r.trim().to_string())
}

/// Every program of the valid corpus the simulator is expected to run, sorted.
fn runnable_programs() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".mlir"))
        .filter(|n| skip_reason(&read(n)).is_none())
        .collect();
    names.sort();
    names
}

#[test]
fn skipped_programs_state_a_reason() {
    for e in std::fs::read_dir(dir()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if !name.ends_with(".mlir") {
            continue;
        }
        if let Some(reason) = skip_reason(&read(&name)) {
            assert!(reason.len() >= 10, "{name}: RUN-SKIP needs a reason");
        }
    }
}

fn read(name: &str) -> String {
    let p = dir().join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn options(name: &str, text: &str) -> KtirRunOptions {
    KtirRunOptions {
        machine: sim::Machine::preset("spyre32").unwrap(),
        args: args_for(name, text),
        inputs: inputs_for(name),
        seed: 42,
        limits: sim::ExecLimits::default(),
        timing_only: false,
    }
}

fn run(name: &str) -> KtirRunResult {
    let text = read(name);
    match run_ktir(&text, &options(name, &text)) {
        Ok((r, _)) => r,
        Err(e) => panic!("{name}: {e}"),
    }
}

fn buf<'a>(r: &'a KtirRunResult, name: &str) -> &'a [f32] {
    &r.buffers
        .iter()
        .find(|(s, _)| s.name == name)
        .unwrap_or_else(|| panic!("no buffer {name}"))
        .1
}

fn close(got: &[f32], want: &[f32], atol: f32, rtol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= atol + rtol * w.abs(),
            "{what}[{i}]: got {g}, want {w}"
        );
    }
}

fn h(x: f32) -> f32 {
    f16::from_f32(x).to_f32()
}

fn b16(x: f32) -> f32 {
    bf16::from_f32(x).to_f32()
}

#[test]
fn every_valid_program_runs_deterministically() {
    let names = runnable_programs();
    assert!(names.len() >= 40, "corpus has {} programs", names.len());
    let mut failures = Vec::new();
    for name in &names {
        let text = read(name);
        let o = options(name, &text);
        match (run_ktir(&text, &o), run_ktir(&text, &o)) {
            (Ok((a, sa)), Ok((b, sb))) => {
                assert_eq!(a.total_cycles, b.total_cycles, "{name}: cycles differ");
                assert_eq!(sa.event_count(), sb.event_count(), "{name}: events differ");
                for ((_, x), (_, y)) in a.buffers.iter().zip(&b.buffers) {
                    assert!(
                        x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits()),
                        "{name}: buffers differ between runs"
                    );
                }
                assert!(
                    a.total_cycles.is_finite() && a.total_cycles >= 0.0,
                    "{name}"
                );
            }
            (Err(e), _) | (_, Err(e)) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn add_with_control_flow() {
    let r = run("add_control_flow.mlir");
    let (a, b, c) = (buf(&r, "a"), buf(&r, "b"), buf(&r, "c"));
    for i in 0..128 * 64 {
        let want = if i < 8 * 64 { 0.0 } else { h(a[i] + b[i]) };
        assert_eq!(c[i], want, "c[{i}]");
    }
}

#[test]
fn gather_and_scatter() {
    let r = run("indirect_gather.mlir");
    let (w, idx, y) = (buf(&r, "w"), buf(&r, "idx"), buf(&r, "y"));
    for row in 0..256 {
        let src = idx[row] as usize;
        assert_eq!(
            &y[row * 128..row * 128 + 128],
            &w[src * 128..src * 128 + 128],
            "row {row}"
        );
    }
    let text = read("indirect_scatter.mlir");
    let o = options("indirect_scatter.mlir", &text);
    let before = {
        // The destination's seeded contents, before the run: run with an empty program's
        // buffers is not available, so recompute by running twice with given inputs.
        let mut o2 = o.clone();
        o2.inputs
            .insert("dst".into(), (0..512 * 64).map(|i| i as f32).collect());
        o2
    };
    let (r, _) = run_ktir(&text, &before).unwrap();
    let (dst, idx, u) = (buf(&r, "dst"), buf(&r, "idx"), buf(&r, "u"));
    let mut want: Vec<f32> = (0..512 * 64).map(|i| i as f32).collect();
    for i in 0..64 {
        let row = idx[i] as usize;
        want[row * 64..row * 64 + 64].copy_from_slice(&u[i * 64..i * 64 + 64]);
    }
    assert_eq!(dst, &want[..]);
}

#[test]
fn all_reduce_sums_every_slice() {
    let r = run("ring_all_reduce.mlir");
    let (x, y) = (buf(&r, "x"), buf(&r, "y"));
    let want: Vec<f32> = (0..64)
        .map(|j| (0..128).map(|i| x[i * 64 + j] as f64).sum::<f64>() as f32)
        .collect();
    close(y, &want, 1e-4, 1e-4, "column sums");
}

#[test]
fn softmax_rows() {
    let r = run("softmax.mlir");
    let (x, y) = (buf(&r, "x"), buf(&r, "y"));
    for row in 0..128 {
        let v = &x[row * 128..row * 128 + 128];
        let m = v.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let s: f32 = v.iter().map(|a| (a - m).exp()).sum();
        let want: Vec<f32> = v.iter().map(|a| (a - m).exp() / s).collect();
        close(&y[row * 128..row * 128 + 128], &want, 1e-6, 1e-4, "softmax");
    }
}

#[test]
fn layernorm_rows() {
    let r = run("layernorm.mlir");
    let (x, g, b, y) = (
        buf(&r, "x"),
        buf(&r, "gamma"),
        buf(&r, "beta"),
        buf(&r, "y"),
    );
    for row in 0..128 {
        let v = &x[row * 128..row * 128 + 128];
        let mean = v.iter().sum::<f32>() / 128.0;
        let var = v.iter().map(|a| (a - mean) * (a - mean)).sum::<f32>() / 128.0;
        let rstd = 1.0 / (var + 1e-5).sqrt();
        let want: Vec<f32> = (0..128)
            .map(|j| (v[j] - mean) * rstd * g[j] + b[j])
            .collect();
        close(
            &y[row * 128..row * 128 + 128],
            &want,
            1e-4,
            1e-4,
            "layernorm",
        );
    }
}

#[test]
fn rmsnorm_rows() {
    let r = run("rmsnorm.mlir");
    let (x, w, y) = (buf(&r, "x"), buf(&r, "w"), buf(&r, "y"));
    let rows = x.len() / 64;
    for row in 0..rows {
        let v = &x[row * 64..row * 64 + 64];
        let ms = v.iter().map(|a| a * a).sum::<f32>() / 64.0;
        let rs = 1.0 / (ms + 1e-6).sqrt();
        let want: Vec<f32> = (0..64).map(|j| v[j] * rs * w[j]).collect();
        close(&y[row * 64..row * 64 + 64], &want, 1e-2, 1e-2, "rmsnorm");
    }
}

#[test]
fn matmul_k_loop_accumulates() {
    let r = run("matmul_k_loop.mlir");
    let (a, b, c) = (buf(&r, "a"), buf(&r, "b"), buf(&r, "c"));
    for i in 0..32 {
        for j in 0..64 {
            let want: f32 = (0..64).map(|k| a[i * 64 + k] * b[k * 64 + j]).sum();
            assert!((c[i * 64 + j] - want).abs() < 1e-4, "c[{i}][{j}]");
        }
    }
}

#[test]
fn sdpa_one_head() {
    let r = run("sdpa.mlir");
    let (q, k, v, o) = (buf(&r, "qa"), buf(&r, "ka"), buf(&r, "va"), buf(&r, "oa"));
    for i in (0..512).step_by(37) {
        let s: Vec<f32> = (0..128)
            .map(|j| (0..64).map(|d| q[i * 64 + d] * k[j * 64 + d]).sum::<f32>() * 0.125)
            .collect();
        let m = s.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let l: f32 = s.iter().map(|x| (x - m).exp()).sum();
        let want: Vec<f32> = (0..64)
            .map(|d| (0..128).map(|j| (s[j] - m).exp() / l * v[j * 64 + d]).sum())
            .collect();
        close(&o[i * 64..i * 64 + 64], &want, 2e-2, 2e-2, "sdpa");
    }
}

#[test]
fn rope_rotates_halves() {
    let r = run("rope.mlir");
    let (q, c, s, o) = (buf(&r, "q"), buf(&r, "cos"), buf(&r, "sin"), buf(&r, "out"));
    for t in 0..128 {
        for j in 0..32 {
            let (x1, x2) = (q[t * 64 + j], q[t * 64 + 32 + j]);
            let (cc, ss) = (c[t * 32 + j], s[t * 32 + j]);
            assert!((o[t * 64 + j] - (x1 * cc - x2 * ss)).abs() < 1e-6);
            assert!((o[t * 64 + 32 + j] - (x2 * cc + x1 * ss)).abs() < 1e-6);
        }
    }
}

#[test]
fn swiglu_block() {
    let r = run("swiglu_ffn.mlir");
    let (x, w1, w3, w2, y) = (
        buf(&r, "xa"),
        buf(&r, "w1a"),
        buf(&r, "w3a"),
        buf(&r, "w2a"),
        buf(&r, "ya"),
    );
    for t in (0..256).step_by(29) {
        let mut hvec = vec![0.0f32; 128];
        for (n, hv) in hvec.iter_mut().enumerate() {
            // Every intermediate is stored in bf16, as the program's types say.
            let g = b16((0..64).map(|k| x[t * 64 + k] * w1[k * 128 + n]).sum());
            let u = b16((0..64).map(|k| x[t * 64 + k] * w3[k * 128 + n]).sum());
            let den = b16(b16((-g).exp()) + 1.0);
            *hv = b16(b16(g / den) * u);
        }
        let want: Vec<f32> = (0..64)
            .map(|n| (0..128).map(|k| hvec[k] * w2[k * 64 + n]).sum())
            .collect();
        close(&y[t * 64..t * 64 + 64], &want, 5e-2, 5e-2, "swiglu");
    }
}

#[test]
fn distributed_view_reads_two_scratchpads() {
    // Scratchpads start zeroed, so the copy is all zeros; it must touch both cores'
    // scratchpads (two transfers from core stops).
    let r = run("distributed_view_copy.mlir");
    assert!(buf(&r, "out").iter().all(|v| *v == 0.0));
}

#[test]
fn rounding_helpers_agree_with_half() {
    assert_eq!(h(1.0 / 3.0), f16::from_f32(1.0 / 3.0).to_f32());
}

#[test]
fn timing_only_schedules_every_valid_program_like_a_run_with_numbers() {
    let names = runnable_programs();
    let mut assumed = 0;
    for name in &names {
        let text = read(name);
        let full = options(name, &text);
        let timing = KtirRunOptions {
            timing_only: true,
            ..full.clone()
        };
        let (a, sa) = run_ktir(&text, &full).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (b, sb) = run_ktir(&text, &timing).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(a.assumptions.is_empty(), "{name}");
        if !b.assumptions.is_empty() {
            assumed += 1;
        }
        // Assumed indices may name other rows, never other bytes or stops on these programs.
        assert_eq!(
            a.total_cycles.to_bits(),
            b.total_cycles.to_bits(),
            "{name}: cycles"
        );
        assert!(sa.all_events().eq(sb.all_events()), "{name}: events");
    }
    assert!(assumed >= 3, "only {assumed} programs assumed indices");
}

/// Pins every corpus program's full schedule: total cycles (as bits), event count and a
/// hash of every event. Regenerate with `UPDATE_EXPECT=1` only for an intended change to
/// the timing model.
#[test]
fn corpus_schedules_are_pinned() {
    use std::fmt::Write;
    let names = runnable_programs();
    let mut out = String::new();
    for name in &names {
        let text = read(name);
        let (r, s) = run_ktir(&text, &options(name, &text)).unwrap();
        // FNV-1a over the debug form of every event (f64 debug output round-trips).
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for e in s.all_events() {
            for b in format!("{e:?}").bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        let _ = writeln!(
            out,
            "{name:<36} cycles {:#018x} events {:>6} views {:>6} hash {h:#018x}",
            r.total_cycles.to_bits(),
            s.event_count(),
            r.events.len()
        );
    }
    expect_test::expect_file!["pinned/corpus.txt"].assert_eq(&out);
}

#[test]
fn document_spelling_broadcasts_one_row() {
    let r = run("inter_tile_document_spelling.mlir");
    let (x, y) = (buf(&r, "x"), buf(&r, "y"));
    for t in 0..4 {
        for j in 0..64 {
            assert_eq!(y[t * 64 + j], h(x[j] + x[j]), "y[{t}][{j}]");
        }
    }
}

#[test]
fn reduce_collapsing_the_tile_axis_takes_column_maxima() {
    let r = run("reduce_collapse_tile_axis.mlir");
    let (a, m) = (buf(&r, "a"), buf(&r, "m"));
    for j in 0..32 {
        let want = (0..32)
            .map(|i| a[i * 32 + j])
            .fold(f32::NEG_INFINITY, f32::max);
        assert_eq!(m[j], want, "m[{j}]");
    }
}

#[test]
fn linalg_index_keeps_the_lower_triangle() {
    let r = run("linalg_index_mask.mlir");
    let (a, b) = (buf(&r, "a"), buf(&r, "b"));
    for i in 0..8 {
        for j in 0..8 {
            let want = if j <= i { a[i * 8 + j] } else { 0.0 };
            assert_eq!(b[i * 8 + j], want, "b[{i}][{j}]");
        }
    }
}
