// delta on a CUDA device: AC-SGD's delta compression against a DeviceActivationCache, following
// the CPU DeltaCodec's frame procedure (delta_codec.cc) step for step, so the frames, the caches
// and the decoded values are the same bytes on both:
//   1. check everything and build the whole payload in device memory (full samples as fp16,
//      cached ones as the fixpoint block of a - m), the cache only read;
//   2. touch the frame's cached samples, then per sample in frame order store the fp16 section or
//      add the delta decoded from the bytes just written; on a failure the frame's samples are
//      erased.
// The payload then goes to the host in one copy. Only fp16 caches (codec delta): delta-lowbits
// stays on the CPU codec.
#include <algorithm>

#include "common/hash_random.h"
#include "compression/codecs.h"
#include "compression/cuda/cuda_codecs.h"
#include "compression/cuda/delta_device.h"
#include "compression/cuda/device_activation_cache.h"
#include "compression/cuda/fixpoint_device.h"
#include "compression/delta_checks.h"

namespace geotrain::compression::cuda {
namespace {

ActivationCacheOptions CacheOptionsFor(const CodecConfig& config) {
  ActivationCacheOptions options;
  options.max_samples = config.max_cache_samples;
  options.full_policy = config.cache_full_policy;
  return options;
}

QuantLayout DeltaLayout(const SampleGeometry& g, ScaleMode mode, int64_t tile) {
  QuantLayout layout;
  layout.rows = g.rows;
  layout.cols = g.cols;
  layout.mode = mode;
  layout.tile = tile;
  return layout;
}

class DeltaCudaCodec final : public CudaCodec {
 public:
  DeltaCudaCodec(const CodecConfig& config, Stream stream,
                 std::unique_ptr<DeviceActivationCache> cache)
      : CudaCodec(config, stream), cache_(std::move(cache)) {}

  Status Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                ErrorSums* error) override;
  Status Decode(const FrameContent& frame, float* out) override;
  Status Reconfigure(const CodecConfig& config) override;

  DeviceActivationCache* cache() { return cache_.get(); }

 private:
  // Device scratch: per-sample range flags, error sums, one sample's delta, the payload.
  Status ReserveScratch(int64_t samples, int64_t sample_elements, uint64_t payload_bytes);
  // Flags and sums back on the host (one synchronisation).
  Status ReadFlagsAndSums(int64_t samples);

  std::unique_ptr<DeviceActivationCache> cache_;
  FixpointWorkspace fixpoint_;
  DeviceBytes block_;
  DeviceBytes payload_;
  DeviceArray<float> delta_;
  DeviceArray<uint32_t> flags_;
  DeviceArray<double> sums_;
  PinnedBytes readback_;
  std::vector<uint32_t> host_flags_;
  double host_sums_[2] = {0, 0};
};

Status DeltaCudaCodec::ReserveScratch(int64_t samples, int64_t sample_elements,
                                      uint64_t payload_bytes) {
  GEOTRAIN_RETURN_IF_ERROR(payload_.Reserve(std::max<uint64_t>(payload_bytes, 1)));
  GEOTRAIN_RETURN_IF_ERROR(delta_.Reserve(std::max<int64_t>(sample_elements, 1)));
  GEOTRAIN_RETURN_IF_ERROR(flags_.Reserve(std::max<int64_t>(samples, 1)));
  GEOTRAIN_RETURN_IF_ERROR(sums_.Reserve(2));
  GEOTRAIN_RETURN_IF_ERROR(readback_.Reserve(16 + 4 * std::max<int64_t>(samples, 1)));
  GEOTRAIN_RETURN_IF_ERROR(ZeroDevice(flags_.data(), 4 * samples, stream_));
  return ZeroDevice(sums_.data(), 2 * sizeof(double), stream_);
}

Status DeltaCudaCodec::ReadFlagsAndSums(int64_t samples) {
  GEOTRAIN_RETURN_IF_ERROR(CopyToHost(readback_.data(), sums_.data(), 16, stream_));
  GEOTRAIN_RETURN_IF_ERROR(CopyToHost(readback_.data() + 16, flags_.data(), 4 * samples, stream_));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream_, "delta range checks"));
  std::memcpy(host_sums_, readback_.data(), 16);
  host_flags_.resize(samples);
  if (samples > 0) std::memcpy(host_flags_.data(), readback_.data() + 16, 4 * samples);
  return OkStatus();
}

