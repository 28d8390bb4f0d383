// The failure policy of the coordinator's durable writes (docs/architecture.md, "Failure
// policy"): a StateStore write that fails puts the core into a lasting error state in which every
// call that would change state answers UNAVAILABLE naming the failed write, the reads keep
// answering, the metrics page and the list responses say so, and a coordinator restarted on the
// same database finds everything it acknowledged. The failures come from a FaultInjectingStateStore
// around the real SQLite store; the core runs on a ManualClock with recording sessions.
#include <grpcpp/server_context.h>
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "coordinator/coordinator_core.h"
#include "coordinator/coordinator_metrics.h"
#include "coordinator/coordinator_service.h"
#include "coordinator/kv_store.h"
#include "coordinator/kv_store_scopes.h"
#include "tests/coordinator/core_test_fixture.h"
#include "tests/coordinator/fault_injecting_state_store.h"
#include "tests/testing/manual_clock.h"

namespace geotrain::coordinator {
namespace {

using geotrain::testing::ManualClock;
using testing::CoreTest;
using testing::FaultInjectingStateStore;
using testing::kStart;
using testing::RecordingSession;
using testing::TempDir;
using testing::TinyJobYaml;

// What SQLite says when the disk is full, as the store reports it.
constexpr char kDiskFull[] = "coordinator.db: executing \"INSERT\": database or disk is full";

Status DiskFull() { return Internal(kDiskFull); }

class StateStoreFailureTest : public CoreTest {
 protected:
  StateStore* WrapStore(StateStore* sqlite) override {
    faulty_ = std::make_unique<FaultInjectingStateStore>(sqlite);
    return faulty_.get();
  }
  void StartCore() override {
    CoreTest::StartCore();
    service_ = std::make_unique<CoordinatorService>(core_.get(), faulty_.get());
  }
  // What a killed coordinator leaves: the state dir, with no fault injected any more.
  void StopCore() override {
    service_.reset();
    core_.reset();
    faulty_.reset();
    CoreTest::StopCore();
  }

  StatusOr<v1::RegisterResponse> Register(const std::string& id = "") {
    v1::RegisterRequest request;
    request.set_worker_id(id);
    request.mutable_capabilities()->set_region("us");
    return core_->Register(request);
  }

  // Registers and connects a worker; returns its id.
  std::string AddWorker() {
    StatusOr<v1::RegisterResponse> registered = Register();
    EXPECT_TRUE(registered.ok()) << registered.status().ToString();
    StatusOr<uint64_t> session = OpenSession(registered->worker_id());
    EXPECT_TRUE(session.ok()) << session.status().ToString();
    return registered->worker_id();
  }

  StatusOr<v1::Job> Submit(int stages, int replicas) {
    v1::SubmitJobRequest request;
    request.set_spec_yaml(TinyJobYaml(stages, replicas));
    return core_->SubmitJob(request);
  }

  // The single assignment `worker_id` received since the last call.
  v1::Assignment TakeAssignment(const std::string& worker_id) {
    std::vector<v1::Assignment> assignments;
    for (const v1::CoordinatorMessage& m : sessions_[worker_id]->Take()) {
      if (m.has_assign()) assignments.push_back(m.assign());
    }
    EXPECT_EQ(assignments.size(), 1u) << worker_id;
    return assignments.empty() ? v1::Assignment() : assignments[0];
  }

  static v1::WorkerMessage TaskMessage(const v1::Assignment& a, v1::TaskState state) {
    v1::WorkerMessage message;
    *message.mutable_task() = Task(a, state);
    return message;
  }

  static v1::WorkerMessage StepMessage(const v1::Assignment& a, int64_t step) {
    v1::WorkerMessage message = StepReportMessage(a, step);
    message.mutable_steps()->mutable_reports(0)->set_loss(3.0);
    return message;
  }

  v1::JobState StateOf(const std::string& job_id) {
    StatusOr<v1::Job> job = core_->GetJob(job_id);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->state() : v1::JOB_STATE_UNSPECIFIED;
  }

  std::set<std::string> JobIds() {
    std::set<std::string> ids;
    for (const v1::Job& job : core_->ListJobs(/*include_finished=*/true)) ids.insert(job.id());
    return ids;
  }

  std::set<std::string> WorkerIds() {
    std::set<std::string> ids;
    for (const v1::Worker& worker : core_->ListWorkers(/*include_dead=*/true)) {
      ids.insert(worker.id());
    }
    return ids;
  }

