#include "coordinator/planner/step_cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace geotrain::planner {
namespace {

bool NonNegativeFinite(double v) { return std::isfinite(v) && v >= 0; }

std::string CheckVector(const std::vector<double>& v, size_t want, const char* name) {
  if (v.size() != want) {
    return std::string(name) + ": has " + std::to_string(v.size()) + " entries, expected " +
           std::to_string(want);
  }
  for (size_t i = 0; i < v.size(); ++i) {
    if (!NonNegativeFinite(v[i])) {
      return std::string(name) + "[" + std::to_string(i) + "]: " + std::to_string(v[i]) +
             " is not a finite value >= 0";
    }
  }
  return "";
}

// The time of one GPipe phase: the first micro-batch crosses every stage and link, then the
// slowest of them (compute or link) sets the pace of the remaining M-1 (docs/placement.md).
struct PhaseSum {
  double total = 0;
  double slowest = 0;
  void Add(double t) {
    total += t;
    slowest = std::max(slowest, t);
  }
  double Seconds(int micro_batches) const { return total + (micro_batches - 1) * slowest; }
};

// A ring's all-reduce time: 2(D-1) steps, each moving 1/D of the buffer over every ring link at
// once, so the narrowest link and the longest latency set the pace.
double RingSeconds(double bytes, size_t d, double min_bytes_per_second, double max_latency) {
  const double steps = 2.0 * static_cast<double>(d - 1);
  return steps / static_cast<double>(d) * bytes / min_bytes_per_second + steps * max_latency;
}

}  // namespace

std::string CheckJobShape(const JobShape& shape) {
  if (shape.num_stages < 1) return "num_stages: " + std::to_string(shape.num_stages) + " is < 1";
  if (shape.replicas < 1) return "replicas: " + std::to_string(shape.replicas) + " is < 1";
  if (shape.micro_batches < 1) {
    return "micro_batches: " + std::to_string(shape.micro_batches) + " is < 1";
  }
  const size_t s = static_cast<size_t>(shape.num_stages);
  for (const std::string& e : {CheckVector(shape.forward_seconds, s, "forward_seconds"),
                               CheckVector(shape.backward_seconds, s, "backward_seconds"),
                               CheckVector(shape.activation_bytes, s - 1, "activation_bytes"),
                               CheckVector(shape.gradient_bytes, s - 1, "gradient_bytes"),
                               CheckVector(shape.sync_bytes, s, "sync_bytes")}) {
    if (!e.empty()) return e;
  }
  return "";
}

std::string CheckPlacementInputs(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                                 const LinkCosts& links, const Grid& grid) {
  if (std::string e = CheckJobShape(shape); !e.empty()) return e;
  if (links.size() != workers.size()) {
    return "links: a " + std::to_string(links.size()) + "x" + std::to_string(links.size()) +
           " matrix for " + std::to_string(workers.size()) + " workers";
  }
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!(std::isfinite(workers[i].speed) && workers[i].speed > 0)) {
      return "workers[" + std::to_string(i) + "].speed: " + std::to_string(workers[i].speed) +
             " is not a finite value > 0";
    }
  }
  const size_t ranks = static_cast<size_t>(shape.num_stages) * shape.replicas;
  if (grid.size() != ranks) {
    return "grid: has " + std::to_string(grid.size()) +
           " ranks, expected num_stages * replicas = " + std::to_string(ranks);
  }
  std::vector<int> owner(workers.size(), -1);
  for (size_t r = 0; r < grid.size(); ++r) {
    if (grid[r] >= workers.size()) {
      return "grid[" + std::to_string(r) + "]: worker " + std::to_string(grid[r]) +
             " does not exist (" + std::to_string(workers.size()) + " workers)";
    }
    if (owner[grid[r]] >= 0) {
      return "grid[" + std::to_string(r) + "]: worker " + std::to_string(grid[r]) +
             " already runs rank " + std::to_string(owner[grid[r]]);
    }
    owner[grid[r]] = static_cast<int>(r);
  }
  return "";
}

