#!/usr/bin/env python3
"""Sets the work division's cost model beside the simulator for one matmul: every split of
the op over the machine's cores (or the splits given), each compiled with `--split` and run
timing-only, printing the cost model's estimate next to the simulated cycles of the op's
kernel and of the whole program, sorted by the simulated kernel, with the rank each split
has in the estimate. Where the two orders disagree, the cost model is what to mend.

  python3 bench/split_check.py GRAPH OP [SPLIT ...] [-- SPYRE_RUN_ARGS...]

GRAPH is a model file, OP a matmul device op's name (as the work-division snapshot names it,
for example `layer0.mlp.gate_proj`), SPLIT one split per iteration dim, comma-separated
(`1,2,2,8`). Without SPLITs, every split that uses all the cores is tried; the ones the
compiler refuses are listed with its reason. The release `spyre` is
`target/release/spyre` unless SPYRE names another.
A benchmark, not a test: cycles are deterministic, and it never fails on them.
"""
import itertools
import math
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SPYRE = os.environ.get("SPYRE", os.path.join(ROOT, "target", "release", "spyre"))


def spyre(*args):
    p = subprocess.run([SPYRE, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def op_dim_count(graph, op, extra):
    """How many iteration dims the op has, and the machine's core count."""
    code, text = spyre("compile", graph, "--after", "work-division", *extra)
    if code != 0:
        sys.exit(f"spyre compile failed:\n{text}")
    cores = int(re.search(r"target: (\d+) cores", text).group(1))
    m = re.search(r"^op " + re.escape(op) + r": .*iter \[([^\]]*)\]", text, re.M)
    if not m:
        sys.exit(f"no device op named {op} in the work-division snapshot")
    return len(m.group(1).split(", ")), cores


def estimate_of(text, op):
    """The estimate (ns) the op's rule states for its split, and the split itself."""
    block = re.search(r"^op " + re.escape(op) + r":.*?(?=^op |\Z)", text, re.M | re.S)
    if not block:
        return None, None
    split = re.search(r"split: (.*?) ->", block.group(0))
    rule = re.search(r"rule: .*?(?:best|estimate) .*? = ([0-9.]+) ns", block.group(0))
    return (float(rule.group(1)) if rule else None), (split.group(1) if split else None)


def measure(graph, op, split, extra):
    """(estimate ns, kernel cycles, program cycles, DRAM x unique, split as named) or an
    error line."""
    hint = ["--split", f"{op}={split}"] if split else []
    code, text = spyre("compile", graph, "--after", "work-division", *hint, *extra)
    if code != 0:
        return text.strip().splitlines()[-1]
    est, named = estimate_of(text, op)
    code, text = spyre("run", graph, "--timing-only", "--roofline", "--no-cache", *hint, *extra)
    if code != 0:
        return text.strip().splitlines()[-1]
    # Kernel rows name the fused ops with dots turned into underscores.
    key = op.replace(".", "_").replace("/", "_")
    named_by = re.compile(r"^k\d+_(?:.*_)?" + re.escape(key) + r"(?:_|$)")
    rows = [ln.split() for ln in text.splitlines() if named_by.match(ln.split()[0] if ln.split() else "")]
    kernel = sum(int(r[-2]) for r in rows) if rows else None
    prog = re.search(r"^program: (\d+) cycles.*\(x([0-9.]+)\)", text, re.M)
    return est, kernel, int(prog.group(1)), prog.group(2), named


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[: argv.index("--")]
    if len(argv) < 2:
        sys.exit(__doc__)
    graph, op, splits = argv[0], argv[1], argv[2:]
    if not splits:
        dims, cores = op_dim_count(graph, op, extra)
        splits = [
            ",".join(map(str, s))
            for s in itertools.product(divisors(cores), repeat=dims)
            if math.prod(s) == cores
        ]
    results, refused = [], []
    picked = measure(graph, op, None, extra)
    for s in splits:
        r = measure(graph, op, s, extra)
        (refused if isinstance(r, str) else results).append((s, r))
    results.sort(key=lambda x: x[1][1] if x[1][1] is not None else float("inf"))
    by_estimate = sorted(results, key=lambda x: x[1][0] if x[1][0] is not None else float("inf"))
    rank = {s: i + 1 for i, (s, _) in enumerate(by_estimate)}
    print(f"{'split':<14} {'estimate ns':>14} {'est. rank':>9} {'kernel cycles':>14} "
          f"{'program cycles':>15} {'DRAM x':>7}")
    for s, (est, kernel, prog, x, _) in results:
        est_text = f"{est:.0f}" if est is not None else "-"
        print(f"{s:<14} {est_text:>14} {rank[s]:>9} {kernel if kernel is not None else '-':>14} "
              f"{prog:>15} {x:>7}")
    if isinstance(picked, str):
        print(f"the cost model's own pick: {picked}")
    else:
        est, kernel, prog, x, named = picked
        print(f"the cost model's own pick: {named}, estimate {est:.0f} ns, kernel {kernel} "
              f"cycles, program {prog} cycles, DRAM x{x}")
    for s, why in refused:
        print(f"{s}: refused: {why}")


if __name__ == "__main__":
    main()
