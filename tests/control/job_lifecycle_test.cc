// A 2x2 job from submission to success through the three real programs, its progress as scripts
// read it, cancellation, and refusal of invalid job files.
#include <gtest/gtest.h>

#include "tests/control/control_cluster.h"

namespace geotrain::control::testing {
namespace {

using std::chrono::seconds;

TEST(JobLifecycle, InvalidJobFilesAreRefusedWithEveryFieldNamed) {
  ControlCluster cluster;
  cluster.StartCoordinator();
  const std::string path = cluster.dir() + "/bad.yaml";
  std::ofstream(path) << "name: bad\n"
                         "model: {dir: examples/models/gpt2-tiny}\n"
                         "pipeline: {stages: 0}\n"
                         "compression:\n  forward: {codec: fixpoint, bitz: 4}\n";
  const CliResult result = cluster.Cli({"submit", path});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("pipeline.stages"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("compression.forward.bitz"), std::string::npos) << result.err;
  EXPECT_TRUE(cluster.CliJson({"jobs", "--all"}).value("jobs", nlohmann::json::array()).empty())
      << "a refused job was stored";
}

TEST(JobLifecycle, TwoByTwoJobSucceedsWithFallingLossAndCancelStopsEveryChild) {
  ControlCluster cluster;
  cluster.StartCoordinator();
  for (int i = 0; i < 4; ++i) cluster.StartWorker(i < 2 ? "region-a" : "region-b");
  ASSERT_TRUE(cluster.WaitForIdleWorkers(4)) << cluster.Logs();

  const std::string job_file = cluster.WriteTinyJob(/*steps=*/40);
  const CliResult submitted = cluster.Cli({"submit", job_file, "--wait"}, seconds(400));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err << cluster.Logs();

  const nlohmann::json jobs = cluster.CliJson({"jobs", "--all"});
  ASSERT_EQ(jobs.value("jobs", nlohmann::json::array()).size(), 1u) << jobs.dump();
  const std::string id = jobs["jobs"][0].value("id", "");
  const nlohmann::json job = cluster.Job(id);
  EXPECT_EQ(job.value("state", ""), "JOB_STATE_SUCCEEDED") << job.dump();
  const nlohmann::json& progress = job["progress"];
  EXPECT_EQ(JsonInt(progress["step"]), 40) << job.dump();
  EXPECT_EQ(JsonInt(progress["total_steps"]), 40) << job.dump();
  EXPECT_LT(progress.value("loss", 0.0), progress.value("first_loss", 0.0)) << job.dump();
  EXPECT_GT(progress.value("eval_loss", 0.0), 0.0) << job.dump();
  EXPECT_GT(JsonInt(progress["raw_bytes"]), JsonInt(progress["wire_bytes"])) << job.dump();
  EXPECT_EQ(job.value("placements", nlohmann::json::array()).size(), 4u) << job.dump();

  // The workers are idle again and ready for the next job, which is cancelled while it runs.
  ASSERT_TRUE(cluster.WaitForIdleWorkers(4)) << cluster.Logs();
  const std::string long_job = cluster.WriteTinyJob(/*steps=*/100000);
  const CliResult second = cluster.Cli({"submit", long_job});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const nlohmann::json all = cluster.CliJson({"jobs"});
  ASSERT_EQ(all.value("jobs", nlohmann::json::array()).size(), 1u) << all.dump();
  const std::string running_id = all["jobs"][0].value("id", "");
  ASSERT_TRUE(WaitUntil([&] { return JsonInt(cluster.Job(running_id)["progress"]["step"]) >= 2; },
                        seconds(180)))
      << cluster.Job(running_id).dump() << cluster.Logs();

  const CliResult cancelled = cluster.Cli({"cancel", running_id});
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.err;
  const auto cancel_time = Clock::now();
  const bool children_gone = WaitUntil(
      [&] {
        for (int i = 0; i < cluster.num_workers(); ++i) {
          if (!ChildrenOf(cluster.worker(i).pid()).empty()) return false;
        }
        return true;
      },
      seconds(15));
  EXPECT_TRUE(children_gone) << "task processes still run after cancel\n" << cluster.Logs();
  EXPECT_LT(Clock::now() - cancel_time, seconds(15));
  EXPECT_EQ(cluster.Job(running_id).value("state", ""), "JOB_STATE_CANCELLED");
  // Every daemon survived and is ready for more work.
  for (int i = 0; i < cluster.num_workers(); ++i) EXPECT_TRUE(cluster.worker(i).running());
  EXPECT_TRUE(cluster.WaitForIdleWorkers(4)) << cluster.Logs();
}

}  // namespace
}  // namespace geotrain::control::testing
