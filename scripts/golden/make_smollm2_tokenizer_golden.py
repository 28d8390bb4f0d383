#!/usr/bin/env python3
"""Reference token ids of the SmolLM2 tokenizer (pre_tokenizer Sequence[Digits, ByteLevel]).

    # tokenizer.json from geotrain's import of the GGUF (`geotrain model import`, ImportGgufModel)
    python scripts/golden/make_smollm2_tokenizer_golden.py IMPORTED/tokenizer.json \
        tests/golden/models/smollm2/tokenizer_golden.json \
        [--gguf /opt/geotrain/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf]

Ids come from Hugging Face tokenizers (Tokenizer.from_file, no special tokens added; added
tokens in the text are matched). With --gguf they are also checked against transformers'
own GGUF tokenizer conversion, independent of geotrain's import (needs torch and gguf, which
/tmp/stagesvenv lacked when the checked-in file was made; it was made without --gguf). The test
(tests/models/smollm2_tokenizer_golden_test.cc) imports the GGUF again and compares.
"""
import argparse
import json

from tokenizers import Tokenizer

TEXTS = [
    "Hello world",
    "0",
    "1234567890",
    "In 2024, 366 days passed.",
    "2024-11-22",
    "22/11/2024 at 13:45:07",
    "Price: $1,299.99 (was €1.499,00)",
    "£5 or ¥500 or ₹1,00,000",
    "3.14159e-10",
    "0x1F 0b1010 0o777",
    "v1.2.3-rc4",
    "abc123def 456ghi",
    " 42",
    "   7 spaces before",
    "x²+y³=z⁴",
    "½ cup and ¾ tsp",
    "Chapter Ⅻ, item ①",
    "٣٤٥ و ۱۲۳",
    "नमस्ते १२३",
    "𝟙𝟚𝟛 mathematical digits",
    "東京は2024年に",
    "Привет, мир! 100 рублей",
    "Emoji 🎉🎉 and 👍🏽 x2",
    "tab\t1\n2\r\n3",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>",
    "<|endoftext|>12<|endoftext|>",
    "don't 'll 99's",
    "a1b2c3",
    "١٢٣abc٤٥٦",
    "",
    "1,000,000,000",
    "phone +1 (555) 010-9999",
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tokenizer_json")
    parser.add_argument("output")
    parser.add_argument("--gguf")
    args = parser.parse_args()
    tok = Tokenizer.from_file(args.tokenizer_json)
    cases = []
    for text in TEXTS:
        ids = tok.encode(text, add_special_tokens=False).ids
        assert tok.decode(ids, skip_special_tokens=False) == text, text
        cases.append({"text": text, "ids": ids})
    if args.gguf:
        import os
        from transformers import AutoTokenizer

        hf = AutoTokenizer.from_pretrained(os.path.dirname(args.gguf),
                                           gguf_file=os.path.basename(args.gguf))
        for case in cases:
            theirs = hf(case["text"], add_special_tokens=False)["input_ids"]
            if theirs != case["ids"]:
                print("transformers' GGUF tokenizer differs on", repr(case["text"]), theirs)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump({"source": "tokenizers " + __import__("tokenizers").__version__,
                   "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
