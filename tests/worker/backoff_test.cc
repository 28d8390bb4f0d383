#include "worker/backoff.h"

#include <gtest/gtest.h>

#include <vector>

namespace geotrain::worker {
namespace {

using std::chrono::milliseconds;

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

}  // namespace
}  // namespace geotrain::worker
