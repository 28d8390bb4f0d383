#include "worker/task_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "tests/testing/temp_dir.h"
#include "tests/worker/worker_test_util.h"

namespace geotrain::worker {
namespace {

using testing::Eventually;
using testing::ProcessOutput;
using testing::Sh;

std::unique_ptr<TaskProcess> StartOrDie(const ProcessSpec& spec, ProcessOutput& output) {
  auto process = TaskProcess::Start(spec, output.OnLine(), output.OnExit());
  EXPECT_TRUE(process.ok()) << process.status().ToString();
  return process.ok() ? std::move(process).value() : nullptr;
}

// Whether `pid` has ended: gone, or a zombie waiting for a parent that is not us.
bool Ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string contents((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = contents.rfind(')');
  return paren != std::string::npos && paren + 2 < contents.size() && contents[paren + 2] == 'Z';
}

TEST(TaskProcessTest, DeliversLinesInOrderPerPipeAndTheExitCode) {
  ProcessOutput output;
  auto process =
      StartOrDie(Sh("echo a; echo b >&2; echo c; echo d >&2; printf 'no newline'; exit 3"), output);
  ASSERT_NE(process, nullptr);
  process->Wait();
  EXPECT_EQ(output.out(), (std::vector<std::string>{"a", "c", "no newline"}));
  EXPECT_EQ(output.err(), (std::vector<std::string>{"b", "d"}));
  EXPECT_EQ(output.exits(), 1);
  EXPECT_EQ(output.exit().exit_code, 3);
  EXPECT_EQ(output.exit().signal, 0);
  EXPECT_EQ(output.exit().code(), 3);
  EXPECT_FALSE(output.exit().stop_requested);
  EXPECT_TRUE(process->ended());
}

TEST(TaskProcessTest, ManyLinesArriveCompleteAndInOrder) {
  ProcessOutput output;
  auto process =
      StartOrDie(Sh("i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done"), output);
  ASSERT_NE(process, nullptr);
  process->Wait();
  const std::vector<std::string> lines = output.out();
  ASSERT_EQ(lines.size(), 2000u);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i], "line" + std::to_string(i));
}

TEST(TaskProcessTest, ACrashingChildIsReportedAndTheParentCarriesOn) {
  ProcessOutput output;
  auto process = StartOrDie(Sh("echo before; kill -SEGV $$"), output);
  ASSERT_NE(process, nullptr);
  process->Wait();
  EXPECT_EQ(output.exit().signal, SIGSEGV);
  EXPECT_EQ(output.exit().code(), 128 + SIGSEGV);
  EXPECT_FALSE(output.exit().stop_requested);
  EXPECT_EQ(output.out(), std::vector<std::string>{"before"});

  // The same process starts the next child as if nothing happened.
  ProcessOutput next;
  auto again = StartOrDie(Sh("echo after"), next);
  ASSERT_NE(again, nullptr);
  again->Wait();
  EXPECT_EQ(next.out(), std::vector<std::string>{"after"});
  EXPECT_EQ(next.exit().code(), 0);
}

TEST(TaskProcessTest, StopEndsAChildThatHonoursSigterm) {
  ProcessOutput output;
  auto process = StartOrDie(Sh("echo ready; exec sleep 60"), output);
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(output.WaitForStdout("ready"));
  process->Stop(std::chrono::seconds(60));  // SIGTERM suffices; a SIGKILL would mean it did not
  process->Wait();
  EXPECT_EQ(output.exit().signal, SIGTERM);
  EXPECT_TRUE(output.exit().stop_requested);
}

TEST(TaskProcessTest, StopEscalatesToSigkillWhenSigtermIsIgnored) {
  ProcessOutput output;
  auto process = StartOrDie(Sh("trap '' TERM; echo ready; while :; do sleep 1; done"), output);
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(output.WaitForStdout("ready"));
  process->Stop(std::chrono::milliseconds(300));
  process->Wait();
  EXPECT_EQ(output.exit().signal, SIGKILL);
  EXPECT_TRUE(output.exit().stop_requested);
  EXPECT_EQ(output.exits(), 1);
}

TEST(TaskProcessTest, StopReachesTheWholeProcessGroup) {
  ProcessOutput output;
  // The shell waits for its child; SIGTERM to the shell alone would leave `sleep` running and
  // the shell waiting for it.
  auto process = StartOrDie(Sh("sleep 60 & echo $!; wait"), output);
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(Eventually([&] { return !output.out().empty(); }));
  const pid_t sleeper = std::stoi(output.out().front());
  process->Stop(std::chrono::seconds(60));
  process->Wait();
  EXPECT_TRUE(output.exit().stop_requested);
  EXPECT_EQ(output.exit().signal, SIGTERM);
  EXPECT_TRUE(Eventually([&] { return Ended(sleeper); }));
}

TEST(TaskProcessTest, WhatTheChildLeftInItsGroupIsKilledWhenItExits) {
  ProcessOutput output;
  // The background sleep keeps both pipes open; without the group kill the exit would wait.
  auto process = StartOrDie(Sh("sleep 60 & echo $!; exit 0"), output);
  ASSERT_NE(process, nullptr);
  process->Wait();
  EXPECT_EQ(output.exit().code(), 0);
  ASSERT_EQ(output.out().size(), 1u);
  const pid_t leftover = std::stoi(output.out().front());
  EXPECT_TRUE(Eventually([&] { return Ended(leftover); }));
}

TEST(TaskProcessTest, ChildGetsDefaultSignalsEvenIfTheParentBlocksThem) {
  sigset_t term, previous;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &term, &previous), 0);
  ProcessOutput output;
  auto process = StartOrDie(Sh("echo ready; exec sleep 60"), output);
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(output.WaitForStdout("ready"));
  process->Stop(std::chrono::seconds(60));
  process->Wait();
  EXPECT_EQ(output.exit().signal, SIGTERM);  // not SIGKILL after the grace: SIGTERM was unblocked
}

