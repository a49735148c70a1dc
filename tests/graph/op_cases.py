#!/usr/bin/env python3
"""Writes the per-op test set: one self-contained file per case in tests/graph/ops/.

Every supported op has at least one case. A case file (case_file.py) holds an ordinary
graph (see docs/graph-format.md), the seed its inputs are drawn from (uniform in
[-1, 1), see crates/graph/tests/common/mod.rs) and onnxruntime's outputs; operands that
need other ranges are seeded initializers. Rerun after editing:
`python3 tests/graph/op_cases.py`. It keeps the expected outputs of every case whose graph
is unchanged; then run make_expected.sh for the new or changed ones (tests/graph/README.md).
A case can also be written by hand: the graph and `test_inputs`, then make_expected.sh.
"""
import os

import case_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "ops")

CASES = []


def inp(name, shape, dtype="f32"):
    return {"name": name, "dtype": dtype, "shape": shape}


def uni(name, shape, low, high, seed, dtype="f32"):
    return {"name": name, "dtype": dtype, "shape": shape,
            "init": {"uniform": {"seed": seed, "low": low, "high": high}}}


def data(name, shape, values, dtype="f32"):
    return {"name": name, "dtype": dtype, "shape": shape, "data": values}


def node(op, ins, outs, **attrs):
    n = {"name": op.lower(), "op": op, "inputs": ins, "outputs": outs}
    if attrs:
        n["attrs"] = attrs
    return n


def case(name, desc, inputs, nodes, outputs, inits=()):
    # unique node names
    seen = {}
    for n in nodes:
        base = n["name"]
        k = seen.get(base, 0)
        seen[base] = k + 1
        if k:
            n["name"] = f"{base}{k}"
    CASES.append((name, {
        "format": "spyre-graph", "version": 1, "name": name, "description": desc,
        "inputs": list(inputs), "initializers": list(inits), "nodes": nodes,
        "outputs": outputs}))


def unary(op, lo=None, hi=None, dtype="f32", name=None, **attrs):
    name = name or op.lower()
    if lo is None:
        case(name, f"{op} of a [3, 5] input", [inp("x", [3, 5], dtype)],
             [node(op, ["x"], ["y"], **attrs)], ["y"])
    else:
        case(name, f"{op} of [3, 5] values in [{lo}, {hi})", [],
             [node(op, ["x"], ["y"], **attrs)], ["y"], [uni("x", [3, 5], lo, hi, 11, dtype)])


# --- matmul family
case("matmul_2d", "MatMul [4, 8] @ [8, 6]", [inp("a", [4, 8])],
     [node("MatMul", ["a", "b"], ["y"])], ["y"], [uni("b", [8, 6], -1, 1, 1)])
case("matmul_batch_broadcast", "MatMul [2, 1, 4, 5] @ [3, 5, 2]: batch dims broadcast to [2, 3]",
     [inp("a", [2, 1, 4, 5]), inp("b", [3, 5, 2])], [node("MatMul", ["a", "b"], ["y"])], ["y"])
case("matmul_vector", "MatMul of a 1-D [5] by [5, 3]", [inp("a", [5]), inp("b", [5, 3])],
     [node("MatMul", ["a", "b"], ["y"])], ["y"])
case("matmul_f16", "MatMul in fp16, [16, 64] @ [64, 32]", [inp("a", [16, 64], "f16")],
     [node("MatMul", ["a", "b"], ["y"])], ["y"], [uni("b", [64, 32], -0.5, 0.5, 3, "f16")])
