#include "worker/task_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "common/clock.h"

extern char** environ;

namespace geotrain::worker {
namespace {

// Deadlines of stopping and draining are on monotonic time (common/clock.h).
int64_t NowMs() { return RealClock().NowMonotonicMs(); }

// What the child reports through the exec-error pipe when it cannot become the program.
struct ExecFailure {
  int stage;  // 1: chdir, 2: execve
  int error;  // errno
};

void CloseFd(int fd) {
  if (fd >= 0) ::close(fd);
}

// Runs in the forked child: only async-signal-safe calls until execve.
[[noreturn]] void BecomeChild(pid_t parent, const char* path, char* const* argv, char* const* envp,
                              const char* cwd, int stdin_fd, int stdout_fd, int stderr_fd,
                              int report_fd) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The daemon may have died between fork and prctl; then no death signal would ever come.
  if (::getppid() != parent) ::_exit(127);
  // The daemon's signal handlers and blocked signals must not leak into the task, or a stop
  // order's SIGTERM could go unheard.
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &default_action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  ::dup2(stdin_fd, STDIN_FILENO);
  ::dup2(stdout_fd, STDOUT_FILENO);
  ::dup2(stderr_fd, STDERR_FILENO);
#if defined(SYS_close_range)
  // Nothing else of the daemon's (sockets, other tasks' pipes) should survive exec.
  constexpr unsigned kCloseRangeCloexec = 1u << 2;  // CLOSE_RANGE_CLOEXEC
  ::syscall(SYS_close_range, 3u, ~0u, kCloseRangeCloexec);
#endif
  ExecFailure failure{0, 0};
  if (cwd != nullptr && ::chdir(cwd) != 0) {
    failure = {1, errno};
  } else {
    ::execve(path, argv, envp);
    failure = {2, errno};
  }
  ssize_t ignored = ::write(report_fd, &failure, sizeof(failure));
  (void)ignored;
  ::_exit(127);
}

// The child's environment: the daemon's, with `overrides` replacing or adding variables.
std::vector<std::string> ChildEnvironment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::set<std::string> replaced;
  for (const auto& [key, value] : overrides) replaced.insert(key);
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const size_t equals = text.find('=');
    if (replaced.count(text.substr(0, equals)) == 0) env.push_back(text);
  }
  for (const auto& [key, value] : overrides) env.push_back(key + "=" + value);
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Reads one pipe and cuts what arrives into lines.
class LineReader {
 public:
  LineReader(int fd, OutputStream stream) : fd_(fd), stream_(stream) {}

  int fd() const { return open_ ? fd_ : -1; }
  bool open() const { return open_; }

  // Reads what is available; emits complete lines (and oversized pieces). On end of file emits
  // the unterminated rest and stops.
  void ReadAvailable(const TaskProcess::LineCallback& on_line) {
    char buffer[16384];
    const ssize_t n = ::read(fd_, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) return;
      Finish(on_line);
      return;
    }
    if (n == 0) {
      Finish(on_line);
      return;
    }
    partial_.append(buffer, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t newline; (newline = partial_.find('\n', start)) != std::string::npos;) {
      Emit(partial_.substr(start, newline - start), on_line);
      start = newline + 1;
    }
    partial_.erase(0, start);
    while (partial_.size() >= TaskProcess::kMaxLineBytes) {
      Emit(partial_.substr(0, TaskProcess::kMaxLineBytes), on_line);
      partial_.erase(0, TaskProcess::kMaxLineBytes);
    }
  }

  // Gives up on the pipe (end of file, or the drain time after the exit ran out).
  void Finish(const TaskProcess::LineCallback& on_line) {
    if (!open_) return;
    open_ = false;
    if (!partial_.empty()) Emit(partial_, on_line);
    partial_.clear();
  }

 private:
  void Emit(std::string line, const TaskProcess::LineCallback& on_line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (on_line) on_line(stream_, line);
  }

  int fd_;
  OutputStream stream_;
  bool open_ = true;
  std::string partial_;
};

}  // namespace

StatusOr<std::unique_ptr<TaskProcess>> TaskProcess::Start(const ProcessSpec& spec,
                                                          LineCallback on_line,
                                                          ExitCallback on_exit) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return InvalidArgument("task process: argv is empty (argv[0] must name the program)");
  }
  // Everything the child needs is prepared before fork: between fork and exec it may only make
  // async-signal-safe calls (no allocation), since other threads may hold the allocator's locks.
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<std::string> env_strings = ChildEnvironment(spec.env);
  std::vector<char*> envp = CStrings(env_strings);
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();

  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, report_pipe[2] = {-1, -1};
  int wake_pipe[2] = {-1, -1};
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  auto close_all = [&] {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], report_pipe[0],
                   report_pipe[1], wake_pipe[0], wake_pipe[1], devnull}) {
      CloseFd(fd);
    }
  };
  if (devnull < 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(report_pipe, O_CLOEXEC) != 0 || ::pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int error = errno;
    close_all();
    return Unavailable(std::string("task process: cannot create its pipes: ") +
                       std::strerror(error));
  }

  // Signals stay blocked across fork so that no handler of the daemon runs in the child before
  // it has reset them.
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    BecomeChild(parent, argv[0], argv.data(), envp.data(), cwd, devnull, out_pipe[1], err_pipe[1],
                report_pipe[1]);
  }
  const int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) {
    close_all();
    return Unavailable(std::string("task process: fork failed: ") + std::strerror(fork_error));
  }
  // Also here, so the group exists before anyone signals it, whichever side runs first.
  ::setpgid(pid, pid);
  for (int* fd : {&out_pipe[1], &err_pipe[1], &report_pipe[1]}) {
    CloseFd(*fd);
    *fd = -1;
  }
  CloseFd(devnull);

  ExecFailure failure{0, 0};
  ssize_t n;
  do {
    n = ::read(report_pipe[0], &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  CloseFd(report_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof(failure))) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    for (int fd : {out_pipe[0], err_pipe[0], wake_pipe[0], wake_pipe[1]}) CloseFd(fd);
    const std::string what = failure.stage == 1 ? "cannot enter working directory " + spec.cwd
                                                : "cannot execute " + spec.argv[0];
    return Unavailable("task process: " + what + ": " + std::strerror(failure.error));
  }

  return std::unique_ptr<TaskProcess>(new TaskProcess(pid, out_pipe[0], err_pipe[0], wake_pipe[0],
                                                      wake_pipe[1], std::move(on_line),
                                                      std::move(on_exit)));
}

