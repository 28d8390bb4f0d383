// AVX2 kernels of tah's tile quantizer. Every step mirrors the scalar kernel in
// tah_tile_quantizer.cc operation for operation (sub, mul, clamp, round half to even, fma), so
// codes and decoded values are bit-identical.
//
// Tiles of 32 or more values move 32 codes per step: 4-bit codes as nibbles, 8-bit codes as
// bytes, other widths through 64 → 32 → 16 → 8-bit splits of two 8-code words per 128-bit half.
// Tiles of 8 or 16 values move one 8-code group (b bytes) per step through a 64-bit word.
#include "compression/tah_tile_kernels.h"

#ifdef GEOTRAIN_TAH_AVX2

#include <immintrin.h>

#include <cstring>
#include <utility>

#include "compression/hadamard.h"
#include "compression/hadamard_avx2.h"

namespace geotrain::compression::tah_internal {
namespace {

constexpr int kChunk = 32;

enum class Packing { kNibbles, kBytes, kGeneric };

// pshufb masks, the same for both 128-bit halves. Pack: a half holds two 64-bit words of 8 codes
// each (value in the low 8b bits); emit each word's b bytes most significant first, back to back.
// Unpack: the inverse, from 2b stream bytes to the two little-endian words.
struct ShuffleTables {
  alignas(16) uint8_t pack[9][16];
  alignas(16) uint8_t unpack[9][16];
  constexpr ShuffleTables() : pack{}, unpack{} {
    for (int b = 1; b <= 8; ++b) {
      for (int j = 0; j < 16; ++j) {
        pack[b][j] = static_cast<uint8_t>(j < b       ? b - 1 - j
                                          : j < 2 * b ? 8 + (2 * b - 1 - j)
                                                      : 0x80);
        const int word = j / 8, byte = j % 8;
        unpack[b][j] = static_cast<uint8_t>(byte < b ? word * b + (b - 1 - byte) : 0x80);
      }
    }
  }
};
constexpr ShuffleTables kShuffles;

inline __m256i GroupShifts(int bits) {
  return _mm256_setr_epi32(3 * bits, 2 * bits, bits, 0, 3 * bits, 2 * bits, bits, 0);
}

// Per-tile constants of the quantizer.
struct QuantizeConsts {
  __m256 zero, scale, inv, max_code;
  QuantizeConsts(TahTileScale s, int bits)
      : zero(_mm256_set1_ps(s.zero)),
        scale(_mm256_set1_ps(s.scale)),
        inv(_mm256_set1_ps(s.scale > 0 ? 1.0f / s.scale : 0.0f)),
        max_code(_mm256_set1_ps(MaxCode(bits))) {}
};

// Codes of 8 values as int32 lanes; accumulates the squared error and norm when asked.
// t >= 0 needs no clamp (zero <= every value, 1/scale >= 0); cvtps_epi32 rounds half to even
// like the scalar std::nearbyint (both follow MXCSR, round-to-nearest unless a caller changed it).
template <bool kWithError>
inline __m256i Quantize8(const float* x, const QuantizeConsts& c, __m256* err, __m256* norm) {
  const __m256 v = _mm256_loadu_ps(x);
  const __m256 t = _mm256_min_ps(_mm256_mul_ps(_mm256_sub_ps(v, c.zero), c.inv), c.max_code);
  const __m256i q = _mm256_cvtps_epi32(t);
  if (kWithError) {
    const __m256 d = _mm256_sub_ps(v, _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), c.scale, c.zero));
    *err = _mm256_fmadd_ps(d, d, *err);
    *norm = _mm256_fmadd_ps(v, v, *norm);
  }
  return q;
}

