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
#include <vector>

#include "common/hash_random.h"
#include "compression/codecs.h"
#include "compression/delta_checks.h"
#include "compression/delta_params.h"
#include "compression/fixpoint_block.h"
#include "compression/half_kernels.h"

namespace geotrain::compression {
namespace {

ActivationCacheOptions CacheOptionsFor(const CodecConfig& config) {
  ActivationCacheOptions options;
  options.max_samples = config.max_cache_samples;
  options.full_policy = config.cache_full_policy;
  options.cache_bits = config.codec == CodecId::kDeltaLowBits ? config.cache_bits : 0;
  options.dir = config.cache_dir;
  return options;
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

template <typename UpdateFor>
Status DeltaCodec::UpdateCache(const DeltaFrameParams& header, UpdateFor update_for,
                               ErrorSums* error) {
  return UpdateCacheForFrame(header, cache_.get(), [&](size_t i) -> Status {
    const DeltaSampleHeader& s = header.samples[i];
    GEOTRAIN_ASSIGN_OR_RETURN(const SampleUpdate update, update_for(i));
    if (s.kind == DeltaSampleKind::kFull) return cache_->StoreHalf(s.id, update.half_values);
    return cache_->AccumulateDelta(s.id, update.delta, update.reconstruction, update.reference,
                                   error);
  });
}

Status DeltaCodec::Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                          ErrorSums* error) {
  SampleGeometry g;
  DeltaFrameParams header;
  GEOTRAIN_RETURN_IF_ERROR(PrepareDeltaFrame(in, config_, cache_.get(), &g, &header));
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
        return InvalidArgument(field +
                               ": contains NaN, infinity or a magnitude beyond 65504, "
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
  GEOTRAIN_RETURN_IF_ERROR(CheckFrameAgainstCache(header, g, *cache_));

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
    return InvalidArgument(std::string("codec: ") + CodecName(config.codec) +
                           " is not a delta codec");
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
