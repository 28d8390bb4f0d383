// cocktail on a CUDA device (cocktail_cuda_codec.h): the host side. It writes the params, checks
// decoded frames field by field as CocktailCodec::Decode does (same order, same errors), and
// drives the device steps of cocktail_device.h.
#include "compression/cuda/cocktail_cuda_codec.h"

#include <cmath>
#include <string>

#include "compression/bitpack.h"
#include "compression/codecs.h"
#include "compression/cuda/cuda_codecs.h"
#include "compression/fixpoint_block.h"

namespace geotrain::compression::cuda {

StatusOr<std::unique_ptr<CocktailCudaCodec>> CocktailCudaCodec::Create(const CodecConfig& config,
                                                                       Stream stream) {
  if (config.codec != CodecId::kCocktail) {
    return InvalidArgument(std::string("codec: a cocktail codec cannot be built for ") +
                           CodecName(config.codec));
  }
  GEOTRAIN_RETURN_IF_ERROR(config.Validate());
  GEOTRAIN_RETURN_IF_ERROR(CocktailMask::ForStep(config, 0).status());  // checks mask_mode
  return std::unique_ptr<CocktailCudaCodec>(new CocktailCudaCodec(config, stream));
}

Status CocktailCudaCodec::Reconfigure(const CodecConfig& config) {
  GEOTRAIN_RETURN_IF_ERROR(CocktailMask::ForStep(config, 0).status());
  GEOTRAIN_RETURN_IF_ERROR(CudaCodec::Reconfigure(config));
  if (!config_.error_feedback) ResetResidual();
  return OkStatus();
}

void CocktailCudaCodec::ResetResidual() {
  residual_size_ = 0;
  residual_shape_.clear();
}

void CocktailCudaCodec::ZeroResidual() {
  if (residual_size_ == 0) return;
  // Best effort: were the device to fail here, the encode's own error is the one to report, and
  // the next encode would fail the same way before reading the residual.
  if (!ZeroDevice(residual_.data(), residual_size_ * sizeof(float), stream_).ok() ||
      !Synchronize(stream_, "zeroing the cocktail residual").ok()) {
    ResetResidual();
  }
}

Status CocktailCudaCodec::CopyResidualToHost(std::vector<float>* out) {
  out->resize(residual_size_);
  if (residual_size_ == 0) return OkStatus();
  GEOTRAIN_RETURN_IF_ERROR(
      CopyToHost(out->data(), residual_.data(), residual_size_ * sizeof(float), stream_));
  return Synchronize(stream_, "copying the cocktail residual");
}

Status CocktailCudaCodec::RestoreResidual(const Shape& shape, Span<const float> values) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) return InvalidArgument("residual.shape[" + std::to_string(d) + "]: negative");
  }
  if (static_cast<uint64_t>(NumElements(shape)) != values.size()) {
    return InvalidArgument("residual: " + std::to_string(values.size()) + " values for shape " +
                           ShapeString(shape));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return InvalidArgument("residual[" + std::to_string(i) + "]: not finite");
    }
  }
  const int64_t n = static_cast<int64_t>(values.size());
  GEOTRAIN_RETURN_IF_ERROR(residual_.Reserve(std::max<int64_t>(n, 1)));
  GEOTRAIN_RETURN_IF_ERROR(CopyToDevice(residual_.data(), values.data(), n * sizeof(float), stream_));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream_, "restoring the cocktail residual"));
  residual_size_ = n;
  residual_shape_ = shape;
  return OkStatus();
}

