// Helpers of the CUDA codec tests: skipping without a device, and moving test data to and from
// device memory.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "compression/codec.h"
#include "compression/cuda/cuda_codec.h"
#include "compression/cuda/device_memory.h"
#include "compression/frame.h"

namespace geotrain::compression::cuda {

#define GEOTRAIN_SKIP_WITHOUT_GPU()                                     \
  do {                                                                  \
    if (!::geotrain::compression::cuda::DeviceAvailable()) {            \
      GTEST_SKIP() << "no CUDA device: this test runs on a GPU machine"; \
    }                                                                   \
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

}  // namespace geotrain::compression::cuda
