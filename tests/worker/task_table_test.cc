#include "worker/task_table.h"

#include <gtest/gtest.h>

namespace geotrain::worker {
namespace {

using geotrain::v1::TaskState;

geotrain::v1::TaskStatus StatusOf(const std::string& job, uint32_t generation, int stage,
                                  TaskState state) {
  return TaskKey{job, generation, stage, 0}.Status(state);
}

std::vector<std::string> HelloKeys(const TaskTable& table) {
  std::vector<std::string> keys;
  for (const auto& status : table.HelloTasks()) keys.push_back(TaskKey::Of(status).DirName());
  return keys;
}

TEST(TaskTableTest, KnowsEachTaskOnce) {
  TaskTable table;
  EXPECT_TRUE(table.Add(StatusOf("job-1", 1, 0, geotrain::v1::TASK_STATE_STARTING)));
  EXPECT_FALSE(table.Add(StatusOf("job-1", 1, 0, geotrain::v1::TASK_STATE_STARTING)));
  EXPECT_TRUE(table.Add(StatusOf("job-1", 2, 0, geotrain::v1::TASK_STATE_STARTING)));
  EXPECT_FALSE(table.Update(StatusOf("job-9", 1, 0, geotrain::v1::TASK_STATE_RUNNING)));
  ASSERT_TRUE(table.Update(StatusOf("job-1", 1, 0, geotrain::v1::TASK_STATE_RUNNING)));
  ASSERT_NE(table.Find({"job-1", 1, 0, 0}), nullptr);
  EXPECT_EQ(table.Find({"job-1", 1, 0, 0})->state(), geotrain::v1::TASK_STATE_RUNNING);
  EXPECT_EQ(table.Find({"job-1", 1, 1, 0}), nullptr);
}

TEST(TaskTableTest, HelloListsEveryTaskUntilForgottenAndForgetSparesRunningOnes) {
  TaskTable table;
  table.Add(StatusOf("job-1", 1, 0, geotrain::v1::TASK_STATE_SUCCEEDED));
  table.Add(StatusOf("job-1", 1, 1, geotrain::v1::TASK_STATE_RUNNING));
  table.Add(StatusOf("job-1", 2, 0, geotrain::v1::TASK_STATE_FAILED));
  table.Add(StatusOf("job-2", 1, 0, geotrain::v1::TASK_STATE_STOPPED));
  EXPECT_EQ(HelloKeys(table), (std::vector<std::string>{"job-1-g1-s0-r0", "job-1-g1-s1-r0",
                                                        "job-1-g2-s0-r0", "job-2-g1-s0-r0"}));

  EXPECT_EQ(table.Forget("job-1", 1), 1);  // the running task stays
  EXPECT_EQ(HelloKeys(table),
            (std::vector<std::string>{"job-1-g1-s1-r0", "job-1-g2-s0-r0", "job-2-g1-s0-r0"}));
  EXPECT_EQ(table.Forget("job-1", 1), 0);
  EXPECT_EQ(table.Forget("job-3", 1), 0);

  // Once it ended it can be forgotten too; a forgotten task is still known (never rerun).
  table.Update(StatusOf("job-1", 1, 1, geotrain::v1::TASK_STATE_SUCCEEDED));
  EXPECT_EQ(table.Forget("job-1", 1), 1);
  EXPECT_EQ(HelloKeys(table), (std::vector<std::string>{"job-1-g2-s0-r0", "job-2-g1-s0-r0"}));
  EXPECT_FALSE(table.Add(StatusOf("job-1", 1, 0, geotrain::v1::TASK_STATE_STARTING)));
}

TEST(TaskTableTest, ActiveMeansStartingOrRunning) {
  TaskTable table;
  EXPECT_FALSE(table.AnyActive().has_value());
  table.Add(StatusOf("job-1", 1, 0, geotrain::v1::TASK_STATE_FAILED));
  EXPECT_FALSE(table.AnyActive().has_value());
  table.Add(StatusOf("job-2", 1, 0, geotrain::v1::TASK_STATE_STARTING));
  ASSERT_TRUE(table.AnyActive().has_value());
  EXPECT_EQ(table.AnyActive()->job_id, "job-2");
  EXPECT_EQ(table.ActiveOf("job-2", 1).size(), 1u);
  EXPECT_TRUE(table.ActiveOf("job-2", 2).empty());
  EXPECT_TRUE(table.ActiveOf("job-1", 1).empty());
  table.Update(StatusOf("job-2", 1, 0, geotrain::v1::TASK_STATE_STOPPED));
  EXPECT_FALSE(table.AnyActive().has_value());
}

}  // namespace
}  // namespace geotrain::worker
