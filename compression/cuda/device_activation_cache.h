// DeviceActivationCache: AC-SGD's per-sample activation cache m(ξ) (activation_cache.h) held in
// CUDA device memory, for the CUDA delta codec.
//
// Same contract as ActivationCache with fp16 slots (cache_bits 0): the same SampleSlots
// bookkeeping decides recency and eviction, the slots hold the same fp16 bytes, and ContentHash
// is the same XXH3-64 of them, so a GPU end and a CPU end of one link stay in step. Hashing
// copies each written slot to the host (through pinned memory): XXH3 is a sequential hash that
// would gain nothing on the GPU. Slots are allocated in chunks as samples arrive, so
// max_cache_samples bounds the memory rather than reserving it; running out of device memory is
// RESOURCE_EXHAUSTED naming max_cache_samples.
//
// Not thread-safe: one thread at a time (the codec that owns it), work on the codec's stream.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "compression/activation_cache.h"
#include "compression/cuda/device_memory.h"
#include "compression/sample_slots.h"

namespace geotrain::compression::cuda {

class DeviceActivationCache {
 public:
  // Checks the options: max_samples >= 1, cache_bits 0 (delta-lowbits stays on the CPU codec).
  static StatusOr<std::unique_ptr<DeviceActivationCache>> Create(
      const ActivationCacheOptions& options, Stream stream);

  Status CheckSampleShape(int64_t rows, int64_t cols) const {
    return CheckCacheSampleShape(rows, cols, rows_, cols_);
  }
  Status UseSampleShape(int64_t rows, int64_t cols);

  bool Contains(uint64_t id) const { return slots_.Contains(id); }
  Status CheckRoomFor(int64_t new_samples) const { return slots_.CheckRoomFor(new_samples); }
  uint64_t ContentHash(uint64_t id) const;
  // The fp16 values of a cached sample in device memory; nullptr if absent.
  const uint8_t* Slot(uint64_t id) const;

  // m(id) <- the fp16 byte pairs at `device_half` (a first visit's payload section).
  Status StoreHalf(uint64_t id, const uint8_t* device_half);
  // m(id) <- fp16(clamp(m + delta)) (AddDeltaToHalfOnDevice's arguments). NOT_FOUND if absent.
  Status AccumulateDelta(uint64_t id, const float* delta, float* reconstruction,
                         const float* reference, double* sums);
  void Touch(uint64_t id) { slots_.Touch(id); }
  void Erase(uint64_t id) { slots_.Erase(id); }
  // Drops every sample and the sample shape, and frees the device memory.
  void Clear();

  // The stored bytes of `id` copied to the host (empty if absent): for tests.
  StatusOr<std::vector<uint8_t>> SampleBytes(uint64_t id) const;

  int64_t size() const { return slots_.size(); }
  int64_t capacity() const { return options_.max_samples; }
  int cache_bits() const { return 0; }
  CacheFullPolicy full_policy() const { return options_.full_policy; }
  bool has_sample_shape() const { return rows_ > 0; }
  int64_t sample_elements() const { return rows_ * cols_; }

 private:
  static constexpr int64_t kSlotsPerChunk = 16;

  DeviceActivationCache(ActivationCacheOptions options, Stream stream)
      : options_(std::move(options)),
        stream_(stream),
        slots_(options_.max_samples, options_.full_policy) {}

  uint8_t* SlotAddress(int64_t slot) const;
  Status ReserveSlot(int64_t slot);
  StatusOr<SampleSlots::Entry*> Acquire(uint64_t id);
  // Recomputes the entry's content hash from its slot.
  Status Rehash(SampleSlots::Entry* entry);

  ActivationCacheOptions options_;
  Stream stream_;
  SampleSlots slots_;
  int64_t rows_ = 0, cols_ = 0;
  size_t sample_bytes_ = 0;          // 2 * rows * cols
  size_t slot_bytes_ = 0;            // sample_bytes_ rounded up to 256
  std::vector<DeviceBytes> chunks_;  // kSlotsPerChunk slots each
  mutable PinnedBytes staging_;
};

}  // namespace geotrain::compression::cuda
