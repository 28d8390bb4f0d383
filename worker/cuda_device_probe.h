// ProbeCudaDevice: the name and memory of the first visible CUDA device, read through the CUDA
// driver library (libcuda.so.1) loaded at run time.
//
// Why not LibTorch: the CPU build of LibTorch the daemon may link has no CUDA headers, and
// LibTorch's device properties live in CUDA-only headers. The driver's C API is stable and
// present wherever a GPU driver is installed, so the daemon can describe the device without
// compiling against CUDA. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace geotrain::worker {

struct CudaDeviceInfo {
  std::string name;           // e.g. "NVIDIA H100 80GB HBM3"
  uint64_t memory_bytes = 0;  // total device memory
};

// Device 0 as CUDA_VISIBLE_DEVICES exposes it; Unavailable when there is no driver or device.
StatusOr<CudaDeviceInfo> ProbeCudaDevice();

}  // namespace geotrain::worker
