#!/usr/bin/env python3
"""Writes the GPT-2 tokenizer golden ids (tests/golden/gpt2_tokenizer.json) and the GPT-2
tokenizer.json (examples/tokenizers/gpt2/tokenizer.json) from vocab.json + merges.txt.

The reference is Hugging Face `tokenizers` (the library every HF model uses), configured as
GPT-2 is: BPE from vocab.json + merges.txt, ByteLevel pre-tokenizer without a prefix space, and
<|endoftext|> as a special token. Where the `regex` package is installed, the ids are also checked
against OpenAI's original GPT-2 encoder algorithm (encoder.py, re-implemented below), a second,
independent reference; a disagreement stops the script.

  python3 -m venv /tmp/tokvenv && /tmp/tokvenv/bin/pip install -r scripts/golden/requirements.txt
  /tmp/tokvenv/bin/python scripts/golden/make_tokenizer_golden.py

Re-running it with the same package versions reproduces both files byte for byte.
"""

import json
import os
import sys

import tokenizers
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from golden_strings import random_strings

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
GPT2_DIR = os.path.join(ROOT, "examples", "tokenizers", "gpt2")
GOLDEN = os.path.join(ROOT, "tests", "golden", "gpt2_tokenizer.json")
EOT = "<|endoftext|>"
# Whole bundled corpus files: their id count and FNV-1a 64 of the ids (int32 little-endian), so the
# golden file stays small while every id of real text is checked.
CORPUS_FILES = ["examples/data/shakespeare/valid.txt", "examples/data/shakespeare/train.txt"]

CURATED = [
    "Hello world",
    "",
    " ",
    "a",
    "The quick brown fox jumps over the lazy dog.",
    "  leading and trailing spaces  ",
    "multiple    spaces   between words",
    "tabs\tand\t\ttabs",
    "line one\nline two\n\nline four\n",
    "windows\r\nline endings\r\n",
    "trailing newline then space \n x",
    "\n\n\n",
    " \n \n ",
    "I'm sure you're right, he'll say it's what we'd've done; they've can't won't",
    "'s 't 're 've 'm 'll 'd",
    "'S 'T 'RE UPPERCASE CONTRACTIONS DON'T MATCH",
    "''quoted'' and 'single' and ''s",
    "numbers 0 1 12 123 1234 12345 3.14159 -42 1e10 0x1F 1,000,000",
    "2024-01-31T12:34:56Z",
    "phone: +1 (555) 123-4567",
    "emoji 😀 😃 😄 👍🏽 👨‍👩‍👧‍👦 🇺🇸 ❤️",
    "😀😀😀",
    "中文字符测试，你好世界。",
    "日本語のテキスト、カタカナとひらがな",
    "한국어 텍스트",
    "accented: café naïve résumé Ångström façade",
    "combining: cafe\u0301 n\u0303 a\u0308\u0304",
    "Ελληνικά και Русский текст",
    "العربية עברית हिन्दी ไทย",
    "math ∑∫√∞ ≤ ≥ ≠ ± × ÷ → ⇒",
    "currency $100 €50 £30 ¥1000 ₹500",
    "Roman numerals Ⅻ ⅷ and fractions ½ ¾ and superscripts x² y³",
    "Arabic-Indic digits ٠١٢٣ and fullwidth ０１２３ and ＡＢＣ",
    "no-break\u00a0space and\u2009thin\u2009space and\u3000ideographic",
    "zero\u200bwidth\u200cjoiners\u200d and BOM \ufeff",
    "replacement char \ufffd and noncharacter \uffff and private \ue000",
    "controls \x00 \x01 \x1b[31m \x7f \x85 \x1c\x1d\x1e\x1f end",
    "line\u2028separator\u2029paragraph",
    "astral letters 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and 𝟙𝟚𝟛",
    "code: def f(x):\n    return x**2  # square\n",
    "<html><body class=\"main\">&amp;</body></html>",
    "https://example.com/path?query=1&other=two#frag",
    "snake_case camelCase PascalCase kebab-case",
    "!!!??? ... --- *** ### @@@",
    "a\u0300\u0301\u0302\u0303\u0304 stacked marks",
    EOT,
    "Hello" + EOT + "world",
    "before " + EOT + " after",
    EOT + EOT,
    "<|endoftext|" + " not special",
    "<|endoftext|> at start then <|endoftext|>",
    "<|endoftext |> with space is text",
    "<|startoftext|> is not a GPT-2 token",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism",
    "ﬁﬂ ligatures and ǅ titlecase",
]

# Pools the random strings draw chunks from: every class the pre-tokenizer distinguishes, and
# the byte lengths UTF-8 has (1 to 4).
POOLS = [
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    list("0123456789"),
    list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    [" ", " ", " ", "  ", "\n", "\t", "\r\n", "\u00a0", "\u2003", "\u3000", "\x0b", "\x0c"],
    ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "''"],
    list("éèêëàâäçñøåßœæÉÀÇÑ"),
    ["\u0301", "\u0308", "\u0327", "\u20dd"],
    list("αβγδεΩΣДЖЯжщю"),
    list("שלוםمرحبا"),
    list("हिन्दीไทย"),
    list("中文字符日本語漢字한국어"),
    list("ひらがなカタカナ"),
    ["😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "🤖", "🦄"],
    list("٠١٢٣ⅫⅦ½¾²₃０１"),
    list("∑√∞≤→€£¥©®™"),
    ["𝔘", "𝔫", "𝟙", "𐍈", "𓀀"],
    ["\x00", "\x1b", "\x7f", "\x85", "\u200b", "\u200d", "\ufeff", "\ufffd", "\ue000"],
    [EOT],
]


