#!/usr/bin/env bash
# Bounded fuzzing of every input path: each target in fuzz/ runs for FUZZ_SECONDS (default
# 25; eight targets, three and a half minutes in all).
#   onnx_load     graph::load_onnx on arbitrary bytes (seeds: fuzz/seeds/onnx_load)
#   ktir_parse    ktir::check (parse, verify) and print on arbitrary UTF-8 (seeds: tests/ktir/valid, tests/ktir/invalid)
#   graph_json    graph::load_json (seeds: examples/graphs)
#   machine_json  sim::Machine::from_json (seeds: crates/sim/machines)
#   npy_read      driver::npy::read (seeds: fuzz/seeds/npy_read)
#   ktir_run      driver::run_ktir under small limits (seeds: tests/ktir/valid)
#   graph_run     driver::run_pipeline on tiny4 under small limits (seeds: examples/graphs, tests/pipeline)
#   onnx_run      the same for ONNX bytes (seeds: fuzz/seeds/onnx_load)
# Engine (FUZZ_ENGINE): "libfuzzer" (default) runs cargo-fuzz on stable Rust with
# RUSTC_BOOTSTRAP=1, no sanitizer and debug assertions on; "mutate" runs the deterministic
# stable harness fuzz/src/bin/mutate.rs instead (no cargo-fuzz, no C++ compiler needed).
# A crash fails the script; the input is saved under fuzz/artifacts/<target>/.
# FUZZ_PHASE: "build" only compiles the targets, "run" only runs them (building what is
# missing), "all" (default) does both; scripts/test.sh runs the targets beside wasm-opt.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
export PATH="$HOME/.cargo/bin:$PATH"
SECS=${FUZZ_SECONDS:-25}
ENGINE=${FUZZ_ENGINE:-libfuzzer}
PHASE=${FUZZ_PHASE:-all}
case $PHASE in build | run | all) ;; *)
  echo "FUZZ_PHASE must be build, run or all, not '$PHASE'" >&2
  exit 2
  ;;
esac
TARGETS=(onnx_load ktir_parse graph_json machine_json npy_read ktir_run graph_run onnx_run)
seeds() {
  case $1 in
    onnx_load) echo "seeds/onnx_load" ;;
    ktir_parse) echo "../tests/ktir/valid ../tests/ktir/invalid" ;;
    graph_json) echo "../examples/graphs" ;;
    machine_json) echo "../crates/sim/machines" ;;
    npy_read) echo "seeds/npy_read" ;;
    ktir_run) echo "../tests/ktir/valid" ;;
    graph_run) echo "../examples/graphs ../tests/pipeline ../tests/pipeline/tiling" ;;
    onnx_run) echo "seeds/onnx_load" ;;
  esac
}
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

if [ "$ENGINE" = libfuzzer ]; then
  export RUSTC_BOOTSTRAP=1
  [ "$PHASE" = run ] || cargo fuzz build -s none -a
  [ "$PHASE" != build ] || exit 0
  for t in "${TARGETS[@]}"; do
    mkdir -p "corpus/$t"
    # shellcheck disable=SC2046
    if ! cargo fuzz run "$t" -s none -a "corpus/$t" $(seeds "$t") -- \
      -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 >"$LOG" 2>&1; then
      tail -n 80 "$LOG"
      echo "fuzz: $t failed (see above; artifacts in fuzz/artifacts/$t)"
      exit 1
    fi
    echo "fuzz: $t: $(grep -E '^Done' "$LOG" | tail -n 1)"
  done
else
  [ "$PHASE" = run ] || cargo build --release --no-default-features --features stable --bin mutate
  [ "$PHASE" != build ] || exit 0
  for t in "${TARGETS[@]}"; do
    # shellcheck disable=SC2046
    target/release/mutate "$t" "$SECS" 100000000 $(seeds "$t")
  done
fi
