// Kernels of fixpoint_device.h. Three launches per encode: the max |x| of every scale group (and
// whether every value is finite), the scales, then one thread per group of 8 codes (exactly `bits`
// packed bytes, bitpack.h's MSB-first order) that quantizes, packs and sums the error.
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "compression/bitpack.h"
#include "compression/cuda/fixpoint_device.h"
#include "compression/cuda/fixpoint_math.h"
#include "compression/cuda/kernel_launch.h"

namespace geotrain::compression::cuda {
namespace {

constexpr float kHalfMax = 65504.0f;

BlockGeometry GeometryOf(const QuantLayout& l) {
  BlockGeometry g;
  g.rows = l.rows;
  g.cols = l.cols;
  g.tile = l.tile;
  g.mode = static_cast<int>(l.mode);
  g.tiles_per_row = l.mode == ScaleMode::kPerTile ? l.TilesPerRow() : 1;
  return g;
}

// The bytes of a group: `bits`, or what is left of the stream for the last group.
__device__ inline uint64_t Smaller(int bits, uint64_t left) {
  return left < static_cast<uint64_t>(bits) ? left : static_cast<uint64_t>(bits);
}

__device__ inline void AtomicMaxNonNegative(float* cell, float value) {
  // Non-negative floats (and NaN, whose bits are larger still) order like their bit patterns.
  atomicMax(reinterpret_cast<unsigned int*>(cell), __float_as_uint(value));
}

__device__ inline float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}

__device__ inline double WarpSum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// max |x| per column: each thread walks one column over a chunk of rows.
__global__ void MaxAbsPerChannel(const float* x, BlockGeometry g, int64_t rows_per_chunk,
                                 float* amax, uint32_t* flags) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t r0 = blockIdx.y * rows_per_chunk;
  const int64_t r1 = min(g.rows, r0 + rows_per_chunk);
  float m = 0;
  bool finite = true;
  if (c < g.cols) {
    for (int64_t r = r0; r < r1; ++r) {
      const float v = x[r * g.cols + c];
      finite &= isfinite(v);
      m = fmaxf(m, fabsf(v));
    }
    AtomicMaxNonNegative(&amax[c], m);
  }
  if (!finite) atomicOr(&flags[1], 1u);
  m = WarpMax(m);
  if ((threadIdx.x & 31) == 0) AtomicMaxNonNegative(reinterpret_cast<float*>(&flags[0]), m);
}

// max |x| per row or per tile: one warp per segment (a row, or a tile of a row).
__global__ void MaxAbsPerSegment(const float* x, BlockGeometry g, int64_t segments, float* amax,
                                 uint32_t* flags) {
  const int64_t warp = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= segments) return;
  int64_t begin, length;
  if (g.mode == 1) {
    begin = warp * g.cols;
    length = g.cols;
  } else {
    const int64_t r = warp / g.tiles_per_row;
    const int64_t c0 = (warp % g.tiles_per_row) * g.tile;
    begin = r * g.cols + c0;
    length = min(g.tile, g.cols - c0);
  }
  float m = 0;
  bool finite = true;
  for (int64_t i = lane; i < length; i += 32) {
    const float v = x[begin + i];
    finite &= isfinite(v);
    m = fmaxf(m, fabsf(v));
  }
  if (__any_sync(0xffffffffu, !finite) && lane == 0) atomicOr(&flags[1], 1u);
  m = WarpMax(m);
  if (lane == 0) {
    amax[warp] = m;
    AtomicMaxNonNegative(reinterpret_cast<float*>(&flags[0]), m);
  }
}

// The block's scale type and scales, and each scale's multiplier and step.
__global__ void WriteScales(const float* amax, int64_t num_scales, int f, bool f32_scales,
                            uint8_t* block, float* mul, float* step) {
  const int64_t s = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (s == 0) block[0] = f32_scales ? 1 : 0;
  if (s >= num_scales) return;
  float scale = amax[s];
  if (f32_scales) {
    const uint32_t bits = __float_as_uint(scale);
    for (int b = 0; b < 4; ++b) block[1 + 4 * s + b] = static_cast<uint8_t>(bits >> (8 * b));
  } else {
    uint16_t h;
    scale = HalfScale(scale, &h);
    block[1 + 2 * s] = static_cast<uint8_t>(h);
    block[2 + 2 * s] = static_cast<uint8_t>(h >> 8);
  }
  mul[s] = QuantMultiplier(scale, f);
  step[s] = QuantStep(scale, f);
}

