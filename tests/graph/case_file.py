"""Reads and writes the per-op case files of tests/graph/ops/ (one file per case).

A case file holds everything one onnxruntime comparison needs:

    {
      "graph": { ... },            an ordinary spyre-graph (docs/graph-format.md)
      "test_inputs": { "seed": 42, "rule": "..." },
                                   how the graph's inputs are drawn
      "expected": {                onnxruntime's outputs on those inputs
        "producer": "onnxruntime 1.32.0",
        "outputs": [ {"name": ..., "dtype": ..., "shape": [...], "data": [...]} ]
      }
    }

`expected` is absent until make_expected.sh has run on the case, and is
`{"skipped": reason}` when onnxruntime could not run it. op_cases.py writes the graph
and keeps `expected` while the graph and seed are unchanged; make_expected.py writes
`expected`. Both go through `write` so the layout stays one.
"""
import json
import struct

SEED = 42
RULE = ("graph::random_inputs(graph, seed): uniform in [-1, 1), rounded to each dtype; "
        "an integer input used as Gather indices is uniform in [0, n) of the gathered axis "
        "(SplitMix64, seed + 1); see crates/graph/tests/common/mod.rs, test_inputs")


MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


class SplitMix64:
    """graph::rng::SplitMix64, for scripts that compute a case's expected outputs
    themselves (an op onnxruntime does not have) from the same inputs the Rust side draws."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next_u64(self):
        self.state = (self.state + GAMMA) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def next_f64(self):
        return (self.next_u64() >> 11) * (1.0 / (1 << 53))


def f32(v):
    """`v` rounded to f32."""
    return struct.unpack("f", struct.pack("f", v))[0]


def f16(v):
    """`v` rounded to f16 (through f32, as the Rust side rounds)."""
    return struct.unpack("e", struct.pack("e", f32(v)))[0]


def uniform(seed, low, high, n, dtype):
    """An initializer's `{"uniform": {seed, low, high}}` values, as graph::rng::uniform draws
    them: `low + (high - low) u` in f64, then f32, then the dtype."""
    rng = SplitMix64(seed)
    out = []
    for _ in range(n):
        v = f32(low + (high - low) * rng.next_f64())
        out.append(f16(v) if dtype == "f16" else v)
    return out


def _graph_lines(g, pad):
    """The graph with one line per input, initializer and node, indented by `pad`."""
    lines = [pad + "{"]
    keys = list(g.keys())
    for i, k in enumerate(keys):
        v = g[k]
        comma = "," if i + 1 < len(keys) else ""
        if isinstance(v, list) and v and k != "outputs":
            rows = f",\n{pad}    ".join(json.dumps(x) for x in v)
            lines.append(f'{pad}  "{k}": [\n{pad}    {rows}\n{pad}  ]{comma}')
        else:
            lines.append(f'{pad}  "{k}": {json.dumps(v)}{comma}')
    lines.append(pad + "}")
    return lines


def _compact(v):
    return json.dumps(v, separators=(",", ":"))


def text(graph, expected=None, seed=SEED):
    """The file text of a case."""
    g = _graph_lines(graph, "  ")
    parts = ['  "graph": ' + "\n".join(g)[2:]]
    parts.append('  "test_inputs": ' + json.dumps({"seed": seed, "rule": RULE}))
    if expected is not None:
        if "outputs" in expected:
            head = {k: v for k, v in expected.items() if k != "outputs"}
            lines = ['  "expected": {']
            lines += [f"    {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
            rows = ",\n      ".join(_compact(o) for o in expected["outputs"])
            lines.append(f'    "outputs": [\n      {rows}\n    ]')
            lines.append("  }")
            parts.append("\n".join(lines))
        else:
            parts.append('  "expected": ' + json.dumps(expected))
    return "{\n" + ",\n".join(parts) + "\n}\n"


def read(path):
    """The case file at `path` as a dict, or None when there is none."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def write(path, graph, expected=None, seed=SEED):
    """Writes a case file."""
    with open(path, "w") as f:
        f.write(text(graph, expected, seed))
