#include "net/gloo_transport.h"

#include <gtest/gtest.h>

#include <chrono>

#include "tests/net/gloo_test_group.h"
#include "tests/net/transport_conformance.h"

namespace geotrain::net::testing {
namespace {

TransportKind GlooKind() {
  return {"Gloo", [](int size) { return CreateGlooGroup(size); }};
}

INSTANTIATE_TEST_SUITE_P(Gloo, TransportConformanceTest, ::testing::Values(GlooKind()), KindName);

TEST(GlooTransportTest, RendezvousFailsWithinConnectTimeoutWhenARankNeverComes) {
  TempDir dir;
  auto store = CreateFileStore(dir.File("store"), 2, milliseconds(1000));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  GlooTransportOptions options;
  options.rank = 0;
  options.size = 2;  // rank 1 never comes
  options.group_name = "lonely";
  options.connect_timeout = milliseconds(1000);
  const auto start = std::chrono::steady_clock::now();
  auto transport = CreateGlooTransport(options, *store);
  const double seconds = SecondsSince(start);
  ASSERT_FALSE(transport.ok());
  EXPECT_EQ(transport.status().code(), StatusCode::kDeadlineExceeded)
      << transport.status().ToString();
  EXPECT_NE(transport.status().message().find("gloo group 'lonely', rank 0 of 2: cannot connect"),
            std::string::npos)
      << transport.status().message();
  // c10d's FileStore measures its waits in whole seconds, so it may overrun by up to one.
  EXPECT_LT(seconds, 1.0 + 1.0 + 1.5);
}

TEST(GlooTransportTest, GroupsWithDifferentNamesShareOneStore) {
  TempDir dir;
  const std::string path = dir.File("store");
  constexpr int kGroups = 2;
  // Four threads, two groups of two, one store file: as the stage-pair and data-parallel groups
  // of one job share the coordinator's store.
  RunOnEveryRank(2 * kGroups, [&](int thread) {
    const int g = thread / 2;
    const int rank = thread % 2;
    auto store = CreateFileStore(path, 2 * kGroups, milliseconds(10000));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    GlooTransportOptions options;
    options.rank = rank;
    options.size = 2;
    options.group_name = "group" + std::to_string(g);
    options.connect_timeout = milliseconds(10000);
    auto transport = CreateGlooTransport(options, *store);
    ASSERT_TRUE(transport.ok()) << transport.status().ToString();
    std::vector<uint8_t> frame;
    if (rank == 0) {
      EXPECT_TRUE((*transport)->Send(1, Pattern(100, g), kOpTimeout).ok());
    } else {
      ASSERT_TRUE((*transport)->Recv(0, &frame, kOpTimeout).ok());
      EXPECT_EQ(frame, Pattern(100, g)) << "group " << g << " got another group's frame";
    }
  });
}

TEST(GlooTransportTest, RendezvousOverATcpStoreOnAnOsChosenPort) {
  TcpStoreOptions server_options;
  server_options.is_server = true;
  server_options.timeout = milliseconds(10000);
  uint16_t port = 0;
  auto server = CreateTcpStore(server_options, &port);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_NE(port, 0);
  RunOnEveryRank(2, [&](int rank) {
    TcpStoreOptions client_options;
    client_options.port = port;
    client_options.timeout = milliseconds(10000);
    auto store = CreateTcpStore(client_options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    GlooTransportOptions options;
    options.rank = rank;
    options.size = 2;
    options.group_name = "tcp";  // a fresh store: no earlier group to collide with
    options.connect_timeout = milliseconds(10000);
    auto transport = CreateGlooTransport(options, *store);
    ASSERT_TRUE(transport.ok()) << transport.status().ToString();
    EXPECT_TRUE((*transport)->Barrier(kOpTimeout).ok());
  });
}

TEST(GlooTransportTest, AFrameOverTheReceiversLimitIsDataLoss) {
  TransportGroup group = CreateGlooGroup(2, [](GlooTransportOptions* options) {
    if (options->rank == 1) options->max_frame_bytes = 100;
  });
  ASSERT_TRUE(group.status.ok()) << group.status.ToString();
  RunOnEveryRank(2, [&](int rank) {
    if (rank == 0) {
      // The receiver refuses the frame and closes its links, so the send fails too.
      EXPECT_FALSE(group.ranks[0]->Send(1, Pattern(101, 0), milliseconds(3000)).ok());
      return;
    }
    std::vector<uint8_t> frame;
    Status status = group.ranks[1]->Recv(0, &frame, kOpTimeout);
    EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
    EXPECT_NE(status.message().find("recv from rank 0: the peer announced a frame of 101 bytes"),
              std::string::npos)
        << status.message();
  });
}

TEST(GlooTransportTest, BadOptionsAreRejectedBeforeAnyConnection) {
  TempDir dir;
  auto store = CreateFileStore(dir.File("store"), 1);
  ASSERT_TRUE(store.ok());
  GlooTransportOptions options;
  options.rank = 2;
  options.size = 2;
  EXPECT_EQ(CreateGlooTransport(options, *store).status().code(), StatusCode::kInvalidArgument);
  options.rank = 0;
  options.group_name = "";
  EXPECT_EQ(CreateGlooTransport(options, *store).status().code(), StatusCode::kInvalidArgument);
  options.group_name = "x";
  EXPECT_EQ(CreateGlooTransport(options, c10::intrusive_ptr<c10d::Store>()).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateFileStore(dir.File("other"), 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geotrain::net::testing
