#include "models/transformer/deberta_v2_family.h"

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "models/transformer/layers.h"

namespace geotrain::models {
namespace {

// torch.finfo(dtype).min: what transformers fills masked scores with.
double LowestScore(at::ScalarType dtype) {
  switch (dtype) {
    case at::kDouble:
      return std::numeric_limits<double>::lowest();
    case at::kHalf:
      return static_cast<double>(std::numeric_limits<c10::Half>::lowest());
    case at::kBFloat16:
      return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    default:
      return std::numeric_limits<float>::lowest();
  }
}

class DebertaV2Embedding final : public StageInput {
 public:
  DebertaV2Embedding(const ModelConfig& config, ParameterTable& p)
      : word_(p.Get("deberta.embeddings.word_embeddings.weight")),
        position_(
            p.GetIf(config.position_biased_input, "deberta.embeddings.position_embeddings.weight")),
        token_type_(
            p.GetIf(config.type_vocab_size > 0, "deberta.embeddings.token_type_embeddings.weight")),
        norm_(GetLayerNorm(p, "deberta.embeddings.LayerNorm", config.norm_eps)) {
    if (config.embedding_dim != config.hidden_size) {
      projection_ = GetLinear(p, "deberta.embeddings.embed_proj", false);
    }
  }

  at::Tensor Forward(const at::Tensor& token_ids, const SequenceContext& context) const override {
    at::Tensor embeddings = at::embedding(word_, token_ids);
    if (position_.defined()) {
      embeddings =
          embeddings + at::embedding(position_, at::arange(token_ids.size(1), token_ids.options()));
    }
    if (token_type_.defined()) {
      const at::Tensor types = context.token_type_ids.defined()
                                   ? context.token_type_ids.to(at::kLong)
                                   : at::zeros_like(token_ids);
      embeddings = embeddings + at::embedding(token_type_, types);
    }
    if (projection_) embeddings = (*projection_)(embeddings);
    embeddings = norm_(embeddings);
    // transformers multiplies by the mask itself (not a 0/1 copy of it), so padded positions
    // enter the first layer as zeros.
    if (context.attention_mask.defined()) {
      embeddings = embeddings * context.attention_mask.unsqueeze(2).to(embeddings.scalar_type());
    }
    return embeddings;
  }

 private:
  at::Tensor word_;        // [vocab, embedding_size]
  at::Tensor position_;    // [max_position_embeddings, embedding_size]; undefined when none
  at::Tensor token_type_;  // [type_vocab_size, embedding_size]; undefined when none
  std::optional<Linear> projection_;  // embed_proj [H, embedding_size], no bias
  LayerNorm norm_;
};

class DebertaV2Block final : public TransformerBlock {
 public:
  DebertaV2Block(const ModelConfig& config, int64_t layer, ParameterTable& p) : config_(config) {
    const std::string prefix = "deberta.encoder.layer." + std::to_string(layer) + ".";
    query_ = GetLinear(p, prefix + "attention.self.query_proj", true);
    key_ = GetLinear(p, prefix + "attention.self.key_proj", true);
    value_ = GetLinear(p, prefix + "attention.self.value_proj", true);
    if (config.relative_attention) {
      relative_embeddings_ = p.Get("deberta.encoder.rel_embeddings.weight");
      if (config.norm_relative_embeddings) {
        relative_norm_ = GetLayerNorm(p, "deberta.encoder.LayerNorm", config.norm_eps);
      }
      if (!config.share_attention_key) {
        if (config.attention_c2p) {
          position_key_ = GetLinear(p, prefix + "attention.self.pos_key_proj", true);
        }
        if (config.attention_p2c) {
          position_query_ = GetLinear(p, prefix + "attention.self.pos_query_proj", true);
        }
      }
    }
    attention_out_ = GetLinear(p, prefix + "attention.output.dense", true);
    attention_norm_ = GetLayerNorm(p, prefix + "attention.output.LayerNorm", config.norm_eps);
    intermediate_ = GetLinear(p, prefix + "intermediate.dense", true);
    output_ = GetLinear(p, prefix + "output.dense", true);
    output_norm_ = GetLayerNorm(p, prefix + "output.LayerNorm", config.norm_eps);
    if (layer == 0 && config.conv_kernel_size > 0) {
      conv_weight_ = p.Get("deberta.encoder.conv.conv.weight");
      conv_bias_ = p.Get("deberta.encoder.conv.conv.bias");
      conv_norm_ = GetLayerNorm(p, "deberta.encoder.conv.LayerNorm", config.norm_eps);
    }
  }

