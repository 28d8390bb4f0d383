// Tests of the CocktailSGD codec (cocktail_codec.h): mask agreement, top-k, quantization, error
// feedback, compression ratio and hostile frames.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>
#include <vector>

#include "common/half.h"
#include "common/hash_random.h"
#include "compression/bitpack.h"
#include "compression/cocktail_codec.h"
#include "compression/cocktail_mask.h"
#include "compression/frame.h"
#include "compression/synthetic_tensors.h"
#include "tests/compression/cocktail_test_util.h"

namespace geotrain::compression {
namespace {

// The shared config at the default quant_group, with the seed these tests were written for.
CodecConfig CocktailConfig(double p, double k, int q, MaskMode mode = MaskMode::kRolling,
                           bool error_feedback = false) {
  CodecConfig config =
      cocktail_test::CocktailConfig(mode, p, k, q, CodecConfig().quant_group, error_feedback);
  config.seed = 1234;
  return config;
}

std::unique_ptr<CocktailCodec> MakeCocktail(const CodecConfig& config) {
  auto codec = CocktailCodec::Create(config);
  EXPECT_TRUE(codec.ok()) << codec.status().ToString();
  return codec.ok() ? std::move(*codec) : nullptr;
}

// Params and payload of one Encode call, viewable as the FrameContent a receiver would get.
struct Encoded {
  std::vector<uint8_t> params, payload;
  ErrorSums error;
  Shape shape;
  int64_t elements = 0;

