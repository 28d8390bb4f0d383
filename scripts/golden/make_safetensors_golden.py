#!/usr/bin/env python3
"""Writes tests/golden/reference.safetensors with the Hugging Face safetensors library.

The C++ reader is tested on a file written by the reference writer (layout, alignment, metadata),
not only on files it wrote itself. numpy has no bfloat16, so BF16 is covered by the C++ round-trip
tests; the I64 tensor checks that a header naming a non-float dtype still opens.

  /tmp/tokvenv/bin/pip install safetensors==0.8.0 numpy
  /tmp/tokvenv/bin/python scripts/golden/make_safetensors_golden.py
"""

import os

import numpy as np
from safetensors.numpy import save_file

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "tests", "golden", "reference.safetensors")


def main():
    tensors = {
        # Values chosen exactly representable in their dtype, so the test compares exactly.
        "transformer.wte.weight": (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) / 4,
        "transformer.h.0.ln_1.bias": np.array([0.5, -1.25, 3.0], dtype=np.float16),
        "step": np.array([7], dtype=np.int64),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    save_file(tensors, OUT, metadata={"format": "pt", "source": "make_safetensors_golden.py"})
    print(f"wrote {os.path.relpath(OUT, ROOT)} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
