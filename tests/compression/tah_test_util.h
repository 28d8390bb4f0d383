// Helpers shared by the tah tests (the CPU codec's, the CUDA one's and its CPU-side math test):
// a config, and encode a tensor and take its frame apart by the documented layout
// (compression/tah_format.h), so tests can check bitmaps, pivots and scales directly.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

#include "common/half.h"
#include "common/hash_random.h"
#include "compression/codec.h"
#include "compression/frame.h"
#include "compression/tah_format.h"
#include "compression/tah_tile_quantizer.h"

namespace geotrain::compression::tah_test {

inline CodecConfig TahConfig(int tile = 64, int high_bits = 4, int low_bits = 3,
                             double high_ratio = 0.8, EntropyUnit unit = EntropyUnit::kToken,
                             double outlier_threshold = 2.0) {
  CodecConfig c;
  c.codec = CodecId::kTah;
  c.tile_size = tile;
  c.high_bits = high_bits;
  c.low_bits = low_bits;
  c.high_ratio = high_ratio;
  c.entropy_unit = unit;
  c.outlier_threshold = outlier_threshold;
  return c;
}

// `count` copies of `base`, each shuffled by `shuffle` (Fisher-Yates) and laid end to end. As rows
// or tiles their entropies differ only by the rounding of their sums, so the ranking rests on the
// last bits of the summation order.
inline std::vector<float> PermutedCopies(const std::vector<float>& base, int count,
                                         SplitMix64* shuffle) {
  std::vector<float> x;
  for (int c = 0; c < count; ++c) {
    std::vector<float> copy = base;
    for (size_t n = copy.size(); n > 1; --n) std::swap(copy[n - 1], copy[shuffle->Next() % n]);
    x.insert(x.end(), copy.begin(), copy.end());
  }
  return x;
}

struct Encoded {
  std::vector<uint8_t> frame;
  EncodeStats stats;
};

inline Encoded EncodeOrDie(const CodecConfig& config, const std::vector<float>& x, Shape shape) {
  auto codec = MakeCodec(config);
  EXPECT_TRUE(codec.ok()) << codec.status().ToString();
  Encoded e;
  const Status s = EncodeFrame(**codec, {x.data(), DType::kFloat32, shape}, &e.frame, &e.stats);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return e;
}

inline std::vector<float> DecodeOrDie(const std::vector<uint8_t>& frame) {
  auto codec = MakeCodec(TahConfig());
  DecodedTensor out;
  const Status s = DecodeFrame(**codec, frame, {}, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out.values;
}

// A frame taken apart.
struct TahFrame {
  FrameContent content;
  std::vector<uint8_t> scratch;
  TahParams params;
  TahGeometry geo;
  std::vector<uint8_t> unit_high;    // per unit
  std::vector<uint8_t> rotated;      // per tile
  std::vector<uint16_t> pivots;      // per rotated tile
  std::vector<TahTileScale> scales;  // per tile
  size_t unit_map_at = 0, tile_map_at = 0, pivots_at = 0, scales_at = 0, codes_at = 0;

  int BitsOfTile(int64_t k) const {
    return unit_high[geo.UnitOf(k / geo.tiles_per_row, k)] ? params.high_bits : params.low_bits;
  }
};

inline void ParseTahFrame(const std::vector<uint8_t>& frame, TahFrame* f) {
  ASSERT_TRUE(ParseFrame(frame, {}, &f->scratch, &f->content).ok());
  ByteReader params(f->content.params);
  ASSERT_TRUE(GetTahParams(&params, &f->params).ok());
  ASSERT_TRUE(TahGeometry::Make(f->content.shape, f->content.elements, f->params.tile_size,
                                f->params.entropy_unit, &f->geo)
                  .ok());
  const uint8_t* p = f->content.payload.data();
  const TahGeometry& g = f->geo;
  f->unit_map_at = 0;
  f->tile_map_at = BitmapBytes(g.units);
  f->pivots_at = f->tile_map_at + BitmapBytes(g.tiles);
  f->scales_at = f->pivots_at + PackedFieldBytes(f->params.outlier_tiles, g.pivot_bits);
  f->codes_at = f->scales_at + g.tiles * (f->params.f32_scales ? 8 : 4);
  ASSERT_LE(f->codes_at, f->content.payload.size());
  for (int64_t u = 0; u < g.units; ++u) f->unit_high.push_back(BitmapBit(p, u));
  for (int64_t k = 0; k < g.tiles; ++k) f->rotated.push_back(BitmapBit(p + f->tile_map_at, k));
  ASSERT_TRUE(UnpackFields(Span<const uint8_t>(p + f->pivots_at, f->scales_at - f->pivots_at),
                           f->params.outlier_tiles, g.pivot_bits, "pivots", &f->pivots)
                  .ok());
  for (int64_t k = 0; k < g.tiles; ++k) {
    TahTileScale s;
    if (f->params.f32_scales) {
      std::memcpy(&s, p + f->scales_at + 8 * k, 8);
    } else {
      uint16_t h[2];
      std::memcpy(h, p + f->scales_at + 4 * k, 4);
      s.zero = HalfToFloat(h[0]);
      s.scale = HalfToFloat(h[1]);
    }
    f->scales.push_back(s);
  }
}

}  // namespace geotrain::compression::tah_test
