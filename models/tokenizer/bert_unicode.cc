#include "models/tokenizer/bert_unicode.h"

#include <algorithm>
#include <iterator>

namespace geotrain::models {
namespace {

struct CodePointRange {
  char32_t first;
  char32_t last;  // inclusive
};

struct CodePointMapping {
  char32_t from;
  char32_t to;
};

struct CodePointExpansion {
  char32_t from;
  unsigned offset;  // into the table's pool
  unsigned length;
};

#include "models/tokenizer/bert_unicode_tables.inc"

template <size_t N>
bool InRanges(const CodePointRange (&ranges)[N], char32_t cp) {
  // First range whose last >= cp; cp is inside it when first <= cp.
  const CodePointRange* it =
      std::lower_bound(std::begin(ranges), std::end(ranges), cp,
                       [](const CodePointRange& r, char32_t value) { return r.last < value; });
  return it != std::end(ranges) && it->first <= cp;
}

template <typename Entry, size_t N>
const Entry* Find(const Entry (&entries)[N], char32_t cp) {
  const Entry* it = std::lower_bound(std::begin(entries), std::end(entries), cp,
                                     [](const Entry& e, char32_t value) { return e.from < value; });
  return it != std::end(entries) && it->from == cp ? it : nullptr;
}

// Appends the mapping of `cp` from a table pair, or cp itself when neither lists it.
template <size_t S, size_t M, size_t P>
void AppendMapped(const CodePointMapping (&single)[S], const CodePointExpansion (&multi)[M],
                  const char32_t (&pool)[P], char32_t cp, std::u32string* out) {
  if (const CodePointMapping* m = Find(single, cp)) {
    out->push_back(m->to);
  } else if (const CodePointExpansion* e = Find(multi, cp)) {
    out->append(pool + e->offset, e->length);
  } else {
    out->push_back(cp);
  }
}

// Hangul syllables decompose algorithmically (Unicode 16.0 section 3.12) into jamo, none of them
// marks; the generator checks that the library agrees.
constexpr char32_t kHangulFirst = 0xAC00, kHangulLast = 0xD7A3;

}  // namespace

bool IsBertDropped(char32_t cp) { return InRanges(kBertDroppedRanges, cp); }
bool IsBertWhitespace(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return InRanges(kBertWhitespaceRanges, cp);
}
bool IsBertChineseChar(char32_t cp) { return cp >= 0x3400 && InRanges(kBertChineseRanges, cp); }
bool IsBertPunctuation(char32_t cp) { return InRanges(kBertPunctuationRanges, cp); }

void AppendStrippedAccents(char32_t cp, std::u32string* out) {
  if (cp < 0xC0) {  // nothing below decomposes or is a nonspacing mark
    out->push_back(cp);
    return;
  }
  if (cp >= kHangulFirst && cp <= kHangulLast) {
    const char32_t s = cp - kHangulFirst;
    out->push_back(0x1100 + s / 588);
    out->push_back(0x1161 + (s % 588) / 28);
    if (s % 28 != 0) out->push_back(0x11A7 + s % 28);
    return;
  }
  if (InRanges(kBertStripDroppedRanges, cp)) return;
  AppendMapped(kBertStripSingle, kBertStripMulti, kBertStripPool, cp, out);
}

void AppendLowercase(char32_t cp, std::u32string* out) {
  if (cp < 0x80) {
    out->push_back(cp >= 'A' && cp <= 'Z' ? cp + ('a' - 'A') : cp);
    return;
  }
  AppendMapped(kBertLowerSingle, kBertLowerMulti, kBertLowerPool, cp, out);
}

}  // namespace geotrain::models