  at::Tensor Forward(const at::Tensor& x, const SequenceContext& context) const override {
    const int64_t batch = x.size(0), seq = x.size(1);
    const auto split_heads = [&](const at::Tensor& t) {
      return t.view({batch, seq, config_.num_heads, config_.head_dim}).transpose(1, 2);
    };
    const at::Tensor attended = Attention(split_heads(query_(x)), split_heads(key_(x)),
                                          split_heads(value_(x)), context.attention_mask)
                                    .transpose(1, 2)
                                    .reshape({batch, seq, config_.hidden_size});
    const at::Tensor hidden = attention_norm_(x + attention_out_(attended));
    const at::Tensor output =
        output_norm_(hidden + output_(Activate(config_.activation, intermediate_(hidden))));
    return conv_norm_ ? Convolve(x, output, context.attention_mask) : output;
  }

 private:
  // DisentangledSelfAttention.forward: query, key, value [B, heads, S, D] -> [B, heads, S, D].
  at::Tensor Attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const at::Tensor& attention_mask) const {
    const int64_t terms = 1 + (config_.attention_c2p ? 1 : 0) + (config_.attention_p2c ? 1 : 0);
    // scaled_size_sqrt: sqrt(head_dim * terms) in float32 (in float64 for float64 stages, the
    // golden reference's widening), cast to the dtype before dividing, as transformers casts it.
    const at::Tensor scale =
        at::sqrt(at::scalar_tensor(
                     static_cast<double>(config_.head_dim * terms),
                     query.options().dtype(at::promote_types(query.scalar_type(), at::kFloat))))
            .to(query.scalar_type());
    at::Tensor scores = at::matmul(query, key.transpose(-1, -2) / scale);
    if (config_.relative_attention && terms > 1) {
      scores = scores + RelativeScores(query, key, scale);
    }
    if (attention_mask.defined()) {
      // get_attention_mask: query i may see key j when both are tokens; a padded query's row is
      // all lowest, so its softmax is uniform (its output reaches no token).
      const at::Tensor token = (attention_mask != 0);
      const at::Tensor visible = token.view({query.size(0), 1, 1, key.size(2)}) &
                                 token.view({query.size(0), 1, query.size(2), 1});
      scores = scores.masked_fill(visible.logical_not(), LowestScore(scores.scalar_type()));
    }
    return at::matmul(at::softmax(scores, -1), value);
  }

  // ConvLayer.forward(hidden_states = the layer's input x, residual_states = its output): a
  // Conv1d over the sequence, zeroed where the mask is not 1 ((1 - mask).bool()), conv_act, the
  // LayerNorm of the residual sum, then multiplied by the mask itself.
  at::Tensor Convolve(const at::Tensor& x, const at::Tensor& residual,
                      const at::Tensor& attention_mask) const {
    at::Tensor out = at::conv1d(x.transpose(1, 2), conv_weight_, conv_bias_, /*stride=*/{1},
                                /*padding=*/{(config_.conv_kernel_size - 1) / 2},
                                /*dilation=*/{1}, config_.conv_groups)
                         .transpose(1, 2);
    if (attention_mask.defined()) {
      out = out.masked_fill((attention_mask != 1).unsqueeze(2), 0);
    }
    out = Activate(config_.conv_activation, out);
    at::Tensor output = (*conv_norm_)(residual + out);
    if (attention_mask.defined()) {
      output = output * attention_mask.unsqueeze(2).to(output.scalar_type());
    }
    return output;
  }

