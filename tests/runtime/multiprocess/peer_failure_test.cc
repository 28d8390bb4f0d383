// A rank that dies or freezes in the middle of training: every other rank fails within the
// transport timeout plus a margin, exits 1 (training failed) and says which operation failed
// with which peer; none hangs. The timeout comes from the job YAML (training.timeout_seconds),
// since geotrain-run has no flag for it.
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>

#include "tests/runtime/multiprocess/rank_processes.h"
#include "tests/runtime/runtime_test_job.h"

namespace geotrain::runtime::testing {
namespace {

constexpr int kTimeoutSeconds = 5;
constexpr std::chrono::seconds kSurvivorDeadline(kTimeoutSeconds + 15);

// Starts a 1000-step job, waits for rank 1's first step line, sends `signal` to rank `victim`
// and checks every other rank exits 1 within kSurvivorDeadline. Returns their stderr.
std::vector<std::string> SurvivorsOfFailedRank(int victim, int signal) {
  const geotrain::testing::TempDir dir;
  const StageAssignment job = TinyJob(dir, kStages, kReplicas);
  const std::string yaml = dir.Write(
      "job.yaml",
      TinyJobYaml(job, "training: {timeout_seconds: " + std::to_string(kTimeoutSeconds) + "}\n"));
  Args flags = TinyJobFlags(job);
  flags.insert(flags.end(), {"--config", yaml, "--total-steps", "1000"});
  RankProcesses ranks(dir.File("job"), JobArgs("file://" + dir.File("rdzv"), flags));

  const bool training =
      ranks.WaitFor([&] { return !ranks.Stdout(1).empty() || ranks.running_count() < kWorld; },
                    std::chrono::seconds(120));
  if (!training || ranks.running_count() < kWorld) {
    ADD_FAILURE() << "training did not start\n" << ranks.Summary();
    return {};
  }
  ranks.Signal(victim, signal);
  const bool survivors_ended = ranks.WaitFor(
      [&] { return ranks.running_count() == (ranks.running(victim) ? 1 : 0); }, kSurvivorDeadline);
  EXPECT_TRUE(survivors_ended) << "ranks still ran " << kSurvivorDeadline.count()
                               << " s after rank " << victim << " got signal " << signal << "\n"
                               << ranks.Summary();
  std::vector<std::string> errors;
  std::string not_failed;
  for (int rank = 0; rank < kWorld; ++rank) {
    if (rank == victim) continue;
    if (ranks.exit_code(rank) != 1) not_failed += " " + std::to_string(rank);
    errors.push_back(ranks.Stderr(rank));
  }
  EXPECT_EQ(not_failed, "") << "survivors that did not exit 1\n" << ranks.Summary();
  return errors;
}

// Each survivor names itself in an error line; at least one names the operation and the peer.
void ExpectClearErrors(const std::vector<std::string>& errors) {
  const std::regex own_error(R"(\[error\] .*rank [0-9] \(stage [0-9], replica [0-9]\))");
  const std::regex operation(R"((send to|recv from) rank [0-9])");
  bool names_operation = false;
  for (const std::string& error : errors) {
    EXPECT_TRUE(std::regex_search(error, own_error)) << error;
    names_operation = names_operation || std::regex_search(error, operation);
  }
  EXPECT_TRUE(names_operation);
}

TEST(GeotrainRunPeerFailureTest, KilledRankFailsTheOthersFast) {
  const std::vector<std::string> errors = SurvivorsOfFailedRank(2, SIGKILL);
  ASSERT_EQ(errors.size(), 3u);
  ExpectClearErrors(errors);
}

// A frozen peer keeps its connections open: only the per-operation timeout ends the others.
TEST(GeotrainRunPeerFailureTest, FrozenRankTimesTheOthersOut) {
  const std::vector<std::string> errors = SurvivorsOfFailedRank(1, SIGSTOP);
  ASSERT_EQ(errors.size(), 3u);
  ExpectClearErrors(errors);
  bool timed_out = false;
  for (const std::string& error : errors) {
    timed_out = timed_out || error.find("timed out after 5000 ms") != std::string::npos;
  }
  EXPECT_TRUE(timed_out);
}

}  // namespace
}  // namespace geotrain::runtime::testing
