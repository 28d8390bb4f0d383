// ManualClock: the Clock (common/clock.h) of every test, moving only when told, so that
// deadlines, throttles and back-off are crossed by advancing it rather than by sleeping.
//
// Wall (Unix) time and monotonic time advance together when time passes (AdvanceMs, SleepMs);
// StepWallMs moves the wall clock alone, either way, as an NTP step does. Monotonic time starts
// at kStartMonotonicMs, far from any Unix time of the tests, so that code reading one scale
// where it meant the other shows up in their assertions.
//
// Thread-safe: a test may advance it while the code under test reads it on other threads.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "common/clock.h"

namespace geotrain::testing {

class ManualClock final : public Clock {
 public:
  // 2023-11-14T22:13:20Z.
  static constexpr int64_t kDefaultStartUnixMs = 1'700'000'000'000;
  static constexpr int64_t kStartMonotonicMs = 1'000'000'000;

  explicit ManualClock(int64_t start_unix_ms = kDefaultStartUnixMs) : unix_ms_(start_unix_ms) {}

  int64_t NowUnixMs() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return unix_ms_;
  }
  int64_t NowMonotonicMs() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return monotonic_ms_;
  }
  // Returns at once, time having passed: both clocks move by `ms` (if positive), and sleeps()
  // records it.
  void SleepMs(int64_t ms) override {
    std::lock_guard<std::mutex> lock(mu_);
    sleeps_.push_back(ms);
    if (ms <= 0) return;
    unix_ms_ += ms;
    monotonic_ms_ += ms;
  }

  // Time passes: both clocks move by `ms`. A negative `ms` moves both back, which a real
  // monotonic clock never does: for tests of code that guards against it all the same.
  void AdvanceMs(int64_t ms) {
    std::lock_guard<std::mutex> lock(mu_);
    unix_ms_ += ms;
    monotonic_ms_ += ms;
  }
  // The wall clock is stepped by `delta_ms` (forwards or back); no time passes.
  void StepWallMs(int64_t delta_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    unix_ms_ += delta_ms;
  }

  // Every SleepMs argument so far, in order.
  std::vector<int64_t> sleeps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sleeps_;
  }

 private:
  mutable std::mutex mu_;
  int64_t unix_ms_;
  int64_t monotonic_ms_ = kStartMonotonicMs;
  std::vector<int64_t> sleeps_;
};

}  // namespace geotrain::testing
