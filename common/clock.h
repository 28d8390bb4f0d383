// Clock: where the control plane reads the time and sleeps, so that heartbeat deadlines,
// timeouts, throttles and back-off are tested by advancing a ManualClock
// (tests/testing/manual_clock.h) instead of sleeping.
//
// Two scales, for two purposes that must not be mixed:
// - Unix time (NowUnixMs): milliseconds since the epoch, for timestamps that are stored or shown
//   (job and worker records, events, log lines). It follows the system's wall clock, so it may
//   jump either way at any moment (an NTP step, an operator setting the date).
// - Monotonic time (NowMonotonicMs): milliseconds since an arbitrary origin, never stepped and
//   never going back. Every interval, timeout and deadline ("now - last > timeout") is computed
//   on it, so that a wall-clock step can neither declare every worker dead at once nor keep a
//   dead one alive. Its values mean nothing outside this process: never store or send them.
//
// Implementations are thread-safe.
#pragma once

#include <cstdint>

namespace geotrain {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowUnixMs() const = 0;
  virtual int64_t NowMonotonicMs() const = 0;
  // Monotonic time in nanoseconds, on NowMonotonicMs's origin, for intervals too short for
  // milliseconds (a ping's round trip, a probe's transfer). A clock without finer time (a
  // ManualClock) answers NowMonotonicMs in nanoseconds.
  virtual int64_t NowMonotonicNs() const { return NowMonotonicMs() * 1'000'000; }
  // Blocks the calling thread for `ms` of monotonic time; returns at once when `ms` <= 0.
  virtual void SleepMs(int64_t ms) = 0;
};

// The process's real clocks: std::chrono::system_clock, steady_clock and this thread's sleep.
// The object lives for the whole program, exit included (it is never destroyed).
Clock& RealClock();

}  // namespace geotrain
