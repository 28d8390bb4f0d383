// The control commands and CoordinatorClient against an in-process gRPC Coordinator service
// that answers from a script: what each command prints and which exit code it returns. (The
// real coordinator is exercised end to end in tests/control/.)
#include "cli/control_commands.h"

#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include "cli/control_channel.h"
#include "cli/control_client.h"
#include "cli/control_follow.h"
#include "cli/exit_codes.h"
#include "geotrain/v1/coordinator.grpc.pb.h"
#include "tests/testing/manual_clock.h"

namespace geotrain::cli {
namespace {

using geotrain::testing::ManualClock;

v1::Job MakeJob(const std::string& id, v1::JobState state, int64_t step) {
  v1::Job job;
  job.set_id(id);
  job.set_name("tiny");
  job.set_state(state);
  job.set_message(state == v1::JOB_STATE_FAILED ? "worker w-2 died 4 times" : "");
  job.mutable_progress()->set_step(step);
  job.mutable_progress()->set_total_steps(200);
  job.mutable_progress()->set_loss(3.25);
  job.mutable_progress()->set_first_loss(4.5);
  return job;
}

// Answers as a coordinator would for the few jobs of the script. Runs on gRPC's threads.
class ScriptedCoordinator final : public v1::Coordinator::Service {
 public:
  // The state the followed job ends in.
  std::atomic<v1::JobState> final_state{v1::JOB_STATE_SUCCEEDED};
  // The after_event_sequence of every WatchJob call.
  std::vector<int64_t> watch_after;
  std::mutex mu;

  std::atomic<int> submissions{0};

  grpc::Status SubmitJob(grpc::ServerContext*, const v1::SubmitJobRequest* request,
                         v1::Job* job) override {
    ++submissions;
    if (request->spec_yaml().find("bad") != std::string::npos) {
      return {grpc::StatusCode::INVALID_ARGUMENT, request->source() +
                                                      ": training.steps: must be positive\n" +
                                                      request->source() + ": model.path: missing"};
    }
    *job = MakeJob("job-1", v1::JOB_STATE_QUEUED, 0);
    return grpc::Status::OK;
  }

  grpc::Status GetJob(grpc::ServerContext* context, const v1::GetJobRequest* request,
                      v1::Job* job) override {
    if (request->job_id() == "job-slow") {
      while (!context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return {grpc::StatusCode::CANCELLED, "gave up"};
    }
    if (request->job_id() != "job-1") return {grpc::StatusCode::NOT_FOUND, "no such job"};
    *job = MakeJob("job-1", v1::JOB_STATE_RUNNING, 120);
    return grpc::Status::OK;
  }

  grpc::Status CancelJob(grpc::ServerContext*, const v1::CancelJobRequest* request,
                         v1::Job* job) override {
    if (request->job_id() == "job-1") {
      return {grpc::StatusCode::FAILED_PRECONDITION, "job-1 already succeeded"};
    }
    *job = MakeJob(request->job_id(), v1::JOB_STATE_CANCELLED, 7);
    return grpc::Status::OK;
  }

  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override {
    *response->add_jobs() = MakeJob("job-1", v1::JOB_STATE_RUNNING, 120);
    if (request->include_finished())
      *response->add_jobs() = MakeJob("job-0", v1::JOB_STATE_FAILED, 3);
    return grpc::Status::OK;
  }

  // First call: event 1, a snapshot, then a break. Later calls: what follows the sequence asked
  // for, then the finished job.
  grpc::Status WatchJob(grpc::ServerContext*, const v1::WatchJobRequest* request,
                        grpc::ServerWriter<v1::JobUpdate>* writer) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      watch_after.push_back(request->after_event_sequence());
    }
    const auto event = [&](int64_t sequence, v1::JobState state, const std::string& text) {
      if (!request->include_events() || sequence <= request->after_event_sequence()) return;
      v1::JobUpdate update;
      update.mutable_event()->set_job_id("job-1");
      update.mutable_event()->set_sequence(sequence);
      update.mutable_event()->set_unix_ms(1709294463000);
      update.mutable_event()->set_state(state);
      update.mutable_event()->set_text(text);
      writer->Write(update);
    };
    const auto log = [&](int64_t sequence, const std::string& text) {
      if (!request->include_logs() || sequence <= request->after_log_sequence()) return;
      v1::JobUpdate update;
      update.mutable_log()->set_sequence(sequence);
      update.mutable_log()->mutable_line()->set_worker_id("w-2");
      update.mutable_log()->mutable_line()->set_stage(1);
      update.mutable_log()->mutable_line()->set_unix_ms(1709294463000);
      update.mutable_log()->mutable_line()->set_text(text);
      writer->Write(update);
    };
    const auto snapshot = [&](v1::JobState state, int64_t step) {
      v1::JobUpdate update;
      *update.mutable_job() = MakeJob("job-1", state, step);
      writer->Write(update);
    };
    event(1, v1::JOB_STATE_RUNNING, "placed on w-1, w-2");
    log(1, "loaded stage 1");
    snapshot(v1::JOB_STATE_RUNNING, 10);
    if (request->follow() && request->after_event_sequence() == 0 &&
        request->after_log_sequence() == 0) {
      return {grpc::StatusCode::UNAVAILABLE, "coordinator restarting"};
    }
    if (!request->follow()) return grpc::Status::OK;
    event(2, final_state.load(),
          final_state.load() == v1::JOB_STATE_SUCCEEDED ? "done" : "gave up");
    log(2, "bye");
    snapshot(final_state.load(), 200);
    return grpc::Status::OK;
  }
};

class ControlCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    control_.coordinator = "127.0.0.1:" + std::to_string(port);
    job_file_ = ::testing::TempDir() + "control_commands_test_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml";
  }
  void TearDown() override {
    server_->Shutdown();
    std::remove(job_file_.c_str());
  }

  CommandContext Context() {
    CommandContext context{out_, err_, clock_};
    context.zone = TimeZone::kUtc;
    return context;
  }
  void WriteJobFile(const std::string& text) { std::ofstream(job_file_) << text; }

  ScriptedCoordinator service_;
  std::unique_ptr<grpc::Server> server_;
  ControlOptions control_;
  std::string job_file_;
  std::ostringstream out_, err_;
  ManualClock clock_{1709294463000};
};

