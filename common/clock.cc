#include "common/clock.h"

#include <chrono>
#include <thread>

namespace geotrain {
namespace {

template <typename SourceClock, typename Unit = std::chrono::milliseconds>
int64_t TicksOf() {
  return std::chrono::duration_cast<Unit>(SourceClock::now().time_since_epoch()).count();
}

class SystemClocks final : public Clock {
 public:
  int64_t NowUnixMs() const override { return TicksOf<std::chrono::system_clock>(); }
  int64_t NowMonotonicMs() const override { return TicksOf<std::chrono::steady_clock>(); }
  int64_t NowMonotonicNs() const override {
    return TicksOf<std::chrono::steady_clock, std::chrono::nanoseconds>();
  }
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
