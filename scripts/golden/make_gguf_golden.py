#!/usr/bin/env python3
"""Writes the GGUF golden files in tests/golden/gguf/ with the reference `gguf` package.

    python3 -m venv /tmp/ggufvenv && /tmp/ggufvenv/bin/pip install gguf==0.19.0 numpy==2.4.6
    /tmp/ggufvenv/bin/python scripts/golden/make_gguf_golden.py tests/golden/gguf
    /tmp/ggufvenv/bin/python scripts/golden/make_gguf_golden.py --smollm2 FILE.gguf  # test table

Files:
  types.gguf             one metadata key of every GGUF value type and an array of each, and one
                         tensor per dequantizable ggml type (F32, F16, Q8_0, Q4_0, Q4_1) built from
                         random raw blocks (so every nibble and int8 value occurs);
  types.expected.json    those tensors dequantized by gguf.quants.dequantize (float32 values as
                         decimal doubles, exact) with their numpy shapes, and the metadata values;
  tiny_llama.gguf        a 2-layer llama as llama.cpp's convert_hf_to_gguf.py writes it: q/k rows
                         permuted with its `permute`, mixed tensor types, a 260-token byte-level BPE
                         vocabulary, general.alignment 64;
  tiny_llama_expected.safetensors  the Hugging Face tensors the import must give back: each tensor
                         after the same quantization round trip, un-permuted with numpy (an
                         independent inverse of `permute`).
Deterministic (seeded).
"""
import json
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from safetensors.numpy import save_file

RNG = np.random.default_rng(1234)