case("gemm_transb", "Gemm with transB, alpha 0.5, beta 2 and a [5] bias",
     [inp("a", [3, 4])], [node("Gemm", ["a", "b", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)],
     ["y"], [uni("b", [5, 4], -1, 1, 2), uni("c", [5], -1, 1, 3)])
case("gemm_bias", "Gemm [3, 4] @ [4, 5] plus a [5] bias, no transposes",
     [inp("a", [3, 4])], [node("Gemm", ["a", "b", "c"], ["y"])],
     ["y"], [uni("b", [4, 5], -1, 1, 5), uni("c", [5], -1, 1, 6)])
case("gemm_transa", "Gemm with transA and a [1, 5] bias", [inp("a", [4, 3]), inp("b", [4, 5])],
     [node("Gemm", ["a", "b", "c"], ["y"], transA=1)], ["y"], [uni("c", [1, 5], -1, 1, 4)])

# --- elementwise binary
case("add_broadcast", "Add [2, 3, 4] + [4]", [inp("a", [2, 3, 4]), inp("b", [4])],
     [node("Add", ["a", "b"], ["y"])], ["y"])
case("sub_broadcast", "Sub [2, 1, 4] - [3, 1]", [inp("a", [2, 1, 4]), inp("b", [3, 1])],
     [node("Sub", ["a", "b"], ["y"])], ["y"])
case("mul_scalar", "Mul [3, 4] by a scalar", [inp("a", [3, 4]), inp("b", [])],
     [node("Mul", ["a", "b"], ["y"])], ["y"])
case("div", "Div [3, 4] by values in [0.5, 2)", [inp("a", [3, 4])],
     [node("Div", ["a", "b"], ["y"])], ["y"], [uni("b", [3, 4], 0.5, 2, 5)])
case("pow", "Pow of [0.1, 2) to powers in [-2, 3)", [],
     [node("Pow", ["a", "b"], ["y"])], ["y"], [uni("a", [3, 4], 0.1, 2, 6), uni("b", [3, 4], -2, 3, 7)])
case("pow_square", "Pow by a constant 2 (lowered as x * x)", [inp("x", [3, 5])],
     [node("Pow", ["x", "e"], ["y"])], ["y"], [data("e", [], [2.0])])
case("pow_sqrt", "Pow of [0, 4) by a constant 0.5 (lowered as sqrt)", [],
     [node("Pow", ["x", "e"], ["y"])], ["y"], [uni("x", [3, 5], 0, 4, 12), data("e", [], [0.5])])
case("pow_rsqrt", "Pow of [0.1, 4) by a constant -0.5 (lowered as rsqrt)", [],
     [node("Pow", ["x", "e"], ["y"])], ["y"], [uni("x", [3, 5], 0.1, 4, 13), data("e", [], [-0.5])])
case("pow_signs", "Pow of negative, zero and positive bases by integer and fractional powers: "
     "a negative base takes the sign of an odd integer power and is NaN to a fractional one; "
     "x^0 is 1",
     [], [node("Pow", ["a", "b"], ["y"])], ["y"],
     [data("a", [4, 4], [-2.0, -2.0, -2.0, -2.0, -1.5, -1.5, -0.5, 0.0,
                         0.0, 0.0, 3.0, 3.0, 1.5, -3.0, 2.0, -4.0]),
      data("b", [4, 4], [2.0, 3.0, -1.0, 0.5, 4.0, -3.0, 2.5, 2.0,
                         -1.0, 0.0, 0.5, -2.0, 1.7, 0.0, 10.0, 5.0])])
case("max_variadic", "Max of three broadcasting inputs",
     [inp("a", [2, 3]), inp("b", [3]), inp("c", [2, 1])], [node("Max", ["a", "b", "c"], ["y"])], ["y"])
case("min", "Min of two inputs", [inp("a", [2, 3]), inp("b", [2, 3])],
     [node("Min", ["a", "b"], ["y"])], ["y"])
case("where", "Where(cond, a, b) with broadcasting", [inp("c", [2, 3], "bool"), inp("a", [2, 3]), inp("b", [3])],
     [node("Where", ["c", "a", "b"], ["y"])], ["y"])
case("equal", "Equal on values with repeats", [],
     [node("Equal", ["a", "b"], ["y"])], ["y"],
     [data("a", [2, 3], [1, 2, 3, 4, 5, 6]), data("b", [3], [1, 5, 3])])
case("less", "Less with broadcasting", [inp("a", [2, 3]), inp("b", [3])],
     [node("Less", ["a", "b"], ["y"])], ["y"])
case("greater", "Greater with broadcasting", [inp("a", [2, 3]), inp("b", [2, 1])],
     [node("Greater", ["a", "b"], ["y"])], ["y"])

# --- unary
unary("Neg")
unary("Relu")
unary("Exp", -3, 3)
unary("Log", 0.05, 4)
unary("Sqrt", 0, 4)
unary("Reciprocal", 0.25, 4)
unary("Tanh", -3, 3)
unary("Sigmoid", -6, 6)
unary("Silu", -6, 6)
unary("Silu", -6, 6, name="swish_alpha", alpha=0.6)
unary("Softplus", -6, 6)
unary("Sin", -4, 4)
unary("Cos", -4, 4)
for op in ("Sin", "Cos"):
    case(f"{op.lower()}_wide", f"{op} of [4, 70] values in [-1000, 1000): range reduction "
         "far from 0, across a stick boundary", [],
         [node(op, ["x"], ["y"])], ["y"], [uni("x", [4, 70], -1000, 1000, 31)])
    case(f"{op.lower()}_f16", f"{op} in fp16 of [3, 70] values in [-10, 10)", [],
         [node(op, ["x"], ["y"])], ["y"], [uni("x", [3, 70], -10, 10, 32, "f16")])
unary("Gelu", -4, 4, name="gelu_erf")
unary("Gelu", -4, 4, name="gelu_tanh", approximate="tanh")
unary("Clip", -2, 2, name="clip", min=-0.5, max=1.0)
unary("Sigmoid", -6, 6, dtype="f16", name="sigmoid_f16")

# --- casts (the rounding of each dtype, checked against onnxruntime)
for to in ["f16", "bf16", "f8e4m3", "f8e5m2"]:
    case(f"cast_{to}", f"Cast f32 -> {to} -> f32: the rounding of {to}", [],
         [node("Cast", ["x"], ["h"], to=to), node("Cast", ["h"], ["y"], to="f32")], ["y"],
         [uni("x", [4, 16], -600, 600, 21) if to.startswith("f8") else uni("x", [4, 16], -3, 3, 21)])
case("cast_f8e4m3_small", "Cast to fp8 e4m3 near the subnormal range", [],
     [node("Cast", ["x"], ["h"], to="f8e4m3"), node("Cast", ["h"], ["y"], to="f32")], ["y"],
     [uni("x", [4, 16], -0.05, 0.05, 22)])
case("cast_i32", "Cast f32 -> i32 truncates toward zero", [],
     [node("Cast", ["x"], ["y"], to="i32")], ["y"], [uni("x", [3, 4], -5, 5, 23)])
case("cast_bool", "Cast f32 -> bool", [],
     [node("Cast", ["x"], ["y"], to="bool")], ["y"], [data("x", [4], [0, 1.5, -2, 0])])

# --- normalisation
case("softmax", "Softmax over the last axis", [inp("x", [3, 7])],
     [node("Softmax", ["x"], ["y"])], ["y"])
case("softmax_axis1", "Softmax over axis 1 of a 3-D input", [inp("x", [2, 5, 3])],
     [node("Softmax", ["x"], ["y"], axis=1)], ["y"])
case("softmax_f16", "Softmax in fp16", [inp("x", [4, 64], "f16")],
     [node("Softmax", ["x"], ["y"])], ["y"])
case("layernorm", "LayerNormalization over the last axis with scale and bias", [inp("x", [4, 16])],
     [node("LayerNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5)], ["y"],
     [uni("s", [16], 0.5, 1.5, 31), uni("b", [16], -0.1, 0.1, 32)])
case("layernorm_axis1", "LayerNormalization over the last two axes, no bias", [inp("x", [2, 3, 4])],
     [node("LayerNormalization", ["x", "s"], ["y"], axis=1)], ["y"], [uni("s", [3, 4], 0.5, 1.5, 33)])
case("layernorm_f16", "LayerNormalization in fp16", [inp("x", [8, 64], "f16")],
     [node("LayerNormalization", ["x", "s", "b"], ["y"])], ["y"],
     [uni("s", [64], 0.5, 1.5, 34, "f16"), uni("b", [64], -0.1, 0.1, 35, "f16")])
case("rmsnorm", "SimplifiedLayerNormalization (RMS norm; ONNX RMSNormalization)", [inp("x", [4, 16])],
     [node("SimplifiedLayerNormalization", ["x", "s"], ["y"], epsilon=1e-6)], ["y"],
     [uni("s", [16], 0.5, 1.5, 36)])
case("rmsnorm_decomposed", "RMS norm as the decomposed pattern: x * 1/sqrt(mean(x*x) + eps) * scale",
     [inp("x", [4, 16])],
     [node("Mul", ["x", "x"], ["sq"]), node("ReduceMean", ["sq"], ["ms"], axes=[-1]),
      node("Add", ["ms", "eps"], ["mse"]), node("Sqrt", ["mse"], ["rms"]),
      node("Reciprocal", ["rms"], ["inv"]), node("Mul", ["x", "inv"], ["xn"]),
      node("Mul", ["xn", "s"], ["y"])], ["y"],
     [data("eps", [], [1e-6]), uni("s", [16], 0.5, 1.5, 36)])

# --- reductions
case("reducesum", "ReduceSum over axis 1, keepdims 0", [inp("x", [2, 3, 4])],
     [node("ReduceSum", ["x"], ["y"], axes=[1], keepdims=0)], ["y"])
case("reducemean", "ReduceMean over the last axis, keepdims 1", [inp("x", [2, 3, 4])],
     [node("ReduceMean", ["x"], ["y"], axes=[-1])], ["y"])
case("reducemax_all", "ReduceMax over all axes", [inp("x", [2, 3, 4])],
     [node("ReduceMax", ["x"], ["y"])], ["y"])
case("reducemax_axes", "ReduceMax over axes 0 and 2", [inp("x", [2, 3, 4])],
     [node("ReduceMax", ["x"], ["y"], axes=[0, 2], keepdims=0)], ["y"])

# --- movement
case("transpose", "Transpose with perm [2, 0, 1]", [inp("x", [2, 3, 4])],
     [node("Transpose", ["x"], ["y"], perm=[2, 0, 1])], ["y"])
case("reshape", "Reshape with 0 (copy) and -1 (infer)", [inp("x", [2, 3, 4])],
     [node("Reshape", ["x"], ["y"], shape=[0, -1, 2])], ["y"])
case("flatten", "Flatten at axis 2", [inp("x", [2, 3, 4, 2])],
     [node("Flatten", ["x"], ["y"], axis=2)], ["y"])
case("squeeze", "Squeeze axes 1 and 3", [inp("x", [2, 1, 3, 1])],
     [node("Squeeze", ["x"], ["y"], axes=[1, 3])], ["y"])
case("unsqueeze", "Unsqueeze at axes 0 and 3", [inp("x", [2, 3])],
     [node("Unsqueeze", ["x"], ["y"], axes=[0, 3])], ["y"])
case("concat", "Concat of three inputs on axis 1", [inp("a", [2, 1, 3]), inp("b", [2, 2, 3]), inp("c", [2, 3, 3])],
     [node("Concat", ["a", "b", "c"], ["y"], axis=1)], ["y"])
case("split", "Split axis 1 into sizes [1, 3]", [inp("x", [2, 4, 3])],
     [node("Split", ["x"], ["y0", "y1"], axis=1, split=[1, 3])], ["y0", "y1"])
case("split_equal", "Split the last axis into three equal parts", [inp("x", [2, 6])],
     [node("Split", ["x"], ["y0", "y1", "y2"], axis=-1)], ["y0", "y1", "y2"])
case("slice", "Slice with negative indices and a negative step", [inp("x", [4, 6, 5])],
     [node("Slice", ["x"], ["y"], starts=[-1, 1], ends=[0, 100], axes=[2, 1], steps=[-2, 2])], ["y"])
case("slice_simple", "Slice rows 1..3 and columns 0..4", [inp("x", [4, 6])],
     [node("Slice", ["x"], ["y"], starts=[1, 0], ends=[3, 4])], ["y"])
case("gather_embedding", "Gather rows of a [10, 8] table (embedding lookup) with negative indices", [],
     [node("Gather", ["table", "ids"], ["y"])], ["y"],
     [uni("table", [10, 8], -1, 1, 41), data("ids", [2, 3], [0, 9, -1, 4, 4, -10], "i64")])
case("gather_rows", "Gather rows of a [10, 8] table with a vector of ids",
     [], [node("Gather", ["table", "ids"], ["y"])], ["y"],
     [uni("table", [10, 8], -1, 1, 42), data("ids", [4], [3, 0, 9, 3], "i64")])
case("gather_axis1", "Gather along axis 1", [inp("x", [3, 5])],
     [node("Gather", ["x", "ids"], ["y"], axis=1)], ["y"], [data("ids", [2], [4, 1], "i64")])
case("gather_elements", "GatherElements along axis 0 with negative indices", [inp("x", [3, 4])],
     [node("GatherElements", ["x", "ids"], ["y"], axis=0)], ["y"],
     [data("ids", [2, 4], [0, -1, 2, 1, 2, 0, -3, 1], "i64")])
case("scatter_nd_kv_cache", "ScatterND writing one position per head into a [B, H, S, D] KV cache",
     [inp("cache", [1, 2, 6, 4]), inp("new", [1, 2, 1, 4])],
     [node("ScatterND", ["cache", "pos", "new"], ["y"])], ["y"],
     [data("pos", [1, 2, 1, 3], [0, 0, 3, 0, 1, 3], "i64")])
case("gather_elements_last_axis", "GatherElements along the last axis, indices narrower than the data off the axis",
     [inp("x", [3, 4, 5])],
     [node("GatherElements", ["x", "ids"], ["y"], axis=-1)], ["y"],
     [data("ids", [2, 4, 2], [0, 4, -1, 2, 3, 3, 1, 0, 2, 2, 4, -5, 0, 1, 1, 3], "i64")])
case("scatter_nd_add_rows", "ScatterND with reduction add: two rows of a [4, 3] table",
     [inp("x", [4, 3]), inp("u", [2, 3])],
     [node("ScatterND", ["x", "ids", "u"], ["y"], reduction="add")], ["y"],
     [data("ids", [2, 1], [3, -4], "i64")])
case("einsum_scores", "Einsum bhqd,bhkd->bhqk (attention scores as exporters write them)",
     [inp("q", [1, 2, 3, 4]), inp("k", [1, 2, 5, 4])],
     [node("Einsum", ["q", "k"], ["y"], equation="bhqd,bhkd->bhqk")], ["y"])
case("einsum_reduce_transpose", "Einsum bij->jb: a sum over i and a transpose", [inp("x", [2, 3, 4])],
     [node("Einsum", ["x"], ["y"], equation="bij->jb")], ["y"])
case("einsum_batched_matmul", "Einsum bij,bjk->bik (a batched matmul)",
     [inp("a", [2, 3, 4]), inp("b", [2, 4, 5])],
     [node("Einsum", ["a", "b"], ["y"], equation="bij,bjk->bik")], ["y"])
case("einsum_ellipsis_broadcast", "Einsum ...ij,...jk with broadcast batch dims (implicit output)",
     [inp("a", [2, 1, 3, 4]), inp("b", [1, 3, 4, 2])],
     [node("Einsum", ["a", "b"], ["y"], equation="...ij,...jk")], ["y"])
case("einsum_outer", "Einsum i,j->ij (an outer product)", [inp("a", [3]), inp("b", [4])],
     [node("Einsum", ["a", "b"], ["y"], equation="i,j->ij")], ["y"])
case("einsum_diagonal", "Einsum bii->bi (a diagonal per batch)", [inp("x", [2, 3, 3])],
     [node("Einsum", ["x"], ["y"], equation="bii->bi")], ["y"])
case("einsum_three_operands", "Einsum ij,jk,kl->il (a chain of three)",
     [inp("a", [2, 3]), inp("b", [3, 4]), inp("c", [4, 5])],
     [node("Einsum", ["a", "b", "c"], ["y"], equation="ij,jk,kl->il")], ["y"])
case("einsum_dot", "Einsum i,i-> (a dot product to a scalar)", [inp("a", [6]), inp("b", [6])],
     [node("Einsum", ["a", "b"], ["y"], equation="i,i->")], ["y"])
case("expand", "Expand [3, 1] to [2, 3, 4]", [inp("x", [3, 1])],
     [node("Expand", ["x"], ["y"], shape=[2, 1, 4])], ["y"])
case("cumsum", "CumSum along axis 1", [inp("x", [3, 5])],
     [node("CumSum", ["x"], ["y"], axis=1)], ["y"])
case("cumsum_exclusive_reverse", "CumSum along axis 0, exclusive and reversed", [inp("x", [4, 3])],
     [node("CumSum", ["x"], ["y"], axis=0, exclusive=1, reverse=1)], ["y"])
case("trilu_upper", "Trilu upper with k = 1 on a batch of matrices", [inp("x", [2, 4, 5])],
     [node("Trilu", ["x"], ["y"], k=1)], ["y"])
case("trilu_lower", "Trilu lower (causal mask shape)", [inp("x", [5, 5])],
     [node("Trilu", ["x"], ["y"], upper=0)], ["y"])

# --- conv, topk, attention
case("conv_depthwise_causal", "Depthwise 1-D Conv (group = channels, kernel 4, left pad 3): Mamba's causal conv",
     [inp("x", [2, 6, 10])], [node("Conv", ["x", "w", "b"], ["y"], group=6, pads=[3, 0])], ["y"],
     [uni("w", [6, 1, 4], -0.5, 0.5, 51), uni("b", [6], -0.1, 0.1, 52)])
case("conv_grouped_strided", "1-D Conv with 2 groups, stride 2, dilation 2, symmetric pads",
     [inp("x", [1, 4, 11])], [node("Conv", ["x", "w"], ["y"], group=2, pads=[2, 2], strides=[2], dilations=[2])], ["y"],
     [uni("w", [6, 2, 3], -0.5, 0.5, 53)])
# --- pooling
case("maxpool_2d_pads_strides", "MaxPool 2-D, kernel [3, 2], strides 2, uneven pads",
     [inp("x", [1, 3, 7, 6])], [node("MaxPool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1])], ["y"])
case("maxpool_1d_dilations_ceil", "MaxPool 1-D, dilation 2, stride 2, ceil_mode",
     [inp("x", [2, 2, 10])], [node("MaxPool", ["x"], ["y"], kernel_shape=[3], dilations=[2], strides=[2], ceil_mode=1)], ["y"])
case("maxpool_3d_same_lower", "MaxPool 3-D, auto_pad SAME_LOWER",
     [inp("x", [1, 2, 4, 5, 3])], [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 3, 2], auto_pad="SAME_LOWER")], ["y"])
case("averagepool_2d_ceil_pads", "AveragePool 2-D, pads 1, stride 2, ceil_mode: padding not counted",
     [inp("x", [1, 2, 6, 7])], [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)], ["y"])
case("averagepool_2d_ceil_pads_count_include_pad", "AveragePool 2-D, pads 1, stride 2, ceil_mode, count_include_pad",
     [inp("x", [1, 2, 6, 7])],
     [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)], ["y"])
case("averagepool_1d_same_upper", "AveragePool 1-D, kernel 3, stride 2, auto_pad SAME_UPPER",
     [inp("x", [1, 3, 9])], [node("AveragePool", ["x"], ["y"], kernel_shape=[3], strides=[2], auto_pad="SAME_UPPER")], ["y"])
case("averagepool_3d_valid", "AveragePool 3-D, auto_pad VALID, mixed strides",
     [inp("x", [1, 2, 5, 4, 6])], [node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2, 3], strides=[1, 2, 2], auto_pad="VALID")], ["y"])
