// CoordinatorStore against the real RendezvousService on a loopback gRPC server: values pass
// between stores, waits block and time out, scopes stay apart, a coordinator restart in the middle
// of a get() is survived, and two c10d::ProcessGroupGloo ranks form a group through it.
#include "worker/coordinator_store.h"

// c10d declares ProcessGroupGloo only under USE_C10D_GLOO; Debian's Torch config exports it,
// the PyTorch wheel's does not always.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif

#include <ATen/ATen.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/kv_store.h"
#include "coordinator/rendezvous_service.h"
#include "net/gloo_transport.h"
#include "worker/coordinator_channel.h"

namespace geotrain::worker {
namespace {

using coordinator::KvStore;
using coordinator::RendezvousService;
using std::chrono::milliseconds;

// Long enough never to fire in a passing test, short enough that a failing one ends soon.
constexpr milliseconds kTimeout{20000};

std::vector<uint8_t> Bytes(const std::string& text) { return {text.begin(), text.end()}; }
std::string Text(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

geotrain::v1::KvScope Scope(const std::string& job_id, uint32_t generation) {
  geotrain::v1::KvScope scope;
  scope.set_job_id(job_id);
  scope.set_generation(generation);
  return scope;
}

// A coordinator's rendezvous part: a KvStore served on 127.0.0.1 (port 0: gRPC picks one, or a
// given port, to restart on the same address).
class Coordinator {
 public:
  explicit Coordinator(int port = 0) : service_(&store_) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(port), grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~Coordinator() { Stop(); }

  bool started() const { return server_ != nullptr && port_ > 0; }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  KvStore& store() { return store_; }

  // As a coordinator shutting down: calls still waiting are cancelled after a short grace.
  void Stop() {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + milliseconds(100));
    server_.reset();
  }

 private:
  KvStore store_;
  RendezvousService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

c10::intrusive_ptr<CoordinatorStore> StoreAt(const Coordinator& coordinator,
                                             const geotrain::v1::KvScope& scope,
                                             milliseconds timeout = kTimeout) {
  return c10::make_intrusive<CoordinatorStore>(CoordinatorChannel(coordinator.address()), scope,
                                               timeout, coordinator.address());
}

// What `body` throws, or "" if it returns.
template <typename Body>
std::string ErrorOf(Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Waits until exactly `count` calls block in `store` (false if that never happens), so a test
// acts only once a get is really waiting in the coordinator.
bool AwaitWaiters(const KvStore& store, size_t count) {
  const auto give_up = std::chrono::steady_clock::now() + kTimeout;
  while (store.NumWaiters() != count) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

class CoordinatorStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(coordinator_.started()); }
  Coordinator coordinator_;
};

TEST_F(CoordinatorStoreTest, TwoStoresExchangeValuesAndGetBlocksUntilSet) {
  auto alice = StoreAt(coordinator_, Scope("job-1", 1));
  auto bob = StoreAt(coordinator_, Scope("job-1", 1));
  alice->set("greeting", Bytes("hello"));
  EXPECT_EQ(Text(bob->get("greeting")), "hello");

  std::string answer;
  std::thread reader([&] { answer = Text(alice->get("reply")); });
  EXPECT_TRUE(AwaitWaiters(coordinator_.store(), 1));  // alice's get waits in the coordinator
  bob->set("reply", Bytes(std::string("hi\0there", 8)));
  reader.join();
  EXPECT_EQ(answer, std::string("hi\0there", 8));
}

TEST_F(CoordinatorStoreTest, EveryStoreOperation) {
  auto store = StoreAt(coordinator_, Scope("job-1", 1));
  EXPECT_EQ(store->getNumKeys(), 0);
  EXPECT_EQ(store->add("n", 5), 5);
  EXPECT_EQ(Text(store->get("n")), "5");  // decimal text, as c10d's stores keep counters
  EXPECT_EQ(store->add("n", -2), 3);
  EXPECT_TRUE(store->check({"n"}));
  EXPECT_FALSE(store->check({"n", "other"}));
  EXPECT_EQ(Text(store->compareSet("c", {}, Bytes("one"))), "one");
  EXPECT_EQ(Text(store->compareSet("c", Bytes("one"), Bytes("two"))), "two");
  EXPECT_EQ(Text(store->compareSet("c", Bytes("stale"), Bytes("three"))), "two");
  EXPECT_EQ(store->getNumKeys(), 2);
  EXPECT_TRUE(store->deleteKey("c"));
  EXPECT_FALSE(store->deleteKey("c"));
  EXPECT_EQ(store->getNumKeys(), 1);
  store->wait({"n"});
  store->wait({"n"}, milliseconds(100));
}

TEST_F(CoordinatorStoreTest, AddFromSeveralThreadsSums) {
  auto first = StoreAt(coordinator_, Scope("job-1", 1));
  auto second = StoreAt(coordinator_, Scope("job-1", 1));
  constexpr int kThreads = 6;
  constexpr int kAdds = 40;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      CoordinatorStore& store = t % 2 == 0 ? *first : *second;
      for (int i = 0; i < kAdds; ++i) store.add("counter", 1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(Text(first->get("counter")), std::to_string(kThreads * kAdds));
}

TEST_F(CoordinatorStoreTest, GetTimeoutThrowsNamingTheKey) {
  auto store = StoreAt(coordinator_, Scope("job-7", 3), milliseconds(300));
  const std::string error = ErrorOf([&] { store->get("absent-key"); });
  EXPECT_TRUE(Contains(error, "timed out after 300 ms waiting for keys 'absent-key'")) << error;
  EXPECT_TRUE(Contains(error, "job 'job-7' generation 3")) << error;
  EXPECT_TRUE(Contains(error, coordinator_.address())) << error;
}

TEST_F(CoordinatorStoreTest, WaitTimeoutThrowsNamingTheKeys) {
  auto store = StoreAt(coordinator_, Scope("job-1", 1));
  store->set("here", {});
  const std::string error = ErrorOf([&] { store->wait({"here", "missing"}, milliseconds(200)); });
  EXPECT_TRUE(Contains(error, "timed out after 200 ms waiting for keys 'here', 'missing'"))
      << error;
}

TEST_F(CoordinatorStoreTest, ServerErrorsAreThrownWithTheKey) {
  auto store = StoreAt(coordinator_, Scope("job-1", 1));
  store->set("text", Bytes("not a number"));
  const std::string error = ErrorOf([&] { store->add("text", 1); });
  EXPECT_TRUE(Contains(error, "FAILED_PRECONDITION")) << error;
  EXPECT_TRUE(Contains(error, "'text'")) << error;
  EXPECT_TRUE(Contains(ErrorOf([&] { store->set("", {}); }), "INVALID_ARGUMENT: key: empty"));
  EXPECT_TRUE(Contains(ErrorOf([&] { store->watchKey("k", nullptr); }), "not supported"));
}

TEST_F(CoordinatorStoreTest, ScopesDoNotSeeEachOthersKeys) {
  auto job1 = StoreAt(coordinator_, Scope("job-1", 1), milliseconds(200));
  auto job1_next = StoreAt(coordinator_, Scope("job-1", 2), milliseconds(200));
  auto job2 = StoreAt(coordinator_, Scope("job-2", 1), milliseconds(200));
  job1->set("k", Bytes("one"));
  job2->set("k", Bytes("two"));
  EXPECT_EQ(Text(job1->get("k")), "one");
  EXPECT_EQ(Text(job2->get("k")), "two");
  EXPECT_FALSE(job1_next->check({"k"}));
  EXPECT_EQ(job1_next->getNumKeys(), 0);
  const std::string error = ErrorOf([&] { job1_next->get("k"); });
  EXPECT_TRUE(Contains(error, "timed out")) << error;
}

TEST_F(CoordinatorStoreTest, DroppedScopeEndsAWaitingGet) {
  auto store = StoreAt(coordinator_, Scope("job-1", 4));
  std::string error;
  std::thread reader([&] { error = ErrorOf([&] { store->get("never"); }); });
  EXPECT_TRUE(AwaitWaiters(coordinator_.store(), 1));
  coordinator_.store().DropScope("job-1", 4);
  reader.join();
  EXPECT_TRUE(Contains(error, "FAILED_PRECONDITION")) << error;
  EXPECT_TRUE(Contains(error, "scope dropped")) << error;
}

TEST_F(CoordinatorStoreTest, GetSurvivesACoordinatorRestart) {
  const int port = coordinator_.port();
  auto store = StoreAt(coordinator_, Scope("job-1", 1));
  std::string value;
  std::string error;
  std::thread reader([&] { error = ErrorOf([&] { value = Text(store->get("after-restart")); }); });
  EXPECT_TRUE(AwaitWaiters(coordinator_.store(), 1));  // the get waits in the first coordinator
  coordinator_.Stop();                                 // ... which goes away mid-wait

  Coordinator restarted(port);  // a new coordinator on the same address, with a fresh store
  EXPECT_TRUE(restarted.started()) << "could not listen on port " << port << " again";
  if (restarted.started()) {
    // The store re-issued its get to the new coordinator, which then gets the key.
    EXPECT_TRUE(AwaitWaiters(restarted.store(), 1));
    EXPECT_TRUE(restarted.store().Set({"job-1", 1}, "after-restart", "made it").ok());
  }
  reader.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(value, "made it");
}

TEST_F(CoordinatorStoreTest, UnreachableCoordinatorTimesOutWithTheLastError) {
  const std::string address = coordinator_.address();
  coordinator_.Stop();
  auto store = c10::make_intrusive<CoordinatorStore>(CoordinatorChannel(address), Scope("job-1", 1),
                                                     milliseconds(300), address);
  const std::string error = ErrorOf([&] { store->set("k", {}); });
  EXPECT_TRUE(Contains(error, "set key 'k'")) << error;
  EXPECT_TRUE(Contains(error, "timed out after 300 ms")) << error;
  EXPECT_TRUE(Contains(error, "UNAVAILABLE")) << error;
}

TEST_F(CoordinatorStoreTest, ServiceRejectsBadRequestsNamingTheField) {
  auto stub = geotrain::v1::Rendezvous::NewStub(CoordinatorChannel(coordinator_.address()));
  {
    grpc::ClientContext context;
    geotrain::v1::KvSetRequest request;
    request.set_key("k");
    geotrain::v1::KvSetResponse response;
    const grpc::Status status = stub->KvSet(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(Contains(status.error_message(), "scope: missing")) << status.error_message();
  }
  {
    grpc::ClientContext context;
    geotrain::v1::KvWaitRequest request;
    *request.mutable_scope() = Scope("", 1);
    request.add_keys("k");
    geotrain::v1::KvWaitResponse response;
    const grpc::Status status = stub->KvWait(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(Contains(status.error_message(), "scope.job_id: empty")) << status.error_message();
  }
  {
    grpc::ClientContext context;
    geotrain::v1::KvCheckRequest request;
    *request.mutable_scope() = Scope("job-1", 1);
    request.add_keys("k");
    request.add_keys("");
    geotrain::v1::KvCheckResponse response;
    const grpc::Status status = stub->KvCheck(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(Contains(status.error_message(), "keys[1]: empty")) << status.error_message();
  }
  {
    // A get of a missing key without waiting.
    grpc::ClientContext context;
    geotrain::v1::KvGetRequest request;
    *request.mutable_scope() = Scope("job-1", 1);
    request.set_key("absent");
    geotrain::v1::KvGetResponse response;
    EXPECT_EQ(stub->KvGet(&context, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
  }
}

TEST_F(CoordinatorStoreTest, ServerWaitEndsWhenTheClientsDeadlinePasses) {
  // wait_ms asks for far more than the server grants (10 minutes) and than the call's deadline.
  auto stub = geotrain::v1::Rendezvous::NewStub(CoordinatorChannel(coordinator_.address()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + milliseconds(200));
  geotrain::v1::KvGetRequest request;
  *request.mutable_scope() = Scope("job-1", 1);
  request.set_key("never");
  request.set_wait_ms(UINT32_MAX);
  geotrain::v1::KvGetResponse response;
  EXPECT_EQ(stub->KvGet(&context, request, &response).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server's handler ends too: nothing keeps waiting in the store.
  EXPECT_TRUE(AwaitWaiters(coordinator_.store(), 0));
}

// The real thing: ProcessGroupGloo's rendezvous through the coordinator, then a collective.
TEST_F(CoordinatorStoreTest, TwoGlooRanksAllReduceThroughTheCoordinator) {
  constexpr int kSize = 2;
  std::vector<at::Tensor> results(kSize);
  std::vector<std::string> errors(kSize);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kSize; ++rank) {
    ranks.emplace_back([&, rank] {
      errors[rank] = ErrorOf([&] {
        auto store = StoreAt(coordinator_, Scope("job-gloo", 1));
        auto options = c10d::ProcessGroupGloo::Options::create(kTimeout);
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
        auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, kSize, options);
        std::vector<at::Tensor> tensors{at::full({4}, static_cast<float>(rank + 1))};
        group->allreduce(tensors)->wait();
        results[rank] = tensors[0];
      });
    });
  }
  for (std::thread& rank : ranks) rank.join();
  for (int rank = 0; rank < kSize; ++rank) {
    ASSERT_EQ(errors[rank], "") << "rank " << rank;
    EXPECT_TRUE(at::equal(results[rank], at::full({4}, 3.0f))) << results[rank];
  }
}

// And as geotrain's own data plane joins its groups (net::CreateGlooTransport).
TEST_F(CoordinatorStoreTest, GlooTransportGroupFormsThroughTheCoordinator) {
  constexpr int kSize = 2;
  std::vector<std::vector<float>> values(kSize);
  std::vector<Status> statuses(kSize);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kSize; ++rank) {
    ranks.emplace_back([&, rank] {
      net::GlooTransportOptions options;
      options.rank = rank;
      options.size = kSize;
      options.group_name = "dp0";
      options.connect_timeout = kTimeout;
      auto transport =
          net::CreateGlooTransport(options, StoreAt(coordinator_, Scope("job-net", 2)));
      if (!transport.ok()) {
        statuses[rank] = transport.status();
        return;
      }
      values[rank] = {1.0f * rank, 10.0f};
      statuses[rank] = (*transport)->AllReduceSum(Span<float>(values[rank]), kTimeout);
    });
  }
  for (std::thread& rank : ranks) rank.join();
  for (int rank = 0; rank < kSize; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << "rank " << rank << ": " << statuses[rank].ToString();
    EXPECT_EQ(values[rank], (std::vector<float>{1.0f, 20.0f}));
  }
}

}  // namespace
}  // namespace geotrain::worker
