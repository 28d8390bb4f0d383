#include "models/tokenizer/bert_pretokenizer.h"

#include "models/tokenizer/bert_unicode.h"

namespace geotrain::models {

void SplitBertPretokens(std::u32string_view text, std::vector<std::u32string_view>* words) {
  size_t start = 0;
  const auto flush = [&](size_t end) {
    if (end > start) words->push_back(text.substr(start, end - start));
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t cp = text[i];
    if (IsBertWhitespace(cp)) {
      flush(i);
      start = i + 1;
    } else if (IsBertPunctuation(cp)) {
      flush(i);
      words->push_back(text.substr(i, 1));
      start = i + 1;
    }
  }
  flush(text.size());
}

}  // namespace geotrain::models
