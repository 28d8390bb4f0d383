#!/usr/bin/env python3
"""Writes the DeBERTa-v2/v3 (SentencePiece Unigram) tokenizer fixtures, golden ids and the NFC
tables of the Unigram normalizer:

  tests/golden/tokenizers/deberta_{always,first}/tokenizer.json
  tests/golden/unigram_tokenizer.json
  models/tokenizer/unigram_nfc_tables.inc

No DeBERTa vocabulary can be downloaded here, so a small Unigram vocabulary is trained with Hugging
Face `tokenizers` (UnigramTrainer) on the bundled Shakespeare corpus plus multilingual text and
handed to transformers' DebertaV2Tokenizer, whose save_pretrained writes the tokenizer.json a
DeBERTa-v2/v3 fast tokenizer has: normalizer Sequence[Replace(Regex "\\s{2,}|[\\n\\r\\t]", " "),
NFC, Strip(right)], pre_tokenizer Sequence[Metaspace], Unigram, Metaspace decoder,
TemplateProcessing. "always" is add_prefix_space=True (the default), "first" is False.

The NFC tables are Python's unicodedata, corrected to what the library's (older) Unicode data
does: a combining class is kept only where the library reorders marks by it, a composition only
where the library composes. Every single code point, and each after "a" and before a mark, is
checked against the library; the script fails on any difference.

  /tmp/goldenvenv/bin/python scripts/golden/make_unigram_golden.py [--retrain]

Training is not reproducible (ties in hash-map order): the vocabulary is trained only when missing
or with --retrain.
"""

import argparse
import json
import os
import random
import sys
import tempfile
import unicodedata

import tokenizers
import transformers
from tokenizers import Tokenizer, normalizers, pre_tokenizers
from tokenizers.models import Unigram
from tokenizers.trainers import UnigramTrainer
from transformers import DebertaV2Tokenizer

from golden_strings import random_strings

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "golden", "tokenizers")
GOLDEN = os.path.join(ROOT, "tests", "golden", "unigram_tokenizer.json")
TABLES = os.path.join(ROOT, "models", "tokenizer", "unigram_nfc_tables.inc")
TRAIN_FILE = "examples/data/shakespeare/train.txt"
VOCAB_SIZE = 1000
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

EXTRA_TRAINING = [
    "Café, naïve résumé, Ångström façade; déjà vu. Über Straße, Mädchen, Österreich.",
    "Español: ¿Dónde está el niño? ¡Mañana! Português: ação, coração, não.",
    "中文字符测试，你好世界。我们学习语言。日本語のテキスト、カタカナとひらがな。",
    "한국어 텍스트 안녕하세요 세계",
    "Ελληνικά και Русский текст: Привет мир, Γειά σου κόσμε.",
    "Numbers 0 1 12 123 3.14 1,000 -- punctuation!!! ??? ... (parens) [brackets]",
]

CURATED = [
    "Hello world",
    "",
    " ",
    "   ",
    "\n",
    "HELLO World hello",
    "The quick brown fox jumps over the lazy dog.",
    "  leading and trailing spaces  ",
    " one leading space",
    "trailing space ",
    "tabs\tand\t\ttabs, line one\nline two\r\nwindows",
    "double  space triple   space",
    "numbers 0 1 12 123 1234 3.14159 -42 1,000,000",
    "!!!??? ... --- *** ### @@@ $%^&",
    "accented: café naïve résumé Ångström façade DÉJÀ VU Über",
    "combining: cafe\u0301 n\u0303 a\u0308\u0304 stacked a\u0300\u0301\u0302\u0303",
    "decomposed vs precomposed: \u00e9 e\u0301 \u1e09 \u01c4 \u212b \u2126 A\u030a",
    "reordered marks: a\u0301\u0316 a\u0316\u0301 q\u0307\u0323 \u1e0b\u0323",
    "Hangul jamo: \u1100\u1161\u11a8 \u1100\u1161 \uac00\u11a8",
    "中文字符测试，你好世界。",
    "日本語のテキスト、カタカナとひらがな ｶﾀｶﾅ",
    "한국어 텍스트 안녕하세요",
    "Ελληνικά και Русский текст",
    "العربية עברית हिन्दी ไทย",
    "unknown chars ☃ ⌘ 𓀀 ꙮ 😀 👍🏽",
    "no-break\u00a0space and\u2009thin and\u3000ideographic and\u2028line",
    "full-width ＡＢＣ１２３ and ligature ﬁ and ½",
    "▁ metaspace ▁▁ literal ▁x",
    "[CLS] sentence one [SEP] sentence two [SEP]",
    "[CLS][SEP][PAD][MASK][UNK]",
    "[cls] [Sep] [ CLS ] [CLS",
    "before[MASK]after",
    "before [MASK] after",
    " [SEP]",
    "[SEP] ",
    "x [SEP]  ",
    "ROMEO: But, soft! what light through yonder window breaks?",
    "x" * 60,
]