TEST_F(ControlCommandsTest, SubmitPrintsTheJobId) {
  WriteJobFile("name: tiny\n");
  CommandContext context = Context();
  EXPECT_EQ(RunSubmitCommand(control_, {job_file_}, context), kExitSuccess) << err_.str();
  EXPECT_EQ(out_.str(), "job-1\n");
}

TEST_F(ControlCommandsTest, ARejectedSpecPrintsEveryProblemOnItsOwnLine) {
  WriteJobFile("bad: yes\n");
  CommandContext context = Context();
  EXPECT_EQ(RunSubmitCommand(control_, {job_file_}, context), kExitFailure);
  EXPECT_EQ(err_.str(), "geotrain: INVALID_ARGUMENT: the coordinator rejected " + job_file_ +
                            ":\n  " + job_file_ + ": training.steps: must be positive\n  " +
                            job_file_ + ": model.path: missing\n");
  EXPECT_EQ(out_.str(), "");
}

// Issue 20: such a file once failed as a bare "INTERNAL:" (a protobuf string must be UTF-8).
// Now it is refused before anything is sent, naming the file and where the bad byte is.
TEST_F(ControlCommandsTest, SubmitRefusesAJobFileThatIsNotUtf8) {
  WriteJobFile("name: tiny\nmodel: {dir: /m\xff}\n");
  CommandContext context = Context();
  EXPECT_EQ(RunSubmitCommand(control_, {job_file_}, context), kExitFailure);
  EXPECT_NE(err_.str().find("INVALID_ARGUMENT: " + job_file_ +
                            ": byte offset 26 (line 2, column 16) is 0xff, not valid UTF-8"),
            std::string::npos)
      << err_.str();
  EXPECT_EQ(service_.submissions.load(), 0);
}

