// ProbeScheduler: which link probes the coordinator orders, and when. Pure logic: the caller
// passes the time and the workers that can take part, and sends the orders it returns
// (CoordinatorMessage.probe) through the workers' sessions.
//
// - A worker that opens a session (new, reconnected or re-registered) gets its links measured at
//   once, both ways: it probes every other prober, and every other prober probes it.
// - Then, every `interval_ms` (0: never), each link is probed again, the link whose last probe
//   is oldest first.
// - A worker runs at most one order at a time, of at most `max_targets` targets; its next order
//   waits for its ProbeResults (or for the order's deadline, should the answer be lost).
// Only workers with a probe server (probe_port != 0) take part, at either end: a worker without
// one predates probes and is measured from training traffic alone.
//
// Not thread-safe: the core calls it under its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "geotrain/v1/coordinator.pb.h"

namespace geotrain::coordinator {

struct ProbeSchedulerOptions {
  // Seconds between two probes of the same link (--probe-interval); 0: probe only at joins.
  int64_t interval_ms = 300'000;
  // ProbeOrder.max_bytes per target (--probe-bytes).
  uint64_t max_bytes = 8ull << 20;
  // ProbeOrder.max_milliseconds per target (--probe-timeout).
  uint32_t timeout_ms = 3000;
  // ProbeOrder.streams, parallel TCP connections (--probe-streams).
  uint32_t streams = 4;
  // Targets per order: bounds how long one order keeps a worker busy (8 x 3 s by default).
  uint32_t max_targets = 8;

  // The first invalid field, named as its flag: "--probe-streams: 0 is outside [1, 64]".
  Status Validate() const;
};

// A worker that can take part in probes right now (connected, with a probe server).
struct ProbePeer {
  std::string worker_id;
  std::string address;  // WorkerCapabilities.advertise_address
  uint32_t probe_port = 0;
};

class ProbeScheduler {
 public:
  // An order's answer may be lost (a session breaking mid-order): after this much longer than
  // the order could take at most, the worker may get another one.
  static constexpr int64_t kOrderSlackMs = 30'000;

  explicit ProbeScheduler(const ProbeSchedulerOptions& options) : options_(options) {}

  // `worker_id` opened a session: its links to and from every other prober are due now, and an
  // order it had outstanding died with its old session.
  void WorkerJoined(const std::string& worker_id);
  // Its session ended: no order is outstanding any more, and links to and from it are not due
  // until it joins again.
  void WorkerLeft(const std::string& worker_id);
  // `worker_id` answered its order (whatever the results say): it may get the next one.
  void ResultsReceived(const std::string& worker_id);

  // The orders to send now, by worker, given the workers that can take part (`peers`: connected
  // with a probe server). Marks them outstanding and their links probed at `now_ms`, a monotonic
  // time (Clock::NowMonotonicMs): intervals and order deadlines must not jump with the wall clock.
  std::vector<std::pair<std::string, v1::ProbeOrder>> Due(const std::vector<ProbePeer>& peers,
                                                          int64_t now_ms);

  bool outstanding(const std::string& worker_id) const {
    return outstanding_until_.count(worker_id) != 0;
  }

 private:
  using Link = std::pair<std::string, std::string>;  // (src, dst)

  const ProbeSchedulerOptions options_;
  // Workers that joined since the last Due: their links become urgent there, where the other
  // probers are known.
  std::set<std::string> joined_;
  // Links due at once (joins), whatever their last probe.
  std::set<Link> urgent_;
  // When each link was last ordered; absent: never.
  std::map<Link, int64_t> last_ordered_ms_;
  // Workers with an order out, and until when it may run.
  std::map<std::string, int64_t> outstanding_until_;
};

}  // namespace geotrain::coordinator
