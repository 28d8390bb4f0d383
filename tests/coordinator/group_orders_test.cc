#include "coordinator/planner/group_orders.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "coordinator/planner/dtfm_topology.h"
#include "coordinator/planner/placement_planner.h"
#include "coordinator/planner/seeded_rng.h"

namespace geotrain::planner {
namespace {

std::vector<double> RandomCosts(size_t n, uint64_t seed) {
  SeededRng rng(seed);
  std::vector<double> cost(n * n, 0);
  for (size_t i = 0; i < n * n; ++i) {
    if (i / n != i % n) cost[i] = static_cast<double>(1 + rng.Below(20));  // ties on purpose
  }
  return cost;
}

double PathScore(const std::vector<double>& cost, size_t n, const std::vector<size_t>& path,
                 double extra) {
  double sum = 0, largest = 0;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    sum += cost[path[i] * n + path[i + 1]];
    largest = std::max(largest, cost[path[i] * n + path[i + 1]]);
  }
  return sum + extra * largest;
}

std::pair<double, double> CycleScore(const std::vector<double>& cost, size_t n,
                                     const std::vector<size_t>& cycle) {
  double sum = 0, largest = 0;
  for (size_t i = 0; i < cycle.size(); ++i) {
    const double c = cost[cycle[i] * n + cycle[(i + 1) % cycle.size()]];
    sum += c;
    largest = std::max(largest, c);
  }
  return {largest, sum};
}

bool IsPermutation(std::vector<size_t> v, size_t n) {
  std::sort(v.begin(), v.end());
  std::vector<size_t> want(n);
  std::iota(want.begin(), want.end(), 0);
  return v == want;
}

TEST(GroupOrdersTest, BottleneckMatchingMinimisesTheLargestMatchedCost) {
  // Row 0 can only go cheaply to column 1, row 1 to column 0; row 2 takes what is left.
  const std::vector<double> cost = {9, 1, 9,  //
                                    1, 9, 9,  //
                                    5, 5, 3};
  EXPECT_EQ(BottleneckMatching(cost, 3), (std::vector<size_t>{1, 0, 2}));
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const size_t n = 5;
    std::vector<double> c = RandomCosts(n, seed);
    for (size_t i = 0; i < n; ++i) c[i * n + i] = static_cast<double>(seed % 7);
    const std::vector<size_t> match = BottleneckMatching(c, n);
    ASSERT_TRUE(IsPermutation(match, n));
    double got = 0;
    for (size_t i = 0; i < n; ++i) got = std::max(got, c[i * n + match[i]]);
    std::vector<size_t> p(n);
    std::iota(p.begin(), p.end(), 0);
    double best = std::numeric_limits<double>::infinity();
    do {
      double m = 0;
      for (size_t i = 0; i < n; ++i) m = std::max(m, c[i * n + p[i]]);
      best = std::min(best, m);
    } while (std::next_permutation(p.begin(), p.end()));
    EXPECT_EQ(got, best) << seed;
  }
}

TEST(GroupOrdersTest, BestPathIsTheBruteForceOptimum) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const size_t n = 6;
    const std::vector<double> cost = RandomCosts(n, seed);
    for (double extra : {0.0, 3.0, 31.0}) {
      const std::vector<size_t> path = BestPath(cost, n, extra);
      ASSERT_TRUE(IsPermutation(path, n));
      std::vector<size_t> p(n);
      std::iota(p.begin(), p.end(), 0);
      double best = std::numeric_limits<double>::infinity();
      do {
        best = std::min(best, PathScore(cost, n, p, extra));
      } while (std::next_permutation(p.begin(), p.end()));
      EXPECT_DOUBLE_EQ(PathScore(cost, n, path, extra), best) << seed << " " << extra;
    }
  }
}

TEST(GroupOrdersTest, BottleneckCycleIsTheBruteForceOptimum) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const size_t n = 7;
    const std::vector<double> cost = RandomCosts(n, seed + 100);
    const std::vector<size_t> cycle = BottleneckCycle(cost, n);
    ASSERT_TRUE(IsPermutation(cycle, n));
    EXPECT_EQ(cycle[0], 0u);
    std::vector<size_t> p(n);
    std::iota(p.begin(), p.end(), 0);
    std::pair<double, double> best{std::numeric_limits<double>::infinity(), 0};
    do {
      best = std::min(best, CycleScore(cost, n, p));
    } while (std::next_permutation(p.begin() + 1, p.end()));
    EXPECT_EQ(CycleScore(cost, n, cycle), best) << seed;
  }
}

