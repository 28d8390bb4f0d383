// Absurd RPC fields sent to a real CoordinatorServer on a loopback port: each must be refused
// with INVALID_ARGUMENT or RESOURCE_EXHAUSTED naming the field, and the coordinator must go on
// serving (checked after every refusal with a valid call).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "coordinator/server.h"
#include "geotrain/v1/coordinator.grpc.pb.h"
#include "geotrain/v1/rendezvous.grpc.pb.h"
#include "tests/coordinator/coordinator_test_support.h"

namespace geotrain::coordinator {
namespace {

using testing::TempDir;
using testing::TinyJobYaml;

// Generous: only a broken coordinator comes near it.
constexpr std::chrono::seconds kRpcDeadline{20};

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
}

// Expects `status` to refuse the request with `code` and a message naming `field`.
void ExpectRefused(const grpc::Status& status, grpc::StatusCode code, const std::string& field) {
  EXPECT_EQ(status.error_code(), code) << status.error_message();
  EXPECT_NE(status.error_message().find(field), std::string::npos)
      << "the message does not name " << field << ": " << status.error_message();
}

class HostileRequestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.state_dir = dir_.path();
    options.tick_period = std::chrono::milliseconds(50);
    // Every test sends many requests from one host; the rate limits have tests of their own.
    options.max_registrations_per_minute = 0;
    options.max_submissions_per_minute = 0;
    auto server = CoordinatorServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = v1::Coordinator::NewStub(channel_);
    kv_ = v1::Rendezvous::NewStub(channel_);
  }

  grpc::Status Submit(const v1::SubmitJobRequest& request, v1::Job* job = nullptr) {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::Job ignored;
    return stub_->SubmitJob(&context, request, job ? job : &ignored);
  }
  grpc::Status SubmitYaml(const std::string& yaml) {
    v1::SubmitJobRequest request;
    request.set_spec_yaml(yaml);
    return Submit(request);
  }
  grpc::Status Register(const v1::RegisterRequest& request, v1::RegisterResponse* response) {
    grpc::ClientContext context;
    SetDeadline(&context);
    return stub_->Register(&context, request, response);
  }
  grpc::Status KvSet(const std::string& key, const std::string& value) {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::KvSetRequest request;
    request.mutable_scope()->set_job_id("job-1");
    request.mutable_scope()->set_generation(1);
    request.set_key(key);
    request.set_value(value);
    v1::KvSetResponse response;
    return kv_->KvSet(&context, request, &response);
  }

  // A valid call still answers: the refusal did not take the coordinator down.
  void ExpectStillServing() {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ListWorkersRequest request;
    v1::ListWorkersResponse response;
    const grpc::Status status = stub_->ListWorkers(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
  }

  TempDir dir_;
  std::unique_ptr<CoordinatorServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
  std::unique_ptr<v1::Rendezvous::Stub> kv_;
};

