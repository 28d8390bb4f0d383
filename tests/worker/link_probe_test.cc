// Link probes on loopback: the server and the client together (latency, throughput, streams, the
// max_ms bound), the server's refusals (bad headers, too many connections), errors that name the
// peer, the runner that turns orders into ProbeResults, and the session carrying an order down
// and its results up through a coordinator that is a small in-process gRPC service.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "geotrain/v1/coordinator.grpc.pb.h"
#include "tests/testing/files_and_ports.h"
#include "tests/testing/temp_dir.h"
#include "tests/worker/worker_test_util.h"
#include "worker/link_probe_client.h"
#include "worker/link_probe_protocol.h"
#include "worker/link_probe_runner.h"
#include "worker/link_probe_server.h"
#include "worker/link_probe_socket.h"
#include "worker/worker_session.h"

namespace geotrain::worker {
namespace {

using geotrain::v1::ProbeResult;
using geotrain::v1::ProbeTarget;
using testing::Eventually;

constexpr std::chrono::milliseconds kIo{5000};

std::unique_ptr<LinkProbeServer> StartServer(LinkProbeServerOptions options = {}) {
  auto server = LinkProbeServer::Start("127.0.0.1:0", "--probe-listen", options);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

ProbeTarget Target(const std::string& worker_id, int port) {
  ProbeTarget target;
  target.set_worker_id(worker_id);
  target.set_address("127.0.0.1");
  target.set_port(static_cast<uint32_t>(port));
  return target;
}

// A raw connection to the server, for what a ProbeLink never sends.
probe::SocketFd Connect(int port) {
  auto fd = probe::ConnectTcp("127.0.0.1", port, kIo, kIo);
  EXPECT_TRUE(fd.ok()) << fd.status().ToString();
  return fd.ok() ? std::move(fd).value() : probe::SocketFd();
}

// Whether the server closed `fd` before sending anything: an end of stream, or a reset when it
// closed with our bytes unread (but not a read that timed out).
bool ClosedByPeer(int fd) {
  char byte;
  auto got = probe::ReadFull(fd, &byte, 1, kIo);
  if (!got.ok()) return got.status().code() != StatusCode::kDeadlineExceeded;
  return *got == 0;
}

TEST(LinkProbeTest, MeasuresALoopbackLink) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(server->address(), "127.0.0.1:" + std::to_string(server->port()));

  const uint64_t max_bytes = 8 << 20;
  const ProbeResult result = ProbeLink(Target("w-2", server->port()), max_bytes, 60000, 1);
  EXPECT_EQ(result.error(), "");
  EXPECT_EQ(result.dst_worker_id(), "w-2");
  EXPECT_GT(result.latency_seconds(), 0);
  EXPECT_GT(result.throughput_bytes_per_second(), 0);
  EXPECT_GT(result.seconds(), 0);
  EXPECT_EQ(result.bytes(), max_bytes);  // 60 s is plenty for 8 MiB on loopback
  EXPECT_GT(result.unix_ms(), 0);
}

TEST(LinkProbeTest, SeveralStreamsShareTheBytes) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const uint64_t max_bytes = (8 << 20) + 3;  // not a multiple of the streams
  const ProbeResult result = ProbeLink(Target("w-2", server->port()), max_bytes, 60000, 4);
  EXPECT_EQ(result.error(), "");
  EXPECT_GT(result.throughput_bytes_per_second(), 0);
  EXPECT_EQ(result.bytes(), max_bytes);
}

TEST(LinkProbeTest, ZeroBytesMeasuresTheLatencyOnly) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const ProbeResult result = ProbeLink(Target("w-2", server->port()), 0, 1000, 2);
  EXPECT_EQ(result.error(), "");
  EXPECT_GT(result.latency_seconds(), 0);
  EXPECT_EQ(result.bytes(), 0u);
  EXPECT_EQ(result.throughput_bytes_per_second(), 0);
}

TEST(LinkProbeTest, MaxMillisecondsEndsTheStreamsEarly) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  // No time at all: each stream half-closes before its first chunk and the server answers 0.
  ProbeResult result = ProbeLink(Target("w-2", server->port()), 1ull << 30, 0, 2);
  EXPECT_EQ(result.error(), "");
  EXPECT_EQ(result.bytes(), 0u);
  // A little time for a whole GiB in small chunks: the probe finishes with part of it.
  LinkProbeClientOptions options;
  options.chunk_bytes = 4096;
  result = ProbeLink(Target("w-2", server->port()), 1ull << 30, 20, 1, options);
  EXPECT_EQ(result.error(), "");
  EXPECT_LT(result.bytes(), 1ull << 30);
}

