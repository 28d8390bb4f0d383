// TensorView: a tensor's dtype, shape and bytes inside a mapped checkpoint, plus float32 reads.
//
// A view borrows the bytes of the file it came from (SafetensorsFile, SafetensorsCheckpoint) and is
// valid while that object lives. The bytes carry no alignment promise, so conversions copy.
// Plain value; thread-safe to read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "models/safetensors_dtype.h"

namespace geotrain::models {

struct TensorView {
  std::string name;
  SafetensorsDType dtype = SafetensorsDType::kF32;
  std::vector<int64_t> shape;
  Span<const uint8_t> bytes;  // little-endian elements, row-major

  int64_t NumElements() const;
};

// Converts an F32, F16 or BF16 view to float32 into `out`, which must hold exactly
// view.NumElements() values (e.g. the storage of a freshly allocated torch tensor). Other dtypes
// give INVALID_ARGUMENT naming the tensor and its dtype.
Status ConvertToFloat32(const TensorView& view, Span<float> out);
StatusOr<std::vector<float>> ConvertToFloat32(const TensorView& view);

}  // namespace geotrain::models
