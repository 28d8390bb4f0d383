#include "coordinator/planner/placement_planner.h"

#include <gtest/gtest.h>

#include <set>

#include "coordinator/planner/grid_cost_cache.h"
#include "coordinator/planner/nominal_job_shape.h"
#include "coordinator/planner/seeded_rng.h"
#include "coordinator/planner/synthetic_topology.h"

namespace geotrain::planner {
namespace {

JobShape Gpt2Shape(int stages, int replicas) {
  return NominalJobShape(stages, replicas, 8, 1, 1024, 2048, 24, 50257, 0.5, 0.5, 0.5, 100e12);
}

void ExpectValidGrid(const Plan& plan, const JobShape& shape,
                     const std::vector<WorkerInfo>& workers, const LinkCosts& links) {
  ASSERT_EQ(plan.error, "");
  ASSERT_EQ(plan.grid.size(), static_cast<size_t>(shape.num_stages) * shape.replicas);
  EXPECT_EQ(CheckPlacementInputs(shape, workers, links, plan.grid), "");
  EXPECT_EQ(std::set<size_t>(plan.grid.begin(), plan.grid.end()).size(), plan.grid.size());
  EXPECT_DOUBLE_EQ(plan.cost.step_seconds,
                   EstimateStepCost(shape, workers, links, plan.grid).step_seconds);
}

// Two regions of two workers, joined a b a b; fast inside, slow between.
struct TwoRegions {
  std::vector<WorkerInfo> workers = {
      {"w-0", "a", 1}, {"w-1", "b", 1}, {"w-2", "a", 1}, {"w-3", "b", 1}};
  LinkCosts links{4};
  TwoRegions() {
    for (size_t i = 0; i < 4; ++i) {
      for (size_t j = 0; j < 4; ++j) {
        if (i == j) continue;
        links.at(i, j) =
            workers[i].region == workers[j].region ? LinkCost{1.25e9, 1e-4} : LinkCost{1e7, 0.05};
      }
    }
  }
};

JobShape TwoByTwo(double boundary_bytes, double sync_bytes) {
  JobShape s;
  s.num_stages = 2;
  s.replicas = 2;
  s.micro_batches = 4;
  s.forward_seconds = {0.01, 0.01};
  s.backward_seconds = {0.02, 0.02};
  s.activation_bytes = {boundary_bytes};
  s.gradient_bytes = {boundary_bytes};
  s.sync_bytes = {sync_bytes, sync_bytes};
  return s;
}

TEST(PlacementPlannerTest, KeepsPipelinesInsideARegionWhenActivationsDominate) {
  const TwoRegions t;
  const JobShape shape = TwoByTwo(/*boundary_bytes=*/5e7, /*sync_bytes=*/1e3);
  const Plan plan = PlanPlacement(shape, t.workers, t.links);
  ExpectValidGrid(plan, shape, t.workers, t.links);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(t.workers[plan.grid[r * 2]].region, t.workers[plan.grid[r * 2 + 1]].region) << r;
  }
  const double inorder =
      EstimateStepCost(shape, t.workers, t.links, InOrderGrid(shape, 4)).step_seconds;
  EXPECT_LT(plan.cost.step_seconds, inorder / 10);
}

TEST(PlacementPlannerTest, KeepsStageGroupsInsideARegionWhenTheSyncDominates) {
  const TwoRegions t;
  const JobShape shape = TwoByTwo(/*boundary_bytes=*/1e3, /*sync_bytes=*/5e8);
  const Plan plan = PlanPlacement(shape, t.workers, t.links);
  ExpectValidGrid(plan, shape, t.workers, t.links);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(t.workers[plan.grid[s]].region, t.workers[plan.grid[2 + s]].region) << s;
  }
}

