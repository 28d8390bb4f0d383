// Llama (LlamaConfig) and Qwen2 (Qwen2Config): RoPE, grouped-query attention, SwiGLU.
#include "common/io/strict_json.h"
#include "models/config_json/families.h"
#include "models/config_json/shared_keys.h"

namespace geotrain::models {
namespace {

using json = nlohmann::json;

constexpr SharedKeys kLlamaKeys = {
    "intermediate_size", 2048, std::nullopt, "rms_norm_eps", 1e-6, false, nullptr};
constexpr SharedKeys kQwen2Keys = {
    "intermediate_size", 32768, std::nullopt, "rms_norm_eps", 1e-6, false, nullptr};

const SharedKeys& KeysOf(const ModelConfig& config) {
  return config.family == ModelFamily::kQwen2 ? kQwen2Keys : kLlamaKeys;
}

// Qwen2 always has q/k/v biases and never an o_proj or MLP bias, and refuses sliding windows.
Status ParseQwen2Attention(const ConfigFields& fields, ModelConfig* config) {
  config->attention_bias = true;
  config->mlp_bias = false;
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireBool("use_sliding_window", false));
  if (!fields.Has("layer_types")) return OkStatus();
  const json& types = fields["layer_types"];
  if (!types.is_array()) {
    return fields.Error("layer_types", "expected an array, got " + io::JsonKindName(types));
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] != "full_attention") {
      return fields.Error("layer_types[" + std::to_string(i) + "]",
                          types[i].dump() + " is not supported (only full_attention)");
    }
  }
  return OkStatus();
}

Status ParseLlama(const ConfigFields& fields, ModelConfig* config) {
  const SharedKeys& keys = KeysOf(*config);
  GEOTRAIN_RETURN_IF_ERROR(ParseStandardSizes(fields, keys, config));
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->num_kv_heads,
      fields.OptionalSize("num_key_value_heads", config->num_heads, kMaxModelDimension));
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireDivides("num_key_value_heads", config->num_kv_heads,
                                                 "num_attention_heads", config->num_heads));
  if (!fields.Has("head_dim")) {
    GEOTRAIN_RETURN_IF_ERROR(fields.RequireDivides("num_attention_heads", config->num_heads,
                                                   "hidden_size", config->hidden_size));
  }
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->head_dim,
      fields.OptionalSize("head_dim", config->hidden_size / config->num_heads, kMaxModelDimension));
  if (config->head_dim % 2 != 0) {
    return fields.Error("head_dim", std::to_string(config->head_dim) +
                                        " is odd; rotary embeddings need an even head size");
  }
  GEOTRAIN_RETURN_IF_ERROR(ParseSharedKeys(fields, keys, config));
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireString("hidden_act", "silu", "only silu"));
  GEOTRAIN_RETURN_IF_ERROR(ParseRope(fields, config));
  config->activation = Activation::kSilu;
  config->embedding_dim = config->hidden_size;
  config->rotary_dim = config->head_dim;
  if (config->family == ModelFamily::kQwen2) return ParseQwen2Attention(fields, config);
  GEOTRAIN_ASSIGN_OR_RETURN(config->attention_bias, fields.OptionalBool("attention_bias", false));
  GEOTRAIN_ASSIGN_OR_RETURN(config->mlp_bias, fields.OptionalBool("mlp_bias", false));
  return OkStatus();
}

void WriteLlama(const ModelConfig& c, json* out) {
  WriteSharedKeys(c, KeysOf(c), out);
  json& o = *out;
  const bool qwen2 = c.family == ModelFamily::kQwen2;
  o["architectures"] = {qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
  o["num_key_value_heads"] = c.num_kv_heads;
  o["head_dim"] = c.head_dim;
  // Top-level rope_theta is what every transformers release (and llama.cpp's converter) reads.
  o["rope_theta"] = c.rope_theta;
  o["hidden_act"] = "silu";
  if (qwen2) {
    o["use_sliding_window"] = false;
  } else {
    o["attention_bias"] = c.attention_bias;
    o["mlp_bias"] = c.mlp_bias;
  }
}

}  // namespace

const FamilyConfigFormat kLlamaConfigFormat = {ParseLlama, WriteLlama};

}  // namespace geotrain::models
