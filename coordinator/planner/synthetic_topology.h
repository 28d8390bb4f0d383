// Synthetic geo-distributed worker pools for the planner's tests and `geotrain-bench placement`:
// deterministic from a seed, shaped like a pool registered from several clouds at once.
//
//  - Regions of uneven sizes (weights drawn from [1, 3)), every region at least one worker.
//  - Workers listed in join order: round-robin over the regions (as they register concurrently),
//    a region dropping out once it has no workers left.
//  - Speeds from three GPU classes: 1.0 (30%), 0.6 (40%), 0.35 (30%).
//  - Inside a region: 10 Gbit/s and 0.1 ms. Between regions: a per-pair bandwidth drawn from
//    [0.3, 1.1) Gbit/s (skewed: half the pairs at 0.3 Gbit/s), each direction scaled by [0.9,
//    1.1), and a per-pair latency from [10, 150) ms. Every worker pair gets +-5% jitter on its
//    bandwidth, as measured links do.
//
// Free functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/planner/step_cost_model.h"

namespace geotrain::planner {

struct SyntheticTopologySpec {
  std::string name;
  size_t workers = 8;
  int regions = 4;      // clamped to [1, workers]
  bool skewed = false;  // half the inter-region pairs at 0.3 Gbit/s
  uint64_t seed = 1;
};

struct SyntheticTopology {
  std::string name;
  int regions = 0;
  std::vector<WorkerInfo> workers;  // join order; ids "w-0", "w-1", ...
  LinkCosts links;
};

SyntheticTopology MakeSyntheticTopology(const SyntheticTopologySpec& spec);

}  // namespace geotrain::planner
