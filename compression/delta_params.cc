#include "compression/delta_params.h"

#include <string>
#include <unordered_set>

#include "compression/fixpoint_block.h"

namespace geotrain::compression {
namespace {

// The smallest encoding of one sample header (a full sample: id and kind).
constexpr size_t kMinSampleHeaderBytes = 9;

std::string Indexed(const char* field, size_t i) {
  return std::string(field) + "[" + std::to_string(i) + "]";
}

}  // namespace

void DeltaFrameParams::Write(ByteWriter* params) const {
  PutQuantParams(params, scale_mode, tile, bits);
  params->Put<uint8_t>(static_cast<uint8_t>(cache_bits));
  params->Put<uint8_t>(static_cast<uint8_t>(full_policy));
  params->Put<uint64_t>(max_cache_samples);
  params->Put<uint32_t>(static_cast<uint32_t>(samples.size()));
  for (const DeltaSampleHeader& s : samples) {
    params->Put<uint64_t>(s.id);
    params->Put<uint8_t>(static_cast<uint8_t>(s.kind));
    if (s.kind == DeltaSampleKind::kDelta) params->Put<uint64_t>(s.base_hash);
  }
}

Status DeltaFrameParams::Read(Span<const uint8_t> bytes, DeltaFrameParams* out) {
  ByteReader r(bytes);
  GEOTRAIN_RETURN_IF_ERROR(GetQuantParams(&r, &out->scale_mode, &out->tile, &out->bits));
  uint8_t cache_bits = 0, policy = 0;
  uint32_t count = 0;
  GEOTRAIN_RETURN_IF_ERROR(r.Get(&cache_bits, "delta.cache_bits"));
  if (cache_bits != 0 && cache_bits != 2 && cache_bits != 4 && cache_bits != 8) {
    return DataLoss("delta.cache_bits: " + std::to_string(cache_bits) + " is not 0, 2, 4 or 8");
  }
  out->cache_bits = cache_bits;
  GEOTRAIN_RETURN_IF_ERROR(r.Get(&policy, "delta.cache_full_policy"));
  if (policy > static_cast<uint8_t>(CacheFullPolicy::kError)) {
    return DataLoss("delta.cache_full_policy: unknown value " + std::to_string(policy));
  }
  out->full_policy = static_cast<CacheFullPolicy>(policy);
  GEOTRAIN_RETURN_IF_ERROR(r.Get(&out->max_cache_samples, "delta.max_cache_samples"));
  GEOTRAIN_RETURN_IF_ERROR(r.Get(&count, "delta.num_samples"));
  // Checked before reserving, so a hostile count cannot make us allocate.
  if (count > r.remaining() / kMinSampleHeaderBytes) {
    return DataLoss("delta.num_samples: " + std::to_string(count) + " samples cannot fit in " +
                    std::to_string(r.remaining()) + " remaining params bytes");
  }
  out->samples.assign(count, DeltaSampleHeader());
  std::unordered_set<uint64_t> seen;
  seen.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    DeltaSampleHeader& s = out->samples[i];
    uint8_t kind = 0;
    GEOTRAIN_RETURN_IF_ERROR(r.Get(&s.id, "delta.sample_ids"));
    if (!seen.insert(s.id).second) {
      return DataLoss(Indexed("delta.sample_ids", i) + ": duplicate id " + std::to_string(s.id) +
                      " in one frame");
    }
    GEOTRAIN_RETURN_IF_ERROR(r.Get(&kind, "delta.sample_kinds"));
    if (kind > static_cast<uint8_t>(DeltaSampleKind::kDelta)) {
      return DataLoss(Indexed("delta.sample_kinds", i) + ": unknown kind " + std::to_string(kind));
    }
    s.kind = static_cast<DeltaSampleKind>(kind);
    if (s.kind == DeltaSampleKind::kDelta) {
      GEOTRAIN_RETURN_IF_ERROR(r.Get(&s.base_hash, "delta.base_hashes"));
    }
  }
  return r.ExpectEnd("delta.params");
}

}  // namespace geotrain::compression
