// ModelConfig's names and its config.json form: the table of families below picks each
// family's reader and writer (config_json/families.h) by model_type.
#include "models/model_config.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "common/io/file_contents.h"
#include "common/io/strict_json.h"
#include "models/config_json/config_fields.h"
#include "models/config_json/families.h"

namespace geotrain::models {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxConfigBytes = 1 << 20;

struct FamilyEntry {
  ModelFamily family;
  const char* model_type;
  const FamilyConfigFormat* format;
};

// In ModelFamily's order, which is also the order the error for an unknown model_type lists.
constexpr FamilyEntry kFamilies[] = {
    {ModelFamily::kGpt2, "gpt2", &kGpt2ConfigFormat},
    {ModelFamily::kLlama, "llama", &kLlamaConfigFormat},
    {ModelFamily::kQwen2, "qwen2", &kLlamaConfigFormat},
    {ModelFamily::kOpt, "opt", &kOptConfigFormat},
    {ModelFamily::kGptNeoX, "gpt_neox", &kGptNeoXConfigFormat},
    {ModelFamily::kGptJ, "gptj", &kGptJConfigFormat},
    {ModelFamily::kBert, "bert", &kBertConfigFormat},
    {ModelFamily::kDebertaV2, "deberta-v2", &kDebertaV2ConfigFormat},
};

const FamilyEntry* EntryOf(ModelFamily family) {
  for (const FamilyEntry& entry : kFamilies) {
    if (entry.family == family) return &entry;
  }
  return nullptr;
}

constexpr std::pair<Activation, const char*> kActivationNames[] = {
    {Activation::kGeluTanh, "gelu_new"},
    {Activation::kGelu, "gelu"},
    {Activation::kRelu, "relu"},
    {Activation::kSilu, "silu"},
};

}  // namespace

const char* ModelTypeName(ModelFamily family) {
  const FamilyEntry* entry = EntryOf(family);
  return entry != nullptr ? entry->model_type : "unknown";
}

const char* ActivationName(Activation activation) {
  for (const auto& [value, name] : kActivationNames) {
    if (value == activation) return name;
  }
  return "unknown";
}

StatusOr<ModelConfig> ParseModelConfig(const std::string& text, const std::string& source) {
  GEOTRAIN_ASSIGN_OR_RETURN(json root, io::ParseStrictJson(text, source));
  if (!root.is_object()) {
    return InvalidArgument(source + ": expected a JSON object, got " + io::JsonKindName(root));
  }
  ConfigFields fields(root, source);
  GEOTRAIN_ASSIGN_OR_RETURN(std::string model_type, fields.OptionalString("model_type", ""));
  if (model_type.empty()) return fields.Error("model_type", "missing");
  const FamilyEntry* entry = nullptr;
  std::string known;
  for (const FamilyEntry& candidate : kFamilies) {
    if (model_type == candidate.model_type) entry = &candidate;
    known += (known.empty() ? "" : ", ") + std::string(candidate.model_type);
  }
  if (entry == nullptr) {
    return fields.Error("model_type", "\"" + model_type + "\" is not supported (" + known + ")");
  }
  ModelConfig config;
  config.family = entry->family;
  GEOTRAIN_RETURN_IF_ERROR(entry->format->parse(fields, &config));
  if (config.family != ModelFamily::kOpt) {  // OPT calls it init_std
    GEOTRAIN_ASSIGN_OR_RETURN(config.initializer_range,
                              fields.OptionalPositiveNumber("initializer_range", 0.02));
  }
  GEOTRAIN_RETURN_IF_ERROR(ValidateModelConfig(config, source));
  return config;
}

StatusOr<ModelConfig> LoadModelConfig(const std::string& model_dir) {
  const std::string path = model_dir + "/config.json";
  GEOTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileContents(path, kMaxConfigBytes));
  return ParseModelConfig(text, path);
}

std::string ModelConfigToJson(const ModelConfig& c) {
  json out;
  out["model_type"] = ModelTypeName(c.family);
  out["vocab_size"] = c.vocab_size;
  out["tie_word_embeddings"] = c.tie_word_embeddings;
  out["initializer_range"] = c.initializer_range;
  if (const FamilyEntry* entry = EntryOf(c.family)) entry->format->write(c, &out);
  return out.dump(2) + "\n";
}

}  // namespace geotrain::models
