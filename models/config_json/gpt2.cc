// GPT-2 (GPT2Config) and GPT-J (GPTJConfig), which keeps GPT-2's spelling of the sizes.
#include "models/config_json/families.h"
#include "models/config_json/shared_keys.h"

namespace geotrain::models {
namespace {

using json = nlohmann::json;

// n_embd, n_layer, n_head (no grouped-query attention), n_inner (null: 4 * n_embd),
// n_positions, layer_norm_epsilon.
Status ParseGpt2StyleSizes(const ConfigFields& fields, int64_t default_positions,
                           ModelConfig* config) {
  GEOTRAIN_ASSIGN_OR_RETURN(config->vocab_size,
                            fields.RequiredSize("vocab_size", kMaxModelDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->hidden_size, fields.RequiredSize("n_embd", kMaxModelDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->num_layers, fields.RequiredSize("n_layer", kMaxModelLayers));
  GEOTRAIN_ASSIGN_OR_RETURN(config->num_heads, fields.RequiredSize("n_head", kMaxModelDimension));
  GEOTRAIN_RETURN_IF_ERROR(
      fields.RequireDivides("n_head", config->num_heads, "n_embd", config->hidden_size));
  config->num_kv_heads = config->num_heads;
  config->head_dim = config->hidden_size / config->num_heads;
  config->embedding_dim = config->hidden_size;
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->intermediate_size,
      fields.OptionalSize("n_inner", 4 * config->hidden_size, kMaxModelDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->max_positions,
      fields.OptionalSize("n_positions", default_positions, kMaxModelDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->norm_eps,
                            fields.OptionalPositiveNumber("layer_norm_epsilon", 1e-5));
  return OkStatus();
}

void WriteGpt2StyleSizes(const ModelConfig& c, json* out) {
  json& o = *out;
  o["n_embd"] = c.hidden_size;
  o["n_layer"] = c.num_layers;
  o["n_head"] = c.num_heads;
  o["n_positions"] = c.max_positions;
  o["n_inner"] =
      c.intermediate_size == 4 * c.hidden_size ? json(nullptr) : json(c.intermediate_size);
  o["layer_norm_epsilon"] = c.norm_eps;
}

Status ParseGpt2(const ConfigFields& fields, ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseGpt2StyleSizes(fields, 1024, config));
  GEOTRAIN_ASSIGN_OR_RETURN(config->tie_word_embeddings,
                            fields.OptionalBool("tie_word_embeddings", true));
  GEOTRAIN_ASSIGN_OR_RETURN(std::string activation,
                            fields.OptionalString("activation_function", "gelu_new"));
  // gelu_pytorch_tanh is the same tanh approximation under the name transformers gives its
  // fused kernel.
  if (activation != "gelu_new" && activation != "gelu_pytorch_tanh") {
    return fields.Error("activation_function",
                        "\"" + activation + "\" is not supported (only gelu_new)");
  }
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireBool("scale_attn_weights", true));
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireBool("scale_attn_by_inverse_layer_idx", false));
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireBool("add_cross_attention", false));
  config->attention_bias = true;  // GPT-2's Conv1D layers always carry biases
  config->mlp_bias = true;
  config->activation = Activation::kGeluTanh;
  return OkStatus();
}

void WriteGpt2(const ModelConfig& c, json* out) {
  WriteGpt2StyleSizes(c, out);
  json& o = *out;
  o["architectures"] = {"GPT2LMHeadModel"};
  o["activation_function"] = "gelu_new";
  o["scale_attn_weights"] = true;
  o["scale_attn_by_inverse_layer_idx"] = false;
}

Status ParseGptJ(const ConfigFields& fields, ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseGpt2StyleSizes(fields, 2048, config));
  GEOTRAIN_ASSIGN_OR_RETURN(config->tie_word_embeddings,
                            fields.OptionalBool("tie_word_embeddings", false));
  GEOTRAIN_ASSIGN_OR_RETURN(config->activation,
                            ParseActivation(fields, "activation_function", "gelu_new"));
  // transformers sizes GPT-J's sin/cos table by the whole n_embd when rotary_dim is null, which
  // only fits the heads when there is one: refused rather than guessed.
  if (fields.IsNull("rotary_dim")) {
    return fields.Error("rotary_dim", "null (rotating the whole head) is not supported");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(config->rotary_dim,
                            fields.OptionalSize("rotary_dim", 64, kMaxModelDimension));
  GEOTRAIN_RETURN_IF_ERROR(
      CheckRotaryDim(fields, "rotary_dim", config->rotary_dim, config->head_dim));
  config->rope_theta = 10000.0;  // fixed in GPT-J's create_sinusoidal_positions
  config->parallel_residual = true;
  config->attention_bias = false;
  config->mlp_bias = true;
  config->lm_head_bias = true;
  return OkStatus();
}

void WriteGptJ(const ModelConfig& c, json* out) {
  WriteGpt2StyleSizes(c, out);
  json& o = *out;
  o["architectures"] = {"GPTJForCausalLM"};
  o["rotary_dim"] = c.rotary_dim;
  o["activation_function"] = ActivationName(c.activation);
}

}  // namespace

const FamilyConfigFormat kGpt2ConfigFormat = {ParseGpt2, WriteGpt2};
const FamilyConfigFormat kGptJConfigFormat = {ParseGptJ, WriteGptJ};

}  // namespace geotrain::models
