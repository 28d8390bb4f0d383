// cocktail (CocktailSGD, compression/cocktail_codec.h) on a CUDA device: the same params and
// payload bytes as CocktailCodec for the same input, config and step, and the same decoded values.
//
// The mask is rebuilt on the device from the step (rolling stride or seeded hash), the top-k of
// the sampled values is a radix select with CocktailCodec's tie rule (the first equal magnitudes
// in sampled order), the bitmap is written MSB-first per 32 sampled positions, and the kept values
// go through the device fixpoint quantizer (fixpoint_device.h). Kernel structure:
// cocktail_device.cu; per-index arithmetic: cocktail_math.h.
//
// Error feedback (config.error_feedback) keeps the residual v - decoded in device memory with
// CocktailCodec's semantics: v = x + residual, reset to zeros on a shape change and on an encode
// that fails on non-finite input or on v overflowing float32. CocktailCodec subtracts what an
// encode sent lazily (during the next pass); this codec subtracts it at the end of the encode.
// Both compute residual[i] - sent[i] on the same values, so CopyResidualToHost gives
// CocktailCodec::residual() bit for bit.
//
// Not thread-safe: one thread per instance at a time.
#pragma once

#include <memory>
#include <vector>

#include "compression/cuda/cocktail_device.h"
#include "compression/cuda/cuda_codec.h"

namespace geotrain::compression::cuda {

class CocktailCudaCodec final : public CudaCodec {
 public:
  // Validates `config` (which must name CodecId::kCocktail).
  static StatusOr<std::unique_ptr<CocktailCudaCodec>> Create(const CodecConfig& config,
                                                             Stream stream = nullptr);

  Status Encode(const EncodeInput& input, ByteWriter* params, ByteWriter* payload,
                ErrorSums* error) override;
  Status Decode(const FrameContent& frame, float* out) override;
  // As CocktailCodec::Reconfigure: the residual is kept, or dropped when error feedback is
  // switched off.
  Status Reconfigure(const CodecConfig& config) override;

  // The residual (device memory) and its shape; residual_size() is 0 before the first encode
  // with error feedback (CocktailCodec::residual() is empty then).
  const float* residual_data() const { return residual_.data(); }
  int64_t residual_size() const { return residual_size_; }
  const Shape& residual_shape() const { return residual_shape_; }
  // Copies the residual to the host (what CocktailCodec::residual() returns).
  Status CopyResidualToHost(std::vector<float>* out);
  // As CocktailCodec::ResetResidual and RestoreResidual (`values` in host memory).
  void ResetResidual();
  Status RestoreResidual(const Shape& shape, Span<const float> values);

 private:
  CocktailCudaCodec(const CodecConfig& config, Stream stream) : CudaCodec(config, stream) {}

  // Sets the residual to zeros after a failed encode (it may be partly folded).
  void ZeroResidual();

  DeviceArray<float> residual_;
  int64_t residual_size_ = 0;
  Shape residual_shape_;
  CocktailWorkspace ws_;
};

}  // namespace geotrain::compression::cuda
