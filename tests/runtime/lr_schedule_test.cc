// LearningRate: warm-up and decay values at their boundaries, and agreement with Hugging Face's
// get_linear_schedule_with_warmup evaluated one scheduler step ahead (the chosen convention).
#include "runtime/lr_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace geotrain::runtime {
namespace {

// lr = 1e-3 decaying to 1e-4 over steps 4..13 after a 4-step warm-up; 14 steps in all.
OptimizerSettings Settings(LrDecay decay) {
  OptimizerSettings s;
  s.lr = 1e-3;
  s.min_lr = 1e-4;
  s.lr_warmup_steps = 4;
  s.lr_decay = decay;
  return s;
}
constexpr int64_t kTotal = 14;

TEST(LrScheduleTest, WarmUpRisesLinearlyToThePeakAtItsLastStep) {
  for (LrDecay decay : {LrDecay::kConstant, LrDecay::kLinear, LrDecay::kCosine}) {
    const OptimizerSettings s = Settings(decay);
    EXPECT_DOUBLE_EQ(LearningRate(s, 0, kTotal), 0.25e-3) << LrDecayName(decay);
    EXPECT_DOUBLE_EQ(LearningRate(s, 2, kTotal), 0.75e-3) << LrDecayName(decay);
    EXPECT_DOUBLE_EQ(LearningRate(s, 3, kTotal), 1e-3) << LrDecayName(decay);
  }
}

TEST(LrScheduleTest, ConstantStaysAtThePeakAfterWarmUp) {
  const OptimizerSettings s = Settings(LrDecay::kConstant);
  EXPECT_DOUBLE_EQ(LearningRate(s, 4, kTotal), 1e-3);
  EXPECT_DOUBLE_EQ(LearningRate(s, kTotal - 1, kTotal), 1e-3);
  EXPECT_DOUBLE_EQ(LearningRate(s, 1000, kTotal), 1e-3);
}

TEST(LrScheduleTest, LinearReachesMinLrAtTheLastStepAndStaysThere) {
  const OptimizerSettings s = Settings(LrDecay::kLinear);
  EXPECT_DOUBLE_EQ(LearningRate(s, 4, kTotal), 1e-4 + 0.9e-3 * 0.9);
  EXPECT_DOUBLE_EQ(LearningRate(s, 8, kTotal), 1e-4 + 0.9e-3 * 0.5);
  EXPECT_DOUBLE_EQ(LearningRate(s, kTotal - 2, kTotal), 1e-4 + 0.9e-3 * 0.1);
  EXPECT_DOUBLE_EQ(LearningRate(s, kTotal - 1, kTotal), 1e-4);
  EXPECT_DOUBLE_EQ(LearningRate(s, kTotal + 50, kTotal), 1e-4);
}

TEST(LrScheduleTest, CosineFollowsHalfAPeriodAndDoesNotClimbAfterTheEnd) {
  const OptimizerSettings s = Settings(LrDecay::kCosine);
  EXPECT_DOUBLE_EQ(LearningRate(s, 4, kTotal), 1e-4 + 0.9e-3 * 0.5 * (1 + std::cos(M_PI * 0.1)));
  EXPECT_DOUBLE_EQ(LearningRate(s, 8, kTotal), 1e-4 + 0.9e-3 * 0.5);
  EXPECT_DOUBLE_EQ(LearningRate(s, kTotal - 1, kTotal), 1e-4);
  EXPECT_DOUBLE_EQ(LearningRate(s, kTotal + 5, kTotal), 1e-4);
}

TEST(LrScheduleTest, EqualsHuggingFaceLinearScheduleAfterStepPlusOneSchedulerSteps) {
  // transformers.get_linear_schedule_with_warmup's lr_lambda.
  auto hf_lambda = [](int64_t current, int64_t warmup, int64_t total) {
    if (current < warmup) return static_cast<double>(current) / std::max<int64_t>(1, warmup);
    return std::max(0.0, static_cast<double>(total - current) /
                             static_cast<double>(std::max<int64_t>(1, total - warmup)));
  };
  for (int64_t warmup : {0, 1, 3, 10}) {
    OptimizerSettings s = Settings(LrDecay::kLinear);
    s.min_lr = 0;
    s.lr_warmup_steps = warmup;
    for (int64_t step = 0; step < 30; ++step) {
      EXPECT_NEAR(LearningRate(s, step, 20), s.lr * hf_lambda(step + 1, warmup, 20), 1e-15)
          << "warmup " << warmup << " step " << step;
    }
  }
}

TEST(LrScheduleTest, WithoutWarmUpTheFirstStepIsOneDecayStepBelowThePeak) {
  OptimizerSettings s = Settings(LrDecay::kLinear);
  s.lr_warmup_steps = 0;
  EXPECT_DOUBLE_EQ(LearningRate(s, 0, 10), 1e-4 + 0.9e-3 * 0.9);
  EXPECT_DOUBLE_EQ(LearningRate(s, 9, 10), 1e-4);
}

TEST(LrScheduleTest, EdgeCases) {
  const OptimizerSettings s = Settings(LrDecay::kLinear);
  EXPECT_DOUBLE_EQ(LearningRate(s, -5, kTotal), LearningRate(s, 0, kTotal));
  // Fewer steps than warm-up: the warm-up runs on, then min_lr.
  EXPECT_DOUBLE_EQ(LearningRate(s, 1, 2), 0.5e-3);
  EXPECT_DOUBLE_EQ(LearningRate(s, 4, 2), 1e-4);
}

}  // namespace
}  // namespace geotrain::runtime
