// Device and pinned host memory owned by RAII handles, and CUDA errors as Status.
//
// The handles only grow (Reserve keeps the allocation when it is large enough), so a codec that
// encodes tensors of one shape allocates once. Not thread-safe. No CUDA headers here: callers
// compiled by a plain C++ compiler (the runtime) can hold these handles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

struct CUstream_st;

namespace geotrain::compression::cuda {

using Stream = CUstream_st*;  // cudaStream_t without the CUDA headers; nullptr: the default stream

// The status of the last CUDA call made by this thread, with `what` as context; OK when none
// failed. Clears the error.
Status LastCudaStatus(const char* what);
// Whether a CUDA device is usable by this process (driver, runtime and at least one device).
bool DeviceAvailable();
// "NVIDIA H100 80GB HBM3" or why no device is usable.
StatusOr<std::string> DeviceName();
// Waits for `stream`'s queued work; its first failure as a Status.
Status Synchronize(Stream stream, const char* what);

// Device memory of `bytes` bytes; contents are undefined after a Reserve that reallocates.
class DeviceBytes {
 public:
  DeviceBytes() = default;
  ~DeviceBytes();
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  DeviceBytes(DeviceBytes&& other) noexcept;
  DeviceBytes& operator=(DeviceBytes&& other) noexcept;

  Status Reserve(size_t bytes);
  void* data() const { return data_; }
  size_t capacity() const { return capacity_; }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

// A typed view of DeviceBytes.
template <typename T>
class DeviceArray {
 public:
  Status Reserve(size_t n) { return bytes_.Reserve(n * sizeof(T)); }
  T* data() const { return static_cast<T*>(bytes_.data()); }

 private:
  DeviceBytes bytes_;
};

// Page-locked host memory: device<->host copies from it run at full PCIe/NVLink speed and can
// overlap with kernels.
class PinnedBytes {
 public:
  PinnedBytes() = default;
  ~PinnedBytes();
  PinnedBytes(const PinnedBytes&) = delete;
  PinnedBytes& operator=(const PinnedBytes&) = delete;

  Status Reserve(size_t bytes);
  uint8_t* data() const { return data_; }

 private:
  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
};

// Asynchronous copies on `stream` (cudaMemcpyAsync); errors as Status.
Status CopyToHost(void* host, const void* device, size_t bytes, Stream stream);
Status CopyToDevice(void* device, const void* host, size_t bytes, Stream stream);
Status CopyOnDevice(void* to, const void* from, size_t bytes, Stream stream);
Status ZeroDevice(void* device, size_t bytes, Stream stream);

}  // namespace geotrain::compression::cuda
