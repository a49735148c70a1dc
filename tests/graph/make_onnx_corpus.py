#!/usr/bin/env python3
"""Writes tests/graph/onnx/: small ONNX models built with the `onnx` Python package (an
independent writer, in the styles other exporters use: typed-field initializers, Constant
nodes, Identity, attribute-like inputs, opset 13/17/18 forms, com.microsoft Gelu, unused
extra outputs), each with inputs and onnxruntime's outputs in <name>.expected.json.
crates/graph/tests/onnx.rs loads each with graph::load_onnx and compares.

Rerun: `python3 tests/graph/make_onnx_corpus.py` (needs onnx, onnxruntime, numpy).
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T, helper as h, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "onnx")
rng = np.random.default_rng(2026)


def typed(name, arr, dtype):
    """A TensorProto with its data in the typed fields (not raw_data)."""
    arr = np.asarray(arr)
    if dtype == T.FLOAT16:
        bits = arr.astype(np.float16).view(np.uint16).astype(np.int32).ravel().tolist()
        return h.make_tensor(name, dtype, arr.shape, bits)
    return h.make_tensor(name, dtype, arr.shape, arr.ravel().tolist(), raw=False)


def const(out, arr, dtype, name=None):
    return h.make_node("Constant", [], [out], name=name or "", value=typed("", arr, dtype))


def mlp_opset13():
    f = T.FLOAT
    nodes = [
        h.make_node("MatMul", ["x", "w1"], ["h1"], name="fc1"),
        h.make_node("Add", ["h1", "b1"], ["h2"]),  # no name
        h.make_node("Relu", ["h2"], ["h3"]),
        h.make_node("Identity", ["h3"], ["h3_id"]),
        const("shape", np.array([2, 4, 6], np.int64), T.INT64),
        h.make_node("Reshape", ["h3_id", "shape"], ["r"]),
        h.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
        h.make_node("Softmax", ["t"], ["s"], axis=-1),
        h.make_node("ReduceMean", ["s"], ["m"], axes=[2], keepdims=0),
        const("ax", np.array([1], np.int64), T.INT64),
        h.make_node("Unsqueeze", ["m", "ax"], ["u"]),
        h.make_node("Cast", ["u"], ["y16"], to=T.FLOAT16),
        h.make_node("Cast", ["y16"], ["y"], to=T.FLOAT),
    ]
    inits = [typed("w1", rng.uniform(-1, 1, (6, 8)).astype(np.float32), f),
             typed("b1", rng.uniform(-1, 1, (8,)).astype(np.float32), f)]
    g = h.make_graph(nodes, "mlp_opset13", [h.make_tensor_value_info("x", f, [6, 6])],
                     [h.make_tensor_value_info("y", f, [2, 1, 6])], inits,
                     doc_string="Opset 13: typed-field weights, Constant shape and axes inputs, Identity, Cast.")
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)], ir_version=7)


def norms_opset17():
    f = T.FLOAT
    nodes = [
        const("two", np.array(2.0, np.float32), f),
        h.make_node("Pow", ["x", "two"], ["sq"]),
        h.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
        const("eps", np.array(1e-6, np.float32), f),
        h.make_node("Add", ["ms", "eps"], ["mse"]),
        h.make_node("Sqrt", ["mse"], ["rms"]),
        h.make_node("Div", ["x", "rms"], ["xn"]),
        h.make_node("Mul", ["xn", "g"], ["rmsnorm"]),
        # LayerNormalization with its optional Mean / InvStdDev outputs, unused
        h.make_node("LayerNormalization", ["rmsnorm", "s", "b"], ["ln", "mean", "inv_std"],
                    name="ln", axis=-1, epsilon=1e-5, stash_type=1),
        h.make_node("Gelu", ["ln"], ["y"], domain="com.microsoft"),
    ]
    inits = [typed("g", rng.uniform(0.5, 1.5, (16,)).astype(np.float32), f),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, (16,)).astype(np.float32), "s"),
             numpy_helper.from_array(rng.uniform(-0.1, 0.1, (16,)).astype(np.float32), "b")]
    g = h.make_graph(nodes, "norms_opset17", [h.make_tensor_value_info("x", f, [3, 16])],
                     [h.make_tensor_value_info("y", f, [3, 16])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)],
                        ir_version=8)


def fp16_opset18():
    H = T.FLOAT16
    nodes = [
        h.make_node("Add", ["x", "bias16"], ["a"], name="add"),
        const("rmax_axes", np.array([0], np.int64), T.INT64),
        h.make_node("ReduceMax", ["a", "rmax_axes"], ["mx"], keepdims=1),
        h.make_node("Sub", ["a", "mx"], ["c"]),
        h.make_node("Split", ["c"], ["p0", "p1"], axis=1, num_outputs=2),
        const("starts", np.array([1], np.int64), T.INT64),
        const("ends", np.array([9223372036854775807], np.int64), T.INT64),
        const("axes", np.array([0], np.int64), T.INT64),
        h.make_node("Slice", ["p1", "starts", "ends", "axes"], ["sl"]),
        const("lo", np.array(-0.5, np.float16), H),
        const("hi", np.array(0.75, np.float16), H),
        h.make_node("Clip", ["p0", "lo", "hi"], ["cl"]),
        h.make_node("Gather", ["cl", "idx"], ["ga"], axis=0),
        h.make_node("Concat", ["ga", "sl"], ["cat"], axis=0),
        h.make_node("Neg", ["cat"], ["cat_neg"]),
        h.make_node("Where", ["mask", "cat", "cat_neg"], ["w"]),
        const("cs_axis", np.array(0, np.int32), T.INT32),
        h.make_node("CumSum", ["w", "cs_axis"], ["y"]),
    ]
    inits = [typed("bias16", rng.uniform(-1, 1, (8,)).astype(np.float16), H),
             typed("idx", np.array([2, 0, 3], np.int32), T.INT32),
             typed("mask", np.array([[True, False, True, True]] * 6, np.bool_), T.BOOL)]
    g = h.make_graph(nodes, "fp16_opset18", [h.make_tensor_value_info("x", H, [4, 8])],
                     [h.make_tensor_value_info("y", H, [6, 4])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=8)


def num(v):
    v = float(v)
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return v


def main():
    os.makedirs(OUT, exist_ok=True)
    for make in (mlp_opset13, norms_opset17, fp16_opset18):
        m = make()
        name = m.graph.name
        path = os.path.join(OUT, name + ".onnx")
        onnx.save(m, path)
        feeds = {}
        ins = []
        for vi in m.graph.input:
            shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            dt = {T.FLOAT: np.float32, T.FLOAT16: np.float16}[vi.type.tensor_type.elem_type]
            a = rng.uniform(-1, 1, shape).astype(dt)
            feeds[vi.name] = a
            ins.append({"name": vi.name, "dtype": "f32" if dt == np.float32 else "f16",
                        "shape": shape, "data": [num(v) for v in a.astype(np.float32).ravel()]})
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        opts.intra_op_num_threads = 1
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        names = [o.name for o in m.graph.output]
        res = sess.run(names, feeds)
        outs = [{"name": n, "shape": list(r.shape),
                 "data": [num(v) for v in np.asarray(r).astype(np.float32).ravel()]}
                for n, r in zip(names, res)]
        with open(os.path.join(OUT, name + ".expected.json"), "w") as fh:
            json.dump({"model": name + ".onnx", "producer": f"onnxruntime {ort.__version__}",
                       "inputs": ins, "outputs": outs}, fh, separators=(",", ":"))
            fh.write("\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