case("lppool_2d_p3_pads", "LpPool 2-D, p = 3, uneven pads",
     [inp("x", [1, 2, 5, 5])], [node("LpPool", ["x"], ["y"], kernel_shape=[2, 3], p=3, pads=[1, 1, 0, 1])], ["y"])
case("globalaveragepool", "GlobalAveragePool of a 2-D image batch", [inp("x", [2, 3, 4, 5])],
     [node("GlobalAveragePool", ["x"], ["y"])], ["y"])
case("globalmaxpool", "GlobalMaxPool of a 1-D sequence batch", [inp("x", [2, 3, 7])],
     [node("GlobalMaxPool", ["x"], ["y"])], ["y"])
case("globallppool", "GlobalLpPool (p = 3) of a 2-D image", [inp("x", [1, 3, 3, 4])],
     [node("GlobalLpPool", ["x"], ["y"], p=3)], ["y"])
case("topk", "TopK (k = 3, largest) along the last axis: values and indices", [inp("x", [4, 8])],
     [node("TopK", ["x"], ["v", "i"], k=3)], ["v", "i"])
case("topk_smallest_axis0", "TopK (k = 2, smallest) along axis 0", [inp("x", [5, 3])],
     [node("TopK", ["x"], ["v", "i"], k=2, axis=0, largest=0)], ["v", "i"])
