// SampleSlots: which slot of an activation cache holds which sample, and which sample was written
// least recently. The bookkeeping both activation caches share, apart from where their slots
// live: ActivationCache (a memory-mapped file) and cuda::DeviceActivationCache (device memory).
// Both ends of a link must evict the same samples, so this one implementation decides for both.
//
// Recency: Acquire and Touch make a sample the most recent. When a new sample arrives and every
// slot is taken, kEvictLeastRecent reuses the least recent sample's slot and kError refuses with
// RESOURCE_EXHAUSTED. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "compression/codec_config.h"

namespace geotrain::compression {

class SampleSlots {
 public:
  struct Entry {
    int64_t slot = 0;
    uint64_t content_hash = 0;  // of the slot's bytes since the last write; the owner keeps it
    std::list<uint64_t>::iterator recency;
  };

  SampleSlots(int64_t capacity, CacheFullPolicy policy) : capacity_(capacity), policy_(policy) {}

  const Entry* Find(uint64_t id) const;
  bool Contains(uint64_t id) const { return entries_.count(id) != 0; }
  // OK if `new_samples` samples not yet held can be stored now (always, under eviction).
  Status CheckRoomFor(int64_t new_samples) const;
  // The entry of `id`, made the most recent. An absent id gets a slot: one Erase released, else a
  // slot never used before (`reserve_fresh(slot)` runs first and may refuse), else, when full and
  // evicting, the least recent sample's. Its content_hash starts at 0.
  StatusOr<Entry*> Acquire(uint64_t id, const std::function<Status(int64_t slot)>& reserve_fresh);
  // Makes `id` the most recent without changing it (no-op if absent).
  void Touch(uint64_t id);
  // Drops `id`, releasing its slot (no-op if absent).
  void Erase(uint64_t id);
  // Drops every sample; slots are numbered from 0 again.
  void Clear();

  std::vector<uint64_t> IdsByRecency() const { return {recency_.begin(), recency_.end()}; }
  int64_t size() const { return static_cast<int64_t>(entries_.size()); }
  int64_t capacity() const { return capacity_; }
  CacheFullPolicy policy() const { return policy_; }

 private:
  int64_t capacity_;
  CacheFullPolicy policy_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::list<uint64_t> recency_;      // least recent first
  std::vector<int64_t> free_slots_;  // released by Erase
  int64_t fresh_slots_used_ = 0;     // slots [0, fresh_slots_used_) have been handed out
};

}  // namespace geotrain::compression
