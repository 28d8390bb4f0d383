#include "bench/placement_dtfm.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

#include "coordinator/planner/dtfm_topology.h"
#include "coordinator/planner/placement_planner.h"
#include "coordinator/planner/seeded_rng.h"

namespace geotrain::bench {
namespace {

using namespace geotrain::planner;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Each region's workers (pool order) cut into chunks of `size`; nothing left over, else empty.
std::vector<std::vector<size_t>> RegionChunks(const DtfmTopology& topo, size_t size) {
  std::vector<std::string> regions;
  for (const WorkerInfo& w : topo.workers) {
    if (std::find(regions.begin(), regions.end(), w.region) == regions.end())
      regions.push_back(w.region);
  }
  std::vector<std::vector<size_t>> chunks;
  for (const std::string& region : regions) {
    std::vector<size_t> members;
    for (size_t w = 0; w < topo.workers.size(); ++w) {
      if (topo.workers[w].region == region) members.push_back(w);
    }
    if (members.size() % size != 0) return {};
    for (size_t i = 0; i < members.size(); i += size) {
      chunks.emplace_back(members.begin() + static_cast<long>(i),
                          members.begin() + static_cast<long>(i + size));
    }
  }
  return chunks;
}

// The independent reference: DT-FM's two region layouts, every order of them enumerated and
// costed by the step cost model. (a) each stage group one region chunk of D, every order of the
// chunks along the pipeline; (b) each replica one region chunk of S, every ring order of the
// replicas (the first fixed). Returns the cheapest step (infinity when neither layout fits).
double EnumeratedLayoutSeconds(const DtfmTopology& topo, const JobShape& shape) {
  const size_t s_count = static_cast<size_t>(shape.num_stages);
  const size_t d = static_cast<size_t>(shape.replicas);
  double best = std::numeric_limits<double>::infinity();
  Grid grid(s_count * d);
  const std::vector<std::vector<size_t>> groups = RegionChunks(topo, d);
  if (groups.size() == s_count) {
    std::vector<size_t> order(s_count);
    std::iota(order.begin(), order.end(), 0);
    do {
      for (size_t s = 0; s < s_count; ++s) {
        for (size_t r = 0; r < d; ++r) grid[r * s_count + s] = groups[order[s]][r];
      }
      best = std::min(best, EstimateStepCost(shape, topo.workers, topo.links, grid).step_seconds);
    } while (std::next_permutation(order.begin(), order.end()));
  }
  const std::vector<std::vector<size_t>> pipelines = RegionChunks(topo, s_count);
  if (pipelines.size() == d) {
    std::vector<size_t> order(d);
    std::iota(order.begin(), order.end(), 0);
    do {
      for (size_t r = 0; r < d; ++r) {
        for (size_t s = 0; s < s_count; ++s) grid[r * s_count + s] = pipelines[order[r]][s];
      }
      best = std::min(best, EstimateStepCost(shape, topo.workers, topo.links, grid).step_seconds);
    } while (std::next_permutation(order.begin() + 1, order.end()));
  }
  return best;
}

}  // namespace

DtfmBenchSummary RunDtfmPlacementCases(const PlacementBenchOptions& options) {
  DtfmBenchSummary summary;
  for (DtfmCase which : {DtfmCase::kMultiUniversity, DtfmCase::kRegional, DtfmCase::kWorldwide}) {
    for (const bool shuffled : {false, true}) {
      const DtfmTopology topo = MakeDtfmTopology(which, shuffled ? options.seed : 0);
      if (!options.topology.empty() && options.topology != topo.name) continue;
      for (const int micro_batches : {1, 32}) {
        const JobShape shape = DtfmJobShape(topo, micro_batches);
        const size_t ranks = static_cast<size_t>(shape.num_stages) * shape.replicas;
        const Grid in_order = InOrderGrid(shape, topo.workers.size());
        std::vector<double> random_step, random_dtfm;
        SeededRng rng(options.seed * 7919 + static_cast<uint64_t>(micro_batches));
        std::vector<size_t> pool(topo.workers.size());
        for (int i = 0; i < 100; ++i) {
          std::iota(pool.begin(), pool.end(), 0);
          rng.Shuffle(pool);
          const Grid grid(pool.begin(), pool.begin() + static_cast<long>(ranks));
          random_step.push_back(
              EstimateStepCost(shape, topo.workers, topo.links, grid).step_seconds);
          random_dtfm.push_back(DtfmFormulaSeconds(topo, grid, shape.num_stages, shape.replicas));
        }
        PlannerOptions planner_options;
        planner_options.seed = options.planner_seed != 0 ? options.planner_seed : options.seed;
        planner_options.time_budget_seconds = options.budget;
        const Plan plan = PlanPlacement(shape, topo.workers, topo.links, planner_options);
        if (!plan.error.empty()) {
          std::fprintf(stderr, "%s: planning failed: %s\n", topo.name.c_str(), plan.error.c_str());
          continue;
        }
        const double enumerated = EnumeratedLayoutSeconds(topo, shape);
        const double planned_dtfm =
            DtfmFormulaSeconds(topo, plan.grid, shape.num_stages, shape.replicas);
        nlohmann::json line = {
            {"topology", topo.name},
            {"join_order", shuffled ? "shuffled" : "dtfm"},
            {"micro_batches", micro_batches},
            {"workers", topo.workers.size()},
            {"stages", shape.num_stages},
            {"replicas", shape.replicas},
            {"inorder_seconds",
             EstimateStepCost(shape, topo.workers, topo.links, in_order).step_seconds},
            {"random_median_seconds", Median(random_step)},
            {"enumerated_layout_seconds", enumerated},
            {"planned_seconds", plan.cost.step_seconds},
            {"planned_pipeline_seconds", plan.cost.pipeline_seconds},
            {"planned_sync_seconds", plan.cost.sync_seconds},
            {"planned_from", plan.start},
            {"planner_runtime_seconds", plan.seconds},
            {"planner_evaluations", plan.evaluations},
            {"inorder_dtfm_formula_seconds",
             DtfmFormulaSeconds(topo, in_order, shape.num_stages, shape.replicas)},
            {"random_median_dtfm_formula_seconds", Median(random_dtfm)},
            {"dtfm_formula_seconds", planned_dtfm},
            {"gcma_published_seconds", topo.published_gcma_seconds}};
        std::printf("%s\n", line.dump().c_str());
        std::fflush(stdout);
        ++summary.cases;
        summary.max_planner_runtime_seconds =
            std::max(summary.max_planner_runtime_seconds, plan.seconds);
        if (micro_batches == 1) {
          summary.worst_dtfm_formula_vs_gcma = std::max(summary.worst_dtfm_formula_vs_gcma,
                                                        planned_dtfm / topo.published_gcma_seconds);
        }
        summary.worst_planned_vs_enumerated =
            std::max(summary.worst_planned_vs_enumerated, plan.cost.step_seconds / enumerated);
      }
    }
  }
  return summary;
}

}  // namespace geotrain::bench
