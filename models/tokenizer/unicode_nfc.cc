#include "models/tokenizer/unicode_nfc.h"

#include <algorithm>
#include <iterator>

namespace geotrain::models {
namespace {

struct CombiningClassRange {
  char32_t first;
  char32_t last;  // inclusive
  int combining_class;
};

struct Decomposition {
  char32_t code_point;
  unsigned offset;  // into kDecompositionData
  unsigned length;
};

struct Composition {
  char32_t first;
  char32_t second;
  char32_t composite;
};

#include "models/tokenizer/unigram_nfc_tables.inc"

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

int CombiningClass(char32_t cp) {
  const auto* end = std::end(kCombiningClasses);
  const auto* it =
      std::lower_bound(std::begin(kCombiningClasses), end, cp,
                       [](const CombiningClassRange& r, char32_t c) { return r.last < c; });
  return it != end && it->first <= cp ? it->combining_class : 0;
}

void Decompose(char32_t cp, std::u32string* out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out->push_back(kTBase + s % kTCount);
    return;
  }
  const auto* end = std::end(kDecompositions);
  const auto* it =
      std::lower_bound(std::begin(kDecompositions), end, cp,
                       [](const Decomposition& d, char32_t c) { return d.code_point < c; });
  if (it != end && it->code_point == cp) {
    out->append(kDecompositionData + it->offset, it->length);
  } else {
    out->push_back(cp);
  }
}

// The primary composite of a starter and the next character, or 0.
char32_t Compose(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase &&
      second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 &&
      second > kTBase && second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  const auto* end = std::end(kCompositions);
  const auto* it = std::lower_bound(std::begin(kCompositions), end, std::make_pair(first, second),
                                    [](const Composition& c, std::pair<char32_t, char32_t> key) {
                                      return std::make_pair(c.first, c.second) < key;
                                    });
  return it != end && it->first == first && it->second == second ? it->composite : 0;
}

}  // namespace

std::u32string NormalizeNfc(const std::u32string& text) {
  std::u32string decomposed;
  decomposed.reserve(text.size());
  for (char32_t cp : text) Decompose(cp, &decomposed);
  // Canonical ordering: each run of non-starters sorted (stably) by combining class.
  for (size_t i = 0; i < decomposed.size();) {
    if (CombiningClass(decomposed[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < decomposed.size() && CombiningClass(decomposed[j]) != 0) ++j;
    std::stable_sort(decomposed.begin() + i, decomposed.begin() + j,
                     [](char32_t a, char32_t b) { return CombiningClass(a) < CombiningClass(b); });
    i = j;
  }
  // Canonical composition: a character joins the last starter unless blocked.
  std::u32string out;
  out.reserve(decomposed.size());
  size_t starter = std::u32string::npos;
  int last_class = 0;
  for (char32_t cp : decomposed) {
    const int cls = CombiningClass(cp);
    if (starter != std::u32string::npos &&
        (last_class < cls || (last_class == 0 && out.size() - 1 == starter))) {
      if (const char32_t composite = Compose(out[starter], cp)) {
        out[starter] = composite;
        continue;
      }
    }
    if (cls == 0) starter = out.size();
    last_class = cls;
    out.push_back(cp);
  }
  return out;
}

}  // namespace geotrain::models
