#include "worker/task_end.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace geotrain::worker {
namespace {

const TaskKey kKey{"job-1", 2, 1, 0};

ProcessExit Exited(int code) {
  ProcessExit exit;
  exit.exit_code = code;
  return exit;
}
ProcessExit Signalled(int sig) {
  ProcessExit exit;
  exit.signal = sig;
  return exit;
}

TEST(StderrErrorsTest, PrefersTheNewestErrorLevelLine) {
  StderrErrors errors;
  EXPECT_EQ(errors.Last(), "");
  errors.Add("[info] loading");
  EXPECT_EQ(errors.Last(), "[info] loading");
  errors.Add("[error] rank 1: peer 0 vanished");
  errors.Add("[info] shutting down [error] not at the start");
  errors.Add("   ");
  EXPECT_EQ(errors.Last(), "rank 1: peer 0 vanished");
  errors.Add("[critical] out of memory");
  EXPECT_EQ(errors.Last(), "out of memory");
}

TEST(StderrErrorsTest, FallsBackToTheLastLineForOtherFormats) {
  StderrErrors errors;
  errors.Add("terminate called after throwing an instance of 'c10::Error'");
  errors.Add("  what():  CUDA out of memory");
  EXPECT_EQ(errors.Last(), "  what():  CUDA out of memory");
}

TEST(EndStatusTest, ExitZeroSucceeds) {
  const auto status = EndStatus(kKey, Exited(0), "", 40);
  EXPECT_EQ(status.state(), geotrain::v1::TASK_STATE_SUCCEEDED);
  EXPECT_EQ(status.exit_code(), 0);
  EXPECT_EQ(status.last_step(), 40);
  EXPECT_EQ(status.job_id(), "job-1");
  EXPECT_EQ(status.generation(), 2u);
  EXPECT_EQ(status.stage(), 1);
  EXPECT_FALSE(status.permanent());
}

TEST(EndStatusTest, ExitTwoIsAPermanentFailure) {
  const auto status = EndStatus(kKey, Exited(2), "assignment.spec_yaml: model.dir: missing", 0);
  EXPECT_EQ(status.state(), geotrain::v1::TASK_STATE_FAILED);
  EXPECT_EQ(status.exit_code(), 2);
  EXPECT_TRUE(status.permanent());
  EXPECT_EQ(status.message(), "assignment.spec_yaml: model.dir: missing");
}

TEST(EndStatusTest, OtherCodesFailWithTheLastErrorOrTheCode) {
  auto status = EndStatus(kKey, Exited(1), "rank 1: timed out", 7);
  EXPECT_EQ(status.state(), geotrain::v1::TASK_STATE_FAILED);
  EXPECT_FALSE(status.permanent());
  EXPECT_EQ(status.message(), "rank 1: timed out");
  EXPECT_EQ(status.last_step(), 7);
  status = EndStatus(kKey, Exited(3), "", 7);
  EXPECT_EQ(status.message(), "exited with code 3");
}

TEST(EndStatusTest, SignalsWeDidNotSendAreFailures) {
  auto status = EndStatus(kKey, Signalled(SIGKILL), "", 5);
  EXPECT_EQ(status.state(), geotrain::v1::TASK_STATE_FAILED);
  EXPECT_EQ(status.exit_code(), 128 + SIGKILL);
  EXPECT_EQ(status.message(), "killed by signal 9 (SIGKILL)");
  EXPECT_FALSE(status.permanent());
  status = EndStatus(kKey, Signalled(SIGSEGV), "bad pointer", 5);
  EXPECT_EQ(status.message(), "killed by signal 11 (SIGSEGV); last error: bad pointer");
}

TEST(EndStatusTest, AStoppedTaskIsStoppedHoweverItEnded) {
  for (ProcessExit exit : {Signalled(SIGTERM), Signalled(SIGKILL), Exited(1), Exited(0)}) {
    exit.stop_requested = true;
    const auto status = EndStatus(kKey, exit, "whatever", 9);
    EXPECT_EQ(status.state(), geotrain::v1::TASK_STATE_STOPPED);
    EXPECT_EQ(status.exit_code(), exit.code());
    EXPECT_EQ(status.last_step(), 9);
    EXPECT_EQ(status.message(), "");
  }
}

}  // namespace
}  // namespace geotrain::worker
