#include "common/link_estimate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace geotrain {
namespace {

TEST(LinkEstimateTest, TheFirstSampleIsReturnedExactly) {
  LinkEstimate estimate;
  EXPECT_EQ(estimate.value(), 0);
  EXPECT_EQ(estimate.samples(), 0u);
  EXPECT_TRUE(estimate.Add(12.5e6));
  EXPECT_EQ(estimate.value(), 12.5e6);  // an uncorrected EWMA would say 2.5e6
  EXPECT_EQ(estimate.samples(), 1u);
}

TEST(LinkEstimateTest, AConstantSeriesStaysConstant) {
  LinkEstimate estimate;
  for (int i = 1; i <= 200; ++i) {
    estimate.Add(3e6);
    ASSERT_NEAR(estimate.value(), 3e6, 3e6 * 1e-12) << "after " << i << " samples";
  }
}

TEST(LinkEstimateTest, WeighsNewerSamplesMoreAsAdamDoes) {
  // m_2 = b (1 - b) x1 + (1 - b) x2, divided by 1 - b^2: (b x1 + x2) / (1 + b).
  LinkEstimate estimate;
  estimate.Add(100);
  estimate.Add(200);
  EXPECT_NEAR(estimate.value(), (0.8 * 100 + 200) / 1.8, 1e-9);

  // By hand for three samples and another decay.
  LinkEstimate half(0.5);
  double m = 0;
  const double samples[] = {10, 40, 20};
  for (int t = 1; t <= 3; ++t) {
    half.Add(samples[t - 1]);
    m = 0.5 * m + 0.5 * samples[t - 1];
    EXPECT_NEAR(half.value(), m / (1 - std::pow(0.5, t)), 1e-12);
  }

  // No memory at all: the newest sample.
  LinkEstimate newest(0);
  newest.Add(5);
  newest.Add(7);
  EXPECT_EQ(newest.value(), 7);
}

TEST(LinkEstimateTest, IgnoresSamplesThatAreNoThroughput) {
  LinkEstimate estimate;
  estimate.Add(1000);
  EXPECT_FALSE(estimate.Add(-1));
  EXPECT_FALSE(estimate.Add(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_FALSE(estimate.Add(std::numeric_limits<double>::infinity()));
  EXPECT_EQ(estimate.value(), 1000);
  EXPECT_EQ(estimate.samples(), 1u);
}

TEST(LinkEstimateTest, PassiveSamplesNeedEnoughBytesAndTime) {
  // Small frames measure latency, not bandwidth.
  EXPECT_FALSE(PassiveThroughputSample(kMinPassiveSampleBytes - 1, 0.01).has_value());
  EXPECT_FALSE(PassiveThroughputSample(kMinPassiveSampleBytes, 0).has_value());
  EXPECT_FALSE(PassiveThroughputSample(kMinPassiveSampleBytes, -1).has_value());
  EXPECT_FALSE(PassiveThroughputSample(1 << 20, std::numeric_limits<double>::quiet_NaN()));
  EXPECT_EQ(PassiveThroughputSample(64 * 1024, 0.5), 128 * 1024.0);
  EXPECT_EQ(PassiveThroughputSample(10'000'000, 2), 5e6);
}

TEST(LinkEstimateTest, CheckDecayNamesTheField) {
  EXPECT_TRUE(LinkEstimate::CheckDecay("links.decay", 0).ok());
  EXPECT_TRUE(LinkEstimate::CheckDecay("links.decay", LinkEstimate::kDefaultDecay).ok());
  const Status bad = LinkEstimate::CheckDecay("links.decay", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("links.decay: 1"), std::string::npos) << bad.message();
  EXPECT_NE(bad.message().find("outside [0, 1)"), std::string::npos) << bad.message();
  EXPECT_FALSE(LinkEstimate::CheckDecay("x", -0.1).ok());
  EXPECT_FALSE(LinkEstimate::CheckDecay("x", std::numeric_limits<double>::quiet_NaN()).ok());
}

}  // namespace
}  // namespace geotrain
