// Helpers of the net/ tests: a group of ranks run as threads, byte patterns, a temp directory.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "net/transport.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::net::testing {

using std::chrono::milliseconds;

// Long enough never to fire in a passing test, short enough that a failing one ends soon.
constexpr milliseconds kOpTimeout{10000};

// The ranks of one group, and whatever must outlive them (a store's directory, say): declared
// first, so destroyed last.
struct TransportGroup {
  std::shared_ptr<void> resources;
  std::vector<std::unique_ptr<Transport>> ranks;
  Status status;  // why `ranks` is empty, if it is
};

// An implementation under test: a name for test output and a way to make groups of it.
struct TransportKind {
  std::string name;
  std::function<TransportGroup(int size)> create;
};

// Runs body(rank) on one thread per rank and joins them all.
inline void RunOnEveryRank(int size, const std::function<void(int rank)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) threads.emplace_back(body, rank);
  for (std::thread& thread : threads) thread.join();
}

// Deterministic bytes that differ between (size, seed) pairs, so a frame delivered to the wrong
// place or cut short does not compare equal.
inline std::vector<uint8_t> Pattern(size_t size, uint32_t seed) {
  std::vector<uint8_t> bytes(size);
  uint32_t x = seed * 2654435761u + static_cast<uint32_t>(size) + 1;
  for (uint8_t& b : bytes) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  return bytes;
}

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

using ::geotrain::testing::TempDir;

}  // namespace geotrain::net::testing
