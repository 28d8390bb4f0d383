// RankProcesses: the ranks of one geotrain-run job as child processes of a test, over loopback
// Gloo; plus the flags of the tiny job these tests train (TinyJob in
// tests/runtime/runtime_test_job.h) and the reading of the last stage's JSON step lines.
//
// Each rank runs the real binary (GEOTRAIN_RUN_BINARY) with its own argument list; its stdout and
// stderr go to files, which a test reads while or after the job runs. Children get
// OMP_NUM_THREADS=1 (four ranks share a small machine, and two runs of one job must give the
// same losses bit for bit whatever the test's environment says) and die with the test
// (PR_SET_PDEATHSIG); the destructor SIGKILLs and reaps any child still running, so a failing
// test never leaves a process behind.
//
// Not thread-safe: the test's thread owns a RankProcesses.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/stage_assignment.h"
#include "tests/testing/files_and_ports.h"

extern char** environ;

namespace geotrain::runtime::testing {

// The job every test runs: 2 pipeline stages x 2 data-parallel replicas.
constexpr int kStages = 2;
constexpr int kReplicas = 2;
constexpr int kWorld = kStages * kReplicas;  // rank = replica * kStages + stage

using Args = std::vector<std::string>;

using ::geotrain::testing::FreeLoopbackPort;
using ::geotrain::testing::ReadFile;

class RankProcesses {
 public:
  // Starts one process per entry of `rank_args` (argv without the program); rank r's output goes
  // to `log_prefix`.rank-r.stdout / .stderr.
  RankProcesses(const std::string& log_prefix, const std::vector<Args>& rank_args) {
    for (size_t rank = 0; rank < rank_args.size(); ++rank) {
      Child child;
      child.stdout_path = log_prefix + ".rank-" + std::to_string(rank) + ".stdout";
      child.stderr_path = log_prefix + ".rank-" + std::to_string(rank) + ".stderr";
      child.pid = Spawn(rank_args[rank], child.stdout_path, child.stderr_path);
      EXPECT_GT(child.pid, 0) << "cannot start rank " << rank;
      children_.push_back(child);
    }
  }
  ~RankProcesses() { KillAll(); }
  RankProcesses(const RankProcesses&) = delete;
  RankProcesses& operator=(const RankProcesses&) = delete;

  // Polls until `done` holds, reaping children meanwhile; false when `timeout` passed first.
  bool WaitFor(const std::function<bool()>& done, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      Reap();
      if (done()) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // Waits until every child exited; false (they keep running) when `timeout` passed first.
  bool WaitAll(std::chrono::seconds timeout) {
    return WaitFor([this] { return running_count() == 0; }, timeout);
  }

  void Signal(int rank, int signal) { ::kill(children_[rank].pid, signal); }
  // SIGKILLs and reaps every child still running.
  void KillAll() {
    for (Child& child : children_) {
      if (child.pid > 0 && !child.reaped) {
        ::kill(child.pid, SIGKILL);
        ::waitpid(child.pid, &child.status, 0);
        child.reaped = true;
      }
    }
  }

  int running_count() const {
    int running = 0;
    for (const Child& child : children_) running += child.pid > 0 && !child.reaped;
    return running;
  }
  bool running(int rank) const { return children_[rank].pid > 0 && !children_[rank].reaped; }
  // The exit code, or -1 while running or when a signal ended the process.
  int exit_code(int rank) const {
    const Child& child = children_[rank];
    return child.reaped && WIFEXITED(child.status) ? WEXITSTATUS(child.status) : -1;
  }
  std::string Stdout(int rank) const { return ReadFile(children_[rank].stdout_path); }
  std::string Stderr(int rank) const { return ReadFile(children_[rank].stderr_path); }

  // Every rank's state and stderr, for failure messages.
  std::string Summary() const {
    std::string summary;
    for (size_t rank = 0; rank < children_.size(); ++rank) {
      const Child& child = children_[rank];
      std::string state = "running";
      if (child.reaped && WIFEXITED(child.status)) {
        state = "exit " + std::to_string(WEXITSTATUS(child.status));
      } else if (child.reaped) {
        state = "signal " + std::to_string(WTERMSIG(child.status));
      }
      summary += "--- rank " + std::to_string(rank) + " (" + state + "), stderr:\n" +
                 Stderr(static_cast<int>(rank));
    }
    return summary;
  }

 private:
  struct Child {
    pid_t pid = -1;
    bool reaped = false;
    int status = 0;
    std::string stdout_path;
    std::string stderr_path;
  };

  static pid_t Spawn(const Args& args, const std::string& stdout_path,
                     const std::string& stderr_path) {
    // Everything the child needs is built before fork: the test process has threads, so the child
    // may only make async-signal-safe calls until execve.
    std::vector<std::string> env = {"OMP_NUM_THREADS=1"};
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string(*e).rfind("OMP_NUM_THREADS=", 0) != 0) env.emplace_back(*e);
    }
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string binary = GEOTRAIN_RUN_BINARY;
    Args argv_strings = args;
    std::vector<char*> argv = {binary.data()};
    for (std::string& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);

    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the test died before prctl
    const int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(127);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }

  void Reap() {
    for (Child& child : children_) {
      if (child.pid > 0 && !child.reaped && ::waitpid(child.pid, &child.status, WNOHANG) > 0) {
        child.reaped = true;
      }
    }
  }

  std::vector<Child> children_;
};

