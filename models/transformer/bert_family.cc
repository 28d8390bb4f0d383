#include "models/transformer/bert_family.h"

#include "models/transformer/attention.h"
#include "models/transformer/layers.h"

namespace geotrain::models {
namespace {

class BertEmbedding final : public StageInput {
 public:
  BertEmbedding(const ModelConfig& config, ParameterTable& p)
      : word_(p.Get("bert.embeddings.word_embeddings.weight")),
        position_(p.Get("bert.embeddings.position_embeddings.weight")),
        token_type_(p.Get("bert.embeddings.token_type_embeddings.weight")),
        norm_(GetLayerNorm(p, "bert.embeddings.LayerNorm", config.norm_eps)) {}

  at::Tensor Forward(const at::Tensor& token_ids, const SequenceContext& context) const override {
    const at::Tensor positions = at::arange(token_ids.size(1), token_ids.options());
    const at::Tensor types = context.token_type_ids.defined() ? context.token_type_ids.to(at::kLong)
                                                              : at::zeros_like(token_ids);
    return norm_(at::embedding(word_, token_ids) + at::embedding(token_type_, types) +
                 at::embedding(position_, positions));
  }

 private:
  at::Tensor word_;        // [vocab, H]
  at::Tensor position_;    // [max_position_embeddings, H]
  at::Tensor token_type_;  // [type_vocab_size, H]
  LayerNorm norm_;
};

class BertBlock final : public TransformerBlock {
 public:
  BertBlock(const ModelConfig& config, int64_t layer, ParameterTable& p) : config_(config) {
    const std::string prefix = "bert.encoder.layer." + std::to_string(layer) + ".";
    query_ = GetLinear(p, prefix + "attention.self.query", true);
    key_ = GetLinear(p, prefix + "attention.self.key", true);
    value_ = GetLinear(p, prefix + "attention.self.value", true);
    attention_out_ = GetLinear(p, prefix + "attention.output.dense", true);
    attention_norm_ = GetLayerNorm(p, prefix + "attention.output.LayerNorm", config.norm_eps);
    intermediate_ = GetLinear(p, prefix + "intermediate.dense", true);
    output_ = GetLinear(p, prefix + "output.dense", true);
    output_norm_ = GetLayerNorm(p, prefix + "output.LayerNorm", config.norm_eps);
  }

  at::Tensor Forward(const at::Tensor& x, const SequenceContext& context) const override {
    const int64_t batch = x.size(0), seq = x.size(1);
    const auto split_heads = [&](const at::Tensor& t) {
      return t.view({batch, seq, config_.num_heads, config_.head_dim}).transpose(1, 2);
    };
    const at::Tensor attended =
        BidirectionalSelfAttention(split_heads(query_(x)), split_heads(key_(x)),
                                   split_heads(value_(x)), context.attention_mask)
            .transpose(1, 2)
            .reshape({batch, seq, config_.hidden_size});
    const at::Tensor hidden = attention_norm_(x + attention_out_(attended));
    return output_norm_(hidden + output_(Activate(config_.activation, intermediate_(hidden))));
  }

 private:
  ModelConfig config_;
  Linear query_, key_, value_, attention_out_;
  LayerNorm attention_norm_;
  Linear intermediate_, output_;
  LayerNorm output_norm_;
};

class BertClassifier final : public StageOutput {
 public:
  explicit BertClassifier(ParameterTable& p)
      : pooler_(GetLinear(p, "bert.pooler.dense", true)),
        classifier_(GetLinear(p, "classifier", true)) {}

  at::Tensor Forward(const at::Tensor& hidden, const SequenceContext&) const override {
    return classifier_(at::tanh(pooler_(hidden.select(1, 0))));
  }

 private:
  Linear pooler_;      // [H, H], on the first ([CLS]) position
  Linear classifier_;  // [num_labels, H]
};

}  // namespace

StageParts MakeBertStageParts(const ModelConfig& config, const StagePlan& plan,
                              ParameterTable& parameters) {
  StageParts parts;
  if (plan.is_first) parts.input = std::make_unique<BertEmbedding>(config, parameters);
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    parts.blocks.push_back(std::make_unique<BertBlock>(config, layer, parameters));
  }
  if (plan.is_last) parts.output = std::make_unique<BertClassifier>(parameters);
  return parts;
}

}  // namespace geotrain::models
