// CocktailMask: the random subset of coordinates CocktailSGD samples at one training step.
//
// Both modes are pure functions of (mode parameters, step, coordinate), so every rank and the
// receiver of a frame rebuild the same subset from a few bytes of params, never from a list:
//   kRolling: coordinate i is sampled iff i % stride == step % stride, stride = round(1 / p).
//             The offset rolls by one per step, so s consecutive steps cover every coordinate
//             exactly once (the original CocktailSGD mask; no seed traffic at all).
//   kSeeded:  coordinate i is sampled iff (HashCounter(seed, step, i) >> 32) < threshold, with
//             threshold = round(p * 2^32): Bernoulli(p) per coordinate, independent across
//             steps. An integer threshold (not a float p) keeps every platform bit-identical.
// "Sampled order" is increasing coordinate order; the codec's bitmap and values follow it.
//
// Coordinates are 32-bit: the codec refuses tensors of 2^32 or more values (chunks are far
// smaller). A value type: copyable, immutable after construction, safe to share across threads.
#pragma once

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "common/hash_random.h"
#include "common/status.h"
#include "compression/codec_config.h"

namespace geotrain::compression {

class CocktailMask {
 public:
  // Largest seeded threshold: p = 1 samples every coordinate.
  static constexpr uint64_t kMaxThreshold = uint64_t{1} << 32;
  // Coordinates are indexed with 32 bits.
  static constexpr uint64_t kMaxElements = (uint64_t{1} << 32) - 1;

  // The mask a sender uses at `step` (config.mask_mode, random_ratio and seed).
  static StatusOr<CocktailMask> ForStep(const CodecConfig& config, uint64_t step);
  static CocktailMask Rolling(uint64_t stride, uint64_t step);  // stride >= 1
  static CocktailMask Seeded(uint64_t seed, uint64_t threshold, uint64_t step);

  // Params bytes: u8 mode, u64 step, then rolling: u64 stride; seeded: u64 seed, u64 threshold.
  void Write(ByteWriter* params) const;
  // Reads what Write wrote from untrusted bytes: unknown modes, stride 0 and thresholds above
  // 2^32 are DataLoss errors naming the field ("cocktail.stride: ...").
  static StatusOr<CocktailMask> Read(ByteReader* params);

  MaskMode mode() const { return mode_; }
  uint64_t step() const { return step_; }
  uint64_t stride() const { return stride_; }          // rolling only
  uint64_t offset() const { return step_ % stride_; }  // rolling only: first sampled coordinate
  uint64_t seed() const { return seed_; }              // seeded only
  uint64_t threshold() const { return threshold_; }    // seeded only

  bool Contains(uint64_t i) const {
    if (mode_ == MaskMode::kRolling) return i % stride_ == offset();
    return (HashCounter(seed_, step_, i) >> 32) < threshold_;
  }

  // Writes the sampled coordinates of [begin, end) to `out` in increasing order and returns how
  // many there are. `out` must have room for end - begin entries (the seeded path writes every
  // candidate and advances only past the sampled ones, which keeps it branch-free).
  // Requires end <= kMaxElements.
  size_t SampleRange(uint64_t begin, uint64_t end, uint32_t* out) const;

  // Number of sampled coordinates in [0, n): closed form for rolling, a hash pass for seeded.
  uint64_t SampledCount(uint64_t n) const;
  // All sampled coordinates of [0, n) in sampled order (replaces `out`'s contents).
  void SampledIndices(uint64_t n, std::vector<uint32_t>* out) const;

  friend bool operator==(const CocktailMask& a, const CocktailMask& b) {
    return a.mode_ == b.mode_ && a.step_ == b.step_ && a.stride_ == b.stride_ &&
           a.seed_ == b.seed_ && a.threshold_ == b.threshold_;
  }

 private:
  CocktailMask(MaskMode mode, uint64_t step, uint64_t stride, uint64_t seed, uint64_t threshold)
      : mode_(mode), step_(step), stride_(stride), seed_(seed), threshold_(threshold) {}

  MaskMode mode_;
  uint64_t step_;
  uint64_t stride_;     // 1 in seeded mode, so offset() stays defined
  uint64_t seed_;       // 0 in rolling mode
  uint64_t threshold_;  // 0 in rolling mode
};

// The rolling stride for a sampling fraction p in (0, 1]: round(1 / p), at least 1 and capped at
// 2^62 (any stride beyond the tensor samples at most one coordinate per step).
uint64_t RollingStride(double p);
// The seeded threshold for p in (0, 1]: round(p * 2^32).
uint64_t SeededThreshold(double p);

}  // namespace geotrain::compression
