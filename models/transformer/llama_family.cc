#include "models/transformer/llama_family.h"

#include "models/transformer/attention.h"
#include "models/transformer/layers.h"
#include "models/transformer/rotary.h"

namespace geotrain::models {
namespace {

// RMSNorm as transformers computes it: statistics in float32 for 16-bit activations (float64
// stays float64), scaled by the weight after the cast back to the activations' dtype.
at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const at::Tensor wide = x.to(at::promote_types(x.scalar_type(), at::kFloat));
  const at::Tensor inv_rms = at::rsqrt(wide.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * (wide * inv_rms).to(x.scalar_type());
}

class LlamaEmbedding final : public StageInput {
 public:
  explicit LlamaEmbedding(ParameterTable& p) : token_(p.Get("model.embed_tokens.weight")) {}

  at::Tensor Forward(const at::Tensor& token_ids, const SequenceContext&) const override {
    return at::embedding(token_, token_ids);
  }

 private:
  at::Tensor token_;  // [vocab, H]
};

class LlamaBlock final : public TransformerBlock {
 public:
  LlamaBlock(const ModelConfig& config, int64_t layer, ParameterTable& p) : config_(config) {
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    const bool qwen2 = config.family == ModelFamily::kQwen2;
    input_norm_ = p.Get(prefix + "input_layernorm.weight");
    q_ = GetLinear(p, prefix + "self_attn.q_proj", config.attention_bias);
    k_ = GetLinear(p, prefix + "self_attn.k_proj", config.attention_bias);
    v_ = GetLinear(p, prefix + "self_attn.v_proj", config.attention_bias);
    o_ = GetLinear(p, prefix + "self_attn.o_proj", config.attention_bias && !qwen2);
    post_attention_norm_ = p.Get(prefix + "post_attention_layernorm.weight");
    gate_ = GetLinear(p, prefix + "mlp.gate_proj", config.mlp_bias);
    up_ = GetLinear(p, prefix + "mlp.up_proj", config.mlp_bias);
    down_ = GetLinear(p, prefix + "mlp.down_proj", config.mlp_bias);
  }

  at::Tensor Forward(const at::Tensor& x, const SequenceContext&) const override {
    const int64_t batch = x.size(0), seq = x.size(1);
    const auto split_heads = [&](const at::Tensor& t, int64_t heads) {
      return t.view({batch, seq, heads, config_.head_dim}).transpose(1, 2);
    };
    const RotaryTables rotary =
        MakeRotaryTables(seq, config_.head_dim, config_.rope_theta, x.options());

    const at::Tensor normed = RmsNorm(x, input_norm_, config_.norm_eps);
    const at::Tensor query = ApplyRotary(split_heads(q_(normed), config_.num_heads), rotary);
    const at::Tensor key = ApplyRotary(split_heads(k_(normed), config_.num_kv_heads), rotary);
    const at::Tensor value = split_heads(v_(normed), config_.num_kv_heads);
    const at::Tensor attended = CausalSelfAttention(query, key, value)
                                    .transpose(1, 2)
                                    .reshape({batch, seq, config_.num_heads * config_.head_dim});
    const at::Tensor residual = x + o_(attended);

    const at::Tensor normed_2 = RmsNorm(residual, post_attention_norm_, config_.norm_eps);
    return residual + down_(at::silu(gate_(normed_2)) * up_(normed_2));
  }

 private:
  ModelConfig config_;
  at::Tensor input_norm_;
  Linear q_, k_, v_, o_;
  at::Tensor post_attention_norm_;
  Linear gate_, up_, down_;
};

class LlamaOutput final : public StageOutput {
 public:
  LlamaOutput(const ModelConfig& config, ParameterTable& p)
      : eps_(config.norm_eps),
        norm_(p.Get("model.norm.weight")),
        lm_head_(
            p.Get(config.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight")) {}

  at::Tensor Forward(const at::Tensor& hidden, const SequenceContext&) const override {
    return at::linear(RmsNorm(hidden, norm_, eps_), lm_head_);
  }

 private:
  double eps_;
  at::Tensor norm_;
  at::Tensor lm_head_;  // [vocab, H]: embed_tokens when tied
};

}  // namespace

StageParts MakeLlamaStageParts(const ModelConfig& config, const StagePlan& plan,
                               ParameterTable& parameters) {
  StageParts parts;
  if (plan.is_first) parts.input = std::make_unique<LlamaEmbedding>(parameters);
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    parts.blocks.push_back(std::make_unique<LlamaBlock>(config, layer, parameters));
  }
  if (plan.is_last) parts.output = std::make_unique<LlamaOutput>(config, parameters);
  return parts;
}

}  // namespace geotrain::models
