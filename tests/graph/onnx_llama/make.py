"""Writes llama_torchscript.onnx: a one-layer Llama-style decoder (vocabulary 64, hidden
32, 4 query heads sharing 2 key/value heads, RoPE, RMSNorm, SwiGLU MLP) written the way
torch.onnx's TorchScript exporter writes a static-shape model, by hand with onnx.helper:
shapes computed at run time with Shape -> Gather -> Unsqueeze -> Concat -> Reshape,
positions with Range, RMSNorm with Pow and ReduceMean, the causal mask with Range,
Greater, CastLike and Where, rotate_half with Slice, Neg and Concat, GQA with
Unsqueeze -> Expand -> Reshape. Also writes test_data_set_0/ (input_0.pb, output_0.pb),
the expected logits computed by onnxruntime when it is installed, else by
onnx.reference. Run from this directory with Python, numpy and onnx; the files are
checked in."""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

V, H, NQ, NKV, D, F, S = 64, 32, 4, 2, 8, 64, 8
rng = np.random.default_rng(7)
nodes, inits = [], []
counter = [0]


def w(name, shape, scale=0.2):
    inits.append(numpy_helper.from_array(rng.uniform(-scale, scale, shape).astype(np.float32), name))
    return name


def const(value, dtype=np.int64):
    counter[0] += 1
    name = f"const_{counter[0]}"
    arr = np.array(value, dtype=dtype)
    nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr)))
    return name


def op(kind, ins, n_out=1, **attrs):
    counter[0] += 1
    outs = [f"/{kind}_{counter[0]}_output_{k}" for k in range(n_out)]
    nodes.append(helper.make_node(kind, ins, outs, name=f"/{kind}_{counter[0]}", **attrs))
    return outs[0] if n_out == 1 else outs


def dim(x, i):
    """Shape(x)[i] as a 1-D tensor, as the exporter writes `x.size(i)`."""
    return op("Unsqueeze", [op("Gather", [op("Shape", [x]), const(i)], axis=0), const([0])])


def rms_norm(x, weight):
    var = op("ReduceMean", [op("Pow", [x, const(2.0, np.float32)])], axes=[-1], keepdims=1)
    inv = op("Reciprocal", [op("Sqrt", [op("Add", [var, const(1e-6, np.float32)])])])
    return op("Mul", [weight_init(weight), op("Mul", [x, inv])])


def weight_init(name):
    inits.append(numpy_helper.from_array((1.0 + rng.uniform(-0.1, 0.1, [H])).astype(np.float32), name))
    return name


def heads(x, n):
    """[B, S, n * D] -> [B, n, S, D] with a Reshape whose shape is computed from Shape."""
    shape = op("Concat", [dim(x, 0), dim(x, 1), const([n]), const([D])], axis=0)
    return op("Transpose", [op("Reshape", [x, shape])], perm=[0, 2, 1, 3])


