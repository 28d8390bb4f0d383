#include "compression/fixpoint_block.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/half.h"
#include "common/hash_random.h"
#include "common/parallel_for.h"
#include "compression/bitpack.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GEOTRAIN_FIXPOINT_AVX2 1
#endif

namespace geotrain::compression {
namespace {

constexpr float kHalfMax = 65504.0f;
constexpr uint8_t kScalesF16 = 0;
constexpr uint8_t kScalesF32 = 1;

// max|x| of n values; eight independent lanes let the compiler vectorise the reduction.
float MaxAbsSpan(const float* x, int64_t n) {
  float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) lanes[l] = std::max(lanes[l], std::fabs(x[i + l]));
  }
  for (; i < n; ++i) lanes[0] = std::max(lanes[0], std::fabs(x[i]));
  float m = 0;
  for (float v : lanes) m = std::max(m, v);
  return m;
}

// max|x| per scale group over rows [begin, end). Per channel, `amax` is this range's own array of
// `cols` partial maxima (merged by the caller); per row or tile, each row writes its own entries.
void MaxAbsRows(const float* x, const QuantLayout& l, int64_t begin, int64_t end, float* amax) {
  if (l.mode == ScaleMode::kPerChannel) {
    std::fill(amax, amax + l.cols, 0.0f);
    // Four rows per sweep: one load and store of the running maxima per four input loads.
    for (; begin + 4 <= end; begin += 4) {
      const float* r0 = x + begin * l.cols;
      const float* r1 = r0 + l.cols;
      const float* r2 = r1 + l.cols;
      const float* r3 = r2 + l.cols;
      for (int64_t c = 0; c < l.cols; ++c) {
        const float m01 = std::max(std::fabs(r0[c]), std::fabs(r1[c]));
        const float m23 = std::max(std::fabs(r2[c]), std::fabs(r3[c]));
        amax[c] = std::max(amax[c], std::max(m01, m23));
      }
    }
  }
  for (int64_t r = begin; r < end; ++r) {
    const float* row = x + r * l.cols;
    switch (l.mode) {
      case ScaleMode::kPerChannel:
        for (int64_t c = 0; c < l.cols; ++c) amax[c] = std::max(amax[c], std::fabs(row[c]));
        break;
      case ScaleMode::kPerRow:
        amax[r] = MaxAbsSpan(row, l.cols);
        break;
      case ScaleMode::kPerTile: {
        float* tile_max = amax + r * l.TilesPerRow();
        for (int64_t c0 = 0, t = 0; c0 < l.cols; c0 += l.tile, ++t) {
          tile_max[t] = MaxAbsSpan(row + c0, std::min(l.cols, c0 + l.tile) - c0);
        }
        break;
      }
    }
  }
}

// Rows per parallel piece: a multiple of 8 so every piece's codes start on a byte boundary.
constexpr int64_t kRowGrain = 8;
// Below this many values a thread start costs more than it saves.
constexpr int64_t kMinValuesPerThread = int64_t{1} << 18;

int PiecesFor(const QuantLayout& l, int threads) {
  const int64_t values = l.rows * l.cols;
  return static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(threads, values / kMinValuesPerThread)));
}

void MaxAbs(const float* x, const QuantLayout& l, int threads, float* amax) {
  const int pieces = PiecesFor(l, threads);
  if (l.mode != ScaleMode::kPerChannel || pieces == 1) {
    ParallelFor(l.rows, pieces, kRowGrain,
                [&](int, int64_t begin, int64_t end) { MaxAbsRows(x, l, begin, end, amax); });
    return;
  }
  std::vector<std::vector<float>> partial(pieces, std::vector<float>(l.cols));
  const int used =
      ParallelFor(l.rows, pieces, kRowGrain, [&](int piece, int64_t begin, int64_t end) {
        MaxAbsRows(x, l, begin, end, partial[piece].data());
      });
  std::fill(amax, amax + l.cols, 0.0f);
  for (int p = 0; p < used; ++p) {
    for (int64_t c = 0; c < l.cols; ++c) amax[c] = std::max(amax[c], partial[p][c]);
  }
}

