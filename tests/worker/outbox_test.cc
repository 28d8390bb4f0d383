#include "worker/outbox.h"

#include <gtest/gtest.h>

#include <atomic>

namespace geotrain::worker {
namespace {

using geotrain::v1::WorkerMessage;

geotrain::v1::TaskStatus Status(geotrain::v1::TaskState state) {
  geotrain::v1::TaskStatus status;
  status.set_job_id("job-1");
  status.set_state(state);
  return status;
}
geotrain::v1::StepReport Step(int64_t step) {
  geotrain::v1::StepReport report;
  report.set_step(step);
  return report;
}
geotrain::v1::LogLine Log(const std::string& text) {
  geotrain::v1::LogLine line;
  line.set_text(text);
  return line;
}

// "task:STARTING steps:1,2 logs:a" for each message, to compare whole sequences at once.
std::vector<std::string> Describe(const std::vector<Outbox::Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) {
    std::string text;
    switch (m.message.body_case()) {
      case WorkerMessage::kTask:
        text = "task:" + geotrain::v1::TaskState_Name(m.message.task().state()).substr(11);
        break;
      case WorkerMessage::kSteps:
        text = "steps:";
        for (const auto& r : m.message.steps().reports()) text += std::to_string(r.step()) + ",";
        text.pop_back();
        break;
      case WorkerMessage::kLogs:
        text = "logs:";
        for (const auto& l : m.message.logs().lines()) text += l.text() + ",";
        text.pop_back();
        break;
      default:
        text = "other";
    }
    out.push_back(text);
  }
  return out;
}

TEST(OutboxTest, KeepsPushOrderAndGroupsConsecutiveItems) {
  Outbox outbox;
  outbox.PushStatus(Status(geotrain::v1::TASK_STATE_STARTING));
  outbox.PushLog(Log("a"));
  outbox.PushStatus(Status(geotrain::v1::TASK_STATE_RUNNING));
  outbox.PushStep(Step(1));
  outbox.PushStep(Step(2));
  outbox.PushLog(Log("b"));
  outbox.PushLog(Log("c"));
  outbox.PushStep(Step(3));
  outbox.PushStatus(Status(geotrain::v1::TASK_STATE_SUCCEEDED));
  EXPECT_EQ(Describe(outbox.Peek(100)),
            (std::vector<std::string>{"task:STARTING", "logs:a", "task:RUNNING", "steps:1,2",
                                      "logs:b,c", "steps:3", "task:SUCCEEDED"}));
}

TEST(OutboxTest, BatchesHoldAtMostTheBatchSize) {
  Outbox outbox(OutboxLimits{100, 100, 2});
  for (int i = 1; i <= 5; ++i) outbox.PushStep(Step(i));
  EXPECT_EQ(Describe(outbox.Peek(100)),
            (std::vector<std::string>{"steps:1,2", "steps:3,4", "steps:5"}));
  EXPECT_EQ(Describe(outbox.Peek(2)), (std::vector<std::string>{"steps:1,2", "steps:3,4"}));
}

TEST(OutboxTest, OnlyCommittedMessagesLeave) {
  Outbox outbox(OutboxLimits{100, 100, 2});
  for (int i = 1; i <= 5; ++i) outbox.PushStep(Step(i));
  const auto first = outbox.Peek(100);
  outbox.Commit(first[0].through);
  // The write of the second message "failed": it stays for the next session.
  EXPECT_EQ(Describe(outbox.Peek(100)), (std::vector<std::string>{"steps:3,4", "steps:5"}));
  outbox.Commit(outbox.Peek(100).back().through);
  EXPECT_TRUE(outbox.Empty());
  EXPECT_TRUE(outbox.Peek(100).empty());
}

TEST(OutboxTest, KeepsTheNewestItemsAndCountsTheDropped) {
  Outbox outbox(OutboxLimits{3, 2, 200});
  for (int i = 1; i <= 7; ++i) outbox.PushStep(Step(i));
  for (const char* text : {"a", "b", "c", "d"}) outbox.PushLog(Log(text));
  outbox.PushStatus(Status(geotrain::v1::TASK_STATE_FAILED));
  EXPECT_EQ(Describe(outbox.Peek(100)),
            (std::vector<std::string>{"steps:5,6,7", "logs:c,d", "task:FAILED"}));
  const Outbox::Dropped dropped = outbox.TakeDropped();
  EXPECT_EQ(dropped.steps, 4u);
  EXPECT_EQ(dropped.logs, 2u);
  EXPECT_EQ(outbox.TakeDropped().steps, 0u);  // counted once
}

TEST(OutboxTest, StatusesAndFullBatchesAreUrgent) {
  std::atomic<int> calls{0};
  Outbox outbox(OutboxLimits{100, 100, 3}, [&] { ++calls; });
  outbox.PushStep(Step(1));
  outbox.PushLog(Log("a"));
  EXPECT_FALSE(outbox.Urgent());
  EXPECT_EQ(calls, 0);
  outbox.PushStep(Step(2));
  outbox.PushStep(Step(3));
  EXPECT_TRUE(outbox.Urgent());
  EXPECT_EQ(calls, 1);
  outbox.Commit(outbox.Peek(100).back().through);
  EXPECT_FALSE(outbox.Urgent());
  outbox.PushStatus(Status(geotrain::v1::TASK_STATE_RUNNING));
  EXPECT_TRUE(outbox.Urgent());
  EXPECT_EQ(calls, 2);
}

TEST(OutboxTest, DropStatusesLeavesStepsLogsAndStatusesNotSuperseded) {
  Outbox outbox;
  outbox.PushStatus(Status(geotrain::v1::TASK_STATE_STARTING));
  outbox.PushStep(Step(1));
  outbox.PushStatus(Status(geotrain::v1::TASK_STATE_RUNNING));
  outbox.PushLog(Log("x"));
  outbox.PushStatus(Status(geotrain::v1::TASK_STATE_FAILED));
  outbox.DropStatuses([](const geotrain::v1::TaskStatus& status) {
    return status.state() != geotrain::v1::TASK_STATE_FAILED;
  });
  EXPECT_EQ(Describe(outbox.Peek(100)),
            (std::vector<std::string>{"steps:1", "logs:x", "task:FAILED"}));
}

}  // namespace
}  // namespace geotrain::worker
