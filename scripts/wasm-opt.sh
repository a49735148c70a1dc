#!/usr/bin/env bash
# Optimises a release wasm module in place with binaryen's wasm-opt, at the version
# package.json pins (npm's `binaryen`, installed by scripts/setup.sh). Used by
# scripts/build-web.sh and bench/sim.mjs; debug and test builds skip it to stay quick.
# The features are the ones the module is built with: Rust's wasm32 defaults and SIMD128
# (.cargo/config.toml). A module that fails validation stops the build here, and is not kept.
set -euo pipefail
cd "$(dirname "$0")/.."
WASM=${1:?usage: scripts/wasm-opt.sh MODULE.wasm}
WASM_OPT=node_modules/.bin/wasm-opt
if [ ! -x "$WASM_OPT" ]; then
  echo "wasm-opt is missing: run scripts/setup.sh (it installs npm's binaryen)" >&2
  exit 1
fi
FLAGS=(-O3 --enable-simd --enable-bulk-memory --enable-sign-ext --enable-nontrapping-float-to-int
  --enable-mutable-globals --enable-multivalue --enable-reference-types)
# wasm-opt takes minutes, and a fresh clone builds the same module again: its output is kept
# by the hash of its input, the wasm-opt version and the flags, and reused when they match.
# The newest few outputs are kept.
CACHE="${SPYRE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/spyre-playground-build}/wasm-opt"
KEY=$({ sha256sum <"$WASM"; "$WASM_OPT" --version; echo "${FLAGS[*]}"; } | sha256sum | awk '{print $1}')
if [ -f "$CACHE/$KEY.wasm" ]; then
  cp "$CACHE/$KEY.wasm" "$WASM.opt"
  touch "$CACHE/$KEY.wasm"
  echo "wasm-opt: reused the optimised module for this input ($KEY)"
else
  "$WASM_OPT" "$WASM" -o "$WASM.opt" "${FLAGS[@]}" ||
    { rm -f "$WASM.opt"; echo "wasm-opt failed on $WASM" >&2; exit 1; }
  mkdir -p "$CACHE"
  cp "$WASM.opt" "$CACHE/$KEY.wasm.part" && mv "$CACHE/$KEY.wasm.part" "$CACHE/$KEY.wasm"
  # shellcheck disable=SC2012
  ls -t "$CACHE"/*.wasm | tail -n +5 | xargs -r rm -f
fi
mv "$WASM.opt" "$WASM"
