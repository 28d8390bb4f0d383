// WorkerMetrics: the worker daemon's Prometheus series (docs/metrics.md, "Worker (:9401)"), kept
// in a prometheus::Registry that main.cc hands to the MetricsEndpoint.
//
// The daemon's parts report what they see: the session whether it is connected and who the
// worker is once registered, the supervisor the task states and starts, and every step report of
// a task with that task's placements, which name the worker and region behind each peer rank of
// a link (`peer`, `peer_region`; "unknown" when the assignment does not list the rank). Series of
// a stage stay after its task ends; the throughput of a link to a peer is a LinkEstimate per
// (peer worker, direction) that lives as long as the daemon, across tasks.
//
// Thread-safe: task monitor threads and the main loop call it concurrently; one mutex, taken by
// every method and never held while calling out, so callers may hold their own locks.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "common/clock.h"
#include "common/link_estimate.h"
#include "geotrain/v1/job.pb.h"

namespace geotrain::worker {

// The `device` label of geotrain_worker_info from WorkerCapabilities.device_kind: "cpu", or the
// CUDA device's name ("cuda:NVIDIA H100 80GB HBM3" -> "NVIDIA H100 80GB HBM3").
std::string DeviceLabel(const std::string& device_kind);

class WorkerMetrics {
 public:
  // `clock` gives geotrain_checkpoint_last_timestamp_seconds its Unix time and must outlive the
  // metrics. `link_decay`: LinkEstimate's b.
  explicit WorkerMetrics(const Clock& clock = RealClock(),
                         double link_decay = LinkEstimate::kDefaultDecay);
  WorkerMetrics(const WorkerMetrics&) = delete;
  WorkerMetrics& operator=(const WorkerMetrics&) = delete;

  // What the MetricsEndpoint serves.
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // After each registration. The id becomes the `worker` label of the link series from then on;
  // geotrain_worker_info shows the newest identity only.
  void SetIdentity(const std::string& worker_id, const std::string& region,
                   const std::string& device);
  // Whether the session with the coordinator is up.
  void SetConnected(bool connected);
  // How many of this worker's tasks are STARTING and RUNNING now.
  void SetTaskCounts(int starting, int running);
  // A task's child was started; `resumed`: from a checkpoint (Assignment.resume).
  void TaskStarted(bool resumed);

  // One step report of a task, with the placements of that task's Assignment.
  void OnStep(const geotrain::v1::StepReport& report,
              const google::protobuf::RepeatedPtrField<geotrain::v1::Placement>& placements);

 private:
  struct Peer {
    std::string id;      // worker id, or "unknown"
    std::string region;  // or "unknown"
  };
  static Peer ResolvePeer(
      const google::protobuf::RepeatedPtrField<geotrain::v1::Placement>& placements, int stage,
      int replica);
  // The rest of OnStep, per part. Require mu_.
  void RecordPhases(const std::string& stage, const geotrain::v1::StepPhases& phases);
  void RecordTraffic(const std::string& stage, const geotrain::v1::StepReport& report,
                     const google::protobuf::RepeatedPtrField<geotrain::v1::Placement>& placements);
  void RecordErrors(const std::string& stage, const geotrain::v1::StepReport& report);
  void RecordCheckpoint(const std::string& stage, const geotrain::v1::StepReport& report);

  const Clock& clock_;
  const double link_decay_;
  const std::shared_ptr<prometheus::Registry> registry_;

  prometheus::Family<prometheus::Gauge>& info_;
  prometheus::Family<prometheus::Gauge>& connected_;
  prometheus::Family<prometheus::Gauge>& tasks_;
  prometheus::Family<prometheus::Counter>& task_starts_;
  prometheus::Family<prometheus::Counter>& steps_;
  prometheus::Family<prometheus::Histogram>& step_duration_;
  prometheus::Family<prometheus::Counter>& phase_seconds_;
  prometheus::Family<prometheus::Counter>& tokens_;
  prometheus::Family<prometheus::Gauge>& loss_;
  prometheus::Family<prometheus::Gauge>& eval_loss_;
  prometheus::Family<prometheus::Gauge>& eval_score_;
  prometheus::Family<prometheus::Gauge>& peak_host_memory_;
  prometheus::Family<prometheus::Counter>& raw_bytes_;
  prometheus::Family<prometheus::Counter>& wire_bytes_;
  prometheus::Family<prometheus::Gauge>& link_bits_;
  prometheus::Family<prometheus::Gauge>& relative_error_;
  prometheus::Family<prometheus::Gauge>& link_throughput_;
  prometheus::Family<prometheus::Gauge>& link_latency_;
  prometheus::Family<prometheus::Gauge>& checkpoint_duration_;
  prometheus::Family<prometheus::Gauge>& checkpoint_timestamp_;
  prometheus::Family<prometheus::Gauge>& checkpoint_step_;

  std::mutex mu_;
  std::string worker_id_ = "unknown";
  prometheus::Gauge* info_series_ = nullptr;  // the newest identity's
  // Throughput per (peer worker id, direction "sent" | "received").
  std::map<std::pair<std::string, std::string>, LinkEstimate> links_;
};

}  // namespace geotrain::worker