// DT-FM's worldwide case: 8 cities of 8 GPUs; DT-FM's node order puts city c on nodes 8c..8c+7.
TEST(GroupOrdersTest, StageGroupsOrderedAlongTheBestCityChain) {
  const DtfmTopology topo = MakeDtfmTopology(DtfmCase::kWorldwide, 0);
  const JobShape shape = DtfmJobShape(topo, 32);
  // Stage s = city s (the table's order), replica r = the r-th GPU of each city.
  Grid grid(64);
  for (size_t r = 0; r < 8; ++r) {
    for (size_t s = 0; s < 8; ++s) grid[r * 8 + s] = s * 8 + r;
  }
  const Grid ordered = OrderStageGroups(shape, topo.workers, topo.links, grid, {});
  ASSERT_EQ(CheckPlacementInputs(shape, topo.workers, topo.links, ordered), "");
  // Every order of the cities, costed whole: the result is the best of them.
  std::vector<size_t> cities(8);
  std::iota(cities.begin(), cities.end(), 0);
  double best = std::numeric_limits<double>::infinity();
  Grid g(64);
  do {
    for (size_t r = 0; r < 8; ++r) {
      for (size_t s = 0; s < 8; ++s) g[r * 8 + s] = cities[s] * 8 + r;
    }
    best = std::min(best, EstimateStepCost(shape, topo.workers, topo.links, g).step_seconds);
  } while (std::next_permutation(cities.begin(), cities.end()));
  EXPECT_NEAR(EstimateStepCost(shape, topo.workers, topo.links, ordered).step_seconds, best, 1e-9);
  // And each stage group is still one city.
  for (size_t s = 0; s < 8; ++s) {
    for (size_t r = 1; r < 8; ++r) {
      EXPECT_EQ(topo.workers[ordered[r * 8 + s]].region, topo.workers[ordered[s]].region);
    }
  }
}

TEST(GroupOrdersTest, ReplicaRingAvoidsTheSlowCityPairs) {
  const DtfmTopology topo = MakeDtfmTopology(DtfmCase::kWorldwide, 0);
  const JobShape shape = DtfmJobShape(topo, 1);
  // Replica r = city r (pipelines inside cities): the replica numbering is every group's ring.
  Grid grid(64);
  for (size_t i = 0; i < 64; ++i) grid[i] = i;
  const Grid ordered = OrderReplicaRing(shape, topo.workers, topo.links, grid, {});
  std::vector<size_t> cities(8);
  std::iota(cities.begin(), cities.end(), 0);
  double best = std::numeric_limits<double>::infinity();
  Grid g(64);
  do {
    for (size_t r = 0; r < 8; ++r) {
      for (size_t s = 0; s < 8; ++s) g[r * 8 + s] = cities[r] * 8 + s;
    }
    best = std::min(best, EstimateStepCost(shape, topo.workers, topo.links, g).sync_seconds);
  } while (std::next_permutation(cities.begin() + 1, cities.end()));
  const StepCost cost = EstimateStepCost(shape, topo.workers, topo.links, ordered);
  EXPECT_NEAR(cost.sync_seconds, best, 1e-9);
  EXPECT_LT(cost.sync_seconds,
            EstimateStepCost(shape, topo.workers, topo.links, grid).sync_seconds);
  // Whole pipelines moved: each replica is still one city.
  for (size_t r = 0; r < 8; ++r) {
    for (size_t s = 1; s < 8; ++s) {
      EXPECT_EQ(topo.workers[ordered[r * 8 + s]].region, topo.workers[ordered[r * 8]].region);
    }
  }
}

TEST(DtfmTopologyTest, TablesAndFormulaMatchDtfm) {
  const DtfmTopology topo = MakeDtfmTopology(DtfmCase::kWorldwide, 0);
  ASSERT_EQ(topo.workers.size(), 64u);
  EXPECT_EQ(topo.workers[0].region, "Oregon");
  EXPECT_EQ(topo.workers[63].region, "Ireland");
  // Tokyo (nodes 24-31) - Seoul (32-39): 34 ms, 1.10 Gbit/s; inside a city 5 ms, 2 Gbit/s.
  EXPECT_NEAR(topo.links.at(24, 32).bytes_per_second, 1.10e9 / 8, 1);
  EXPECT_NEAR(topo.links.at(32, 24).latency_seconds, 0.034, 1e-12);
  EXPECT_NEAR(topo.links.at(24, 25).bytes_per_second, 2e9 / 8, 1);
  // One pipeline per city (GCMA's worldwide layout): pipeline 7 hops of 5 ms + 0.5 GB over
  // 2 Gbit/s = 14.035 s, twice; data parallel: Seoul's sum over the other cities, 30.6 s. The
  // paper reports 58.67 s.
  Grid grid(64);
  for (size_t i = 0; i < 64; ++i) grid[i] = i;
  EXPECT_NEAR(DtfmFormulaSeconds(topo, grid, 8, 8), 58.67, 0.01);
  // A shuffled join order permutes the same pool.
  const DtfmTopology shuffled = MakeDtfmTopology(DtfmCase::kWorldwide, 3);
  std::vector<std::string> a, b;
  for (const WorkerInfo& w : topo.workers) a.push_back(w.id);
  for (const WorkerInfo& w : shuffled.workers) b.push_back(w.id);
  EXPECT_NE(a, b);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
}

TEST(DtfmTopologyTest, PlannerMatchesGcmaOnTheShuffledWorldwidePool) {
  for (uint64_t seed : {1, 2}) {
    const DtfmTopology topo = MakeDtfmTopology(DtfmCase::kWorldwide, seed);
    const JobShape shape = DtfmJobShape(topo, 1);
    PlannerOptions options;
    options.seed = seed;
    options.time_budget_seconds = 30;  // the kicks' limit ends it, not the clock
    options.max_kicks_without_improvement = 5;
    const Plan plan = PlanPlacement(shape, topo.workers, topo.links, options);
    ASSERT_EQ(plan.error, "");
    // Pipelines in cities, rings over the widest city cycle: 28.07 s + 24.05 s + latency.
    EXPECT_LT(plan.cost.step_seconds, 54.6) << seed;
    EXPECT_LE(DtfmFormulaSeconds(topo, plan.grid, 8, 8), 58.675) << seed;
  }
}

}  // namespace
}  // namespace geotrain::planner
