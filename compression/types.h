// Basic vocabulary of the codec core: element types, codec ids, shapes and error sums.
// Free of LibTorch on purpose (see compression/README.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/span.h"
#include "common/status.h"

namespace geotrain::compression {

// Element type of a tensor as the caller holds it; codecs compute in float32.
enum class DType : uint8_t { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };
constexpr int kNumDTypes = 3;

size_t DTypeSize(DType dtype);
const char* DTypeName(DType dtype);  // "f32", "f16", "bf16"
StatusOr<DType> ParseDType(
    const std::string& name);  // accepts f32/float32/fp32, f16/fp16/half, bf16

// Wire ids of the codecs. Stable: they are written into every frame. Never renumber.
enum class CodecId : uint8_t {
  kNone = 0,          // raw values, optionally cast to fp16/bf16
  kFixpoint = 1,      // AC-SGD fixpoint quantizer
  kDelta = 2,         // AC-SGD delta against a per-sample activation cache
  kDeltaLowBits = 3,  // delta whose cache is itself stored in low bits
  kTah = 4,           // TAH-Quant tile-wise adaptive Hadamard quantization
  kTopK = 5,          // MCBench top-k with indices
  kRandK = 6,         // MCBench random-k with indices
  kPowerSgd = 7,      // PowerSGD low rank (Optimus-CC)
  kCocktail = 8,      // CocktailSGD random + top-k + quantization
};
constexpr int kNumCodecs = 9;

const char* CodecName(CodecId id);  // "none", "fixpoint", "delta", "delta-lowbits", "tah", ...
// Accepts the names above and the seed projects' spellings ("tha", "delta_lowbits",
// "cocktail_sgd").
StatusOr<CodecId> ParseCodecName(const std::string& name);

using Shape = std::vector<int64_t>;
int64_t NumElements(const Shape& shape);
std::string ShapeString(const Shape& shape);  // "[4, 1024, 1600]"

// Sums from which the relative error ||x - x̂|| / ||x|| of an encode is reported.
struct ErrorSums {
  double error_sq = 0;  // Σ (x - x̂)²
  double norm_sq = 0;   // Σ x²
  double RelativeError() const;
};

// What a codec is asked to encode: float32 values, row-major.
struct EncodeInput {
  const float* data = nullptr;
  Shape shape;
  int64_t elements = 0;
  // One id per shape[0] entry (the samples of a micro-batch); required by delta codecs.
  Span<const uint64_t> sample_ids;
  // Training step: drives rolling masks (cocktail) and seeded randomness (randk, stochastic
  // rounding).
  uint64_t step = 0;
};

// What a codec decodes from: a frame whose header, lengths and checksum have been validated.
// Params and payload are untrusted bytes still: codecs validate every field they read.
struct FrameContent {
  CodecId codec = CodecId::kNone;
  DType dtype = DType::kFloat32;
  Shape shape;
  int64_t elements = 0;
  Span<const uint8_t> params;
  Span<const uint8_t> payload;
};

}  // namespace geotrain::compression