case("attention_gqa_causal", "Attention op: causal, 4 query heads sharing 2 key/value heads",
     [inp("q", [1, 4, 6, 8]), inp("k", [1, 2, 6, 8]), inp("v", [1, 2, 6, 8])],
     [node("Attention", ["q", "k", "v"], ["y"], is_causal=1)], ["y"])
case("attention_scaled", "Attention op: not causal, explicit scale, Skv != Sq, Dv != D",
     [inp("q", [2, 2, 3, 4]), inp("k", [2, 1, 5, 4]), inp("v", [2, 1, 5, 6])],
     [node("Attention", ["q", "k", "v"], ["y"], scale=0.7)], ["y"])
case("attention_mask_past_causal", "Attention op: boolean mask, past key/value with present outputs, causal",
     [inp("q", [1, 2, 2, 4]), inp("k", [1, 2, 2, 4]), inp("v", [1, 2, 2, 4]),
      inp("pk", [1, 2, 3, 4]), inp("pv", [1, 2, 3, 4])],
     [node("Attention", ["q", "k", "v", "m", "pk", "pv"], ["y", "present_k", "present_v"], is_causal=1)],
     ["y", "present_k", "present_v"],
     [data("m", [1, 1, 2, 5], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1], "bool")])
case("attention_3d_softcap_qk", "Attention op: 3-D inputs with head counts, additive mask, softcap, QK output with the mask (mode 2)",
     [inp("q", [2, 3, 8]), inp("k", [2, 5, 4]), inp("v", [2, 5, 4])],
     [node("Attention", ["q", "k", "v", "m"], ["y", "present_k", "present_v", "qk"], q_num_heads=2, kv_num_heads=1,
           softcap=2.0, qk_matmul_output_mode=2)],
     ["y", "qk"], [uni("m", [3, 5], -1, 0, 53)])
