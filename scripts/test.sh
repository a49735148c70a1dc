#!/usr/bin/env bash
# `npm test`: install what is missing, then run every check and test there is.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
export CHROMEDRIVER=/usr/bin/chromedriver
export SPYRE_CACHE="${SPYRE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/spyre-playground-build}"
# setup.sh made .venv/: the ONNX conformance test must run, not skip.
export SPYRE_REQUIRE_ONNX_CONFORMANCE=1
# CI tests a fresh clone each time, so the builds of the last run are kept outside the
# clone: the crates the workspace depends on are compiled once per machine, not once per run.
# Incremental compilation only writes caches a fresh clone never reads again.
if [ "${CI:-}" = true ] && [ -z "${CARGO_TARGET_DIR:-}" ]; then
  export CARGO_TARGET_DIR="$SPYRE_CACHE/target"
  export CARGO_INCREMENTAL=0
  bash scripts/cache-trim.sh "$CARGO_TARGET_DIR"
fi

step() { printf '\n==== %s (%s) ====\n' "$*" "$(date -u +%H:%M:%S)"; }

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
step "cargo test"
cargo test --workspace
step "build the fuzz targets (scripts/fuzz.sh)"
FUZZ_PHASE=build bash scripts/fuzz.sh
step "build the page's wasm module (scripts/build-web.sh wasm)"
bash scripts/build-web.sh wasm
# The fuzz runs and wasm-opt each keep one core busy for minutes: side by side they use both.
step "fuzz the parsers (bounded: scripts/fuzz.sh) while wasm-opt optimises the module"
OPT_LOG=$(mktemp)
bash scripts/build-web.sh opt >"$OPT_LOG" 2>&1 &
OPT_PID=$!
trap 'kill "$OPT_PID" 2>/dev/null || true; rm -f "$OPT_LOG"' EXIT
FUZZ_PHASE=run bash scripts/fuzz.sh
if ! wait "$OPT_PID"; then
  cat "$OPT_LOG"
  echo "wasm-opt failed"
  exit 1
fi
cat "$OPT_LOG"
step "wasm-pack test --node"
(cd crates/wasm && wasm-pack test --node)
step "wasm-pack test --headless --chrome"
(cd crates/wasm && wasm-pack test --headless --chrome)
step "build the page (scripts/build-web.sh page)"
bash scripts/build-web.sh page
step "front end: format, types, unit tests"
npm run format:check
npm run typecheck
npm run test:unit
step "end-to-end tests (Playwright, Chromium)"
npm run test:e2e
step "done"
