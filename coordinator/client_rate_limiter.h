// ClientRateLimiter: at most N calls per minute per client host, for the calls that cost the
// coordinator a write (Register, SubmitJob): a token bucket per host that holds N and refills N
// per minute, so a client may burst N at once and then one every 60/N seconds.
//
// Pure: the time comes from a Clock, so tests advance it instead of sleeping; its monotonic time,
// so that a wall-clock step neither refills nor drains a bucket. Thread-safe (one mutex). Memory
// is bounded: once kMaxClients hosts are tracked, the full (idle) buckets are dropped; if none is
// full, the oldest-refilled is.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/status.h"

namespace geotrain::coordinator {

class ClientRateLimiter {
 public:
  static constexpr size_t kMaxClients = 4096;

  // `per_minute` 0: unlimited. `what` names the calls in errors ("registrations"); `flag` the
  // option that sets the limit. `clock` must outlive the limiter.
  ClientRateLimiter(int64_t per_minute, std::string what, std::string flag, const Clock* clock);

  // OK and one token taken, or RESOURCE_EXHAUSTED naming the host and the limit.
  Status Acquire(const std::string& client_host);

  size_t tracked_clients() const;

 private:
  struct Bucket {
    double tokens = 0;
    int64_t refilled_ms = 0;
  };
  void RefillLocked(Bucket* bucket, int64_t now_ms) const;
  void PruneLocked(int64_t now_ms);

  const int64_t per_minute_;
  const std::string what_;
  const std::string flag_;
  const Clock* const clock_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Bucket> buckets_;
};

// The host of a gRPC peer string: "ipv4:10.0.0.1:5000" -> "10.0.0.1", "ipv6:[::1]:5000" ->
// "::1"; anything else (unix sockets, in-process) is returned whole.
std::string PeerHost(const std::string& grpc_peer);

}  // namespace geotrain::coordinator
