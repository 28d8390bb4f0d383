// The real clock's two scales and its sleep, and the ManualClock every test uses: time passing
// moves both scales, a wall-clock step only Unix time.
#include "common/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "tests/testing/manual_clock.h"

namespace geotrain {
namespace {

using testing::ManualClock;

int64_t SystemUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(RealClockTest, UnixTimeIsTheSystemClockAndSleepWaitsOnTheMonotonicOne) {
  Clock& clock = RealClock();
  const int64_t before = SystemUnixMs();
  const int64_t unix_ms = clock.NowUnixMs();
  EXPECT_LE(before, unix_ms);
  EXPECT_LE(unix_ms, SystemUnixMs());

  const int64_t start = clock.NowMonotonicMs();
  clock.SleepMs(20);
  EXPECT_GE(clock.NowMonotonicMs() - start, 20);
  const int64_t after = clock.NowMonotonicMs();
  clock.SleepMs(0);
  clock.SleepMs(-5);  // returns at once
  EXPECT_GE(clock.NowMonotonicMs(), after);
  EXPECT_EQ(&RealClock(), &clock);  // one for the whole process
}

TEST(RealClockTest, NanosecondsShareTheMillisecondsOrigin) {
  Clock& clock = RealClock();
  const int64_t ms_before = clock.NowMonotonicMs();
  const int64_t ns = clock.NowMonotonicNs();
  const int64_t ms_after = clock.NowMonotonicMs();
  EXPECT_LE(ms_before, ns / 1'000'000);
  EXPECT_LE(ns / 1'000'000, ms_after);
  // Finer than milliseconds: some reading is not a whole number of them.
  int64_t reading = ns;
  for (int i = 0; i < 100 && reading % 1'000'000 == 0; ++i) reading = clock.NowMonotonicNs();
  EXPECT_NE(reading % 1'000'000, 0);
}

TEST(ManualClockTest, NanosecondsAreItsMilliseconds) {
  ManualClock clock;
  clock.AdvanceMs(7);
  EXPECT_EQ(clock.NowMonotonicNs(), clock.NowMonotonicMs() * 1'000'000);
}

TEST(ManualClockTest, TimePassingMovesBothScales) {
  ManualClock clock(1'000);
  EXPECT_EQ(clock.NowUnixMs(), 1'000);
  EXPECT_EQ(clock.NowMonotonicMs(), ManualClock::kStartMonotonicMs);
  clock.AdvanceMs(250);
  clock.SleepMs(50);
  EXPECT_EQ(clock.NowUnixMs(), 1'300);
  EXPECT_EQ(clock.NowMonotonicMs(), ManualClock::kStartMonotonicMs + 300);
  EXPECT_EQ(clock.sleeps(), (std::vector<int64_t>{50}));
}

TEST(ManualClockTest, AWallClockStepMovesOnlyUnixTime) {
  ManualClock clock;
  const int64_t monotonic = clock.NowMonotonicMs();
  clock.StepWallMs(3 * 3'600'000);
  EXPECT_EQ(clock.NowUnixMs(), ManualClock::kDefaultStartUnixMs + 3 * 3'600'000);
  clock.StepWallMs(-6 * 3'600'000);
  EXPECT_EQ(clock.NowUnixMs(), ManualClock::kDefaultStartUnixMs - 3 * 3'600'000);
  EXPECT_EQ(clock.NowMonotonicMs(), monotonic);
  EXPECT_TRUE(clock.sleeps().empty());
}

}  // namespace
}  // namespace geotrain
