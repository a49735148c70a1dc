//! A bounded, deterministic mutation fuzzer that runs on stable Rust: for each target,
//! mutate seed inputs with a seeded SplitMix64 stream (bit flips, byte and boundary-value
//! writes, insertions, deletions, duplicated and spliced chunks, truncation) and run the
//! target on each mutant. A panic fails the run and the offending input is written to
//! `fuzz/artifacts/<target>/crash-mutate-<iteration>`.
//!
//! Usage: mutate TARGET SECONDS MAX_ITERATIONS SEED_DIR...
//! (the same seed and arguments give the same inputs, so a failure reproduces).

use std::path::Path;
use std::time::{Duration, Instant};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn mutate(r: &mut Rng, seeds: &[Vec<u8>], base: &[u8]) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..1 + r.below(6) {
        let len = b.len();
        match r.below(9) {
            0 if len > 0 => {
                let i = r.below(len);
                b[i] ^= 1 << r.below(8);
            }
            1 if len > 0 => {
                let i = r.below(len);
                b[i] = r.next() as u8;
            }
            2 if len > 0 => {
                let i = r.below(len);
                b[i] = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x08, 0x0a, 0x12][r.below(8)];
            }
            3 => {
                let i = r.below(len + 1);
                b.insert(i, r.next() as u8);
            }
            4 if len > 0 => {
                let i = r.below(len);
                let n = 1 + r.below((len - i).min(16));
                b.drain(i..i + n);
            }
            5 if len > 0 => {
                let i = r.below(len);
                let n = 1 + r.below((len - i).min(32));
                let chunk = b[i..i + n].to_vec();
                let at = r.below(b.len() + 1);
                b.splice(at..at, chunk);
            }
            6 if !seeds.is_empty() => {
                let other = &seeds[r.below(seeds.len())];
                if !other.is_empty() {
                    let i = r.below(other.len());
                    let n = 1 + r.below((other.len() - i).min(64));
                    let at = r.below(b.len() + 1);
                    b.splice(at..at, other[i..i + n].iter().copied());
                }
            }
            7 if len > 0 => b.truncate(r.below(len)),
            _ if len > 0 => {
                // a varint-looking run: large lengths and counts
                let i = r.below(len);
                for (k, v) in [0xffu8, 0xff, 0xff, 0xff, 0x0f].iter().enumerate() {
                    if let Some(x) = b.get_mut(i + k) {
                        *x = *v;
                    }
                }
            }
            _ => b.push(r.next() as u8),
        }
    }
    b
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: mutate TARGET SECONDS MAX_ITERATIONS SEED_DIR...");
        std::process::exit(2);
    }
    let Some(&(name, target)) = spyre_fuzz::TARGETS.iter().find(|(n, _)| *n == args[1]) else {
        eprintln!("unknown target {}", args[1]);
        std::process::exit(2);
    };
    let seconds: u64 = args[2].parse().expect("SECONDS");
    let max_iter: u64 = args[3].parse().expect("MAX_ITERATIONS");
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for dir in &args[4..] {
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        for p in paths {
            seeds.push(std::fs::read(&p).unwrap());
        }
    }
    seeds.push(Vec::new());
    for s in &seeds {
        target(s);
    }
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut r = Rng(0x5eed_0000 + name.len() as u64);
    let mut n = 0u64;
    std::panic::set_hook(Box::new(|_| {}));
    while n < max_iter && Instant::now() < deadline {
        let base = &seeds[r.below(seeds.len())];
        let input = mutate(&mut r, &seeds, base);
        let ok = std::panic::catch_unwind(|| target(&input)).is_ok();
        if !ok {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("artifacts")
                .join(name);
            std::fs::create_dir_all(&dir).ok();
            let path = dir.join(format!("crash-mutate-{n}"));
            std::fs::write(&path, &input).ok();
            let _ = std::panic::take_hook();
            eprintln!(
                "{name}: iteration {n} panicked; input saved to {}",
                path.display()
            );
            target(&input); // panic again, with the message this time
            std::process::exit(1);
        }
        n += 1;
    }
    println!(
        "{name}: {n} mutated inputs from {} seeds, no panic",
        seeds.len()
    );
}
