// BuildEpochOrder: which blocks one epoch visits, and in which order, for a weighted mixture.
//
// An epoch is `samples_per_epoch` samples. Source i gets round(weight_i * samples_per_epoch) of
// them (largest remainders, so the counts add up exactly): weights are met exactly in every
// epoch, up to rounding, rather than only on average. Within a source, blocks are drawn from an
// endless stream of passes, each a fresh permutation of all its blocks (seeded by seed, source,
// pass); epoch e takes the next slice of that stream. So an up-weighted source repeats a block
// only after it has shown all of them, and a down-weighted one shows all of its blocks over
// several epochs. The epoch's samples are then shuffled together (seeded by seed, epoch).
//
// Everything derives from counter-based hashes (common/hash_random.h): the order is a pure
// function of the arguments, identical on every rank and every run, and any epoch can be built
// without building the ones before it. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace geotrain::models::data {

struct EpochMixture {
  std::vector<uint64_t> block_counts;  // per source, each > 0
  std::vector<double> weights;         // per source, > 0 (normalised here)
  uint64_t samples_per_epoch = 0;      // > 0
};

// Samples per source in one epoch (sums to samples_per_epoch).
StatusOr<std::vector<uint64_t>> SamplesPerSource(const EpochMixture& mixture);

// Fisher-Yates shuffle of `values` by SplitMix64(random_seed): the same order on every machine.
void ShuffleIds(std::vector<uint64_t>* values, uint64_t random_seed);

// The sample ids (sample_id.h) of epoch `epoch`, in visiting order.
StatusOr<std::vector<uint64_t>> BuildEpochOrder(const EpochMixture& mixture, uint64_t seed,
                                                uint64_t epoch);

}  // namespace geotrain::models::data
