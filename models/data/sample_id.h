// Sample ids: the stable name of one packed block of tokens.
//
// id = source_index << 40 | block_index, where block_index counts seq_length blocks from the
// start of that source's token stream. It depends only on the source list order, the source's
// contents and seq_length, never on the seed, the epoch or the shuffle, so the AC-SGD activation
// cache (keyed by sample id) sees the same id for the same tokens in every epoch and every run.
// Limits: 2^24 sources, 2^40 blocks per source (checked by OpenDataset).
#pragma once

#include <cstdint>

namespace geotrain::models::data {

constexpr int kSampleIdBlockBits = 40;
constexpr uint64_t kMaxSourcesPerDataset = uint64_t{1} << (64 - kSampleIdBlockBits);
constexpr uint64_t kMaxBlocksPerSource = uint64_t{1} << kSampleIdBlockBits;

inline uint64_t MakeSampleId(uint64_t source_index, uint64_t block_index) {
  return source_index << kSampleIdBlockBits | block_index;
}
inline uint64_t SampleIdSource(uint64_t sample_id) { return sample_id >> kSampleIdBlockBits; }
inline uint64_t SampleIdBlock(uint64_t sample_id) { return sample_id & (kMaxBlocksPerSource - 1); }

}  // namespace geotrain::models::data
