// The daemon's session loop against the real coordinator, in-process on loopback: registration
// and the id file, the hello, survival of a coordinator restart, an orderly shutdown, and (when
// geotrain-worker is built) a one-rank job run from submission to success.
#include "worker/worker_session.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "coordinator/server.h"
#include "geotrain/v1/coordinator.grpc.pb.h"
#include "tests/testing/temp_dir.h"
#include "tests/worker/metrics_text.h"
#include "tests/worker/worker_test_util.h"
#include "worker/worker_identity.h"

namespace geotrain::worker {
namespace {

namespace fs = std::filesystem;
using testing::Eventually;

std::unique_ptr<coordinator::CoordinatorServer> StartCoordinator(const std::string& state_dir,
                                                                 int port) {
  coordinator::ServerOptions options;
  options.listen_address = "127.0.0.1:" + std::to_string(port);
  options.state_dir = state_dir;
  options.coordinator.heartbeat_interval_ms = 100;
  options.coordinator.heartbeat_timeout_ms = 30000;
  auto server = coordinator::CoordinatorServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

// A worker daemon's parts, its main loop on a thread of its own (which outlives its tasks).
class Worker {
 public:
  Worker(const std::string& coordinator, const std::string& work_dir, SupervisorOptions tasks,
         WorkerMetrics* metrics = nullptr)
      : outbox_(OutboxLimits{}, [this] { wakeup_.Notify(); }) {
    tasks.coordinator = coordinator;
    tasks.work_dir = work_dir;
    supervisor_ = std::make_unique<TaskSupervisor>(tasks, &outbox_, [this] { wakeup_.Notify(); });
    SessionOptions options;
    options.coordinator = coordinator;
    options.work_dir = work_dir;
    options.capabilities.set_advertise_address("127.0.0.1");
    options.capabilities.set_region("test-region");
    options.capabilities.set_device_kind("cpu");
    options.capabilities.set_cpu_count(1);
    options.backoff.initial = std::chrono::milliseconds(20);
    options.backoff.max = std::chrono::milliseconds(200);
    options.metrics = metrics;
    session_ = std::make_unique<WorkerSession>(options, supervisor_.get(), &outbox_, &wakeup_);
    thread_ = std::thread([this] { status_ = session_->Run(); });
  }
  ~Worker() {
    const Status ignored = Stop();
    (void)ignored;
  }

  Status Stop() {
    if (thread_.joinable()) {
      session_->RequestShutdown();
      thread_.join();
    }
    return status_;
  }

 private:
  Wakeup wakeup_;
  Outbox outbox_;
  std::unique_ptr<TaskSupervisor> supervisor_;
  std::unique_ptr<WorkerSession> session_;
  std::thread thread_;
  Status status_;
};

class Client {
 public:
  explicit Client(int port)
      : stub_(geotrain::v1::Coordinator::NewStub(grpc::CreateChannel(
            "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()))) {}

  std::vector<geotrain::v1::Worker> Workers() {
    grpc::ClientContext context;
    geotrain::v1::ListWorkersRequest request;
    request.set_include_dead(true);
    geotrain::v1::ListWorkersResponse response;
    if (!stub_->ListWorkers(&context, request, &response).ok()) return {};
    return {response.workers().begin(), response.workers().end()};
  }

  geotrain::v1::Coordinator::Stub* stub() { return stub_.get(); }

 private:
  std::unique_ptr<geotrain::v1::Coordinator::Stub> stub_;
};

bool OneWorkerInState(Client& client, const std::string& id, geotrain::v1::WorkerState state) {
  const auto workers = client.Workers();
  return workers.size() == 1 && workers[0].id() == id && workers[0].state() == state;
}

TEST(WorkerSessionTest, RegistersKeepsItsIdAcrossACoordinatorRestartAndClosesOnShutdown) {
  geotrain::testing::TempDir dir;
  auto server = StartCoordinator(dir.File("state"), 0);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  const std::string work_dir = dir.File("work");
  fs::create_directories(work_dir);
  Client client(port);

  SupervisorOptions tasks;
  tasks.data_root = dir.path();
  tasks.task_binary = "/bin/false";  // never started: no job is submitted
  auto worker = std::make_unique<Worker>("127.0.0.1:" + std::to_string(port), work_dir, tasks);

  std::string id;
  ASSERT_TRUE(Eventually([&] {
    auto stored = LoadWorkerId(WorkerIdPath(work_dir));
    id = stored.ok() ? *stored : "";
    return !id.empty() && OneWorkerInState(client, id, geotrain::v1::WORKER_STATE_IDLE);
  })) << "the worker never registered and opened its session";
  EXPECT_EQ(client.Workers()[0].capabilities().region(), "test-region");

  // The coordinator goes away and comes back on the same port with the same state: the worker
  // finds it again under the same id.
  server->Shutdown();
  server.reset();
  server = StartCoordinator(dir.File("state"), port);
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(
      Eventually([&] { return OneWorkerInState(client, id, geotrain::v1::WORKER_STATE_IDLE); }));

  // Shutdown closes the session: the coordinator sees the worker go.
  EXPECT_TRUE(worker->Stop().ok());
  EXPECT_TRUE(Eventually(
      [&] { return OneWorkerInState(client, id, geotrain::v1::WORKER_STATE_DISCONNECTED); }));

  // A daemon restarted on the same work dir presents the same id.
  worker = std::make_unique<Worker>("127.0.0.1:" + std::to_string(port), work_dir, tasks);
  EXPECT_TRUE(
      Eventually([&] { return OneWorkerInState(client, id, geotrain::v1::WORKER_STATE_IDLE); }));
  EXPECT_TRUE(worker->Stop().ok());
}

TEST(WorkerSessionTest, ACorruptIdFileStopsTheDaemonWithAClearError) {
  geotrain::testing::TempDir dir;
  dir.Write("worker-id", "not an id\n");
  Wakeup wakeup;
  Outbox outbox;
  SupervisorOptions tasks;
  tasks.work_dir = dir.path();
  TaskSupervisor supervisor(tasks, &outbox, nullptr);
  SessionOptions options;
  options.coordinator = "127.0.0.1:1";
  options.work_dir = dir.path();
  WorkerSession session(options, &supervisor, &outbox, &wakeup);
  const Status status = session.Run();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find(dir.File("worker-id")), std::string::npos) << status.message();
}

TEST(WorkerSessionTest, ShutdownWhileTheCoordinatorIsUnreachableReturns) {
  geotrain::testing::TempDir dir;
  SupervisorOptions tasks;
  tasks.data_root = dir.path();
  // Nothing listens on port 1; the worker keeps retrying until told to stop.
  Worker worker("127.0.0.1:1", dir.path(), tasks);
  std::this_thread::sleep_for(
      std::chrono::milliseconds(100));  // a few attempts, not a timing check
  EXPECT_TRUE(worker.Stop().ok());
  EXPECT_FALSE(fs::exists(WorkerIdPath(dir.path())));
}

TEST(WorkerSessionTest, TellsTheMetricsWhoItIsAndWhetherTheSessionIsUp) {
  geotrain::testing::TempDir dir;
  auto server = StartCoordinator(dir.File("state"), 0);
  ASSERT_NE(server, nullptr);
  const std::string work_dir = dir.File("work");
  fs::create_directories(work_dir);
  WorkerMetrics metrics;
  auto connected = [&] {
    return testing::SeriesValue(testing::ScrapeText(*metrics.registry()),
                                "geotrain_worker_connected");
  };
  EXPECT_EQ(connected(), 0);

  SupervisorOptions tasks;
  tasks.data_root = dir.path();
  tasks.task_binary = "/bin/false";
  Worker worker("127.0.0.1:" + std::to_string(server->port()), work_dir, tasks, &metrics);
  ASSERT_TRUE(Eventually([&] { return connected() == 1; }));
  auto id = LoadWorkerId(WorkerIdPath(work_dir));
  ASSERT_TRUE(id.ok() && !id->empty());
  EXPECT_EQ(testing::SeriesValue(testing::ScrapeText(*metrics.registry()), "geotrain_worker_info",
                                 {{"worker", *id}, {"region", "test-region"}, {"device", "cpu"}}),
            1);

  // The coordinator goes away: the session is down until it comes back.
  server->Shutdown();
  server.reset();
  EXPECT_TRUE(Eventually([&] { return connected() == 0; }));
  EXPECT_TRUE(worker.Stop().ok());
}

// Submission to success through the coordinator, with the real task child.
TEST(WorkerSessionTest, RunsASubmittedOneRankJobToSuccess) {
  std::error_code ec;
  const fs::path binary = fs::read_symlink("/proc/self/exe", ec).parent_path() / "geotrain-worker";
  if (!fs::exists(binary, ec)) GTEST_SKIP() << "geotrain-worker is not built next to worker_tests";

  geotrain::testing::TempDir dir;
  const std::string data_root = dir.File("data");
  fs::create_directories(data_root + "/model");
  std::ofstream(data_root + "/model/config.json")
      << R"({"model_type": "gpt2", "n_embd": 32, "n_head": 2, "n_layer": 2, "n_positions": 64,
            "vocab_size": 50257, "tie_word_embeddings": true, "activation_function": "gelu_new",
            "layer_norm_epsilon": 1e-5})";
  {
    std::ifstream corpus(std::string(GEOTRAIN_SOURCE_DIR) + "/examples/data/shakespeare/train.txt");
    std::string text(20000, '\0');
    corpus.read(text.data(), static_cast<std::streamsize>(text.size()));
    std::ofstream(data_root + "/train.txt") << text.substr(0, static_cast<size_t>(corpus.gcount()));
  }

  auto server = StartCoordinator(dir.File("state"), 0);
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  SupervisorOptions tasks;
  tasks.advertise = "127.0.0.1";
  tasks.data_root = data_root;
  tasks.allowed_paths = {std::string(GEOTRAIN_SOURCE_DIR) + "/examples/tokenizers"};
  tasks.threads = 1;
  tasks.task_binary = binary.string();
  fs::create_directories(dir.File("work"));
  Worker worker("127.0.0.1:" + std::to_string(server->port()), dir.File("work"), tasks);
  ASSERT_TRUE(Eventually([&] { return client.Workers().size() == 1; }));

  geotrain::v1::SubmitJobRequest submit;
  submit.set_source("worker_session_test");
  submit.set_spec_yaml(
      "name: worker-session-test\n"
      "model:\n  dir: model\n  init_seed: 1\n"
      "data:\n  train: [train.txt]\n  tokenizer: " +
      std::string(GEOTRAIN_SOURCE_DIR) +
      "/examples/tokenizers/gpt2\n  seq_length: 16\n"
      "pipeline:\n  micro_batch_size: 2\n  micro_batches: 1\n"
      "training:\n  steps: 3\n  timeout_seconds: 60\n");
  geotrain::v1::Job job;
  {
    grpc::ClientContext context;
    const grpc::Status status = client.stub()->SubmitJob(&context, submit, &job);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  geotrain::v1::Job seen;
  ASSERT_TRUE(Eventually([&] {
    grpc::ClientContext context;
    geotrain::v1::GetJobRequest request;
    request.set_job_id(job.id());
    if (!client.stub()->GetJob(&context, request, &seen).ok()) return false;
    return seen.state() == geotrain::v1::JOB_STATE_SUCCEEDED ||
           seen.state() == geotrain::v1::JOB_STATE_FAILED;
  }));
  EXPECT_EQ(seen.state(), geotrain::v1::JOB_STATE_SUCCEEDED) << seen.message();

  grpc::ClientContext context;
  geotrain::v1::GetJobStepsRequest steps_request;
  steps_request.set_job_id(job.id());
  geotrain::v1::JobSteps steps;
  ASSERT_TRUE(client.stub()->GetJobSteps(&context, steps_request, &steps).ok());
  ASSERT_EQ(steps.steps_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(steps.steps(i).step(), i + 1);
    EXPECT_GT(steps.steps(i).loss(), 0);
  }
  EXPECT_TRUE(worker.Stop().ok());
}

}  // namespace
}  // namespace geotrain::worker
