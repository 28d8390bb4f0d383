#include "runtime/dp_backend.h"

namespace geotrain::runtime {
namespace {

DataParallelBackend Gloo(std::string* why, const std::string& reason) {
  if (why) *why = reason;
  return DataParallelBackend::kGloo;
}

}  // namespace

const char* DataParallelBackendName(DataParallelBackend backend) {
  return backend == DataParallelBackend::kNccl ? "nccl" : "gloo";
}

DataParallelBackend ChooseDataParallelBackend(const StageAssignment& a, std::string* why) {
  if (a.dp_size < 2) return Gloo(why, "the stage has no replicas");
  const StatusOr<DeviceName> device = ParseDeviceName(a.device);
  if (!device.ok() || !device->cuda) return Gloo(why, "device is " + a.device);
  if (a.compression.data_parallel.mode != DataParallelMode::kAllReduce) {
    return Gloo(why, std::string("data_parallel.mode is ") +
                         DataParallelModeName(a.compression.data_parallel.mode) +
                         " (its codecs run on the host)");
  }
  const int64_t world = static_cast<int64_t>(a.num_stages) * a.dp_size;
  if (a.stage < 0 || a.stage >= a.num_stages ||
      static_cast<int64_t>(a.rank_regions.size()) != world) {
    return Gloo(why, "the regions of the replicas are not known");
  }
  std::string region;
  for (int replica = 0; replica < a.dp_size; ++replica) {
    const std::string& of = a.rank_regions[static_cast<size_t>(replica) * a.num_stages + a.stage];
    if (of.empty()) {
      return Gloo(why, "the region of replica " + std::to_string(replica) + " is not known");
    }
    if (replica == 0) region = of;
    if (of != region) {
      return Gloo(why, "the replicas span regions " + region + " and " + of);
    }
  }
  if (why) {
    *why = "the " + std::to_string(a.dp_size) + " replicas of stage " + std::to_string(a.stage) +
           " are all in " + region;
  }
  return DataParallelBackend::kNccl;
}

}  // namespace geotrain::runtime
