// ExchangeTransport: the Transport contract (transport.h) built on one PeerExchange.
//
// Owns what both implementations share so that they cannot drift apart: argument checks, the
// per-peer and collective locks, deadlines, link counters, the collective algorithms
// (collectives.h) and the error policy (the first failure closes the links and is quoted by every
// later call). Internal to net/: factories return it as a Transport.
//
// Thread-safety: as promised in transport.h. Owns the exchange and closes it on destruction.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/deadline_lock.h"
#include "net/link_stats.h"
#include "net/peer_exchange.h"
#include "net/transport.h"

namespace geotrain::net {

class ExchangeTransport final : public Transport {
 public:
  explicit ExchangeTransport(std::unique_ptr<PeerExchange> exchange);
  ~ExchangeTransport() override;

  ExchangeTransport(const ExchangeTransport&) = delete;
  ExchangeTransport& operator=(const ExchangeTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  using Transport::Send;
  Status Send(int peer, Span<const uint8_t> frame, Timeout timeout, uint64_t raw_bytes) override;
  Status Recv(int peer, std::vector<uint8_t>* frame, Timeout timeout) override;
  Status AllReduceSum(Span<float> values, Timeout timeout) override;
  StatusOr<std::vector<std::vector<uint8_t>>> AllGather(Span<const uint8_t> mine,
                                                        Timeout timeout) override;
  StatusOr<std::vector<std::vector<uint8_t>>> AllToAll(
      const std::vector<std::vector<uint8_t>>& to_each_rank, Timeout timeout) override;
  Status Barrier(Timeout timeout) override;
  LinkStats& link_stats() override { return stats_; }

  // The implementation underneath, for its own factory's helpers (KillFakeRank finds the fake's
  // shared state through it).
  PeerExchange& exchange() { return *exchange_; }

 private:
  Status CheckPeer(const char* direction, int peer) const;
  static Status CheckTimeout(const char* operation, Timeout timeout);
  // OK while no operation has failed; afterwards the first failure, wrapped.
  Status Usable() const;
  // Records `failure` as the transport's first failure (if it is), closes the links, returns it.
  Status Fail(Status failure);
  // One timed, counted step; raw_sent is what Send declared (collectives: the frame size).
  Status CountedStep(Channel channel, const ExchangeStep& step, const Deadline& deadline,
                     uint64_t raw_sent);
  // Runs `algorithm(run_step)` (a collective, collectives.h) on `channel` under the collective
  // lock, the deadline and the error policy; Result is Status or StatusOr<...>.
  template <typename Result, typename Algorithm>
  Result RunCollective(const char* operation, Channel channel, Timeout timeout,
                       Algorithm&& algorithm);

  const std::unique_ptr<PeerExchange> exchange_;
  const int rank_;
  const int size_;
  LinkStats stats_;
  // One lock per peer and direction (unique_ptr: locks cannot move), one for collectives.
  std::vector<std::unique_ptr<DeadlineLock>> send_locks_;
  std::vector<std::unique_ptr<DeadlineLock>> recv_locks_;
  DeadlineLock collective_lock_;

  mutable std::mutex failure_mu_;
  Status first_failure_;  // guarded by failure_mu_
};

}  // namespace geotrain::net