TEST(PlacementPlannerTest, PrefersFastWorkersWhenThereAreMoreWorkersThanRanks) {
  std::vector<WorkerInfo> workers;
  const double speeds[] = {0.35, 0.35, 1.0, 0.6, 1.0, 0.35, 0.6};
  for (size_t i = 0; i < 7; ++i) workers.push_back({"w-" + std::to_string(i), "r", speeds[i]});
  LinkCosts links(7);
  for (size_t i = 0; i < 7; ++i) {
    for (size_t j = 0; j < 7; ++j) {
      if (i != j) links.at(i, j) = {1.25e9, 1e-4};
    }
  }
  const JobShape shape = Gpt2Shape(2, 2);
  const Plan plan = PlanPlacement(shape, workers, links);
  ExpectValidGrid(plan, shape, workers, links);
  EXPECT_EQ(std::set<size_t>(plan.grid.begin(), plan.grid.end()), (std::set<size_t>{2, 3, 4, 6}));
}

TEST(PlacementPlannerTest, NeverWorseThanInOrderOnSyntheticTopologies) {
  struct Case {
    SyntheticTopologySpec spec;
    int stages, replicas;
  };
  const Case cases[] = {{{"8", 8, 4, false, 11}, 2, 4},
                        {{"8s", 8, 4, true, 12}, 4, 2},
                        {{"16", 16, 5, true, 13}, 4, 4},
                        {{"20-spare", 20, 3, false, 14}, 4, 3}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec.name);
    const SyntheticTopology topo = MakeSyntheticTopology(c.spec);
    const JobShape shape = Gpt2Shape(c.stages, c.replicas);
    PlannerOptions options;
    options.time_budget_seconds = 5;
    const Plan plan = PlanPlacement(shape, topo.workers, topo.links, options);
    ExpectValidGrid(plan, shape, topo.workers, topo.links);
    const double inorder =
        EstimateStepCost(shape, topo.workers, topo.links, InOrderGrid(shape, topo.workers.size()))
            .step_seconds;
    EXPECT_LE(plan.cost.step_seconds, inorder);
    EXPECT_GT(plan.evaluations, 0);
  }
}

TEST(PlacementPlannerTest, SameSeedSamePlan) {
  const SyntheticTopology topo = MakeSyntheticTopology({"16", 16, 5, true, 21});
  const JobShape shape = Gpt2Shape(4, 3);  // 12 of 16 workers: idle moves too
  PlannerOptions options;
  options.seed = 7;
  options.time_budget_seconds = 30;  // generous: the search ends by itself, not by the clock
  const Plan a = PlanPlacement(shape, topo.workers, topo.links, options);
  const Plan b = PlanPlacement(shape, topo.workers, topo.links, options);
  ExpectValidGrid(a, shape, topo.workers, topo.links);
  EXPECT_EQ(a.grid, b.grid);
  EXPECT_EQ(a.evaluations, b.evaluations);
  EXPECT_EQ(a.start, b.start);
}

TEST(PlacementPlannerTest, StopsAtTheTimeBudgetWithAValidPlan) {
  const SyntheticTopology topo = MakeSyntheticTopology({"64", 64, 8, true, 31});
  const JobShape shape = Gpt2Shape(8, 8);
  const double inorder =
      EstimateStepCost(shape, topo.workers, topo.links, InOrderGrid(shape, 64)).step_seconds;
  for (double budget : {0.0, 0.05}) {
    SCOPED_TRACE(budget);
    PlannerOptions options;
    options.time_budget_seconds = budget;
    options.max_kicks_without_improvement = 1000000;  // only the budget can stop it
    const Plan plan = PlanPlacement(shape, topo.workers, topo.links, options);
    ExpectValidGrid(plan, shape, topo.workers, topo.links);
    EXPECT_LE(plan.cost.step_seconds, inorder);
    // Loose on purpose (a loaded machine): the budget is checked every 64 evaluations.
    EXPECT_LT(plan.seconds, budget + 2.0);
  }
}

