// StepTrafficMeter over fake job links: group ranks become (stage, replica), kinds follow the
// group and direction, deltas cover one period, collectives' raw bytes follow the sync's ratio.
#include "runtime/step_traffic.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

namespace geotrain::runtime {
namespace {

constexpr net::Timeout kTimeout{10000};

StageAssignment RankOf(int num_stages, int dp_size, int stage, int replica) {
  StageAssignment assignment;
  assignment.num_stages = num_stages;
  assignment.dp_size = dp_size;
  assignment.stage = stage;
  assignment.dp_rank = replica;
  return assignment;
}

// `from` sends a frame of `bytes` (declaring `raw_bytes`) to `to` over their shared group.
void Transfer(net::Transport& from, int to_rank, net::Transport& to, int from_rank, size_t bytes,
              uint64_t raw_bytes) {
  std::thread receiver([&] {
    std::vector<uint8_t> frame;
    const Status status = to.Recv(from_rank, &frame, kTimeout);
    EXPECT_TRUE(status.ok()) << status.ToString();
    if (status.ok()) to.link_stats().AddRawBytesReceived(from_rank, raw_bytes);
  });
  const std::vector<uint8_t> frame(bytes, 7);
  const Status status = from.Send(to_rank, frame, kTimeout, raw_bytes);
  EXPECT_TRUE(status.ok()) << status.ToString();
  receiver.join();
}

// Runs an all-reduce of `floats` values over every member of a group at once.
void AllReduce(const std::vector<net::Transport*>& members, size_t floats) {
  std::vector<std::thread> threads;
  for (net::Transport* member : members) {
    threads.emplace_back([member, floats] {
      std::vector<float> values(floats, 1.0f);
      const Status status =
          member->AllReduceSum(Span<float>(values.data(), values.size()), kTimeout);
      EXPECT_TRUE(status.ok()) << status.ToString();
    });
  }
  for (std::thread& t : threads) t.join();
}

const LinkTraffic* Find(const std::vector<LinkTraffic>& traffic, int stage, int replica,
                        TrafficKind kind, bool sent) {
  for (const LinkTraffic& t : traffic) {
    if (t.peer_stage == stage && t.peer_replica == replica && t.kind == kind && t.sent == sent) {
      return &t;
    }
  }
  return nullptr;
}

std::string Describe(const std::vector<LinkTraffic>& traffic) {
  std::string text;
  for (const LinkTraffic& t : traffic) {
    text += std::string(TrafficKindName(t.kind)) + (t.sent ? " to (" : " from (") +
            std::to_string(t.peer_stage) + "," + std::to_string(t.peer_replica) + ") " +
            std::to_string(t.wire_bytes) + " B\n";
  }
  return text;
}

TEST(StepTrafficMeter, ReportsEachPeerKindAndDirectionOfOnePeriod) {
  // 2 stages x 2 replicas, fused embedding group: global rank = replica * 2 + stage.
  std::vector<StageLinks> links = CreateFakeJobLinks(2, 2, true, true);
  StageLinks& me = links[0];  // stage 0, replica 0
  StepTrafficMeter meter(RankOf(2, 2, 0, 0), me);

  Transfer(*me.downstream, 1, *links[1].upstream, 0, 1000, 4000);   // activation to (1, 0)
  Transfer(*links[1].upstream, 0, *me.downstream, 1, 6000, 12000);  // gradient from (1, 0)
  AllReduce({me.data_parallel.get(), links[2].data_parallel.get()}, 256);
  // Fused embedding group ranks: 0 (0,0), 1 (1,0), 2 (0,1), 3 (1,1).
  Transfer(*me.embedding, 3, *links[3].embedding, 0, 300, 300);
  Transfer(*links[2].embedding, 0, *me.embedding, 2, 200, 200);

  TrafficPeriod period;
  period.activation_bits = 4;
  period.gradient_bits = 8;
  period.data_parallel_bits = 6;
  period.embedding_bits = 32;
  period.activation_relative_error = 0.25;
  period.gradient_relative_error = 0.5;
  // The sync's own accounting: 4x compression.
  period.data_parallel.raw_bytes = 4000;
  period.data_parallel.wire_bytes = 1000;
  period.embedding.raw_bytes = 500;
  period.embedding.wire_bytes = 500;
  std::vector<LinkTraffic> traffic;
  meter.Measure(period, &traffic);
  SCOPED_TRACE(Describe(traffic));

  const LinkTraffic* activation = Find(traffic, 1, 0, TrafficKind::kActivation, true);
  ASSERT_NE(activation, nullptr);
  EXPECT_EQ(activation->wire_bytes, 1000u);
  EXPECT_EQ(activation->raw_bytes, 4000u);
  EXPECT_EQ(activation->bits, 4u);
  EXPECT_EQ(activation->relative_error, 0.25);
  EXPECT_GE(activation->seconds, 0);
  // The 1000-byte frame is a small one; the 6000-byte one is not.
  ASSERT_TRUE(activation->latency_seconds.has_value());
  EXPECT_GE(*activation->latency_seconds, 0);

  const LinkTraffic* gradient = Find(traffic, 1, 0, TrafficKind::kGradient, false);
  ASSERT_NE(gradient, nullptr);
  EXPECT_EQ(gradient->wire_bytes, 6000u);
  EXPECT_EQ(gradient->raw_bytes, 12000u);
  EXPECT_EQ(gradient->bits, 8u);
  EXPECT_EQ(gradient->relative_error, 0);  // received: the sender knows its error, not us
  EXPECT_EQ(gradient->latency_seconds, activation->latency_seconds);  // one peer, one estimate

  for (const bool sent : {true, false}) {
    const LinkTraffic* dp = Find(traffic, 0, 1, TrafficKind::kDataParallel, sent);
    ASSERT_NE(dp, nullptr) << sent;
    EXPECT_GT(dp->wire_bytes, 0u);
    EXPECT_EQ(dp->raw_bytes, 4 * dp->wire_bytes);
    EXPECT_EQ(dp->bits, 6u);
    EXPECT_EQ(dp->relative_error, 0);
  }
  const LinkTraffic* embedding_sent = Find(traffic, 1, 1, TrafficKind::kEmbedding, true);
  ASSERT_NE(embedding_sent, nullptr);
  EXPECT_EQ(embedding_sent->wire_bytes, 300u);
  EXPECT_EQ(embedding_sent->raw_bytes, 300u);
  EXPECT_EQ(embedding_sent->bits, 32u);
  const LinkTraffic* embedding_received = Find(traffic, 0, 1, TrafficKind::kEmbedding, false);
  ASSERT_NE(embedding_received, nullptr);
  EXPECT_EQ(embedding_received->wire_bytes, 200u);
  // Nothing else moved: no entry without bytes.
  EXPECT_EQ(traffic.size(), 6u);

  // The next period holds only what happened after the first.
  meter.Measure(period, &traffic);
  EXPECT_TRUE(traffic.empty()) << Describe(traffic);
  Transfer(*me.downstream, 1, *links[1].upstream, 0, 10, 40);
  meter.Measure(period, &traffic);
  ASSERT_EQ(traffic.size(), 1u) << Describe(traffic);
  EXPECT_EQ(traffic[0].wire_bytes, 10u);
  EXPECT_EQ(traffic[0].raw_bytes, 40u);

  // Collective frames whose sync has not accounted for them yet (a background exchange that
  // ends after the snapshot) take the ratio of everything so far.
  AllReduce({me.data_parallel.get(), links[2].data_parallel.get()}, 16);
  meter.Measure(period, &traffic);
  const LinkTraffic* late = Find(traffic, 0, 1, TrafficKind::kDataParallel, true);
  ASSERT_NE(late, nullptr) << Describe(traffic);
  EXPECT_EQ(late->raw_bytes, 4 * late->wire_bytes);
}

TEST(StepTrafficMeter, MapsTheGroupsOfAMiddleStageAndThePerReplicaEmbeddingPair) {
  // 3 stages x 2 replicas, embedding pairs per replica: global rank = replica * 3 + stage.
  std::vector<StageLinks> links = CreateFakeJobLinks(3, 2, true, false);
  StageLinks& middle = links[4];  // stage 1, replica 1
  StageLinks& last = links[5];    // stage 2, replica 1
  StepTrafficMeter middle_meter(RankOf(3, 2, 1, 1), middle);
  StepTrafficMeter last_meter(RankOf(3, 2, 2, 1), last);

  Transfer(*links[3].downstream, 1, *middle.upstream, 0, 100, 100);  // activation from (0, 1)
  Transfer(*middle.upstream, 0, *links[3].downstream, 1, 200, 200);  // gradient to (0, 1)
  Transfer(*middle.downstream, 1, *last.upstream, 0, 300, 300);      // activation to (2, 1)
  Transfer(*middle.data_parallel, 0, *links[1].data_parallel, 1, 400, 400);  // to (1, 0)
  Transfer(*last.embedding, 0, *links[3].embedding, 1, 500, 500);            // to (0, 1)

  TrafficPeriod period;
  std::vector<LinkTraffic> traffic;
  middle_meter.Measure(period, &traffic);
  SCOPED_TRACE(Describe(traffic));
  ASSERT_EQ(traffic.size(), 4u);
  const LinkTraffic* from_prev = Find(traffic, 0, 1, TrafficKind::kActivation, false);
  const LinkTraffic* to_prev = Find(traffic, 0, 1, TrafficKind::kGradient, true);
  const LinkTraffic* to_next = Find(traffic, 2, 1, TrafficKind::kActivation, true);
  const LinkTraffic* dp = Find(traffic, 1, 0, TrafficKind::kDataParallel, true);
  ASSERT_TRUE(from_prev && to_prev && to_next && dp);
  EXPECT_EQ(from_prev->wire_bytes, 100u);
  EXPECT_EQ(to_prev->wire_bytes, 200u);
  EXPECT_EQ(to_next->wire_bytes, 300u);
  // Without the sync's accounting the frames count as they are.
  EXPECT_EQ(dp->raw_bytes, 400u);

  last_meter.Measure(period, &traffic);
  const LinkTraffic* embedding = Find(traffic, 0, 1, TrafficKind::kEmbedding, true);
  ASSERT_NE(embedding, nullptr) << Describe(traffic);
  EXPECT_EQ(embedding->wire_bytes, 500u);
}

TEST(StepTrafficMeter, CodecBitsFollowTheCodec) {
  compression::CodecConfig config;
  EXPECT_EQ(CodecBits(config), 32u);  // none, float32
  config.wire_dtype = compression::DType::kBFloat16;
  EXPECT_EQ(CodecBits(config), 16u);
  config.bits = 4;
  for (const auto id : {compression::CodecId::kFixpoint, compression::CodecId::kDelta,
                        compression::CodecId::kDeltaLowBits}) {
    config.codec = id;
    EXPECT_EQ(CodecBits(config), 4u) << compression::CodecName(id);
  }
  config.codec = compression::CodecId::kCocktail;
  config.quant_bits = 2;
  EXPECT_EQ(CodecBits(config), 2u);
  for (const auto id : {compression::CodecId::kTah, compression::CodecId::kTopK,
                        compression::CodecId::kRandK, compression::CodecId::kPowerSgd}) {
    config.codec = id;
    EXPECT_EQ(CodecBits(config), 0u) << compression::CodecName(id);
  }
}

TEST(StepTrafficMeter, DataParallelBitsFollowTheMode) {
  DataParallelSettings settings;
  EXPECT_EQ(DataParallelBits(settings, 0), 32u);
  settings.mode = DataParallelMode::kPowerSgd;
  settings.compressed_stages = 1;
  EXPECT_EQ(DataParallelBits(settings, 0), 0u);
  EXPECT_EQ(DataParallelBits(settings, 1), 32u);  // past the selective stages: all-reduce
  settings.mode = DataParallelMode::kCocktail;
  settings.codec.quant_bits = 4;
  EXPECT_EQ(DataParallelBits(settings, 1), 4u);
  settings.mode = DataParallelMode::kQuantizedMomentum;
  EXPECT_EQ(DataParallelBits(settings, 0), 8u);  // not fixpoint: AC-SGD's default
  settings.codec.codec = compression::CodecId::kFixpoint;
  settings.codec.bits = 6;
  EXPECT_EQ(DataParallelBits(settings, 0), 6u);
}

}  // namespace
}  // namespace geotrain::runtime