case("attention_mask_probs", "Attention op: GQA, an additive mask, the softmax as the QK output (mode 3)",
     [inp("q", [1, 4, 3, 4]), inp("k", [1, 2, 5, 4]), inp("v", [1, 2, 5, 6])],
     [node("Attention", ["q", "k", "v", "m"], ["y", "present_k", "present_v", "qk"], qk_matmul_output_mode=3)],
     ["y", "qk"], [uni("m", [1, 1, 3, 5], -1, 0, 57)])
case("attention_3d_past_gqa", "Attention op: 3-D inputs, GQA, past key/value with present outputs, causal, the scaled scores as the QK output",
     [inp("q", [1, 2, 8]), inp("k", [1, 2, 4]), inp("v", [1, 2, 4]),
      inp("pk", [1, 1, 3, 4]), inp("pv", [1, 1, 3, 4])],
     [node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "present_k", "present_v", "qk"], q_num_heads=2,
           kv_num_heads=1, is_causal=1)],
     ["y", "present_k", "present_v", "qk"])

# --- ops read from exporters' graphs (reference only until the compiler lowers them)
case("castlike", "CastLike of f32 to the dtype of an f16 tensor", [inp("x", [3, 4]), inp("t", [1], "f16")],
     [node("CastLike", ["x", "t"], ["y"])], ["y"])