TEST(LinkProbeTest, ARefusedConnectionNamesThePeer) {
  const int port = geotrain::testing::FreeLoopbackPort();
  const ProbeResult result = ProbeLink(Target("w-3", port), 1 << 20, 1000, 1);
  EXPECT_EQ(result.error(),
            "probe to w-3 (127.0.0.1:" + std::to_string(port) + "): connection refused");
  EXPECT_EQ(result.dst_worker_id(), "w-3");
  EXPECT_EQ(result.throughput_bytes_per_second(), 0);
}

TEST(LinkProbeTest, ATargetWithoutAPortIsAnError) {
  const ProbeResult result = ProbeLink(Target("w-4", 0), 1 << 20, 1000, 1);
  EXPECT_EQ(result.error(), "probe to w-4 (127.0.0.1:0): the target has no probe port in 1..65535");
}

TEST(LinkProbeTest, TheServerClosesOnABadHeader) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  {
    probe::SocketFd fd = Connect(server->port());
    const char junk[probe::kProbeHeaderBytes] = "GET / HTTP/1.1\r\n\r\n";
    ASSERT_TRUE(probe::WriteAll(fd.get(), junk, sizeof(junk), kIo).ok());
    EXPECT_TRUE(ClosedByPeer(fd.get()));
  }
  {
    // A well-formed header announcing more than the cap.
    probe::SocketFd fd = Connect(server->port());
    unsigned char header[probe::kProbeHeaderBytes];
    probe::EncodeHeader({probe::ProbeMode::kBulk, probe::kMaxProbeBytes + 1}, header);
    ASSERT_TRUE(probe::WriteAll(fd.get(), header, sizeof(header), kIo).ok());
    EXPECT_TRUE(ClosedByPeer(fd.get()));
  }
  {
    probe::SocketFd fd = Connect(server->port());
    unsigned char header[probe::kProbeHeaderBytes];
    probe::EncodeHeader({probe::ProbeMode::kPing, 0}, header);
    probe::PutU32(probe::kProbeVersion + 1, header + 8);
    ASSERT_TRUE(probe::WriteAll(fd.get(), header, sizeof(header), kIo).ok());
    EXPECT_TRUE(ClosedByPeer(fd.get()));
  }
  EXPECT_EQ(server->bad_requests(), 3u);
  // And it still serves good clients.
  EXPECT_EQ(ProbeLink(Target("w-2", server->port()), 1 << 20, 60000, 1).error(), "");
}

TEST(LinkProbeTest, TheServerRefusesConnectionsOverItsCap) {
  LinkProbeServerOptions options;
  options.max_connections = 1;
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::optional<probe::SocketFd> holder = Connect(server->port());
  // One ping through: the server has accepted the holder and serves it.
  unsigned char header[probe::kProbeHeaderBytes];
  probe::EncodeHeader({probe::ProbeMode::kPing, 0}, header);
  ASSERT_TRUE(probe::WriteAll(holder->get(), header, sizeof(header), kIo).ok());
  unsigned char ping[probe::kPingMessageBytes] = {7};
  ASSERT_TRUE(probe::WriteAll(holder->get(), ping, sizeof(ping), kIo).ok());
  auto echoed = probe::ReadFull(holder->get(), ping, sizeof(ping), kIo);
  ASSERT_TRUE(echoed.ok() && *echoed == sizeof(ping));

  const ProbeResult refused = ProbeLink(Target("w-5", server->port()), 1 << 20, 1000, 1);
  // Closed at once: an end of stream or a reset, depending on whether our bytes had arrived.
  const std::string prefix = "probe to w-5 (127.0.0.1:" + std::to_string(server->port()) + "): ";
  EXPECT_EQ(refused.error().substr(0, prefix.size()), prefix) << refused.error();
  EXPECT_GT(refused.error().size(), prefix.size());
  EXPECT_EQ(server->busy_refusals(), 1u);

  holder.reset();
  // The holder's thread ends on its own schedule; until it has, new probes may still be refused.
  EXPECT_TRUE(Eventually(
      [&] { return ProbeLink(Target("w-5", server->port()), 1 << 20, 1000, 1).error().empty(); }));
}

TEST(LinkProbeTest, DestroyingTheServerEndsItsOpenConnections) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  // Connected, mid-header: the server's thread is blocked in a read.
  probe::SocketFd fd = Connect(server->port());
  ASSERT_TRUE(probe::WriteAll(fd.get(), "GTPR", 4, kIo).ok());
  server.reset();
  EXPECT_TRUE(ClosedByPeer(fd.get()));
}

