// Clock: where the coordinator reads the time, so that heartbeat deadlines, stop timeouts and
// progress throttling are tested by advancing a ManualClock instead of sleeping.
//
// Times are milliseconds since the Unix epoch: they are persisted (job and worker records) and
// shown to users, so one wall-clock scale serves every purpose.
#pragma once

#include <atomic>
#include <cstdint>

namespace geotrain::coordinator {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowUnixMs() const = 0;
};

// The real clock (std::chrono::system_clock). Thread-safe; lives for the whole program.
Clock& SystemClock();

// A clock that moves only when told. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_unix_ms) : now_ms_(start_unix_ms) {}
  int64_t NowUnixMs() const override { return now_ms_.load(); }
  void AdvanceMs(int64_t ms) { now_ms_ += ms; }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace geotrain::coordinator