TEST(TaskProcessTest, DestroyingARunningProcessKillsIt) {
  ProcessOutput output;
  auto process = StartOrDie(Sh("echo ready; exec sleep 60"), output);
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(output.WaitForStdout("ready"));
  const pid_t pid = process->pid();
  process.reset();
  EXPECT_EQ(output.exits(), 1);
  EXPECT_EQ(output.exit().signal, SIGKILL);
  EXPECT_TRUE(Ended(pid));
}

TEST(TaskProcessTest, StdinIsEmptyAndEnvironmentAndDirectoryAreApplied) {
  geotrain::testing::TempDir dir;
  ProcessSpec spec = Sh("cat; echo \"var=$GEOTRAIN_TEST_VAR\"; pwd");
  spec.env = {{"GEOTRAIN_TEST_VAR", "42"}};
  spec.cwd = dir.path();
  ProcessOutput output;
  auto process = StartOrDie(spec, output);
  ASSERT_NE(process, nullptr);
  process->Wait();
  EXPECT_EQ(output.out(), (std::vector<std::string>{"var=42", dir.path()}));
}

TEST(TaskProcessTest, OverlongLinesArriveInBoundedPieces) {
  ProcessOutput output;
  auto process = StartOrDie(Sh("head -c 100000 /dev/zero | tr '\\000' x; echo; echo end"), output);
  ASSERT_NE(process, nullptr);
  process->Wait();
  const std::vector<std::string> lines = output.out();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], std::string(TaskProcess::kMaxLineBytes, 'x'));
  EXPECT_EQ(lines[1], std::string(100000 - TaskProcess::kMaxLineBytes, 'x'));
  EXPECT_EQ(lines[2], "end");
}

TEST(TaskProcessTest, StartFailuresAreErrorsNotExits) {
  ProcessOutput output;
  auto missing = TaskProcess::Start(ProcessSpec{{"/nonexistent/geotrain-program"}, {}, {}},
                                    output.OnLine(), output.OnExit());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot execute /nonexistent/geotrain-program"),
            std::string::npos)
      << missing.status().message();

  ProcessSpec bad_cwd = Sh("true");
  bad_cwd.cwd = "/nonexistent/directory";
  auto in_nowhere = TaskProcess::Start(bad_cwd, output.OnLine(), output.OnExit());
  ASSERT_FALSE(in_nowhere.ok());
  EXPECT_NE(in_nowhere.status().message().find("/nonexistent/directory"), std::string::npos);

  auto empty = TaskProcess::Start(ProcessSpec{}, output.OnLine(), output.OnExit());
  EXPECT_FALSE(empty.ok());
  EXPECT_EQ(output.exits(), 0);
}

TEST(TaskProcessTest, TheChildDiesWithItsParent) {
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t daemon = ::fork();
  ASSERT_GE(daemon, 0);
  if (daemon == 0) {
    // A stand-in daemon: starts a child and vanishes without cleaning up.
    ::close(report[0]);
    auto child = TaskProcess::Start(Sh("exec sleep 60"), nullptr, nullptr);
    const pid_t pid = child.ok() ? (*child)->pid() : -1;
    if (::write(report[1], &pid, sizeof(pid)) != sizeof(pid)) ::_exit(1);
    ::_exit(0);
  }
  ::close(report[1]);
  pid_t child = -1;
  ASSERT_EQ(::read(report[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
  ::close(report[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(daemon, &status, 0), daemon);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(Eventually([&] { return Ended(child); }));
}

}  // namespace
}  // namespace geotrain::worker
