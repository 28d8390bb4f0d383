// Internals of tah_tile_quantizer.h: the code-group helpers both kernel paths share, and the AVX2
// kernels (tah_tile_kernels_avx2.cc, declared only when the build targets AVX2 and FMA).
//
// A group is 8 codes of b bits, exactly b bytes; as a word it is a big-endian 8·b-bit value with
// code 0 in the top bits. Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <cstdint>

#include "compression/tah_tile_quantizer.h"

#if defined(__AVX2__) && defined(__FMA__)
#define GEOTRAIN_TAH_AVX2 1
#endif

namespace geotrain::compression::tah_internal {

constexpr int kGroup = 8;

inline float MaxCode(int bits) { return static_cast<float>((1 << bits) - 1); }

inline void StoreGroupExact(uint64_t word, int bits, uint8_t* out) {
  for (int i = 0; i < bits; ++i) out[i] = static_cast<uint8_t>(word >> (8 * (bits - 1 - i)));
}

inline uint64_t LoadGroupExact(const uint8_t* in, int bits) {
  uint64_t word = 0;
  for (int i = 0; i < bits; ++i) word = (word << 8) | in[i];
  return word;
}

#ifdef GEOTRAIN_TAH_AVX2
// Same contracts as QuantizeTahTile / DequantizeTahTile; bit-identical to the scalar kernels.
void QuantizeTahTileAvx2(const float* x, int g, int bits, TahTileScale scale, uint8_t* out,
                         size_t writable, TahErrorLanes* error);
void DequantizeTahTileAvx2(const uint8_t* codes, size_t readable, int g, int bits,
                           TahTileScale scale, float* out);
void DequantizeTahTilesAvx2(const uint8_t* codes, size_t readable, int g, int bits,
                            const TahTileScale* scales, int64_t count, float* out);
void DecodeRotatedTahTileAvx2(const uint8_t* codes, size_t readable, int g, int bits,
                              TahTileScale scale, int pivot, float* out);
#endif

}  // namespace geotrain::compression::tah_internal
