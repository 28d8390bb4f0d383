// randk codec and its seeded subset sampler: distinct positions, identical draws for the same
// (seed, step) on every instance, uniformity, round trips, and hostile frames.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "common/half.h"
#include "compression/codec.h"
#include "compression/frame.h"
#include "compression/random_subset.h"
#include "compression/sparse_values.h"
#include "compression/synthetic_tensors.h"

namespace geotrain::compression {
namespace {

std::unique_ptr<Codec> MakeRandK(double density, DType values, uint64_t seed = 42) {
  CodecConfig config;
  config.codec = CodecId::kRandK;
  config.density = density;
  config.value_dtype = values;
  config.seed = seed;
  auto codec = MakeCodec(config);
  EXPECT_TRUE(codec.ok()) << codec.status().ToString();
  return std::move(codec).value();
}

// Positions the codec kept (inputs are nonzero everywhere), after a full frame round trip.
std::vector<uint32_t> KeptPositions(Codec& sender, Codec& receiver, const std::vector<float>& x,
                                    uint64_t step, DecodedTensor* out = nullptr,
                                    EncodeStats* stats = nullptr) {
  std::vector<uint8_t> frame;
  TensorView view{x.data(), DType::kFloat32, {static_cast<int64_t>(x.size())}};
  view.step = step;
  EXPECT_TRUE(EncodeFrame(sender, view, &frame, stats).ok());
  DecodedTensor local;
  DecodedTensor* decoded = out ? out : &local;
  const Status s = DecodeFrame(receiver, frame, {}, decoded);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::vector<uint32_t> kept;
  for (size_t i = 0; i < decoded->values.size(); ++i) {
    if (decoded->values[i] != 0) kept.push_back(static_cast<uint32_t>(i));
  }
  return kept;
}

std::vector<float> NonzeroValues(int64_t n) {
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = 1.0f + static_cast<float>(i % 1000);
  return x;
}

TEST(RandK, PicksKDistinctPositionsAndSendsTheirValues) {
  const int64_t n = 100000;
  std::vector<float> x = NonzeroValues(n);
  auto sender = MakeRandK(0.01, DType::kFloat32);
  auto receiver = MakeRandK(0.01, DType::kFloat32);
  DecodedTensor out;
  const std::vector<uint32_t> kept = KeptPositions(*sender, *receiver, x, 3, &out);
  EXPECT_EQ(static_cast<int64_t>(kept.size()), SparseCount(0.01, n));
  for (uint32_t i : kept) EXPECT_EQ(out.values[i], x[i]);
}

TEST(RandK, SameSeedAndStepGiveTheSamePositionsOnTwoInstances) {
  std::vector<float> x = NonzeroValues(50000);
  auto a = MakeRandK(0.02, DType::kFloat16);
  auto b = MakeRandK(0.02, DType::kFloat16);
  const auto first = KeptPositions(*a, *a, x, 7);
  EXPECT_EQ(first, KeptPositions(*b, *b, x, 7));
  EXPECT_EQ(first, KeptPositions(*a, *b, x, 7));  // and again: stateless
  const auto next_step = KeptPositions(*a, *a, x, 8);
  EXPECT_NE(first, next_step);
  auto other_seed = MakeRandK(0.02, DType::kFloat16, 43);
  EXPECT_NE(first, KeptPositions(*other_seed, *a, x, 7));
  // Different steps overlap as independent draws would: about k * k / n positions.
  std::vector<uint32_t> common;
  std::set_intersection(first.begin(), first.end(), next_step.begin(), next_step.end(),
                        std::back_inserter(common));
  EXPECT_LT(common.size(), first.size() / 10);
}

TEST(RandK, SubsetsAreUniform) {
  // Every position of [0, 10) appears in a 3-subset (Floyd) or an 8-subset (its complement)
  // with probability k / n; 20000 draws put each count within a few percent.
  for (int64_t k : {int64_t{3}, int64_t{8}}) {
    std::vector<int> hits(10, 0);
    std::vector<uint32_t> indices;
    const int draws = 20000;
    for (int step = 0; step < draws; ++step) {
      SampleSubset(1, step, 10, k, &indices);
      ASSERT_EQ(static_cast<int64_t>(indices.size()), k);
      for (size_t t = 1; t < indices.size(); ++t) ASSERT_LT(indices[t - 1], indices[t]);
      for (uint32_t i : indices) ++hits[i];
    }
    const double expected = draws * k / 10.0;
    for (int i = 0; i < 10; ++i) EXPECT_NEAR(hits[i], expected, 0.05 * expected) << k << " " << i;
  }
  // Pairs too: Floyd's subsets are uniform over all 3-subsets, so {0, 1} ~ k(k-1)/(n(n-1)).
  int pair = 0;
  std::vector<uint32_t> indices;
  for (int step = 0; step < 20000; ++step) {
    SampleSubset(2, step, 10, 3, &indices);
    pair += indices[0] == 0 && indices[1] == 1;
  }
  EXPECT_NEAR(pair, 20000 * 6.0 / 90.0, 80);
}

TEST(RandK, EdgeCountsAndTheWholeSet) {
  std::vector<uint32_t> indices;
  SampleSubset(1, 1, 130, 130, &indices);
  std::vector<uint32_t> all(130);
  std::iota(all.begin(), all.end(), 0u);
  EXPECT_EQ(indices, all);
  SampleSubset(1, 1, 130, 0, &indices);
  EXPECT_TRUE(indices.empty());
  SampleSubset(1, 1, 1, 1, &indices);
  EXPECT_EQ(indices, std::vector<uint32_t>{0});
}

TEST(RandK, RoundTripsFloat32AndFloat16Values) {
  std::vector<float> x = MakeActivationLike(32, 256, 9);
  for (DType values : {DType::kFloat32, DType::kFloat16}) {
    auto codec = MakeRandK(0.25, values);
    DecodedTensor out;
    EncodeStats stats;
    const auto kept = KeptPositions(*codec, *codec, x, 1, &out, &stats);
    EXPECT_NEAR(static_cast<double>(kept.size()), SparseCount(0.25, x.size()),
                2);  // a 0 could hide one
    double err = 0, norm = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (out.values[i] != 0) {
        const float want = values == DType::kFloat16 ? HalfToFloat(FloatToHalf(x[i])) : x[i];
        EXPECT_EQ(out.values[i], want);
      }
      err += (double(x[i]) - out.values[i]) * (double(x[i]) - out.values[i]);
      norm += double(x[i]) * x[i];
    }
    EXPECT_NEAR(stats.rel_error, std::sqrt(err / norm), 1e-7);
    // No rescaling: a quarter of the energy survives on average, so the error is about sqrt(3/4).
    EXPECT_NEAR(stats.rel_error, std::sqrt(0.75), 0.1);
  }
}

TEST(RandK, RejectsNonFiniteInput) {
  auto codec = MakeRandK(0.5, DType::kFloat16);
  std::vector<float> x = {1.0f, 2.0f, 3.0f, INFINITY};
  std::vector<uint8_t> frame;
  const Status s = EncodeFrame(*codec, {x.data(), DType::kFloat32, {4}}, &frame);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("randk.input[3]: infinity"), std::string::npos) << s.ToString();
}

TEST(RandKHostile, FieldsAreNamedAfterRandK) {
  auto codec = MakeRandK(0.1, DType::kFloat32);
  std::vector<uint8_t> params = {1};  // f16 values
  std::vector<uint8_t> payload;
  ByteWriter w(&payload);
  w.Put<uint64_t>(2);
  w.Put<uint32_t>(3);
  w.Put<uint32_t>(3);
  w.Put<uint16_t>(FloatToHalf(1.0f));
  w.Put<uint16_t>(FloatToHalf(2.0f));
  FrameContent content;
  content.codec = CodecId::kRandK;
  content.shape = {8};
  content.elements = 8;
  content.params = params;
  content.payload = payload;
  std::vector<float> out(8);
  Status s = codec->Decode(content, out.data());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("randk.indices[1]"), std::string::npos) << s.ToString();

  payload.resize(payload.size() - 1);  // truncated values
  content.payload = payload;
  s = codec->Decode(content, out.data());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("randk.payload"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace geotrain::compression
