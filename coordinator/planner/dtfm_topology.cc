#include "coordinator/planner/dtfm_topology.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "coordinator/planner/seeded_rng.h"

namespace geotrain::planner {
namespace {

constexpr double kBytesPerGbit = 1e9 / 8;

// One undirected link: delay in ms, bandwidth in Gbit/s (DT-FM's units).
struct Figures {
  double delay_ms;
  double gbps;
};

using PairTable = std::map<std::pair<std::string, std::string>, Figures>;

// config.py delay_bandwidth_dict, the rows the worldwide case uses.
PairTable WorldwideTable() {
  return {{{"Oregon", "Virginia"}, {67, 0.79}},  {{"Oregon", "Ohio"}, {49, 1.10}},
          {{"Oregon", "Tokyo"}, {96, 0.523}},    {{"Oregon", "Seoul"}, {124, 0.46}},
          {{"Oregon", "London"}, {136, 0.42}},   {{"Oregon", "Frankfurt"}, {143, 0.404}},
          {{"Oregon", "Ireland"}, {124, 0.482}}, {{"Virginia", "Ohio"}, {11, 1.12}},
          {{"Virginia", "Tokyo"}, {143, 0.524}}, {{"Virginia", "Seoul"}, {172, 0.500}},
          {{"Virginia", "London"}, {76, 1.16}},  {{"Virginia", "Frankfurt"}, {90, 1.02}},
          {{"Virginia", "Ireland"}, {67, 1.05}}, {{"Ohio", "Tokyo"}, {130, 0.694}},
          {{"Ohio", "Seoul"}, {159, 0.529}},     {{"Ohio", "London"}, {86, 1.05}},
          {{"Ohio", "Frankfurt"}, {99, 0.799}},  {{"Ohio", "Ireland"}, {77, 1.14}},
          {{"Tokyo", "Seoul"}, {34, 1.10}},      {{"Tokyo", "London"}, {210, 0.366}},
          {{"Tokyo", "Frankfurt"}, {223, 0.36}}, {{"Tokyo", "Ireland"}, {199, 0.465}},
          {{"Seoul", "London"}, {238, 0.342}},   {{"Seoul", "Frankfurt"}, {235, 0.358}},
          {{"Seoul", "Ireland"}, {228, 0.335}},  {{"London", "Frankfurt"}, {14, 1.14}},
          {{"London", "Ireland"}, {12, 1.09}},   {{"Frankfurt", "Ireland"}, {24, 1.08}}};
}

// simulate_3_regional_geo_distributed.
PairTable RegionalTable() {
  return {{{"Virginia", "Oregon"}, {67, 1.15}}, {{"Virginia", "California"}, {59, 1.05}},
          {{"Virginia", "Ohio"}, {11, 1.12}},   {{"Oregon", "California"}, {12, 1.25}},
          {{"Oregon", "Ohio"}, {49, 1.10}},     {{"California", "Ohio"}, {52, 1.02}}};
}

struct CaseSpec {
  std::string name;
  std::vector<std::string> cities;  // node i is in cities[i / (64 / cities.size())]
  Figures inside;                   // between two GPUs of one city
  PairTable between;
  double activation_gb, gradient_gb, gcma_seconds;
};

CaseSpec SpecOf(DtfmCase which) {
  switch (which) {
    case DtfmCase::kMultiUniversity:
      return {"dtfm-multi-university",
              {"Ohio", "Virginia"},
              {1, 5},
              {{{"Ohio", "Virginia"}, {11, 1.12}}},
              288.0 / 1024,
              1,
              14.75};
    case DtfmCase::kRegional:
      return {"dtfm-regional",
              {"Virginia", "Oregon", "California", "Ohio"},
              {5, 2},
              RegionalTable(),
              0.4,
              0.7,
              31.42};
    case DtfmCase::kWorldwide:
    default:
      return {"dtfm-worldwide",
              {"Oregon", "Virginia", "Ohio", "Tokyo", "Seoul", "London", "Frankfurt", "Ireland"},
              {5, 2},
              WorldwideTable(),
              0.5,
              0.9,
              58.67};
  }
}

Figures Lookup(const CaseSpec& spec, const std::string& a, const std::string& b) {
  if (a == b) return spec.inside;
  auto it = spec.between.find({a, b});
  if (it == spec.between.end()) it = spec.between.find({b, a});
  return it->second;
}

}  // namespace

DtfmTopology MakeDtfmTopology(DtfmCase which, uint64_t shuffle_seed) {
  constexpr size_t kNodes = 64;
  const CaseSpec spec = SpecOf(which);
  std::vector<size_t> node(kNodes);  // position in the pool -> DT-FM node index
  std::iota(node.begin(), node.end(), 0);
  if (shuffle_seed != 0) {
    SeededRng rng(shuffle_seed);
    rng.Shuffle(node);
  }
  const size_t per_city = kNodes / spec.cities.size();
  auto city = [&](size_t position) { return spec.cities[node[position] / per_city]; };

  DtfmTopology topo;
  topo.name = spec.name;
  topo.activation_bytes = spec.activation_gb * 1e9;
  topo.gradient_bytes = spec.gradient_gb * 1e9;
  topo.published_gcma_seconds = spec.gcma_seconds;
  topo.links = LinkCosts(kNodes);
  for (size_t i = 0; i < kNodes; ++i) {
    topo.workers.push_back({city(i) + "-" + std::to_string(node[i]), city(i), 1.0});
    for (size_t j = 0; j < kNodes; ++j) {
      if (i == j) continue;
      const Figures f = Lookup(spec, city(i), city(j));
      topo.links.at(i, j) = {f.gbps * kBytesPerGbit, f.delay_ms / 1e3};
    }
  }
  return topo;
}

JobShape DtfmJobShape(const DtfmTopology& topology, int micro_batches) {
  constexpr int kStages = 8, kReplicas = 8;
  JobShape shape;
  shape.num_stages = kStages;
  shape.replicas = kReplicas;
  shape.micro_batches = micro_batches;
  shape.forward_seconds.assign(kStages, 0);
  shape.backward_seconds.assign(kStages, 0);
  shape.activation_bytes.assign(kStages - 1, topology.activation_bytes / micro_batches);
  shape.gradient_bytes.assign(kStages - 1, topology.activation_bytes / micro_batches);
  shape.sync_bytes.assign(kStages, topology.gradient_bytes);
  return shape;
}

double DtfmFormulaSeconds(const DtfmTopology& topology, const Grid& grid, int stages,
                          int replicas) {
  const size_t s_count = static_cast<size_t>(stages);
  const size_t d = static_cast<size_t>(replicas);
  auto at = [&](size_t r, size_t s) { return grid[r * s_count + s]; };
  double data_parallel = 0;
  for (size_t s = 0; s < s_count; ++s) {
    for (size_t i = 0; i < d; ++i) {
      double sum = 0;
      for (size_t j = 0; j < d; ++j) {
        if (i == j) continue;
        const LinkCost& l = topology.links.at(at(i, s), at(j, s));
        sum += 2 * (l.latency_seconds +
                    topology.gradient_bytes / (l.bytes_per_second * static_cast<double>(d)));
      }
      data_parallel = std::max(data_parallel, sum);
    }
  }
  double pipeline = 0;
  for (size_t s = 0; s + 1 < s_count; ++s) {
    double slowest = 0;
    for (size_t r = 0; r < d; ++r) {
      const LinkCost& l = topology.links.at(at(r, s), at(r, s + 1));
      slowest =
          std::max(slowest, l.latency_seconds + topology.activation_bytes / l.bytes_per_second);
    }
    pipeline += slowest;
  }
  return data_parallel + 2 * pipeline;
}

}  // namespace geotrain::planner
