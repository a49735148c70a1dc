#!/usr/bin/env python3
"""Compile-time scaling: how `spyre compile` grows with the size of the graph.

Writes two families of graphs with the gallery's generator (examples/graphs/make_gallery.py)
into a scratch directory, compiles each with a release `spyre` under `/usr/bin/time -v`
and prints wall time and peak memory:

- Llama-style decoder layers at small dims (hidden 256, 8/2 heads, MLP 768, sequence 64)
  stacked 1, 2, 4, 8, 16 and 32 deep;
- a chain of Relu nodes on [4, 64], 1k, 2k and 10k nodes long.

    cargo build --release -p cli
    python3 bench/compile_scaling.py [--spyre target/release/spyre] [--only layers|chain]
        [--keep DIR]

The targets (issue 13): 4 to 32 layers grows at most 10x, 32 layers under 0.5 s, the 10k
chain under 2 s, memory linear in the graph.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "graphs"))
import make_gallery as mg  # noqa: E402


def llama_stack(path, layers, hidden=256, n_q=8, n_kv=2, mlp=768, seq=64):
    g = mg.G(f"llama_small_x{layers}", f"{layers} small-dims Llama layers")
    x = g.input("hidden_states", [1, seq, hidden])
    cos, sin = mg.rope_tables(g, seq, hidden // n_q, 500000.0)
    mask = mg.causal_mask(g, seq)
    for i in range(layers):
        x = mg.llama_layer(g, x, 1, seq, hidden, n_q, n_kv, mlp, cos, sin, mask, f"layer{i}")
    g.finish()
    write(g, path)


def relu_chain(path, n):
    g = mg.G(f"relu_chain_{n}", f"{n} Relu nodes in a chain on [4, 64]")
    x = g.input("x", [4, 64])
    for _ in range(n):
        x = g.op("Relu", [x])
    g.finish()
    write(g, path)


def write(g, path):
    d, f = os.path.split(path)
    saved = mg.HERE
    mg.HERE = d
    try:
        g.write(os.path.splitext(f)[0])
    finally:
        mg.HERE = saved


def measure(spyre, path):
    """(wall seconds, CPU seconds, peak RSS in MB) of `spyre compile FILE`, or None on
    failure. CPU time (user + system) is the figure to compare on a busy machine."""
    p = subprocess.run(["/usr/bin/time", "-v", spyre, "compile", path, "--no-cache", "-o", os.devnull],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-2000:])
        return None
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", p.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    user = re.search(r"User time \(seconds\): ([\d.]+)", p.stderr)
    system = re.search(r"System time \(seconds\): ([\d.]+)", p.stderr)
    h, m, s = wall.groups()
    secs = int(h or 0) * 3600 + int(m) * 60 + float(s)
    cpu = float(user.group(1)) + float(system.group(1))
    return secs, cpu, int(rss.group(1)) / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spyre", default=os.path.join(ROOT, "target", "release", "spyre"))
    ap.add_argument("--only", choices=["layers", "chain"])
    ap.add_argument("--layers", default="1,2,4,8,16,32")
    ap.add_argument("--chain", default="1000,2000,10000")
    ap.add_argument("--keep", help="write the graphs here and keep them")
    a = ap.parse_args()
    out = a.keep or tempfile.mkdtemp(prefix="spyre-scaling-")
    os.makedirs(out, exist_ok=True)
    cases = []
    if a.only in (None, "layers"):
        for n in map(int, a.layers.split(",")):
            p = os.path.join(out, f"llama_small_x{n}.json")
            llama_stack(p, n)
            cases.append((f"llama small x{n}", p))
    if a.only in (None, "chain"):
        for n in map(int, a.chain.split(",")):
            p = os.path.join(out, f"relu_chain_{n}.json")
            relu_chain(p, n)
            cases.append((f"relu chain {n}", p))
    print(f"{'graph':<20} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}")
    for name, p in cases:
        r = measure(a.spyre, p)
        if r is None:
            print(f"{name:<20} {'failed':>8}")
        else:
            print(f"{name:<20} {r[0]:>8.2f} {r[1]:>8.2f} {r[2]:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
