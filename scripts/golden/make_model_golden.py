#!/usr/bin/env python3
"""Writes tests/golden/models/<name>/: tiny random Hugging Face checkpoints and reference outputs.

For each model family geotrain implements, builds a tiny transformers model with fixed seeds,
gives every parameter a non-trivial random value (norm weights near but not equal to one, non-zero
biases, weights large enough that every layer visibly changes the logits), and saves it with
save_pretrained, as a user's checkpoint arrives. Next to it, reference.safetensors holds:

  input_ids  I64 [2, 12]   random token ids
  labels     I64 [2, 12]   input_ids with a few positions set to -100 (ignored by the loss)
  logits     F64 [2, 12, vocab]   transformers' logits, computed in float64
  loss       F64 []        the mean next-token cross-entropy of those logits against `labels`
                           (float64; transformers' own loss upcasts only to float32)

The reference runs in float64 from the float32 weights stored in the checkpoint, with
transformers' default attention (sdpa; eager for GPT-J and DeBERTa, which have no other).
transformers computes RMSNorm statistics, rotary angles and DeBERTa's attention scale in float32
whatever the model's dtype; for this float64 reference those islands are widened to float64
(widened_float32_islands; float32 and 16-bit models compute exactly as before), so the
reference is the exact answer and the C++ float64 run must match it within 1e-9 - a check of the
formulas themselves. The C++ float32 run is compared within 1e-4.
The qwen2 checkpoint is saved in several shards (model.safetensors.index.json) so that sharded
loading is tested on files transformers wrote.

  python3 -m venv /tmp/goldenvenv && /tmp/goldenvenv/bin/pip install -r scripts/golden/requirements.txt
  /tmp/goldenvenv/bin/python scripts/golden/make_model_golden.py [NAME ...]
"""

import contextlib
import os
import shutil
import sys

import torch
from safetensors.torch import save_file
import transformers
from transformers import (BertConfig, BertForSequenceClassification, DebertaV2Config,
                          DebertaV2ForSequenceClassification, GPT2Config,
                          GPT2LMHeadModel, GPTJConfig, GPTJForCausalLM,
                          GPTNeoXConfig, GPTNeoXForCausalLM, LlamaConfig, LlamaForCausalLM,
                          OPTConfig, OPTForCausalLM, Qwen2Config, Qwen2ForCausalLM)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "tests", "golden", "models")
BATCH, SEQ = 2, 12


def models():
    """(directory name, model class, config, max_shard_size or None)."""
    yield ("gpt2", GPT2LMHeadModel,
           GPT2Config(n_embd=32, n_layer=4, n_head=4, n_positions=64, vocab_size=256,
                      layer_norm_epsilon=1e-5, bos_token_id=0, eos_token_id=0), None)
    # Llama as most checkpoints have it: no biases, untied LM head, grouped-query attention.
    yield ("llama", LlamaForCausalLM,
           LlamaConfig(hidden_size=32, intermediate_size=80, num_hidden_layers=4,
                       num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
                       max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=500.0,
                       tie_word_embeddings=False, bos_token_id=0, eos_token_id=0), None)
    # Llama's optional parts: attention_bias (q/k/v/o), mlp_bias, a head_dim that is not
    # hidden_size / num_attention_heads, one key/value head for all, tied embeddings.
    yield ("llama_variant", LlamaForCausalLM,
           LlamaConfig(hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=1, head_dim=12, vocab_size=128,
                       max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=10000.0,
                       attention_bias=True, mlp_bias=True, tie_word_embeddings=True,
                       bos_token_id=0, eos_token_id=0), None)
    # Qwen2: q/k/v biases, tied embeddings, 3 query heads per key/value head, sharded files.
    yield ("qwen2", Qwen2ForCausalLM,
           Qwen2Config(hidden_size=48, intermediate_size=96, num_hidden_layers=4,
                       num_attention_heads=6, num_key_value_heads=2, vocab_size=300,
                       max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=1000000.0,
                       tie_word_embeddings=True, bos_token_id=0, eos_token_id=0), "120KB")
    # OPT with word_embed_proj_dim != hidden_size (project_in / project_out, as OPT-350m),
    # ReLU, tied embeddings, learned positions at offset 2.
    yield ("opt", OPTForCausalLM,
           OPTConfig(hidden_size=32, ffn_dim=72, num_hidden_layers=4, num_attention_heads=4,
                     word_embed_proj_dim=24, max_position_embeddings=64, vocab_size=256,
                     do_layer_norm_before=True, pad_token_id=1, bos_token_id=0,
                     eos_token_id=0), None)
    # GPT-NeoX as Pythia: parallel residual, a quarter of each head rotated (rotary_pct 0.25 of
    # 16 = 4 dimensions), exact GELU, untied embed_out.
    yield ("gpt_neox", GPTNeoXForCausalLM,
           GPTNeoXConfig(hidden_size=32, intermediate_size=80, num_hidden_layers=4,
                         num_attention_heads=2, rotary_pct=0.25, rotary_emb_base=10000,
                         max_position_embeddings=64, vocab_size=256, layer_norm_eps=1e-5,
                         bos_token_id=0, eos_token_id=0), None)
    # GPT-NeoX's options: sequential residual, no attention biases, half the head rotated with
    # another base, tied embeddings.
    yield ("gpt_neox_variant", GPTNeoXForCausalLM,
           GPTNeoXConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, rotary_pct=0.5, rotary_emb_base=500,
                         use_parallel_residual=False, attention_bias=False,
                         tie_word_embeddings=True, max_position_embeddings=64, vocab_size=128,
                         bos_token_id=0, eos_token_id=0), None)
    # GPT-J: interleaved rotary on the first 6 of 8 dimensions of each head, one LayerNorm per
    # block, lm_head with a bias.
    yield ("gptj", GPTJForCausalLM,
           GPTJConfig(n_embd=32, n_layer=4, n_head=4, rotary_dim=6, n_positions=64,
                      vocab_size=256, bos_token_id=0, eos_token_id=0), None)


