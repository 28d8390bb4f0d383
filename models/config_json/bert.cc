// BERT (BertConfig) as BertForSequenceClassification: post-LN encoder, absolute positions.
#include "models/config_json/families.h"
#include "models/config_json/shared_keys.h"

namespace geotrain::models {
namespace {

using json = nlohmann::json;

constexpr SharedKeys kBertKeys = {"intermediate_size", 512,   2, "layer_norm_eps", 1e-12,
                                  std::nullopt,        "gelu"};

Status ParseBert(const ConfigFields& fields, ModelConfig* config) {
  GEOTRAIN_RETURN_IF_ERROR(ParseMultiHeadSizes(fields, kBertKeys, config));
  GEOTRAIN_RETURN_IF_ERROR(ParseSharedKeys(fields, kBertKeys, config));
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireString("position_embedding_type", "absolute", "absolute"));
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireBool("is_decoder", false));
  GEOTRAIN_RETURN_IF_ERROR(fields.RequireBool("add_cross_attention", false));
  return ParseClassifierHead(fields, config);
}

void WriteBert(const ModelConfig& c, json* out) {
  WriteSharedKeys(c, kBertKeys, out);
  (*out)["architectures"] = {"BertForSequenceClassification"};
  WriteClassifierLabels(c.num_labels, out);
}

}  // namespace

const FamilyConfigFormat kBertConfigFormat = {ParseBert, WriteBert};

}  // namespace geotrain::models
