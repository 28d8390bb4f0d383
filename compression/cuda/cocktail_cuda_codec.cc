// cocktail on a CUDA device (cocktail_cuda_codec.h): the host side. It writes the params and
// checks inputs and decoded frames with CocktailCodec's own functions (cocktail_frame.h: same
// order, same errors), and drives the device steps of cocktail_device.h.
#include "compression/cuda/cocktail_cuda_codec.h"

#include <algorithm>

#include "compression/bitpack.h"
#include "compression/cocktail_frame.h"
#include "compression/codecs.h"
#include "compression/cuda/cuda_codecs.h"
#include "compression/fixpoint_block.h"

namespace geotrain::compression::cuda {

StatusOr<std::unique_ptr<CocktailCudaCodec>> CocktailCudaCodec::Create(const CodecConfig& config,
                                                                       Stream stream) {
  GEOTRAIN_RETURN_IF_ERROR(CheckCocktailConfig(config));
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
  GEOTRAIN_RETURN_IF_ERROR(CheckCocktailResidual(shape, values));
  const int64_t n = static_cast<int64_t>(values.size());
  GEOTRAIN_RETURN_IF_ERROR(residual_.Reserve(std::max<int64_t>(n, 1)));
  GEOTRAIN_RETURN_IF_ERROR(
      CopyToDevice(residual_.data(), values.data(), n * sizeof(float), stream_));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream_, "restoring the cocktail residual"));
  residual_size_ = n;
  residual_shape_ = shape;
  return OkStatus();
}

Status CocktailCudaCodec::Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                                 ErrorSums* error) {
  GEOTRAIN_RETURN_IF_ERROR(CheckCocktailInput(in));
  const int64_t n = in.elements;
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
    if (info.x_not_finite) return CocktailInputNotFinite(info.first_bad_x);
    return CocktailResidualOverflow();
  }

  const int64_t m = static_cast<int64_t>(info.m);
  const int64_t k = CocktailKeptCount(config_.topk_ratio, m);
  PutCocktailParams(mask, k, config_, params);

  // The payload comes back through one pinned buffer: the bitmap, then the fixpoint block (at
  // most its size with float32 scales).
  const uint64_t bitmap_bytes = PackedBytes(static_cast<uint64_t>(m), 1);
  const QuantLayout layout = CocktailKeptLayout(k, config_.quant_group);
  const uint64_t block_bound = k > 0 ? FixpointBlockBytes(layout, config_.quant_bits, true) : 0;
  GEOTRAIN_RETURN_IF_ERROR(
      ws_.payload_host.Reserve(std::max<uint64_t>(bitmap_bytes + block_bound, 1)));
  GEOTRAIN_RETURN_IF_ERROR(ws_.readback.Reserve(3 * sizeof(double)));
  uint8_t* host = ws_.payload_host.data();
  if (m > 0) {
    GEOTRAIN_RETURN_IF_ERROR(CocktailSelectTopK(m, k, mask_params, &ws_, stream_));
    GEOTRAIN_RETURN_IF_ERROR(CopyToHost(host, ws_.bitmap.data(), bitmap_bytes, stream_));
  }
  uint64_t block_size = 0;
  if (k > 0) {
    const QuantizeOptions options = CocktailQuantizeOptions(config_, in.step);
    // Cannot fail on values (they are finite); were it to, the residual holds v without the
    // send subtracted, which is what "nothing was sent" means (as in CocktailCodec).
    GEOTRAIN_ASSIGN_OR_RETURN(
        block_size,
        EncodeFixpointBlockOnDevice(ws_.kept.data(), layout, options, &ws_.fixpoint, &ws_.block,
                                    ws_.kept_decoded.data(), nullptr, stream_));
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

  if (error != nullptr) AddCocktailErrorSums(sums[0], sums[1], sums[2], error);
  return OkStatus();
}

Status CocktailCudaCodec::Decode(const FrameContent& frame, float* out) {
  GEOTRAIN_ASSIGN_OR_RETURN(const CocktailFrameParams f, ReadCocktailParams(frame));
  const CocktailMask& mask = f.mask;
  const uint64_t k = f.kept;
  const int64_t n = frame.elements;
  const CocktailMaskParams mask_params = MaskParamsOf(mask);
  uint64_t m = 0;
  if (mask.mode() == MaskMode::kRolling) {
    m = mask.SampledCount(n);
  } else {
    GEOTRAIN_RETURN_IF_ERROR(CocktailSeededIndices(mask_params, n, &ws_, &m, stream_));
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckCocktailKept(k, m));

  ByteReader payload(frame.payload);
  Span<const uint8_t> bitmap;
  GEOTRAIN_RETURN_IF_ERROR(ReadCocktailBitmap(&payload, m, k, &bitmap));
  const QuantLayout layout = CocktailKeptLayout(static_cast<int64_t>(k), f.group);
  Span<const uint8_t> block;
  if (k > 0) GEOTRAIN_RETURN_IF_ERROR(CheckFixpointBlock(&payload, layout, f.bits, &block));
  GEOTRAIN_RETURN_IF_ERROR(payload.ExpectEnd("cocktail.payload"));

  // The bitmap and the block are adjacent in the payload: one copy brings both.
  const size_t bytes = bitmap.size() + block.size();
  GEOTRAIN_RETURN_IF_ERROR(ws_.block.Reserve(std::max<size_t>(bytes, 1)));
  auto* device = static_cast<uint8_t*>(ws_.block.data());
  if (bytes > 0) GEOTRAIN_RETURN_IF_ERROR(CopyToDevice(device, bitmap.data(), bytes, stream_));
  if (k > 0) {
    GEOTRAIN_RETURN_IF_ERROR(ws_.kept_decoded.Reserve(k));
    GEOTRAIN_RETURN_IF_ERROR(DecodeFixpointBlockOnDevice(
        device + bitmap.size(), layout, f.bits, &ws_.fixpoint, ws_.kept_decoded.data(), stream_));
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