// 32 codes as bytes: dword order q0[0..3] q1[0..3] q2[0..3] q3[0..3] | q0[4..7] ... q3[4..7].
inline __m256i InterleavedBytes(__m256i q0, __m256i q1, __m256i q2, __m256i q3) {
  return _mm256_packus_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
}
inline __m256i InOrder(__m256i interleaved) {
  return _mm256_permutevar8x32_epi32(interleaved, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Writes 4·b packed bytes of 32 codes. `spill` allows 16-byte stores past them (kGeneric).
template <Packing kPacking>
inline void Pack32(__m256i q0, __m256i q1, __m256i q2, __m256i q3, int bits, bool spill,
                   uint8_t* out) {
  if (kPacking == Packing::kBytes) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), InOrder(InterleavedBytes(q0, q1, q2, q3)));
  } else if (kPacking == Packing::kNibbles) {
    // Pairs never straddle a dword, so pair up before ordering: c0·16 + c1 per 16 bits, narrow to
    // bytes, then interleave the halves' 16-bit words back into stream order.
    const __m256i pairs =
        _mm256_maddubs_epi16(_mm256_set1_epi16(16 | 1 << 8), InterleavedBytes(q0, q1, q2, q3));
    const __m256i narrow = _mm256_packus_epi16(pairs, pairs);
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(out),
        _mm_unpacklo_epi16(_mm256_castsi256_si128(narrow), _mm256_extracti128_si256(narrow, 1)));
  } else {
    // c0·2^b + c1 per 16 bits, p0·2^2b + p1 per 32 bits, q0·2^4b + q1 per 64 bits (b <= 7).
    const __m256i bytes = InOrder(InterleavedBytes(q0, q1, q2, q3));
    const __m256i pairs =
        _mm256_maddubs_epi16(_mm256_set1_epi16(static_cast<int16_t>(1 << bits | 1 << 8)), bytes);
    const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi32(1 << (2 * bits) | 1 << 16));
    const __m256i words =
        _mm256_or_si256(_mm256_sll_epi64(_mm256_and_si256(quads, _mm256_set1_epi64x(0xffffffff)),
                                         _mm_cvtsi32_si128(4 * bits)),
                        _mm256_srli_epi64(quads, 32));
    const __m256i packed = _mm256_shuffle_epi8(
        words, _mm256_broadcastsi128_si256(
                   _mm_load_si128(reinterpret_cast<const __m128i*>(kShuffles.pack[bits]))));
    alignas(32) uint8_t local[32];
    uint8_t* dst = spill ? out : local;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(packed));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * bits),
                     _mm256_extracti128_si256(packed, 1));
    if (!spill) std::memcpy(out, local, 4 * bits);
  }
}

template <bool kWithError, Packing kPacking>
void QuantizeChunks(const float* x, int g, int bits, const QuantizeConsts& c, uint8_t* out,
                    size_t writable, __m256* err, __m256* norm) {
  size_t at = 0;
  for (int i = 0; i < g; i += kChunk, at += 4 * bits) {
    const __m256i q0 = Quantize8<kWithError>(x + i, c, err, norm);
    const __m256i q1 = Quantize8<kWithError>(x + i + 8, c, err, norm);
    const __m256i q2 = Quantize8<kWithError>(x + i + 16, c, err, norm);
    const __m256i q3 = Quantize8<kWithError>(x + i + 24, c, err, norm);
    Pack32<kPacking>(q0, q1, q2, q3, bits, at + 2 * bits + 16 <= writable, out + at);
  }
}

template <bool kWithError>
void QuantizeGroups(const float* x, int g, int bits, const QuantizeConsts& c, uint8_t* out,
                    size_t writable, __m256* err, __m256* norm) {
  const __m256i shifts = GroupShifts(bits);
  const int half_bits = 4 * bits, spare = 64 - 8 * bits;
  size_t at = 0;
  for (int i = 0; i < g; i += kGroup, at += bits) {
    // Shift codes 0..3 and 4..7 into place and OR each half together: two 4b-bit quads.
    __m256i w = _mm256_sllv_epi32(Quantize8<kWithError>(x + i, c, err, norm), shifts);
    w = _mm256_or_si256(w, _mm256_shuffle_epi32(w, 0x4E));
    w = _mm256_or_si256(w, _mm256_shuffle_epi32(w, 0xB1));
    const uint64_t hi = static_cast<uint32_t>(_mm256_cvtsi256_si32(w));
    const uint64_t lo = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm256_extracti128_si256(w, 1)));
    const uint64_t word = (hi << half_bits) | lo;
    if (at + 8 <= writable) {
      const uint64_t be = __builtin_bswap64(word << spare);
      std::memcpy(out + at, &be, 8);
    } else {
      StoreGroupExact(word, bits, out + at);
    }
  }
}

