#include "coordinator/probe_scheduler.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "common/link_estimate.h"

namespace geotrain::coordinator {
namespace {

constexpr uint64_t kMaxProbeBytes = 1ull << 30;
constexpr uint32_t kMinProbeTimeoutMs = 100;
constexpr uint32_t kMaxProbeTimeoutMs = 600'000;
constexpr uint32_t kMaxProbeStreams = 64;

}  // namespace

Status ProbeSchedulerOptions::Validate() const {
  if (interval_ms < 0) {
    return InvalidArgument("--probe-interval: " + std::to_string(interval_ms / 1000) +
                           " is negative (0 probes only when a worker joins)");
  }
  if (max_bytes < kMinPassiveSampleBytes || max_bytes > kMaxProbeBytes) {
    return InvalidArgument("--probe-bytes: " + std::to_string(max_bytes) + " is outside [" +
                           std::to_string(kMinPassiveSampleBytes) + ", " +
                           std::to_string(kMaxProbeBytes) +
                           "] (fewer bytes measure latency, not bandwidth; more would hold a WAN "
                           "link for minutes)");
  }
  if (timeout_ms < kMinProbeTimeoutMs || timeout_ms > kMaxProbeTimeoutMs) {
    return InvalidArgument("--probe-timeout: " + std::to_string(timeout_ms) + " ms is outside [" +
                           std::to_string(kMinProbeTimeoutMs) + ", " +
                           std::to_string(kMaxProbeTimeoutMs) + "]");
  }
  if (streams < 1 || streams > kMaxProbeStreams) {
    return InvalidArgument("--probe-streams: " + std::to_string(streams) + " is outside [1, " +
                           std::to_string(kMaxProbeStreams) + "]");
  }
  if (max_targets < 1) return InvalidArgument("probe max_targets: must be at least 1");
  return OkStatus();
}

void ProbeScheduler::WorkerJoined(const std::string& worker_id) {
  joined_.insert(worker_id);
  outstanding_until_.erase(worker_id);
}

void ProbeScheduler::WorkerLeft(const std::string& worker_id) {
  joined_.erase(worker_id);
  outstanding_until_.erase(worker_id);
  for (auto it = urgent_.begin(); it != urgent_.end();) {
    it = it->first == worker_id || it->second == worker_id ? urgent_.erase(it) : std::next(it);
  }
}

void ProbeScheduler::ResultsReceived(const std::string& worker_id) {
  outstanding_until_.erase(worker_id);
}

std::vector<std::pair<std::string, v1::ProbeOrder>> ProbeScheduler::Due(
    const std::vector<ProbePeer>& peers, int64_t now_ms) {
  const auto is_peer = [&](const std::string& id) {
    return std::any_of(peers.begin(), peers.end(),
                       [&](const ProbePeer& p) { return p.worker_id == id; });
  };
  for (const std::string& joined : joined_) {
    if (!is_peer(joined)) continue;  // no probe server: measured passively only
    for (const ProbePeer& other : peers) {
      if (other.worker_id == joined) continue;
      urgent_.insert({joined, other.worker_id});
      urgent_.insert({other.worker_id, joined});
    }
  }
  joined_.clear();
  for (auto it = outstanding_until_.begin(); it != outstanding_until_.end();) {
    it = now_ms >= it->second ? outstanding_until_.erase(it) : std::next(it);
  }

  std::vector<std::pair<std::string, v1::ProbeOrder>> orders;
  for (const ProbePeer& src : peers) {
    if (outstanding(src.worker_id)) continue;
    // (not urgent, last ordered, position): urgent links first, then the longest unprobed.
    std::vector<std::tuple<bool, int64_t, size_t>> due;
    for (size_t i = 0; i < peers.size(); ++i) {
      const ProbePeer& dst = peers[i];
      if (dst.worker_id == src.worker_id) continue;
      const Link link{src.worker_id, dst.worker_id};
      const auto last = last_ordered_ms_.find(link);
      const int64_t last_ms =
          last == last_ordered_ms_.end() ? std::numeric_limits<int64_t>::min() : last->second;
      if (urgent_.count(link) != 0) {
        due.emplace_back(false, last_ms, i);
      } else if (options_.interval_ms > 0 && (last == last_ordered_ms_.end() ||
                                              now_ms - last->second >= options_.interval_ms)) {
        due.emplace_back(true, last_ms, i);
      }
    }
    if (due.empty()) continue;
    std::sort(due.begin(), due.end());
    if (due.size() > options_.max_targets) due.resize(options_.max_targets);

    v1::ProbeOrder order;
    order.set_max_bytes(options_.max_bytes);
    order.set_max_milliseconds(options_.timeout_ms);
    order.set_streams(options_.streams);
    for (const auto& [not_urgent, last_ms, i] : due) {
      const ProbePeer& dst = peers[i];
      v1::ProbeTarget* target = order.add_targets();
      target->set_worker_id(dst.worker_id);
      target->set_address(dst.address);
      target->set_port(dst.probe_port);
      const Link link{src.worker_id, dst.worker_id};
      // Ordered counts as probed: a link whose probe fails is retried after the interval, not
      // on every tick.
      last_ordered_ms_[link] = now_ms;
      urgent_.erase(link);
    }
    // Each target: the latency round trips plus a bulk transfer of at most timeout_ms.
    outstanding_until_[src.worker_id] =
        now_ms + static_cast<int64_t>(order.targets_size()) * 2 * options_.timeout_ms +
        kOrderSlackMs;
    orders.emplace_back(src.worker_id, std::move(order));
  }
  return orders;
}

}  // namespace geotrain::coordinator
