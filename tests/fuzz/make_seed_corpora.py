#!/usr/bin/env python3
"""Writes the seed corpora of the parser fuzzers (tests/fuzz/corpus/<target>/) from the bundled
examples: safetensors files shaped like the models geotrain writes, trimmed copies of the GPT-2
tokenizer, the example job YAMLs and small jsonl files. Every seed stays below 64 KiB.

  make_seed_corpora.py [SAFETENSORS_FILE...]

Each SAFETENSORS_FILE (e.g. one `geotrain model init` wrote) adds its real header: once verbatim
with only a few data bytes (rejected at the offset checks: a seed for the header fields), once
with its smallest tensors kept and their real bytes (valid: reaches the dtype and shape checks).
Without files, the same is done for a header built like GPT-2 tiny's.
"""
import json
import os
import pathlib
import struct
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CORPUS = HERE / "corpus"
MAX_SEED = 64 * 1024


def write(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    assert len(data) < MAX_SEED, (target, name, len(data))
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def safetensors_bytes(header, data):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def gpt2_like_header():
    header = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, shape in [("transformer.wte.weight", [50257, 64]), ("transformer.wpe.weight", [256, 64]),
                        ("transformer.h.0.attn.c_attn.weight", [64, 192]),
                        ("transformer.h.0.attn.c_attn.bias", [192]), ("transformer.h.0.ln_1.weight", [64]),
                        ("transformer.h.0.ln_1.bias", [64]), ("transformer.ln_f.weight", [64])]:
        n = 4
        for s in shape:
            n *= s
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + n]}
        off += n
    return header


def shrink(header, real_data):
    """Keeps the smallest tensors (with their real bytes when given) plus one of each other dtype."""
    tensors = sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                     key=lambda kv: kv[1]["data_offsets"][1] - kv[1]["data_offsets"][0])
    out = {"__metadata__": header.get("__metadata__", {"format": "pt"})}
    data = b""
    for name, info in tensors[:6]:
        b, e = info["data_offsets"]
        chunk = real_data[b:e] if real_data is not None and e <= len(real_data) else bytes(e - b)
        out[name] = {"dtype": info["dtype"], "shape": info["shape"],
                     "data_offsets": [len(data), len(data) + len(chunk)]}
        data += chunk
    for dtype, size in [("F16", 2), ("BF16", 2), ("I64", 8), ("U8", 1), ("BOOL", 1)]:
        out["extra." + dtype] = {"dtype": dtype, "shape": [2, 3],
                                 "data_offsets": [len(data), len(data) + 6 * size]}
        data += bytes(range(6 * size))
    out["extra.scalar"] = {"dtype": "F32", "shape": [], "data_offsets": [len(data), len(data) + 4]}
    data += struct.pack("<f", 1.5)
    out["extra.empty"] = {"dtype": "F32", "shape": [0, 4], "data_offsets": [len(data), len(data)]}
    return out, data


def safetensors_seeds(paths):
    sources = []
    for p in paths:
        raw = pathlib.Path(p).read_bytes()
        n = struct.unpack("<Q", raw[:8])[0]
        sources.append((pathlib.Path(p).stem, json.loads(raw[8:8 + n]), raw[8 + n:]))
    if not sources:
        sources.append(("gpt2-like", gpt2_like_header(), None))
    for i, (stem, header, data) in enumerate(sources):
        text = json.dumps(header, separators=(",", ":")).encode()
        write("safetensors_header", f"{i}-{stem}-header-only",
              struct.pack("<Q", len(text)) + text + (data or b"")[:16])
        small, small_data = shrink(header, data)
        write("safetensors_header", f"{i}-{stem}-small", safetensors_bytes(small, small_data))
    write("safetensors_header", "empty-header", safetensors_bytes({}, b""))
    write("safetensors_header", "metadata-only",
          safetensors_bytes({"__metadata__": {"format": "pt", "note": "x"}}, b""))


def tokenizer_seeds():
    src = ROOT / "examples" / "tokenizers" / "gpt2"
    full = json.loads((src / "tokenizer.json").read_text())
    vocab = json.loads((src / "vocab.json").read_text())
    merges_lines = (src / "merges.txt").read_text().splitlines()
    keep_merges = 120
    # GPT-2's ids: the 256 byte tokens, then merge i's result at 256 + i.
    limit = 256 + keep_merges
    small_vocab = {t: i for t, i in vocab.items() if i < limit}
    small_vocab["<|endoftext|>"] = limit
    header = [l for l in merges_lines if l.startswith("#version")]
    merges = [l for l in merges_lines if not l.startswith("#version")][:keep_merges]
    vm = json.dumps(small_vocab, ensure_ascii=False).encode() + b"\0" + \
        "\n".join(header + merges).encode() + b"\n"
    write("tokenizer_files", "vocab-merges-gpt2-trimmed", b"\x01" + vm)

    tj = dict(full)
    tj["model"] = dict(full["model"])
    tj["model"]["vocab"] = small_vocab
    tj["model"]["merges"] = [m.split(" ") for m in merges] \
        if isinstance(full["model"]["merges"][0], list) else merges
    tj["added_tokens"] = [dict(full["added_tokens"][0], id=limit)]
    write("tokenizer_files", "tokenizer-json-gpt2-trimmed",
          b"\x00" + json.dumps(tj, ensure_ascii=False).encode())
    # SmolLM2's shape: Digits then ByteLevel, merges as "a b" strings.
    sm = dict(tj)
    sm["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
    sm["model"] = dict(tj["model"], merges=merges)
    write("tokenizer_files", "tokenizer-json-digits-sequence",
          b"\x00" + json.dumps(sm, ensure_ascii=False).encode())


def job_spec_seeds():
    for p in [ROOT / "examples" / "gpt2-tiny-2x2.yaml", ROOT / "examples" / "smollm2-2x2.yaml",
              *sorted((ROOT / "examples" / "jobs").glob("*.yaml"))]:
        write("job_spec", p.name, p.read_bytes())
    write("job_spec", "minimal.yaml", "name: j\n")
    write("job_spec", "flow.yaml", "{name: j, pipeline: {stages: 2, micro_batches: 4}, "
          "data_parallel: {replicas: 2}, model: {layers: [[0, 1], [1, 2]]}}\n")


def jsonl_seeds():
    lines = (ROOT / "examples" / "data" / "shakespeare" / "train.txt").read_text().split("\n\n")[:40]
    write("data_jsonl", "shakespeare.jsonl",
          "".join(json.dumps({"text": l, "id": i}) + "\n" for i, l in enumerate(lines)))
    write("data_jsonl", "escapes.jsonl",
          '{"text": "caf\\u00e9 \\ud83d\\ude00 \\n\\t\\"q\\""}\r\n{"text": "", "meta": [1, 2.5, null]}')


def main():
    safetensors_seeds(sys.argv[1:])
    tokenizer_seeds()
    job_spec_seeds()
    jsonl_seeds()


if __name__ == "__main__":
    main()
