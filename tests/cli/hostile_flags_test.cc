// Absurd flags of the real `geotrain` and `geotrain-worker` binaries: each must exit non-zero
// (not by a signal) with a message naming the flag or the file, before doing any work.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace {

struct Outcome {
  bool exited = false;  // false: killed by a signal (a crash)
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Outcome Run(const std::string& command) {
  Outcome outcome;
  FILE* pipe = ::popen((command + " 2>&1 </dev/null").c_str(), "r");
  if (pipe == nullptr) return outcome;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) outcome.output.append(buffer, n);
  const int status = ::pclose(pipe);
  outcome.exited = WIFEXITED(status);
  outcome.exit_code = outcome.exited ? WEXITSTATUS(status) : -1;
  return outcome;
}

void ExpectRefused(const std::string& command, const std::string& named) {
  const Outcome outcome = Run(command);
  EXPECT_TRUE(outcome.exited) << command << ": killed by a signal\n" << outcome.output;
  EXPECT_NE(outcome.exit_code, 0) << command << "\n" << outcome.output;
  EXPECT_NE(outcome.output.find(named), std::string::npos)
      << command << ": the message does not name " << named << "\n"
      << outcome.output;
}

const std::string kBinary = GEOTRAIN_BINARY;
const std::string kSource = GEOTRAIN_SOURCE_DIR;
// geotrain-worker is built into the same directory; cli_tests does not depend on it.
const std::string kWorker = kBinary.substr(0, kBinary.rfind('/') + 1) + "geotrain-worker";

TEST(HostileFlagsTest, GeotrainControlFlags) {
  ExpectRefused(kBinary + " jobs --coordinator 127.0.0.1:70000", "--coordinator");
  ExpectRefused(kBinary + " jobs --coordinator not-an-address", "--coordinator");
  ExpectRefused(kBinary + " jobs --coordinator 127.0.0.1:1 --timeout-seconds -5",
                "--timeout-seconds");
  ExpectRefused(kBinary + " jobs --coordinator 127.0.0.1:1 --timeout-seconds abc",
                "--timeout-seconds");
  ExpectRefused(kBinary + " steps job-1 --coordinator 127.0.0.1:1 --after notanumber", "--after");
  ExpectRefused(kBinary + " submit /nonexistent/job.yaml --coordinator 127.0.0.1:1",
                "/nonexistent/job.yaml");
}

TEST(HostileFlagsTest, GeotrainLocalCommandFlags) {
  const std::string eval = kBinary + " eval --model /nonexistent/m --tokenizer " + kSource +
                           "/examples/tokenizers/gpt2 --data /nonexistent/d";
  ExpectRefused(eval + " --seq-length -1", "--seq-length");
  ExpectRefused(eval + " --seq-length 8", "/nonexistent/");
  ExpectRefused(eval + " --seq-length many", "--seq-length");
  ExpectRefused(kBinary +
                    " model init --config /nonexistent/config.json --out /nonexistent/o "
                    "--seed 1",
                "/nonexistent/config.json");
  ExpectRefused(kBinary + " tokenize --tokenizer /nonexistent/tok", "/nonexistent/tok");
}

TEST(HostileFlagsTest, WorkerDaemonFlags) {
  if (::access(kWorker.c_str(), X_OK) != 0) GTEST_SKIP() << kWorker << " is not built";
  const std::string base = kWorker + " --advertise 127.0.0.1 --region r --work-dir /nonexistent/w";
  ExpectRefused(base + " --coordinator 127.0.0.1:70000", "--coordinator");
  ExpectRefused(base + " --coordinator 127.0.0.1", "--coordinator");
  const std::string with = base + " --coordinator 127.0.0.1:1";
  ExpectRefused(with + " --threads -4", "--threads");
  ExpectRefused(with + " --threads many", "--threads");
  ExpectRefused(with + " --port-min 70000 --port-max 70001", "--port-min");
  ExpectRefused(with + " --port-min 9000 --port-max 8000", "--port-min");
  ExpectRefused(with + " --stop-grace-seconds -1", "--stop-grace-seconds");
  ExpectRefused(with + " --stop-grace-seconds nan", "--stop-grace-seconds");
  ExpectRefused(with + " --metrics-listen 127.0.0.1:99999", "--metrics-listen");
}

}  // namespace
