// Deadline: the moment an operation must have finished by, and the budget it was given.
//
// A collective runs many point-to-point steps under one caller timeout, so each step waits only
// for what is left; the budget is kept to write errors in the caller's terms ("timed out after
// 5000 ms", not after whatever the last step had left). Immutable, so thread-safe.
#pragma once

#include <algorithm>
#include <chrono>

namespace geotrain::net {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Deadline(std::chrono::milliseconds budget)
      : budget_(std::max(budget, std::chrono::milliseconds(0))), at_(Clock::now() + budget_) {}

  std::chrono::milliseconds budget() const { return budget_; }
  Clock::time_point at() const { return at_; }
  bool Expired() const { return Clock::now() >= at_; }

  // Time left, rounded up to whole milliseconds so that a wait on it never ends early; 0 once
  // expired.
  std::chrono::milliseconds Remaining() const {
    const auto left = at_ - Clock::now();
    if (left <= Clock::duration::zero()) return std::chrono::milliseconds(0);
    return std::chrono::ceil<std::chrono::milliseconds>(left);
  }

 private:
  std::chrono::milliseconds budget_;
  Clock::time_point at_;
};

}  // namespace geotrain::net
