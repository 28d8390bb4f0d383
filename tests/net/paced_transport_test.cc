// PacedTransport: the whole transport contract over a paced fake group, and the pacing itself.
#include "net/paced_transport.h"

#include <gtest/gtest.h>

#include "net/fake_transport.h"
#include "tests/net/transport_conformance.h"

namespace geotrain::net::testing {
namespace {

TransportKind PacedFakeKind() {
  return {"PacedFake", [](int size) {
            TransportGroup group;
            // Fast enough that the conformance suite's megabyte frames stay quick.
            for (auto& rank : CreateFakeTransportGroup(size)) {
              group.ranks.push_back(PaceTransport(std::move(rank), 10000));
            }
            return group;
          }};
}

INSTANTIATE_TEST_SUITE_P(Paced, TransportConformanceTest, ::testing::Values(PacedFakeKind()),
                         KindName);

std::vector<std::unique_ptr<Transport>> PacedGroup(int size, double mbit) {
  std::vector<std::unique_ptr<Transport>> ranks;
  for (auto& rank : CreateFakeTransportGroup(size))
    ranks.push_back(PaceTransport(std::move(rank), mbit));
  return ranks;
}

// Seconds since `start`.
double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(PacedTransportTest, FramesToOnePeerLeaveNoFasterThanTheRate) {
  auto ranks = PacedGroup(2, 8);  // 8 Mbit/s: 1 MB per second
  const auto start = std::chrono::steady_clock::now();
  RunOnEveryRank(2, [&](int rank) {
    for (int i = 0; i < 3; ++i) {
      if (rank == 0) {
        EXPECT_TRUE(ranks[0]->Send(1, Pattern(100000, i), kOpTimeout).ok());
      } else {
        std::vector<uint8_t> frame;
        EXPECT_TRUE(ranks[1]->Recv(0, &frame, kOpTimeout).ok());
        EXPECT_EQ(frame, Pattern(100000, i));
      }
    }
  });
  EXPECT_GE(Since(start), 0.3);  // 300 kB at 1 MB/s; only the lower bound is a promise
}

TEST(PacedTransportTest, AllReducePacesTheRingTraffic) {
  auto ranks = PacedGroup(2, 8);
  const auto start = std::chrono::steady_clock::now();
  RunOnEveryRank(2, [&](int rank) {
    std::vector<float> values(50000, 1.0f + rank);  // 200 kB; a 2-rank ring sends all of it
    EXPECT_TRUE(
        ranks[rank]->AllReduceSum(Span<float>(values.data(), values.size()), kOpTimeout).ok());
    EXPECT_EQ(values[0], 3.0f);
  });
  EXPECT_GE(Since(start), 0.2);
}

TEST(PacedTransportTest, ASendThatWouldOutlastItsTimeoutFailsNamingTheRate) {
  auto ranks = PacedGroup(2, 0.08);  // 10 kB/s: 100 kB take 10 s
  Status sent;
  RunOnEveryRank(2, [&](int rank) {
    if (rank == 0) {
      sent = ranks[0]->Send(1, Pattern(100000, 1), milliseconds(200));
    } else {
      std::vector<uint8_t> frame;
      EXPECT_TRUE(ranks[1]->Recv(0, &frame, kOpTimeout).ok());
    }
  });
  EXPECT_EQ(sent.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(sent.message().find("emulated 0.08 Mbit/s"), std::string::npos) << sent.ToString();
}

}  // namespace
}  // namespace geotrain::net::testing
