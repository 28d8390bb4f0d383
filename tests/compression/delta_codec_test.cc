#include "compression/delta_codec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/half.h"
#include "common/hash_random.h"
#include "compression/codec.h"
#include "compression/frame.h"
#include "compression/synthetic_tensors.h"

namespace geotrain::compression {
namespace {

CodecConfig DeltaConfig(CodecId codec, int bits, int64_t slots = 64, int cache_bits = 4) {
  CodecConfig config;
  config.codec = codec;
  config.bits = bits;
  config.cache_bits = cache_bits;
  config.max_cache_samples = slots;
  return config;
}

// One sender and one receiver codec of a link.
struct Link {
  std::unique_ptr<Codec> sender;
  std::unique_ptr<Codec> receiver;

  explicit Link(const CodecConfig& config) {
    auto s = MakeCodec(config);
    auto r = MakeCodec(config);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    sender = std::move(s).value();
    receiver = std::move(r).value();
  }
  ActivationCache& sender_cache() { return *DeltaCodecCache(sender.get()); }
  ActivationCache& receiver_cache() { return *DeltaCodecCache(receiver.get()); }
};

Status Encode(Codec& codec, const std::vector<float>& x, const Shape& shape,
              const std::vector<uint64_t>& ids, std::vector<uint8_t>* frame,
              EncodeStats* stats = nullptr, uint64_t step = 0) {
  TensorView view;
  view.data = x.data();
  view.shape = shape;
  view.sample_ids = ids;
  view.step = step;
  return EncodeFrame(codec, view, frame, stats);
}

double RelativeError(const std::vector<float>& x, const std::vector<float>& xhat) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (static_cast<double>(x[i]) - xhat[i]) * (static_cast<double>(x[i]) - xhat[i]);
    norm += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(err / norm);
}

// Same samples, same recency order, same bytes.
void ExpectSameCaches(const ActivationCache& a, const ActivationCache& b) {
  ASSERT_EQ(a.IdsByRecency(), b.IdsByRecency());
  for (uint64_t id : a.IdsByRecency()) {
    const Span<const uint8_t> x = a.SampleBytes(id), y = b.SampleBytes(id);
    ASSERT_EQ(x.size(), y.size());
    ASSERT_EQ(std::memcmp(x.data(), y.data(), x.size()), 0) << "sample " << id;
    ASSERT_EQ(a.ContentHash(id), b.ContentHash(id));
  }
}

// x perturbed slightly: the next visit of a sample after a small training step.
std::vector<float> Drift(const std::vector<float>& x, uint64_t seed, float amount) {
  const std::vector<float> noise = MakeGaussian(x.size(), seed);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * (1 + 0.1f * amount) + amount * noise[i];
  return y;
}

double FixpointRelativeError(const std::vector<float>& x, const Shape& shape, int bits) {
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  config.bits = bits;
  auto codec = MakeCodec(config);
  std::vector<uint8_t> frame;
  EncodeStats stats;
  EXPECT_TRUE(EncodeFrame(**codec, {x.data(), DType::kFloat32, shape}, &frame, &stats).ok());
  return stats.rel_error;
}

struct RoundTripCase {
  CodecId codec;
  int bits;
};

class DeltaRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(DeltaRoundTrip, FirstVisitIsFp16AndSecondVisitIsFarMoreAccurateThanFixpoint) {
  const RoundTripCase p = GetParam();
  const Shape shape = {2, 16, 64};
  const std::vector<uint64_t> ids = {3, 9};
  Link link(DeltaConfig(p.codec, p.bits, 8, 8));
  const std::vector<float> x1 = MakeActivationLike(32, 64, 21);

