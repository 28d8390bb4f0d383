#include "models/transformer/opt_family.h"

#include "models/transformer/attention.h"
#include "models/transformer/layers.h"

namespace geotrain::models {
namespace {

// OPTLearnedPositionalEmbedding looks position p up at row p + 2 (rows 0 and 1 are a fairseq
// leftover).
constexpr int64_t kPositionOffset = 2;
const std::string kPrefix = "model.decoder.";

class OptEmbedding final : public StageInput {
 public:
  OptEmbedding(const ModelConfig& config, ParameterTable& p)
      : token_(p.Get(kPrefix + "embed_tokens.weight")),
        position_(p.Get(kPrefix + "embed_positions.weight")) {
    if (config.embedding_dim != config.hidden_size) {
      project_in_ = GetLinear(p, kPrefix + "project_in", false);
    }
  }

  at::Tensor Forward(const at::Tensor& token_ids, const SequenceContext&) const override {
    at::Tensor embedded = at::embedding(token_, token_ids);
    if (project_in_.weight.defined()) embedded = project_in_(embedded);
    const at::Tensor positions =
        at::arange(token_ids.size(1), token_ids.options()) + kPositionOffset;
    return embedded + at::embedding(position_, positions);
  }

 private:
  at::Tensor token_;     // [vocab, word_embed_proj_dim]
  at::Tensor position_;  // [max_position_embeddings + 2, H]
  Linear project_in_;    // undefined unless word_embed_proj_dim != hidden_size
};

class OptBlock final : public TransformerBlock {
 public:
  OptBlock(const ModelConfig& config, int64_t layer, ParameterTable& p) : config_(config) {
    const std::string prefix = kPrefix + "layers." + std::to_string(layer) + ".";
    const bool bias = config.attention_bias;
    attention_norm_ = GetLayerNorm(p, prefix + "self_attn_layer_norm", config.norm_eps);
    q_ = GetLinear(p, prefix + "self_attn.q_proj", bias);
    k_ = GetLinear(p, prefix + "self_attn.k_proj", bias);
    v_ = GetLinear(p, prefix + "self_attn.v_proj", bias);
    out_ = GetLinear(p, prefix + "self_attn.out_proj", bias);
    mlp_norm_ = GetLayerNorm(p, prefix + "final_layer_norm", config.norm_eps);
    fc1_ = GetLinear(p, prefix + "fc1", bias);
    fc2_ = GetLinear(p, prefix + "fc2", bias);
  }

  at::Tensor Forward(const at::Tensor& x, const SequenceContext&) const override {
    const int64_t batch = x.size(0), seq = x.size(1);
    const auto split_heads = [&](const at::Tensor& t) {
      return t.view({batch, seq, config_.num_heads, config_.head_dim}).transpose(1, 2);
    };
    const at::Tensor normed = attention_norm_(x);
    const at::Tensor attended =
        CausalSelfAttention(split_heads(q_(normed)), split_heads(k_(normed)),
                            split_heads(v_(normed)))
            .transpose(1, 2)
            .reshape({batch, seq, config_.hidden_size});
    const at::Tensor residual = x + out_(attended);
    return residual + fc2_(Activate(config_.activation, fc1_(mlp_norm_(residual))));
  }

 private:
  ModelConfig config_;
  LayerNorm attention_norm_;
  Linear q_, k_, v_, out_;
  LayerNorm mlp_norm_;
  Linear fc1_, fc2_;
};

class OptOutput final : public StageOutput {
 public:
  OptOutput(const ModelConfig& config, ParameterTable& p)
      : norm_(GetLayerNorm(p, kPrefix + "final_layer_norm", config.norm_eps)),
        lm_head_(p.Get(config.tie_word_embeddings ? kPrefix + "embed_tokens.weight"
                                                  : "lm_head.weight")) {
    if (config.embedding_dim != config.hidden_size) {
      project_out_ = GetLinear(p, kPrefix + "project_out", false);
    }
  }

  at::Tensor Forward(const at::Tensor& hidden, const SequenceContext&) const override {
    at::Tensor normed = norm_(hidden);
    if (project_out_.weight.defined()) normed = project_out_(normed);
    return at::linear(normed, lm_head_);
  }

 private:
  LayerNorm norm_;
  Linear project_out_;  // undefined unless word_embed_proj_dim != hidden_size
  at::Tensor lm_head_;  // [vocab, word_embed_proj_dim]
};

}  // namespace

StageParts MakeOptStageParts(const ModelConfig& config, const StagePlan& plan,
                             ParameterTable& parameters) {
  StageParts parts;
  if (plan.is_first) parts.input = std::make_unique<OptEmbedding>(config, parameters);
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    parts.blocks.push_back(std::make_unique<OptBlock>(config, layer, parameters));
  }
  if (plan.is_last) parts.output = std::make_unique<OptOutput>(config, parameters);
  return parts;
}

}  // namespace geotrain::models
