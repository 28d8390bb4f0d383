// Tests of the CocktailSGD mask (cocktail_mask.h) and the top-k threshold it feeds
// (magnitude_threshold.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/hash_random.h"
#include "compression/cocktail_mask.h"
#include "compression/magnitude_threshold.h"
#include "compression/synthetic_tensors.h"

namespace geotrain::compression {
namespace {

std::vector<uint32_t> Indices(const CocktailMask& mask, uint64_t n) {
  std::vector<uint32_t> out;
  mask.SampledIndices(n, &out);
  return out;
}

TEST(CocktailMask, StrideIsTheRoundedInverseOfP) {
  EXPECT_EQ(RollingStride(0.1), 10u);
  EXPECT_EQ(RollingStride(0.3), 3u);
  EXPECT_EQ(RollingStride(0.6), 2u);
  EXPECT_EQ(RollingStride(1.0), 1u);
  EXPECT_EQ(RollingStride(1e-300), uint64_t{1} << 62);
  EXPECT_EQ(SeededThreshold(1.0), CocktailMask::kMaxThreshold);
  EXPECT_EQ(SeededThreshold(0.25), uint64_t{1} << 30);
}

TEST(CocktailMask, RollingCoversEveryCoordinateExactlyOncePerStride) {
  for (double p : {0.1, 0.3, 0.05, 1.0}) {
    const uint64_t n = 1237;
    const uint64_t s = RollingStride(p);
    for (uint64_t first_step : {uint64_t{0}, uint64_t{7}, uint64_t{1} << 40}) {
      std::vector<int> hits(n, 0);
      for (uint64_t t = first_step; t < first_step + s; ++t) {
        const CocktailMask mask = CocktailMask::Rolling(s, t);
        for (uint32_t i : Indices(mask, n)) ++hits[i];
      }
      for (uint64_t i = 0; i < n; ++i) {
        ASSERT_EQ(hits[i], 1) << "p=" << p << " step=" << first_step << " i=" << i;
      }
    }
  }
}

TEST(CocktailMask, RollingOffsetMovesByOneEachStep) {
  for (uint64_t t = 0; t < 25; ++t) {
    const std::vector<uint32_t> idx = Indices(CocktailMask::Rolling(10, t), 100);
    ASSERT_EQ(idx.size(), 10u);
    EXPECT_EQ(idx[0], t % 10);
    for (size_t j = 1; j < idx.size(); ++j) EXPECT_EQ(idx[j] - idx[j - 1], 10u);
  }
}

TEST(CocktailMask, SeededFractionIsCloseToP) {
  const uint64_t n = 200000;
  for (double p : {0.01, 0.1, 0.5}) {
    const CocktailMask mask = CocktailMask::Seeded(42, SeededThreshold(p), 3);
    const double fraction = static_cast<double>(mask.SampledCount(n)) / n;
    // Binomial standard deviation is at most 0.0012 here; allow five of them.
    EXPECT_NEAR(fraction, p, 5 * std::sqrt(p * (1 - p) / n)) << "p=" << p;
  }
}

TEST(CocktailMask, SeededMaskIsTheHashOfSeedStepAndIndex) {
  const uint64_t threshold = SeededThreshold(0.2);
  const CocktailMask mask = CocktailMask::Seeded(9, threshold, 77);
  std::vector<uint32_t> expected;
  for (uint32_t i = 0; i < 5000; ++i) {
    if ((HashCounter(9, 77, i) >> 32) < threshold) expected.push_back(i);
  }
  EXPECT_EQ(Indices(mask, 5000), expected);
  for (uint32_t i = 0; i < 5000; ++i) {
    EXPECT_EQ(mask.Contains(i), std::binary_search(expected.begin(), expected.end(), i));
  }
}

TEST(CocktailMask, SeededMasksDifferBetweenStepsAndSeeds) {
  const uint64_t threshold = SeededThreshold(0.1);
  const auto a = Indices(CocktailMask::Seeded(1, threshold, 5), 10000);
  EXPECT_NE(a, Indices(CocktailMask::Seeded(1, threshold, 6), 10000));
  EXPECT_NE(a, Indices(CocktailMask::Seeded(2, threshold, 5), 10000));
  EXPECT_EQ(a, Indices(CocktailMask::Seeded(1, threshold, 5), 10000));
}

TEST(CocktailMask, SampleRangePiecesMatchTheWhole) {
  for (const CocktailMask& mask :
       {CocktailMask::Rolling(7, 12), CocktailMask::Seeded(3, SeededThreshold(0.3), 4)}) {
    const uint64_t n = 1000;
    std::vector<uint32_t> pieces, buffer(n);
    for (uint64_t begin = 0; begin < n; begin += 33) {
      const uint64_t end = std::min(n, begin + 33);
      const size_t got = mask.SampleRange(begin, end, buffer.data());
      pieces.insert(pieces.end(), buffer.begin(), buffer.begin() + got);
    }
    EXPECT_EQ(pieces, Indices(mask, n));
    EXPECT_EQ(pieces.size(), mask.SampledCount(n));
  }
}

TEST(CocktailMask, HugeStrideSamplesAtMostTheOffset) {
  const uint64_t huge = ~uint64_t{0};
  EXPECT_EQ(Indices(CocktailMask::Rolling(huge, 5), 100), std::vector<uint32_t>{5});
  EXPECT_TRUE(Indices(CocktailMask::Rolling(huge, 500), 100).empty());
  EXPECT_EQ(CocktailMask::Rolling(huge, 500).SampledCount(100), 0u);
}

TEST(CocktailMask, WriteAndReadRoundTrip) {
  for (const CocktailMask& mask :
       {CocktailMask::Rolling(10, 123456789), CocktailMask::Seeded(~0ull, 1ull << 32, 17)}) {
    std::vector<uint8_t> bytes;
    ByteWriter writer(&bytes);
    mask.Write(&writer);
    ByteReader reader(bytes);
    auto back = CocktailMask::Read(&reader);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(*back == mask);
    EXPECT_TRUE(reader.ExpectEnd("mask").ok());
  }
}

TEST(CocktailMask, ReadRejectsBadFields) {
  auto read = [](std::vector<uint8_t> bytes) {
    ByteReader reader(bytes);
    return CocktailMask::Read(&reader).status();
  };
  std::vector<uint8_t> rolling;
  ByteWriter(&rolling).Put<uint8_t>(0);
  ByteWriter(&rolling).Put<uint64_t>(3);  // step
  ByteWriter(&rolling).Put<uint64_t>(0);  // stride 0
  Status s = read(rolling);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("cocktail.stride"), std::string::npos) << s.ToString();

