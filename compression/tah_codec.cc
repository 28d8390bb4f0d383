// tah: TAH-Quant (arXiv 2506.01352), tile-wise adaptive Hadamard quantization of activations.
//
// Encode, in two passes over the input:
//   1. per-tile statistics (tah_tile_stats.h): range, top two |x|, entropy sums;
//      non-finite input fails here; units are ranked by entropy (tah_bit_allocation.h) and tiles
//      whose largest |x| is >= τ times the second largest are marked for rotation;
//   2. per tile: rotated tiles get their largest element swapped to index 0 and an orthonormal
//      Hadamard transform (hadamard.h); then zero/scale are chosen and the tile is quantized and
//      packed (tah_tile_quantizer.h).
// Decode reads everything from the frame (tah_format.h documents the layout) and validates it
// before it writes a value. The codec is stateless between frames; the members are scratch.
// Not thread-safe (one thread per instance, as for every Codec).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/half.h"
#include "compression/codecs.h"
#include "compression/hadamard.h"
#include "compression/tah_bit_allocation.h"
#include "compression/tah_format.h"
#include "compression/tah_frame_check.h"
#include "compression/tah_math.h"
#include "compression/tah_tile_quantizer.h"
#include "compression/tah_tile_stats.h"

namespace geotrain::compression {
namespace {

// The first non-finite input, looked for only in tiles whose Σ|x| is not finite.
Status CheckFinite(const float* x, const TahGeometry& geo, const TahTileStats& stats) {
  for (int64_t k = 0; k < geo.tiles; ++k) {
    if (std::isfinite(stats.abs_sum[k])) continue;
    const float* tile = x + k * geo.tile_size;
    for (int i = 0; i < geo.tile_size; ++i) {
      if (!std::isfinite(tile[i])) {
        return InvalidArgument("input[" + std::to_string(k * geo.tile_size + i) +
                               "]: " + (std::isnan(tile[i]) ? "NaN" : "infinity") +
                               " cannot be quantized (tah needs finite values)");
      }
    }  // else Σ|x| overflowed on finite values: fine, the entropy treats it as 0
  }
  return OkStatus();
}

class TahCodec final : public Codec {
 public:
  using Codec::Codec;

  Status Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                ErrorSums* error) override;
  Status Decode(const FrameContent& frame, float* out) override;

 private:
  // Where Encode writes the payload sections it fills last (tah_format.h has the layout).
  struct PayloadSections {
    uint8_t* pivots;
    uint8_t* scales;
    uint8_t* codes;
    uint8_t* codes_end;
  };

  // Encode steps, in order.
  void RankUnits(const TahGeometry& geo);
  // Marks and counts rotated tiles and says whether fp16 zero/scale cover every tile.
  bool FindOutliers(const TahGeometry& geo);
  // Sizes the payload and writes the two bitmaps.
  PayloadSections LayOutPayload(const TahGeometry& geo, const TahParams& p, ByteWriter* payload);
  // Pass 2: rotations, pivots (into pivots_), zero/scale and codes, row by row.
  Status QuantizeRows(const float* x, const TahGeometry& geo, const TahParams& p,
                      const PayloadSections& sections, double* error_sq, double* norm_sq);

  // A validated frame: what Decode walks through.
  struct DecodePlan {
    TahParams params;
    TahGeometry geo;
    Span<const uint8_t> unit_map, tile_map, codes;
    int BitsOf(int64_t row, int64_t tile) const {
      return BitmapBit(unit_map.data(), geo.UnitOf(row, tile)) ? params.high_bits : params.low_bits;
    }
    bool Rotated(int64_t tile) const { return BitmapBit(tile_map.data(), tile); }
  };

  // Decode steps: validate every field (CheckTahFrame, shared with the CUDA decoder; pivots
  // into pivots_), convert the checked scale section into scales_, then decode.
  Status ReadFrame(const FrameContent& frame, DecodePlan* plan);
  void ReadScales(Span<const uint8_t> bytes, const TahParams& p, const TahGeometry& geo);