def reference_tokenizer():
    tok = Tokenizer(models.BPE.from_file(os.path.join(GPT2_DIR, "vocab.json"),
                                         os.path.join(GPT2_DIR, "merges.txt")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(EOT, special=True)])
    return tok


class OpenAIGpt2Encoder:
    """OpenAI's GPT-2 encoder.py algorithm (MIT), for cross-checking; special tokens split first."""

    def __init__(self):
        import regex
        with open(os.path.join(GPT2_DIR, "vocab.json"), encoding="utf-8") as f:
            self.encoder = json.load(f)
        with open(os.path.join(GPT2_DIR, "merges.txt"), encoding="utf-8") as f:
            merges = [tuple(l.split()) for l in f.read().split("\n")[1:] if l]
        self.ranks = dict(zip(merges, range(len(merges))))
        bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
            list(range(ord("®"), ord("ÿ") + 1))
        cs = bs[:]
        n = 0
        for b in range(256):
            if b not in bs:
                bs.append(b)
                cs.append(256 + n)
                n += 1
        self.byte_encoder = dict(zip(bs, map(chr, cs)))
        self.pat = regex.compile(
            r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

    def bpe(self, token):
        word = tuple(token)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            first, second = best
            new_word, i = [], 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                except ValueError:
                    new_word.extend(word[i:])
                    break
                new_word.extend(word[i:j])
                i = j
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
        return word

    def encode(self, text):
        ids = []
        for k, segment in enumerate(text.split(EOT)):
            if k:
                ids.append(self.encoder[EOT])
            for piece in self.pat.findall(segment):
                mapped = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
                ids.extend(self.encoder[t] for t in self.bpe(mapped))
        return ids


def fnv1a64_of_ids(ids):
    h = 0xCBF29CE484222325
    for i in ids:
        for b in int(i).to_bytes(4, "little", signed=True):
            h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def main():
    tok = reference_tokenizer()
    # The tokenizer.json goes in compact form: the pretty-printed one is over 3 MB.
    tokenizer_json = os.path.join(GPT2_DIR, "tokenizer.json")
    with open(tokenizer_json, "w", encoding="utf-8") as f:
        f.write(tok.to_str(pretty=False))
        f.write("\n")
    reloaded = Tokenizer.from_file(tokenizer_json)

    try:
        openai = OpenAIGpt2Encoder()
    except ImportError:
        openai = None
        print("regex not installed: skipping the cross-check against OpenAI's encoder",
              file=sys.stderr)

    cases = []
    for text in CURATED + random_strings(POOLS, 60, seed=20240601):
        ids = tok.encode(text).ids
        if reloaded.encode(text).ids != ids:
            sys.exit(f"tokenizer.json disagrees with vocab.json+merges.txt on {text!r}")
        if tok.decode(ids, skip_special_tokens=False) != text:
            sys.exit(f"reference decode is not the identity on {text!r}")
        if openai is not None and openai.encode(text) != ids:
            sys.exit(f"tokenizers and OpenAI's encoder disagree on {text!r}:\n"
                     f"  {ids}\n  {openai.encode(text)}")
        cases.append({"text": text, "ids": ids})

    corpus = []
    for rel in CORPUS_FILES:
        with open(os.path.join(ROOT, rel), "rb") as f:
            text = f.read().decode("utf-8")
        ids = tok.encode(text).ids
        if openai is not None and openai.encode(text) != ids:
            sys.exit(f"tokenizers and OpenAI's encoder disagree on {rel}")
        corpus.append({"path": rel, "count": len(ids), "fnv1a64": fnv1a64_of_ids(ids)})

    header = {
        "generator": "scripts/golden/make_tokenizer_golden.py",
        "reference": f"tokenizers {tokenizers.__version__}" +
                     (" (cross-checked with OpenAI's GPT-2 encoder via regex)" if openai else ""),
        "tokenizer": "GPT-2: examples/tokenizers/gpt2/{vocab.json,merges.txt}, <|endoftext|> special",
    }
    # One case per line keeps diffs readable; ASCII escapes keep odd code points visible.
    with open(GOLDEN, "w", encoding="ascii") as f:
        f.write("{\n")
        for key, value in header.items():
            f.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
        f.write('  "cases": [\n')
        f.write(",\n".join("    " + json.dumps(c, ensure_ascii=True) for c in cases))
        f.write("\n  ],\n  \"corpus\": [\n")
        f.write(",\n".join("    " + json.dumps(c) for c in corpus))
        f.write("\n  ]\n}\n")
    print(f"wrote {len(cases)} cases to {os.path.relpath(GOLDEN, ROOT)} and "
          f"{os.path.relpath(tokenizer_json, ROOT)} ({os.path.getsize(tokenizer_json)} bytes)")


if __name__ == "__main__":
    main()
