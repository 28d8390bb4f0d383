// The checks both delta codecs (the CPU DeltaCodec and cuda/delta_cuda_codec.cc) run on a frame
// before it touches an activation cache, so a refused input or a corrupt frame changes nothing
// and both report it in the same words. `Cache` is ActivationCache or cuda::DeviceActivationCache.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>

#include "common/status.h"
#include "compression/codec_config.h"
#include "compression/delta_params.h"
#include "compression/types.h"

namespace geotrain::compression {

// A micro-batch viewed as `samples` samples of [rows, cols].
struct SampleGeometry {
  int64_t samples = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t elements() const { return rows * cols; }
};

// [B, d1, ..., dk, C] is B samples of [d1 * ... * dk, C]; [B, C] is B samples of [1, C]; [B] is B
// samples of one value. Wire shapes fail with DATA_LOSS, caller shapes with INVALID_ARGUMENT.
Status GetSampleGeometry(const Shape& shape, int64_t elements, const char* field, bool from_wire,
                         SampleGeometry* g);

// "field[i]".
std::string Indexed(const char* field, size_t i);

const char* CacheFullPolicyName(CacheFullPolicy policy);  // "error", "evict-least-recent"

// The frame's samples fit the cache: no more than its slots, and its sample shape.
template <typename Cache>
Status CheckFitsCache(const Cache& cache, const SampleGeometry& g, const char* field) {
  if (g.samples > cache.capacity()) {
    return InvalidArgument(
        std::string(field) + ": " + std::to_string(g.samples) +
        " samples in one frame exceed max_cache_samples=" + std::to_string(cache.capacity()));
  }
  if (g.samples == 0) return OkStatus();
  return cache.CheckSampleShape(g.rows, g.cols).WithContext(field);
}

// The receiver's checks of a parsed frame header against its cache: the sender's cache has the
// same format and bounds (or the two would drift apart), every delta sample is cached here with
// the sender's content hash, and the new samples fit.
template <typename Cache>
Status CheckFrameAgainstCache(const DeltaFrameParams& header, const SampleGeometry& g,
                              const Cache& cache) {
  if (static_cast<int64_t>(header.samples.size()) != g.samples) {
    return DataLoss("delta.num_samples: " + std::to_string(header.samples.size()) +
                    " but frame.shape[0] is " + std::to_string(g.samples));
  }
  if (header.cache_bits != cache.cache_bits()) {
    return FailedPrecondition("delta.cache_bits: the sender's cache stores " +
                              std::to_string(header.cache_bits) + "-bit samples, this receiver's " +
                              std::to_string(cache.cache_bits()) +
                              "-bit (0 = fp16); configure both ends alike");
  }
  if (header.max_cache_samples != static_cast<uint64_t>(cache.capacity()) ||
      header.full_policy != cache.full_policy()) {
    return FailedPrecondition("delta.max_cache_samples: the sender's cache holds " +
                              std::to_string(header.max_cache_samples) + " samples (" +
                              CacheFullPolicyName(header.full_policy) + "), this receiver's " +
                              std::to_string(cache.capacity()) + " (" +
                              CacheFullPolicyName(cache.full_policy()) +
                              "); configure both ends alike");
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckFitsCache(cache, g, "frame.shape"));
  int64_t new_samples = 0;
  for (size_t i = 0; i < header.samples.size(); ++i) {
    const DeltaSampleHeader& s = header.samples[i];
    if (s.kind == DeltaSampleKind::kFull) {
      new_samples += cache.Contains(s.id) ? 0 : 1;
    } else if (!cache.Contains(s.id)) {
      return FailedPrecondition(Indexed("delta.sample_ids", i) + ": sample " +
                                std::to_string(s.id) +
                                " is not in the receiver's cache (caches out of sync)");
    } else if (cache.ContentHash(s.id) != s.base_hash) {
      return FailedPrecondition(Indexed("delta.base_hashes", i) + ": sample " +
                                std::to_string(s.id) +
                                " differs between the sender's and the receiver's cache (caches "
                                "out of sync: a frame was lost or decoded by another codec)");
    }
  }
  return cache.CheckRoomFor(new_samples);
}

// The sender's side: checks `in` (one distinct id per sample, a shape the cache takes, room for
// the new samples), fixes the cache's sample shape, and fills the frame header: a delta sample
// for each id the cache holds, with its content hash, a full one for the others.
template <typename Cache>
Status PrepareDeltaFrame(const EncodeInput& in, const CodecConfig& config, Cache* cache,
                         SampleGeometry* g, DeltaFrameParams* header) {
  GEOTRAIN_RETURN_IF_ERROR(GetSampleGeometry(in.shape, in.elements, "input.shape", false, g));
  if (static_cast<int64_t>(in.sample_ids.size()) != g->samples) {
    return InvalidArgument("input.sample_ids: " + std::to_string(in.sample_ids.size()) +
                           " ids for " + std::to_string(g->samples) +
                           " samples (shape[0]); delta codecs need one id per sample");
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckFitsCache(*cache, *g, "input.shape"));
  header->bits = config.bits;
  header->scale_mode = config.scale_mode;
  header->tile = config.tile_size;
  header->cache_bits = cache->cache_bits();
  header->full_policy = cache->full_policy();
  header->max_cache_samples = static_cast<uint64_t>(cache->capacity());
  header->samples.assign(g->samples, DeltaSampleHeader());
  std::unordered_set<uint64_t> seen;
  int64_t new_samples = 0;
  for (int64_t i = 0; i < g->samples; ++i) {
    DeltaSampleHeader& s = header->samples[i];
    s.id = in.sample_ids[i];
    if (!seen.insert(s.id).second) {
      return InvalidArgument(Indexed("input.sample_ids", i) + ": duplicate id " +
                             std::to_string(s.id) + " in one frame");
    }
    if (cache->Contains(s.id)) {
      s.kind = DeltaSampleKind::kDelta;
      s.base_hash = cache->ContentHash(s.id);
    } else {
      ++new_samples;
    }
  }
  GEOTRAIN_RETURN_IF_ERROR(cache->CheckRoomFor(new_samples));
  if (g->samples > 0) GEOTRAIN_RETURN_IF_ERROR(cache->UseSampleShape(g->rows, g->cols));
  return OkStatus();
}

// Step 2 of the frame procedure, on either end: the frame's cached samples become the most
// recent (a new sample can then only evict samples outside the frame), then `update(i)` applies
// sample i's update in frame order. If one fails, the frame's samples are erased from `cache`, so
// later visits resend them in full or fail loudly, never decode against a stale m.
template <typename Cache, typename Update>
Status UpdateCacheForFrame(const DeltaFrameParams& header, Cache* cache, Update update) {
  for (const DeltaSampleHeader& s : header.samples) cache->Touch(s.id);
  for (size_t i = 0; i < header.samples.size(); ++i) {
    const Status status = update(i);
    if (!status.ok()) {
      for (const DeltaSampleHeader& dropped : header.samples) cache->Erase(dropped.id);
      return status.WithContext("updating the activation cache (the frame's samples were dropped)");
    }
  }
  return OkStatus();
}

}  // namespace geotrain::compression
