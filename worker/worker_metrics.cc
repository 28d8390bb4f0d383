#include "worker/worker_metrics.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

namespace geotrain::worker {
namespace {

using prometheus::Labels;

constexpr char kUnknown[] = "unknown";

const prometheus::Histogram::BucketBoundaries& StepBuckets() {
  static const prometheus::Histogram::BucketBoundaries buckets{0.05, 0.1, 0.25, 0.5, 1,
                                                               2.5,  5,   10,   30,  60};
  return buckets;
}

// Seconds and byte counts come from a child process: a negative or non-finite figure must not
// poison a counter (prometheus-cpp ignores negative increments, but not NaN).
void Add(prometheus::Counter& counter, double value) {
  if (std::isfinite(value) && value > 0) counter.Increment(value);
}

// The `kind` label; nullptr for a kind this build does not know (a newer child's).
const char* KindLabel(geotrain::v1::TrafficKind kind) {
  switch (kind) {
    case geotrain::v1::TRAFFIC_KIND_ACTIVATION:
      return "activation";
    case geotrain::v1::TRAFFIC_KIND_GRADIENT:
      return "gradient";
    case geotrain::v1::TRAFFIC_KIND_DATA_PARALLEL:
      return "data_parallel";
    case geotrain::v1::TRAFFIC_KIND_EMBEDDING:
      return "embedding";
    default:
      return nullptr;
  }
}

const char* DirectionLabel(bool sent) { return sent ? "sent" : "received"; }

}  // namespace

std::string DeviceLabel(const std::string& device_kind) {
  constexpr char kCudaPrefix[] = "cuda:";
  if (device_kind.rfind(kCudaPrefix, 0) == 0 && device_kind.size() > sizeof(kCudaPrefix) - 1) {
    return device_kind.substr(sizeof(kCudaPrefix) - 1);
  }
  return device_kind.empty() ? kUnknown : device_kind;
}

WorkerMetrics::WorkerMetrics(const Clock& clock, double link_decay)
    : clock_(clock),
      link_decay_(link_decay),
      registry_(std::make_shared<prometheus::Registry>()),
      info_(prometheus::BuildGauge()
                .Name("geotrain_worker_info")
                .Help("Always 1; the labels say which worker this is")
                .Register(*registry_)),
      connected_(prometheus::BuildGauge()
                     .Name("geotrain_worker_connected")
                     .Help("1 while the session with the coordinator is up")
                     .Register(*registry_)),
      tasks_(prometheus::BuildGauge()
                 .Name("geotrain_worker_tasks")
                 .Help("Tasks of this worker by state")
                 .Register(*registry_)),
      task_starts_(prometheus::BuildCounter()
                       .Name("geotrain_task_starts_total")
                       .Help("Tasks started (resumed: from a checkpoint after a failure)")
                       .Register(*registry_)),
      steps_(prometheus::BuildCounter()
                 .Name("geotrain_steps_total")
                 .Help("Steps completed")
                 .Register(*registry_)),
      step_duration_(prometheus::BuildHistogram()
                         .Name("geotrain_step_duration_seconds")
                         .Help("Step time")
                         .Register(*registry_)),
      phase_seconds_(prometheus::BuildCounter()
                         .Name("geotrain_phase_seconds_total")
                         .Help("Seconds per phase of the steps")
                         .Register(*registry_)),
      tokens_(prometheus::BuildCounter()
                  .Name("geotrain_tokens_total")
                  .Help("Tokens processed")
                  .Register(*registry_)),
      loss_(prometheus::BuildGauge()
                .Name("geotrain_loss")
                .Help("Training loss of the newest step (last stage only)")
                .Register(*registry_)),
      eval_loss_(prometheus::BuildGauge()
                     .Name("geotrain_eval_loss")
                     .Help("Newest evaluation loss (last stage only)")
                     .Register(*registry_)),
      eval_score_(prometheus::BuildGauge()
                      .Name("geotrain_eval_score")
                      .Help("Newest evaluation score of a sequence classifier: accuracy, f1 or "
                            "mcc (last stage only)")
                      .Register(*registry_)),
      peak_host_memory_(prometheus::BuildGauge()
                            .Name("geotrain_peak_host_memory_bytes")
                            .Help("Peak resident memory of the task process, as of its newest step")
                            .Register(*registry_)),
      raw_bytes_(prometheus::BuildCounter()
                     .Name("geotrain_raw_bytes_total")
                     .Help("Bytes before compression")
                     .Register(*registry_)),
      wire_bytes_(prometheus::BuildCounter()
                      .Name("geotrain_wire_bytes_total")
                      .Help("Bytes on the wire")
                      .Register(*registry_)),
      link_bits_(prometheus::BuildGauge()
                     .Name("geotrain_link_bits")
                     .Help("Bits per value of the codec sending kind to peer (32: uncompressed; "
                           "0: the codec has no bit width)")
                     .Register(*registry_)),
      relative_error_(prometheus::BuildGauge()
                          .Name("geotrain_compression_relative_error")
                          .Help("Mean ||x - x^|| / ||x|| of the newest step's frames sent")
                          .Register(*registry_)),
      link_throughput_(prometheus::BuildGauge()
                           .Name("geotrain_link_throughput_bytes_per_second")
                           .Help("Bias-corrected EWMA of passive transfer samples to or from peer")
                           .Register(*registry_)),
      link_latency_(prometheus::BuildGauge()
                        .Name("geotrain_link_latency_seconds")
                        .Help("Fastest recent small frame to or from peer")
                        .Register(*registry_)),
      checkpoint_duration_(prometheus::BuildGauge()
                               .Name("geotrain_checkpoint_duration_seconds")
                               .Help("Seconds the newest checkpoint write took")
                               .Register(*registry_)),
      checkpoint_timestamp_(prometheus::BuildGauge()
                                .Name("geotrain_checkpoint_last_timestamp_seconds")
                                .Help("Unix time of the newest checkpoint")
                                .Register(*registry_)),
      checkpoint_step_(prometheus::BuildGauge()
                           .Name("geotrain_checkpoint_step")
                           .Help("Step of the newest checkpoint")
                           .Register(*registry_)) {
  // Series that exist from the start, so dashboards show 0 rather than nothing and rate() sees
  // the first increment.
  connected_.Add({}).Set(0);
  tasks_.Add({{"state", "starting"}}).Set(0);
  tasks_.Add({{"state", "running"}}).Set(0);
  task_starts_.Add({{"resumed", "true"}});
  task_starts_.Add({{"resumed", "false"}});
}

void WorkerMetrics::SetIdentity(const std::string& worker_id, const std::string& region,
                                const std::string& device) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string id = worker_id.empty() ? kUnknown : worker_id;
  const Labels labels{{"worker", id},
                      {"region", region.empty() ? kUnknown : region},
                      {"device", device.empty() ? kUnknown : device}};
  if (info_series_ != nullptr && !info_.Has(labels)) {
    info_.Remove(info_series_);
    info_series_ = nullptr;
  }
  info_series_ = &info_.Add(labels);
  info_series_->Set(1);
  worker_id_ = id;
}

