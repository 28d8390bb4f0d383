#include "worker/capabilities.h"

#include <spdlog/spdlog.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <climits>
#include <thread>

#include "worker/cuda_device_probe.h"

namespace geotrain::worker {
namespace {

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

uint64_t PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

uint32_t CpuCount() {
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0) return static_cast<uint32_t>(online);
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

const char* WorkerVersion() { return GEOTRAIN_VERSION; }

geotrain::v1::WorkerCapabilities DetectCapabilities(const CapabilityFlags& flags) {
  geotrain::v1::WorkerCapabilities caps;
  caps.set_host(HostName());
  caps.set_advertise_address(flags.advertise_address);
  caps.set_data_port_min(flags.data_port_min);
  caps.set_data_port_max(flags.data_port_max);
  caps.set_probe_port(flags.probe_port);
  caps.set_region(flags.region);
  caps.set_cpu_count(CpuCount());
  caps.set_version(WorkerVersion());
  caps.set_device_kind("cpu");
  caps.set_device_memory_bytes(PhysicalMemoryBytes());
  if (torch::cuda::is_available()) {
    caps.set_cuda_device_count(static_cast<uint32_t>(torch::cuda::device_count()));
    auto device = ProbeCudaDevice();
    if (device.ok()) {
      caps.set_device_kind("cuda:" + device->name);
      caps.set_device_memory_bytes(device->memory_bytes);
    } else {
      // LibTorch sees a GPU but the driver query failed: still a CUDA worker, size unknown.
      spdlog::warn("LibTorch reports CUDA, but the device could not be described: {}",
                   device.status().message());
      caps.set_device_kind("cuda:unknown");
      caps.set_device_memory_bytes(0);
    }
  }
  return caps;
}

}  // namespace geotrain::worker
