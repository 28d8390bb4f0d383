// The coordinator daemon's objects with a real grpc::Server on a loopback port, driven through
// the generated stubs the way a worker daemon and the CLI drive it.
#include "coordinator/server.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <thread>

#include "geotrain/v1/coordinator.grpc.pb.h"
#include "geotrain/v1/rendezvous.grpc.pb.h"
#include "tests/coordinator/coordinator_test_support.h"

namespace geotrain::coordinator {
namespace {

using testing::TempDir;
using testing::TinyJobYaml;

// Generous: only a broken coordinator comes near it.
constexpr std::chrono::seconds kRpcDeadline{20};

std::unique_ptr<CoordinatorServer> StartServer(const std::string& state_dir,
                                               const std::string& listen = "127.0.0.1:0") {
  ServerOptions options;
  options.listen_address = listen;
  options.state_dir = state_dir;
  options.tick_period = std::chrono::milliseconds(50);
  auto server = CoordinatorServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
}

TEST(CoordinatorServerTest, WorkerAndCliRunAJobOverGrpc) {
  TempDir dir;
  auto server = StartServer(dir.path());
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->address(), "127.0.0.1:" + std::to_string(server->port()));
  auto channel = grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Coordinator::NewStub(channel);

  // The worker daemon: register, then open its session.
  v1::RegisterRequest register_request;
  register_request.mutable_capabilities()->set_region("us-east1");
  v1::RegisterResponse registered;
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    ASSERT_TRUE(stub->Register(&context, register_request, &registered).ok());
  }
  EXPECT_EQ(registered.worker_id(), "w-1");
  EXPECT_EQ(registered.heartbeat_timeout_ms(), 10000u);

  grpc::ClientContext session_context;
  SetDeadline(&session_context);
  auto session = stub->Session(&session_context);
  v1::WorkerMessage hello;
  hello.mutable_hello()->set_worker_id(registered.worker_id());
  ASSERT_TRUE(session->Write(hello));

  // The CLI: submit a 1x1 job and follow it from another thread.
  v1::SubmitJobRequest submit;
  submit.set_spec_yaml(TinyJobYaml(1, 1));
  submit.set_source("tiny.yaml");
  v1::Job job;
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    grpc::Status status = stub->SubmitJob(&context, submit, &job);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_EQ(job.id(), "job-1");
  std::vector<v1::JobUpdate> watched;
  grpc::Status watch_status;
  std::thread watcher([&] {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::WatchJobRequest request;
    request.set_job_id("job-1");
    request.set_follow(true);
    request.set_include_events(true);
    request.set_include_logs(true);
    auto reader = stub->WatchJob(&context, request);
    v1::JobUpdate update;
    while (reader->Read(&update)) watched.push_back(update);
    watch_status = reader->Finish();
  });

  v1::CoordinatorMessage down;
  ASSERT_TRUE(session->Read(&down));
  ASSERT_TRUE(down.has_assign()) << down.DebugString();
  const v1::Assignment assignment = down.assign();
  EXPECT_EQ(assignment.job_id(), "job-1");
  EXPECT_EQ(assignment.generation(), 1u);
  EXPECT_FALSE(assignment.resume());