void WorkerMetrics::SetConnected(bool connected) {
  std::lock_guard<std::mutex> lock(mu_);
  connected_.Add({}).Set(connected ? 1 : 0);
}

void WorkerMetrics::SetTaskCounts(int starting, int running) {
  std::lock_guard<std::mutex> lock(mu_);
  tasks_.Add({{"state", "starting"}}).Set(starting);
  tasks_.Add({{"state", "running"}}).Set(running);
}

void WorkerMetrics::TaskStarted(bool resumed) {
  std::lock_guard<std::mutex> lock(mu_);
  task_starts_.Add({{"resumed", resumed ? "true" : "false"}}).Increment();
}

void WorkerMetrics::OnStep(
    const geotrain::v1::StepReport& report,
    const google::protobuf::RepeatedPtrField<geotrain::v1::Placement>& placements) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string stage = std::to_string(report.stage());
  const Labels by_stage{{"stage", stage}};
  steps_.Add(by_stage).Increment();
  prometheus::Histogram& duration = step_duration_.Add(by_stage, StepBuckets());
  if (std::isfinite(report.step_seconds()) && report.step_seconds() >= 0) {
    duration.Observe(report.step_seconds());
  }
  RecordPhases(stage, report.phases());
  Add(tokens_.Add(by_stage), static_cast<double>(report.tokens()));
  if (report.has_loss()) loss_.Add(by_stage).Set(report.loss());
  if (report.has_eval_loss()) eval_loss_.Add(by_stage).Set(report.eval_loss());
  if (report.has_eval_scores()) {
    const geotrain::v1::EvalScores& scores = report.eval_scores();
    eval_score_.Add({{"stage", stage}, {"score", "accuracy"}}).Set(scores.accuracy());
    eval_score_.Add({{"stage", stage}, {"score", "f1"}}).Set(scores.f1());
    eval_score_.Add({{"stage", stage}, {"score", "mcc"}}).Set(scores.mcc());
  }
  if (report.has_peak_host_memory_bytes()) {
    peak_host_memory_.Add(by_stage).Set(static_cast<double>(report.peak_host_memory_bytes()));
  }
  RecordTraffic(stage, report, placements);
  RecordErrors(stage, report);
  RecordCheckpoint(stage, report);
}

WorkerMetrics::Peer WorkerMetrics::ResolvePeer(
    const google::protobuf::RepeatedPtrField<geotrain::v1::Placement>& placements, int stage,
    int replica) {
  for (const geotrain::v1::Placement& placement : placements) {
    if (placement.stage() == stage && placement.replica() == replica) {
      return {placement.worker_id().empty() ? kUnknown : placement.worker_id(),
              placement.region().empty() ? kUnknown : placement.region()};
    }
  }
  return {kUnknown, kUnknown};
}

