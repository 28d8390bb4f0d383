// `geotrain-bench placement`, DT-FM part: the planner on DT-FM's three published 64-GPU
// topologies (coordinator/planner/dtfm_topology.h), in DT-FM's node order and in a shuffled join
// order, at 1 micro-batch (DT-FM's formula's shape) and 32; scored by the step cost model and by
// DT-FM's formula, next to in-order, random grids, the best region layout found by enumerating
// every order (an independent reference) and DT-FM's published GCMA result.
#pragma once

#include "bench/placement_bench.h"

namespace geotrain::bench {

struct DtfmBenchSummary {
  int cases = 0;
  double max_planner_runtime_seconds = 0;
  // Planned DT-FM formula over published GCMA, worst over the 1-micro-batch cases (<= 1: no worse).
  double worst_dtfm_formula_vs_gcma = 0;
  // Planned seconds over the enumerated layouts' best, worst over every case (<= 1: no worse).
  double worst_planned_vs_enumerated = 0;
};

// Prints one JSON line per case whose topology name matches options.topology (all when empty).
DtfmBenchSummary RunDtfmPlacementCases(const PlacementBenchOptions& options);

}  // namespace geotrain::bench
