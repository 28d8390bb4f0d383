// The coordinator core driven directly: real SQLite state in a temp dir, the real KvStore, a
// ManualClock, and recording sessions in place of gRPC streams.
#include "coordinator/coordinator_core.h"

#include <gtest/gtest.h>

#include <map>

#include "coordinator/kv_store.h"
#include "coordinator/kv_store_scopes.h"
#include "tests/coordinator/coordinator_test_support.h"

namespace geotrain::coordinator {
namespace {

using testing::RecordingSession;
using testing::TempDir;
using testing::TinyJobYaml;

constexpr int64_t kStart = 1'700'000'000'000;

class CoordinatorCoreTest : public ::testing::Test {
 protected:
  void SetUp() override { StartCore(); }

  void StartCore() {
    auto store = OpenSqliteStateStore(dir_.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    scopes_ = KvStoreScopes(&kv_);
    CoordinatorOptions options;
    options.heartbeat_interval_ms = 1000;
    options.heartbeat_timeout_ms = 10000;
    options.stop_timeout_ms = 30000;
    options.reattach_grace_ms = reattach_grace_ms_;
    auto core = CoordinatorCore::Create(options, store_.get(), scopes_.get(), &clock_);
    ASSERT_TRUE(core.ok()) << core.status().ToString();
    core_ = std::move(*core);
  }

  // What a killed coordinator leaves: the state dir. Sessions die with it.
  void RestartCore() {
    core_.reset();
    store_.reset();
    sessions_.clear();
    session_ids_.clear();
    StartCore();
  }

  std::string Register(const std::string& region, const std::string& id = "") {
    v1::RegisterRequest request;
    request.set_worker_id(id);
    request.mutable_capabilities()->set_region(region);
    request.mutable_capabilities()->set_host("host-" + region);
    auto response = core_->Register(request);
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    EXPECT_EQ(response->heartbeat_interval_ms(), 1000u);
    EXPECT_EQ(response->heartbeat_timeout_ms(), 10000u);
    return response->worker_id();
  }

  RecordingSession& Connect(const std::string& worker_id,
                            const std::vector<v1::TaskStatus>& tasks = {}) {
    v1::SessionHello hello;
    hello.set_worker_id(worker_id);
    for (const v1::TaskStatus& task : tasks) *hello.add_tasks() = task;
    auto session = std::make_shared<RecordingSession>();
    auto id = core_->OpenSession(hello, session);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    sessions_[worker_id] = session;
    session_ids_[worker_id] = *id;
    return *session;
  }

  Status Send(const std::string& worker_id, const v1::WorkerMessage& message) {
    return core_->HandleWorkerMessage(worker_id, session_ids_[worker_id], message);
  }

  void Heartbeat(const std::string& worker_id) {
    v1::WorkerMessage message;
    message.mutable_heartbeat()->set_unix_ms(clock_.NowUnixMs());
    ASSERT_TRUE(Send(worker_id, message).ok());
  }

  static v1::TaskStatus Task(const v1::Assignment& a, v1::TaskState state) {
    v1::TaskStatus task;
    task.set_job_id(a.job_id());
    task.set_generation(a.generation());
    task.set_stage(a.stage());
    task.set_replica(a.replica());
    task.set_state(state);
    return task;
  }

  void ReportTask(const std::string& worker_id, const v1::Assignment& a, v1::TaskState state,
                  bool permanent = false, const std::string& text = "") {
    v1::WorkerMessage message;
    *message.mutable_task() = Task(a, state);
    message.mutable_task()->set_permanent(permanent);
    message.mutable_task()->set_message(text);
    if (state == v1::TASK_STATE_FAILED) message.mutable_task()->set_exit_code(permanent ? 2 : 1);
    ASSERT_TRUE(Send(worker_id, message).ok());
  }

  void ReportStep(const std::string& worker_id, const v1::Assignment& a, int64_t step,
                  bool checkpointed = false) {
    v1::WorkerMessage message;
    v1::StepReport* report = message.mutable_steps()->add_reports();
    report->set_job_id(a.job_id());
    report->set_generation(a.generation());
    report->set_stage(a.stage());
    report->set_replica(a.replica());
    report->set_step(step);
    report->set_step_seconds(0.5);
    report->set_checkpointed(checkpointed);
    if (a.stage() == num_stages_ - 1) report->set_loss(10.0 - static_cast<double>(step));
    ASSERT_TRUE(Send(worker_id, message).ok());
  }

  v1::Job Submit(int stages, int replicas, int max_restarts = 3) {
    num_stages_ = stages;
    v1::SubmitJobRequest request;
    request.set_spec_yaml(TinyJobYaml(stages, replicas, max_restarts));
    auto job = core_->SubmitJob(request);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return *job;
  }

  v1::Job GetJob(const std::string& id) {
    auto job = core_->GetJob(id);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return *job;
  }

  v1::WorkerState WorkerState(const std::string& id) {
    for (const v1::Worker& w : core_->ListWorkers(true)) {
      if (w.id() == id) return w.state();
    }
    return v1::WORKER_STATE_UNSPECIFIED;
  }

  // The messages each worker received since the last call, by kind.
  struct Inbox {
    std::vector<v1::Assignment> assignments;
    std::vector<v1::StopOrder> stops;
    std::vector<v1::ForgetTask> forgets;
  };
  Inbox Take(const std::string& worker_id) {
    Inbox inbox;
    for (const v1::CoordinatorMessage& m : sessions_[worker_id]->Take()) {
      if (m.has_assign()) inbox.assignments.push_back(m.assign());
      if (m.has_stop()) inbox.stops.push_back(m.stop());
      if (m.has_forget()) inbox.forgets.push_back(m.forget());
    }
    return inbox;
  }

  // Registers and connects `n` workers in `region`.
  std::vector<std::string> AddWorkers(int n, const std::string& region) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      ids.push_back(Register(region));
      Connect(ids.back());
    }
    return ids;
  }

