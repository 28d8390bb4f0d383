// Each family's config.json spelling, both ways: `parse` maps the family's own keys onto
// ModelConfig, with the defaults of the matching transformers config class, and refuses by name
// every setting geotrain does not implement; `write` adds the keys transformers writes for it
// (architectures and the family's field names) to an object that already holds model_type,
// vocab_size, tie_word_embeddings and initializer_range.
//
// ParseModelConfig (model_config.cc) picks the pair by model_type, sets config->family before
// the call, reads initializer_range after it (OPT reads its init_std itself) and validates the
// result. A reader returns the first problem, naming the field. Plain functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "models/config_json/config_fields.h"
#include "models/model_config.h"

namespace geotrain::models {

// A family's reader and writer.
struct FamilyConfigFormat {
  Status (*parse)(const ConfigFields& fields, ModelConfig* config);
  void (*write)(const ModelConfig& config, nlohmann::json* out);
};

// One per file: gpt2.cc holds GPT-2 and GPT-J (which keeps GPT-2's spelling: n_embd, n_layer,
// n_head, ...); llama.cc Llama and Qwen2 (config->family tells them apart); opt.cc, gpt_neox.cc,
// bert.cc and deberta_v2.cc one family each.
extern const FamilyConfigFormat kGpt2ConfigFormat, kGptJConfigFormat, kLlamaConfigFormat,
    kOptConfigFormat, kGptNeoXConfigFormat, kBertConfigFormat, kDebertaV2ConfigFormat;

}  // namespace geotrain::models
