#!/usr/bin/env python3
"""Writes the BERT WordPiece tokenizer fixtures and golden ids:

  tests/golden/tokenizers/bert_{uncased,cased}/tokenizer.json, vocab.txt, tokenizer_config.json
  tests/golden/wordpiece_tokenizer.json

No BERT vocabulary can be downloaded here, so two small ones are trained with Hugging Face
`tokenizers` (BertWordPieceTokenizer: BertNormalizer, BertPreTokenizer, WordPiece, the WordPiece
decoder) on the bundled Shakespeare corpus plus multilingual text: "uncased" lowercases and strips
accents, as bert-base-uncased; "cased" does neither, as bert-base-cased. The golden ids are the
library's, for tricky strings and for the bundled validation corpus, checked to agree between
tokenizer.json (tokenizers) and vocab.txt (transformers' AutoTokenizer on vocab.txt +
tokenizer_config.json); the decoded text is
decode(ids, skip_special_tokens=False).

  /tmp/tokvenv/bin/pip install -r scripts/golden/requirements.txt
  /tmp/tokvenv/bin/python scripts/golden/make_wordpiece_golden.py

The library's trainer breaks ties in hash-map order, so training is not reproducible: the
vocabularies are trained only when missing or with --retrain; otherwise the checked-in ones are
read, and re-running with the same package versions reproduces the golden file byte for byte.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

import tokenizers
import transformers
from tokenizers import Tokenizer
from tokenizers.implementations import BertWordPieceTokenizer

from golden_strings import random_strings

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "golden", "tokenizers")
GOLDEN = os.path.join(ROOT, "tests", "golden", "wordpiece_tokenizer.json")
TRAIN_FILE = "examples/data/shakespeare/train.txt"
CORPUS_FILES = ["examples/data/shakespeare/valid.txt"]
VOCAB_SIZE = 1500
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# Text beyond Shakespeare, so the vocabularies have accented, CJK and other scripts' entries.
EXTRA_TRAINING = [
    "Café, naïve résumé, Ångström façade; déjà vu. Über Straße, Mädchen, Österreich.",
    "café naïve résumé ångström façade déjà vu über straße mädchen österreich",
    "Español: ¿Dónde está el niño? ¡Mañana! Português: ação, coração, não.",
    "中文字符测试，你好世界。我们学习语言。日本語のテキスト、カタカナとひらがな。",
    "한국어 텍스트 안녕하세요 세계",
    "Ελληνικά και Русский текст: Привет мир, Γειά σου κόσμε.",
    "العربية עברית हिन्दी ไทย",
    "Numbers 0 1 12 123 3.14 1,000 -- punctuation!!! ??? ... (parens) [brackets] {braces}",
]

CURATED = [
    "Hello world",
    "",
    " ",
    "HELLO World hello",
    "The quick brown fox jumps over the lazy dog.",
    "  leading and trailing spaces  ",
    "tabs\tand\t\ttabs, line one\nline two\r\nwindows",
    "I'm sure you're right, he'll say it's what we'd've done; don't won't can't",
    "do not do not . , ! ? ' ' a ' b",
    "!!!??? ... --- *** ### @@@ $%^&",
    "numbers 0 1 12 123 1234 3.14159 -42 1,000,000",
    "accented: café naïve résumé Ångström façade DÉJÀ VU Über",
    "combining: cafe\u0301 n\u0303 a\u0308\u0304 stacked a\u0300\u0301\u0302\u0303",
    "decomposed vs precomposed: \u00e9 e\u0301 \u1e09 \u01c4",
    "Straße ß ẞ İstanbul ǅ ﬁ Σίσυφος ΣΊΣΥΦΟΣ",
    "中文字符测试，你好世界。",
    "日本語のテキスト、カタカナとひらがな",
    "한국어 텍스트 안녕하세요",
    "CJK extension 𠀀𠀁 and compatibility 豈 更",
    "Ελληνικά και Русский текст",
    "العربية עברית हिन्दी ไทย",
    "math ∑∫√∞ ≤ ≥ ≠ ± × ÷ → currency $100 €50 £30 ¥1000",
    "emoji 😀 👍🏽 👨‍👩‍👧 🇺🇸 ❤️",
    "no-break\u00a0space and\u2009thin and\u3000ideographic and\u2028line",
    "zero\u200bwidth\u200cjoiners\u200d and BOM \ufeff soft\u00adhyphen",
    "replacement \ufffd nul \x00 and private \ue000 and unassigned \u0378 end",
    "controls \x01 \x1b[31m \x7f \x85 \x0b \x0c \x1c\x1d\x1e\x1f end",
    "new punctuation \u2e43 \u061d \u166d and new mark a\u0897b",
    "unknown chars ☃ ⌘ 𓀀 ꙮ",
    "x" * 100,
    "y" * 101,
    "ab" * 50 + " " + "ab" * 51,
    "Supercalifragilisticexpialidocious antidisestablishmentarianism",
    "##ing ## # #a a##b",
    "[CLS] sentence one [SEP] sentence two [SEP]",
    "[CLS][SEP][PAD][MASK][UNK]",
    "[cls] [Sep] [ CLS ] [CLS",
    "before[MASK]after",
    "snake_case camelCase https://example.com/path?query=1&x=y",
    "ROMEO: But, soft! what light through yonder window breaks?",
]

POOLS = [
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    ["the", "The", "THE", "thou", "Romeo", "king", "ing", "##"],
    list("0123456789"),
    list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¡¿«»—…"),
    [" ", " ", " ", "  ", "\n", "\t", "\r\n", "\u00a0", "\u2003", "\u3000", "\x0b", "\x85"],
    list("éèêëàâäçñøåßœæÉÀÇÑİı"),
    ["\u0301", "\u0308", "\u0327", "\u20dd", "\u0897"],
    list("αβγδεΩΣςДЖЯжщю"),
    list("中文字符日本語漢字한국어ひらがなカタカナ"),
    ["😀", "👍🏽", "🇫🇷", "❤️", "🤖"],
    ["\x00", "\x1b", "\x7f", "\u200b", "\ufeff", "\ufffd", "\ue000", "\u0378"],
    ["[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "[cls]"],
]


def train(lowercase, out_dir):
    """Trains and saves one vocabulary's files."""
    tok = BertWordPieceTokenizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                 lowercase=lowercase)
    with open(os.path.join(ROOT, TRAIN_FILE), encoding="utf-8") as f:
        lines = f.read().splitlines()
    tok.train_from_iterator(lines + EXTRA_TRAINING * 20, vocab_size=VOCAB_SIZE,
                            special_tokens=SPECIALS, show_progress=False)
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"), pretty=False)
    tok.save_model(out_dir)  # vocab.txt
    # What transformers writes beside vocab.txt; only the normalization settings matter here.
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": lowercase, "strip_accents": None,
                   "tokenize_chinese_chars": True, "tokenizer_class": "BertTokenizer"}, f,
                  indent=2)
        f.write("\n")


