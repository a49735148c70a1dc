#!/usr/bin/env python3
"""Writes the inputs and expected outputs of the KTIR run corpus (tests/ktir/run).

Every program's inputs come from numpy's default_rng with the seed given here and are
written as NAME.INPUT.npy beside the program; the expected outputs are computed from those
inputs with numpy and written as NAME.OUTPUT.npy. f32 results are computed in float64 and
rounded once; f16 results are computed step by step in float16, as the program's types say.

Run from anywhere: python make_expected.py
"""

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def save(program, name, array):
    np.save(os.path.join(HERE, f"{program}.{name}.npy"), array)


def uniform(rng, shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def elementwise():
    rng = np.random.default_rng(101)
    x = uniform(rng, (32, 64), dtype=np.float16)
    y = uniform(rng, (32, 64), dtype=np.float16)
    z = np.exp(x) * y + x  # float16 at every step
    return {"x": x, "y": y}, {"z": z.astype(np.float16)}


def reductions():
    rng = np.random.default_rng(102)
    x = uniform(rng, (32, 64))
    x64 = x.astype(np.float64)
    return {"x": x}, {
        "s": x64.sum(axis=1).astype(np.float32),
        "m": x.max(axis=1),
    }


def matmul():
    rng = np.random.default_rng(103)
    a = uniform(rng, (32, 48))
    b = uniform(rng, (48, 16))
    c = a.astype(np.float64) @ b.astype(np.float64)
    return {"a": a, "b": b}, {"c": c.astype(np.float32)}


def produce_document_spelling():
    rng = np.random.default_rng(104)
    x = uniform(rng, (2, 32), dtype=np.float16)
    y = np.repeat(x, 4, axis=0) * np.float16(3.0)
    return {"x": x}, {"y": y.astype(np.float16)}


def produce_dialect_spelling():
    rng = np.random.default_rng(105)
    x = uniform(rng, (16, 32))
    y = x.astype(np.float64).sum(axis=0, keepdims=True)
    return {"x": x}, {"y": y.astype(np.float32)}


def reduce_collapse():
    rng = np.random.default_rng(106)
    x = uniform(rng, (4, 16))
    return {"x": x}, {"y": x.astype(np.float64).sum(axis=0).astype(np.float32)}


def reduce_op_groups():
    rng = np.random.default_rng(120)
    x = uniform(rng, (8, 32))
    return {"x": x}, {"m": x.reshape(2, 4, 32).max(axis=1)}


def view_ssa_sizes():
    rng = np.random.default_rng(107)
    x = uniform(rng, (24, 16))
    return {"x": x}, {"y": (x + np.float32(1.0)).astype(np.float32)}


def linalg_index():
    rng = np.random.default_rng(108)
    x = uniform(rng, (16, 16))
    i, j = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    w = x.astype(np.float64) + (i * 16 + j) * (1.0 / 256.0)
    y = np.where(j <= i, w, -100.0)
    return {"x": x}, {"y": y.astype(np.float32)}


def paged_copy():
    rng = np.random.default_rng(109)
    cache = uniform(rng, (16, 2, 8, 16), dtype=np.float16)
    table = rng.permutation(16)[:8].reshape(2, 4).astype(np.int32)
    out = np.empty((2, 2, 32, 16), dtype=np.float16)
    for s in range(2):
        for p in range(32):
            out[s, :, p, :] = cache[table[s, p // 8], :, p % 8, :]
    return {"cache": cache, "table": table}, {"out": out}


def softmax():
    rng = np.random.default_rng(110)
    x = uniform(rng, (16, 64), -4.0, 4.0)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return {"x": x}, {"y": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}


def layernorm():
    rng = np.random.default_rng(111)
    x = uniform(rng, (8, 32), -2.0, 2.0)
    w = uniform(rng, (32,))
    b = uniform(rng, (32,))
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=1, keepdims=True)
    y = (x64 - mean) / np.sqrt(var + 1e-5) * w + b
    return {"x": x, "w": w, "b": b}, {"y": y.astype(np.float32)}


def rope():
    rng = np.random.default_rng(112)
    x = uniform(rng, (8, 32))
    angle = rng.uniform(0.0, 2.0 * np.pi, size=(8, 16))
    cos = np.cos(angle).astype(np.float32)
    sin = np.sin(angle).astype(np.float32)
    x1 = x[:, :16].astype(np.float64)
    x2 = x[:, 16:].astype(np.float64)
    y = np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=1)
    return {"x": x, "cos": cos, "sin": sin}, {"y": y.astype(np.float32)}


def tile_id_dim():
    rng = np.random.default_rng(113)
    x = uniform(rng, (8, 16))
    y = x.astype(np.float64).copy()
    for gx in range(2):
        for gy in range(2):
            y[4 * gy : 4 * gy + 4, 8 * gx : 8 * gx + 8] += 10 * gx + gy
    return {"x": x}, {"y": y.astype(np.float32)}


def rank0_broadcast():
    rng = np.random.default_rng(114)
    s = uniform(rng, (1, 1), dtype=np.float16)
    return {"s": s}, {"y": np.full((4, 32), s[0, 0], dtype=np.float16)}


def dense_views():
    rng = np.random.default_rng(115)
    x = uniform(rng, (24, 16))
    y = x * np.float32(2.0) - np.float32(0.5)  # both steps exact or rounded once in f32
    return {"x": x}, {"y": y.astype(np.float32)}


def transpose_order():
    rng = np.random.default_rng(116)
    a = uniform(rng, (64, 32))
    t = np.ascontiguousarray(a.T)
    return {"a": a}, {"b": t, "c": t.copy()}


def pointer_offsets():
    rng = np.random.default_rng(117)
    src = uniform(rng, (256,))
    return {"src": src}, {"dst": (src * np.float32(3.0)).astype(np.float32)}


PROGRAMS = [
    elementwise,
    reductions,
    matmul,
    produce_document_spelling,
    produce_dialect_spelling,
    reduce_collapse,
    reduce_op_groups,
    view_ssa_sizes,
    linalg_index,
    paged_copy,
    softmax,
    layernorm,
    rope,
    tile_id_dim,
    rank0_broadcast,
    dense_views,
    transpose_order,
    pointer_offsets,
]


def main():
    for make in PROGRAMS:
        inputs, outputs = make()
        for name, array in {**inputs, **outputs}.items():
            save(make.__name__, name, array)


if __name__ == "__main__":
    main()
