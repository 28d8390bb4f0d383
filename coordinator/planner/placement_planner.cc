#include "coordinator/planner/placement_planner.h"

#include <algorithm>
#include <chrono>

#include "coordinator/planner/grid_cost_cache.h"
#include "coordinator/planner/seeded_rng.h"
#include "coordinator/planner/starting_grids.h"

namespace geotrain::planner {
namespace {

using Clock = std::chrono::steady_clock;

// The move space of one grid: every pair of ranks, then every (rank, idle worker) pair.
class LocalSearch {
 public:
  LocalSearch(GridCostCache& cache, size_t ranks, size_t worker_count, SeededRng& rng,
              Clock::time_point deadline)
      : cache_(cache), rng_(rng), deadline_(deadline) {
    for (size_t a = 0; a < ranks; ++a) {
      for (size_t b = a + 1; b < ranks; ++b) pairs_.push_back({a, b});
    }
    idle_count_ = worker_count - ranks;
    moves_.resize(pairs_.size() + ranks * idle_count_);
    for (size_t m = 0; m < moves_.size(); ++m) moves_[m] = m;
    worker_count_ = worker_count;
  }

  // Descends from the cache's grid to a local minimum (or until the deadline).
  void Descend() {
    RebuildIdle();
    bool improved = true;
    while (improved && !OutOfTime()) {
      improved = false;
      rng_.Shuffle(moves_);
      for (size_t m : moves_) {
        if ((++evaluations_ & 63) == 0 && OutOfTime()) return;
        const GridScore before = cache_.score();
        Apply(m);
        if (cache_.score().BetterThan(before)) {
          Commit(m);
          improved = true;
        } else {
          cache_.Undo();
        }
      }
    }
  }

  // `count` random moves, kept whatever they cost.
  void Kick(size_t count) {
    RebuildIdle();
    for (size_t i = 0; i < count && !moves_.empty(); ++i) {
      const size_t m = rng_.Below(moves_.size());
      Apply(m);
      Commit(m);
      ++evaluations_;
    }
  }

  int evaluations() const { return static_cast<int>(evaluations_); }
  bool OutOfTime() const { return Clock::now() >= deadline_; }

 private:
  void Apply(size_t m) {
    if (m < pairs_.size()) {
      cache_.SwapRanks(pairs_[m].first, pairs_[m].second);
    } else {
      const size_t k = m - pairs_.size();
      pending_old_worker_ = cache_.ReplaceWorker(k / idle_count_, idle_[k % idle_count_]);
    }
  }
  void Commit(size_t m) {
    if (m >= pairs_.size()) idle_[(m - pairs_.size()) % idle_count_] = pending_old_worker_;
  }
  void RebuildIdle() {
    std::vector<bool> busy(worker_count_, false);
    for (size_t w : cache_.grid()) busy[w] = true;
    idle_.clear();
    for (size_t w = 0; w < worker_count_; ++w) {
      if (!busy[w]) idle_.push_back(w);
    }
  }

  GridCostCache& cache_;
  SeededRng& rng_;
  Clock::time_point deadline_;
  std::vector<std::pair<size_t, size_t>> pairs_;
  std::vector<size_t> moves_;
  std::vector<size_t> idle_;
  size_t idle_count_ = 0;
  size_t worker_count_ = 0;
  size_t pending_old_worker_ = 0;
  long long evaluations_ = 0;
};

// Renumbers the replicas by the regions their stages sit in (then by their first worker), so the
// runtime's replica-order rings pass each region once where the layout allows.
Grid RegionOrderedReplicas(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                           const Grid& grid) {
  const size_t s_count = static_cast<size_t>(shape.num_stages);
  const std::vector<int> region = RegionIndexes(workers);
  std::vector<size_t> replicas(static_cast<size_t>(shape.replicas));
  for (size_t r = 0; r < replicas.size(); ++r) replicas[r] = r;
  auto key = [&](size_t r) {
    std::vector<size_t> k;
    for (size_t s = 0; s < s_count; ++s)
      k.push_back(static_cast<size_t>(region[grid[r * s_count + s]]));
    k.push_back(grid[r * s_count]);
    return k;
  };
  std::stable_sort(replicas.begin(), replicas.end(),
                   [&](size_t a, size_t b) { return key(a) < key(b); });
  Grid out(grid.size());
  for (size_t r = 0; r < replicas.size(); ++r) {
    std::copy_n(grid.begin() + replicas[r] * s_count, s_count, out.begin() + r * s_count);
  }
  return out;
}

}  // namespace

Plan PlanPlacement(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                   const LinkCosts& links, const PlannerOptions& options) {
  const Clock::time_point started = Clock::now();
  const auto budget = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(options.time_budget_seconds, 0.0)));
  const Clock::time_point deadline = started + budget;
  Plan plan;
  auto finish = [&](Plan& p) -> Plan& {
    p.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return p;
  };

  if (std::string e = CheckJobShape(shape); !e.empty()) {
    plan.error = e;
    return finish(plan);
  }
  const size_t ranks = static_cast<size_t>(shape.num_stages) * shape.replicas;
  if (workers.size() < ranks) {
    plan.error = "workers: " + std::to_string(workers.size()) + " workers for " +
                 std::to_string(ranks) + " ranks (num_stages * replicas)";
    return finish(plan);
  }
  if (std::string e =
          CheckPlacementInputs(shape, workers, links, InOrderGrid(shape, workers.size()));
      !e.empty()) {
    plan.error = e;
    return finish(plan);
  }

  GridCostCache cache(shape, workers, links, options.cost);
  SeededRng rng(options.seed);
  Grid best;
  GridScore best_score;
  int evaluations = 0;
  {
    LocalSearch search(cache, ranks, workers.size(), rng, deadline);
    for (const StartingGrid& start : StartingGrids(shape, workers, links, options.cost)) {
      cache.Reset(start.grid);
      ++evaluations;
      search.Descend();
      if (best.empty() || cache.score().BetterThan(best_score)) {
        best = cache.grid();
        best_score = cache.score();
        plan.start = start.name;
      }
    }
    // Iterated local search: kicks of 2 to ranks/8 + 1 random moves from the best grid.
    const size_t max_kick = std::max<size_t>(2, ranks / 8 + 1);
    for (int fruitless = 0;
         fruitless < options.max_kicks_without_improvement && !search.OutOfTime();) {
      cache.Reset(best);
      ++evaluations;
      search.Kick(2 + rng.Below(max_kick - 1));
      search.Descend();
      if (cache.score().BetterThan(best_score)) {
        best = cache.grid();
        best_score = cache.score();
        fruitless = 0;
      } else {
        ++fruitless;
      }
    }
    evaluations += search.evaluations();
  }

  plan.grid = best;
  plan.cost = EstimateStepCost(shape, workers, links, best, options.cost);
  const Grid renumbered = RegionOrderedReplicas(shape, workers, best);
  const StepCost renumbered_cost =
      EstimateStepCost(shape, workers, links, renumbered, options.cost);
  evaluations += 2;
  if (renumbered_cost.step_seconds <= plan.cost.step_seconds) {
    plan.grid = renumbered;
    plan.cost = renumbered_cost;
  }
  plan.evaluations = evaluations;
  return finish(plan);
}

}  // namespace geotrain::planner
