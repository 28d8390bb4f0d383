#include "compression/cocktail_frame.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "compression/bitpack.h"

namespace geotrain::compression {
namespace {

// Number of set bits in `bytes` bytes of bitmap, eight bytes at a time.
uint64_t BitmapPopcount(const uint8_t* bitmap, uint64_t bytes) {
  uint64_t count = 0, i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, bitmap + i, 8);
    count += __builtin_popcountll(w);
  }
  for (; i < bytes; ++i) count += __builtin_popcount(bitmap[i]);
  return count;
}

}  // namespace

Status CheckCocktailConfig(const CodecConfig& config) {
  if (config.codec != CodecId::kCocktail) {
    return InvalidArgument(std::string("codec: a cocktail codec cannot be built for ") +
                           CodecName(config.codec));
  }
  GEOTRAIN_RETURN_IF_ERROR(config.Validate());
  return CocktailMask::ForStep(config, 0).status();  // checks mask_mode
}

Status CheckCocktailResidual(const Shape& shape, Span<const float> values) {
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
  return OkStatus();
}

Status CheckCocktailInput(const EncodeInput& in) {
  const int64_t n = in.elements;
  if (n < 0 || static_cast<uint64_t>(n) > CocktailMask::kMaxElements) {
    return InvalidArgument("input.elements: " + std::to_string(n) +
                           " is outside 0..2^32-1 (cocktail indexes coordinates with 32 bits; "
                           "compress smaller chunks)");
  }
  if (n > 0 && in.data == nullptr) return InvalidArgument("input.data: null");
  return OkStatus();
}

Status CocktailInputNotFinite(int64_t index) {
  return InvalidArgument("input[" + std::to_string(index) +
                         "]: NaN or infinity cannot be compressed");
}

Status CocktailResidualOverflow() {
  return InvalidArgument("input: adding the error-feedback residual overflows float32");
}

int64_t CocktailKeptCount(double topk_ratio, int64_t m) {
  return m == 0 ? 0 : std::clamp<int64_t>(std::llround(topk_ratio * m), 1, m);
}

QuantizeOptions CocktailQuantizeOptions(const CodecConfig& config, uint64_t step) {
  QuantizeOptions options = FixpointCodecOptions(config, step);
  options.bits = config.quant_bits;  // cocktail's own bits key: `bits` is fixpoint's
  return options;
}

void PutCocktailParams(const CocktailMask& mask, int64_t k, const CodecConfig& config,
                       ByteWriter* params) {
  mask.Write(params);
  params->Put<uint64_t>(static_cast<uint64_t>(k));
  PutQuantParams(params, ScaleMode::kPerTile, config.quant_group, config.quant_bits);
}

void AddCocktailErrorSums(double norm_sq, double kept_norm_sq, double kept_error_sq,
                          ErrorSums* error) {
  error->error_sq += std::max(0.0, norm_sq - kept_norm_sq) + kept_error_sq;
  error->norm_sq += norm_sq;
}

StatusOr<CocktailFrameParams> ReadCocktailParams(const FrameContent& frame) {
  ByteReader params(frame.params);
  GEOTRAIN_ASSIGN_OR_RETURN(const CocktailMask mask, CocktailMask::Read(&params));
  CocktailFrameParams f{mask};
  GEOTRAIN_RETURN_IF_ERROR(params.Get(&f.kept, "cocktail.kept"));
  ScaleMode scale_mode;
  GEOTRAIN_RETURN_IF_ERROR(GetQuantParams(&params, &scale_mode, &f.group, &f.bits));
  if (scale_mode != ScaleMode::kPerTile) {
    return DataLoss(std::string("cocktail.scale_mode: ") + ScaleModeName(scale_mode) +
                    " (cocktail frames use tile)");
  }
  if (f.bits < 2) {
    return DataLoss("cocktail.bits: " + std::to_string(f.bits) + " is outside 2..8");
  }
  GEOTRAIN_RETURN_IF_ERROR(params.ExpectEnd("cocktail.params"));

  const int64_t n = frame.elements;
  if (n < 0 || static_cast<uint64_t>(n) > CocktailMask::kMaxElements) {
    return DataLoss("cocktail: frame of " + std::to_string(n) + " elements is outside 0..2^32-1");
  }
  return f;
}

Status CheckCocktailKept(uint64_t k, uint64_t m) {
  if (k > m) {
    return DataLoss("cocktail.kept: " + std::to_string(k) + " exceeds the " + std::to_string(m) +
                    " sampled coordinates");
  }
  if (k == 0 && m > 0) {
    return DataLoss("cocktail.kept: 0 of " + std::to_string(m) +
                    " sampled coordinates (an encoder keeps at least one)");
  }
  return OkStatus();
}

Status ReadCocktailBitmap(ByteReader* payload, uint64_t m, uint64_t k,
                          Span<const uint8_t>* bitmap) {
  GEOTRAIN_RETURN_IF_ERROR(payload->GetSpan(PackedBytes(m, 1), bitmap, "cocktail.bitmap"));
  const Span<const uint8_t>& b = *bitmap;
  if (m % 8 != 0 && (b[b.size() - 1] & ((1u << (8 - m % 8)) - 1)) != 0) {
    return DataLoss("cocktail.bitmap: padding bits after the last sampled coordinate are set");
  }
  const uint64_t ones = BitmapPopcount(b.data(), b.size());
  if (ones != k) {
    return DataLoss("cocktail.bitmap: " + std::to_string(ones) + " positions set, params say " +
                    std::to_string(k) + " kept values");
  }
  return OkStatus();
}

}  // namespace geotrain::compression
