#include "models/tokenizer/added_token_matcher.h"

#include <algorithm>
#include <map>

namespace geotrain::models {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) : by_first_byte_(256) {
  for (const AddedToken& token : tokens) {
    if (!token.content.empty()) tokens_.push_back(token);
  }
  for (size_t i = 0; i < tokens_.size(); ++i) {
    by_first_byte_[static_cast<uint8_t>(tokens_[i].content[0])].push_back(i);
  }
  for (auto& candidates : by_first_byte_) {
    std::stable_sort(candidates.begin(), candidates.end(), [this](size_t a, size_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

std::vector<int32_t> AddedTokenMatcher::Encode(
    std::string_view text,
    const std::function<void(std::string_view, std::vector<int32_t>*)>& encode_text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 4);  // a few bytes per token in every vocabulary geotrain reads
  Split(
      text, [&](std::string_view stretch) { encode_text(stretch, &ids); },
      [&](const AddedToken& token) { ids.push_back(token.id); });
  return ids;
}

void AddedTokenMatcher::Split(std::string_view text,
                              const std::function<void(std::string_view)>& on_text,
                              const std::function<void(const AddedToken&)>& on_token) const {
  size_t text_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* match = nullptr;
    for (size_t index : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
      const std::string& content = tokens_[index].content;
      if (text.compare(pos, content.size(), content) == 0) {
        match = &tokens_[index];
        break;  // candidates are longest first
      }
    }
    if (match == nullptr) {
      ++pos;
      continue;
    }
    if (pos > text_start) on_text(text.substr(text_start, pos - text_start));
    on_token(*match);
    pos += match->content.size();
    text_start = pos;
  }
  if (text.size() > text_start) on_text(text.substr(text_start));
}

StatusOr<int32_t> CheckAddedTokens(
    const std::vector<AddedToken>& tokens, int32_t max_vocab_id, int32_t max_token_id,
    const std::function<std::optional<int32_t>(const std::string&)>& vocab_id,
    const std::string& source) {
  int32_t max_id = max_vocab_id;
  std::map<int32_t, const AddedToken*> by_id;
  std::map<std::string, const AddedToken*> by_content;
  for (const AddedToken& token : tokens) {
    const std::string name = source + ": added token \"" + token.content + "\"";
    if (token.content.empty()) return InvalidArgument(name + ": empty content");
    if (token.id < 0 || token.id > max_token_id) {
      return InvalidArgument(name + ": id " + std::to_string(token.id) + " is out of range");
    }
    if (!by_id.emplace(token.id, &token).second) {
      return InvalidArgument(name + ": id " + std::to_string(token.id) +
                             " is also the id of added token \"" + by_id[token.id]->content + "\"");
    }
    if (!by_content.emplace(token.content, &token).second) {
      return InvalidArgument(name + ": added twice");
    }
    const std::optional<int32_t> in_vocab = vocab_id(token.content);
    if (in_vocab && *in_vocab != token.id) {
      return InvalidArgument(name + ": id " + std::to_string(token.id) +
                             ", but the vocabulary has it as id " + std::to_string(*in_vocab));
    }
    max_id = std::max(max_id, token.id);
  }
  return max_id;
}

}  // namespace geotrain::models
