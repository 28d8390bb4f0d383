// cocktail: CocktailSGD (Wang et al., ICML 2023) compression of a model difference or gradient.
//
// Per encode at step t = input.step, over the input viewed as a flat vector of n values:
//   1. random sparsification: the CocktailMask of step t samples a fraction p = random_ratio
//      (rolling stride or seeded Bernoulli, cocktail_mask.h);
//   2. top-k: of the m sampled values, the k = max(1, round(topk_ratio * m)) largest |values|
//      are kept (0 when m = 0), their positions sent as a bitmap with one bit per sampled
//      coordinate (MSB-first, sampled order);
//   3. quantization: the k kept values, in sampled order, go through the fixpoint quantizer
//      (fixpoint_block.h) as a [1, k] matrix in per-tile mode with tile = quant_group: q bits and
//      one fp16 scale per group of quant_group values.
// The receiver rebuilds the mask from the params and decodes zeros except the kept coordinates.
//
// Wire format. Params: the mask (cocktail_mask.h: u8 mode, u64 step, u64 stride | u64 seed +
// u64 threshold), u64 kept count k, then the fixpoint params (u8 bits, u8 scale mode = tile,
// u32 group). Payload: the bitmap, ceil(m / 8) bytes whose popcount is k and whose padding bits
// are 0, then the fixpoint block of the k values. At p = 0.1, k = 0.2, q = 4 that is about
// 0.1 + 0.02 * 4 + scales = 0.18 bits per value (~175x smaller than float32).
//
// Error feedback (config.error_feedback): the codec encodes v = x + residual, keeps
// residual = v - decoded(C(v)) and exposes it. In CocktailSGD it is the parameter server's
// "server error"; workers need none because the part of Δ = local - global they did not send
// stays in Δ (implicit error feedback), so their codecs run with error_feedback = false.
// A shape different from the residual's resets the residual to zeros before the encode.
// The residual is updated in place while the input is read (one pass over memory instead of
// two), so an encode that fails on non-finite input, or on v overflowing float32, cannot leave
// it as it was: it resets the residual to zeros rather than keep a mix of two steps. For the
// same reason the values an encode sends are subtracted lazily, chunk by chunk, during the
// next encode's pass (or when residual() is read), not by a scattered pass of their own.
//
// ErrorSums measure this encode's compression error: Σ(v - x̂)² and Σv², v being what was
// compressed (x itself without error feedback). Measured against x instead, an error-feedback
// encode would report the residual carried over from earlier steps as its own error.
//
// How the data-parallel exchange uses this codec (built by the runtime from these pieces), for
// W workers, each flattened parameter bucket cut into W chunks, worker i owning chunk i:
//   a. every worker encodes each chunk j of its Δ with its worker codec for chunk j at step t
//      (all ranks share mask_mode, random_ratio, seed and t, so they sample the same
//      coordinates) and sends frame j to worker j: an all-to-all of compressed chunks;
//   b. worker i decodes the W frames of chunk i and averages them;
//   c. worker i encodes that average with its server codec for chunk i, which has
//      error_feedback = true: the server error is added, the frame sent, the new error kept.
//      It uses the same step t, so its mask covers every coordinate the workers sent;
//   d. the W server frames are all-gathered; every worker decodes all chunks and applies the
//      result to both its local and its global copy of the parameters.
// One CocktailCodec instance per (chunk, role) so each server error matches its chunk's shape.
// Decode keeps no state between frames: any instance decodes any cocktail frame.
//
// Not thread-safe: one thread per instance at a time (the exchange thread that owns it).
#pragma once

#include <memory>
#include <vector>

#include "compression/cocktail_mask.h"
#include "compression/codec.h"

namespace geotrain::compression {

class CocktailCodec final : public Codec {
 public:
  // Validates `config` (which must name CodecId::kCocktail).
  static StatusOr<std::unique_ptr<CocktailCodec>> Create(const CodecConfig& config);

  Status Encode(const EncodeInput& input, ByteWriter* params, ByteWriter* payload,
                ErrorSums* error) override;
  Status Decode(const FrameContent& frame, float* out) override;
  // Any cocktail parameter may change between frames; the residual is kept, or dropped when
  // error feedback is switched off.
  Status Reconfigure(const CodecConfig& config) override;

  // The error-feedback residual (v - decoded) after the last encode, in the input's layout;
  // empty before the first encode with error feedback. Not const: it first subtracts what the
  // last encode sent (see above). Valid until the next call on this codec.
  Span<const float> residual();
  const Shape& residual_shape() const { return residual_shape_; }
  // Forgets the residual (the next encode starts from zeros).
  void ResetResidual();
  // Installs a residual saved earlier (checkpoint restore). `values` must hold
  // NumElements(shape) finite values.
  Status RestoreResidual(const Shape& shape, Span<const float> values);

 private:
  explicit CocktailCodec(const CodecConfig& config) : Codec(config) {}

  // Forms v (x, or x folded into residual_ in place, after the pending sends are subtracted,
  // when `feedback`), gathers the sampled values of v in sampled order into sampled_values_
  // (and, for seeded masks, their coordinates into sampled_index_), and returns Σv², or
  // InvalidArgument when some v is not finite.
  StatusOr<double> SampleInput(const CocktailMask& mask, const float* x, int64_t n, bool feedback);
  // Subtracts every pending send from residual_.
  void ApplyPendingSends();
  // Chooses the k kept values: writes the bitmap to `bitmap` and fills kept_pos_ and
  // kept_values_ in sampled order.
  void SelectTopK(int64_t k, uint8_t* bitmap);
  // The coordinate of sampled position j (sampled_index_ must be filled for seeded masks).
  uint32_t SampledCoordinate(const CocktailMask& mask, uint64_t j) const {
    return mask.mode() == MaskMode::kRolling
               ? static_cast<uint32_t>(mask.offset() + j * mask.stride())
               : sampled_index_[j];
  }

  std::vector<float> residual_;
  Shape residual_shape_;
  // What the last encode sent and residual_ still includes: coordinates (increasing) and values.
  std::vector<uint32_t> pending_coords_;
  std::vector<float> pending_sent_;

  // Scratch reused between calls (sizes track the largest tensor seen).
  std::vector<float> sampled_values_;
  std::vector<uint32_t> sampled_index_;  // seeded masks only: rolling ones compute coordinates
  std::vector<uint32_t> select_scratch_;
  std::vector<uint32_t> kept_pos_;  // positions in sampled order
  std::vector<float> kept_values_;
  std::vector<float> kept_decoded_;
  std::vector<uint32_t> kept_coords_;  // decode: coordinates of the kept values, increasing
};

}  // namespace geotrain::compression
