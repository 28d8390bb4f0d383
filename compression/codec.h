// Codec: the interface every compression method implements.
//
// A Codec instance is one end of one link in one direction: the sender's instance encodes, the
// receiver's decodes, and each keeps its own state (activation cache, error feedback buffers,
// warm-started factors). Parameters a receiver needs travel in each frame, so the sender may
// change bits between frames (Reconfigure) without the two ends ever disagreeing.
//
// Not thread-safe: one thread per instance at a time.
#pragma once

#include <memory>

#include "common/bytes.h"
#include "compression/codec_config.h"
#include "compression/types.h"

namespace geotrain::compression {

class Codec {
 public:
  explicit Codec(CodecConfig config) : config_(std::move(config)) {}
  virtual ~Codec() = default;
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  CodecId id() const { return config_.codec; }
  const CodecConfig& config() const { return config_; }

  // Writes what a receiver needs to `params` and the compressed data to `payload`, and adds the
  // squared error and norm of this encode to `error`. Fails on input the codec cannot represent
  // (wrong rank, missing sample ids, non-finite values), naming the field.
  virtual Status Encode(const EncodeInput& input, ByteWriter* params, ByteWriter* payload,
                        ErrorSums* error) = 0;

  // Decodes `frame` into `out` (frame.elements floats). Every field read is validated.
  virtual Status Decode(const FrameContent& frame, float* out) = 0;

  // Replaces tunable parameters (bits, ratios, rank) between frames, keeping state. The codec id
  // cannot change; codecs refuse changes their state cannot follow.
  virtual Status Reconfigure(const CodecConfig& config);

 protected:
  CodecConfig config_;
};

// Builds the codec `config.codec` names after validating `config`.
StatusOr<std::unique_ptr<Codec>> MakeCodec(const CodecConfig& config);

}  // namespace geotrain::compression
