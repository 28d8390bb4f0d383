// DT-FM's three geo-distributed 64-GPU benchmark topologies and its scheduler's cost formula
// (Yuan et al., NeurIPS 2022, "Decentralized Training of Foundation Models in Heterogeneous
// Environments"; repository DS3Lab/DT-FM, scheduler/heuristic_evolutionary_solver/config.py and
// scheduler.py), so `geotrain-bench placement` and tests can compare plans with its published
// GCMA results on its own cases. The tables are deterministic in DT-FM (no random draw); the only
// randomness here is the optional shuffled join order.
//
// Plain values and free functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/planner/step_cost_model.h"

namespace geotrain::planner {

enum class DtfmCase {
  kMultiUniversity,  // config.py simulate_2: 32 GPUs in Ohio, 32 in Virginia
  kRegional,         // simulate_3: 16 each in Virginia, Oregon, California, Ohio
  kWorldwide,        // simulate_4: 8 each in Oregon, Virginia, Ohio, Tokyo, Seoul, London,
                     // Frankfurt, Ireland
};

struct DtfmTopology {
  std::string name;                   // "dtfm-multi-university", "dtfm-regional", "dtfm-worldwide"
  std::vector<WorkerInfo> workers;    // 64, region = city; speed 1 (DT-FM ignores compute)
  LinkCosts links;                    // DT-FM's delay (ms) and bandwidth (Gbit/s), converted
  double activation_bytes = 0;        // config.send_activation_size (GB, taken as 1e9 bytes)
  double gradient_bytes = 0;          // config.send_gradient_size
  double published_gcma_seconds = 0;  // the paper's GCMA result for this case
};

// The topology in DT-FM's node order (shuffle_seed == 0), or with the workers (and their links)
// permuted by a seeded shuffle, as a pool whose members joined in another order would be.
DtfmTopology MakeDtfmTopology(DtfmCase which, uint64_t shuffle_seed);

// GPT3-XL as DT-FM splits it: 8 stages x 8 replicas, no compute (DT-FM's formula has none), the
// step's activations (and gradients back) in `micro_batches` equal micro-batches, each stage's
// data-parallel gradient `gradient_bytes`.
JobShape DtfmJobShape(const DtfmTopology& topology, int micro_batches);

// DT-FM's scheduler cost of `grid` (stage groups = its partitions), data-parallel cost + 2 x
// pipeline cost, as laid out: the pipeline cost sums, per boundary, the slowest of the grid's
// replica hops (DT-FM itself takes the best order and matching of the partitions, so a grid it
// produced scores the same here). dp = max over groups and members i of
// sum_{j != i} 2 (delay_ij + gradient_bytes / (bw_ij * D)); hop = delay + activation_bytes / bw.
// Preconditions: grid has S*D valid, distinct worker indexes of the topology.
double DtfmFormulaSeconds(const DtfmTopology& topology, const Grid& grid, int stages, int replicas);

}  // namespace geotrain::planner
