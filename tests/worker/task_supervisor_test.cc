// The supervisor with a shell script standing in as the task program: the script receives the
// command line a real task child gets, and behaves as each test needs (finish, fail, train
// until stopped), so the supervisor's own rules are checked in milliseconds. task_child_test.cc
// runs the real `geotrain-worker task`.
#include "worker/task_supervisor.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/testing/temp_dir.h"
#include "tests/worker/metrics_text.h"
#include "tests/worker/worker_test_util.h"
#include "worker/assignment_file.h"

namespace geotrain::worker {
namespace {

using geotrain::v1::CoordinatorMessage;
using testing::Eventually;

constexpr char kStepLine[] = R"({"step": 1, "total_steps": 2, "lr": 0.001, "loss": 4.5})";

geotrain::v1::Assignment MakeAssignment(const std::string& job, uint32_t generation, int stage) {
  geotrain::v1::Assignment assignment;
  assignment.set_job_id(job);
  assignment.set_generation(generation);
  assignment.set_stage(stage);
  assignment.set_replica(0);
  assignment.set_spec_yaml("name: test\n");
  return assignment;
}

CoordinatorMessage Assign(const geotrain::v1::Assignment& assignment) {
  CoordinatorMessage message;
  *message.mutable_assign() = assignment;
  return message;
}

CoordinatorMessage StopOrder(const std::string& job, uint32_t generation) {
  CoordinatorMessage message;
  message.mutable_stop()->set_job_id(job);
  message.mutable_stop()->set_generation(generation);
  message.mutable_stop()->set_reason("test");
  return message;
}

// The outbox's contents, as statuses, step reports and log texts, emptied on each call.
struct Delivered {
  std::vector<geotrain::v1::TaskStatus> statuses;
  std::vector<geotrain::v1::StepReport> steps;
  std::vector<std::string> logs;
  std::vector<std::string> order;  // "status:RUNNING", "step:1", "log"
};

Delivered Drain(Outbox& outbox) {
  Delivered delivered;
  for (const auto& m : outbox.Peek(1000)) {
    const auto& message = m.message;
    if (message.has_task()) {
      delivered.statuses.push_back(message.task());
      delivered.order.push_back("status:" +
                                geotrain::v1::TaskState_Name(message.task().state()).substr(11));
    }
    for (const auto& step : message.steps().reports()) {
      delivered.steps.push_back(step);
      delivered.order.push_back("step:" + std::to_string(step.step()));
    }
    for (const auto& line : message.logs().lines()) {
      delivered.logs.push_back(line.text());
      delivered.order.push_back("log");
    }
    outbox.Commit(m.through);
  }
  return delivered;
}

class TaskSupervisorTest : public ::testing::Test {
 protected:
  // `body` is the script's behaviour; it first prints its arguments, environment and directory.
  void StartSupervisor(const std::string& body, int threads = 0,
                       std::chrono::milliseconds stop_grace = std::chrono::seconds(30)) {
    script_ = dir_.Write("task.sh",
                         "#!/bin/sh\necho \"args: $*\"\necho \"omp: $OMP_NUM_THREADS\"\n"
                         "echo \"cwd: $(pwd)\"\n" +
                             body + "\n");
    ::chmod(script_.c_str(), 0755);
    std::filesystem::create_directories(dir_.File("data"));
    SupervisorOptions options;
    options.coordinator = "127.0.0.1:7070";
    options.advertise = "10.1.2.3";
    options.work_dir = dir_.File("work");
    options.data_root = dir_.File("data");
    options.threads = threads;
    options.stop_grace = stop_grace;
    options.task_binary = script_;
    options.metrics = metrics_.get();
    supervisor_ = std::make_unique<TaskSupervisor>(options, &outbox_, nullptr);
    supervisor_->SetWorkerId("worker-5");
  }

  void WaitUntilIdle() {
    ASSERT_TRUE(Eventually([&] { return !supervisor_->AnyActive(); }));
    supervisor_->ReapEnded();
  }

