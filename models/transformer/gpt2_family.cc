#include "models/transformer/gpt2_family.h"

#include "models/transformer/attention.h"

namespace geotrain::models {
namespace {

// Hugging Face's Conv1D: bias + x @ weight, weight [in, out].
at::Tensor Conv1D(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  std::vector<int64_t> out_shape = x.sizes().vec();
  out_shape.back() = weight.size(1);
  return at::addmm(bias, x.reshape({-1, x.size(-1)}), weight).view(out_shape);
}

std::string Name(const std::string& suffix) { return "transformer." + suffix; }

class Gpt2Embedding final : public StageInput {
 public:
  explicit Gpt2Embedding(ParameterTable& p)
      : token_(p.Get(Name("wte.weight"))), position_(p.Get(Name("wpe.weight"))) {}

  at::Tensor Forward(const at::Tensor& token_ids, const SequenceContext&) const override {
    const at::Tensor positions = at::arange(token_ids.size(1), token_ids.options());
    return at::embedding(token_, token_ids) + at::embedding(position_, positions);
  }

 private:
  at::Tensor token_;     // wte [vocab, H]
  at::Tensor position_;  // wpe [n_positions, H]
};

class Gpt2Block final : public TransformerBlock {
 public:
  Gpt2Block(const ModelConfig& config, int64_t layer, ParameterTable& p)
      : hidden_size_(config.hidden_size), num_heads_(config.num_heads), eps_(config.norm_eps) {
    const std::string h = "h." + std::to_string(layer) + ".";
    ln_1_weight_ = p.Get(Name(h + "ln_1.weight"));
    ln_1_bias_ = p.Get(Name(h + "ln_1.bias"));
    attn_weight_ = p.Get(Name(h + "attn.c_attn.weight"));
    attn_bias_ = p.Get(Name(h + "attn.c_attn.bias"));
    attn_proj_weight_ = p.Get(Name(h + "attn.c_proj.weight"));
    attn_proj_bias_ = p.Get(Name(h + "attn.c_proj.bias"));
    ln_2_weight_ = p.Get(Name(h + "ln_2.weight"));
    ln_2_bias_ = p.Get(Name(h + "ln_2.bias"));
    fc_weight_ = p.Get(Name(h + "mlp.c_fc.weight"));
    fc_bias_ = p.Get(Name(h + "mlp.c_fc.bias"));
    mlp_proj_weight_ = p.Get(Name(h + "mlp.c_proj.weight"));
    mlp_proj_bias_ = p.Get(Name(h + "mlp.c_proj.bias"));
  }

  at::Tensor Forward(const at::Tensor& x, const SequenceContext&) const override {
    const int64_t batch = x.size(0), seq = x.size(1);
    const auto split_heads = [&](const at::Tensor& t) {
      return t.view({batch, seq, num_heads_, -1}).transpose(1, 2);
    };
    const at::Tensor normed = at::layer_norm(x, {hidden_size_}, ln_1_weight_, ln_1_bias_, eps_);
    const std::vector<at::Tensor> qkv =
        Conv1D(normed, attn_weight_, attn_bias_).split(hidden_size_, -1);
    const at::Tensor attended =
        CausalSelfAttention(split_heads(qkv[0]), split_heads(qkv[1]), split_heads(qkv[2]))
            .transpose(1, 2)
            .reshape({batch, seq, hidden_size_});
    const at::Tensor residual = x + Conv1D(attended, attn_proj_weight_, attn_proj_bias_);

    const at::Tensor normed_2 =
        at::layer_norm(residual, {hidden_size_}, ln_2_weight_, ln_2_bias_, eps_);
    const at::Tensor activated = at::gelu(Conv1D(normed_2, fc_weight_, fc_bias_), "tanh");
    return residual + Conv1D(activated, mlp_proj_weight_, mlp_proj_bias_);
  }

 private:
  int64_t hidden_size_;
  int64_t num_heads_;
  double eps_;
  at::Tensor ln_1_weight_, ln_1_bias_;
  at::Tensor attn_weight_, attn_bias_;            // c_attn: [H, 3H], q|k|v along the output
  at::Tensor attn_proj_weight_, attn_proj_bias_;  // attn.c_proj: [H, H]
  at::Tensor ln_2_weight_, ln_2_bias_;
  at::Tensor fc_weight_, fc_bias_;              // mlp.c_fc: [H, inner]
  at::Tensor mlp_proj_weight_, mlp_proj_bias_;  // mlp.c_proj: [inner, H]
};

class Gpt2Output final : public StageOutput {
 public:
  Gpt2Output(const ModelConfig& config, ParameterTable& p)
      : hidden_size_(config.hidden_size),
        eps_(config.norm_eps),
        norm_weight_(p.Get(Name("ln_f.weight"))),
        norm_bias_(p.Get(Name("ln_f.bias"))),
        lm_head_(p.Get(config.tie_word_embeddings ? Name("wte.weight") : "lm_head.weight")) {}

  at::Tensor Forward(const at::Tensor& hidden, const SequenceContext&) const override {
    const at::Tensor normed =
        at::layer_norm(hidden, {hidden_size_}, norm_weight_, norm_bias_, eps_);
    return at::linear(normed, lm_head_);
  }

 private:
  int64_t hidden_size_;
  double eps_;
  at::Tensor norm_weight_, norm_bias_;
  at::Tensor lm_head_;  // [vocab, H]: wte when tied
};

}  // namespace

StageParts MakeGpt2StageParts(const ModelConfig& config, const StagePlan& plan,
                              ParameterTable& parameters) {
  StageParts parts;
  if (plan.is_first) parts.input = std::make_unique<Gpt2Embedding>(parameters);
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    parts.blocks.push_back(std::make_unique<Gpt2Block>(config, layer, parameters));
  }
  if (plan.is_last) parts.output = std::make_unique<Gpt2Output>(config, parameters);
  return parts;
}

}  // namespace geotrain::models
