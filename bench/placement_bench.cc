#include "bench/placement_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench/placement_dtfm.h"
#include "coordinator/planner/nominal_job_shape.h"
#include "coordinator/planner/placement_planner.h"
#include "coordinator/planner/seeded_rng.h"
#include "coordinator/planner/synthetic_topology.h"

namespace geotrain::bench {
namespace {

using namespace geotrain::planner;

struct BenchCase {
  SyntheticTopologySpec spec;
  int stages;
  int replicas;
};

std::vector<BenchCase> Cases(uint64_t seed) {
  auto spec = [&](const char* name, size_t workers, int regions, bool skewed, uint64_t salt) {
    return SyntheticTopologySpec{name, workers, regions, skewed, seed * 1000003 + salt};
  };
  return {
      {spec("geo8-uniform-4x2", 8, 4, false, 1), 4, 2},
      {spec("geo8-skewed-4x2", 8, 4, true, 2), 4, 2},
      {spec("geo16-uniform-4x4", 16, 5, false, 3), 4, 4},
      {spec("geo16-skewed-4x4", 16, 6, true, 4), 4, 4},
      {spec("geo64-uniform-8x8", 64, 8, false, 5), 8, 8},
      {spec("geo64-skewed-8x8", 64, 8, true, 6), 8, 8},
      {spec("geo64-spare-8x7", 64, 6, true, 7), 8, 7},
  };
}

// GPT-2-like, 1.3B parameters: hidden 2048, 24 layers, seq 1024, micro-batch 1, 32 micro-batches,
// fp16 on every wire (ratio 0.5 of float32), 100 TFLOP/s sustained at speed 1.0.
JobShape BenchShape(int stages, int replicas) {
  return NominalJobShape(stages, replicas, /*micro_batches=*/32, /*micro_batch_size=*/1,
                         /*seq_length=*/1024, /*hidden_size=*/2048, /*layers=*/24,
                         /*vocab_size=*/50257, /*forward_wire_ratio=*/0.5,
                         /*backward_wire_ratio=*/0.5, /*sync_wire_ratio=*/0.5,
                         /*flops_per_second_at_speed_1=*/100e12);
}

// Median step seconds of `count` grids drawing S*D distinct workers uniformly.
double RandomMedianSeconds(const JobShape& shape, const SyntheticTopology& topo, int count,
                           uint64_t seed) {
  SeededRng rng(seed);
  std::vector<size_t> order(topo.workers.size());
  std::vector<double> seconds;
  for (int i = 0; i < count; ++i) {
    for (size_t w = 0; w < order.size(); ++w) order[w] = w;
    rng.Shuffle(order);
    Grid grid(order.begin(), order.begin() + static_cast<long>(shape.num_stages) * shape.replicas);
    seconds.push_back(EstimateStepCost(shape, topo.workers, topo.links, grid).step_seconds);
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds.size() % 2 ? seconds[seconds.size() / 2]
                            : (seconds[seconds.size() / 2 - 1] + seconds[seconds.size() / 2]) / 2;
}

}  // namespace

int RunPlacementBench(const PlacementBenchOptions& options) {
  if (!(options.budget >= 0) || !std::isfinite(options.budget)) {
    std::fprintf(stderr, "--budget: %g is not a finite number of seconds >= 0\n", options.budget);
    return 2;
  }
  std::vector<BenchCase> cases = Cases(options.seed);
  if (!options.topology.empty()) {
    auto it = std::find_if(cases.begin(), cases.end(),
                           [&](const BenchCase& c) { return c.spec.name == options.topology; });
    const std::vector<std::string> dtfm = {"dtfm-multi-university", "dtfm-regional",
                                           "dtfm-worldwide"};
    const bool is_dtfm = std::find(dtfm.begin(), dtfm.end(), options.topology) != dtfm.end();
    if (it == cases.end() && !is_dtfm) {
      std::string names;
      for (const BenchCase& c : cases) names += (names.empty() ? "" : ", ") + c.spec.name;
      for (const std::string& name : dtfm) names += ", " + name;
      std::fprintf(stderr, "--topology: no topology named '%s' (there are: %s)\n",
                   options.topology.c_str(), names.c_str());
      return 2;
    }
    cases = it == cases.end() ? std::vector<BenchCase>{} : std::vector<BenchCase>{*it};
  }

  double worst_speedup = INFINITY, max_runtime = 0, slowest_inorder = -1;
  std::string slowest_inorder_topology;
  double slowest_inorder_speedup = 0;
  for (const BenchCase& c : cases) {
    const SyntheticTopology topo = MakeSyntheticTopology(c.spec);
    const JobShape shape = BenchShape(c.stages, c.replicas);
    const double inorder =
        EstimateStepCost(shape, topo.workers, topo.links, InOrderGrid(shape, topo.workers.size()))
            .step_seconds;
    const double random = RandomMedianSeconds(shape, topo, 100, c.spec.seed + 17);
    PlannerOptions planner_options;
    planner_options.seed = options.planner_seed != 0 ? options.planner_seed : options.seed;
    planner_options.time_budget_seconds = options.budget;
    const Plan plan = PlanPlacement(shape, topo.workers, topo.links, planner_options);
    if (!plan.error.empty()) {
      std::fprintf(stderr, "%s: planning failed: %s\n", c.spec.name.c_str(), plan.error.c_str());
      return 1;
    }
    const double planned = plan.cost.step_seconds;
    nlohmann::json line = {{"topology", topo.name},
                           {"workers", topo.workers.size()},
                           {"regions", topo.regions},
                           {"stages", c.stages},
                           {"replicas", c.replicas},
                           {"inorder_seconds", inorder},
                           {"random_median_seconds", random},
                           {"planned_seconds", planned},
                           {"planned_pipeline_seconds", plan.cost.pipeline_seconds},
                           {"planned_sync_seconds", plan.cost.sync_seconds},
                           {"planned_from", plan.start},
                           {"planner_runtime_seconds", plan.seconds},
                           {"planner_evaluations", plan.evaluations},
                           {"speedup_vs_inorder", inorder / planned},
                           {"speedup_vs_random", random / planned}};
    std::printf("%s\n", line.dump().c_str());
    std::fflush(stdout);
    worst_speedup = std::min(worst_speedup, inorder / planned);
    max_runtime = std::max(max_runtime, plan.seconds);
    if (inorder > slowest_inorder) {
      slowest_inorder = inorder;
      slowest_inorder_topology = topo.name;
      slowest_inorder_speedup = inorder / planned;
    }
  }
  const DtfmBenchSummary dtfm = RunDtfmPlacementCases(options);
  max_runtime = std::max(max_runtime, dtfm.max_planner_runtime_seconds);
  nlohmann::json summary = {{"summary", true},
                            {"dtfm_cases", dtfm.cases},
                            {"dtfm_worst_formula_vs_gcma", dtfm.worst_dtfm_formula_vs_gcma},
                            {"dtfm_worst_planned_vs_enumerated", dtfm.worst_planned_vs_enumerated},
                            {"min_speedup_vs_inorder", worst_speedup},
                            {"slowest_inorder_topology", slowest_inorder_topology},
                            {"speedup_on_slowest_inorder", slowest_inorder_speedup},
                            {"max_planner_runtime_seconds", max_runtime}};
  std::printf("%s\n", summary.dump().c_str());
  return 0;
}

}  // namespace geotrain::bench
