// Searches over whole stage groups and whole replicas, exact where the count allows.
//
// A grid is S stage groups (the D workers of each stage), an order of those groups along the
// pipeline, a matching of neighbouring groups' members into replicas, and a replica numbering
// (which is also the ring order of every stage group's all-reduce: the runtime rings in replica
// order). Single-rank swaps change all of these one worker at a time and rarely move a whole
// group or a whole replica; these functions change each as a unit:
//  - OrderStageGroups: the best order of the stage groups along the pipeline, by dynamic
//    programming over subsets (Held-Karp) for every bottleneck threshold, with neighbouring groups
//    matched replica by replica over their slowest links (bottleneck bipartite matching).
//  - OrderReplicaRing: the replica numbering whose rings (one per stage group, all in replica
//    order) are cheapest: for every cap on a hop's latency, the Hamiltonian cycle over replicas
//    with the widest narrowest link (dynamic programming over subsets), judged by the exact ring
//    cost, then position swaps while they lower it.
// Each returns the input grid when it finds nothing cheaper under EstimateStepCost, so applying
// them never makes a grid worse. Pure functions; thread-safe.
#pragma once

#include <vector>

#include "coordinator/planner/step_cost_model.h"

namespace geotrain::planner {

// Up to this many units (stage groups or replicas) the orders are searched exactly
// (2^n * n^2 per threshold); above it OrderStageGroups keeps the order and OrderReplicaRing
// starts its swaps from a greedy ring.
constexpr int kMaxExactUnits = 10;

// Preconditions for all: CheckPlacementInputs(shape, workers, links, grid) == "".

// The stage groups of `grid` re-ordered along the pipeline and re-matched between neighbours,
// when that lowers the step; else `grid`.
Grid OrderStageGroups(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                      const LinkCosts& links, const Grid& grid, const CostOptions& options);

// `grid` with its replicas renumbered (whole pipelines keep their workers) so the stage groups'
// replica-order rings cost least, when that lowers the step; else `grid`.
Grid OrderReplicaRing(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                      const LinkCosts& links, const Grid& grid, const CostOptions& options);

// The cheapest perfect matching of rows to columns of an n x n cost matrix under "the largest
// matched cost is smallest" (ties: the smaller sum is not sought). Returns match[row] = column.
// Exposed for tests. Precondition: cost.size() == n * n, n >= 1.
std::vector<size_t> BottleneckMatching(const std::vector<double>& cost, size_t n);

// The order of n units (a path visiting each once, any start) that minimises
// sum of cost[a][b] over its hops + extra_per_max * (its largest hop), exactly, for n <=
// kMaxExactUnits (cost is n x n row-major, directed). Exposed for tests.
std::vector<size_t> BestPath(const std::vector<double>& cost, size_t n, double extra_per_max);

// A cycle over n units (starting at 0) minimising its largest hop, ties broken by the smaller
// sum, exactly for n <= kMaxExactUnits; a greedy cycle above. Infinite costs are missing hops;
// with no cycle over finite hops it returns 0, 1, ..., n-1. Exposed for tests.
std::vector<size_t> BottleneckCycle(const std::vector<double>& cost, size_t n);

}  // namespace geotrain::planner
