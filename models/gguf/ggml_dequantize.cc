// DequantizeGgml (ggml_dequantize.h).
#include "models/gguf/ggml_dequantize.h"

#include <cstring>
#include <string>

#include "common/half.h"

namespace geotrain::models {
namespace {

constexpr size_t kBlock = 32;

float LoadHalf(const uint8_t* p) { return HalfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

void DequantizeQ8_0(const uint8_t* in, size_t blocks, float* out) {
  for (size_t b = 0; b < blocks; ++b, in += 34, out += kBlock) {
    const float d = LoadHalf(in);
    for (size_t i = 0; i < kBlock; ++i)
      out[i] = static_cast<float>(static_cast<int8_t>(in[2 + i])) * d;
  }
}

void DequantizeQ4_0(const uint8_t* in, size_t blocks, float* out) {
  for (size_t b = 0; b < blocks; ++b, in += 18, out += kBlock) {
    const float d = LoadHalf(in);
    const uint8_t* qs = in + 2;
    for (size_t i = 0; i < kBlock / 2; ++i) {
      out[i] = static_cast<float>((qs[i] & 0x0F) - 8) * d;
      out[i + kBlock / 2] = static_cast<float>((qs[i] >> 4) - 8) * d;
    }
  }
}

void DequantizeQ4_1(const uint8_t* in, size_t blocks, float* out) {
  for (size_t b = 0; b < blocks; ++b, in += 20, out += kBlock) {
    const float d = LoadHalf(in);
    const float m = LoadHalf(in + 2);
    const uint8_t* qs = in + 4;
    for (size_t i = 0; i < kBlock / 2; ++i) {
      out[i] = static_cast<float>(qs[i] & 0x0F) * d + m;
      out[i + kBlock / 2] = static_cast<float>(qs[i] >> 4) * d + m;
    }
  }
}

}  // namespace

Status DequantizeGgml(GgmlType type, Span<const uint8_t> bytes, Span<float> out) {
  const GgmlTypeTraits traits = GetGgmlTypeTraits(type);
  if (!CanDequantize(type)) {
    return InvalidArgument(std::string("ggml type ") + traits.name +
                           " cannot be dequantized (supported: F32, F16, Q8_0, Q4_0, Q4_1)");
  }
  if (out.size() % traits.block_elements != 0) {
    return InvalidArgument(std::string(traits.name) + ": " + std::to_string(out.size()) +
                           " values are not a whole number of " +
                           std::to_string(traits.block_elements) + "-value blocks");
  }
  const size_t blocks = out.size() / traits.block_elements;
  if (bytes.size() != blocks * traits.block_bytes) {
    return InvalidArgument(std::string(traits.name) + ": " + std::to_string(bytes.size()) +
                           " bytes for " + std::to_string(out.size()) + " values, expected " +
                           std::to_string(blocks * traits.block_bytes));
  }
  switch (type) {
    case GgmlType::kF32:
      if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
      break;
    case GgmlType::kF16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = LoadHalf(bytes.data() + 2 * i);
      break;
    case GgmlType::kQ8_0:
      DequantizeQ8_0(bytes.data(), blocks, out.data());
      break;
    case GgmlType::kQ4_0:
      DequantizeQ4_0(bytes.data(), blocks, out.data());
      break;
    case GgmlType::kQ4_1:
      DequantizeQ4_1(bytes.data(), blocks, out.data());
      break;
    default:
      return Internal("DequantizeGgml: unhandled type");
  }
  return OkStatus();
}

}  // namespace geotrain::models