template <bool kWithError>
void QuantizeTile(const float* x, int g, int bits, TahTileScale s, uint8_t* out, size_t writable,
                  TahErrorLanes* error) {
  const QuantizeConsts c(s, bits);
  __m256 err = _mm256_setzero_ps(), norm = _mm256_setzero_ps();
  if (kWithError) {
    err = _mm256_load_ps(error->error);
    norm = _mm256_load_ps(error->norm);
  }
  if (g % kChunk != 0) {
    QuantizeGroups<kWithError>(x, g, bits, c, out, writable, &err, &norm);
  } else if (bits == 4) {
    QuantizeChunks<kWithError, Packing::kNibbles>(x, g, bits, c, out, writable, &err, &norm);
  } else if (bits == 8) {
    QuantizeChunks<kWithError, Packing::kBytes>(x, g, bits, c, out, writable, &err, &norm);
  } else {
    QuantizeChunks<kWithError, Packing::kGeneric>(x, g, bits, c, out, writable, &err, &norm);
  }
  if (kWithError) {
    _mm256_store_ps(error->error, err);
    _mm256_store_ps(error->norm, norm);
  }
}

inline __m256 DequantizedValues(__m128i codes8, __m256 zero, __m256 scale) {
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(codes8)), scale, zero);
}
inline void Dequantize8(__m128i codes8, __m256 zero, __m256 scale, float* out) {
  _mm256_storeu_ps(out, DequantizedValues(codes8, zero, scale));
}

// 32 codes as bytes in stream order, from 4·b bytes at `in` (`spill`: 16-byte loads may read
// past them, kGeneric only).
template <Packing kPacking>
inline __m256i Unpack32(const uint8_t* in, int bits, bool spill) {
  if (kPacking == Packing::kBytes) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
  } else if (kPacking == Packing::kNibbles) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
    const __m128i nibble = _mm_set1_epi8(0x0f);
    const __m128i high = _mm_and_si128(_mm_srli_epi16(v, 4), nibble);
    const __m128i low = _mm_and_si128(v, nibble);
    return _mm256_set_m128i(_mm_unpackhi_epi8(high, low), _mm_unpacklo_epi8(high, low));
  } else {
    alignas(16) uint8_t local[48];
    if (!spill) {
      std::memset(local, 0, sizeof(local));
      std::memcpy(local, in, 4 * bits);
      in = local;
    }
    const __m256i raw = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * bits)), 1);
    // Two 8-code words per half, then split: 64 → 2×32 → 4×16 → 8×8 bits, first code lowest.
    const __m256i words = _mm256_shuffle_epi8(
        raw, _mm256_broadcastsi128_si256(
                 _mm_load_si128(reinterpret_cast<const __m128i*>(kShuffles.unpack[bits]))));
    const __m256i quads = _mm256_or_si256(
        _mm256_srl_epi64(words, _mm_cvtsi32_si128(4 * bits)),
        _mm256_slli_epi64(
            _mm256_and_si256(words, _mm256_set1_epi64x((int64_t{1} << (4 * bits)) - 1)), 32));
    const __m256i pairs = _mm256_or_si256(
        _mm256_srl_epi32(quads, _mm_cvtsi32_si128(2 * bits)),
        _mm256_slli_epi32(_mm256_and_si256(quads, _mm256_set1_epi32((1 << (2 * bits)) - 1)), 16));
    return _mm256_or_si256(
        _mm256_srl_epi16(pairs, _mm_cvtsi32_si128(bits)),
        _mm256_slli_epi16(
            _mm256_and_si256(pairs, _mm256_set1_epi16(static_cast<int16_t>((1 << bits) - 1))), 8));
  }
}

