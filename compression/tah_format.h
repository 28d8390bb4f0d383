// The wire format of tah (TAH-Quant) frames: params, geometry, and the payload's bit fields.
//
// A tensor is viewed as [rows, C] (rows = the product of all but the last dim, C = the last dim,
// rank >= 1) and cut into tiles of G = tile_size channels inside a row: T = C/G tiles per row,
// N = rows·T tiles in row-major order. Units (whose entropy picks high or low bits) are rows
// (entropy_unit 0, "token") or tiles (1, "tile"): U = rows or N.
//
// Params (little-endian):
//   u32 tile_size G      a power of two in 8..1024 that divides C
//   u8  high_bits        2..8
//   u8  low_bits         2..8
//   u8  entropy_unit     0 = token (row), 1 = tile
//   u8  scale_type       0 = fp16 zero/scale, 1 = float32 (only when values exceed the fp16 range)
//   u64 high_units       how many units are high precision (the 1 bits of the unit bitmap)
//   u64 outlier_tiles    how many tiles are rotated (the 1 bits of the outlier bitmap)
//
// Payload, sections back to back, bit fields MSB-first (bit i of a field at bit 7 - i%8 of byte
// i/8), the unused low bits of a section's last byte zero:
//   1. unit bitmap       U bits, ceil(U/8) bytes: 1 = the unit's tiles use high_bits
//   2. outlier bitmap    N bits, ceil(N/8) bytes: 1 = the tile was pivot-swapped and rotated
//   3. pivots            one log2(G)-bit index per rotated tile in tile order,
//                        ceil(outlier_tiles·log2(G)/8) bytes: where the tile's largest |x| was
//                        before it was swapped to index 0
//   4. tile scales       per tile in tile order (zero, scale): 2 fp16 (4N bytes) or 2 f32 (8N
//                        bytes); finite, scale >= 0
//   5. codes             per tile in tile order, G codes of b bits (b of its unit), MSB-first:
//                        G·b/8 bytes (whole bytes since G >= 8)
// A tile decodes as x̂ = fmaf(code, scale, zero) in float32; a rotated tile then goes through the
// orthonormal Hadamard transform x·H_G/√G (Sylvester order; its own inverse) and has elements 0
// and pivot swapped back. Decoders that must agree bit for bit (CPU paths here, a future CUDA
// one) compute the transform as butterfly stages h = 1, 2, 4, ..., G/2 in that order,
// (a, b) ← (a + b, a - b), then a product by (float)(1/√G) (hadamard.h). The pivot is the first
// index holding the tile's largest |x|.
//
// Size at the defaults (G = 64, 4/3 bits, 80% high): 3.8 code bits + 0.5 scale bits + 1/64 map
// bits + pivots ≈ 4.32-4.35 bits per value, 7.3-7.4x smaller than float32.
#pragma once

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "common/span.h"
#include "common/status.h"
#include "compression/codec_config.h"
#include "compression/types.h"

namespace geotrain::compression {

struct TahParams {
  int tile_size = 64;
  int high_bits = 4;
  int low_bits = 3;
  EntropyUnit entropy_unit = EntropyUnit::kToken;
  bool f32_scales = false;
  uint64_t high_units = 0;
  uint64_t outlier_tiles = 0;
};

void PutTahParams(const TahParams& params, ByteWriter* out);
// Reads and range-checks params (not yet against a shape; see TahGeometry::Make).
Status GetTahParams(ByteReader* in, TahParams* params);

// How a shape is cut into rows, tiles and units.
struct TahGeometry {
  int64_t rows = 0;
  int64_t cols = 0;
  int tile_size = 0;
  int pivot_bits = 0;  // log2(tile_size)
  int64_t tiles_per_row = 0;
  int64_t tiles = 0;
  int64_t units = 0;
  EntropyUnit entropy_unit = EntropyUnit::kToken;

  // Fails when the rank is 0 or tile_size does not divide the last dim.
  static Status Make(const Shape& shape, int64_t elements, int tile_size, EntropyUnit unit,
                     TahGeometry* out);
  // The unit of tile `tile` (a global index) in row `row`; callers walk rows, so no division.
  int64_t UnitOf(int64_t row, int64_t tile) const {
    return entropy_unit == EntropyUnit::kToken ? row : tile;
  }
  int64_t TilesPerUnit() const { return entropy_unit == EntropyUnit::kToken ? tiles_per_row : 1; }
};

inline uint64_t BitmapBytes(uint64_t bits) { return (bits + 7) / 8; }
inline bool BitmapBit(const uint8_t* map, uint64_t i) { return (map[i >> 3] >> (7 - (i & 7))) & 1; }

// Packs n flags (0/1 bytes) into an MSB-first bitmap of BitmapBytes(n) bytes.
void PackBitmap(const uint8_t* flags, uint64_t n, uint8_t* out);
// Checks that an n-bit bitmap has `expected_ones` set bits and zero padding; `field` names it.
Status CheckBitmap(Span<const uint8_t> map, uint64_t n, uint64_t expected_ones, const char* field);

// Packs `count` indices of `width` bits (at most 16) MSB-first into PackedFieldBytes bytes.
inline uint64_t PackedFieldBytes(uint64_t count, int width) { return (count * width + 7) / 8; }
void PackFields(const uint16_t* values, uint64_t count, int width, uint8_t* out);
// Reads them back; fails (naming `field`) when the padding bits are not zero.
Status UnpackFields(Span<const uint8_t> in, uint64_t count, int width, const char* field,
                    std::vector<uint16_t>* values);

}  // namespace geotrain::compression
