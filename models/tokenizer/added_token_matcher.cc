#include "models/tokenizer/added_token_matcher.h"

#include <algorithm>

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

}  // namespace geotrain::models
