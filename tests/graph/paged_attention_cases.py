#!/usr/bin/env python3
"""Writes the PagedAttention per-op cases of tests/graph/ops/ with their expected outputs.

PagedAttention is not an ONNX op, so onnxruntime cannot give its outputs. This script
computes them independently of the Rust evaluator, in plain Python (no numpy): it draws
the inputs with the same SplitMix64 stream as graph::random_inputs, writes the new keys
and values into their pages, then for every new token runs softmax attention over its
sequence's tokens read page by page through the block table. Rerun after editing:
`python3 tests/graph/paged_attention_cases.py`.
"""
import math
import os

import case_file
from case_file import SplitMix64, f32

HERE = os.path.dirname(os.path.abspath(__file__))
def case(name, desc, b, q, hq, hkv, d, nb, bs, tables, lens):
    """`q`: new tokens per sequence, or a list of them for a packed batch (the query
    `[tokens, heads, dim]` with a `query_lens` input)."""
    mb = len(tables[0])
    packed = isinstance(q, list)
    qlens = q if packed else [q] * b
    first = [sum(qlens[:i]) for i in range(b)]
    rows = sum(qlens)
    lead = [rows] if packed else [b, q]
    inputs = [
        ("query", lead + [hq, d]),
        ("key", lead + [hkv, d]),
        ("value", lead + [hkv, d]),
        ("key_cache", [nb, bs, hkv, d]),
        ("value_cache", [nb, bs, hkv, d]),
    ]
    schedule = [
        {"name": "block_tables", "dtype": "i64", "shape": [b, mb],
         "data": [p for row in tables for p in row]},
        {"name": "seq_lens", "dtype": "i64", "shape": [b], "data": lens},
    ]
    if packed:
        schedule.append({"name": "query_lens", "dtype": "i64", "shape": [b], "data": qlens})
    graph = {
        "format": "spyre-graph",
        "version": 1,
        "name": name,
        "description": desc,
        "inputs": [{"name": n, "dtype": "f32", "shape": s} for n, s in inputs],
        "initializers": schedule,
        "nodes": [{"name": "paged", "op": "PagedAttention",
                   "inputs": [n for n, _ in inputs] + [t["name"] for t in schedule],
                   "outputs": ["y", "key_cache_out", "value_cache_out"]}],
        "outputs": ["y", "key_cache_out", "value_cache_out"],
    }
    rng = SplitMix64(case_file.SEED)
    vals = {}
    for n, s in inputs:
        vals[n] = [f32(-1.0 + 2.0 * rng.next_f64()) for _ in range(math.prod(s))]
    kc, vc = list(vals["key_cache"]), list(vals["value_cache"])

    def slot(bi, p):
        return tables[bi][p // bs] * bs + p % bs

    for bi in range(b):
        for t in range(qlens[bi]):
            s = slot(bi, lens[bi] - qlens[bi] + t)
            for h in range(hkv):
                for e in range(d):
                    src = ((first[bi] + t) * hkv + h) * d + e
                    kc[(s * hkv + h) * d + e] = vals["key"][src]
                    vc[(s * hkv + h) * d + e] = vals["value"][src]
    scale = 1.0 / math.sqrt(d)
    y = [0.0] * (rows * hq * d)
    group = hq // hkv
    for bi in range(b):
        for t in range(qlens[bi]):
            visible = lens[bi] - qlens[bi] + t + 1
            for h in range(hq):
                g = h // group
                qr = ((first[bi] + t) * hq + h) * d
                scores = []
                for p in range(visible):
                    kr = (slot(bi, p) * hkv + g) * d
                    scores.append(scale * sum(vals["query"][qr + e] * kc[kr + e] for e in range(d)))
                m = max(scores)
                w = [math.exp(x - m) for x in scores]
                z = sum(w)
                for p in range(visible):
                    vr = (slot(bi, p) * hkv + g) * d
                    for e in range(d):
                        y[qr + e] += w[p] / z * vc[vr + e]
    outs = [("y", lead + [hq, d], y), ("key_cache_out", [nb, bs, hkv, d], kc),
            ("value_cache_out", [nb, bs, hkv, d], vc)]
    expected = {
        "producer": "tests/graph/paged_attention_cases.py (plain Python, f64)",
        "outputs": [{"name": n, "dtype": "f32", "shape": s, "data": [f32(v) for v in data]}
                    for n, s, data in outs],
    }
    case_file.write(os.path.join(HERE, "ops", name + ".json"), graph, expected)


case("paged_attention_chunked_prefill",
     "PagedAttention: 3 sequences of 5, 2 and 9 tokens, 2 new each, GQA 2:1, pages of 4 "
     "scattered through the cache (unused table entries may name pages others use)",
     b=3, q=2, hq=2, hkv=1, d=16, nb=8, bs=4,
     tables=[[3, 0, 7], [5, 1, 2], [6, 4, 1]], lens=[5, 2, 9])
case("paged_attention_decode",
     "PagedAttention decode: 4 sequences of 1, 7, 12 and 3 tokens, one new each, pages of 4",
     b=4, q=1, hq=4, hkv=2, d=16, nb=10, bs=4,
     tables=[[9, 0, 0], [2, 7, 0], [1, 5, 3], [8, 0, 0]], lens=[1, 7, 12, 3])
case("paged_attention_mixed_batch",
     "PagedAttention over a packed mixed batch: 4 sequences of 9, 5, 14 and 7 tokens bringing "
     "1, 5, 1 and 3 new tokens (two decode, a first chunk and a later chunk), GQA 2:1, pages of 4",
     b=4, q=[1, 5, 1, 3], hq=4, hkv=2, d=16, nb=12, bs=4,
     tables=[[11, 2, 5, 0], [7, 1, 0, 0], [3, 9, 0, 6], [10, 4, 0, 0]], lens=[9, 5, 14, 7])
