#include "coordinator/planner/grid_cost_cache.h"

#include <algorithm>

namespace geotrain::planner {

bool GridScore::BetterThan(const GridScore& other) const {
  constexpr double kTolerance = 1e-12;
  if (step_seconds < other.step_seconds * (1 - kTolerance)) return true;
  return step_seconds <= other.step_seconds &&
         total_seconds < other.total_seconds * (1 - kTolerance);
}

GridCostCache::GridCostCache(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                             const LinkCosts& links, const CostOptions& options)
    : shape_(shape), workers_(workers), links_(links), options_(options) {}

void GridCostCache::Reset(const Grid& grid) {
  grid_ = grid;
  pipeline_.assign(static_cast<size_t>(shape_.replicas), 0);
  sync_.assign(static_cast<size_t>(shape_.num_stages), 0);
  for (int r = 0; r < shape_.replicas; ++r) {
    pipeline_[r] = ReplicaPipelineSeconds(shape_, workers_, links_, grid_, r, options_);
  }
  for (int s = 0; s < shape_.num_stages; ++s) {
    sync_[s] = StageGroupSyncSeconds(shape_, links_, grid_, s, options_);
  }
  part_evaluations_ += shape_.replicas + shape_.num_stages;
  saved_.valid = false;
  Rescore();
}

void GridCostCache::SwapRanks(size_t a, size_t b) {
  Save(a, b);
  std::swap(grid_[a], grid_[b]);
  Recost(a, b);
}

size_t GridCostCache::ReplaceWorker(size_t rank, size_t worker) {
  Save(rank, rank);
  const size_t old = grid_[rank];
  grid_[rank] = worker;
  Recost(rank, rank);
  return old;
}

void GridCostCache::Undo() {
  if (!saved_.valid) return;
  const size_t s_count = static_cast<size_t>(shape_.num_stages);
  grid_[saved_.rank_a] = saved_.worker_a;
  grid_[saved_.rank_b] = saved_.worker_b;
  // Restore b first so that a == b (a replacement) ends with a's saved figures.
  pipeline_[saved_.rank_b / s_count] = saved_.pipeline[1];
  pipeline_[saved_.rank_a / s_count] = saved_.pipeline[0];
  sync_[saved_.rank_b % s_count] = saved_.sync[1];
  sync_[saved_.rank_a % s_count] = saved_.sync[0];
  score_ = saved_.score;
  saved_.valid = false;
}

void GridCostCache::Save(size_t a, size_t b) {
  const size_t s_count = static_cast<size_t>(shape_.num_stages);
  saved_.rank_a = a;
  saved_.rank_b = b;
  saved_.worker_a = grid_[a];
  saved_.worker_b = grid_[b];
  saved_.pipeline[0] = pipeline_[a / s_count];
  saved_.pipeline[1] = pipeline_[b / s_count];
  saved_.sync[0] = sync_[a % s_count];
  saved_.sync[1] = sync_[b % s_count];
  saved_.score = score_;
  saved_.valid = true;
}

void GridCostCache::Recost(size_t a, size_t b) {
  const size_t s_count = static_cast<size_t>(shape_.num_stages);
  const size_t replica_a = a / s_count, replica_b = b / s_count;
  const size_t stage_a = a % s_count, stage_b = b % s_count;
  pipeline_[replica_a] = ReplicaPipelineSeconds(shape_, workers_, links_, grid_,
                                                static_cast<int>(replica_a), options_);
  sync_[stage_a] =
      StageGroupSyncSeconds(shape_, links_, grid_, static_cast<int>(stage_a), options_);
  part_evaluations_ += 2;
  if (replica_b != replica_a) {
    pipeline_[replica_b] = ReplicaPipelineSeconds(shape_, workers_, links_, grid_,
                                                  static_cast<int>(replica_b), options_);
    ++part_evaluations_;
  }
  if (stage_b != stage_a) {
    sync_[stage_b] =
        StageGroupSyncSeconds(shape_, links_, grid_, static_cast<int>(stage_b), options_);
    ++part_evaluations_;
  }
  Rescore();
}

void GridCostCache::Rescore() {
  double max_pipeline = 0, max_sync = 0, total = 0;
  for (double t : pipeline_) {
    max_pipeline = std::max(max_pipeline, t);
    total += t;
  }
  for (double t : sync_) {
    max_sync = std::max(max_sync, t);
    total += t;
  }
  score_.step_seconds = CombineStepSeconds(shape_, max_pipeline, max_sync);
  score_.total_seconds = total;
}

}  // namespace geotrain::planner