// Per-column multiplier (2^f / scale) and step (scale / 2^f) of row `r`.
void FillRowFactors(const QuantLayout& l, int64_t r, const float* mul_by_scale,
                    const float* step_by_scale, float* mul, float* step) {
  switch (l.mode) {
    case ScaleMode::kPerChannel:
      break;  // the per-scale arrays are already per column
    case ScaleMode::kPerRow:
      std::fill(mul, mul + l.cols, mul_by_scale[r]);
      std::fill(step, step + l.cols, step_by_scale[r]);
      break;
    case ScaleMode::kPerTile:
      for (int64_t c0 = 0, t = r * l.TilesPerRow(); c0 < l.cols; c0 += l.tile, ++t) {
        const int64_t end = std::min(l.cols, c0 + l.tile);
        std::fill(mul + c0, mul + end, mul_by_scale[t]);
        std::fill(step + c0, step + end, step_by_scale[t]);
      }
      break;
  }
}

// Nearest rounding of one row into codes; returns Σ(x - x̂)² and Σx² through the references.
// The clamp is written as (v > lo ? v : lo) so NaN behaves as in the vector path (becomes lo).
void QuantizeRowNearest(const float* x, const float* mul, const float* step, int64_t n, int f,
                        uint8_t* codes, float* xhat, double* err_sq, double* norm_sq) {
  const float lo = -static_cast<float>(1 << f);
  const float hi = static_cast<float>((1 << f) - 1);
  const float offset = static_cast<float>(1 << f);
  int64_t i = 0;
  float err = 0, norm = 0;
#ifdef GEOTRAIN_FIXPOINT_AVX2
  __m256 verr = _mm256_setzero_ps(), vnorm = _mm256_setzero_ps();
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi), voff = _mm256_set1_ps(offset);
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    __m256 v = _mm256_mul_ps(xv, _mm256_loadu_ps(mul + i));
    v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi);
    const __m256 r = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 xh = _mm256_mul_ps(r, _mm256_loadu_ps(step + i));
    if (xhat) _mm256_storeu_ps(xhat + i, xh);
    const __m256 d = _mm256_sub_ps(xv, xh);
    verr = _mm256_fmadd_ps(d, d, verr);
    vnorm = _mm256_fmadd_ps(xv, xv, vnorm);
    const __m256i q = _mm256_cvtps_epi32(_mm256_add_ps(r, voff));
    const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + i), _mm_packus_epi16(w, w));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, verr);
  for (float e : lanes) err += e;
  _mm256_store_ps(lanes, vnorm);
  for (float e : lanes) norm += e;
#endif
  for (; i < n; ++i) {
    float v = x[i] * mul[i];
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    const float r = std::nearbyint(v);
    const float xh = r * step[i];
    if (xhat) xhat[i] = xh;
    const float d = x[i] - xh;
    err += d * d;
    norm += x[i] * x[i];
    codes[i] = static_cast<uint8_t>(r + offset);
  }
  *err_sq += err;
  *norm_sq += norm;
}

void QuantizeRowStochastic(const float* x, const float* mul, const float* step, int64_t n, int f,
                           const QuantizeOptions& o, uint64_t first_index, uint8_t* codes,
                           float* xhat, double* err_sq, double* norm_sq) {
  const float lo = -static_cast<float>(1 << f);
  const float hi = static_cast<float>((1 << f) - 1);
  for (int64_t i = 0; i < n; ++i) {
    const float u = UniformFromHash(HashCounter(o.seed, o.stream, first_index + i));
    float v = std::floor(x[i] * mul[i] + u);
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    const float xh = v * step[i];
    if (xhat) xhat[i] = xh;
    *err_sq += static_cast<double>(x[i] - xh) * (x[i] - xh);
    *norm_sq += static_cast<double>(x[i]) * x[i];
    codes[i] = static_cast<uint8_t>(v + static_cast<float>(1 << f));
  }
}

void DequantizeRow(const uint8_t* codes, const float* step, int64_t n, int f, float* out) {
  const float offset = static_cast<float>(1 << f);
  int64_t i = 0;
#ifdef GEOTRAIN_FIXPOINT_AVX2
  const __m256 voff = _mm256_set1_ps(offset);
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i));
    const __m256 c = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_sub_ps(c, voff), _mm256_loadu_ps(step + i)));
  }
#endif
  for (; i < n; ++i) out[i] = (static_cast<float>(codes[i]) - offset) * step[i];
}

Status CheckLayout(const QuantLayout& l, int bits) {
  if (bits < 1 || bits > 8) {
    return InvalidArgument("fixpoint.bits: " + std::to_string(bits) + " is outside 1..8");
  }
  if (l.rows < 0 || l.cols < 0) return InvalidArgument("fixpoint: negative layout");
  if (l.mode == ScaleMode::kPerTile && l.tile < 1) {
    return InvalidArgument("fixpoint.tile: must be at least 1");
  }
  return OkStatus();
}

}  // namespace