TEST_F(ControlCommandsTest, SubmitWaitFollowsAcrossABreakAndExitsZeroOnSuccess) {
  WriteJobFile("name: tiny\n");
  SubmitOptions options{job_file_};
  options.wait = true;
  CommandContext context = Context();
  EXPECT_EQ(RunSubmitCommand(control_, options, context), kExitSuccess) << err_.str();
  EXPECT_EQ(out_.str(), "job-1\n");
  // Resumed after event 1, so it was shown once.
  EXPECT_EQ(service_.watch_after, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(err_.str(),
            "[12:01:03] job-1 running: placed on w-1, w-2\n"
            "job-1 running step 10/200 loss 3.250\n"
            "[12:01:03] lost the stream (UNAVAILABLE: the coordinator at " +
                control_.coordinator +
                " (from --coordinator) is unavailable (WatchJob): coordinator restarting); "
                "reconnecting for up to 2:00\n"
                "[12:01:03] job-1 succeeded: done\n"
                "job-1 succeeded: step 200/200, loss 4.500 -> 3.250\n");
}

TEST_F(ControlCommandsTest, SubmitWaitExitsFourWhenTheJobFails) {
  WriteJobFile("name: tiny\n");
  service_.final_state = v1::JOB_STATE_FAILED;
  SubmitOptions options{job_file_};
  options.wait = true;
  ControlOptions json = control_;
  json.format = OutputFormat::kJson;
  CommandContext context = Context();
  EXPECT_EQ(RunSubmitCommand(json, options, context), kExitJobFailed) << err_.str();
  // JSON: only the finished job, on one line.
  EXPECT_EQ(out_.str().rfind("{\"id\":\"job-1\"", 0), 0u) << out_.str();
  EXPECT_NE(out_.str().find("\"state\":\"JOB_STATE_FAILED\""), std::string::npos) << out_.str();
  EXPECT_NE(err_.str().find("geotrain: job-1 failed: worker w-2 died 4 times\n"), std::string::npos)
      << err_.str();
}

TEST_F(ControlCommandsTest, StatusAsJsonHasTheProgressFields) {
  control_.format = OutputFormat::kJson;
  CommandContext context = Context();
  EXPECT_EQ(RunStatusCommand(control_, {"job-1"}, context), kExitSuccess) << err_.str();
  const std::string text = out_.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("\"progress\":{\"step\":\"120\",\"total_steps\":\"200\",\"loss\":3.25"),
            std::string::npos)
      << text;
}

TEST_F(ControlCommandsTest, StatusWatchPrintsTheTableThenProgressUntilTheEnd) {
  StatusOptions options{"job-1"};
  options.watch = true;
  CommandContext context = Context();
  EXPECT_EQ(RunStatusCommand(control_, options, context), kExitSuccess) << err_.str();
  const std::string text = out_.str();
  EXPECT_EQ(text.rfind("id          job-1\n", 0), 0u) << text;
  EXPECT_NE(text.find("\njob-1 running step 10/200 loss 3.250\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[12:01:03] job-1 succeeded: done\n"), std::string::npos) << text;
  EXPECT_NE(text.find("job-1 succeeded: step 200/200"), std::string::npos) << text;
}

TEST_F(ControlCommandsTest, AnUnknownJobIsNamed) {
  CommandContext context = Context();
  EXPECT_EQ(RunStatusCommand(control_, {"job-404"}, context), kExitFailure);
  EXPECT_EQ(err_.str(), "geotrain: NOT_FOUND: job job-404: no such job\n");
}

TEST_F(ControlCommandsTest, CancelPrintsTheNewStateOrTheCoordinatorsReason) {
  CommandContext context = Context();
  EXPECT_EQ(RunCancelCommand(control_, "job-2", context), kExitSuccess) << err_.str();
  EXPECT_EQ(out_.str(), "job-2 cancelled\n");
  EXPECT_EQ(RunCancelCommand(control_, "job-1", context), kExitFailure);
  EXPECT_EQ(err_.str(), "geotrain: FAILED_PRECONDITION: job-1 already succeeded\n");
}

TEST_F(ControlCommandsTest, JobsListsRunningJobsOrAllOfThem) {
  CommandContext context = Context();
  EXPECT_EQ(RunJobsCommand(control_, {}, context), kExitSuccess);
  EXPECT_EQ(out_.str(),
            "ID     NAME  STATE    STEP     LOSS   AGE\n"
            "job-1  tiny  running  120/200  3.250  -\n");
  out_.str("");
  control_.format = OutputFormat::kJson;
  EXPECT_EQ(RunJobsCommand(control_, {/*all=*/true}, context), kExitSuccess);
  EXPECT_EQ(out_.str().rfind("{\"jobs\":[{\"id\":\"job-1\"", 0), 0u) << out_.str();
  EXPECT_NE(out_.str().find("\"id\":\"job-0\""), std::string::npos) << out_.str();
}

TEST_F(ControlCommandsTest, LogsPrintsTheLinesSoFarOrFollowsToTheEnd) {
  CommandContext context = Context();
  EXPECT_EQ(RunLogsCommand(control_, {"job-1"}, context), kExitSuccess) << err_.str();
  EXPECT_EQ(out_.str(), "[12:01:03] w-2 s1r0: loaded stage 1\n");

  out_.str("");
  LogsOptions follow{"job-1"};
  follow.follow = true;
  follow.events = true;
  EXPECT_EQ(RunLogsCommand(control_, follow, context), kExitSuccess) << err_.str();
  EXPECT_EQ(out_.str(),
            "[12:01:03] job-1 running: placed on w-1, w-2\n"
            "[12:01:03] w-2 s1r0: loaded stage 1\n"
            "[12:01:03] job-1 succeeded: done\n"
            "[12:01:03] w-2 s1r0: bye\n");
}

