#!/usr/bin/env bash
# Builds the wasm module (the wasm-release profile, SIMD128, then wasm-opt) into web/pkg,
# then the page into web/dist.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
wasm-pack build crates/wasm --profile wasm-release --no-opt --target web \
  --out-dir ../../web/pkg --out-name spyre
bash scripts/wasm-opt.sh web/pkg/spyre_bg.wasm
npm run web:build
