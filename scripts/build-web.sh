#!/usr/bin/env bash
# Builds the wasm module in release mode into web/pkg, then the page into web/dist.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
wasm-pack build crates/wasm --release --target web --out-dir ../../web/pkg --out-name spyre
npm run web:build