  // The rendezvous API is served on the same port.
  auto rendezvous = v1::Rendezvous::NewStub(channel);
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::KvSetRequest set;
    *set.mutable_scope() = assignment.rendezvous();
    set.set_key("rank0");
    set.set_value("10.0.0.1:29500");
    v1::KvSetResponse response;
    ASSERT_TRUE(rendezvous->KvSet(&context, set, &response).ok());
  }

  v1::WorkerMessage up;
  v1::TaskStatus* task = up.mutable_task();
  task->set_job_id("job-1");
  task->set_generation(1);
  task->set_state(v1::TASK_STATE_RUNNING);
  ASSERT_TRUE(session->Write(up));
  v1::WorkerMessage steps;
  for (int64_t step = 1; step <= 2; ++step) {
    v1::StepReport* report = steps.mutable_steps()->add_reports();
    report->set_job_id("job-1");
    report->set_generation(1);
    report->set_step(step);
    report->set_loss(4.0 - static_cast<double>(step));
    report->set_step_seconds(0.25);
    report->set_wire_bytes_forward(100);
  }
  ASSERT_TRUE(session->Write(steps));
  v1::WorkerMessage logs;
  v1::LogLine* line = logs.mutable_logs()->add_lines();
  line->set_job_id("job-1");
  line->set_text("step 2 done");
  ASSERT_TRUE(session->Write(logs));
  task->set_state(v1::TASK_STATE_SUCCEEDED);
  ASSERT_TRUE(session->Write(up));

  ASSERT_TRUE(session->Read(&down));
  ASSERT_TRUE(down.has_forget()) << down.DebugString();
  EXPECT_EQ(down.forget().job_id(), "job-1");

  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::GetJobRequest request;
    request.set_job_id("job-1");
    ASSERT_TRUE(stub->GetJob(&context, request, &job).ok());
  }
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job.progress().step(), 2);
  EXPECT_DOUBLE_EQ(job.progress().loss(), 2.0);
  EXPECT_DOUBLE_EQ(job.progress().first_loss(), 3.0);
  EXPECT_EQ(job.progress().wire_bytes_forward(), 200u);
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::GetJobStepsRequest request;
    request.set_job_id("job-1");
    v1::JobSteps job_steps;
    ASSERT_TRUE(stub->GetJobSteps(&context, request, &job_steps).ok());
    ASSERT_EQ(job_steps.steps_size(), 2);
    EXPECT_DOUBLE_EQ(job_steps.steps(1).loss(), 2.0);
  }

  // The follow watch ends by itself once the job finished and everything was sent.
  watcher.join();
  EXPECT_TRUE(watch_status.ok()) << watch_status.error_message();
  ASSERT_FALSE(watched.empty());
  ASSERT_TRUE(watched.front().has_job());
  int events = 0;
  bool saw_log = false;
  v1::JobState last_state = v1::JOB_STATE_UNSPECIFIED;
  for (const v1::JobUpdate& update : watched) {
    if (update.has_job()) last_state = update.job().state();
    if (update.has_event()) ++events;
    if (update.has_log()) saw_log = saw_log || update.log().line().text() == "step 2 done";
  }
  EXPECT_EQ(last_state, v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(events, 4);  // submitted, placed, running, succeeded
  EXPECT_TRUE(saw_log);

  // Errors name what is wrong.
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::GetJobRequest request;
    request.set_job_id("job-42");
    grpc::Status status = stub->GetJob(&context, request, &job);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_NE(status.error_message().find("job-42"), std::string::npos);
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::CancelJobRequest request;
    request.set_job_id("job-1");
    grpc::Status status = stub->CancelJob(&context, request, &job);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    submit.set_spec_yaml("name: x\n");
    grpc::Status status = stub->SubmitJob(&context, submit, &job);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(status.error_message().rfind("tiny.yaml: ", 0), 0u) << status.error_message();
  }

  session->WritesDone();
  EXPECT_TRUE(session->Finish().ok());
  server->Shutdown();
}

// `geotrain submit --wait` shows why a job stays queued. The watch sends the job again when what
// it waits for changes; whether the first update or that one carries it here depends on whether
// the scheduler tried to place the job before the watch began.
TEST(CoordinatorServerTest, AWatcherSeesWhatAQueuedJobWaitsFor) {
  TempDir dir;
  auto server = StartServer(dir.path());
  ASSERT_NE(server, nullptr);
  auto stub = v1::Coordinator::NewStub(
      grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
  v1::SubmitJobRequest submit;
  submit.set_spec_yaml(TinyJobYaml(1, 2));
  v1::Job job;
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    ASSERT_TRUE(stub->SubmitJob(&context, submit, &job).ok());
  }
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::WatchJobRequest request;
  request.set_job_id(job.id());
  request.set_follow(true);
  auto reader = stub->WatchJob(&context, request);
  v1::JobUpdate update;
  std::string waiting_for;
  while (waiting_for.empty() && reader->Read(&update)) {
    if (update.has_job()) waiting_for = update.job().waiting_for();
  }
  EXPECT_EQ(waiting_for, "2 idle workers; 0 are idle now");
  context.TryCancel();
}

TEST(CoordinatorServerTest, SessionMustStartWithAHelloOfARegisteredWorker) {
  TempDir dir;
  auto server = StartServer(dir.path());
  ASSERT_NE(server, nullptr);
  auto stub = v1::Coordinator::NewStub(
      grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    auto session = stub->Session(&context);
    v1::WorkerMessage heartbeat;
    heartbeat.mutable_heartbeat();
    session->Write(heartbeat);
    session->WritesDone();
    grpc::Status status = session->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(status.error_message().find("SessionHello"), std::string::npos);
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    auto session = stub->Session(&context);
    v1::WorkerMessage hello;
    hello.mutable_hello()->set_worker_id("w-7");
    session->Write(hello);
    session->WritesDone();
    grpc::Status status = session->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_NE(status.error_message().find("w-7"), std::string::npos);
  }
}

TEST(CoordinatorServerTest, RefusesABoundPortAndABusyStateDir) {
  TempDir dir;
  TempDir other;
  auto server = StartServer(dir.path());
  ASSERT_NE(server, nullptr);

  ServerOptions options;
  options.state_dir = other.path();
  options.listen_address = server->address();
  auto same_port = CoordinatorServer::Start(options);
  ASSERT_FALSE(same_port.ok());
  EXPECT_EQ(same_port.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(same_port.status().message().find(server->address()), std::string::npos);

  options.state_dir = dir.path();
  options.listen_address = "127.0.0.1:0";
  auto same_dir = CoordinatorServer::Start(options);
  ASSERT_FALSE(same_dir.ok());
  EXPECT_EQ(same_dir.status().code(), StatusCode::kFailedPrecondition);

  // After a shutdown the directory is free and the state is all there.
  server->Shutdown();
  server = StartServer(dir.path());
  ASSERT_NE(server, nullptr);
}

}  // namespace
}  // namespace geotrain::coordinator