  // Each worker's single assignment after a Tick, by worker id.
  std::map<std::string, v1::Assignment> TakeAssignments(const std::vector<std::string>& workers) {
    std::map<std::string, v1::Assignment> out;
    for (const std::string& id : workers) {
      Inbox inbox = Take(id);
      EXPECT_LE(inbox.assignments.size(), 1u) << id;
      if (!inbox.assignments.empty()) out[id] = inbox.assignments[0];
    }
    return out;
  }

  std::vector<std::string> EventTexts(const std::string& job_id) {
    std::vector<std::string> texts;
    auto events = store_->EventsAfter(job_id, 0, 1000);
    EXPECT_TRUE(events.ok()) << events.status().ToString();
    if (!events.ok()) return texts;
    for (const v1::JobEvent& e : *events) texts.push_back(e.text());
    return texts;
  }

  TempDir dir_;
  ManualClock clock_{kStart};
  KvStore kv_;
  std::unique_ptr<RendezvousScopes> scopes_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<CoordinatorCore> core_;
  std::map<std::string, std::shared_ptr<RecordingSession>> sessions_;
  std::map<std::string, uint64_t> session_ids_;
  int num_stages_ = 1;
  int64_t reattach_grace_ms_ = 10000;  // = the heartbeat timeout unless a test raises it
};

TEST_F(CoordinatorCoreTest, JobRunsToSuccess) {
  std::vector<std::string> us = AddWorkers(2, "us");
  std::vector<std::string> eu = AddWorkers(2, "eu");
  EXPECT_EQ(us[0], "w-1");
  EXPECT_EQ(eu[1], "w-4");
  v1::Job job = Submit(2, 2);
  EXPECT_EQ(job.id(), "job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(job.max_restarts(), 3);
  EXPECT_EQ(job.progress().total_steps(), 20);

  core_->Tick();
  std::vector<std::string> all = {"w-1", "w-2", "w-3", "w-4"};
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(all);
  ASSERT_EQ(assigned.size(), 4u);
  // Region then id: eu (w-3, w-4) holds replica 0, us (w-1, w-2) replica 1.
  EXPECT_EQ(assigned["w-3"].stage(), 0);
  EXPECT_EQ(assigned["w-3"].replica(), 0);
  EXPECT_EQ(assigned["w-4"].stage(), 1);
  EXPECT_EQ(assigned["w-4"].replica(), 0);
  EXPECT_EQ(assigned["w-1"].replica(), 1);
  EXPECT_EQ(assigned["w-2"].stage(), 1);
  for (const auto& [worker, a] : assigned) {
    EXPECT_EQ(a.job_id(), "job-1");
    EXPECT_EQ(a.generation(), 1u);
    EXPECT_FALSE(a.resume());
    EXPECT_EQ(a.rendezvous().job_id(), "job-1");
    EXPECT_EQ(a.rendezvous().generation(), 1u);
    EXPECT_NE(a.spec_yaml().find("max_restarts"), std::string::npos);  // normalised: every key
    EXPECT_EQ(WorkerState(worker), v1::WORKER_STATE_BUSY);
  }
  job = GetJob("job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_PLACING);
  EXPECT_EQ(job.generation(), 1u);
  ASSERT_EQ(job.placements_size(), 4);
  EXPECT_EQ(job.placements(0).worker_id(), "w-3");
  EXPECT_EQ(job.placements(0).region(), "eu");

  for (const auto& [worker, a] : assigned) ReportTask(worker, a, v1::TASK_STATE_STARTING);
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_PLACING);
  for (const auto& [worker, a] : assigned) ReportTask(worker, a, v1::TASK_STATE_RUNNING);
  job = GetJob("job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(job.started_unix_ms(), kStart);

  ASSERT_TRUE(kv_.Set({"job-1", 1}, "rank0", "addr").ok());
  for (int64_t step = 1; step <= 3; ++step) {
    for (const auto& [worker, a] : assigned) ReportStep(worker, a, step, step == 2);
  }
  job = GetJob("job-1");
  EXPECT_EQ(job.progress().step(), 3);
  EXPECT_EQ(job.progress().checkpoint_step(), 2);
  EXPECT_DOUBLE_EQ(job.progress().loss(), 7.0);
  EXPECT_DOUBLE_EQ(job.progress().first_loss(), 9.0);
  // 2 samples x 4 micro-batches x 16 tokens x 2 replicas per 0.5 s.
  EXPECT_DOUBLE_EQ(job.progress().tokens_per_second(), 512.0);
  v1::GetJobStepsRequest steps_request;
  steps_request.set_job_id("job-1");
  steps_request.set_after_step(1);
  auto steps = core_->GetJobSteps(steps_request);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->steps_size(), 2);
  EXPECT_EQ(steps->steps(0).step(), 2);

  clock_.AdvanceMs(5000);
  for (const auto& [worker, a] : assigned) ReportTask(worker, a, v1::TASK_STATE_SUCCEEDED);
  job = GetJob("job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job.finished_unix_ms(), kStart + 5000);
  EXPECT_EQ(job.message(), "");
  for (const std::string& worker : all) {
    Inbox inbox = Take(worker);
    ASSERT_EQ(inbox.forgets.size(), 1u) << worker;
    EXPECT_EQ(inbox.forgets[0].job_id(), "job-1");
    EXPECT_TRUE(inbox.stops.empty());
    EXPECT_EQ(WorkerState(worker), v1::WORKER_STATE_IDLE);
  }
  EXPECT_EQ(kv_.NumScopes(), 0u);  // DropJob
  const std::vector<std::string> events = EventTexts("job-1");
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].rfind("submitted", 0), 0u);
  EXPECT_EQ(events[1].rfind("placed generation 1 on w-3 (stage 0, replica 0)", 0), 0u);
  EXPECT_NE(events[3].find("finished"), std::string::npos);
  EXPECT_TRUE(core_->ListJobs(false).empty());
  EXPECT_EQ(core_->ListJobs(true).size(), 1u);
}

TEST_F(CoordinatorCoreTest, DeadWorkerIsReplacedBySpareAndTheJobResumes) {
  std::vector<std::string> workers = AddWorkers(3, "us");
  Submit(1, 2);
  core_->Tick();
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(workers);
  ASSERT_EQ(assigned.size(), 2u);
  ASSERT_EQ(assigned.count("w-3"), 0u);  // the spare
  for (const auto& [worker, a] : assigned) ReportTask(worker, a, v1::TASK_STATE_RUNNING);
  for (int64_t step = 1; step <= 5; ++step) {
    for (const auto& [worker, a] : assigned) ReportStep(worker, a, step, step == 3);
  }
  ASSERT_TRUE(kv_.Set({"job-1", 1}, "k", "v").ok());

  // w-2 goes silent; the others keep talking.
  clock_.AdvanceMs(6000);
  Heartbeat("w-1");
  Heartbeat("w-3");
  clock_.AdvanceMs(4500);
  core_->Tick();
  EXPECT_EQ(WorkerState("w-2"), v1::WORKER_STATE_DEAD);
  EXPECT_TRUE(sessions_["w-2"]->closed());
  EXPECT_EQ(WorkerState("w-1"), v1::WORKER_STATE_BUSY);
  v1::Job job = GetJob("job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_RECOVERING);
  EXPECT_EQ(job.restarts(), 1);
  EXPECT_EQ(job.steps_lost(), 2);
  EXPECT_EQ(job.progress().step(), 3);
  EXPECT_NE(job.message().find("w-2"), std::string::npos) << job.message();
  EXPECT_NE(job.message().find("declared dead"), std::string::npos) << job.message();
  Inbox w1 = Take("w-1");
  ASSERT_EQ(w1.stops.size(), 1u);
  EXPECT_EQ(w1.stops[0].generation(), 1u);
  EXPECT_EQ(kv_.NumScopes(), 1u);  // kept until the ranks stopped

  // Not placed again before w-1 confirms its stop.
  core_->Tick();
  EXPECT_TRUE(Take("w-3").assignments.empty());
  ReportTask("w-1", assigned["w-1"], v1::TASK_STATE_STOPPED);
  core_->Tick();
  EXPECT_EQ(kv_.NumScopes(), 0u);  // DropScope of generation 1
  job = GetJob("job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_PLACING);
  EXPECT_EQ(job.generation(), 2u);
  // w-1 forgets its generation-1 task before it gets generation 2.
  std::vector<v1::CoordinatorMessage> to_w1 = sessions_["w-1"]->Take();
  ASSERT_EQ(to_w1.size(), 2u);
  ASSERT_TRUE(to_w1[0].has_forget());
  EXPECT_EQ(to_w1[0].forget().generation(), 1u);
  ASSERT_TRUE(to_w1[1].has_assign());
  std::map<std::string, v1::Assignment> again = TakeAssignments({"w-3"});
  again["w-1"] = to_w1[1].assign();
  ASSERT_EQ(again.size(), 2u);
  for (const auto& [worker, a] : again) {
    EXPECT_EQ(a.generation(), 2u);
    EXPECT_TRUE(a.resume());
    EXPECT_EQ(a.rendezvous().generation(), 2u);
  }
  for (const auto& [worker, a] : again) ReportStep(worker, a, 4);
  job = GetJob("job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(job.progress().step(), 4);

  // The dead worker comes back still running its generation-1 task: it is told to stop.
  Connect("w-2", {Task(assigned["w-2"], v1::TASK_STATE_RUNNING)});
  Inbox w2 = Take("w-2");
  ASSERT_EQ(w2.stops.size(), 1u);
  EXPECT_EQ(w2.stops[0].generation(), 1u);
  EXPECT_EQ(WorkerState("w-2"), v1::WORKER_STATE_BUSY);
  ReportTask("w-2", assigned["w-2"], v1::TASK_STATE_STOPPED);
  EXPECT_EQ(Take("w-2").forgets.size(), 1u);
  EXPECT_EQ(WorkerState("w-2"), v1::WORKER_STATE_IDLE);
}

TEST_F(CoordinatorCoreTest, StopTimeoutPlacesWithoutTheSilentRanks) {
  std::vector<std::string> workers = AddWorkers(3, "us");
  Submit(1, 2);
  core_->Tick();
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(workers);
  for (const auto& [worker, a] : assigned) ReportTask(worker, a, v1::TASK_STATE_RUNNING);
  ReportTask("w-1", assigned["w-1"], v1::TASK_STATE_FAILED, false, "NCCL error");
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RECOVERING);
  EXPECT_NE(GetJob("job-1").message().find("NCCL error"), std::string::npos);
  // w-2 never confirms its stop but keeps its session alive.
  for (int i = 0; i < 4; ++i) {
    clock_.AdvanceMs(8000);
    for (const std::string& w : workers) Heartbeat(w);
    core_->Tick();
  }
  v1::Job job = GetJob("job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_PLACING);
  EXPECT_EQ(job.generation(), 2u);
  // w-2 is still busy with the old task, so the job went to w-1 and the spare w-3.
  EXPECT_EQ(WorkerState("w-2"), v1::WORKER_STATE_BUSY);
  EXPECT_EQ(job.placements(0).worker_id(), "w-1");
  EXPECT_EQ(job.placements(1).worker_id(), "w-3");
  bool saw_timeout = false;
  for (const std::string& text : EventTexts("job-1")) {
    saw_timeout = saw_timeout || text.find("stop timeout: w-2") == 0;
  }
  EXPECT_TRUE(saw_timeout);
}

TEST_F(CoordinatorCoreTest, PermanentFailureFailsTheJob) {
  std::vector<std::string> workers = AddWorkers(2, "us");
  Submit(1, 2);
  core_->Tick();
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(workers);
  ReportTask("w-1", assigned["w-1"], v1::TASK_STATE_FAILED, /*permanent=*/true,
             "model.dir: /nonexistent/gpt2-tiny does not exist");
  v1::Job job = GetJob("job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(job.message().find("model.dir: /nonexistent/gpt2-tiny does not exist"),
            std::string::npos)
      << job.message();
  EXPECT_EQ(job.restarts(), 0);
  EXPECT_EQ(Take("w-1").forgets.size(), 1u);
  EXPECT_EQ(Take("w-2").stops.size(), 1u);
  EXPECT_EQ(WorkerState("w-1"), v1::WORKER_STATE_IDLE);
  EXPECT_EQ(WorkerState("w-2"), v1::WORKER_STATE_BUSY);  // until its task reports an end
  ReportTask("w-2", assigned["w-2"], v1::TASK_STATE_STOPPED);
  EXPECT_EQ(Take("w-2").forgets.size(), 1u);
  EXPECT_EQ(WorkerState("w-2"), v1::WORKER_STATE_IDLE);
}

TEST_F(CoordinatorCoreTest, ExhaustedRestartsFailTheJob) {
  std::vector<std::string> workers = AddWorkers(1, "us");
  Submit(1, 1, /*max_restarts=*/1);
  core_->Tick();
  v1::Assignment first = TakeAssignments(workers)["w-1"];
  ReportTask("w-1", first, v1::TASK_STATE_FAILED, false, "killed");
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RECOVERING);
  core_->Tick();  // its only rank ended: the recovery finishes and the job is placed again
  v1::Assignment second = TakeAssignments(workers)["w-1"];
  EXPECT_EQ(second.generation(), 2u);
  EXPECT_TRUE(second.resume());
  ReportTask("w-1", second, v1::TASK_STATE_FAILED, false, "killed again");
  v1::Job job = GetJob("job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(job.restarts(), 2);
  EXPECT_NE(job.message().find("killed again"), std::string::npos);
  EXPECT_NE(job.message().find("max_restarts"), std::string::npos) << job.message();
}

TEST_F(CoordinatorCoreTest, CancelStopsEveryRank) {
  std::vector<std::string> workers = AddWorkers(2, "us");
  Submit(1, 2);
  Submit(1, 1);  // queued behind the first
  core_->Tick();
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(workers);
  ASSERT_EQ(assigned.size(), 2u);
  auto cancelled = core_->CancelJob("job-1");
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  for (const std::string& w : workers) {
    Inbox inbox = Take(w);
    ASSERT_EQ(inbox.stops.size(), 1u) << w;
    EXPECT_EQ(inbox.stops[0].job_id(), "job-1");
  }
  auto again = core_->CancelJob("job-1");
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(core_->CancelJob("job-9").status().code(), StatusCode::kNotFound);
  EXPECT_NE(core_->CancelJob("job-9").status().message().find("job-9"), std::string::npos);

  // The second job waits until a worker has really stopped the cancelled task.
  core_->Tick();
  EXPECT_EQ(GetJob("job-2").state(), v1::JOB_STATE_QUEUED);
  ReportTask("w-2", assigned["w-2"], v1::TASK_STATE_STOPPED);
  core_->Tick();
  EXPECT_EQ(GetJob("job-2").state(), v1::JOB_STATE_PLACING);
  EXPECT_EQ(GetJob("job-2").placements(0).worker_id(), "w-2");

  // A queued job is cancelled without any worker involved.
  Submit(1, 1);
  EXPECT_EQ(core_->CancelJob("job-3")->state(), v1::JOB_STATE_CANCELLED);
}

TEST_F(CoordinatorCoreTest, RestartReattachesRunningJobThroughHellos) {
  std::vector<std::string> workers = AddWorkers(3, "us");
  Submit(1, 2);
  core_->Tick();
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(workers);
  for (const auto& [worker, a] : assigned) ReportTask(worker, a, v1::TASK_STATE_RUNNING);
  for (const auto& [worker, a] : assigned) ReportStep(worker, a, 1);
  v1::WorkerMessage logs;
  v1::LogLine* line = logs.mutable_logs()->add_lines();
  line->set_job_id("job-1");
  line->set_text("loading the model");
  ASSERT_TRUE(Send("w-1", logs).ok());

  RestartCore();
  v1::Job job = GetJob("job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(job.progress().step(), 0);  // step 1 was not written yet (throttled), as after kill -9
  for (const std::string& w : workers) {
    EXPECT_EQ(WorkerState(w), v1::WORKER_STATE_DISCONNECTED) << w;
  }
  // Ids continue, never reused.
  EXPECT_EQ(Submit(1, 1).id(), "job-2");
  EXPECT_EQ(Register("us"), "w-4");

  Connect("w-1", {Task(assigned["w-1"], v1::TASK_STATE_RUNNING)});
  Connect("w-2", {Task(assigned["w-2"], v1::TASK_STATE_RUNNING)});
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(WorkerState("w-1"), v1::WORKER_STATE_BUSY);
  EXPECT_TRUE(Take("w-1").stops.empty());
  for (const auto& [worker, a] : assigned) ReportStep(worker, a, 2);
  EXPECT_EQ(GetJob("job-1").progress().step(), 2);
  // Log sequences continue after the restart; an overlong line is cut, still valid UTF-8.
  logs.mutable_logs()->mutable_lines(0)->set_text(std::string(16 * 1024 - 1, 'a') + "\xc3\xa9");
  ASSERT_TRUE(Send("w-2", logs).ok());
  auto lines = store_->LogLinesAfter("job-1", 0, 10);
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[1].sequence(), 2);
  EXPECT_EQ((*lines)[1].line().worker_id(), "w-2");
  EXPECT_EQ((*lines)[1].line().text(), std::string(16 * 1024 - 1, 'a') + " [truncated]");
}

TEST_F(CoordinatorCoreTest, WorkerThatNeverReturnsAfterARestartIsDeclaredDead) {
  std::vector<std::string> workers = AddWorkers(2, "us");
  Submit(1, 2);
  core_->Tick();
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(workers);
  for (const auto& [worker, a] : assigned) ReportTask(worker, a, v1::TASK_STATE_RUNNING);
  RestartCore();
  Connect("w-1", {Task(assigned["w-1"], v1::TASK_STATE_RUNNING)});
  clock_.AdvanceMs(9000);
  Heartbeat("w-1");
  core_->Tick();
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RUNNING);
  clock_.AdvanceMs(2000);
  core_->Tick();
  EXPECT_EQ(WorkerState("w-2"), v1::WORKER_STATE_DEAD);
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RECOVERING);
  EXPECT_EQ(Take("w-1").stops.size(), 1u);
}

TEST_F(CoordinatorCoreTest, RestartGivesWorkersTheReattachGraceWhenLongerThanTheTimeout) {
  std::vector<std::string> workers = AddWorkers(2, "us");
  Submit(1, 2);
  core_->Tick();
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(workers);
  for (const auto& [worker, a] : assigned) ReportTask(worker, a, v1::TASK_STATE_RUNNING);
  reattach_grace_ms_ = 15000;  // the heartbeat timeout is 10000
  RestartCore();
  clock_.AdvanceMs(14000);
  core_->Tick();
  EXPECT_EQ(WorkerState("w-1"), v1::WORKER_STATE_DISCONNECTED);
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RUNNING);
  for (const std::string& w : workers) Connect(w, {Task(assigned[w], v1::TASK_STATE_RUNNING)});
  core_->Tick();
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(GetJob("job-1").generation(), 1u);
  // Once re-attached, the heartbeat timeout applies again.
  clock_.AdvanceMs(11000);
  core_->Tick();
  EXPECT_EQ(WorkerState("w-1"), v1::WORKER_STATE_DEAD);
}

TEST_F(CoordinatorCoreTest, HelloWithoutTheTaskRecoversTheJob) {
  std::vector<std::string> workers = AddWorkers(2, "us");
  Submit(1, 2);
  core_->Tick();
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(workers);
  for (const auto& [worker, a] : assigned) ReportTask(worker, a, v1::TASK_STATE_RUNNING);
  // w-2's daemon restarted: its new session lists nothing. The new session replaces the old.
  std::shared_ptr<RecordingSession> old_session = sessions_["w-2"];
  const uint64_t old_id = session_ids_["w-2"];
  Connect("w-2");
  EXPECT_TRUE(old_session->closed());
  v1::WorkerMessage heartbeat;
  heartbeat.mutable_heartbeat();
  EXPECT_EQ(core_->HandleWorkerMessage("w-2", old_id, heartbeat).code(),
            StatusCode::kFailedPrecondition);
  v1::Job job = GetJob("job-1");
  EXPECT_EQ(job.state(), v1::JOB_STATE_RECOVERING);
  EXPECT_NE(job.message().find("reconnected without its task"), std::string::npos);
  EXPECT_EQ(Take("w-1").stops.size(), 1u);
  EXPECT_EQ(WorkerState("w-2"), v1::WORKER_STATE_IDLE);
}

TEST_F(CoordinatorCoreTest, HelloReconcilesStaleTasks) {
  Register("us");
  Submit(1, 1);
  ASSERT_TRUE(core_->CancelJob("job-1").ok());
  v1::Assignment cancelled;
  cancelled.set_job_id("job-1");
  cancelled.set_generation(1);
  v1::Assignment unknown_done;
  unknown_done.set_job_id("job-77");
  unknown_done.set_generation(3);
  Connect("w-1", {Task(cancelled, v1::TASK_STATE_RUNNING),
                  Task(unknown_done, v1::TASK_STATE_SUCCEEDED)});
  Inbox inbox = Take("w-1");
  ASSERT_EQ(inbox.stops.size(), 1u);
  EXPECT_EQ(inbox.stops[0].job_id(), "job-1");
  EXPECT_NE(inbox.stops[0].reason().find("cancelled"), std::string::npos);
  ASSERT_EQ(inbox.forgets.size(), 1u);
  EXPECT_EQ(inbox.forgets[0].job_id(), "job-77");
  EXPECT_EQ(inbox.forgets[0].generation(), 3u);
  // Busy with the task being stopped: nothing new lands on it meanwhile.
  EXPECT_EQ(WorkerState("w-1"), v1::WORKER_STATE_BUSY);
  Submit(1, 1);
  core_->Tick();
  EXPECT_TRUE(Take("w-1").assignments.empty());
  ReportTask("w-1", cancelled, v1::TASK_STATE_STOPPED);
  EXPECT_EQ(Take("w-1").forgets.size(), 1u);
  core_->Tick();
  EXPECT_EQ(Take("w-1").assignments.size(), 1u);
}

TEST_F(CoordinatorCoreTest, ProgressIsWrittenThroughWithinAFewHundredMilliseconds) {
  std::vector<std::string> workers = AddWorkers(1, "us");
  Submit(1, 1);
  core_->Tick();
  v1::Assignment a = TakeAssignments(workers)["w-1"];
  ReportStep("w-1", a, 1);
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RUNNING);  // a step counts as started
  ReportStep("w-1", a, 2);
  clock_.AdvanceMs(300);
  core_->Tick();
  RestartCore();  // as after kill -9: nothing flushed on the way out
  EXPECT_EQ(GetJob("job-1").progress().step(), 2);
  auto steps = store_->StepsAfter("job-1", 0);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(steps->size(), 2u);
}

