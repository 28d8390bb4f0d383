// A planted peer: the rendezvous store says rank 1 of a group listens at an address where
// something else listens (an attacker who wrote the key, or a stale entry), which accepts TCP and
// then stays silent or answers garbage. The real rank must fail within its connect timeout, or
// at its first frame within that frame's timeout, with a message naming the peer; never hang.
//
// Gloo decides who connects by comparing addresses (the larger one connects), so the fake sits
// at 127.0.0.2 to make the real rank (127.0.0.1) wait for a connection, and at 127.0.0.1 to make
// the real rank (127.0.0.2) connect to it. Loopback only.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "net/gloo_address.h"
#include "net/gloo_transport.h"
#include "tests/net/gloo_test_group.h"

namespace geotrain::net::testing {
namespace {

// A TCP listener on `ip`:OS-chosen port that accepts every connection and then either says
// nothing or writes `garbage` and keeps the connection open, until destroyed.
class FakePeer {
 public:
  FakePeer(const std::string& ip, std::vector<uint8_t> garbage) : garbage_(std::move(garbage)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    ::inet_pton(AF_INET, ip.c_str(), &address.sin_addr);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    socklen_t length = sizeof(address_);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address_), &length);
    thread_ = std::thread([this] {
      while (true) {
        const int connection = ::accept(fd_, nullptr, nullptr);
        if (connection < 0) return;  // the listener was shut down
        if (!garbage_.empty()) {
          EXPECT_GE(::write(connection, garbage_.data(), garbage_.size()), 0);
        }
        accepted_.push_back(connection);
      }
    });
  }
  ~FakePeer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    for (int connection : accepted_) ::close(connection);
  }

  // What Gloo would publish for a pair listening here (sequence number unset).
  std::vector<uint8_t> Blob() const {
    std::vector<uint8_t> blob(kGlooAddressBytes, 0);
    std::memcpy(blob.data(), &address_, sizeof(address_));
    const int64_t unset = -1;
    std::memcpy(blob.data() + 128, &unset, sizeof(unset));
    return blob;
  }
  std::string Name() const {
    char ip[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &address_.sin_addr, ip, sizeof(ip));
    return std::string(ip) + ":" + std::to_string(ntohs(address_.sin_port));
  }

 private:
  int fd_ = -1;
  sockaddr_in address_{};
  std::vector<uint8_t> garbage_;
  std::vector<int> accepted_;  // only the accept thread touches it until the join
  std::thread thread_;
};

struct Planted {
  std::unique_ptr<TempDir> dir;
  c10::intrusive_ptr<c10d::Store> store;
  std::string group_name;
};

// A store in which rank 1 of a two-rank group has "published" the fake's address.
Planted PlantRankOne(const FakePeer& fake) {
  Planted planted;
  planted.dir = std::make_unique<TempDir>();
  auto store = CreateFileStore(planted.dir->File("store"), 1, milliseconds(30000));
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  planted.store = *store;
  planted.group_name = UniqueGroupName("planted");
  // ProcessGroupGloo's keys: "<group prefix>/<device index>/<rank>".
  planted.store->set("geotrain/net/" + planted.group_name + "/0/1", fake.Blob());
  return planted;
}

GlooTransportOptions RankZero(const Planted& planted, const std::string& bind_address,
                              milliseconds timeout) {
  GlooTransportOptions options;
  options.rank = 0;
  options.size = 2;
  options.bind_address = bind_address;
  options.group_name = planted.group_name;
  options.connect_timeout = timeout;
  return options;
}

TEST(GlooFakePeerTest, APeerThatNeverConnectsFailsTheConnectWithinItsTimeoutNamingIt) {
  FakePeer fake("127.0.0.2", {});  // larger address: rank 0 waits for it to connect
  Planted planted = PlantRankOne(fake);
  const auto start = std::chrono::steady_clock::now();
  auto transport =
      CreateGlooTransport(RankZero(planted, "127.0.0.1", milliseconds(3000)), planted.store);
  const double seconds = SecondsSince(start);
  ASSERT_FALSE(transport.ok());
  EXPECT_EQ(transport.status().code(), StatusCode::kDeadlineExceeded)
      << transport.status().ToString();
  EXPECT_NE(transport.status().message().find("rank 0 of 2: cannot connect within 3000 ms"),
            std::string::npos)
      << transport.status().message();
  EXPECT_NE(transport.status().message().find("connecting to rank 1 at " + fake.Name()),
            std::string::npos)
      << transport.status().message();
  // Unbounded, Gloo waits 5 x its timeout (15 s here) for the connection.
  EXPECT_LT(seconds, 12.0) << "Gloo's own connect wait was not bounded";
}

