// DeBERTa-v2 and -v3 (DebertaV2Config) as DebertaV2ForSequenceClassification: disentangled
// relative attention, optional embedding projection and the xlarge models' convolution.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "common/io/strict_json.h"
#include "models/config_json/families.h"
#include "models/config_json/shared_keys.h"

namespace geotrain::models {
namespace {

using json = nlohmann::json;

// type_vocab_size defaults to 0 here: DeBERTa-v3 has no segment embeddings.
constexpr SharedKeys kDebertaV2Keys = {"intermediate_size", 512,   0, "layer_norm_eps", 1e-7,
                                       std::nullopt,        "gelu"};

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
                            "expected a string, got " + io::JsonKindName(value[i]));
      }
      entries.push_back(value[i].get<std::string>());
    }
    return entries;
  }
  if (!value.is_string()) {
    return fields.Error(field,
                        "expected a string or a list of strings, got " + io::JsonKindName(value));
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

// pos_att_type: the content-to-position and position-to-content terms.
Status ParseAttentionTypes(const ConfigFields& fields, ModelConfig* config) {
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
  return OkStatus();
}

// relative_attention and what shapes it: the clamp or log buckets of the distances, the c2p /
// p2c terms, shared or separate position projections, and the relative embeddings' norm.
Status ParseRelativeAttention(const ConfigFields& fields, ModelConfig* config) {
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
      return fields.Error("position_buckets",
                          std::to_string(buckets) + " is not supported (log buckets need >= 2)");
    }
    if (config->max_relative_positions - 1 <= config->position_buckets / 2) {
      return fields.Error("max_relative_positions",
                          std::to_string(config->max_relative_positions) +
                              " must exceed position_buckets / 2 + 1 = " +
                              std::to_string(config->position_buckets / 2 + 1));
    }
  }
  GEOTRAIN_RETURN_IF_ERROR(ParseAttentionTypes(fields, config));
  GEOTRAIN_ASSIGN_OR_RETURN(config->share_attention_key,
                            fields.OptionalBool("share_att_key", false));
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> norms,
                            ParseDebertaList(fields, "norm_rel_ebd", "none"));
  for (const std::string& norm : norms) {
    if (norm == "layer_norm") {
      config->norm_relative_embeddings = true;
    } else if (norm != "none") {
      return fields.Error("norm_rel_ebd", "\"" + norm + "\" is not supported (layer_norm, none)");
    }
  }
  // transformers creates deberta.encoder.LayerNorm for norm_rel_ebd even without relative
  // attention, and never uses it: refused rather than carried as a tensor nothing trains.
  if (config->norm_relative_embeddings && !config->relative_attention) {
    return fields.Error("norm_rel_ebd",
                        "\"layer_norm\" without relative_attention is not supported");
  }
  return OkStatus();
}

// deberta-v2-xlarge's convolution beside the first layer (ConvLayer). transformers reads
// conv_groups and conv_act (default "tanh", which geotrain has no activation for) only when it
// builds the layer.
Status ParseConvolution(const ConfigFields& fields, ModelConfig* config) {
  GEOTRAIN_ASSIGN_OR_RETURN(int64_t conv_kernel, fields.OptionalInteger("conv_kernel_size", 0));
  if (conv_kernel <= 0) return OkStatus();
  // Conv1d's padding (kernel - 1) / 2 keeps the sequence length only for an odd kernel
  // (transformers fails on an even one).
  if (conv_kernel % 2 == 0 || static_cast<uint64_t>(conv_kernel) > kMaxModelDimension) {
    return fields.Error("conv_kernel_size",
                        std::to_string(conv_kernel) + " is not supported (only odd sizes)");
  }
  config->conv_kernel_size = conv_kernel;
  GEOTRAIN_ASSIGN_OR_RETURN(config->conv_groups,
                            fields.OptionalSize("conv_groups", 1, kMaxModelDimension));
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireDivides("conv_groups", config->conv_groups, "hidden_size",
                                                 config->hidden_size));
  GEOTRAIN_ASSIGN_OR_RETURN(config->conv_activation, ParseActivation(fields, "conv_act", "tanh"));
  return OkStatus();
}