Status DeltaCudaCodec::Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                              ErrorSums* error) {
  SampleGeometry g;
  DeltaFrameParams header;
  GEOTRAIN_RETURN_IF_ERROR(PrepareDeltaFrame(in, config_, cache_.get(), &g, &header));
  header.Write(params);

  // Step 1: the payload, each sample's section at its offset.
  const int64_t n = g.elements();
  const QuantLayout layout = DeltaLayout(g, config_.scale_mode, config_.tile_size);
  const uint64_t largest_section =
      std::max<uint64_t>(2 * n, FixpointBlockBytes(layout, config_.bits, /*f32_scales=*/true));
  GEOTRAIN_RETURN_IF_ERROR(ReserveScratch(g.samples, n, g.samples * largest_section));
  auto* sections = static_cast<uint8_t*>(payload_.data());
  std::vector<uint64_t> offsets(g.samples + 1, 0);
  for (int64_t i = 0; i < g.samples; ++i) {
    const DeltaSampleHeader& s = header.samples[i];
    const float* a = in.data + i * n;
    uint8_t* section = sections + offsets[i];
    const std::string field = Indexed("input", i) + " (sample " + std::to_string(s.id) + ")";
    uint64_t size = 2 * n;
    if (s.kind == DeltaSampleKind::kFull) {
      GEOTRAIN_RETURN_IF_ERROR(
          HalfFromFloatOnDevice(a, n, section, flags_.data() + i, sums_.data(), stream_));
    } else {
      GEOTRAIN_RETURN_IF_ERROR(SubtractHalfOnDevice(a, cache_->Slot(s.id), n, delta_.data(),
                                                    flags_.data() + i, stream_));
      QuantizeOptions quantize;
      quantize.bits = config_.bits;
      quantize.rounding = config_.rounding;
      quantize.seed = config_.seed;
      quantize.stream = HashCounter(in.step, s.id, 0);  // as the CPU codec draws
      auto encoded = EncodeFixpointBlockOnDevice(delta_.data(), layout, quantize, &fixpoint_,
                                                 &block_, nullptr, nullptr, stream_);
      // An out-of-range `a` makes the delta non-finite; the range flag below names it first.
      if (!encoded.ok() && encoded.status().code() != StatusCode::kInvalidArgument) {
        return encoded.status().WithContext(field);
      }
      size = encoded.ok() ? *encoded : 0;
      GEOTRAIN_RETURN_IF_ERROR(CopyOnDevice(section, block_.data(), size, stream_));
    }
    offsets[i + 1] = offsets[i] + size;
  }
  GEOTRAIN_RETURN_IF_ERROR(ReadFlagsAndSums(g.samples));
  for (int64_t i = 0; i < g.samples; ++i) {
    if (!host_flags_[i]) continue;
    const std::string field =
        Indexed("input", i) + " (sample " + std::to_string(header.samples[i].id) + ")";
    if (header.samples[i].kind == DeltaSampleKind::kFull) {
      return InvalidArgument(field +
                             ": contains NaN, infinity or a magnitude beyond 65504, "
                             "the fp16 range of the activation cache");
    }
    return InvalidArgument(field +
                           ": values: contain NaN, infinity or a magnitude beyond 65504 "
                           "(the fp16 range of the activation cache)");
  }
  ErrorSums frame_error{host_sums_[0], host_sums_[1]};

  // Step 2: the cache update, from the bytes just written.
  GEOTRAIN_RETURN_IF_ERROR(ZeroDevice(sums_.data(), 16, stream_));
  GEOTRAIN_RETURN_IF_ERROR(UpdateCacheForFrame(header, cache_.get(), [&](size_t i) -> Status {
    const DeltaSampleHeader& s = header.samples[i];
    const uint8_t* section = sections + offsets[i];
    if (s.kind == DeltaSampleKind::kFull) return cache_->StoreHalf(s.id, section);
    GEOTRAIN_RETURN_IF_ERROR(DecodeFixpointBlockOnDevice(section, layout, config_.bits, &fixpoint_,
                                                         delta_.data(), stream_));
    return cache_->AccumulateDelta(s.id, delta_.data(), nullptr, in.data + i * n, sums_.data());
  }));
  GEOTRAIN_RETURN_IF_ERROR(ReadFlagsAndSums(0));
  if (error) {
    error->error_sq += frame_error.error_sq + host_sums_[0];
    error->norm_sq += frame_error.norm_sq + host_sums_[1];
  }
  return AppendFromDevice(sections, offsets.back(), payload);
}

