// tah (TAH-Quant) on a CUDA device: the payload bytes and params of TahCodec (tah_codec.cc) from
// float32 values in device memory, and the decoding of a validated frame into device memory.
// tah_device.cu documents the kernels; tah_math.h holds their arithmetic. No CUDA headers here.
// Not thread-safe per workspace.
#pragma once

#include <cstdint>

#include "common/span.h"
#include "common/status.h"
#include "compression/cuda/device_memory.h"
#include "compression/tah_format.h"
#include "compression/tah_frame_check.h"
#include "compression/types.h"

namespace geotrain::compression::cuda {

// The encoder's settings (CodecConfig's tah fields).
struct TahEncodeSettings {
  int high_bits = 4;
  int low_bits = 3;
  double high_ratio = 0.8;
  double outlier_threshold = 2.0;
};

// Scratch kept between calls (grown on demand, never shrunk).
struct TahDeviceWorkspace {
  // Per tile.
  DeviceArray<float> min, max, abs_max, abs_sum, abs_log_sum;
  DeviceArray<uint8_t> rotated;
  DeviceArray<uint16_t> pivots;  // per rotated tile, in tile order
  // Per unit.
  DeviceArray<uint32_t> keys, keys_sorted, order, order_sorted;
  DeviceArray<uint8_t> unit_high;
  // Exclusive prefix sums of the bitmaps' byte popcounts (one entry more than bytes: the total).
  DeviceArray<uint32_t> unit_prefix, tile_prefix;
  DeviceArray<unsigned long long> flags;  // see tah_device.cu
  DeviceArray<double> sums;               // Σ(x - x̂)², Σx² in slots
  DeviceBytes cub_temp;
  DeviceBytes payload;  // encode: the payload built; decode: the payload uploaded
  PinnedBytes readback;
};

// Encodes `x` (geo.rows × geo.cols float32 in device memory) as TahCodec would: fills `params`
// and leaves the payload in ws->payload (device memory); returns its size. Adds to `error` when
// non-null (summed in double, so it may differ from the CPU's float lanes in the last digits;
// the bytes do not). Synchronises `stream` twice (after the statistics, and at the end).
// INVALID_ARGUMENT, with the CPU codec's message, for non-finite input or tiles whose range is
// too close to the float limit.
StatusOr<uint64_t> EncodeTahOnDevice(const float* x, const TahGeometry& geo,
                                     const TahEncodeSettings& settings, TahDeviceWorkspace* ws,
                                     TahParams* params, ErrorSums* error, Stream stream);

// Decodes a frame that CheckTahFrame accepted (`payload`: its host bytes) into `out` (device,
// geo.rows × geo.cols floats). Asynchronous on `stream` after the payload upload.
Status DecodeTahOnDevice(const TahFrameLayout& layout, Span<const uint8_t> payload,
                         TahDeviceWorkspace* ws, float* out, Stream stream);

}  // namespace geotrain::compression::cuda
