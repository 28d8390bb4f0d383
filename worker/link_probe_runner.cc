#include "worker/link_probe_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/clock.h"
#include "worker/link_probe_client.h"

namespace geotrain::worker {

ProbeFunction RealLinkProbe() {
  return [](const geotrain::v1::ProbeTarget& target, uint64_t max_bytes, uint32_t max_ms,
            uint32_t streams, const std::atomic<bool>* cancel) {
    LinkProbeClientOptions options;
    options.cancel = cancel;
    return ProbeLink(target, max_bytes, max_ms, streams, options);
  };
}

LinkProbeRunner::LinkProbeRunner(LinkProbeRunnerOptions options, std::function<void()> on_results,
                                 ProbeFunction probe)
    : options_(options),
      on_results_(std::move(on_results)),
      probe_(std::move(probe)),
      thread_([this] { Loop(); }) {}

LinkProbeRunner::~LinkProbeRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (!orders_.empty()) {
      spdlog::info("dropping {} link probe order(s) that had not started: shutting down",
                   orders_.size());
    }
    orders_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

void LinkProbeRunner::Submit(geotrain::v1::ProbeOrder order) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (orders_.size() >= std::max<size_t>(1, options_.max_queued_orders)) {
      spdlog::warn(
          "dropping a waiting link probe order ({} target(s)): {} orders already wait behind the "
          "one under way",
          orders_.front().targets_size(), orders_.size());
      orders_.pop_front();
    }
    orders_.push_back(std::move(order));
  }
  cv_.notify_all();
}

std::vector<geotrain::v1::ProbeResults> LinkProbeRunner::TakeResults() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<geotrain::v1::ProbeResults> taken(std::make_move_iterator(results_.begin()),
                                                std::make_move_iterator(results_.end()));
  results_.clear();
  return taken;
}

void LinkProbeRunner::Loop() {
  while (true) {
    geotrain::v1::ProbeOrder order;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !orders_.empty(); });
      if (stopping_) return;
      order = std::move(orders_.front());
      orders_.pop_front();
    }
    geotrain::v1::ProbeResults results = Run(order);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;  // cut short: not worth reporting
      if (results_.size() >= std::max<size_t>(1, options_.max_unsent_results)) {
        spdlog::warn("dropping the results of an old link probe order: no session took them");
        results_.pop_front();
      }
      results_.push_back(std::move(results));
    }
    if (on_results_) on_results_();
  }
}

geotrain::v1::ProbeResults LinkProbeRunner::Run(const geotrain::v1::ProbeOrder& order) {
  const uint64_t max_bytes = order.max_bytes() > 0 ? order.max_bytes() : options_.default_max_bytes;
  const uint32_t max_ms =
      std::min(order.max_milliseconds() > 0 ? order.max_milliseconds() : options_.default_max_ms,
               options_.max_ms_limit);
  const uint32_t streams = order.streams() > 0 ? order.streams() : options_.default_streams;
  spdlog::debug("probing {} link(s): up to {} bytes, {} ms, {} stream(s) each",
                order.targets_size(), max_bytes, max_ms, streams);
  geotrain::v1::ProbeResults results;
  for (int i = 0; i < order.targets_size(); ++i) {
    const geotrain::v1::ProbeTarget& target = order.targets(i);
    geotrain::v1::ProbeResult* result = results.add_results();
    if (static_cast<size_t>(i) >= options_.max_targets) {
      result->set_dst_worker_id(target.worker_id());
      result->set_error("probe to " + target.worker_id() + ": not run, the order names more than " +
                        std::to_string(options_.max_targets) + " targets");
      result->set_unix_ms(RealClock().NowUnixMs());
      continue;
    }
    if (stopping_) break;
    *result = probe_(target, max_bytes, max_ms, streams, &stopping_);
    if (!result->error().empty()) {
      spdlog::info("{}", result->error());
    } else {
      spdlog::debug("probe to {}: {:.3f} ms latency, {:.1f} MB/s ({} bytes in {:.3f} s)",
                    target.worker_id(), result->latency_seconds() * 1e3,
                    result->throughput_bytes_per_second() / 1e6, result->bytes(),
                    result->seconds());
    }
  }
  return results;
}

}  // namespace geotrain::worker