  // geotrain_coordinator_state_store_failed as the metrics page shows it.
  std::string StoreFailedSample() {
    const std::string page =
        prometheus::TextSerializer().Serialize(StateStoreMetrics(core_.get()).Collect());
    const std::string name = "\ngeotrain_coordinator_state_store_failed ";
    const size_t at = ("\n" + page).find(name);
    if (at == std::string::npos) return "absent from:\n" + page;
    return page.substr(at + name.size() - 1, page.find('\n', at) - (at + name.size() - 1));
  }

  // A job of one rank, placed on `worker_id` and running there.
  v1::Assignment RunningJob(const std::string& worker_id) {
    StatusOr<v1::Job> job = Submit(1, 1);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    core_->Tick();
    const v1::Assignment assignment = TakeAssignment(worker_id);
    EXPECT_TRUE(Send(worker_id, TaskMessage(assignment, v1::TASK_STATE_RUNNING)).ok());
    EXPECT_EQ(StateOf(assignment.job_id()), v1::JOB_STATE_RUNNING);
    return assignment;
  }

  // The refusal every state-changing call answers once the store failed.
  static void ExpectRefused(const Status& status, const std::string& call) {
    EXPECT_EQ(status.code(), StatusCode::kUnavailable) << call << ": " << status.ToString();
    EXPECT_NE(status.message().find(kDiskFull), std::string::npos)
        << call << ": " << status.ToString();
    EXPECT_NE(status.message().find("no changes are accepted until the coordinator is restarted"),
              std::string::npos)
        << call << ": " << status.ToString();
  }

