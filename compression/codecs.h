// Constructors of the concrete codecs, used by MakeCodec (codec.cc). Callers outside the
// compression library use MakeCodec and never name a concrete codec.
#pragma once

#include <memory>

#include "compression/codec.h"

namespace geotrain::compression {

StatusOr<std::unique_ptr<Codec>> NewNoneCodec(const CodecConfig& config);
StatusOr<std::unique_ptr<Codec>> NewFixpointCodec(const CodecConfig& config);
StatusOr<std::unique_ptr<Codec>> NewDeltaCodec(const CodecConfig& config);  // delta, delta-lowbits
StatusOr<std::unique_ptr<Codec>> NewTahCodec(const CodecConfig& config);
StatusOr<std::unique_ptr<Codec>> NewTopKCodec(const CodecConfig& config);
StatusOr<std::unique_ptr<Codec>> NewRandKCodec(const CodecConfig& config);
StatusOr<std::unique_ptr<Codec>> NewPowerSgdCodec(const CodecConfig& config);
StatusOr<std::unique_ptr<Codec>> NewCocktailCodec(const CodecConfig& config);

// Views a tensor as a matrix [rows, cols] with cols = the last dimension (1 for a scalar).
inline void MatrixView(const Shape& shape, int64_t elements, int64_t* rows, int64_t* cols) {
  *cols = shape.empty() ? 1 : shape.back();
  *rows = *cols > 0 ? elements / *cols : 0;
}

}  // namespace geotrain::compression
