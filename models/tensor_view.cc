#include "models/tensor_view.h"

#include <algorithm>
#include <cstring>

#include "common/half.h"

namespace geotrain::models {
namespace {

// Converts 16-bit elements in chunks through an aligned buffer: the mapped bytes may sit at any
// address, and the bulk converters take uint16_t pointers.
template <typename Convert>
void ConvertHalfWords(const uint8_t* in, float* out, size_t n, Convert convert) {
  constexpr size_t kChunk = 4096;
  uint16_t words[kChunk];
  for (size_t done = 0; done < n; done += kChunk) {
    const size_t count = std::min(kChunk, n - done);
    std::memcpy(words, in + 2 * done, 2 * count);
    convert(words, out + done, count);
  }
}

}  // namespace

int64_t TensorView::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Status ConvertToFloat32(const TensorView& view, Span<float> out) {
  const size_t n = static_cast<size_t>(view.NumElements());
  if (out.size() != n) {
    return InvalidArgument("tensor \"" + view.name + "\": output holds " +
                           std::to_string(out.size()) + " floats, the tensor has " +
                           std::to_string(n));
  }
  if (!IsFloatDType(view.dtype) || view.bytes.size() != n * DTypeSize(view.dtype)) {
    return InvalidArgument("tensor \"" + view.name + "\": dtype " + DTypeName(view.dtype) +
                           " cannot be read as float32 (supported: F32, F16, BF16)");
  }
  switch (view.dtype) {
    case SafetensorsDType::kF32:
      if (n) std::memcpy(out.data(), view.bytes.data(), 4 * n);
      break;
    case SafetensorsDType::kF16:
      ConvertHalfWords(view.bytes.data(), out.data(), n,
                       [](const uint16_t* in, float* o, size_t c) { HalfToFloat(in, o, c); });
      break;
    case SafetensorsDType::kBF16:
      ConvertHalfWords(view.bytes.data(), out.data(), n,
                       [](const uint16_t* in, float* o, size_t c) { BFloat16ToFloat(in, o, c); });
      break;
    default:
      break;  // excluded above
  }
  return OkStatus();
}

StatusOr<std::vector<float>> ConvertToFloat32(const TensorView& view) {
  std::vector<float> values(static_cast<size_t>(view.NumElements()));
  GEOTRAIN_RETURN_IF_ERROR(ConvertToFloat32(view, Span<float>(values)));
  return values;
}

}  // namespace geotrain::models
