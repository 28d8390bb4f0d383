// The job survives the loss of a worker (re-placed on a spare, resumed from the newest complete
// checkpoint) and the loss of the coordinator (restarted over its state directory, the running
// job and the workers re-attached).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/control/control_cluster.h"

namespace geotrain::control::testing {
namespace {

using std::chrono::seconds;

// checkpoint_every of examples/gpt2-tiny-2x2.yaml.
constexpr int64_t kCheckpointEvery = 20;

std::string SubmitAndGetId(ControlCluster& cluster, const std::string& job_file) {
  const CliResult submitted = cluster.Cli({"submit", job_file, "-o", "json"});
  EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
  const nlohmann::json job = nlohmann::json::parse(submitted.out, nullptr, false);
  return job.is_object() ? job.value("id", "") : "";
}

int64_t Step(ControlCluster& cluster, const std::string& id) {
  const nlohmann::json job = cluster.Job(id);
  return job.contains("progress") ? JsonInt(job["progress"]["step"]) : 0;
}

TEST(FailureRecovery, KilledWorkerIsReplacedBySpareAndJobCompletes) {
  ControlCluster cluster;
  cluster.StartCoordinator();
  for (int i = 0; i < 5; ++i) cluster.StartWorker();  // four ranks and a spare
  ASSERT_TRUE(cluster.WaitForIdleWorkers(5)) << cluster.Logs();
  const std::string id = SubmitAndGetId(cluster, cluster.WriteTinyJob(/*steps=*/60));
  ASSERT_FALSE(id.empty());

  // Past the first checkpoint, kill one of the job's workers as a lost VM would go.
  ASSERT_TRUE(WaitUntil([&] { return Step(cluster, id) >= kCheckpointEvery + 5; }, seconds(300)))
      << cluster.Job(id).dump() << cluster.Logs();
  const nlohmann::json before = cluster.Job(id);
  ASSERT_EQ(JsonInt(before["progress"]["checkpoint_step"]), kCheckpointEvery) << before.dump();
  const std::string victim = before["placements"][1].value("worker_id", "");
  // A worker keeps its id in WORK_DIR/worker-id.
  int victim_index = -1;
  for (int i = 0; i < cluster.num_workers(); ++i) {
    std::string text = ReadFile(cluster.dir() + "/worker-" + std::to_string(i) + "/worker-id");
    text.erase(std::remove_if(text.begin(), text.end(), ::isspace), text.end());
    if (text == victim) victim_index = i;
  }
  ASSERT_GE(victim_index, 0) << "no work dir holds the id of worker " << victim;
  cluster.worker(victim_index).Kill(SIGKILL);

  ASSERT_TRUE(
      cluster.WaitForJobState(id, {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"}, seconds(420)))
      << cluster.Job(id).dump() << cluster.Logs();
  const nlohmann::json job = cluster.Job(id);
  EXPECT_EQ(job.value("state", ""), "JOB_STATE_SUCCEEDED") << job.dump() << cluster.Logs();
  EXPECT_EQ(JsonInt(job["progress"]["step"]), 60);
  EXPECT_EQ(job.value("restarts", 0), 1) << job.dump();
  EXPECT_GE(JsonInt(job["generation"]), 2) << job.dump();
  // At most the steps since the last checkpoint were lost.
  EXPECT_LE(JsonInt(job.value("steps_lost", nlohmann::json(0))), kCheckpointEvery) << job.dump();
  std::set<std::string> placed;
  for (const auto& p : job["placements"]) placed.insert(p.value("worker_id", ""));
  EXPECT_EQ(placed.size(), 4u);
  EXPECT_EQ(placed.count(victim), 0u) << "the dead worker is still placed: " << job.dump();
  EXPECT_LT(job["progress"].value("loss", 0.0), job["progress"].value("first_loss", 0.0));
}

TEST(FailureRecovery, RestartedCoordinatorReattachesTheRunningJob) {
  ControlCluster cluster;
  cluster.StartCoordinator();
  for (int i = 0; i < 4; ++i) cluster.StartWorker();
  ASSERT_TRUE(cluster.WaitForIdleWorkers(4)) << cluster.Logs();
  const std::string id = SubmitAndGetId(cluster, cluster.WriteTinyJob(/*steps=*/60));
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(WaitUntil([&] { return Step(cluster, id) >= 10; }, seconds(300)))
      << cluster.Job(id).dump() << cluster.Logs();

  cluster.coordinator().Kill(SIGKILL);
  std::this_thread::sleep_for(seconds(2));  // the ranks keep training meanwhile
  cluster.StartCoordinator();

  ASSERT_TRUE(
      cluster.WaitForJobState(id, {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"}, seconds(420)))
      << cluster.Job(id).dump() << cluster.Logs();
  const nlohmann::json job = cluster.Job(id);
  EXPECT_EQ(job.value("state", ""), "JOB_STATE_SUCCEEDED") << job.dump() << cluster.Logs();
  EXPECT_EQ(JsonInt(job["progress"]["step"]), 60);
  // Re-attached, not re-placed: the same placement ran to the end.
  EXPECT_EQ(job.value("restarts", 0), 0) << cluster.Logs();
  EXPECT_EQ(JsonInt(job["generation"]), 1) << job.dump();
  for (int i = 0; i < cluster.num_workers(); ++i) EXPECT_TRUE(cluster.worker(i).running());
}

}  // namespace
}  // namespace geotrain::control::testing
