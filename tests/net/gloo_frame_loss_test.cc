// Sealed frames that are cut short, skipped or foreign, sent by a peer that speaks Gloo's wire
// protocol but not geotrain's (a bare ProcessGroupGloo joined to the group as rank 1): the
// receiver must fail at once with DATA_LOSS naming the link, not wait for its timeout.
//
// The peer writes what GlooPeerExchange would: on channel kFrames a u64 length on tag 0, then the
// sealed bytes on tag 1 (gloo_transport.cc, Tag()).
#include <gtest/gtest.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "net/frame_sealer.h"
#include "net/gloo_transport.h"
#include "tests/net/gloo_test_group.h"

namespace geotrain::net::testing {
namespace {

using c10d::ProcessGroupGloo;

const std::string kJobKey(32, 'j');
constexpr milliseconds kLongTimeout{60000};  // what a stalled receive would wait for

// What rank 1 does once connected.
using PeerScript = std::function<void(ProcessGroupGloo& group, const std::string& group_name)>;

void SendBytes(ProcessGroupGloo& group, void* data, size_t bytes, int tag) {
  std::vector<at::Tensor> tensors{
      at::from_blob(data, {static_cast<int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte))};
  group.send(tensors, 0, tag)->wait();
}

void SendFrame(ProcessGroupGloo& group, std::vector<uint8_t> frame) {
  uint64_t length = frame.size();
  SendBytes(group, &length, sizeof(length), 0);
  SendBytes(group, frame.data(), frame.size(), 1);
}

// Frame `sequence` of the stream rank 1 -> rank 0 on kFrames, sealed under `job_key`.
std::vector<uint8_t> SealedFrame(const std::string& job_key, const std::string& group_name,
                                 uint64_t sequence, size_t bytes) {
  auto key = DeriveSealKey(job_key, group_name);
  EXPECT_TRUE(key.ok());
  auto sealer = FrameSealer::Create(*key, {1, 0, 0});
  EXPECT_TRUE(sealer.ok());
  const std::vector<uint8_t> plain = Pattern(bytes, 3);
  std::vector<uint8_t> sealed(bytes + kSealOverhead);
  for (uint64_t i = 0; i <= sequence; ++i) {
    EXPECT_TRUE((*sealer)->Seal(plain, sealed.data()).ok());
  }
  return sealed;
}

// Runs rank 0 (a sealed geotrain transport receiving one frame with a 60 s timeout) against
// rank 1 playing `script`; returns rank 0's status and how long its Recv took.
std::pair<Status, double> ReceiveFrom(const PeerScript& script) {
  TempDir dir;
  const std::string name = UniqueGroupName("loss");
  Status received;
  double seconds = 0;
  RunOnEveryRank(2, [&](int rank) {
    auto store = CreateFileStore(dir.File("store"), 2, milliseconds(10000));
    ASSERT_TRUE(store.ok());
    if (rank == 1) {
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>("geotrain/net/" + name, *store);
      auto options = ProcessGroupGloo::Options::create(milliseconds(10000));
      options->devices.push_back(ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      auto group = c10::make_intrusive<ProcessGroupGloo>(prefixed, 1, 2, options);
      script(*group, name);
      return;  // the group is destroyed: its link closes
    }
    GlooTransportOptions options;
    options.rank = 0;
    options.size = 2;
    options.group_name = name;
    options.frame_key = kJobKey;
    options.connect_timeout = milliseconds(10000);
    auto transport = CreateGlooTransport(options, *store);
    ASSERT_TRUE(transport.ok()) << transport.status().ToString();
    std::vector<uint8_t> frame;
    const auto start = std::chrono::steady_clock::now();
    received = (*transport)->Recv(1, &frame, kLongTimeout);
    seconds = SecondsSince(start);
  });
  return {received, seconds};
}

void ExpectDataLoss(const std::pair<Status, double>& result, const std::string& text) {
  EXPECT_EQ(result.first.code(), StatusCode::kDataLoss) << result.first.ToString();
  EXPECT_NE(result.first.message().find("recv from rank 1"), std::string::npos)
      << result.first.message();
  EXPECT_NE(result.first.message().find(text), std::string::npos) << result.first.message();
  EXPECT_LT(result.second, 30.0) << "waited for the timeout instead of failing at once";
}

TEST(GlooFrameLossTest, AFrameCutShortByAClosedLinkIsDataLossAtOnce) {
  ExpectDataLoss(ReceiveFrom([](ProcessGroupGloo& group, const std::string&) {
                   uint64_t promised = 1000 + kSealOverhead;  // and then nothing: the peer leaves
                   SendBytes(group, &promised, sizeof(promised), 0);
                 }),
                 "frame truncated: the peer announced 1033 bytes and the link closed");
}

TEST(GlooFrameLossTest, ASkippedSequenceNumberIsDataLossAtOnce) {
  // Frame 0 was "dropped": frame 1 comes first.
  ExpectDataLoss(ReceiveFrom([](ProcessGroupGloo& group, const std::string& name) {
                   SendFrame(group, SealedFrame(kJobKey, name, 1, 100));
                 }),
                 "frame 1 out of order (expected 0)");
}

TEST(GlooFrameLossTest, AFrameOfAnotherJobsKeyIsDataLossAtOnce) {
  ExpectDataLoss(ReceiveFrom([](ProcessGroupGloo& group, const std::string& name) {
                   SendFrame(group, SealedFrame(std::string(32, 'x'), name, 0, 100));
                 }),
                 "frame sealed with another key");
}

TEST(GlooFrameLossTest, GarbageInPlaceOfAFrameIsDataLossAtOnce) {
  ExpectDataLoss(ReceiveFrom([](ProcessGroupGloo& group, const std::string&) {
                   SendFrame(group, Pattern(100, 9));
                 }),
                 "(frames)");
}

}  // namespace
}  // namespace geotrain::net::testing
