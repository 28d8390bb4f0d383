#include "worker/task_run.h"

#include <gtest/gtest.h>

#include <mutex>

#include "tests/testing/temp_dir.h"
#include "tests/worker/worker_test_util.h"

namespace geotrain::worker {
namespace {

using testing::ReadFile;
using testing::Sh;

// What a TaskRun reported, read after Wait().
struct Reports {
  std::mutex mu;
  std::vector<geotrain::v1::StepReport> steps;
  std::vector<geotrain::v1::LogLine> logs;
  std::vector<geotrain::v1::TaskStatus> ends;

  TaskRunCallbacks Callbacks() {
    TaskRunCallbacks callbacks;
    callbacks.on_step = [this](const auto& r) {
      std::lock_guard<std::mutex> l(mu);
      steps.push_back(r);
    };
    callbacks.on_log = [this](const auto& r) {
      std::lock_guard<std::mutex> l(mu);
      logs.push_back(r);
    };
    callbacks.on_end = [this](const auto& r) {
      std::lock_guard<std::mutex> l(mu);
      ends.push_back(r);
    };
    return callbacks;
  }
};

const TaskKey kKey{"job-7", 3, 1, 2};

TEST(TaskRunTest, TurnsTheChildsOutputIntoReportsLinesAndAnEnd) {
  geotrain::testing::TempDir dir;
  Reports reports;
  const std::string script =
      "echo 'starting'; "
      "echo '{\"step\": 1, \"lr\": 0.5, \"loss\": 2.0}'; "
      "echo '{\"step\": \"two\"}'; "
      "echo '[error] rank 5: peer 4 vanished' >&2; "
      "echo '{\"step\": 2, \"lr\": 0.25}'; "
      "echo 'bye' >&2; exit 1";
  auto run = TaskRun::Start(kKey, Sh(script), dir.File("task.log"), reports.Callbacks());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  (*run)->Wait();

  ASSERT_EQ(reports.steps.size(), 2u);
  EXPECT_EQ(reports.steps[0].step(), 1);
  EXPECT_DOUBLE_EQ(reports.steps[0].lr(), 0.5);
  EXPECT_TRUE(reports.steps[0].has_loss());
  EXPECT_EQ(reports.steps[1].step(), 2);
  EXPECT_FALSE(reports.steps[1].has_loss());
  for (const auto& step : reports.steps) {
    EXPECT_EQ(step.job_id(), "job-7");
    EXPECT_EQ(step.generation(), 3u);
    EXPECT_EQ(step.stage(), 1);
    EXPECT_EQ(step.replica(), 2);
  }

  std::vector<std::string> texts;
  for (const auto& log : reports.logs) {
    texts.push_back(log.text());
    EXPECT_EQ(log.job_id(), "job-7");
    EXPECT_EQ(log.generation(), 3u);
    EXPECT_EQ(log.stage(), 1);
    EXPECT_EQ(log.replica(), 2);
    EXPECT_GT(log.unix_ms(), 0);
  }
  // Lines of one pipe keep their order; the broken step line is kept as a log line.
  std::vector<std::string> out_lines, err_lines;
  for (const auto& t : texts) (t == "starting" || t[0] == '{' ? out_lines : err_lines).push_back(t);
  EXPECT_EQ(out_lines, (std::vector<std::string>{"starting", "{\"step\": \"two\"}"}));
  ASSERT_EQ(err_lines.size(), 2u);
  EXPECT_EQ(err_lines[1], "bye");

  ASSERT_EQ(reports.ends.size(), 1u);
  const auto& end = reports.ends[0];
  EXPECT_EQ(end.state(), geotrain::v1::TASK_STATE_FAILED);
  EXPECT_EQ(end.exit_code(), 1);
  EXPECT_EQ(end.message(), "rank 5: peer 4 vanished");
  EXPECT_EQ(end.last_step(), 2);
  EXPECT_EQ(TaskKey::Of(end), kKey);

  // task.log has every line, step lines included.
  const std::string log = ReadFile(dir.File("task.log"));
  for (const char* line : {"starting\n", "{\"step\": 1, \"lr\": 0.5, \"loss\": 2.0}\n", "bye\n",
                           "peer 4 vanished\n"}) {
    EXPECT_NE(log.find(line), std::string::npos) << line;
  }
}

TEST(TaskRunTest, StoppedRunEndsStopped) {
  geotrain::testing::TempDir dir;
  Reports reports;
  auto run = TaskRun::Start(kKey, Sh("echo '{\"step\": 4}'; exec sleep 60"), dir.File("task.log"),
                            reports.Callbacks());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_TRUE(testing::Eventually([&] {
    std::lock_guard<std::mutex> lock(reports.mu);
    return !reports.steps.empty();
  }));
  (*run)->Stop(std::chrono::seconds(30));
  (*run)->Wait();
  ASSERT_EQ(reports.ends.size(), 1u);
  EXPECT_EQ(reports.ends[0].state(), geotrain::v1::TASK_STATE_STOPPED);
  EXPECT_EQ(reports.ends[0].last_step(), 4);
}

TEST(TaskRunTest, UnwritableLogIsAStartError) {
  Reports reports;
  auto run = TaskRun::Start(kKey, Sh("true"), "/nonexistent/dir/task.log", reports.Callbacks());
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("/nonexistent/dir/task.log"), std::string::npos);
}

TEST(TaskLogTest, StopsAtItsCapWithANote) {
  geotrain::testing::TempDir dir;
  {
    auto log = TaskLog::Open(dir.File("task.log"), 20);
    ASSERT_TRUE(log.ok());
    (*log)->Append("0123456789");  // 11 bytes with the newline
    (*log)->Append("abcdefghij");  // would pass 20
    (*log)->Append("x");
  }
  const std::string contents = ReadFile(dir.File("task.log"));
  EXPECT_EQ(contents.rfind("0123456789\n[geotrain-worker] task.log reached its cap of 20 bytes", 0),
            0u)
      << contents;
  EXPECT_EQ(contents.find("abcdefghij"), std::string::npos);
  EXPECT_EQ(contents.find("\nx\n"), std::string::npos);
}

TEST(TaskLogTest, AppendsToAnExistingLog) {
  geotrain::testing::TempDir dir;
  dir.Write("task.log", "earlier run\n");
  {
    auto log = TaskLog::Open(dir.File("task.log"));
    ASSERT_TRUE(log.ok());
    (*log)->Append("later run");
  }
  EXPECT_EQ(ReadFile(dir.File("task.log")), "earlier run\nlater run\n");
}

}  // namespace
}  // namespace geotrain::worker
