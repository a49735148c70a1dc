#!/usr/bin/env python3
"""Sets the work division's cost model beside the simulator for one matmul: every split of
the op over the machine's cores (or the splits given), each compiled with `--split` and run
timing-only, printing the cost model's estimate next to the simulated cycles of the op's
kernel and of the whole program, sorted by the simulated kernel, with the rank each split
has in the estimate and the estimate's parts (compute, memory, partial sums, ring, the part
of the ring the estimate counts, and how many cores share each B tile). Where the two orders disagree, the cost model is what to
mend, and the parts show which of its terms.

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


# The parts of a matmul estimate as the work-division rule states them:
# "compute C + memory M + partial sums P[ + B shared by G over the ring R (E of it beyond
# compute)] = T ns".
ESTIMATE = re.compile(
    r"rule: .*?(?:best|estimate) .*?: compute ([0-9.]+) \+ memory ([0-9.]+) \+ partial sums "
    r"([0-9.]+)(?: \+ B shared by (\d+) over the ring ([0-9.]+) \(([0-9.]+) of it beyond compute\))? = ([0-9.]+) ns"
)


def estimate_of(text, op):
    """The estimate the op's rule states for its split (a dict of its parts in ns, and the
    B sharing group), and the split itself."""
    block = re.search(r"^op " + re.escape(op) + r":.*?(?=^op |\Z)", text, re.M | re.S)
    if not block:
        return None, None
    split = re.search(r"split: (.*?) ->", block.group(0))
    rule = ESTIMATE.search(block.group(0))
    parts = None
    if rule:
        c, m, p, g, r, e, t = rule.groups()
        parts = {"compute": float(c), "memory": float(m), "psum": float(p),
                 "ring": float(r) if r else 0.0, "exposed": float(e) if e else 0.0,
                 "shared": int(g) if g else 1, "total": float(t)}
    return parts, (split.group(1) if split else None)


def measure(graph, op, split, extra):
    """(estimate parts, kernel cycles, program cycles, DRAM x unique, split as named) or an
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
    def total(parts):
        return parts["total"] if parts else float("inf")

    results.sort(key=lambda x: x[1][1] if x[1][1] is not None else float("inf"))
    by_estimate = sorted(results, key=lambda x: total(x[1][0]))
    rank = {s: i + 1 for i, (s, _) in enumerate(by_estimate)}
    # The estimate's parts: what to weigh against the simulated cycles when mending it.
    heads = ["compute", "memory", "psum", "ring", "exposed"]
    print(f"{'split':<14} {'estimate ns':>12} {'est. rank':>9} {'kernel cycles':>14} "
          f"{'program cycles':>15} {'DRAM x':>7}  " + " ".join(f"{h:>10}" for h in heads)
          + f" {'B/':>3}")
    for s, (parts, kernel, prog, x, _) in results:
        est_text = f"{parts['total']:.0f}" if parts else "-"
        part_text = (" ".join(f"{parts[h]:>10.0f}" for h in heads) + f" {parts['shared']:>3}"
                     if parts else "")
        print(f"{s:<14} {est_text:>12} {rank[s]:>9} {kernel if kernel is not None else '-':>14} "
              f"{prog:>15} {x:>7}  {part_text}")
    if isinstance(picked, str):
        print(f"the cost model's own pick: {picked}")
    else:
        parts, kernel, prog, x, named = picked
        est_text = f"{parts['total']:.0f} ns" if parts else "not stated"
        print(f"the cost model's own pick: {named}, estimate {est_text}, kernel {kernel} "
              f"cycles, program {prog} cycles, DRAM x{x}")
    for s, why in refused:
        print(f"{s}: refused: {why}")


if __name__ == "__main__":
    main()
