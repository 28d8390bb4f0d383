#include <cuda_runtime.h>

#include "common/half.h"
#include "compression/cuda/device_convert.h"
#include "compression/cuda/kernel_launch.h"

namespace geotrain::compression::cuda {
namespace {

__global__ void Widen(const uint16_t* in, bool bfloat16, int64_t n, float* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = bfloat16 ? BFloat16ToFloat(in[i]) : HalfToFloat(in[i]);
}

}  // namespace

Status WidenToFloat(const void* in, DType dtype, int64_t n, float* out, Stream stream) {
  if (dtype == DType::kFloat32) return CopyOnDevice(out, in, n * sizeof(float), stream);
  if (n == 0) return OkStatus();
  Widen<<<Blocks(CeilDiv(n, kThreads)), kThreads, 0, stream>>>(static_cast<const uint16_t*>(in),
                                                               dtype == DType::kBFloat16, n, out);
  return LastCudaStatus("widening to float32");
}

}  // namespace geotrain::compression::cuda