case("logsoftmax_axis0", "LogSoftmax over axis 0", [inp("x", [3, 4])],
     [node("LogSoftmax", ["x"], ["y"], axis=0)], ["y"])
case("softmax_axis0_3d", "Softmax over the first of three axes", [inp("x", [3, 2, 4])],
     [node("Softmax", ["x"], ["y"], axis=0)], ["y"])
case("layernorm_stats", "LayerNormalization with its Mean and InvStdDev outputs",
     [inp("x", [2, 3, 4])], [node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"], axis=1)],
     ["y", "mean", "inv"], [uni("s", [3, 4], 0.5, 1.5, 6), uni("b", [3, 4], -1, 1, 7)])
case("gemm_all_attrs", "Gemm with transA, transB, alpha, beta and a [3, 1] bias",
     [inp("a", [4, 3]), inp("b", [5, 4])],
     [node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1, alpha=0.25, beta=-1.5)], ["y"],
     [uni("c", [3, 1], -1, 1, 8)])
case("matmul_vector_right", "MatMul of [2, 3, 4] by a 1-D [4]", [inp("a", [2, 3, 4]), inp("b", [4])],
     [node("MatMul", ["a", "b"], ["y"])], ["y"])
for op in ("ReduceMin", "ReduceProd", "ReduceL2", "ReduceLogSumExp"):
    case(op.lower(), f"{op} over axis 1, keepdims", [inp("x", [2, 3, 4])],
         [node(op, ["x"], ["y"], axes=[1])], ["y"])