void WorkerMetrics::RecordPhases(const std::string& stage, const geotrain::v1::StepPhases& p) {
  const std::pair<const char*, double> phases[] = {
      {"forward", p.forward()},
      {"backward", p.backward()},
      {"encode", p.encode()},
      {"decode", p.decode()},
      {"send", p.send()},
      {"recv", p.recv()},
      {"sync", p.sync()},
      {"optimizer", p.optimizer()},
      {"data", p.data()},
      {"eval", p.eval()},
      {"checkpoint", p.checkpoint()},
  };
  // Every phase gets its series at the first step, zero or not, so the breakdown is complete.
  for (const auto& [phase, seconds] : phases) {
    Add(phase_seconds_.Add({{"stage", stage}, {"phase", phase}}), seconds);
  }
}

void WorkerMetrics::RecordTraffic(
    const std::string& stage, const geotrain::v1::StepReport& report,
    const google::protobuf::RepeatedPtrField<geotrain::v1::Placement>& placements) {
  struct Transfer {
    std::string region;
    uint64_t wire_bytes = 0;
    double seconds = 0;
  };
  // Summed over kinds per (peer, direction): the step's passive throughput samples.
  std::map<std::pair<std::string, std::string>, Transfer> transfers;
  // Per peer: its region and the fastest small frame the step saw.
  std::map<std::string, std::pair<std::string, std::optional<double>>> latencies;

  for (const geotrain::v1::LinkTraffic& traffic : report.traffic()) {
    const char* kind = KindLabel(traffic.kind());
    if (kind == nullptr) {
      spdlog::debug("step {} of stage {}: traffic of unknown kind {} left out of the metrics",
                    report.step(), stage, static_cast<int>(traffic.kind()));
      continue;
    }
    const Peer peer = ResolvePeer(placements, traffic.peer_stage(), traffic.peer_replica());
    const char* direction = DirectionLabel(traffic.sent());
    const Labels bytes_labels{{"stage", stage},         {"kind", kind},
                              {"direction", direction}, {"worker", worker_id_},
                              {"peer", peer.id},        {"peer_region", peer.region}};
    Add(raw_bytes_.Add(bytes_labels), static_cast<double>(traffic.raw_bytes()));
    Add(wire_bytes_.Add(bytes_labels), static_cast<double>(traffic.wire_bytes()));
    if (traffic.sent()) {
      link_bits_
          .Add({{"worker", worker_id_},
                {"peer", peer.id},
                {"peer_region", peer.region},
                {"kind", kind}})
          .Set(traffic.bits());
    }

    Transfer& transfer = transfers[{peer.id, direction}];
    transfer.region = peer.region;
    transfer.wire_bytes += traffic.wire_bytes();
    if (std::isfinite(traffic.seconds()) && traffic.seconds() > 0) {
      transfer.seconds += traffic.seconds();
    }
    auto& [region, fastest] = latencies[peer.id];
    region = peer.region;
    if (traffic.has_latency_seconds() && std::isfinite(traffic.latency_seconds()) &&
        traffic.latency_seconds() >= 0) {
      fastest = std::min(fastest.value_or(traffic.latency_seconds()), traffic.latency_seconds());
    }
  }

  for (const auto& [key, transfer] : transfers) {
    const std::optional<double> sample =
        PassiveThroughputSample(transfer.wire_bytes, transfer.seconds);
    if (!sample) continue;
    auto estimate = links_.try_emplace(key, link_decay_).first;
    estimate->second.Add(*sample);
    link_throughput_
        .Add({{"worker", worker_id_},
              {"peer", key.first},
              {"peer_region", transfer.region},
              {"direction", key.second}})
        .Set(estimate->second.value());
  }
  for (const auto& [peer, latency] : latencies) {
    if (!latency.second) continue;
    link_latency_.Add({{"worker", worker_id_}, {"peer", peer}, {"peer_region", latency.first}})
        .Set(*latency.second);
  }
}

void WorkerMetrics::RecordErrors(const std::string& stage, const geotrain::v1::StepReport& report) {
  // Only a stage that sent frames of a kind in this step has an error for it: the first stage
  // sends no gradients, the last no activations.
  bool sent_activations = false;
  bool sent_gradients = false;
  for (const geotrain::v1::LinkTraffic& traffic : report.traffic()) {
    if (!traffic.sent()) continue;
    sent_activations |= traffic.kind() == geotrain::v1::TRAFFIC_KIND_ACTIVATION;
    sent_gradients |= traffic.kind() == geotrain::v1::TRAFFIC_KIND_GRADIENT;
  }
  if (sent_activations) {
    relative_error_.Add({{"stage", stage}, {"kind", "activation"}})
        .Set(report.forward_relative_error());
  }
  if (sent_gradients) {
    relative_error_.Add({{"stage", stage}, {"kind", "gradient"}})
        .Set(report.backward_relative_error());
  }
}

void WorkerMetrics::RecordCheckpoint(const std::string& stage,
                                     const geotrain::v1::StepReport& report) {
  if (!report.checkpointed()) return;
  const Labels by_stage{{"stage", stage}};
  checkpoint_duration_.Add(by_stage).Set(report.phases().checkpoint());
  checkpoint_timestamp_.Add(by_stage).Set(static_cast<double>(clock_.NowUnixMs()) / 1000.0);
  checkpoint_step_.Add(by_stage).Set(static_cast<double>(report.step()));
}

}  // namespace geotrain::worker
