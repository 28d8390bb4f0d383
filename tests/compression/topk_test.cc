// topk codec and the shared sparse wire format (sparse_values.h): exact selection, round trips
// in f32 and f16, and clean errors for hostile frames.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>

#include "common/half.h"
#include "compression/codec.h"
#include "compression/frame.h"
#include "compression/sparse_values.h"
#include "compression/synthetic_tensors.h"
#include "compression/topk_selection.h"

namespace geotrain::compression {
namespace {

std::unique_ptr<Codec> MakeSparse(CodecId id, double density, DType values) {
  CodecConfig config;
  config.codec = id;
  config.density = density;
  config.value_dtype = values;
  auto codec = MakeCodec(config);
  EXPECT_TRUE(codec.ok()) << codec.status().ToString();
  return std::move(codec).value();
}

// Positions of the k largest |x| by a full sort (ties to the lower index).
std::vector<uint32_t> ReferenceTopK(const std::vector<float>& x, int64_t k) {
  std::vector<uint32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

struct RoundTrip {
  Status encode, decode;
  EncodeStats stats;
  DecodedTensor out;
};

RoundTrip EncodeDecode(Codec& codec, const std::vector<float>& x, Shape shape, uint64_t step = 0) {
  RoundTrip rt;
  std::vector<uint8_t> frame;
  TensorView view{x.data(), DType::kFloat32, std::move(shape)};
  view.step = step;
  rt.encode = EncodeFrame(codec, view, &frame, &rt.stats);
  if (rt.encode.ok()) rt.decode = DecodeFrame(codec, frame, {}, &rt.out);
  return rt;
}

// Gaussian values with pairwise distinct magnitudes, so the top k is unique.
std::vector<float> DistinctGaussian(int64_t n, uint64_t seed) {
  std::vector<float> x = MakeGaussian(n, seed);
  std::set<float> seen;
  for (float& v : x) {
    while (!seen.insert(std::fabs(v)).second) v = std::nextafter(v, v > 0 ? INFINITY : -INFINITY);
  }
  return x;
}

class TopKExact : public ::testing::TestWithParam<std::tuple<int64_t, double>> {};

TEST_P(TopKExact, KeepsExactlyTheKLargestMagnitudes) {
  const auto [n, density] = GetParam();
  std::vector<float> x = DistinctGaussian(n, 11 + n);
  auto codec = MakeSparse(CodecId::kTopK, density, DType::kFloat32);
  RoundTrip rt = EncodeDecode(*codec, x, {n / 100, 100});
  ASSERT_TRUE(rt.encode.ok()) << rt.encode.ToString();
  ASSERT_TRUE(rt.decode.ok()) << rt.decode.ToString();

  const int64_t k = SparseCount(density, n);
  const std::vector<uint32_t> expected = ReferenceTopK(x, k);
  std::vector<uint32_t> kept;
  for (int64_t i = 0; i < n; ++i) {
    if (rt.out.values[i] != 0) {
      kept.push_back(static_cast<uint32_t>(i));
      ASSERT_EQ(rt.out.values[i], x[i]) << i;  // f32 values travel exactly
    }
  }
  EXPECT_EQ(kept, expected);

  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    err += (double(x[i]) - rt.out.values[i]) * (double(x[i]) - rt.out.values[i]);
    norm += double(x[i]) * x[i];
  }
  EXPECT_NEAR(rt.stats.rel_error, std::sqrt(err / norm), 1e-7);
}

// Small n selects among every value; large n goes through the sampled magnitude floor.
INSTANTIATE_TEST_SUITE_P(TopKSizesAndDensities, TopKExact,
                         ::testing::Values(std::make_tuple(int64_t{1000}, 0.05),
                                           std::make_tuple(int64_t{1000}, 1.0),
                                           std::make_tuple(int64_t{100000}, 0.01),
                                           std::make_tuple(int64_t{100000}, 0.001),
                                           std::make_tuple(int64_t{100000}, 0.3),
                                           std::make_tuple(int64_t{100000}, 0.9)));

TEST(TopKSelection, TiesGoToTheLowestPositions) {
  for (int64_t n : {int64_t{1000}, int64_t{300000}}) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = (i % 2) ? 1.0f : -1.0f;  // equal magnitudes
    x[n - 1] = 5.0f;
    TopKSelector selector;
    std::vector<uint32_t> indices;
    const double norm = selector.Select(x.data(), n, 10, &indices);
    std::vector<uint32_t> expected = {0, 1, 2, 3, 4, 5, 6, 7, 8, static_cast<uint32_t>(n - 1)};
    EXPECT_EQ(indices, expected) << n;
    EXPECT_DOUBLE_EQ(norm, double(n - 1) + 25.0);
  }
}

TEST(TopKSelection, ActivationLikeMatchesAFullSort) {
  // Outlier channels make the magnitudes far from i.i.d.; the result must not depend on that.
  std::vector<float> x = MakeActivationLike(256, 1600, 5);
  for (double density : {0.0001, 0.01, 0.2}) {
    const int64_t k = SparseCount(density, x.size());
    TopKSelector selector;
    std::vector<uint32_t> indices;
    selector.Select(x.data(), x.size(), k, &indices);
    EXPECT_EQ(indices, ReferenceTopK(x, k)) << density;
  }
}

TEST(TopK, HalfValuesRoundTripAndReportTheirRounding) {
  std::vector<float> x = MakeActivationLike(64, 128, 2);
  auto codec = MakeSparse(CodecId::kTopK, 0.1, DType::kFloat16);
  RoundTrip rt = EncodeDecode(*codec, x, {64, 128});
  ASSERT_TRUE(rt.encode.ok() && rt.decode.ok()) << rt.encode.ToString() << rt.decode.ToString();
  double err = 0, norm = 0;
  int kept = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (rt.out.values[i] != 0) {
      ++kept;
      EXPECT_EQ(rt.out.values[i], HalfToFloat(FloatToHalf(x[i])));
    }
    err += (double(x[i]) - rt.out.values[i]) * (double(x[i]) - rt.out.values[i]);
    norm += double(x[i]) * x[i];
  }
  EXPECT_EQ(kept, SparseCount(0.1, x.size()));
  EXPECT_NEAR(rt.stats.rel_error, std::sqrt(err / norm), 1e-7);
  // 10% of the values at 2 + 4 bytes each, against 4 bytes dense: about 6.6x.
  EXPECT_GT(rt.stats.Ratio(), 6.0);
}