  // Scratch reused between calls.
  TahTileStats stats_;
  std::vector<float> entropy_;
  TahBitAllocator allocator_;
  std::vector<uint8_t> unit_high_;
  std::vector<uint8_t> tile_rotated_;
  int64_t outlier_tiles_ = 0;
  std::vector<uint16_t> pivots_;
  std::vector<float> row_work_;  // the rotated tiles of the current row, at their positions
  std::vector<int32_t> row_bits_;
  std::vector<TahTileScale> row_scales_;
  std::vector<uint16_t> halves_;      // decode: the fp16 scale section
  std::vector<TahTileScale> scales_;  // decode: per tile
};

void TahCodec::RankUnits(const TahGeometry& geo) {
  entropy_.resize(geo.units);
  if (geo.entropy_unit == EntropyUnit::kToken) {
    for (int64_t r = 0; r < geo.rows; ++r) {
      double sum = 0, log_sum = 0;
      for (int64_t k = r * geo.tiles_per_row; k < (r + 1) * geo.tiles_per_row; ++k) {
        sum += stats_.abs_sum[k];
        log_sum += stats_.abs_log_sum[k];
      }
      entropy_[r] = TahUnitEntropy(sum, log_sum);
    }
  } else {
    TahTileEntropies(stats_, geo.tiles, entropy_.data());
  }
  allocator_.Allocate(entropy_.data(), geo.units, config_.high_ratio, &unit_high_);
}

bool TahCodec::FindOutliers(const TahGeometry& geo) {
  const double tau = config_.outlier_threshold;
  const double sqrt_g = std::sqrt(static_cast<double>(geo.tile_size));
  tile_rotated_.resize(geo.tiles);
  outlier_tiles_ = 0;
  bool fp16_fits = true;
  for (int64_t k = 0; k < geo.tiles; ++k) {
    const float top = stats_.abs_max[k];
    const bool rotated = TahIsRotated(top, stats_.abs_second[k], tau);
    tile_rotated_[k] = rotated ? 1 : 0;
    outlier_tiles_ += rotated ? 1 : 0;
    fp16_fits &= TahFitsHalf(top, rotated, sqrt_g);
  }
  return fp16_fits;
}

Status TahCodec::Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                        ErrorSums* error) {
  TahGeometry geo;
  GEOTRAIN_RETURN_IF_ERROR(
      TahGeometry::Make(in.shape, in.elements, config_.tile_size, config_.entropy_unit, &geo));
  ComputeTahTileStats(in.data, geo.tiles, geo.tile_size, &stats_);
  GEOTRAIN_RETURN_IF_ERROR(CheckFinite(in.data, geo, stats_));
  RankUnits(geo);
  TahParams p;
  p.tile_size = geo.tile_size;
  p.high_bits = config_.high_bits;
  p.low_bits = config_.low_bits;
  p.entropy_unit = geo.entropy_unit;
  p.f32_scales = !FindOutliers(geo);
  p.high_units = static_cast<uint64_t>(std::count(unit_high_.begin(), unit_high_.end(), 1));
  p.outlier_tiles = static_cast<uint64_t>(outlier_tiles_);
  PutTahParams(p, params);

  const PayloadSections sections = LayOutPayload(geo, p, payload);
  double error_sq = 0, norm_sq = 0;
  GEOTRAIN_RETURN_IF_ERROR(QuantizeRows(in.data, geo, p, sections, &error_sq, &norm_sq));
  PackFields(pivots_.data(), pivots_.size(), geo.pivot_bits, sections.pivots);
  if (error) {
    error->error_sq += error_sq;
    error->norm_sq += norm_sq;
  }
  return OkStatus();
}

