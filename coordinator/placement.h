// In-order placement: which idle worker runs which rank of a job.
//
// Workers are sorted by (region, id) and rank r = replica * num_stages + stage takes the r-th,
// so the stages of one replica sit next to each other in one region where the pool allows (their
// pipeline links carry the most traffic), and the choice is deterministic for a given pool.
// Link-aware placement (the cost model of docs/architecture.md) replaces this once links are
// measured.
//
// Plain functions over values; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "geotrain/v1/job.pb.h"

namespace geotrain::coordinator {

struct PlacementCandidate {
  std::string worker_id;
  std::string region;
};

// Worker ids in their natural order: "w-2" before "w-10" (shorter first, then by text).
bool WorkerIdLess(const std::string& a, const std::string& b);

// The placements of every rank, in rank order, or nullopt when there are fewer than
// num_stages * replicas candidates. Preconditions: num_stages >= 1, replicas >= 1.
std::optional<std::vector<v1::Placement>> PlaceInOrder(std::vector<PlacementCandidate> idle,
                                                       int num_stages, int replicas);

}  // namespace geotrain::coordinator
