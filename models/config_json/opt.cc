// OPT (OPTConfig): learned positions at offset 2, pre-LayerNorm, project_in/out when the word
// embeddings are narrower than the hidden state.
#include "models/config_json/families.h"
#include "models/config_json/shared_keys.h"

namespace geotrain::models {
namespace {

using json = nlohmann::json;

// OPT names its MLP width ffn_dim and has no norm epsilon (nn.LayerNorm's default).
constexpr SharedKeys kOptKeys = {"ffn_dim", 2048, std::nullopt, nullptr, 0, std::nullopt, nullptr};

Status ParseOpt(const ConfigFields& fields, ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseMultiHeadSizes(fields, kOptKeys, config));
  GEOTRAIN_RETURN_IF_ERROR(ParseSharedKeys(fields, kOptKeys, config));
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->embedding_dim,
      fields.OptionalSize("word_embed_proj_dim", config->hidden_size, kMaxModelDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->activation,
                            ParseActivation(fields, "activation_function", "relu"));
  GEOTRAIN_ASSIGN_OR_RETURN(config->attention_bias, fields.OptionalBool("enable_bias", true));
  config->mlp_bias = config->attention_bias;
  GEOTRAIN_ASSIGN_OR_RETURN(config->tie_word_embeddings,
                            fields.OptionalBool("tie_word_embeddings", true));
  // OPT-350m's post-LN layout and LayerNorms without weights are not implemented.
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireBool("do_layer_norm_before", true));
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireBool("_remove_final_layer_norm", false));
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireBool("layer_norm_elementwise_affine", true));
  config->norm_eps = 1e-5;  // nn.LayerNorm's default; OPT has no field for it
  GEOTRAIN_ASSIGN_OR_RETURN(config->initializer_range,
                            fields.OptionalPositiveNumber("init_std", 0.02));
  return OkStatus();
}

void WriteOpt(const ModelConfig& c, json* out) {
  WriteSharedKeys(c, kOptKeys, out);
  json& o = *out;
  o["architectures"] = {"OPTForCausalLM"};
  o["word_embed_proj_dim"] = c.embedding_dim;
  o["activation_function"] = ActivationName(c.activation);
  o["enable_bias"] = c.attention_bias;
  o["do_layer_norm_before"] = true;
  o["layer_norm_elementwise_affine"] = true;
  o["init_std"] = c.initializer_range;
  o.erase("initializer_range");
}

}  // namespace

const FamilyConfigFormat kOptConfigFormat = {ParseOpt, WriteOpt};

}  // namespace geotrain::models