def random_blocks(qtype, rows, cols):
    """Random raw blocks with finite fp16 scales; returns the uint8 array (rows, bytes per row)."""
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = rows * cols // block_size
    raw = RNG.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    n_scales = 2 if qtype == Q.Q4_1 else 1
    scales = RNG.uniform(-0.05, 0.05, size=(n_blocks, n_scales)).astype(np.float16)
    raw[:, : 2 * n_scales] = scales.view(np.uint8).reshape(n_blocks, 2 * n_scales)
    return raw.reshape(rows, cols // block_size * type_size)


def write_types(out_dir):
    path = os.path.join(out_dir, "types.gguf")
    w = gguf.GGUFWriter(path, "test")
    metadata = {}
    scalars = [
        ("test.u8", 200, gguf.GGUFValueType.UINT8), ("test.i8", -100, gguf.GGUFValueType.INT8),
        ("test.u16", 60000, gguf.GGUFValueType.UINT16), ("test.i16", -30000, gguf.GGUFValueType.INT16),
        ("test.u32", 4000000000, gguf.GGUFValueType.UINT32),
        ("test.i32", -2000000000, gguf.GGUFValueType.INT32),
        ("test.u64", 18000000000000000000, gguf.GGUFValueType.UINT64),
        ("test.i64", -9000000000000000000, gguf.GGUFValueType.INT64),
        ("test.f32", 0.1, gguf.GGUFValueType.FLOAT32), ("test.f64", 0.1, gguf.GGUFValueType.FLOAT64),
        ("test.bool", True, gguf.GGUFValueType.BOOL),
        ("test.string", "héllo wörld", gguf.GGUFValueType.STRING),
    ]
    for key, value, vtype in scalars:
        w.add_key_value(key, value, vtype)
    w.add_key_value("test.array_i32", [1, -2, 3], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.INT32)
    w.add_key_value("test.array_f32", [0.5, -1.25], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.FLOAT32)
    w.add_key_value("test.array_bool", [True, False], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.BOOL)
    w.add_key_value("test.array_string", ["a", "", "ccc"], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.STRING)

    tensors = {}
    f32 = RNG.standard_normal((3, 64)).astype(np.float32)
    w.add_tensor("t_f32", f32)
    tensors["t_f32"] = (f32, [3, 64])
    f16 = RNG.standard_normal((2, 3, 32)).astype(np.float16)
    w.add_tensor("t_f16", f16)
    tensors["t_f16"] = (f16.astype(np.float32), [2, 3, 32])
    for name, qtype in [("t_q8_0", Q.Q8_0), ("t_q4_0", Q.Q4_0), ("t_q4_1", Q.Q4_1)]:
        raw = random_blocks(qtype, 4, 64)
        w.add_tensor(name, raw, raw_dtype=qtype)
        tensors[name] = (gguf.quants.dequantize(raw, qtype), [4, 64])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # Read back with the reference reader: this is what the C++ reader must see.
    reader = gguf.GGUFReader(path)
    expected = {"version": int(reader.fields["GGUF.version"].contents()), "tensors": {}}
    for t in reader.tensors:
        values, shape = tensors[t.name]
        expected["tensors"][t.name] = {
            "type": t.tensor_type.name, "shape": shape, "ne": [int(d) for d in t.shape],
            "values": [float(v) for v in np.asarray(values, dtype=np.float32).reshape(-1)],
        }
        ref = gguf.quants.dequantize(t.data, t.tensor_type).reshape(-1)
        assert np.array_equal(ref, np.asarray(values, np.float32).reshape(-1)), t.name
    with open(os.path.join(out_dir, "types.expected.json"), "w") as f:
        json.dump(expected, f, indent=0)
        f.write("\n")


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


def permute(weights, n_head, n_head_kv):
    """convert_hf_to_gguf.py LlamaModel.permute, verbatim."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2)
            .reshape(weights.shape))


def unpermute(weights, n_head):
    """The inverse, written independently: llama.cpp row h*D + 2j + s is HF row h*D + s*D/2 + j."""
    rows, cols = weights.shape
    d = rows // n_head
    return weights.reshape(n_head, d // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def write_tiny_llama(out_dir):
    hidden, layers, heads, kv_heads, ffn = 64, 2, 4, 2, 96
    head_dim = hidden // heads
    alphabet = bytes_to_unicode()
    tokens = ["<|endoftext|>"] + alphabet + ["Ġt", "he", "Ġthe"]
    merges = ["Ġ t", "h e", "Ġt he"]
    vocab = len(tokens)

    hf = {}
    hf["model.embed_tokens.weight"] = RNG.standard_normal((vocab, hidden)).astype(np.float32) * 0.02
    hf["model.norm.weight"] = 1 + 0.1 * RNG.standard_normal(hidden).astype(np.float32)
    for i in range(layers):
        p = f"model.layers.{i}."
        hf[p + "input_layernorm.weight"] = 1 + 0.1 * RNG.standard_normal(hidden).astype(np.float32)
        hf[p + "post_attention_layernorm.weight"] = 1 + 0.1 * RNG.standard_normal(hidden).astype(np.float32)
        hf[p + "self_attn.q_proj.weight"] = RNG.standard_normal((heads * head_dim, hidden)).astype(np.float32) * 0.02
        hf[p + "self_attn.k_proj.weight"] = RNG.standard_normal((kv_heads * head_dim, hidden)).astype(np.float32) * 0.02
        hf[p + "self_attn.v_proj.weight"] = RNG.standard_normal((kv_heads * head_dim, hidden)).astype(np.float32) * 0.02
        hf[p + "self_attn.o_proj.weight"] = RNG.standard_normal((hidden, heads * head_dim)).astype(np.float32) * 0.02
        hf[p + "mlp.gate_proj.weight"] = RNG.standard_normal((ffn, hidden)).astype(np.float32) * 0.02
        hf[p + "mlp.up_proj.weight"] = RNG.standard_normal((ffn, hidden)).astype(np.float32) * 0.02
        hf[p + "mlp.down_proj.weight"] = RNG.standard_normal((hidden, ffn)).astype(np.float32) * 0.02

    # (gguf name, hf name, ggml type, permute heads or None)
    plan = [("token_embd.weight", "model.embed_tokens.weight", Q.Q8_0, None),
            ("output_norm.weight", "model.norm.weight", Q.F32, None)]
    for i in range(layers):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        plan += [
            (b + "attn_norm.weight", p + "input_layernorm.weight", Q.F32, None),
            (b + "ffn_norm.weight", p + "post_attention_layernorm.weight", Q.F32, None),
            (b + "attn_q.weight", p + "self_attn.q_proj.weight", Q.Q8_0 if i == 0 else Q.F32, heads),
            (b + "attn_k.weight", p + "self_attn.k_proj.weight", Q.Q4_0 if i == 0 else Q.F32, kv_heads),
            (b + "attn_v.weight", p + "self_attn.v_proj.weight", Q.F16, None),
            (b + "attn_output.weight", p + "self_attn.o_proj.weight", Q.Q4_1, None),
            (b + "ffn_gate.weight", p + "mlp.gate_proj.weight", Q.Q4_0, None),
            (b + "ffn_up.weight", p + "mlp.up_proj.weight", Q.Q4_1, None),
            (b + "ffn_down.weight", p + "mlp.down_proj.weight", Q.Q8_0, None),
        ]

    path = os.path.join(out_dir, "tiny_llama.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_custom_alignment(64)
    w.add_name("tiny llama")
    w.add_block_count(layers)
    w.add_context_length(128)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(100000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)
    w.add_rope_dimension_count(head_dim)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types([3] + [1] * (vocab - 1))
    w.add_token_merges(merges)
    w.add_bos_token_id(0)
    w.add_eos_token_id(0)

    expected = {}
    for gguf_name, hf_name, qtype, n_head in plan:
        data = hf[hf_name]
        if n_head is not None:
            data = permute(data, heads, None if n_head == heads else n_head)
        if qtype == Q.F32:
            stored = data.astype(np.float32)
            w.add_tensor(gguf_name, stored)
            back = stored
        elif qtype == Q.F16:
            stored = data.astype(np.float16)
            w.add_tensor(gguf_name, stored)
            back = stored.astype(np.float32)
        else:
            stored = gguf.quants.quantize(data, qtype)
            w.add_tensor(gguf_name, stored, raw_dtype=qtype)
            back = gguf.quants.dequantize(stored, qtype).reshape(data.shape)
        if n_head is not None:
            back = unpermute(back, n_head)
            if qtype == Q.F32:
                assert np.array_equal(back, hf[hf_name]), hf_name
        expected[hf_name] = np.ascontiguousarray(back, dtype=np.float32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    save_file(expected, os.path.join(out_dir, "tiny_llama_expected.safetensors"))


SMOLLM2_STAT_TENSORS = [
    ("token_embd.weight", "model.embed_tokens.weight", None),
    ("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 9),
    ("blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight", 3),
    ("blk.29.ffn_down.weight", "model.layers.29.mlp.down_proj.weight", None),
    ("output_norm.weight", "model.norm.weight", None),
]


def print_smollm2_stats(path):
    """Prints the C++ table of GgufImportTest.SmolLm2 from the reference reader."""
    reader = gguf.GGUFReader(path)
    by_name = {t.name: t for t in reader.tensors}
    print("constexpr SmolLm2Stat kSmolLm2Stats[] = {")
    for gguf_name, hf_name, n_head in SMOLLM2_STAT_TENSORS:
        t = by_name[gguf_name]
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        values = values.reshape([int(d) for d in reversed(t.shape)])
        if n_head is not None:
            values = unpermute(values, n_head)
        v64 = values.astype(np.float64)
        rows = values.reshape(values.shape[0], -1) if values.ndim > 1 else values.reshape(1, -1)
        probe_row = 1 if rows.shape[0] > 1 else 0
        probe = ", ".join(repr(float(x)) for x in rows[probe_row, :4])
        print(f'    {{"{hf_name}", {float(np.abs(v64).sum())!r}, {float(v64.sum())!r}, '
              f'{probe_row}, {{{probe}}}}},')
    print("};")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--smollm2":
        print_smollm2_stats(sys.argv[2])
        return
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/gguf"
    os.makedirs(out_dir, exist_ok=True)
    write_types(out_dir)
    write_tiny_llama(out_dir)


if __name__ == "__main__":
    main()
