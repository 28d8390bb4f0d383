#include "compression/link_decoder.h"

namespace geotrain::compression {

LinkDecoder::LinkDecoder(CodecConfig receiver_config, FrameLimits limits)
    : receiver_config_(std::move(receiver_config)), limits_(limits) {}

Status LinkDecoder::Decode(Span<const uint8_t> frame, DecodedTensor* out) {
  FrameContent content;
  GEOTRAIN_RETURN_IF_ERROR(ParseFrame(frame, limits_, &scratch_, &content));
  std::unique_ptr<Codec>& codec = codecs_[static_cast<int>(content.codec)];
  if (!codec) {
    CodecConfig config = receiver_config_;
    config.codec = content.codec;
    GEOTRAIN_ASSIGN_OR_RETURN(codec, MakeCodec(config));
  }
  return DecodeContent(*codec, content, out);
}

}  // namespace geotrain::compression
