// delta and delta-lowbits: AC-SGD's delta activation compression (Wang et al. 2022, "Fine-tuning
// Language Models over Slow Networks using Activation Compression with Guarantees",
// arXiv 2206.01299). ALGORITHMS.md "AC-SGD" is the specification.
//
// A frame carries a micro-batch [B, ..., hidden] of B samples, each viewed as [rows, hidden] and
// named by its dataset sample id. A sample the sender's cache lacks (first visit, or evicted) goes
// as fp16 and both ends set m <- it; a cached one goes as one fixpoint block of a - m and both
// ends set m <- m + deq(Q(a - m)), summed in float32 and stored as fp16 (delta) or re-quantized to
// cache_bits (delta-lowbits). Decode returns x̂, what the receiver's stage runs on: the fp16
// values sent for a full sample; for a delta sample the new m (delta), or the float32 sum before
// re-quantization (delta-lowbits, as in the original, where the low-bit cache is only storage).
// Encode reports the error of exactly that x̂. Frames of any bits may follow each other: the
// quantizer of each frame travels in its params (delta_params.h).
//
// Both ends run the same frame procedure, so their caches stay bit-identical:
//   1. validate everything and produce (sender) or parse (receiver) the whole payload, leaving the
//      cache untouched, so a refused input or a corrupt frame changes nothing;
//   2. make the frame's cached samples the most recent (a new sample can then only evict samples
//      outside the frame), then per sample in frame order StoreHalf(fp16 bytes) or
//      AccumulateDelta(the dequantized delta decoded from the payload bytes).
// The sender decodes its own payload in step 2 rather than reusing its quantizer's output: the
// update comes from exactly the bytes sent, through exactly the receiver's functions.
// If step 2 itself fails (a full disk under the cache file), the frame's samples are erased from
// that end's cache, so later visits resend them in full or fail loudly, never decode against a
// stale m. Each delta sample also carries the hash of the sender's m, checked by the receiver.
#include "compression/delta_codec.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "common/hash_random.h"
#include "compression/codecs.h"
#include "compression/delta_params.h"
#include "compression/fixpoint_block.h"
#include "compression/half_kernels.h"

namespace geotrain::compression {
namespace {

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
                         SampleGeometry* g) {
  auto fail = [&](const std::string& why) {
    const std::string m = std::string(field) + ": " + ShapeString(shape) + " " + why;
    return from_wire ? DataLoss(m) : InvalidArgument(m);
  };
  if (shape.empty()) return fail("has no leading sample dimension");
  for (int64_t d : shape) {
    if (d < 0) return fail("has a negative dimension");
  }
  g->samples = shape[0];
  g->cols = shape.size() >= 2 ? shape.back() : 1;
  g->rows = 1;
  for (size_t i = 1; i + 1 < shape.size(); ++i) {
    if (__builtin_mul_overflow(g->rows, shape[i], &g->rows)) return fail("overflows");
  }
  int64_t total = 0;
  if (__builtin_mul_overflow(g->rows, g->cols, &total) ||
      __builtin_mul_overflow(total, g->samples, &total)) {
    return fail("overflows");
  }
  if (g->samples > 0 && g->elements() == 0) return fail("has empty samples");
  if (total != elements) {
    return fail("holds " + std::to_string(total) + " values, not " + std::to_string(elements));
  }
  return OkStatus();
}

std::string Indexed(const char* field, size_t i) {
  return std::string(field) + "[" + std::to_string(i) + "]";
}

ActivationCacheOptions CacheOptionsFor(const CodecConfig& config) {
  ActivationCacheOptions options;
  options.max_samples = config.max_cache_samples;
  options.full_policy = config.cache_full_policy;
  options.cache_bits = config.codec == CodecId::kDeltaLowBits ? config.cache_bits : 0;
  options.dir = config.cache_dir;
  return options;
}

const char* PolicyName(CacheFullPolicy policy) {
  return policy == CacheFullPolicy::kError ? "error" : "evict-least-recent";
}

// What step 2 needs for one sample: the fp16 bytes of a full sample, or the dequantized delta of
// a delta sample with where its reconstruction goes and what its error is measured against.
struct SampleUpdate {
  const uint8_t* half_values = nullptr;
  const float* delta = nullptr;
  float* reconstruction = nullptr;
  const float* reference = nullptr;
};

class DeltaCodec final : public Codec {
 public:
  DeltaCodec(const CodecConfig& config, std::unique_ptr<ActivationCache> cache)
      : Codec(config), cache_(std::move(cache)) {}

