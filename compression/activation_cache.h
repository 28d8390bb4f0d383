// ActivationCache: the per-sample buffer m(ξ) of AC-SGD's delta compression, kept on both ends of
// a pipeline link and keyed by the dataset sample id.
//
// Both ends hold one; they stay bit-identical, with no resync message, because they apply the
// same operations in the same order through the same functions (StoreHalf for a first visit,
// AccumulateDelta for a later one). Each write also records an XXH3 hash of the stored bytes, which
// the delta codecs put in every delta frame so that a receiver whose cache has drifted (a lost
// frame, a different build) fails loudly instead of decoding a wrong tensor.
//
// Storage: `slots` fixed-size slots in a MappedSlotFile. Every sample has the same shape
// [rows, cols] (cols = the hidden channels), fixed at the first UseSampleShape; a later sample of
// another shape is refused. A slot holds either the fp16 values (cache_bits = 0, codec `delta`) or
// one fixpoint block of the sample quantized to cache_bits bits with one fp16 scale per channel
// (codec `delta-lowbits`, fixpoint_block.h).
//
// Recency: every write (StoreHalf, AccumulateDelta, Touch) makes its sample the most recent; reads
// do not. When a new sample arrives and every slot is taken, kEvictLeastRecent evicts the least
// recently written sample (identically on both ends) and kError refuses with RESOURCE_EXHAUSTED.
//
// After a checkpoint resume both ends call Clear(): caches start empty and first visits resend
// the full activation. Not thread-safe: one thread at a time (the codec that owns it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "compression/codec_config.h"
#include "compression/mapped_slot_file.h"
#include "compression/sample_slots.h"
#include "compression/types.h"

namespace geotrain::compression {

struct ActivationCacheOptions {
  int64_t max_samples = 20000;  // slots (CodecConfig::max_cache_samples)
  CacheFullPolicy full_policy = CacheFullPolicy::kEvictLeastRecent;
  // 0: fp16 values; 2, 4 or 8: a per-channel fixpoint block of that many bits (delta-lowbits).
  int cache_bits = 0;
  std::string dir;  // where the backing file is created; empty: $TMPDIR or /tmp
};

// OK if samples of [rows, cols] fit a cache whose sample shape is [fixed_rows, fixed_cols]
// (0 x 0: none fixed yet); the refusal names both shapes.
Status CheckCacheSampleShape(int64_t rows, int64_t cols, int64_t fixed_rows, int64_t fixed_cols);

class ActivationCache {
 public:
  // Checks the options (and that `dir` is a writable directory); the backing file is created by
  // the first UseSampleShape.
  static StatusOr<std::unique_ptr<ActivationCache>> Create(const ActivationCacheOptions& options);

  // OK if samples of [rows, cols] fit this cache: no shape fixed yet, or the same one.
  Status CheckSampleShape(int64_t rows, int64_t cols) const;
  // Fixes the sample shape at the first call (creating the backing file); afterwards the same as
  // CheckSampleShape.
  Status UseSampleShape(int64_t rows, int64_t cols);

  bool Contains(uint64_t id) const { return slots_.Contains(id); }
  // OK if `new_samples` samples not yet cached can be stored now (always, under eviction).
  Status CheckRoomFor(int64_t new_samples) const { return slots_.CheckRoomFor(new_samples); }

  // m(id) as float32 (sample_elements() values). NOT_FOUND if absent.
  Status Lookup(uint64_t id, float* out) const;
  // delta = values - m(id). INVALID_ARGUMENT if a value is NaN, infinite or beyond the fp16 range
  // the cache can represent.
  Status Subtract(uint64_t id, const float* values, float* delta) const;

  // Inserts or replaces sample `id` with fp16 values given as little-endian byte pairs (a first
  // visit's payload; any alignment). Values must be finite. Evicts or refuses when full.
  Status StoreHalf(uint64_t id, const uint8_t* half_values);
  // Store of float values rounded to fp16 (tests and tools; the codecs use StoreHalf).
  Status Store(uint64_t id, const float* values);
  // m(id) <- m(id) + delta in float32, clamped to the fp16 range, then stored in the cache's
  // format. `reconstruction` (nullable; may alias `delta`) receives the sum as the receiver's
  // stage sees it: float(fp16(sum)) for fp16 slots, the float32 sum itself for low-bit slots
  // (before re-quantization). With `reference` non-null, Σ(reference - reconstruction)² and
  // Σreference² are added to `error`. NOT_FOUND if absent.
  Status AccumulateDelta(uint64_t id, const float* delta, float* reconstruction,
                         const float* reference, ErrorSums* error);
  // Makes `id` the most recent sample without changing it (no-op if absent).
  void Touch(uint64_t id) { slots_.Touch(id); }
  // Drops `id` (no-op if absent).
  void Erase(uint64_t id) { slots_.Erase(id); }
  // Drops every sample and the sample shape, and releases the backing file.
  void Clear();

  // The stored bytes of `id` (empty if absent): for comparing two caches in tests.
  Span<const uint8_t> SampleBytes(uint64_t id) const;
  // XXH3-64 of SampleBytes(id), kept since the last write; 0 if absent.
  uint64_t ContentHash(uint64_t id) const;
  // Cached ids, least recent first.
  std::vector<uint64_t> IdsByRecency() const { return slots_.IdsByRecency(); }

  int64_t size() const { return slots_.size(); }
  int64_t capacity() const { return options_.max_samples; }
  int cache_bits() const { return options_.cache_bits; }
  CacheFullPolicy full_policy() const { return options_.full_policy; }
  const ActivationCacheOptions& options() const { return options_; }
  bool has_sample_shape() const { return rows_ > 0; }
  int64_t sample_rows() const { return rows_; }
  int64_t sample_cols() const { return cols_; }
  int64_t sample_elements() const { return rows_ * cols_; }
  size_t sample_bytes() const { return sample_bytes_; }

 private:
  using Entry = SampleSlots::Entry;

  explicit ActivationCache(ActivationCacheOptions options)
      : options_(std::move(options)), slots_(options_.max_samples, options_.full_policy) {}

  // The entry for `id`, inserted (with a reserved slot) if absent, and made the most recent.
  StatusOr<Entry*> Acquire(uint64_t id);
  // Writes the float32 values as a low-bit block into the entry's slot.
  Status WriteLowBits(Entry* entry, const float* values);
  void Rehash(Entry* entry);

  ActivationCacheOptions options_;
  int64_t rows_ = 0, cols_ = 0;
  size_t sample_bytes_ = 0;  // bytes of one stored sample (a slot may be padded beyond)
  std::unique_ptr<MappedSlotFile> file_;
  SampleSlots slots_;
  // Scratch for low-bit slots (decoded values, the re-quantized block).
  mutable std::vector<float> values_scratch_;
  std::vector<uint8_t> block_scratch_;
};

}  // namespace geotrain::compression