TEST(LinkProbeTest, AnAddressInUseIsAnErrorNamingTheFlag) {
  auto first = StartServer();
  ASSERT_NE(first, nullptr);
  auto second =
      LinkProbeServer::Start("127.0.0.1:" + std::to_string(first->port()), "--probe-listen");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("--probe-listen: cannot listen on 127.0.0.1:"),
            std::string::npos)
      << second.status().message();
  EXPECT_FALSE(LinkProbeServer::Start("127.0.0.1", "--probe-listen").ok());
}

// Results handed over by a runner, waited for.
class Collected {
 public:
  std::function<void()> Notify() {
    return [this] {
      std::lock_guard<std::mutex> lock(mu_);
      ++notified_;
      cv_.notify_all();
    };
  }
  bool WaitFor(int count) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, testing::kPatience, [&] { return notified_ >= count; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int notified_ = 0;
};

TEST(LinkProbeRunnerTest, AnOrderBecomesOneResultPerTargetInOrder) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const int closed_port = geotrain::testing::FreeLoopbackPort();
  Collected collected;
  LinkProbeRunner runner(LinkProbeRunnerOptions{}, collected.Notify());
  geotrain::v1::ProbeOrder order;
  *order.add_targets() = Target("w-2", server->port());
  *order.add_targets() = Target("w-3", closed_port);
  order.set_max_bytes(1 << 20);
  order.set_max_milliseconds(60000);
  order.set_streams(2);
  runner.Submit(order);
  ASSERT_TRUE(collected.WaitFor(1));
  const auto taken = runner.TakeResults();
  ASSERT_EQ(taken.size(), 1u);
  ASSERT_EQ(taken[0].results_size(), 2);
  EXPECT_EQ(taken[0].results(0).dst_worker_id(), "w-2");
  EXPECT_EQ(taken[0].results(0).error(), "");
  EXPECT_GT(taken[0].results(0).throughput_bytes_per_second(), 0);
  EXPECT_EQ(taken[0].results(0).bytes(), 1u << 20);
  EXPECT_EQ(taken[0].results(1).dst_worker_id(), "w-3");
  EXPECT_NE(taken[0].results(1).error().find("connection refused"), std::string::npos);
  EXPECT_TRUE(runner.TakeResults().empty());
}

// A probe function that holds each probe until released, recording what it was asked.
class HeldProbes {
 public:
  ProbeFunction Function() {
    return [this](const ProbeTarget& target, uint64_t max_bytes, uint32_t max_ms, uint32_t streams,
                  const std::atomic<bool>* cancel) {
      std::unique_lock<std::mutex> lock(mu_);
      started_.push_back(target.worker_id());
      last_ = {max_bytes, max_ms, streams};
      cv_.notify_all();
      // Nothing notifies this condition when `cancel` turns: look at it every few milliseconds.
      while (!released_ && !cancel->load()) cv_.wait_for(lock, std::chrono::milliseconds(5));
      ProbeResult result;
      result.set_dst_worker_id(target.worker_id());
      result.set_bytes(max_bytes);
      return result;
    };
  }
  bool WaitStarted(size_t count) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, testing::kPatience, [&] { return started_.size() >= count; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  std::vector<std::string> started() {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }
  std::tuple<uint64_t, uint32_t, uint32_t> last() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::vector<std::string> started_;
  std::tuple<uint64_t, uint32_t, uint32_t> last_;
};

geotrain::v1::ProbeOrder OrderFor(const std::string& worker_id) {
  geotrain::v1::ProbeOrder order;
  order.add_targets()->set_worker_id(worker_id);
  return order;
}

TEST(LinkProbeRunnerTest, OrdersWaitOneAtATimeAndTheOldestWaitingIsDropped) {
  HeldProbes held;
  Collected collected;
  LinkProbeRunnerOptions options;
  options.max_queued_orders = 2;
  LinkProbeRunner runner(options, collected.Notify(), held.Function());
  runner.Submit(OrderFor("a"));
  ASSERT_TRUE(held.WaitStarted(1));
  runner.Submit(OrderFor("b"));  // dropped when "d" comes
  runner.Submit(OrderFor("c"));
  runner.Submit(OrderFor("d"));
  held.Release();
  ASSERT_TRUE(collected.WaitFor(3));
  EXPECT_EQ(held.started(), (std::vector<std::string>{"a", "c", "d"}));
  const auto taken = runner.TakeResults();
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[2].results(0).dst_worker_id(), "d");
  // Zero fields took the defaults.
  EXPECT_EQ(held.last(), std::make_tuple(options.default_max_bytes, options.default_max_ms,
                                         options.default_streams));
}