  geotrain::testing::TempDir dir_;
  std::string script_;
  std::unique_ptr<WorkerMetrics> metrics_;  // made before StartSupervisor to watch the metrics
  Outbox outbox_;
  std::unique_ptr<TaskSupervisor> supervisor_;
};

TEST_F(TaskSupervisorTest, RunsAnAssignmentAndReportsItsLife) {
  // The child keeps a copy of its assignment file ($5: --assignment PATH), as it found it.
  StartSupervisor(
      std::string("cp \"$5\" \"$5.seen\"\necho '") + kStepLine + "'\necho done >&2\nexit 0",
      /*threads=*/2);
  supervisor_->Handle(Assign(MakeAssignment("job-1", 3, 0)));
  WaitUntilIdle();

  const std::string task_dir = dir_.File("work/tasks/job-1-g3-s0-r0");
  auto written = ReadAssignmentFile(task_dir + "/assignment.pb.seen");
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written->SerializeAsString(), MakeAssignment("job-1", 3, 0).SerializeAsString());
  // Issue 20: the file holds the job's frame key, so it is gone once the task ended.
  EXPECT_FALSE(std::filesystem::exists(task_dir + "/assignment.pb"));

  const Delivered delivered = Drain(outbox_);
  // STARTING at once, RUNNING before the first step, the end last.
  std::vector<std::string> statuses_and_steps;
  for (const auto& item : delivered.order) {
    if (item != "log") statuses_and_steps.push_back(item);
  }
  EXPECT_EQ(statuses_and_steps, (std::vector<std::string>{"status:STARTING", "status:RUNNING",
                                                          "step:1", "status:SUCCEEDED"}));
  ASSERT_EQ(delivered.steps.size(), 1u);
  EXPECT_EQ(delivered.steps[0].job_id(), "job-1");
  EXPECT_EQ(delivered.steps[0].generation(), 3u);
  EXPECT_DOUBLE_EQ(delivered.steps[0].loss(), 4.5);
  EXPECT_EQ(delivered.statuses.back().last_step(), 1);

  // The child's command line, environment and working directory.
  ASSERT_GE(delivered.logs.size(), 4u);
  EXPECT_EQ(delivered.logs[0], "args: task --coordinator 127.0.0.1:7070 --assignment " + task_dir +
                                   "/assignment.pb --bind 10.1.2.3 --threads 2 --data-root " +
                                   dir_.File("data"));
  EXPECT_EQ(delivered.logs[1], "omp: 2");
  EXPECT_EQ(delivered.logs[2], "cwd: " + dir_.File("data"));
  EXPECT_EQ(delivered.logs[3], "done");

  const std::string log = testing::ReadFile(task_dir + "/task.log");
  EXPECT_NE(log.find(kStepLine), std::string::npos);
  EXPECT_NE(log.find("done\n"), std::string::npos);

  // The hello reports it until the coordinator says to forget it; the directory stays.
  auto hello = supervisor_->Hello();
  EXPECT_EQ(hello.worker_id(), "worker-5");
  ASSERT_EQ(hello.tasks_size(), 1);
  EXPECT_EQ(hello.tasks(0).state(), geotrain::v1::TASK_STATE_SUCCEEDED);
  CoordinatorMessage forget;
  forget.mutable_forget()->set_job_id("job-1");
  forget.mutable_forget()->set_generation(3);
  supervisor_->Handle(forget);
  EXPECT_EQ(supervisor_->Hello().tasks_size(), 0);
  EXPECT_TRUE(std::filesystem::exists(task_dir + "/task.log"));

