// ReplicaGroup: what every data-parallel mode holds — the stage's data-parallel transport, its
// timeout, the parameter buckets and the traffic counters — and the plain gradient all-reduce
// that the allreduce mode is made of and every other mode runs during the warm-up.
//
// Internal to runtime/. TrafficMeter may be updated from the cocktail exchange thread while the
// runtime thread reads traffic(); everything else belongs to the runtime thread.
#pragma once

#include <c10/util/Exception.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "net/transport.h"
#include "runtime/data_parallel_sync.h"
#include "runtime/dp_buckets.h"

namespace geotrain::runtime {

// Cumulative raw and wire bytes (a TrafficCount) of one rank. Wire bytes come from the transport's
// own counters (what it really sent, collective framing included), read before and after each
// operation, so they stay right whatever the codecs or the collective algorithms do.
class TrafficMeter {
 public:
  explicit TrafficMeter(net::Transport* transport) : transport_(transport) {}

  // Runs `op`, adding what this rank sent meanwhile to the wire bytes and, when it succeeds,
  // `raw_bytes` to the raw bytes. The transport must carry nothing else meanwhile.
  Status Measure(uint64_t raw_bytes, const std::function<Status()>& op);

  // For a collective the transport does not carry (NCCL): its bytes as the caller counts them.
  void Add(uint64_t raw_bytes, uint64_t wire_bytes) {
    raw_ += raw_bytes;
    wire_ += wire_bytes;
  }

  TrafficCount totals() const {
    TrafficCount count;
    count.raw_bytes = raw_.load();
    count.wire_bytes = wire_.load();
    return count;
  }

 private:
  uint64_t BytesSent() const;

  net::Transport* transport_;
  std::atomic<uint64_t> raw_{0};
  std::atomic<uint64_t> wire_{0};
};

struct ReplicaGroup {
  explicit ReplicaGroup(const DataParallelContext& context)
      : transport(context.group),
        device_group(context.device_group),
        timeout(context.timeout),
        meter(context.group) {
    for (const auto& group : context.groups) buckets.emplace_back(group);
  }

  int size() const { return transport->size(); }
  int rank() const { return transport->rank(); }
  int64_t elements() const;  // over every bucket

  // Replaces every gradient by its mean over the replicas (one all-reduce per bucket; missing
  // gradients count as zeros and are defined afterwards), over `device_group` on the gradients'
  // device when there is one, else over `transport` on the host. Errors read
  // "<mode> step <step>: all-reduce of group <g>: ...".
  Status AverageGradients(const char* mode, int64_t step);

  net::Transport* transport;
  net::DeviceAllReduce* device_group;  // may be null
  net::Timeout timeout;
  std::vector<ParameterBucket> buckets;
  TrafficMeter meter;
};

// Runs `body`, returning a c10::Error that LibTorch throws (a tensor on a device or in a dtype
// the copies cannot handle, memory exhausted) as an INTERNAL status prefixed with `context`.
template <typename Body>
Status CatchTorchErrors(const std::string& context, Body&& body) {
  try {
    return body();
  } catch (const c10::Error& e) {
    return Internal(context + ": " + e.what_without_backtrace());
  }
}

// "<mode> step <step>": the prefix of every error a hook returns.
std::string StepContext(const char* mode, int64_t step);

}  // namespace geotrain::runtime
