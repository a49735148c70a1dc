#!/usr/bin/env bash
# Recomputes tests/graph/expected/ with onnxruntime: the Rust side exports every gallery
# model and per-op case as ONNX plus its inputs, then make_expected.py runs onnxruntime.
# Needs: pip install onnx onnxruntime numpy
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
SPYRE_ORT_DIR="$DIR" cargo test -q -p graph --test reference -- --ignored export_for_onnxruntime
python3 tests/graph/make_expected.py "$DIR"