Status CocktailCudaCodec::Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                                 ErrorSums* error) {
  const int64_t n = in.elements;
  if (n < 0 || static_cast<uint64_t>(n) > CocktailMask::kMaxElements) {
    return InvalidArgument("input.elements: " + std::to_string(n) +
                           " is outside 0..2^32-1 (cocktail indexes coordinates with 32 bits; "
                           "compress smaller chunks)");
  }
  if (n > 0 && in.data == nullptr) return InvalidArgument("input.data: null");
  GEOTRAIN_ASSIGN_OR_RETURN(const CocktailMask mask, CocktailMask::ForStep(config_, in.step));
  const CocktailMaskParams mask_params = MaskParamsOf(mask);

  const bool feedback = config_.error_feedback;
  if (feedback && (residual_shape_ != in.shape || residual_size_ != n)) {
    ResetResidual();  // a new shape starts from no error
    GEOTRAIN_RETURN_IF_ERROR(residual_.Reserve(std::max<int64_t>(n, 1)));
    if (n > 0) GEOTRAIN_RETURN_IF_ERROR(ZeroDevice(residual_.data(), n * sizeof(float), stream_));
    residual_size_ = n;
    residual_shape_ = in.shape;
  }
  float* residual = feedback ? residual_.data() : nullptr;

  CocktailSampleInfo info;
  const Status sampled = CocktailSample(in.data, residual, n, mask_params, &ws_, &info, stream_);
  if (!sampled.ok() || info.x_not_finite || info.v_not_finite) {
    if (feedback) ZeroResidual();  // partly folded
    if (!sampled.ok()) return sampled;
    if (info.x_not_finite) {
      return InvalidArgument("input[" + std::to_string(info.first_bad_x) +
                             "]: NaN or infinity cannot be compressed");
    }
    return InvalidArgument("input: adding the error-feedback residual overflows float32");
  }

  const int64_t m = static_cast<int64_t>(info.m);
  const int64_t k = KeptCount(config_.topk_ratio, m);
  mask.Write(params);
  params->Put<uint64_t>(static_cast<uint64_t>(k));
  PutQuantParams(params, ScaleMode::kPerTile, config_.quant_group, config_.quant_bits);

  // The payload comes back through one pinned buffer: the bitmap, then the fixpoint block (at
  // most its size with float32 scales).
  const uint64_t bitmap_bytes = PackedBytes(static_cast<uint64_t>(m), 1);
  const QuantLayout layout{1, k, ScaleMode::kPerTile, config_.quant_group};
  const uint64_t block_bound = k > 0 ? FixpointBlockBytes(layout, config_.quant_bits, true) : 0;
  GEOTRAIN_RETURN_IF_ERROR(ws_.payload_host.Reserve(std::max<uint64_t>(bitmap_bytes + block_bound, 1)));
  GEOTRAIN_RETURN_IF_ERROR(ws_.readback.Reserve(3 * sizeof(double)));
  uint8_t* host = ws_.payload_host.data();
  if (m > 0) {
    GEOTRAIN_RETURN_IF_ERROR(CocktailSelectTopK(m, k, mask_params, &ws_, stream_));
    GEOTRAIN_RETURN_IF_ERROR(CopyToHost(host, ws_.bitmap.data(), bitmap_bytes, stream_));
  }
  uint64_t block_size = 0;
  if (k > 0) {
    QuantizeOptions options;
    options.bits = config_.quant_bits;
    options.rounding = config_.rounding;
    options.seed = config_.seed;
    options.stream = in.step;
    // Cannot fail on values (they are finite); were it to, the residual holds v without the
    // send subtracted, which is what "nothing was sent" means (as in CocktailCodec).
    GEOTRAIN_ASSIGN_OR_RETURN(block_size, EncodeFixpointBlockOnDevice(
                                              ws_.kept.data(), layout, options, &ws_.fixpoint,
                                              &ws_.block, ws_.kept_decoded.data(), nullptr,
                                              stream_));
    GEOTRAIN_RETURN_IF_ERROR(
        CopyToHost(host + bitmap_bytes, ws_.block.data(), block_size, stream_));
  }
  auto* sums = reinterpret_cast<double*>(ws_.readback.data());
  if (error != nullptr) {
    GEOTRAIN_RETURN_IF_ERROR(CocktailKeptSums(k, &ws_, stream_));
    GEOTRAIN_RETURN_IF_ERROR(CopyToHost(sums, ws_.sums.data(), 3 * sizeof(double), stream_));
  }
  if (feedback) GEOTRAIN_RETURN_IF_ERROR(CocktailSubtractSent(k, &ws_, residual, stream_));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream_, "encoding a cocktail frame"));
  payload->PutBytes(host, bitmap_bytes + block_size);

  // Unkept coordinates decode to 0: Σ(v - x̂)² = Σv² - Σ_kept v² + Σ_kept (v - x̂)².
  if (error != nullptr) {
    error->error_sq += std::max(0.0, sums[0] - sums[1]) + sums[2];
    error->norm_sq += sums[0];
  }
  return OkStatus();
}

