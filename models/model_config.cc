#include "models/model_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "models/file_contents.h"
#include "models/strict_json.h"

namespace geotrain::models {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxConfigBytes = 1 << 20;
// Far beyond any real model, small enough that products of two sizes cannot overflow int64.
constexpr uint64_t kMaxDimension = 1 << 24;
constexpr uint64_t kMaxLayers = 1 << 12;

// Reads fields of one config.json object; every error names the file and the field.
class ConfigFields {
 public:
  ConfigFields(const json& root, std::string source) : root_(root), source_(std::move(source)) {}

  bool Has(const std::string& field) const {
    return root_.contains(field) && !root_[field].is_null();
  }
  bool IsNull(const std::string& field) const {
    return root_.contains(field) && root_[field].is_null();
  }
  Status Error(const std::string& field, const std::string& reason) const {
    return InvalidArgument(source_ + ": " + field + ": " + reason);
  }

  StatusOr<int64_t> RequiredSize(const std::string& field, uint64_t max_value) const {
    if (!Has(field)) return Error(field, "missing");
    GEOTRAIN_ASSIGN_OR_RETURN(uint64_t value,
                              JsonToUnsigned(root_[field], source_ + ": " + field, max_value));
    if (value == 0) return Error(field, "must be positive");
    return static_cast<int64_t>(value);
  }
  StatusOr<int64_t> OptionalSize(const std::string& field, int64_t fallback,
                                 uint64_t max_value) const {
    if (!Has(field)) return fallback;
    return RequiredSize(field, max_value);
  }
  // A size that may be 0 (a feature's absence, as deberta-v2's type_vocab_size).
  StatusOr<int64_t> OptionalCount(const std::string& field, int64_t fallback,
                                  uint64_t max_value) const {
    if (!Has(field)) return fallback;
    GEOTRAIN_ASSIGN_OR_RETURN(uint64_t value,
                              JsonToUnsigned(root_[field], source_ + ": " + field, max_value));
    return static_cast<int64_t>(value);
  }
  // An integer of either sign within +-kMaxDimension (settings where -1 means "default").
  StatusOr<int64_t> OptionalInteger(const std::string& field, int64_t fallback) const {
    if (!Has(field)) return fallback;
    const json& value = root_[field];
    if (!value.is_number_integer()) {
      return Error(field, "expected an integer, got " + JsonKindName(value));
    }
    constexpr int64_t kLimit = static_cast<int64_t>(kMaxDimension);
    const bool in_range = value.is_number_unsigned()
                              ? value.get<uint64_t>() <= kMaxDimension
                              : value.get<int64_t>() >= -kLimit && value.get<int64_t>() <= kLimit;
    if (!in_range) return Error(field, value.dump() + " is out of range");
    return value.get<int64_t>();
  }
  StatusOr<double> OptionalPositiveNumber(const std::string& field, double fallback) const {
    if (!Has(field)) return fallback;
    const json& value = root_[field];
    if (!value.is_number()) return Error(field, "expected a number, got " + JsonKindName(value));
    const double number = value.get<double>();
    if (!(number > 0) || !std::isfinite(number)) {
      return Error(field, value.dump() + " must be a positive finite number");
    }
    return number;
  }
  StatusOr<bool> OptionalBool(const std::string& field, bool fallback) const {
    if (!Has(field)) return fallback;
    const json& value = root_[field];
    if (!value.is_boolean()) return Error(field, "expected a boolean, got " + JsonKindName(value));
    return value.get<bool>();
  }
  StatusOr<std::string> OptionalString(const std::string& field, std::string fallback) const {
    if (!Has(field)) return fallback;
    const json& value = root_[field];
    if (!value.is_string()) return Error(field, "expected a string, got " + JsonKindName(value));
    return value.get<std::string>();
  }
  // Refuses a setting whose non-default value changes the computation in a way not implemented.
  Status RequireBool(const std::string& field, bool supported) const {
    GEOTRAIN_ASSIGN_OR_RETURN(bool value, OptionalBool(field, supported));
    if (value != supported) {
      return Error(field, std::string(value ? "true" : "false") + " is not supported");
    }
    return OkStatus();
  }
  const json& operator[](const std::string& field) const { return root_[field]; }
  const std::string& source() const { return source_; }

