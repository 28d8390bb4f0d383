// The daemon's side of adaptive compression: a ConfigChange from the coordinator becomes one
// line of the running task's config-changes.jsonl, which the child finds next to its assignment
// file; changes for tasks that do not run here, and bad ones, are dropped. A shell script stands
// in for the task program (task_child_test.cc runs the real one).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "runtime/config_change.h"
#include "tests/testing/temp_dir.h"
#include "tests/worker/worker_test_util.h"
#include "worker/task_command.h"
#include "worker/task_supervisor.h"

namespace geotrain::worker {
namespace {

using geotrain::v1::CoordinatorMessage;
using testing::Eventually;

CoordinatorMessage Assign(const std::string& job, uint32_t generation, int stage) {
  CoordinatorMessage message;
  geotrain::v1::Assignment& assignment = *message.mutable_assign();
  assignment.set_job_id(job);
  assignment.set_generation(generation);
  assignment.set_stage(stage);
  assignment.set_replica(1);
  assignment.set_spec_yaml("name: test\n");
  return message;
}

CoordinatorMessage Config(const std::string& job, uint32_t generation, int64_t step,
                          uint32_t forward_bits, uint32_t dp_bits = 0, double topk_ratio = 0) {
  CoordinatorMessage message;
  geotrain::v1::ConfigChange& change = *message.mutable_config();
  change.set_job_id(job);
  change.set_generation(generation);
  change.set_effective_step(step);
  change.mutable_forward()->set_bits(forward_bits);
  change.mutable_data_parallel()->set_bits(dp_bits);
  change.mutable_data_parallel()->set_topk_ratio(topk_ratio);
  change.set_reason("link 1 -> 2 slow");
  return message;
}

CoordinatorMessage Stop(const std::string& job, uint32_t generation) {
  CoordinatorMessage message;
  message.mutable_stop()->set_job_id(job);
  message.mutable_stop()->set_generation(generation);
  return message;
}

class ConfigChangeDeliveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The child waits for the first change in the file next to its assignment (its 5th
    // argument), prints it, and runs until stopped.
    const std::string script =
        dir_.Write("task.sh",
                   "#!/bin/sh\n"
                   "f=\"$(dirname \"$5\")/config-changes.jsonl\"\n"
                   "while ! grep -q effective_step \"$f\"; do sleep 0.05; done\n"
                   "echo \"child saw: $(head -n 1 \"$f\")\"\n"
                   "exec sleep 60\n");
    ::chmod(script.c_str(), 0755);
    std::filesystem::create_directories(dir_.File("data"));
    SupervisorOptions options;
    options.coordinator = "127.0.0.1:7070";
    options.advertise = "127.0.0.1";
    options.work_dir = dir_.File("work");
    options.data_root = dir_.File("data");
    options.task_binary = script;
    supervisor_ = std::make_unique<TaskSupervisor>(options, &outbox_, nullptr);
  }
  void TearDown() override {
    supervisor_->StopAll();
    EXPECT_TRUE(Eventually([&] { return !supervisor_->AnyActive(); }));
    supervisor_->ReapEnded();
  }

  std::string ChangesFile(const std::string& task) const {
    return dir_.File("work/tasks/" + task + "/" + kConfigChangesFileName);
  }

  // The log lines delivered so far (the outbox is emptied).
  std::vector<std::string> Logs() {
    std::vector<std::string> logs;
    for (const auto& m : outbox_.Peek(1000)) {
      for (const auto& line : m.message.logs().lines()) logs.push_back(line.text());
      outbox_.Commit(m.through);
    }
    return logs;
  }

  geotrain::testing::TempDir dir_;
  Outbox outbox_;
  std::unique_ptr<TaskSupervisor> supervisor_;
};

TEST_F(ConfigChangeDeliveryTest, AppendsEachChangeToTheRunningTasksFile) {
  // A file left by an earlier run of the same task must not replay its changes.
  std::filesystem::create_directories(dir_.File("work/tasks/job-1-g2-s1-r1"));
  std::ofstream(ChangesFile("job-1-g2-s1-r1")) << "{\"effective_step\": 1, \"forward_bits\": 2}\n";

  supervisor_->Handle(Assign("job-1", 2, 1));
  const std::string path = ChangesFile("job-1-g2-s1-r1");
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(testing::ReadFile(path), "");

  supervisor_->Handle(Config("job-1", 2, 7, 4, 2, 0.1));
  supervisor_->Handle(Config("job-1", 2, 9, 3));
  runtime::CodecChangeFile file(path);
  StatusOr<std::vector<runtime::CodecChangeFileLine>> lines = file.Poll();
  ASSERT_TRUE(lines.ok()) << lines.status().ToString();
  ASSERT_EQ(lines->size(), 2u) << testing::ReadFile(path);
  for (const auto& line : *lines) ASSERT_TRUE(line.status.ok()) << line.status.ToString();
  const runtime::CodecChange& first = (*lines)[0].change;
  EXPECT_EQ(first.effective_step, 7);
  EXPECT_EQ(first.forward_bits, 4u);
  EXPECT_EQ(first.backward_bits, 0u);
  EXPECT_EQ(first.dp_bits, 2u);
  EXPECT_DOUBLE_EQ(first.dp_topk_ratio, 0.1);
  EXPECT_EQ(first.reason, "link 1 -> 2 slow");
  EXPECT_EQ((*lines)[1].change.effective_step, 9);
  EXPECT_EQ((*lines)[1].change.forward_bits, 3u);

  // The child found the file where task_command.h says it is.
  std::vector<std::string> logs;
  ASSERT_TRUE(Eventually([&] {
    for (std::string& line : Logs()) logs.push_back(std::move(line));
    for (const std::string& line : logs) {
      if (line.rfind("child saw: ", 0) == 0) return true;
    }
    return false;
  })) << ::testing::PrintToString(logs);
  bool saw_first = false;
  for (const std::string& line : logs) {
    saw_first |= line == "child saw: " + runtime::CodecChangeLine(first);
  }
  EXPECT_TRUE(saw_first) << ::testing::PrintToString(logs);
}

TEST_F(ConfigChangeDeliveryTest, DropsChangesForNoRunningTaskAndBadOnes) {
  supervisor_->Handle(Assign("job-1", 2, 0));
  const std::string path = ChangesFile("job-1-g2-s0-r1");
  ASSERT_TRUE(std::filesystem::exists(path));

  supervisor_->Handle(Config("job-9", 2, 5, 4));   // another job
  supervisor_->Handle(Config("job-1", 1, 5, 4));   // an older generation
  supervisor_->Handle(Config("job-1", 2, 5, 9));   // bits the runtime would refuse
  supervisor_->Handle(Config("job-1", 2, 5, 0));   // changes nothing
  supervisor_->Handle(Config("job-1", 2, -1, 4));  // a negative step
  EXPECT_EQ(testing::ReadFile(path), "");
  EXPECT_FALSE(std::filesystem::exists(ChangesFile("job-9-g2-s0-r1")));

  supervisor_->Handle(Config("job-1", 2, 5, 6));
  const std::string one_line = testing::ReadFile(path);
  EXPECT_EQ(std::count(one_line.begin(), one_line.end(), '\n'), 1) << one_line;

  // Once the task has ended its file is left as it was.
  supervisor_->Handle(Stop("job-1", 2));
  ASSERT_TRUE(Eventually([&] { return !supervisor_->AnyActive(); }));
  supervisor_->Handle(Config("job-1", 2, 8, 5));
  EXPECT_EQ(testing::ReadFile(path), one_line);
}

}  // namespace
}  // namespace geotrain::worker
