// Shared by the frame fuzzer and its corpus generator: the receiver configuration and limits the
// fuzzer decodes with, and the input convention.
//
// A fuzz input is one control byte followed by frames back to back. Control bit 0 set means
// "reseal": the fuzzer recomputes each frame's checksum before decoding, so mutations reach the
// codecs' own validation instead of stopping at the checksum. Frames are decoded in order on one
// LinkDecoder, so a delta frame can follow the full-visit frame that filled the cache.
#pragma once

#include "compression/codec_config.h"
#include "compression/frame.h"

namespace geotrain::fuzz {

inline compression::FrameLimits FuzzLimits() {
  compression::FrameLimits limits;
  limits.max_elements = 1 << 18;
  limits.max_payload_bytes = 1 << 22;
  limits.max_params_bytes = 1 << 16;
  limits.max_zstd_window_log = 20;
  return limits;
}

inline compression::CodecConfig FuzzReceiverConfig() {
  compression::CodecConfig config;
  config.max_cache_samples = 8;
  return config;
}

constexpr uint8_t kControlReseal = 1;

}  // namespace geotrain::fuzz
