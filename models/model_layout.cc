#include "models/model_layout.h"

#include <algorithm>

namespace geotrain::models {
namespace {

constexpr char kGpt2Prefix[] = "transformer.";

class SpecList {
 public:
  explicit SpecList(std::vector<TensorSpec>* specs) : specs_(specs) {}
  // GPT-2 names get the "transformer." prefix, with the bare name as the legacy alternative.
  void AddGpt2(const std::string& name, std::vector<int64_t> shape, TensorInit init) {
    Add(TensorSpec{kGpt2Prefix + name, name, std::move(shape), init});
  }
  void Add(const std::string& name, std::vector<int64_t> shape, TensorInit init) {
    Add(TensorSpec{name, "", std::move(shape), init});
  }

 private:
  void Add(TensorSpec spec) {
    // A tied embedding is listed once even when both ends of the model are in one stage.
    const auto same = [&](const TensorSpec& s) { return s.name == spec.name; };
    if (std::none_of(specs_->begin(), specs_->end(), same)) specs_->push_back(std::move(spec));
  }
  std::vector<TensorSpec>* specs_;
};

void AddGpt2Specs(const ModelConfig& c, const StagePlan& plan, SpecList& out) {
  const int64_t h = c.hidden_size;
  if (plan.is_first) {
    out.AddGpt2("wte.weight", {c.vocab_size, h}, TensorInit::kNormal);
    out.AddGpt2("wpe.weight", {c.max_positions, h}, TensorInit::kNormal);
  }
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    const std::string p = "h." + std::to_string(layer) + ".";
    // Conv1D stores weights as [in, out], transposed against nn.Linear.
    out.AddGpt2(p + "ln_1.weight", {h}, TensorInit::kOnes);
    out.AddGpt2(p + "ln_1.bias", {h}, TensorInit::kZeros);
    out.AddGpt2(p + "attn.c_attn.weight", {h, 3 * h}, TensorInit::kNormal);
    out.AddGpt2(p + "attn.c_attn.bias", {3 * h}, TensorInit::kZeros);
    out.AddGpt2(p + "attn.c_proj.weight", {h, h}, TensorInit::kNormalResidual);
    out.AddGpt2(p + "attn.c_proj.bias", {h}, TensorInit::kZeros);
    out.AddGpt2(p + "ln_2.weight", {h}, TensorInit::kOnes);
    out.AddGpt2(p + "ln_2.bias", {h}, TensorInit::kZeros);
    out.AddGpt2(p + "mlp.c_fc.weight", {h, c.intermediate_size}, TensorInit::kNormal);
    out.AddGpt2(p + "mlp.c_fc.bias", {c.intermediate_size}, TensorInit::kZeros);
    out.AddGpt2(p + "mlp.c_proj.weight", {c.intermediate_size, h}, TensorInit::kNormalResidual);
    out.AddGpt2(p + "mlp.c_proj.bias", {h}, TensorInit::kZeros);
  }
  if (plan.is_last) {
    out.AddGpt2("ln_f.weight", {h}, TensorInit::kOnes);
    out.AddGpt2("ln_f.bias", {h}, TensorInit::kZeros);
    if (c.tie_word_embeddings) {
      out.AddGpt2("wte.weight", {c.vocab_size, h}, TensorInit::kNormal);
    } else {
      // GPT2LMHeadModel keeps lm_head outside "transformer.".
      out.Add("lm_head.weight", {c.vocab_size, h}, TensorInit::kNormal);
    }
  }
}

void AddLlamaSpecs(const ModelConfig& c, const StagePlan& plan, SpecList& out) {
  const int64_t h = c.hidden_size;
  const int64_t q_size = c.num_heads * c.head_dim;
  const int64_t kv_size = c.num_kv_heads * c.head_dim;
  const bool qwen2 = c.family == ModelFamily::kQwen2;
  if (plan.is_first) {
    out.Add("model.embed_tokens.weight", {c.vocab_size, h}, TensorInit::kNormal);
  }
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    out.Add(p + "input_layernorm.weight", {h}, TensorInit::kOnes);
    const auto projection = [&](const std::string& name, int64_t out_size, int64_t in_size,
                                bool bias) {
      out.Add(p + name + ".weight", {out_size, in_size}, TensorInit::kNormal);
      if (bias) out.Add(p + name + ".bias", {out_size}, TensorInit::kZeros);
    };
    projection("self_attn.q_proj", q_size, h, c.attention_bias);
    projection("self_attn.k_proj", kv_size, h, c.attention_bias);
    projection("self_attn.v_proj", kv_size, h, c.attention_bias);
    projection("self_attn.o_proj", h, q_size, c.attention_bias && !qwen2);
    out.Add(p + "post_attention_layernorm.weight", {h}, TensorInit::kOnes);
    projection("mlp.gate_proj", c.intermediate_size, h, c.mlp_bias);
    projection("mlp.up_proj", c.intermediate_size, h, c.mlp_bias);
    projection("mlp.down_proj", h, c.intermediate_size, c.mlp_bias);
  }
  if (plan.is_last) {
    out.Add("model.norm.weight", {h}, TensorInit::kOnes);
    out.Add(c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight",
            {c.vocab_size, h}, TensorInit::kNormal);
  }
}