TEST_F(CoordinatorCoreTest, SubmitRefusesBadSpecsNamingTheField) {
  v1::SubmitJobRequest request;
  auto empty = core_->SubmitJob(request);
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("spec_yaml"), std::string::npos);

  request.set_spec_yaml("name: bad\nmodel: {dir: /m}\ndata: {train: [a.txt]}\n"
                        "pipeline: {stages: two}\n");
  request.set_source("bad.yaml");
  auto bad = core_->SubmitJob(request);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().rfind("bad.yaml: ", 0), 0u) << bad.status().message();
  EXPECT_NE(bad.status().message().find("pipeline.stages"), std::string::npos);
  EXPECT_TRUE(core_->ListJobs(true).empty());
  // A refused job takes no id.
  EXPECT_EQ(Submit(1, 1).id(), "job-1");
}

TEST_F(CoordinatorCoreTest, SessionsNeedARegisteredWorkerAndOneHello) {
  v1::SessionHello hello;
  hello.set_worker_id("w-5");
  auto unknown = core_->OpenSession(hello, std::make_shared<RecordingSession>());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("w-5"), std::string::npos);
  hello.clear_worker_id();
  EXPECT_EQ(core_->OpenSession(hello, std::make_shared<RecordingSession>()).status().code(),
            StatusCode::kInvalidArgument);

  const std::string id = Register("us");
  Connect(id);
  v1::WorkerMessage second;
  second.mutable_hello()->set_worker_id(id);
  EXPECT_EQ(Send(id, second).code(), StatusCode::kFailedPrecondition);

  // Re-registering with the id keeps it and updates the record.
  EXPECT_EQ(Register("eu", id), id);
  EXPECT_EQ(core_->ListWorkers(false)[0].capabilities().region(), "eu");
  // An id this coordinator never gave out gets a new one.
  EXPECT_EQ(Register("eu", "w-99"), "w-2");

  v1::RegisterRequest bad;
  bad.mutable_capabilities()->set_data_port_min(9000);
  bad.mutable_capabilities()->set_data_port_max(8000);
  auto refused = core_->Register(bad);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("data_port_min"), std::string::npos);
}

