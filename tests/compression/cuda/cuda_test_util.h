// Helpers of the CUDA codec tests: skipping without a device, moving test data to and from
// device memory, and comparing the CUDA codecs' frames and values with the CPU codecs'.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/half.h"
#include "compression/codec.h"
#include "compression/cuda/cuda_codec.h"
#include "compression/cuda/device_memory.h"
#include "compression/frame.h"

namespace geotrain::compression::cuda {

#define GEOTRAIN_SKIP_WITHOUT_GPU()                                      \
  do {                                                                   \
    if (!::geotrain::compression::cuda::DeviceAvailable()) {             \
      GTEST_SKIP() << "no CUDA device: this test runs on a GPU machine"; \
    }                                                                    \
  } while (0)

template <typename T>
DeviceArray<T> ToDevice(const std::vector<T>& host) {
  DeviceArray<T> device;
  EXPECT_TRUE(device.Reserve(std::max<size_t>(host.size(), 1)).ok());
  EXPECT_TRUE(CopyToDevice(device.data(), host.data(), host.size() * sizeof(T), nullptr).ok());
  EXPECT_TRUE(Synchronize(nullptr, "test upload").ok());
  return device;
}

template <typename T>
std::vector<T> ToHost(const DeviceArray<T>& device, size_t n) {
  std::vector<T> host(n);
  EXPECT_TRUE(CopyToHost(host.data(), device.data(), n * sizeof(T), nullptr).ok());
  EXPECT_TRUE(Synchronize(nullptr, "test download").ok());
  return host;
}

// The frame the CPU codec of `config` writes for `values` (float32 host values).
inline std::vector<uint8_t> CpuFrame(Codec& codec, const std::vector<float>& values,
                                     const Shape& shape, Span<const uint64_t> ids = {},
                                     uint64_t step = 0) {
  TensorView view{values.data(), DType::kFloat32, shape, ids, step};
  std::vector<uint8_t> frame;
  const Status s = EncodeFrame(codec, view, &frame);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return frame;
}

// The frame the CUDA codec writes for the same values, uploaded to the device first.
inline std::vector<uint8_t> GpuFrame(CudaCodec& codec, const std::vector<float>& values,
                                     const Shape& shape, Span<const uint64_t> ids = {},
                                     uint64_t step = 0) {
  DeviceArray<float> device = ToDevice(values);
  TensorView view{device.data(), DType::kFloat32, shape, ids, step};
  std::vector<uint8_t> frame;
  const Status s = EncodeDeviceFrame(codec, view, &frame);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return frame;
}

// Decodes `frame` on the device and brings the values back.
inline std::vector<float> GpuDecode(CudaCodec& codec, const std::vector<uint8_t>& frame) {
  DeviceDecodedTensor decoded;
  const Status s = DecodeDeviceFrame(codec, frame, FrameLimits(), &decoded);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return {};
  return ToHost(decoded.values, NumElements(decoded.shape));
}

// Equal bit for bit, as decoded values must be (so -0 and +0 differ here).
inline void ExpectSameFloats(const std::vector<float>& got, const std::vector<float>& want,
                             const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0)
        << what << ": value " << i << " " << got[i] << " vs " << want[i];
  }
}

// The CUDA codec's frame for `x` as bf16 in device memory is the CPU codec's frame for the same
// bf16 values in host memory.
inline void ExpectBFloat16DeviceFrameIsTheCpuFrame(Codec& cpu, CudaCodec& gpu,
                                                   const std::vector<float>& x,
                                                   const Shape& shape) {
  std::vector<uint16_t> bf16(x.size());
  ::geotrain::FloatToBFloat16(x.data(), bf16.data(), x.size());
  DeviceArray<uint16_t> device = ToDevice(bf16);
  std::vector<uint8_t> gpu_frame, cpu_frame;
  ASSERT_TRUE(
      EncodeDeviceFrame(gpu, TensorView{device.data(), DType::kBFloat16, shape}, &gpu_frame).ok());
  ASSERT_TRUE(EncodeFrame(cpu, TensorView{bf16.data(), DType::kBFloat16, shape}, &cpu_frame).ok());
  EXPECT_TRUE(gpu_frame == cpu_frame);
}

}  // namespace geotrain::compression::cuda
