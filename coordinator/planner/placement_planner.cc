#include "coordinator/planner/placement_planner.h"

#include <algorithm>
#include <chrono>

#include "coordinator/planner/grid_cost_cache.h"
#include "coordinator/planner/group_orders.h"
#include "coordinator/planner/seeded_rng.h"
#include "coordinator/planner/starting_grids.h"

namespace geotrain::planner {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kScanOrderSeed = 0x9E3779B97F4A7C15ull;

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
    // One scan order for every descent, independent of the seed: a descent from a given grid
    // always ends in the same local minimum, so only the kicks depend on the seed.
    SeededRng order(kScanOrderSeed);
    order.Shuffle(moves_);
    worker_count_ = worker_count;
  }

  // Descends from the cache's grid to a local minimum (or until the deadline).
  void Descend() {
    RebuildIdle();
    bool improved = true;
    while (improved && !OutOfTime()) {
      improved = false;
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
  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }

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

// Whole-unit moves: the stage groups' order along the pipeline (and their matching), then the
// replica numbering that is every group's ring order, until neither lowers the step.
Grid Regroup(const JobShape& shape, const std::vector<WorkerInfo>& workers, const LinkCosts& links,
             const Grid& grid, const CostOptions& options, int& evaluations) {
  Grid current = grid;
  for (int round = 0; round < 4; ++round) {
    Grid next = OrderReplicaRing(
        shape, workers, links, OrderStageGroups(shape, workers, links, current, options), options);
    evaluations += 4;
    if (next == current) break;  // each returns its input unless it found a lower step
    current = std::move(next);
  }
  return current;
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
    // Rank moves to a local minimum, then whole-unit moves, alternately while either helps.
    // `from` has been through Regroup.
    auto improve = [&](const Grid& from) {
      cache.Reset(from);
      ++evaluations;
      for (int round = 0; round < 4 && !search.OutOfTime(); ++round) {
        search.Descend();
        if (search.OutOfTime()) break;
        Grid regrouped = Regroup(shape, workers, links, cache.grid(), options.cost, evaluations);
        if (regrouped == cache.grid()) break;
        cache.Reset(regrouped);
        ++evaluations;
      }
    };
    // Every start through the whole-unit steps first (cheap and deterministic), then the rank
    // moves from the most promising start first, each given an equal share of the time left: a
    // long descent from a poor start must not starve a better one (which made plans depend on
    // the seed and the machine's load).
    struct Candidate {
      std::string name;
      Grid grid;
      GridScore score;
    };
    std::vector<Candidate> candidates;
    for (const StartingGrid& start : StartingGrids(shape, workers, links, options.cost)) {
      Grid regrouped = Regroup(shape, workers, links, start.grid, options.cost, evaluations);
      cache.Reset(regrouped);
      ++evaluations;
      candidates.push_back({start.name, std::move(regrouped), cache.score()});
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) {
                       return std::make_pair(a.score.step_seconds, a.score.total_seconds) <
                              std::make_pair(b.score.step_seconds, b.score.total_seconds);
                     });
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Clock::time_point now = Clock::now();
      search.set_deadline(now >= deadline
                              ? deadline
                              : now + (deadline - now) / static_cast<long>(candidates.size() - i));
      improve(candidates[i].grid);
      if (best.empty() || cache.score().BetterThan(best_score)) {
        best = cache.grid();
        best_score = cache.score();
        plan.start = candidates[i].name;
      }
    }
    search.set_deadline(deadline);
    // Iterated local search: kicks of 2 to ranks/8 + 1 random moves from the best grid.
    const size_t max_kick = std::max<size_t>(2, ranks / 8 + 1);
    for (int fruitless = 0;
         fruitless < options.max_kicks_without_improvement && !search.OutOfTime();) {
      cache.Reset(best);
      ++evaluations;
      search.Kick(2 + rng.Below(max_kick - 1));
      if (search.OutOfTime()) break;
      improve(Regroup(shape, workers, links, cache.grid(), options.cost, evaluations));
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

  plan.grid = OrderReplicaRing(shape, workers, links, best, options.cost);
  plan.cost = EstimateStepCost(shape, workers, links, plan.grid, options.cost);
  evaluations += 2;
  plan.evaluations = evaluations;
  return finish(plan);
}

}  // namespace geotrain::planner
