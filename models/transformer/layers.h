// Small building blocks the model families share: a Linear layer (weight [out, in], optional
// bias), a LayerNorm, the MLP nonlinearities of ModelConfig::Activation, a token embedding with no
// positions, and a final LayerNorm followed by the LM head. Stateless apart from the parameter
// tensors they hold; thread-safe.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "models/model_config.h"
#include "models/transformer/parameter_table.h"
#include "models/transformer/stage_parts.h"

namespace geotrain::models {

struct Linear {
  at::Tensor weight;  // [out, in]
  at::Tensor bias;    // [out], undefined when the layer has none

  at::Tensor operator()(const at::Tensor& x) const { return at::linear(x, weight, bias); }
};

inline Linear GetLinear(ParameterTable& p, const std::string& name, bool has_bias) {
  return Linear{p.Get(name + ".weight"), p.GetIf(has_bias, name + ".bias")};
}

struct LayerNorm {
  at::Tensor weight;
  at::Tensor bias;
  double eps = 1e-5;

  at::Tensor operator()(const at::Tensor& x) const {
    return at::layer_norm(x, {weight.size(0)}, weight, bias, eps);
  }
};

inline LayerNorm GetLayerNorm(ParameterTable& p, const std::string& name, double eps) {
  return LayerNorm{p.Get(name + ".weight"), p.Get(name + ".bias"), eps};
}

inline at::Tensor Activate(Activation activation, const at::Tensor& x) {
  switch (activation) {
    case Activation::kGeluTanh:
      return at::gelu(x, "tanh");
    case Activation::kGelu:
      return at::gelu(x);
    case Activation::kRelu:
      return at::relu(x);
    case Activation::kSilu:
      return at::silu(x);
  }
  return x;
}

// Token embeddings alone: positions enter through rotary embeddings in every attention.
class TokenEmbedding final : public StageInput {
 public:
  explicit TokenEmbedding(at::Tensor weight) : weight_(std::move(weight)) {}
  at::Tensor Forward(const at::Tensor& token_ids, const SequenceContext&) const override {
    return at::embedding(weight_, token_ids);
  }

 private:
  at::Tensor weight_;  // [vocab, H]
};

// The final LayerNorm, then the LM head.
class LayerNormHead final : public StageOutput {
 public:
  LayerNormHead(LayerNorm norm, Linear head) : norm_(std::move(norm)), head_(std::move(head)) {}
  at::Tensor Forward(const at::Tensor& hidden, const SequenceContext&) const override {
    return head_(norm_(hidden));
  }

 private:
  LayerNorm norm_;
  Linear head_;  // weight [vocab, H]: the token embedding when tied
};

}  // namespace geotrain::models
