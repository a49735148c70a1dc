"""Writes mlp_external.onnx: a two-layer MLP whose weights live in weights.bin next to it
(ONNX external data), and test_data_set_0/ with its inputs and outputs as TensorProto
files, as ONNX's own test data sets are laid out. Run with the project's .venv python
from this directory; the files are checked in."""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
x = rng.uniform(-1, 1, (4, 64)).astype(np.float32)
w1 = rng.uniform(-0.2, 0.2, (64, 64)).astype(np.float32)
w2 = rng.uniform(-0.2, 0.2, (64, 32)).astype(np.float32)
graph = helper.make_graph(
    [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["y"]),
    ],
    "mlp_external",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])],
    [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save_model(
    model,
    "mlp_external.onnx",
    save_as_external_data=True,
    all_tensors_to_one_file=True,
    location="weights.bin",
    size_threshold=0,
)
y = np.maximum(x @ w1, 0) @ w2
os.makedirs("test_data_set_0", exist_ok=True)
for name, arr in [("input_0.pb", x), ("output_0.pb", y)]:
    t = numpy_helper.from_array(arr, "x" if name.startswith("input") else "y")
    with open(os.path.join("test_data_set_0", name), "wb") as f:
        f.write(t.SerializeToString())