def classifiers():
    """(directory name, model class, config): sequence classifiers (encoders)."""
    yield ("bert", BertForSequenceClassification,
           BertConfig(hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=64, vocab_size=256,
                      type_vocab_size=2, num_labels=3, layer_norm_eps=1e-12, pad_token_id=0))
    # DeBERTa-v3 as its checkpoints are configured: relative attention with log buckets (8
    # buckets: positions 5..11 apart fall into the log branch, bucket(11) = 6), both
    # disentangled terms (c2p and p2c) through the shared query/key projections, LayerNorm on the
    # relative embeddings, no absolute positions, no token types.
    yield ("deberta_v2", DebertaV2ForSequenceClassification,
           DebertaV2Config(hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=64, vocab_size=256,
                           relative_attention=True, position_buckets=8, max_relative_positions=-1,
                           pos_att_type=["p2c", "c2p"], share_att_key=True,
                           norm_rel_ebd="layer_norm", position_biased_input=False,
                           type_vocab_size=0, num_labels=3, pad_token_id=0))
    # DeBERTa-v2's options: its own pos_key_proj (share_att_key false) for c2p alone, no buckets
    # and a span of 6 (positions further apart are clamped), absolute positions and token types
    # added to 24-wide embeddings that embed_proj maps to the hidden size, no norm on the
    # relative embeddings, other activations.
    yield ("deberta_v2_variant", DebertaV2ForSequenceClassification,
           DebertaV2Config(hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                           intermediate_size=48, max_position_embeddings=64, vocab_size=256,
                           relative_attention=True, position_buckets=-1, max_relative_positions=6,
                           pos_att_type=["c2p"], share_att_key=False, norm_rel_ebd="none",
                           position_biased_input=True, embedding_size=24, type_vocab_size=2,
                           hidden_act="gelu_new", pooler_hidden_act="relu", layer_norm_eps=1e-5,
                           num_labels=2, pad_token_id=0))
    # p2c alone through its own pos_query_proj, log buckets that reach past the span (6 buckets,
    # max_relative_positions 10: positions 10 and 11 apart fall into bucket 6, one past the span
    # of 6, and are clamped to the table's edge).
    yield ("deberta_v2_p2c", DebertaV2ForSequenceClassification,
           DebertaV2Config(hidden_size=32, num_hidden_layers=4, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=64, vocab_size=128,
                           relative_attention=True, position_buckets=6, max_relative_positions=10,
                           pos_att_type="p2c", share_att_key=False, norm_rel_ebd="layer_norm",
                           position_biased_input=False, type_vocab_size=0, num_labels=4,
                           pad_token_id=0))
    # deberta-v2-xlarge's ConvLayer (conv_kernel_size > 0) after the first layer, on the
    # buckets and options of the deberta_v2 golden: a 3-wide Conv1d over the first layer's input,
    # padded positions zeroed, gelu, added to the first layer's output, LayerNorm, times the mask.
    yield ("deberta_v2_conv", DebertaV2ForSequenceClassification,
           DebertaV2Config(hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=64, vocab_size=256,
                           relative_attention=True, position_buckets=8, max_relative_positions=-1,
                           pos_att_type=["p2c", "c2p"], share_att_key=True,
                           norm_rel_ebd="layer_norm", position_biased_input=False,
                           type_vocab_size=0, num_labels=3, pad_token_id=0,
                           conv_kernel_size=3, conv_groups=1, conv_act="gelu"))
    # A grouped (2 groups), 5-wide convolution with gelu_new, on deberta_v2_variant's options
    # (absolute positions, token types, embed_proj, c2p alone, no buckets).
    yield ("deberta_v2_conv_groups", DebertaV2ForSequenceClassification,
           DebertaV2Config(hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                           intermediate_size=48, max_position_embeddings=64, vocab_size=256,
                           relative_attention=True, position_buckets=-1, max_relative_positions=6,
                           pos_att_type=["c2p"], share_att_key=False, norm_rel_ebd="none",
                           position_biased_input=True, embedding_size=24, type_vocab_size=2,
                           hidden_act="gelu_new", pooler_hidden_act="relu", layer_norm_eps=1e-5,
                           num_labels=2, pad_token_id=0,
                           conv_kernel_size=5, conv_groups=2, conv_act="gelu_new"))