// A size setting that geotrain supports only at `supported`, its default (the width of the
// hidden state or of a head): any other would change the shapes of the tensors around it.
Status RequireSize(const ConfigFields& fields, const std::string& field, int64_t supported,
                   const std::string& supported_name) {
  GEOTRAIN_ASSIGN_OR_RETURN(int64_t size,
                            fields.OptionalSize(field, supported, kMaxModelDimension));
  if (size != supported) {
    return fields.Error(field, std::to_string(size) + " is not supported (only " + supported_name +
                                   std::to_string(supported) + ")");
  }
  return OkStatus();
}

// transformers reads several settings with getattr defaults rather than from DebertaV2Config's
// fields (position_buckets, share_att_key, norm_rel_ebd, embedding_size, conv_kernel_size,
// conv_groups, conv_act); their defaults here are those.
Status ParseDebertaV2(const ConfigFields& fields, ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseMultiHeadSizes(fields, kDebertaV2Keys, config));
  // deberta-v2-xlarge's attention_head_size is hidden / heads; any other would change every
  // attention projection's width.
  GEOTRAIN_RETURN_IF_ERROR(RequireSize(fields, "attention_head_size", config->head_dim,
                                       "hidden_size / num_attention_heads = "));
  GEOTRAIN_RETURN_IF_ERROR(ParseSharedKeys(fields, kDebertaV2Keys, config));
  GEOTRAIN_ASSIGN_OR_RETURN(
      config->embedding_dim,
      fields.OptionalSize("embedding_size", config->hidden_size, kMaxModelDimension));
  GEOTRAIN_ASSIGN_OR_RETURN(config->position_biased_input,
                            fields.OptionalBool("position_biased_input", true));
  GEOTRAIN_RETURN_IF_ERROR(ParseRelativeAttention(fields, config));
  GEOTRAIN_RETURN_IF_ERROR(ParseConvolution(fields, config));
  // The pooler is [pooler_hidden_size, pooler_hidden_size] on a hidden state, so any other size
  // would not fit (transformers would fail too).
  GEOTRAIN_RETURN_IF_ERROR(
      RequireSize(fields, "pooler_hidden_size", config->hidden_size, "hidden_size "));
  GEOTRAIN_ASSIGN_OR_RETURN(config->pooler_activation,
                            ParseActivation(fields, "pooler_hidden_act", "gelu"));
  return ParseClassifierHead(fields, config);
}

void WriteDebertaV2(const ModelConfig& c, json* out) {
  WriteSharedKeys(c, kDebertaV2Keys, out);
  json& o = *out;
  o["architectures"] = {"DebertaV2ForSequenceClassification"};
  // Spelled as transformers writes them when they are the defaults: no embedding_size, and -1
  // for max_relative_positions = max_position_embeddings.
  if (c.embedding_dim != c.hidden_size) o["embedding_size"] = c.embedding_dim;
  o["position_biased_input"] = c.position_biased_input;
  o["relative_attention"] = c.relative_attention;
  o["max_relative_positions"] =
      c.max_relative_positions == c.max_positions ? -1 : c.max_relative_positions;
  o["position_buckets"] = c.position_buckets > 0 ? c.position_buckets : -1;
  json types = json::array();
  if (c.attention_p2c) types.push_back("p2c");
  if (c.attention_c2p) types.push_back("c2p");
  o["pos_att_type"] = types;
  o["share_att_key"] = c.share_attention_key;
  o["norm_rel_ebd"] = c.norm_relative_embeddings ? "layer_norm" : "none";
  o["pooler_hidden_size"] = c.hidden_size;
  o["pooler_hidden_act"] = ActivationName(c.pooler_activation);
  if (c.conv_kernel_size > 0) {
    o["conv_kernel_size"] = c.conv_kernel_size;
    o["conv_groups"] = c.conv_groups;
    o["conv_act"] = ActivationName(c.conv_activation);
  }
  WriteClassifierLabels(c.num_labels, out);
}

}  // namespace

const FamilyConfigFormat kDebertaV2ConfigFormat = {ParseDebertaV2, WriteDebertaV2};

}  // namespace geotrain::models