int64_t QuantLayout::NumScales() const {
  switch (mode) {
    case ScaleMode::kPerChannel:
      return rows > 0 ? cols : 0;
    case ScaleMode::kPerRow:
      return rows;
    case ScaleMode::kPerTile:
      return rows * TilesPerRow();
  }
  return 0;
}

uint64_t FixpointBlockBytes(const QuantLayout& layout, int bits, bool f32_scales) {
  return 1 + layout.NumScales() * (f32_scales ? 4 : 2) +
         PackedBytes(static_cast<uint64_t>(layout.rows) * layout.cols, bits);
}

Status EncodeFixpointBlock(const float* x, const QuantLayout& l, const QuantizeOptions& o,
                           ByteWriter* payload, float* xhat, ErrorSums* error) {
  GEOTRAIN_RETURN_IF_ERROR(CheckLayout(l, o.bits));
  const int f = o.bits - 1;
  const int64_t num_scales = l.NumScales();
  std::vector<float> amax(num_scales);
  MaxAbs(x, l, o.threads, amax.data());
  const float largest = num_scales ? *std::max_element(amax.begin(), amax.end()) : 0.0f;
  const bool f32_scales = !(largest <= kHalfMax);  // also true for NaN/inf, caught below

  // Scales exactly as the receiver will see them.
  std::vector<float> mul(std::max<int64_t>(num_scales, l.cols));
  std::vector<float> step(std::max<int64_t>(num_scales, l.cols));
  payload->Put<uint8_t>(f32_scales ? kScalesF32 : kScalesF16);
  uint8_t* scale_bytes = payload->Extend(num_scales * (f32_scales ? 4 : 2));
  for (int64_t s = 0; s < num_scales; ++s) {
    float scale = amax[s];
    if (f32_scales) {
      std::memcpy(scale_bytes + 4 * s, &scale, 4);
    } else {
      const uint16_t h = FloatToHalfRoundUp(scale);
      std::memcpy(scale_bytes + 2 * s, &h, 2);
      scale = HalfToFloat(h);
    }
    mul[s] = scale > 0 ? static_cast<float>(1 << f) / scale : 0.0f;
    step[s] = scale / static_cast<float>(1 << f);
  }

  const uint64_t total = static_cast<uint64_t>(l.rows) * l.cols;
  uint8_t* packed = payload->Extend(PackedBytes(total, o.bits));
  const int pieces = PiecesFor(l, o.threads);
  std::vector<double> piece_err(pieces, 0.0), piece_norm(pieces, 0.0);
  ParallelFor(l.rows, pieces, kRowGrain, [&](int piece, int64_t begin, int64_t end) {
    BitPacker packer(packed + static_cast<uint64_t>(begin) * l.cols * o.bits / 8, o.bits);
    std::vector<uint8_t> codes(l.cols);
    std::vector<float> row_mul(l.cols), row_step(l.cols);
    for (int64_t r = begin; r < end; ++r) {
      const float* rm = mul.data();
      const float* rs = step.data();
      if (l.mode != ScaleMode::kPerChannel) {
        FillRowFactors(l, r, mul.data(), step.data(), row_mul.data(), row_step.data());
        rm = row_mul.data();
        rs = row_step.data();
      }
      float* row_hat = xhat ? xhat + r * l.cols : nullptr;
      // 8-bit codes are their own packing: write them in place.
      uint8_t* row_codes = o.bits == 8 ? packed + static_cast<uint64_t>(r) * l.cols : codes.data();
      if (o.rounding == Rounding::kNearest) {
        QuantizeRowNearest(x + r * l.cols, rm, rs, l.cols, f, row_codes, row_hat, &piece_err[piece],
                           &piece_norm[piece]);
      } else {
        QuantizeRowStochastic(x + r * l.cols, rm, rs, l.cols, f, o,
                              static_cast<uint64_t>(r) * l.cols, row_codes, row_hat,
                              &piece_err[piece], &piece_norm[piece]);
      }
      if (o.bits != 8) packer.Append(codes.data(), l.cols);
    }
  });
  double err_sq = 0, norm_sq = 0;
  for (int p = 0; p < pieces; ++p) {
    err_sq += piece_err[p];
    norm_sq += piece_norm[p];
  }
  if (!std::isfinite(norm_sq)) {
    return InvalidArgument("input: contains NaN or infinity (cannot be quantized)");
  }
  if (error) {
    error->error_sq += err_sq;
    error->norm_sq += norm_sq;
  }
  return OkStatus();
}