  std::unique_ptr<FaultInjectingStateStore> faulty_;
  std::unique_ptr<CoordinatorService> service_;
};

TEST_F(StateStoreFailureTest, TheFaultInjectingStoreFailsTheChosenWritesOnly) {
  TempDir dir;
  auto sqlite = OpenSqliteStateStore(dir.path());
  ASSERT_TRUE(sqlite.ok()) << sqlite.status().ToString();
  FaultInjectingStateStore store(sqlite->get());
  v1::Worker worker;
  worker.set_id("w-1");
  store.FailNthWrite(2, DiskFull());
  EXPECT_TRUE(store.PutWorker(worker).ok());
  EXPECT_EQ(store.NextJobNumber().status().message(), kDiskFull);
  EXPECT_TRUE(store.NextJobNumber().ok());
  store.FailWritesFrom(1, NotFound("gone"));
  EXPECT_EQ(store.PutWorker(worker).code(), StatusCode::kNotFound);
  EXPECT_EQ(store.NextWorkerNumber().status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.writes(), 5);
  EXPECT_EQ(store.failed_writes(), 3);
  // Reads pass, and the failed writes never reached the database.
  auto state = store.Load();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->workers.size(), 1u);
  auto number = sqlite->get()->NextJobNumber();
  ASSERT_TRUE(number.ok());
  EXPECT_EQ(*number, 2u);  // the one successful NextJobNumber took 1
}

TEST_F(StateStoreFailureTest, AFailedWriteRefusesEveryChangeAndKeepsAnsweringReads) {
  const std::string busy = AddWorker();  // w-1
  const std::string idle = AddWorker();  // w-2
  const v1::Assignment running = RunningJob(busy);
  StatusOr<v1::Job> queued = Submit(1, 2);  // needs two idle workers: waits
  ASSERT_TRUE(queued.ok());
  core_->Tick();
  EXPECT_EQ(StateOf(queued->id()), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(core_->StateStoreFailure(), "");
  EXPECT_EQ(StoreFailedSample(), "0");

  // One write fails; the ones after it would succeed, but the error state lasts.
  faulty_->FailNthWrite(1, DiskFull());
  ExpectRefused(Submit(1, 1).status(), "the SubmitJob whose write failed");
  const int writes = faulty_->writes();
  EXPECT_EQ(faulty_->failed_writes(), 1);
  EXPECT_NE(core_->StateStoreFailure().find(kDiskFull), std::string::npos)
      << core_->StateStoreFailure();
  EXPECT_EQ(StoreFailedSample(), "1");

  // Every call that would change state is refused with the reason...
  ExpectRefused(Submit(1, 1).status(), "SubmitJob");
  ExpectRefused(core_->CancelJob(queued->id()).status(), "CancelJob");
  ExpectRefused(Register().status(), "Register (new)");
  ExpectRefused(Register(idle).status(), "Register (again)");
  ExpectRefused(OpenSession(idle).status(), "OpenSession");
  ExpectRefused(Send(busy, TaskMessage(running, v1::TASK_STATE_SUCCEEDED)), "TaskStatus");
  ExpectRefused(Send(busy, StepMessage(running, 1)), "StepReports");
  v1::WorkerMessage logs;
  logs.mutable_logs()->add_lines()->set_job_id(running.job_id());
  ExpectRefused(Send(busy, logs), "LogLines");
  v1::WorkerMessage probes;
  probes.mutable_probes()->add_results()->set_dst_worker_id(idle);
  ExpectRefused(Send(busy, probes), "ProbeResults");
  // ...a heartbeat changes nothing that is written: the session stays.
  v1::WorkerMessage heartbeat;
  heartbeat.mutable_heartbeat()->set_unix_ms(clock_.NowUnixMs());
  const Status heartbeat_status = Send(idle, heartbeat);
  EXPECT_TRUE(heartbeat_status.ok()) << heartbeat_status.ToString();
  // Nothing is decided any more: silence past the heartbeat timeout declares nobody dead.
  clock_.AdvanceMs(60'000);
  core_->Tick();
  EXPECT_EQ(faulty_->writes(), writes) << "nothing is written after the failure";
  for (const auto& [id, session] : sessions_) {
    EXPECT_TRUE(session->Take().empty()) << id;
    EXPECT_FALSE(session->closed()) << id;
  }

  // The reads keep answering, and show nothing that was refused.
  EXPECT_EQ(JobIds(), (std::set<std::string>{running.job_id(), queued->id()}));
  EXPECT_EQ(StateOf(running.job_id()), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(StateOf(queued->id()), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(WorkerIds(), (std::set<std::string>{busy, idle}));
  EXPECT_EQ(core_->GetLinks().links_size(), 2);
  v1::GetJobStepsRequest steps;
  steps.set_job_id(running.job_id());
  EXPECT_TRUE(core_->GetJobSteps(steps).ok());

  // Over gRPC: UNAVAILABLE with the reason for changes, the reason in the lists' answers.
  grpc::ServerContext context;
  v1::SubmitJobRequest submit;
  submit.set_spec_yaml(TinyJobYaml(1, 1));
  v1::Job job;
  grpc::Status status = service_->SubmitJob(&context, &submit, &job);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find(kDiskFull), std::string::npos) << status.error_message();
  v1::CancelJobRequest cancel;
  cancel.set_job_id(queued->id());
  status = service_->CancelJob(&context, &cancel, &job);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  v1::RegisterRequest register_request;
  v1::RegisterResponse registered;
  status = service_->Register(&context, &register_request, &registered);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  v1::ListJobsRequest list_jobs;
  list_jobs.set_include_finished(true);
  v1::ListJobsResponse jobs;
  ASSERT_TRUE(service_->ListJobs(&context, &list_jobs, &jobs).ok());
  EXPECT_EQ(jobs.jobs_size(), 2);
  EXPECT_EQ(jobs.state_store_failure(), core_->StateStoreFailure());
  v1::ListWorkersRequest list_workers;
  v1::ListWorkersResponse workers;
  ASSERT_TRUE(service_->ListWorkers(&context, &list_workers, &workers).ok());
  EXPECT_EQ(workers.workers_size(), 2);
  EXPECT_EQ(workers.state_store_failure(), core_->StateStoreFailure());
  v1::GetJobRequest get;
  get.set_job_id(running.job_id());
  EXPECT_TRUE(service_->GetJob(&context, &get, &job).ok());

  // Restarted on the same database (the disk fixed): everything acknowledged is there, the
  // refused submission is not, and the coordinator accepts changes again.
  RestartCore();
  EXPECT_EQ(core_->StateStoreFailure(), "");
  EXPECT_EQ(StoreFailedSample(), "0");
  EXPECT_EQ(JobIds(), (std::set<std::string>{running.job_id(), queued->id()}));
  EXPECT_EQ(StateOf(running.job_id()), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(StateOf(queued->id()), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(WorkerIds(), (std::set<std::string>{busy, idle}));
  StatusOr<v1::Job> after = Submit(1, 1);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(JobIds().size(), 3u);
}

TEST_F(StateStoreFailureTest, ACancelWhoseWriteFailedIsNeitherAcknowledgedNorDone) {
  const std::string worker = AddWorker();
  const v1::Assignment running = RunningJob(worker);
  faulty_->FailNthWrite(1, DiskFull());
  ExpectRefused(core_->CancelJob(running.job_id()).status(), "CancelJob");
  // The job stays as it was on record: running, no stop order sent, no scope dropped.
  StatusOr<v1::Job> job = core_->GetJob(running.job_id());
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(job->message(), "");
  EXPECT_EQ(job->finished_unix_ms(), 0);
  EXPECT_TRUE(sessions_[worker]->Take().empty());
  RestartCore();
  EXPECT_EQ(StateOf(running.job_id()), v1::JOB_STATE_RUNNING);
  auto events = store_->EventsAfter(running.job_id(), 0, 100);
  ASSERT_TRUE(events.ok());
  for (const v1::JobEvent& event : *events) {
    EXPECT_EQ(event.text().find("cancel"), std::string::npos) << event.text();
  }
}

TEST_F(StateStoreFailureTest, APlacementWhoseWriteFailedSendsNoAssignment) {
  const std::string worker = AddWorker();
  StatusOr<v1::Job> queued = Submit(1, 1);
  ASSERT_TRUE(queued.ok());
  faulty_->FailNthWrite(1, DiskFull());
  core_->Tick();  // places the job: its transition to placing is the write that fails
  EXPECT_NE(core_->StateStoreFailure().find("writing " + queued->id()), std::string::npos)
      << core_->StateStoreFailure();
  EXPECT_TRUE(sessions_[worker]->Take().empty());
  StatusOr<v1::Job> job = core_->GetJob(queued->id());
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(job->generation(), 0u);
  EXPECT_EQ(job->placements_size(), 0);
  core_->Tick();
  EXPECT_TRUE(sessions_[worker]->Take().empty());

  RestartCore();
  EXPECT_EQ(StateOf(queued->id()), v1::JOB_STATE_QUEUED);
  ASSERT_TRUE(OpenSession(worker).ok());
  core_->Tick();
  EXPECT_EQ(TakeAssignment(worker).generation(), 1u);
}

// Issue 20: the ranks derive their frame nonces from the job's key and the generation, so the
// generation must be on disk (synced) before any Assignment of it goes out; a sync that fails
// stops the placement, and the generation is never handed out twice.
TEST_F(StateStoreFailureTest, AGenerationIsSyncedBeforeItsAssignmentAndNeverReused) {
  const std::string worker = AddWorker();
  StatusOr<v1::Job> queued = Submit(1, 1);
  ASSERT_TRUE(queued.ok());
  const int before = faulty_->writes();
  faulty_->FailNthWrite(2, DiskFull());  // 1: the placing record; 2: its sync
  core_->Tick();
  EXPECT_EQ(faulty_->writes() - before, 2);
  EXPECT_NE(core_->StateStoreFailure().find("syncing generation 1 of " + queued->id()),
            std::string::npos)
      << core_->StateStoreFailure();
  EXPECT_TRUE(sessions_[worker]->Take().empty());
  core_->Tick();
  EXPECT_TRUE(sessions_[worker]->Take().empty());

  // The placing record reached the database without its sync: the restarted coordinator must
  // not hand generation 1 out again.
  RestartCore();
  ASSERT_TRUE(OpenSession(worker).ok());
  uint32_t generation = 0;
  for (int i = 0; i < 100 && generation == 0; ++i) {
    core_->Tick();
    for (const v1::CoordinatorMessage& message : sessions_[worker]->Take()) {
      if (message.has_assign()) generation = message.assign().generation();
    }
    clock_.AdvanceMs(1000);
  }
  EXPECT_EQ(generation, 2u);
}

TEST_F(StateStoreFailureTest, AStepWhoseWriteFailedEndsTheSessionWithTheReason) {
  const std::string worker = AddWorker();
  const v1::Assignment running = RunningJob(worker);
  faulty_->FailWritesFrom(1, DiskFull());
  ExpectRefused(Send(worker, StepMessage(running, 1)), "the StepReports whose write failed");
  EXPECT_NE(core_->StateStoreFailure().find("writing step 1 of " + running.job_id()),
            std::string::npos)
      << core_->StateStoreFailure();
  EXPECT_EQ(StoreFailedSample(), "1");
  RestartCore();
  auto steps = store_->StepsAfter(running.job_id(), 0);
  ASSERT_TRUE(steps.ok());
  EXPECT_TRUE(steps->empty());
}

// Whichever write fails, a restarted coordinator has every worker and job whose call was
// acknowledged, in the state the last acknowledged call left it, and nothing that was refused.
// Runs the same calls once without a failure, then once for each of their writes failing.
class StateStoreFailureSweep : public ::testing::Test {
 protected:
  // Runs the calls with write `failing` failing (0: none), checks the restart, and returns how
  // many writes were attempted.
  int RunAndRestart(int failing) {
    TempDir dir;
    ManualClock clock(kStart);
    KvStore kv;
    std::unique_ptr<RendezvousScopes> scopes = KvStoreScopes(&kv);
    const CoordinatorOptions options;
    // Acknowledged workers, and the state each acknowledged job was left in.
    std::set<std::string> workers;
    std::map<std::string, v1::JobState> jobs;
    int writes = 0;
    {
      auto sqlite = OpenSqliteStateStore(dir.path());
      EXPECT_TRUE(sqlite.ok()) << sqlite.status().ToString();
      if (!sqlite.ok()) return 0;
      FaultInjectingStateStore store(sqlite->get());
      auto created = CoordinatorCore::Create(options, &store, scopes.get(), &clock);
      EXPECT_TRUE(created.ok()) << created.status().ToString();
      if (!created.ok()) return 0;
      CoordinatorCore& core = **created;
      if (failing > 0) store.FailNthWrite(failing, DiskFull());
      std::map<std::string, std::shared_ptr<RecordingSession>> sessions;
      std::map<std::string, uint64_t> session_ids;
      const auto add_worker = [&] {
        StatusOr<v1::RegisterResponse> registered = core.Register(v1::RegisterRequest());
        if (!registered.ok()) return;
        workers.insert(registered->worker_id());
        v1::SessionHello hello;
        hello.set_worker_id(registered->worker_id());
        auto session = std::make_shared<RecordingSession>();
        StatusOr<uint64_t> id = core.OpenSession(hello, session);
        if (!id.ok()) return;
        sessions[registered->worker_id()] = session;
        session_ids[registered->worker_id()] = *id;
      };
      const auto submit = [&] {
        v1::SubmitJobRequest request;
        request.set_spec_yaml(TinyJobYaml(1, 1));
        StatusOr<v1::Job> job = core.SubmitJob(request);
        if (job.ok()) jobs[job->id()] = job->state();
      };
      // Each worker reports its assignment running: acknowledged when the message is.
      const auto report_running = [&] {
        for (const auto& [id, session] : sessions) {
          for (const v1::CoordinatorMessage& m : session->Take()) {
            if (!m.has_assign()) continue;
            v1::WorkerMessage message;
            message.mutable_task()->set_job_id(m.assign().job_id());
            message.mutable_task()->set_generation(m.assign().generation());
            message.mutable_task()->set_state(v1::TASK_STATE_RUNNING);
            if (core.HandleWorkerMessage(id, session_ids[id], message).ok()) {
              jobs[m.assign().job_id()] = v1::JOB_STATE_RUNNING;
            }
          }
        }
      };

      add_worker();
      add_worker();
      submit();
      submit();
      submit();
      core.Tick();  // no call acknowledges a placement: a queued job's state is not asserted
      report_running();
      if (jobs.count("job-3") != 0 && core.CancelJob("job-3").ok()) {
        jobs["job-3"] = v1::JOB_STATE_CANCELLED;
      }
      add_worker();
      submit();
      core.Shutdown();
      writes = store.writes();
      EXPECT_EQ(store.failed_writes(), failing > 0 ? 1 : 0);
      EXPECT_EQ(core.StateStoreFailure().empty(), failing == 0) << core.StateStoreFailure();
    }

    auto sqlite = OpenSqliteStateStore(dir.path());
    EXPECT_TRUE(sqlite.ok()) << sqlite.status().ToString();
    if (!sqlite.ok()) return writes;
    auto core = CoordinatorCore::Create(options, sqlite->get(), scopes.get(), &clock);
    EXPECT_TRUE(core.ok()) << core.status().ToString();
    if (!core.ok()) return writes;
    std::set<std::string> restored_workers;
    for (const v1::Worker& worker : (*core)->ListWorkers(true)) {
      restored_workers.insert(worker.id());
    }
    EXPECT_EQ(restored_workers, workers);
    std::map<std::string, v1::JobState> restored_jobs;
    for (const v1::Job& job : (*core)->ListJobs(true)) restored_jobs[job.id()] = job.state();
    EXPECT_EQ(restored_jobs.size(), jobs.size());
    for (const auto& [id, state] : jobs) {
      const auto restored = restored_jobs.find(id);
      EXPECT_NE(restored, restored_jobs.end()) << id << " was acknowledged";
      if (restored == restored_jobs.end() || state == v1::JOB_STATE_QUEUED) continue;
      EXPECT_EQ(restored->second, state) << id;
    }
    return writes;
  }
};

TEST_F(StateStoreFailureSweep, EveryAcknowledgedCallSurvivesAFailureAtAnyWrite) {
  const int total = RunAndRestart(0);
  EXPECT_GE(total, 15);  // registrations, sessions, submissions, placements, states, a cancel
  for (int failing = 1; failing <= total; ++failing) {
    SCOPED_TRACE("write " + std::to_string(failing) + " of " + std::to_string(total) + " fails");
    RunAndRestart(failing);
  }
}

}  // namespace
}  // namespace geotrain::coordinator