  FrameContent Content() const {
    FrameContent c;
    c.codec = CodecId::kCocktail;
    c.shape = shape;
    c.elements = elements;
    c.params = Span<const uint8_t>(params.data(), params.size());
    c.payload = Span<const uint8_t>(payload.data(), payload.size());
    return c;
  }
};

Status EncodeRaw(Codec& codec, const std::vector<float>& x, const Shape& shape, uint64_t step,
                 Encoded* out) {
  out->params.clear();
  out->payload.clear();
  out->error = {};
  out->shape = shape;
  out->elements = NumElements(shape);
  ByteWriter params(&out->params), payload(&out->payload);
  EncodeInput in;
  in.data = x.data();
  in.shape = shape;
  in.elements = out->elements;
  in.step = step;
  return codec.Encode(in, &params, &payload, &out->error);
}

std::vector<float> DecodeOrDie(Codec& codec, const Encoded& e) {
  std::vector<float> out(e.elements, -999.0f);
  const Status s = codec.Decode(e.Content(), out.data());
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// What a receiver learns from the params alone: the mask, and from the bitmap the kept
// coordinates (in sampled order).
struct Received {
  CocktailMask mask = CocktailMask::Rolling(1, 0);
  std::vector<uint32_t> sampled;
  std::vector<uint32_t> kept;
};

Received ReadFrame(Span<const uint8_t> params, Span<const uint8_t> payload, int64_t n) {
  Received r;
  ByteReader reader(params);
  auto mask = CocktailMask::Read(&reader);
  EXPECT_TRUE(mask.ok()) << mask.status().ToString();
  if (!mask.ok()) return r;
  r.mask = *mask;
  r.mask.SampledIndices(n, &r.sampled);
  EXPECT_GE(payload.size(), PackedBytes(r.sampled.size(), 1));
  for (size_t j = 0; j < r.sampled.size(); ++j) {
    if (payload[j / 8] & (0x80 >> (j % 8))) r.kept.push_back(r.sampled[j]);
  }
  return r;
}

int64_t ExpectedKept(double topk_ratio, int64_t sampled) {
  if (sampled == 0) return 0;
  return std::clamp<int64_t>(std::llround(topk_ratio * sampled), 1, sampled);
}

// The k largest |x| of the sampled set; ties go to the earlier coordinate. Increasing order.
std::vector<uint32_t> ReferenceTopK(const std::vector<float>& x,
                                    const std::vector<uint32_t>& sampled, int64_t k) {
  std::vector<uint32_t> order = sampled;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

class CocktailModes : public ::testing::TestWithParam<MaskMode> {};

TEST_P(CocktailModes, SenderAndReceiverAgreeOnTheMaskOverManySteps) {
  const CodecConfig config = CocktailConfig(0.1, 0.2, 4, GetParam());
  auto sender = MakeCodec(config);
  auto receiver = MakeCodec(config);
  ASSERT_TRUE(sender.ok() && receiver.ok());
  const Shape shape = {30, 97};
  const int64_t n = 30 * 97;
  std::set<uint32_t> ever_sampled;
  for (uint64_t step = 0; step < 200; ++step) {
    const std::vector<float> x = MakeGaussian(n, step + 1);
    std::vector<uint8_t> frame;
    TensorView view{x.data(), DType::kFloat32, shape};
    view.step = step;
    ASSERT_TRUE(EncodeFrame(**sender, view, &frame).ok());

    // Receiver: everything from the frame alone.
    std::vector<uint8_t> scratch;
    FrameContent content;
    ASSERT_TRUE(ParseFrame(frame, {}, &scratch, &content).ok());
    const Received got = ReadFrame(content.params, content.payload, n);
    auto sender_mask = CocktailMask::ForStep(config, step);
    ASSERT_TRUE(sender_mask.ok());
    std::vector<uint32_t> sender_sampled;
    sender_mask->SampledIndices(n, &sender_sampled);
    ASSERT_TRUE(got.mask == *sender_mask) << "step " << step;
    ASSERT_EQ(got.sampled, sender_sampled) << "step " << step;
    ASSERT_EQ(got.kept, ReferenceTopK(x, sender_sampled, ExpectedKept(0.2, sender_sampled.size())))
        << "step " << step;

    DecodedTensor out;
    ASSERT_TRUE(DecodeFrame(**receiver, frame, {}, &out).ok());
    std::set<uint32_t> kept(got.kept.begin(), got.kept.end());
    for (int64_t i = 0; i < n; ++i) {
      if (!kept.count(static_cast<uint32_t>(i))) {
        ASSERT_EQ(out.values[i], 0.0f) << i;
      }
    }
    ever_sampled.insert(sender_sampled.begin(), sender_sampled.end());
  }
  EXPECT_EQ(ever_sampled.size(), static_cast<size_t>(n));  // 200 steps reach every coordinate
}

TEST_P(CocktailModes, TopKKeepsTheLargestMagnitudesOfTheSampledSet) {
  const CodecConfig config = CocktailConfig(0.3, 0.25, 8, GetParam());
  auto codec = MakeCocktail(config);
  const int64_t n = 5000;
  const std::vector<float> x = MakeActivationLike(50, 100, 11);
  Encoded e;
  ASSERT_TRUE(EncodeRaw(*codec, x, {50, 100}, 5, &e).ok());
  const Received got = ReadFrame(e.params, e.payload, n);
  const int64_t k = ExpectedKept(0.25, got.sampled.size());
  ASSERT_EQ(static_cast<int64_t>(got.kept.size()), k);
  EXPECT_EQ(got.kept, ReferenceTopK(x, got.sampled, k));

  // Every kept |x| is at least every sampled-but-dropped |x|.
  const std::set<uint32_t> kept(got.kept.begin(), got.kept.end());
  float smallest_kept = INFINITY, largest_dropped = 0;
  for (uint32_t i : got.sampled) {
    if (kept.count(i))
      smallest_kept = std::min(smallest_kept, std::fabs(x[i]));
    else
      largest_dropped = std::max(largest_dropped, std::fabs(x[i]));
  }
  EXPECT_GE(smallest_kept, largest_dropped);

  const std::vector<float> out = DecodeOrDie(*codec, e);
  for (int64_t i = 0; i < n; ++i) {
    if (kept.count(static_cast<uint32_t>(i))) {
      EXPECT_NEAR(out[i], x[i], 0.02f * 60) << i;  // 8 bits: a step of at most max|x| / 128
    } else {
      EXPECT_EQ(out[i], 0.0f) << i;
    }
  }
}

TEST_P(CocktailModes, TiesKeepTheEarliestCoordinates) {
  auto codec = MakeCocktail(CocktailConfig(0.5, 0.3, 4, GetParam()));
  std::vector<float> x(400);
  for (size_t i = 0; i < x.size(); ++i) x[i] = i % 3 == 0 ? -1.0f : 1.0f;
  Encoded e;
  ASSERT_TRUE(EncodeRaw(*codec, x, {400}, 2, &e).ok());
  const Received got = ReadFrame(e.params, e.payload, 400);
  const int64_t k = ExpectedKept(0.3, got.sampled.size());
  EXPECT_EQ(got.kept, std::vector<uint32_t>(got.sampled.begin(), got.sampled.begin() + k));
}

TEST_P(CocktailModes, ErrorFeedbackConservesTheSumOverHundredsOfSteps) {
  const CodecConfig config = CocktailConfig(0.1, 0.2, 4, GetParam(), /*error_feedback=*/true);
  auto sender = MakeCocktail(config);
  auto receiver = MakeCocktail(config);
  const int64_t n = 4000;
  std::vector<double> sum_inputs(n, 0), sum_sent(n, 0);
  Encoded e;
  for (uint64_t step = 0; step < 300; ++step) {
    const std::vector<float> x = MakeGaussian(n, 1000 + step);
    ASSERT_TRUE(EncodeRaw(*sender, x, {n}, step, &e).ok());
    const std::vector<float> sent = DecodeOrDie(*receiver, e);
    for (int64_t i = 0; i < n; ++i) {
      sum_inputs[i] += x[i];
      sum_sent[i] += sent[i];
    }
  }
  const Span<const float> residual = sender->residual();
  ASSERT_EQ(residual.size(), static_cast<size_t>(n));
  EXPECT_EQ(sender->residual_shape(), Shape{n});
  double worst = 0, residual_sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::fabs(sum_sent[i] + residual[i] - sum_inputs[i]));
    residual_sq += static_cast<double>(residual[i]) * residual[i];
  }
  EXPECT_LT(worst, 1e-4) << "sent + residual must equal the inputs up to float rounding";
  // What is left unsent is eventually sent: the residual stays small. Without feedback reaching
  // the wire, each coordinate would hold a random walk of 300 steps, RMS sqrt(300) ≈ 17.
  const double residual_rms = std::sqrt(residual_sq / n);
  EXPECT_LT(residual_rms, 8);
  EXPECT_GT(residual_rms, 0.5);
}

INSTANTIATE_TEST_SUITE_P(CocktailBothMasks, CocktailModes,
                         ::testing::Values(MaskMode::kRolling, MaskMode::kSeeded),
                         [](const ::testing::TestParamInfo<MaskMode>& info) {
                           return info.param == MaskMode::kRolling ? "Rolling" : "Seeded";
                         });

TEST(CocktailCodec, WithoutErrorFeedbackThereIsNoResidual) {
  auto codec = MakeCocktail(CocktailConfig(0.1, 0.2, 4));
  Encoded e;
  ASSERT_TRUE(EncodeRaw(*codec, MakeGaussian(1000, 1), {1000}, 0, &e).ok());
  EXPECT_TRUE(codec->residual().empty());
}

TEST(CocktailCodec, ResidualIsTheUnsentPart) {
  auto codec = MakeCocktail(CocktailConfig(0.1, 0.2, 4, MaskMode::kRolling, true));
  const std::vector<float> x = MakeGaussian(1000, 2);
  Encoded e;
  ASSERT_TRUE(EncodeRaw(*codec, x, {1000}, 0, &e).ok());
  const std::vector<float> sent = DecodeOrDie(*codec, e);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(codec->residual()[i], x[i] - sent[i]) << i;
}

TEST(CocktailCodec, ResidualFollowsTheDefinitionBitForBit) {
  // residual_t = (x_t + residual_{t-1}) - decoded_t in float, whether the codec subtracts the
  // send at once (residual() read every step) or lazily during the next encode.
  for (MaskMode mode : {MaskMode::kRolling, MaskMode::kSeeded}) {
    auto codec = MakeCocktail(CocktailConfig(0.1, 0.2, 3, mode, true));
    const int64_t n = 20000;  // several chunks of the streaming pass
    std::vector<float> reference(n, 0.0f);
    Encoded e;
    for (uint64_t step = 0; step < 40; ++step) {
      const std::vector<float> x = MakeGaussian(n, 500 + step);
      for (int64_t i = 0; i < n; ++i) reference[i] += x[i];
      ASSERT_TRUE(EncodeRaw(*codec, x, {n}, step, &e).ok());
      const std::vector<float> sent = DecodeOrDie(*codec, e);
      for (int64_t i = 0; i < n; ++i) reference[i] -= sent[i];
      if (step % 7 == 3 || step == 39) {
        const Span<const float> residual = codec->residual();
        ASSERT_EQ(residual.size(), static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(residual[i], reference[i]) << step << " " << i;
      }
    }
  }
}

TEST(CocktailCodec, ShapeChangeResetsTheResidual) {
  auto codec = MakeCocktail(CocktailConfig(0.1, 0.2, 4, MaskMode::kRolling, true));
  Encoded e;
  ASSERT_TRUE(EncodeRaw(*codec, MakeGaussian(1000, 3), {10, 100}, 0, &e).ok());
  const std::vector<float> x = MakeGaussian(1000, 4);
  ASSERT_TRUE(EncodeRaw(*codec, x, {1000}, 1, &e).ok());  // same count, other shape
  EXPECT_EQ(codec->residual_shape(), Shape{1000});
  const std::vector<float> sent = DecodeOrDie(*codec, e);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(codec->residual()[i], x[i] - sent[i]) << i;
}

TEST(CocktailCodec, ResetAndRestoreResidual) {
  auto codec = MakeCocktail(CocktailConfig(0.5, 0.5, 8, MaskMode::kRolling, true));
  Encoded e;
  ASSERT_TRUE(EncodeRaw(*codec, MakeGaussian(64, 5), {8, 8}, 0, &e).ok());
  const std::vector<float> saved(codec->residual().begin(), codec->residual().end());
  codec->ResetResidual();
  EXPECT_TRUE(codec->residual().empty());
  ASSERT_TRUE(codec->RestoreResidual({8, 8}, saved).ok());
  EXPECT_EQ(std::vector<float>(codec->residual().begin(), codec->residual().end()), saved);
  EXPECT_EQ(codec->RestoreResidual({8, 9}, saved).code(), StatusCode::kInvalidArgument);
  std::vector<float> bad = saved;
  bad[3] = NAN;
  EXPECT_EQ(codec->RestoreResidual({8, 8}, bad).code(), StatusCode::kInvalidArgument);

  // Turning feedback off drops the residual.
  CodecConfig off = codec->config();
  off.error_feedback = false;
  ASSERT_TRUE(codec->Reconfigure(off).ok());
  EXPECT_TRUE(codec->residual().empty());
}

TEST(CocktailCodec, NonFiniteInputFailsAndResetsTheResidual) {
  for (bool feedback : {false, true}) {
    auto codec = MakeCocktail(CocktailConfig(0.1, 0.2, 4, MaskMode::kRolling, feedback));
    for (float bad : {NAN, INFINITY, -INFINITY}) {
      Encoded e;
      ASSERT_TRUE(EncodeRaw(*codec, MakeGaussian(5000, 6), {5000}, 0, &e).ok());
      EXPECT_EQ(codec->residual().empty(), !feedback);
      std::vector<float> x = MakeGaussian(5000, 7);
      x[4321] = bad;  // not sampled at step 1: it would poison the residual all the same
      const Status s = EncodeRaw(*codec, x, {5000}, 1, &e);
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
      EXPECT_NE(s.message().find("input[4321]: NaN or infinity"), std::string::npos)
          << s.ToString();
      // Never a mix of two steps: zeros of the input's shape, or nothing without feedback.
      EXPECT_EQ(codec->residual().size(), feedback ? 5000u : 0u);
      for (float r : codec->residual()) ASSERT_EQ(r, 0.0f);
    }
  }
  // x + residual overflowing float32 is refused too.
  auto codec = MakeCocktail(CocktailConfig(0.1, 0.2, 4, MaskMode::kRolling, true));
  std::vector<float> big(100, 3e38f);
  ASSERT_TRUE(codec->RestoreResidual({100}, big).ok());
  Encoded e;
  const Status s = EncodeRaw(*codec, big, {100}, 0, &e);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("overflows"), std::string::npos) << s.ToString();
  EXPECT_EQ(codec->residual()[0], 0.0f);
  // The codec stays usable.
  EXPECT_TRUE(EncodeRaw(*codec, MakeGaussian(100, 1), {100}, 1, &e).ok());
}

TEST(CocktailCodec, MoreThanOneHundredTimesSmallerThanFloat32OnActivations) {
  const std::vector<float> x = MakeActivationLike(4 * 1024, 1600, 1);
  auto codec = MakeCodec(CocktailConfig(0.1, 0.2, 4));
  std::vector<uint8_t> frame;
  EncodeStats stats;
  ASSERT_TRUE(
      EncodeFrame(**codec, {x.data(), DType::kFloat32, {4, 1024, 1600}}, &frame, &stats).ok());
  EXPECT_GT(stats.Ratio(), 100.0);
  EXPECT_NEAR(stats.Ratio(), 32 / 0.1825, 10);  // 0.1 bitmap + 0.02 * 4 bits + scales
  EXPECT_GT(stats.rel_error, 0.5);              // 98% of the coordinates are not sent in one step
  EXPECT_LT(stats.rel_error, 1.0);
  DecodedTensor out;
  ASSERT_TRUE(DecodeFrame(**codec, frame, {}, &out).ok());
  double err = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (x[i] - out.values[i]) * static_cast<double>(x[i] - out.values[i]);
    norm += x[i] * static_cast<double>(x[i]);
  }
  EXPECT_NEAR(stats.rel_error, std::sqrt(err / norm), 1e-6);
}

struct RoundTripCase {
  int bits;
  double p;
  double k;
  Rounding rounding;
};

class CocktailRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(CocktailRoundTrip, KeptValuesStayWithinOneQuantizationStep) {
  const RoundTripCase c = GetParam();
  CodecConfig config = CocktailConfig(c.p, c.k, c.bits, MaskMode::kSeeded);
  config.quant_group = 64;
  config.rounding = c.rounding;
  auto codec = MakeCocktail(config);
  const std::vector<float> x = MakeActivationLike(40, 150, 9);
  const int64_t n = 6000;
  Encoded e;
  ASSERT_TRUE(EncodeRaw(*codec, x, {40, 150}, 3, &e).ok());
  const Received got = ReadFrame(e.params, e.payload, n);
  ASSERT_EQ(static_cast<int64_t>(got.kept.size()), ExpectedKept(c.k, got.sampled.size()));
  const std::vector<float> out = DecodeOrDie(*codec, e);

