// allreduce: the uncompressed baseline — every step, each bucket of gradients is summed with a
// float32 ring all-reduce and divided by D. Nothing to keep between steps.
#include "runtime/dp_modes.h"
#include "runtime/dp_replicas.h"

namespace geotrain::runtime {
namespace {

class AllReduceSync final : public DataParallelSync {
 public:
  explicit AllReduceSync(const DataParallelContext& context) : replicas_(context) {}

  Status BeforeClip(int64_t step, bool) override {
    return replicas_.AverageGradients("allreduce", step);
  }
  Status AfterMoments(int64_t, bool) override { return OkStatus(); }
  Status AfterUpdate(int64_t, bool) override { return OkStatus(); }
  Status Flush() override { return OkStatus(); }
  std::map<std::string, at::Tensor> StateTensors() override { return {}; }
  Status LoadStateTensors(const std::map<std::string, at::Tensor>&) override { return OkStatus(); }
  TrafficCount traffic() const override { return replicas_.meter.totals(); }

 private:
  ReplicaGroup replicas_;
};

}  // namespace

std::unique_ptr<DataParallelSync> NewAllReduceSync(const DataParallelContext& context) {
  return std::make_unique<AllReduceSync>(context);
}

}  // namespace geotrain::runtime