Status DeltaCudaCodec::Decode(const FrameContent& frame, float* out) {
  DeltaFrameParams header;
  GEOTRAIN_RETURN_IF_ERROR(DeltaFrameParams::Read(frame.params, &header));
  SampleGeometry g;
  GEOTRAIN_RETURN_IF_ERROR(GetSampleGeometry(frame.shape, frame.elements, "frame.shape", true, &g));
  GEOTRAIN_RETURN_IF_ERROR(CheckFrameAgainstCache(header, g, *cache_));

  // Step 1: check every section on the host, then decode them all on the device.
  const int64_t n = g.elements();
  const QuantLayout layout = DeltaLayout(g, header.scale_mode, header.tile);
  std::vector<uint64_t> offsets(g.samples + 1, 0);
  ByteReader payload(frame.payload);
  for (int64_t i = 0; i < g.samples; ++i) {
    Span<const uint8_t> section;
    if (header.samples[i].kind == DeltaSampleKind::kFull) {
      GEOTRAIN_RETURN_IF_ERROR(payload.GetSpan(2 * n, &section, "delta.payload.samples"));
    } else {
      GEOTRAIN_RETURN_IF_ERROR(CheckFixpointBlock(&payload, layout, header.bits, &section)
                                   .WithContext(Indexed("delta.payload.samples", i)));
    }
    offsets[i + 1] = offsets[i] + section.size();
  }
  GEOTRAIN_RETURN_IF_ERROR(payload.ExpectEnd("delta.payload"));
  GEOTRAIN_RETURN_IF_ERROR(ReserveScratch(g.samples, n, frame.payload.size()));
  auto* sections = static_cast<uint8_t*>(payload_.data());
  GEOTRAIN_RETURN_IF_ERROR(
      CopyToDevice(sections, frame.payload.data(), frame.payload.size(), stream_));
  for (int64_t i = 0; i < g.samples; ++i) {
    if (header.samples[i].kind == DeltaSampleKind::kFull) {
      GEOTRAIN_RETURN_IF_ERROR(
          FloatFromHalfOnDevice(sections + offsets[i], n, out + i * n, flags_.data() + i, stream_));
    } else {
      GEOTRAIN_RETURN_IF_ERROR(DecodeFixpointBlockOnDevice(
          sections + offsets[i], layout, header.bits, &fixpoint_, out + i * n, stream_));
    }
  }
  GEOTRAIN_RETURN_IF_ERROR(ReadFlagsAndSums(g.samples));
  for (int64_t i = 0; i < g.samples; ++i) {
    if (host_flags_[i]) {
      return DataLoss(Indexed("delta.payload.samples", i) +
                      ": an fp16 infinity or NaN in a full sample");
    }
  }
  if (g.samples > 0) GEOTRAIN_RETURN_IF_ERROR(cache_->UseSampleShape(g.rows, g.cols));

  // Step 2: the sender's cache update; deltas become reconstructions in place.
  GEOTRAIN_RETURN_IF_ERROR(UpdateCacheForFrame(header, cache_.get(), [&](size_t i) -> Status {
    const DeltaSampleHeader& s = header.samples[i];
    if (s.kind == DeltaSampleKind::kFull) return cache_->StoreHalf(s.id, sections + offsets[i]);
    return cache_->AccumulateDelta(s.id, out + i * n, out + i * n, nullptr, nullptr);
  }));
  return Synchronize(stream_, "delta decode");
}

Status DeltaCudaCodec::Reconfigure(const CodecConfig& config) {
  if (config.codec == config_.codec) {
    GEOTRAIN_RETURN_IF_ERROR(config.Validate());
    const bool changed = config.max_cache_samples != cache_->capacity() ||
                         config.cache_full_policy != cache_->full_policy();
    if (changed && cache_->has_sample_shape()) {
      return FailedPrecondition(
          "max_cache_samples: cannot change while the activation cache is in use (Clear it on "
          "both ends first)");
    }
    if (changed) {
      GEOTRAIN_ASSIGN_OR_RETURN(cache_,
                                DeviceActivationCache::Create(CacheOptionsFor(config), stream_));
    }
  }
  return CudaCodec::Reconfigure(config);
}

}  // namespace

StatusOr<std::unique_ptr<CudaCodec>> NewDeltaCudaCodec(const CodecConfig& config, Stream stream) {
  if (config.codec != CodecId::kDelta) {
    return FailedPrecondition(std::string("codec: ") + CodecName(config.codec) +
                              " has no CUDA kernels (the CUDA delta codec keeps fp16 caches)");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<DeviceActivationCache> cache,
                            DeviceActivationCache::Create(CacheOptionsFor(config), stream));
  return std::unique_ptr<CudaCodec>(new DeltaCudaCodec(config, stream, std::move(cache)));
}

DeviceActivationCache* DeltaCudaCodecCache(CudaCodec* codec) {
  auto* delta = dynamic_cast<DeltaCudaCodec*>(codec);
  return delta ? delta->cache() : nullptr;
}

}  // namespace geotrain::compression::cuda