 private:
  const json& root_;
  std::string source_;
};

// The sizes every family since Llama names alike (the MLP width under `mlp_field`).
Status ParseStandardSizes(const ConfigFields& fields, const char* mlp_field,
                          ModelConfig* config) {
  GEOTRAIN_ASSIGN_OR_RETURN(config->vocab_size, fields.RequiredSize("vocab_size", kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->hidden_size, fields.RequiredSize("hidden_size", kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->intermediate_size,
                            fields.RequiredSize(mlp_field, kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->num_layers,
                            fields.RequiredSize("num_hidden_layers", kMaxLayers));
  GEOTRAIN_ASSIGN_OR_RETURN(config->num_heads,
                            fields.RequiredSize("num_attention_heads", kMaxDimension));
  return OkStatus();
}

// GPT-2's spelling, which GPT-J keeps: n_embd, n_layer, n_head (no grouped-query attention),
// n_inner (null: 4 * n_embd), n_positions, layer_norm_epsilon.
Status ParseGpt2StyleSizes(const ConfigFields& fields, int64_t default_positions,
                           ModelConfig* config) {
  GEOTRAIN_ASSIGN_OR_RETURN(config->vocab_size, fields.RequiredSize("vocab_size", kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->hidden_size, fields.RequiredSize("n_embd", kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->num_layers, fields.RequiredSize("n_layer", kMaxLayers));
  GEOTRAIN_ASSIGN_OR_RETURN(config->num_heads, fields.RequiredSize("n_head", kMaxDimension));
  if (config->hidden_size % config->num_heads != 0) {
    return fields.Error("n_head", std::to_string(config->num_heads) + " does not divide n_embd " +
                                      std::to_string(config->hidden_size));
  }
  config->num_kv_heads = config->num_heads;
  config->head_dim = config->hidden_size / config->num_heads;
  config->embedding_dim = config->hidden_size;
  GEOTRAIN_ASSIGN_OR_RETURN(config->intermediate_size,
                            fields.OptionalSize("n_inner", 4 * config->hidden_size, kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->max_positions,
                            fields.OptionalSize("n_positions", default_positions, kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->norm_eps,
                            fields.OptionalPositiveNumber("layer_norm_epsilon", 1e-5));
  return OkStatus();
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

// The activation names transformers' ACT2FN maps to the functions geotrain implements.
StatusOr<Activation> ParseActivation(const ConfigFields& fields, const std::string& field,
                                     const std::string& fallback) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string name, fields.OptionalString(field, fallback));
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Activation::kGeluTanh;
  if (name == "gelu") return Activation::kGelu;
  if (name == "relu") return Activation::kRelu;
  return fields.Error(field, "\"" + name +
                                 "\" is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu)");
}

// hidden_size / num_attention_heads, refused when it does not divide.
StatusOr<int64_t> HeadDim(const ConfigFields& fields, const ModelConfig& config,
                          const char* heads_field, const char* hidden_field) {
  if (config.hidden_size % config.num_heads != 0) {
    return fields.Error(heads_field, std::to_string(config.num_heads) + " does not divide " +
                                         hidden_field + " " + std::to_string(config.hidden_size));
  }
  return config.hidden_size / config.num_heads;
}

// ParseStandardSizes for a model with plain multi-head attention (every head its own keys and
// values, heads of hidden_size / num_attention_heads) whose embeddings are hidden_size wide
// unless the caller reads otherwise.
Status ParseMultiHeadSizes(const ConfigFields& fields, const char* mlp_field,
                           ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseStandardSizes(fields, mlp_field, config));
  config->num_kv_heads = config->num_heads;
  GEOTRAIN_ASSIGN_OR_RETURN(config->head_dim,
                            HeadDim(fields, *config, "num_attention_heads", "hidden_size"));
  config->embedding_dim = config->hidden_size;
  return OkStatus();
}

Status ParseOpt(const ConfigFields& fields, ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseMultiHeadSizes(fields, "ffn_dim", config));
  GEOTRAIN_ASSIGN_OR_RETURN(config->max_positions,
                            fields.OptionalSize("max_position_embeddings", 2048, kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->embedding_dim,
      fields.OptionalSize("word_embed_proj_dim", config->hidden_size, kMaxDimension));
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


// rope_theta sits at the top level in configs written before transformers 5 (SmolLM2, Qwen2.5),
// and inside rope_parameters since; rope_scaling (old) or a rope_type other than "default" (new)
// change the frequencies, which geotrain does not implement.
// `partial_rotary_factor` (the share of each head that rotates) is read from rope_parameters when
// given there; without it, it stays as the caller set it.
Status ParseRope(const ConfigFields& fields, ModelConfig* config,
                 double* partial_rotary_factor = nullptr) {
  if (fields.Has("rope_scaling")) {
    return fields.Error("rope_scaling", fields["rope_scaling"].dump() + " is not supported");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(config->rope_theta,
                            fields.OptionalPositiveNumber("rope_theta", config->rope_theta));
  if (!fields.Has("rope_parameters")) return OkStatus();
  const json& rope = fields["rope_parameters"];
  if (!rope.is_object()) {
    return fields.Error("rope_parameters", "expected an object, got " + JsonKindName(rope));
  }
  for (const auto& [key, value] : rope.items()) {
    if (key == "rope_type") {
      if (value != "default") {
        return fields.Error("rope_parameters.rope_type", value.dump() + " is not supported");
      }
    } else if (key == "rope_theta") {
      ConfigFields rope_fields(rope, fields.source() + ": rope_parameters");
      GEOTRAIN_ASSIGN_OR_RETURN(config->rope_theta,
                                rope_fields.OptionalPositiveNumber("rope_theta", 10000.0));
    } else if (key == "partial_rotary_factor" && partial_rotary_factor != nullptr) {
      ConfigFields rope_fields(rope, fields.source() + ": rope_parameters");
      GEOTRAIN_ASSIGN_OR_RETURN(*partial_rotary_factor,
                                rope_fields.OptionalPositiveNumber("partial_rotary_factor", 1.0));
    } else if (key != "partial_rotary_factor" || value != 1.0) {
      return fields.Error("rope_parameters." + key, value.dump() + " is not supported");
    }
  }
  return OkStatus();
}

Status ParseLlamaFamily(const ConfigFields& fields, ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseStandardSizes(fields, "intermediate_size", config));
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->num_kv_heads,
      fields.OptionalSize("num_key_value_heads", config->num_heads, kMaxDimension));
  if (config->num_heads % config->num_kv_heads != 0) {
    return fields.Error("num_key_value_heads", std::to_string(config->num_kv_heads) +
                                                   " does not divide num_attention_heads " +
                                                   std::to_string(config->num_heads));
  }
  if (!fields.Has("head_dim") && config->hidden_size % config->num_heads != 0) {
    return fields.Error("num_attention_heads", std::to_string(config->num_heads) +
                                                   " does not divide hidden_size " +
                                                   std::to_string(config->hidden_size));
  }
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->head_dim,
      fields.OptionalSize("head_dim", config->hidden_size / config->num_heads, kMaxDimension));
  if (config->head_dim % 2 != 0) {
    return fields.Error("head_dim", std::to_string(config->head_dim) +
                                        " is odd; rotary embeddings need an even head size");
  }
  const bool qwen2 = config->family == ModelFamily::kQwen2;
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->max_positions,
      fields.OptionalSize("max_position_embeddings", qwen2 ? 32768 : 2048, kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->norm_eps, fields.OptionalPositiveNumber("rms_norm_eps", 1e-6));
  GEOTRAIN_ASSIGN_OR_RETURN(config->tie_word_embeddings,
                            fields.OptionalBool("tie_word_embeddings", false));
  GEOTRAIN_ASSIGN_OR_RETURN(std::string activation, fields.OptionalString("hidden_act", "silu"));
  if (activation != "silu") {
    return fields.Error("hidden_act", "\"" + activation + "\" is not supported (only silu)");
  }
  GEOTRAIN_RETURN_IF_ERROR(ParseRope(fields, config));
  config->activation = Activation::kSilu;
  config->embedding_dim = config->hidden_size;
  config->rotary_dim = config->head_dim;
  if (qwen2) {
    // Qwen2 always has q/k/v biases and never an o_proj or MLP bias.
    config->attention_bias = true;
    config->mlp_bias = false;
    GEOTRAIN_RETURN_IF_ERROR(fields.RequireBool("use_sliding_window", false));
    if (fields.Has("layer_types")) {
      const json& types = fields["layer_types"];
      if (!types.is_array()) {
        return fields.Error("layer_types", "expected an array, got " + JsonKindName(types));
      }
      for (size_t i = 0; i < types.size(); ++i) {
        if (types[i] != "full_attention") {
          return fields.Error("layer_types[" + std::to_string(i) + "]",
                              types[i].dump() + " is not supported (only full_attention)");
        }
      }
    }
  } else {
    GEOTRAIN_ASSIGN_OR_RETURN(config->attention_bias, fields.OptionalBool("attention_bias", false));
    GEOTRAIN_ASSIGN_OR_RETURN(config->mlp_bias, fields.OptionalBool("mlp_bias", false));
  }
  return OkStatus();
}

// Rotary over the first `dim` dimensions of each head: even, and at most the head.
Status CheckRotaryDim(const ConfigFields& fields, const std::string& field, int64_t dim,
                      int64_t head_dim) {
  if (dim < 2 || dim > head_dim || dim % 2 != 0) {
    return fields.Error(field, "rotates " + std::to_string(dim) +
                                   " dimensions of a head of " + std::to_string(head_dim) +
                                   "; it must be even and in [2, head size]");
  }
  return OkStatus();
}

Status ParseGptNeoX(const ConfigFields& fields, ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseMultiHeadSizes(fields, "intermediate_size", config));
  GEOTRAIN_ASSIGN_OR_RETURN(config->max_positions,
                            fields.OptionalSize("max_position_embeddings", 2048, kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->norm_eps,
                            fields.OptionalPositiveNumber("layer_norm_eps", 1e-5));
  GEOTRAIN_ASSIGN_OR_RETURN(config->tie_word_embeddings,
                            fields.OptionalBool("tie_word_embeddings", false));
  GEOTRAIN_ASSIGN_OR_RETURN(config->activation, ParseActivation(fields, "hidden_act", "gelu"));
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
                            fields.OptionalSize("rotary_dim", 64, kMaxDimension));
  GEOTRAIN_RETURN_IF_ERROR(
      CheckRotaryDim(fields, "rotary_dim", config->rotary_dim, config->head_dim));
  config->rope_theta = 10000.0;  // fixed in GPT-J's create_sinusoidal_positions
  config->parallel_residual = true;
  config->attention_bias = false;
  config->mlp_bias = true;
  config->lm_head_bias = true;
  return OkStatus();
}

// A classifier's classes: num_labels when given, else len(id2label) (what transformers writes),
// else its default of 2. Only single-label classification is implemented.
Status ParseClassifierLabels(const ConfigFields& fields, ModelConfig* config) {
  int64_t from_id2label = 0;
  if (fields.Has("id2label")) {
    if (!fields["id2label"].is_object()) {
      return fields.Error("id2label", "expected an object, got " +
                                          JsonKindName(fields["id2label"]));
    }
    from_id2label = static_cast<int64_t>(fields["id2label"].size());
  }
  GEOTRAIN_ASSIGN_OR_RETURN(config->num_labels,
                            fields.OptionalSize("num_labels", from_id2label > 0 ? from_id2label : 2,
                                                kMaxDimension));
  if (from_id2label > 0 && from_id2label != config->num_labels) {
    return fields.Error("num_labels", std::to_string(config->num_labels) + " disagrees with the " +
                                          std::to_string(from_id2label) + " entries of id2label");
  }
  if (config->num_labels < 2) {
    return fields.Error("num_labels", "1 (regression) is not supported; classification needs >= 2");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(std::string problem,
                            fields.OptionalString("problem_type", "single_label_classification"));
  if (problem != "single_label_classification") {
    return fields.Error("problem_type", "\"" + problem +
                                            "\" is not supported (single_label_classification)");
  }
  return OkStatus();
}

Status ParseBert(const ConfigFields& fields, ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseMultiHeadSizes(fields, "intermediate_size", config));
  GEOTRAIN_ASSIGN_OR_RETURN(config->max_positions,
                            fields.OptionalSize("max_position_embeddings", 512, kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->type_vocab_size,
                            fields.OptionalSize("type_vocab_size", 2, kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->norm_eps,
                            fields.OptionalPositiveNumber("layer_norm_eps", 1e-12));
  GEOTRAIN_ASSIGN_OR_RETURN(config->activation, ParseActivation(fields, "hidden_act", "gelu"));
  GEOTRAIN_ASSIGN_OR_RETURN(std::string positions,
                            fields.OptionalString("position_embedding_type", "absolute"));
  if (positions != "absolute") {
    return fields.Error("position_embedding_type",
                        "\"" + positions + "\" is not supported (absolute)");
  }
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireBool("is_decoder", false));
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireBool("add_cross_attention", false));
  config->attention_bias = true;
  config->mlp_bias = true;
  config->tie_word_embeddings = false;  // a classifier has no LM head to tie
  return ParseClassifierLabels(fields, config);
}

// A DeBERTa option that transformers reads as a "|"-separated string (lower-cased, each entry
// stripped) or, for pos_att_type, also as a list of strings taken as they are.
StatusOr<std::vector<std::string>> ParseDebertaList(const ConfigFields& fields,
                                                    const std::string& field,
                                                    const std::string& fallback) {
  if (!fields.Has(field)) {
    return fallback.empty() ? std::vector<std::string>() : std::vector<std::string>{fallback};
  }
  const json& value = fields[field];
  std::vector<std::string> entries;
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_string()) {
        return fields.Error(field + "[" + std::to_string(i) + "]",
                            "expected a string, got " + JsonKindName(value[i]));
      }
      entries.push_back(value[i].get<std::string>());
    }
    return entries;
  }
  if (!value.is_string()) {
    return fields.Error(field, "expected a string or a list of strings, got " +
                                   JsonKindName(value));
  }
  std::string text = value.get<std::string>();
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(text.find('|', begin), text.size());
    size_t first = begin, last = end;
    while (first < last && is_space(text[first])) ++first;
    while (last > first && is_space(text[last - 1])) --last;
    entries.push_back(text.substr(first, last - first));
    if (end == text.size()) break;
    begin = end + 1;
  }
  return entries;
}

