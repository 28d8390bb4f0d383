#include "models/tokenizer/bert_normalizer.h"

#include "common/utf8.h"
#include "models/tokenizer/bert_unicode.h"

namespace geotrain::models {

std::u32string NormalizeBert(std::string_view text, const BertNormalizerOptions& options) {
  // Each step works character by character, so one pass applies them all in the library's order.
  std::u32string out;
  out.reserve(text.size());
  std::u32string stripped;
  for (size_t pos = 0; pos < text.size();) {
    const DecodedCodePoint decoded = DecodeUtf8(text, pos);
    pos += decoded.length;
    char32_t cp = decoded.code_point == kInvalidCodePoint ? 0xFFFD : decoded.code_point;
    if (options.clean_text) {
      // Controls first: U+000B, U+000C and U+0085 are both, and are dropped.
      if (cp == '\t' || cp == '\n' || cp == '\r') {
        cp = ' ';
      } else if (IsBertDropped(cp)) {
        continue;
      } else if (IsBertWhitespace(cp)) {
        cp = ' ';
      }
    }
    const bool spaced = options.handle_chinese_chars && IsBertChineseChar(cp);
    if (spaced) out.push_back(' ');
    stripped.clear();
    if (options.strip_accents) {
      AppendStrippedAccents(cp, &stripped);
    } else {
      stripped.push_back(cp);
    }
    for (char32_t c : stripped) {
      if (options.lowercase) {
        AppendLowercase(c, &out);
      } else {
        out.push_back(c);
      }
    }
    if (spaced) out.push_back(' ');
  }
  return out;
}

}  // namespace geotrain::models
