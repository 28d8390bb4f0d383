#include "models/transformer/gpt_neox_family.h"

#include "models/transformer/attention.h"
#include "models/transformer/layers.h"
#include "models/transformer/rotary.h"

namespace geotrain::models {
namespace {

class GptNeoXBlock final : public TransformerBlock {
 public:
  GptNeoXBlock(const ModelConfig& config, int64_t layer, ParameterTable& p) : config_(config) {
    const std::string prefix = "gpt_neox.layers." + std::to_string(layer) + ".";
    input_norm_ = GetLayerNorm(p, prefix + "input_layernorm", config.norm_eps);
    post_attention_norm_ = GetLayerNorm(p, prefix + "post_attention_layernorm", config.norm_eps);
    query_key_value_ = GetLinear(p, prefix + "attention.query_key_value", config.attention_bias);
    dense_ = GetLinear(p, prefix + "attention.dense", config.attention_bias);
    up_ = GetLinear(p, prefix + "mlp.dense_h_to_4h", true);
    down_ = GetLinear(p, prefix + "mlp.dense_4h_to_h", true);
  }

  at::Tensor Forward(const at::Tensor& x, const SequenceContext&) const override {
    const at::Tensor attention = Attention(input_norm_(x));
    if (config_.parallel_residual) return x + attention + Mlp(post_attention_norm_(x));
    const at::Tensor residual = x + attention;
    return residual + Mlp(post_attention_norm_(residual));
  }

 private:
  at::Tensor Attention(const at::Tensor& normed) const {
    const int64_t batch = normed.size(0), seq = normed.size(1), d = config_.head_dim;
    // [B, S, heads, 3 * D] -> [B, heads, S, 3 * D]: each head's q, k and v are adjacent.
    const at::Tensor qkv =
        query_key_value_(normed).view({batch, seq, config_.num_heads, 3 * d}).transpose(1, 2);
    const RotaryTables rotary =
        MakeRotaryTables(seq, config_.rotary_dim, config_.rope_theta, normed.options());
    const at::Tensor attended =
        CausalSelfAttention(ApplyRotary(qkv.narrow(-1, 0, d), rotary),
                            ApplyRotary(qkv.narrow(-1, d, d), rotary), qkv.narrow(-1, 2 * d, d))
            .transpose(1, 2)
            .reshape({batch, seq, config_.hidden_size});
    return dense_(attended);
  }

  at::Tensor Mlp(const at::Tensor& normed) const {
    return down_(Activate(config_.activation, up_(normed)));
  }

  ModelConfig config_;
  LayerNorm input_norm_, post_attention_norm_;
  Linear query_key_value_;  // [3H, H]
  Linear dense_;
  Linear up_, down_;
};

}  // namespace

StageParts MakeGptNeoXStageParts(const ModelConfig& config, const StagePlan& plan,
                                 ParameterTable& parameters) {
  StageParts parts;
  if (plan.is_first) {
    parts.input = std::make_unique<TokenEmbedding>(parameters.Get("gpt_neox.embed_in.weight"));
  }
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    parts.blocks.push_back(std::make_unique<GptNeoXBlock>(config, layer, parameters));
  }
  if (plan.is_last) {
    parts.output = std::make_unique<LayerNormHead>(
        GetLayerNorm(parameters, "gpt_neox.final_layer_norm", config.norm_eps),
        Linear{parameters.Get(config.tie_word_embeddings ? "gpt_neox.embed_in.weight"
                                                         : "embed_out.weight"),
               at::Tensor()});
  }
  return parts;
}

}  // namespace geotrain::models
