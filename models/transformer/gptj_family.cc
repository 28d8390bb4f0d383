#include "models/transformer/gptj_family.h"

#include "models/transformer/attention.h"
#include "models/transformer/layers.h"
#include "models/transformer/rotary.h"

namespace geotrain::models {
namespace {

class GptJBlock final : public TransformerBlock {
 public:
  GptJBlock(const ModelConfig& config, int64_t layer, ParameterTable& p) : config_(config) {
    const std::string prefix = "transformer.h." + std::to_string(layer) + ".";
    norm_ = GetLayerNorm(p, prefix + "ln_1", config.norm_eps);
    q_ = GetLinear(p, prefix + "attn.q_proj", false);
    k_ = GetLinear(p, prefix + "attn.k_proj", false);
    v_ = GetLinear(p, prefix + "attn.v_proj", false);
    out_ = GetLinear(p, prefix + "attn.out_proj", false);
    fc_in_ = GetLinear(p, prefix + "mlp.fc_in", true);
    fc_out_ = GetLinear(p, prefix + "mlp.fc_out", true);
  }

  at::Tensor Forward(const at::Tensor& x, const SequenceContext&) const override {
    const int64_t batch = x.size(0), seq = x.size(1);
    const auto split_heads = [&](const at::Tensor& t) {
      return t.view({batch, seq, config_.num_heads, config_.head_dim}).transpose(1, 2);
    };
    const at::Tensor normed = norm_(x);
    const RotaryTables rotary = MakeRotaryTables(seq, config_.rotary_dim, config_.rope_theta,
                                                 x.options(), RotaryPairing::kInterleaved);
    const at::Tensor attended =
        CausalSelfAttention(ApplyRotary(split_heads(q_(normed)), rotary),
                            ApplyRotary(split_heads(k_(normed)), rotary), split_heads(v_(normed)))
            .transpose(1, 2)
            .reshape({batch, seq, config_.hidden_size});
    return x + out_(attended) + fc_out_(Activate(config_.activation, fc_in_(normed)));
  }

 private:
  ModelConfig config_;
  LayerNorm norm_;
  Linear q_, k_, v_, out_;
  Linear fc_in_, fc_out_;
};

}  // namespace

StageParts MakeGptJStageParts(const ModelConfig& config, const StagePlan& plan,
                              ParameterTable& parameters) {
  StageParts parts;
  if (plan.is_first) {
    parts.input = std::make_unique<TokenEmbedding>(parameters.Get("transformer.wte.weight"));
  }
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    parts.blocks.push_back(std::make_unique<GptJBlock>(config, layer, parameters));
  }
  if (plan.is_last) {
    parts.output = std::make_unique<LayerNormHead>(
        GetLayerNorm(parameters, "transformer.ln_f", config.norm_eps),
        Linear{parameters.Get(config.tie_word_embeddings ? "transformer.wte.weight"
                                                         : "lm_head.weight"),
               parameters.Get("lm_head.bias")});
  }
  return parts;
}

}  // namespace geotrain::models
