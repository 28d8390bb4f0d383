// Every kind of damage to a valid frame must end in a clean error (or, where the damage happens to
// leave a well-formed frame, a tensor of the declared size): never a crash or a silent misread.
#include <gtest/gtest.h>

#include <cstring>

#include "common/hash_random.h"
#include "compression/codec.h"
#include "compression/frame.h"
#include "compression/link_decoder.h"
#include "compression/synthetic_tensors.h"

namespace geotrain::compression {
namespace {

std::vector<CodecConfig> EveryCodec() {
  std::vector<CodecConfig> configs;
  for (int id = 0; id < kNumCodecs; ++id) {
    CodecConfig c;
    c.codec = static_cast<CodecId>(id);
    c.tile_size = 16;
    c.density = 0.1;
    c.rank = 2;
    c.max_cache_samples = 8;
    configs.push_back(c);
  }
  CodecConfig zstd;
  zstd.codec = CodecId::kFixpoint;
  zstd.zstd_level = 3;
  configs.push_back(zstd);
  return configs;
}

// Two frames of one link (a first visit and a delta for the delta codecs).
std::vector<std::vector<uint8_t>> ValidFrames(const CodecConfig& config) {
  auto codec = MakeCodec(config);
  EXPECT_TRUE(codec.ok()) << codec.status().ToString();
  const std::vector<uint64_t> ids = {5, 9};
  std::vector<std::vector<uint8_t>> frames;
  for (int step = 0; step < 2; ++step) {
    const std::vector<float> x = MakeActivationLike(2 * 4, 32, 10 + step, 1);
    std::vector<uint8_t> frame;
    const Status s =
        EncodeFrame(**codec, {x.data(), DType::kFloat32, {2, 4, 32}, ids, uint64_t(step)}, &frame);
    EXPECT_TRUE(s.ok()) << config.Describe() << ": " << s.ToString();
    frames.push_back(frame);
  }
  return frames;
}

enum class Damage { kFlip, kTruncate, kExtend };

std::vector<uint8_t> Damaged(const std::vector<uint8_t>& frame, Damage damage, SplitMix64& rng) {
  std::vector<uint8_t> out = frame;
  switch (damage) {
    case Damage::kFlip:
      for (int flips = 1 + rng.Next() % 3; flips > 0; --flips) {
        out[rng.Next() % out.size()] ^= static_cast<uint8_t>(1u << (rng.Next() % 8));
      }
      break;
    case Damage::kTruncate:
      out.resize(rng.Next() % out.size());
      break;
    case Damage::kExtend:
      for (int n = 1 + rng.Next() % 16; n > 0; --n) out.push_back(static_cast<uint8_t>(rng.Next()));
      break;
  }
  return out;
}

TEST(FrameCorruption, DamagedFramesAreRejectedByTheChecksumOrTheLengths) {
  SplitMix64 rng(42);
  int rejected = 0;
  for (const CodecConfig& config : EveryCodec()) {
    const auto frames = ValidFrames(config);
    for (int i = 0; i < 300; ++i) {
      LinkDecoder decoder(config);
      DecodedTensor out;
      ASSERT_TRUE(decoder.Decode(frames[0], &out).ok()) << config.Describe();
      const auto damage = static_cast<Damage>(i % 3);
      const std::vector<uint8_t> bad = Damaged(frames[1], damage, rng);
      const Status s = decoder.Decode(bad, &out);
      ASSERT_FALSE(s.ok()) << config.Describe() << " accepted damage " << int(damage);
      EXPECT_FALSE(s.message().empty());
      ++rejected;
    }
  }
  EXPECT_GE(rejected, 3000);
}

// With the checksum recomputed, damage reaches each codec's own validation.
TEST(FrameCorruption, ResealedDamageNeverCrashesAndNeverMisreportsSizes) {
  SplitMix64 rng(7);
  FrameLimits limits;
  limits.max_elements = 1 << 20;
  limits.max_payload_bytes = 1 << 24;
  int clean_errors = 0, accepted = 0;
  for (const CodecConfig& config : EveryCodec()) {
    const auto frames = ValidFrames(config);
    for (int i = 0; i < 400; ++i) {
      LinkDecoder decoder(config, limits);
      DecodedTensor out;
      ASSERT_TRUE(decoder.Decode(frames[0], &out).ok());
      std::vector<uint8_t> bad = Damaged(frames[1], static_cast<Damage>(i % 3), rng);
      UpdateFrameChecksum(bad.data(), bad.size());
      const Status s = decoder.Decode(bad, &out);
      if (s.ok()) {
        ++accepted;  // e.g. a flipped low bit of a value: still a well-formed frame
        ASSERT_EQ(out.values.size(), static_cast<size_t>(NumElements(out.shape)));
      } else {
        ++clean_errors;
        EXPECT_FALSE(s.message().empty());
      }
    }
  }
  EXPECT_GT(clean_errors, 0);
  std::printf("resealed damage: %d clean errors, %d well-formed\n", clean_errors, accepted);
}

TEST(FrameCorruption, HeaderFieldsAreCheckedBeforeAnyAllocation) {
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  const auto frame = ValidFrames(config)[0];
  LinkDecoder decoder(config);
  DecodedTensor out;

  auto with = [&](size_t offset, std::vector<uint8_t> bytes) {
    std::vector<uint8_t> f = frame;
    std::copy(bytes.begin(), bytes.end(), f.begin() + offset);
    UpdateFrameChecksum(f.data(), f.size());
    return decoder.Decode(f, &out);
  };
  EXPECT_NE(with(0, {'X'}).message().find("frame.magic"), std::string::npos);
  EXPECT_NE(with(4, {9}).message().find("frame.version"), std::string::npos);
  EXPECT_NE(with(5, {200}).message().find("frame.codec"), std::string::npos);
  EXPECT_NE(with(6, {7}).message().find("frame.dtype"), std::string::npos);
  EXPECT_NE(with(7, {0x80}).message().find("frame.flags"), std::string::npos);
  EXPECT_NE(with(8, {9}).message().find("frame.ndim"), std::string::npos);
  // shape[0] = 2^40: far beyond the element limit.
  EXPECT_NE(with(40, {0, 0, 0, 0, 0, 1, 0, 0}).message().find("frame.shape[0]"), std::string::npos);
  // An empty tensor with an absurd last dimension: shape = [0, 4, 2^40].
  {
    std::vector<uint8_t> f = frame;
    const int64_t zero = 0, huge = int64_t{1} << 40;
    std::memcpy(f.data() + 40, &zero, 8);
    std::memcpy(f.data() + 56, &huge, 8);
    UpdateFrameChecksum(f.data(), f.size());
    EXPECT_NE(decoder.Decode(f, &out).message().find("frame.shape[2]"), std::string::npos);
  }
  // shape[0] = -1.
  EXPECT_NE(
      with(40, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}).message().find("frame.shape[0]"),
      std::string::npos);
}

}  // namespace
}  // namespace geotrain::compression
