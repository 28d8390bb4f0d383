#include "worker/worker_flags.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tests/testing/temp_dir.h"

namespace geotrain::worker {
namespace {

// Parses `args` as the daemon's command line; a CLI11 error becomes its message.
Status ParseDaemon(std::vector<std::string> args, DaemonFlags* flags) {
  CLI::App app;
  AddDaemonFlags(&app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector in reverse order
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return InvalidArgument(e.what());
  }
  return FinishDaemonFlags(flags);
}

std::vector<std::string> Required(const std::string& work_dir) {
  return {"--coordinator", "127.0.0.1:7070", "--advertise", "10.0.0.2",
          "--region",      "us-east1",       "--work-dir",  work_dir};
}

TEST(WorkerFlagsTest, DefaultsAndNormalisedPaths) {
  geotrain::testing::TempDir dir;
  DaemonFlags flags;
  const std::string work_dir = dir.File("work/nested");
  auto args = Required(work_dir);
  args.insert(args.end(), {"--data-root", dir.path() + "/./"});
  const Status status = ParseDaemon(args, &flags);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_TRUE(std::filesystem::is_directory(work_dir));  // created
  EXPECT_EQ(flags.work_dir, work_dir);
  EXPECT_EQ(std::filesystem::path(flags.data_root), std::filesystem::path(dir.path() + "/"));
  EXPECT_EQ(flags.threads, 0);
  EXPECT_EQ(flags.stop_grace_seconds, 5);
  EXPECT_EQ(flags.port_min, 0);
  EXPECT_EQ(flags.log_level, "info");
}

TEST(WorkerFlagsTest, DataRootDefaultsToTheCurrentDirectory) {
  geotrain::testing::TempDir dir;
  DaemonFlags flags;
  ASSERT_TRUE(ParseDaemon(Required(dir.path()), &flags).ok());
  EXPECT_EQ(std::filesystem::path(flags.data_root),
            std::filesystem::current_path().lexically_normal());
}

TEST(WorkerFlagsTest, AllowedPathsRepeatAndBecomeAbsolute) {
  geotrain::testing::TempDir dir;
  std::filesystem::create_directories(dir.File("a"));
  std::filesystem::create_directories(dir.File("b"));
  DaemonFlags flags;
  auto args = Required(dir.File("work"));
  args.insert(args.end(), {"--allow-path", dir.File("a/."), "--allow-path", dir.File("b")});
  const Status status = ParseDaemon(args, &flags);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(flags.allowed_paths.size(), 2u);
  EXPECT_EQ(std::filesystem::path(flags.allowed_paths[0]), std::filesystem::path(dir.File("a/")));
  EXPECT_EQ(flags.allowed_paths[1], dir.File("b"));
}

TEST(WorkerFlagsTest, BadValuesNameTheFlag) {
  geotrain::testing::TempDir dir;
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--coordinator", "nohost"}, "--coordinator: \"nohost\" is not HOST:PORT"},
      {{"--coordinator", "host:http"}, "--coordinator: \"host:http\" is not HOST:PORT"},
      {{"--coordinator", "host:70000"}, "--coordinator: port 70000 is outside 1..65535"},
      {{"--threads", "-1"}, "--threads: -1 is negative"},
      {{"--stop-grace-seconds", "-2"}, "--stop-grace-seconds"},
      {{"--port-min", "9000"}, "--port-min/--port-max: give both"},
      {{"--port-min", "9001", "--port-max", "9000"}, "--port-min: 9001 is above --port-max 9000"},
      {{"--port-min", "9000", "--port-max", "70000"}, "--port-max: 70000 is outside 0..65535"},
      {{"--log-level", "loud"}, "--log-level: \"loud\" is none of"},
      {{"--data-root", "/nonexistent/data"}, "--data-root: /nonexistent/data is not a directory"},
      {{"--allow-path", "/nonexistent/ckpt"}, "--allow-path: /nonexistent/ckpt is not a directory"},
      {{"--region", ""}, "--region: empty"},
      {{"--metrics-listen", "9401"}, "--metrics-listen: \"9401\" is not HOST:PORT"},
      {{"--metrics-listen", ":9401"}, "--metrics-listen: \":9401\" is not HOST:PORT"},
      {{"--metrics-listen", "0.0.0.0:"}, "--metrics-listen: \"0.0.0.0:\" is not HOST:PORT"},
      {{"--metrics-listen", "0.0.0.0:99999"}, "--metrics-listen: port 99999 is outside 0..65535"},
      {{"--probe-listen", "7100"}, "--probe-listen: \"7100\" is not HOST:PORT"},
      {{"--probe-listen", "0.0.0.0:x"}, "--probe-listen: \"0.0.0.0:x\" is not HOST:PORT"},
      {{"--probe-listen", "0.0.0.0:65536"}, "--probe-listen: port 65536 is outside 0..65535"},
  };
  for (const auto& [extra, message] : cases) {
    auto args = Required(dir.path());
    // Later values of a repeated flag win in CLI11; append overrides.
    for (size_t i = 0; i + 1 < extra.size(); i += 2) {
      bool replaced = false;
      for (size_t j = 0; j + 1 < args.size(); j += 2) {
        if (args[j] == extra[i]) {
          args[j + 1] = extra[i + 1];
          replaced = true;
        }
      }
      if (!replaced) args.insert(args.end(), {extra[i], extra[i + 1]});
    }
    DaemonFlags flags;
    const Status status = ParseDaemon(args, &flags);
    ASSERT_FALSE(status.ok()) << message;
    EXPECT_NE(status.message().find(message), std::string::npos)
        << "expected \"" << message << "\" in \"" << status.message() << "\"";
  }
}