TEST(LinkProbeRunnerTest, DestroyingTheRunnerCancelsTheProbeUnderWay) {
  HeldProbes held;
  Collected collected;
  auto runner = std::make_unique<LinkProbeRunner>(LinkProbeRunnerOptions{}, collected.Notify(),
                                                  held.Function());
  runner->Submit(OrderFor("a"));
  runner->Submit(OrderFor("b"));
  ASSERT_TRUE(held.WaitStarted(1));
  runner.reset();  // returns only once the probe thread has ended: the held probe saw the cancel
  EXPECT_EQ(held.started(), std::vector<std::string>{"a"});
}

// The smallest coordinator a session needs: it registers one worker, and on each session sends
// one ProbeOrder after the hello and keeps the first ProbeResults that comes back.
class ProbingCoordinator final : public geotrain::v1::Coordinator::Service {
 public:
  explicit ProbingCoordinator(geotrain::v1::ProbeOrder order) : order_(std::move(order)) {}

  grpc::Status Register(grpc::ServerContext*, const geotrain::v1::RegisterRequest* request,
                        geotrain::v1::RegisterResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    probe_port_ = request->capabilities().probe_port();
    response->set_worker_id("w-1");
    response->set_heartbeat_interval_ms(50);
    return grpc::Status::OK;
  }

  grpc::Status Session(grpc::ServerContext*,
                       grpc::ServerReaderWriter<geotrain::v1::CoordinatorMessage,
                                                geotrain::v1::WorkerMessage>* stream) override {
    geotrain::v1::WorkerMessage message;
    if (!stream->Read(&message) || !message.has_hello()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no hello");
    }
    geotrain::v1::CoordinatorMessage order;
    *order.mutable_probe() = order_;
    stream->Write(order);
    while (stream->Read(&message)) {
      if (!message.has_probes()) continue;
      std::lock_guard<std::mutex> lock(mu_);
      if (!results_) results_ = message.probes();
    }
    return grpc::Status::OK;
  }

  std::optional<geotrain::v1::ProbeResults> results() {
    std::lock_guard<std::mutex> lock(mu_);
    return results_;
  }
  uint32_t probe_port() {
    std::lock_guard<std::mutex> lock(mu_);
    return probe_port_;
  }

 private:
  const geotrain::v1::ProbeOrder order_;
  std::mutex mu_;
  std::optional<geotrain::v1::ProbeResults> results_;
  uint32_t probe_port_ = 0;
};

TEST(LinkProbeSessionTest, AProbeOrderFromTheCoordinatorIsAnsweredWithItsResults) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  geotrain::v1::ProbeOrder order;
  *order.add_targets() = Target("w-2", server->port());
  order.set_max_bytes(1 << 20);
  order.set_max_milliseconds(60000);
  ProbingCoordinator service(order);
  grpc::ServerBuilder builder;
  int coordinator_port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &coordinator_port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> coordinator = builder.BuildAndStart();
  ASSERT_NE(coordinator, nullptr);

  geotrain::testing::TempDir dir;
  Wakeup wakeup;
  Outbox outbox(OutboxLimits{}, [&] { wakeup.Notify(); });
  SupervisorOptions tasks;
  tasks.work_dir = dir.path();
  TaskSupervisor supervisor(tasks, &outbox, [&] { wakeup.Notify(); });
  LinkProbeRunner probes(LinkProbeRunnerOptions{}, [&] { wakeup.Notify(); });
  SessionOptions options;
  options.coordinator = "127.0.0.1:" + std::to_string(coordinator_port);
  options.work_dir = dir.path();
  options.capabilities.set_advertise_address("127.0.0.1");
  options.capabilities.set_probe_port(static_cast<uint32_t>(server->port()));
  options.probes = &probes;
  WorkerSession session(options, &supervisor, &outbox, &wakeup);
  Status ended;
  std::thread loop([&] { ended = session.Run(); });

  EXPECT_TRUE(Eventually([&] { return service.results().has_value(); }));
  session.RequestShutdown();
  loop.join();
  EXPECT_TRUE(ended.ok()) << ended.ToString();
  coordinator->Shutdown();

  EXPECT_EQ(service.probe_port(), static_cast<uint32_t>(server->port()));
  const auto results = service.results();
  ASSERT_TRUE(results.has_value());
  ASSERT_EQ(results->results_size(), 1);
  EXPECT_EQ(results->results(0).dst_worker_id(), "w-2");
  EXPECT_EQ(results->results(0).error(), "");
  EXPECT_GT(results->results(0).throughput_bytes_per_second(), 0);
  EXPECT_GT(results->results(0).latency_seconds(), 0);
  EXPECT_GT(results->results(0).unix_ms(), 0);
}

}  // namespace
}  // namespace geotrain::worker