  Status Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                ErrorSums* error) override;
  Status Decode(const FrameContent& frame, float* out) override;
  Status Reconfigure(const CodecConfig& config) override;

  ActivationCache* cache() { return cache_.get(); }

 private:
  // Checks that the frame's samples fit the cache: no more than its slots, and its sample shape.
  Status CheckFitsCache(const SampleGeometry& g, const char* field) const;
  // Step 2 of the frame procedure (see the file comment), shared by both ends.
  template <typename UpdateFor>
  Status UpdateCache(const DeltaFrameParams& header, UpdateFor update_for, ErrorSums* error);
  QuantLayout DeltaLayout(const SampleGeometry& g, ScaleMode mode, int64_t tile) const;

  std::unique_ptr<ActivationCache> cache_;
  std::vector<std::vector<uint8_t>> sections_;  // sender: each sample's payload section
  std::vector<float> delta_;                    // one sample's delta
};

QuantLayout DeltaCodec::DeltaLayout(const SampleGeometry& g, ScaleMode mode, int64_t tile) const {
  QuantLayout layout;
  layout.rows = g.rows;
  layout.cols = g.cols;
  layout.mode = mode;
  layout.tile = tile;
  return layout;
}

Status DeltaCodec::CheckFitsCache(const SampleGeometry& g, const char* field) const {
  if (g.samples > cache_->capacity()) {
    return InvalidArgument(std::string(field) + ": " + std::to_string(g.samples) +
                           " samples in one frame exceed max_cache_samples=" +
                           std::to_string(cache_->capacity()));
  }
  if (g.samples == 0) return OkStatus();
  return cache_->CheckSampleShape(g.rows, g.cols).WithContext(field);
}

template <typename UpdateFor>
Status DeltaCodec::UpdateCache(const DeltaFrameParams& header, UpdateFor update_for,
                               ErrorSums* error) {
  for (const DeltaSampleHeader& s : header.samples) cache_->Touch(s.id);
  for (size_t i = 0; i < header.samples.size(); ++i) {
    const DeltaSampleHeader& s = header.samples[i];
    Status status;
    StatusOr<SampleUpdate> update = update_for(i);
    if (!update.ok()) {
      status = update.status();
    } else if (s.kind == DeltaSampleKind::kFull) {
      status = cache_->StoreHalf(s.id, update->half_values);
    } else {
      status = cache_->AccumulateDelta(s.id, update->delta, update->reconstruction,
                                       update->reference, error);
    }
    if (!status.ok()) {
      for (const DeltaSampleHeader& dropped : header.samples) cache_->Erase(dropped.id);
      return status.WithContext("updating the activation cache (the frame's samples were dropped)");
    }
  }
  return OkStatus();
}