TahCodec::PayloadSections TahCodec::LayOutPayload(const TahGeometry& geo, const TahParams& p,
                                                  ByteWriter* payload) {
  const uint64_t unit_map_bytes = BitmapBytes(geo.units);
  const uint64_t tile_map_bytes = BitmapBytes(geo.tiles);
  const uint64_t pivot_bytes = PackedFieldBytes(p.outlier_tiles, geo.pivot_bits);
  const uint64_t scale_bytes = static_cast<uint64_t>(geo.tiles) * (p.f32_scales ? 8 : 4);
  const uint64_t code_bytes = TahCodeBytes(geo, p.high_bits, p.low_bits, p.high_units);
  uint8_t* at =
      payload->Extend(unit_map_bytes + tile_map_bytes + pivot_bytes + scale_bytes + code_bytes);
  PackBitmap(unit_high_.data(), geo.units, at);
  PackBitmap(tile_rotated_.data(), geo.tiles, at + unit_map_bytes);
  PayloadSections s;
  s.pivots = at + unit_map_bytes + tile_map_bytes;
  s.scales = s.pivots + pivot_bytes;
  s.codes = s.scales + scale_bytes;
  s.codes_end = s.codes + code_bytes;
  return s;
}

Status TahCodec::QuantizeRows(const float* x, const TahGeometry& geo, const TahParams& p,
                              const PayloadSections& sections, double* error_sq, double* norm_sq) {
  const int g = geo.tile_size;
  const int64_t per_row = geo.tiles_per_row;
  row_work_.resize(geo.cols);
  row_bits_.resize(per_row);
  row_scales_.resize(per_row);
  pivots_.clear();
  TahErrorLanes lanes;
  uint8_t* codes = sections.codes;
  for (int64_t r = 0; r < geo.rows; ++r) {
    const int64_t first = r * per_row;
    const float* row = x + r * geo.cols;
    // Rotate the row's outlier tiles into row_work_; their range replaces the one in stats_.
    for (int64_t t = 0; t < per_row; ++t) {
      const int64_t k = first + t;
      row_bits_[t] = unit_high_[geo.UnitOf(r, k)] ? p.high_bits : p.low_bits;
      if (!tile_rotated_[k]) continue;
      float* work = row_work_.data() + t * g;
      const int pivot = TahFirstIndexOfAbs(row + t * g, g, stats_.abs_max[k]);
      pivots_.push_back(static_cast<uint16_t>(pivot));
      std::copy(row + t * g, row + (t + 1) * g, work);
      std::swap(work[0], work[pivot]);
      OrthonormalHadamard(work, g);
      TahTileMinMax(work, g, &stats_.min[k], &stats_.max[k]);
    }
    // The row's zero/scale pairs, in one batch.
    if (!p.f32_scales) {
      ChooseTahScalesF16(&stats_.min[first], &stats_.max[first], row_bits_.data(), per_row,
                         sections.scales + 4 * first, row_scales_.data());
    } else {
      for (int64_t t = 0; t < per_row; ++t) {
        const int64_t k = first + t;
        row_scales_[t] = ChooseTahTileScaleF32(stats_.min[k], stats_.max[k], row_bits_[t]);
        if (!TahTileScaleIsSafe(row_scales_[t], row_bits_[t], g, tile_rotated_[k] != 0)) {
          return InvalidArgument("input: tile " + std::to_string(k) + " spans [" +
                                 std::to_string(stats_.min[k]) + ", " +
                                 std::to_string(stats_.max[k]) +
                                 "], too close to the float limit for tah to quantize");
        }
        std::memcpy(sections.scales + 8 * k, &row_scales_[t], 8);
      }
    }
    // Quantize. Rotated tiles were touched out of order, before the row streams through here:
    // fetching the next row a tile at a time, spread over this row's work, hides both. A rotated
    // tile's error is measured in the rotated domain: the rotation is orthonormal and the swap a
    // permutation, so it equals the error after decoding up to float rounding.
    const float* next_row = r + 1 < geo.rows ? row + geo.cols : row;
    for (int64_t t = 0; t < per_row; ++t) {
      for (int c = 0; c < g; c += 16) __builtin_prefetch(next_row + t * g + c);
      const float* values = tile_rotated_[first + t] ? row_work_.data() + t * g : row + t * g;
      QuantizeTahTile(values, g, row_bits_[t], row_scales_[t], codes,
                      static_cast<size_t>(sections.codes_end - codes), &lanes);
      codes += static_cast<size_t>(g / 8) * row_bits_[t];
    }
    lanes.MoveTo(error_sq, norm_sq);
  }
  return OkStatus();
}

