#include "coordinator/step_aggregator.h"

#include <gtest/gtest.h>

#include <optional>

namespace geotrain::coordinator {
namespace {

// 2 stages x 2 replicas; 1000 tokens per step; 100 steps.
StepFigures Figures() {
  StepFigures figures;
  figures.num_stages = 2;
  figures.replicas = 2;
  figures.tokens_per_step = 1000;
  figures.total_steps = 100;
  return figures;
}

v1::StepReport Report(int stage, int replica, int64_t step, uint32_t generation = 1) {
  v1::StepReport report;
  report.set_job_id("job-1");
  report.set_generation(generation);
  report.set_stage(stage);
  report.set_replica(replica);
  report.set_step(step);
  report.set_step_seconds(1.0 + stage);  // stage 1 is the slowest: 2 s
  report.set_lr(0.001);
  report.set_raw_bytes_forward(100);
  report.set_wire_bytes_forward(10);
  report.set_raw_bytes_dp(50);
  report.set_wire_bytes_dp(5);
  if (stage == 1) report.set_loss(replica == 0 ? 2.0 : 4.0);
  return report;
}

// Feeds every rank's report of `step`; returns the row of the completing one.
std::optional<v1::JobStep> FeedStep(StepAggregator& aggregator, v1::JobProgress* progress,
                                    int64_t step, bool checkpointed = false) {
  std::optional<v1::JobStep> row;
  for (int replica = 0; replica < 2; ++replica) {
    for (int stage = 0; stage < 2; ++stage) {
      v1::StepReport report = Report(stage, replica, step);
      report.set_checkpointed(checkpointed);
      auto completed = aggregator.Add(report, 1000 * step, progress);
      if (completed) {
        EXPECT_FALSE(row.has_value()) << "a step completed twice";
        row = completed;
      }
    }
  }
  return row;
}

TEST(StepAggregatorTest, StepCompletesWhenEveryRankReported) {
  StepAggregator aggregator(Figures(), 1);
  v1::JobProgress progress;
  EXPECT_FALSE(aggregator.Add(Report(0, 0, 1), 0, &progress));
  EXPECT_FALSE(aggregator.Add(Report(1, 0, 1), 0, &progress));
  EXPECT_FALSE(aggregator.Add(Report(0, 1, 1), 0, &progress));
  EXPECT_EQ(progress.step(), 0);
  auto row = aggregator.Add(Report(1, 1, 1), 5, &progress);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->step(), 1);
  EXPECT_EQ(row->generation(), 1u);
  EXPECT_DOUBLE_EQ(row->loss(), 3.0);  // mean of the last stage's 2.0 and 4.0
  EXPECT_FALSE(row->has_eval_loss());
  EXPECT_DOUBLE_EQ(row->step_seconds(), 2.0);  // the slowest rank
  EXPECT_EQ(row->raw_bytes(), 4u * 150u);
  EXPECT_EQ(row->wire_bytes(), 4u * 15u);
  EXPECT_DOUBLE_EQ(row->lr(), 0.001);
  EXPECT_EQ(row->unix_ms(), 5);