POOLS = [
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    ["the", "The", "thou", "Romeo", "king", "ing", "▁"],
    list("0123456789"),
    list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¡¿«»—…"),
    [" ", " ", " ", "  ", "\n", "\t", "\r\n", "\u00a0", "\u2003", "\u3000", "\x0b", "\x85"],
    list("éèêëàâäçñøåßœæÉÀÇÑİı"),
    ["\u0301", "\u0308", "\u0327", "\u0316", "\u0323", "e\u0301", "\u1100\u1161"],
    list("αβγδεΩΣςДЖЯжщю"),
    list("中文字符日本語漢字한국어ひらがなカタカナ"),
    ["😀", "👍🏽", "🇫🇷", "❤️", "☃"],
    ["\x00", "\x1b", "\x7f", "\u200b", "\ufeff", "\ufffd", "\ue000", "\u0378"],
    ["[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "[cls]"],
]


def train():
    tok = Tokenizer(Unigram())
    tok.normalizer = normalizers.Sequence([
        normalizers.Replace(tokenizers.Regex(r"\s{2,}|[\n\r\t]"), " "),
        normalizers.NFC(), normalizers.Strip(left=False, right=True)])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    with open(os.path.join(ROOT, TRAIN_FILE), encoding="utf-8") as f:
        lines = f.read().splitlines()
    trainer = UnigramTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIALS, unk_token="[UNK]",
                             show_progress=False)
    tok.train_from_iterator(lines + EXTRA_TRAINING * 20, trainer=trainer)
    vocab = [tuple(v) for v in json.loads(tok.to_str())["model"]["vocab"]]
    for name, prefix_space in (("deberta_always", True), ("deberta_first", False)):
        hf = DebertaV2Tokenizer(vocab=vocab, add_prefix_space=prefix_space)
        with tempfile.TemporaryDirectory() as tmp:
            hf.save_pretrained(tmp)
            with open(os.path.join(tmp, "tokenizer.json"), encoding="utf-8") as f:
                saved = json.load(f)
        out_dir = os.path.join(FIXTURES, name)
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(saved, f, ensure_ascii=False, separators=(",", ":"))


# ---- NFC tables, checked against the library ----

def library_nfc(strings):
    big = "\x01".join(strings)
    return normalizers.NFC().normalize_str(big).split("\x01")


def nfc_tables():
    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    nfd = normalizers.NFD()
    ccc = {}
    for c in cps:
        k = unicodedata.combining(chr(c))
        if not k or unicodedata.decomposition(chr(c)):
            continue  # decomposable code points never reach the ordering step
        # The library has a class for c exactly when it reorders c against U+0334 (class 1) or
        # U+0345 (class 240); its classes, where it has one, are unicodedata's.
        after_a = ["a" + chr(c) + "\u0334", "a\u0345" + chr(c)]
        if any(nfd.normalize_str(s) != s for s in after_a):
            ccc[c] = k
    decomp = {}
    for c in cps:
        if 0xAC00 <= c <= 0xD7A3:
            continue  # Hangul: algorithmic
        d = nfd.normalize_str(chr(c))
        if d != chr(c):
            decomp[c] = [ord(x) for x in d]
    # Primary composites: canonical decompositions of two code points, not excluded.
    compose = {}
    for c in cps:
        raw = unicodedata.decomposition(chr(c))
        if not raw or raw.startswith("<"):
            continue
        parts = [int(x, 16) for x in raw.split()]
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(c):
            compose[(parts[0], parts[1])] = c
    return ccc, decomp, compose