  // A repeated assignment of the same task is ignored, even after forgetting it.
  supervisor_->Handle(Assign(MakeAssignment("job-1", 3, 0)));
  EXPECT_TRUE(Drain(outbox_).statuses.empty());
  EXPECT_FALSE(supervisor_->AnyActive());
}

// A task that ended while the coordinator was away (its step reports still in the outbox) is
// listed as running: the coordinator would end the job on the hello and ignore the reports that
// follow. Its end goes out after the reports, also when an earlier hello already dropped it.
TEST_F(TaskSupervisorTest, HelloListsAnEndedTaskAsRunningUntilItsStepReportsAreDelivered) {
  StartSupervisor(std::string("echo '") + kStepLine + "'\nexit 0");
  supervisor_->Handle(Assign(MakeAssignment("job-1", 3, 0)));
  WaitUntilIdle();

  for (int session = 0; session < 2; ++session) {
    const auto hello = supervisor_->Hello();
    ASSERT_EQ(hello.tasks_size(), 1);
    EXPECT_EQ(hello.tasks(0).state(), geotrain::v1::TASK_STATE_RUNNING) << "session " << session;
    EXPECT_EQ(hello.tasks(0).last_step(), 1);
  }
  const Delivered delivered = Drain(outbox_);
  std::vector<std::string> after_the_step;
  bool stepped = false;
  for (const auto& item : delivered.order) {
    if (item == "step:1") stepped = true;
    if (stepped && item != "log") after_the_step.push_back(item);
  }
  EXPECT_EQ(after_the_step, (std::vector<std::string>{"step:1", "status:SUCCEEDED"}));

  // Once the reports went out, the hello tells the end itself.
  const auto hello = supervisor_->Hello();
  ASSERT_EQ(hello.tasks_size(), 1);
  EXPECT_EQ(hello.tasks(0).state(), geotrain::v1::TASK_STATE_SUCCEEDED);
}

TEST_F(TaskSupervisorTest, FailureCarriesTheExitCodeAndPermanence) {
  StartSupervisor(
      "echo '[error] model.dir: missing' >&2\n"
      "exit 2");
  supervisor_->Handle(Assign(MakeAssignment("job-2", 1, 0)));
  WaitUntilIdle();
  const Delivered delivered = Drain(outbox_);
  ASSERT_FALSE(delivered.statuses.empty());
  const auto& end = delivered.statuses.back();
  EXPECT_EQ(end.state(), geotrain::v1::TASK_STATE_FAILED);
  EXPECT_EQ(end.exit_code(), 2);
  EXPECT_TRUE(end.permanent());
  EXPECT_EQ(end.message(), "model.dir: missing");
}

TEST_F(TaskSupervisorTest, RefusesASecondTaskWhileOneRunsAndStopsOnOrder) {
  StartSupervisor(std::string("echo '") + kStepLine + "'\nexec sleep 60");
  supervisor_->Handle(Assign(MakeAssignment("job-1", 1, 0)));
  ASSERT_TRUE(Eventually([&] {
    auto hello = supervisor_->Hello();  // (drops pending statuses; the test reads the table)
    return hello.tasks_size() == 1 && hello.tasks(0).state() == geotrain::v1::TASK_STATE_RUNNING;
  }));
  Drain(outbox_);

  supervisor_->Handle(Assign(MakeAssignment("job-2", 1, 1)));
  // A refusal is not a task: a new session's hello lists only the running one, and the refusal
  // stays queued.
  EXPECT_EQ(supervisor_->Hello().tasks_size(), 1);
  Delivered refused = Drain(outbox_);
  ASSERT_EQ(refused.statuses.size(), 1u);
  EXPECT_EQ(refused.statuses[0].job_id(), "job-2");
  EXPECT_EQ(refused.statuses[0].state(), geotrain::v1::TASK_STATE_FAILED);
  EXPECT_FALSE(refused.statuses[0].permanent());
  EXPECT_NE(refused.statuses[0].message().find("busy with task job-1 generation 1"),
            std::string::npos)
      << refused.statuses[0].message();

  // Orders for other tasks change nothing.
  supervisor_->Handle(StopOrder("job-1", 2));
  CoordinatorMessage config;
  config.mutable_config()->set_job_id("job-1");
  config.mutable_config()->set_generation(1);
  config.mutable_config()->set_effective_step(10);
  supervisor_->Handle(config);
  EXPECT_TRUE(supervisor_->AnyActive());

  supervisor_->Handle(StopOrder("job-1", 1));
  WaitUntilIdle();
  const Delivered stopped = Drain(outbox_);
  ASSERT_FALSE(stopped.statuses.empty());
  EXPECT_EQ(stopped.statuses.back().state(), geotrain::v1::TASK_STATE_STOPPED);
  EXPECT_EQ(stopped.statuses.back().last_step(), 1);

  // With the worker free again, the refused task can be assigned.
  supervisor_->Handle(Assign(MakeAssignment("job-2", 1, 1)));
  EXPECT_TRUE(supervisor_->AnyActive());
  supervisor_->StopAll();
  WaitUntilIdle();
}

TEST_F(TaskSupervisorTest, InvalidAssignmentsFailPermanentlyWithoutADirectory) {
  StartSupervisor("exit 0");
  supervisor_->Handle(Assign(MakeAssignment("../escape", 1, 0)));
  const Delivered delivered = Drain(outbox_);
  ASSERT_EQ(delivered.statuses.size(), 1u);
  EXPECT_EQ(delivered.statuses[0].state(), geotrain::v1::TASK_STATE_FAILED);
  EXPECT_TRUE(delivered.statuses[0].permanent());
  EXPECT_NE(delivered.statuses[0].message().find("assignment.job_id"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_.File("work/tasks")));
  EXPECT_FALSE(std::filesystem::exists(dir_.File("escape-g1-s0-r0")));
}

TEST_F(TaskSupervisorTest, ShutdownStopsTheTaskAndRefusesNewOnes) {
  // SIGTERM is ignored, so the stop ends with SIGKILL after the grace.
  StartSupervisor("trap '' TERM\necho ready\nwhile :; do sleep 1; done", 0,
                  std::chrono::milliseconds(200));
  supervisor_->Handle(Assign(MakeAssignment("job-3", 1, 0)));
  ASSERT_TRUE(Eventually([&] {
    return testing::ReadFile(dir_.File("work/tasks/job-3-g1-s0-r0/task.log")).find("ready\n") !=
           std::string::npos;
  }));
  supervisor_->StopAll();
  WaitUntilIdle();
  supervisor_->Handle(Assign(MakeAssignment("job-4", 1, 0)));
  const Delivered delivered = Drain(outbox_);
  ASSERT_GE(delivered.statuses.size(), 2u);
  const auto& refused = delivered.statuses.back();
  EXPECT_EQ(refused.job_id(), "job-4");
  EXPECT_EQ(refused.state(), geotrain::v1::TASK_STATE_FAILED);
  EXPECT_EQ(refused.message(), "the worker is shutting down");
  const auto& stopped = delivered.statuses[delivered.statuses.size() - 2];
  EXPECT_EQ(stopped.job_id(), "job-3");
  EXPECT_EQ(stopped.state(), geotrain::v1::TASK_STATE_STOPPED);
  EXPECT_EQ(stopped.exit_code(), 128 + 9);
}

TEST_F(TaskSupervisorTest, AProgramThatCannotStartIsAFailedTask) {
  StartSupervisor("exit 0");
  ::chmod(script_.c_str(), 0644);  // no longer executable
  supervisor_->Handle(Assign(MakeAssignment("job-1", 1, 0)));
  const Delivered delivered = Drain(outbox_);
  ASSERT_EQ(delivered.statuses.size(), 2u);
  EXPECT_EQ(delivered.statuses[0].state(), geotrain::v1::TASK_STATE_STARTING);
  EXPECT_EQ(delivered.statuses[1].state(), geotrain::v1::TASK_STATE_FAILED);
  EXPECT_NE(delivered.statuses[1].message().find("cannot execute"), std::string::npos);
  EXPECT_FALSE(supervisor_->AnyActive());
}

TEST_F(TaskSupervisorTest, TellsTheMetricsAboutStartsStatesAndSteps) {
  metrics_ = std::make_unique<WorkerMetrics>();
  StartSupervisor(std::string("echo '") + kStepLine + "'\nexec sleep 60");
  geotrain::v1::Assignment assignment = MakeAssignment("job-1", 2, 0);
  assignment.set_resume(true);
  supervisor_->Handle(Assign(assignment));
  auto value = [&](const std::string& name, const testing::SeriesLabels& labels) {
    return testing::SeriesValue(testing::ScrapeText(*metrics_->registry()), name, labels);
  };
  ASSERT_TRUE(Eventually([&] {
    return value("geotrain_worker_tasks", {{"state", "running"}}) == 1 &&
           value("geotrain_steps_total", {{"stage", "0"}}) == 1;
  }));
  EXPECT_EQ(value("geotrain_worker_tasks", {{"state", "starting"}}), 0);
  EXPECT_EQ(value("geotrain_task_starts_total", {{"resumed", "true"}}), 1);
  EXPECT_EQ(value("geotrain_task_starts_total", {{"resumed", "false"}}), 0);
  EXPECT_EQ(value("geotrain_loss", {{"stage", "0"}}), 4.5);

  supervisor_->Handle(StopOrder("job-1", 2));
  WaitUntilIdle();
  EXPECT_EQ(value("geotrain_worker_tasks", {{"state", "running"}}), 0);
  EXPECT_EQ(value("geotrain_worker_tasks", {{"state", "starting"}}), 0);
  // The stage's series stay after its task ended.
  EXPECT_EQ(value("geotrain_steps_total", {{"stage", "0"}}), 1);
}

}  // namespace
}  // namespace geotrain::worker
