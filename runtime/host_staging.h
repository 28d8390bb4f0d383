// Host staging of a pipeline link whose stage computes on a CUDA device.
//
// Codecs and transports work on host memory, so a CUDA stage copies every tensor it sends to
// the host and every tensor it receives to the device. Both copies go through page-locked
// (pinned) memory: device to host then runs at full PCIe / NVLink-C2C speed, and host to device
// runs asynchronously (the receive returns once the copy is queued on the current stream; the
// kernels queued after it wait for it in stream order). Each link direction keeps one pinned
// buffer, grown to the largest tensor it has carried, rather than pinning memory per message:
// cudaHostAlloc is slow and synchronises the device.
//
// For a stage on the CPU both are pass-throughs. The pinned paths are compiled only against a
// CUDA build of LibTorch (GEOTRAIN_TORCH_CUDA); a CPU build has no CUDA tensors to stage.
//
// Not thread-safe: the stage's training thread calls them, and its current CUDA stream is the
// one the copies are queued on.
#pragma once

#include <ATen/ATen.h>

#include <memory>

namespace geotrain::runtime {

// A page-locked byte buffer viewed as tensors; grows, never shrinks.
class PinnedBuffer {
 public:
  // A contiguous tensor of `dtype` and `sizes` over the buffer's first bytes, valid until the
  // next call (which may reallocate).
  at::Tensor View(at::ScalarType dtype, at::IntArrayRef sizes);

 private:
  at::Tensor bytes_;  // kByte, pinned
};

// Device to host: the sending side of a link.
class DeviceToHostStaging {
 public:
  // `tensor`'s values in host memory: `tensor` itself when it is not on a CUDA device, else a
  // view of this stage's pinned buffer, valid until the next call, once the copy has finished.
  at::Tensor ToHost(const at::Tensor& tensor);

 private:
  PinnedBuffer buffer_;
};

// Host to device: the receiving side of a link.
class HostToDeviceStaging {
 public:
  explicit HostToDeviceStaging(at::Device device);
  ~HostToDeviceStaging();
  HostToDeviceStaging(const HostToDeviceStaging&) = delete;
  HostToDeviceStaging& operator=(const HostToDeviceStaging&) = delete;

  // A tensor on the device with `host`'s values (a CPU tensor, any dtype and layout): `host`
  // itself when the device is the CPU. The copy is queued on the device's current stream; `host`
  // may be reused or freed at once.
  at::Tensor ToDevice(const at::Tensor& host);

 private:
  struct CopyFence;  // the CUDA event of the last copy out of the buffer (CUDA builds)

  at::Device device_;
  PinnedBuffer buffer_;
  std::unique_ptr<CopyFence> fence_;
};

}  // namespace geotrain::runtime
