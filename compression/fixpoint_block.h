// The AC-SGD fixpoint quantizer, shared by fixpoint, delta, delta-lowbits and cocktail.
//
// A matrix [rows, cols] (cols = channels, the last dimension) is quantized to b bits with
// symmetric scales: f = b - 1, scale = max|x| over the values sharing it (rounded up to fp16 so it
// never clips), q = clamp(round(x * 2^f / scale), -2^f, 2^f - 1), stored offset-binary q + 2^f,
// and decoded as x̂ = (code - 2^f) * scale / 2^f. Every |x - x̂| <= scale / 2^f.
//
// A "fixpoint block" on the wire is: u8 scale type (0 = fp16, 1 = f32 when a scale exceeds fp16),
// the scales, then the packed codes (bitpack.h). The block is self-contained: decoding needs only
// the layout and the bits, which the enclosing codec writes in its params.
#pragma once

#include <cstdint>

#include "common/bytes.h"
#include "compression/codec_config.h"
#include "compression/types.h"

namespace geotrain::compression {

struct QuantLayout {
  int64_t rows = 0;
  int64_t cols = 0;
  ScaleMode mode = ScaleMode::kPerChannel;
  int64_t tile = 64;  // values per scale in kPerTile mode (the last tile of a row may be shorter)

  int64_t TilesPerRow() const { return (cols + tile - 1) / tile; }
  int64_t NumScales() const;
};

struct QuantizeOptions {
  int bits = 8;
  Rounding rounding = Rounding::kNearest;
  // Stochastic rounding draws from hash(seed, stream, element index): reproducible, no state.
  uint64_t seed = 0;
  uint64_t stream = 0;
  // Threads for large blocks (rows are split in pieces of 8; small blocks stay on one thread).
  // The output is identical for any thread count.
  int threads = 1;
};

// Appends the fixpoint block of `x` to `payload`. If `xhat` is non-null it receives the values the
// receiver will decode (bit-identical to DecodeFixpointBlock). Adds to `error` when non-null.
// Fails with INVALID_ARGUMENT if `x` holds NaN or infinity.
Status EncodeFixpointBlock(const float* x, const QuantLayout& layout,
                           const QuantizeOptions& options, ByteWriter* payload, float* xhat,
                           ErrorSums* error);

// Reads one fixpoint block from `payload` into `out` (rows * cols floats), using up to `threads`.
Status DecodeFixpointBlock(ByteReader* payload, const QuantLayout& layout, int bits, float* out,
                           int threads = 1);

// Bytes of a block (for size checks and ratio estimates).
uint64_t FixpointBlockBytes(const QuantLayout& layout, int bits, bool f32_scales = false);

// The fixpoint codec's one block (fixpoint_codec.cc and its CUDA twin): the tensor viewed as
// [rows, last dim] with the config's scales, and the config's quantizer for `step`'s draws.
QuantLayout FixpointCodecLayout(const CodecConfig& config, const Shape& shape, int64_t elements);
QuantizeOptions FixpointCodecOptions(const CodecConfig& config, uint64_t step);
// A fixpoint codec frame's params, read and checked, and the block's layout over its shape.
Status ReadFixpointCodecParams(const FrameContent& frame, QuantLayout* layout, int* bits);

// Writes/reads layout fields shared by codecs that carry a fixpoint block (mode, tile, bits).
void PutQuantParams(ByteWriter* params, ScaleMode mode, int64_t tile, int bits);
Status GetQuantParams(ByteReader* params, ScaleMode* mode, int64_t* tile, int* bits);

}  // namespace geotrain::compression