Status DeltaCodec::Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                          ErrorSums* error) {
  SampleGeometry g;
  GEOTRAIN_RETURN_IF_ERROR(GetSampleGeometry(in.shape, in.elements, "input.shape", false, &g));
  if (static_cast<int64_t>(in.sample_ids.size()) != g.samples) {
    return InvalidArgument("input.sample_ids: " + std::to_string(in.sample_ids.size()) +
                           " ids for " + std::to_string(g.samples) +
                           " samples (shape[0]); delta codecs need one id per sample");
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckFitsCache(g, "input.shape"));

  DeltaFrameParams header;
  header.bits = config_.bits;
  header.scale_mode = config_.scale_mode;
  header.tile = config_.tile_size;
  header.cache_bits = cache_->cache_bits();
  header.full_policy = cache_->full_policy();
  header.max_cache_samples = static_cast<uint64_t>(cache_->capacity());
  header.samples.resize(g.samples);
  std::unordered_set<uint64_t> seen;
  int64_t new_samples = 0;
  for (int64_t i = 0; i < g.samples; ++i) {
    DeltaSampleHeader& s = header.samples[i];
    s.id = in.sample_ids[i];
    if (!seen.insert(s.id).second) {
      return InvalidArgument(Indexed("input.sample_ids", i) + ": duplicate id " +
                             std::to_string(s.id) + " in one frame");
    }
    if (cache_->Contains(s.id)) {
      s.kind = DeltaSampleKind::kDelta;
      s.base_hash = cache_->ContentHash(s.id);
    } else {
      ++new_samples;
    }
  }
  GEOTRAIN_RETURN_IF_ERROR(cache_->CheckRoomFor(new_samples));
  if (g.samples > 0) GEOTRAIN_RETURN_IF_ERROR(cache_->UseSampleShape(g.rows, g.cols));
  header.Write(params);

  // Step 1: the payload. The cache is only read.
  const int64_t n = g.elements();
  const QuantLayout layout = DeltaLayout(g, config_.scale_mode, config_.tile_size);
  ErrorSums frame_error;
  sections_.resize(g.samples);
  delta_.resize(n);
  for (int64_t i = 0; i < g.samples; ++i) {
    const DeltaSampleHeader& s = header.samples[i];
    const float* a = in.data + i * n;
    std::vector<uint8_t>& section = sections_[i];
    section.clear();
    const std::string field = Indexed("input", i) + " (sample " + std::to_string(s.id) + ")";
    if (s.kind == DeltaSampleKind::kFull) {
      section.resize(2 * n);
      if (!FloatToHalfInRange(a, n, section.data(), &frame_error)) {
        return InvalidArgument(field + ": contains NaN, infinity or a magnitude beyond 65504, "
                               "the fp16 range of the activation cache");
      }
    } else {
      GEOTRAIN_RETURN_IF_ERROR(cache_->Subtract(s.id, a, delta_.data()).WithContext(field));
      QuantizeOptions quantize;
      quantize.bits = config_.bits;
      quantize.rounding = config_.rounding;
      quantize.seed = config_.seed;
      quantize.stream = HashCounter(in.step, s.id, 0);  // distinct draws per step and sample
      ByteWriter writer(&section);
      GEOTRAIN_RETURN_IF_ERROR(
          EncodeFixpointBlock(delta_.data(), layout, quantize, &writer, nullptr, nullptr)
              .WithContext(field));
    }
    payload->PutBytes(section.data(), section.size());
  }

  // Step 2: the cache update, from the bytes just written.
  GEOTRAIN_RETURN_IF_ERROR(UpdateCache(
      header,
      [&](size_t i) -> StatusOr<SampleUpdate> {
        SampleUpdate update;
        if (header.samples[i].kind == DeltaSampleKind::kFull) {
          update.half_values = sections_[i].data();
          return update;
        }
        ByteReader reader(sections_[i]);
        GEOTRAIN_RETURN_IF_ERROR(DecodeFixpointBlock(&reader, layout, config_.bits, delta_.data()));
        update.delta = delta_.data();
        update.reference = in.data + i * n;
        return update;
      },
      &frame_error));
  if (error) {
    error->error_sq += frame_error.error_sq;
    error->norm_sq += frame_error.norm_sq;
  }
  return OkStatus();
}

