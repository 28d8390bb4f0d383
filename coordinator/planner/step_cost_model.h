// The step cost model: the seconds one training step of a pipeline x data-parallel job takes on a
// given placement, from directed link figures, worker speeds and what the job moves and computes.
//
// It follows Yuan et al. 2022 ("Decentralized Training of Foundation Models in Heterogeneous
// Environments"): step = slowest replica's GPipe critical path + slowest stage group's ring
// all-reduce (or the max of the two when the sync overlaps the next step's compute). Every
// formula is written out in docs/placement.md. The model never looks at region names: links
// inside a region are simply fast in the given figures.
//
// Plain values and free functions; everything here is thread-compatible and allocation-light so
// the planner can call it hundreds of thousands of times a second.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace geotrain::planner {

// Directed link figures between workers i -> j (i != j). bytes_per_second <= 0 means unknown.
struct LinkCost {
  double bytes_per_second = 0;
  double latency_seconds = 0;
};

// An n x n matrix of link figures, row = source worker, column = destination worker.
class LinkCosts {
 public:
  explicit LinkCosts(size_t n = 0) : n_(n), cells_(n * n) {}  // all zero = unknown
  size_t size() const { return n_; }
  LinkCost& at(size_t src, size_t dst) { return cells_[src * n_ + dst]; }
  const LinkCost& at(size_t src, size_t dst) const { return cells_[src * n_ + dst]; }

 private:
  size_t n_;
  std::vector<LinkCost> cells_;
};

struct WorkerInfo {
  std::string id;
  std::string region;  // used only by the search's heuristics, never by the cost
  double speed = 1.0;  // compute relative to 1.0 (a worker at 0.5 takes twice as long)
};

// What one step of a job moves and computes, as the coordinator estimates it.
struct JobShape {
  int num_stages = 1;
  int replicas = 1;
  int micro_batches = 1;
  std::vector<double> forward_seconds;   // per stage: one micro-batch's forward at speed 1
  std::vector<double> backward_seconds;  // per stage: its backward at speed 1
  std::vector<double>
      activation_bytes;  // per boundary s -> s+1 (size S-1): wire bytes per micro-batch
  std::vector<double>
      gradient_bytes;  // per boundary s+1 -> s (size S-1): wire bytes per micro-batch
  // Per stage: wire bytes of the gradient buffer the stage group ring-all-reduces once a step
  // (each replica sends 2(D-1)/D of it).
  std::vector<double> sync_bytes;
  bool sync_overlapped = false;  // the dp sync runs during the next step's compute (CocktailSGD)
};

// rank = replica * num_stages + stage -> index into the workers vector.
using Grid = std::vector<size_t>;

struct StepCost {
  double step_seconds = 0;
  double pipeline_seconds = 0;  // the slowest replica's forward + backward phases
  double sync_seconds = 0;      // the slowest stage group's ring all-reduce
  int slowest_replica = -1;
  int slowest_stage_group = -1;
};

struct CostOptions {
  // Figures a link with bytes_per_second <= 0 (not measured yet) costs: 1 Gbit/s and 50 ms, a
  // middling WAN link, so unmeasured links are neither preferred nor shunned.
  double unknown_bytes_per_second = 125e6;
  double unknown_latency_seconds = 0.05;
};

// "" when the shape is usable, else "field: reason" for the first problem.
std::string CheckJobShape(const JobShape& shape);
// "" when shape, workers, links and grid fit together (grid of S*D distinct worker indexes below
// workers.size(), links.size() == workers.size(), speeds > 0), else "field: reason".
std::string CheckPlacementInputs(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                                 const LinkCosts& links, const Grid& grid);

// The figures a transfer src -> dst costs: the given ones, or the unknown-link defaults.
// src == dst (never in a valid grid) costs nothing.
LinkCost EffectiveLink(const LinkCosts& links, size_t src, size_t dst, const CostOptions& options);

// The forward + backward phases of one replica's pipeline (the GPipe bound of docs/placement.md).
// Preconditions: CheckPlacementInputs(...) == "" and replica < shape.replicas.
double ReplicaPipelineSeconds(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                              const LinkCosts& links, const Grid& grid, int replica,
                              const CostOptions& options);

// The ring all-reduce of one stage group (its D workers) in replica order, the ring the runtime
// forms: replica r sends to replica r+1 (mod D). The planner picks the replica numbering
// (group_orders.h OrderReplicaRing). Same preconditions.
double StageGroupSyncSeconds(const JobShape& shape, const LinkCosts& links, const Grid& grid,
                             int stage, const CostOptions& options);

// How the two halves make a step: pipeline + sync, or max of them when the sync is overlapped.
double CombineStepSeconds(const JobShape& shape, double pipeline_seconds, double sync_seconds);

// The cost of a whole grid. When CheckPlacementInputs fails, step_seconds is +infinity and the
// slowest indexes are -1 (so an invalid grid never looks better than a valid one).
StepCost EstimateStepCost(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                          const LinkCosts& links, const Grid& grid,
                          const CostOptions& options = {});

// rank r -> worker r (join order): S*D entries, or an empty grid when worker_count < S*D.
Grid InOrderGrid(const JobShape& shape, size_t worker_count);

}  // namespace geotrain::planner
