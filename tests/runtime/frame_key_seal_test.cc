// Sealed training: a job over sealed links trains exactly as over clear ones (sealing changes
// no byte the runtime sees), and geotrain-run's key file is read strictly.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <thread>

#include "net/gloo_transport.h"
#include "runtime/frame_key_file.h"
#include "runtime/stage_runtime.h"
#include "tests/runtime/runtime_test_job.h"

namespace geotrain::runtime {
namespace {

using testing::RankOf;
using testing::TinyJob;

// Each rank's (loss, gradient norm) of every step of `steps` steps of `job` (the loss is NaN but
// on last stages), every rank in a thread over fake links sealed with `frame_key` (empty: in the
// clear).
std::vector<std::vector<double>> Losses(const StageAssignment& job, int steps,
                                        const std::string& frame_key) {
  at::set_num_threads(1);
  std::vector<StageLinks> links = CreateFakeJobLinks(job.num_stages, job.dp_size, true,
                                                     UsesFusedEmbeddingGroup(job), frame_key);
  std::vector<std::vector<double>> losses(static_cast<size_t>(job.world_size()));
  std::vector<bool> assignment_is_last(losses.size());
  for (int r = 0; r < job.dp_size; ++r) {
    for (int s = 0; s < job.num_stages; ++s) {
      assignment_is_last[r * job.num_stages + s] = RankOf(job, s, r).is_last_stage();
    }
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < job.dp_size; ++r) {
    for (int s = 0; s < job.num_stages; ++s) {
      const int rank = r * job.num_stages + s;
      threads.emplace_back([&, rank, r, s] {
        auto runtime = StageRuntime::Create(RankOf(job, s, r), std::move(links[rank]));
        ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
        for (int i = 0; i < steps; ++i) {
          StepResult result;
          Status status = (*runtime)->RunSchedule(&result);
          if (status.ok()) status = (*runtime)->SynchronizeGradients(&result);
          if (status.ok()) status = (*runtime)->ApplyOptimizer(&result);
          ASSERT_TRUE(status.ok()) << "rank " << rank << ": " << status.ToString();
          if (assignment_is_last[rank]) losses[rank].push_back(result.loss);
          losses[rank].push_back(result.grad_norm);
        }
      });
    }
  }
  for (std::thread& t : threads) t.join();
  return losses;
}

TEST(SealedTrainingTest, SealedLinksTrainBitIdenticallyToClearOnes) {
  const geotrain::testing::TempDir dir;
  const StageAssignment job = TinyJob(dir, 2, 2);
  const auto clear = Losses(job, 1, "");
  const auto sealed = Losses(job, 1, std::string(32, '\x5c'));
  ASSERT_EQ(clear.size(), 4u);
  EXPECT_EQ(sealed, clear);
  ASSERT_EQ(clear[1].size(), 2u);  // stage 1 (the last) of replica 0: a loss and a norm
  EXPECT_GT(clear[1][0], 0.0);
}

TEST(FrameKeyFileTest, ReadsRawAndHexKeys) {
  const geotrain::testing::TempDir dir;
  const std::string raw(32, '\x01');
  auto key = ReadFrameKeyFile(dir.Write("raw.key", raw));
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(*key, raw);

  const std::string hex = std::string(62, '0') + "fF\n";
  key = ReadFrameKeyFile(dir.Write("hex.key", hex));
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(*key, std::string(31, '\0') + "\xff");
}

TEST(FrameKeyFileTest, BadFilesFailNamingTheFlagAndTheFile) {
  const geotrain::testing::TempDir dir;
  struct Case {
    std::string contents;
    std::string message;
  };
  for (const Case& bad : {Case{"short", "5 bytes; expected 32 raw bytes or 64 hex digits"},
                          Case{std::string(64, 'g'), "64 characters but not all hex digits"},
                          Case{std::string(33, 'k'), "33 bytes"}}) {
    const std::string path = dir.Write("bad.key", bad.contents);
    auto key = ReadFrameKeyFile(path);
    ASSERT_FALSE(key.ok()) << bad.contents;
    EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(key.status().message().find("--frame-key-file " + path + ": " + bad.message),
              std::string::npos)
        << key.status().message();
  }
  auto missing = ReadFrameKeyFile(dir.File("none.key"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot read"), std::string::npos);
}

TEST(FrameKeyFileTest, AKeyOthersMayReadIsWarnedAbout) {
  const geotrain::testing::TempDir dir;
  const std::string path = dir.Write("open.key", std::string(32, 'k'));
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  std::string warning;
  ASSERT_TRUE(ReadFrameKeyFile(path, &warning).ok());
  EXPECT_NE(warning.find("chmod 600"), std::string::npos) << warning;
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  ASSERT_TRUE(ReadFrameKeyFile(path, &warning).ok());
  EXPECT_EQ(warning, "");
}

TEST(RunNameTest, ARankWhoseRankZeroNeverPublishesFailsWithinItsBudget) {
  const geotrain::testing::TempDir dir;
  auto store = net::CreateFileStore(dir.File("store"), 1, std::chrono::seconds(60));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  // Another rank's key: the store file exists (c10d's FileStore cannot wait on a missing file).
  (*store)->set("other", std::vector<uint8_t>{1});
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::string> name = AgreeOnRunName(**store, 1, std::chrono::milliseconds(1000));
  ASSERT_FALSE(name.ok());
  EXPECT_EQ(name.status().code(), StatusCode::kDeadlineExceeded) << name.status().ToString();
  EXPECT_NE(name.status().message().find("rank 0 did not publish it within 1000 ms"),
            std::string::npos)
      << name.status().message();
  // Well within the store's own 60 s (FileStore counts its waits in whole seconds).
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
}

}  // namespace
}  // namespace geotrain::runtime
