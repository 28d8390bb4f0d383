// ControlCluster: a coordinator, worker daemons and CLI calls as real processes on loopback, the
// way an operator runs them (docs/operations.md), for the control plane's end-to-end tests.
//
// Every process is a child of the test with PR_SET_PDEATHSIG, its stdout and stderr in files under
// the cluster's temporary directory; the destructor SIGKILLs and reaps whatever still runs (a
// worker's task processes die with their daemon), so a failing test leaves nothing behind.
// Workers run their tasks with the source tree as --data-root, so the example job's relative paths
// (examples/...) resolve, and the cluster's directory as an --allow-path, where the jobs' outputs
// go. With ClusterOptions::tls the cluster runs as docs/security.md deploys it (TLS, worker
// certificates, join and admin tokens; ClusterTls). Not thread-safe: the test's thread owns the
// cluster.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/step_line.h"
#include "tests/testing/files_and_ports.h"
#include "tests/testing/temp_dir.h"

extern char** environ;

namespace geotrain::control::testing {

using Args = std::vector<std::string>;
using Clock = std::chrono::steady_clock;

// `left` followed by `right`.
inline Args Concat(Args left, const Args& right) {
  left.insert(left.end(), right.begin(), right.end());
  return left;
}

using ::geotrain::testing::FreeLoopbackPort;
using ::geotrain::testing::ReadFile;

// Polls `done` every 50 ms; false when `timeout` passed first.
inline bool WaitUntil(const std::function<bool()>& done, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// The pids of every process whose parent is `parent` (from /proc/*/stat).
inline std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return children;
  while (dirent* entry = ::readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = ReadFile("/proc/" + name + "/stat");
    // "pid (comm) state ppid ...": comm may hold spaces, so read after the last ')'.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && state != "Z") children.push_back(std::stoi(name));
  }
  ::closedir(proc);
  return children;
}

// One child process of the test.
class Process {
 public:
  Process(const std::string& binary, const Args& args, const std::string& log_prefix,
          const std::string& cwd = "")
      : stdout_path_(log_prefix + ".stdout"), stderr_path_(log_prefix + ".stderr") {
    // Built before fork: the test has threads, so the child makes only async-signal-safe calls.
    std::vector<std::string> env = {"OMP_NUM_THREADS=1"};
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string var = *e;
      if (var.rfind("OMP_NUM_THREADS=", 0) != 0 && var.rfind("GEOTRAIN_COORDINATOR=", 0) != 0) {
        env.push_back(var);
      }
    }
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string program = binary;
    Args argv_strings = args;
    std::vector<char*> argv = {program.data()};
    for (std::string& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);

    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ != 0) return;
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(stdout_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 ||
        ::dup2(err, 2) < 0) {
      ::_exit(127);
    }
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(127);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ~Process() { Kill(SIGKILL); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool running() {
    Reap(false);
    return pid_ > 0 && !reaped_;
  }
  // Sends `signal` and reaps the process.
  void Kill(int signal) {
    if (pid_ <= 0 || reaped_) return;
    ::kill(pid_, signal);
    Reap(true);
  }
  // Waits for the exit; false when `timeout` passed first (the process keeps running).
  bool Wait(std::chrono::seconds timeout) {
    return WaitUntil([this] { return !running(); }, timeout);
  }
  // The exit code; -1 while running or when a signal ended it.
  int exit_code() {
    Reap(false);
    return reaped_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }
  std::string Stdout() const { return ReadFile(stdout_path_); }
  std::string Stderr() const { return ReadFile(stderr_path_); }

 private:
  void Reap(bool block) {
    if (pid_ > 0 && !reaped_ && ::waitpid(pid_, &status_, block ? 0 : WNOHANG) > 0) {
      reaped_ = true;
    }
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string stdout_path_;
  std::string stderr_path_;
};

struct CliResult {
  int exit_code = -1;  // -1: timed out or killed
  std::string out;
  std::string err;
};

// JSON numbers of int64 fields come as strings from protobuf's JSON printer.
inline int64_t JsonInt(const nlohmann::json& value) {
  if (value.is_string()) return std::stoll(value.get<std::string>());
  if (value.is_number()) return value.get<int64_t>();
  return 0;
}

// The coordinator's timing flags: short, so that a dead worker is noticed within seconds.
struct ClusterOptions {
  int heartbeat_interval_ms = 300;
  int heartbeat_timeout_ms = 3000;
  int stop_timeout_seconds = 10;
  // TLS, worker client certificates (mTLS), the join token and the admin token, as
  // docs/security.md deploys them (ClusterTls); false: plain gRPC on loopback.
  bool tls = false;
};

// The extra flags of each kind of process in a TLS cluster.
struct ClusterTlsFlags {
  Args coordinator;
  Args cli;
  std::string certs;  // the deployment's directory; empty without TLS

  // Worker NAME's flags: its own certificate (`geotrain certs add-worker`, issued here), the CA
  // and the join token. Empty without TLS, or when the certificate cannot be made (the test
  // fails, naming the error).
  Args Worker(const std::string& name, const std::string& log_prefix) const {
    if (certs.empty()) return {};
    Process add(GEOTRAIN_CLI_BINARY, Args{"certs", "add-worker", "--dir", certs, "--name", name},
                log_prefix);
    const bool ended = add.Wait(std::chrono::seconds(60));
    EXPECT_TRUE(ended && add.exit_code() == 0) << "geotrain certs add-worker: " << add.Stderr();
    if (!ended || add.exit_code() != 0) return {};
    return {"--tls-ca",          certs + "/ca.pem",
            "--tls-cert",        certs + "/worker-" + name + ".pem",
            "--tls-key",         certs + "/worker-" + name + ".key",
            "--join-token-file", certs + "/join.token"};
  }
};

// The one place that sets a cluster's security up: `geotrain certs init` into DIR/certs, and the
// flags that hand its files to the coordinator, the workers (Worker) and the CLI. Empty flags when
// the certificates cannot be made (the test fails, naming the error).
inline ClusterTlsFlags ClusterTls(const std::string& dir) {
  const std::string certs = dir + "/certs";
  {
    Process init(GEOTRAIN_CLI_BINARY, Args{"certs", "init", "--dir", certs}, dir + "/certs-init");
    const bool ended = init.Wait(std::chrono::seconds(60));
    EXPECT_TRUE(ended && init.exit_code() == 0) << "geotrain certs init: " << init.Stderr();
    if (!ended || init.exit_code() != 0) return {};
  }
  ClusterTlsFlags flags;
  flags.coordinator = {"--tls-cert",         certs + "/coordinator.pem",
                       "--tls-key",          certs + "/coordinator.key",
                       "--tls-ca",           certs + "/ca.pem",
                       "--join-token-file",  certs + "/join.token",
                       "--admin-token-file", certs + "/admin.token"};
  flags.certs = certs;
  flags.cli = {"--tls-ca", certs + "/ca.pem", "--admin-token-file", certs + "/admin.token"};
  return flags;
}

class ControlCluster {
 public:
  explicit ControlCluster(ClusterOptions options = ClusterOptions())
      : options_(options), port_(FreeLoopbackPort()) {
    if (options_.tls) tls_ = ClusterTls(dir());
  }
  ~ControlCluster() {
    // Workers first: a coordinator that outlives them only marks them dead.
    workers_.clear();
    coordinator_.reset();
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& dir() const { return dir_.path(); }

  // Starts (or restarts) the coordinator over the same state directory and waits until it serves.
  void StartCoordinator() {
    const std::string log = dir() + "/coordinator-" + std::to_string(++coordinator_starts_);
    coordinator_ = std::make_unique<Process>(
        GEOTRAIN_COORDINATOR_BINARY,
        Concat(
            Args{"--listen", address(), "--state-dir", dir() + "/state", "--heartbeat-interval-ms",
                 std::to_string(options_.heartbeat_interval_ms), "--heartbeat-timeout-ms",
                 std::to_string(options_.heartbeat_timeout_ms), "--stop-timeout-seconds",
                 std::to_string(options_.stop_timeout_seconds), "--metrics-listen", "127.0.0.1:0"},
            tls_.coordinator),
        log);
    const bool serving = WaitUntil(
        [&] {
          return !coordinator_->running() ||
                 coordinator_->Stderr().find("listening on") != std::string::npos;
        },
        std::chrono::seconds(30));
    ASSERT_TRUE(serving && coordinator_->running()) << "the coordinator did not start:\n"
                                                    << coordinator_->Stderr();
  }
  Process& coordinator() { return *coordinator_; }

  // Starts a worker daemon; `index` names its work dir and logs. Job paths may name the source
  // tree (its --data-root), the cluster's directory and every AllowPath directory.
  Process& StartWorker(const std::string& region = "local") {
    const int index = static_cast<int>(workers_.size());
    const std::string name = "worker-" + std::to_string(index);
    Args args{"--coordinator", address(),    "--advertise",      "127.0.0.1",   "--region",
              region,          "--work-dir", dir() + "/" + name, "--data-root", GEOTRAIN_SOURCE_DIR,
              "--allow-path",  dir(),        "--threads",        "1",           "--metrics-listen",
              "127.0.0.1:0"};
    for (const std::string& path : allowed_paths_) args.insert(args.end(), {"--allow-path", path});
    workers_.push_back(std::make_unique<Process>(
        GEOTRAIN_WORKER_BINARY, Concat(args, tls_.Worker(name, dir() + "/certs-" + name)),
        dir() + "/" + name));
    return *workers_.back();
  }
  // Another directory the workers started from now on let jobs name (e.g. a small disk).
  void AllowPath(const std::string& path) { allowed_paths_.push_back(path); }
  Process& worker(int index) { return *workers_[index]; }
  int num_workers() const { return static_cast<int>(workers_.size()); }

  // Runs `geotrain ARGS --coordinator ADDRESS` to its end (at most `timeout`).
  CliResult Cli(Args args, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    args.push_back("--coordinator");
    args.push_back(address());
    args = Concat(std::move(args), tls_.cli);
    const std::string log = dir() + "/cli-" + std::to_string(++cli_calls_);
    Process cli(GEOTRAIN_CLI_BINARY, args, log);
    CliResult result;
    if (cli.Wait(timeout)) result.exit_code = cli.exit_code();
    result.out = cli.Stdout();
    result.err = cli.Stderr();
    return result;
  }
  // Starts a CLI call that runs in the background (e.g. `submit --wait`).
  std::unique_ptr<Process> CliInBackground(Args args) {
    args.push_back("--coordinator");
    args.push_back(address());
    args = Concat(std::move(args), tls_.cli);
    return std::make_unique<Process>(GEOTRAIN_CLI_BINARY, args,
                                     dir() + "/cli-" + std::to_string(++cli_calls_));
  }

  // `geotrain ARGS -o json` parsed; an empty object when the call failed.
  nlohmann::json CliJson(Args args) {
    args.insert(args.end(), {"-o", "json"});
    const CliResult result = Cli(args);
    if (result.exit_code != 0) return nlohmann::json::object();
    return nlohmann::json::parse(result.out, nullptr, /*allow_exceptions=*/false);
  }
  nlohmann::json Job(const std::string& id) { return CliJson({"status", id}); }

  // Waits until `count` workers are registered and idle.
  bool WaitForIdleWorkers(int count, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    return WaitUntil(
        [&] {
          const nlohmann::json workers = CliJson({"workers"});
          int idle = 0;
          for (const auto& w : workers.value("workers", nlohmann::json::array())) {
            idle += w.value("state", "") == "WORKER_STATE_IDLE";
          }
          return idle >= count;
        },
        timeout);
  }

  // Waits until the job's state is one of `states` (protobuf enum names).
  bool WaitForJobState(const std::string& id, const std::vector<std::string>& states,
                       std::chrono::seconds timeout) {
    return WaitUntil(
        [&] {
          const std::string state = Job(id).value("state", "");
          for (const std::string& s : states) {
            if (state == s) return true;
          }
          return false;
        },
        timeout);
  }

  // WriteTinyJob with keys of its `training:` section replaced, e.g. {"checkpoint_every", "5"}
  // (each key must be in examples/gpt2-tiny-2x2.yaml).
  std::string WriteTinyJob(int steps,
                           const std::vector<std::pair<std::string, std::string>>& training) {
    const std::string path = WriteTinyJob(steps);
    std::string yaml = ReadFile(path);
    for (const auto& [key, value] : training) {
      const size_t at = yaml.find("\n  " + key + ": ");
      EXPECT_NE(at, std::string::npos) << "examples/gpt2-tiny-2x2.yaml has no training." << key;
      if (at == std::string::npos) continue;
      const size_t end = yaml.find('\n', at + 1);
      yaml.replace(at, end - at, "\n  " + key + ": " + value);
    }
    std::ofstream(path) << yaml;
    return path;
  }

  // The index of the worker whose WORK_DIR/worker-id holds `worker_id`; -1 when none does.
  int WorkerIndexOf(const std::string& worker_id) const {
    for (int i = 0; i < num_workers(); ++i) {
      std::string text = ReadFile(dir() + "/worker-" + std::to_string(i) + "/worker-id");
      text.erase(std::remove_if(text.begin(), text.end(), ::isspace), text.end());
      if (!text.empty() && text == worker_id) return i;
    }
    return -1;
  }

  // The task processes worker `index` runs now (its children that are not zombies).
  std::vector<pid_t> TaskChildren(int index) { return ChildrenOf(worker(index).pid()); }

  // The step lines in the task logs of worker `index` (WORK_DIR/tasks/*/task.log), every
  // generation's, in no particular order across tasks, read as the worker reads them
  // (runtime/step_line.h); log lines and lines that do not read are left out.
  std::vector<runtime::StepLine> StepLines(int index) const {
    std::vector<runtime::StepLine> lines;
    const std::string tasks = dir() + "/worker-" + std::to_string(index) + "/tasks";
    DIR* listing = ::opendir(tasks.c_str());
    if (listing == nullptr) return lines;
    while (dirent* entry = ::readdir(listing)) {
      if (entry->d_name[0] == '.') continue;
      std::istringstream log(ReadFile(tasks + "/" + entry->d_name + "/task.log"));
      for (std::string text; std::getline(log, text);) {
        StatusOr<runtime::StepLine> line = runtime::ParseStepLine(text);
        if (line.ok()) lines.push_back(std::move(*line));
      }
    }
    ::closedir(listing);
    return lines;
  }

  // Every process's stderr, for failure messages.
  std::string Logs() {
    std::string logs = "--- coordinator:\n" + (coordinator_ ? coordinator_->Stderr() : "");
    for (size_t i = 0; i < workers_.size(); ++i) {
      logs += "--- worker " + std::to_string(i) + ":\n" + workers_[i]->Stderr();
    }
    return logs;
  }

  // Writes examples/gpt2-tiny-2x2.yaml with its runs/ paths moved into this cluster's directory and
  // `steps` training steps; returns the file's path.
  std::string WriteTinyJob(int steps) {
    std::string yaml = ReadFile(std::string(GEOTRAIN_SOURCE_DIR) + "/examples/gpt2-tiny-2x2.yaml");
    ReplaceAll(&yaml, "runs/gpt2-tiny-2x2", dir() + "/job");
    const size_t at = yaml.find("\n  steps: ");
    EXPECT_NE(at, std::string::npos) << "examples/gpt2-tiny-2x2.yaml has no training.steps";
    if (at != std::string::npos) {
      const size_t end = yaml.find('\n', at + 1);
      yaml.replace(at, end - at, "\n  steps: " + std::to_string(steps));
    }
    const std::string path = dir() + "/job.yaml";
    std::ofstream(path) << yaml;
    return path;
  }

 private:
  static void ReplaceAll(std::string* text, const std::string& from, const std::string& to) {
    for (size_t at = text->find(from); at != std::string::npos;
         at = text->find(from, at + to.size())) {
      text->replace(at, from.size(), to);
    }
  }

  ClusterOptions options_;
  ::geotrain::testing::TempDir dir_;
  ClusterTlsFlags tls_;  // empty without TLS
  int port_;
  int coordinator_starts_ = 0;
  int cli_calls_ = 0;
  std::unique_ptr<Process> coordinator_;
  std::vector<std::unique_ptr<Process>> workers_;
  std::vector<std::string> allowed_paths_;
};

}  // namespace geotrain::control::testing
