// Counter-based randomness: the same (seed, stream, index) gives the same number on every
// machine, with no state to keep in sync. Used where sender and receiver (or all data-parallel
// ranks) must draw identical random choices: masks, random-k, stochastic rounding.
#pragma once

#include <cstdint>

#include "common/host_device.h"

namespace geotrain {

// SplitMix64's finaliser: a bijective 64-bit mix with good avalanche.
GEOTRAIN_HOST_DEVICE inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

GEOTRAIN_HOST_DEVICE inline uint64_t HashCounter(uint64_t seed, uint64_t stream, uint64_t index) {
  return Mix64(Mix64(seed ^ 0x9e3779b97f4a7c15ull) ^ Mix64(stream + 0x632be59bd9b4e019ull) ^
               (index * 0x9e3779b97f4a7c15ull));
}

// Uniform float in [0, 1) with 24 random bits.
GEOTRAIN_HOST_DEVICE inline float UniformFromHash(uint64_t h) {
  return static_cast<float>(h >> 40) * 0x1.0p-24f;
}

// A small, fast generator for sequences (initial factors, test data): xoshiro256**-like quality
// is not needed; SplitMix64 is enough and trivially reproducible.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return Mix64(state_ += 0x9e3779b97f4a7c15ull); }
  float Uniform() { return UniformFromHash(Next()); }
  // Standard normal by Box-Muller (deterministic, not the fastest).
  float Normal();

 private:
  uint64_t state_;
};

}  // namespace geotrain