// DeBERTa-v2 and -v3 (DebertaV2ForSequenceClassification). transformers reads several settings
// with getattr defaults rather than from DebertaV2Config's fields (position_buckets,
// share_att_key, norm_rel_ebd, embedding_size, conv_kernel_size, conv_groups, conv_act); their
// defaults here are those.
Status ParseDebertaV2(const ConfigFields& fields, ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseMultiHeadSizes(fields, "intermediate_size", config));
  // deberta-v2-xlarge's attention_head_size is hidden / heads; any other would change every
  // attention projection's width.
  GEOTRAIN_ASSIGN_OR_RETURN(
      int64_t head_size,
      fields.OptionalSize("attention_head_size", config->head_dim, kMaxDimension));
  if (head_size != config->head_dim) {
    return fields.Error("attention_head_size",
                        std::to_string(head_size) + " is not supported (only hidden_size / "
                        "num_attention_heads = " + std::to_string(config->head_dim) + ")");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(config->max_positions,
                            fields.OptionalSize("max_position_embeddings", 512, kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->type_vocab_size,
                            fields.OptionalCount("type_vocab_size", 0, kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->norm_eps,
                            fields.OptionalPositiveNumber("layer_norm_eps", 1e-7));
  GEOTRAIN_ASSIGN_OR_RETURN(config->activation, ParseActivation(fields, "hidden_act", "gelu"));
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->embedding_dim,
      fields.OptionalSize("embedding_size", config->hidden_size, kMaxDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->position_biased_input,
                            fields.OptionalBool("position_biased_input", true));

  GEOTRAIN_ASSIGN_OR_RETURN(config->relative_attention,
                            fields.OptionalBool("relative_attention", false));
  GEOTRAIN_ASSIGN_OR_RETURN(int64_t max_relative,
                            fields.OptionalInteger("max_relative_positions", -1));
  config->max_relative_positions = max_relative < 1 ? config->max_positions : max_relative;
  GEOTRAIN_ASSIGN_OR_RETURN(int64_t buckets, fields.OptionalInteger("position_buckets", -1));
  config->position_buckets = std::max<int64_t>(buckets, 0);
  if (config->relative_attention && config->position_buckets > 0) {
    // make_log_bucket_position divides by position_buckets / 2 and by
    // log((max_relative_positions - 1) / (position_buckets / 2)): both must be positive.
    if (config->position_buckets < 2) {
      return fields.Error("position_buckets", std::to_string(buckets) +
                                                  " is not supported (log buckets need >= 2)");
    }
    if (config->max_relative_positions - 1 <= config->position_buckets / 2) {
      return fields.Error("max_relative_positions",
                          std::to_string(config->max_relative_positions) +
                              " must exceed position_buckets / 2 + 1 = " +
                              std::to_string(config->position_buckets / 2 + 1));
    }
  }
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> attention_types,
                            ParseDebertaList(fields, "pos_att_type", ""));
  for (const std::string& type : attention_types) {
    if (type == "c2p") {
      config->attention_c2p = true;
    } else if (type == "p2c") {
      config->attention_p2c = true;
    } else {
      return fields.Error("pos_att_type", "\"" + type + "\" is not supported (c2p, p2c)");
    }
  }
  GEOTRAIN_ASSIGN_OR_RETURN(config->share_attention_key,
                            fields.OptionalBool("share_att_key", false));
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> norms,
                            ParseDebertaList(fields, "norm_rel_ebd", "none"));
  for (const std::string& norm : norms) {
    if (norm == "layer_norm") {
      config->norm_relative_embeddings = true;
    } else if (norm != "none") {
      return fields.Error("norm_rel_ebd",
                          "\"" + norm + "\" is not supported (layer_norm, none)");
    }
  }
  // transformers creates deberta.encoder.LayerNorm for norm_rel_ebd even without relative
  // attention, and never uses it: refused rather than carried as a tensor nothing trains.
  if (config->norm_relative_embeddings && !config->relative_attention) {
    return fields.Error("norm_rel_ebd",
                        "\"layer_norm\" without relative_attention is not supported");
  }
  // deberta-v2-xlarge's convolution beside the first layer (ConvLayer). transformers reads
  // conv_groups and conv_act (default "tanh", which geotrain has no activation for) only when it
  // builds the layer.
  GEOTRAIN_ASSIGN_OR_RETURN(int64_t conv_kernel, fields.OptionalInteger("conv_kernel_size", 0));
  if (conv_kernel > 0) {
    // Conv1d's padding (kernel - 1) / 2 keeps the sequence length only for an odd kernel
    // (transformers fails on an even one).
    if (conv_kernel % 2 == 0 || static_cast<uint64_t>(conv_kernel) > kMaxDimension) {
      return fields.Error("conv_kernel_size", std::to_string(conv_kernel) +
                                                  " is not supported (only odd sizes)");
    }
    config->conv_kernel_size = conv_kernel;
    GEOTRAIN_ASSIGN_OR_RETURN(config->conv_groups,
                              fields.OptionalSize("conv_groups", 1, kMaxDimension));
    if (config->hidden_size % config->conv_groups != 0) {
      return fields.Error("conv_groups", std::to_string(config->conv_groups) +
                                             " does not divide hidden_size " +
                                             std::to_string(config->hidden_size));
    }
    GEOTRAIN_ASSIGN_OR_RETURN(config->conv_activation,
                              ParseActivation(fields, "conv_act", "tanh"));
  }
  // The pooler is [pooler_hidden_size, pooler_hidden_size] on a hidden state, so any other size
  // would not fit (transformers would fail too).
  GEOTRAIN_ASSIGN_OR_RETURN(
      int64_t pooler_size,
      fields.OptionalSize("pooler_hidden_size", config->hidden_size, kMaxDimension));
  if (pooler_size != config->hidden_size) {
    return fields.Error("pooler_hidden_size", std::to_string(pooler_size) +
                                                  " is not supported (only hidden_size " +
                                                  std::to_string(config->hidden_size) + ")");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(config->pooler_activation,
                            ParseActivation(fields, "pooler_hidden_act", "gelu"));
  config->attention_bias = true;
  config->mlp_bias = true;
  config->tie_word_embeddings = false;  // a classifier has no LM head to tie
  return ParseClassifierLabels(fields, config);
}

}  // namespace

