// Widening of float16 / bfloat16 device values to float32 on the device, with the CPU's
// conversions (common/half.h), so a 16-bit tensor encodes to the same frame on both.
#pragma once

#include <cstdint>

#include "compression/cuda/device_memory.h"
#include "compression/types.h"

namespace geotrain::compression::cuda {

// out[i] = float(in[i]) for `n` values of `dtype` (float32 is copied). Asynchronous on `stream`.
Status WidenToFloat(const void* in, DType dtype, int64_t n, float* out, Stream stream);

}  // namespace geotrain::compression::cuda
