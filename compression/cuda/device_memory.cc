#include "compression/cuda/device_memory.h"

#include <cuda_runtime_api.h>

#include <utility>

namespace geotrain::compression::cuda {
namespace {

Status FromCuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return OkStatus();
  cudaGetLastError();  // clears a sticky-free error so the next call starts clean
  const std::string message = std::string(what) + ": " + cudaGetErrorString(error);
  if (error == cudaErrorMemoryAllocation) return ResourceExhausted(message);
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver)
    return Unavailable(message);
  return Internal(message);
}

}  // namespace

Status LastCudaStatus(const char* what) { return FromCuda(cudaGetLastError(), what); }

bool DeviceAvailable() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return ok;
}

StatusOr<std::string> DeviceName() {
  int count = 0;
  GEOTRAIN_RETURN_IF_ERROR(FromCuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  if (count == 0) return Unavailable("no CUDA device is visible");
  int device = 0;
  GEOTRAIN_RETURN_IF_ERROR(FromCuda(cudaGetDevice(&device), "cudaGetDevice"));
  cudaDeviceProp properties;
  GEOTRAIN_RETURN_IF_ERROR(
      FromCuda(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties"));
  return std::string(properties.name);
}

Status Synchronize(Stream stream, const char* what) {
  return FromCuda(cudaStreamSynchronize(stream), what);
}

DeviceBytes::~DeviceBytes() {
  if (data_) cudaFree(data_);
}

DeviceBytes::DeviceBytes(DeviceBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}

DeviceBytes& DeviceBytes::operator=(DeviceBytes&& other) noexcept {
  if (this != &other) {
    if (data_) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

Status DeviceBytes::Reserve(size_t bytes) {
  if (bytes <= capacity_) return OkStatus();
  if (data_) cudaFree(data_);
  data_ = nullptr;
  capacity_ = 0;
  GEOTRAIN_RETURN_IF_ERROR(FromCuda(cudaMalloc(&data_, bytes),
                                    ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str()));
  capacity_ = bytes;
  return OkStatus();
}

PinnedBytes::~PinnedBytes() {
  if (data_) cudaFreeHost(data_);
}

Status PinnedBytes::Reserve(size_t bytes) {
  if (bytes <= capacity_) return OkStatus();
  if (data_) cudaFreeHost(data_);
  data_ = nullptr;
  capacity_ = 0;
  void* p = nullptr;
  GEOTRAIN_RETURN_IF_ERROR(
      FromCuda(cudaMallocHost(&p, bytes),
               ("cudaMallocHost of " + std::to_string(bytes) + " bytes").c_str()));
  data_ = static_cast<uint8_t*>(p);
  capacity_ = bytes;
  return OkStatus();
}

Status CopyToHost(void* host, const void* device, size_t bytes, Stream stream) {
  if (bytes == 0) return OkStatus();
  return FromCuda(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream),
                  "copy device to host");
}

Status CopyToDevice(void* device, const void* host, size_t bytes, Stream stream) {
  if (bytes == 0) return OkStatus();
  return FromCuda(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream),
                  "copy host to device");
}

Status CopyOnDevice(void* to, const void* from, size_t bytes, Stream stream) {
  if (bytes == 0) return OkStatus();
  return FromCuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream),
                  "copy device to device");
}

Status ZeroDevice(void* device, size_t bytes, Stream stream) {
  if (bytes == 0) return OkStatus();
  return FromCuda(cudaMemsetAsync(device, 0, bytes, stream), "cudaMemsetAsync");
}

}  // namespace geotrain::compression::cuda