struct QuantizeArgs {
  BlockGeometry g;
  int bits;
  bool stochastic;
  uint64_t seed, stream;
  int64_t total;
  uint64_t packed_bytes;
};

__global__ void QuantizePack(const float* x, QuantizeArgs a, const float* mul, const float* step,
                             uint8_t* packed, float* xhat, double* sums) {
  const int64_t group = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t i0 = group * 8;
  const int f = a.bits - 1;
  double err = 0, norm = 0;
  if (i0 < a.total) {
    int64_t r = i0 / a.g.cols, c = i0 % a.g.cols;
    uint8_t codes[8];
    for (int k = 0; k < 8; ++k) {
      const int64_t i = i0 + k;
      if (i >= a.total) {
        codes[k] = 0;
        continue;
      }
      const int64_t s = ScaleIndex(a.g, r, c);
      const float v = x[i];
      const float level = QuantLevel(v, mul[s], f, a.stochastic, a.seed, a.stream, i);
      const float xh = level * step[s];
      if (xhat) xhat[i] = xh;
      const double d = static_cast<double>(v) - xh;
      err += d * d;
      norm += static_cast<double>(v) * v;
      codes[k] = LevelCode(level, f);
      if (++c == a.g.cols) c = 0, ++r;
    }
    const uint64_t word = PackGroup(codes, a.bits);
    const uint64_t first = static_cast<uint64_t>(group) * a.bits;
    const int bytes = static_cast<int>(Smaller(a.bits, a.packed_bytes - first));
    for (int b = 0; b < bytes; ++b) {
      packed[first + b] = static_cast<uint8_t>(word >> (8 * (a.bits - 1 - b)));
    }
  }
  err = WarpSum(err);
  norm = WarpSum(norm);
  if ((threadIdx.x & 31) == 0 && (err != 0 || norm != 0)) {
    atomicAdd(&sums[0], err);
    atomicAdd(&sums[1], norm);
  }
}

__global__ void ReadSteps(const uint8_t* block, int64_t num_scales, int f, float* step) {
  const int64_t s = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (s >= num_scales) return;
  float scale;
  if (block[0] == 1) {
    uint32_t bits = 0;
    for (int b = 0; b < 4; ++b) bits |= static_cast<uint32_t>(block[1 + 4 * s + b]) << (8 * b);
    scale = __uint_as_float(bits);
  } else {
    scale = HalfToFloat(static_cast<uint16_t>(block[1 + 2 * s] | (block[2 + 2 * s] << 8)));
  }
  step[s] = QuantStep(scale, f);
}

// The codes follow the scales, whose width the block's first byte gives (read on the device, so
// decoding needs no round trip to the host).
__global__ void UnpackDequantize(const uint8_t* block, int64_t num_scales, BlockGeometry g,
                                 int bits, int64_t total, uint64_t packed_bytes, const float* step,
                                 float* out) {
  const int64_t group = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t i0 = group * 8;
  if (i0 >= total) return;
  const uint8_t* packed = block + 1 + num_scales * (block[0] == 1 ? 4 : 2);
  const uint64_t first = static_cast<uint64_t>(group) * bits;
  const int bytes = static_cast<int>(Smaller(bits, packed_bytes - first));
  uint64_t word = 0;
  for (int b = 0; b < bits; ++b) word = (word << 8) | (b < bytes ? packed[first + b] : 0);
  uint8_t codes[8];
  UnpackGroup(word, bits, codes);
  int64_t r = i0 / g.cols, c = i0 % g.cols;
  for (int k = 0; k < 8 && i0 + k < total; ++k) {
    out[i0 + k] = CodeValue(codes[k], step[ScaleIndex(g, r, c)], bits - 1);
    if (++c == g.cols) c = 0, ++r;
  }
}