TEST(PlacementPlannerTest, FewerWorkersThanRanksGiveAnErrorAndNoGrid) {
  const SyntheticTopology topo = MakeSyntheticTopology({"3", 3, 2, false, 1});
  const Plan plan = PlanPlacement(Gpt2Shape(2, 2), topo.workers, topo.links);
  EXPECT_TRUE(plan.grid.empty());
  EXPECT_NE(plan.error.find("workers: 3 workers for 4 ranks"), std::string::npos) << plan.error;

  JobShape bad = Gpt2Shape(2, 1);
  bad.sync_bytes.pop_back();
  const Plan bad_plan = PlanPlacement(bad, topo.workers, topo.links);
  EXPECT_TRUE(bad_plan.grid.empty());
  EXPECT_NE(bad_plan.error.find("sync_bytes"), std::string::npos) << bad_plan.error;

  const Plan bad_links = PlanPlacement(Gpt2Shape(2, 1), topo.workers, LinkCosts(2));
  EXPECT_TRUE(bad_links.grid.empty());
  EXPECT_NE(bad_links.error.find("links"), std::string::npos) << bad_links.error;
}

TEST(GridCostCacheTest, IncrementalCostsMatchAFullCostingAfterMovesAndUndos) {
  const SyntheticTopology topo = MakeSyntheticTopology({"20", 20, 4, true, 5});
  const JobShape shape = Gpt2Shape(4, 4);
  const CostOptions options;
  GridCostCache cache(shape, topo.workers, topo.links, options);
  cache.Reset(InOrderGrid(shape, 20));
  std::vector<size_t> idle = {16, 17, 18, 19};
  SeededRng rng(3);
  for (int i = 0; i < 500; ++i) {
    if (rng.Below(2)) {
      const size_t a = rng.Below(16), b = (a + 1 + rng.Below(15)) % 16;
      cache.SwapRanks(a, b);
    } else {
      const size_t k = rng.Below(idle.size());
      idle[k] = cache.ReplaceWorker(rng.Below(16), idle[k]);
    }
    if (i % 3 == 0) {
      cache.Undo();
      // An undone replacement hands its idle worker back: recompute the idle set.
      idle.clear();
      std::set<size_t> busy(cache.grid().begin(), cache.grid().end());
      for (size_t w = 0; w < 20; ++w) {
        if (!busy.count(w)) idle.push_back(w);
      }
    }
    const StepCost full = EstimateStepCost(shape, topo.workers, topo.links, cache.grid(), options);
    ASSERT_NEAR(cache.score().step_seconds, full.step_seconds, 1e-9 * full.step_seconds) << i;
  }
}

TEST(SyntheticTopologyTest, DeterministicUnevenAndInterleaved) {
  const SyntheticTopology a = MakeSyntheticTopology({"t", 16, 5, true, 9});
  const SyntheticTopology b = MakeSyntheticTopology({"t", 16, 5, true, 9});
  ASSERT_EQ(a.workers.size(), 16u);
  EXPECT_EQ(a.regions, 5);
  std::set<std::string> first_five;
  for (size_t i = 0; i < 5; ++i) first_five.insert(a.workers[i].region);
  EXPECT_EQ(first_five.size(), 5u);  // join order interleaves the regions
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(a.workers[i].region, b.workers[i].region);
    EXPECT_EQ(a.workers[i].speed, b.workers[i].speed);
    for (size_t j = 0; j < 16; ++j) {
      if (i == j) continue;
      EXPECT_EQ(a.links.at(i, j).bytes_per_second, b.links.at(i, j).bytes_per_second);
      const double gbit = a.links.at(i, j).bytes_per_second * 8 / 1e9;
      if (a.workers[i].region == a.workers[j].region) {
        EXPECT_NEAR(gbit, 10, 0.51);
      } else {
        EXPECT_GE(gbit, 0.3 * 0.9 * 0.95);
        EXPECT_LE(gbit, 1.1 * 1.1 * 1.05);
        EXPECT_GE(a.links.at(i, j).latency_seconds, 0.010);
      }
    }
  }
}

}  // namespace
}  // namespace geotrain::planner
