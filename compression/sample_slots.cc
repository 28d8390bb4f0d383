#include "compression/sample_slots.h"

#include <iterator>
#include <string>

namespace geotrain::compression {

const SampleSlots::Entry* SampleSlots::Find(uint64_t id) const {
  const auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second;
}

Status SampleSlots::CheckRoomFor(int64_t new_samples) const {
  if (policy_ == CacheFullPolicy::kEvictLeastRecent || size() + new_samples <= capacity_) {
    return OkStatus();
  }
  return ResourceExhausted("max_cache_samples: the activation cache holds " +
                           std::to_string(size()) + " of " + std::to_string(capacity_) +
                           " samples and cache_full_policy=error refuses " +
                           std::to_string(new_samples) + " more");
}

StatusOr<SampleSlots::Entry*> SampleSlots::Acquire(
    uint64_t id, const std::function<Status(int64_t slot)>& reserve_fresh) {
  auto it = entries_.find(id);
  if (it != entries_.end()) {
    recency_.splice(recency_.end(), recency_, it->second.recency);
    return &it->second;
  }
  int64_t slot;
  if (size() == capacity_) {
    GEOTRAIN_RETURN_IF_ERROR(CheckRoomFor(1));
    const uint64_t victim = recency_.front();  // the least recently written sample
    slot = entries_.at(victim).slot;
    entries_.erase(victim);
    recency_.pop_front();
  } else if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    GEOTRAIN_RETURN_IF_ERROR(reserve_fresh(fresh_slots_used_));
    slot = fresh_slots_used_++;
  }
  recency_.push_back(id);
  Entry& entry = entries_[id];
  entry.slot = slot;
  entry.recency = std::prev(recency_.end());
  entry.content_hash = 0;
  return &entry;
}

void SampleSlots::Touch(uint64_t id) {
  const auto it = entries_.find(id);
  if (it != entries_.end()) recency_.splice(recency_.end(), recency_, it->second.recency);
}

void SampleSlots::Erase(uint64_t id) {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return;
  free_slots_.push_back(it->second.slot);
  recency_.erase(it->second.recency);
  entries_.erase(it);
}

void SampleSlots::Clear() {
  entries_.clear();
  recency_.clear();
  free_slots_.clear();
  fresh_slots_used_ = 0;
}

}  // namespace geotrain::compression
