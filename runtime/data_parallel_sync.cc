// CreateDataParallelSync: checks what every mode relies on, then builds the mode (dp_<mode>.cc).
// A stage without replicas gets a sync whose hooks do nothing: D = 1, or no transport at all
// (stage_links.h builds no data-parallel group for a job of one replica).
#include "runtime/data_parallel_sync.h"

#include "runtime/dp_modes.h"

namespace geotrain::runtime {
namespace {

class SingleReplicaSync final : public DataParallelSync {
 public:
  Status BeforeClip(int64_t, bool) override { return OkStatus(); }
  Status AfterMoments(int64_t, bool) override { return OkStatus(); }
  Status AfterUpdate(int64_t, bool) override { return OkStatus(); }
  Status Flush() override { return OkStatus(); }
  std::map<std::string, at::Tensor> StateTensors() override { return {}; }
  Status LoadStateTensors(const std::map<std::string, at::Tensor>&) override { return OkStatus(); }
  TrafficCount traffic() const override { return {}; }
};

Status CheckContext(const DataParallelContext& context) {
  if (context.timeout.count() < 0) return InvalidArgument("context.timeout: negative");
  for (size_t g = 0; g < context.groups.size(); ++g) {
    for (const models::NamedParameter& p : context.groups[g]) {
      if (!p.tensor.defined() || !at::isFloatingType(p.tensor.scalar_type())) {
        return InvalidArgument("context.groups[" + std::to_string(g) + "]: parameter '" + p.name +
                               "' is not a defined floating-point tensor");
      }
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<DataParallelSync>> CreateDataParallelSync(
    const DataParallelSettings& settings, DataParallelContext context) {
  const std::string mode = DataParallelModeName(settings.mode);
  GEOTRAIN_RETURN_IF_ERROR(CheckContext(context).WithContext(mode + " sync"));
  if (context.group == nullptr || context.group->size() == 1) {
    return std::unique_ptr<DataParallelSync>(new SingleReplicaSync);
  }
  if (context.device_group != nullptr && (settings.mode != DataParallelMode::kAllReduce ||
                                          context.device_group->size() != context.group->size())) {
    // The other modes compress on the host; a group of another size is a wiring bug.
    return InvalidArgument(mode +
                           " sync: context.device_group: only the allreduce mode sums on "
                           "the device, over the same replicas as context.group");
  }
  StatusOr<std::unique_ptr<DataParallelSync>> sync = InvalidArgument("unknown mode");
  switch (settings.mode) {
    case DataParallelMode::kAllReduce:
      sync = NewAllReduceSync(context);
      break;
    case DataParallelMode::kPowerSgd:
      sync = NewPowerSgdSync(settings, context);
      break;
    case DataParallelMode::kCocktail:
      sync = NewCocktailSync(settings, context);
      break;
    case DataParallelMode::kQuantizedMomentum:
      sync = NewQuantizedMomentumSync(settings, context);
      break;
  }
  if (!sync.ok()) return sync.status().WithContext(mode + " sync");
  return sync;
}

}  // namespace geotrain::runtime
