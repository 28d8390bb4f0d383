#include "compression/codec_config.h"

#include <cmath>
#include <sstream>

namespace geotrain::compression {
namespace {

Status CheckRange(const char* field, double value, double lo, double hi) {
  if (std::isfinite(value) && value >= lo && value <= hi) return OkStatus();
  std::ostringstream m;
  m << field << ": " << value << " is outside " << lo << ".." << hi;
  return InvalidArgument(m.str());
}

// A fraction in (0, 1].
Status CheckFraction(const char* field, double value) {
  if (std::isfinite(value) && value > 0 && value <= 1) return OkStatus();
  std::ostringstream m;
  m << field << ": " << value << " must be in (0, 1]";
  return InvalidArgument(m.str());
}

Status CheckPowerOfTwo(const char* field, int value, int lo, int hi) {
  if (value >= lo && value <= hi && (value & (value - 1)) == 0) return OkStatus();
  return InvalidArgument(std::string(field) + ": " + std::to_string(value) +
                         " must be a power of two in " + std::to_string(lo) + ".." +
                         std::to_string(hi));
}

Status CheckQuantizer(const CodecConfig& c) {
  GEOTRAIN_RETURN_IF_ERROR(CheckRange("bits", c.bits, 2, 8));
  if (c.scale_mode == ScaleMode::kPerTile) {
    GEOTRAIN_RETURN_IF_ERROR(CheckRange("tile_size", c.tile_size, 1, 1 << 20));
  }
  return OkStatus();
}

}  // namespace

const char* ScaleModeName(ScaleMode mode) {
  switch (mode) {
    case ScaleMode::kPerChannel:
      return "channel";
    case ScaleMode::kPerRow:
      return "row";
    case ScaleMode::kPerTile:
      return "tile";
  }
  return "?";
}

StatusOr<ScaleMode> ParseScaleMode(const std::string& name) {
  if (name == "channel" || name == "per-channel") return ScaleMode::kPerChannel;
  if (name == "row" || name == "per-row" || name == "token") return ScaleMode::kPerRow;
  if (name == "tile" || name == "per-tile") return ScaleMode::kPerTile;
  return InvalidArgument("scale_mode: unknown '" + name + "' (expected channel, row or tile)");
}

const char* RoundingName(Rounding rounding) {
  return rounding == Rounding::kNearest ? "nearest" : "stochastic";
}

StatusOr<Rounding> ParseRounding(const std::string& name) {
  if (name == "nearest") return Rounding::kNearest;
  if (name == "stochastic") return Rounding::kStochastic;
  return InvalidArgument("rounding: unknown '" + name + "' (expected nearest or stochastic)");
}

Status CodecConfig::Validate() const {
  GEOTRAIN_RETURN_IF_ERROR(CheckRange("zstd_level", zstd_level, 0, 19));
  GEOTRAIN_RETURN_IF_ERROR(CheckRange("threads", threads, 1, 256));
  switch (codec) {
    case CodecId::kNone:
      return OkStatus();
    case CodecId::kFixpoint:
      return CheckQuantizer(*this);
    case CodecId::kDeltaLowBits:
      if (cache_bits != 2 && cache_bits != 4 && cache_bits != 8) {
        return InvalidArgument("cache_bits: " + std::to_string(cache_bits) + " must be 2, 4 or 8");
      }
      [[fallthrough]];
    case CodecId::kDelta:
      GEOTRAIN_RETURN_IF_ERROR(CheckQuantizer(*this));
      return CheckRange("max_cache_samples", static_cast<double>(max_cache_samples), 1, 1e8);
    case CodecId::kTah:
      GEOTRAIN_RETURN_IF_ERROR(CheckPowerOfTwo("tile_size", tile_size, 8, 1024));
      GEOTRAIN_RETURN_IF_ERROR(CheckRange("high_bits", high_bits, 2, 8));
      GEOTRAIN_RETURN_IF_ERROR(CheckRange("low_bits", low_bits, 2, 8));
      GEOTRAIN_RETURN_IF_ERROR(CheckRange("high_ratio", high_ratio, 0, 1));
      return CheckRange("outlier_threshold", outlier_threshold, 1, 1e6);
    case CodecId::kTopK:
    case CodecId::kRandK:
      GEOTRAIN_RETURN_IF_ERROR(CheckFraction("density", density));
      if (value_dtype == DType::kBFloat16) {
        return InvalidArgument("value_dtype: bf16 is not offered for sparse values (f32 or f16)");
      }
      return OkStatus();
    case CodecId::kPowerSgd:
      return CheckRange("rank", rank, 1, 4096);
    case CodecId::kCocktail:
      GEOTRAIN_RETURN_IF_ERROR(CheckFraction("random_ratio", random_ratio));
      GEOTRAIN_RETURN_IF_ERROR(CheckFraction("topk_ratio", topk_ratio));
      GEOTRAIN_RETURN_IF_ERROR(CheckRange("quant_bits", quant_bits, 2, 8));
      if (mask_mode != MaskMode::kRolling && mask_mode != MaskMode::kSeeded) {
        return InvalidArgument("mask_mode: unknown value " +
                               std::to_string(static_cast<int>(mask_mode)));
      }
      return CheckRange("quant_group", quant_group, 1, 1 << 20);
  }
  return InvalidArgument("codec: unknown id " + std::to_string(static_cast<int>(codec)));
}

std::string CodecConfig::Describe() const {
  std::ostringstream s;
  s << CodecName(codec);
  switch (codec) {
    case CodecId::kNone:
      s << " wire_dtype=" << DTypeName(wire_dtype);
      break;
    case CodecId::kFixpoint:
      s << " bits=" << bits << " scale=" << ScaleModeName(scale_mode);
      if (scale_mode == ScaleMode::kPerTile) s << " tile=" << tile_size;
      if (rounding != Rounding::kNearest) s << " rounding=" << RoundingName(rounding);
      break;
    case CodecId::kDelta:
    case CodecId::kDeltaLowBits:
      s << " bits=" << bits << " scale=" << ScaleModeName(scale_mode);
      if (codec == CodecId::kDeltaLowBits) s << " cache_bits=" << cache_bits;
      break;
    case CodecId::kTah:
      s << " tile=" << tile_size << " high_bits=" << high_bits << " low_bits=" << low_bits
        << " high_ratio=" << high_ratio
        << " unit=" << (entropy_unit == EntropyUnit::kToken ? "token" : "tile");
      break;
    case CodecId::kTopK:
    case CodecId::kRandK:
      s << " density=" << density << " values=" << DTypeName(value_dtype);
      break;
    case CodecId::kPowerSgd:
      s << " rank=" << rank << " error_feedback=" << (error_feedback ? "on" : "off");
      break;
    case CodecId::kCocktail:
      s << " p=" << random_ratio << " k=" << topk_ratio << " q=" << quant_bits
        << " mask=" << (mask_mode == MaskMode::kRolling ? "rolling" : "seeded");
      break;
  }
  if (zstd_level > 0) s << " zstd=" << zstd_level;
  if (threads > 1) s << " threads=" << threads;
  return s.str();
}

}  // namespace geotrain::compression
