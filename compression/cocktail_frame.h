// What both cocktail codecs, CocktailCodec (cocktail_codec.cc) and the CUDA one
// (cuda/cocktail_cuda_codec.cc), check, write and read around their data paths: the config, the
// input, a restored residual, the params, and a received frame's fields up to the fixpoint block.
// The two must refuse the same inputs and frames with the same Status, in the same order, and
// write the same params; one source keeps them from drifting apart (as delta_checks.h does for
// the delta codecs). The layout is documented in cocktail_codec.h.
#pragma once

#include <cstdint>

#include "common/bytes.h"
#include "common/span.h"
#include "common/status.h"
#include "compression/cocktail_mask.h"
#include "compression/codec_config.h"
#include "compression/fixpoint_block.h"
#include "compression/types.h"

namespace geotrain::compression {

// ---- Sender ------------------------------------------------------------------------------------

// Create's check: `config` names CodecId::kCocktail, is valid, and has a mask_mode ForStep takes.
Status CheckCocktailConfig(const CodecConfig& config);

// RestoreResidual's check: NumElements(shape) finite values, no negative dimension.
Status CheckCocktailResidual(const Shape& shape, Span<const float> values);

// Encode's check of the input before anything is read: 32-bit coordinates, data present.
Status CheckCocktailInput(const EncodeInput& in);

// Encode's errors for a v = x (+ residual) that is not finite: x[index] itself, or (every x
// being finite) x plus the error-feedback residual overflowing float32.
Status CocktailInputNotFinite(int64_t index);
Status CocktailResidualOverflow();

// k = max(1, round(topk_ratio * m)), at most m; 0 when m = 0.
int64_t CocktailKeptCount(double topk_ratio, int64_t m);

// The fixpoint block of the k kept values: a [1, k] matrix, one scale per `group` values.
inline QuantLayout CocktailKeptLayout(int64_t k, int64_t group) {
  return QuantLayout{1, k, ScaleMode::kPerTile, group};
}
// Its quantizer settings at `step` (stochastic rounding draws from the step's stream).
QuantizeOptions CocktailQuantizeOptions(const CodecConfig& config, uint64_t step);

// The params: the mask, the kept count k, then the fixpoint params of the kept values.
void PutCocktailParams(const CocktailMask& mask, int64_t k, const CodecConfig& config,
                       ByteWriter* params);

// Adds an encode's ErrorSums from Σv² over all values (`norm_sq`) and, over the kept ones, Σv²
// and Σ(v - x̂)². Unkept coordinates decode to 0, so
// Σ(v - x̂)² = Σv² - Σ_kept v² + Σ_kept (v - x̂)².
void AddCocktailErrorSums(double norm_sq, double kept_norm_sq, double kept_error_sq,
                          ErrorSums* error);

// ---- Receiver ----------------------------------------------------------------------------------

// A received frame's params, checked on their own and against the frame's element count.
struct CocktailFrameParams {
  CocktailMask mask;
  uint64_t kept = 0;  // k
  int64_t group = 0;  // values per fixpoint scale
  int bits = 0;
};

// Reads the params of `frame` (DataLoss naming the field on anything a sender cannot write)
// and checks that its elements fit 32-bit coordinates.
StatusOr<CocktailFrameParams> ReadCocktailParams(const FrameContent& frame);

// Checks the kept count against the m sampled coordinates of the frame's mask.
Status CheckCocktailKept(uint64_t k, uint64_t m);

// Reads the bitmap of m sampled positions from `payload` into `bitmap` and checks it: padding
// bits zero and exactly k positions set.
Status ReadCocktailBitmap(ByteReader* payload, uint64_t m, uint64_t k, Span<const uint8_t>* bitmap);

}  // namespace geotrain::compression