def make_classifier(name, model_class, config, seed):
    """Like make(), for a classifier: reference.safetensors holds input_ids, attention_mask
    (the second sequence padded after 8 tokens), token_type_ids (sentence B from position 5; only
    when the model has token types: DeBERTa-v3 has none, and the C++ test then passes none),
    labels [B], logits [B, num_labels] and the mean cross-entropy loss, in float64. The loss is
    computed here from the float64 logits: DeBERTa's own casts the logits to float32 first."""
    torch.manual_seed(seed)
    model = model_class(config).float().eval()
    # LayerNorm weights near one in the classifiers after bert (whose golden predates this and
    # keeps its values): DeBERTa's attention patterns are only visible with unit-size activations.
    randomize(model, layer_norm_near_one=model_class is not BertForSequenceClassification)
    out_dir = os.path.join(OUT, name)
    shutil.rmtree(out_dir, ignore_errors=True)
    model.save_pretrained(out_dir)

    input_ids = torch.randint(1, config.vocab_size, (BATCH, SEQ), dtype=torch.int64)
    attention_mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    attention_mask[1, 8:] = 0
    input_ids[1, 8:] = config.pad_token_id
    labels = torch.tensor([min(2, config.num_labels - 1), 0], dtype=torch.int64)
    # DeBERTa has only its own (eager) attention.
    attention = "eager" if model_class is DebertaV2ForSequenceClassification else "sdpa"
    reloaded = model_class.from_pretrained(out_dir, attn_implementation=attention).eval()
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask)
    if config.type_vocab_size > 0:
        token_type_ids = torch.zeros(BATCH, SEQ, dtype=torch.int64)
        token_type_ids[:, 5:] = 1
        inputs["token_type_ids"] = token_type_ids
    if model_class is DebertaV2ForSequenceClassification:
        check_deberta_buckets(config)
    with torch.no_grad():
        float32_logits = reloaded(**inputs).logits.double()
        with widened_float32_islands():
            assert torch.equal(reloaded(**inputs).logits.double(), float32_logits)
            output = reloaded.double()(**inputs, labels=labels)
    logits = output.logits
    loss = torch.nn.functional.cross_entropy(logits, labels)
    assert abs(loss.item() - output.loss.item()) < 1e-5, (loss.item(), output.loss.item())
    save_file({
        **inputs,
        "labels": labels,
        "logits": logits.contiguous(),
        "loss": loss.reshape([]).contiguous(),
    }, os.path.join(out_dir, "reference.safetensors"),
        metadata={"source": f"make_model_golden.py, transformers {transformers.__version__}, "
                            f"torch {torch.__version__}"})
    print(f"{name}: loss {loss.item():.6f}; logits {logits.tolist()}; transformers "
          f"float32 vs float64 max diff {(float32_logits - logits).abs().max().item():.2e}")


