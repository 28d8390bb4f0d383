// LinkProbeRunner: carries out the coordinator's ProbeOrders on a thread of its own, so that a
// probe (seconds per target) never holds up the session's loop. One order at a time, its targets
// in turn; each finished order becomes one ProbeResults (one ProbeResult per target, in order)
// that the session collects with TakeResults and sends as WorkerMessage{probes}.
//
// Bounded: at most max_queued_orders wait (a new one drops the oldest waiting, logged), and at
// most max_unsent_results finished orders wait for a session (the oldest go first, logged).
// Zero fields of an order take the defaults below; larger ones are clamped to the limits.
//
// Threads: the constructor starts the probe thread; the destructor cancels the probe under way
// (it ends at its next ping or chunk, or at one socket timeout), drops what waits and joins.
// Submit and TakeResults may be called from any thread; `on_results` runs on the probe thread,
// with no lock held, each time an order's results are ready.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "geotrain/v1/coordinator.pb.h"

namespace geotrain::worker {

struct LinkProbeRunnerOptions {
  size_t max_queued_orders = 4;
  size_t max_unsent_results = 16;
  uint64_t default_max_bytes = 16ull << 20;  // an order's max_bytes 0
  uint32_t default_max_ms = 2000;            // an order's max_milliseconds 0
  uint32_t default_streams = 1;              // an order's streams 0
  uint32_t max_ms_limit = 60000;             // larger max_milliseconds are clamped
  size_t max_targets = 256;                  // targets past these are answered with an error
};

// Measures one target; ProbeLink in the daemon, something simpler in tests. `cancel` becomes true
// when the runner is being destroyed.
using ProbeFunction = std::function<geotrain::v1::ProbeResult(
    const geotrain::v1::ProbeTarget& target, uint64_t max_bytes, uint32_t max_ms, uint32_t streams,
    const std::atomic<bool>* cancel)>;

// ProbeLink (worker/link_probe_client.h) with its default options and `cancel`.
ProbeFunction RealLinkProbe();

class LinkProbeRunner {
 public:
  LinkProbeRunner(LinkProbeRunnerOptions options, std::function<void()> on_results,
                  ProbeFunction probe = RealLinkProbe());
  ~LinkProbeRunner();
  LinkProbeRunner(const LinkProbeRunner&) = delete;
  LinkProbeRunner& operator=(const LinkProbeRunner&) = delete;

  void Submit(geotrain::v1::ProbeOrder order);
  // Every finished order's results not yet taken, oldest first.
  std::vector<geotrain::v1::ProbeResults> TakeResults();

 private:
  void Loop();
  geotrain::v1::ProbeResults Run(const geotrain::v1::ProbeOrder& order);

  const LinkProbeRunnerOptions options_;
  const std::function<void()> on_results_;
  const ProbeFunction probe_;
  std::atomic<bool> stopping_{false};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<geotrain::v1::ProbeOrder> orders_;
  std::deque<geotrain::v1::ProbeResults> results_;

  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace geotrain::worker
