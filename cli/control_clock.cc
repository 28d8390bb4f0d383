#include "cli/control_clock.h"

#include <chrono>
#include <thread>

namespace geotrain::cli {
namespace {

class RealClock final : public Clock {
 public:
  int64_t MonotonicMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t UnixMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  void SleepMs(int64_t ms) override {
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
};

}  // namespace

Clock& SystemClock() {
  static RealClock* clock = new RealClock();  // never destroyed: usable during exit
  return *clock;
}

}  // namespace geotrain::cli
