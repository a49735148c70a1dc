#!/usr/bin/env python3
"""Writes the graphs of the roofline sweep (`bench/roofline_sweep.sh`) into a directory:
the Llama-3.1-8B-dims decoder layer at several sequence lengths and a 4096^3 fp16 matmul.
They reuse the gallery's generator, so the layer is the gallery's `llama3_8b_layer` at
other lengths. Usage: `python3 bench/roofline_graphs.py OUT_DIR [SEQ...]`.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "graphs"))
import make_gallery as mg  # noqa: E402


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "roofline_graphs")
    seqs = [int(s) for s in sys.argv[2:]] or [1, 32, 128, 512]
    os.makedirs(out, exist_ok=True)
    # The generator writes under its own directory; point it at ours.
    mg.HERE = out
    for seq in seqs:
        mg.llama(f"llama3_8b_layer_seq{seq}",
                 f"One Llama 3.1 8B decoder layer at its real dims, sequence {seq}, fp16.",
                 4096, 32, 8, 14336, seq)
    g = mg.G("matmul_4096", "Y = A @ W, [4096, 4096] @ [4096, 4096] fp16.")
    a = g.input("A", [4096, 4096])
    w = g.uniform("W", [4096, 4096], -0.1, 0.1)
    g.outputs = [g.op("MatMul", [a, w], out="Y")]
    g.write()


if __name__ == "__main__":
    main()