Status CheckLayout(const QuantLayout& l, int bits) {
  if (bits < 1 || bits > 8) {
    return InvalidArgument("fixpoint.bits: " + std::to_string(bits) + " is outside 1..8");
  }
  if (l.rows < 0 || l.cols < 0) return InvalidArgument("fixpoint: negative layout");
  if (l.mode == ScaleMode::kPerTile && l.tile < 1) {
    return InvalidArgument("fixpoint.tile: must be at least 1");
  }
  return OkStatus();
}

}  // namespace

StatusOr<uint64_t> EncodeFixpointBlockOnDevice(const float* x, const QuantLayout& l,
                                               const QuantizeOptions& o, FixpointWorkspace* ws,
                                               DeviceBytes* block, float* xhat, ErrorSums* error,
                                               Stream stream) {
  GEOTRAIN_RETURN_IF_ERROR(CheckLayout(l, o.bits));
  const int f = o.bits - 1;
  const BlockGeometry g = GeometryOf(l);
  const int64_t num_scales = l.NumScales();
  const int64_t total = l.rows * l.cols;
  GEOTRAIN_RETURN_IF_ERROR(ws->amax.Reserve(std::max<int64_t>(num_scales, 1)));
  GEOTRAIN_RETURN_IF_ERROR(ws->mul.Reserve(std::max<int64_t>(num_scales, 1)));
  GEOTRAIN_RETURN_IF_ERROR(ws->step.Reserve(std::max<int64_t>(num_scales, 1)));
  GEOTRAIN_RETURN_IF_ERROR(ws->flags.Reserve(2));
  GEOTRAIN_RETURN_IF_ERROR(ws->sums.Reserve(2));
  GEOTRAIN_RETURN_IF_ERROR(ws->readback.Reserve(2 * sizeof(uint32_t) + 2 * sizeof(double)));
  GEOTRAIN_RETURN_IF_ERROR(ZeroDevice(ws->flags.data(), 2 * sizeof(uint32_t), stream));
  GEOTRAIN_RETURN_IF_ERROR(ZeroDevice(ws->sums.data(), 2 * sizeof(double), stream));

  // Pass 1: max |x| per scale group.
  if (total > 0) {
    if (l.mode == ScaleMode::kPerChannel) {
      GEOTRAIN_RETURN_IF_ERROR(ZeroDevice(ws->amax.data(), num_scales * sizeof(float), stream));
      const int64_t rows_per_chunk = 64;
      const dim3 grid(static_cast<unsigned>(CeilDiv(l.cols, kThreads)),
                      static_cast<unsigned>(CeilDiv(l.rows, rows_per_chunk)));
      MaxAbsPerChannel<<<grid, kThreads, 0, stream>>>(x, g, rows_per_chunk, ws->amax.data(),
                                                      ws->flags.data());
    } else {
      const int64_t warps_per_block = kThreads / 32;
      MaxAbsPerSegment<<<Blocks(CeilDiv(num_scales, warps_per_block)), kThreads, 0, stream>>>(
          x, g, num_scales, ws->amax.data(), ws->flags.data());
    }
    GEOTRAIN_RETURN_IF_ERROR(LastCudaStatus("fixpoint max |x| kernel"));
  }
  auto* readback_flags = reinterpret_cast<uint32_t*>(ws->readback.data());
  GEOTRAIN_RETURN_IF_ERROR(CopyToHost(readback_flags, ws->flags.data(), 8, stream));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream, "fixpoint max |x|"));
  if (readback_flags[1]) {
    return InvalidArgument("input: contains NaN or infinity (cannot be quantized)");
  }
  float largest;
  std::memcpy(&largest, &readback_flags[0], 4);
  const bool f32_scales = !(largest <= kHalfMax);

  // Pass 2: scales; pass 3: codes.
  const uint64_t scale_bytes = num_scales * (f32_scales ? 4 : 2);
  const uint64_t packed_bytes = PackedBytes(static_cast<uint64_t>(total), o.bits);
  const uint64_t size = 1 + scale_bytes + packed_bytes;
  GEOTRAIN_RETURN_IF_ERROR(block->Reserve(size));
  auto* out = static_cast<uint8_t*>(block->data());
  WriteScales<<<Blocks(CeilDiv(std::max<int64_t>(num_scales, 1), kThreads)), kThreads, 0, stream>>>(
      ws->amax.data(), num_scales, f, f32_scales, out, ws->mul.data(), ws->step.data());
  if (total > 0) {
    QuantizeArgs a{g,     o.bits,      o.rounding == Rounding::kStochastic, o.seed, o.stream,
                   total, packed_bytes};
    QuantizePack<<<Blocks(CeilDiv(CeilDiv(total, 8), kThreads)), kThreads, 0, stream>>>(
        x, a, ws->mul.data(), ws->step.data(), out + 1 + scale_bytes, xhat, ws->sums.data());
  }
  GEOTRAIN_RETURN_IF_ERROR(LastCudaStatus("fixpoint quantize kernels"));
  if (error) {
    auto* sums = reinterpret_cast<double*>(ws->readback.data() + 8);
    GEOTRAIN_RETURN_IF_ERROR(CopyToHost(sums, ws->sums.data(), 2 * sizeof(double), stream));
    GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream, "fixpoint error sums"));
    error->error_sq += sums[0];
    error->norm_sq += sums[1];
  }
  return size;
}