const char* ModelTypeName(ModelFamily family) {
  switch (family) {
    case ModelFamily::kGpt2:
      return "gpt2";
    case ModelFamily::kLlama:
      return "llama";
    case ModelFamily::kQwen2:
      return "qwen2";
    case ModelFamily::kOpt:
      return "opt";
    case ModelFamily::kGptNeoX:
      return "gpt_neox";
    case ModelFamily::kGptJ:
      return "gptj";
    case ModelFamily::kBert:
      return "bert";
    case ModelFamily::kDebertaV2:
      return "deberta-v2";
  }
  return "unknown";
}

StatusOr<ModelConfig> ParseModelConfig(const std::string& text, const std::string& source) {
  GEOTRAIN_ASSIGN_OR_RETURN(json root, ParseStrictJson(text, source));
  if (!root.is_object()) {
    return InvalidArgument(source + ": expected a JSON object, got " + JsonKindName(root));
  }
  ConfigFields fields(root, source);
  GEOTRAIN_ASSIGN_OR_RETURN(std::string model_type, fields.OptionalString("model_type", ""));
  ModelConfig config;
  if (model_type == "gpt2") {
    config.family = ModelFamily::kGpt2;
    GEOTRAIN_RETURN_IF_ERROR(ParseGpt2(fields, &config));
  } else if (model_type == "llama" || model_type == "qwen2") {
    config.family = model_type == "llama" ? ModelFamily::kLlama : ModelFamily::kQwen2;
    GEOTRAIN_RETURN_IF_ERROR(ParseLlamaFamily(fields, &config));
  } else if (model_type == "opt") {
    config.family = ModelFamily::kOpt;
    GEOTRAIN_RETURN_IF_ERROR(ParseOpt(fields, &config));
  } else if (model_type == "gpt_neox") {
    config.family = ModelFamily::kGptNeoX;
    GEOTRAIN_RETURN_IF_ERROR(ParseGptNeoX(fields, &config));
  } else if (model_type == "gptj") {
    config.family = ModelFamily::kGptJ;
    GEOTRAIN_RETURN_IF_ERROR(ParseGptJ(fields, &config));
  } else if (model_type == "bert") {
    config.family = ModelFamily::kBert;
    GEOTRAIN_RETURN_IF_ERROR(ParseBert(fields, &config));
  } else if (model_type == "deberta-v2") {
    config.family = ModelFamily::kDebertaV2;
    GEOTRAIN_RETURN_IF_ERROR(ParseDebertaV2(fields, &config));
  } else if (model_type.empty()) {
    return fields.Error("model_type", "missing");
  } else {
    return fields.Error("model_type", "\"" + model_type +
                                          "\" is not supported (gpt2, llama, qwen2, opt, "
                                          "gpt_neox, gptj, bert, deberta-v2)");
  }
  if (config.family != ModelFamily::kOpt) {  // OPT calls it init_std
    GEOTRAIN_ASSIGN_OR_RETURN(config.initializer_range,
                              fields.OptionalPositiveNumber("initializer_range", 0.02));
  }
  GEOTRAIN_RETURN_IF_ERROR(ValidateModelConfig(config, source));
  return config;
}

