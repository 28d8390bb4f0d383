#include "coordinator/planner/step_cost_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "coordinator/planner/nominal_job_shape.h"

namespace geotrain::planner {
namespace {

std::vector<WorkerInfo> Workers(size_t n, double speed = 1.0) {
  std::vector<WorkerInfo> w;
  for (size_t i = 0; i < n; ++i) w.push_back({"w-" + std::to_string(i), "r", speed});
  return w;
}

LinkCosts Uniform(size_t n, double bytes_per_second, double latency) {
  LinkCosts links(n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (i != j) links.at(i, j) = {bytes_per_second, latency};
    }
  }
  return links;
}

JobShape Shape(int stages, int replicas, int micro_batches) {
  JobShape s;
  s.num_stages = stages;
  s.replicas = replicas;
  s.micro_batches = micro_batches;
  s.forward_seconds.assign(stages, 0);
  s.backward_seconds.assign(stages, 0);
  s.activation_bytes.assign(stages - 1, 0);
  s.gradient_bytes.assign(stages - 1, 0);
  s.sync_bytes.assign(stages, 0);
  return s;
}

TEST(StepCostModelTest, OneStageTwoReplicasSync) {
  JobShape shape = Shape(1, 2, 4);
  shape.forward_seconds = {0.1};
  shape.backward_seconds = {0.2};
  shape.sync_bytes = {8e6};
  LinkCosts links(2);
  links.at(0, 1) = {2e6, 0.01};
  links.at(1, 0) = {1e6, 0.03};  // the ring's narrowest link and longest latency set the pace
  std::vector<WorkerInfo> workers = Workers(2);
  workers[1].speed = 0.5;
  const StepCost c = EstimateStepCost(shape, workers, links, {0, 1});
  // Pipeline of replica 1 (speed 0.5): M * (f + b) / speed = 4 * 0.3 / 0.5.
  EXPECT_NEAR(c.pipeline_seconds, 2.4, 1e-12);
  EXPECT_EQ(c.slowest_replica, 1);
  // Ring of 2: 2(D-1)/D * bytes / min bw + 2(D-1) * max latency = 8e6 / 1e6 + 2 * 0.03.
  EXPECT_NEAR(c.sync_seconds, 8.06, 1e-12);
  EXPECT_EQ(c.slowest_stage_group, 0);
  EXPECT_NEAR(c.step_seconds, 2.4 + 8.06, 1e-12);
}

TEST(StepCostModelTest, TwoStagePipelineWithMicroBatches) {
  JobShape shape = Shape(2, 1, 5);
  shape.forward_seconds = {0.1, 0.3};
  shape.backward_seconds = {0.2, 0.4};
  shape.activation_bytes = {1e6};  // 1e6 / 1e7 + 0.05 = 0.15 s one way
  shape.gradient_bytes = {4e6};    // 4e6 / 1e7 + 0.05 = 0.45 s back
  const LinkCosts links = Uniform(2, 1e7, 0.05);
  const StepCost c = EstimateStepCost(shape, Workers(2), links, {0, 1});
  // Forward: 0.1 + 0.3 + 0.15 + (5-1) * max(0.3, 0.15) = 1.75.
  // Backward: 0.2 + 0.4 + 0.45 + (5-1) * max(0.4, 0.45) = 2.85.
  EXPECT_NEAR(c.pipeline_seconds, 1.75 + 2.85, 1e-12);
  EXPECT_EQ(c.sync_seconds, 0);  // one replica: nothing to sync
  EXPECT_NEAR(c.step_seconds, 4.6, 1e-12);
  EXPECT_EQ(c.slowest_replica, 0);
}

TEST(StepCostModelTest, OverlappedSyncTakesTheMaxInsteadOfTheSum) {
  JobShape shape = Shape(1, 2, 1);
  shape.forward_seconds = {1.0};
  shape.backward_seconds = {2.0};
  shape.sync_bytes = {1e6};
  const LinkCosts links = Uniform(2, 1e6, 0.0);
  const StepCost sum = EstimateStepCost(shape, Workers(2), links, {0, 1});
  EXPECT_NEAR(sum.step_seconds, 3.0 + 1.0, 1e-12);
  shape.sync_overlapped = true;
  const StepCost overlapped = EstimateStepCost(shape, Workers(2), links, {0, 1});
  EXPECT_NEAR(overlapped.step_seconds, 3.0, 1e-12);
  shape.sync_bytes = {5e6};
  EXPECT_NEAR(EstimateStepCost(shape, Workers(2), links, {0, 1}).step_seconds, 5.0, 1e-12);
}

TEST(StepCostModelTest, UnknownLinksCostTheOptionsFigures) {
  JobShape shape = Shape(2, 1, 1);
  shape.activation_bytes = {1e6};
  shape.gradient_bytes = {2e6};
  LinkCosts links(2);  // nothing measured
  CostOptions options;
  options.unknown_bytes_per_second = 1e6;
  options.unknown_latency_seconds = 0.5;
  const StepCost c = EstimateStepCost(shape, Workers(2), links, {0, 1}, options);
  EXPECT_NEAR(c.pipeline_seconds, (0.5 + 1.0) + (0.5 + 2.0), 1e-12);
  // A measured link is taken as given, its latency included.
  links.at(0, 1) = {1e7, 0.01};
  const StepCost d = EstimateStepCost(shape, Workers(2), links, {0, 1}, options);
  EXPECT_NEAR(d.pipeline_seconds, (0.01 + 0.1) + (0.5 + 2.0), 1e-12);
}

TEST(StepCostModelTest, SyncRingsInReplicaOrder) {
  // Pairs {0,1} and {2,3} are slow: replica order 0-1-2-3 uses both, 0-2-1-3 neither. The model
  // prices the ring the runtime forms (replica order), so the numbering decides.
  JobShape shape = Shape(1, 4, 1);
  shape.sync_bytes = {4e6};
  LinkCosts links = Uniform(4, 1e9, 0.001);
  for (auto [a, b] : {std::pair<size_t, size_t>{0, 1}, {2, 3}}) {
    links.at(a, b) = links.at(b, a) = {1e6, 0.1};
  }
  // 2(D-1)/D * bytes / bw + 2(D-1) * latency over the ring's narrowest link and longest latency.
  EXPECT_NEAR(EstimateStepCost(shape, Workers(4), links, {0, 2, 1, 3}).sync_seconds,
              1.5 * 4e6 / 1e9 + 6 * 0.001, 1e-12);
  EXPECT_NEAR(EstimateStepCost(shape, Workers(4), links, {0, 1, 2, 3}).sync_seconds,
              1.5 * 4e6 / 1e6 + 6 * 0.1, 1e-9);
  // With every link slow but one, no order helps: the narrowest link sets the pace.
  LinkCosts slow = Uniform(4, 1e6, 0.1);
  slow.at(0, 1) = {1e9, 0.001};
  EXPECT_NEAR(EstimateStepCost(shape, Workers(4), slow, {0, 1, 2, 3}).sync_seconds,
              1.5 * 4e6 / 1e6 + 6 * 0.1, 1e-9);
}

TEST(StepCostModelTest, InvalidGridsCostInfinityAndNameTheField) {
  JobShape shape = Shape(2, 1, 1);
  const LinkCosts links = Uniform(3, 1e6, 0);
  EXPECT_TRUE(std::isinf(EstimateStepCost(shape, Workers(3), links, {0, 0}).step_seconds));
  EXPECT_EQ(EstimateStepCost(shape, Workers(3), links, {0, 0}).slowest_replica, -1);
  EXPECT_NE(CheckPlacementInputs(shape, Workers(3), links, {0, 0}).find("grid[1]"),
            std::string::npos);
  EXPECT_NE(CheckPlacementInputs(shape, Workers(3), links, {0, 5}).find("does not exist"),
            std::string::npos);
  EXPECT_NE(CheckPlacementInputs(shape, Workers(3), links, {0}).find("grid:"), std::string::npos);
  EXPECT_NE(CheckPlacementInputs(shape, Workers(2), links, {0, 1}).find("links:"),
            std::string::npos);
  EXPECT_NE(CheckPlacementInputs(shape, Workers(3, 0.0), links, {0, 1}).find("speed"),
            std::string::npos);
  EXPECT_EQ(CheckPlacementInputs(shape, Workers(3), links, {2, 0}), "");
  shape.activation_bytes = {};
  EXPECT_NE(CheckJobShape(shape).find("activation_bytes"), std::string::npos);
  shape = Shape(1, 1, 1);
  shape.forward_seconds = {-1};
  EXPECT_NE(CheckJobShape(shape).find("forward_seconds[0]"), std::string::npos);
  shape.micro_batches = 0;
  EXPECT_NE(CheckJobShape(shape).find("micro_batches"), std::string::npos);
}

TEST(StepCostModelTest, InOrderGridIsJoinOrderOrEmpty) {
  const JobShape shape = Shape(2, 3, 1);
  EXPECT_EQ(InOrderGrid(shape, 7), (Grid{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(InOrderGrid(shape, 5).empty());
}

TEST(NominalJobShapeTest, FollowsTheGpt2Formulas) {
  // h 64, 4 layers over 2 stages, seq 16, mbs 2, vocab 100, 1e9 FLOP/s.
  const JobShape s = NominalJobShape(2, 3, 4, 2, 16, 64, 4, 100, 0.5, 0.25, 0.125, 1e9);
  ASSERT_EQ(CheckJobShape(s), "");
  EXPECT_EQ(s.num_stages, 2);
  EXPECT_EQ(s.replicas, 3);
  EXPECT_EQ(s.micro_batches, 4);
  const double tokens = 32, layer = 12.0 * 64 * 64, emb = 100.0 * 64;
  EXPECT_NEAR(s.forward_seconds[0], 2 * 2 * layer * tokens / 1e9, 1e-15);
  EXPECT_NEAR(s.backward_seconds[0], 4 * 2 * layer * tokens / 1e9, 1e-15);
  EXPECT_NEAR(s.forward_seconds[1], 2 * (2 * layer + emb) * tokens / 1e9, 1e-15);
  EXPECT_NEAR(s.activation_bytes[0], tokens * 64 * 4 * 0.5, 1e-9);
  EXPECT_NEAR(s.gradient_bytes[0], tokens * 64 * 4 * 0.25, 1e-9);
  EXPECT_NEAR(s.sync_bytes[0], (2 * layer + emb + 16 * 64) * 4 * 0.125, 1e-9);
  EXPECT_NEAR(s.sync_bytes[1], (2 * layer + emb) * 4 * 0.125, 1e-9);
  // Uneven splits: the first stages take the extra layers.
  const JobShape u = NominalJobShape(3, 1, 1, 1, 16, 64, 4, 0, 1, 1, 1, 1e9);
  EXPECT_NEAR(u.forward_seconds[0], 2 * u.forward_seconds[1], 1e-15);
  EXPECT_NEAR(u.forward_seconds[1], u.forward_seconds[2], 1e-15);
}

}  // namespace
}  // namespace geotrain::planner
