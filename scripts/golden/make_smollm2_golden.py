#!/usr/bin/env python3
"""Reference logits and eval loss of SmolLM2-135M-Instruct loaded from its GGUF by transformers.

    scripts/install-smollm2.sh
    python scripts/golden/make_smollm2_golden.py /opt/geotrain/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf \
        tests/golden/models/smollm2

transformers (scripts/golden/requirements.txt: gguf + accelerate) dequantizes the GGUF and
un-permutes q/k itself, independently of geotrain's ImportGgufModel. Writes:
  reference.safetensors  input_ids I64 [1, S] (TEXT with the GGUF tokenizer, no special tokens),
                         logits_head F64 [1, S, 256] (logits of the first 256 vocabulary entries),
                         logsumexp F64 [1, S] (over the whole vocabulary), argmax I64 [1, S];
                         all from the float64 model with make_model_golden.py's float64
                         RMSNorm/rotary (the full logits would be 6 MB);
  eval.json              `geotrain eval` on tests/golden/eval_text.txt with seq_length 24: loss,
                         perplexity and token count, float32 and float64, with the eval convention
                         (whole file as one text, no special tokens, consecutive blocks, remainder
                         dropped, mean next-token cross-entropy over all N-1 predictions).
"""
import json
import math
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_model_golden import widened_float32_islands  # noqa: E402  (float64 all the way)

TEXT = "The quick brown fox jumps over the lazy dog. In 2024, 366 days passed."
EVAL_TEXT = "tests/golden/eval_text.txt"
SEQ_LENGTH = 24
HEAD = 256


def eval_loss(model, ids, seq_length):
    blocks = len(ids) // seq_length
    batch = torch.tensor(ids[: blocks * seq_length], dtype=torch.int64).reshape(blocks, seq_length)
    with torch.no_grad():
        logits = model(input_ids=batch).logits
    loss = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
    return float(loss), blocks * seq_length


def main():
    gguf_path, out_dir = sys.argv[1], sys.argv[2]
    directory, name = gguf_path.rsplit("/", 1)
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.float32)
    model.eval()
    ids = tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    with open(EVAL_TEXT, encoding="utf-8") as f:
        eval_ids = tokenizer(f.read(), add_special_tokens=False)["input_ids"]
    loss32, tokens = eval_loss(model, eval_ids, SEQ_LENGTH)
    model = model.double()
    input_ids = torch.tensor([ids], dtype=torch.int64)
    # transformers keeps RMSNorm statistics and rotary angles in float32 even in a float64 model;
    # geotrain's float64 stages compute them in float64, as make_model_golden.py's goldens do.
    with widened_float32_islands():
        loss64, _ = eval_loss(model, eval_ids, SEQ_LENGTH)
        with torch.no_grad():
            logits = model(input_ids=input_ids).logits
    os.makedirs(out_dir, exist_ok=True)
    save_file({
        "input_ids": input_ids,
        "logits_head": logits[..., :HEAD].contiguous(),
        "logsumexp": torch.logsumexp(logits, dim=-1).contiguous(),
        "argmax": logits.argmax(dim=-1).contiguous(),
    }, os.path.join(out_dir, "reference.safetensors"))
    with open(os.path.join(out_dir, "eval.json"), "w") as f:
        json.dump({"gguf": name, "text": TEXT, "data": EVAL_TEXT, "seq_length": SEQ_LENGTH,
                   "tokens": tokens, "first_ids": eval_ids[:16],
                   "loss_float32": loss32, "perplexity_float32": math.exp(loss32),
                   "loss_float64": loss64, "perplexity_float64": math.exp(loss64)}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