def check_deberta_buckets(config):
    """transformers computes DeBERTa's log buckets in float32 whatever the dtype (and so does
    geotrain); they are integers, and for these configs float64 gives the same ones. Also checks
    that the log branch is taken (some bucket differs from the plain relative position)."""
    from transformers.models.deberta_v2 import modeling_deberta_v2
    if not config.relative_attention or getattr(config, "position_buckets", -1) <= 0:
        return
    buckets = config.position_buckets
    max_position = config.max_relative_positions
    if max_position < 1:
        max_position = config.max_position_embeddings
    relative = torch.arange(-(SEQ - 1), SEQ, dtype=torch.int64)
    in_float32 = modeling_deberta_v2.make_log_bucket_position(relative, buckets, max_position)
    mid = buckets // 2
    absolute = relative.abs().double()
    log_pos = torch.ceil(torch.log(absolute.clamp(min=1) / mid) /
                         torch.log(torch.tensor((max_position - 1) / mid, dtype=torch.float64)) *
                         (mid - 1)) + mid
    in_float64 = torch.where(absolute <= mid, relative.double(), log_pos * relative.sign())
    assert torch.equal(in_float32.long(), in_float64.long()), (in_float32, in_float64)
    assert not torch.equal(in_float32.long(), relative), "the log branch is never taken"
    print(f"  buckets of relative positions {relative.tolist()}: {in_float32.long().tolist()}")


@contextlib.contextmanager
def widened_float32_islands():
    """Computes RMSNorm statistics, rotary angles, GPT-J's attention scores and DeBERTa's
    attention scale (sqrt(head_dim * (1 + len(pos_att_type))), a float32 tensor cast to the
    dtype) in max(dtype, float32), not always float32."""
    from transformers.models.deberta_v2 import modeling_deberta_v2
    from transformers.models.gpt_neox import modeling_gpt_neox
    from transformers.models.gptj import modeling_gptj
    from transformers.models.llama import modeling_llama
    from transformers.models.qwen2 import modeling_qwen2

    def rms_norm_forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.promote_types(input_dtype, torch.float32))
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)

    @torch.no_grad()
    def rotary_forward(self, x, position_ids):
        assert self.rope_type == "default" and self.attention_scaling == 1.0
        dtype = torch.promote_types(x.dtype, torch.float32)
        config = self.config
        base = config.rope_parameters["rope_theta"]
        head_dim = (getattr(config, "head_dim", None)
                    or config.hidden_size // config.num_attention_heads)
        dim = int(head_dim * config.rope_parameters.get("partial_rotary_factor", 1.0))
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=dtype) / dim))
        freqs = position_ids[..., None].to(dtype) * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    # GPT-J keeps a float32 sin|cos table (create_sinusoidal_positions) and casts query and key
    # to float32 before the scores.
    def gptj_embed_positions(self, position_ids):
        dtype = torch.promote_types(self.q_proj.weight.dtype, torch.float32)
        dim = self.pos_embd_dim
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=dtype) / dim))
        angles = torch.arange(self.embed_positions.shape[0], dtype=dtype)[:, None] * inv_freq
        table = torch.cat((torch.sin(angles), torch.cos(angles)), dim=1)
        return table.repeat(position_ids.shape[0], 1, 1)

    original_gptj_attn = modeling_gptj.GPTJAttention._attn

    def gptj_attn(self, query, key, value, attention_mask=None):
        if query.dtype != torch.float64:
            return original_gptj_attn(self, query, key, value, attention_mask)
        weights = torch.matmul(query, key.transpose(-1, -2)) / self.scale_attn
        if attention_mask is not None:
            weights = weights + attention_mask
        weights = torch.nn.functional.softmax(weights, dim=-1)
        return torch.matmul(weights, value), weights

    def deberta_scaled_size_sqrt(query_layer, scale_factor):
        dtype = torch.promote_types(query_layer.dtype, torch.float32)
        return torch.sqrt(torch.tensor(query_layer.size(-1), dtype=dtype) * scale_factor)

    patched = [(modeling_gptj.GPTJAttention, "_get_embed_positions", gptj_embed_positions),
               (modeling_deberta_v2, "scaled_size_sqrt", deberta_scaled_size_sqrt),
               (modeling_gptj.GPTJAttention, "_attn", gptj_attn),
               (modeling_gpt_neox.GPTNeoXRotaryEmbedding, "forward", rotary_forward)]
    for module, prefix in ((modeling_llama, "Llama"), (modeling_qwen2, "Qwen2")):
        patched.append((getattr(module, prefix + "RMSNorm"), "forward", rms_norm_forward))
        patched.append((getattr(module, prefix + "RotaryEmbedding"), "forward", rotary_forward))
    originals = [(cls, name, getattr(cls, name)) for cls, name, _ in patched]
    for cls, name, replacement in patched:
        setattr(cls, name, replacement)
    try:
        yield
    finally:
        for cls, name, original in originals:
            setattr(cls, name, original)