TEST(TopK, HalfOverflowFallsBackToFloat32Values) {
  std::vector<float> x = {1e6f, -2.0f, 3e5f, 0.5f};
  auto codec = MakeSparse(CodecId::kTopK, 0.5, DType::kFloat16);
  RoundTrip rt = EncodeDecode(*codec, x, {4});
  ASSERT_TRUE(rt.encode.ok() && rt.decode.ok());
  EXPECT_EQ(rt.out.values, (std::vector<float>{1e6f, 0.0f, 3e5f, 0.0f}));
}

TEST(TopK, CountFollowsDensityWithAtLeastOne) {
  EXPECT_EQ(SparseCount(0.01, 0), 0);
  EXPECT_EQ(SparseCount(0.01, 10), 1);
  EXPECT_EQ(SparseCount(0.01, 250), 3);  // round(2.5) = 3
  EXPECT_EQ(SparseCount(1.0, 7), 7);
  auto codec = MakeSparse(CodecId::kTopK, 0.01, DType::kFloat16);
  RoundTrip rt = EncodeDecode(*codec, {}, {0, 16});
  ASSERT_TRUE(rt.encode.ok() && rt.decode.ok()) << rt.encode.ToString() << rt.decode.ToString();
  EXPECT_TRUE(rt.out.values.empty());
  RoundTrip one = EncodeDecode(*codec, {-3.0f}, {});
  ASSERT_TRUE(one.encode.ok() && one.decode.ok());
  EXPECT_EQ(one.out.values, std::vector<float>{-3.0f});
}

TEST(TopK, RejectsNonFiniteInputNamingThePosition) {
  auto codec = MakeSparse(CodecId::kTopK, 0.5, DType::kFloat32);
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    std::vector<float> x = {1.0f, 2.0f, bad, 3.0f};
    RoundTrip rt = EncodeDecode(*codec, x, {4});
    EXPECT_EQ(rt.encode.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(rt.encode.message().find("topk.input[2]"), std::string::npos) << rt.encode.ToString();
  }
}