template <Packing kPacking>
void DequantizeChunks(const uint8_t* codes, size_t readable, int g, int bits, __m256 zero,
                      __m256 scale, float* out) {
  size_t at = 0;
  for (int i = 0; i < g; i += kChunk, at += 4 * bits) {
    const __m256i bytes = Unpack32<kPacking>(codes + at, bits, at + 2 * bits + 16 <= readable);
    const __m128i lo = _mm256_castsi256_si128(bytes), hi = _mm256_extracti128_si256(bytes, 1);
    Dequantize8(lo, zero, scale, out + i);
    Dequantize8(_mm_srli_si128(lo, 8), zero, scale, out + i + 8);
    Dequantize8(hi, zero, scale, out + i + 16);
    Dequantize8(_mm_srli_si128(hi, 8), zero, scale, out + i + 24);
  }
}

void DequantizeGroups(const uint8_t* codes, size_t readable, int g, int bits, __m256 zero,
                      __m256 scale, float* out) {
  const __m256i shifts = GroupShifts(bits);
  const __m256i mask = _mm256_set1_epi32((1 << bits) - 1);
  const int half_bits = 4 * bits, spare = 64 - 8 * bits;
  const uint64_t half_mask = (uint64_t{1} << half_bits) - 1;
  size_t at = 0;
  for (int i = 0; i < g; i += kGroup, at += bits) {
    uint64_t word;
    if (at + 8 <= readable) {
      uint64_t raw;
      std::memcpy(&raw, codes + at, 8);
      word = __builtin_bswap64(raw) >> spare;
    } else {
      word = LoadGroupExact(codes + at, bits);
    }
    const __m256i quads = _mm256_set_m128i(_mm_set1_epi32(static_cast<int>(word & half_mask)),
                                           _mm_set1_epi32(static_cast<int>(word >> half_bits)));
    const __m256i c = _mm256_and_si256(_mm256_srlv_epi32(quads, shifts), mask);
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(_mm256_cvtepi32_ps(c), scale, zero));
  }
}

// A rotated tile of kVectors·8 values decoded in registers: dequantize, transform, store once,
// then swap elements 0 and `pivot` (the reloads come straight from the store buffer). Fewer
// stores than dequantize-then-transform in memory, which matters while the output misses cache.
template <int kVectors, Packing kPacking>
void DecodeRotatedBlock(const uint8_t* codes, size_t readable, int bits, __m256 zero, __m256 scale,
                        int pivot, float* out) {
  __m256 v[kVectors];
  size_t at = 0;
  for (int c = 0; c < kVectors / 4; ++c, at += 4 * bits) {
    const __m256i bytes = Unpack32<kPacking>(codes + at, bits, at + 2 * bits + 16 <= readable);
    const __m128i lo = _mm256_castsi256_si128(bytes), hi = _mm256_extracti128_si256(bytes, 1);
    v[4 * c] = DequantizedValues(lo, zero, scale);
    v[4 * c + 1] = DequantizedValues(_mm_srli_si128(lo, 8), zero, scale);
    v[4 * c + 2] = DequantizedValues(hi, zero, scale);
    v[4 * c + 3] = DequantizedValues(_mm_srli_si128(hi, 8), zero, scale);
  }
  hadamard_internal::HadamardRegisters<kVectors>(v, HadamardNormalizer(8 * kVectors));
  for (int i = 0; i < kVectors; ++i) _mm256_storeu_ps(out + 8 * i, v[i]);
  std::swap(out[0], out[pivot]);
}