def python_nfc(text, ccc, decomp, compose):
    """The C++ algorithm, in Python, to check the tables against the library."""
    out = []
    for ch in text:
        c = ord(ch)
        if 0xAC00 <= c <= 0xD7A3:
            s = c - 0xAC00
            out += [0x1100 + s // 588, 0x1161 + (s % 588) // 28] + ([0x11A7 + s % 28] if s % 28 else [])
        else:
            out += decomp.get(c, [c])
    # Canonical ordering (stable).
    i = 0
    while i < len(out):
        if ccc.get(out[i], 0) == 0:
            i += 1
            continue
        j = i
        while j < len(out) and ccc.get(out[j], 0) != 0:
            j += 1
        out[i:j] = sorted(out[i:j], key=lambda x: ccc[x])
        i = j
    # Composition.
    res = []
    starter = -1
    last_ccc = 0
    for c in out:
        k = ccc.get(c, 0)
        if starter >= 0 and (last_ccc < k or (last_ccc == 0 and len(res) - 1 == starter)):
            s = res[starter]
            comp = None
            if 0x1100 <= s <= 0x1112 and 0x1161 <= c <= 0x1175:
                comp = 0xAC00 + ((s - 0x1100) * 21 + (c - 0x1161)) * 28
            elif 0xAC00 <= s <= 0xD7A3 and (s - 0xAC00) % 28 == 0 and 0x11A8 <= c <= 0x11C2:
                comp = s + (c - 0x11A7)
            else:
                comp = compose.get((s, c))
            if comp is not None:
                res[starter] = comp
                continue
        if k == 0:
            starter = len(res)
        last_ccc = k
        res.append(c)
    return "".join(chr(c) for c in res)


def check_tables(ccc, decomp, compose):
    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    marks = sorted(ccc)
    probes = []
    for pre, suf in (("", ""), ("a", ""), ("", "\u0301"), ("a", "\u0301"), ("a", "\u0316"),
                     ("a", "\u05b0"), ("a", "\u0334")):
        probes += [pre + chr(c) + suf for c in cps if c != 1]  # 1 separates probes
    for (a, b), _ in compose.items():
        probes += [chr(a) + chr(b), chr(a) + "\u0316" + chr(b), chr(a) + "\u0301" + chr(b)]
    for m in marks:
        probes += ["a" + chr(m) + chr(r) for r in marks[::7]]
    got = library_nfc(probes)
    bad = [(p, g) for p, g in zip(probes, got) if python_nfc(p, ccc, decomp, compose) != g]
    # Drop compositions the library does not make, then check again.
    for (a, b), c in list(compose.items()):
        if library_nfc([chr(a) + chr(b)])[0] != chr(c):
            del compose[(a, b)]
    bad = [(p, g) for p, g in zip(probes, got) if python_nfc(p, ccc, decomp, compose) != g]
    if bad:
        sys.exit(f"NFC tables disagree with the library on {len(bad)} probes, e.g. "
                 + ", ".join(ascii(p) for p, _ in bad[:10]))
    print(f"NFC tables agree with the library on {len(probes)} probes")
    return probes


def write_tables(ccc, decomp, compose):
    def ranges_of(d):
        items = sorted(d.items())
        out = []
        for c, k in items:
            if out and out[-1][1] == c - 1 and out[-1][2] == k:
                out[-1][1] = c
            else:
                out.append([c, c, k])
        return out

    lines = ["// Generated by scripts/golden/make_unigram_golden.py from Python unicodedata "
             f"{unicodedata.unidata_version}, checked", f"// against Hugging Face tokenizers "
             f"{tokenizers.__version__}'s NFC. Do not edit. Included by unicode_nfc.cc only.", ""]
    lines.append("// Canonical combining classes (first, last, class), sorted.")
    lines.append("constexpr CombiningClassRange kCombiningClasses[] = {")
    rs = ranges_of(ccc)
    for i in range(0, len(rs), 5):
        lines.append("    " + " ".join("{0x%X, 0x%X, %d}," % tuple(r) for r in rs[i:i + 5]))
    lines.append("};")
    lines.append("")
    lines.append("// Full canonical decompositions (Hangul syllables excluded): code point, offset "
                 "and length in")
    lines.append("// kDecompositionData. Sorted by code point.")
    data = []
    entries = []
    for c in sorted(decomp):
        entries.append((c, len(data), len(decomp[c])))
        data += decomp[c]
    lines.append("constexpr Decomposition kDecompositions[] = {")
    for i in range(0, len(entries), 6):
        lines.append("    " + " ".join("{0x%X, %d, %d}," % e for e in entries[i:i + 6]))
    lines.append("};")
    lines.append("constexpr char32_t kDecompositionData[] = {")
    for i in range(0, len(data), 10):
        lines.append("    " + " ".join("0x%X," % x for x in data[i:i + 10]))
    lines.append("};")
    lines.append("")
    lines.append("// Primary composites: (first, second) -> composite, sorted by (first, second).")
    lines.append("constexpr Composition kCompositions[] = {")
    items = sorted(compose.items())
    for i in range(0, len(items), 5):
        lines.append("    " + " ".join("{0x%X, 0x%X, 0x%X}," % (a, b, c)
                                       for (a, b), c in items[i:i + 5]))
    lines.append("};")
    with open(TABLES, "w", encoding="ascii") as f:
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--retrain", action="store_true")
    args = parser.parse_args()
    if args.retrain or not os.path.exists(os.path.join(FIXTURES, "deberta_always",
                                                       "tokenizer.json")):
        train()
    ccc, decomp, compose = nfc_tables()
    probes = check_tables(ccc, decomp, compose)
    write_tables(ccc, decomp, compose)

    sections = {}
    texts = CURATED + random_strings(POOLS, 60, seed=20261126)
    for name in ("deberta_always", "deberta_first"):
        path = os.path.join(FIXTURES, name, "tokenizer.json")
        tok = Tokenizer.from_file(path)
        cases = []
        for text in texts:
            ids = tok.encode(text, add_special_tokens=False).ids
            # EncodeOrdinary: the added tokens as plain text (the normalizer and model alone).
            plain = Tokenizer.from_str(json.dumps(
                dict(json.loads(tok.to_str()), added_tokens=[])))
            ordinary = plain.encode(text, add_special_tokens=False).ids
            decoded = tok.decode(ids, skip_special_tokens=False)
            cases.append({"text": text, "ids": ids, "ordinary": ordinary, "decoded": decoded})
        specials = {s: tok.token_to_id(s) for s in SPECIALS}
        sections[name] = (cases, specials, tok.get_vocab_size())
    # NFC probes for the normalizer test: a sample, each with the library's output.
    rng = random.Random(7)
    sample = [p for p in probes if any(ord(ch) > 0x7F for ch in p)]
    sample = rng.sample(sample, 600)
    nfc_cases = [[p, g] for p, g in zip(sample, library_nfc(sample))]

    header = {"generator": "scripts/golden/make_unigram_golden.py",
              "reference": f"tokenizers {tokenizers.__version__}, transformers "
                           f"{transformers.__version__} (DebertaV2Tokenizer.save_pretrained)"}
    with open(GOLDEN, "w", encoding="ascii") as f:
        f.write("{\n")
        for key, value in header.items():
            f.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
        for name, (cases, specials, size) in sections.items():
            f.write(f"  {json.dumps(name)}: {{\n")
            f.write(f'    "dir": "tests/golden/tokenizers/{name}",\n')
            f.write(f'    "vocab_size": {size},\n')
            f.write(f'    "specials": {json.dumps(specials)},\n')
            f.write('    "cases": [\n')
            f.write(",\n".join("      " + json.dumps(c, ensure_ascii=True) for c in cases))
            f.write("\n    ]\n  },\n")
        f.write('  "nfc": [\n')
        f.write(",\n".join("    " + json.dumps(c, ensure_ascii=True) for c in nfc_cases))
        f.write("\n  ]\n}\n")
    print(f"wrote {os.path.relpath(GOLDEN, ROOT)} ({os.path.getsize(GOLDEN)} bytes)")


if __name__ == "__main__":
    main()