// --- Hostile frames: built by hand and handed to Decode, past the frame checksum. -----------

struct SparseFrame {
  std::vector<uint8_t> params = {0};  // f32 values
  std::vector<uint8_t> payload;
  Shape shape = {10};

  SparseFrame(std::vector<uint32_t> indices, std::vector<float> values, uint64_t count) {
    ByteWriter w(&payload);
    w.Put<uint64_t>(count);
    w.PutBytes(indices.data(), 4 * indices.size());
    w.PutBytes(values.data(), 4 * values.size());
  }
  FrameContent Content(CodecId id) const {
    FrameContent c;
    c.codec = id;
    c.shape = shape;
    c.elements = NumElements(shape);
    c.params = params;
    c.payload = payload;
    return c;
  }
};

Status DecodeHostile(CodecId id, const SparseFrame& f) {
  auto codec = MakeSparse(id, 0.1, DType::kFloat32);
  std::vector<float> out(NumElements(f.shape), -7.0f);
  return codec->Decode(f.Content(id), out.data());
}

void ExpectDataLoss(const Status& s, const std::string& field) {
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find(field), std::string::npos)
      << "wanted " << field << " in " << s.ToString();
}

TEST(TopKHostile, ValidFrameDecodes) {
  SparseFrame f({1, 4, 9}, {1.0f, 2.0f, 3.0f}, 3);
  auto codec = MakeSparse(CodecId::kTopK, 0.1, DType::kFloat32);
  std::vector<float> out(10, -7.0f);
  ASSERT_TRUE(codec->Decode(f.Content(CodecId::kTopK), out.data()).ok());
  EXPECT_EQ(out, (std::vector<float>{0, 1, 0, 0, 2, 0, 0, 0, 0, 3}));
}

TEST(TopKHostile, IndexOutOfRange) {
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, SparseFrame({1, 4, 10}, {1, 2, 3}, 3)),
                 "topk.indices[2]: 10 is outside");
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, SparseFrame({0xffffffffu}, {1}, 1)),
                 "topk.indices[0]");
}

TEST(TopKHostile, IndicesNotStrictlyIncreasing) {
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, SparseFrame({1, 4, 4}, {1, 2, 3}, 3)),
                 "topk.indices[2]: 4 does not follow");
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, SparseFrame({5, 2}, {1, 2}, 2)), "topk.indices[1]");
}

TEST(TopKHostile, CountLargerThanElements) {
  std::vector<uint32_t> idx(11);
  std::iota(idx.begin(), idx.end(), 0u);
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, SparseFrame(idx, std::vector<float>(11, 1), 11)),
                 "topk.count: 11 exceeds");
  // A huge count must not overflow the size arithmetic.
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, SparseFrame({1}, {1}, ~uint64_t{0})), "topk.count");
}

TEST(TopKHostile, CountDisagreeingWithThePayload) {
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, SparseFrame({1, 2}, {1, 2}, 3)), "topk.payload");
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, SparseFrame({1, 2}, {1, 2}, 1)), "topk.payload");
}

TEST(TopKHostile, EveryTruncationIsAnError) {
  SparseFrame full({1, 4, 9}, {1.0f, 2.0f, 3.0f}, 3);
  for (size_t len = 0; len < full.payload.size(); ++len) {
    SparseFrame cut = full;
    cut.payload.resize(len);
    const Status s = DecodeHostile(CodecId::kTopK, cut);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << len;
  }
  SparseFrame no_params = full;
  no_params.params.clear();
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, no_params), "topk.value_dtype");
}

TEST(TopKHostile, TrailingBytesBadDtypeAndNonFiniteValues) {
  SparseFrame trailing({1}, {1.0f}, 1);
  trailing.payload.push_back(0);
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, trailing), "topk.payload");
  SparseFrame long_params({1}, {1.0f}, 1);
  long_params.params.push_back(0);
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, long_params), "topk.params");
  SparseFrame bf16({1}, {1.0f}, 1);
  bf16.params[0] = 2;
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, bf16), "topk.value_dtype: 2");
  ExpectDataLoss(DecodeHostile(CodecId::kTopK, SparseFrame({1, 3}, {1.0f, NAN}, 2)),
                 "topk.values[1]");
}

}  // namespace
}  // namespace geotrain::compression
