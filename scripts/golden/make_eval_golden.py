#!/usr/bin/env python3
"""Writes tests/golden/eval_gpt2.json: the `geotrain eval` loss of tests/golden/models/gpt2,
computed by Hugging Face transformers.

The golden gpt2 model has a 256-token vocabulary, so the text is tokenized by a byte-level BPE
tokenizer without merges (GPT-2's first 256 vocabulary entries, one per byte), written to
tests/golden/tokenizers/gpt2_bytes/ as vocab.json + merges.txt and read by both sides. The
convention is `geotrain eval`'s (cli/README.md): the whole file is one text with no special
tokens, cut into consecutive blocks of seq_length tokens (remainder dropped), loss = mean
next-token cross-entropy over all seq_length - 1 predictions of every block.

    /tmp/stagesvenv/bin/python scripts/golden/make_eval_golden.py
"""
import json
import math
import pathlib

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2LMHeadModel

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL_DIR = "tests/golden/models/gpt2"
TOKENIZER_DIR = "tests/golden/tokenizers/gpt2_bytes"
DATA_PATH = "tests/golden/eval_text.txt"
SEQ_LENGTH = 24
BATCH_SIZE = 3

TEXT = (
    "From fairest creatures we desire increase,\n"
    "That thereby beauty's rose might never die,\n"
    "But as the riper should by time decease,\n"
    "His tender heir might bear his memory:\n"
    "But thou contracted to thine own bright eyes,\n"
    "Feed'st thy light's flame with self-substantial fuel,\n"
    "Making a famine where abundance lies,\n"
    "Thy self thy foe, to thy sweet self too cruel: caf\u00e9 \u00fcber na\u00efve \u2014 \U0001f600\n"
)


def write_byte_tokenizer():
    full_vocab = json.loads((ROOT / "examples/tokenizers/gpt2/vocab.json").read_text("utf-8"))
    vocab = {token: i for token, i in full_vocab.items() if i < 256}
    assert len(vocab) == 256
    out = ROOT / TOKENIZER_DIR
    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), "utf-8")
    (out / "merges.txt").write_text("#version: 0.2\n", "utf-8")
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tokenizer


def main():
    tokenizer = write_byte_tokenizer()
    (ROOT / DATA_PATH).write_bytes(TEXT.encode("utf-8"))
    ids = tokenizer.encode(TEXT).ids
    assert len(ids) == len(TEXT.encode("utf-8"))  # one token per byte
    blocks = len(ids) // SEQ_LENGTH
    input_ids = torch.tensor(ids[: blocks * SEQ_LENGTH]).view(blocks, SEQ_LENGTH)

    model = GPT2LMHeadModel.from_pretrained(ROOT / MODEL_DIR, dtype=torch.float64).eval()
    with torch.no_grad():
        output = model(input_ids=input_ids, labels=input_ids)
        # transformers' own loss upcasts only to float32; the reference is the float64 mean
        # over all blocks * (SEQ_LENGTH - 1) predictions, from the float64 logits.
        vocab = output.logits.shape[-1]
        loss = torch.nn.functional.cross_entropy(
            output.logits[:, :-1].reshape(-1, vocab), input_ids[:, 1:].reshape(-1)).item()
        assert abs(loss - output.loss.item()) < 1e-5 * loss
    golden = {
        "model": MODEL_DIR,
        "tokenizer": TOKENIZER_DIR,
        "data": DATA_PATH,
        "seq_length": SEQ_LENGTH,
        "batch_size": BATCH_SIZE,
        "loss": loss,
        "perplexity": math.exp(loss),
        "tokens": blocks * (SEQ_LENGTH - 1),
        "first_ids": ids[:16],
        "made_by": "scripts/golden/make_eval_golden.py (transformers, float64)",
    }
    (ROOT / "tests/golden/eval_gpt2.json").write_text(json.dumps(golden, indent=2) + "\n")
    print(json.dumps(golden))


if __name__ == "__main__":
    main()
