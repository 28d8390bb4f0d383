// tah's per-tile asymmetric quantizer: codes, their packing, and the zero/scale that travel.
//
// A tile of G values (G a multiple of 8) with zero point z and step s becomes b-bit codes
//   q = clamp(round_half_even((x - z) · (1/s)), 0, 2^b - 1),   decoded as x̂ = fma(q, s, z).
// z and s are chosen so that the receiver's copies (fp16 or f32) cover the tile's [min, max]:
// z = min rounded down, s = (max - z)/(2^b - 1) rounded up, hence |x - x̂| <= s/2 up to float
// rounding and nothing clips.
//
// Codes are packed MSB-first (bitpack.h's convention): code i of a tile occupies bits
// [i·b, (i+1)·b) of the tile's G·b/8 bytes. Where the buffer allows, the vector kernels move
// codes with wide loads and stores that spill past the tile; `readable`/`writable` (bytes from
// the tile's start to the buffer's end) tell them where they must move exact byte counts
// instead, so nothing outside the buffer is touched.
//
// The AVX2 kernels and the scalar ones (exposed for tests) give bit-identical codes and values.
// Stateless and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace geotrain::compression {

// A tile's zero point and step as the receiver holds them.
struct TahTileScale {
  float zero = 0;
  float scale = 0;
};

// fp16 bits of `v` rounded toward -inf / +inf: exact IEEE directed rounding, as F16C's
// vcvtps2ph computes it with rounding control (the vector path of ChooseTahScalesF16 uses that).
uint16_t HalfRoundedDown(float v);
uint16_t HalfRoundedUp(float v);

// Zero and scale of n tiles with values in [min[i], max[i]] at bits[i] bits, as fp16:
// zero = fp16 rounded down of min, scale = fp16 rounded up of ((max - zero)/(2^b - 1))·(1 + 2^-20),
// the factor covering the two float roundings of the quotient so that zero + (2^b - 1)·scale
// reaches max. `wire` receives 4n bytes (fp16 zero, fp16 scale per tile, little-endian, no
// alignment needed), `out` the float values. Requires -65504 <= min <= max <= 65504.
void ChooseTahScalesF16(const float* min, const float* max, const int32_t* bits, int64_t n,
                        uint8_t* wire, TahTileScale* out);
void ChooseTahScalesF16Scalar(const float* min, const float* max, const int32_t* bits, int64_t n,
                              uint8_t* wire, TahTileScale* out);
// One tile's zero and scale in float32 (for tensors beyond the fp16 range): zero = min, scale as
// above without the fp16 rounding.
TahTileScale ChooseTahTileScaleF32(float min, float max, int bits);

// Whether decoding with `scale` stays finite: |z| + (2^b - 1)·s, times G for a rotated tile
// (the Hadamard butterflies add G values before normalising), must stay below FLT_MAX / 2.
// Always true for fp16 zero and scale with a non-negative scale.
bool TahTileScaleIsSafe(TahTileScale scale, int bits, int tile_size, bool rotated);

// Σ(x - x̂)² and Σx² gathered in 8 float lanes over many tiles: reducing them once per row
// instead of once per tile keeps small tiles cheap.
struct TahErrorLanes {
  alignas(32) float error[8] = {};
  alignas(32) float norm[8] = {};
  // Adds the lane sums to the doubles and clears the lanes.
  void MoveTo(double* error_sq, double* norm_sq);
};

// Quantizes the tile `x` into out[0, g·bits/8). When `error` is given, adds this tile's squared
// error and norm (in the domain of `x`) to it.
void QuantizeTahTile(const float* x, int g, int bits, TahTileScale scale, uint8_t* out,
                     size_t writable, TahErrorLanes* error);
void QuantizeTahTileScalar(const float* x, int g, int bits, TahTileScale scale, uint8_t* out,
                           size_t writable, TahErrorLanes* error);

// Decodes the g·bits/8 bytes at `codes` into g values.
void DequantizeTahTile(const uint8_t* codes, size_t readable, int g, int bits, TahTileScale scale,
                       float* out);
void DequantizeTahTileScalar(const uint8_t* codes, size_t readable, int g, int bits,
                             TahTileScale scale, float* out);

// Decodes `count` consecutive unrotated tiles of one width (scales[i] for tile i): one call
// instead of one per tile.
void DequantizeTahTiles(const uint8_t* codes, size_t readable, int g, int bits,
                        const TahTileScale* scales, int64_t count, float* out);

// Decodes a rotated tile: dequantize, orthonormal Hadamard transform (hadamard.h), then swap
// elements 0 and `pivot` back. Fused in registers for G = 32..128 on AVX2.
void DecodeRotatedTahTile(const uint8_t* codes, size_t readable, int g, int bits,
                          TahTileScale scale, int pivot, float* out);
void DecodeRotatedTahTileScalar(const uint8_t* codes, size_t readable, int g, int bits,
                                TahTileScale scale, int pivot, float* out);

// min and max of g values (g a multiple of 8); a zero result is always +0.
void TahTileMinMax(const float* x, int g, float* min, float* max);

}  // namespace geotrain::compression