template <int kVectors>
void DecodeRotatedBlock(const uint8_t* codes, size_t readable, int bits, __m256 zero, __m256 scale,
                        int pivot, float* out) {
  if (bits == 4) {
    DecodeRotatedBlock<kVectors, Packing::kNibbles>(codes, readable, bits, zero, scale, pivot, out);
  } else if (bits == 8) {
    DecodeRotatedBlock<kVectors, Packing::kBytes>(codes, readable, bits, zero, scale, pivot, out);
  } else {
    DecodeRotatedBlock<kVectors, Packing::kGeneric>(codes, readable, bits, zero, scale, pivot, out);
  }
}

}  // namespace

void DecodeRotatedTahTileAvx2(const uint8_t* codes, size_t readable, int g, int bits,
                              TahTileScale s, int pivot, float* out) {
  const __m256 zero = _mm256_set1_ps(s.zero), scale = _mm256_set1_ps(s.scale);
  switch (g) {
    case 32:
      return DecodeRotatedBlock<4>(codes, readable, bits, zero, scale, pivot, out);
    case 64:
      return DecodeRotatedBlock<8>(codes, readable, bits, zero, scale, pivot, out);
    case 128:
      return DecodeRotatedBlock<16>(codes, readable, bits, zero, scale, pivot, out);
    default:
      DequantizeTahTileAvx2(codes, readable, g, bits, s, out);
      OrthonormalHadamard(out, g);
      std::swap(out[0], out[pivot]);
  }
}

void QuantizeTahTileAvx2(const float* x, int g, int bits, TahTileScale s, uint8_t* out,
                         size_t writable, TahErrorLanes* error) {
  if (error) {
    QuantizeTile<true>(x, g, bits, s, out, writable, error);
  } else {
    QuantizeTile<false>(x, g, bits, s, out, writable, error);
  }
}

void DequantizeTahTilesAvx2(const uint8_t* codes, size_t readable, int g, int bits,
                            const TahTileScale* scales, int64_t count, float* out) {
  const size_t tile_bytes = static_cast<size_t>(g / 8) * bits;
  const auto each_tile = [&](auto decode_tile) {
    for (int64_t i = 0; i < count; ++i) {
      decode_tile(codes + i * tile_bytes, readable - i * tile_bytes, _mm256_set1_ps(scales[i].zero),
                  _mm256_set1_ps(scales[i].scale), out + i * g);
    }
  };
  if (g % kChunk != 0) {
    each_tile([&](const uint8_t* c, size_t n, __m256 z, __m256 s, float* o) {
      DequantizeGroups(c, n, g, bits, z, s, o);
    });
  } else if (bits == 4) {
    each_tile([&](const uint8_t* c, size_t n, __m256 z, __m256 s, float* o) {
      DequantizeChunks<Packing::kNibbles>(c, n, g, bits, z, s, o);
    });
  } else if (bits == 8) {
    each_tile([&](const uint8_t* c, size_t n, __m256 z, __m256 s, float* o) {
      DequantizeChunks<Packing::kBytes>(c, n, g, bits, z, s, o);
    });
  } else {
    each_tile([&](const uint8_t* c, size_t n, __m256 z, __m256 s, float* o) {
      DequantizeChunks<Packing::kGeneric>(c, n, g, bits, z, s, o);
    });
  }
}

void DequantizeTahTileAvx2(const uint8_t* codes, size_t readable, int g, int bits, TahTileScale s,
                           float* out) {
  const __m256 zero = _mm256_set1_ps(s.zero), scale = _mm256_set1_ps(s.scale);
  if (g % kChunk != 0) {
    DequantizeGroups(codes, readable, g, bits, zero, scale, out);
  } else if (bits == 4) {
    DequantizeChunks<Packing::kNibbles>(codes, readable, g, bits, zero, scale, out);
  } else if (bits == 8) {
    DequantizeChunks<Packing::kBytes>(codes, readable, g, bits, zero, scale, out);
  } else {
    DequantizeChunks<Packing::kGeneric>(codes, readable, g, bits, zero, scale, out);
  }
}

}  // namespace geotrain::compression::tah_internal

#endif  // GEOTRAIN_TAH_AVX2
