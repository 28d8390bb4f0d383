// ParseStrictJson: nlohmann-json parsing with errors as values and duplicate keys refused.
//
// nlohmann throws on malformed input and silently keeps the last of two equal keys; files we read
// (safetensors headers, tokenizer files, checkpoint indexes) may be hostile, and a duplicated
// tensor or token name is a corruption worth reporting, so this wrapper catches every exception and
// rejects duplicate keys at any depth. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace geotrain::io {

// `source` names the input in errors ("model.safetensors header", "vocab.json").
StatusOr<nlohmann::json> ParseStrictJson(std::string_view text, const std::string& source);

// "an object", "a string", "an integer", ... for messages like "expected an object, got a string".
std::string JsonKindName(const nlohmann::json& value);

// Reads a JSON integer in [0, max_value]; errors name `field` ("data_offsets[1]: -4 is negative").
StatusOr<uint64_t> JsonToUnsigned(const nlohmann::json& value, const std::string& field,
                                  uint64_t max_value);

}  // namespace geotrain::io