case("argmax", "ArgMax over axis 1", [inp("x", [3, 5])], [node("ArgMax", ["x"], ["y"], axis=1)], ["y"])
case("argmin_last", "ArgMin over axis 0 without keepdims, ties to the last index",
     [], [node("ArgMin", ["x"], ["y"], axis=0, keepdims=0, select_last_index=1)], ["y"],
     [data("x", [3, 2], [1, 2, 0, 2, 0, 5])])
case("mod_int", "Mod of integers (the divisor's sign)", [],
     [node("Mod", ["a", "b"], ["y"])], ["y"],
     [data("a", [6], [7, -7, 7, -7, 5, 0], "i64"), data("b", [6], [3, 3, -3, -3, 5, 2], "i64")])
case("mod_fmod", "Mod of floats with fmod 1", [inp("a", [3, 4])],
     [node("Mod", ["a", "b"], ["y"], fmod=1)], ["y"], [uni("b", [3, 4], 0.3, 1, 9)])
for op in ("And", "Or", "Xor"):
    case(op.lower(), f"{op} of bools with broadcasting", [inp("a", [2, 3], "bool"), inp("b", [3], "bool")],
         [node(op, ["a", "b"], ["y"])], ["y"])
case("not", "Not of bools", [inp("a", [2, 3], "bool")], [node("Not", ["a"], ["y"])], ["y"])
for op in ("LessOrEqual", "GreaterOrEqual"):
    case(op.lower(), f"{op} on values with repeats", [],
         [node(op, ["a", "b"], ["y"])], ["y"],
         [data("a", [6], [1, 2, 3, 4, 5, 6]), data("b", [6], [1, 3, 2, 4, 6, 5])])
case("isnan_isinf", "IsNaN of Sqrt's NaNs and IsInf (positive only) of infinities", [],
     [node("Sqrt", ["x"], ["s"]), node("IsNaN", ["s"], ["n"]),
      node("IsInf", ["x"], ["i"], detect_negative=0)], ["n", "i"],
     [data("x", [5], [1.0, -1.0, "inf", "-inf", 0.0])])
for op in ("Abs", "Sign", "Floor", "Ceil", "Softsign", "HardSwish"):
    unary(op, -3, 3)
case("round", "Round of halves and others (ties to even)", [],
     [node("Round", ["x"], ["y"])], ["y"],
     [data("x", [8], [0.5, 1.5, 2.5, -0.5, -1.5, 0.4, 0.6, -2.7])])
unary("HardSigmoid", -4, 4, alpha=0.3, beta=0.4)
unary("LeakyRelu", -2, 2, alpha=0.1)
unary("Elu", -3, 3, alpha=0.5)
unary("Selu", -3, 3)
unary("Celu", -3, 3, alpha=0.7)
unary("ThresholdedRelu", -2, 2, alpha=0.3)
unary("Shrink", -2, 2, lambd=0.6, bias=0.2)
unary("Mish", -6, 6)
unary("Tan", -1.4, 1.4)
unary("Sinh", -4, 4)
unary("Cosh", -4, 4)
unary("Asinh", -20, 20)
unary("Acosh", 1, 20)
unary("Atanh", -0.95, 0.95)
unary("Asin", -1, 1)
unary("Acos", -1, 1)
unary("Atan", -30, 30)
case("lpnorm_l2_axis1", "LpNormalization (p = 2) over axis 1 of a 3-D input", [inp("x", [2, 3, 4])],
     [node("LpNormalization", ["x"], ["y"], axis=1)], ["y"])
case("lpnorm_l1", "LpNormalization (p = 1) over the last axis", [inp("x", [3, 5])],
     [node("LpNormalization", ["x"], ["y"], p=1)], ["y"])
case("batchnorm", "BatchNormalization (inference) of [2, 3, 4, 5]", [inp("x", [2, 3, 4, 5])],
     [node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"], epsilon=0.01)], ["y"],
     [data("s", [3], [0.5, -1.5, 2.0]), data("b", [3], [0.1, 0.0, -0.3]),
      data("mean", [3], [0.2, -0.1, 0.0]), data("var", [3], [0.5, 1.5, 0.05])])
case("instancenorm", "InstanceNormalization of [2, 3, 4, 5]", [inp("x", [2, 3, 4, 5])],
     [node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=0.01)], ["y"],
     [data("s", [3], [0.5, -1.5, 2.0]), data("b", [3], [0.1, 0.0, -0.3])])