// A LayerNorm's weight and bias.
void AddLayerNorm(SpecList& out, const std::string& name, int64_t size) {
  out.Add(name + ".weight", {size}, TensorInit::kOnes);
  out.Add(name + ".bias", {size}, TensorInit::kZeros);
}

// A Linear layer: weight [out, in], and bias [out] when it has one.
void AddLinear(SpecList& out, const std::string& name, int64_t out_size, int64_t in_size,
               bool bias) {
  out.Add(name + ".weight", {out_size, in_size}, TensorInit::kNormal);
  if (bias) out.Add(name + ".bias", {out_size}, TensorInit::kZeros);
}

constexpr int64_t kOptPositionOffset = 2;

void AddOptSpecs(const ModelConfig& c, const StagePlan& plan, SpecList& out) {
  const int64_t h = c.hidden_size;
  const bool projected = c.embedding_dim != h;
  const bool bias = c.attention_bias;
  if (plan.is_first) {
    out.Add("model.decoder.embed_tokens.weight", {c.vocab_size, c.embedding_dim},
            TensorInit::kNormal);
    out.Add("model.decoder.embed_positions.weight", {c.max_positions + kOptPositionOffset, h},
            TensorInit::kNormal);
    if (projected) AddLinear(out, "model.decoder.project_in", h, c.embedding_dim, false);
  }
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    const std::string p = "model.decoder.layers." + std::to_string(layer) + ".";
    AddLinear(out, p + "self_attn.k_proj", h, h, bias);
    AddLinear(out, p + "self_attn.v_proj", h, h, bias);
    AddLinear(out, p + "self_attn.q_proj", h, h, bias);
    AddLinear(out, p + "self_attn.out_proj", h, h, bias);
    AddLayerNorm(out, p + "self_attn_layer_norm", h);
    AddLinear(out, p + "fc1", c.intermediate_size, h, bias);
    AddLinear(out, p + "fc2", h, c.intermediate_size, bias);
    AddLayerNorm(out, p + "final_layer_norm", h);
  }
  if (plan.is_last) {
    AddLayerNorm(out, "model.decoder.final_layer_norm", h);
    if (projected) AddLinear(out, "model.decoder.project_out", c.embedding_dim, h, false);
    out.Add(c.tie_word_embeddings ? "model.decoder.embed_tokens.weight" : "lm_head.weight",
            {c.vocab_size, c.embedding_dim}, TensorInit::kNormal);
  }
}

void AddGptNeoXSpecs(const ModelConfig& c, const StagePlan& plan, SpecList& out) {
  const int64_t h = c.hidden_size;
  if (plan.is_first) out.Add("gpt_neox.embed_in.weight", {c.vocab_size, h}, TensorInit::kNormal);
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    const std::string p = "gpt_neox.layers." + std::to_string(layer) + ".";
    AddLayerNorm(out, p + "input_layernorm", h);
    AddLayerNorm(out, p + "post_attention_layernorm", h);
    AddLinear(out, p + "attention.query_key_value", 3 * h, h, c.attention_bias);
    AddLinear(out, p + "attention.dense", h, h, c.attention_bias);
    AddLinear(out, p + "mlp.dense_h_to_4h", c.intermediate_size, h, true);
    AddLinear(out, p + "mlp.dense_4h_to_h", h, c.intermediate_size, true);
  }
  if (plan.is_last) {
    AddLayerNorm(out, "gpt_neox.final_layer_norm", h);
    out.Add(c.tie_word_embeddings ? "gpt_neox.embed_in.weight" : "embed_out.weight",
            {c.vocab_size, h}, TensorInit::kNormal);
  }
}

