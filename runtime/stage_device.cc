#include "runtime/stage_device.h"

#include <torch/cuda.h>

#include <string>

namespace geotrain::runtime {

StatusOr<at::Device> StageDevice(const StageAssignment& assignment) {
  StatusOr<DeviceName> name = ParseDeviceName(assignment.device);
  if (!name.ok()) return name.status().WithContext("model.device");
  if (!name->cuda) return at::Device(at::kCPU);
  const std::string asked = "model.device: " + assignment.device + " asked for, but ";
  if (!torch::cuda::is_available()) {
#ifdef GEOTRAIN_TORCH_CUDA
    return FailedPrecondition(asked +
                              "CUDA is not available in this process (no GPU visible, or "
                              "no working driver: check nvidia-smi and "
                              "CUDA_VISIBLE_DEVICES)");
#else
    // Debian's libtorch is such a build: it cannot run CUDA code even where a GPU is.
    return FailedPrecondition(asked +
                              "CUDA is not available: this build's LibTorch is a CPU "
                              "build (docs/gpu.md builds against a CUDA one)");
#endif
  }
  const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
  if (name->index >= count) {
    return FailedPrecondition(asked + "this process sees " + std::to_string(count) +
                              " CUDA device" + (count == 1 ? "" : "s"));
  }
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(name->index));
}

std::optional<at::ScalarType> AutocastDtype(const StageAssignment& assignment) {
  if (assignment.autocast == Autocast::kBf16) return at::kBFloat16;
  return std::nullopt;
}

}  // namespace geotrain::runtime
