// Backoff: the pauses of a retry loop, the one kind every loop of the tree uses (the worker's
// session with the coordinator, its rendezvous store, the CLI following a job).
//
// Exponential with jitter: the nominal delay starts at `initial`, doubles after every attempt and
// stops growing at `max`; each returned delay is drawn uniformly from [nominal * (1 - jitter),
// nominal], so that clients cut off together by a coordinator restart do not all come back in
// the same millisecond. Reset() after a success starts the sequence over.
//
// Wait() sleeps on the Clock it was given, so that tests of a retry loop pass a ManualClock and
// never sleep for real. Not thread-safe; one per retry loop. The clock must outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>

#include "common/clock.h"

namespace geotrain {

struct BackoffOptions {
  std::chrono::milliseconds initial{200};
  std::chrono::milliseconds max{5000};
  // Fraction of the nominal delay that may be taken off at random, in [0, 1]; 0: no jitter.
  double jitter = 0.5;
  // Seeds the jitter; unset: a seed from std::random_device, so that processes started together
  // draw apart. Tests fix it.
  std::optional<uint64_t> seed;
};

class Backoff {
 public:
  explicit Backoff(const BackoffOptions& options, Clock& clock = RealClock());

  // The delay before the next attempt; advances the sequence.
  std::chrono::milliseconds Next();
  // Sleeps Next() on the clock, cut to `at_most` (the time left before the caller's deadline, so
  // that the last pause ends on it and one more attempt is made right there). Returns the time
  // slept.
  std::chrono::milliseconds Wait(
      std::chrono::milliseconds at_most = std::chrono::milliseconds::max());
  // Starts over at `initial` (after a successful attempt).
  void Reset();

 private:
  BackoffOptions options_;
  Clock& clock_;
  std::chrono::milliseconds nominal_;
  std::mt19937_64 random_;
};

}  // namespace geotrain
