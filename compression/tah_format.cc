#include "compression/tah_format.h"

#include <string>

#include "compression/types.h"

namespace geotrain::compression {
namespace {

bool IsPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

int Log2(int64_t v) {
  int k = 0;
  while ((int64_t{1} << k) < v) ++k;
  return k;
}

}  // namespace

void PutTahParams(const TahParams& p, ByteWriter* out) {
  out->Put<uint32_t>(static_cast<uint32_t>(p.tile_size));
  out->Put<uint8_t>(static_cast<uint8_t>(p.high_bits));
  out->Put<uint8_t>(static_cast<uint8_t>(p.low_bits));
  out->Put<uint8_t>(static_cast<uint8_t>(p.entropy_unit));
  out->Put<uint8_t>(p.f32_scales ? 1 : 0);
  out->Put<uint64_t>(p.high_units);
  out->Put<uint64_t>(p.outlier_tiles);
}

Status GetTahParams(ByteReader* in, TahParams* p) {
  uint32_t tile = 0;
  uint8_t high = 0, low = 0, unit = 0, scale_type = 0;
  GEOTRAIN_RETURN_IF_ERROR(in->Get(&tile, "tah.params.tile_size"));
  GEOTRAIN_RETURN_IF_ERROR(in->Get(&high, "tah.params.high_bits"));
  GEOTRAIN_RETURN_IF_ERROR(in->Get(&low, "tah.params.low_bits"));
  GEOTRAIN_RETURN_IF_ERROR(in->Get(&unit, "tah.params.entropy_unit"));
  GEOTRAIN_RETURN_IF_ERROR(in->Get(&scale_type, "tah.params.scale_type"));
  GEOTRAIN_RETURN_IF_ERROR(in->Get(&p->high_units, "tah.params.high_units"));
  GEOTRAIN_RETURN_IF_ERROR(in->Get(&p->outlier_tiles, "tah.params.outlier_tiles"));
  if (!IsPowerOfTwo(tile) || tile < 8 || tile > 1024) {
    return DataLoss("tah.params.tile_size: " + std::to_string(tile) +
                    " is not a power of two in 8..1024");
  }
  if (high < 2 || high > 8) {
    return DataLoss("tah.params.high_bits: " + std::to_string(high) + " is outside 2..8");
  }
  if (low < 2 || low > 8) {
    return DataLoss("tah.params.low_bits: " + std::to_string(low) + " is outside 2..8");
  }
  if (unit > static_cast<uint8_t>(EntropyUnit::kTile)) {
    return DataLoss("tah.params.entropy_unit: unknown value " + std::to_string(unit));
  }
  if (scale_type > 1) {
    return DataLoss("tah.params.scale_type: " + std::to_string(scale_type) + " is not 0 or 1");
  }
  p->tile_size = static_cast<int>(tile);
  p->high_bits = high;
  p->low_bits = low;
  p->entropy_unit = static_cast<EntropyUnit>(unit);
  p->f32_scales = scale_type == 1;
  return OkStatus();
}

Status TahGeometry::Make(const Shape& shape, int64_t elements, int tile_size, EntropyUnit unit,
                         TahGeometry* g) {
  if (shape.empty()) {
    return InvalidArgument("shape: tah needs rank >= 1 (tiles run along the last dimension)");
  }
  if (!IsPowerOfTwo(tile_size)) {
    return InvalidArgument("tile_size: " + std::to_string(tile_size) + " is not a power of two");
  }
  const int64_t cols = shape.back();
  if (cols % tile_size != 0) {
    return InvalidArgument("tile_size: " + std::to_string(tile_size) +
                           " does not divide the last dim " + std::to_string(cols) + " of " +
                           ShapeString(shape));
  }
  g->cols = cols;
  g->rows = cols > 0 ? elements / cols : 0;
  g->tile_size = tile_size;
  g->pivot_bits = Log2(tile_size);
  g->tiles_per_row = cols / tile_size;
  g->tiles = g->rows * g->tiles_per_row;
  g->entropy_unit = unit;
  g->units = unit == EntropyUnit::kToken ? g->rows : g->tiles;
  return OkStatus();
}

void PackBitmap(const uint8_t* flags, uint64_t n, uint8_t* out) {
  const uint64_t full = n / 8;
  for (uint64_t b = 0; b < full; ++b) {
    const uint8_t* f = flags + 8 * b;
    out[b] = static_cast<uint8_t>((f[0] << 7) | (f[1] << 6) | (f[2] << 5) | (f[3] << 4) |
                                  (f[4] << 3) | (f[5] << 2) | (f[6] << 1) | f[7]);
  }
  if (n % 8) {
    uint8_t last = 0;
    for (uint64_t i = 8 * full; i < n; ++i) last |= static_cast<uint8_t>(flags[i] << (7 - i % 8));
    out[full] = last;
  }
}

Status CheckBitmap(Span<const uint8_t> map, uint64_t n, uint64_t expected_ones, const char* field) {
  if (map.size() != BitmapBytes(n)) {
    return DataLoss(std::string(field) + ": " + std::to_string(map.size()) + " bytes for " +
                    std::to_string(n) + " bits");
  }
  uint64_t ones = 0;
  for (uint8_t byte : map) ones += static_cast<uint64_t>(__builtin_popcount(byte));
  if (n % 8 && (map[map.size() - 1] & ((1u << (8 - n % 8)) - 1))) {
    return DataLoss(std::string(field) + ": padding bits after bit " + std::to_string(n) +
                    " are not zero");
  }
  if (ones != expected_ones) {
    return DataLoss(std::string(field) + ": " + std::to_string(ones) +
                    " bits set, the params declare " + std::to_string(expected_ones));
  }
  return OkStatus();
}

void PackFields(const uint16_t* values, uint64_t count, int width, uint8_t* out) {
  uint32_t acc = 0;  // at most 7 pending bits plus one 16-bit field
  int pending = 0;
  for (uint64_t i = 0; i < count; ++i) {
    acc = (acc << width) | values[i];
    pending += width;
    while (pending >= 8) {
      *out++ = static_cast<uint8_t>(acc >> (pending - 8));
      pending -= 8;
    }
  }
  if (pending) *out = static_cast<uint8_t>(acc << (8 - pending));
}

Status UnpackFields(Span<const uint8_t> in, uint64_t count, int width, const char* field,
                    std::vector<uint16_t>* values) {
  if (in.size() != PackedFieldBytes(count, width)) {
    return DataLoss(std::string(field) + ": " + std::to_string(in.size()) + " bytes for " +
                    std::to_string(count) + " fields of " + std::to_string(width) + " bits");
  }
  values->resize(count);
  const uint32_t mask = (1u << width) - 1;
  uint32_t acc = 0;
  int have = 0;
  size_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    while (have < width) {  // the caller sized `in` as PackedFieldBytes(count, width)
      acc = (acc << 8) | in[at++];
      have += 8;
    }
    (*values)[i] = static_cast<uint16_t>((acc >> (have - width)) & mask);
    have -= width;
  }
  if (have > 0 && (acc & ((1u << have) - 1))) {
    return DataLoss(std::string(field) + ": padding bits after the last index are not zero");
  }
  return OkStatus();
}

}  // namespace geotrain::compression
