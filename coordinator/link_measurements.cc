// CoordinatorCore: the links between workers. Passive samples from step reports, the probes
// ProbeScheduler finds due and their results, and the link matrix the CLI and the metrics page
// read. The table is written through state_writes.cc (PersistLinks). Everything here takes or
// runs under mu_.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "coordinator/coordinator_core.h"

namespace geotrain::coordinator {

v1::LinkMatrix CoordinatorCore::GetLinks() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::Worker> live;
  for (const auto& [id, worker] : workers_) {
    if (worker->record.state() != v1::WORKER_STATE_DEAD) live.push_back(worker->record);
  }
  std::sort(live.begin(), live.end(),
            [](const v1::Worker& a, const v1::Worker& b) { return WorkerIdLess(a.id(), b.id()); });
  return links_.Matrix(live);
}

std::vector<LinkFigures> CoordinatorCore::ListLinkFigures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return links_.Export();
}

void CoordinatorCore::AddPassiveSamples(const JobEntry& entry, const std::string& worker_id,
                                        const v1::StepReport& report) {
  if (report.traffic_size() == 0) return;
  const int64_t now = clock_->NowUnixMs();
  for (const PassiveLinkSample& sample :
       PassiveLinkSamples(report, worker_id, entry.job.placements())) {
    links_.AddPassive(sample, now);
  }
}

void CoordinatorCore::ApplyProbeResults(WorkerEntry& worker, const v1::ProbeResults& results) {
  const std::string& src = worker.record.id();
  const int64_t now = clock_->NowUnixMs();
  probe_scheduler_.ResultsReceived(src);
  for (const v1::ProbeResult& result : results.results()) {
    if (result.dst_worker_id().empty() || result.dst_worker_id() == src ||
        FindWorker(result.dst_worker_id()) == nullptr) {
      spdlog::warn("worker {}: probe result for unknown worker '{}'; ignored", src,
                   result.dst_worker_id());
      continue;
    }
    if (!result.error().empty()) {
      spdlog::warn("probe {} -> {} failed: {}", src, result.dst_worker_id(), result.error());
    } else {
      spdlog::debug("probe {} -> {}: {:.0f} B/s, latency {:.6f} s ({} bytes in {:.3f} s)", src,
                    result.dst_worker_id(), result.throughput_bytes_per_second(),
                    result.latency_seconds(), result.bytes(), result.seconds());
    }
    links_.AddProbe(src, result, now);
  }
  // The worker is free again: its next due order goes out now rather than at the next tick.
  SendDueProbes();
}

void CoordinatorCore::SendDueProbes() {
  std::vector<ProbePeer> peers;
  for (const auto& [id, worker] : workers_) {
    const v1::WorkerCapabilities& caps = worker->record.capabilities();
    if (worker->session == nullptr || caps.probe_port() == 0 || caps.advertise_address().empty()) {
      continue;
    }
    peers.push_back({id, caps.advertise_address(), caps.probe_port()});
  }
  std::sort(peers.begin(), peers.end(), [](const ProbePeer& a, const ProbePeer& b) {
    return WorkerIdLess(a.worker_id, b.worker_id);
  });
  for (auto& [worker_id, order] : probe_scheduler_.Due(peers, clock_->NowMonotonicMs())) {
    WorkerEntry* worker = FindWorker(worker_id);
    v1::CoordinatorMessage message;
    *message.mutable_probe() = std::move(order);
    spdlog::debug("worker {}: probe order for {} links", worker_id, message.probe().targets_size());
    worker->session->Send(message);
  }
}

}  // namespace geotrain::coordinator
