// DeltaFrameParams: the params section of a delta / delta-lowbits frame, and its validation.
//
// Wire layout (little-endian):
//   u8 bits, u8 scale_mode, u32 tile          quantizer of the delta blocks (PutQuantParams)
//   u8 cache_bits                             0: fp16 cache (delta); 2, 4, 8: delta-lowbits
//   u8 cache_full_policy, u64 max_cache_samples   the sender's cache bounds (must match)
//   u32 num_samples                           equals shape[0]
//   num_samples x { u64 sample_id, u8 kind, [u64 base_hash if kind = delta] }
// kind 0 (full): the payload holds the sample as fp16 and both ends set m <- it. kind 1 (delta):
// the payload holds one fixpoint block of a - m, and base_hash is the XXH3 hash of the sender's
// cached m before the update, which the receiver compares with its own.
//
// The payload is the samples' sections in order: 2 * rows * cols bytes for a full sample, one
// fixpoint block (fixpoint_block.h) over the sample's [rows, cols] for a delta sample.
#pragma once

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "compression/codec_config.h"

namespace geotrain::compression {

enum class DeltaSampleKind : uint8_t { kFull = 0, kDelta = 1 };

struct DeltaSampleHeader {
  uint64_t id = 0;
  DeltaSampleKind kind = DeltaSampleKind::kFull;
  uint64_t base_hash = 0;  // delta samples only
};

struct DeltaFrameParams {
  int bits = 4;
  ScaleMode scale_mode = ScaleMode::kPerChannel;
  int64_t tile = 64;
  int cache_bits = 0;
  CacheFullPolicy full_policy = CacheFullPolicy::kEvictLeastRecent;
  uint64_t max_cache_samples = 0;
  std::vector<DeltaSampleHeader> samples;

  void Write(ByteWriter* params) const;
  // Reads and checks every field (known enums, sizes, no duplicate sample ids, no trailing
  // bytes); errors are DATA_LOSS naming the field ("delta.sample_ids[3]: duplicate id 17").
  static Status Read(Span<const uint8_t> params, DeltaFrameParams* out);
};

}  // namespace geotrain::compression
