#!/usr/bin/env python3
"""Generates models/tokenizer/bert_unicode_tables.inc: the character data of the BERT normalizer
and pre-tokenizer (bert_unicode.h), read from the reference, Hugging Face `tokenizers` 0.23.

Why from the library rather than from a Unicode version: its BertNormalizer and BertPreTokenizer
classify characters with several Rust tables of different ages. Control characters, punctuation
and nonspacing marks come from the `unicode_categories` crate (an old Unicode: code points
assigned since, such as U+2E43 (Po) or U+0897 (Mn), are neither punctuation nor marks there, and
unassigned code points (Cn) are kept, not dropped), canonical decompositions from
`unicode-normalization-alignments`, lowercase and white space from the Rust standard library.
This script asks the library about every code point, writes what it does, and prints how that
differs from Unicode 16.0.0 (unicodedata2), so the tables are the reference's behaviour by
construction. The GPT-2 tables (generate_unicode_tables.py) are unaffected.

  pip install tokenizers==0.23.3 unicodedata2==16.0.0
  python3 scripts/generate_bert_unicode_tables.py

Hangul syllables are left out of the decomposition table: bert_unicode.cc decomposes them
algorithmically (Unicode 3.12), and this script checks that the library agrees.
"""

import os
import sys

import tokenizers
import unicodedata2 as unicodedata
from tokenizers import normalizers, pre_tokenizers

TOKENIZERS_VERSION = "0.23.3"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "tokenizer",
                   "bert_unicode_tables.inc")
CODE_POINTS = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3


def per_code_point(normalizer, separator):
    """What `normalizer` makes of each code point alone, in batches (it works character by
    character; the separator is a code point it leaves alone and that nothing maps to)."""
    out = {ord(separator): separator}
    todo = [cp for cp in CODE_POINTS if cp != ord(separator)]
    for i in range(0, len(todo), 4096):
        part = todo[i:i + 4096]
        text = separator + separator.join(chr(cp) for cp in part) + separator
        pieces = normalizer.normalize_str(text).split(separator)
        assert len(pieces) == len(part) + 2, hex(part[0])
        out.update(zip(part, pieces[1:-1]))
    return out


def bert_normalizer(**kwargs):
    options = dict(clean_text=False, handle_chinese_chars=False, strip_accents=False,
                   lowercase=False)
    options.update(kwargs)
    return normalizers.BertNormalizer(**options)


