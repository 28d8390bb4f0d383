// The step cost of one grid, kept per part (each replica's pipeline, each stage group's sync) so
// a search move that changes two ranks re-costs two replicas and two stage groups instead of the
// whole grid, and can be undone without re-costing anything.
//
// Holds references to the shape, workers, links and options given at construction: they must
// outlive it. Single-threaded (one search owns one cache).
#pragma once

#include <cstddef>
#include <vector>

#include "coordinator/planner/step_cost_model.h"

namespace geotrain::planner {

// What the search minimises: the step's seconds first, then the sum of every replica's pipeline
// and every group's sync, which breaks the step's plateaus (a faster non-critical replica counts).
struct GridScore {
  double step_seconds = 0;
  double total_seconds = 0;
  // Strictly better, with a relative tolerance so rounding noise never counts as progress.
  bool BetterThan(const GridScore& other) const;
};

class GridCostCache {
 public:
  GridCostCache(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                const LinkCosts& links, const CostOptions& options);

  // Re-costs everything. Precondition: CheckPlacementInputs(shape, workers, links, grid) == "".
  void Reset(const Grid& grid);
  const Grid& grid() const { return grid_; }
  GridScore score() const { return score_; }
  // Parts re-costed since construction (a whole Reset counts D + S).
  long long part_evaluations() const { return part_evaluations_; }

  // Exchanges the workers of ranks a and b (a != b).
  void SwapRanks(size_t a, size_t b);
  // Gives `rank` to `worker` (one not in the grid); returns the worker it had.
  size_t ReplaceWorker(size_t rank, size_t worker);
  // Reverts the last SwapRanks or ReplaceWorker (once).
  void Undo();

 private:
  struct Saved {
    size_t rank_a = 0, rank_b = 0;
    size_t worker_a = 0, worker_b = 0;
    double pipeline[2] = {0, 0};
    double sync[2] = {0, 0};
    GridScore score;
    bool valid = false;
  };
  void Save(size_t a, size_t b);
  void Recost(size_t a, size_t b);
  void Rescore();

  const JobShape& shape_;
  const std::vector<WorkerInfo>& workers_;
  const LinkCosts& links_;
  const CostOptions& options_;
  Grid grid_;
  std::vector<double> pipeline_;  // per replica
  std::vector<double> sync_;      // per stage group
  GridScore score_;
  Saved saved_;
  long long part_evaluations_ = 0;
};

}  // namespace geotrain::planner
