#!/usr/bin/env bash
# Builds the wasm module (the wasm-release profile, SIMD128, then wasm-opt) into web/pkg,
# then the page into web/dist. An argument runs one part: "wasm" (the module, not yet
# optimised), "opt" (wasm-opt on it) or "page" (the page from web/pkg); none runs all three.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
PART=${1:-all}
case $PART in wasm | opt | page | all) ;; *)
  echo "usage: scripts/build-web.sh [wasm|opt|page]" >&2
  exit 2
  ;;
esac
if [ "$PART" = wasm ] || [ "$PART" = all ]; then
  wasm-pack build crates/wasm --profile wasm-release --no-opt --target web \
    --out-dir ../../web/pkg --out-name spyre
fi
if [ "$PART" = opt ] || [ "$PART" = all ]; then
  bash scripts/wasm-opt.sh web/pkg/spyre_bg.wasm
fi
if [ "$PART" = page ] || [ "$PART" = all ]; then
  npm run web:build
fi
