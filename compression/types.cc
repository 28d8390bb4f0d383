#include "compression/types.h"

#include <cmath>

namespace geotrain::compression {

size_t DTypeSize(DType dtype) { return dtype == DType::kFloat32 ? 4 : 2; }

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "f32";
    case DType::kFloat16:
      return "f16";
    case DType::kBFloat16:
      return "bf16";
  }
  return "?";
}

StatusOr<DType> ParseDType(const std::string& name) {
  if (name == "f32" || name == "float32" || name == "fp32") return DType::kFloat32;
  if (name == "f16" || name == "float16" || name == "fp16" || name == "half")
    return DType::kFloat16;
  if (name == "bf16" || name == "bfloat16") return DType::kBFloat16;
  return InvalidArgument("dtype: unknown '" + name + "' (expected f32, f16 or bf16)");
}

const char* CodecName(CodecId id) {
  switch (id) {
    case CodecId::kNone:
      return "none";
    case CodecId::kFixpoint:
      return "fixpoint";
    case CodecId::kDelta:
      return "delta";
    case CodecId::kDeltaLowBits:
      return "delta-lowbits";
    case CodecId::kTah:
      return "tah";
    case CodecId::kTopK:
      return "topk";
    case CodecId::kRandK:
      return "randk";
    case CodecId::kPowerSgd:
      return "powersgd";
    case CodecId::kCocktail:
      return "cocktail";
  }
  return "?";
}

StatusOr<CodecId> ParseCodecName(const std::string& name) {
  for (int i = 0; i < kNumCodecs; ++i) {
    const auto id = static_cast<CodecId>(i);
    if (name == CodecName(id)) return id;
  }
  if (name == "tha" || name == "tah-quant") return CodecId::kTah;
  if (name == "delta_lowbits") return CodecId::kDeltaLowBits;
  if (name == "cocktail_sgd" || name == "cocktailsgd") return CodecId::kCocktail;
  if (name == "power_sgd" || name == "low-rank") return CodecId::kPowerSgd;
  return InvalidArgument("codec: unknown method '" + name +
                         "' (expected none, fixpoint, delta, delta-lowbits, tah, topk, randk, "
                         "powersgd or cocktail)");
}

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

double ErrorSums::RelativeError() const {
  if (norm_sq <= 0) return error_sq > 0 ? INFINITY : 0.0;
  return std::sqrt(error_sq / norm_sq);
}

}  // namespace geotrain::compression
