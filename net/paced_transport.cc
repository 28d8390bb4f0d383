#include "net/paced_transport.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace geotrain::net {
namespace {

using Clock = std::chrono::steady_clock;

// One emulated link: when its last queued bit leaves.
class Link {
 public:
  // Reserves the link for `bytes` after what is queued; returns when they will have left.
  Clock::time_point Reserve(uint64_t bytes, double bits_per_second) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto start = std::max(Clock::now(), free_at_);
    free_at_ = start + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(8.0 * bytes / bits_per_second));
    return free_at_;
  }

 private:
  std::mutex mu_;
  Clock::time_point free_at_{};
};

class PacedTransport final : public Transport {
 public:
  PacedTransport(std::unique_ptr<Transport> inner, double megabits_per_second)
      : inner_(std::move(inner)),
        bits_per_second_(megabits_per_second * 1e6),
        mbit_(megabits_per_second) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }

  Status Send(int peer, Span<const uint8_t> frame, Timeout timeout, uint64_t raw_bytes) override {
    const auto start = Clock::now();
    GEOTRAIN_RETURN_IF_ERROR(inner_->Send(peer, frame, timeout, raw_bytes));
    return WaitFor(LinkTo(peer).Reserve(frame.size(), bits_per_second_), start, timeout,
                   "send to rank " + std::to_string(peer), frame.size());
  }

  Status Recv(int peer, std::vector<uint8_t>* frame, Timeout timeout) override {
    return inner_->Recv(peer, frame, timeout);
  }

  Status AllReduceSum(Span<float> values, Timeout timeout) override {
    const auto start = Clock::now();
    GEOTRAIN_RETURN_IF_ERROR(inner_->AllReduceSum(values, timeout));
    const int w = size();
    const uint64_t sent = w > 1 ? 2 * (w - 1) * values.size() * sizeof(float) / w : 0;
    return WaitFor(collectives_.Reserve(sent, bits_per_second_), start, timeout, "all-reduce",
                   sent);
  }

  StatusOr<std::vector<std::vector<uint8_t>>> AllGather(Span<const uint8_t> mine,
                                                        Timeout timeout) override {
    const auto start = Clock::now();
    auto result = inner_->AllGather(mine, timeout);
    if (!result.ok()) return result;
    const uint64_t sent = static_cast<uint64_t>(size() - 1) * mine.size();
    GEOTRAIN_RETURN_IF_ERROR(
        WaitFor(collectives_.Reserve(sent, bits_per_second_), start, timeout, "all-gather", sent));
    return result;
  }

  StatusOr<std::vector<std::vector<uint8_t>>> AllToAll(
      const std::vector<std::vector<uint8_t>>& to_each_rank, Timeout timeout) override {
    const auto start = Clock::now();
    auto result = inner_->AllToAll(to_each_rank, timeout);
    if (!result.ok()) return result;
    uint64_t sent = 0;
    for (size_t r = 0; r < to_each_rank.size(); ++r) {
      if (static_cast<int>(r) != rank()) sent += to_each_rank[r].size();
    }
    GEOTRAIN_RETURN_IF_ERROR(
        WaitFor(collectives_.Reserve(sent, bits_per_second_), start, timeout, "all-to-all", sent));
    return result;
  }

  Status Barrier(Timeout timeout) override { return inner_->Barrier(timeout); }
  LinkStats& link_stats() override { return inner_->link_stats(); }

 private:
  Link& LinkTo(int peer) {
    std::lock_guard<std::mutex> lock(mu_);
    return links_[peer];  // std::unordered_map never moves its elements
  }

  // Sleeps until `done`, or fails once `timeout` after `start` comes first.
  Status WaitFor(Clock::time_point done, Clock::time_point start, Timeout timeout,
                 const std::string& what, uint64_t bytes) const {
    const auto limit = start + timeout;
    if (done <= limit) {
      std::this_thread::sleep_until(done);
      return OkStatus();
    }
    std::this_thread::sleep_until(limit);
    return Status(StatusCode::kDeadlineExceeded,
                  what + ": " + std::to_string(bytes) + " bytes on the emulated " + MegabitText() +
                      " Mbit/s link need longer than the timeout of " +
                      std::to_string(timeout.count()) + " ms");
  }

  std::string MegabitText() const {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", mbit_);
    return text;
  }

  std::unique_ptr<Transport> inner_;
  const double bits_per_second_;
  const double mbit_;
  std::mutex mu_;
  std::unordered_map<int, Link> links_;
  Link collectives_;
};

}  // namespace

std::unique_ptr<Transport> PaceTransport(std::unique_ptr<Transport> inner,
                                         double megabits_per_second) {
  return std::make_unique<PacedTransport>(std::move(inner), megabits_per_second);
}

}  // namespace geotrain::net