  EXPECT_EQ(progress.step(), 1);
  EXPECT_EQ(progress.total_steps(), 100);
  EXPECT_DOUBLE_EQ(progress.loss(), 3.0);
  EXPECT_DOUBLE_EQ(progress.first_loss(), 3.0);
  EXPECT_DOUBLE_EQ(progress.step_seconds(), 2.0);
  EXPECT_DOUBLE_EQ(progress.tokens_per_second(), 500.0);
  EXPECT_DOUBLE_EQ(progress.wire_bytes_per_second(), 30.0);
  EXPECT_EQ(progress.raw_bytes_forward(), 400u);
  EXPECT_EQ(progress.wire_bytes_dp(), 20u);
  EXPECT_EQ(progress.raw_bytes(), 600u);
  EXPECT_DOUBLE_EQ(progress.eta_seconds(), 99 * 2.0);
  EXPECT_EQ(aggregator.pending_steps(), 0u);
}

TEST(StepAggregatorTest, IgnoresDuplicatesOtherGenerationsAndForeignRanks) {
  StepAggregator aggregator(Figures(), 2);
  v1::JobProgress progress;
  EXPECT_FALSE(aggregator.Add(Report(0, 0, 1, /*generation=*/1), 0, &progress));
  EXPECT_EQ(aggregator.pending_steps(), 0u);
  EXPECT_FALSE(aggregator.Add(Report(2, 0, 1, 2), 0, &progress));  // stage outside the job
  EXPECT_FALSE(aggregator.Add(Report(0, 0, 1, 2), 0, &progress));
  EXPECT_FALSE(aggregator.Add(Report(0, 0, 1, 2), 0, &progress));  // the same rank again
  EXPECT_FALSE(aggregator.Add(Report(1, 0, 1, 2), 0, &progress));
  EXPECT_FALSE(aggregator.Add(Report(0, 1, 1, 2), 0, &progress));
  EXPECT_TRUE(aggregator.Add(Report(1, 1, 1, 2), 0, &progress).has_value());
  // A step the job already has is not counted again.
  EXPECT_FALSE(aggregator.Add(Report(0, 0, 1, 2), 0, &progress));
  EXPECT_EQ(aggregator.pending_steps(), 0u);
}

TEST(StepAggregatorTest, CheckpointNeedsEveryRank) {
  StepAggregator aggregator(Figures(), 1);
  v1::JobProgress progress;
  ASSERT_TRUE(FeedStep(aggregator, &progress, 1, /*checkpointed=*/true));
  EXPECT_EQ(progress.checkpoint_step(), 1);
  // Step 2: one rank did not write its part, so the checkpoint of step 2 is incomplete.
  for (int replica = 0; replica < 2; ++replica) {
    for (int stage = 0; stage < 2; ++stage) {
      v1::StepReport report = Report(stage, replica, 2);
      report.set_checkpointed(!(stage == 1 && replica == 1));
      (void)aggregator.Add(report, 0, &progress);
    }
  }
  EXPECT_EQ(progress.step(), 2);
  EXPECT_EQ(progress.checkpoint_step(), 1);
}

TEST(StepAggregatorTest, EvalLossFromTheLastStage) {
  StepAggregator aggregator(Figures(), 1);
  v1::JobProgress progress;
  std::optional<v1::JobStep> row;
  for (int replica = 0; replica < 2; ++replica) {
    for (int stage = 0; stage < 2; ++stage) {
      v1::StepReport report = Report(stage, replica, 1);
      if (stage == 1) report.set_eval_loss(replica == 0 ? 1.0 : 3.0);
      if (auto r = aggregator.Add(report, 0, &progress)) row = r;
    }
  }
  ASSERT_TRUE(row.has_value());
  ASSERT_TRUE(row->has_eval_loss());
  EXPECT_DOUBLE_EQ(row->eval_loss(), 2.0);
  EXPECT_DOUBLE_EQ(progress.eval_loss(), 2.0);
  EXPECT_EQ(progress.eval_step(), 1);
}

TEST(StepAggregatorTest, AClassifiersScoresAreTheMeanOfTheLastStageAndLastUntilTheNextEval) {
  StepAggregator aggregator(Figures(), 1);
  v1::JobProgress progress;
  const auto run_step = [&](int64_t step, bool eval, bool scored) {
    std::optional<v1::JobStep> row;
    for (int replica = 0; replica < 2; ++replica) {
      for (int stage = 0; stage < 2; ++stage) {
        v1::StepReport report = Report(stage, replica, step);
        if (stage == 1 && eval) report.set_eval_loss(0.5);
        if (stage == 1 && scored) {
          report.mutable_eval_scores()->set_accuracy(replica == 0 ? 0.75 : 0.25);
          report.mutable_eval_scores()->set_f1(0.5);
          report.mutable_eval_scores()->set_mcc(replica == 0 ? -0.5 : 0.5);
        }
        if (auto r = aggregator.Add(report, 0, &progress)) row = r;
      }
    }
    return row;
  };
  std::optional<v1::JobStep> row = run_step(1, true, true);
  ASSERT_TRUE(row.has_value());
  ASSERT_TRUE(row->has_eval_scores());
  EXPECT_DOUBLE_EQ(row->eval_scores().accuracy(), 0.5);
  EXPECT_DOUBLE_EQ(row->eval_scores().f1(), 0.5);
  EXPECT_DOUBLE_EQ(row->eval_scores().mcc(), 0.0);
  ASSERT_TRUE(progress.has_eval_scores());
  EXPECT_DOUBLE_EQ(progress.eval_scores().accuracy(), 0.5);
  // A step without evaluation keeps the newest scores; an evaluation without scores drops them,
  // so they never stand beside an eval loss they do not belong to.
  row = run_step(2, false, false);
  EXPECT_FALSE(row->has_eval_scores());
  EXPECT_TRUE(progress.has_eval_scores());
  run_step(3, true, false);
  EXPECT_FALSE(progress.has_eval_scores());
  EXPECT_EQ(progress.eval_step(), 3);
}

TEST(StepAggregatorTest, OlderPartialStepsAreDroppedWhenANewerOneCompletes) {
  StepAggregator aggregator(Figures(), 1);
  v1::JobProgress progress;
  // Step 1 lost one rank's report (e.g. across a coordinator restart).
  (void)aggregator.Add(Report(0, 0, 1), 0, &progress);
  (void)aggregator.Add(Report(1, 0, 1), 0, &progress);
  EXPECT_EQ(aggregator.pending_steps(), 1u);
  ASSERT_TRUE(FeedStep(aggregator, &progress, 2));
  EXPECT_EQ(progress.step(), 2);
  EXPECT_EQ(aggregator.pending_steps(), 0u);
}

TEST(StepAggregatorTest, ProgressAfterRecoveryResumesFromTheCheckpoint) {
  StepAggregator aggregator(Figures(), 1);
  v1::JobProgress progress;
  ASSERT_TRUE(FeedStep(aggregator, &progress, 1));
  ASSERT_TRUE(FeedStep(aggregator, &progress, 2, /*checkpointed=*/true));
  ASSERT_TRUE(FeedStep(aggregator, &progress, 3));
  // Step 4 is half reported when a rank dies.
  (void)aggregator.Add(Report(0, 0, 4), 0, &progress);
  const uint64_t raw_before = progress.raw_bytes();

  EXPECT_EQ(StepAggregator::RollBackToCheckpoint(&progress), 1);
  EXPECT_EQ(progress.step(), 2);
  aggregator.StartGeneration(2);
  EXPECT_EQ(aggregator.pending_steps(), 0u);

  // Generation 2 resumes at step 3; a late report of generation 1 changes nothing.
  EXPECT_FALSE(aggregator.Add(Report(1, 0, 4, 1), 0, &progress));
  std::optional<v1::JobStep> row;
  for (int replica = 0; replica < 2; ++replica) {
    for (int stage = 0; stage < 2; ++stage) {
      if (auto r = aggregator.Add(Report(stage, replica, 3, 2), 0, &progress)) row = r;
    }
  }
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->generation(), 2u);
  EXPECT_EQ(progress.step(), 3);
  EXPECT_DOUBLE_EQ(progress.first_loss(), 3.0);
  // Bytes sent again count again: they crossed the wire twice.
  EXPECT_EQ(progress.raw_bytes(), raw_before + 600u);
}

TEST(StepAggregatorTest, NoCheckpointMeansEverythingIsLost) {
  v1::JobProgress progress;
  progress.set_step(7);
  EXPECT_EQ(StepAggregator::RollBackToCheckpoint(&progress), 7);
  EXPECT_EQ(progress.step(), 0);
}

}  // namespace
}  // namespace geotrain::coordinator
