#include "net/link_stats.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace geotrain::net {
namespace {

TEST(LinkStatsTest, CountsEachPeerAndDirectionApart) {
  LinkStats stats(3);
  stats.RecordSend(1, 100, 400, 0.5);
  stats.RecordSend(1, 50, 50, 0.25);
  stats.RecordRecv(2, 70, 0, 1.0);
  stats.AddRawBytesReceived(2, 280);
  const std::vector<LinkCounters> all = stats.Snapshot();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].frames_sent + all[0].frames_received, 0u);
  EXPECT_EQ(all[1].frames_sent, 2u);
  EXPECT_EQ(all[1].bytes_sent, 150u);
  EXPECT_EQ(all[1].raw_bytes_sent, 450u);
  EXPECT_DOUBLE_EQ(all[1].send_seconds, 0.75);
  EXPECT_EQ(all[1].frames_received, 0u);
  ASSERT_EQ(all[1].recent_sends.size(), 2u);
  EXPECT_EQ(all[1].recent_sends[0].bytes, 100u);
  EXPECT_DOUBLE_EQ(all[1].recent_sends[1].seconds, 0.25);
  EXPECT_EQ(all[2].frames_received, 1u);
  EXPECT_EQ(all[2].bytes_received, 70u);
  EXPECT_EQ(all[2].raw_bytes_received, 280u);
  EXPECT_TRUE(all[2].recent_sends.empty());
}

TEST(LinkStatsTest, KeepsOnlyTheMostRecentSamples) {
  LinkStats stats(2, /*max_samples_per_direction=*/3);
  for (uint64_t i = 1; i <= 5; ++i) stats.RecordRecv(1, i, i, 0.1);
  const LinkCounters link = stats.Snapshot(1);
  EXPECT_EQ(link.frames_received, 5u);
  EXPECT_EQ(link.bytes_received, 15u);
  ASSERT_EQ(link.recent_recvs.size(), 3u);
  EXPECT_EQ(link.recent_recvs.front().bytes, 3u);
  EXPECT_EQ(link.recent_recvs.back().bytes, 5u);
}

TEST(LinkStatsTest, IgnoresUnknownRanksAndResets) {
  LinkStats stats(2);
  stats.RecordSend(5, 1, 1, 1);
  stats.RecordRecv(-1, 1, 1, 1);
  stats.AddRawBytesReceived(2, 1);
  EXPECT_EQ(stats.Snapshot(5).frames_sent, 0u);
  stats.RecordSend(1, 10, 10, 1);
  stats.Reset();
  const LinkCounters link = stats.Snapshot(1);
  EXPECT_EQ(link.bytes_sent, 0u);
  EXPECT_TRUE(link.recent_sends.empty());
}

TEST(LinkStatsTest, ConcurrentRecordsAllCount) {
  LinkStats stats(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&stats, t] {
      for (int i = 0; i < 10000; ++i) {
        stats.RecordSend(t, 1, 2, 0);
        if (i % 100 == 0) stats.Snapshot();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const LinkCounters& link : stats.Snapshot()) {
    EXPECT_EQ(link.bytes_sent, 10000u);
    EXPECT_EQ(link.raw_bytes_sent, 20000u);
  }
}

}  // namespace
}  // namespace geotrain::net
