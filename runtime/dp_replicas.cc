#include "runtime/dp_replicas.h"

namespace geotrain::runtime {

Status TrafficMeter::Measure(uint64_t raw_bytes, const std::function<Status()>& op) {
  const uint64_t before = BytesSent();
  Status status = op();
  const uint64_t after = BytesSent();
  // A caller that resets the link counters meanwhile makes the delta meaningless; count nothing
  // rather than wrap around.
  if (after > before) wire_ += after - before;
  if (status.ok()) raw_ += raw_bytes;
  return status;
}

uint64_t TrafficMeter::BytesSent() const {
  uint64_t total = 0;
  for (const net::LinkCounters& link : transport_->link_stats().Snapshot()) {
    total += link.bytes_sent;
  }
  return total;
}

int64_t ReplicaGroup::elements() const {
  int64_t total = 0;
  for (const ParameterBucket& bucket : buckets) total += bucket.elements();
  return total;
}

Status ReplicaGroup::AverageGradients(const char* mode, int64_t step) {
  const std::string context = StepContext(mode, step);
  return CatchTorchErrors(context, [&]() -> Status {
    for (size_t g = 0; g < buckets.size(); ++g) {
      const ParameterBucket& bucket = buckets[g];
      bucket.DefineMissingGrads();
      if (device_group) {
        at::Tensor flat = bucket.GatherGradsOnDevice();
        GEOTRAIN_RETURN_IF_ERROR(
            device_group->AllReduceSum(flat, timeout)
                .WithContext(context + ": NCCL all-reduce of group " + std::to_string(g)));
        // NCCL's ring sends what the float32 ring would; none of it is on the WAN links.
        const uint64_t bytes = RingAllReduceBytes(bucket.elements(), size());
        meter.Add(bytes, bytes);
        flat.div_(size());
        bucket.ScatterGrads(flat);
        continue;
      }
      at::Tensor flat = bucket.GatherGrads();
      GEOTRAIN_RETURN_IF_ERROR(
          meter
              .Measure(RingAllReduceBytes(bucket.elements(), size()),
                       [&] {
                         return transport->AllReduceSum(
                             Span<float>(flat.data_ptr<float>(), flat.numel()), timeout);
                       })
              .WithContext(context + ": all-reduce of group " + std::to_string(g)));
      flat.div_(size());
      bucket.ScatterGrads(flat);
    }
    return OkStatus();
  });
}

std::string StepContext(const char* mode, int64_t step) {
  return std::string(mode) + " step " + std::to_string(step);
}

}  // namespace geotrain::runtime