def randomize(model, layer_norm_near_one=False):
    """Values far from the default init, so a wrong bias, norm or rotation shows in the logits.
    Norm weights are near one; BERT's "LayerNorm.weight" too only with layer_norm_near_one."""
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith(".bias"):
                parameter.copy_(0.1 * torch.randn_like(parameter))
            elif (name.endswith("norm.weight") or ".ln_" in name or
                  (layer_norm_near_one and name.endswith("LayerNorm.weight"))):
                parameter.copy_(1.0 + 0.2 * torch.randn_like(parameter))
            else:
                parameter.copy_(0.15 * torch.randn_like(parameter))


def make(name, model_class, config, max_shard_size, seed):
    torch.manual_seed(seed)
    model = model_class(config).float().eval()
    randomize(model)
    out_dir = os.path.join(OUT, name)
    shutil.rmtree(out_dir, ignore_errors=True)
    kwargs = {"max_shard_size": max_shard_size} if max_shard_size else {}
    model.save_pretrained(out_dir, **kwargs)
    generation_config = os.path.join(out_dir, "generation_config.json")
    if os.path.exists(generation_config):
        os.remove(generation_config)

    vocab = config.vocab_size
    input_ids = torch.randint(0, vocab, (BATCH, SEQ), dtype=torch.int64)
    labels = input_ids.clone()
    labels[0, 3] = -100
    labels[1, 7] = -100
    # Reload what was written, as the C++ side does.
    # GPT-J has only its own (eager) attention.
    attention = "eager" if model_class is GPTJForCausalLM else "sdpa"
    reloaded = model_class.from_pretrained(out_dir, attn_implementation=attention).eval()
    with torch.no_grad():
        float32_logits = reloaded(input_ids=input_ids).logits.double()
        with widened_float32_islands():
            # The widening changes nothing in float32.
            assert torch.equal(reloaded(input_ids=input_ids).logits.double(), float32_logits)
            output = reloaded.double()(input_ids=input_ids, labels=labels)
        logits = output.logits
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, vocab), labels[:, 1:].reshape(-1), ignore_index=-100)
        assert abs(loss.item() - output.loss.item()) < 1e-5, (loss.item(), output.loss.item())
    save_file({
        "input_ids": input_ids,
        "labels": labels,
        "logits": logits.contiguous(),
        "loss": loss.reshape([]).contiguous(),
    }, os.path.join(out_dir, "reference.safetensors"),
        # One key: safetensors writes metadata in hash order, and the file should be reproducible.
        metadata={"source": f"make_model_golden.py, transformers {transformers.__version__}, "
                            f"torch {torch.__version__}"})
    sizes = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir))
    print(f"{name}: {sizes} bytes in {sorted(os.listdir(out_dir))}; loss {loss.item():.6f}; "
          f"logit range {logits.abs().max().item():.3f}; transformers float32 vs float64 "
          f"max diff {(float32_logits - logits).abs().max().item():.2e}")


def main():
    """Writes every golden model, or only those named on the command line (their seeds stay)."""
    only = set(sys.argv[1:])
    os.makedirs(OUT, exist_ok=True)
    for seed, (name, model_class, config, shard) in enumerate(models()):
        if not only or name in only:
            make(name, model_class, config, shard, seed=1000 + seed)
    for seed, (name, model_class, config) in enumerate(classifiers()):
        if not only or name in only:
            make_classifier(name, model_class, config, seed=2000 + seed)


if __name__ == "__main__":
    main()