case("groupnorm", "GroupNormalization, 3 groups of 2 channels, per-channel scale and bias",
     [inp("x", [2, 6, 3, 3])],
     [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3, epsilon=0.001)], ["y"],
     [data("s", [6], [0.5, -1.5, 2.0, 1.0, 0.3, 0.7]), data("b", [6], [0.1, 0.0, -0.3, 0.2, 0.4, -0.5])])
case("mvn", "MeanVarianceNormalization over the default axes [0, 2, 3]", [inp("x", [2, 3, 4, 2])],
     [node("MeanVarianceNormalization", ["x"], ["y"])], ["y"])
case("mvn_axes", "MeanVarianceNormalization over axes [1, 2]", [inp("x", [2, 3, 4])],
     [node("MeanVarianceNormalization", ["x"], ["y"], axes=[1, 2])], ["y"])
case("spacetodepth", "SpaceToDepth of [2, 3, 4, 6], blocksize 2", [inp("x", [2, 3, 4, 6])],
     [node("SpaceToDepth", ["x"], ["y"], blocksize=2)], ["y"])
case("depthtospace_dcr", "DepthToSpace (DCR) of [2, 8, 2, 3], blocksize 2", [inp("x", [2, 8, 2, 3])],
     [node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="DCR")], ["y"])
case("depthtospace_crd", "DepthToSpace (CRD) of [1, 18, 2, 2], blocksize 3", [inp("x", [1, 18, 2, 2])],
     [node("DepthToSpace", ["x"], ["y"], blocksize=3, mode="CRD")], ["y"])
case("lrn", "LRN over 3 channels of [2, 5, 3, 3], beta 0.5", [inp("x", [2, 5, 3, 3])],
     [node("LRN", ["x"], ["y"], size=3, alpha=0.3, beta=0.5, bias=2.0)], ["y"])
case("lrn_defaults", "LRN over 5 channels of [1, 6, 2, 3], default alpha, beta, bias", [inp("x", [1, 6, 2, 3])],
     [node("LRN", ["x"], ["y"], size=5)], ["y"])
case("hardmax", "Hardmax over the last axis", [inp("x", [3, 7])],
     [node("Hardmax", ["x"], ["y"])], ["y"])
case("hardmax_ties_axis1", "Hardmax over axis 1 of a 3-D input with tied maxima", [],
     [node("Hardmax", ["x"], ["y"], axis=1)], ["y"],
     [data("x", [2, 3, 2], [1, 2, 3, 2, 3, 2, 0, 0, 0, 0, -1, 0])])
case("prelu", "PRelu of [2, 3, 4] values by a per-channel [3, 1] slope", [inp("x", [2, 3, 4])],
     [node("PRelu", ["x", "slope"], ["y"])], ["y"], [data("slope", [3, 1], [0.1, -0.5, 2.0])])
case("rotary_embedding", "RotaryEmbedding of a [2, 3, 4, 8] input, caches per token", [inp("x", [2, 3, 4, 8])],
     [node("RotaryEmbedding", ["x", "cos", "sin"], ["y"])], ["y"],
     [uni("cos", [2, 4, 4], -1, 1, 31), uni("sin", [2, 4, 4], -1, 1, 32)])
case("rotary_embedding_ids", "RotaryEmbedding of a [2, 5, 12] input, 2 heads, interleaved pairs of "
     "the first 4 channels, caches picked by position id", [inp("x", [2, 5, 12])],
     [node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], interleaved=1, num_heads=2,
           rotary_embedding_dim=4)], ["y"],
     [uni("cos", [8, 2], -1, 1, 33), uni("sin", [8, 2], -1, 1, 34),
      data("pos", [2, 5], [0, 1, 2, 3, 4, 7, 6, 5, 0, 0], "i64")])
for op in ("Sum", "Mean"):
    case(op.lower() + "_variadic", f"{op} of three broadcasting inputs",
         [inp("a", [2, 3]), inp("b", [3]), inp("c", [2, 1])], [node(op, ["a", "b", "c"], ["y"])], ["y"])


def main():
    os.makedirs(OUT, exist_ok=True)
    stale = []
    for name, g in CASES:
        path = os.path.join(OUT, name + ".json")
        old = case_file.read(path) or {}
        # onnxruntime's outputs stay valid while the graph and its inputs are unchanged.
        keep = old.get("graph") == g and old.get("test_inputs", {}).get("seed") == case_file.SEED
        expected = old.get("expected") if keep else None
        if expected is None:
            stale.append(name)
        case_file.write(path, g, expected)
    print(f"wrote {len(CASES)} cases to {OUT}")
    # Case files written by hand (or left from a removed case) are not touched.
    names = {name + ".json" for name, _ in CASES}
    others = sorted(f for f in os.listdir(OUT) if f.endswith(".json") and f not in names)
    if others:
        print(f"not written here (delete by hand if unwanted): {', '.join(others)}")
    if stale:
        print(f"without expected outputs (run make_expected.sh): {', '.join(stale)}")


if __name__ == "__main__":
    main()
