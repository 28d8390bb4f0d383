// ClientRateLimiter with a manual clock: per-host buckets, refill, the error, the bound on memory.
#include <gtest/gtest.h>

#include "coordinator/client_rate_limiter.h"
#include "tests/testing/manual_clock.h"

namespace geotrain::coordinator {
namespace {

using geotrain::testing::ManualClock;

TEST(ClientRateLimiterTest, BurstsUpToTheLimitThenRefillsPerMinute) {
  ManualClock clock(1'000'000);
  ClientRateLimiter limiter(6, "registrations", "--max-registrations-per-minute", &clock);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(limiter.Acquire("10.0.0.1").ok()) << i;
  const Status refused = limiter.Acquire("10.0.0.1");
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("too many registrations from 10.0.0.1"), std::string::npos);
  EXPECT_NE(refused.message().find("at most 6 per minute (--max-registrations-per-minute)"),
            std::string::npos)
      << refused.message();
  // Another host has its own bucket.
  EXPECT_TRUE(limiter.Acquire("10.0.0.2").ok());
  // 6 per minute: one token every 10 s.
  clock.AdvanceMs(9'000);
  EXPECT_FALSE(limiter.Acquire("10.0.0.1").ok());
  clock.AdvanceMs(1'000);
  EXPECT_TRUE(limiter.Acquire("10.0.0.1").ok());
  EXPECT_FALSE(limiter.Acquire("10.0.0.1").ok());
  // A long pause refills to the burst, not beyond.
  clock.AdvanceMs(3'600'000);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(limiter.Acquire("10.0.0.1").ok()) << i;
  EXPECT_FALSE(limiter.Acquire("10.0.0.1").ok());
}

TEST(ClientRateLimiterTest, ZeroIsUnlimitedAndAClockGoingBackDoesNotRefill) {
  ManualClock clock(1'000'000);
  ClientRateLimiter unlimited(0, "job submissions", "--max-submissions-per-minute", &clock);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(unlimited.Acquire("h").ok());
  ClientRateLimiter limiter(1, "job submissions", "--max-submissions-per-minute", &clock);
  EXPECT_TRUE(limiter.Acquire("h").ok());
  clock.AdvanceMs(-120'000);
  EXPECT_FALSE(limiter.Acquire("h").ok());
}

TEST(ClientRateLimiterTest, AWallClockStepNeitherRefillsNorDrains) {
  ManualClock clock(1'000'000);
  ClientRateLimiter limiter(1, "registrations", "--max-registrations-per-minute", &clock);
  EXPECT_TRUE(limiter.Acquire("h").ok());
  clock.StepWallMs(3'600'000);  // an hour forwards, no time passed: still empty
  EXPECT_FALSE(limiter.Acquire("h").ok());
  clock.StepWallMs(-7'200'000);
  clock.AdvanceMs(60'000);  // a minute passed: one token back, whatever the wall clock says
  EXPECT_TRUE(limiter.Acquire("h").ok());
  EXPECT_FALSE(limiter.Acquire("h").ok());
}

TEST(ClientRateLimiterTest, MemoryIsBounded) {
  ManualClock clock(0);
  ClientRateLimiter limiter(2, "registrations", "--max-registrations-per-minute", &clock);
  for (size_t i = 0; i < ClientRateLimiter::kMaxClients + 100; ++i) {
    ASSERT_TRUE(limiter.Acquire("host-" + std::to_string(i)).ok());
  }
  EXPECT_LE(limiter.tracked_clients(), ClientRateLimiter::kMaxClients);
}

TEST(ClientRateLimiterTest, PeerHostDropsSchemeAndPort) {
  EXPECT_EQ(PeerHost("ipv4:10.1.2.3:45678"), "10.1.2.3");
  EXPECT_EQ(PeerHost("ipv6:[::1]:45678"), "::1");
  EXPECT_EQ(PeerHost("unix:/tmp/sock"), "unix:/tmp/sock");
}

}  // namespace
}  // namespace geotrain::coordinator
