// Backoff: the doubling and its ceiling, jitter and seeds, and Wait() sleeping on the clock.
#include "common/backoff.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/manual_clock.h"

namespace geotrain {
namespace {

using std::chrono::milliseconds;
using testing::ManualClock;

TEST(BackoffTest, DoublesFrom200msToAFiveSecondCeiling) {
  BackoffOptions options;
  options.jitter = 0;
  Backoff backoff(options);
  std::vector<int64_t> delays;
  for (int i = 0; i < 8; ++i) delays.push_back(backoff.Next().count());
  EXPECT_EQ(delays, (std::vector<int64_t>{200, 400, 800, 1600, 3200, 5000, 5000, 5000}));
}

TEST(BackoffTest, ResetStartsOver) {
  BackoffOptions options;
  options.jitter = 0;
  Backoff backoff(options);
  backoff.Next();
  backoff.Next();
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), milliseconds(200));
  EXPECT_EQ(backoff.Next(), milliseconds(400));
}

TEST(BackoffTest, JitterStaysWithinItsShareOfTheNominalDelay) {
  BackoffOptions options;
  options.jitter = 0.5;
  options.seed = 7;
  Backoff backoff(options);
  const int64_t nominal[] = {200, 400, 800, 1600, 3200, 5000, 5000, 5000, 5000, 5000};
  bool varied = false;
  for (const int64_t n : nominal) {
    const int64_t delay = backoff.Next().count();
    EXPECT_GE(delay, n / 2);
    EXPECT_LE(delay, n);
    varied = varied || delay != n;
  }
  EXPECT_TRUE(varied);
}

TEST(BackoffTest, TheSameSeedGivesTheSameDelaysAndAnotherSeedOthers) {
  BackoffOptions options;
  options.seed = 3;
  Backoff a(options), b(options);
  options.seed = 4;
  Backoff c(options);
  bool differs = false;
  for (int i = 0; i < 10; ++i) {
    const milliseconds delay = a.Next();
    EXPECT_EQ(delay, b.Next());
    differs = differs || delay != c.Next();
  }
  EXPECT_TRUE(differs);
}

TEST(BackoffTest, AnUnsetSeedDrawsApart) {
  // Processes restarted together must not retry in step: without a seed each draws its own.
  BackoffOptions options;
  options.initial = std::chrono::milliseconds(1'000'000);
  options.max = options.initial;
  Backoff a(options), b(options);
  bool differs = false;
  for (int i = 0; i < 4 && !differs; ++i) differs = a.Next() != b.Next();
  EXPECT_TRUE(differs);
}

TEST(BackoffTest, WaitSleepsTheDelayOnTheClockCutToTheDeadline) {
  BackoffOptions options;
  options.jitter = 0;
  ManualClock clock;
  Backoff backoff(options, clock);
  EXPECT_EQ(backoff.Wait(), milliseconds(200));
  EXPECT_EQ(backoff.Wait(), milliseconds(400));
  // 800 ms due, 300 left before the caller's deadline: the pause ends on it.
  EXPECT_EQ(backoff.Wait(milliseconds(300)), milliseconds(300));
  // A deadline already passed: no pause at all.
  EXPECT_EQ(backoff.Wait(milliseconds(-5)), milliseconds(0));
  EXPECT_EQ(clock.sleeps(), (std::vector<int64_t>{200, 400, 300, 0}));
  EXPECT_EQ(clock.NowMonotonicMs(), ManualClock::kStartMonotonicMs + 900);
}

}  // namespace
}  // namespace geotrain
