#!/usr/bin/env bash
# The roofline sweep: the Llama-3.1-8B-dims decoder layer at seq 1, 32, 128 and 512 and a
# 4096^3 fp16 matmul, each run timing-only on spyre32; prints cycles, the roofline bound,
# their ratio and DRAM bytes read against unique bytes. Rerun after a compiler change:
#   bench/roofline_sweep.sh            (builds the release `spyre` first)
#   SPYRE=path/to/spyre bench/roofline_sweep.sh
# Extra arguments go to `spyre run` (for example `--no-cache`; on `--machine tiny4` the
# longer sequences exceed the run limits).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
spyre="${SPYRE:-}"
if [ -z "$spyre" ]; then
  cargo build --release -q -p cli --manifest-path "$root/Cargo.toml"
  spyre="$root/target/release/spyre"
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
python3 "$root/bench/roofline_graphs.py" "$dir" 1 32 128 512
printf '%-26s %12s %12s %6s %14s %14s %6s\n' workload cycles roofline ratio "DRAM read" unique "x"
row() { # label, graph, then extra `spyre run` arguments
  local label=$1 graph=$2
  shift 2
  line="$("$spyre" run "$dir/$graph.json" --timing-only --roofline "$@" | grep '^program:')"
  # program: C cycles, bound B (...), ratio R; DRAM read D B, written W B, unique U B (xF); ...
  echo "$line" | sed -E 's/^program: ([0-9]+) cycles, bound ([0-9]+) .*ratio ([0-9.]+); DRAM read ([0-9]+) B, .*unique ([0-9]+) B \(x([0-9.]+)\).*/\1 \2 \3 \4 \5 \6/' |
    { read -r c b r d u x; printf '%-26s %12s %12s %6s %14s %14s %6s\n' "$label" "$c" "$b" "$r" "$d" "$u" "$x"; }
}
for name in llama3_8b_layer_seq1 llama3_8b_layer_seq32 llama3_8b_layer_seq128 \
  llama3_8b_layer_seq512 matmul_4096; do
  row "$name" "$name" "$@"
done
# Splits to set beside the cost model's pick (docs/roofline.md): every core reading its
# own B (K in groups of 16), and B shared by M groups of 4.
for split in 1,2,16 4,1,8; do
  row "matmul_4096 split $split" matmul_4096 --split matmul=$split "$@" 2>/dev/null ||
    echo "matmul_4096 split $split    (not a split of this machine's cores)"
done
# The roofline's matmul term uses the 1536 MAC/cycle peak; the 4096^3 matmul's target is
# set against the sustained 1140 MAC/ns per core: 4096^3 / (32 x 1140).
echo "matmul_4096 compute bound at 1140 MAC/ns/core: $((4096 * 4096 * 4096 / (32 * 1140))) cycles"
