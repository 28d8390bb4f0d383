#include "models/data/epoch_order.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "common/hash_random.h"
#include "models/data/sample_id.h"

namespace geotrain::models::data {
namespace {

// Streams of HashCounter: one for the epoch shuffle, one per source for its passes.
constexpr uint64_t kEpochShuffleStream = 0x45504f4348ull;    // "EPOCH"
constexpr uint64_t kSourcePassStream = 0x50415353ull << 32;  // "PASS" << 32 | source index

// Uniform in [0, bound) by multiply-high (no modulo bias worth the name, and deterministic).
uint64_t UniformBelow(SplitMix64* random, uint64_t bound) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(random->Next()) * bound) >> 64);
}

// Block indexes of pass `pass` over a source of `block_count` blocks.
std::vector<uint64_t> PassPermutation(uint64_t block_count, uint64_t seed, uint64_t source,
                                      uint64_t pass) {
  std::vector<uint64_t> blocks(block_count);
  std::iota(blocks.begin(), blocks.end(), uint64_t{0});
  ShuffleIds(&blocks, HashCounter(seed, kSourcePassStream | source, pass));
  return blocks;
}

}  // namespace

void ShuffleIds(std::vector<uint64_t>* values, uint64_t random_seed) {
  SplitMix64 random(random_seed);
  for (size_t i = values->size(); i > 1; --i) {
    std::swap((*values)[i - 1], (*values)[UniformBelow(&random, i)]);
  }
}

StatusOr<std::vector<uint64_t>> SamplesPerSource(const EpochMixture& mixture) {
  const size_t n = mixture.block_counts.size();
  if (n == 0 || mixture.weights.size() != n) {
    return InvalidArgument("epoch mixture: " + std::to_string(n) + " block counts and " +
                           std::to_string(mixture.weights.size()) + " weights");
  }
  if (mixture.samples_per_epoch == 0) return InvalidArgument("samples_per_epoch: must be > 0");
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (mixture.block_counts[i] == 0) {
      return InvalidArgument("source " + std::to_string(i) + ": no blocks");
    }
    if (!(mixture.weights[i] > 0) || !std::isfinite(mixture.weights[i])) {
      return InvalidArgument("source " + std::to_string(i) + ": weight must be finite and > 0");
    }
    total += mixture.weights[i];
  }
  // Largest remainder: floor of each share, then one more to the largest fractions (ties to the
  // lower source index, so the result is deterministic).
  std::vector<uint64_t> counts(n);
  std::vector<std::pair<double, size_t>> remainders(n);
  uint64_t assigned = 0;
  for (size_t i = 0; i < n; ++i) {
    const double share =
        mixture.weights[i] / total * static_cast<double>(mixture.samples_per_epoch);
    counts[i] = static_cast<uint64_t>(std::floor(share));
    remainders[i] = {share - std::floor(share), i};
    assigned += counts[i];
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; assigned < mixture.samples_per_epoch; k = (k + 1) % n, ++assigned) {
    ++counts[remainders[k].second];
  }
  return counts;
}

StatusOr<std::vector<uint64_t>> BuildEpochOrder(const EpochMixture& mixture, uint64_t seed,
                                                uint64_t epoch) {
  GEOTRAIN_ASSIGN_OR_RETURN(const std::vector<uint64_t> counts, SamplesPerSource(mixture));
  std::vector<uint64_t> order;
  order.reserve(mixture.samples_per_epoch);
  for (size_t source = 0; source < counts.size(); ++source) {
    const uint64_t blocks = mixture.block_counts[source];
    // This epoch's slice [begin, begin + count) of the source's stream of passes.
    const unsigned __int128 begin = static_cast<unsigned __int128>(epoch) * counts[source];
    uint64_t pass = static_cast<uint64_t>(begin / blocks);
    uint64_t offset = static_cast<uint64_t>(begin % blocks);
    std::vector<uint64_t> permutation;
    for (uint64_t taken = 0; taken < counts[source];) {
      if (permutation.empty()) permutation = PassPermutation(blocks, seed, source, pass);
      const uint64_t take = std::min(counts[source] - taken, blocks - offset);
      for (uint64_t k = 0; k < take; ++k) {
        order.push_back(MakeSampleId(source, permutation[offset + k]));
      }
      taken += take;
      offset += take;
      if (offset == blocks) {
        offset = 0;
        ++pass;
        permutation.clear();
      }
    }
  }
  ShuffleIds(&order, HashCounter(seed, kEpochShuffleStream, epoch));
  return order;
}

}  // namespace geotrain::models::data
