#include "runtime/host_staging.h"

#include <algorithm>

#ifdef GEOTRAIN_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace geotrain::runtime {

at::Tensor PinnedBuffer::View(at::ScalarType dtype, at::IntArrayRef sizes) {
  int64_t elements = 1;
  for (const int64_t size : sizes) elements *= size;
  const int64_t bytes = elements * static_cast<int64_t>(c10::elementSize(dtype));
  if (!bytes_.defined() || bytes_.numel() < bytes) {
    // 1 byte at least: a zero-sized allocation has no pinned pointer.
    bytes_ = at::empty({std::max<int64_t>(bytes, 1)},
                       at::TensorOptions().dtype(at::kByte).pinned_memory(true));
  }
  return bytes_.narrow(0, 0, bytes).view(dtype).view(sizes);
}

at::Tensor DeviceToHostStaging::ToHost(const at::Tensor& tensor) {
  if (!tensor.is_cuda()) return tensor;
#ifdef GEOTRAIN_TORCH_CUDA
  at::Tensor host = buffer_.View(tensor.scalar_type(), tensor.sizes());
  host.copy_(tensor, /*non_blocking=*/true);
  // The copy was only queued; the codec reads the bytes as soon as this returns.
  c10::cuda::getCurrentCUDAStream(tensor.device().index()).synchronize();
  return host;
#else
  return tensor.to(at::kCPU);  // unreachable: a CPU build of LibTorch makes no CUDA tensors
#endif
}

#ifdef GEOTRAIN_TORCH_CUDA
struct HostToDeviceStaging::CopyFence {
  at::cuda::CUDAEvent event;  // not created until first recorded; synchronize() is then a no-op
};
#else
struct HostToDeviceStaging::CopyFence {};
#endif

HostToDeviceStaging::HostToDeviceStaging(at::Device device)
    : device_(device), fence_(std::make_unique<CopyFence>()) {}

HostToDeviceStaging::~HostToDeviceStaging() {
#ifdef GEOTRAIN_TORCH_CUDA
  // The buffer must outlive the copy out of it, which may still be queued.
  fence_->event.synchronize();
#endif
}

at::Tensor HostToDeviceStaging::ToDevice(const at::Tensor& host) {
  if (!device_.is_cuda()) return host;
#ifdef GEOTRAIN_TORCH_CUDA
  // The previous copy out of the buffer must have run before the buffer is overwritten. It was
  // queued ahead of the previous micro-batch's kernels, so this rarely waits.
  fence_->event.synchronize();
  at::Tensor staged = buffer_.View(host.scalar_type(), host.sizes());
  staged.copy_(host);
  at::Tensor device =
      at::empty(host.sizes(), at::TensorOptions().dtype(host.scalar_type()).device(device_));
  device.copy_(staged, /*non_blocking=*/true);
  fence_->event.record(c10::cuda::getCurrentCUDAStream(device_.index()));
  return device;
#else
  return host.to(device_);
#endif
}

}  // namespace geotrain::runtime
