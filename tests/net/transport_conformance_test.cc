// The contract of net/transport.h, checked against every implementation (see
// transport_conformance.h). Ranks run as threads of this process.
#include "tests/net/transport_conformance.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <random>
#include <thread>

namespace geotrain::net::testing {
namespace {

using std::chrono::steady_clock;

// Scheduling slack allowed past a timeout (loaded CI machines, two cores shared).
constexpr double kSlackSeconds = 1.5;
constexpr milliseconds kShortTimeout{300};

std::vector<uint8_t> MustRecv(Transport& transport, int peer) {
  std::vector<uint8_t> frame;
  Status status = transport.Recv(peer, &frame, kOpTimeout);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return frame;
}

TEST_P(TransportConformanceTest, SendRecvOfEmptyTinyAndMegabyteFramesInBothDirections) {
  TransportGroup group = MakeGroup(2);
  if (group.ranks.empty()) return;
  const std::vector<size_t> sizes = {0, 1, 1 << 20};
  RunOnEveryRank(2, [&](int rank) {
    Transport& t = *group.ranks[rank];
    const int peer = 1 - rank;
    // Rank 0 sends first and rank 1 receives first, then the other way round.
    for (int round = 0; round < 2; ++round) {
      const bool sending = (round == 0) == (rank == 0);
      const uint32_t seed = round == 0 ? 0 : 1;
      for (size_t size : sizes) {
        if (sending) {
          Status status = t.Send(peer, Pattern(size, seed), kOpTimeout);
          EXPECT_TRUE(status.ok()) << status.ToString();
        } else {
          EXPECT_EQ(MustRecv(t, peer), Pattern(size, seed)) << "frame of " << size << " bytes";
        }
      }
    }
  });
}

TEST_P(TransportConformanceTest, SendAndRecvWithOnePeerRunConcurrently) {
  TransportGroup group = MakeGroup(2);
  if (group.ranks.empty()) return;
  constexpr int kFrames = 20;
  RunOnEveryRank(2, [&](int rank) {
    Transport& t = *group.ranks[rank];
    const int peer = 1 - rank;
    // Both ranks send and receive at once, as a pipeline stage does (activations one way,
    // gradients the other); frames must arrive in order.
    std::thread sender([&] {
      for (int i = 0; i < kFrames; ++i) {
        Status status = t.Send(peer, Pattern(i * 997, rank * 100 + i), kOpTimeout);
        EXPECT_TRUE(status.ok()) << status.ToString();
      }
    });
    for (int i = 0; i < kFrames; ++i) {
      EXPECT_EQ(MustRecv(t, peer), Pattern(i * 997, peer * 100 + i)) << "frame " << i;
    }
    sender.join();
  });
}

TEST_P(TransportConformanceTest, FramesSentFromSeveralThreadsArriveWhole) {
  TransportGroup group = MakeGroup(2);
  if (group.ranks.empty()) return;
  constexpr int kThreads = 3;
  constexpr int kFramesPerThread = 8;
  RunOnEveryRank(2, [&](int rank) {
    Transport& t = *group.ranks[rank];
    if (rank == 0) {
      std::vector<std::thread> senders;
      for (int s = 0; s < kThreads; ++s) {
        senders.emplace_back([&, s] {
          for (int i = 0; i < kFramesPerThread; ++i) {
            Status status = t.Send(1, Pattern(1000 + 100 * s, s), kOpTimeout);
            EXPECT_TRUE(status.ok()) << status.ToString();
          }
        });
      }
      for (std::thread& sender : senders) sender.join();
    } else {
      std::vector<int> per_thread(kThreads, 0);
      for (int i = 0; i < kThreads * kFramesPerThread; ++i) {
        const std::vector<uint8_t> frame = MustRecv(t, 0);
        const int s = (static_cast<int>(frame.size()) - 1000) / 100;
        ASSERT_TRUE(s >= 0 && s < kThreads) << "frame of " << frame.size() << " bytes";
        EXPECT_EQ(frame, Pattern(1000 + 100 * s, s)) << "frames interleaved";
        per_thread[s]++;
      }
      for (int count : per_thread) EXPECT_EQ(count, kFramesPerThread);
    }
  });
}

TEST_P(TransportConformanceTest, AllReduceSumIsExactAndBitIdenticalOnEveryRank) {
  constexpr int kSize = 3;
  TransportGroup group = MakeGroup(kSize);
  if (group.ranks.empty()) return;
  // Lengths below, at and above the number of ranks, and one not divisible by it.
  const std::vector<size_t> lengths = {0, 1, 2, 3, 5, 1001};
  std::vector<std::vector<std::vector<float>>> results(kSize);
  RunOnEveryRank(kSize, [&](int rank) {
    for (size_t n : lengths) {
      std::vector<float> values(n);
      std::mt19937 random(rank * 7919 + static_cast<uint32_t>(n));
      std::uniform_real_distribution<float> uniform(-1, 1);
      for (float& v : values) v = uniform(random);
      Status status = group.ranks[rank]->AllReduceSum(values, kOpTimeout);
      EXPECT_TRUE(status.ok()) << status.ToString();
      results[rank].push_back(values);
    }
  });
  for (size_t k = 0; k < lengths.size(); ++k) {
    std::vector<double> expected(lengths[k], 0.0);
    for (int rank = 0; rank < kSize; ++rank) {
      std::mt19937 random(rank * 7919 + static_cast<uint32_t>(lengths[k]));
      std::uniform_real_distribution<float> uniform(-1, 1);
      for (double& e : expected) e += uniform(random);
    }
    for (int rank = 0; rank < kSize; ++rank) {
      ASSERT_EQ(results[rank][k].size(), lengths[k]);
      // Bit-identical to rank 0 (a fixed summation order), and the sum up to float rounding.
      if (lengths[k] > 0) {
        EXPECT_EQ(std::memcmp(results[rank][k].data(), results[0][k].data(), lengths[k] * 4), 0)
            << "rank " << rank << ", length " << lengths[k];
      }
      for (size_t i = 0; i < lengths[k]; ++i) {
        EXPECT_NEAR(results[rank][k][i], expected[i], 1e-5) << "rank " << rank << " [" << i << "]";
      }
    }
  }
}

TEST_P(TransportConformanceTest, AllReduceSumOfMismatchedLengthsFailsCleanly) {
  constexpr int kSize = 3;
  TransportGroup group = MakeGroup(kSize);
  if (group.ranks.empty()) return;
  std::atomic<int> invalid_arguments{0};
  RunOnEveryRank(kSize, [&](int rank) {
    std::vector<float> values(rank == 2 ? 11 : 10, 1.0f);  // a caller bug on rank 2
    const auto start = steady_clock::now();
    Status status = group.ranks[rank]->AllReduceSum(values, kShortTimeout);
    EXPECT_FALSE(status.ok()) << "rank " << rank;
    EXPECT_LT(SecondsSince(start), 0.3 + kSlackSeconds);
    if (status.code() == StatusCode::kInvalidArgument) {
      invalid_arguments++;
      EXPECT_NE(status.message().find(rank == 2 ? "rank 1 has 10 values, this rank 11"
                                                : "rank 2 has 11 values, this rank 10"),
                std::string::npos)
          << status.message();
    }
  });
  EXPECT_GE(invalid_arguments, 1) << "nobody said what was wrong";
}

TEST_P(TransportConformanceTest, AllGatherOfUnequalSizes) {
  constexpr int kSize = 3;
  TransportGroup group = MakeGroup(kSize);
  if (group.ranks.empty()) return;
  const std::vector<size_t> sizes = {70000, 0, 5};
  RunOnEveryRank(kSize, [&](int rank) {
    auto gathered = group.ranks[rank]->AllGather(Pattern(sizes[rank], rank), kOpTimeout);
    ASSERT_TRUE(gathered.ok()) << gathered.status().ToString();
    ASSERT_EQ(gathered->size(), static_cast<size_t>(kSize));
    for (int from = 0; from < kSize; ++from) {
      EXPECT_EQ((*gathered)[from], Pattern(sizes[from], from))
          << "rank " << rank << " from " << from;
    }
  });
}

TEST_P(TransportConformanceTest, AllToAllOfUnequalSizes) {
  constexpr int kSize = 3;
  TransportGroup group = MakeGroup(kSize);
  if (group.ranks.empty()) return;
  auto size_of = [](int from, int to) {
    return static_cast<size_t>((from * kSize + to) % 4) * 3000;
  };
  RunOnEveryRank(kSize, [&](int rank) {
    std::vector<std::vector<uint8_t>> to_each(kSize);
    for (int to = 0; to < kSize; ++to) to_each[to] = Pattern(size_of(rank, to), rank * 10 + to);
    auto received = group.ranks[rank]->AllToAll(to_each, kOpTimeout);
    ASSERT_TRUE(received.ok()) << received.status().ToString();
    ASSERT_EQ(received->size(), static_cast<size_t>(kSize));
    for (int from = 0; from < kSize; ++from) {
      EXPECT_EQ((*received)[from], Pattern(size_of(from, rank), from * 10 + rank))
          << "rank " << rank << " from " << from;
    }
  });
}

TEST_P(TransportConformanceTest, BarrierWaitsForTheLastRank) {
  constexpr int kSize = 3;
  TransportGroup group = MakeGroup(kSize);
  if (group.ranks.empty()) return;
  std::atomic<bool> last_rank_arrived{false};
  RunOnEveryRank(kSize, [&](int rank) {
    if (rank == kSize - 1) {
      std::this_thread::sleep_for(milliseconds(200));
      last_rank_arrived = true;
    }
    Status status = group.ranks[rank]->Barrier(kOpTimeout);
    EXPECT_TRUE(status.ok()) << status.ToString();
    EXPECT_TRUE(last_rank_arrived) << "rank " << rank << " left the barrier early";
  });
}

TEST_P(TransportConformanceTest, CollectivesOfAOneRankGroupAreLocal) {
  TransportGroup group = MakeGroup(1);
  if (group.ranks.empty()) return;
  Transport& t = *group.ranks[0];
  std::vector<float> values = {1.5f, -2};
  EXPECT_TRUE(t.AllReduceSum(values, kOpTimeout).ok());
  EXPECT_EQ(values, (std::vector<float>{1.5f, -2}));
  auto gathered = t.AllGather(Pattern(10, 1), kOpTimeout);
  ASSERT_TRUE(gathered.ok());
  EXPECT_EQ(*gathered, std::vector<std::vector<uint8_t>>{Pattern(10, 1)});
  auto received = t.AllToAll({Pattern(3, 2)}, kOpTimeout);
  ASSERT_TRUE(received.ok());
  EXPECT_EQ(*received, std::vector<std::vector<uint8_t>>{Pattern(3, 2)});
  EXPECT_TRUE(t.Barrier(kOpTimeout).ok());
}

TEST_P(TransportConformanceTest, LinkCountersAddUp) {
  TransportGroup group = MakeGroup(2);
  if (group.ranks.empty()) return;
  RunOnEveryRank(2, [&](int rank) {
    Transport& t = *group.ranks[rank];
    if (rank == 0) {
      ASSERT_TRUE(t.Send(1, Pattern(1000, 0), kOpTimeout, /*raw_bytes=*/4000).ok());
      ASSERT_TRUE(t.Send(1, Pattern(0, 0), kOpTimeout).ok());
    } else {
      MustRecv(t, 0);
      MustRecv(t, 0);
      t.link_stats().AddRawBytesReceived(0, 4000);  // as the decoder would
    }
  });
  LinkCounters sender = group.ranks[0]->link_stats().Snapshot(1);
  EXPECT_EQ(sender.frames_sent, 2u);
  EXPECT_EQ(sender.bytes_sent, 1000u);
  EXPECT_EQ(sender.raw_bytes_sent, 4000u);
  EXPECT_GT(sender.send_seconds, 0);
  ASSERT_EQ(sender.recent_sends.size(), 2u);
  EXPECT_EQ(sender.recent_sends[0].bytes, 1000u);
  EXPECT_EQ(sender.recent_sends[1].bytes, 0u);
  EXPECT_EQ(sender.frames_received, 0u);
  LinkCounters receiver = group.ranks[1]->link_stats().Snapshot(0);
  EXPECT_EQ(receiver.frames_received, 2u);
  EXPECT_EQ(receiver.bytes_received, 1000u);
  EXPECT_EQ(receiver.raw_bytes_received, 4000u);
  EXPECT_GT(receiver.recv_seconds, 0);
  EXPECT_EQ(receiver.recent_recvs.size(), 2u);

  // A collective charges each link with what crossed it, raw = wire.
  const size_t mine[2] = {300, 500};
  RunOnEveryRank(2, [&](int rank) {
    ASSERT_TRUE(group.ranks[rank]->AllGather(Pattern(mine[rank], rank), kOpTimeout).ok());
  });
  for (int rank = 0; rank < 2; ++rank) {
    const std::vector<LinkCounters> all = group.ranks[rank]->link_stats().Snapshot();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[rank].frames_sent + all[rank].frames_received, 0u) << "own entry stays zero";
    const LinkCounters& link = all[1 - rank];
    const uint64_t p2p_sent = rank == 0 ? 1000 : 0;
    const uint64_t p2p_received = rank == 0 ? 0 : 1000;
    EXPECT_EQ(link.bytes_sent, p2p_sent + mine[rank]);
    EXPECT_EQ(link.bytes_received, p2p_received + mine[1 - rank]);
  }
  EXPECT_EQ(group.ranks[0]->link_stats().Snapshot(1).raw_bytes_received, 500u);
  EXPECT_EQ(group.ranks[1]->link_stats().Snapshot(0).raw_bytes_sent, 500u);
}

TEST_P(TransportConformanceTest, RecvWithNoSenderTimesOutNamingThePeer) {
  TransportGroup group = MakeGroup(2);
  if (group.ranks.empty()) return;
  std::promise<void> rank0_done;
  std::shared_future<void> done = rank0_done.get_future().share();
  RunOnEveryRank(2, [&](int rank) {
    if (rank == 1) {  // stays in the group, silent, until rank 0 has seen its timeout
      done.wait();
      return;
    }
    Transport& t = *group.ranks[0];
    std::vector<uint8_t> frame;
    const auto start = steady_clock::now();
    Status status = t.Recv(1, &frame, kShortTimeout);
    const double seconds = SecondsSince(start);
    EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
    EXPECT_NE(status.message().find("recv from rank 1: timed out after 300 ms"), std::string::npos)
        << status.message();
    EXPECT_GE(seconds, 0.29);
    EXPECT_LT(seconds, 0.3 + kSlackSeconds);
    // The transport is now closed: a later call fails at once, quoting the first failure.
    const auto later = steady_clock::now();
    status = t.Send(1, Pattern(10, 0), kOpTimeout);
    EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status.ToString();
    EXPECT_NE(status.message().find("recv from rank 1"), std::string::npos) << status.message();
    EXPECT_LT(SecondsSince(later), 0.5);
    rank0_done.set_value();
  });
}

TEST_P(TransportConformanceTest, SendWithNoReceiverTimesOutNamingThePeer) {
  TransportGroup group = MakeGroup(2);
  if (group.ranks.empty()) return;
  std::promise<void> rank0_done;
  std::shared_future<void> done = rank0_done.get_future().share();
  RunOnEveryRank(2, [&](int rank) {
    if (rank == 1) {
      done.wait();
      return;
    }
    // Sends are rendezvous on every implementation: nobody receives, so the send cannot finish.
    const auto start = steady_clock::now();
    Status status = group.ranks[0]->Send(1, Pattern(1000, 0), kShortTimeout);
    const double seconds = SecondsSince(start);
    EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
    EXPECT_NE(status.message().find("send to rank 1: timed out after 300 ms"), std::string::npos)
        << status.message();
    EXPECT_LT(seconds, 0.3 + kSlackSeconds);
    rank0_done.set_value();
  });
}

TEST_P(TransportConformanceTest, CollectiveWithAnAbsentRankTimesOut) {
  constexpr int kSize = 3;
  TransportGroup group = MakeGroup(kSize);
  if (group.ranks.empty()) return;
  std::atomic<int> finished{0};
  RunOnEveryRank(kSize, [&](int rank) {
    if (rank == 2) {  // alive, but never joins the collective
      while (finished < 2) std::this_thread::sleep_for(milliseconds(5));
      return;
    }
    std::vector<float> values(100, 1.0f);
    const auto start = steady_clock::now();
    Status status = group.ranks[rank]->AllReduceSum(values, kShortTimeout);
    const double seconds = SecondsSince(start);
    // The first rank to time out closes its links, so the other may fail on those instead.
    EXPECT_TRUE(status.code() == StatusCode::kDeadlineExceeded ||
                status.code() == StatusCode::kUnavailable)
        << status.ToString();
    EXPECT_EQ(status.message().rfind("all_reduce_sum: ", 0), 0u) << status.message();
    EXPECT_NE(status.message().find("rank "), std::string::npos) << status.message();
    EXPECT_LT(seconds, 0.3 + kSlackSeconds);
    finished++;
  });
}

TEST_P(TransportConformanceTest, AFailureClosesTheLinksSoPeersFailFast) {
  TransportGroup group = MakeGroup(2);
  if (group.ranks.empty()) return;
  RunOnEveryRank(2, [&](int rank) {
    Transport& t = *group.ranks[rank];
    std::vector<uint8_t> frame;
    if (rank == 0) {
      Status status = t.Recv(1, &frame, milliseconds(100));  // times out, closes its links
      EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
      return;
    }
    std::this_thread::sleep_for(milliseconds(200));  // rank 0 has failed by now
    const auto start = steady_clock::now();
    Status status = t.Recv(0, &frame, kOpTimeout);
    EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
    EXPECT_NE(status.message().find("recv from rank 0"), std::string::npos) << status.message();
    EXPECT_LT(SecondsSince(start), kSlackSeconds) << "should not wait for its own timeout";
  });
}

TEST_P(TransportConformanceTest, APeerThatLeavesFailsPendingOperationsPromptly) {
  TransportGroup group = MakeGroup(2);
  if (group.ranks.empty()) return;
  RunOnEveryRank(2, [&](int rank) {
    if (rank == 1) {
      std::this_thread::sleep_for(milliseconds(100));
      group.ranks[1].reset();  // a clean exit: its links close
      return;
    }
    std::vector<uint8_t> frame;
    const auto start = steady_clock::now();
    Status status = group.ranks[0]->Recv(1, &frame, kOpTimeout);
    EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
    EXPECT_NE(status.message().find("recv from rank 1"), std::string::npos) << status.message();
    EXPECT_LT(SecondsSince(start), kSlackSeconds) << "should not wait for its own timeout";
  });
}

TEST_P(TransportConformanceTest, BadArgumentsFailWithoutClosingTheTransport) {
  TransportGroup group = MakeGroup(2);
  if (group.ranks.empty()) return;
  Transport& t = *group.ranks[0];
  std::vector<uint8_t> frame;
  EXPECT_EQ(t.Send(2, Pattern(1, 0), kOpTimeout).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Send(-1, Pattern(1, 0), kOpTimeout).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Send(0, Pattern(1, 0), kOpTimeout).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Recv(1, nullptr, kOpTimeout).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Recv(1, &frame, milliseconds(-1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.AllToAll({Pattern(1, 0)}, kOpTimeout).status().code(), StatusCode::kInvalidArgument);
  Status status = t.Send(7, Pattern(1, 0), kOpTimeout);
  EXPECT_EQ(status.message(), "send to rank 7: no such rank in a group of 2");

  RunOnEveryRank(2, [&](int rank) {
    Transport& self = *group.ranks[rank];
    if (rank == 0) {
      Status sent = self.Send(1, Pattern(5, 9), kOpTimeout);
      EXPECT_TRUE(sent.ok()) << sent.ToString();
    } else {
      EXPECT_EQ(MustRecv(self, 0), Pattern(5, 9));
    }
  });
}

}  // namespace
}  // namespace geotrain::net::testing