// The flags of the tiny job `job` describes (TinyJob's model, data and tokenizer): 6 steps of
// 2 micro-batches of 2 samples of 16 tokens per replica. Flags appended later override these
// (geotrain-run keeps the last value of a flag given twice).
inline Args TinyJobFlags(const StageAssignment& job) {
  return {"--model-name",
          job.model_dir,
          "--tokenizer-name",
          job.data.tokenizer_dir,
          "--task-name",
          job.data.train.at(0).path,
          "--seq-length",
          "16",
          "--micro-batch-size",
          "2",
          "--batch-size",
          "4",
          "--total-steps",
          "6",
          "--lr",
          "1e-3"};
}

// A job YAML for --config: the required keys and the layout of `job`, then `more` (YAML lines).
// For the settings the seed flags have no flag for.
inline std::string TinyJobYaml(const StageAssignment& job, const std::string& more) {
  return "name: tiny\nmodel: {dir: \"" + job.model_dir + "\"}\ndata: {train: [\"" +
         job.data.train.at(0).path + "\"]}\npipeline: {stages: " + std::to_string(kStages) +
         "}\ndata_parallel: {replicas: " + std::to_string(kReplicas) + "}\n" + more;
}

// Every rank's arguments: the layout, the rank, the rendezvous, then `flags`.
inline std::vector<Args> JobArgs(const std::string& dist_url, const Args& flags) {
  std::vector<Args> ranks;
  for (int rank = 0; rank < kWorld; ++rank) {
    Args args = {"--world-size",
                 std::to_string(kWorld),
                 "--pipeline-group-size",
                 std::to_string(kStages),
                 "--data-group-size",
                 std::to_string(kReplicas),
                 "--rank",
                 std::to_string(rank),
                 "--dist-url",
                 dist_url};
    args.insert(args.end(), flags.begin(), flags.end());
    ranks.push_back(std::move(args));
  }
  return ranks;
}

// The JSON lines of a last-stage rank's stdout, each checked to be a step line: consecutive
// steps, a finite loss, raw and wire bytes of every kind.
inline std::vector<nlohmann::json> StepLines(const std::string& stdout_text, int rank) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(stdout_text);
  for (std::string text; std::getline(in, text);) {
    const nlohmann::json line = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!line.is_object()) {
      ADD_FAILURE() << "rank " << rank << " printed a line that is not a JSON object: " << text;
      continue;
    }
    const bool finite_loss = line.value("loss", nlohmann::json()).is_number() &&
                             std::isfinite(line["loss"].get<double>());
    EXPECT_TRUE(finite_loss) << "rank " << rank << ": " << text;
    EXPECT_EQ(line.value("rank", -1), rank) << text;
    if (!lines.empty()) {
      EXPECT_EQ(line.value("step", -1), lines.back().value("step", -1) + 1) << text;
    }
    for (const char* bytes : {"raw_bytes", "wire_bytes"}) {
      for (const char* kind : {"forward", "backward", "dp", "embedding"}) {
        EXPECT_TRUE(line.contains(bytes) && line[bytes].value(kind, nlohmann::json()).is_number())
            << "rank " << rank << " has no " << bytes << "." << kind << ": " << text;
      }
    }
    lines.push_back(line);
  }
  return lines;
}

// Step lines of each last-stage rank, by rank.
using JobSteps = std::map<int, std::vector<nlohmann::json>>;

// Runs every rank of a job to its end (at most `timeout`); expects each to exit 0 and to print a
// step line per step (the first stage's with forward bytes, no loss). Returns the last stage's.
inline JobSteps RunJobToEnd(const std::string& log_prefix, const std::vector<Args>& rank_args,
                            std::chrono::seconds timeout = std::chrono::seconds(120)) {
  RankProcesses job(log_prefix, rank_args);
  if (!job.WaitAll(timeout)) {
    ADD_FAILURE() << "the job still ran after " << timeout.count() << " s\n" << job.Summary();
    return {};
  }
  std::string failed;
  for (int rank = 0; rank < kWorld; ++rank) {
    if (job.exit_code(rank) != 0) failed += " " + std::to_string(rank);
  }
  EXPECT_EQ(failed, "") << "ranks that did not exit 0\n" << job.Summary();
  JobSteps steps;
  for (int rank = 0; rank < kWorld; ++rank) {
    if (rank % kStages == kStages - 1) {
      steps[rank] = StepLines(job.Stdout(rank), rank);
      continue;
    }
    std::istringstream in(job.Stdout(rank));
    int64_t previous = -1;  // consecutive steps (a resumed run starts later)
    for (std::string text; std::getline(in, text);) {
      const nlohmann::json line = nlohmann::json::parse(text, nullptr, false);
      if (!line.is_object()) {
        ADD_FAILURE() << "rank " << rank << " printed a line that is not a JSON object: " << text;
        continue;
      }
      const int64_t step = line.value("step", int64_t{-1});
      EXPECT_TRUE((previous < 0 || step == previous + 1) && !line.contains("loss") &&
                  line.at("wire_bytes").at("forward").is_number())
          << "rank " << rank << ": " << text;
      previous = step;
    }
  }
  return steps;
}

// Field `kind` ("forward", ...) of raw_bytes or wire_bytes of a step line.
inline double Bytes(const nlohmann::json& line, const char* which, const char* kind) {
  return line.at(which).at(kind).get<double>();
}

}  // namespace geotrain::runtime::testing