StatusOr<ModelConfig> LoadModelConfig(const std::string& model_dir) {
  const std::string path = model_dir + "/config.json";
  GEOTRAIN_ASSIGN_OR_RETURN(std::string text, ReadFileContents(path, kMaxConfigBytes));
  return ParseModelConfig(text, path);
}

Status ValidateModelConfig(const ModelConfig& c, const std::string& source) {
  const auto positive = [&](const char* field, int64_t value) -> Status {
    if (value <= 0 || static_cast<uint64_t>(value) > kMaxDimension) {
      return InvalidArgument(source + ": " + field + ": " + std::to_string(value) +
                             " is not in [1, " + std::to_string(kMaxDimension) + "]");
    }
    return OkStatus();
  };
  GEOTRAIN_RETURN_IF_ERROR(positive("vocab_size", c.vocab_size));
  GEOTRAIN_RETURN_IF_ERROR(positive("hidden_size", c.hidden_size));
  GEOTRAIN_RETURN_IF_ERROR(positive("num_layers", c.num_layers));
  GEOTRAIN_RETURN_IF_ERROR(positive("num_heads", c.num_heads));
  GEOTRAIN_RETURN_IF_ERROR(positive("num_kv_heads", c.num_kv_heads));
  GEOTRAIN_RETURN_IF_ERROR(positive("head_dim", c.head_dim));
  GEOTRAIN_RETURN_IF_ERROR(positive("intermediate_size", c.intermediate_size));
  GEOTRAIN_RETURN_IF_ERROR(positive("max_positions", c.max_positions));
  if (c.num_heads % c.num_kv_heads != 0) {
    return InvalidArgument(source + ": num_kv_heads: " + std::to_string(c.num_kv_heads) +
                           " does not divide num_heads " + std::to_string(c.num_heads));
  }
  if (c.family == ModelFamily::kGpt2 &&
      (c.num_kv_heads != c.num_heads || c.head_dim * c.num_heads != c.hidden_size)) {
    return InvalidArgument(source + ": gpt2 needs num_kv_heads == num_heads and head_dim * " +
                           "num_heads == hidden_size");
  }
  if (c.IsLlamaFamily() && c.head_dim % 2 != 0) {
    return InvalidArgument(source + ": head_dim: " + std::to_string(c.head_dim) + " is odd");
  }
  if (c.family == ModelFamily::kOpt || c.family == ModelFamily::kDebertaV2) {
    GEOTRAIN_RETURN_IF_ERROR(positive("embedding_dim", c.embedding_dim));
  }
  if (c.IsEncoder() != c.IsClassifier() || (c.IsClassifier() && c.num_labels < 2)) {
    return InvalidArgument(source + ": num_labels: " + std::to_string(c.num_labels) +
                           (c.IsEncoder() ? " (a classifier needs >= 2)"
                                          : " (only encoders classify)"));
  }
  if (c.family == ModelFamily::kDebertaV2 && c.relative_attention) {
    GEOTRAIN_RETURN_IF_ERROR(positive("max_relative_positions", c.max_relative_positions));
    if (c.position_buckets > 0 &&
        (c.position_buckets < 2 || c.max_relative_positions - 1 <= c.position_buckets / 2)) {
      return InvalidArgument(source + ": position_buckets: " +
                             std::to_string(c.position_buckets) +
                             " needs >= 2 buckets and max_relative_positions (" +
                             std::to_string(c.max_relative_positions) + ") > buckets / 2 + 1");
    }
  }
  if (c.family == ModelFamily::kDebertaV2 && c.conv_kernel_size != 0) {
    if (c.conv_kernel_size < 0 || c.conv_kernel_size % 2 == 0 ||
        static_cast<uint64_t>(c.conv_kernel_size) > kMaxDimension) {
      return InvalidArgument(source + ": conv_kernel_size: " +
                             std::to_string(c.conv_kernel_size) + " must be odd and positive");
    }
    if (c.conv_groups <= 0 || c.hidden_size % c.conv_groups != 0) {
      return InvalidArgument(source + ": conv_groups: " + std::to_string(c.conv_groups) +
                             " does not divide hidden_size " + std::to_string(c.hidden_size));
    }
  }
  if ((c.family == ModelFamily::kGptNeoX || c.family == ModelFamily::kGptJ) &&
      (c.rotary_dim < 2 || c.rotary_dim > c.head_dim || c.rotary_dim % 2 != 0)) {
    return InvalidArgument(source + ": rotary_dim: " + std::to_string(c.rotary_dim) +
                           " must be even and in [2, head_dim " + std::to_string(c.head_dim) +
                           "]");
  }
  if (!c.IsLlamaFamily() && c.family != ModelFamily::kGpt2 &&
      (c.num_kv_heads != c.num_heads || c.head_dim * c.num_heads != c.hidden_size)) {
    return InvalidArgument(source + ": " + ModelTypeName(c.family) +
                           " needs num_kv_heads == num_heads and head_dim * num_heads == "
                           "hidden_size");
  }
  if (!(c.norm_eps > 0) || !(c.rope_theta > 0) || !(c.initializer_range > 0)) {
    return InvalidArgument(source +
                           ": norm_eps, rope_theta and initializer_range must be positive");
  }
  return OkStatus();
}

