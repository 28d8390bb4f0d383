// `geotrain-bench placement`: the planner against in-order and random placement on synthetic
// geo-distributed pools (coordinator/planner/synthetic_topology.h) and DT-FM's three published
// pools (placement_dtfm.h), by the step cost model.
#pragma once

#include <cstdint>
#include <string>

namespace geotrain::bench {

struct PlacementBenchOptions {
  uint64_t seed = 1;          // seeds the topologies, the random grids and the planner
  uint64_t planner_seed = 0;  // seeds the planner instead of `seed` when not 0
  std::string topology;       // only the topology of this name ("" = all)
  double budget = 0.5;        // the planner's time budget, seconds
};

// Prints one JSON line per topology and a summary line; returns 0, or 2 for bad options.
int RunPlacementBench(const PlacementBenchOptions& options);

}  // namespace geotrain::bench
