// The validation of a received tah frame, shared by both decoders: TahCodec (tah_codec.cc) and the
// CUDA one (cuda/tah_cuda_codec.cc). Every field is checked, in one order and with one set of
// DATA_LOSS messages, so a frame one decoder refuses the other refuses with the same Status (the
// CUDA one before anything touches the device). What it returns is where each payload section
// starts; the layout is documented in tah_format.h.
//
// No CUDA: tests/compression/cuda_tah_math_test.cc also runs it on corrupted frames against
// TahCodec::Decode. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <vector>

#include "common/span.h"
#include "common/status.h"
#include "compression/tah_format.h"
#include "compression/types.h"

namespace geotrain::compression {

// A validated tah frame: params, geometry and the payload offsets of its sections.
struct TahFrameLayout {
  TahParams params;
  TahGeometry geo;
  uint64_t unit_map_at = 0;
  uint64_t tile_map_at = 0;
  uint64_t pivots_at = 0;
  uint64_t scales_at = 0;
  uint64_t codes_at = 0;
  uint64_t end = 0;  // the payload size

  // Bytes [begin, end) of the payload this layout was checked on.
  static Span<const uint8_t> Section(Span<const uint8_t> payload, uint64_t begin, uint64_t end) {
    return payload.subspan(begin, end - begin);
  }
};

// Code section bytes for `high_units` high units: G/8 bytes per code bit of every tile.
uint64_t TahCodeBytes(const TahGeometry& geo, int high_bits, int low_bits, uint64_t high_units);

// Checks every field of `frame` and fills `out`; the pivots, which must be unpacked to check
// their padding, are left in `pivots` (one per rotated tile, in tile order).
Status CheckTahFrame(const FrameContent& frame, TahFrameLayout* out, std::vector<uint16_t>* pivots);
// The same for a caller that reads the pivots from the payload itself (the CUDA decoder).
Status CheckTahFrame(const FrameContent& frame, TahFrameLayout* out);

}  // namespace geotrain::compression