  std::vector<uint8_t> seeded;
  ByteWriter(&seeded).Put<uint8_t>(1);
  ByteWriter(&seeded).Put<uint64_t>(3);
  ByteWriter(&seeded).Put<uint64_t>(9);
  ByteWriter(&seeded).Put<uint64_t>((1ull << 32) + 1);
  s = read(seeded);
  EXPECT_NE(s.message().find("cocktail.threshold"), std::string::npos) << s.ToString();

  std::vector<uint8_t> bad_mode = {7, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  s = read(bad_mode);
  EXPECT_NE(s.message().find("cocktail.mask_mode"), std::string::npos) << s.ToString();

  for (size_t cut = 0; cut < seeded.size(); ++cut) {
    EXPECT_EQ(read(std::vector<uint8_t>(seeded.begin(), seeded.begin() + cut)).code(),
              StatusCode::kDataLoss)
        << cut;
  }
}

// Reference: the k-th largest magnitude by sorting.
TEST(CocktailMagnitudeThreshold, MatchesSorting) {
  std::vector<uint32_t> scratch;
  for (int64_t n : {1, 2, 17, 1000, 65536}) {
    std::vector<float> x = MakeGaussian(n, static_cast<uint64_t>(n));
    for (int64_t i = 0; i < n; i += 7) x[i] = std::round(x[i] * 2) / 2;  // some ties
    std::vector<float> sorted(n);
    std::transform(x.begin(), x.end(), sorted.begin(), [](float v) { return std::fabs(v); });
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    for (int64_t k : {int64_t{1}, n / 3 + 1, n / 2 + 1, n}) {
      const MagnitudeThreshold t = FindMagnitudeThreshold(x.data(), n, k, &scratch);
      EXPECT_EQ(t.magnitude, sorted[k - 1]) << "n=" << n << " k=" << k;
      const int64_t above =
          std::count_if(sorted.begin(), sorted.end(), [&](float a) { return a > t.magnitude; });
      EXPECT_EQ(t.ties, k - above);
      EXPECT_GE(t.ties, 1);
    }
  }
}

TEST(CocktailMagnitudeThreshold, AllEqualMagnitudesAreAllTies) {
  std::vector<float> x = {1, -1, 1, -1, 1, 0, 0};
  std::vector<uint32_t> scratch;
  const MagnitudeThreshold t = FindMagnitudeThreshold(x.data(), 7, 3, &scratch);
  EXPECT_EQ(t.magnitude, 1.0f);
  EXPECT_EQ(t.ties, 3);
  const MagnitudeThreshold z = FindMagnitudeThreshold(x.data(), 7, 7, &scratch);
  EXPECT_EQ(z.magnitude, 0.0f);
  EXPECT_EQ(z.ties, 2);
}

}  // namespace
}  // namespace geotrain::compression
