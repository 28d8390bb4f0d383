// The coordinator core driven directly (tests/coordinator/core_test_fixture.h): real SQLite state
// in a temp dir, the real KvStore, a ManualClock, and recording sessions in place of gRPC streams.
#include "coordinator/coordinator_core.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "coordinator/kv_store.h"
#include "coordinator/kv_store_scopes.h"
#include "tests/coordinator/core_test_fixture.h"

namespace geotrain::coordinator {
namespace {

using testing::CoreTest;
using testing::kStart;
using testing::RecordingSession;
using testing::TinyJobYaml;

class CoordinatorCoreTest : public CoreTest {
 protected:
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
    auto id = OpenSession(worker_id, tasks);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    if (!id.ok()) sessions_[worker_id] = std::make_shared<RecordingSession>();
    return *sessions_[worker_id];
  }

  void Heartbeat(const std::string& worker_id) {
    v1::WorkerMessage message;
    message.mutable_heartbeat()->set_unix_ms(clock_.NowUnixMs());
    ASSERT_TRUE(Send(worker_id, message).ok());
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

  // The step report of assignment `a`'s rank (the last stage's carries a loss).
  v1::WorkerMessage StepMessage(const v1::Assignment& a, int64_t step, bool checkpointed = false) {
    v1::WorkerMessage message = StepReportMessage(a, step);
    v1::StepReport* report = message.mutable_steps()->mutable_reports(0);
    report->set_checkpointed(checkpointed);
    if (a.stage() == num_stages_ - 1) report->set_loss(10.0 - static_cast<double>(step));
    return message;
  }
  void ReportStep(const std::string& worker_id, const v1::Assignment& a, int64_t step,
                  bool checkpointed = false) {
    ASSERT_TRUE(Send(worker_id, StepMessage(a, step, checkpointed)).ok());
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

  int num_stages_ = 1;
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
  // The planner (nothing measured: links between regions cost its default, inside one a
  // datacenter's) keeps each stage's data-parallel group, the heavier traffic of this job's
  // nominal shape, inside one region: eu (w-3, w-4) holds one stage, us (w-1, w-2) the other.
  EXPECT_EQ(assigned["w-3"].stage(), assigned["w-4"].stage());
  EXPECT_EQ(assigned["w-1"].stage(), assigned["w-2"].stage());
  EXPECT_NE(assigned["w-1"].stage(), assigned["w-3"].stage());
  EXPECT_NE(assigned["w-3"].replica(), assigned["w-4"].replica());
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

// An NTP step of the wall clock, hours forwards or back, is no silence: the heartbeat and stop
// deadlines run on monotonic time. The records still show the wall clock, and a real silence
// still gets a worker declared dead.
TEST_F(CoordinatorCoreTest, AWallClockStepDeclaresNoWorkerDead) {
  constexpr int64_t kHourMs = 3'600'000;
  std::vector<std::string> workers = AddWorkers(2, "us");
  Submit(1, 2);
  core_->Tick();
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(workers);
  ASSERT_EQ(assigned.size(), 2u);
  for (const auto& [worker, a] : assigned) ReportTask(worker, a, v1::TASK_STATE_RUNNING);

  clock_.StepWallMs(5 * kHourMs);
  core_->Tick();
  clock_.AdvanceMs(1000);
  for (const std::string& w : workers) Heartbeat(w);
  clock_.StepWallMs(-8 * kHourMs);  // back to before the workers registered
  core_->Tick();
  for (const std::string& w : workers) EXPECT_EQ(WorkerState(w), v1::WORKER_STATE_BUSY) << w;
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(GetJob("job-1").restarts(), 0);
  for (const v1::Worker& w : core_->ListWorkers(true)) {
    EXPECT_EQ(w.last_heartbeat_unix_ms(), kStart + 5 * kHourMs + 1000) << w.id();
  }

  // w-2 falls silent for longer than the heartbeat timeout (10 s), wall steps or not.
  clock_.AdvanceMs(6000);
  Heartbeat("w-1");
  clock_.StepWallMs(2 * kHourMs);
  clock_.AdvanceMs(4500);
  core_->Tick();
  EXPECT_EQ(WorkerState("w-1"), v1::WORKER_STATE_BUSY);
  EXPECT_EQ(WorkerState("w-2"), v1::WORKER_STATE_DEAD);
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RECOVERING);
  EXPECT_EQ(Take("w-1").stops.size(), 1u);

  // The recovery's stop timeout (30 s) is not crossed by a day's step either.
  clock_.StepWallMs(24 * kHourMs);
  Heartbeat("w-1");
  core_->Tick();
  for (const std::string& text : EventTexts("job-1")) EXPECT_NE(text.rfind("stop timeout", 0), 0u);
  EXPECT_EQ(GetJob("job-1").state(), v1::JOB_STATE_RECOVERING);
  EXPECT_EQ(WorkerState("w-1"), v1::WORKER_STATE_BUSY);
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
  Connect("w-1",
          {Task(cancelled, v1::TASK_STATE_RUNNING), Task(unknown_done, v1::TASK_STATE_SUCCEEDED)});
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

  request.set_spec_yaml(
      "name: bad\nmodel: {dir: /m}\ndata: {train: [a.txt]}\n"
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

// --- Devices -------------------------------------------------------------------------------------

// A connected worker in region "us" whose LibTorch sees `gpus` CUDA devices.
std::string AddGpuWorker(CoordinatorCore& core, int gpus,
                         std::map<std::string, std::shared_ptr<RecordingSession>>& sessions) {
  v1::RegisterRequest request;
  request.mutable_capabilities()->set_region("us");
  request.mutable_capabilities()->set_device_kind("cuda:NVIDIA H100 80GB HBM3");
  request.mutable_capabilities()->set_cuda_device_count(gpus);
  auto response = core.Register(request);
  EXPECT_TRUE(response.ok()) << response.status().ToString();
  v1::SessionHello hello;
  hello.set_worker_id(response->worker_id());
  sessions[response->worker_id()] = std::make_shared<RecordingSession>();
  EXPECT_TRUE(core.OpenSession(hello, sessions[response->worker_id()]).ok());
  return response->worker_id();
}

// Submits a 1-stage job of `replicas` with model.device `device`.
void SubmitOn(CoordinatorCore& core, const std::string& device, int replicas) {
  std::string yaml = TinyJobYaml(1, replicas);
  const std::string dir = "  dir: /nonexistent/gpt2-tiny\n";
  yaml.replace(yaml.find(dir), dir.size(), dir + "  device: " + device + "\n");
  v1::SubmitJobRequest request;
  request.set_spec_yaml(yaml);
  const StatusOr<v1::Job> job = core.SubmitJob(request);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
}

TEST_F(CoordinatorCoreTest, CudaJobsWaitForGpuWorkersAndSayWhy) {
  AddWorkers(2, "us");
  SubmitOn(*core_, "cuda", 2);
  SubmitOn(*core_, "cpu", 1);
  core_->Tick();
  v1::Job gpu_job = GetJob("job-1");
  EXPECT_EQ(gpu_job.state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(gpu_job.waiting_for(),
            "2 idle workers with a CUDA device; 0 of the 2 idle now qualify");
  // First in, first placed: the CPU job waits although a worker for it is idle.
  EXPECT_EQ(GetJob("job-2").state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(GetJob("job-2").waiting_for(), "job-1, submitted earlier (jobs are placed in order)");

  const std::string gpu_a = AddGpuWorker(*core_, 1, sessions_);
  core_->Tick();
  EXPECT_EQ(GetJob("job-1").waiting_for(),
            "2 idle workers with a CUDA device; 1 of the 3 idle now qualifies");
  const std::string gpu_b = AddGpuWorker(*core_, 1, sessions_);
  core_->Tick();
  gpu_job = GetJob("job-1");
  EXPECT_EQ(gpu_job.state(), v1::JOB_STATE_PLACING);
  EXPECT_EQ(gpu_job.waiting_for(), "");
  std::set<std::string> placed;
  for (const v1::Placement& p : gpu_job.placements()) placed.insert(p.worker_id());
  EXPECT_EQ(placed, (std::set<std::string>{gpu_a, gpu_b}));
  const v1::Job cpu_job = GetJob("job-2");
  EXPECT_EQ(cpu_job.state(), v1::JOB_STATE_PLACING);
  ASSERT_EQ(cpu_job.placements_size(), 1);
  EXPECT_EQ(cpu_job.placements(0).worker_id(), "w-1");
}

TEST_F(CoordinatorCoreTest, CudaIndexNeedsThatManyGpusAndCpuJobsLeaveGpusFree) {
  const std::string one_gpu = AddGpuWorker(*core_, 1, sessions_);
  const std::string two_gpus = AddGpuWorker(*core_, 2, sessions_);
  const std::string cpu = AddWorkers(1, "us")[0];
  SubmitOn(*core_, "cuda:1", 1);
  SubmitOn(*core_, "cpu", 1);
  core_->Tick();
  ASSERT_EQ(GetJob("job-1").placements_size(), 1);
  EXPECT_EQ(GetJob("job-1").placements(0).worker_id(), two_gpus);
  // The GPU worker sorts first, but a CPU worker is idle.
  ASSERT_EQ(GetJob("job-2").placements_size(), 1);
  EXPECT_EQ(GetJob("job-2").placements(0).worker_id(), cpu);
  EXPECT_EQ(WorkerState(one_gpu), v1::WORKER_STATE_IDLE);
}

// --- Links ---------------------------------------------------------------------------------------

// A worker with a probe server on 10.0.0.N:7001 (N from its registration order).
std::string RegisterProber(CoordinatorCore& core, const std::string& region, int n) {
  v1::RegisterRequest request;
  request.mutable_capabilities()->set_region(region);
  request.mutable_capabilities()->set_advertise_address("10.0.0." + std::to_string(n));
  request.mutable_capabilities()->set_probe_port(7001);
  auto response = core.Register(request);
  EXPECT_TRUE(response.ok()) << response.status().ToString();
  return response.ok() ? response->worker_id() : "";
}

std::vector<v1::ProbeOrder> ProbeOrders(RecordingSession& session) {
  std::vector<v1::ProbeOrder> orders;
  for (const v1::CoordinatorMessage& m : session.Take()) {
    if (m.has_probe()) orders.push_back(m.probe());
  }
  return orders;
}

const v1::Link* FindLink(const v1::LinkMatrix& matrix, const std::string& src,
                         const std::string& dst) {
  for (const v1::Link& link : matrix.links()) {
    if (link.src_worker_id() == src && link.dst_worker_id() == dst) return &link;
  }
  return nullptr;
}

TEST_F(CoordinatorCoreTest, ASecondProberGetsItsLinksProbedBothWays) {
  const std::string first = RegisterProber(*core_, "us", 1);
  RecordingSession& first_session = Connect(first);
  EXPECT_TRUE(ProbeOrders(first_session).empty());  // nobody to probe yet
  const std::string passive = Register("eu");       // no probe server
  Connect(passive);
  EXPECT_TRUE(ProbeOrders(first_session).empty());

  const std::string second = RegisterProber(*core_, "eu", 2);
  RecordingSession& second_session = Connect(second);
  std::vector<v1::ProbeOrder> orders = ProbeOrders(second_session);
  ASSERT_EQ(orders.size(), 1u);
  ASSERT_EQ(orders[0].targets_size(), 1);
  EXPECT_EQ(orders[0].targets(0).worker_id(), first);
  EXPECT_EQ(orders[0].targets(0).address(), "10.0.0.1");
  EXPECT_EQ(orders[0].targets(0).port(), 7001u);
  EXPECT_EQ(orders[0].max_bytes(), 8u << 20);
  EXPECT_EQ(orders[0].max_milliseconds(), 3000u);
  EXPECT_EQ(orders[0].streams(), 4u);
  orders = ProbeOrders(first_session);
  ASSERT_EQ(orders.size(), 1u);
  ASSERT_EQ(orders[0].targets_size(), 1);
  EXPECT_EQ(orders[0].targets(0).worker_id(), second);
  EXPECT_EQ(orders[0].targets(0).address(), "10.0.0.2");
  EXPECT_TRUE(ProbeOrders(*sessions_[passive]).empty());

  // The answers land in GetLinks; a failure only counts.
  v1::WorkerMessage message;
  v1::ProbeResult* result = message.mutable_probes()->add_results();
  result->set_dst_worker_id(first);
  result->set_throughput_bytes_per_second(12.5e6);
  result->set_latency_seconds(0.045);
  result->set_bytes(8 << 20);
  result->set_seconds(0.67);
  clock_.AdvanceMs(3000);
  ASSERT_TRUE(Send(second, message).ok());
  v1::WorkerMessage failed;
  v1::ProbeResult* failure = failed.mutable_probes()->add_results();
  failure->set_dst_worker_id(second);
  failure->set_error("connect 10.0.0.2:7001: connection refused");
  ASSERT_TRUE(Send(first, failed).ok());

  const v1::LinkMatrix links = core_->GetLinks();
  ASSERT_EQ(links.links_size(), 6);
  const v1::Link* measured = FindLink(links, second, first);
  ASSERT_NE(measured, nullptr);
  EXPECT_EQ(measured->src_region(), "eu");
  EXPECT_EQ(measured->dst_region(), "us");
  EXPECT_DOUBLE_EQ(measured->throughput_bytes_per_second(), 12.5e6);
  EXPECT_DOUBLE_EQ(measured->latency_seconds(), 0.045);
  EXPECT_EQ(measured->samples(), 1u);
  EXPECT_EQ(measured->probe_samples(), 1u);
  EXPECT_DOUBLE_EQ(measured->probe_throughput_bytes_per_second(), 12.5e6);
  EXPECT_EQ(measured->probed_unix_ms(), kStart + 3000);
  const v1::Link* refused = FindLink(links, first, second);
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->samples(), 0u);
  EXPECT_EQ(refused->throughput_bytes_per_second(), 0.0);
  bool counted = false;
  for (const LinkFigures& figures : core_->ListLinkFigures()) {
    if (figures.src_worker_id == first && figures.dst_worker_id == second) {
      EXPECT_EQ(figures.probe_failures, 1u);
      counted = true;
    }
  }
  EXPECT_TRUE(counted);

  // Both answered: after --probe-interval (300 s) the links are probed again.
  Heartbeat(passive);
  core_->Tick();
  EXPECT_TRUE(ProbeOrders(first_session).empty());
  for (int i = 0; i < 31; ++i) {
    clock_.AdvanceMs(9'900);
    Heartbeat(first);
    Heartbeat(second);
    Heartbeat(passive);
    core_->Tick();
  }
  EXPECT_EQ(ProbeOrders(first_session).size(), 1u);
  EXPECT_EQ(ProbeOrders(second_session).size(), 1u);
}

TEST_F(CoordinatorCoreTest, StepTrafficFeedsPassiveLinkSamples) {
  std::vector<std::string> workers = AddWorkers(2, "us");
  Submit(2, 1);
  core_->Tick();
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(workers);
  ASSERT_EQ(assigned.size(), 2u);
  for (const auto& [worker, a] : assigned) ReportTask(worker, a, v1::TASK_STATE_RUNNING);
  std::string stage0, stage1;
  for (const auto& [worker, a] : assigned) (a.stage() == 0 ? stage0 : stage1) = worker;

  const auto report = [&](const std::string& worker, int64_t step, bool sent, uint64_t bytes,
                          double seconds, uint32_t generation) {
    const v1::Assignment& a = assigned[worker];
    v1::WorkerMessage message;
    v1::StepReport* r = message.mutable_steps()->add_reports();
    r->set_job_id(a.job_id());
    r->set_generation(generation);
    r->set_stage(a.stage());
    r->set_replica(a.replica());
    r->set_step(step);
    r->set_step_seconds(0.5);
    if (a.stage() == 1) r->set_loss(5.0);
    v1::LinkTraffic* t = r->add_traffic();
    t->set_peer_stage(1 - a.stage());
    t->set_peer_replica(0);
    t->set_kind(a.stage() == 0 ? v1::TRAFFIC_KIND_ACTIVATION : v1::TRAFFIC_KIND_GRADIENT);
    t->set_sent(sent);
    t->set_wire_bytes(bytes);
    t->set_seconds(seconds);
    t->set_latency_seconds(0.004);
    ASSERT_TRUE(Send(worker, message).ok());
  };
  // Stage 0 sent 4 MiB of activations in 0.5 s; stage 1 reports receiving them (peer -> self,
  // the same link) as 4 MiB in 1 s.
  report(stage0, 1, /*sent=*/true, 4 << 20, 0.5, 1);
  report(stage1, 1, /*sent=*/false, 4 << 20, 1.0, 1);
  // A tiny transfer: latency only. An older generation's report: ignored.
  report(stage1, 2, /*sent=*/true, 1000, 0.001, 1);
  report(stage0, 2, /*sent=*/true, 64 << 20, 0.001, 0);

  const v1::LinkMatrix links = core_->GetLinks();
  const v1::Link* forward = FindLink(links, stage0, stage1);
  ASSERT_NE(forward, nullptr);
  EXPECT_EQ(forward->samples(), 2u);
  EXPECT_EQ(forward->probe_samples(), 0u);
  // (b x 8 MiB/s + 4 MiB/s) / (1 + b), b = LinkTable::kDecay
  EXPECT_NEAR(forward->throughput_bytes_per_second(),
              (LinkTable::kDecay * 8 + 4) / (1 + LinkTable::kDecay) * (1 << 20), 1e-3);
  EXPECT_DOUBLE_EQ(forward->latency_seconds(), 0.004);
  EXPECT_EQ(forward->updated_unix_ms(), kStart);
  const v1::Link* backward = FindLink(links, stage1, stage0);
  ASSERT_NE(backward, nullptr);
  EXPECT_EQ(backward->samples(), 0u);
  EXPECT_EQ(backward->throughput_bytes_per_second(), 0.0);
  EXPECT_DOUBLE_EQ(backward->latency_seconds(), 0.004);

  // Written at most every 5 s: a crash before that loses them, a later tick writes them.
  core_->Tick();
  clock_.AdvanceMs(5000);
  for (const std::string& w : workers) Heartbeat(w);
  core_->Tick();
  RestartCore();
  const v1::Link* restored = FindLink(core_->GetLinks(), stage0, stage1);
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->samples(), 2u);
  EXPECT_DOUBLE_EQ(restored->throughput_bytes_per_second(), forward->throughput_bytes_per_second());
  EXPECT_DOUBLE_EQ(restored->latency_seconds(), 0.004);
}

TEST_F(CoordinatorCoreTest, ShutdownWritesTheLinksAndARestartShowsTheSameMatrix) {
  const std::string a = RegisterProber(*core_, "us", 1);
  const std::string b = RegisterProber(*core_, "eu", 2);
  Connect(a);
  Connect(b);
  v1::WorkerMessage message;
  v1::ProbeResult* result = message.mutable_probes()->add_results();
  result->set_dst_worker_id(b);
  result->set_throughput_bytes_per_second(3.3e6);
  result->set_latency_seconds(0.07);
  ASSERT_TRUE(Send(a, message).ok());
  const v1::LinkMatrix before = core_->GetLinks();
  core_->Shutdown();
  RestartCore();
  const v1::LinkMatrix after = core_->GetLinks();
  EXPECT_EQ(after.SerializeAsString(), before.SerializeAsString())
      << before.DebugString() << "\nvs\n"
      << after.DebugString();
}

// --- Link-aware placement and adaptive compression (job_tuning.cc) ---

v1::WorkerMessage ProbeResultsFrom(const std::vector<std::pair<std::string, double>>& to) {
  v1::WorkerMessage message;
  for (const auto& [dst, bytes_per_second] : to) {
    v1::ProbeResult* result = message.mutable_probes()->add_results();
    result->set_dst_worker_id(dst);
    result->set_throughput_bytes_per_second(bytes_per_second);
    result->set_latency_seconds(0.01);
    result->set_bytes(8 << 20);
    result->set_seconds(8.0 * (1 << 20) / bytes_per_second);
  }
  return message;
}

TEST_F(CoordinatorCoreTest, PlacementKeepsTheHeavyTrafficOffTheSlowLink) {
  // Two regions joined by a slow measured link. The job's data-parallel all-reduce (float32
  // gradients of a whole stage) outweighs its activations, so each stage group belongs inside a
  // region; in-order would put each replica's pipeline in a region and the groups across.
  const std::vector<std::string> us = AddWorkers(2, "us");
  const std::vector<std::string> eu = AddWorkers(2, "eu");
  const auto measure = [&](const std::string& from, const std::vector<std::string>& peers) {
    std::vector<std::pair<std::string, double>> results;
    for (const std::string& peer : peers) {
      if (peer == from) continue;
      const bool same = (std::find(us.begin(), us.end(), from) != us.end()) ==
                        (std::find(us.begin(), us.end(), peer) != us.end());
      results.push_back({peer, same ? 1e9 : 2e6});
    }
    ASSERT_TRUE(Send(from, ProbeResultsFrom(results)).ok());
  };
  const std::vector<std::string> all = {us[0], us[1], eu[0], eu[1]};
  for (const std::string& worker : all) measure(worker, all);

  const v1::Job job = Submit(2, 2);
  core_->Tick();
  const v1::Job placed = GetJob(job.id());
  ASSERT_EQ(placed.placements_size(), 4);
  std::map<int, std::set<std::string>> regions_of_stage;
  for (const v1::Placement& p : placed.placements()) regions_of_stage[p.stage()].insert(p.region());
  EXPECT_EQ(regions_of_stage[0].size(), 1u);
  EXPECT_EQ(regions_of_stage[1].size(), 1u);
  const std::vector<std::string> events = EventTexts(job.id());
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [](const std::string& text) {
    return text.find("planned from") != std::string::npos;
  }));
}

TEST_F(CoordinatorCoreTest, AdaptiveCompressionLowersTheBitsOfASlowLink) {
  const std::vector<std::string> workers = AddWorkers(2, "us");
  num_stages_ = 2;
  v1::SubmitJobRequest request;
  request.set_spec_yaml(TinyJobYaml(2, 1) +
                        "compression:\n"
                        "  forward: {codec: fixpoint, bits: 8}\n"
                        "  backward: {codec: fixpoint, bits: 8}\n"
                        "  adaptive: true\n");
  auto submitted = core_->SubmitJob(request);
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  // The starting settings are visible before anything ran.
  ASSERT_EQ(submitted->compression_size(), 2);
  EXPECT_EQ(submitted->compression(0).bits(), 8u);

  core_->Tick();
  std::map<std::string, v1::Assignment> assigned = TakeAssignments(workers);
  ASSERT_EQ(assigned.size(), 2u);
  std::string first_stage_worker, last_stage_worker;
  for (const auto& [id, a] : assigned)
    (a.stage() == 0 ? first_stage_worker : last_stage_worker) = id;
  // The forward link is measured at 1 MB/s: 1 MB of 8-bit activations take a second, five times
  // the 0.2 s of compute they must hide behind.
  ASSERT_TRUE(Send(first_stage_worker, ProbeResultsFrom({{last_stage_worker, 1e6}})).ok());
  ASSERT_TRUE(Send(last_stage_worker, ProbeResultsFrom({{first_stage_worker, 1e9}})).ok());

  std::vector<v1::ConfigChange> changes;
  for (int64_t step = 1; step <= 8 && changes.empty(); ++step) {
    for (const auto& [id, a] : assigned) {
      v1::WorkerMessage message = StepMessage(a, step);
      v1::StepReport* report = message.mutable_steps()->mutable_reports(0);
      report->set_compressed(true);
      report->mutable_phases()->set_forward(0.1);
      report->mutable_phases()->set_backward(0.1);
      v1::LinkTraffic* traffic = report->add_traffic();
      traffic->set_peer_stage(1 - a.stage());
      traffic->set_kind(a.stage() == 0 ? v1::TRAFFIC_KIND_ACTIVATION : v1::TRAFFIC_KIND_GRADIENT);
      traffic->set_sent(true);
      traffic->set_wire_bytes(a.stage() == 0 ? 1'000'000 : 1000);
      traffic->set_raw_bytes(a.stage() == 0 ? 4'000'000 : 4000);
      traffic->set_seconds(a.stage() == 0 ? 1.0 : 0.001);
      traffic->set_bits(8);
      traffic->set_relative_error(0.01);
      ASSERT_TRUE(Send(id, message).ok());
    }
    for (const v1::CoordinatorMessage& m : sessions_[first_stage_worker]->Take()) {
      if (m.has_config()) changes.push_back(m.config());
    }
  }
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].job_id(), submitted->id());
  EXPECT_LT(changes[0].forward().bits(), 8u);
  EXPECT_GT(changes[0].forward().bits(), 0u);
  EXPECT_EQ(changes[0].backward().bits(), 0u);  // the fast direction keeps its bits
  const v1::Job job = GetJob(submitted->id());
  bool lowered = false;
  for (const v1::LinkCompression& link : job.compression()) {
    if (link.stage() == 0 && link.kind() == v1::TRAFFIC_KIND_ACTIVATION) {
      lowered = link.bits() == changes[0].forward().bits() &&
                link.effective_step() == changes[0].effective_step();
    }
  }
  EXPECT_TRUE(lowered);
}

}  // namespace
}  // namespace geotrain::coordinator