  // Groups of 64 kept values, in sampled order, share one fp16 scale = max|x| rounded up.
  double err = 0, norm = 0;
  std::vector<bool> is_kept(n, false);
  for (size_t g = 0; g < got.kept.size(); g += 64) {
    const size_t end = std::min(got.kept.size(), g + 64);
    float group_max = 0;
    for (size_t j = g; j < end; ++j) group_max = std::max(group_max, std::fabs(x[got.kept[j]]));
    const float step = HalfToFloat(FloatToHalfRoundUp(group_max)) / (1 << (c.bits - 1));
    const float bound = step;  // nearest and stochastic alike (the top code clips by one step)
    for (size_t j = g; j < end; ++j) {
      const uint32_t i = got.kept[j];
      is_kept[i] = true;
      ASSERT_LE(std::fabs(out[i] - x[i]), bound * (1 + 1e-6f)) << "bits=" << c.bits << " i=" << i;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!is_kept[i]) {
      ASSERT_EQ(out[i], 0.0f) << i;
    }
    err += (x[i] - out[i]) * static_cast<double>(x[i] - out[i]);
    norm += x[i] * static_cast<double>(x[i]);
  }
  EXPECT_NEAR(e.error.RelativeError(), std::sqrt(err / norm), 1e-6);
}

std::vector<RoundTripCase> AllRoundTripCases() {
  std::vector<RoundTripCase> cases;
  for (int bits = 2; bits <= 8; ++bits) {
    for (Rounding r : {Rounding::kNearest, Rounding::kStochastic}) {
      cases.push_back({bits, 1.0, 1.0, r});
      cases.push_back({bits, 0.1, 0.2, r});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(CocktailQuantBits, CocktailRoundTrip,
                         ::testing::ValuesIn(AllRoundTripCases()));

TEST(CocktailCodec, EmptyAndTinyTensorsRoundTrip) {
  auto codec = MakeCocktail(CocktailConfig(0.1, 0.2, 4, MaskMode::kRolling, true));
  // Nothing sampled (offset 7 beyond 5 values), a scalar, an empty tensor.
  for (const Shape& shape : {Shape{5}, Shape{}, Shape{0}, Shape{3, 0}}) {
    const int64_t n = NumElements(shape);
    const std::vector<float> x = MakeGaussian(n, 8);
    Encoded e;
    ASSERT_TRUE(EncodeRaw(*codec, x, shape, 7, &e).ok()) << ShapeString(shape);
    const std::vector<float> out = DecodeOrDie(*codec, e);
    for (float v : out) EXPECT_EQ(v, 0.0f);
  }
  std::vector<float> one = {2.5f};
  Encoded e;
  ASSERT_TRUE(EncodeRaw(*codec, one, {}, 10, &e).ok());  // 10 % 10 = 0: the scalar is sampled
  EXPECT_NEAR(DecodeOrDie(*codec, e)[0], 2.5f, 2.5f / 4);
}

TEST(CocktailCodec, ParametersMayChangeBetweenFramesOnOneLink) {
  CodecConfig config = CocktailConfig(0.1, 0.2, 4, MaskMode::kRolling, true);
  auto sender = MakeCodec(config);
  auto receiver = MakeCodec(CocktailConfig(0.5, 0.5, 8));  // receiver config is not consulted
  const std::vector<float> x = MakeGaussian(3000, 10);
  uint64_t step = 0;
  for (MaskMode mode : {MaskMode::kRolling, MaskMode::kSeeded}) {
    for (int bits : {4, 2, 8}) {
      for (double p : {0.1, 0.25, 1.0}) {
        config.mask_mode = mode;
        config.quant_bits = bits;
        config.random_ratio = p;
        config.quant_group = bits == 2 ? 7 : 128;
        ASSERT_TRUE((*sender)->Reconfigure(config).ok());
        std::vector<uint8_t> frame;
        TensorView view{x.data(), DType::kFloat32, {3000}};
        view.step = step++;
        ASSERT_TRUE(EncodeFrame(**sender, view, &frame).ok());
        DecodedTensor out;
        const Status s = DecodeFrame(**receiver, frame, {}, &out);
        ASSERT_TRUE(s.ok()) << s.ToString();
        const int64_t nonzero =
            std::count_if(out.values.begin(), out.values.end(), [](float v) { return v != 0; });
        EXPECT_LE(nonzero, ExpectedKept(0.2, static_cast<int64_t>(std::ceil(3000 * p * 1.1))));
      }
    }
  }
  CodecConfig other = config;
  other.codec = CodecId::kFixpoint;
  EXPECT_FALSE((*sender)->Reconfigure(other).ok());
}

TEST(CocktailCodec, ConfigValidationNamesTheField) {
  CodecConfig config = CocktailConfig(0.1, 0.2, 9);
  auto codec = MakeCodec(config);
  ASSERT_FALSE(codec.ok());
  EXPECT_EQ(codec.status().message().rfind("quant_bits:", 0), 0u) << codec.status().ToString();
  config = CocktailConfig(0.0, 0.2, 4);
  EXPECT_EQ(MakeCodec(config).status().message().rfind("random_ratio:", 0), 0u);
  config = CocktailConfig(0.1, 0.2, 4);
  config.mask_mode = static_cast<MaskMode>(5);
  EXPECT_EQ(MakeCodec(config).status().message().rfind("mask_mode:", 0), 0u);
}

TEST(CocktailCodec, ZstdFramesRoundTrip) {
  CodecConfig config = CocktailConfig(0.1, 0.2, 4);
  config.zstd_level = 3;
  auto codec = MakeCodec(config);
  const std::vector<float> x = MakeActivationLike(64, 256, 12);
  std::vector<uint8_t> frame;
  ASSERT_TRUE(EncodeFrame(**codec, {x.data(), DType::kFloat32, {64, 256}}, &frame).ok());
  DecodedTensor out;
  EXPECT_TRUE(DecodeFrame(**codec, frame, {}, &out).ok());
}

// ----- Hostile frames -----------------------------------------------------------------------

// Offsets inside the params of a rolling frame: u8 mode, u64 step, u64 stride, u64 kept,
// u8 bits, u8 scale mode, u32 group.
constexpr size_t kModeAt = 0, kStrideAt = 9, kKeptAt = 17, kBitsAt = 25, kScaleModeAt = 26,
                 kGroupAt = 27;

class CocktailHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    codec_ = MakeCocktail(CocktailConfig(0.1, 0.2, 4));
    x_ = MakeGaussian(1003, 13);
    ASSERT_TRUE(EncodeRaw(*codec_, x_, {1003}, 4, &good_).ok());  // m = 100: bitmap 13 bytes
    ASSERT_EQ(good_.params.size(), 31u);
  }

  // Decodes `e`, checking that nothing beyond the output is written.
  Status Decode(const Encoded& e) {
    std::vector<float> out(e.elements + 16, 7.0f);
    const Status s = codec_->Decode(e.Content(), out.data());
    for (int64_t i = e.elements; i < e.elements + 16; ++i) EXPECT_EQ(out[i], 7.0f);
    return s;
  }

  void ExpectError(const Encoded& e, const std::string& field) {
    const Status s = Decode(e);
    EXPECT_FALSE(s.ok()) << "expected an error naming " << field;
    EXPECT_TRUE(s.code() == StatusCode::kDataLoss || s.code() == StatusCode::kInvalidArgument)
        << s.ToString();
    EXPECT_NE(s.message().find(field), std::string::npos) << s.ToString();
  }

  template <typename T>
  Encoded WithParam(size_t at, T value) {
    Encoded e = good_;
    std::memcpy(e.params.data() + at, &value, sizeof(T));
    return e;
  }

  std::unique_ptr<CocktailCodec> codec_;
  std::vector<float> x_;
  Encoded good_;
};

TEST_F(CocktailHostile, TheUnmodifiedFrameDecodes) { EXPECT_TRUE(Decode(good_).ok()); }

TEST_F(CocktailHostile, BitmapPopcountMustMatchTheKeptCount) {
  Encoded e = good_;
  e.payload[0] ^= 0x80;  // one position more or less
  ExpectError(e, "cocktail.bitmap");
  ExpectError(WithParam<uint64_t>(kKeptAt, 21), "cocktail.bitmap");  // k is 20
  ExpectError(WithParam<uint64_t>(kKeptAt, 19), "cocktail.bitmap");
}

TEST_F(CocktailHostile, KeptCountMustFitTheSampledSet) {
  ExpectError(WithParam<uint64_t>(kKeptAt, 101), "cocktail.kept");
  ExpectError(WithParam<uint64_t>(kKeptAt, ~uint64_t{0}), "cocktail.kept");
  ExpectError(WithParam<uint64_t>(kKeptAt, 0), "cocktail.kept");
}

TEST_F(CocktailHostile, BitmapPaddingBitsMustBeZero) {
  Encoded e = good_;
  e.payload[12] |= 0x01;  // 100 positions: the last 4 bits of byte 12 are padding
  ExpectError(e, "cocktail.bitmap: padding");
}

TEST_F(CocktailHostile, BadMaskFields) {
  ExpectError(WithParam<uint8_t>(kModeAt, 7), "cocktail.mask_mode");
  ExpectError(WithParam<uint64_t>(kStrideAt, 0), "cocktail.stride");
  // A different stride changes the sampled count, so the bitmap length no longer fits.
  EXPECT_FALSE(Decode(WithParam<uint64_t>(kStrideAt, 3)).ok());
  EXPECT_FALSE(Decode(WithParam<uint64_t>(kStrideAt, ~uint64_t{0})).ok());
  // Seeded mode with the rolling layout: the params run out or do not match.
  EXPECT_FALSE(Decode(WithParam<uint8_t>(kModeAt, 1)).ok());
}

TEST_F(CocktailHostile, BadQuantizerFields) {
  ExpectError(WithParam<uint8_t>(kBitsAt, 9), "params.bits");
  ExpectError(WithParam<uint8_t>(kBitsAt, 1), "cocktail.bits");
  ExpectError(WithParam<uint8_t>(kScaleModeAt, 0), "cocktail.scale_mode");
  ExpectError(WithParam<uint8_t>(kScaleModeAt, 9), "params.scale_mode");
  ExpectError(WithParam<uint32_t>(kGroupAt, 0), "params.tile");
  // Another group size changes the number of scales: the payload length no longer matches.
  EXPECT_FALSE(Decode(WithParam<uint32_t>(kGroupAt, 5)).ok());
}

TEST_F(CocktailHostile, WrongLengths) {
  for (size_t cut = 0; cut < good_.params.size(); ++cut) {
    Encoded e = good_;
    e.params.resize(cut);
    EXPECT_EQ(Decode(e).code(), StatusCode::kDataLoss) << "params cut at " << cut;
  }
  for (size_t cut = 0; cut < good_.payload.size(); ++cut) {
    Encoded e = good_;
    e.payload.resize(cut);
    EXPECT_EQ(Decode(e).code(), StatusCode::kDataLoss) << "payload cut at " << cut;
  }
  Encoded e = good_;
  e.payload.resize(12);
  ExpectError(e, "cocktail.bitmap: truncated");
  e = good_;
  e.payload.push_back(0);
  ExpectError(e, "cocktail.payload");
  e = good_;
  e.params.push_back(0);
  ExpectError(e, "cocktail.params");
  // A frame that claims more elements has a larger sampled set than its bitmap.
  e = good_;
  e.elements = 2003;
  e.shape = {2003};
  EXPECT_EQ(Decode(e).code(), StatusCode::kDataLoss);
}

TEST_F(CocktailHostile, RandomCorruptionNeverCrashes) {
  SplitMix64 rng(99);
  int failures = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    Encoded e = good_;
    std::vector<uint8_t>& target = rng.Next() % 2 ? e.params : e.payload;
    const int flips = 1 + static_cast<int>(rng.Next() % 3);
    for (int f = 0; f < flips; ++f) target[rng.Next() % target.size()] ^= 1u << (rng.Next() % 8);
    if (rng.Next() % 4 == 0) target.resize(rng.Next() % (target.size() + 1));
    failures += !Decode(e).ok();
  }
  EXPECT_GT(failures, 1000);  // most corruptions are caught (flipped codes are not detectable)
}

TEST_F(CocktailHostile, SeededFramesAreCheckedToo) {
  auto codec = MakeCocktail(CocktailConfig(0.1, 0.2, 4, MaskMode::kSeeded));
  Encoded e;
  ASSERT_TRUE(EncodeRaw(*codec, x_, {1003}, 4, &e).ok());
  std::vector<float> out(1003);
  ASSERT_TRUE(codec->Decode(e.Content(), out.data()).ok());
  // u8 mode, u64 step, u64 seed, u64 threshold, u64 kept, ...
  Encoded bad = e;
  const uint64_t too_big = (uint64_t{1} << 32) + 1;
  std::memcpy(bad.params.data() + 17, &too_big, 8);
  EXPECT_NE(codec->Decode(bad.Content(), out.data()).message().find("cocktail.threshold"),
            std::string::npos);
  bad = e;
  bad.params[9] ^= 1;  // another seed samples another set: the bitmap no longer fits
  EXPECT_FALSE(codec->Decode(bad.Content(), out.data()).ok());
}

TEST(CocktailCodec, DamagedFramesFailCleanly) {
  auto codec = MakeCodec(CocktailConfig(0.1, 0.2, 4));
  const std::vector<float> x = MakeGaussian(2000, 14);
  std::vector<uint8_t> frame;
  ASSERT_TRUE(EncodeFrame(**codec, {x.data(), DType::kFloat32, {2000}}, &frame).ok());
  DecodedTensor out;
  std::vector<uint8_t> cut(frame.begin(), frame.end() - 1);
  EXPECT_EQ(DecodeFrame(**codec, cut, {}, &out).code(), StatusCode::kDataLoss);
  frame[60] ^= 4;
  EXPECT_EQ(DecodeFrame(**codec, frame, {}, &out).code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace geotrain::compression
