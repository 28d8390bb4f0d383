// Clock: the control commands' view of time, a seam so that reconnect back-off and the throttled
// progress line are tested by advancing a clock instead of sleeping.
#pragma once

#include <cstdint>

namespace geotrain::cli {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds on a monotonic clock (intervals and deadlines only).
  virtual int64_t MonotonicMs() = 0;
  // Milliseconds since the Unix epoch (timestamps shown to the user).
  virtual int64_t UnixMs() = 0;
  virtual void SleepMs(int64_t ms) = 0;
};

// The process's clocks. The returned object lives for the whole program; thread-safe.
Clock& SystemClock();

}  // namespace geotrain::cli
