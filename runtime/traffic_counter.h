// TrafficCounter: the step's one byte counter, a cumulative TrafficCount per (peer, kind,
// direction), and the one way a report period's figures are taken from it (Since).
//
// Every byte figure of a step report is read through it (step_ledger.h). What the counts hold
// depends on who counted them, and the step line's figures are defined on that (see
// step_ledger.h): a pipeline link end (tensor_link.h) counts its own frames, with codec and wait
// seconds and relative errors; a data-parallel or tied-embedding sync counts its bytes as raw
// (what a float32 ring all-reduce would send) and wire, under kEveryPeer since a collective has
// no single peer; a transport (net/link_stats.h, read by step_traffic.h) counts every frame it
// moved. A reader keeps one TrafficCounter per view, copies it at the start of a period, and asks
// what a key gained since that copy.
//
// A count only grows. A reading smaller than its baseline means its source was reset
// (LinkStats::Reset), and then everything counted since the reset is what the period gained.
//
// LibTorch-free. A value type: not thread-safe; the runtime thread owns and reads it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/step_result.h"

namespace geotrain::runtime {

// The peer of a collective's counts, which have none.
inline constexpr int kEveryPeer = -1;

struct TrafficKey {
  int peer_stage = kEveryPeer;
  int peer_replica = kEveryPeer;
  TrafficKind kind = TrafficKind::kActivation;
  bool sent = true;  // false: received

  // The key of what a data-parallel or tied-embedding sync sent.
  static TrafficKey Sync(TrafficKind kind) { return {kEveryPeer, kEveryPeer, kind, true}; }

  bool operator==(const TrafficKey& other) const {
    return peer_stage == other.peer_stage && peer_replica == other.peer_replica &&
           kind == other.kind && sent == other.sent;
  }
};

// Cumulative counts of one key; a source that counts one key only (a link end, a sync) keeps one.
struct TrafficCount {
  uint64_t frames = 0;
  uint64_t raw_bytes = 0;   // before encoding (tensors as held; a sync's float32 equivalent)
  uint64_t wire_bytes = 0;  // frames as sent or received
  double codec_seconds = 0;
  // On the transport: a link end's seconds blocked on it (receiving, or flushing sends); a
  // transport's seconds from posting each frame to its completion.
  double wait_seconds = 0;
  double relative_error_sum = 0;  // sender: Σ of each frame's ||x - x̂|| / ||x||

  // What was counted after `before`, a reading of the same source (see the reset rule above).
  TrafficCount Since(const TrafficCount& before) const {
    return {Gained(frames, before.frames),
            Gained(raw_bytes, before.raw_bytes),
            Gained(wire_bytes, before.wire_bytes),
            Gained(codec_seconds, before.codec_seconds),
            Gained(wait_seconds, before.wait_seconds),
            Gained(relative_error_sum, before.relative_error_sum)};
  }

 private:
  template <typename T>
  static T Gained(T now, T before) {
    return now >= before ? now - before : now;
  }
};

class TrafficCounter {
 public:
  // Adds `count` to `key`'s total.
  void Add(const TrafficKey& key, const TrafficCount& count) {
    TrafficCount& total = Find(key);
    total.frames += count.frames;
    total.raw_bytes += count.raw_bytes;
    total.wire_bytes += count.wire_bytes;
    total.codec_seconds += count.codec_seconds;
    total.wait_seconds += count.wait_seconds;
    total.relative_error_sum += count.relative_error_sum;
  }
  // Takes `total` as `key`'s total: the reading of a source that keeps its own.
  void Set(const TrafficKey& key, const TrafficCount& total) { Find(key) = total; }

  // `key`'s total; zeros when nothing was counted under it.
  TrafficCount Total(const TrafficKey& key) const {
    for (const auto& [k, count] : entries_) {
      if (k == key) return count;
    }
    return {};
  }
  // What `key` gained since `before`, an earlier copy of this counter.
  TrafficCount Since(const TrafficCounter& before, const TrafficKey& key) const {
    return Total(key).Since(before.Total(key));
  }

 private:
  TrafficCount& Find(const TrafficKey& key) {
    for (auto& [k, count] : entries_) {
      if (k == key) return count;
    }
    return entries_.emplace_back(key, TrafficCount{}).second;
  }

  // A handful of keys per rank (its links' peers times four): a vector beats a map.
  std::vector<std::pair<TrafficKey, TrafficCount>> entries_;
};

}  // namespace geotrain::runtime
