// TaskProcess: one child process of the daemon (a training task), with its output read line by
// line and its end observed, so that a crash in training never takes the daemon down.
//
// The child runs in its own process group (a stop reaches everything it started), with stdin on
// /dev/null, stdout and stderr on pipes, a default signal state, and PR_SET_PDEATHSIG = SIGKILL so
// it dies with the daemon. Linux ties the death signal to the *thread* that forked, so Start must
// be called from a thread that outlives the child (the daemon's main thread does it).
//
// Threads: each TaskProcess owns two. The reaper blocks in waitid() until the child ends, kills
// whatever the child left in its group (so no orphan keeps training or holds the pipes) and reaps
// it. The monitor polls both pipes and delivers every callback: on_line for each line, in order
// per pipe, then on_exit exactly once, after the pipes reached end of file (or, should something
// that escaped the group keep them open, kDrainAfterExit after the exit). Callbacks never run
// concurrently with each other, and must not destroy the TaskProcess.
//
// Stop() and the destructor may be called from any thread. The process group id is only signalled
// while the child is unreaped (a zombie still owns it), so a recycled pid is never hit.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"

namespace geotrain::worker {

enum class OutputStream { kStdout, kStderr };

struct ProcessSpec {
  // argv[0] is the program's path (no PATH search).
  std::vector<std::string> argv;
  // Variables set in the child's environment, over the daemon's own.
  std::vector<std::pair<std::string, std::string>> env;
  // The child's working directory; empty: the daemon's.
  std::string cwd;
};

struct ProcessExit {
  int exit_code = -1;           // the exit status when it exited; -1 when a signal ended it
  int signal = 0;               // the signal that ended it; 0 when it exited
  bool stop_requested = false;  // Stop() had been called before it ended
  // exit_code, or 128 + signal as shells report it.
  int code() const { return signal != 0 ? 128 + signal : exit_code; }
};

class TaskProcess {
 public:
  using LineCallback = std::function<void(OutputStream stream, const std::string& line)>;
  using ExitCallback = std::function<void(const ProcessExit& exit)>;

  // Longer lines are delivered in pieces of this size, so a child that never writes a newline
  // cannot make the daemon buffer without bound.
  static constexpr size_t kMaxLineBytes = 64 * 1024;
  static constexpr std::chrono::milliseconds kDrainAfterExit{2000};

  // Starts the child. Errors (no such program, bad cwd) are reported here, not via on_exit.
  static StatusOr<std::unique_ptr<TaskProcess>> Start(const ProcessSpec& spec, LineCallback on_line,
                                                      ExitCallback on_exit);

  // Kills the child's group (SIGKILL) if it still runs and waits for both threads.
  ~TaskProcess();
  TaskProcess(const TaskProcess&) = delete;
  TaskProcess& operator=(const TaskProcess&) = delete;

  // SIGTERM (and SIGCONT, for a stopped child) to the child's group now, SIGKILL once `grace`
  // has passed if the child still runs (grace 0: SIGKILL at once), stopped or not. Returns at once;
  // a second call can only shorten the grace.
  void Stop(std::chrono::milliseconds grace);

  // Blocks until on_exit has returned.
  void Wait();
  // Whether on_exit has returned.
  bool ended() const;

  pid_t pid() const { return pid_; }

 private:
  TaskProcess(pid_t pid, int stdout_fd, int stderr_fd, int wake_read, int wake_write,
              LineCallback on_line, ExitCallback on_exit);

  void Reap();
  void Monitor();
  void Wake();
  void KillIfDue();

  const pid_t pid_;
  const int stdout_fd_;
  const int stderr_fd_;
  const int wake_read_;
  const int wake_write_;
  LineCallback on_line_;
  ExitCallback on_exit_;

  mutable std::mutex mu_;
  std::condition_variable ended_cv_;
  bool stop_requested_ = false;
  std::optional<int64_t> kill_at_;  // monotonic ms (common/clock.h)
  bool killed_ = false;
  bool reaped_ = false;
  bool ended_ = false;
  ProcessExit exit_;

  std::thread reaper_;
  std::thread monitor_;
};

}  // namespace geotrain::worker
