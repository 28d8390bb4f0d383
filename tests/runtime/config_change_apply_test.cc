// Adaptive compression's changes applied by a real 2 stages x 2 replicas job over fake links:
// the step reports show the new bits from the effective step on, the bytes shrink with them,
// training goes on, late changes apply at the next step, changes during the warm-up wait for
// compression to start, and a codec with no width to change is warned about and left alone.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "runtime/stage_runtime.h"
#include "tests/runtime/runtime_test_job.h"

namespace geotrain::runtime {
namespace {

namespace cz = compression;
using testing::RunRanks;
using testing::TinyJob;

const LinkTraffic* Find(const std::vector<LinkTraffic>& traffic, int stage, int replica,
                        TrafficKind kind, bool sent) {
  for (const LinkTraffic& t : traffic) {
    if (t.peer_stage == stage && t.peer_replica == replica && t.kind == kind && t.sent == sent) {
      return &t;
    }
  }
  return nullptr;
}

cz::CodecConfig Codec(cz::CodecId id, int bits) {
  cz::CodecConfig config;
  config.codec = id;
  config.bits = bits;
  return config;
}

class ConfigChangeApplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_logger_ = spdlog::default_logger();
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    sink->set_pattern("%l %v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("config-change-test", sink));
    job_.training.total_steps = 5;
    job_.compression.forward = Codec(cz::CodecId::kFixpoint, 8);
    job_.compression.backward = Codec(cz::CodecId::kFixpoint, 8);
    job_.compression.data_parallel.mode = DataParallelMode::kCocktail;
    job_.compression.data_parallel.codec.codec = cz::CodecId::kCocktail;
    job_.compression.data_parallel.codec.quant_bits = 8;
    job_.compression.data_parallel.codec.topk_ratio = 0.5;
    // Each exchange counted in its own step, so bytes compare step by step (the overlap, where
    // an exchange finishes in the next step, is on in ALateChangeAppliesAtTheNextStep).
    job_.compression.data_parallel.overlap = false;
  }
  void TearDown() override { spdlog::set_default_logger(previous_logger_); }

  // Runs the job with Run(); before each step, `schedule` may queue changes on each rank.
  void Train(const std::function<void(int64_t next_step, const StageAssignment&, StageRuntime&)>&
                 schedule) {
    RunRanks(job_, true, [&](int, const StageAssignment& assignment, StageLinks links) {
      auto runtime = StageRuntime::Create(assignment, std::move(links));
      ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
      StageRuntime& rank = **runtime;
      const Status status = rank.Run(
          [&](const StepResult& result) {
            std::lock_guard<std::mutex> lock(mu_);
            results_[{assignment.stage, assignment.dp_rank}].push_back(result);
          },
          [&] { schedule(rank.step() + 1, assignment, rank); });
      ASSERT_TRUE(status.ok()) << status.ToString();
    });
    for (const auto& [rank, steps] : results_) {
      ASSERT_EQ(steps.size(), static_cast<size_t>(job_.training.total_steps));
      if (rank.first != job_.num_stages - 1) continue;
      for (const StepResult& r : steps) EXPECT_TRUE(std::isfinite(r.loss)) << r.step;
    }
  }

  // The bits of what stage `stage` of replica 0 sent at each step: its pipeline kind to its
  // replica's neighbour, and its data-parallel frames to the other replica.
  std::vector<uint32_t> SentBits(int stage, TrafficKind kind) {
    std::vector<uint32_t> bits;
    const int peer_stage = kind == TrafficKind::kActivation ? stage + 1
                           : kind == TrafficKind::kGradient ? stage - 1
                                                            : stage;
    const int peer_replica = kind == TrafficKind::kDataParallel ? 1 : 0;
    for (const StepResult& r : results_[{stage, 0}]) {
      const LinkTraffic* t = Find(r.traffic, peer_stage, peer_replica, kind, true);
      bits.push_back(t ? t->bits : 999);
    }
    return bits;
  }