TEST(WorkerFlagsTest, MetricsListenDefaultsToPort9401AndMayBeOffOrAnyPort) {
  geotrain::testing::TempDir dir;
  DaemonFlags defaults;
  ASSERT_TRUE(ParseDaemon(Required(dir.path()), &defaults).ok());
  EXPECT_EQ(defaults.metrics_listen, "0.0.0.0:9401");
  for (const std::string value : {"", "127.0.0.1:0", "[::1]:9500"}) {
    DaemonFlags flags;
    auto args = Required(dir.path());
    args.insert(args.end(), {"--metrics-listen", value});
    const Status status = ParseDaemon(args, &flags);
    EXPECT_TRUE(status.ok()) << value << ": " << status.ToString();
    EXPECT_EQ(flags.metrics_listen, value);
  }
}

TEST(WorkerFlagsTest, ProbeListenDefaultsToAnyFreePortAndMayBeOff) {
  geotrain::testing::TempDir dir;
  DaemonFlags defaults;
  ASSERT_TRUE(ParseDaemon(Required(dir.path()), &defaults).ok());
  EXPECT_EQ(defaults.probe_listen, "0.0.0.0:0");
  for (const std::string value : {"", "10.77.1.1:7100", "[::]:0"}) {
    DaemonFlags flags;
    auto args = Required(dir.path());
    args.insert(args.end(), {"--probe-listen", value});
    const Status status = ParseDaemon(args, &flags);
    EXPECT_TRUE(status.ok()) << value << ": " << status.ToString();
    EXPECT_EQ(flags.probe_listen, value);
  }
}

TEST(WorkerFlagsTest, MissingRequiredFlagsAreReported) {
  DaemonFlags flags;
  const Status status = ParseDaemon({"--coordinator", "127.0.0.1:7070"}, &flags);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("--advertise"), std::string::npos) << status.message();
}

TEST(WorkerFlagsTest, TaskFlags) {
  TaskCommandOptions options{"127.0.0.1:7070", "/w/tasks/t/assignment.pb", "10.0.0.2", 2};
  EXPECT_TRUE(CheckTaskFlags(options).ok());
  options.threads = -3;
  EXPECT_NE(CheckTaskFlags(options).message().find("--threads"), std::string::npos);
  options.threads = 0;
  options.coordinator = "7070";
  EXPECT_NE(CheckTaskFlags(options).message().find("--coordinator"), std::string::npos);
}

}  // namespace
}  // namespace geotrain::worker
