// Placement: which idle worker runs which rank of a job.
//
// In-order: workers are sorted by (region, id) and rank r = replica * num_stages + stage takes
// the r-th, so the stages of one replica sit next to each other in one region where the pool
// allows, and the choice is deterministic for a given pool. PlacePlanned starts from that order
// and lets the planner (coordinator/planner/, docs/placement.md) search for a grid its step cost
// model predicts faster on the measured links; it keeps in-order unless the plan wins by at least
// kMinPlannedGain, so equal-cost pools (one region, nothing measured) stay predictable.
//
// Plain functions over values; thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/planner/placement_planner.h"
#include "geotrain/v1/job.pb.h"

namespace geotrain::coordinator {

struct PlacementCandidate {
  std::string worker_id;
  std::string region;
  // Compute relative to the planner's reference (job_shape.h WorkerSpeed) for the job being
  // placed: the CPUs' until CandidatesFor picks the workers of a CUDA job.
  double speed = 1.0;
  int cuda_devices = 0;  // job_shape.h CudaDevicesOf
};

// A plan must predict a step at least this much shorter than in-order to replace it.
constexpr double kMinPlannedGain = 0.01;
// Unmeasured links inside one region are taken as a datacenter network; unmeasured links between
// regions get the planner's middling default (CostOptions::unknown_*).
constexpr double kSameRegionGuessBytesPerSecond = 1.25e9;
constexpr double kSameRegionGuessLatencySeconds = 0.0002;

// The figures of the link src -> dst as measured (nullopt: never measured).
using LinkLookup =
    std::function<std::optional<planner::LinkCost>(const std::string& src, const std::string& dst)>;

struct PlannedPlacement {
  std::vector<v1::Placement> placements;  // in rank order
  bool planned = false;                   // false: in-order was kept
  double inorder_seconds = 0;             // the cost model's step for in-order
  double planned_seconds = 0;             // ... for the placements returned
  double planner_seconds = 0;             // the search's own time
  std::string start;  // the starting grid the plan came from, or why in-order stayed
};

// The workers of `idle` that can run a rank of a job needing `cuda_devices` CUDA devices per
// worker (job_shape.h CudaDevicesNeeded), each with its speed for that job. A CPU job (0) runs on
// any worker, but is kept off the GPU workers when enough others are idle (`ranks` of them), so
// they stay free for the jobs that need them.
std::vector<PlacementCandidate> CandidatesFor(const std::vector<PlacementCandidate>& idle,
                                              int cuda_devices, size_t ranks);

// What a job waits for when fewer than `ranks` of the `idle` workers qualify (`eligible` do), as
// Job.waiting_for says it: "4 idle workers; 2 are idle now".
std::string WaitingForWorkers(size_t ranks, int cuda_devices, size_t eligible, size_t idle);

// Worker ids in their natural order: "w-2" before "w-10" (shorter first, then by text).
bool WorkerIdLess(const std::string& a, const std::string& b);

// The placements of every rank, in rank order, or nullopt when there are fewer than
// num_stages * replicas candidates. Preconditions: num_stages >= 1, replicas >= 1.
std::optional<std::vector<v1::Placement>> PlaceInOrder(std::vector<PlacementCandidate> idle,
                                                       int num_stages, int replicas);

// The planner's placement of `shape` over `idle` (in-order when it gains less than
// kMinPlannedGain, or when the planner refuses the inputs), or nullopt when there are fewer than
// S x D candidates.
std::optional<PlannedPlacement> PlacePlanned(std::vector<PlacementCandidate> idle,
                                             const planner::JobShape& shape,
                                             const LinkLookup& lookup,
                                             const planner::PlannerOptions& options);

}  // namespace geotrain::coordinator