LinkCost EffectiveLink(const LinkCosts& links, size_t src, size_t dst, const CostOptions& options) {
  if (src == dst) return {std::numeric_limits<double>::infinity(), 0};
  const LinkCost& l = links.at(src, dst);
  if (l.bytes_per_second > 0) return l;
  return {options.unknown_bytes_per_second, options.unknown_latency_seconds};
}

double ReplicaPipelineSeconds(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                              const LinkCosts& links, const Grid& grid, int replica,
                              const CostOptions& options) {
  const size_t s_count = static_cast<size_t>(shape.num_stages);
  const size_t base = static_cast<size_t>(replica) * s_count;
  PhaseSum forward, backward;
  for (size_t s = 0; s < s_count; ++s) {
    const size_t w = grid[base + s];
    forward.Add(shape.forward_seconds[s] / workers[w].speed);
    backward.Add(shape.backward_seconds[s] / workers[w].speed);
    if (s + 1 < s_count) {
      const size_t next = grid[base + s + 1];
      const LinkCost down = EffectiveLink(links, w, next, options);
      const LinkCost up = EffectiveLink(links, next, w, options);
      forward.Add(down.latency_seconds + shape.activation_bytes[s] / down.bytes_per_second);
      backward.Add(up.latency_seconds + shape.gradient_bytes[s] / up.bytes_per_second);
    }
  }
  return forward.Seconds(shape.micro_batches) + backward.Seconds(shape.micro_batches);
}

double StageGroupSyncSeconds(const JobShape& shape, const LinkCosts& links, const Grid& grid,
                             int stage, const CostOptions& options) {
  const size_t d = static_cast<size_t>(shape.replicas);
  const double bytes = shape.sync_bytes[static_cast<size_t>(stage)];
  if (d < 2 || bytes <= 0) return 0;
  const size_t s_count = static_cast<size_t>(shape.num_stages);
  // Replica order: the ring the runtime forms (the planner chooses the numbering to suit it).
  double min_bw = std::numeric_limits<double>::infinity();
  double max_lat = 0;
  for (size_t r = 0; r < d; ++r) {
    const LinkCost l =
        EffectiveLink(links, grid[r * s_count + static_cast<size_t>(stage)],
                      grid[((r + 1) % d) * s_count + static_cast<size_t>(stage)], options);
    min_bw = std::min(min_bw, l.bytes_per_second);
    max_lat = std::max(max_lat, l.latency_seconds);
  }
  return RingSeconds(bytes, d, min_bw, max_lat);
}

double CombineStepSeconds(const JobShape& shape, double pipeline_seconds, double sync_seconds) {
  return shape.sync_overlapped ? std::max(pipeline_seconds, sync_seconds)
                               : pipeline_seconds + sync_seconds;
}

StepCost EstimateStepCost(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                          const LinkCosts& links, const Grid& grid, const CostOptions& options) {
  StepCost cost;
  if (!CheckPlacementInputs(shape, workers, links, grid).empty()) {
    cost.step_seconds = std::numeric_limits<double>::infinity();
    return cost;
  }
  for (int r = 0; r < shape.replicas; ++r) {
    const double t = ReplicaPipelineSeconds(shape, workers, links, grid, r, options);
    if (cost.slowest_replica < 0 || t > cost.pipeline_seconds) {
      cost.pipeline_seconds = t;
      cost.slowest_replica = r;
    }
  }
  for (int s = 0; s < shape.num_stages; ++s) {
    const double t = StageGroupSyncSeconds(shape, links, grid, s, options);
    if (cost.slowest_stage_group < 0 || t > cost.sync_seconds) {
      cost.sync_seconds = t;
      cost.slowest_stage_group = s;
    }
  }
  cost.step_seconds = CombineStepSeconds(shape, cost.pipeline_seconds, cost.sync_seconds);
  return cost;
}

Grid InOrderGrid(const JobShape& shape, size_t worker_count) {
  const size_t ranks = static_cast<size_t>(std::max(shape.num_stages, 0)) *
                       static_cast<size_t>(std::max(shape.replicas, 0));
  if (worker_count < ranks) return {};
  Grid grid(ranks);
  for (size_t r = 0; r < ranks; ++r) grid[r] = r;
  return grid;
}

}  // namespace geotrain::planner