TEST_F(HostileRequestsTest, SubmitJobWithAbsurdSpecs) {
  // A 1 MB job name (the whole spec stays under the 1 MiB spec limit).
  ExpectRefused(SubmitYaml("name: " + std::string(1000000, 'n') + "\n"),
                grpc::StatusCode::INVALID_ARGUMENT, "name");
  ExpectStillServing();
  // A spec over the size limit is refused before it is parsed.
  ExpectRefused(SubmitYaml("name: j\n#" + std::string(2 << 20, 'x') + "\n"),
                grpc::StatusCode::INVALID_ARGUMENT, "spec_yaml");
  for (const std::string count : {"-1", "0", "2147483647", "99999999999"}) {
    ExpectRefused(SubmitYaml("name: j\npipeline:\n  stages: " + count + "\n"),
                  grpc::StatusCode::INVALID_ARGUMENT, "pipeline.stages");
    ExpectRefused(SubmitYaml("name: j\ndata_parallel:\n  replicas: " + count + "\n"),
                  grpc::StatusCode::INVALID_ARGUMENT, "data_parallel.replicas");
  }
  // Each within its limit, together too many ranks.
  ExpectRefused(SubmitYaml(TinyJobYaml(1024, 4096)), grpc::StatusCode::INVALID_ARGUMENT,
                "data_parallel.replicas");
  for (const std::string& garbage :
       {std::string("{{{{ not yaml"), std::string("- a\n- b\n"), std::string("\x01\x02\x7f", 3),
        std::string("name: [unclosed\n"), std::string(5000, '[')}) {
    const grpc::Status status = SubmitYaml(garbage);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_NE(status.error_message().find("job spec"), std::string::npos) << status.error_message();
  }
  // spec_yaml is `bytes` on the wire (as a proto3 string, protobuf refused it as a bare
  // INTERNAL before any handler ran): the coordinator refuses it naming where the byte is.
  ExpectRefused(SubmitYaml(std::string("name: \xff\xfe\n")), grpc::StatusCode::INVALID_ARGUMENT,
                "byte offset 6 (line 1, column 7) is 0xff, not valid UTF-8");
  ExpectStillServing();
  v1::ListJobsRequest list;
  list.set_include_finished(true);
  v1::ListJobsResponse jobs;
  grpc::ClientContext context;
  SetDeadline(&context);
  ASSERT_TRUE(stub_->ListJobs(&context, list, &jobs).ok());
  EXPECT_EQ(jobs.jobs_size(), 0) << "a refused job was recorded";
}

