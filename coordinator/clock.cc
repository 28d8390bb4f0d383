#include "coordinator/clock.h"

#include <chrono>

namespace geotrain::coordinator {
namespace {

class WallClock final : public Clock {
 public:
  int64_t NowUnixMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

Clock& SystemClock() {
  static WallClock clock;
  return clock;
}

}  // namespace geotrain::coordinator
