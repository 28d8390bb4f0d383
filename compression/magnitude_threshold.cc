#include "compression/magnitude_threshold.h"

#include <cstring>

namespace geotrain::compression {
namespace {

// |v| as an integer key: for finite floats, clearing the sign bit gives a pattern whose unsigned
// order is the order of the magnitudes.
inline uint32_t MagnitudeKey(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u & 0x7fffffffu;
}

// One radix digit: bits [shift, shift + width) of a key.
struct Digit {
  int shift;
  int width;
  uint32_t Of(uint32_t key) const { return (key >> shift) & ((1u << width) - 1); }
};

// Within a histogram, the digit holding the `need`-th largest key (1-based) and, through `need`,
// the rank of that key among the keys sharing the digit.
uint32_t FindDigit(const uint32_t* histogram, int bins, int64_t* need) {
  for (int d = bins - 1; d > 0; --d) {
    if (histogram[d] >= *need) return static_cast<uint32_t>(d);
    *need -= histogram[d];
  }
  return 0;
}

}  // namespace

MagnitudeThreshold FindMagnitudeThreshold(const float* values, int64_t n, int64_t k,
                                          std::vector<uint32_t>* scratch) {
  // Three digits of 11, 11 and 9 bits cover the 31-bit key. The first pass reads the values;
  // later passes work on the (usually few) candidates that share the digits found so far.
  constexpr Digit kDigits[3] = {{20, 11}, {9, 11}, {0, 9}};
  uint32_t histogram[1 << 11];
  int64_t need = k;

  // First digit over all n values: four interleaved histograms, because magnitudes crowd into a
  // few bins and consecutive increments of one counter would otherwise wait on each other.
  uint32_t lanes[4][1 << 11];
  std::memset(lanes, 0, sizeof(lanes));
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int l = 0; l < 4; ++l) ++lanes[l][kDigits[0].Of(MagnitudeKey(values[i + l]))];
  }
  for (; i < n; ++i) ++lanes[0][kDigits[0].Of(MagnitudeKey(values[i]))];
  for (int b = 0; b < (1 << 11); ++b) {
    histogram[b] = lanes[0][b] + lanes[1][b] + lanes[2][b] + lanes[3][b];
  }
  const uint32_t top = FindDigit(histogram, 1 << kDigits[0].width, &need);

  if (static_cast<int64_t>(scratch->size()) < n) scratch->resize(n);
  uint32_t* candidates = scratch->data();
  int64_t count = 0;
  for (i = 0; i < n; ++i) {
    const uint32_t key = MagnitudeKey(values[i]);
    candidates[count] = key;
    count += kDigits[0].Of(key) == top;
  }

  for (int level = 1; level < 3; ++level) {
    const Digit digit = kDigits[level];
    std::memset(histogram, 0, sizeof(uint32_t) << digit.width);
    for (int64_t c = 0; c < count; ++c) ++histogram[digit.Of(candidates[c])];
    const uint32_t found = FindDigit(histogram, 1 << digit.width, &need);
    int64_t kept = 0;
    for (int64_t c = 0; c < count; ++c) {
      candidates[kept] = candidates[c];
      kept += digit.Of(candidates[c]) == found;
    }
    count = kept;
  }
  // Every remaining candidate has the same key: the threshold. `need` of them are kept.
  MagnitudeThreshold result;
  const uint32_t key = candidates[0];
  std::memcpy(&result.magnitude, &key, 4);
  result.ties = need;
  result.equal = count;
  return result;
}

}  // namespace geotrain::compression
