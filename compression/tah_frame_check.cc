#include "compression/tah_frame_check.h"

#include <cstring>
#include <string>

#include "common/bytes.h"
#include "common/half.h"
#include "compression/tah_tile_quantizer.h"

namespace geotrain::compression {
namespace {

// The params against the shape: tile_size divides the last dim, and the counts fit.
Status CheckTahParams(const FrameContent& frame, TahParams* p, TahGeometry* geo) {
  ByteReader param_reader(frame.params);
  GEOTRAIN_RETURN_IF_ERROR(GetTahParams(&param_reader, p));
  GEOTRAIN_RETURN_IF_ERROR(param_reader.ExpectEnd("tah.params"));
  const Status shape_ok =
      TahGeometry::Make(frame.shape, frame.elements, p->tile_size, p->entropy_unit, geo);
  if (!shape_ok.ok()) return DataLoss("tah.params." + shape_ok.message());
  if (p->high_units > static_cast<uint64_t>(geo->units)) {
    return DataLoss("tah.params.high_units: " + std::to_string(p->high_units) + " exceeds the " +
                    std::to_string(geo->units) + " units");
  }
  if (p->outlier_tiles > static_cast<uint64_t>(geo->tiles)) {
    return DataLoss("tah.params.outlier_tiles: " + std::to_string(p->outlier_tiles) +
                    " exceeds the " + std::to_string(geo->tiles) + " tiles");
  }
  return OkStatus();
}

// fp16 zero and scale are safe whenever finite with scale >= 0 (|value| <= 65504·256·√G). A
// branch-free pass finds whether any pair is bad; only then the first bad one is looked for.
Status CheckHalfScales(Span<const uint8_t> bytes, uint64_t tiles) {
  const size_t n = 2 * static_cast<size_t>(tiles);
  bool bad = false;
  for (size_t i = 0; i < n; i += 2) {
    uint16_t zero, scale;
    std::memcpy(&zero, bytes.data() + 2 * i, 2);
    std::memcpy(&scale, bytes.data() + 2 * i + 2, 2);
    bad |= (zero & 0x7c00) == 0x7c00;
    bad |= (scale & 0x8000) != 0 || (scale & 0x7c00) == 0x7c00;
  }
  if (!bad) return OkStatus();
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    const bool is_scale = i % 2 == 1;
    if ((h & 0x7c00) == 0x7c00 || (is_scale && (h & 0x8000))) {
      return DataLoss(std::string("tah.scales[") + std::to_string(i / 2) + "]." +
                      (is_scale ? "scale" : "zero") + ": " + std::to_string(HalfToFloat(h)) +
                      (is_scale ? " is not a finite value >= 0" : " is not finite"));
    }
  }
  return OkStatus();
}

// f32 zero/scale can overflow when decoded (fp16 ones cannot): each tile's pair is checked
// against its bits and rotation.
Status CheckF32Scales(Span<const uint8_t> bytes, const TahParams& p, const TahGeometry& geo,
                      Span<const uint8_t> unit_map, Span<const uint8_t> tile_map) {
  for (int64_t r = 0; r < geo.rows; ++r) {
    for (int64_t k = r * geo.tiles_per_row; k < (r + 1) * geo.tiles_per_row; ++k) {
      TahTileScale s;
      std::memcpy(&s.zero, bytes.data() + 8 * k, 4);
      std::memcpy(&s.scale, bytes.data() + 8 * k + 4, 4);
      const int bits = BitmapBit(unit_map.data(), geo.UnitOf(r, k)) ? p.high_bits : p.low_bits;
      if (!TahTileScaleIsSafe(s, bits, p.tile_size, BitmapBit(tile_map.data(), k))) {
        return DataLoss("tah.scales[" + std::to_string(k) + "]: zero " + std::to_string(s.zero) +
                        ", scale " + std::to_string(s.scale) +
                        " are not finite or would overflow when decoded");
      }
    }
  }
  return OkStatus();
}

}  // namespace

uint64_t TahCodeBytes(const TahGeometry& geo, int high_bits, int low_bits, uint64_t high_units) {
  const uint64_t high_tiles = high_units * geo.TilesPerUnit();
  return static_cast<uint64_t>(geo.tile_size / 8) *
         (high_bits * high_tiles + low_bits * (static_cast<uint64_t>(geo.tiles) - high_tiles));
}

Status CheckTahFrame(const FrameContent& frame, TahFrameLayout* out,
                     std::vector<uint16_t>* pivots) {
  TahParams& p = out->params;
  TahGeometry& geo = out->geo;
  GEOTRAIN_RETURN_IF_ERROR(CheckTahParams(frame, &p, &geo));

  ByteReader in(frame.payload);
  Span<const uint8_t> unit_map, tile_map, pivot_bytes, scale_bytes, codes;
  out->unit_map_at = in.position();
  GEOTRAIN_RETURN_IF_ERROR(in.GetSpan(BitmapBytes(geo.units), &unit_map, "tah.unit_bitmap"));
  GEOTRAIN_RETURN_IF_ERROR(CheckBitmap(unit_map, geo.units, p.high_units, "tah.unit_bitmap"));
  out->tile_map_at = in.position();
  GEOTRAIN_RETURN_IF_ERROR(in.GetSpan(BitmapBytes(geo.tiles), &tile_map, "tah.outlier_bitmap"));
  GEOTRAIN_RETURN_IF_ERROR(CheckBitmap(tile_map, geo.tiles, p.outlier_tiles, "tah.outlier_bitmap"));
  out->pivots_at = in.position();
  GEOTRAIN_RETURN_IF_ERROR(
      in.GetSpan(PackedFieldBytes(p.outlier_tiles, geo.pivot_bits), &pivot_bytes, "tah.pivots"));
  // Only the padding can be wrong: every index fits the tile.
  GEOTRAIN_RETURN_IF_ERROR(
      UnpackFields(pivot_bytes, p.outlier_tiles, geo.pivot_bits, "tah.pivots", pivots));
  out->scales_at = in.position();
  GEOTRAIN_RETURN_IF_ERROR(in.GetSpan(static_cast<uint64_t>(geo.tiles) * (p.f32_scales ? 8 : 4),
                                      &scale_bytes, "tah.scales"));
  out->codes_at = in.position();
  GEOTRAIN_RETURN_IF_ERROR(
      in.GetSpan(TahCodeBytes(geo, p.high_bits, p.low_bits, p.high_units), &codes, "tah.codes"));
  GEOTRAIN_RETURN_IF_ERROR(in.ExpectEnd("tah.payload"));
  out->end = in.position();

  if (!p.f32_scales) return CheckHalfScales(scale_bytes, static_cast<uint64_t>(geo.tiles));
  return CheckF32Scales(scale_bytes, p, geo, unit_map, tile_map);
}

Status CheckTahFrame(const FrameContent& frame, TahFrameLayout* out) {
  std::vector<uint16_t> pivots;
  return CheckTahFrame(frame, out, &pivots);
}

}  // namespace geotrain::compression
