#include "coordinator/placement.h"

#include <algorithm>
#include <tuple>

#include "coordinator/job_shape.h"

namespace geotrain::coordinator {

bool WorkerIdLess(const std::string& a, const std::string& b) {
  return std::make_tuple(a.size(), std::cref(a)) < std::make_tuple(b.size(), std::cref(b));
}

namespace {

void SortInOrder(std::vector<PlacementCandidate>& idle) {
  std::sort(idle.begin(), idle.end(), [](const PlacementCandidate& a, const PlacementCandidate& b) {
    if (a.region != b.region) return a.region < b.region;
    return WorkerIdLess(a.worker_id, b.worker_id);
  });
}

// Rank r = replica * num_stages + stage runs on idle[grid[r]].
std::vector<v1::Placement> PlacementsOf(const std::vector<PlacementCandidate>& idle,
                                        const planner::Grid& grid, int num_stages) {
  std::vector<v1::Placement> placements;
  placements.reserve(grid.size());
  for (size_t rank = 0; rank < grid.size(); ++rank) {
    const PlacementCandidate& worker = idle[grid[rank]];
    v1::Placement placement;
    placement.set_stage(static_cast<int>(rank % static_cast<size_t>(num_stages)));
    placement.set_replica(static_cast<int>(rank / static_cast<size_t>(num_stages)));
    placement.set_worker_id(worker.worker_id);
    placement.set_region(worker.region);
    placements.push_back(std::move(placement));
  }
  return placements;
}

planner::Grid InOrder(size_t ranks) {
  planner::Grid grid(ranks);
  for (size_t r = 0; r < ranks; ++r) grid[r] = r;
  return grid;
}

}  // namespace

std::vector<PlacementCandidate> CandidatesFor(const std::vector<PlacementCandidate>& idle,
                                              int cuda_devices, size_t ranks) {
  std::vector<PlacementCandidate> eligible;
  if (cuda_devices > 0) {
    for (const PlacementCandidate& worker : idle) {
      if (worker.cuda_devices < cuda_devices) continue;
      eligible.push_back(worker);
      eligible.back().speed = kCudaWorkerSpeed;
    }
    return eligible;
  }
  for (const PlacementCandidate& worker : idle) {
    if (worker.cuda_devices == 0) eligible.push_back(worker);
  }
  return eligible.size() >= ranks ? eligible : idle;
}

std::string WaitingForWorkers(size_t ranks, int cuda_devices, size_t eligible, size_t idle) {
  std::string text = std::to_string(ranks) + (ranks == 1 ? " idle worker" : " idle workers");
  if (cuda_devices == 0) {
    return text + "; " + std::to_string(idle) + (idle == 1 ? " is" : " are") + " idle now";
  }
  text += cuda_devices == 1
              ? " with a CUDA device"
              : " with " + std::to_string(cuda_devices) +
                    " CUDA devices (model.device cuda:" + std::to_string(cuda_devices - 1) + ")";
  return text + "; " + std::to_string(eligible) + " of the " + std::to_string(idle) + " idle now " +
         (eligible == 1 ? "qualifies" : "qualify");
}

std::optional<std::vector<v1::Placement>> PlaceInOrder(std::vector<PlacementCandidate> idle,
                                                       int num_stages, int replicas) {
  const size_t needed = static_cast<size_t>(num_stages) * static_cast<size_t>(replicas);
  if (idle.size() < needed) return std::nullopt;
  SortInOrder(idle);
  return PlacementsOf(idle, InOrder(needed), num_stages);
}

std::optional<PlannedPlacement> PlacePlanned(std::vector<PlacementCandidate> idle,
                                             const planner::JobShape& shape,
                                             const LinkLookup& lookup,
                                             const planner::PlannerOptions& options) {
  const size_t needed = static_cast<size_t>(shape.num_stages) * static_cast<size_t>(shape.replicas);
  if (idle.size() < needed) return std::nullopt;
  SortInOrder(idle);
  std::vector<planner::WorkerInfo> workers;
  for (const PlacementCandidate& c : idle) workers.push_back({c.worker_id, c.region, c.speed});
  planner::LinkCosts links(idle.size());
  for (size_t i = 0; i < idle.size(); ++i) {
    for (size_t j = 0; j < idle.size(); ++j) {
      if (i == j) continue;
      std::optional<planner::LinkCost> measured = lookup(idle[i].worker_id, idle[j].worker_id);
      if (measured && measured->bytes_per_second > 0) {
        links.at(i, j) = *measured;
      } else if (idle[i].region == idle[j].region) {
        links.at(i, j) = {kSameRegionGuessBytesPerSecond, kSameRegionGuessLatencySeconds};
      }
    }
  }
  PlannedPlacement result;
  const planner::Grid in_order = InOrder(needed);
  result.inorder_seconds =
      planner::EstimateStepCost(shape, workers, links, in_order, options.cost).step_seconds;
  const planner::Plan plan = planner::PlanPlacement(shape, workers, links, options);
  result.planner_seconds = plan.seconds;
  if (!plan.error.empty()) {
    result.start = "in-order (the planner refused the inputs: " + plan.error + ")";
  } else if (plan.cost.step_seconds < result.inorder_seconds * (1 - kMinPlannedGain)) {
    result.planned = true;
    result.planned_seconds = plan.cost.step_seconds;
    result.start = plan.start;
    result.placements = PlacementsOf(idle, plan.grid, shape.num_stages);
    return result;
  } else {
    result.start = "in-order (no plan at least 1% faster)";
  }
  result.planned_seconds = result.inorder_seconds;
  result.placements = PlacementsOf(idle, in_order, shape.num_stages);
  return result;
}

}  // namespace geotrain::coordinator
