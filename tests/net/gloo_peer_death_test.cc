// A rank of a real multi-process Gloo group is SIGKILLed mid-run; the survivors must fail with a
// clear error within their operation timeout and never hang (as gloo's own fork-based tests do).
//
// Ranks are forked processes, not threads: a killed process is what a crashed worker looks like to
// its peers (the kernel closes its sockets), which no in-process stand-in reproduces exactly.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "net/gloo_transport.h"
#include "tests/net/transport_test_util.h"

namespace geotrain::net::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kSize = 3;
constexpr int kVictim = 1;
constexpr milliseconds kRankOpTimeout{3000};
// How a child ended (its exit code).
constexpr int kFailedCleanly = 0;    // an operation failed with UNAVAILABLE or DEADLINE_EXCEEDED
constexpr int kUnexpectedCode = 10;  // it failed with another code
constexpr int kSetupFailed = 11;     // no store or no group
constexpr int kNeverFailed = 12;     // ran out of time without noticing the death

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// A child's life: join the group, signal 'R' after the first round of collectives, keep running
// rounds until one fails, write the error and exit. Never returns.
[[noreturn]] void RunRank(int rank, const std::string& store_path, int report_fd) {
  auto store = CreateFileStore(store_path, kSize, milliseconds(10000));
  if (!store.ok()) {
    WriteAll(report_fd, store.status().ToString());
    ::_exit(kSetupFailed);
  }
  GlooTransportOptions options;
  options.rank = rank;
  options.size = kSize;
  options.group_name = "death";
  options.connect_timeout = milliseconds(10000);
  auto transport = CreateGlooTransport(options, *store);
  if (!transport.ok()) {
    WriteAll(report_fd, transport.status().ToString());
    ::_exit(kSetupFailed);
  }
  Transport& t = **transport;
  std::vector<float> values(4096, 1.0f);
  std::vector<std::vector<uint8_t>> to_each(kSize, std::vector<uint8_t>(1000));
  bool reported_ready = false;
  const auto give_up = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < give_up) {
    Status status = t.AllReduceSum(values, kRankOpTimeout);
    if (status.ok()) status = t.AllToAll(to_each, kRankOpTimeout).status();
    if (status.ok()) status = t.Barrier(kRankOpTimeout);
    if (!status.ok()) {
      WriteAll(report_fd, status.ToString());
      const bool clean = status.code() == StatusCode::kUnavailable ||
                         status.code() == StatusCode::kDeadlineExceeded;
      ::_exit(clean ? kFailedCleanly : kUnexpectedCode);
    }
    if (!reported_ready) {
      WriteAll(report_fd, "R");
      reported_ready = true;
    }
  }
  ::_exit(kNeverFailed);
}

struct Child {
  pid_t pid = -1;
  int report_fd = -1;  // read end of the child's report pipe
  std::string report;  // everything the child wrote
  int exit_code = -1;  // -1: did not exit normally
  double seconds_after_kill = 0;
};

// Reads what is available from `child` within `timeout_ms`; false at end of file.
bool ReadSome(Child* child, int timeout_ms) {
  pollfd fd{child->report_fd, POLLIN, 0};
  if (::poll(&fd, 1, timeout_ms) <= 0) return true;
  char buffer[4096];
  const ssize_t n = ::read(child->report_fd, buffer, sizeof(buffer));
  if (n <= 0) return false;
  child->report.append(buffer, static_cast<size_t>(n));
  return true;
}

TEST(GlooPeerDeathTest, SurvivorsFailWithinTheirTimeoutWhenARankIsKilled) {
  TempDir dir;
  const std::string store_path = dir.File("store");
  std::vector<Child> children(kSize);
  for (int rank = 0; rank < kSize; ++rank) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      RunRank(rank, store_path, fds[1]);
    }
    ::close(fds[1]);  // before the next fork, so only this child holds the write end
    children[rank].pid = pid;
    children[rank].report_fd = fds[0];
  }
  auto kill_all = [&] {
    for (Child& child : children) {
      if (child.pid > 0) ::kill(child.pid, SIGKILL);
    }
  };

  // Every rank has finished a round: the group is up and traffic is flowing.
  const auto ready_by = Clock::now() + std::chrono::seconds(20);
  for (int rank = 0; rank < kSize; ++rank) {
    Child& child = children[rank];
    while (child.report.empty() && Clock::now() < ready_by) {
      if (!ReadSome(&child, 50)) break;
    }
    if (child.report != "R") {
      kill_all();
      for (Child& c : children) ::waitpid(c.pid, nullptr, 0);
      FAIL() << "rank " << rank << " did not start: " << child.report;
    }
  }

  ASSERT_EQ(::kill(children[kVictim].pid, SIGKILL), 0);
  const auto killed_at = Clock::now();
  // Each survivor has its op timeout (plus slack for this busy machine) to notice.
  const auto hang_limit = killed_at + kRankOpTimeout + std::chrono::seconds(5);
  for (int rank = 0; rank < kSize; ++rank) {
    Child& child = children[rank];
    int wait_status = 0;
    pid_t done = 0;
    while ((done = ::waitpid(child.pid, &wait_status, WNOHANG)) == 0 && Clock::now() < hang_limit) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    child.seconds_after_kill = SecondsSince(killed_at);
    if (done == 0) {
      ::kill(child.pid, SIGKILL);
      ::waitpid(child.pid, &wait_status, 0);
      ADD_FAILURE() << "rank " << rank << " hung after rank " << kVictim << " was killed";
      continue;
    }
    if (WIFEXITED(wait_status)) child.exit_code = WEXITSTATUS(wait_status);
    while (ReadSome(&child, 0)) {
    }
    ::close(child.report_fd);
  }

  int survivors_naming_the_victim = 0;
  for (int rank = 0; rank < kSize; ++rank) {
    if (rank == kVictim) continue;
    const Child& child = children[rank];
    const std::string error = child.report.substr(child.report.empty() ? 0 : 1);  // after "R"
    EXPECT_EQ(child.exit_code, kFailedCleanly) << "rank " << rank << ": " << error;
    EXPECT_LT(child.seconds_after_kill, std::chrono::duration<double>(kRankOpTimeout).count() + 2.0)
        << "rank " << rank << " took too long: " << error;
    EXPECT_NE(error.find("rank "), std::string::npos) << "rank " << rank << ": " << error;
    if (error.find("rank " + std::to_string(kVictim)) != std::string::npos) {
      survivors_naming_the_victim++;
    }
    std::cout << "rank " << rank << " failed after " << child.seconds_after_kill << " s: " << error
              << "\n";
  }
  EXPECT_GE(survivors_naming_the_victim, 1) << "no survivor named the killed rank";
}

}  // namespace
}  // namespace geotrain::net::testing
