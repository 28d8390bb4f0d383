#include "compression/cocktail_mask.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace geotrain::compression {
namespace {

constexpr uint64_t kMaxStride = uint64_t{1} << 62;

}  // namespace

uint64_t RollingStride(double p) {
  const double s = std::round(1.0 / p);
  if (!(s >= 1)) return 1;  // p > 2 cannot happen after Validate; be safe anyway
  if (s >= static_cast<double>(kMaxStride)) return kMaxStride;
  return static_cast<uint64_t>(s);
}

uint64_t SeededThreshold(double p) {
  const double t = std::round(p * static_cast<double>(CocktailMask::kMaxThreshold));
  if (!(t > 0)) return 0;
  if (t >= static_cast<double>(CocktailMask::kMaxThreshold)) return CocktailMask::kMaxThreshold;
  return static_cast<uint64_t>(t);
}

CocktailMask CocktailMask::Rolling(uint64_t stride, uint64_t step) {
  return CocktailMask(MaskMode::kRolling, step, stride, 0, 0);
}

CocktailMask CocktailMask::Seeded(uint64_t seed, uint64_t threshold, uint64_t step) {
  return CocktailMask(MaskMode::kSeeded, step, 1, seed, threshold);
}

StatusOr<CocktailMask> CocktailMask::ForStep(const CodecConfig& config, uint64_t step) {
  switch (config.mask_mode) {
    case MaskMode::kRolling:
      return Rolling(RollingStride(config.random_ratio), step);
    case MaskMode::kSeeded:
      return Seeded(config.seed, SeededThreshold(config.random_ratio), step);
  }
  return InvalidArgument("mask_mode: unknown value " +
                         std::to_string(static_cast<int>(config.mask_mode)));
}

void CocktailMask::Write(ByteWriter* params) const {
  params->Put<uint8_t>(static_cast<uint8_t>(mode_));
  params->Put<uint64_t>(step_);
  if (mode_ == MaskMode::kRolling) {
    params->Put<uint64_t>(stride_);
  } else {
    params->Put<uint64_t>(seed_);
    params->Put<uint64_t>(threshold_);
  }
}

StatusOr<CocktailMask> CocktailMask::Read(ByteReader* params) {
  uint8_t mode = 0;
  uint64_t step = 0;
  GEOTRAIN_RETURN_IF_ERROR(params->Get(&mode, "cocktail.mask_mode"));
  GEOTRAIN_RETURN_IF_ERROR(params->Get(&step, "cocktail.step"));
  if (mode == static_cast<uint8_t>(MaskMode::kRolling)) {
    uint64_t stride = 0;
    GEOTRAIN_RETURN_IF_ERROR(params->Get(&stride, "cocktail.stride"));
    if (stride == 0) return DataLoss("cocktail.stride: 0 (must be at least 1)");
    return Rolling(stride, step);
  }
  if (mode == static_cast<uint8_t>(MaskMode::kSeeded)) {
    uint64_t seed = 0, threshold = 0;
    GEOTRAIN_RETURN_IF_ERROR(params->Get(&seed, "cocktail.seed"));
    GEOTRAIN_RETURN_IF_ERROR(params->Get(&threshold, "cocktail.threshold"));
    if (threshold > kMaxThreshold) {
      return DataLoss("cocktail.threshold: " + std::to_string(threshold) + " exceeds 2^32");
    }
    return Seeded(seed, threshold, step);
  }
  return DataLoss("cocktail.mask_mode: unknown value " + std::to_string(mode));
}

size_t CocktailMask::SampleRange(uint64_t begin, uint64_t end, uint32_t* out) const {
  if (begin >= end) return 0;
  size_t count = 0;
  if (mode_ == MaskMode::kRolling) {
    // First coordinate >= begin congruent to the offset. Written so that no sum can overflow:
    // a stride read from a hostile frame may be close to 2^64.
    const uint64_t off = offset();
    const uint64_t r = begin % stride_;
    const uint64_t behind = r >= off ? r - off : r + (stride_ - off);
    const uint64_t gap = behind == 0 ? 0 : stride_ - behind;
    if (gap >= end - begin) return 0;
    uint64_t i = begin + gap;
    while (true) {
      out[count++] = static_cast<uint32_t>(i);
      if (end - i <= stride_) break;
      i += stride_;
    }
    return count;
  }
  // Two loops per block: the hashes vectorise when nothing else is in their loop, and the
  // compaction is branch-free (the flag decides whether the cursor advances).
  constexpr uint64_t kBlock = 256;
  uint8_t sampled[kBlock];
  for (uint64_t block = begin; block < end; block += kBlock) {
    const uint64_t len = std::min(kBlock, end - block);
    for (uint64_t j = 0; j < len; ++j) {
      sampled[j] = (HashCounter(seed_, step_, block + j) >> 32) < threshold_;
    }
    for (uint64_t j = 0; j < len; ++j) {
      out[count] = static_cast<uint32_t>(block + j);
      count += sampled[j];
    }
  }
  return count;
}

uint64_t CocktailMask::SampledCount(uint64_t n) const {
  if (mode_ == MaskMode::kRolling) {
    const uint64_t off = offset();
    return off < n ? (n - 1 - off) / stride_ + 1 : 0;
  }
  uint64_t count = 0;
  for (uint64_t i = 0; i < n; ++i) count += (HashCounter(seed_, step_, i) >> 32) < threshold_;
  return count;
}

void CocktailMask::SampledIndices(uint64_t n, std::vector<uint32_t>* out) const {
  if (mode_ == MaskMode::kRolling) {
    out->resize(SampledCount(n));
    SampleRange(0, n, out->data());
    return;
  }
  // Seeded: sample in blocks so the scratch room SampleRange needs stays small.
  constexpr uint64_t kBlock = 4096;
  out->clear();
  uint32_t block[kBlock];
  for (uint64_t begin = 0; begin < n; begin += kBlock) {
    const uint64_t end = begin + kBlock < n ? begin + kBlock : n;
    const size_t got = SampleRange(begin, end, block);
    out->insert(out->end(), block, block + got);
  }
}

}  // namespace geotrain::compression
