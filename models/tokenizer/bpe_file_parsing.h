// Parsing of the pieces of BPE tokenizer files shared by the loaders: a vocabulary object
// ({"spelling": id, ...}) and merge lists (merges.txt lines, or tokenizer.json's model.merges).
// Errors name the source and the entry. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "models/tokenizer/bpe_model.h"

namespace geotrain::models {

// `source` names the object in errors ("vocab.json", "tokenizer.json: model.vocab").
StatusOr<std::unordered_map<std::string, int32_t>> ParseVocabObject(const nlohmann::json& vocab,
                                                                    const std::string& source);

struct ParsedMerges {
  std::vector<BpeMergeRule> rules;
  std::vector<size_t> line_numbers;  // 1-based line of each rule in the text
};

// merges.txt: an optional "#version" first line, then one "left right" pair per line. Blank lines
// and a trailing '\r' are tolerated. `source` is the file's path.
StatusOr<ParsedMerges> ParseMergesText(std::string_view text, const std::string& source);

// tokenizer.json's model.merges: ["left right", ...] (older files) or [["left", "right"], ...].
StatusOr<std::vector<BpeMergeRule>> ParseMergesJson(const nlohmann::json& merges,
                                                    const std::string& source);

}  // namespace geotrain::models
