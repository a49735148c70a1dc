#!/usr/bin/env bash
# Optimises a release wasm module in place with binaryen's wasm-opt, at the version
# package.json pins (npm's `binaryen`, installed by scripts/setup.sh). Used by
# scripts/build-web.sh and bench/sim.mjs; debug and test builds skip it to stay quick.
# The features are the ones the module is built with: Rust's wasm32 defaults and SIMD128
# (.cargo/config.toml). A module that fails validation stops the build here.
set -euo pipefail
cd "$(dirname "$0")/.."
WASM=${1:?usage: scripts/wasm-opt.sh MODULE.wasm}
WASM_OPT=node_modules/.bin/wasm-opt
if [ ! -x "$WASM_OPT" ]; then
  echo "wasm-opt is missing: run scripts/setup.sh (it installs npm's binaryen)" >&2
  exit 1
fi
"$WASM_OPT" "$WASM" -o "$WASM.opt" -O3 \
  --enable-simd --enable-bulk-memory --enable-sign-ext --enable-nontrapping-float-to-int \
  --enable-mutable-globals --enable-multivalue --enable-reference-types ||
  { rm -f "$WASM.opt"; echo "wasm-opt failed on $WASM" >&2; exit 1; }
mv "$WASM.opt" "$WASM"
