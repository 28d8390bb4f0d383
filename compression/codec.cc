#include "compression/codec.h"

#include "compression/codecs.h"

namespace geotrain::compression {

Status Codec::Reconfigure(const CodecConfig& config) {
  if (config.codec != config_.codec) {
    return InvalidArgument(std::string("codec: cannot change a ") + CodecName(config_.codec) +
                           " codec into " + CodecName(config.codec));
  }
  GEOTRAIN_RETURN_IF_ERROR(config.Validate());
  config_ = config;
  return OkStatus();
}

StatusOr<std::unique_ptr<Codec>> MakeCodec(const CodecConfig& config) {
  GEOTRAIN_RETURN_IF_ERROR(config.Validate());
  switch (config.codec) {
    case CodecId::kNone:
      return NewNoneCodec(config);
    case CodecId::kFixpoint:
      return NewFixpointCodec(config);
    case CodecId::kDelta:
    case CodecId::kDeltaLowBits:
      return NewDeltaCodec(config);
    case CodecId::kTah:
      return NewTahCodec(config);
    case CodecId::kTopK:
      return NewTopKCodec(config);
    case CodecId::kRandK:
      return NewRandKCodec(config);
    case CodecId::kPowerSgd:
      return NewPowerSgdCodec(config);
    case CodecId::kCocktail:
      return NewCocktailCodec(config);
  }
  return InvalidArgument("codec: unknown id " + std::to_string(static_cast<int>(config.codec)));
}

}  // namespace geotrain::compression