Status DeltaCodec::Decode(const FrameContent& frame, float* out) {
  DeltaFrameParams header;
  GEOTRAIN_RETURN_IF_ERROR(DeltaFrameParams::Read(frame.params, &header));
  SampleGeometry g;
  GEOTRAIN_RETURN_IF_ERROR(GetSampleGeometry(frame.shape, frame.elements, "frame.shape", true, &g));
  if (static_cast<int64_t>(header.samples.size()) != g.samples) {
    return DataLoss("delta.num_samples: " + std::to_string(header.samples.size()) +
                    " but frame.shape[0] is " + std::to_string(g.samples));
  }
  // The two ends' caches must have the same format and bounds, or they would drift apart.
  if (header.cache_bits != cache_->cache_bits()) {
    return FailedPrecondition("delta.cache_bits: the sender's cache stores " +
                              std::to_string(header.cache_bits) + "-bit samples, this receiver's " +
                              std::to_string(cache_->cache_bits()) +
                              "-bit (0 = fp16); configure both ends alike");
  }
  if (header.max_cache_samples != static_cast<uint64_t>(cache_->capacity()) ||
      header.full_policy != cache_->full_policy()) {
    return FailedPrecondition(
        "delta.max_cache_samples: the sender's cache holds " +
        std::to_string(header.max_cache_samples) + " samples (" + PolicyName(header.full_policy) +
        "), this receiver's " + std::to_string(cache_->capacity()) + " (" +
        PolicyName(cache_->full_policy()) + "); configure both ends alike");
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckFitsCache(g, "frame.shape"));
  int64_t new_samples = 0;
  for (size_t i = 0; i < header.samples.size(); ++i) {
    const DeltaSampleHeader& s = header.samples[i];
    if (s.kind == DeltaSampleKind::kFull) {
      new_samples += cache_->Contains(s.id) ? 0 : 1;
    } else if (!cache_->Contains(s.id)) {
      return FailedPrecondition(Indexed("delta.sample_ids", i) + ": sample " +
                                std::to_string(s.id) +
                                " is not in the receiver's cache (caches out of sync)");
    } else if (cache_->ContentHash(s.id) != s.base_hash) {
      return FailedPrecondition(Indexed("delta.base_hashes", i) + ": sample " +
                                std::to_string(s.id) +
                                " differs between the sender's and the receiver's cache (caches "
                                "out of sync: a frame was lost or decoded by another codec)");
    }
  }
  GEOTRAIN_RETURN_IF_ERROR(cache_->CheckRoomFor(new_samples));

  // Step 1: parse the whole payload: full samples into `out`, deltas into `out` for now.
  const int64_t n = g.elements();
  const QuantLayout layout = DeltaLayout(g, header.scale_mode, header.tile);
  std::vector<const uint8_t*> halves(g.samples, nullptr);
  ByteReader payload(frame.payload);
  for (int64_t i = 0; i < g.samples; ++i) {
    float* x = out + i * n;
    const std::string field = Indexed("delta.payload.samples", i);
    if (header.samples[i].kind == DeltaSampleKind::kFull) {
      Span<const uint8_t> bytes;
      GEOTRAIN_RETURN_IF_ERROR(payload.GetSpan(2 * n, &bytes, "delta.payload.samples"));
      if (!HalfToFloatFinite(bytes.data(), n, x)) {
        return DataLoss(field + ": an fp16 infinity or NaN in a full sample");
      }
      halves[i] = bytes.data();
    } else {
      GEOTRAIN_RETURN_IF_ERROR(
          DecodeFixpointBlock(&payload, layout, header.bits, x).WithContext(field));
    }
  }
  GEOTRAIN_RETURN_IF_ERROR(payload.ExpectEnd("delta.payload"));
  if (g.samples > 0) GEOTRAIN_RETURN_IF_ERROR(cache_->UseSampleShape(g.rows, g.cols));

  // Step 2: the same cache update as the sender's; deltas become reconstructions in place.
  return UpdateCache(
      header,
      [&](size_t i) -> StatusOr<SampleUpdate> {
        SampleUpdate update;
        update.half_values = halves[i];
        update.delta = out + i * n;
        update.reconstruction = out + i * n;
        return update;
      },
      nullptr);
}

Status DeltaCodec::Reconfigure(const CodecConfig& config) {
  if (config.codec == config_.codec) {
    GEOTRAIN_RETURN_IF_ERROR(config.Validate());
    const ActivationCacheOptions next = CacheOptionsFor(config);
    const ActivationCacheOptions& now = cache_->options();
    const char* changed = next.max_samples != now.max_samples   ? "max_cache_samples"
                          : next.full_policy != now.full_policy ? "cache_full_policy"
                          : next.cache_bits != now.cache_bits   ? "cache_bits"
                          : next.dir != now.dir                 ? "cache_dir"
                                                                : nullptr;
    if (changed && cache_->has_sample_shape()) {
      return FailedPrecondition(std::string(changed) +
                                ": cannot change while the activation cache is in use (Clear it on "
                                "both ends first)");
    }
    if (changed) {
      GEOTRAIN_ASSIGN_OR_RETURN(cache_, ActivationCache::Create(next));
    }
  }
  return Codec::Reconfigure(config);
}

}  // namespace

StatusOr<std::unique_ptr<Codec>> NewDeltaCodec(const CodecConfig& config) {
  if (config.codec != CodecId::kDelta && config.codec != CodecId::kDeltaLowBits) {
    return InvalidArgument(std::string("codec: ") + CodecName(config.codec) + " is not a delta codec");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<ActivationCache> cache,
                            ActivationCache::Create(CacheOptionsFor(config)));
  return std::unique_ptr<Codec>(new DeltaCodec(config, std::move(cache)));
}

ActivationCache* DeltaCodecCache(Codec* codec) {
  auto* delta = dynamic_cast<DeltaCodec*>(codec);
  return delta ? delta->cache() : nullptr;
}

const ActivationCache* DeltaCodecCache(const Codec& codec) {
  return DeltaCodecCache(const_cast<Codec*>(&codec));
}

}  // namespace geotrain::compression
