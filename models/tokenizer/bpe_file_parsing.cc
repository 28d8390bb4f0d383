#include "models/tokenizer/bpe_file_parsing.h"

#include "common/io/strict_json.h"

namespace geotrain::models {
namespace {

// "left right" with exactly one space and two non-empty halves.
bool SplitMergeLine(std::string_view line, BpeMergeRule* rule) {
  const size_t space = line.find(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
      line.find(' ', space + 1) != std::string_view::npos) {
    return false;
  }
  rule->left = std::string(line.substr(0, space));
  rule->right = std::string(line.substr(space + 1));
  return true;
}

}  // namespace

StatusOr<std::unordered_map<std::string, int32_t>> ParseVocabObject(const nlohmann::json& vocab,
                                                                    const std::string& source) {
  if (!vocab.is_object()) {
    return InvalidArgument(source + ": expected an object of token -> id, got " +
                           io::JsonKindName(vocab));
  }
  std::unordered_map<std::string, int32_t> result;
  result.reserve(vocab.size());
  for (const auto& [spelling, id] : vocab.items()) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        const uint64_t value,
        io::JsonToUnsigned(id, source + "[\"" + spelling + "\"]", kMaxTokenId));
    result.emplace(spelling, static_cast<int32_t>(value));
  }
  return result;
}

StatusOr<ParsedMerges> ParseMergesText(std::string_view text, const std::string& source) {
  ParsedMerges merges;
  size_t line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line_number == 1 && line.substr(0, 8) == "#version") continue;
    BpeMergeRule rule;
    if (!SplitMergeLine(line, &rule)) {
      return InvalidArgument(source + " line " + std::to_string(line_number) +
                             ": expected two tokens separated by one space, got \"" +
                             std::string(line.substr(0, 80)) + "\"");
    }
    merges.rules.push_back(std::move(rule));
    merges.line_numbers.push_back(line_number);
  }
  return merges;
}

StatusOr<std::vector<BpeMergeRule>> ParseMergesJson(const nlohmann::json& merges,
                                                    const std::string& source) {
  if (!merges.is_array()) {
    return InvalidArgument(source + ": expected an array, got " + io::JsonKindName(merges));
  }
  std::vector<BpeMergeRule> rules;
  rules.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const nlohmann::json& entry = merges[i];
    const std::string field = source + "[" + std::to_string(i) + "]";
    BpeMergeRule rule;
    if (entry.is_string()) {
      if (!SplitMergeLine(entry.get<std::string>(), &rule)) {
        return InvalidArgument(field + ": expected \"left right\", got " + entry.dump());
      }
    } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() &&
               entry[1].is_string() && !entry[0].get<std::string>().empty() &&
               !entry[1].get<std::string>().empty()) {
      rule.left = entry[0].get<std::string>();
      rule.right = entry[1].get<std::string>();
    } else {
      return InvalidArgument(field + ": expected \"left right\" or [\"left\", \"right\"], got " +
                             entry.dump().substr(0, 80));
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

}  // namespace geotrain::models