Status CocktailCudaCodec::Decode(const FrameContent& frame, float* out) {
  ByteReader params(frame.params);
  GEOTRAIN_ASSIGN_OR_RETURN(const CocktailMask mask, CocktailMask::Read(&params));
  uint64_t k = 0;
  GEOTRAIN_RETURN_IF_ERROR(params.Get(&k, "cocktail.kept"));
  ScaleMode scale_mode;
  int64_t group = 0;
  int bits = 0;
  GEOTRAIN_RETURN_IF_ERROR(GetQuantParams(&params, &scale_mode, &group, &bits));
  if (scale_mode != ScaleMode::kPerTile) {
    return DataLoss(std::string("cocktail.scale_mode: ") + ScaleModeName(scale_mode) +
                    " (cocktail frames use tile)");
  }
  if (bits < 2) return DataLoss("cocktail.bits: " + std::to_string(bits) + " is outside 2..8");
  GEOTRAIN_RETURN_IF_ERROR(params.ExpectEnd("cocktail.params"));

  const int64_t n = frame.elements;
  if (n < 0 || static_cast<uint64_t>(n) > CocktailMask::kMaxElements) {
    return DataLoss("cocktail: frame of " + std::to_string(n) +
                    " elements is outside 0..2^32-1");
  }
  const CocktailMaskParams mask_params = MaskParamsOf(mask);
  uint64_t m = 0;
  if (mask.mode() == MaskMode::kRolling) {
    m = mask.SampledCount(n);
  } else {
    GEOTRAIN_RETURN_IF_ERROR(CocktailSeededIndices(mask_params, n, &ws_, &m, stream_));
  }
  if (k > m) {
    return DataLoss("cocktail.kept: " + std::to_string(k) + " exceeds the " + std::to_string(m) +
                    " sampled coordinates");
  }
  if (k == 0 && m > 0) {
    return DataLoss("cocktail.kept: 0 of " + std::to_string(m) +
                    " sampled coordinates (an encoder keeps at least one)");
  }

  ByteReader payload(frame.payload);
  Span<const uint8_t> bitmap;
  GEOTRAIN_RETURN_IF_ERROR(payload.GetSpan(PackedBytes(m, 1), &bitmap, "cocktail.bitmap"));
  if (m % 8 != 0 && (bitmap[bitmap.size() - 1] & ((1u << (8 - m % 8)) - 1)) != 0) {
    return DataLoss("cocktail.bitmap: padding bits after the last sampled coordinate are set");
  }
  uint64_t ones = 0;
  for (size_t i = 0; i < bitmap.size(); ++i) ones += __builtin_popcount(bitmap[i]);
  if (ones != k) {
    return DataLoss("cocktail.bitmap: " + std::to_string(ones) + " positions set, params say " +
                    std::to_string(k) + " kept values");
  }
  const QuantLayout layout{1, static_cast<int64_t>(k), ScaleMode::kPerTile, group};
  Span<const uint8_t> block;
  if (k > 0) GEOTRAIN_RETURN_IF_ERROR(CheckFixpointBlock(&payload, layout, bits, &block));
  GEOTRAIN_RETURN_IF_ERROR(payload.ExpectEnd("cocktail.payload"));

  // The bitmap and the block are adjacent in the payload: one copy brings both.
  const size_t bytes = bitmap.size() + block.size();
  GEOTRAIN_RETURN_IF_ERROR(ws_.block.Reserve(std::max<size_t>(bytes, 1)));
  auto* device = static_cast<uint8_t*>(ws_.block.data());
  if (bytes > 0) GEOTRAIN_RETURN_IF_ERROR(CopyToDevice(device, bitmap.data(), bytes, stream_));
  if (k > 0) {
    GEOTRAIN_RETURN_IF_ERROR(ws_.kept_decoded.Reserve(k));
    GEOTRAIN_RETURN_IF_ERROR(DecodeFixpointBlockOnDevice(device + bitmap.size(), layout, bits,
                                                         &ws_.fixpoint, ws_.kept_decoded.data(),
                                                         stream_));
  }
  return CocktailScatter(device, static_cast<int64_t>(m), n, mask_params, ws_.kept_decoded.data(),
                         &ws_, out, stream_);
}

StatusOr<std::unique_ptr<CudaCodec>> NewCocktailCudaCodec(const CodecConfig& config,
                                                          Stream stream) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<CocktailCudaCodec> codec,
                            CocktailCudaCodec::Create(config, stream));
  return std::unique_ptr<CudaCodec>(std::move(codec));
}

}  // namespace geotrain::compression::cuda
