// FrameSealer on its own: round trips, and every way a frame can be refused.
#include "net/frame_sealer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/net/transport_test_util.h"

namespace geotrain::net {
namespace {

using testing::Pattern;

const std::string kJobKey(32, '\x5a');
const std::string kOtherJobKey(32, '\xa5');

SealKey Key(const std::string& job_key = kJobKey, const std::string& group = "job-1/g1/pp0") {
  StatusOr<SealKey> key = DeriveSealKey(job_key, group);
  EXPECT_TRUE(key.ok()) << key.status().ToString();
  return *key;
}

std::unique_ptr<FrameSealer> Sealer(const SealKey& key, FrameStream stream = {0, 1, 0}) {
  auto sealer = FrameSealer::Create(key, stream);
  EXPECT_TRUE(sealer.ok()) << sealer.status().ToString();
  return std::move(sealer).value();
}

std::vector<uint8_t> SealNext(FrameSealer& sealer, const std::vector<uint8_t>& plaintext) {
  std::vector<uint8_t> sealed(plaintext.size() + kSealOverhead);
  const Status status = sealer.Seal(plaintext, sealed.data());
  EXPECT_TRUE(status.ok()) << status.ToString();
  return sealed;
}

Status OpenNext(FrameSealer& opener, const std::vector<uint8_t>& sealed,
                std::vector<uint8_t>* plaintext) {
  plaintext->resize(sealed.size() - kSealOverhead);
  return opener.Open(sealed, plaintext->data());
}

TEST(FrameSealerTest, RoundTripsFramesOfEverySizeInOrder) {
  const SealKey key = Key();
  auto sealer = Sealer(key);
  auto opener = Sealer(key);
  for (size_t size :
       {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{1000}, size_t{1} << 20}) {
    const std::vector<uint8_t> plaintext = Pattern(size, 7);
    const std::vector<uint8_t> sealed = SealNext(*sealer, plaintext);
    ASSERT_EQ(sealed.size(), size + kSealOverhead);
    EXPECT_EQ(sealed[0], kSealVersion);
    if (size >= 16) {
      // Encrypted: the plaintext does not appear as is.
      EXPECT_NE(std::vector<uint8_t>(sealed.begin() + kSealHeaderBytes,
                                     sealed.begin() + kSealHeaderBytes + 16),
                std::vector<uint8_t>(plaintext.begin(), plaintext.begin() + 16));
    }
    std::vector<uint8_t> opened;
    const Status status = OpenNext(*opener, sealed, &opened);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(opened, plaintext);
  }
  EXPECT_EQ(sealer->next_sequence(), 6u);
  EXPECT_EQ(opener->next_sequence(), 6u);
}

TEST(FrameSealerTest, TheSameFrameSealsDifferentlyEachTime) {
  auto sealer = Sealer(Key());
  const std::vector<uint8_t> plaintext = Pattern(64, 1);
  EXPECT_NE(SealNext(*sealer, plaintext), SealNext(*sealer, plaintext));
}

TEST(FrameSealerTest, SubkeysDifferByJobKeyAndGroupAndRejectBadKeys) {
  EXPECT_NE(Key().key, Key(kOtherJobKey).key);
  EXPECT_NE(Key().key, Key(kJobKey, "job-1/g2/pp0").key);
  EXPECT_NE(Key().id, Key(kJobKey, "job-1/g2/pp0").id);
  EXPECT_EQ(Key().key, Key().key);
  auto bad = DeriveSealKey(std::string(5, 'k'), "g");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("5 bytes, expected 32"), std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(DeriveSealKey("", "g").ok());
}

TEST(FrameSealerTest, EveryFlippedBitIsRefused) {
  const SealKey key = Key();
  const std::vector<uint8_t> plaintext = Pattern(40, 3);
  auto sealer = Sealer(key);
  const std::vector<uint8_t> sealed = SealNext(*sealer, plaintext);
  for (size_t bit = 0; bit < sealed.size() * 8; ++bit) {
    std::vector<uint8_t> altered = sealed;
    altered[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    auto opener = Sealer(key);
    std::vector<uint8_t> opened;
    const Status status = OpenNext(*opener, altered, &opened);
    ASSERT_FALSE(status.ok()) << "bit " << bit;
    EXPECT_EQ(status.code(), StatusCode::kDataLoss);
    EXPECT_EQ(opener->next_sequence(), 0u);
  }
  // The message says what was found where it can tell.
  std::vector<uint8_t> altered = sealed;
  altered[kSealHeaderBytes + 5] ^= 1;
  auto opener = Sealer(key);
  std::vector<uint8_t> opened;
  const Status status = OpenNext(*opener, altered, &opened);
  EXPECT_NE(status.message().find("authentication failed (frame altered in transit)"),
            std::string::npos)
      << status.message();
}

TEST(FrameSealerTest, ReplayedAndSkippedFramesAreRefusedByNumber) {
  const SealKey key = Key();
  auto sealer = Sealer(key);
  auto opener = Sealer(key);
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 4; ++i) frames.push_back(SealNext(*sealer, Pattern(10, i)));
  std::vector<uint8_t> opened;
  ASSERT_TRUE(OpenNext(*opener, frames[0], &opened).ok());
  ASSERT_TRUE(OpenNext(*opener, frames[1], &opened).ok());

  Status replayed = OpenNext(*opener, frames[0], &opened);
  EXPECT_EQ(replayed.code(), StatusCode::kDataLoss);
  EXPECT_EQ(replayed.message(), "frame 0 replayed (expected 2)");
  Status skipped = OpenNext(*opener, frames[3], &opened);
  EXPECT_EQ(skipped.message(), "frame 3 out of order (expected 2)");
  // Refusals do not move the stream on: the right frame still opens.
  ASSERT_TRUE(OpenNext(*opener, frames[2], &opened).ok());
  EXPECT_EQ(opened, Pattern(10, 2));
}

TEST(FrameSealerTest, AnotherKeyIsToldApartFromTampering) {
  auto sealer = Sealer(Key(kOtherJobKey));
  const std::vector<uint8_t> sealed = SealNext(*sealer, Pattern(10, 0));
  auto opener = Sealer(Key());
  std::vector<uint8_t> opened;
  const Status status = OpenNext(*opener, sealed, &opened);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(status.message(),
            "frame sealed with another key (another job or group, or a stale rank)");
}

TEST(FrameSealerTest, AFrameOfAnotherLinkDirectionOrChannelDoesNotOpen) {
  const SealKey key = Key();
  auto sealer = Sealer(key, {0, 1, 0});
  const std::vector<uint8_t> sealed = SealNext(*sealer, Pattern(10, 0));
  for (const FrameStream stream :
       {FrameStream{1, 0, 0}, FrameStream{0, 2, 0}, FrameStream{2, 1, 0}, FrameStream{0, 1, 1}}) {
    auto opener = Sealer(key, stream);
    std::vector<uint8_t> opened;
    const Status status = OpenNext(*opener, sealed, &opened);
    EXPECT_EQ(status.code(), StatusCode::kDataLoss);
    EXPECT_NE(status.message().find("authentication failed"), std::string::npos)
        << status.message();
  }
}

TEST(FrameSealerTest, ShortOrClearFramesAreRefused) {
  auto opener = Sealer(Key());
  std::vector<uint8_t> out(64);
  const std::vector<uint8_t> short_frame(kSealOverhead - 1, 1);
  Status status = opener->Open(short_frame, out.data());
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("shorter than a sealed frame's 33"), std::string::npos)
      << status.message();
  const std::vector<uint8_t> clear_frame(kSealOverhead + 8, 0);
  status = opener->Open(clear_frame, out.data());
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("seal version 0"), std::string::npos) << status.message();
}

TEST(FrameSealerTest, OneSealerSealsAndOpensWithTheSameContext) {
  // Opening then sealing switches the direction of one reused cipher context; both must work.
  const SealKey key = Key();
  auto sender = Sealer(key);
  auto both = Sealer(key);
  auto receiver = Sealer(key);
  const std::vector<uint8_t> first = SealNext(*sender, Pattern(100, 1));
  std::vector<uint8_t> opened;
  ASSERT_TRUE(OpenNext(*both, first, &opened).ok());
  const std::vector<uint8_t> second = SealNext(*both, Pattern(100, 2));  // frame 1
  ASSERT_TRUE(OpenNext(*receiver, first, &opened).ok());
  ASSERT_TRUE(OpenNext(*receiver, second, &opened).ok());
  EXPECT_EQ(opened, Pattern(100, 2));
}

}  // namespace
}  // namespace geotrain::net
