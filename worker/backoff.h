// Backoff: the delays between attempts to reach the coordinator (registration, session).
//
// Exponential with jitter: the nominal delay starts at `initial`, doubles after every attempt and
// stops growing at `max`; each returned delay is drawn uniformly from [nominal * (1 - jitter),
// nominal], so that workers cut off together by a coordinator restart do not all come back in
// the same millisecond. Reset() after a success starts the sequence over.
//
// Not thread-safe; one per retry loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace geotrain::worker {

struct BackoffOptions {
  std::chrono::milliseconds initial{200};
  std::chrono::milliseconds max{5000};
  // Fraction of the nominal delay that may be taken off at random, in [0, 1]; 0: no jitter.
  double jitter = 0.5;
  // Seeds the jitter; tests fix it, the daemon uses a random device.
  uint64_t seed = 0;
};

class Backoff {
 public:
  explicit Backoff(const BackoffOptions& options);

  // The delay before the next attempt; advances the sequence.
  std::chrono::milliseconds Next();
  // Starts over at `initial` (after a successful attempt).
  void Reset();

 private:
  BackoffOptions options_;
  std::chrono::milliseconds nominal_;
  std::mt19937_64 random_;
};

}  // namespace geotrain::worker
