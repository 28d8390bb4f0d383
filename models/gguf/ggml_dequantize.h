// DequantizeGgml: ggml tensor bytes (F32, F16, Q8_0, Q4_0, Q4_1) to float32.
//
// Block layouts, as ggml-common.h defines them (all little-endian, blocks of 32 values):
//   Q8_0: fp16 d, int8 q[32];                  x[i] = q[i] * d
//   Q4_0: fp16 d, uint8 qs[16];                x[i] = ((qs[i] & 15) - 8) * d,
//                                              x[i + 16] = ((qs[i] >> 4) - 8) * d   (i < 16)
//   Q4_1: fp16 d, fp16 m, uint8 qs[16];        x[i] = (qs[i] & 15) * d + m,
//                                              x[i + 16] = (qs[i] >> 4) * d + m
// The products are computed in float32 as ggml's reference dequantize_row_* does, so results
// match it (and gguf-py's numpy version) bit for bit. Thread-safe (no shared state).
#pragma once

#include <cstdint>

#include "common/span.h"
#include "common/status.h"
#include "models/gguf/ggml_type.h"

namespace geotrain::models {

// Decodes `out.size()` values from `bytes`, which must hold exactly that many values of `type`
// (for block types: out.size() a multiple of the block size). INVALID_ARGUMENT for a type that
// cannot be dequantized or a size mismatch.
Status DequantizeGgml(GgmlType type, Span<const uint8_t> bytes, Span<float> out);

}  // namespace geotrain::models
