#include "net/exchange_transport.h"

#include <chrono>
#include <string>
#include <utility>

#include "net/collectives.h"

namespace geotrain::net {
namespace {

Status DeadlineExceeded(std::string message) {
  return Status(StatusCode::kDeadlineExceeded, std::move(message));
}

std::string Ms(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

const Status& StatusOf(const Status& status) { return status; }
template <typename T>
const Status& StatusOf(const StatusOr<T>& status_or) {
  return status_or.status();
}

// What a caller is told when another thread of this rank held the lock until its deadline.
Status LockTimedOut(const Deadline& deadline, const std::string& what,
                    const std::string& waiting_for) {
  return DeadlineExceeded(what + ": timed out after " + Ms(deadline.budget()) + " waiting for " +
                          waiting_for + " to finish");
}

}  // namespace

ExchangeTransport::ExchangeTransport(std::unique_ptr<PeerExchange> exchange)
    : exchange_(std::move(exchange)),
      rank_(exchange_->rank()),
      size_(exchange_->size()),
      stats_(size_) {
  for (int peer = 0; peer < size_; ++peer) {
    send_locks_.push_back(std::make_unique<DeadlineLock>());
    recv_locks_.push_back(std::make_unique<DeadlineLock>());
  }
}

ExchangeTransport::~ExchangeTransport() { exchange_->Close(); }

Status ExchangeTransport::CheckPeer(const char* direction, int peer) const {
  if (peer < 0 || peer >= size_) {
    return InvalidArgument(std::string(direction) + " rank " + std::to_string(peer) +
                           ": no such rank in a group of " + std::to_string(size_));
  }
  if (peer == rank_) {
    return InvalidArgument(std::string(direction) + " rank " + std::to_string(peer) +
                           ": that is this rank");
  }
  return OkStatus();
}

Status ExchangeTransport::CheckTimeout(const char* operation, Timeout timeout) {
  if (timeout.count() < 0) {
    return InvalidArgument(std::string(operation) + ": negative timeout " + Ms(timeout));
  }
  return OkStatus();
}

Status ExchangeTransport::Usable() const {
  std::lock_guard<std::mutex> lock(failure_mu_);
  if (first_failure_.ok()) return OkStatus();
  return FailedPrecondition("transport closed after an earlier failure (" +
                            first_failure_.ToString() + "); rebuild the group");
}

Status ExchangeTransport::Fail(Status failure) {
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (first_failure_.ok()) first_failure_ = failure;
  }
  // Close every link now rather than leave peers to discover our state by their own timeouts.
  exchange_->Close();
  return failure;
}

Status ExchangeTransport::CountedStep(Channel channel, const ExchangeStep& step,
                                      const Deadline& deadline, uint64_t raw_sent) {
  const auto start = std::chrono::steady_clock::now();
  GEOTRAIN_RETURN_IF_ERROR(exchange_->Exchange(channel, step, deadline));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (step.send_to != kNoPeer) stats_.RecordSend(step.send_to, step.send.size(), raw_sent, seconds);
  if (step.recv_from != kNoPeer) {
    // Frames' raw size is the decoder's to declare; collectives move unencoded bytes.
    const uint64_t raw_received = channel == Channel::kFrames ? 0 : step.recv->size();
    stats_.RecordRecv(step.recv_from, step.recv->size(), raw_received, seconds);
  }
  return OkStatus();
}

Status ExchangeTransport::Send(int peer, Span<const uint8_t> frame, Timeout timeout,
                               uint64_t raw_bytes) {
  GEOTRAIN_RETURN_IF_ERROR(CheckPeer("send to", peer));
  GEOTRAIN_RETURN_IF_ERROR(CheckTimeout("send", timeout));
  const Deadline deadline(timeout);
  const DeadlineLock::Holder lock = send_locks_[peer]->LockBefore(deadline);
  if (!lock.held()) {
    return LockTimedOut(deadline, "send to rank " + std::to_string(peer),
                        "another thread's send to that rank");
  }
  GEOTRAIN_RETURN_IF_ERROR(Usable());
  ExchangeStep step;
  step.send_to = peer;
  step.send = frame;
  Status status = CountedStep(Channel::kFrames, step, deadline, raw_bytes);
  return status.ok() ? status : Fail(std::move(status));
}

Status ExchangeTransport::Recv(int peer, std::vector<uint8_t>* frame, Timeout timeout) {
  GEOTRAIN_RETURN_IF_ERROR(CheckPeer("recv from", peer));
  GEOTRAIN_RETURN_IF_ERROR(CheckTimeout("recv", timeout));
  if (frame == nullptr) {
    return InvalidArgument("recv from rank " + std::to_string(peer) + ": null frame");
  }
  const Deadline deadline(timeout);
  const DeadlineLock::Holder lock = recv_locks_[peer]->LockBefore(deadline);
  if (!lock.held()) {
    return LockTimedOut(deadline, "recv from rank " + std::to_string(peer),
                        "another thread's recv from that rank");
  }
  GEOTRAIN_RETURN_IF_ERROR(Usable());
  ExchangeStep step;
  step.recv_from = peer;
  step.recv = frame;
  Status status = CountedStep(Channel::kFrames, step, deadline, 0);
  return status.ok() ? status : Fail(std::move(status));
}

template <typename Result, typename Algorithm>
Result ExchangeTransport::RunCollective(const char* operation, Channel channel, Timeout timeout,
                                        Algorithm&& algorithm) {
  GEOTRAIN_RETURN_IF_ERROR(CheckTimeout(operation, timeout));
  const Deadline deadline(timeout);
  const DeadlineLock::Holder lock = collective_lock_.LockBefore(deadline);
  if (!lock.held()) return LockTimedOut(deadline, operation, "another thread's collective");
  GEOTRAIN_RETURN_IF_ERROR(Usable());
  const RunStep run_step = [this, channel, &deadline](const ExchangeStep& step) {
    return CountedStep(channel, step, deadline, step.send.size());
  };
  Result result = algorithm(run_step);
  if (!result.ok()) return Fail(StatusOf(result).WithContext(operation));
  return result;
}

Status ExchangeTransport::AllReduceSum(Span<float> values, Timeout timeout) {
  return RunCollective<Status>(
      "all_reduce_sum", Channel::kAllReduce, timeout,
      [&](const RunStep& run_step) { return RingAllReduceSum(rank_, size_, values, run_step); });
}

StatusOr<std::vector<std::vector<uint8_t>>> ExchangeTransport::AllGather(Span<const uint8_t> mine,
                                                                         Timeout timeout) {
  using Result = StatusOr<std::vector<std::vector<uint8_t>>>;
  return RunCollective<Result>(
      "all_gather", Channel::kAllGather, timeout,
      [&](const RunStep& run_step) { return RingAllGather(rank_, size_, mine, run_step); });
}

StatusOr<std::vector<std::vector<uint8_t>>> ExchangeTransport::AllToAll(
    const std::vector<std::vector<uint8_t>>& to_each_rank, Timeout timeout) {
  if (to_each_rank.size() != static_cast<size_t>(size_)) {
    return InvalidArgument("all_to_all: " + std::to_string(to_each_rank.size()) +
                           " buffers for a group of " + std::to_string(size_));
  }
  using Result = StatusOr<std::vector<std::vector<uint8_t>>>;
  return RunCollective<Result>("all_to_all", Channel::kAllToAll, timeout,
                               [&](const RunStep& run_step) {
                                 return PairwiseAllToAll(rank_, size_, to_each_rank, run_step);
                               });
}

Status ExchangeTransport::Barrier(Timeout timeout) {
  return RunCollective<Status>("barrier", Channel::kBarrier, timeout, [&](const RunStep& run_step) {
    return DisseminationBarrier(rank_, size_, run_step);
  });
}

}  // namespace geotrain::net
