// LinkDecoder: the receiving end of one link in one direction.
//
// Frames on a link may change codec (uncompressed warm-up, then delta) or bits at any step; the
// LinkDecoder keeps one receiver codec per codec id, created on first use from a receiver
// configuration that supplies what frames do not carry (the delta cache's bounds and directory).
// Not thread-safe: one receiving thread per link.
#pragma once

#include <array>
#include <memory>

#include "compression/codec.h"
#include "compression/frame.h"

namespace geotrain::compression {

class LinkDecoder {
 public:
  explicit LinkDecoder(CodecConfig receiver_config, FrameLimits limits = {});

  // Parses, checks and decodes one frame into `out`.
  Status Decode(Span<const uint8_t> frame, DecodedTensor* out);

  // The receiver codec of `id` if a frame of that codec has been decoded (tests inspect state).
  Codec* codec(CodecId id) const { return codecs_[static_cast<int>(id)].get(); }

 private:
  CodecConfig receiver_config_;
  FrameLimits limits_;
  std::vector<uint8_t> scratch_;
  std::array<std::unique_ptr<Codec>, kNumCodecs> codecs_;
};

}  // namespace geotrain::compression