  // disentangled_attention_bias: the c2p and p2c terms (at least one), [B, heads, S, S].
  at::Tensor RelativeScores(const at::Tensor& query, const at::Tensor& key,
                            const at::Tensor& scale) const {
    const int64_t span = config_.RelativeAttentionSpan();
    const at::Tensor embeddings =
        relative_norm_ ? (*relative_norm_)(relative_embeddings_) : relative_embeddings_;
    // [2 * span, H] -> [heads, 2 * span, D], shared by every sequence of the batch.
    const auto split_heads = [&](const at::Tensor& t) {
      return t.view({2 * span, config_.num_heads, config_.head_dim}).transpose(0, 1);
    };
    const at::Tensor relative = DebertaRelativePositions(config_, query.size(2), query.device());
    const std::vector<int64_t> score_shape = {query.size(0), query.size(1), query.size(2),
                                              key.size(2)};
    at::Tensor scores;
    if (config_.attention_c2p) {
      // Query i against the position embedding of its distance to key j.
      const at::Tensor position_key = split_heads(
          config_.share_attention_key ? key_(embeddings) : (*position_key_)(embeddings));
      const at::Tensor c2p = at::matmul(query, position_key.transpose(-1, -2));
      const at::Tensor index = at::clamp(relative + span, 0, 2 * span - 1).expand(score_shape);
      scores = at::gather(c2p, -1, index) / scale;
    }
    if (config_.attention_p2c) {
      // Key j against the position embedding of the opposite distance, transposed into [i, j].
      const at::Tensor position_query = split_heads(
          config_.share_attention_key ? query_(embeddings) : (*position_query_)(embeddings));
      const at::Tensor p2c = at::matmul(key, position_query.transpose(-1, -2));
      const at::Tensor index = at::clamp(-relative + span, 0, 2 * span - 1).expand(score_shape);
      const at::Tensor term = at::gather(p2c, -1, index).transpose(-1, -2) / scale;
      scores = scores.defined() ? scores + term : term;
    }
    return scores;
  }

  ModelConfig config_;
  Linear query_, key_, value_;
  at::Tensor relative_embeddings_;  // [2 * span, H], shared by every layer; undefined when none
  std::optional<LayerNorm> relative_norm_;               // deberta.encoder.LayerNorm (norm_rel_ebd)
  std::optional<Linear> position_key_, position_query_;  // without share_att_key
  Linear attention_out_;
  LayerNorm attention_norm_;
  Linear intermediate_, output_;
  LayerNorm output_norm_;
  // ConvLayer (conv_kernel_size > 0), in layer 0's block only: conv [H, H / groups, kernel].
  at::Tensor conv_weight_, conv_bias_;
  std::optional<LayerNorm> conv_norm_;
};

class DebertaV2Classifier final : public StageOutput {
 public:
  DebertaV2Classifier(const ModelConfig& config, ParameterTable& p)
      : activation_(config.pooler_activation),
        pooler_(GetLinear(p, "pooler.dense", true)),
        classifier_(GetLinear(p, "classifier", true)) {}

  at::Tensor Forward(const at::Tensor& hidden, const SequenceContext&) const override {
    return classifier_(Activate(activation_, pooler_(hidden.select(1, 0))));
  }

 private:
  Activation activation_;  // pooler_hidden_act
  Linear pooler_;          // ContextPooler.dense [H, H], on the first position
  Linear classifier_;      // [num_labels, H]
};

}  // namespace

at::Tensor DebertaRelativePositions(const ModelConfig& config, int64_t seq, at::Device device) {
  const at::Tensor ids = at::arange(seq, at::TensorOptions().dtype(at::kLong).device(device));
  const at::Tensor relative = ids.unsqueeze(1) - ids.unsqueeze(0);
  if (config.position_buckets <= 0) return relative;
  // make_log_bucket_position, op for op: distances up to mid stay as they are; beyond, they grow
  // logarithmically to reach bucket position_buckets - 1 at max_relative_positions - 1.
  const int64_t mid = config.position_buckets / 2;
  const at::Tensor sign = at::sign(relative);
  const at::Tensor abs_pos = at::where((relative < mid) & (relative > -mid),
                                       at::full({}, mid - 1, relative.options()), relative.abs());
  const at::Tensor log_range = at::log(at::scalar_tensor(
      static_cast<double>(config.max_relative_positions - 1) / static_cast<double>(mid),
      at::TensorOptions().dtype(at::kFloat).device(device)));
  const at::Tensor log_pos =
      at::ceil(at::log(abs_pos.to(at::kFloat) / mid) / log_range * (mid - 1)) + mid;
  return at::where(abs_pos <= mid, relative.to(at::kFloat), log_pos * sign).to(at::kLong);
}

StageParts MakeDebertaV2StageParts(const ModelConfig& config, const StagePlan& plan,
                                   ParameterTable& parameters) {
  StageParts parts;
  if (plan.is_first) parts.input = std::make_unique<DebertaV2Embedding>(config, parameters);
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    parts.blocks.push_back(std::make_unique<DebertaV2Block>(config, layer, parameters));
  }
  if (plan.is_last) parts.output = std::make_unique<DebertaV2Classifier>(config, parameters);
  return parts;
}

}  // namespace geotrain::models
