#!/usr/bin/env python3
"""Writes the SwiGLU per-op cases of tests/graph/ops/ with their expected outputs.

onnxruntime has no SwiGLU (ONNX opset 28) kernel, so this script computes the outputs
independently of the Rust evaluator, in plain Python from the op's definition,
`A sigmoid(alpha A) B`, in f64 on the initializers' values (drawn as graph::rng draws
them), rounded to the output's dtype. Rerun after editing:
`python3 tests/graph/swiglu_cases.py`.
"""
import math
import os

import case_file
from case_file import f16, f32, uniform

HERE = os.path.dirname(os.path.abspath(__file__))


def case(name, desc, shape, dtype, alpha, gate, value):
    """`gate` and `value`: (seed, low, high) of the uniform initializers A and B."""
    n = math.prod(shape)
    attrs = {} if alpha is None else {"attrs": {"alpha": alpha}}
    inits = []
    vals = {}
    for init, (seed, low, high) in (("a", gate), ("b", value)):
        inits.append({"name": init, "dtype": dtype, "shape": shape,
                      "init": {"uniform": {"seed": seed, "low": low, "high": high}}})
        vals[init] = uniform(seed, low, high, n, dtype)
    graph = {
        "format": "spyre-graph",
        "version": 1,
        "name": name,
        "description": desc,
        "inputs": [],
        "initializers": inits,
        "nodes": [{"name": "swiglu", "op": "SwiGlu", "inputs": ["a", "b"], "outputs": ["y"],
                   **attrs}],
        "outputs": ["y"],
    }
    k = 1.0 if alpha is None else alpha
    rounded = f16 if dtype == "f16" else f32
    y = [rounded(a / (1.0 + math.exp(-k * a)) * b) for a, b in zip(vals["a"], vals["b"])]
    expected = {
        "producer": "tests/graph/swiglu_cases.py (plain Python, f64)",
        "outputs": [{"name": "y", "dtype": dtype, "shape": shape, "data": y}],
    }
    case_file.write(os.path.join(HERE, "ops", name + ".json"), graph, expected)


case("swiglu", "SwiGLU of a [2, 3, 8] gate and value", [2, 3, 8], "f32", None,
     (21, -6, 6), (22, -2, 2))
case("swiglu_alpha_f16", "SwiGLU with alpha 1.7, f16", [4, 16], "f16", 1.7,
     (23, -4, 4), (24, -2, 2))
