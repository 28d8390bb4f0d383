// The per-index arithmetic of the CUDA cocktail codec (cocktail_device.cu): mask membership,
// sampled positions and coordinates, the radix-select steps of the top-k threshold, the keep rule
// with its ties, and the MSB-first bitmap words. Written once as GEOTRAIN_HOST_DEVICE functions so
// that tests/compression/cuda_cocktail_math_test.cc can run them on the CPU against CocktailCodec,
// CocktailMask and FindMagnitudeThreshold (and so it compiles with a plain C++ compiler: no CUDA
// headers here).
//
// Words. The kernels handle 32 indices per warp: lane t of word w is index 32w + t, and a warp's
// __ballot_sync puts lane t in bit t ("lane bits", LSB first). The wire bitmap is MSB-first
// (bitpack.h): a "bitmap word" is 4 bitmap bytes read big-endian, position 32w + t in bit 31 - t,
// so a bitmap word is the bit reversal of the lane bits of the same 32 positions.
#pragma once

#include <cstdint>

#include "common/half.h"
#include "common/hash_random.h"
#include "common/host_device.h"
#include "compression/cocktail_mask.h"

namespace geotrain::compression::cuda {

// ---------------------------------------------------------------------------------------------
// Mask (cocktail_mask.h) as a kernel argument.

struct CocktailMaskParams {
  bool rolling = true;
  uint64_t step = 0;
  uint64_t stride = 1;     // rolling
  uint64_t offset = 0;     // rolling: step % stride, the first sampled coordinate
  uint64_t seed = 0;       // seeded
  uint64_t threshold = 0;  // seeded: sampled iff (hash >> 32) < threshold
};

// Host only.
inline CocktailMaskParams MaskParamsOf(const CocktailMask& mask) {
  CocktailMaskParams p;
  p.rolling = mask.mode() == MaskMode::kRolling;
  p.step = mask.step();
  p.stride = mask.stride();
  p.offset = mask.offset();
  p.seed = mask.seed();
  p.threshold = mask.threshold();
  return p;
}

GEOTRAIN_HOST_DEVICE inline bool SeededContains(const CocktailMaskParams& p, uint64_t i) {
  return (HashCounter(p.seed, p.step, i) >> 32) < p.threshold;
}

GEOTRAIN_HOST_DEVICE inline bool MaskContains(const CocktailMaskParams& p, uint64_t i) {
  return p.rolling ? i % p.stride == p.offset : SeededContains(p, i);
}

// Rolling: how many of [0, n) are sampled (CocktailMask::SampledCount's closed form), the
// coordinate of sampled position j, and the position of sampled coordinate i. No sum overflows:
// coordinates stay below n even for a hostile stride near 2^64.
GEOTRAIN_HOST_DEVICE inline uint64_t RollingCount(const CocktailMaskParams& p, uint64_t n) {
  return p.offset < n ? (n - 1 - p.offset) / p.stride + 1 : 0;
}
GEOTRAIN_HOST_DEVICE inline uint64_t RollingCoordinate(const CocktailMaskParams& p, uint64_t j) {
  return p.offset + j * p.stride;
}
GEOTRAIN_HOST_DEVICE inline uint64_t RollingPosition(const CocktailMaskParams& p, uint64_t i) {
  return i / p.stride;  // i = offset + j * stride with offset < stride
}

// The coordinate of sampled position j: computed for rolling masks, listed (sampled_index, in
// sampled order) for seeded ones.
GEOTRAIN_HOST_DEVICE inline uint32_t SampledCoordinate(const CocktailMaskParams& p, uint64_t j,
                                                       const uint32_t* sampled_index) {
  return p.rolling ? static_cast<uint32_t>(RollingCoordinate(p, j)) : sampled_index[j];
}

// ---------------------------------------------------------------------------------------------
// Words of 32 indices.

constexpr int kWordBits = 32;

GEOTRAIN_HOST_DEVICE inline uint64_t WordCount(uint64_t indices) {
  return (indices + kWordBits - 1) / kWordBits;
}

GEOTRAIN_HOST_DEVICE inline int Popcount32(uint32_t x) {
#ifdef __CUDA_ARCH__
  return __popc(x);
#else
  return __builtin_popcount(x);
#endif
}

GEOTRAIN_HOST_DEVICE inline uint32_t Reverse32(uint32_t x) {
#ifdef __CUDA_ARCH__
  return __brev(x);
#else
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
  return (x >> 16) | (x << 16);
#endif
}

// Set lane bits below `lane` (0..31): the rank of lane `lane` among the set lanes of a word.
GEOTRAIN_HOST_DEVICE inline int RankInLaneBits(uint32_t lane_bits, int lane) {
  return Popcount32(lane_bits & ((1u << lane) - 1u));
}

// Seeded sampling: the sampled position of coordinate i = 32w + lane is the number sampled in
// the words before w (an exclusive scan of the words' popcounts) plus its rank in its word.
GEOTRAIN_HOST_DEVICE inline uint64_t SampledPosition(uint64_t sampled_before_word,
                                                     uint32_t member_lane_bits, int lane) {
  return sampled_before_word + static_cast<uint64_t>(RankInLaneBits(member_lane_bits, lane));
}

// ---------------------------------------------------------------------------------------------
// Top-k threshold: the k-th largest magnitude key by most-significant-digit radix select, as
// FindMagnitudeThreshold (magnitude_threshold.h). Any exact selection finds the same key T and
// the same ties = k - #(keys > T); these digits are FindMagnitudeThreshold's.

// |v| as an integer key: for finite floats the unsigned order of the keys is the order of |v|.
GEOTRAIN_HOST_DEVICE inline uint32_t MagnitudeKey(float v) { return FloatBits(v) & 0x7fffffffu; }

struct RadixDigit {
  int shift;
  int width;
};
constexpr int kSelectPasses = 3;
constexpr int kMaxDigitBins = 1 << 11;

GEOTRAIN_HOST_DEVICE inline RadixDigit SelectDigit(int pass) {
  return pass == 0 ? RadixDigit{20, 11} : pass == 1 ? RadixDigit{9, 11} : RadixDigit{0, 9};
}
GEOTRAIN_HOST_DEVICE inline uint32_t DigitOf(uint32_t key, RadixDigit d) {
  return (key >> d.shift) & ((1u << d.width) - 1u);
}

// What the select knows between passes (kept in device memory, so no pass waits on the host):
// the digits of T found so far (`prefix` under `prefix_mask`), the rank `need` (1-based) of T
// among the keys sharing that prefix, and how many keys share the full key (after the last pass).
// After the last pass prefix = T, need = ties, equal = #(keys == T).
struct SelectState {
  uint32_t prefix;
  uint32_t prefix_mask;
  uint32_t need;
  uint32_t equal;
};

GEOTRAIN_HOST_DEVICE inline SelectState InitialSelectState(uint32_t k) {
  return SelectState{0, 0, k, 0};
}
GEOTRAIN_HOST_DEVICE inline bool SharesPrefix(uint32_t key, const SelectState& s) {
  return (key & s.prefix_mask) == s.prefix;
}

// Walks `count` histogram bins down from digit `hi`, the bins that hold the `*need`-th largest
// key among them; returns its digit and leaves in *need its rank among the keys of that digit.
// The last bin is taken without looking (FindDigit's rule for digit 0): the caller has checked
// that these bins hold at least *need keys.
GEOTRAIN_HOST_DEVICE inline uint32_t WalkDigits(const uint32_t* histogram, uint32_t hi, int count,
                                                uint32_t* need) {
  for (int c = 0; c + 1 < count; ++c, --hi) {
    if (histogram[hi] >= *need) return hi;
    *need -= histogram[hi];
  }
  return hi;
}

// Records the digit found by a pass.
GEOTRAIN_HOST_DEVICE inline void ApplyDigit(RadixDigit d, uint32_t digit, uint32_t need,
                                            uint32_t equal, SelectState* s) {
  s->prefix |= digit << d.shift;
  s->prefix_mask |= ((1u << d.width) - 1u) << d.shift;
  s->need = need;
  s->equal = equal;
}

// The digit pass of one block of `threads` threads: thread t owns `bins / threads` bins, the
// highest first (thread 0 owns the largest digits). The highest digit of thread t's bins:
GEOTRAIN_HOST_DEVICE inline uint32_t ChunkTop(int bins, int per_thread, int t) {
  return static_cast<uint32_t>(bins - 1 - t * per_thread);
}

// ---------------------------------------------------------------------------------------------
// The keep rule: keys > T are kept, and the first `ties` keys == T in sampled order.

// Per word, the counts of keys > T (high half) and == T (low half), summed by one exclusive scan
// (neither count reaches 2^32, so the halves never carry into each other).
GEOTRAIN_HOST_DEVICE inline uint64_t PackCounts(uint32_t greater, uint32_t equal) {
  return (static_cast<uint64_t>(greater) << 32) | equal;
}
GEOTRAIN_HOST_DEVICE inline uint32_t GreaterOf(uint64_t packed) {
  return static_cast<uint32_t>(packed >> 32);
}
GEOTRAIN_HOST_DEVICE inline uint32_t EqualOf(uint64_t packed) {
  return static_cast<uint32_t>(packed);
}

// The kept lanes of a word from its lanes above T, its lanes equal to T and how many keys equal
// to T come before the word: the ties left go to its lowest equal lanes.
GEOTRAIN_HOST_DEVICE inline uint32_t KeepLaneBits(uint32_t greater_bits, uint32_t equal_bits,
                                                  uint32_t equal_before, uint32_t ties) {
  uint32_t take = ties > equal_before ? ties - equal_before : 0;
  if (take >= static_cast<uint32_t>(Popcount32(equal_bits))) return greater_bits | equal_bits;
  uint32_t kept = greater_bits;
  for (; take > 0; --take) {
    kept |= equal_bits & (0u - equal_bits);  // lowest equal lane
    equal_bits &= equal_bits - 1u;
  }
  return kept;
}

// Kept values before a word (its first kept value's index in sampled order), from the exclusive
// scan of PackCounts.
GEOTRAIN_HOST_DEVICE inline uint64_t KeptBefore(uint64_t packed_before, uint32_t ties) {
  const uint32_t equal = EqualOf(packed_before);
  return static_cast<uint64_t>(GreaterOf(packed_before)) + (equal < ties ? equal : ties);
}

// ---------------------------------------------------------------------------------------------
// Bitmap words (MSB-first bytes, one bit per sampled position).

GEOTRAIN_HOST_DEVICE inline uint32_t BitmapWordOfLanes(uint32_t lane_bits) {
  return Reverse32(lane_bits);
}
// Byte q (0..3) of a bitmap word: bitmap byte 4w + q.
GEOTRAIN_HOST_DEVICE inline uint8_t BitmapWordByte(uint32_t word, int q) {
  return static_cast<uint8_t>(word >> (24 - 8 * q));
}
// Bitmap word w of a `bytes`-byte bitmap (missing bytes past the end read as 0).
GEOTRAIN_HOST_DEVICE inline uint32_t LoadBitmapWord(const uint8_t* bitmap, uint64_t bytes,
                                                    uint64_t w) {
  uint32_t word = 0;
  for (int q = 0; q < 4; ++q) {
    const uint64_t at = 4 * w + q;
    word = (word << 8) | (at < bytes ? bitmap[at] : 0u);
  }
  return word;
}
GEOTRAIN_HOST_DEVICE inline bool BitmapWordHas(uint32_t word, int lane) {
  return ((word >> (31 - lane)) & 1u) != 0;
}
// Set positions before `lane` in a bitmap word: with the set bits of the words before (an
// exclusive scan of their popcounts), the index of that position's value among the kept ones.
GEOTRAIN_HOST_DEVICE inline int BitmapRank(uint32_t word, int lane) {
  return lane == 0 ? 0 : Popcount32(word >> (32 - lane));
}

}  // namespace geotrain::compression::cuda