TaskProcess::TaskProcess(pid_t pid, int stdout_fd, int stderr_fd, int wake_read, int wake_write,
                         LineCallback on_line, ExitCallback on_exit)
    : pid_(pid),
      stdout_fd_(stdout_fd),
      stderr_fd_(stderr_fd),
      wake_read_(wake_read),
      wake_write_(wake_write),
      on_line_(std::move(on_line)),
      on_exit_(std::move(on_exit)) {
  reaper_ = std::thread([this] { Reap(); });
  monitor_ = std::thread([this] { Monitor(); });
}

TaskProcess::~TaskProcess() {
  Stop(std::chrono::milliseconds(0));
  if (monitor_.joinable()) monitor_.join();
  for (int fd : {stdout_fd_, stderr_fd_, wake_read_, wake_write_}) CloseFd(fd);
}

void TaskProcess::Stop(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (reaped_) return;
    stop_requested_ = true;
    const int64_t deadline = NowMs() + std::max<int64_t>(grace.count(), 0);
    if (!kill_at_ || deadline < *kill_at_) kill_at_ = deadline;
    if (grace.count() > 0) {
      ::kill(-pid_, SIGTERM);
      // A stopped child (SIGSTOP, a debugger gone) holds a handled SIGTERM pending until it runs
      // again; continue it so that it can shut down. SIGKILL at kill_at_ ends it either way.
      ::kill(-pid_, SIGCONT);
    }
  }
  KillIfDue();
  Wake();
}

void TaskProcess::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  ended_cv_.wait(lock, [this] { return ended_; });
}

bool TaskProcess::ended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_;
}

void TaskProcess::Wake() {
  const char byte = 1;
  ssize_t ignored = ::write(wake_write_, &byte, 1);  // a full pipe already means "wake up"
  (void)ignored;
}

void TaskProcess::KillIfDue() {
  std::lock_guard<std::mutex> lock(mu_);
  if (reaped_ || killed_ || !kill_at_ || NowMs() < *kill_at_) return;
  ::kill(-pid_, SIGKILL);
  killed_ = true;
}

void TaskProcess::Reap() {
  siginfo_t info = {};
  int rc;
  do {
    // WNOWAIT: the child stays a zombie, so its process group id stays ours to signal.
    rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT);
  } while (rc != 0 && errno == EINTR);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ::kill(-pid_, SIGKILL);  // whatever the child left behind in its group
    int status = 0;
    pid_t reaped;
    do {
      reaped = ::waitpid(pid_, &status, 0);
    } while (reaped < 0 && errno == EINTR);
    if (reaped == pid_ && WIFEXITED(status)) {
      exit_.exit_code = WEXITSTATUS(status);
    } else if (reaped == pid_ && WIFSIGNALED(status)) {
      exit_.signal = WTERMSIG(status);
    }
    exit_.stop_requested = stop_requested_;
    reaped_ = true;
  }
  Wake();
}

void TaskProcess::Monitor() {
  LineReader readers[2] = {LineReader(stdout_fd_, OutputStream::kStdout),
                           LineReader(stderr_fd_, OutputStream::kStderr)};
  std::optional<int64_t> drain_until;  // monotonic ms
  while (true) {
    bool reaped;
    std::optional<int64_t> kill_at;
    {
      std::lock_guard<std::mutex> lock(mu_);
      reaped = reaped_;
      if (!killed_) kill_at = kill_at_;
    }
    if (reaped && !drain_until) drain_until = NowMs() + kDrainAfterExit.count();
    if (reaped && !readers[0].open() && !readers[1].open()) break;
    if (drain_until && NowMs() >= *drain_until) {
      for (LineReader& reader : readers) reader.Finish(on_line_);
      break;
    }

    std::optional<int64_t> next;
    if (!reaped && kill_at) next = kill_at;
    if (drain_until) next = next ? std::min(*next, *drain_until) : *drain_until;
    int timeout_ms = -1;
    if (next) {
      const int64_t left = *next - NowMs();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left + 1, 0, 60000));
    }
    pollfd fds[3] = {
        {readers[0].fd(), POLLIN, 0}, {readers[1].fd(), POLLIN, 0}, {wake_read_, POLLIN, 0}};
    const int ready = ::poll(fds, 3, timeout_ms);
    if (ready < 0 && errno != EINTR) break;  // cannot happen with valid fds; do not spin
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        readers[i].ReadAvailable(on_line_);
      }
    }
    if ((fds[2].revents & POLLIN) != 0) {
      char drain[64];
      while (::read(wake_read_, drain, sizeof(drain)) > 0) {
      }
    }
    KillIfDue();
  }
  reaper_.join();
  ProcessExit exit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    exit = exit_;
  }
  if (on_exit_) on_exit_(exit);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
  }
  ended_cv_.notify_all();
}

}  // namespace geotrain::worker