TEST(GlooFakePeerTest, APeerThatAcceptsAndStaysSilentFailsTheFirstFrameWithinItsTimeout) {
  FakePeer fake("127.0.0.1", {});  // smaller address: rank 0 connects to it
  Planted planted = PlantRankOne(fake);
  const auto start = std::chrono::steady_clock::now();
  auto transport =
      CreateGlooTransport(RankZero(planted, "127.0.0.2", milliseconds(3000)), planted.store);
  // Gloo's TCP pairs have no handshake, so connecting to anything that accepts succeeds; the
  // first frame cannot, and its own timeout bounds it.
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  {
    std::vector<uint8_t> frame;
    Status status = (*transport)->Recv(1, &frame, milliseconds(3000));
    EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
    EXPECT_NE(status.message().find("recv from rank 1"), std::string::npos) << status.message();
  }
  EXPECT_LT(SecondsSince(start), 30.0);
}

TEST(GlooFakePeerTest, APeerThatAnswersGarbageFailsTheFirstFrameNamingIt) {
  // 64 bytes that are no Gloo preamble: an opcode and lengths nothing posted matches.
  FakePeer fake("127.0.0.1", Pattern(64, 7));
  Planted planted = PlantRankOne(fake);
  GlooTransportOptions options = RankZero(planted, "127.0.0.2", milliseconds(3000));
  options.frame_key = std::string(32, 'k');
  const auto start = std::chrono::steady_clock::now();
  auto transport = CreateGlooTransport(options, planted.store);
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  {
    std::vector<uint8_t> frame;
    Status status = (*transport)->Recv(1, &frame, milliseconds(3000));
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find("rank 1"), std::string::npos) << status.message();
  }
  EXPECT_LT(SecondsSince(start), 30.0);
}

TEST(GlooFakePeerTest, PublishedAddressBlobsCarryNoStackBytes) {
  // Two real ranks through one store; what each published must have zeroed padding.
  auto dir = std::make_shared<TempDir>();
  const std::string name = UniqueGroupName("blobs");
  std::vector<std::unique_ptr<Transport>> ranks(2);
  RunOnEveryRank(2, [&](int rank) {
    auto store = CreateFileStore(dir->File("store"), 3, milliseconds(10000));
    ASSERT_TRUE(store.ok());
    GlooTransportOptions options;
    options.rank = rank;
    options.size = 2;
    options.group_name = name;
    options.connect_timeout = milliseconds(10000);
    auto transport = CreateGlooTransport(options, *store);
    ASSERT_TRUE(transport.ok()) << transport.status().ToString();
    ranks[rank] = std::move(transport).value();
  });
  auto store = CreateFileStore(dir->File("store"), 3, milliseconds(10000));
  ASSERT_TRUE(store.ok());
  for (int rank = 0; rank < 2; ++rank) {
    const std::vector<uint8_t> blob =
        (*store)->get("geotrain/net/" + name + "/0/" + std::to_string(rank));
    ASSERT_EQ(blob.size(), kGlooAddressBytes);
    // AF_INET: family, port and address fill the first 8 bytes; the rest of the
    // sockaddr_storage (120 bytes) must be zero.
    for (size_t i = sizeof(sockaddr_in) - 8; i < 128; ++i) {
      EXPECT_EQ(blob[i], 0) << "rank " << rank << " byte " << i;
    }
    EXPECT_FALSE(DescribeGlooAddress(blob, 0).empty());
  }
}

TEST(GlooAddressTest, ZeroesPaddingAndLeavesOtherValuesAlone) {
  std::vector<uint8_t> blob(kGlooAddressBytes, 0xAB);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(4242);
  ::inet_pton(AF_INET, "10.1.2.3", &in.sin_addr);
  std::memcpy(blob.data(), &in, 8);  // family, port, address; sin_zero and the rest stay 0xAB
  std::vector<uint8_t> two(2 * kGlooAddressBytes);
  std::copy(blob.begin(), blob.end(), two.begin());
  std::copy(blob.begin(), blob.end(), two.begin() + kGlooAddressBytes);
  ASSERT_TRUE(ZeroGlooAddressPadding(&two));
  for (size_t at : {size_t{0}, kGlooAddressBytes}) {
    for (size_t i = 8; i < 128; ++i) EXPECT_EQ(two[at + i], 0) << at + i;
    for (size_t i = 128; i < kGlooAddressBytes; ++i) EXPECT_EQ(two[at + i], 0xAB) << "seq kept";
  }
  EXPECT_EQ(DescribeGlooAddress(two, 1), "10.1.2.3:4242");
  EXPECT_EQ(DescribeGlooAddress(two, 2), "");

  std::vector<uint8_t> other = {'h', 'i'};
  EXPECT_FALSE(ZeroGlooAddressPadding(&other));
  EXPECT_EQ(other, (std::vector<uint8_t>{'h', 'i'}));
  std::vector<uint8_t> not_ip(kGlooAddressBytes, 0xAB);  // family 0xABAB
  EXPECT_FALSE(ZeroGlooAddressPadding(&not_ip));
  EXPECT_EQ(not_ip[100], 0xAB);
}

}  // namespace
}  // namespace geotrain::net::testing
