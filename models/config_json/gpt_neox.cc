// GPT-NeoX (GPTNeoXConfig, Pythia): parallel residual, partial rotary, fused per-head q|k|v.
#include "models/config_json/families.h"
#include "models/config_json/shared_keys.h"

namespace geotrain::models {
namespace {

using json = nlohmann::json;

constexpr SharedKeys kGptNeoXKeys = {
    "intermediate_size", 2048, std::nullopt, "layer_norm_eps", 1e-5, false, "gelu"};

Status ParseGptNeoX(const ConfigFields& fields, ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseMultiHeadSizes(fields, kGptNeoXKeys, config));
  GEOTRAIN_RETURN_IF_ERROR(ParseSharedKeys(fields, kGptNeoXKeys, config));
  GEOTRAIN_ASSIGN_OR_RETURN(config->parallel_residual,
                            fields.OptionalBool("use_parallel_residual", true));
  GEOTRAIN_ASSIGN_OR_RETURN(config->attention_bias, fields.OptionalBool("attention_bias", true));
  config->mlp_bias = true;
  // Checkpoints from before transformers 5 name the rotary base and share rotary_emb_base and
  // rotary_pct; since, they are rope_theta and rope_parameters.partial_rotary_factor.
  GEOTRAIN_ASSIGN_OR_RETURN(config->rope_theta,
                            fields.OptionalPositiveNumber("rotary_emb_base", 10000.0));
  GEOTRAIN_ASSIGN_OR_RETURN(double partial, fields.OptionalPositiveNumber("rotary_pct", 0.25));
  GEOTRAIN_RETURN_IF_ERROR(ParseRope(fields, config, &partial));
  // int(head_size * rotary_pct), as transformers truncates it.
  config->rotary_dim = static_cast<int64_t>(static_cast<double>(config->head_dim) * partial);
  return CheckRotaryDim(fields, "rotary_pct", config->rotary_dim, config->head_dim);
}

void WriteGptNeoX(const ModelConfig& c, json* out) {
  WriteSharedKeys(c, kGptNeoXKeys, out);
  json& o = *out;
  o["architectures"] = {"GPTNeoXForCausalLM"};
  o["use_parallel_residual"] = c.parallel_residual;
  o["attention_bias"] = c.attention_bias;
  // Both spellings: rotary_pct and rotary_emb_base for transformers 4, rope_parameters for 5.
  const double partial = static_cast<double>(c.rotary_dim) / static_cast<double>(c.head_dim);
  o["rotary_pct"] = partial;
  o["rotary_emb_base"] = c.rope_theta;
  o["rope_parameters"] = {
      {"rope_type", "default"}, {"rope_theta", c.rope_theta}, {"partial_rotary_factor", partial}};
}

}  // namespace

const FamilyConfigFormat kGptNeoXConfigFormat = {ParseGptNeoX, WriteGptNeoX};

}  // namespace geotrain::models
