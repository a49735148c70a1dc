#!/usr/bin/env python3
"""Writes the gallery's larger graphs (everything here but matmul_add.json, which is
hand-written) as spyre-graph JSON. The files are checked in; rerun after changing this
script: `python3 examples/graphs/make_gallery.py`. Weights are seeded initializers, so
every file stays small whatever the model's size.

Serving scenarios (PagedAttention over a paged KV cache) go to `serving/`: their
reference outputs are not onnxruntime's (PagedAttention is not an ONNX op), so they stay
out of the onnxruntime comparison and are checked against the reference evaluator by
crates/driver/tests/serving.rs.

Full-size models go to `full/`: they are for planning and timing only (`spyre run
--timing-only examples/graphs/full/llama3_8b_seq8192.json`), and stay out of the gallery
tests, which run every model here in a debug build.
"""
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))


class G:
    """A graph under construction."""

    def __init__(self, name, description, dtype="f16"):
        self.name, self.description, self.dtype = name, description, dtype
        self.inputs, self.inits, self.nodes, self.outputs = [], [], [], []
        self.seed = 0
        self.count = {}

    def input(self, name, shape, dtype=None):
        self.inputs.append({"name": name, "dtype": dtype or self.dtype, "shape": shape})
        return name

    def init(self, name, shape, init=None, data=None, dtype=None):
        e = {"name": name, "dtype": dtype or self.dtype, "shape": shape}
        if data is not None:
            e["data"] = data
        else:
            e["init"] = init
        self.inits.append(e)
        return name

    def normal(self, name, shape, std):
        self.seed += 1
        return self.init(name, shape, {"normal": {"seed": self.seed, "mean": 0.0, "std": std}})

    def uniform(self, name, shape, low, high, dtype=None):
        self.seed += 1
        return self.init(name, shape, {"uniform": {"seed": self.seed, "low": low, "high": high}},
                         dtype=dtype)

    def op(self, op, ins, out=None, n_out=1, name=None, **attrs):
        base = name or op.lower()
        k = self.count.get(base, 0)
        self.count[base] = k + 1
        nname = base if k == 0 else f"{base}_{k}"
        if out is None:
            taken = {i["name"] for i in self.inits}
            stem = nname if nname not in taken else f"{nname}_out"
            outs = [stem] if n_out == 1 else [f"{stem}.{i}" for i in range(n_out)]
        else:
            outs = out if isinstance(out, list) else [out]
        n = {"name": nname, "op": op, "inputs": ins, "outputs": outs}
        if attrs:
            n["attrs"] = attrs
        self.nodes.append(n)
        return outs[0] if len(outs) == 1 else outs

    def finish(self, out="y"):
        """Names the last node's (only) output `out` and makes it the graph's output."""
        last = self.nodes[-1]
        last["outputs"] = [out]
        self.outputs = [out]

    def write(self, fname=None, subdir=None):
        g = {"format": "spyre-graph", "version": 1, "name": self.name,
             "description": self.description, "inputs": self.inputs,
             "initializers": self.inits, "nodes": self.nodes, "outputs": self.outputs}
        lines = ["{"]
        keys = list(g)
        for i, k in enumerate(keys):
            v = g[k]
            comma = "," if i + 1 < len(keys) else ""
            if isinstance(v, list) and v and k != "outputs":
                rows = ",\n    ".join(json.dumps(x) for x in v)
                lines.append(f'  "{k}": [\n    {rows}\n  ]{comma}')
            else:
                lines.append(f'  "{k}": {json.dumps(v)}{comma}')
        lines.append("}")
        d = os.path.join(HERE, subdir) if subdir else HERE
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, (fname or self.name) + ".json"), "w") as f:
            f.write("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------------------
# building blocks

def rmsnorm(g, x, dim, p, eps=1e-5):
    w = g.uniform(f"{p}.weight", [dim], 0.8, 1.2)
    return g.op("SimplifiedLayerNormalization", [x, w], name=f"{p}", epsilon=eps)


def rope_tables(g, seq, head_dim, theta, p="rope"):
    """cos and sin tables [seq, head_dim] computed in f32 in the graph, cast to the model's
    dtype."""
    half = head_dim // 2
    pos = g.init(f"{p}.positions", [seq, 1], data=[float(i) for i in range(seq)], dtype="f32")
    inv = [theta ** (-2.0 * i / head_dim) for i in range(half)]
    inv_freq = g.init(f"{p}.inv_freq", [1, half], data=[float(f"{v:.9g}") for v in inv], dtype="f32")
    freqs = g.op("Mul", [pos, inv_freq], name=f"{p}.freqs")
    emb = g.op("Concat", [freqs, freqs], name=f"{p}.emb", axis=-1)
    cos = g.op("Cos", [emb], name=f"{p}.cos_f32")
    sin = g.op("Sin", [emb], name=f"{p}.sin_f32")
    if g.dtype != "f32":
        cos = g.op("Cast", [cos], name=f"{p}.cos", to=g.dtype)
        sin = g.op("Cast", [sin], name=f"{p}.sin", to=g.dtype)
    return cos, sin


def apply_rope(g, t, cos, sin, head_dim, p):
    half = head_dim // 2
    x1 = g.op("Slice", [t], name=f"{p}.x1", starts=[0], ends=[half], axes=[-1])
    x2 = g.op("Slice", [t], name=f"{p}.x2", starts=[half], ends=[head_dim], axes=[-1])
    nx2 = g.op("Neg", [x2], name=f"{p}.neg_x2")
    rot = g.op("Concat", [nx2, x1], name=f"{p}.rotate_half", axis=-1)
    a = g.op("Mul", [t, cos], name=f"{p}.mul_cos")
    b = g.op("Mul", [rot, sin], name=f"{p}.mul_sin")
    return g.op("Add", [a, b], name=f"{p}.out")


def heads(g, t, batch, seq, n, d, p):
    r = g.op("Reshape", [t], name=f"{p}.split_heads", shape=[batch, seq, n, d])
    return g.op("Transpose", [r], name=f"{p}.to_heads", perm=[0, 2, 1, 3])


def merge_heads(g, t, batch, seq, width, p):
    tr = g.op("Transpose", [t], name=f"{p}.from_heads", perm=[0, 2, 1, 3])
    return g.op("Reshape", [tr], name=f"{p}.merge_heads", shape=[batch, seq, width])


def repeat_kv(g, t, batch, n_kv, groups, seq, d, p):
    u = g.op("Unsqueeze", [t], name=f"{p}.unsqueeze", axes=[2])
    e = g.op("Expand", [u], name=f"{p}.expand", shape=[batch, n_kv, groups, seq, d])
    return g.op("Reshape", [e], name=f"{p}.repeat", shape=[batch, n_kv * groups, seq, d])


def causal_mask(g, seq, p="mask"):
    """[seq, seq] additive mask: 0 on and below the diagonal, -inf above."""
    full = g.init(f"{p}.neg_inf", [seq, seq], init={"constant": "-inf"})
    return g.op("Trilu", [full], name=f"{p}.upper", k=1)


def sdpa_decomposed(g, q, k, v, mask, head_dim, p):
    kt = g.op("Transpose", [k], name=f"{p}.k_t", perm=[0, 1, 3, 2])
    s = g.op("MatMul", [q, kt], name=f"{p}.scores")
    scale = g.init(f"{p}.scale", [], data=[1.0 / math.sqrt(head_dim)])
    s = g.op("Mul", [s, scale], name=f"{p}.scale")
    s = g.op("Add", [s, mask], name=f"{p}.mask")
    pr = g.op("Softmax", [s], name=f"{p}.softmax", axis=-1)
    return g.op("MatMul", [pr, v], name=f"{p}.context")


def llama_layer(g, x, batch, seq, hidden, n_q, n_kv, mlp, cos, sin, mask, p, std=0.02):
    """A Llama decoder layer; with `mask` None, attention is one causal Attention op (GQA
    inside it) rather than the decomposed pattern with a [seq, seq] mask table."""
    hd = hidden // n_q
    h = rmsnorm(g, x, hidden, f"{p}.input_norm")
    wq = g.normal(f"{p}.attn.wq", [hidden, n_q * hd], std)
    wk = g.normal(f"{p}.attn.wk", [hidden, n_kv * hd], std)
    wv = g.normal(f"{p}.attn.wv", [hidden, n_kv * hd], std)
    wo = g.normal(f"{p}.attn.wo", [n_q * hd, hidden], std)
    q = heads(g, g.op("MatMul", [h, wq], name=f"{p}.attn.q_proj"), batch, seq, n_q, hd, f"{p}.attn.q")
    k = heads(g, g.op("MatMul", [h, wk], name=f"{p}.attn.k_proj"), batch, seq, n_kv, hd, f"{p}.attn.k")
    v = heads(g, g.op("MatMul", [h, wv], name=f"{p}.attn.v_proj"), batch, seq, n_kv, hd, f"{p}.attn.v")
    q = apply_rope(g, q, cos, sin, hd, f"{p}.attn.rope_q")
    k = apply_rope(g, k, cos, sin, hd, f"{p}.attn.rope_k")
    if mask is None:
        ctx = g.op("Attention", [q, k, v], name=f"{p}.attn.attention", is_causal=1)
    else:
        k = repeat_kv(g, k, batch, n_kv, n_q // n_kv, seq, hd, f"{p}.attn.k")
        v = repeat_kv(g, v, batch, n_kv, n_q // n_kv, seq, hd, f"{p}.attn.v")
        ctx = sdpa_decomposed(g, q, k, v, mask, hd, f"{p}.attn")
    o = g.op("MatMul", [merge_heads(g, ctx, batch, seq, n_q * hd, f"{p}.attn"), wo], name=f"{p}.attn.o_proj")
    x1 = g.op("Add", [x, o], name=f"{p}.attn_residual")
    return swiglu(g, x1, hidden, mlp, f"{p}.mlp", std, norm=True)


def swiglu(g, x, hidden, mlp, p, std, norm):
    h = rmsnorm(g, x, hidden, f"{p}.norm") if norm else x
    wg = g.normal(f"{p}.w_gate", [hidden, mlp], std)
    wu = g.normal(f"{p}.w_up", [hidden, mlp], std)
    wd = g.normal(f"{p}.w_down", [mlp, hidden], std)
    gate = g.op("MatMul", [h, wg], name=f"{p}.gate_proj")
    up = g.op("MatMul", [h, wu], name=f"{p}.up_proj")
    act = g.op("Mul", [g.op("Silu", [gate], name=f"{p}.silu"), up], name=f"{p}.gate_mul_up")
    down = g.op("MatMul", [act, wd], name=f"{p}.down_proj")
    return g.op("Add", [x, down], name=f"{p}.residual") if norm else down


def paged_step(name, description, lens, q_len, hidden, n_q, n_kv, mlp, n_blocks, fname=None,
               rope_in_graph=False):
    """One step of a Llama-style layer over a paged KV cache (pages of 64 tokens, handed
    out in a scattered order): `len(lens)` sequences, each bringing `q_len` new tokens and
    holding `lens[b]` tokens after the step (the cached prefix is attended in full, the
    new tokens causally). A list `q_len` gives each sequence its own count: a mixed batch,
    its tokens packed sequence after sequence (`[tokens, hidden]`) with a `query_lens`
    input. RoPE is at each new token's own position: tables of constants, or
    (`rope_in_graph`, for the large timing-only files) computed in the graph from the
    positions."""
    b, hd, bs = len(lens), hidden // n_q, 64
    g = G(name, description)
    std = 0.02
    packed = isinstance(q_len, list)
    q_lens = q_len if packed else [q_len] * b
    # Leading dims of the new tokens: [tokens] packed, else [batch, q_len].
    lead = [sum(q_lens)] if packed else [b, q_len]
    x = g.input("x", lead + [hidden])
    kc = g.input("key_cache", [n_blocks, bs, n_kv, hd])
    vc = g.input("value_cache", [n_blocks, bs, n_kv, hd])
    # Pages handed out in a scattered order, as an allocator that has served other
    # requests would (29 is prime to every cache size used here).
    order = [(i * 29 + 11) % n_blocks for i in range(n_blocks)]
    need = [-(-l // bs) for l in lens]
    assert sum(need) <= n_blocks
    width = max(need)
    tables, k = [], 0
    for n in need:
        row = order[k:k + n]
        k += n
        tables.append(row + [0] * (width - n))
    bt = g.init("block_tables", [b, width], data=[p for row in tables for p in row], dtype="i64")
    sl = g.init("seq_lens", [b], data=lens, dtype="i64")
    schedule = [bt, sl]
    if packed:
        schedule.append(g.init("query_lens", [b], data=q_lens, dtype="i64"))
    half = hd // 2
    inv = [10000.0 ** (-2.0 * i / hd) for i in range(half)]
    positions = [l - q + i for l, q in zip(lens, q_lens) for i in range(q)]
    if rope_in_graph:
        pos = g.init("rope.positions", lead + [1, 1], data=[float(p) for p in positions], dtype="f32")
        inv_freq = g.init("rope.inv_freq", [half], data=[float(f"{v:.9g}") for v in inv], dtype="f32")
        freqs = g.op("Mul", [pos, inv_freq], name="rope.freqs")
        emb = g.op("Concat", [freqs, freqs], name="rope.emb", axis=-1)
        cos = g.op("Cast", [g.op("Cos", [emb], name="rope.cos_f32")], name="rope.cos", to=g.dtype)
        sin = g.op("Cast", [g.op("Sin", [emb], name="rope.sin_f32")], name="rope.sin", to=g.dtype)
    else:
        cos, sin = [], []
        for p in positions:
            ang = [p * f for f in inv] * 2
            cos += [float(f"{math.cos(a):.9g}") for a in ang]
            sin += [float(f"{math.sin(a):.9g}") for a in ang]
        cos = g.init("rope.cos", lead + [1, hd], data=cos)
        sin = g.init("rope.sin", lead + [1, hd], data=sin)
    p = "layer0"
    h = rmsnorm(g, x, hidden, f"{p}.input_norm")
    proj = {}
    for nm, n in (("q", n_q), ("k", n_kv), ("v", n_kv)):
        w = g.normal(f"{p}.attn.w{nm}", [hidden, n * hd], std)
        t = g.op("MatMul", [h, w], name=f"{p}.attn.{nm}_proj")
        proj[nm] = g.op("Reshape", [t], name=f"{p}.attn.{nm}.split_heads", shape=lead + [n, hd])
    q = apply_rope(g, proj["q"], cos, sin, hd, f"{p}.attn.rope_q")
    k = apply_rope(g, proj["k"], cos, sin, hd, f"{p}.attn.rope_k")
    ctx = g.op("PagedAttention", [q, k, proj["v"], kc, vc] + schedule, name=f"{p}.attn.paged",
               out=[f"{p}.attn.context", "key_cache_out", "value_cache_out"])
    ctx = ctx[0]
    merged = g.op("Reshape", [ctx], name=f"{p}.attn.merge_heads", shape=lead + [n_q * hd])
    wo = g.normal(f"{p}.attn.wo", [n_q * hd, hidden], std)
    o = g.op("MatMul", [merged, wo], name=f"{p}.attn.o_proj")
    x1 = g.op("Add", [x, o], name=f"{p}.attn_residual")
    swiglu(g, x1, hidden, mlp, f"{p}.mlp", std, norm=True)
    g.finish()
    g.outputs = ["y", "key_cache_out", "value_cache_out"]
    g.write(fname, subdir="serving")


DECODE_LENS = [17, 48, 130, 255, 400, 640, 960, 1500]


def paged_decode():
    """One decode step of a small Llama-style layer over a paged KV cache: 8 sequences of
    different lengths, each bringing one new token, in one ragged batch. The cache is
    sized so that its reshape to slot rows fits a scratchpad."""
    paged_step("paged_decode",
               "One decode step of a small Llama-style layer (hidden 256, 4 query heads sharing 1 key-value head, heads of 64, MLP 512) "
               "for 8 sequences of 17 to 1,500 tokens in one ragged batch: PagedAttention over a paged KV cache "
               "(pages of 64 tokens scattered through 66 pages, per-sequence block tables), RoPE at each sequence's "
               "own position, SwiGLU; fp16.",
               DECODE_LENS, 1, 256, 4, 1, 512, 66)


PREFILL_LENS = [56, 116, 266, 616]


def chunked_prefill():
    """One chunked-prefill step of the same small layer: 4 sequences that already hold
    40 to 600 tokens each add a chunk of 16, attending in full to their cached prefix and
    causally within the chunk."""
    paged_step("chunked_prefill",
               "One chunked-prefill step of a small Llama-style layer (hidden 256, 4 query heads sharing 1 key-value head, heads of 64, MLP 512): "
               "4 sequences holding 40, 100, 250 and 600 tokens each add a chunk of 16 new tokens, written into their pages and "
               "attending in full to the cached prefix and causally within the chunk (pages of 64 tokens scattered through 24 pages, "
               "per-sequence block tables), RoPE at each token's own position, SwiGLU; fp16.",
               PREFILL_LENS, 16, 256, 4, 1, 512, 24)


# A mixed step: four sequences decoding one token each beside two prefill chunks, one a
# prompt's first chunk (it holds only its new tokens) and one a later chunk.
MIXED_LENS = [33, 300, 700, 1200, 24, 424]
MIXED_Q = [1, 1, 1, 1, 24, 40]


def mixed_batch():
    """One step of the small layer over a mixed batch, decode and prefill together, its
    new tokens packed so that no sequence is padded to the longest chunk."""
    paged_step("mixed_batch",
               "One mixed step of a small Llama-style layer (hidden 256, 4 query heads sharing 1 key-value head, heads of 64, MLP 512): "
               "4 sequences of 33 to 1,200 tokens decode one token each while a new prompt brings its first 24 tokens and another "
               "sequence a chunk of 40 more (424 tokens after the step), the 68 new tokens packed sequence after sequence with "
               "per-sequence query lengths (pages of 64 tokens scattered through 48 pages, per-sequence block tables), RoPE at each "
               "token's own position, SwiGLU; fp16.",
               MIXED_LENS, MIXED_Q, 256, 4, 1, 512, 48)


def serving_8b():
    """The two serving steps at Llama 3.1 8B's dims (one layer), for timing only."""
    paged_step("paged_decode_8b",
               "One decode step of one Llama 3.1 8B decoder layer at its real dims (hidden 4096, 32/8 heads of 128, MLP 14336) "
               "for 8 sequences of 17 to 1,500 tokens in one ragged batch over a paged KV cache (pages of 64 tokens scattered "
               "through 66 pages), fp16: for planning and timing only (`spyre run --timing-only`).",
               DECODE_LENS, 1, 4096, 32, 8, 14336, 66, rope_in_graph=True)
    paged_step("chunked_prefill_8b",
               "One chunked-prefill step of one Llama 3.1 8B decoder layer at its real dims (hidden 4096, 32/8 heads of 128, "
               "MLP 14336): 4 sequences holding 100 to 1,800 tokens each add a chunk of 48 new tokens over a paged KV cache "
               "(pages of 64 tokens scattered through 66 pages), fp16: for planning and timing only (`spyre run --timing-only`).",
               [148, 448, 948, 1848], 48, 4096, 32, 8, 14336, 66, rope_in_graph=True)
    paged_step("mixed_batch_8b",
               "One mixed step of one Llama 3.1 8B decoder layer at its real dims (hidden 4096, 32/8 heads of 128, MLP 14336): "
               "4 sequences of 33 to 1,200 tokens decode one token each beside a prompt's first chunk of 24 tokens and a "
               "chunk of 40 more for a sequence of 424, the 68 new tokens packed with per-sequence query lengths, over a paged "
               "KV cache (pages of 64 tokens scattered through 48 pages), fp16: for planning and timing only "
               "(`spyre run --timing-only`).",
               MIXED_LENS, MIXED_Q, 4096, 32, 8, 14336, 48, rope_in_graph=True)


# ---------------------------------------------------------------------------------------
# the gallery

def matmul():
    g = G("matmul", "Y = A @ W in fp16, [64, 256] @ [256, 128]: the systolic-array workhorse, split over cores by the matmul cost model.")
    a = g.input("A", [64, 256])
    w = g.uniform("W", [256, 128], -0.1, 0.1)
    g.outputs = [g.op("MatMul", [a, w], out="Y")]
    g.write()


def softmax():
    g = G("softmax", "Softmax over the last axis of a [32, 128] fp16 tensor: max, subtract, exp, sum, divide.")
    x = g.input("x", [32, 128])
    g.outputs = [g.op("Softmax", [x], out="y", axis=-1)]
    g.write()


def layernorm():
    g = G("layernorm", "LayerNormalization of [32, 256] fp16 rows with learned scale and bias.")
    x = g.input("x", [32, 256])
    s = g.uniform("scale", [256], 0.8, 1.2)
    b = g.uniform("bias", [256], -0.1, 0.1)
    g.outputs = [g.op("LayerNormalization", [x, s, b], out="y", axis=-1, epsilon=1e-5)]
    g.write()


def rmsnorm_decomposed():
    g = G("rmsnorm", "RMS norm as the decomposed pattern x * 1/sqrt(mean(x*x) + eps) * w on [32, 256] fp16 rows.")
    x = g.input("x", [32, 256])
    w = g.uniform("weight", [256], 0.8, 1.2)
    eps = g.init("eps", [], data=[1e-5])
    sq = g.op("Mul", [x, x], name="square")
    ms = g.op("ReduceMean", [sq], name="mean_square", axes=[-1], keepdims=1)
    ms = g.op("Add", [ms, eps], name="add_eps")
    r = g.op("Sqrt", [ms], name="sqrt")
    inv = g.op("Reciprocal", [r], name="rsqrt")
    xn = g.op("Mul", [x, inv], name="normalize")
    g.outputs = [g.op("Mul", [xn, w], out="y", name="scale")]
    g.write()


def gelu_mlp():
    g = G("gelu_mlp", "A GPT-style MLP in fp16: [32, 128] -> Linear 512 -> GELU (erf) -> Linear 128.")
    x = g.input("x", [32, 128])
    w1 = g.normal("fc1.weight", [128, 512], 0.05)
    b1 = g.uniform("fc1.bias", [512], -0.05, 0.05)
    w2 = g.normal("fc2.weight", [512, 128], 0.05)
    b2 = g.uniform("fc2.bias", [128], -0.05, 0.05)
    h = g.op("Add", [g.op("MatMul", [x, w1], name="fc1"), b1], name="fc1.add_bias")
    h = g.op("Gelu", [h], name="gelu")
    y = g.op("Add", [g.op("MatMul", [h, w2], name="fc2"), b2], out="y", name="fc2.add_bias")
    g.outputs = [y]
    g.write()


def swiglu_mlp():
    g = G("swiglu_mlp", "A Llama-style SwiGLU MLP in fp16: down(silu(x @ W_gate) * (x @ W_up)), [32, 128] -> 384 -> 128.")
    x = g.input("x", [32, 128])
    swiglu(g, x, 128, 384, "mlp", 0.05, norm=False)
    g.finish()
    g.write()


def gqa_attention():
    g = G("gqa_attention", "Causal attention, decomposed: 8 query heads share 2 key/value heads (GQA), sequence 64, head size 32, fp16.")
    b, hq, hkv, s, d = 1, 8, 2, 64, 32
    q = g.input("q", [b, hq, s, d])
    k = g.input("k", [b, hkv, s, d])
    v = g.input("v", [b, hkv, s, d])
    mask = causal_mask(g, s)
    k = repeat_kv(g, k, b, hkv, hq // hkv, s, d, "k")
    v = repeat_kv(g, v, b, hkv, hq // hkv, s, d, "v")
    sdpa_decomposed(g, q, k, v, mask, d, "attn")
    g.finish()
    g.write()


def gqa_attention_op():
    g = G("gqa_attention_op", "The same causal GQA attention as one Attention op (is_causal, 8 query / 2 key-value heads), fp16.")
    q = g.input("q", [1, 8, 64, 32])
    k = g.input("k", [1, 2, 64, 32])
    v = g.input("v", [1, 2, 64, 32])
    g.outputs = [g.op("Attention", [q, k, v], out="y", is_causal=1)]
    g.write()


def llama(name, desc, hidden, n_q, n_kv, mlp, seq, fname=None):
    g = G(name, desc)
    x = g.input("hidden_states", [1, seq, hidden])
    cos, sin = rope_tables(g, seq, hidden // n_q, 500000.0)
    mask = causal_mask(g, seq)
    llama_layer(g, x, 1, seq, hidden, n_q, n_kv, mlp, cos, sin, mask, "layer0")
    g.finish()
    g.write(fname)


def tiny_two_layer():
    vocab, hidden, n_q, n_kv, mlp, seq = 256, 64, 4, 2, 128, 16
    g = G("tiny_two_layer", "A tiny two-layer Llama-style language model: token ids -> embedding -> 2 decoder layers -> RMSNorm -> logits over 256 tokens.")
    ids = g.input("input_ids", [1, seq], dtype="i64")
    emb = g.normal("embed_tokens", [vocab, hidden], 0.5)
    x = g.op("Gather", [emb, ids], name="embed", axis=0)
    cos, sin = rope_tables(g, seq, hidden // n_q, 10000.0)
    mask = causal_mask(g, seq)
    for i in range(2):
        x = llama_layer(g, x, 1, seq, hidden, n_q, n_kv, mlp, cos, sin, mask, f"layer{i}", std=0.05)
    x = rmsnorm(g, x, hidden, "final_norm")
    head = g.normal("lm_head", [hidden, vocab], 0.05)
    g.outputs = [g.op("MatMul", [x, head], out="logits", name="lm_head")]
    g.write()


def llama3_8b(seq):
    """The full Llama-3.1-8B at sequence `seq`: token embedding, 32 decoder layers, final
    RMSNorm and the LM head over the 128256-token vocabulary. For planning and timing only
    (8B seeded weights)."""
    vocab, hidden, n_q, n_kv, mlp, layers = 128256, 4096, 32, 8, 14336, 32
    g = G(f"llama3_8b_seq{seq}", f"The full Llama-3.1-8B (embedding, 32 decoder layers at hidden 4096, 32/8 heads, MLP 14336, final norm, LM head over 128256 tokens) at sequence {seq}, fp16: for planning and timing only.")
    ids = g.input("input_ids", [1, seq], dtype="i64")
    # The 1 GB table is held as 32 column shards (as tensor-parallel embeddings are): a
    # lookup may read any row, and a core addresses at most 256 MiB of one tensor and
    # loads at most 2^24 elements in one tile.
    shards = 32
    parts = []
    for k in range(shards):
        emb = g.normal(f"embed_tokens.{k}", [vocab, hidden // shards], 0.02)
        parts.append(g.op("Gather", [emb, ids], name=f"embed.{k}", axis=0))
    x = g.op("Concat", parts, name="embed", axis=-1)
    cos, sin = rope_tables(g, seq, hidden // n_q, 500000.0)
    for i in range(layers):
        x = llama_layer(g, x, 1, seq, hidden, n_q, n_kv, mlp, cos, sin, None, f"layer{i}")
    x = rmsnorm(g, x, hidden, "final_norm")
    head = g.normal("lm_head", [hidden, vocab], 0.02)
    g.outputs = [g.op("MatMul", [x, head], out="logits", name="lm_head")]
    g.write(subdir="full")


def mamba2_mixer(g, x, seq, d_model, p, n_heads=4, d_state=16, k=4, expand=2):
    """Mamba-2: in_proj -> causal depthwise conv -> SSD selective scan (one chunk, as the
    decomposed pattern) -> gated RMSNorm -> out_proj."""
    d_inner = expand * d_model
    hp = d_inner // n_heads
    conv_dim = d_inner + 2 * d_state
    w_in = g.normal(f"{p}.in_proj", [d_model, 2 * d_inner + 2 * d_state + n_heads], 0.05)
    zxbcdt = g.op("MatMul", [x, w_in], name=f"{p}.in_proj")
    z, xbc, dt = g.op("Split", [zxbcdt], name=f"{p}.split_in", n_out=3, axis=-1,
                      split=[d_inner, conv_dim, n_heads])
    # causal depthwise conv over time, then SiLU
    xbc_t = g.op("Transpose", [xbc], name=f"{p}.conv_in", perm=[0, 2, 1])
    cw = g.normal(f"{p}.conv.weight", [conv_dim, 1, k], 0.3)
    cb = g.uniform(f"{p}.conv.bias", [conv_dim], -0.1, 0.1)
    conv = g.op("Conv", [xbc_t, cw, cb], name=f"{p}.conv1d", group=conv_dim, pads=[k - 1, 0])
    xbc = g.op("Silu", [g.op("Transpose", [conv], name=f"{p}.conv_out", perm=[0, 2, 1])], name=f"{p}.conv_act")
    xs, bm, cm = g.op("Split", [xbc], name=f"{p}.split_xbc", n_out=3, axis=-1, split=[d_inner, d_state, d_state])
    # dt = softplus(dt + bias); A = -exp(A_log); a = dt * A
    dt_bias = g.uniform(f"{p}.dt_bias", [n_heads], -4.0, -2.0)
    dt = g.op("Softplus", [g.op("Add", [dt, dt_bias], name=f"{p}.dt_add_bias")], name=f"{p}.dt_softplus")
    a_log = g.uniform(f"{p}.A_log", [n_heads], 0.0, 1.5)
    a = g.op("Neg", [g.op("Exp", [a_log], name=f"{p}.A_exp")], name=f"{p}.A")
    da = g.op("Transpose", [g.op("Mul", [dt, a], name=f"{p}.dtA")], name=f"{p}.dtA_t", perm=[0, 2, 1])  # [1, H, L]
    # segment sums: L[i, j] = exp(cs[i] - cs[j]) for j <= i, else 0
    cs = g.op("CumSum", [da], name=f"{p}.cumsum", axis=-1)
    seg = g.op("Sub", [g.op("Unsqueeze", [cs], name=f"{p}.cs_i", axes=[3]),
                       g.op("Unsqueeze", [cs], name=f"{p}.cs_j", axes=[2])], name=f"{p}.segsum")
    ones = g.init(f"{p}.ones", [seq, seq], init="ones")
    tri = g.op("Cast", [g.op("Trilu", [ones], name=f"{p}.lower", upper=0)], name=f"{p}.causal", to="bool")
    ninf = g.init(f"{p}.neg_inf", [], init={"constant": "-inf"})
    lmat = g.op("Exp", [g.op("Where", [tri, seg, ninf], name=f"{p}.mask_segsum")], name=f"{p}.decay")
    # scores C_i . B_j, weighted by the decay
    cb_ = g.op("MatMul", [cm, g.op("Transpose", [bm], name=f"{p}.B_t", perm=[0, 2, 1])], name=f"{p}.CB")
    m = g.op("Mul", [lmat, g.op("Unsqueeze", [cb_], name=f"{p}.CB_heads", axes=[1])], name=f"{p}.scores")
    xh = heads(g, xs, 1, seq, n_heads, hp, f"{p}.x")  # [1, H, L, P]
    dth = g.op("Unsqueeze", [g.op("Transpose", [dt], name=f"{p}.dt_t", perm=[0, 2, 1])], name=f"{p}.dt_heads", axes=[3])
    y = g.op("MatMul", [m, g.op("Mul", [xh, dth], name=f"{p}.x_dt")], name=f"{p}.ssd")
    d_skip = g.uniform(f"{p}.D", [n_heads, 1, 1], 0.5, 1.5)
    y = g.op("Add", [y, g.op("Mul", [xh, d_skip], name=f"{p}.skip")], name=f"{p}.add_skip")
    y = merge_heads(g, y, 1, seq, d_inner, f"{p}.y")
    # gated RMSNorm, out_proj
    y = g.op("Mul", [y, g.op("Silu", [z], name=f"{p}.gate_silu")], name=f"{p}.gate")
    y = rmsnorm(g, y, d_inner, f"{p}.gated_norm")
    w_out = g.normal(f"{p}.out_proj", [d_inner, d_model], 0.05)
    return g.op("MatMul", [y, w_out], name=f"{p}.out_proj")


def attention_op_layer(g, x, seq, d_model, n_q, n_kv, p):
    hd = d_model // n_q
    wq = g.normal(f"{p}.wq", [d_model, n_q * hd], 0.05)
    wk = g.normal(f"{p}.wk", [d_model, n_kv * hd], 0.05)
    wv = g.normal(f"{p}.wv", [d_model, n_kv * hd], 0.05)
    wo = g.normal(f"{p}.wo", [n_q * hd, d_model], 0.05)
    q = heads(g, g.op("MatMul", [x, wq], name=f"{p}.q_proj"), 1, seq, n_q, hd, f"{p}.q")
    k = heads(g, g.op("MatMul", [x, wk], name=f"{p}.k_proj"), 1, seq, n_kv, hd, f"{p}.k")
    v = heads(g, g.op("MatMul", [x, wv], name=f"{p}.v_proj"), 1, seq, n_kv, hd, f"{p}.v")
    ctx = g.op("Attention", [q, k, v], name=f"{p}.attention", is_causal=1)
    return g.op("MatMul", [merge_heads(g, ctx, 1, seq, n_q * hd, p), wo], name=f"{p}.o_proj")


def moe(g, x, seq, d_model, n_exp, top_k, ffn, p):
    """Top-k routed mixture of SwiGLU experts, computed densely and combined with the
    router's gates (zero for experts a token was not routed to)."""
    wr = g.normal(f"{p}.router", [d_model, n_exp], 0.2)
    logits = g.op("MatMul", [x, wr], name=f"{p}.router")
    vals, idx = g.op("TopK", [logits], name=f"{p}.topk", n_out=2, k=top_k, axis=-1)
    w = g.op("Softmax", [vals], name=f"{p}.topk_softmax", axis=-1)  # [1, L, k]
    ids = g.init(f"{p}.expert_ids", [n_exp], data=[float(i) for i in range(n_exp)], dtype="i64")
    onehot = g.op("Equal", [g.op("Unsqueeze", [idx], name=f"{p}.idx", axes=[3]), ids], name=f"{p}.onehot")
    onehot = g.op("Cast", [onehot], name=f"{p}.onehot_f", to=g.dtype)  # [1, L, k, E]
    gates = g.op("ReduceSum", [g.op("Mul", [onehot, g.op("Unsqueeze", [w], name=f"{p}.w", axes=[3])], name=f"{p}.weighted")],
                 name=f"{p}.gates", axes=[2], keepdims=0)  # [1, L, E]
    xe = g.op("Unsqueeze", [x], name=f"{p}.x", axes=[1])  # [1, 1, L, D]
    wg = g.normal(f"{p}.experts.w_gate", [n_exp, d_model, ffn], 0.05)
    wu = g.normal(f"{p}.experts.w_up", [n_exp, d_model, ffn], 0.05)
    wd = g.normal(f"{p}.experts.w_down", [n_exp, ffn, d_model], 0.05)
    gate = g.op("MatMul", [xe, wg], name=f"{p}.experts.gate_proj")  # [1, E, L, F]
    up = g.op("MatMul", [xe, wu], name=f"{p}.experts.up_proj")
    act = g.op("Mul", [g.op("Silu", [gate], name=f"{p}.experts.silu"), up], name=f"{p}.experts.gate_mul_up")
    out = g.op("MatMul", [act, wd], name=f"{p}.experts.down_proj")  # [1, E, L, D]
    gt = g.op("Unsqueeze", [g.op("Transpose", [gates], name=f"{p}.gates_t", perm=[0, 2, 1])], name=f"{p}.gates_e", axes=[3])
    return g.op("ReduceSum", [g.op("Mul", [out, gt], name=f"{p}.combine")], name=f"{p}.sum_experts", axes=[1], keepdims=0)


def granite_hybrid():
    seq, d = 32, 128
    g = G("granite_hybrid_block", "A Granite-4-hybrid-style block in fp16: a Mamba-2 layer (causal depthwise conv, selective scan), a GQA attention layer and a top-2 mixture-of-4-experts MLP, each pre-normed with a residual.")
    x = g.input("hidden_states", [1, seq, d])
    h = mamba2_mixer(g, rmsnorm(g, x, d, "mamba.norm"), seq, d, "mamba")
    x = g.op("Add", [x, h], name="mamba.residual")
    h = attention_op_layer(g, rmsnorm(g, x, d, "attn.norm"), seq, d, 4, 2, "attn")
    x = g.op("Add", [x, h], name="attn.residual")
    h = moe(g, rmsnorm(g, x, d, "moe.norm"), seq, d, 4, 2, 64, "moe")
    g.outputs = [g.op("Add", [x, h], out="y", name="moe.residual")]
    g.write()


# Granite-4-hybrid stack dimensions. Provenance: the dimensions the playground's issue 13
# asks for (hidden 2048, 40 layers, attention at layers 5, 15, 25 and 35 and Mamba-2
# elsewhere, 32 query / 8 key-value heads, Mamba-2 with 64 heads of dim 64, state 128,
# conv kernel 4, expand 2, MLP intermediate 8192); not read from a published model config.
GRANITE4 = dict(hidden=2048, layers=40, attention_at=(5, 15, 25, 35), n_q=32, n_kv=8,
                mamba_heads=64, d_state=128, conv=4, expand=2, mlp=8192)


def granite4_hybrid(seq):
    """The full-size Granite-4-hybrid layer stack (no embedding or LM head): each layer a
    pre-normed mixer (Mamba-2, or causal GQA attention at GRANITE4['attention_at']) and a
    pre-normed SwiGLU MLP, each with a residual. For planning and timing only."""
    c = GRANITE4
    d = c["hidden"]
    g = G(f"granite4_hybrid_seq{seq}",
          f"A Granite-4-hybrid layer stack at full size, sequence {seq}, fp16: {c['layers']} layers "
          f"of hidden {d}, causal GQA attention ({c['n_q']}/{c['n_kv']} heads) at layers "
          f"{', '.join(map(str, c['attention_at']))} and Mamba-2 ({c['mamba_heads']} heads of dim "
          f"{c['expand'] * d // c['mamba_heads']}, state {c['d_state']}, conv {c['conv']}) elsewhere, "
          f"each followed by a SwiGLU MLP of {c['mlp']}. Dimensions as issue 13 states them, not "
          "read from a published config; no embedding or LM head. For planning and timing only.")
    x = g.input("hidden_states", [1, seq, d])
    for i in range(c["layers"]):
        p = f"layer{i}"
        h = rmsnorm(g, x, d, f"{p}.mixer_norm")
        if i in c["attention_at"]:
            h = attention_op_layer(g, h, seq, d, c["n_q"], c["n_kv"], f"{p}.attn")
        else:
            h = mamba2_mixer(g, h, seq, d, f"{p}.mamba", n_heads=c["mamba_heads"],
                             d_state=c["d_state"], k=c["conv"], expand=c["expand"])
        x = g.op("Add", [x, h], name=f"{p}.mixer_residual")
        x = swiglu(g, x, d, c["mlp"], f"{p}.mlp", 0.02, True)
    x = rmsnorm(g, x, d, "final_norm")
    g.outputs = [x]
    g.write(subdir="full")


def main():
    matmul()
    softmax()
    layernorm()
    rmsnorm_decomposed()
    gelu_mlp()
    swiglu_mlp()
    gqa_attention()
    gqa_attention_op()
    llama("llama_decoder_layer", "A Llama-3.1-style decoder layer at small dims (hidden 256, 8 query / 2 key-value heads, MLP 768, sequence 64): RMSNorm, RoPE, causal GQA attention, SwiGLU; fp16.",
          256, 8, 2, 768, 64)
    llama("llama3_8b_layer", "One Llama 3.1 8B decoder layer at its real dims (hidden 4096, 32/8 heads, MLP 14336), sequence 128, fp16: for planning and timing only (218M seeded weights; the reference evaluator refuses it).",
          4096, 32, 8, 14336, 128)
    tiny_two_layer()
    granite_hybrid()
    paged_decode()
    chunked_prefill()
    mixed_batch()
    serving_8b()
    for seq in (128, 2048, 8192):
        llama3_8b(seq)
    for seq in (64, 128):
        granite4_hybrid(seq)


if __name__ == "__main__":
    main()
