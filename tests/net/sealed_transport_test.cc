// Transports with sealed frames (SealedPeerExchange): the whole contract over sealed fake and
// Gloo groups, and every attack on the wire (a flipped bit, a replay, a dropped or reordered
// frame, a frame of another job or group) refused with a clear DATA_LOSS.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "net/fake_transport.h"
#include "net/frame_sealer.h"
#include "tests/net/gloo_test_group.h"
#include "tests/net/transport_conformance.h"

namespace geotrain::net::testing {
namespace {

const std::string kJobKey(32, '\x11');
const std::string kOtherJobKey(32, '\x22');

TransportGroup SealedFakeGroup(int size, const std::string& key, const std::string& name,
                               FakeWireTap tap = nullptr) {
  FakeTransportOptions options;
  options.size = size;
  options.frame_key = key;
  options.group_name = name;
  options.wire_tap = std::move(tap);
  TransportGroup group;
  auto ranks = CreateFakeTransportGroup(options);
  if (!ranks.ok()) {
    group.status = ranks.status();
    return group;
  }
  group.ranks = std::move(ranks).value();
  return group;
}

TransportKind SealedFakeKind() {
  return {"SealedFake", [](int size) {
            return SealedFakeGroup(size, kJobKey, UniqueGroupName("job-1/g1/fake"));
          }};
}

TransportKind SealedGlooKind() {
  return {"SealedGloo", [](int size) {
            return CreateGlooGroup(
                size, [](GlooTransportOptions* options) { options->frame_key = kJobKey; });
          }};
}

INSTANTIATE_TEST_SUITE_P(Sealed, TransportConformanceTest,
                         ::testing::Values(SealedFakeKind(), SealedGlooKind()), KindName);

// Rank 0 sends `count` frames to rank 1, which receives until the first failure. Returns that
// failure (OK if every frame arrived) and checks the frames received before it.
Status SendFramesAndReceive(TransportGroup& group, int count) {
  Status received;
  RunOnEveryRank(2, [&](int rank) {
    Transport& t = *group.ranks[rank];
    for (int i = 0; i < count; ++i) {
      if (rank == 0) {
        // A send after the receiver failed may fail too (its links closed); that is not the test.
        if (!t.Send(1, Pattern(100 + i, i), kOpTimeout).ok()) return;
      } else {
        std::vector<uint8_t> frame;
        received = t.Recv(0, &frame, kOpTimeout);
        if (!received.ok()) return;
        EXPECT_EQ(frame, Pattern(100 + i, i)) << "frame " << i;
      }
    }
  });
  return received;
}

// Taps frames 0 -> 1 on the frames channel, calling `alter(index, bytes)` for each.
FakeWireTap FramesTap(std::function<bool(int index, std::vector<uint8_t>* bytes)> alter) {
  auto index = std::make_shared<int>(0);
  return [index, alter](int from, int to, Channel channel, std::vector<uint8_t>* bytes) {
    if (from != 0 || to != 1 || channel != Channel::kFrames) return true;
    return alter((*index)++, bytes);
  };
}

void ExpectRefused(const Status& status, const std::string& what) {
  EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
  EXPECT_NE(status.message().find("recv from rank 0 (frames): " + what), std::string::npos)
      << status.message();
}

TEST(SealedTransportTest, SealedFramesArriveWholeOverTheFake) {
  std::vector<std::vector<uint8_t>> wire;
  std::mutex mu;
  TransportGroup group =
      SealedFakeGroup(2, kJobKey, "job-1/g1/pp0", FramesTap([&](int, std::vector<uint8_t>* bytes) {
                        std::lock_guard<std::mutex> lock(mu);
                        wire.push_back(*bytes);
                        return true;
                      }));
  ASSERT_TRUE(group.status.ok()) << group.status.ToString();
  EXPECT_TRUE(SendFramesAndReceive(group, 3).ok());
  ASSERT_EQ(wire.size(), 3u);
  for (size_t i = 0; i < wire.size(); ++i) {
    ASSERT_EQ(wire[i].size(), 100 + i + kSealOverhead);
    EXPECT_EQ(wire[i][0], kSealVersion);
    // Not the plaintext.
    const std::vector<uint8_t> clear = Pattern(100 + i, static_cast<uint32_t>(i));
    EXPECT_NE(std::vector<uint8_t>(wire[i].begin() + kSealHeaderBytes,
                                   wire[i].begin() + kSealHeaderBytes + 100),
              std::vector<uint8_t>(clear.begin(), clear.begin() + 100));
  }
}

TEST(SealedTransportTest, AFlippedBitFailsTheReceiverAndThenTheTransport) {
  TransportGroup group =
      SealedFakeGroup(2, kJobKey, "job-1/g1/pp0", FramesTap([](int index, std::vector<uint8_t>* b) {
                        if (index == 1) (*b)[kSealHeaderBytes + 50] ^= 0x04;
                        return true;
                      }));
  const Status status = SendFramesAndReceive(group, 3);
  ExpectRefused(status, "frame 1: authentication failed (frame altered in transit)");
  // The error policy: the transport is broken and says why.
  std::vector<uint8_t> frame;
  const Status later = group.ranks[1]->Recv(0, &frame, kOpTimeout);
  EXPECT_EQ(later.code(), StatusCode::kFailedPrecondition) << later.ToString();
  EXPECT_NE(later.message().find("authentication failed"), std::string::npos);
}

TEST(SealedTransportTest, AReplayedFrameIsRefused) {
  auto kept = std::make_shared<std::vector<uint8_t>>();
  TransportGroup group = SealedFakeGroup(2, kJobKey, "job-1/g1/pp0",
                                         FramesTap([kept](int index, std::vector<uint8_t>* bytes) {
                                           if (index == 0) *kept = *bytes;
                                           if (index == 2)
                                             *bytes = *kept;  // frame 0 again in place of frame 2
                                           return true;
                                         }));
  ExpectRefused(SendFramesAndReceive(group, 3), "frame 0 replayed (expected 2)");
}

TEST(SealedTransportTest, ADroppedFrameMakesTheNextOneOutOfOrder) {
  TransportGroup group =
      SealedFakeGroup(2, kJobKey, "job-1/g1/pp0",
                      FramesTap([](int index, std::vector<uint8_t>*) { return index != 1; }));
  ExpectRefused(SendFramesAndReceive(group, 3), "frame 2 out of order (expected 1)");
}

TEST(SealedTransportTest, FramesOfAnotherJobOrGroupAreRefused) {
  // What another group puts on the wire, to be injected into ours.
  for (const auto& [key, name] : {std::pair<std::string, std::string>{kOtherJobKey, "job-1/g1/pp0"},
                                  {kJobKey, "job-1/g0/pp0"}}) {
    auto foreign = std::make_shared<std::vector<uint8_t>>();
    TransportGroup other = SealedFakeGroup(2, key, name, FramesTap([foreign](int, auto* bytes) {
                                             *foreign = *bytes;
                                             return true;
                                           }));
    ASSERT_TRUE(SendFramesAndReceive(other, 1).ok());
    TransportGroup group =
        SealedFakeGroup(2, kJobKey, "job-1/g1/pp0", FramesTap([foreign](int, auto* bytes) {
                          *bytes = *foreign;
                          return true;
                        }));
    ExpectRefused(SendFramesAndReceive(group, 1),
                  "frame sealed with another key (another job or group, or a stale rank)");
  }
}

TEST(SealedTransportTest, ClearFramesAreRefusedBySealedRanks) {
  TransportGroup group =
      SealedFakeGroup(2, kJobKey, "job-1/g1/pp0", FramesTap([](int, std::vector<uint8_t>* bytes) {
                        *bytes = Pattern(100, 0);  // what a rank without the key would send
                        return true;
                      }));
  ExpectRefused(SendFramesAndReceive(group, 1), "frame of seal version");
}

TEST(SealedTransportTest, ATamperedCollectiveFailsNamingItsChannel) {
  TransportGroup group = SealedFakeGroup(
      3, kJobKey, "job-1/g1/dp", [](int from, int, Channel channel, std::vector<uint8_t>* bytes) {
        if (from == 2 && channel == Channel::kAllReduce) bytes->back() ^= 1;  // the tag
        return true;
      });
  ASSERT_TRUE(group.status.ok());
  std::vector<Status> statuses(3);
  RunOnEveryRank(3, [&](int rank) {
    std::vector<float> values(64, static_cast<float>(rank));
    statuses[rank] = group.ranks[rank]->AllReduceSum(values, kOpTimeout);
  });
  // Rank 0 receives from rank 2 in the ring and finds the frame altered; the others then fail as
  // its links close.
  EXPECT_EQ(statuses[0].code(), StatusCode::kDataLoss) << statuses[0].ToString();
  EXPECT_NE(statuses[0].message().find("recv from rank 2 (all_reduce): frame 0: authentication "
                                       "failed"),
            std::string::npos)
      << statuses[0].message();
}

TEST(SealedTransportTest, KeysOfAnotherLengthAreRefused) {
  FakeTransportOptions options;
  options.size = 2;
  options.frame_key = "short";
  auto ranks = CreateFakeTransportGroup(options);
  ASSERT_FALSE(ranks.ok());
  EXPECT_EQ(ranks.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ranks.status().message().find("5 bytes, expected 32"), std::string::npos)
      << ranks.status().message();
  EXPECT_EQ(ranks.status().message().find("short"), std::string::npos) << "key material shown";

  TempDir dir;
  auto store = CreateFileStore(dir.File("store"), 1, milliseconds(1000));
  ASSERT_TRUE(store.ok());
  GlooTransportOptions gloo;
  gloo.frame_key = std::string(31, 'k');
  auto transport = CreateGlooTransport(gloo, *store);
  ASSERT_FALSE(transport.ok());
  EXPECT_EQ(transport.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(transport.status().message().find("frame_key: 31 bytes, expected 32"),
            std::string::npos)
      << transport.status().message();
}

TEST(SealedTransportTest, KillFakeRankReachesASealedFake) {
  TransportGroup group = SealedFakeGroup(2, kJobKey, "job-1/g1/pp0");
  ASSERT_TRUE(KillFakeRank(*group.ranks[0], 1).ok());
  std::vector<uint8_t> frame;
  const Status status = group.ranks[0]->Recv(1, &frame, kOpTimeout);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
}

TEST(SealedGlooTest, RanksWithDifferentKeysCannotTalk) {
  // Two ranks of one Gloo group, each with another job's key: they connect (Gloo knows nothing
  // of keys), and the first frame is refused, not waited for until the timeout.
  TransportGroup group = CreateGlooGroup(2, [](GlooTransportOptions* options) {
    options->frame_key = options->rank == 0 ? kJobKey : kOtherJobKey;
  });
  ASSERT_TRUE(group.status.ok()) << group.status.ToString();
  ExpectRefused(SendFramesAndReceive(group, 1),
                "frame sealed with another key (another job or group, or a stale rank)");
}

TEST(SealedGlooTest, AClearRankAndASealedRankCannotTalk) {
  TransportGroup group = CreateGlooGroup(2, [](GlooTransportOptions* options) {
    if (options->rank == 1) options->frame_key = kJobKey;
  });
  ASSERT_TRUE(group.status.ok()) << group.status.ToString();
  ExpectRefused(SendFramesAndReceive(group, 1), "frame of seal version");
}

TEST(SealedGlooTest, TheFrameLimitAppliesToTheFramesBeforeSealing) {
  TransportGroup group = CreateGlooGroup(2, [](GlooTransportOptions* options) {
    options->frame_key = kJobKey;
    options->max_frame_bytes = 1000;
  });
  ASSERT_TRUE(group.status.ok()) << group.status.ToString();
  Status received;
  RunOnEveryRank(2, [&](int rank) {
    if (rank == 0) {
      (void)group.ranks[0]->Send(1, Pattern(1000, 1), kOpTimeout);
      (void)group.ranks[0]->Send(1, Pattern(1001, 2), kOpTimeout);
    } else {
      std::vector<uint8_t> frame;
      EXPECT_TRUE(group.ranks[1]->Recv(0, &frame, kOpTimeout).ok());
      EXPECT_EQ(frame, Pattern(1000, 1));
      received = group.ranks[1]->Recv(0, &frame, kOpTimeout);
    }
  });
  EXPECT_EQ(received.code(), StatusCode::kDataLoss) << received.ToString();
}

}  // namespace
}  // namespace geotrain::net::testing