TEST_F(ControlCommandsTest, ACoordinatorThatDoesNotAnswerInTimeIsAFailureNotUnreachable) {
  control_.timeout_seconds = 0.2;
  CommandContext context = Context();
  EXPECT_EQ(RunStatusCommand(control_, {"job-slow"}, context), kExitFailure);
  EXPECT_NE(err_.str().find("did not answer GetJob within 200 ms (--timeout-seconds)"),
            std::string::npos)
      << err_.str();
}

TEST_F(ControlCommandsTest, AStoppedCoordinatorIsUnreachable) {
  server_->Shutdown();
  CommandContext context = Context();
  EXPECT_EQ(RunJobsCommand(control_, {}, context), kExitUnreachable);
  EXPECT_NE(err_.str().find("geotrain: UNAVAILABLE: cannot reach the coordinator at " +
                            control_.coordinator + " (from --coordinator)"),
            std::string::npos)
      << err_.str();
}

// A coordinator whose WatchJob sends event 1 and then holds the stream open until the server
// goes away, as a real one does while a job runs.
class HoldingCoordinator final : public v1::Coordinator::Service {
 public:
  grpc::Status WatchJob(grpc::ServerContext* context, const v1::WatchJobRequest* request,
                        grpc::ServerWriter<v1::JobUpdate>* writer) override {
    v1::JobUpdate update;
    update.mutable_event()->set_job_id("job-1");
    update.mutable_event()->set_sequence(1);
    update.mutable_event()->set_text("placed");
    writer->Write(update);
    while (!context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return {grpc::StatusCode::CANCELLED, "shutting down"};
  }
};

// Hands the first event to a callback, records the rest.
class SignallingHandler final : public JobUpdateHandler {
 public:
  explicit SignallingHandler(std::function<void()> on_first_event)
      : on_first_event_(std::move(on_first_event)) {}
  void OnJob(const v1::Job& job) override { states.push_back(job.state()); }
  void OnEvent(const v1::JobEvent& event) override {
    events.push_back(event.sequence());
    if (events.size() == 1) on_first_event_();
  }
  void OnLog(const v1::SequencedLogLine&) override {}
  void OnStreamBroken(const Status&, int64_t) override { ++breaks; }
  std::vector<v1::JobState> states;
  std::vector<int64_t> events;
  int breaks = 0;

 private:
  std::function<void()> on_first_event_;
};

TEST(ControlRestartTest, FollowingSurvivesACoordinatorRestartOnTheSamePort) {
  HoldingCoordinator first_service;
  grpc::ServerBuilder first_builder;
  int port = 0;
  first_builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  first_builder.RegisterService(&first_service);
  std::unique_ptr<grpc::Server> first = first_builder.BuildAndStart();
  ASSERT_NE(first, nullptr);
  const std::string target = "127.0.0.1:" + std::to_string(port);

  // On the first event: stop the first server, then start the second on the same port.
  ScriptedCoordinator second_service;
  std::unique_ptr<grpc::Server> second;
  std::promise<void> first_event;
  std::thread restarter([&] {
    first_event.get_future().wait();
    first->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
    grpc::ServerBuilder builder;
    builder.AddListeningPort(target, grpc::InsecureServerCredentials());
    builder.RegisterService(&second_service);
    second = builder.BuildAndStart();
  });

  const CoordinatorAddress address{target, "--coordinator"};
  CoordinatorClient client(address, CreateCoordinatorChannel(address), 10'000);
  SignallingHandler handler([&] { first_event.set_value(); });
  FollowOptions options;
  options.request.set_job_id("job-1");
  options.request.set_follow(true);
  options.request.set_include_events(true);
  options.reconnect_ms = 30'000;
  const StatusOr<FollowResult> result = FollowJob(client, options, handler, RealClock());
  if (handler.events.empty()) first_event.set_value();  // failed early: release the restarter
  restarter.join();
  ASSERT_NE(second, nullptr) << "could not listen on " << target << " again";
  second->Shutdown();

  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->job->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(handler.events, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(handler.breaks, 1);
  EXPECT_EQ(second_service.watch_after.back(), 1);
}

}  // namespace
}  // namespace geotrain::cli
