// A task child that was SIGSTOPped (a straggler that never answers) must still end when the
// daemon stops its task: SIGTERM stays pending in a stopped process that handles it, so Stop
// continues the child and escalates to SIGKILL after the grace.
#include <gtest/gtest.h>
#include <signal.h>

#include "tests/worker/worker_test_util.h"
#include "worker/task_process.h"

namespace geotrain::worker {
namespace {

using testing::ProcessOutput;
using testing::Sh;

std::unique_ptr<TaskProcess> StartStopped(const std::string& script, ProcessOutput& output) {
  auto process = TaskProcess::Start(Sh(script), output.OnLine(), output.OnExit());
  EXPECT_TRUE(process.ok()) << process.status().ToString();
  if (!process.ok()) return nullptr;
  EXPECT_TRUE(output.WaitForStdout("ready"));
  ::kill(-(*process)->pid(), SIGSTOP);
  return std::move(process).value();
}

TEST(TaskProcessStoppedChildTest, AStoppedChildThatHandlesSigtermGetsToHandleIt) {
  ProcessOutput output;
  // The handler's exit code tells that the SIGTERM was delivered (it needs the SIGCONT).
  auto process =
      StartStopped("trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done", output);
  ASSERT_NE(process, nullptr);
  process->Stop(std::chrono::seconds(60));
  process->Wait();
  EXPECT_EQ(output.exit().exit_code, 7);
  EXPECT_EQ(output.exit().signal, 0);
  EXPECT_TRUE(output.exit().stop_requested);
}

TEST(TaskProcessStoppedChildTest, AStoppedChildThatIgnoresSigtermIsKilled) {
  ProcessOutput output;
  auto process = StartStopped("trap '' TERM; echo ready; while :; do sleep 0.05; done", output);
  ASSERT_NE(process, nullptr);
  process->Stop(std::chrono::milliseconds(300));
  process->Wait();
  EXPECT_EQ(output.exit().signal, SIGKILL);
  EXPECT_TRUE(output.exit().stop_requested);
  EXPECT_EQ(output.exits(), 1);
}

}  // namespace
}  // namespace geotrain::worker
