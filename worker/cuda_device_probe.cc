#include "worker/cuda_device_probe.h"

#include <dlfcn.h>

#include <cstddef>

namespace geotrain::worker {
namespace {

// The driver API's C signatures (cuda.h); CUresult and CUdevice are ints, 0 is CUDA_SUCCESS.
using CuInit = int (*)(unsigned int);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceTotalMem = int (*)(size_t*, int);

// Closes the library when the probe is done: nothing of it is used afterwards.
class SharedLibrary {
 public:
  explicit SharedLibrary(const char* name) : handle_(::dlopen(name, RTLD_NOW | RTLD_LOCAL)) {}
  ~SharedLibrary() {
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  template <typename F>
  F Symbol(const char* name) const {
    return reinterpret_cast<F>(::dlsym(handle_, name));
  }

 private:
  void* handle_;
};

}  // namespace

StatusOr<CudaDeviceInfo> ProbeCudaDevice() {
  SharedLibrary driver("libcuda.so.1");
  if (!driver.loaded()) return Unavailable("no CUDA driver (libcuda.so.1 did not load)");
  const auto init = driver.Symbol<CuInit>("cuInit");
  const auto device_get = driver.Symbol<CuDeviceGet>("cuDeviceGet");
  const auto get_name = driver.Symbol<CuDeviceGetName>("cuDeviceGetName");
  const auto total_mem = driver.Symbol<CuDeviceTotalMem>("cuDeviceTotalMem_v2");
  if (!init || !device_get || !get_name || !total_mem) {
    return Unavailable("libcuda.so.1 lacks the device query functions");
  }
  if (int rc = init(0); rc != 0)
    return Unavailable("cuInit failed (CUresult " + std::to_string(rc) + ")");
  int device = 0;
  if (int rc = device_get(&device, 0); rc != 0) {
    return Unavailable("cuDeviceGet(0) failed (CUresult " + std::to_string(rc) + ")");
  }
  char name[256] = {};
  if (int rc = get_name(name, sizeof(name) - 1, device); rc != 0) {
    return Unavailable("cuDeviceGetName failed (CUresult " + std::to_string(rc) + ")");
  }
  size_t bytes = 0;
  if (int rc = total_mem(&bytes, device); rc != 0) {
    return Unavailable("cuDeviceTotalMem failed (CUresult " + std::to_string(rc) + ")");
  }
  return CudaDeviceInfo{name, static_cast<uint64_t>(bytes)};
}

}  // namespace geotrain::worker
