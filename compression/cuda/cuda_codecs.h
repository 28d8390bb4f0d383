// Constructors of the concrete CUDA codecs, used by MakeCudaCodec (cuda_codec.cc).
#pragma once

#include <memory>

#include "compression/cuda/cuda_codec.h"

namespace geotrain::compression::cuda {

StatusOr<std::unique_ptr<CudaCodec>> NewFixpointCudaCodec(const CodecConfig& config, Stream stream);
StatusOr<std::unique_ptr<CudaCodec>> NewTahCudaCodec(const CodecConfig& config, Stream stream);
StatusOr<std::unique_ptr<CudaCodec>> NewCocktailCudaCodec(const CodecConfig& config, Stream stream);
StatusOr<std::unique_ptr<CudaCodec>> NewDeltaCudaCodec(const CodecConfig& config, Stream stream);

}  // namespace geotrain::compression::cuda
