#include "compression/sparse_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/half.h"

namespace geotrain::compression {
namespace {

constexpr uint8_t kValuesF32 = 0;
constexpr uint8_t kValuesF16 = 1;

// fp16 bits with an all-ones exponent: infinity or NaN.
inline bool HalfIsFinite(uint16_t h) { return (h & 0x7c00u) != 0x7c00u; }

std::string Field(const char* codec, const char* name) { return std::string(codec) + "." + name; }

std::string Element(const char* codec, const char* name, uint64_t i) {
  return Field(codec, name) + "[" + std::to_string(i) + "]";
}

}  // namespace

int64_t SparseCount(double density, int64_t n) {
  if (n <= 0) return 0;
  const int64_t k = static_cast<int64_t>(std::llround(density * static_cast<double>(n)));
  return std::min<int64_t>(n, std::max<int64_t>(1, k));
}

Status CheckSparseElements(const char* codec, int64_t n) {
  if (n <= kMaxSparseElements) return OkStatus();
  return InvalidArgument(Field(codec, "input") + ": " + std::to_string(n) +
                         " elements exceed the 2^32 that u32 indices can address");
}

void EncodeSparseValues(const float* x, int64_t n, const std::vector<uint32_t>& indices,
                        DType value_dtype, double norm_sq, ByteWriter* params, ByteWriter* payload,
                        ErrorSums* error) {
  const size_t k = indices.size();
  std::vector<float> kept(k);
  for (size_t t = 0; t < k; ++t) kept[t] = x[indices[t]];

  // Try f16 first when asked; fall back to f32 for this frame if any value overflows it.
  bool as_f16 = value_dtype == DType::kFloat16;
  std::vector<uint16_t> halves;
  if (as_f16) {
    halves.resize(k);
    FloatToHalf(kept.data(), halves.data(), k);
    as_f16 = std::all_of(halves.begin(), halves.end(), HalfIsFinite);
  }

  params->Put<uint8_t>(as_f16 ? kValuesF16 : kValuesF32);
  payload->Put<uint64_t>(k);
  payload->PutBytes(indices.data(), 4 * k);

  // Error: the dropped values decode to 0, the kept ones to their (possibly f16) rounding.
  double kept_sq = 0, kept_err = 0;
  if (as_f16) {
    payload->PutBytes(halves.data(), 2 * k);
    for (size_t t = 0; t < k; ++t) {
      const double v = kept[t];
      const double d = v - HalfToFloat(halves[t]);
      kept_sq += v * v;
      kept_err += d * d;
    }
  } else {
    payload->PutBytes(kept.data(), 4 * k);
    for (size_t t = 0; t < k; ++t) kept_sq += static_cast<double>(kept[t]) * kept[t];
  }
  // Σ over the dropped values as total minus kept: exact to ~1e-16 of ||x||², which is far
  // below any error worth reporting; with nothing dropped it is exactly zero.
  const double dropped_sq = static_cast<int64_t>(k) == n ? 0.0 : std::max(0.0, norm_sq - kept_sq);
  error->norm_sq += norm_sq;
  error->error_sq += dropped_sq + kept_err;
}

Status DecodeSparseValues(const char* codec, const FrameContent& frame, float* out) {
  ByteReader params(frame.params);
  uint8_t dtype = 0;
  GEOTRAIN_RETURN_IF_ERROR(params.Get(&dtype, Field(codec, "value_dtype").c_str()));
  if (dtype != kValuesF32 && dtype != kValuesF16) {
    return DataLoss(Field(codec, "value_dtype") + ": " + std::to_string(dtype) +
                    " is neither f32 (0) nor f16 (1)");
  }
  GEOTRAIN_RETURN_IF_ERROR(params.ExpectEnd(Field(codec, "params").c_str()));
  const size_t value_bytes = dtype == kValuesF16 ? 2 : 4;

  ByteReader payload(frame.payload);
  uint64_t count = 0;
  GEOTRAIN_RETURN_IF_ERROR(payload.Get(&count, Field(codec, "count").c_str()));
  const uint64_t elements = static_cast<uint64_t>(std::max<int64_t>(frame.elements, 0));
  if (count > elements) {
    return DataLoss(Field(codec, "count") + ": " + std::to_string(count) + " exceeds the " +
                    std::to_string(elements) + " elements of the tensor");
  }
  // Dividing first keeps a hostile count from overflowing the size computation.
  if (count > payload.remaining() / (4 + value_bytes) ||
      count * (4 + value_bytes) != payload.remaining()) {
    return DataLoss(Field(codec, "payload") + ": " + std::to_string(payload.remaining()) +
                    " bytes after the count do not hold exactly " + std::to_string(count) +
                    " indices and values");
  }
  Span<const uint8_t> index_bytes, value_bytes_span;
  GEOTRAIN_RETURN_IF_ERROR(
      payload.GetSpan(4 * count, &index_bytes, Field(codec, "indices").c_str()));
  GEOTRAIN_RETURN_IF_ERROR(
      payload.GetSpan(value_bytes * count, &value_bytes_span, Field(codec, "values").c_str()));
  GEOTRAIN_RETURN_IF_ERROR(payload.ExpectEnd(Field(codec, "payload").c_str()));

  std::fill(out, out + elements, 0.0f);
  const uint8_t* idx = index_bytes.data();
  const uint8_t* val = value_bytes_span.data();
  uint64_t previous = 0;
  for (uint64_t t = 0; t < count; ++t) {
    uint32_t index;
    std::memcpy(&index, idx + 4 * t, 4);
    if (index >= elements) {
      return DataLoss(Element(codec, "indices", t) + ": " + std::to_string(index) +
                      " is outside the " + std::to_string(elements) + " elements");
    }
    if (t > 0 && index <= previous) {
      return DataLoss(Element(codec, "indices", t) + ": " + std::to_string(index) +
                      " does not follow the previous index " + std::to_string(previous) +
                      " (must be strictly increasing)");
    }
    previous = index;
    float v;
    if (dtype == kValuesF16) {
      uint16_t h;
      std::memcpy(&h, val + 2 * t, 2);
      v = HalfToFloat(h);
    } else {
      std::memcpy(&v, val + 4 * t, 4);
    }
    if (!std::isfinite(v)) {
      return DataLoss(Element(codec, "values", t) + ": not a finite number");
    }
    out[index] = v;
  }
  return OkStatus();
}

}  // namespace geotrain::compression