def load(out_dir):
    """The reference tokenizers of one fixture directory: from tokenizer.json and from vocab.txt."""
    from_json = Tokenizer.from_file(os.path.join(out_dir, "tokenizer.json"))
    # transformers reads vocab.txt + tokenizer_config.json when there is no tokenizer.json.
    with tempfile.TemporaryDirectory() as vocab_only:
        for name in ("vocab.txt", "tokenizer_config.json"):
            shutil.copy(os.path.join(out_dir, name), vocab_only)
        from_vocab = transformers.AutoTokenizer.from_pretrained(vocab_only)
    return from_json, from_vocab


def fnv1a64_of_ids(ids):
    h = 0xCBF29CE484222325
    for i in ids:
        for b in int(i).to_bytes(4, "little", signed=True):
            h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def golden_for(name, from_json, from_vocab):
    cases = []
    for text in CURATED + random_strings(POOLS, 60, seed=20240611):
        ids = from_json.encode(text, add_special_tokens=False).ids
        other = from_vocab(text, add_special_tokens=False)["input_ids"]
        if other != ids:
            sys.exit(f"{name}: tokenizer.json and vocab.txt disagree on {text!r}:\n"
                     f"  {ids}\n  {other}")
        decoded = from_json.decode(ids, skip_special_tokens=False)
        cases.append({"text": text, "ids": ids, "decoded": decoded})
    corpus = []
    for rel in CORPUS_FILES:
        with open(os.path.join(ROOT, rel), "rb") as f:
            text = f.read().decode("utf-8")
        ids = from_json.encode(text, add_special_tokens=False).ids
        if from_vocab(text, add_special_tokens=False)["input_ids"] != ids:
            sys.exit(f"{name}: tokenizer.json and vocab.txt disagree on {rel}")
        corpus.append({"path": rel, "count": len(ids), "fnv1a64": fnv1a64_of_ids(ids)})
    specials = {s: from_json.token_to_id(s) for s in SPECIALS}
    return cases, corpus, specials


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--retrain", action="store_true",
                        help="train new vocabularies (the golden ids change with them)")
    args = parser.parse_args()
    sections = {}
    for name, lowercase in (("bert_uncased", True), ("bert_cased", False)):
        out_dir = os.path.join(FIXTURES, name)
        if args.retrain or not os.path.exists(os.path.join(out_dir, "tokenizer.json")):
            train(lowercase, out_dir)
        from_json, from_vocab = load(out_dir)
        cases, corpus, specials = golden_for(name, from_json, from_vocab)
        sections[name] = (cases, corpus, specials, from_json.get_vocab_size())

    header = {
        "generator": "scripts/golden/make_wordpiece_golden.py",
        "reference": f"tokenizers {tokenizers.__version__}, "
                     f"transformers {transformers.__version__} (AutoTokenizer on vocab.txt)",
    }
    # One case per line keeps diffs readable; ASCII escapes keep odd code points visible.
    with open(GOLDEN, "w", encoding="ascii") as f:
        f.write("{\n")
        for key, value in header.items():
            f.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
        for n, (name, (cases, corpus, specials, size)) in enumerate(sections.items()):
            f.write(f"  {json.dumps(name)}: {{\n")
            f.write(f'    "dir": "tests/golden/tokenizers/{name}",\n')
            f.write(f'    "vocab_size": {size},\n')
            f.write(f'    "specials": {json.dumps(specials)},\n')
            f.write('    "cases": [\n')
            f.write(",\n".join("      " + json.dumps(c, ensure_ascii=True) for c in cases))
            f.write("\n    ],\n    \"corpus\": [\n")
            f.write(",\n".join("      " + json.dumps(c) for c in corpus))
            f.write("\n    ]\n  }" + ("," if n + 1 < len(sections) else "") + "\n")
        f.write("}\n")
    print(f"wrote {os.path.relpath(GOLDEN, ROOT)} ({os.path.getsize(GOLDEN)} bytes)")


if __name__ == "__main__":
    main()