Status DecodeFixpointBlockOnDevice(const uint8_t* block, const QuantLayout& l, int bits,
                                   FixpointWorkspace* ws, float* out, Stream stream) {
  GEOTRAIN_RETURN_IF_ERROR(CheckLayout(l, bits));
  const int64_t num_scales = l.NumScales();
  const int64_t total = l.rows * l.cols;
  if (total == 0) return OkStatus();
  GEOTRAIN_RETURN_IF_ERROR(ws->step.Reserve(std::max<int64_t>(num_scales, 1)));
  ReadSteps<<<Blocks(CeilDiv(num_scales, kThreads)), kThreads, 0, stream>>>(
      block, num_scales, bits - 1, ws->step.data());
  UnpackDequantize<<<Blocks(CeilDiv(CeilDiv(total, 8), kThreads)), kThreads, 0, stream>>>(
      block, num_scales, GeometryOf(l), bits, total,
      PackedBytes(static_cast<uint64_t>(total), bits), ws->step.data(), out);
  return LastCudaStatus("fixpoint decode kernels");
}

Status CheckFixpointBlock(ByteReader* payload, const QuantLayout& l, int bits,
                          Span<const uint8_t>* block) {
  GEOTRAIN_RETURN_IF_ERROR(CheckLayout(l, bits));
  const size_t start = payload->position();
  uint8_t scale_type = 0;
  GEOTRAIN_RETURN_IF_ERROR(payload->Get(&scale_type, "fixpoint.scale_type"));
  if (scale_type != 0 && scale_type != 1) {
    return DataLoss("fixpoint.scale_type: " + std::to_string(scale_type) + " is not 0 or 1");
  }
  const int64_t num_scales = l.NumScales();
  Span<const uint8_t> scale_bytes;
  GEOTRAIN_RETURN_IF_ERROR(
      payload->GetSpan(num_scales * (scale_type == 1 ? 4 : 2), &scale_bytes, "fixpoint.scales"));
  for (int64_t s = 0; s < num_scales; ++s) {
    float scale;
    if (scale_type == 1) {
      std::memcpy(&scale, scale_bytes.data() + 4 * s, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, scale_bytes.data() + 2 * s, 2);
      scale = HalfToFloat(h);
    }
    if (!(scale >= 0 && std::isfinite(scale))) {
      return DataLoss("fixpoint.scales[" + std::to_string(s) + "]: not a finite value >= 0");
    }
  }
  Span<const uint8_t> packed;
  GEOTRAIN_RETURN_IF_ERROR(payload->GetSpan(
      PackedBytes(static_cast<uint64_t>(l.rows) * l.cols, bits), &packed, "fixpoint.codes"));
  *block = Span<const uint8_t>(scale_bytes.data() - 1, payload->position() - start);
  return OkStatus();
}

}  // namespace geotrain::compression::cuda
