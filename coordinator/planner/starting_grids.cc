#include "coordinator/planner/starting_grids.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace geotrain::planner {
namespace {

// One region's workers, fastest first (ties: join order), and how many are still free.
struct RegionPool {
  std::vector<size_t> members;
  size_t next = 0;
  size_t free() const { return members.size() - next; }
};

bool FasterFirst(const std::vector<WorkerInfo>& workers, size_t a, size_t b) {
  if (workers[a].speed != workers[b].speed) return workers[a].speed > workers[b].speed;
  return a < b;
}

// Regions largest first (ties: first appearance).
std::vector<RegionPool> PoolsBySize(const std::vector<WorkerInfo>& workers) {
  const std::vector<int> region = RegionIndexes(workers);
  const int count = region.empty() ? 0 : *std::max_element(region.begin(), region.end()) + 1;
  std::vector<RegionPool> pools(static_cast<size_t>(count));
  for (size_t w = 0; w < workers.size(); ++w) pools[region[w]].members.push_back(w);
  for (RegionPool& p : pools) {
    std::sort(p.members.begin(), p.members.end(),
              [&](size_t a, size_t b) { return FasterFirst(workers, a, b); });
  }
  std::stable_sort(pools.begin(), pools.end(), [](const RegionPool& a, const RegionPool& b) {
    return a.members.size() > b.members.size();
  });
  return pools;
}

// Cuts `wanted` groups of `size` workers: first whole groups inside one region (largest regions
// first), then groups of the leftovers, region by region (most leftovers first).
std::vector<std::vector<size_t>> CutGroups(std::vector<RegionPool> pools, size_t wanted,
                                           size_t size) {
  std::vector<std::vector<size_t>> groups;
  for (RegionPool& p : pools) {
    while (groups.size() < wanted && p.free() >= size) {
      groups.emplace_back(p.members.begin() + p.next, p.members.begin() + p.next + size);
      p.next += size;
    }
  }
  std::stable_sort(pools.begin(), pools.end(),
                   [](const RegionPool& a, const RegionPool& b) { return a.free() > b.free(); });
  std::vector<size_t> leftovers;
  for (const RegionPool& p : pools) {
    leftovers.insert(leftovers.end(), p.members.begin() + p.next, p.members.end());
  }
  for (size_t i = 0; groups.size() < wanted && i + size <= leftovers.size(); i += size) {
    groups.emplace_back(leftovers.begin() + i, leftovers.begin() + i + size);
  }
  return groups;
}

// Stages heaviest first (forward + backward at speed 1; ties: stage order).
std::vector<size_t> StagesHeaviestFirst(const JobShape& shape) {
  std::vector<size_t> stages(static_cast<size_t>(shape.num_stages));
  std::iota(stages.begin(), stages.end(), 0);
  std::stable_sort(stages.begin(), stages.end(), [&](size_t a, size_t b) {
    return shape.forward_seconds[a] + shape.backward_seconds[a] >
           shape.forward_seconds[b] + shape.backward_seconds[b];
  });
  return stages;
}

Grid PipelinesInRegions(const JobShape& shape, const std::vector<WorkerInfo>& workers) {
  const size_t s_count = static_cast<size_t>(shape.num_stages);
  const std::vector<int> region = RegionIndexes(workers);
  const std::vector<size_t> heavy = StagesHeaviestFirst(shape);
  std::vector<std::vector<size_t>> replicas =
      CutGroups(PoolsBySize(workers), static_cast<size_t>(shape.replicas), s_count);
  Grid grid(s_count * replicas.size());
  for (size_t r = 0; r < replicas.size(); ++r) {
    std::vector<size_t>& members = replicas[r];
    const bool one_region = std::all_of(members.begin(), members.end(),
                                        [&](size_t w) { return region[w] == region[members[0]]; });
    for (size_t i = 0; i < s_count; ++i) {
      // Inside a region every link is alike: the fastest worker takes the heaviest stage. Across
      // regions the members stay region by region, so only one or two boundaries cross the WAN.
      grid[r * s_count + (one_region ? heavy[i] : i)] = members[i];
    }
  }
  return grid;
}

// Mean effective bandwidth from group a's r-th worker to group b's r-th worker.
double GroupBandwidth(const std::vector<size_t>& a, const std::vector<size_t>& b,
                      const LinkCosts& links, const CostOptions& options) {
  double sum = 0;
  for (size_t r = 0; r < a.size(); ++r)
    sum += EffectiveLink(links, a[r], b[r], options).bytes_per_second;
  return sum / static_cast<double>(a.size());
}

Grid StageGroupsInRegions(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                          const LinkCosts& links, const CostOptions& options) {
  const size_t s_count = static_cast<size_t>(shape.num_stages);
  const size_t d = static_cast<size_t>(shape.replicas);
  std::vector<std::vector<size_t>> groups = CutGroups(PoolsBySize(workers), s_count, d);
  // Chain the groups greedily: each next stage is the group reached over the widest links.
  std::vector<std::vector<size_t>> chain;
  std::vector<bool> taken(groups.size(), false);
  size_t current = 0;
  taken[0] = true;
  chain.push_back(groups[0]);
  while (chain.size() < groups.size()) {
    size_t best = groups.size();
    double best_bw = -1;
    for (size_t g = 0; g < groups.size(); ++g) {
      if (taken[g]) continue;
      const double bw = GroupBandwidth(groups[current], groups[g], links, options);
      if (bw > best_bw) {
        best = g;
        best_bw = bw;
      }
    }
    taken[best] = true;
    chain.push_back(groups[best]);
    current = best;
  }
  Grid grid(s_count * d);
  for (size_t s = 0; s < s_count; ++s) {
    for (size_t r = 0; r < d; ++r) grid[r * s_count + s] = chain[s][r];
  }
  return grid;
}

Grid FastestInOrder(const JobShape& shape, const std::vector<WorkerInfo>& workers) {
  std::vector<size_t> order(workers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return FasterFirst(workers, a, b); });
  order.resize(static_cast<size_t>(shape.num_stages) * shape.replicas);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

std::vector<int> RegionIndexes(const std::vector<WorkerInfo>& workers) {
  std::map<std::string, int> index;
  std::vector<int> out;
  out.reserve(workers.size());
  for (const WorkerInfo& w : workers) {
    auto [it, inserted] = index.emplace(w.region, static_cast<int>(index.size()));
    out.push_back(it->second);
  }
  return out;
}

std::vector<StartingGrid> StartingGrids(const JobShape& shape,
                                        const std::vector<WorkerInfo>& workers,
                                        const LinkCosts& links, const CostOptions& options) {
  return {{"in-order", InOrderGrid(shape, workers.size())},
          {"fastest-in-order", FastestInOrder(shape, workers)},
          {"pipelines-in-regions", PipelinesInRegions(shape, workers)},
          {"stage-groups-in-regions", StageGroupsInRegions(shape, workers, links, options)}};
}

}  // namespace geotrain::planner