void TahCodec::ReadScales(Span<const uint8_t> bytes, const TahParams& p, const TahGeometry& geo) {
  static_assert(sizeof(TahTileScale) == 8, "TahTileScale is read as (zero, scale) pairs");
  scales_.resize(geo.tiles);
  const size_t n = 2 * static_cast<size_t>(geo.tiles);
  if (n == 0) return;
  float* values = reinterpret_cast<float*>(scales_.data());
  if (p.f32_scales) {
    std::memcpy(values, bytes.data(), 4 * n);
    return;
  }
  halves_.resize(n);
  std::memcpy(halves_.data(), bytes.data(), 2 * n);
  HalfToFloat(halves_.data(), values, n);
}

Status TahCodec::ReadFrame(const FrameContent& frame, DecodePlan* plan) {
  TahFrameLayout l;
  GEOTRAIN_RETURN_IF_ERROR(CheckTahFrame(frame, &l, &pivots_));
  plan->params = l.params;
  plan->geo = l.geo;
  plan->unit_map = TahFrameLayout::Section(frame.payload, l.unit_map_at, l.tile_map_at);
  plan->tile_map = TahFrameLayout::Section(frame.payload, l.tile_map_at, l.pivots_at);
  plan->codes = TahFrameLayout::Section(frame.payload, l.codes_at, l.end);
  ReadScales(TahFrameLayout::Section(frame.payload, l.scales_at, l.codes_at), l.params, l.geo);
  return OkStatus();
}

Status TahCodec::Decode(const FrameContent& frame, float* out) {
  DecodePlan plan;
  GEOTRAIN_RETURN_IF_ERROR(ReadFrame(frame, &plan));
  // Runs of unrotated tiles of one width go to the kernel in one call; rotated tiles one by one.
  const TahGeometry& geo = plan.geo;
  const int g = geo.tile_size;
  const uint8_t* code_at = plan.codes.data();
  const uint8_t* const codes_end = plan.codes.data() + plan.codes.size();
  size_t next_pivot = 0;
  for (int64_t r = 0; r < geo.rows; ++r) {
    const int64_t end = (r + 1) * geo.tiles_per_row;
    for (int64_t k = r * geo.tiles_per_row; k < end;) {
      const int bits = plan.BitsOf(r, k);
      const size_t tile_bytes = static_cast<size_t>(g / 8) * bits;
      if (plan.Rotated(k)) {
        DecodeRotatedTahTile(code_at, static_cast<size_t>(codes_end - code_at), g, bits, scales_[k],
                             pivots_[next_pivot++], out + k * g);
        code_at += tile_bytes;
        ++k;
        continue;
      }
      int64_t run_end = k + 1;
      while (run_end < end && !plan.Rotated(run_end) && plan.BitsOf(r, run_end) == bits) ++run_end;
      DequantizeTahTiles(code_at, static_cast<size_t>(codes_end - code_at), g, bits, &scales_[k],
                         run_end - k, out + k * g);
      code_at += tile_bytes * static_cast<size_t>(run_end - k);
      k = run_end;
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<Codec>> NewTahCodec(const CodecConfig& config) {
  return std::unique_ptr<Codec>(new TahCodec(config));
}

}  // namespace geotrain::compression