void AddGptJSpecs(const ModelConfig& c, const StagePlan& plan, SpecList& out) {
  const int64_t h = c.hidden_size;
  if (plan.is_first) out.Add("transformer.wte.weight", {c.vocab_size, h}, TensorInit::kNormal);
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    const std::string p = "transformer.h." + std::to_string(layer) + ".";
    AddLayerNorm(out, p + "ln_1", h);
    AddLinear(out, p + "attn.k_proj", h, h, false);
    AddLinear(out, p + "attn.v_proj", h, h, false);
    AddLinear(out, p + "attn.q_proj", h, h, false);
    AddLinear(out, p + "attn.out_proj", h, h, false);
    AddLinear(out, p + "mlp.fc_in", c.intermediate_size, h, true);
    AddLinear(out, p + "mlp.fc_out", h, c.intermediate_size, true);
  }
  if (plan.is_last) {
    AddLayerNorm(out, "transformer.ln_f", h);
    out.Add(c.tie_word_embeddings ? "transformer.wte.weight" : "lm_head.weight", {c.vocab_size, h},
            TensorInit::kNormal);
    out.Add("lm_head.bias", {c.vocab_size}, TensorInit::kZeros);
  }
}

void AddBertSpecs(const ModelConfig& c, const StagePlan& plan, SpecList& out) {
  const int64_t h = c.hidden_size;
  if (plan.is_first) {
    out.Add("bert.embeddings.word_embeddings.weight", {c.vocab_size, h}, TensorInit::kNormal);
    out.Add("bert.embeddings.position_embeddings.weight", {c.max_positions, h},
            TensorInit::kNormal);
    out.Add("bert.embeddings.token_type_embeddings.weight", {c.type_vocab_size, h},
            TensorInit::kNormal);
    AddLayerNorm(out, "bert.embeddings.LayerNorm", h);
  }
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    const std::string p = "bert.encoder.layer." + std::to_string(layer) + ".";
    AddLinear(out, p + "attention.self.query", h, h, true);
    AddLinear(out, p + "attention.self.key", h, h, true);
    AddLinear(out, p + "attention.self.value", h, h, true);
    AddLinear(out, p + "attention.output.dense", h, h, true);
    AddLayerNorm(out, p + "attention.output.LayerNorm", h);
    AddLinear(out, p + "intermediate.dense", c.intermediate_size, h, true);
    AddLinear(out, p + "output.dense", h, c.intermediate_size, true);
    AddLayerNorm(out, p + "output.LayerNorm", h);
  }
  if (plan.is_last) {
    AddLinear(out, "bert.pooler.dense", h, h, true);
    AddLinear(out, "classifier", c.num_labels, h, true);
  }
}

