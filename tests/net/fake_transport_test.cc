#include "net/fake_transport.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/net/transport_conformance.h"

namespace geotrain::net::testing {
namespace {

TransportKind FakeKind() {
  return {"Fake", [](int size) {
            TransportGroup group;
            group.ranks = CreateFakeTransportGroup(size);
            return group;
          }};
}

INSTANTIATE_TEST_SUITE_P(Fake, TransportConformanceTest, ::testing::Values(FakeKind()), KindName);

TEST(FakeTransportTest, KillingARankFailsItsPeersPendingOperations) {
  auto ranks = CreateFakeTransportGroup(3);
  std::thread killer([&] {
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_TRUE(KillFakeRank(*ranks[0], 2).ok());
  });
  std::vector<uint8_t> frame;
  const auto start = std::chrono::steady_clock::now();
  Status status = ranks[0]->Recv(2, &frame, kOpTimeout);
  killer.join();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "recv from rank 2: rank 2 died");
  EXPECT_LT(SecondsSince(start), 1.0);
}

TEST(FakeTransportTest, AKilledRanksOwnOperationsFailToo) {
  auto ranks = CreateFakeTransportGroup(2);
  ASSERT_TRUE(KillFakeRank(*ranks[1], 1).ok());
  Status status = ranks[1]->Send(0, Pattern(4, 0), kOpTimeout);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "send to rank 0: this rank died");
  status = ranks[0]->Send(1, Pattern(4, 0), kOpTimeout);
  EXPECT_EQ(status.message(), "send to rank 1: rank 1 died");
}

TEST(FakeTransportTest, CollectivesFailNamingTheDeadRank) {
  auto ranks = CreateFakeTransportGroup(3);
  ASSERT_TRUE(KillFakeRank(*ranks[0], 2).ok());
  std::vector<float> values(9, 1.0f);
  // Rank 0's ring neighbours are 1 (right) and 2 (left): the step fails on the dead one.
  Status status = ranks[0]->AllReduceSum(values, kOpTimeout);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "all_reduce_sum: recv from rank 2: rank 2 died");
}

TEST(FakeTransportTest, WaitingForAnotherThreadsRecvCountsAgainstTheTimeout) {
  auto ranks = CreateFakeTransportGroup(2);
  std::thread first([&] {
    std::vector<uint8_t> frame;
    EXPECT_TRUE(ranks[0]->Recv(1, &frame, kOpTimeout).ok());
  });
  std::this_thread::sleep_for(milliseconds(50));  // `first` now holds the recv lock for rank 1
  std::vector<uint8_t> frame;
  const auto start = std::chrono::steady_clock::now();
  Status status = ranks[0]->Recv(1, &frame, milliseconds(200));
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.message(),
            "recv from rank 1: timed out after 200 ms waiting for another thread's recv from that "
            "rank to finish");
  EXPECT_LT(SecondsSince(start), 1.0);
  // Nothing was received or sent, so the transport still works: release `first`.
  EXPECT_TRUE(ranks[1]->Send(0, Pattern(3, 0), kOpTimeout).ok());
  first.join();
}

TEST(FakeTransportTest, KillFakeRankRejectsWhatItCannotKill) {
  auto ranks = CreateFakeTransportGroup(2);
  EXPECT_EQ(KillFakeRank(*ranks[0], 2).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(KillFakeRank(*ranks[0], -1).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CreateFakeTransportGroup(0).empty());
}

}  // namespace
}  // namespace geotrain::net::testing