  std::vector<uint8_t> frame;
  EncodeStats stats;
  ASSERT_TRUE(Encode(*link.sender, x1, shape, ids, &frame, &stats).ok());
  EXPECT_GT(stats.Ratio(), 1.9);  // fp16 plus a few header bytes
  DecodedTensor out;
  Status s = DecodeFrame(*link.receiver, frame, {}, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (size_t i = 0; i < x1.size(); ++i) ASSERT_EQ(out.values[i], HalfToFloat(FloatToHalf(x1[i])));
  EXPECT_NEAR(stats.rel_error, RelativeError(x1, out.values), 1e-7);

  const std::vector<float> x2 = Drift(x1, 22, 0.02f);
  ASSERT_TRUE(Encode(*link.sender, x2, shape, ids, &frame, &stats).ok());
  s = DecodeFrame(*link.receiver, frame, {}, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const double rel = RelativeError(x2, out.values);
  EXPECT_NEAR(stats.rel_error, rel, 1e-6 + 1e-4 * rel);  // the sender's x̂ is the receiver's
  EXPECT_LT(rel, FixpointRelativeError(x2, shape, p.bits) / 4) << "bits=" << p.bits;
  ExpectSameCaches(link.sender_cache(), link.receiver_cache());
  if (p.codec == CodecId::kDelta) {
    // The receiver's stage runs on m(ξ) itself.
    std::vector<float> cached(1024);
    ASSERT_TRUE(link.receiver_cache().Lookup(9, cached.data()).ok());
    for (int i = 0; i < 1024; ++i) ASSERT_EQ(out.values[1024 + i], cached[i]);
  }
}

std::vector<RoundTripCase> AllRoundTripCases() {
  std::vector<RoundTripCase> cases;
  for (CodecId codec : {CodecId::kDelta, CodecId::kDeltaLowBits}) {
    for (int bits = 2; bits <= 8; ++bits) cases.push_back({codec, bits});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Delta, DeltaRoundTrip, ::testing::ValuesIn(AllRoundTripCases()),
                         [](const ::testing::TestParamInfo<RoundTripCase>& info) {
                           return std::string(info.param.codec == CodecId::kDelta ? "delta"
                                                                                  : "lowbits") +
                                  std::to_string(info.param.bits);
                         });

struct LongRunCase {
  CodecId codec;
  int cache_bits;
};

class DeltaLongRun : public ::testing::TestWithParam<LongRunCase> {};

// 3000 micro-batches of 2 samples drawn from 50 ids through a 40-slot cache (so samples are
// evicted and come back in full), bits changing every few steps, activations drifting slowly.
TEST_P(DeltaLongRun, CachesStayByteIdenticalOverThousandsOfSteps) {
  const LongRunCase p = GetParam();
  const int64_t rows = 4, cols = 48, n = rows * cols;
  CodecConfig config = DeltaConfig(p.codec, 4, 40, p.cache_bits);
  Link link(config);
  std::vector<std::vector<float>> base(50);
  for (int id = 0; id < 50; ++id) base[id] = MakeActivationLike(rows, cols, 1000 + id);
  const int widths[] = {4, 2, 6, 3, 8, 5, 7};
  SplitMix64 rng(5);
  int full_samples = 0, returns_after_eviction = 0;
  std::vector<bool> ever_seen(50, false);
  std::vector<uint8_t> frame;
  DecodedTensor out;
  for (int step = 0; step < 3000; ++step) {
    if (step % 5 == 0) {
      config.bits = widths[(step / 5) % 7];
      config.rounding = (step / 35) % 2 ? Rounding::kStochastic : Rounding::kNearest;
      ASSERT_TRUE(link.sender->Reconfigure(config).ok());
    }
    const uint64_t a = rng.Next() % 50;
    uint64_t b = rng.Next() % 50;
    if (b == a) b = (a + 1) % 50;
    const std::vector<uint64_t> ids = {a, b};
    std::vector<float> x(2 * n);
    for (int k = 0; k < 2; ++k) {
      const float t = static_cast<float>(step) / 3000;
      for (int64_t i = 0; i < n; ++i) {
        x[k * n + i] = base[ids[k]][i] * (1 + 0.2f * t) + 0.3f * std::sin(0.01f * step + i);
      }
      if (!link.sender_cache().Contains(ids[k])) {
        ++full_samples;
        returns_after_eviction += ever_seen[ids[k]];
        ever_seen[ids[k]] = true;
      }
    }
    EncodeStats stats;
    ASSERT_TRUE(Encode(*link.sender, x, {2, rows, cols}, ids, &frame, &stats, step).ok());
    const Status s = DecodeFrame(*link.receiver, frame, {}, &out);
    ASSERT_TRUE(s.ok()) << "step " << step << ": " << s.ToString();
    const double rel = RelativeError(x, out.values);
    ASSERT_NEAR(stats.rel_error, rel, 1e-6 + 1e-4 * rel) << "step " << step;
    if (p.codec == CodecId::kDelta) {
      for (int k = 0; k < 2; ++k) {  // x̂ is the sender's new m(ξ), bit for bit
        const Span<const uint8_t> m = link.sender_cache().SampleBytes(ids[k]);
        for (int64_t i = 0; i < n; ++i) {
          uint16_t h;
          std::memcpy(&h, m.data() + 2 * i, 2);
          ASSERT_EQ(out.values[k * n + i], HalfToFloat(h)) << "step " << step;
        }
      }
    }
    if (step % 500 == 499) ExpectSameCaches(link.sender_cache(), link.receiver_cache());
  }
  ExpectSameCaches(link.sender_cache(), link.receiver_cache());
  EXPECT_EQ(link.sender_cache().size(), 40);
  EXPECT_GT(returns_after_eviction, 50);  // eviction really happened, and both ends agreed
  EXPECT_LT(full_samples, 1500);          // most of the 6000 visits went as deltas
}

INSTANTIATE_TEST_SUITE_P(Delta, DeltaLongRun,
                         ::testing::Values(LongRunCase{CodecId::kDelta, 4},
                                           LongRunCase{CodecId::kDeltaLowBits, 2},
                                           LongRunCase{CodecId::kDeltaLowBits, 8}),
                         [](const ::testing::TestParamInfo<LongRunCase>& info) {
                           return info.param.codec == CodecId::kDelta
                                      ? std::string("delta")
                                      : "lowbits" + std::to_string(info.param.cache_bits);
                         });

TEST(DeltaCodec, SteadyStateRatioAtFourBitsIsAtLeast7p5AndErrorFarBelowFixpoint) {
  const Shape shape = {4, 1024, 1600};
  const std::vector<float> x1 = MakeActivationLike(4 * 1024, 1600, 31);
  std::vector<float> x2(x1.size());
  for (size_t i = 0; i < x1.size(); ++i) x2[i] = x1[i] * 1.01f + 0.01f * std::sin(0.37f * i);
  Link link(DeltaConfig(CodecId::kDelta, 4));
  const std::vector<uint64_t> ids = {100, 101, 102, 103};
  std::vector<uint8_t> frame;
  EncodeStats stats;
  ASSERT_TRUE(Encode(*link.sender, x1, shape, ids, &frame, &stats).ok());
  DecodedTensor out;
  ASSERT_TRUE(DecodeFrame(*link.receiver, frame, {}, &out).ok());
  ASSERT_TRUE(Encode(*link.sender, x2, shape, ids, &frame, &stats).ok());
  ASSERT_TRUE(DecodeFrame(*link.receiver, frame, {}, &out).ok());
  EXPECT_GE(stats.Ratio(), 7.5);
  const double fixpoint = FixpointRelativeError(x2, shape, 4);
  EXPECT_LT(stats.rel_error, fixpoint / 20)
      << "delta " << stats.rel_error << " fixpoint " << fixpoint;
  EXPECT_NEAR(stats.rel_error, RelativeError(x2, out.values), 1e-6);
}

TEST(DeltaCodec, SecondVisitErrorIsFarBelowFixpointOfTheSameBits) {
  const Shape shape = {2, 256, 512};
  const std::vector<float> x1 = MakeActivationLike(512, 512, 41);
  const std::vector<float> x2 = Drift(x1, 42, 0.01f);
  for (CodecId codec : {CodecId::kDelta, CodecId::kDeltaLowBits}) {
    for (int bits : {2, 4}) {
      Link link(DeltaConfig(codec, bits, 4, 8));
      std::vector<uint8_t> frame;
      EncodeStats stats;
      DecodedTensor out;
      ASSERT_TRUE(Encode(*link.sender, x1, shape, {5, 6}, &frame).ok());
      ASSERT_TRUE(DecodeFrame(*link.receiver, frame, {}, &out).ok());
      ASSERT_TRUE(Encode(*link.sender, x2, shape, {5, 6}, &frame, &stats).ok());
      ASSERT_TRUE(DecodeFrame(*link.receiver, frame, {}, &out).ok());
      const double fixpoint = FixpointRelativeError(x2, shape, bits);
      EXPECT_LT(stats.rel_error, fixpoint / 10)
          << CodecName(codec) << " bits=" << bits << ": " << stats.rel_error << " vs " << fixpoint;
    }
  }
}

TEST(DeltaCodec, BitsMayInterleaveOnOneLinkAndTheCacheIsKept) {
  CodecConfig config = DeltaConfig(CodecId::kDelta, 4);
  Link link(config);
  std::vector<float> x = MakeActivationLike(16, 32, 51);
  std::vector<uint8_t> frame;
  DecodedTensor out;
  for (int i = 0; i < 12; ++i) {
    config.bits = i % 2 ? 2 : 4;
    ASSERT_TRUE(link.sender->Reconfigure(config).ok());
    x = Drift(x, 60 + i, 0.01f);
    EncodeStats stats;
    ASSERT_TRUE(Encode(*link.sender, x, {1, 16, 32}, {77}, &frame, &stats).ok());
    ASSERT_TRUE(DecodeFrame(*link.receiver, frame, {}, &out).ok()) << i;
    if (i > 0) {
      EXPECT_LT(stats.rel_error, 0.01) << i;  // a delta against the kept cache
    }
  }
  ExpectSameCaches(link.sender_cache(), link.receiver_cache());
}

TEST(DeltaCodec, ErrorPolicyRefusesANewSampleWhenFullAndChangesNothing) {
  CodecConfig config = DeltaConfig(CodecId::kDelta, 4, 2);
  config.cache_full_policy = CacheFullPolicy::kError;
  Link link(config);
  const std::vector<float> x = MakeActivationLike(8, 16, 61);
  std::vector<uint8_t> frame;
  ASSERT_TRUE(Encode(*link.sender, x, {2, 4, 16}, {1, 2}, &frame).ok());
  const uint64_t hash1 = link.sender_cache().ContentHash(1);
  const Status s = Encode(*link.sender, x, {2, 4, 16}, {1, 3}, &frame);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("max_cache_samples"), std::string::npos) << s.ToString();
  EXPECT_EQ(link.sender_cache().ContentHash(1), hash1);
  EXPECT_FALSE(link.sender_cache().Contains(3));
  EXPECT_EQ(link.sender_cache().IdsByRecency(), (std::vector<uint64_t>{1, 2}));
}

TEST(DeltaCodec, RejectsBadInputsWithoutTouchingTheCache) {
  Link link(DeltaConfig(CodecId::kDelta, 4, 3));
  std::vector<float> x = MakeActivationLike(8, 16, 71);
  std::vector<uint8_t> frame;
  ASSERT_TRUE(Encode(*link.sender, x, {2, 4, 16}, {1, 2}, &frame).ok());
  const std::vector<uint64_t> before = link.sender_cache().IdsByRecency();
  const uint64_t hash1 = link.sender_cache().ContentHash(1);

  auto expect_invalid = [&](const std::vector<float>& input, const Shape& shape,
                            const std::vector<uint64_t>& ids, const std::string& needle) {
    const Status s = Encode(*link.sender, input, shape, ids, &frame);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
    EXPECT_EQ(link.sender_cache().IdsByRecency(), before);
    EXPECT_EQ(link.sender_cache().ContentHash(1), hash1);
  };
  expect_invalid(x, {2, 4, 16}, {}, "input.sample_ids");
  expect_invalid(x, {2, 4, 16}, {1}, "input.sample_ids");
  expect_invalid(x, {2, 4, 16}, {5, 5}, "input.sample_ids[1]: duplicate id 5");
  expect_invalid(x, {4, 2, 16}, {1, 2, 7, 8}, "max_cache_samples");
  expect_invalid(x, {2, 64}, {1, 9}, "input.shape");  // another sample shape
  std::vector<float> bad = x;
  for (float v : {NAN, INFINITY, -1e6f}) {
    bad[100] = v;  // sample 1 is cached: a delta; sample 0 first goes through untouched
    expect_invalid(bad, {2, 4, 16}, {1, 2}, "input[1] (sample 2)");
    expect_invalid(bad, {2, 4, 16}, {3, 4}, "input[1] (sample 4)");  // new samples: full
  }
  std::vector<float> scalar = {1.0f};
  const Status s = Encode(*link.sender, scalar, {}, {}, &frame);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

// Decodes `frame` with its params and payload replaced (bypassing the checksum, as a bug or an
// attacker behind the frame layer would).
Status DecodeTampered(Codec& codec, const std::vector<uint8_t>& frame,
                      void (*tamper)(std::vector<uint8_t>* params, std::vector<uint8_t>* payload)) {
  std::vector<uint8_t> scratch;
  FrameContent content;
  GEOTRAIN_RETURN_IF_ERROR(ParseFrame(frame, {}, &scratch, &content));
  std::vector<uint8_t> params(content.params.begin(), content.params.end());
  std::vector<uint8_t> payload(content.payload.begin(), content.payload.end());
  tamper(&params, &payload);
  content.params = params;
  content.payload = payload;
  std::vector<float> out(content.elements);
  return codec.Decode(content, out.data());
}

TEST(DeltaCodec, HostileFramesGiveCleanErrors) {
  const Shape shape = {2, 4, 16};
  const std::vector<float> x1 = MakeActivationLike(8, 16, 81);
  const std::vector<float> x2 = Drift(x1, 82, 0.01f);
  Link link(DeltaConfig(CodecId::kDelta, 4));
  std::vector<uint8_t> full_frame, delta_frame;
  ASSERT_TRUE(Encode(*link.sender, x1, shape, {1, 2}, &full_frame).ok());
  ASSERT_TRUE(Encode(*link.sender, x2, shape, {1, 2}, &delta_frame).ok());
  DecodedTensor out;

  // A delta for a sample the receiver never saw.
  Status s = DecodeFrame(*link.receiver, delta_frame, {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("delta.sample_ids[0]: sample 1 is not in the receiver's cache "
                             "(caches out of sync)"),
            std::string::npos)
      << s.ToString();
  EXPECT_EQ(link.receiver_cache().size(), 0);

  // Truncated payload, trailing bytes, bad counts: DATA_LOSS and nothing stored.
  auto truncate = [](std::vector<uint8_t>*, std::vector<uint8_t>* payload) { payload->pop_back(); };
  auto extend = [](std::vector<uint8_t>*, std::vector<uint8_t>* payload) { payload->push_back(0); };
  auto truncate_params = [](std::vector<uint8_t>* params, std::vector<uint8_t>*) {
    params->pop_back();
  };
  auto big_count = [](std::vector<uint8_t>* params, std::vector<uint8_t>*) {
    const uint32_t n = 0xffffffffu;
    std::memcpy(params->data() + 16, &n, 4);  // after quant params, cache_bits, policy, capacity
  };
  auto duplicate = [](std::vector<uint8_t>* params, std::vector<uint8_t>*) {
    std::memcpy(params->data() + 20 + 9, params->data() + 20, 8);  // full samples: 9 bytes each
  };
  auto bad_kind = [](std::vector<uint8_t>* params, std::vector<uint8_t>*) { (*params)[28] = 7; };
  auto infinity = [](std::vector<uint8_t>*, std::vector<uint8_t>* payload) {
    (*payload)[2 * 5] = 0x00;
    (*payload)[2 * 5 + 1] = 0x7c;
  };
  struct Case {
    const char* name;
    void (*tamper)(std::vector<uint8_t>*, std::vector<uint8_t>*);
    const char* needle;
  };
  const Case cases[] = {
      {"truncated payload", truncate, "delta.payload.samples"},
      {"trailing payload", extend, "delta.payload"},
      {"truncated params", truncate_params, "delta.num_samples"},
      {"huge sample count", big_count, "delta.num_samples"},
      {"duplicate ids", duplicate, "delta.sample_ids[1]: duplicate id 1"},
      {"unknown kind", bad_kind, "delta.sample_kinds[0]"},
      {"fp16 infinity", infinity, "delta.payload.samples[0]"},
  };
  for (const Case& c : cases) {
    s = DecodeTampered(*link.receiver, full_frame, c.tamper);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << c.name << ": " << s.ToString();
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << c.name << ": " << s.ToString();
    EXPECT_EQ(link.receiver_cache().size(), 0) << c.name;
  }

  // The real full frame; then a truncated delta frame changes nothing either.
  ASSERT_TRUE(DecodeFrame(*link.receiver, full_frame, {}, &out).ok());
  const uint64_t hash = link.receiver_cache().ContentHash(2);
  s = DecodeTampered(*link.receiver, delta_frame, truncate);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_EQ(link.receiver_cache().ContentHash(2), hash);
  ASSERT_TRUE(DecodeFrame(*link.receiver, delta_frame, {}, &out).ok());
  ExpectSameCaches(link.sender_cache(), link.receiver_cache());

  // A frame whose samples have another shape than the receiver's cache.
  Link other(DeltaConfig(CodecId::kDelta, 4));
  std::vector<uint8_t> wide;
  ASSERT_TRUE(Encode(*other.sender, MakeActivationLike(2, 64, 83), {2, 64}, {1, 2}, &wide).ok());
  s = DecodeFrame(*link.receiver, wide, {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("[1, 64]"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("[4, 16]"), std::string::npos) << s.ToString();

  // Samples in params that do not match shape[0].
  auto one_less = [](std::vector<uint8_t>* params, std::vector<uint8_t>*) {
    const uint32_t n = 1;
    std::memcpy(params->data() + 16, &n, 4);
    params->resize(params->size() - 9);
  };
  s = DecodeTampered(*other.receiver, full_frame, one_less);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("delta.num_samples"), std::string::npos) << s.ToString();
}

TEST(DeltaCodec, ALostFrameIsDetectedByTheBaseHash) {
  const Shape shape = {1, 8, 16};
  std::vector<float> x = MakeActivationLike(8, 16, 91);
  Link link(DeltaConfig(CodecId::kDelta, 4));
  std::vector<uint8_t> frame;
  DecodedTensor out;
  ASSERT_TRUE(Encode(*link.sender, x, shape, {4}, &frame).ok());
  ASSERT_TRUE(DecodeFrame(*link.receiver, frame, {}, &out).ok());
  x = Drift(x, 92, 0.05f);
  ASSERT_TRUE(Encode(*link.sender, x, shape, {4}, &frame).ok());  // lost on the way
  x = Drift(x, 93, 0.05f);
  ASSERT_TRUE(Encode(*link.sender, x, shape, {4}, &frame).ok());
  const Status s = DecodeFrame(*link.receiver, frame, {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("delta.base_hashes[0]: sample 4"), std::string::npos) << s.ToString();
}

TEST(DeltaCodec, ClearingBothEndsAfterAResumeResendsInFull) {
  const Shape shape = {1, 8, 16};
  const std::vector<float> x = MakeActivationLike(8, 16, 95);
  Link link(DeltaConfig(CodecId::kDeltaLowBits, 4));
  std::vector<uint8_t> frame;
  DecodedTensor out;
  EncodeStats first, after;
  ASSERT_TRUE(Encode(*link.sender, x, shape, {4}, &frame, &first).ok());
  ASSERT_TRUE(DecodeFrame(*link.receiver, frame, {}, &out).ok());
  link.sender_cache().Clear();
  link.receiver_cache().Clear();
  ASSERT_TRUE(Encode(*link.sender, x, shape, {4}, &frame, &after).ok());
  EXPECT_EQ(after.wire_bytes, first.wire_bytes);  // full again
  ASSERT_TRUE(DecodeFrame(*link.receiver, frame, {}, &out).ok());
  ExpectSameCaches(link.sender_cache(), link.receiver_cache());
}

TEST(DeltaCodec, ReceiverWithOtherCacheSettingsFailsLoudly) {
  const Shape shape = {1, 8, 16};
  const std::vector<float> x = MakeActivationLike(8, 16, 97);
  auto sender = MakeCodec(DeltaConfig(CodecId::kDeltaLowBits, 4, 16, 4));
  auto fewer_slots = MakeCodec(DeltaConfig(CodecId::kDeltaLowBits, 4, 8, 4));
  auto other_bits = MakeCodec(DeltaConfig(CodecId::kDeltaLowBits, 4, 16, 2));
  std::vector<uint8_t> frame;
  ASSERT_TRUE(Encode(**sender, x, shape, {1}, &frame).ok());
  DecodedTensor out;
  Status s = DecodeFrame(**fewer_slots, frame, {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("delta.max_cache_samples"), std::string::npos) << s.ToString();
  s = DecodeFrame(**other_bits, frame, {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("delta.cache_bits"), std::string::npos) << s.ToString();
}

TEST(DeltaCodec, ReconfigureKeepsTheCacheAndRefusesCacheChangesWhileInUse) {
  CodecConfig config = DeltaConfig(CodecId::kDeltaLowBits, 4);
  auto codec = MakeCodec(config);
  config.cache_bits = 2;  // nothing cached yet: allowed
  ASSERT_TRUE((*codec)->Reconfigure(config).ok());
  EXPECT_EQ(DeltaCodecCache(**codec)->cache_bits(), 2);
  std::vector<uint8_t> frame;
  ASSERT_TRUE(Encode(**codec, MakeActivationLike(8, 16, 99), {1, 8, 16}, {1}, &frame).ok());
  config.bits = 3;
  ASSERT_TRUE((*codec)->Reconfigure(config).ok());
  EXPECT_TRUE(DeltaCodecCache(**codec)->Contains(1));
  config.cache_bits = 8;
  Status s = (*codec)->Reconfigure(config);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("cache_bits"), std::string::npos);
  config.cache_bits = 2;
  config.max_cache_samples = 3;
  s = (*codec)->Reconfigure(config);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("max_cache_samples"), std::string::npos);
}

TEST(DeltaCodec, OtherScaleModesRoundingAndZstdKeepTheCachesInStep) {
  for (ScaleMode mode : {ScaleMode::kPerRow, ScaleMode::kPerTile}) {
    CodecConfig config = DeltaConfig(CodecId::kDelta, 3);
    config.scale_mode = mode;
    config.tile_size = 24;
    config.rounding = Rounding::kStochastic;
    config.seed = 17;
    config.zstd_level = 3;
    Link link(config);
    std::vector<float> x = MakeActivationLike(3 * 6, 40, 101);
    std::vector<uint8_t> frame;
    DecodedTensor out;
    for (int step = 0; step < 20; ++step) {
      x = Drift(x, 200 + step, 0.01f);
      EncodeStats stats;
      ASSERT_TRUE(Encode(*link.sender, x, {3, 6, 40}, {7, 8, 9}, &frame, &stats, step).ok());
      ASSERT_TRUE(DecodeFrame(*link.receiver, frame, {}, &out).ok());
      EXPECT_NEAR(stats.rel_error, RelativeError(x, out.values), 1e-6);
    }
    ExpectSameCaches(link.sender_cache(), link.receiver_cache());
  }
}

TEST(DeltaCodec, RandomlyCorruptedFramesNeverCrash) {
  const Shape shape = {2, 4, 16};
  const std::vector<float> x1 = MakeActivationLike(8, 16, 111);
  for (CodecId codec : {CodecId::kDelta, CodecId::kDeltaLowBits}) {
    Link link(DeltaConfig(codec, 3));
    std::vector<uint8_t> full_frame, delta_frame;
    ASSERT_TRUE(Encode(*link.sender, x1, shape, {1, 2}, &full_frame).ok());
    ASSERT_TRUE(Encode(*link.sender, Drift(x1, 112, 0.01f), shape, {1, 2}, &delta_frame).ok());
    std::vector<uint8_t> scratch;
    FrameContent content;
    ASSERT_TRUE(ParseFrame(delta_frame, {}, &scratch, &content).ok());
    const std::vector<uint8_t> params(content.params.begin(), content.params.end());
    const std::vector<uint8_t> payload(content.payload.begin(), content.payload.end());
    SplitMix64 rng(113);
    std::vector<float> out(content.elements);
    int accepted = 0, rejected = 0;
    for (int trial = 0; trial < 2000; ++trial) {
      // Keep the receiver primed so deltas are accepted often enough to reach deep code.
      DecodedTensor primed;
      for (uint64_t id : link.receiver_cache().IdsByRecency()) link.receiver_cache().Erase(id);
      ASSERT_TRUE(DecodeFrame(*link.receiver, full_frame, {}, &primed).ok());
      std::vector<uint8_t> p = params, q = payload;
      std::vector<uint8_t>& target = rng.Next() % 2 ? p : q;
      const int flips = 1 + rng.Next() % 3;
      for (int f = 0; f < flips && !target.empty(); ++f) {
        target[rng.Next() % target.size()] ^= static_cast<uint8_t>(1 + rng.Next() % 255);
      }
      if (rng.Next() % 8 == 0 && !target.empty()) target.resize(rng.Next() % target.size());
      FrameContent tampered = content;
      tampered.params = p;
      tampered.payload = q;
      const Status s = link.receiver->Decode(tampered, out.data());
      if (s.ok()) {
        ++accepted;  // damage that leaves a well-formed frame (a flipped code) decodes
        for (float v : out) ASSERT_TRUE(std::isfinite(v));
      } else {
        ++rejected;
      }
    }
    EXPECT_GT(accepted, 100) << CodecName(codec);
    EXPECT_GT(rejected, 100) << CodecName(codec);
  }
}

}  // namespace
}  // namespace geotrain::compression
