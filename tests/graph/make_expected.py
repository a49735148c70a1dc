#!/usr/bin/env python3
"""Computes the expected outputs of the reference corpus with onnxruntime.

Reads the `<case>.onnx` and `<case>.inputs.json` files that the Rust side writes
(`cargo test -p graph --test reference -- --ignored export_for_onnxruntime`), runs each
model on onnxruntime's CPU provider with graph optimisations off and one thread, and
writes the outputs: for a per-op case `op.<name>`, into the `expected` member of its case
file `tests/graph/ops/<name>.json` (case_file.py); for a gallery case, into
`tests/graph/expected/<case>.json`. Usually run through make_expected.sh.

Needs: pip install onnx onnxruntime numpy (dev-time tools only).
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort

import case_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "expected")
OPS = os.path.join(HERE, "ops")

NP = {"f32": np.float32, "f16": np.float16, "i64": np.int64, "i32": np.int32,
      "i8": np.int8, "bool": np.bool_}
NAMES = {np.dtype(v): k for k, v in NP.items()}


def num(v):
    v = float(v)
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return v


def fmt(a):
    """Values as the shortest text that reads back to the same element."""
    if a.dtype == np.bool_:
        return [1 if x else 0 for x in a.ravel()]
    if a.dtype.kind in "iu":
        return [int(x) for x in a.ravel()]
    out = []
    for x in a.ravel():
        v = num(x)
        out.append(v if isinstance(v, str) else json.loads(str(x.astype(np.float32)))
                   if np.isfinite(x) else v)
    return out


def run(src, name):
    with open(os.path.join(src, name + ".inputs.json")) as f:
        manifest = json.load(f)
    feeds = {}
    for k, t in manifest["inputs"].items():
        if t["dtype"] not in NP:
            return {"case": name, "skipped": f"input dtype {t['dtype']} has no numpy type here"}
        feeds[k] = np.array(t["data"], dtype=np.float64).astype(NP[t["dtype"]]).reshape(t["shape"])
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    try:
        sess = ort.InferenceSession(os.path.join(src, name + ".onnx"), opts,
                                    providers=["CPUExecutionProvider"])
        res = sess.run(manifest["outputs"], feeds)
    except Exception as e:  # recorded, and reported by the Rust test
        return {"case": name, "skipped": str(e).splitlines()[0][:300]}
    outs = []
    for oname, a in zip(manifest["outputs"], res):
        a = np.asarray(a)
        outs.append({"name": oname, "dtype": NAMES.get(a.dtype, str(a.dtype)),
                     "shape": list(a.shape), "data": fmt(a)})
    return {"case": name, "producer": f"onnxruntime {ort.__version__}", "outputs": outs}


def write_op_case(name, r):
    """Puts onnxruntime's outputs into the case file of per-op case `op.<stem>`."""
    path = os.path.join(OPS, name[len("op."):] + ".json")
    case = case_file.read(path)
    if case is None:
        raise SystemExit(f"{name}: no case file {path}")
    # Ops onnxruntime lacks have their outputs from a script of their own (the producer).
    producer = case.get("expected", {}).get("producer", "")
    if producer and not producer.startswith("onnxruntime"):
        print(f"{name}: kept the outputs of {producer}")
        return
    expected = {k: v for k, v in r.items() if k != "case"}
    seed = case.get("test_inputs", {}).get("seed", case_file.SEED)
    case_file.write(path, case["graph"], expected, seed)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.environ.get("TMPDIR", "/tmp"), "spyre-ort-cases")
    names = sorted(f[: -len(".inputs.json")] for f in os.listdir(src) if f.endswith(".inputs.json"))
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith(".json"):
            os.remove(os.path.join(OUT, f))
    skipped = 0
    for name in names:
        r = run(src, name)
        if "skipped" in r:
            skipped += 1
            print(f"{name}: SKIPPED: {r['skipped']}")
        if name.startswith("op."):
            write_op_case(name, r)
            continue
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(r, f, separators=(",", ":"))
            f.write("\n")
    print(f"wrote the expected outputs of {len(names)} cases to {OPS} and {OUT} ({skipped} skipped)")


if __name__ == "__main__":
    main()
