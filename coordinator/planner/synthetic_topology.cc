#include "coordinator/planner/synthetic_topology.h"

#include <algorithm>

#include "coordinator/planner/seeded_rng.h"

namespace geotrain::planner {
namespace {

constexpr double kGbit = 1e9 / 8;  // bytes per second in one Gbit/s
constexpr const char* kRegionNames[] = {"us-east",    "eu-west",      "ap-northeast", "us-west",
                                        "eu-central", "ap-southeast", "sa-east",      "af-south"};

std::string RegionName(int i) {
  constexpr int kNamed = sizeof(kRegionNames) / sizeof(kRegionNames[0]);
  if (i < kNamed) return kRegionNames[i];
  return std::string(kRegionNames[i % kNamed]) + "-" + std::to_string(i / kNamed + 1);
}

// Region sizes proportional to the weights (largest remainder), each at least one.
std::vector<size_t> RegionSizes(size_t workers, const std::vector<double>& weights) {
  const size_t regions = weights.size();
  std::vector<size_t> sizes(regions, 1);
  const size_t spare = workers - regions;
  double total = 0;
  for (double w : weights) total += w;
  std::vector<std::pair<double, size_t>> remainders;
  size_t given = 0;
  for (size_t g = 0; g < regions; ++g) {
    const double share = spare * weights[g] / total;
    const size_t whole = static_cast<size_t>(share);
    sizes[g] += whole;
    given += whole;
    remainders.push_back({share - whole, g});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < spare; ++i, ++given) ++sizes[remainders[i].second];
  return sizes;
}

}  // namespace

SyntheticTopology MakeSyntheticTopology(const SyntheticTopologySpec& spec) {
  SyntheticTopology topo;
  topo.name = spec.name;
  const size_t n = spec.workers;
  const int regions = static_cast<int>(
      std::clamp<size_t>(spec.regions < 1 ? 1 : spec.regions, 1, std::max<size_t>(n, 1)));
  topo.regions = n == 0 ? 0 : regions;
  topo.links = LinkCosts(n);
  if (n == 0) return topo;
  SeededRng rng(spec.seed);

  std::vector<double> weights(static_cast<size_t>(regions));
  for (double& w : weights) w = rng.Uniform(1, 3);
  std::vector<size_t> remaining = RegionSizes(n, weights);

  // Join order: one worker per region in turn while the region has some left.
  std::vector<int> region_of;
  while (region_of.size() < n) {
    for (int g = 0; g < regions; ++g) {
      if (remaining[g] > 0) {
        --remaining[g];
        region_of.push_back(g);
      }
    }
  }
  for (size_t w = 0; w < n; ++w) {
    const double u = rng.Uniform(0, 1);
    const double speed = u < 0.3 ? 1.0 : (u < 0.7 ? 0.6 : 0.35);
    topo.workers.push_back({"w-" + std::to_string(w), RegionName(region_of[w]), speed});
  }

  // Region-pair figures, then per worker pair jitter.
  const size_t g_count = static_cast<size_t>(regions);
  std::vector<LinkCost> pair(g_count * g_count);
  for (size_t a = 0; a < g_count; ++a) {
    pair[a * g_count + a] = {10 * kGbit, 1e-4};
    for (size_t b = a + 1; b < g_count; ++b) {
      double gbit = rng.Uniform(0.3, 1.1);
      if (spec.skewed && rng.Uniform(0, 1) < 0.5) gbit = 0.3;
      const double latency = rng.Uniform(0.010, 0.150);
      pair[a * g_count + b] = {gbit * kGbit * rng.Uniform(0.9, 1.1), latency};
      pair[b * g_count + a] = {gbit * kGbit * rng.Uniform(0.9, 1.1), latency};
    }
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      LinkCost l = pair[static_cast<size_t>(region_of[i]) * g_count + region_of[j]];
      l.bytes_per_second *= rng.Uniform(0.95, 1.05);
      topo.links.at(i, j) = l;
    }
  }
  return topo;
}

}  // namespace geotrain::planner
