#include "coordinator/placement.h"

#include <algorithm>
#include <tuple>

namespace geotrain::coordinator {

bool WorkerIdLess(const std::string& a, const std::string& b) {
  return std::make_tuple(a.size(), std::cref(a)) < std::make_tuple(b.size(), std::cref(b));
}

std::optional<std::vector<v1::Placement>> PlaceInOrder(std::vector<PlacementCandidate> idle,
                                                       int num_stages, int replicas) {
  const size_t needed = static_cast<size_t>(num_stages) * static_cast<size_t>(replicas);
  if (idle.size() < needed) return std::nullopt;
  std::sort(idle.begin(), idle.end(),
            [](const PlacementCandidate& a, const PlacementCandidate& b) {
              if (a.region != b.region) return a.region < b.region;
              return WorkerIdLess(a.worker_id, b.worker_id);
            });
  std::vector<v1::Placement> placements;
  placements.reserve(needed);
  for (int replica = 0; replica < replicas; ++replica) {
    for (int stage = 0; stage < num_stages; ++stage) {
      const PlacementCandidate& worker = idle[placements.size()];
      v1::Placement placement;
      placement.set_stage(stage);
      placement.set_replica(replica);
      placement.set_worker_id(worker.worker_id);
      placement.set_region(worker.region);
      placements.push_back(std::move(placement));
    }
  }
  return placements;
}

}  // namespace geotrain::coordinator
