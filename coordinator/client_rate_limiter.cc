#include "coordinator/client_rate_limiter.h"

#include <algorithm>

#include "common/io/host_port.h"

namespace geotrain::coordinator {

ClientRateLimiter::ClientRateLimiter(int64_t per_minute, std::string what, std::string flag,
                                     const Clock* clock)
    : per_minute_(per_minute), what_(std::move(what)), flag_(std::move(flag)), clock_(clock) {}

void ClientRateLimiter::RefillLocked(Bucket* bucket, int64_t now_ms) const {
  // A clock that steps back refills nothing rather than draining.
  const int64_t elapsed = std::max<int64_t>(0, now_ms - bucket->refilled_ms);
  bucket->tokens = std::min<double>(static_cast<double>(per_minute_),
                                    bucket->tokens + elapsed * (per_minute_ / 60000.0));
  bucket->refilled_ms = std::max(bucket->refilled_ms, now_ms);
}

void ClientRateLimiter::PruneLocked(int64_t now_ms) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    RefillLocked(&it->second, now_ms);
    it = it->second.tokens >= static_cast<double>(per_minute_) ? buckets_.erase(it) : std::next(it);
  }
  if (buckets_.size() < kMaxClients) return;
  const auto oldest = std::min_element(buckets_.begin(), buckets_.end(), [](auto& a, auto& b) {
    return a.second.refilled_ms < b.second.refilled_ms;
  });
  buckets_.erase(oldest);
}

Status ClientRateLimiter::Acquire(const std::string& client_host) {
  if (per_minute_ <= 0) return OkStatus();
  const int64_t now_ms = clock_->NowMonotonicMs();
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = buckets_.find(client_host);
  if (it == buckets_.end()) {
    if (buckets_.size() >= kMaxClients) PruneLocked(now_ms);
    it = buckets_.emplace(client_host, Bucket{static_cast<double>(per_minute_), now_ms}).first;
  }
  Bucket& bucket = it->second;
  RefillLocked(&bucket, now_ms);
  if (bucket.tokens < 1.0) {
    const int64_t wait_ms =
        static_cast<int64_t>((1.0 - bucket.tokens) * 60000.0 / static_cast<double>(per_minute_)) +
        1;
    return ResourceExhausted("too many " + what_ + " from " + client_host + ": at most " +
                             std::to_string(per_minute_) + " per minute (" + flag_ +
                             "); retry in " + std::to_string((wait_ms + 999) / 1000) + " s");
  }
  bucket.tokens -= 1.0;
  return OkStatus();
}

size_t ClientRateLimiter::tracked_clients() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return buckets_.size();
}

std::string PeerHost(const std::string& grpc_peer) {
  for (const std::string scheme : {"ipv4:", "ipv6:"}) {
    if (grpc_peer.rfind(scheme, 0) != 0) continue;
    const std::string address = grpc_peer.substr(scheme.size());
    // URL-escaped IPv6 zone ids and the like stay as they are: the host is only a map key.
    const StatusOr<io::HostPort> where = io::ParseHostPort(address, "peer");
    return where.ok() ? where->host : address;
  }
  return grpc_peer;
}

}  // namespace geotrain::coordinator
