// Checkpoint and resume across processes: four ranks train 4 steps with a checkpoint every 2,
// then four fresh processes resume and train to step 6. With codecs off, the resumed steps 5 and
// 6 have the losses of an uninterrupted 6-step run bit for bit.
//
// The job YAML sets a constant learning rate: the default linear decay runs to --total-steps,
// which the two parts of the interrupted run do not share, and the seed flags have no decay flag.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/runtime/multiprocess/rank_processes.h"
#include "tests/runtime/runtime_test_job.h"

namespace geotrain::runtime::testing {
namespace {

std::vector<double> Losses(const std::vector<nlohmann::json>& lines, size_t first, size_t count) {
  std::vector<double> losses;
  for (size_t i = first; i < first + count && i < lines.size(); ++i) {
    losses.push_back(lines[i].at("loss").get<double>());
  }
  return losses;
}

TEST(GeotrainRunResumeTest, ResumedRunMatchesUninterruptedRun) {
  const geotrain::testing::TempDir dir;
  const StageAssignment job = TinyJob(dir, kStages, kReplicas);
  const std::string yaml =
      dir.Write("job.yaml", TinyJobYaml(job, "optimizer: {decay: constant}\n"));
  const std::string checkpoints = dir.File("checkpoints");
  auto train = [&](const std::string& name, const Args& extra) {
    Args flags = TinyJobFlags(job);
    flags.insert(flags.end(), {"--config", yaml});
    flags.insert(flags.end(), extra.begin(), extra.end());
    return RunJobToEnd(dir.File(name), JobArgs("file://" + dir.File(name + ".rdzv"), flags));
  };

  const JobSteps whole = train("whole", {});
  const JobSteps first = train(
      "first", {"--checkpoint-path", checkpoints, "--checkpoint-steps", "2", "--total-steps", "4"});
  EXPECT_TRUE(std::filesystem::exists(checkpoints + "/step-00000004/stage-01.replica-01.done"));
  const JobSteps resumed = train("resumed", {"--checkpoint-path", checkpoints, "--checkpoint-steps",
                                             "2", "--total-steps", "6"});
  const std::string resumed_log = ReadFile(dir.File("resumed.rank-0.stderr"));
  EXPECT_NE(resumed_log.find("resumed from the checkpoint of step 4"), std::string::npos)
      << resumed_log;

  for (const int rank : {1, 3}) {
    ASSERT_EQ(whole.count(rank) + first.count(rank) + resumed.count(rank), 3u) << "rank " << rank;
    const auto& all = whole.at(rank);
    ASSERT_EQ(all.size(), 6u) << "rank " << rank;
    ASSERT_EQ(first.at(rank).size(), 4u) << "rank " << rank;
    ASSERT_EQ(resumed.at(rank).size(), 2u) << "rank " << rank;
    EXPECT_EQ(resumed.at(rank).front().at("step"), 5) << "rank " << rank;
    EXPECT_EQ(Losses(first.at(rank), 0, 4), Losses(all, 0, 4)) << "rank " << rank;
    EXPECT_EQ(Losses(resumed.at(rank), 0, 2), Losses(all, 4, 2)) << "rank " << rank;
  }
}

}  // namespace
}  // namespace geotrain::runtime::testing
