#include <cuda_runtime.h>

#include "common/half.h"
#include "compression/cuda/delta_device.h"
#include "compression/cuda/kernel_launch.h"

namespace geotrain::compression::cuda {
namespace {

constexpr float kHalfMax = 65504.0f;

__device__ inline uint16_t LoadHalf(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

__device__ inline void StoreHalf(uint8_t* p, uint16_t h) {
  p[0] = static_cast<uint8_t>(h);
  p[1] = static_cast<uint8_t>(h >> 8);
}

__device__ inline bool InHalfRange(float x) { return fabsf(x) <= kHalfMax; }  // false for NaN

__device__ inline void AddSums(double err, double norm, double* sums) {
  for (int o = 16; o > 0; o >>= 1) {
    err += __shfl_down_sync(0xffffffffu, err, o);
    norm += __shfl_down_sync(0xffffffffu, norm, o);
  }
  if ((threadIdx.x & 31) == 0 && (err != 0 || norm != 0)) {
    atomicAdd(&sums[0], err);
    atomicAdd(&sums[1], norm);
  }
}

__global__ void HalfFromFloat(const float* in, int64_t n, uint8_t* out, uint32_t* flag,
                              double* sums) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  double err = 0, norm = 0;
  if (i < n) {
    const float x = in[i];
    if (!InHalfRange(x)) atomicOr(flag, 1u);
    const uint16_t h = FloatToHalf(x);
    StoreHalf(out + 2 * i, h);
    const double d = static_cast<double>(x) - HalfToFloat(h);
    err = d * d;
    norm = static_cast<double>(x) * x;
  }
  AddSums(err, norm, sums);
}

__global__ void FloatFromHalf(const uint8_t* in, int64_t n, float* out, uint32_t* flag) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const uint16_t h = LoadHalf(in + 2 * i);
  if ((h & 0x7c00u) == 0x7c00u) atomicOr(flag, 1u);
  out[i] = HalfToFloat(h);
}

__global__ void SubtractHalf(const float* a, const uint8_t* m, int64_t n, float* delta,
                             uint32_t* flag) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float x = a[i];
  if (!InHalfRange(x)) atomicOr(flag, 1u);
  delta[i] = x - HalfToFloat(LoadHalf(m + 2 * i));
}

__global__ void AddDeltaToHalf(const float* delta, int64_t n, uint8_t* m, float* reconstruction,
                               const float* reference, double* sums) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  double err = 0, norm = 0;
  if (i < n) {
    float v = HalfToFloat(LoadHalf(m + 2 * i)) + delta[i];
    v = v > -kHalfMax ? v : -kHalfMax;
    v = v < kHalfMax ? v : kHalfMax;
    const uint16_t h = FloatToHalf(v);
    StoreHalf(m + 2 * i, h);
    const float x = HalfToFloat(h);
    if (reconstruction) reconstruction[i] = x;
    if (reference) {
      const double d = static_cast<double>(reference[i]) - x;
      err = d * d;
      norm = static_cast<double>(reference[i]) * reference[i];
    }
  }
  if (reference) AddSums(err, norm, sums);
}

unsigned GridFor(int64_t n) { return Blocks(CeilDiv(n, kThreads)); }

}  // namespace

Status HalfFromFloatOnDevice(const float* in, int64_t n, uint8_t* out, uint32_t* flag, double* sums,
                             Stream stream) {
  if (n == 0) return OkStatus();
  HalfFromFloat<<<GridFor(n), kThreads, 0, stream>>>(in, n, out, flag, sums);
  return LastCudaStatus("fp16 conversion kernel");
}

Status FloatFromHalfOnDevice(const uint8_t* in, int64_t n, float* out, uint32_t* flag,
                             Stream stream) {
  if (n == 0) return OkStatus();
  FloatFromHalf<<<GridFor(n), kThreads, 0, stream>>>(in, n, out, flag);
  return LastCudaStatus("fp16 widening kernel");
}

Status SubtractHalfOnDevice(const float* a, const uint8_t* m, int64_t n, float* delta,
                            uint32_t* flag, Stream stream) {
  if (n == 0) return OkStatus();
  SubtractHalf<<<GridFor(n), kThreads, 0, stream>>>(a, m, n, delta, flag);
  return LastCudaStatus("delta subtraction kernel");
}

Status AddDeltaToHalfOnDevice(const float* delta, int64_t n, uint8_t* m, float* reconstruction,
                              const float* reference, double* sums, Stream stream) {
  if (n == 0) return OkStatus();
  AddDeltaToHalf<<<GridFor(n), kThreads, 0, stream>>>(delta, n, m, reconstruction, reference, sums);
  return LastCudaStatus("activation cache update kernel");
}

}  // namespace geotrain::compression::cuda