const char* ActivationName(Activation activation) {
  switch (activation) {
    case Activation::kGeluTanh:
      return "gelu_new";
    case Activation::kGelu:
      return "gelu";
    case Activation::kRelu:
      return "relu";
    case Activation::kSilu:
      return "silu";
  }
  return "unknown";
}

namespace {

// id2label and label2id with transformers' default names: transformers counts the classes from
// id2label.
void AddClassifierLabels(int64_t num_labels, json* out) {
  json id2label = json::object(), label2id = json::object();
  for (int64_t i = 0; i < num_labels; ++i) {
    id2label[std::to_string(i)] = "LABEL_" + std::to_string(i);
    label2id["LABEL_" + std::to_string(i)] = i;
  }
  (*out)["id2label"] = id2label;
  (*out)["label2id"] = label2id;
}

}  // namespace

std::string ModelConfigToJson(const ModelConfig& c) {
  json out;
  out["model_type"] = ModelTypeName(c.family);
  out["vocab_size"] = c.vocab_size;
  out["tie_word_embeddings"] = c.tie_word_embeddings;
  out["initializer_range"] = c.initializer_range;
  if (c.family == ModelFamily::kGpt2) {
    out["architectures"] = {"GPT2LMHeadModel"};
    out["n_embd"] = c.hidden_size;
    out["n_layer"] = c.num_layers;
    out["n_head"] = c.num_heads;
    out["n_positions"] = c.max_positions;
    out["n_inner"] =
        c.intermediate_size == 4 * c.hidden_size ? json(nullptr) : json(c.intermediate_size);
    out["layer_norm_epsilon"] = c.norm_eps;
    out["activation_function"] = "gelu_new";
    out["scale_attn_weights"] = true;
    out["scale_attn_by_inverse_layer_idx"] = false;
  } else if (c.family == ModelFamily::kOpt) {
    out["architectures"] = {"OPTForCausalLM"};
    out["hidden_size"] = c.hidden_size;
    out["word_embed_proj_dim"] = c.embedding_dim;
    out["ffn_dim"] = c.intermediate_size;
    out["num_hidden_layers"] = c.num_layers;
    out["num_attention_heads"] = c.num_heads;
    out["max_position_embeddings"] = c.max_positions;
    out["activation_function"] = ActivationName(c.activation);
    out["enable_bias"] = c.attention_bias;
    out["do_layer_norm_before"] = true;
    out["layer_norm_elementwise_affine"] = true;
    out["init_std"] = c.initializer_range;
    out.erase("initializer_range");
  } else if (c.family == ModelFamily::kGptNeoX) {
    out["architectures"] = {"GPTNeoXForCausalLM"};
    out["hidden_size"] = c.hidden_size;
    out["intermediate_size"] = c.intermediate_size;
    out["num_hidden_layers"] = c.num_layers;
    out["num_attention_heads"] = c.num_heads;
    out["max_position_embeddings"] = c.max_positions;
    out["layer_norm_eps"] = c.norm_eps;
    out["hidden_act"] = ActivationName(c.activation);
    out["use_parallel_residual"] = c.parallel_residual;
    out["attention_bias"] = c.attention_bias;
    // Both spellings: rotary_pct and rotary_emb_base for transformers 4, rope_parameters for 5.
    const double partial = static_cast<double>(c.rotary_dim) / static_cast<double>(c.head_dim);
    out["rotary_pct"] = partial;
    out["rotary_emb_base"] = c.rope_theta;
    out["rope_parameters"] = {
        {"rope_type", "default"}, {"rope_theta", c.rope_theta}, {"partial_rotary_factor", partial}};
  } else if (c.family == ModelFamily::kBert) {
    out["architectures"] = {"BertForSequenceClassification"};
    out["hidden_size"] = c.hidden_size;
    out["intermediate_size"] = c.intermediate_size;
    out["num_hidden_layers"] = c.num_layers;
    out["num_attention_heads"] = c.num_heads;
    out["max_position_embeddings"] = c.max_positions;
    out["type_vocab_size"] = c.type_vocab_size;
    out["layer_norm_eps"] = c.norm_eps;
    out["hidden_act"] = ActivationName(c.activation);
    AddClassifierLabels(c.num_labels, &out);
  } else if (c.family == ModelFamily::kDebertaV2) {
    out["architectures"] = {"DebertaV2ForSequenceClassification"};
    out["hidden_size"] = c.hidden_size;
    out["intermediate_size"] = c.intermediate_size;
    out["num_hidden_layers"] = c.num_layers;
    out["num_attention_heads"] = c.num_heads;
    out["max_position_embeddings"] = c.max_positions;
    out["type_vocab_size"] = c.type_vocab_size;
    out["layer_norm_eps"] = c.norm_eps;
    out["hidden_act"] = ActivationName(c.activation);
    // Spelled as transformers writes them when they are the defaults: no embedding_size, and -1
    // for max_relative_positions = max_position_embeddings.
    if (c.embedding_dim != c.hidden_size) out["embedding_size"] = c.embedding_dim;
    out["position_biased_input"] = c.position_biased_input;
    out["relative_attention"] = c.relative_attention;
    out["max_relative_positions"] =
        c.max_relative_positions == c.max_positions ? -1 : c.max_relative_positions;
    out["position_buckets"] = c.position_buckets > 0 ? c.position_buckets : -1;
    json types = json::array();
    if (c.attention_p2c) types.push_back("p2c");
    if (c.attention_c2p) types.push_back("c2p");
    out["pos_att_type"] = types;
    out["share_att_key"] = c.share_attention_key;
    out["norm_rel_ebd"] = c.norm_relative_embeddings ? "layer_norm" : "none";
    out["pooler_hidden_size"] = c.hidden_size;
    out["pooler_hidden_act"] = ActivationName(c.pooler_activation);
    if (c.conv_kernel_size > 0) {
      out["conv_kernel_size"] = c.conv_kernel_size;
      out["conv_groups"] = c.conv_groups;
      out["conv_act"] = ActivationName(c.conv_activation);
    }
    AddClassifierLabels(c.num_labels, &out);
  } else if (c.family == ModelFamily::kGptJ) {
    out["architectures"] = {"GPTJForCausalLM"};
    out["n_embd"] = c.hidden_size;
    out["n_layer"] = c.num_layers;
    out["n_head"] = c.num_heads;
    out["n_positions"] = c.max_positions;
    out["n_inner"] =
        c.intermediate_size == 4 * c.hidden_size ? json(nullptr) : json(c.intermediate_size);
    out["rotary_dim"] = c.rotary_dim;
    out["layer_norm_epsilon"] = c.norm_eps;
    out["activation_function"] = ActivationName(c.activation);
  } else {
    const bool qwen2 = c.family == ModelFamily::kQwen2;
    out["architectures"] = {qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
    out["hidden_size"] = c.hidden_size;
    out["intermediate_size"] = c.intermediate_size;
    out["num_hidden_layers"] = c.num_layers;
    out["num_attention_heads"] = c.num_heads;
    out["num_key_value_heads"] = c.num_kv_heads;
    out["head_dim"] = c.head_dim;
    out["max_position_embeddings"] = c.max_positions;
    out["rms_norm_eps"] = c.norm_eps;
    // Top-level rope_theta is what every transformers release (and llama.cpp's converter) reads.
    out["rope_theta"] = c.rope_theta;
    out["hidden_act"] = "silu";
    if (qwen2) {
      out["use_sliding_window"] = false;
    } else {
      out["attention_bias"] = c.attention_bias;
      out["mlp_bias"] = c.mlp_bias;
    }
  }
  return out.dump(2) + "\n";
}

}  // namespace geotrain::models