TEST_F(CoordinatorCoreTest, DisconnectedWorkerKeepsItsJobUntilItsDeadline) {
  std::vector<std::string> workers = AddWorkers(2, "us");
  Submit(1, 2);
  core_->Tick();
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(workers);
  for (const auto& [worker, a] : assigned) ReportTask(worker, a, v1::TASK_STATE_RUNNING);
  core_->CloseSession("w-2", session_ids_["w-2"]);
  EXPECT_EQ(WorkerState("w-2"), v1::WORKER_STATE_DISCONNECTED);
  clock_.AdvanceMs(5000);
  Heartbeat("w-1");
  core_->Tick();
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RUNNING);
  Connect("w-2", {Task(assigned["w-2"], v1::TASK_STATE_RUNNING)});
  EXPECT_EQ(WorkerState("w-2"), v1::WORKER_STATE_BUSY);
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RUNNING);

  // Links: every directed pair of live workers, unmeasured.
  Register("eu");
  v1::LinkMatrix links = core_->GetLinks();
  ASSERT_EQ(links.links_size(), 6);
  EXPECT_EQ(links.links(0).src_worker_id(), "w-1");
  EXPECT_EQ(links.links(0).dst_worker_id(), "w-2");
  EXPECT_EQ(links.links(0).samples(), 0u);
  EXPECT_EQ(links.links(0).throughput_bytes_per_second(), 0.0);
  clock_.AdvanceMs(11000);
  core_->Tick();
  EXPECT_EQ(core_->GetLinks().links_size(), 0);  // all silent: all dead
  EXPECT_EQ(core_->ListWorkers(false).size(), 0u);
  EXPECT_EQ(core_->ListWorkers(true).size(), 3u);
}

TEST_F(CoordinatorCoreTest, OlderJobsArePlacedFirst) {
  std::vector<std::string> workers = AddWorkers(1, "us");
  Submit(1, 2);  // needs two workers
  Submit(1, 1);
  core_->Tick();
  // FIFO: the small job does not overtake the large one.
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(GetJob("job-2").state(), v1::JOB_STATE_QUEUED);
  workers = AddWorkers(2, "us");
  core_->Tick();
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_PLACING);
  EXPECT_EQ(GetJob("job-2").state(), v1::JOB_STATE_PLACING);
}

}  // namespace
}  // namespace geotrain::coordinator
