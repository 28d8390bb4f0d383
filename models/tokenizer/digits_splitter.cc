#include "models/tokenizer/digits_splitter.h"

#include "common/utf8.h"
#include "models/tokenizer/unicode_classes.h"

namespace geotrain::models {

void SplitDigits(std::string_view text, DigitSplitting mode,
                 std::vector<std::string_view>* pieces) {
  if (text.empty()) return;
  if (mode == DigitSplitting::kNone) {
    pieces->push_back(text);
    return;
  }
  size_t start = 0;  // start of the piece being built
  bool in_digits = false;
  size_t pos = 0;
  while (pos < text.size()) {
    const DecodedCodePoint decoded = DecodeUtf8(text, pos);
    const bool is_digit = ClassifyCodePoint(decoded.code_point) == CodePointClass::kNumber;
    // A piece ends before a digit (always with kIndividual, after non-digits with kContiguous)
    // and before a non-digit that follows digits.
    const bool boundary =
        is_digit ? (mode == DigitSplitting::kIndividual || !in_digits) : in_digits;
    if (boundary && pos > start) {
      pieces->push_back(text.substr(start, pos - start));
      start = pos;
    }
    in_digits = is_digit;
    pos += decoded.length;
  }
  pieces->push_back(text.substr(start));
}

}  // namespace geotrain::models
