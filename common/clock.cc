#include "common/clock.h"

#include <chrono>
#include <thread>

namespace geotrain {
namespace {

template <typename SourceClock>
int64_t MillisecondsOf() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             SourceClock::now().time_since_epoch())
      .count();
}

class SystemClocks final : public Clock {
 public:
  int64_t NowUnixMs() const override { return MillisecondsOf<std::chrono::system_clock>(); }
  int64_t NowMonotonicMs() const override { return MillisecondsOf<std::chrono::steady_clock>(); }
  void SleepMs(int64_t ms) override {
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
};

}  // namespace

Clock& RealClock() {
  static SystemClocks* clock = new SystemClocks();  // never destroyed: usable during exit
  return *clock;
}

}  // namespace geotrain
