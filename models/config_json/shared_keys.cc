#include "models/config_json/shared_keys.h"

#include "common/io/strict_json.h"

namespace geotrain::models {

using json = nlohmann::json;

Status ParseStandardSizes(const ConfigFields& fields, const SharedKeys& keys, ModelConfig* config) {
  GEOTRAIN_ASSIGN_OR_RETURN(config->vocab_size,
                            fields.RequiredSize("vocab_size", kMaxModelDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->hidden_size,
                            fields.RequiredSize("hidden_size", kMaxModelDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->intermediate_size,
                            fields.RequiredSize(keys.mlp_field, kMaxModelDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->num_layers,
                            fields.RequiredSize("num_hidden_layers", kMaxModelLayers));
  GEOTRAIN_ASSIGN_OR_RETURN(config->num_heads,
                            fields.RequiredSize("num_attention_heads", kMaxModelDimension));
  return OkStatus();
}

Status ParseMultiHeadSizes(const ConfigFields& fields, const SharedKeys& keys,
                           ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseStandardSizes(fields, keys, config));
  config->num_kv_heads = config->num_heads;
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireDivides("num_attention_heads", config->num_heads,
                                                 "hidden_size", config->hidden_size));
  config->head_dim = config->hidden_size / config->num_heads;
  config->embedding_dim = config->hidden_size;
  return OkStatus();
}

Status ParseSharedKeys(const ConfigFields& fields, const SharedKeys& keys, ModelConfig* config) {
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->max_positions,
      fields.OptionalSize("max_position_embeddings", keys.max_positions, kMaxModelDimension));
  if (keys.type_vocab_size.has_value()) {
    const int64_t fallback = *keys.type_vocab_size;
    GEOTRAIN_ASSIGN_OR_RETURN(
        config->type_vocab_size,
        fallback == 0 ? fields.OptionalCount("type_vocab_size", 0, kMaxModelDimension)
                      : fields.OptionalSize("type_vocab_size", fallback, kMaxModelDimension));
  }
  if (keys.norm_eps_field != nullptr) {
    GEOTRAIN_ASSIGN_OR_RETURN(config->norm_eps,
                              fields.OptionalPositiveNumber(keys.norm_eps_field, keys.norm_eps));
  }
  if (keys.tie_word_embeddings.has_value()) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        config->tie_word_embeddings,
        fields.OptionalBool("tie_word_embeddings", *keys.tie_word_embeddings));
  }
  if (keys.activation != nullptr) {
    GEOTRAIN_ASSIGN_OR_RETURN(config->activation,
                              ParseActivation(fields, "hidden_act", keys.activation));
  }
  return OkStatus();
}

void WriteSharedKeys(const ModelConfig& c, const SharedKeys& keys, json* out) {
  json& o = *out;
  o["hidden_size"] = c.hidden_size;
  o[keys.mlp_field] = c.intermediate_size;
  o["num_hidden_layers"] = c.num_layers;
  o["num_attention_heads"] = c.num_heads;
  o["max_position_embeddings"] = c.max_positions;
  if (keys.type_vocab_size.has_value()) o["type_vocab_size"] = c.type_vocab_size;
  if (keys.norm_eps_field != nullptr) o[keys.norm_eps_field] = c.norm_eps;
  if (keys.activation != nullptr) o["hidden_act"] = ActivationName(c.activation);
}

StatusOr<Activation> ParseActivation(const ConfigFields& fields, const std::string& field,
                                     const std::string& fallback) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string name, fields.OptionalString(field, fallback));
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Activation::kGeluTanh;
  if (name == "gelu") return Activation::kGelu;
  if (name == "relu") return Activation::kRelu;
  return fields.Error(
      field, "\"" + name + "\" is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu)");
}

Status ParseRope(const ConfigFields& fields, ModelConfig* config, double* partial_rotary_factor) {
  if (fields.Has("rope_scaling")) {
    return fields.Error("rope_scaling", fields["rope_scaling"].dump() + " is not supported");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(config->rope_theta,
                            fields.OptionalPositiveNumber("rope_theta", config->rope_theta));
  if (!fields.Has("rope_parameters")) return OkStatus();
  const json& rope = fields["rope_parameters"];
  if (!rope.is_object()) {
    return fields.Error("rope_parameters", "expected an object, got " + io::JsonKindName(rope));
  }
  const ConfigFields rope_fields(rope, fields.source() + ": rope_parameters");
  for (const auto& [key, value] : rope.items()) {
    if (key == "rope_type") {
      if (value != "default") {
        return fields.Error("rope_parameters.rope_type", value.dump() + " is not supported");
      }
    } else if (key == "rope_theta") {
      GEOTRAIN_ASSIGN_OR_RETURN(config->rope_theta,
                                rope_fields.OptionalPositiveNumber("rope_theta", 10000.0));
    } else if (key == "partial_rotary_factor" && partial_rotary_factor != nullptr) {
      GEOTRAIN_ASSIGN_OR_RETURN(*partial_rotary_factor,
                                rope_fields.OptionalPositiveNumber("partial_rotary_factor", 1.0));
    } else if (key != "partial_rotary_factor" || value != 1.0) {
      return fields.Error("rope_parameters." + key, value.dump() + " is not supported");
    }
  }
  return OkStatus();
}

Status CheckRotaryDim(const ConfigFields& fields, const std::string& field, int64_t dim,
                      int64_t head_dim) {
  if (dim < 2 || dim > head_dim || dim % 2 != 0) {
    return fields.Error(field, "rotates " + std::to_string(dim) + " dimensions of a head of " +
                                   std::to_string(head_dim) +
                                   "; it must be even and in [2, head size]");
  }
  return OkStatus();
}

Status ParseClassifierHead(const ConfigFields& fields, ModelConfig* config) {
  config->attention_bias = true;
  config->mlp_bias = true;
  config->tie_word_embeddings = false;  // a classifier has no LM head to tie
  int64_t from_id2label = 0;
  if (fields.Has("id2label")) {
    if (!fields["id2label"].is_object()) {
      return fields.Error("id2label",
                          "expected an object, got " + io::JsonKindName(fields["id2label"]));
    }
    from_id2label = static_cast<int64_t>(fields["id2label"].size());
  }
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->num_labels,
      fields.OptionalSize("num_labels", from_id2label > 0 ? from_id2label : 2, kMaxModelDimension));
  if (from_id2label > 0 && from_id2label != config->num_labels) {
    return fields.Error("num_labels", std::to_string(config->num_labels) + " disagrees with the " +
                                          std::to_string(from_id2label) + " entries of id2label");
  }
  if (config->num_labels < 2) {
    return fields.Error("num_labels", "1 (regression) is not supported; classification needs >= 2");
  }
  return fields.RequireString("problem_type", "single_label_classification",
                              "single_label_classification");
}

void WriteClassifierLabels(int64_t num_labels, json* out) {
  json id2label = json::object(), label2id = json::object();
  for (int64_t i = 0; i < num_labels; ++i) {
    id2label[std::to_string(i)] = "LABEL_" + std::to_string(i);
    label2id["LABEL_" + std::to_string(i)] = i;
  }
  (*out)["id2label"] = id2label;
  (*out)["label2id"] = label2id;
}

}  // namespace geotrain::models
