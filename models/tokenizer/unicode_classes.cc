#include "models/tokenizer/unicode_classes.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace geotrain::models {
namespace {

struct CodePointRange {
  char32_t first;
  char32_t last;  // inclusive
};

#include "models/tokenizer/unicode_tables.inc"

template <size_t N>
bool InRanges(const CodePointRange (&ranges)[N], char32_t cp) {
  // First range whose last >= cp; cp is inside it when first <= cp.
  const CodePointRange* it =
      std::lower_bound(std::begin(ranges), std::end(ranges), cp,
                       [](const CodePointRange& r, char32_t value) { return r.last < value; });
  return it != std::end(ranges) && it->first <= cp;
}

CodePointClass ClassifySlow(char32_t cp) {
  if (InRanges(kLetterRanges, cp)) return CodePointClass::kLetter;
  if (InRanges(kNumberRanges, cp)) return CodePointClass::kNumber;
  if (InRanges(kWhitespaceRanges, cp)) return CodePointClass::kWhitespace;
  return CodePointClass::kOther;
}

// Most text is Latin: a table for the first 256 code points skips the binary searches.
std::array<CodePointClass, 256> MakeLatin1Table() {
  std::array<CodePointClass, 256> table{};
  for (char32_t cp = 0; cp < 256; ++cp) table[cp] = ClassifySlow(cp);
  return table;
}

}  // namespace

CodePointClass ClassifyCodePoint(char32_t cp) {
  static const std::array<CodePointClass, 256> kLatin1 = MakeLatin1Table();
  if (cp < 256) return kLatin1[cp];
  if (cp > 0x10FFFF) return CodePointClass::kOther;
  return ClassifySlow(cp);
}

}  // namespace geotrain::models