  std::shared_ptr<spdlog::logger> previous_logger_;
  std::ostringstream log_;
  geotrain::testing::TempDir dir_;
  StageAssignment job_ = TinyJob(dir_, 2, 2);
  std::mutex mu_;
  std::map<std::pair<int, int>, std::vector<StepResult>> results_;
};

TEST_F(ConfigChangeApplyTest, NewBitsFromTheEffectiveStepOn) {
  // Every rank hears of the change before step 1, for step 3. Only its own sends change: the
  // first stage has no upstream link and the last no downstream one, which they say.
  Train([](int64_t next_step, const StageAssignment&, StageRuntime& rank) {
    if (next_step != 1) return;
    CodecChange change;
    change.effective_step = 3;
    change.forward_bits = 4;
    change.backward_bits = 3;
    change.dp_bits = 2;
    change.dp_topk_ratio = 0.1;
    change.reason = "test";
    rank.ScheduleCodecChange(change);
  });
  EXPECT_EQ(SentBits(0, TrafficKind::kActivation), (std::vector<uint32_t>{8, 8, 4, 4, 4}));
  EXPECT_EQ(SentBits(1, TrafficKind::kGradient), (std::vector<uint32_t>{8, 8, 3, 3, 3}));
  for (int stage : {0, 1}) {
    EXPECT_EQ(SentBits(stage, TrafficKind::kDataParallel), (std::vector<uint32_t>{8, 8, 2, 2, 2}))
        << stage;
  }
  // Fewer bits, fewer bytes: the codecs really changed, not just the reports.
  for (int replica : {0, 1}) {
    const std::vector<StepResult>& first = results_[{0, replica}];
    const std::vector<StepResult>& last = results_[{1, replica}];
    EXPECT_LT(first[2].wire_bytes.forward, first[1].wire_bytes.forward * 3 / 4);
    EXPECT_EQ(first[2].wire_bytes.forward, first[4].wire_bytes.forward);
    EXPECT_LT(last[2].wire_bytes.backward, last[1].wire_bytes.backward * 3 / 4);
    // Step 3's exchange is the first at 2 bits and 10% of the sampled set.
    EXPECT_LT(first[2].wire_bytes.dp, first[1].wire_bytes.dp / 2);
    EXPECT_EQ(first[2].wire_bytes.dp, first[4].wire_bytes.dp);
  }
  const std::string log = log_.str();
  EXPECT_NE(log.find("info step 3: forward bits 8 -> 4 (test)"), std::string::npos) << log;
  EXPECT_NE(log.find("info step 3: backward bits 8 -> 3 (test)"), std::string::npos) << log;
  EXPECT_NE(log.find("info step 3: data-parallel bits 8 -> 2, topk_ratio 0.5 -> 0.1 (test)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("warning step 3: backward bits 3 not applied: stage 0 has no backward link"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("step 1:"), std::string::npos) << log;
}

TEST_F(ConfigChangeApplyTest, ALateChangeAppliesAtTheNextStep) {
  // With the overlap, step 2's exchange is in flight when the change applies at step 3: it
  // finishes with the settings it started with, and step 3's exchange uses the new ones.
  job_.compression.data_parallel.overlap = true;
  Train([](int64_t next_step, const StageAssignment& assignment, StageRuntime& rank) {
    if (next_step != 3) return;
    CodecChange change;
    change.effective_step = 2;  // already done when it arrives
    if (assignment.stage == 0) change.forward_bits = 5;
    change.dp_bits = 3;
    change.reason = "late";
    rank.ScheduleCodecChange(change);
  });
  EXPECT_EQ(SentBits(0, TrafficKind::kActivation), (std::vector<uint32_t>{8, 8, 5, 5, 5}));
  EXPECT_EQ(SentBits(1, TrafficKind::kGradient), (std::vector<uint32_t>{8, 8, 8, 8, 8}));
  // Step 1's exchange may still be running when step 1 reports: from step 2 on every report
  // holds the one before it.
  for (int stage : {0, 1}) {
    const std::vector<uint32_t> dp = SentBits(stage, TrafficKind::kDataParallel);
    EXPECT_EQ(std::vector<uint32_t>(dp.begin() + 1, dp.end()), (std::vector<uint32_t>{8, 3, 3, 3}))
        << stage;
  }
  const std::string log = log_.str();
  EXPECT_NE(log.find("step 3 (late: announced for step 2): forward bits 8 -> 5 (late)"),
            std::string::npos)
      << log;
}

TEST_F(ConfigChangeApplyTest, AChangeDuringTheWarmUpWaitsForCompression) {
  job_.compression.warmup_steps = 3;
  // A delta codec keeps an activation cache: changing its bits must keep it working.
  job_.compression.forward = Codec(cz::CodecId::kDelta, 8);
  job_.data.stable_shards = true;
  Train([](int64_t next_step, const StageAssignment&, StageRuntime& rank) {
    if (next_step != 1) return;
    CodecChange change;
    change.effective_step = 2;
    change.forward_bits = 3;
    change.dp_bits = 4;
    rank.ScheduleCodecChange(change);
  });
  EXPECT_EQ(SentBits(0, TrafficKind::kActivation), (std::vector<uint32_t>{32, 32, 32, 3, 3}));
  EXPECT_EQ(SentBits(0, TrafficKind::kDataParallel), (std::vector<uint32_t>{32, 32, 32, 4, 4}));
  EXPECT_EQ(SentBits(1, TrafficKind::kGradient), (std::vector<uint32_t>{32, 32, 32, 8, 8}));
}

TEST_F(ConfigChangeApplyTest, ACodecWithoutAWidthIsWarnedAboutAndKept) {
  job_.compression.forward = cz::CodecConfig{};             // none: float32
  job_.compression.data_parallel = DataParallelSettings{};  // allreduce
  Train([](int64_t next_step, const StageAssignment&, StageRuntime& rank) {
    if (next_step != 2) return;
    CodecChange change;
    change.effective_step = 2;
    change.forward_bits = 4;
    change.backward_bits = 4;
    change.dp_bits = 4;
    rank.ScheduleCodecChange(change);
  });
  EXPECT_EQ(SentBits(0, TrafficKind::kActivation), (std::vector<uint32_t>{32, 32, 32, 32, 32}));
  EXPECT_EQ(SentBits(0, TrafficKind::kDataParallel), (std::vector<uint32_t>{32, 32, 32, 32, 32}));
  // The other link of the change still took it.
  EXPECT_EQ(SentBits(1, TrafficKind::kGradient), (std::vector<uint32_t>{8, 4, 4, 4, 4}));
  const std::string log = log_.str();
  EXPECT_NE(log.find("warning step 2: forward bits 4 not applied, the link keeps none "
                     "wire_dtype=f32: codec none has no bit width to change"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("data-parallel mode allreduce has no adjustable codec"), std::string::npos)
      << log;
}

}  // namespace
}  // namespace geotrain::runtime