def rotate_half(x):
    x1 = op("Slice", [x, const([0]), const([D // 2]), const([3]), const([1])])
    x2 = op("Slice", [x, const([D // 2]), const([2**62]), const([3]), const([1])])
    return op("Concat", [op("Neg", [x2]), x1], axis=-1)


def rope(x, cos, sin):
    return op("Add", [op("Mul", [x, cos]), op("Mul", [rotate_half(x), sin])])


def repeat_kv(x):
    """[B, NKV, S, D] -> [B, NQ, S, D]: Unsqueeze, Expand, Reshape."""
    e = op("Unsqueeze", [x, const([2])])
    shape5 = op("Concat", [dim(x, 0), const([NKV]), const([NQ // NKV]), dim(x, 2), const([D])], axis=0)
    e = op("Expand", [e, shape5])
    shape4 = op("Concat", [dim(x, 0), const([NQ]), dim(x, 2), const([D])], axis=0)
    return op("Reshape", [e, shape4])


# Embedding.
x = op("Gather", [w("model.embed_tokens.weight", [V, H], 1.0), "input_ids"], axis=0)
# Rotary tables, indexed by positions from Range(0, seq_len).
seq = op("Squeeze", [dim("input_ids", 1), const([0])])
pos = op("Range", [const(0), seq, const(1)])
inv_freq = 1.0 / (10000 ** (np.arange(0, D, 2) / D))
freqs = np.outer(np.arange(32), inv_freq)
emb = np.concatenate([freqs, freqs], axis=-1)
inits.append(numpy_helper.from_array(np.cos(emb).astype(np.float32), "rotary.cos_cached"))
inits.append(numpy_helper.from_array(np.sin(emb).astype(np.float32), "rotary.sin_cached"))
cos = op("Unsqueeze", [op("Gather", ["rotary.cos_cached", pos], axis=0), const([0, 1])])
sin = op("Unsqueeze", [op("Gather", ["rotary.sin_cached", pos], axis=0), const([0, 1])])

# Attention block.
h = rms_norm(x, "model.layers.0.input_layernorm.weight")
q = heads(op("MatMul", [h, w("q_proj.weight.T", [H, NQ * D])]), NQ)
k = heads(op("MatMul", [h, w("k_proj.weight.T", [H, NKV * D])]), NKV)
v = heads(op("MatMul", [h, w("v_proj.weight.T", [H, NKV * D])]), NKV)
q, k = rope(q, cos, sin), rope(k, cos, sin)
k, v = repeat_kv(k), repeat_kv(v)
scores = op("Div", [op("MatMul", [q, op("Transpose", [k], perm=[0, 1, 3, 2])]),
                    const(float(np.sqrt(D)), np.float32)])
# Causal mask: key j > query i is masked with the dtype's lowest value.
rows = op("Unsqueeze", [pos, const([1])])
cols = op("Unsqueeze", [pos, const([0])])
masked = op("Greater", [cols, rows])
lowest = op("CastLike", [const(np.finfo(np.float32).min, np.float32), scores])
zero = op("CastLike", [const(0.0, np.float32), scores])
scores = op("Add", [scores, op("Where", [masked, lowest, zero])])
probs = op("Softmax", [scores], axis=-1)
ctx = op("Transpose", [op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
ctx = op("Reshape", [ctx, op("Concat", [dim(ctx, 0), dim(ctx, 1), const([NQ * D])], axis=0)])
x = op("Add", [x, op("MatMul", [ctx, w("o_proj.weight.T", [NQ * D, H])])])

# MLP: down(silu(gate(h)) * up(h)).
h = rms_norm(x, "model.layers.0.post_attention_layernorm.weight")
gate = op("MatMul", [h, w("gate_proj.weight.T", [H, F])])
silu = op("Mul", [gate, op("Sigmoid", [gate])])
up = op("MatMul", [h, w("up_proj.weight.T", [H, F])])
x = op("Add", [x, op("MatMul", [op("Mul", [silu, up]), w("down_proj.weight.T", [F, H])])])

h = rms_norm(x, "model.norm.weight")
logits = op("MatMul", [h, w("lm_head.weight.T", [H, V])])
nodes.append(helper.make_node("Identity", [logits], ["logits"]))

graph = helper.make_graph(
    nodes, "llama_torchscript",
    [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, S])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, S, V])],
    inits,
    doc_string="A one-layer Llama-style decoder exported TorchScript-style (static shapes, shape arithmetic at run time).",
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="hand-written (tests/graph/onnx_llama/make.py)")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, "llama_torchscript.onnx")

ids = rng.integers(0, V, (1, S)).astype(np.int64)
try:
    import onnxruntime as ort
    sess = ort.InferenceSession("llama_torchscript.onnx", providers=["CPUExecutionProvider"])
    (out,) = sess.run(None, {"input_ids": ids})
    producer = f"onnxruntime {ort.__version__}"
except ImportError:
    from onnx.reference import ReferenceEvaluator
    (out,) = ReferenceEvaluator(model).run(None, {"input_ids": ids})
    producer = f"onnx.reference {onnx.__version__}"
os.makedirs("test_data_set_0", exist_ok=True)
for name, arr, tname in [("input_0.pb", ids, "input_ids"), ("output_0.pb", out, "logits")]:
    with open(os.path.join("test_data_set_0", name), "wb") as f:
        f.write(numpy_helper.from_array(arr, tname).SerializeToString())
print(f"wrote llama_torchscript.onnx ({len(nodes)} nodes) and test_data_set_0 ({producer})")