// The relative-position embeddings (and their LayerNorm) feed every layer's attention, so every
// stage that holds a layer lists them and keeps its own copy; the copies' gradients add up to the
// gradient of the one tensor of the unsplit model.
void AddDebertaV2Specs(const ModelConfig& c, const StagePlan& plan, SpecList& out) {
  const int64_t h = c.hidden_size;
  const int64_t e = c.embedding_dim;
  if (plan.is_first) {
    out.Add("deberta.embeddings.word_embeddings.weight", {c.vocab_size, e}, TensorInit::kNormal);
    if (c.position_biased_input) {
      out.Add("deberta.embeddings.position_embeddings.weight", {c.max_positions, e},
              TensorInit::kNormal);
    }
    if (c.type_vocab_size > 0) {
      out.Add("deberta.embeddings.token_type_embeddings.weight", {c.type_vocab_size, e},
              TensorInit::kNormal);
    }
    if (e != h) AddLinear(out, "deberta.embeddings.embed_proj", h, e, false);
    AddLayerNorm(out, "deberta.embeddings.LayerNorm", h);
  }
  if (plan.last_layer > plan.first_layer && c.relative_attention) {
    // PipelineSharedTensorNames lists these.
    out.Add("deberta.encoder.rel_embeddings.weight", {2 * c.RelativeAttentionSpan(), h},
            TensorInit::kNormal);
    if (c.norm_relative_embeddings) AddLayerNorm(out, "deberta.encoder.LayerNorm", h);
  }
  for (int64_t layer = plan.first_layer; layer < plan.last_layer; ++layer) {
    const std::string p = "deberta.encoder.layer." + std::to_string(layer) + ".";
    AddLinear(out, p + "attention.self.query_proj", h, h, true);
    AddLinear(out, p + "attention.self.key_proj", h, h, true);
    AddLinear(out, p + "attention.self.value_proj", h, h, true);
    if (c.relative_attention && !c.share_attention_key) {
      if (c.attention_c2p) AddLinear(out, p + "attention.self.pos_key_proj", h, h, true);
      if (c.attention_p2c) AddLinear(out, p + "attention.self.pos_query_proj", h, h, true);
    }
    AddLinear(out, p + "attention.output.dense", h, h, true);
    AddLayerNorm(out, p + "attention.output.LayerNorm", h);
    AddLinear(out, p + "intermediate.dense", c.intermediate_size, h, true);
    AddLinear(out, p + "output.dense", h, c.intermediate_size, true);
    AddLayerNorm(out, p + "output.LayerNorm", h);
    // ConvLayer runs once, after layer 0, so only the stage holding layer 0 holds it (it is not
    // in PipelineSharedTensorNames).
    if (layer == 0 && c.conv_kernel_size > 0) {
      out.Add("deberta.encoder.conv.conv.weight", {h, h / c.conv_groups, c.conv_kernel_size},
              TensorInit::kNormal);
      out.Add("deberta.encoder.conv.conv.bias", {h}, TensorInit::kZeros);
      AddLayerNorm(out, "deberta.encoder.conv.LayerNorm", h);
    }
  }
  if (plan.is_last) {
    AddLinear(out, "pooler.dense", h, h, true);
    AddLinear(out, "classifier", c.num_labels, h, true);
  }
}

}  // namespace

std::vector<TensorSpec> StageTensorSpecs(const ModelConfig& config, const StagePlan& plan) {
  std::vector<TensorSpec> specs;
  SpecList list(&specs);
  switch (config.family) {
    case ModelFamily::kGpt2:
      AddGpt2Specs(config, plan, list);
      break;
    case ModelFamily::kLlama:
    case ModelFamily::kQwen2:
      AddLlamaSpecs(config, plan, list);
      break;
    case ModelFamily::kOpt:
      AddOptSpecs(config, plan, list);
      break;
    case ModelFamily::kGptNeoX:
      AddGptNeoXSpecs(config, plan, list);
      break;
    case ModelFamily::kGptJ:
      AddGptJSpecs(config, plan, list);
      break;
    case ModelFamily::kBert:
      AddBertSpecs(config, plan, list);
      break;
    case ModelFamily::kDebertaV2:
      AddDebertaV2Specs(config, plan, list);
      break;
  }
  return specs;
}

std::vector<TensorSpec> ModelTensorSpecs(const ModelConfig& config) {
  return StageTensorSpecs(config, WholeModelPlan(config));
}

std::string TokenEmbeddingName(const ModelConfig& config) {
  switch (config.family) {
    case ModelFamily::kGpt2:
    case ModelFamily::kGptJ:
      return std::string(kGpt2Prefix) + "wte.weight";
    case ModelFamily::kLlama:
    case ModelFamily::kQwen2:
      return "model.embed_tokens.weight";
    case ModelFamily::kOpt:
      return "model.decoder.embed_tokens.weight";
    case ModelFamily::kGptNeoX:
      return "gpt_neox.embed_in.weight";
    case ModelFamily::kBert:
      return "bert.embeddings.word_embeddings.weight";
    case ModelFamily::kDebertaV2:
      return "deberta.embeddings.word_embeddings.weight";
  }
  return "";
}

std::vector<std::string> PipelineSharedTensorNames(const ModelConfig& config) {
  if (config.family != ModelFamily::kDebertaV2 || !config.relative_attention) return {};
  std::vector<std::string> names = {"deberta.encoder.rel_embeddings.weight"};
  if (config.norm_relative_embeddings) {
    names.push_back("deberta.encoder.LayerNorm.weight");
    names.push_back("deberta.encoder.LayerNorm.bias");
  }
  return names;
}

}  // namespace geotrain::models
