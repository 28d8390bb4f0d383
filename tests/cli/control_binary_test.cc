// The real `geotrain` binary's control commands where no coordinator listens, and their usage
// errors: exit codes 1, 2 and 3 and the messages that go with them.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

struct ShellResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

ShellResult RunShell(const std::string& command) {
  ShellResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// A loopback address where nothing listens: a port the kernel gave us, closed again.
std::string ClosedLoopbackAddress() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
}

class ControlBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    job_file_ =
        ::testing::TempDir() + "control_binary_test_" + std::to_string(::getpid()) + ".yaml";
    std::ofstream(job_file_) << "name: t\n";
  }
  void TearDown() override { std::remove(job_file_.c_str()); }

  // The binary with GEOTRAIN_COORDINATOR unset, so that only the flags given count.
  std::string Geotrain(const std::string& args) const {
    return "env -u GEOTRAIN_COORDINATOR " + std::string(GEOTRAIN_BINARY) + " " + args;
  }

  std::string job_file_;
};

TEST_F(ControlBinaryTest, UnreachableCoordinatorExitsWithThreeNamingTheAddress) {
  const std::string address = ClosedLoopbackAddress();
  for (const std::string& args :
       {std::string("jobs"), std::string("status job-1"), "submit " + job_file_}) {
    const ShellResult result = RunShell(Geotrain(args + " --coordinator " + address));
    EXPECT_EQ(result.exit_code, 3) << args << ": " << result.output;
    EXPECT_NE(result.output.find("cannot reach the coordinator at " + address), std::string::npos)
        << args << ": " << result.output;
    EXPECT_NE(result.output.find("--coordinator HOST:PORT"), std::string::npos) << result.output;
    EXPECT_NE(result.output.find("GEOTRAIN_COORDINATOR"), std::string::npos) << result.output;
  }
}

TEST_F(ControlBinaryTest, TheEnvironmentVariableChoosesTheCoordinator) {
  const std::string address = ClosedLoopbackAddress();
  const ShellResult result =
      RunShell("GEOTRAIN_COORDINATOR=" + address + " " + std::string(GEOTRAIN_BINARY) + " workers");
  EXPECT_EQ(result.exit_code, 3) << result.output;
  EXPECT_NE(result.output.find(address + " (from GEOTRAIN_COORDINATOR)"), std::string::npos)
      << result.output;
}

TEST_F(ControlBinaryTest, SubmitOfAMissingFileExitsWithOneNamingTheFile) {
  const std::string missing = job_file_ + ".missing";
  const ShellResult result =
      RunShell(Geotrain("submit " + missing + " --coordinator " + ClosedLoopbackAddress()));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find(missing + ": cannot read the job file"), std::string::npos)
      << result.output;
}

TEST_F(ControlBinaryTest, BadFlagValuesAreUsageErrors) {
  EXPECT_EQ(RunShell(Geotrain("jobs -o xml")).exit_code, 2);
  EXPECT_EQ(RunShell(Geotrain("status job-1 --output yaml")).exit_code, 2);
  EXPECT_EQ(RunShell(Geotrain("jobs --coordinator no-port")).exit_code, 2);
  EXPECT_EQ(RunShell(Geotrain("links --timeout-seconds 0")).exit_code, 2);
  EXPECT_EQ(RunShell(Geotrain("status")).exit_code, 2);  // no job
  EXPECT_EQ(RunShell(Geotrain("logs --help")).exit_code, 0);
}

TEST_F(ControlBinaryTest, ABadEnvironmentVariableExitsWithOneNamingIt) {
  const ShellResult result =
      RunShell("GEOTRAIN_COORDINATOR=nonsense " + std::string(GEOTRAIN_BINARY) + " jobs");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("GEOTRAIN_COORDINATOR: 'nonsense' has no port"), std::string::npos)
      << result.output;
}

TEST_F(ControlBinaryTest, StepsOfAClosedPortExitsWithThree) {
  const std::string address = ClosedLoopbackAddress();
  const ShellResult result = RunShell(Geotrain("steps job-1 -o csv --coordinator " + address));
  EXPECT_EQ(result.exit_code, 3) << result.output;
  EXPECT_NE(result.output.find("cannot reach the coordinator at " + address), std::string::npos)
      << result.output;
}

TEST_F(ControlBinaryTest, BadStepsFlagsAreUsageErrors) {
  EXPECT_EQ(RunShell(Geotrain("steps job-1 -o xml")).exit_code, 2);
  EXPECT_EQ(RunShell(Geotrain("steps job-1 --after -1")).exit_code, 2);
  EXPECT_EQ(RunShell(Geotrain("steps job-1 --after many")).exit_code, 2);
  EXPECT_EQ(RunShell(Geotrain("steps -o csv")).exit_code, 2);  // no job
  EXPECT_EQ(RunShell(Geotrain("steps --help")).exit_code, 0);
}

}  // namespace