def ranges_of(code_points):
    out = []
    for cp in sorted(code_points):
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def hangul_nfd(cp):
    s = cp - HANGUL_FIRST
    out = chr(0x1100 + s // 588) + chr(0x1161 + (s % 588) // 28)
    return out + (chr(0x11A7 + s % 28) if s % 28 else "")


def emit_ranges(lines, name, code_points, why):
    lines.append(f"// {why}")
    lines.append(f"constexpr CodePointRange {name}[] = {{")
    row = []
    for a, b in ranges_of(code_points):
        row.append(f"{{0x{a:X}, 0x{b:X}}},")
        if len(row) == 5:
            lines.append("    " + " ".join(row))
            row = []
    if row:
        lines.append("    " + " ".join(row))
    lines.append("};")
    lines.append("")


def emit_mappings(lines, prefix, mapping, why):
    """mapping: code point -> replacement string of one or more code points."""
    singles = sorted((cp, s) for cp, s in mapping.items() if len(s) == 1)
    multis = sorted((cp, s) for cp, s in mapping.items() if len(s) > 1)
    lines.append(f"// {why}: code points that become one other code point.")
    lines.append(f"constexpr CodePointMapping k{prefix}Single[] = {{")
    row = []
    for cp, s in singles:
        row.append(f"{{0x{cp:X}, 0x{ord(s):X}}},")
        if len(row) == 5:
            lines.append("    " + " ".join(row))
            row = []
    if row:
        lines.append("    " + " ".join(row))
    lines.append("};")
    lines.append(f"// {why}: code points that become several, as [offset, offset + length) of "
                 f"k{prefix}Pool.")
    lines.append(f"constexpr CodePointExpansion k{prefix}Multi[] = {{")
    pool = []
    for cp, s in multis:
        lines.append(f"    {{0x{cp:X}, {len(pool)}, {len(s)}}},")
        pool.extend(ord(c) for c in s)
    lines.append("};")
    lines.append(f"constexpr char32_t k{prefix}Pool[] = {{")
    for i in range(0, len(pool), 8):
        lines.append("    " + " ".join(f"0x{c:X}," for c in pool[i:i + 8]))
    lines.append("};")
    lines.append("")
    return len(singles), len(multis)


def report(name, mine, unicode16):
    extra, missing = sorted(mine - unicode16), sorted(unicode16 - mine)
    examples = ", ".join(f"U+{c:04X}" for c in missing[:4])
    print(f"{name}: {len(mine)} code points; {len(extra)} not so in Unicode 16.0.0, "
          f"{len(missing)} more in Unicode 16.0.0 (e.g. {examples})")


def main():
    if tokenizers.__version__ != TOKENIZERS_VERSION:
        sys.exit(f"need tokenizers=={TOKENIZERS_VERSION}, found {tokenizers.__version__}")

    # clean_text: each code point is dropped, becomes a space, or stays.
    clean = per_code_point(bert_normalizer(clean_text=True), "a")
    removed = {cp for cp, s in clean.items() if s == ""}
    spaces = {cp for cp, s in clean.items() if s == " " and cp != 0x20} | {0x20}
    assert all(s in ("", " ", chr(cp)) for cp, s in clean.items())

    chinese_out = per_code_point(bert_normalizer(handle_chinese_chars=True), "\ue000")
    chinese = {cp for cp, s in chinese_out.items() if s == f" {chr(cp)} "}
    assert all(s == chr(cp) for cp, s in chinese_out.items() if cp not in chinese)

    lower_out = per_code_point(bert_normalizer(lowercase=True), "\ue000")
    lower = {cp: s for cp, s in lower_out.items() if s != chr(cp)}

    strip_out = per_code_point(bert_normalizer(strip_accents=True), "\ue000")
    strip = {cp: s for cp, s in strip_out.items() if s != chr(cp)}
    for cp in range(HANGUL_FIRST, HANGUL_LAST + 1):
        assert strip.pop(cp) == hangul_nfd(cp), hex(cp)
    strip_removed = {cp for cp, s in strip.items() if s == ""}
    strip = {cp: s for cp, s in strip.items() if s != ""}

    # BertPreTokenizer: white space splits, punctuation stands alone.
    pre = pre_tokenizers.BertPreTokenizer()
    punctuation, split_space = set(), set()
    for cp in CODE_POINTS:
        pieces = pre.pre_tokenize_str("a" + chr(cp) + "a")
        if len(pieces) == 2:
            split_space.add(cp)
        elif len(pieces) == 3:
            assert pieces[1][0] == chr(cp)
            punctuation.add(cp)
        else:
            assert len(pieces) == 1
    # U+000B, U+000C and U+0085 are white space and controls: clean_text drops them (its control
    # test comes first) while the pre-tokenizer splits on them.
    assert spaces == split_space - removed, "clean_text's and the pre-tokenizer's spaces differ"
    spaces = split_space

    # The fast paths bert_unicode.cc takes below these bounds.
    assert min(set(strip) | strip_removed) >= 0xC0
    assert {cp for cp in spaces if cp < 0x80} == {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20}
    assert min(chinese) >= 0x3400
    assert {cp for cp in lower if cp < 0x80} == set(range(ord("A"), ord("Z") + 1))

    category = {cp: unicodedata.category(chr(cp)) for cp in CODE_POINTS}
    report("dropped by clean_text", removed,
           {cp for cp in CODE_POINTS if category[cp][0] == "C" and cp not in (9, 10, 13)} |
           {0, 0xFFFD})
    report("punctuation", punctuation,
           {cp for cp in CODE_POINTS if category[cp][0] == "P" or
            33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126})
    report("dropped by strip_accents (Mn)", strip_removed,
           {cp for cp in CODE_POINTS if category[cp] == "Mn"})

    lines = [
        f"// Generated by scripts/generate_bert_unicode_tables.py from Hugging Face tokenizers "
        f"{TOKENIZERS_VERSION}. Do not edit.",
        "// Sorted by code point; included by bert_unicode.cc only.",
        "",
    ]
    emit_ranges(lines, "kBertDroppedRanges", removed,
                "clean_text drops these (U+0000, U+FFFD, controls, format, private use).")
    emit_ranges(lines, "kBertWhitespaceRanges", spaces,
                "The pre-tokenizer splits on these; clean_text makes them a space unless it drops "
                "them.")
    emit_ranges(lines, "kBertChineseRanges", chinese,
                "handle_chinese_chars puts spaces around these (CJK ideographs).")
    emit_ranges(lines, "kBertPunctuationRanges", punctuation,
                "The pre-tokenizer makes each of these a piece of its own.")
    emit_ranges(lines, "kBertStripDroppedRanges", strip_removed,
                "strip_accents drops these (nonspacing marks), also when a decomposition yields "
                "them.")
    counts = emit_mappings(lines, "BertStrip", strip,
                           "strip_accents (NFD, nonspacing marks dropped), Hangul syllables aside")
    lower_counts = emit_mappings(lines, "BertLower", lower, "lowercase")
    with open(OUT, "w", encoding="ascii") as f:
        f.write("\n".join(lines))
    print(f"strip_accents mappings: {counts}, lowercase mappings: {lower_counts}")
    print(f"wrote {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
