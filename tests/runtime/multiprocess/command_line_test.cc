// geotrain-run's command line as a process sees it: a bad flag exits 2 before any rendezvous with
// a message naming the flag (or the job-spec key it sets) and the value, and --help exits 0.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "tests/runtime/multiprocess/rank_processes.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::runtime::testing {
namespace {

struct BadFlag {
  Args flags;
  std::string message;  // a part of the message
};

TEST(GeotrainRunCommandLineTest, BadFlagsExitWithTwoAndNameTheFlag) {
  const geotrain::testing::TempDir dir;
  const std::vector<BadFlag> cases = {
      {{"--forward-compress-method", "delta", "--forward-bits", "9"}, "bits: 9 is outside 2..8"},
      {{"--forward-compress-method", "delta-lowbits", "--forward-bits-act", "3"},
       "3 must be 2, 4 or 8"},
      {{"--forward-compress-method", "zip"}, "--forward-compress-method"},
      {{"--dp-mode", "ring"}, "--dp-mode"},
      {{"--batch-size", "3"}, "--batch-size: 3"},
      {{"--rank", "4"}, "--rank: 4"},
      {{"--world-size", "3"}, "--world-size: 3"},
      {{"--lr", "fast"}, "--lr"},
      {{"--cuda-id", "-1"}, "--cuda-id: -1 is negative"},
      {{"--num-layers", "2"}, "--num-layers"},
      {{"--dist-url", "http://127.0.0.1:1"}, "--dist-url"},
      {{"--emulate-link-mbit", "0"}, "--emulate-link-mbit: \"0\" is not a positive number"},
      {{"--emulate-link-mbit", "fast"}, "--emulate-link-mbit: \"fast\""},
  };
  for (const BadFlag& bad : cases) {
    Args args = JobArgs("file://" + dir.File("rdzv"), {}).front();
    args.insert(args.end(), {"--model-name", dir.File("model"), "--task-name", dir.File("train"),
                             "--micro-batch-size", "2"});
    args.insert(args.end(), bad.flags.begin(), bad.flags.end());
    SCOPED_TRACE(bad.flags.at(bad.flags.size() - 2) + " " + bad.flags.back());
    RankProcesses run(dir.File("bad"), {args});
    // A flag that slipped through would wait for the other ranks: stop it early.
    ASSERT_TRUE(run.WaitAll(std::chrono::seconds(30))) << run.Summary();
    EXPECT_EQ(run.exit_code(0), 2) << run.Summary();
    EXPECT_NE(run.Stderr(0).find(bad.message), std::string::npos) << run.Stderr(0);
  }
}

TEST(GeotrainRunCommandLineTest, ACudaDeviceWhereThereIsNoneFailsBeforeTheRendezvous) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "this machine has CUDA";
  const geotrain::testing::TempDir dir;
  // Rank 0 of four: were it to join the rendezvous, it would wait for the other three.
  Args args = JobArgs("file://" + dir.File("rdzv"), {}).front();
  args.insert(args.end(), {"--model-name", dir.File("model"), "--task-name", dir.File("train"),
                           "--cuda-id", "0"});
  RankProcesses run(dir.File("cuda"), {args});
  ASSERT_TRUE(run.WaitAll(std::chrono::seconds(30))) << run.Summary();
  EXPECT_EQ(run.exit_code(0), 1) << run.Summary();
  EXPECT_NE(run.Stderr(0).find("model.device: cuda:0 asked for, but CUDA is not available"),
            std::string::npos)
      << run.Stderr(0);
}

TEST(GeotrainRunCommandLineTest, HelpExitsWithZero) {
  const geotrain::testing::TempDir dir;
  RankProcesses run(dir.File("help"), {{"--help"}});
  ASSERT_TRUE(run.WaitAll(std::chrono::seconds(30)));
  EXPECT_EQ(run.exit_code(0), 0);
  EXPECT_NE(run.Stdout(0).find("--forward-compress-method"), std::string::npos) << run.Stdout(0);
}

}  // namespace
}  // namespace geotrain::runtime::testing
