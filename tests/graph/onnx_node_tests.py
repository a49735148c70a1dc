"""Writes ONNX's backend node test cases into a directory, in ONNX's own test layout.

Usage: python tests/graph/onnx_node_tests.py OUT_DIR

The cases are generated from the installed `onnx` package
(`onnx.backend.test.case.node.collect_testcases()`), so no test data is checked in.
Each case becomes `OUT_DIR/<case>/model.onnx` and `test_data_set_<n>/{input,output}_<k>.pb`
(TensorProto files). `OUT_DIR/manifest.json` lists every case with its ops, its
tolerances and the element types of its inputs and outputs; a case with an input or
output that is not a tensor (a sequence, an optional) has `"tensors_only": false` and no
data files. `OUT_DIR/DONE` is written last and holds the onnx version, so a reader can
tell a complete cache from one cut short.
"""

import json
import os
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node


def elem_types(infos):
    """ONNX element type names of the value infos (graph inputs or outputs)."""
    out = []
    for vi in infos:
        t = vi.type
        if t.HasField("tensor_type"):
            out.append(onnx.TensorProto.DataType.Name(t.tensor_type.elem_type))
        else:
            out.append("NOT_A_TENSOR")
    return out


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    done = os.path.join(out_dir, "DONE")
    if os.path.exists(done):
        os.remove(done)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    manifest = []
    for case in cases:
        model = case.model
        g = model.graph
        opset = next(
            (o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None
        )
        ops = sorted({(n.domain, n.op_type) for n in g.node})
        entry = {
            "name": case.name,
            "opset": opset,
            "ops": [f"{d}:{t}" if d else t for d, t in ops],
            "rtol": float(case.rtol),
            "atol": float(case.atol),
            "inputs": elem_types(g.input),
            "outputs": elem_types(g.output),
            "data_sets": 0,
            "tensors_only": True,
        }
        case_dir = os.path.join(out_dir, case.name)
        os.makedirs(case_dir, exist_ok=True)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        for n, (inputs, outputs) in enumerate(case.data_sets or []):
            values = list(inputs) + list(outputs)
            if not all(isinstance(v, np.ndarray) for v in values):
                entry["tensors_only"] = False
                break
            ds = os.path.join(case_dir, f"test_data_set_{n}")
            os.makedirs(ds, exist_ok=True)
            for kind, arrays, infos in (
                ("input", inputs, g.input),
                ("output", outputs, g.output),
            ):
                for k, a in enumerate(arrays):
                    name = infos[k].name if k < len(infos) else ""
                    try:
                        t = numpy_helper.from_array(a, name)
                    except Exception:  # an element type numpy_helper cannot write
                        entry["tensors_only"] = False
                        break
                    with open(os.path.join(ds, f"{kind}_{k}.pb"), "wb") as f:
                        f.write(t.SerializeToString())
            entry["data_sets"] = n + 1
        manifest.append(entry)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=0)
    with open(done, "w") as f:
        f.write(onnx.__version__ + "\n")


if __name__ == "__main__":
    main()
