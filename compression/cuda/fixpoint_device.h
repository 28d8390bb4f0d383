// The fixpoint quantizer (fixpoint_block.h) on a CUDA device: the same block bytes from values in
// device memory, and their decoding into device memory. The delta and cocktail CUDA codecs build
// on it. Not thread-safe per workspace.
#pragma once

#include <cstdint>

#include "common/bytes.h"
#include "common/span.h"
#include "compression/cuda/device_memory.h"
#include "compression/fixpoint_block.h"

namespace geotrain::compression::cuda {

// Scratch one encoder or decoder keeps between calls (grown on demand, never shrunk).
struct FixpointWorkspace {
  DeviceArray<float> amax;      // per scale: max |x|
  DeviceArray<float> mul;       // per scale: 2^f / scale
  DeviceArray<float> step;      // per scale: scale / 2^f
  DeviceArray<uint32_t> flags;  // [0] largest max |x| (float bits), [1] 1 if a value is not finite
  DeviceArray<double> sums;     // Σ(x - x̂)², Σx²
  PinnedBytes readback;         // flags and sums, copied back
};

// Encodes the fixpoint block of `x` ([layout.rows, layout.cols] float32 in device memory) into
// `block` (device memory, grown as needed): the bytes EncodeFixpointBlock writes for the same
// input and options (options.threads is ignored). Returns the block's size. `xhat` (device,
// nullable) receives the values the receiver will decode. Adds to `error` when non-null.
// Synchronises `stream` to learn whether every scale fits fp16 (and once more for `error`).
// INVALID_ARGUMENT when `x` holds NaN or infinity.
StatusOr<uint64_t> EncodeFixpointBlockOnDevice(const float* x, const QuantLayout& layout,
                                               const QuantizeOptions& options,
                                               FixpointWorkspace* ws, DeviceBytes* block,
                                               float* xhat, ErrorSums* error, Stream stream);

// Decodes a block held in device memory, already checked (CheckFixpointBlock, or written by
// EncodeFixpointBlockOnDevice), into `out` (device, rows * cols floats). Asynchronous on `stream`.
Status DecodeFixpointBlockOnDevice(const uint8_t* block, const QuantLayout& layout, int bits,
                                   FixpointWorkspace* ws, float* out, Stream stream);

// Reads one block from host bytes as DecodeFixpointBlock does, checking every field (scale type,
// finite scales >= 0, lengths) with the same errors, without decoding; `block` spans its bytes.
Status CheckFixpointBlock(ByteReader* payload, const QuantLayout& layout, int bits,
                          Span<const uint8_t>* block);

}  // namespace geotrain::compression::cuda