Status DecodeFixpointBlock(ByteReader* payload, const QuantLayout& l, int bits, float* out,
                           int threads) {
  GEOTRAIN_RETURN_IF_ERROR(CheckLayout(l, bits));
  const int f = bits - 1;
  uint8_t scale_type = 0;
  GEOTRAIN_RETURN_IF_ERROR(payload->Get(&scale_type, "fixpoint.scale_type"));
  if (scale_type != kScalesF16 && scale_type != kScalesF32) {
    return DataLoss("fixpoint.scale_type: " + std::to_string(scale_type) + " is not 0 or 1");
  }
  const int64_t num_scales = l.NumScales();
  Span<const uint8_t> scale_bytes;
  GEOTRAIN_RETURN_IF_ERROR(payload->GetSpan(num_scales * (scale_type == kScalesF32 ? 4 : 2),
                                            &scale_bytes, "fixpoint.scales"));
  std::vector<float> step(std::max<int64_t>(num_scales, l.cols));
  for (int64_t s = 0; s < num_scales; ++s) {
    float scale;
    if (scale_type == kScalesF32) {
      std::memcpy(&scale, scale_bytes.data() + 4 * s, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, scale_bytes.data() + 2 * s, 2);
      scale = HalfToFloat(h);
    }
    if (!(scale >= 0 && std::isfinite(scale))) {
      return DataLoss("fixpoint.scales[" + std::to_string(s) + "]: not a finite value >= 0");
    }
    step[s] = scale / static_cast<float>(1 << f);
  }
  const uint64_t total = static_cast<uint64_t>(l.rows) * l.cols;
  Span<const uint8_t> packed;
  GEOTRAIN_RETURN_IF_ERROR(payload->GetSpan(PackedBytes(total, bits), &packed, "fixpoint.codes"));
  ParallelFor(l.rows, PiecesFor(l, threads), kRowGrain, [&](int, int64_t begin, int64_t end) {
    BitUnpacker unpacker(packed.data() + static_cast<uint64_t>(begin) * l.cols * bits / 8, bits);
    std::vector<uint8_t> codes(l.cols);
    std::vector<float> row_mul(l.cols), row_step(l.cols);
    for (int64_t r = begin; r < end; ++r) {
      const float* rs = step.data();
      if (l.mode != ScaleMode::kPerChannel) {
        FillRowFactors(l, r, step.data(), step.data(), row_mul.data(), row_step.data());
        rs = row_step.data();
      }
      unpacker.Read(codes.data(), l.cols);
      DequantizeRow(codes.data(), rs, l.cols, f, out + r * l.cols);
    }
  });
  return OkStatus();
}

void PutQuantParams(ByteWriter* params, ScaleMode mode, int64_t tile, int bits) {
  params->Put<uint8_t>(static_cast<uint8_t>(bits));
  params->Put<uint8_t>(static_cast<uint8_t>(mode));
  params->Put<uint32_t>(static_cast<uint32_t>(mode == ScaleMode::kPerTile ? tile : 0));
}

Status GetQuantParams(ByteReader* params, ScaleMode* mode, int64_t* tile, int* bits) {
  uint8_t b = 0, m = 0;
  uint32_t t = 0;
  GEOTRAIN_RETURN_IF_ERROR(params->Get(&b, "params.bits"));
  GEOTRAIN_RETURN_IF_ERROR(params->Get(&m, "params.scale_mode"));
  GEOTRAIN_RETURN_IF_ERROR(params->Get(&t, "params.tile"));
  if (b < 1 || b > 8) return DataLoss("params.bits: " + std::to_string(b) + " is outside 1..8");
  if (m > static_cast<uint8_t>(ScaleMode::kPerTile)) {
    return DataLoss("params.scale_mode: unknown value " + std::to_string(m));
  }
  *bits = b;
  *mode = static_cast<ScaleMode>(m);
  if (*mode == ScaleMode::kPerTile && t == 0) return DataLoss("params.tile: 0 in tile mode");
  *tile = *mode == ScaleMode::kPerTile ? t : 64;
  return OkStatus();
}

}  // namespace geotrain::compression