TEST_F(HostileRequestsTest, SubmitJobWithAbsurdModelShapeOrSource) {
  const auto with_shape = [](int64_t hidden, int64_t layers, int64_t vocab) {
    v1::SubmitJobRequest request;
    request.set_spec_yaml(TinyJobYaml(1, 1));
    request.mutable_model_shape()->set_hidden_size(hidden);
    request.mutable_model_shape()->set_layers(layers);
    request.mutable_model_shape()->set_vocab_size(vocab);
    return request;
  };
  ExpectRefused(Submit(with_shape(-64, 4, 50257)), grpc::StatusCode::INVALID_ARGUMENT,
                "model_shape.hidden_size");
  ExpectRefused(Submit(with_shape(1'000'000'000'000'000, 4, 50257)),
                grpc::StatusCode::INVALID_ARGUMENT, "model_shape.hidden_size");
  ExpectRefused(Submit(with_shape(64, -1, 50257)), grpc::StatusCode::INVALID_ARGUMENT,
                "model_shape.layers");
  ExpectRefused(Submit(with_shape(64, 4, 1'000'000'000'000'000)),
                grpc::StatusCode::INVALID_ARGUMENT, "model_shape.vocab_size");
  v1::SubmitJobRequest long_source = with_shape(64, 4, 50257);
  long_source.set_source(std::string(100000, 's'));
  ExpectRefused(Submit(long_source), grpc::StatusCode::INVALID_ARGUMENT, "source");
  v1::SubmitJobRequest binary_source = with_shape(64, 4, 50257);
  binary_source.set_source("job\xff.yaml");
  ExpectRefused(Submit(binary_source), grpc::StatusCode::INVALID_ARGUMENT,
                "source: byte offset 3 (line 1, column 4) is 0xff");
  // A real shape is accepted.
  v1::Job job;
  const grpc::Status accepted = Submit(with_shape(64, 4, 50257), &job);
  ASSERT_TRUE(accepted.ok()) << accepted.error_message();
  EXPECT_EQ(job.model_shape().hidden_size(), 64);
  ExpectStillServing();
}

TEST_F(HostileRequestsTest, RegisterWithAbsurdCapabilities) {
  const auto register_with = [&](void (*mutate)(v1::WorkerCapabilities*)) {
    v1::RegisterRequest request;
    request.mutable_capabilities()->set_region("us-east1");
    mutate(request.mutable_capabilities());
    v1::RegisterResponse response;
    return Register(request, &response);
  };
  ExpectRefused(register_with([](v1::WorkerCapabilities* c) { c->set_cpu_count(1'000'000'000); }),
                grpc::StatusCode::INVALID_ARGUMENT, "capabilities.cpu_count");
  ExpectRefused(
      register_with([](v1::WorkerCapabilities* c) { c->set_region(std::string(100000, 'r')); }),
      grpc::StatusCode::INVALID_ARGUMENT, "capabilities.region");
  ExpectRefused(
      register_with([](v1::WorkerCapabilities* c) { c->set_host(std::string(100000, 'h')); }),
      grpc::StatusCode::INVALID_ARGUMENT, "capabilities.host");
  // -1 on the wire of a uint64 field.
  ExpectRefused(register_with([](v1::WorkerCapabilities* c) {
                  c->set_device_memory_bytes(static_cast<uint64_t>(int64_t{-1}));
                }),
                grpc::StatusCode::INVALID_ARGUMENT, "capabilities.device_memory_bytes");
  ExpectRefused(register_with([](v1::WorkerCapabilities* c) {
                  c->set_cuda_device_count(static_cast<uint32_t>(int32_t{-1}));
                }),
                grpc::StatusCode::INVALID_ARGUMENT, "capabilities.cuda_device_count");
  ExpectRefused(register_with([](v1::WorkerCapabilities* c) { c->set_probe_port(70000); }),
                grpc::StatusCode::INVALID_ARGUMENT, "capabilities.probe_port");
  ExpectRefused(register_with([](v1::WorkerCapabilities* c) {
                  c->set_data_port_min(1000);
                  c->set_data_port_max(70000);
                }),
                grpc::StatusCode::INVALID_ARGUMENT, "capabilities.data_port_max");
  v1::RegisterRequest long_id;
  long_id.set_worker_id(std::string(100000, 'w'));
  v1::RegisterResponse response;
  ExpectRefused(Register(long_id, &response), grpc::StatusCode::INVALID_ARGUMENT, "worker_id");

  // Nothing refused was recorded; a sane worker still registers as the first.
  v1::RegisterRequest sane;
  sane.mutable_capabilities()->set_region("us-east1");
  sane.mutable_capabilities()->set_cpu_count(64);
  sane.mutable_capabilities()->set_device_memory_bytes(uint64_t{80} << 30);
  sane.mutable_capabilities()->set_cuda_device_count(8);
  const grpc::Status ok = Register(sane, &response);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(response.worker_id(), "w-1");
}

TEST_F(HostileRequestsTest, KvSetWithHugeValueOrKey) {
  // Beyond the server's largest message: gRPC refuses it before any handler runs.
  ExpectRefused(KvSet("k", std::string(100 << 20, 'v')), grpc::StatusCode::RESOURCE_EXHAUSTED, "");
  ExpectRefused(KvSet(std::string(1 << 20, 'k'), "v"), grpc::StatusCode::INVALID_ARGUMENT, "key");
  ExpectRefused(KvSet("", "v"), grpc::StatusCode::INVALID_ARGUMENT, "key");
  const grpc::Status ok = KvSet("rank0", "10.0.0.1:29500");
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  ExpectStillServing();
}

// A registered worker with an open session and the 1x1 job placed on it.
class HostileSessionTest : public HostileRequestsTest {
 protected:
  void SetUp() override {
    HostileRequestsTest::SetUp();
    if (HasFatalFailure()) return;
    v1::RegisterRequest request;
    request.mutable_capabilities()->set_region("us-east1");
    v1::RegisterResponse response;
    ASSERT_TRUE(Register(request, &response).ok());
    worker_id_ = response.worker_id();
    OpenSession();
    v1::SubmitJobRequest submit;
    submit.set_spec_yaml(TinyJobYaml(1, 1));
    ASSERT_TRUE(Submit(submit).ok());
    v1::CoordinatorMessage down;
    ASSERT_TRUE(session_->Read(&down));
    ASSERT_TRUE(down.has_assign()) << down.DebugString();
    ASSERT_EQ(down.assign().generation(), 1u);
    placed_ = true;
  }
  void TearDown() override {
    if (session_ != nullptr) {
      session_context_->TryCancel();
      session_->Finish();
    }
  }

  void OpenSession() {
    session_context_ = std::make_unique<grpc::ClientContext>();
    SetDeadline(session_context_.get());
    session_ = stub_->Session(session_context_.get());
    v1::WorkerMessage hello;
    hello.mutable_hello()->set_worker_id(worker_id_);
    if (placed_) {
      // The daemon lists its running task, so the job stays on generation 1.
      v1::TaskStatus* task = hello.mutable_hello()->add_tasks();
      task->set_job_id("job-1");
      task->set_generation(1);
      task->set_state(v1::TASK_STATE_RUNNING);
    }
    ASSERT_TRUE(session_->Write(hello));
  }

  // Sends `message` and expects the coordinator to end the session with INVALID_ARGUMENT naming
  // `field`; then opens a new session (the worker daemon's reconnect).
  void ExpectSessionRefuses(const v1::WorkerMessage& message, const std::string& field) {
    session_->Write(message);  // may fail if the server already ended the stream
    v1::CoordinatorMessage down;
    while (session_->Read(&down)) {
    }
    ExpectRefused(session_->Finish(), grpc::StatusCode::INVALID_ARGUMENT, field);
    session_.reset();
    ExpectStillServing();
    OpenSession();
  }

  static v1::WorkerMessage Report(int32_t stage, int32_t replica, int64_t step) {
    v1::WorkerMessage message;
    v1::StepReport* report = message.mutable_steps()->add_reports();
    report->set_job_id("job-1");
    report->set_generation(1);
    report->set_stage(stage);
    report->set_replica(replica);
    report->set_step(step);
    report->set_loss(3.0);
    return message;
  }

  v1::Job GetJob() {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::GetJobRequest request;
    request.set_job_id("job-1");
    v1::Job job;
    EXPECT_TRUE(stub_->GetJob(&context, request, &job).ok());
    return job;
  }

  std::string worker_id_;
  bool placed_ = false;
  std::unique_ptr<grpc::ClientContext> session_context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> session_;
};

TEST_F(HostileSessionTest, StepReportsOutOfRange) {
  ExpectSessionRefuses(Report(0, 0, -1), "steps.reports[0].step");
  ExpectSessionRefuses(Report(0, 0, int64_t{1} << 62), "steps.reports[0].step");
  ExpectSessionRefuses(Report(1, 0, 1), "steps.reports[0].stage");
  ExpectSessionRefuses(Report(-1, 0, 1), "steps.reports[0].stage");
  ExpectSessionRefuses(Report(0, std::numeric_limits<int32_t>::max(), 1),
                       "steps.reports[0].replica");
  // None of them counted as progress, and the job kept its placement.
  const v1::Job job = GetJob();
  EXPECT_EQ(job.progress().step(), 0);
  EXPECT_EQ(job.generation(), 1u) << job.message();
}

TEST_F(HostileSessionTest, ProbeResultsForUnknownWorkers) {
  v1::WorkerMessage message;
  v1::ProbeResult* result = message.mutable_probes()->add_results();
  result->set_dst_worker_id("w-999");
  result->set_throughput_bytes_per_second(1e9);
  result->set_latency_seconds(0.01);
  ExpectSessionRefuses(message, "probes.results[0].dst_worker_id");
  result->set_dst_worker_id(std::string(100000, 'x'));
  ExpectSessionRefuses(message, "probes.results[0].dst_worker_id");

  grpc::ClientContext context;
  SetDeadline(&context);
  v1::LinkMatrix links;
  ASSERT_TRUE(stub_->GetLinks(&context, v1::GetLinksRequest(), &links).ok());
  for (const v1::Link& link : links.links()) {
    EXPECT_NE(link.dst_worker_id(), "w-999");
  }
}

}  // namespace
}  // namespace geotrain::coordinator
