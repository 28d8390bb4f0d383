#include "compression/cocktail_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "compression/bitpack.h"
#include "compression/codecs.h"
#include "compression/fixpoint_block.h"
#include "compression/magnitude_threshold.h"

namespace geotrain::compression {
namespace {

// Values per chunk of the streaming passes: small enough that a chunk of v stays in L1 between
// its norm and its gather (and an output chunk between its zeroing and its kept values).
constexpr int64_t kChunk = 4096;

// Adds Σv² to kSquareLanes lanes. In double a float's square cannot overflow, so the total is
// finite exactly when every v is: the same pass both measures the norm and rejects NaN and
// infinity. Sixteen lanes are four independent vector accumulators, enough to hide the latency
// of the adds (eight leave this pass slower than reading the memory).
constexpr int kSquareLanes = 16;
inline void AddSquares(const float* v, int64_t n, double* lanes) {
  int64_t i = 0;
  for (; i + kSquareLanes <= n; i += kSquareLanes) {
    for (int l = 0; l < kSquareLanes; ++l) lanes[l] += static_cast<double>(v[i + l]) * v[i + l];
  }
  for (; i < n; ++i) lanes[0] += static_cast<double>(v[i]) * v[i];
}

// Σa² and Σ(a - b)² in double, a being what was compressed and b what the receiver decodes.
inline void AddKeptSums(const float* a, const float* b, int64_t n, double* norm_sq,
                        double* error_sq) {
  double norm = 0, error = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    norm += static_cast<double>(a[i]) * a[i];
    error += d * d;
  }
  *norm_sq += norm;
  *error_sq += error;
}

inline uint64_t LoadBigEndian64(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return __builtin_bswap64(w);
}

inline void StoreBigEndian64(uint64_t w, uint8_t* p) {
  w = __builtin_bswap64(w);
  std::memcpy(p, &w, 8);
}

// Number of set bits in `bytes` bytes of bitmap.
uint64_t BitmapPopcount(const uint8_t* bitmap, uint64_t bytes) {
  uint64_t count = 0, i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, bitmap + i, 8);
    count += __builtin_popcountll(w);
  }
  for (; i < bytes; ++i) count += __builtin_popcount(bitmap[i]);
  return count;
}

// Calls visit(position) for each set bit of the MSB-first bitmap, in increasing position order.
template <typename Visit>
void ForEachSetBit(const uint8_t* bitmap, uint64_t bytes, Visit visit) {
  for (uint64_t at = 0; at < bytes; at += 8) {
    uint64_t word;
    if (at + 8 <= bytes) {
      word = LoadBigEndian64(bitmap + at);
    } else {
      uint8_t tail[8] = {0};
      std::memcpy(tail, bitmap + at, bytes - at);
      word = LoadBigEndian64(tail);
    }
    while (word != 0) {
      const int lead = __builtin_clzll(word);
      visit(at * 8 + lead);
      word ^= (uint64_t{1} << 63) >> lead;
    }
  }
}

}  // namespace

StatusOr<std::unique_ptr<CocktailCodec>> CocktailCodec::Create(const CodecConfig& config) {
  if (config.codec != CodecId::kCocktail) {
    return InvalidArgument(std::string("codec: a cocktail codec cannot be built for ") +
                           CodecName(config.codec));
  }
  GEOTRAIN_RETURN_IF_ERROR(config.Validate());
  GEOTRAIN_RETURN_IF_ERROR(CocktailMask::ForStep(config, 0).status());  // checks mask_mode
  return std::unique_ptr<CocktailCodec>(new CocktailCodec(config));
}

Status CocktailCodec::Reconfigure(const CodecConfig& config) {
  GEOTRAIN_RETURN_IF_ERROR(CocktailMask::ForStep(config, 0).status());
  GEOTRAIN_RETURN_IF_ERROR(Codec::Reconfigure(config));
  if (!config_.error_feedback) ResetResidual();
  return OkStatus();
}

void CocktailCodec::ResetResidual() {
  std::vector<float>().swap(residual_);
  residual_shape_.clear();
  pending_coords_.clear();
  pending_sent_.clear();
}

void CocktailCodec::ApplyPendingSends() {
  for (size_t c = 0; c < pending_coords_.size(); ++c) {
    residual_[pending_coords_[c]] -= pending_sent_[c];
  }
  pending_coords_.clear();
  pending_sent_.clear();
}

Span<const float> CocktailCodec::residual() {
  ApplyPendingSends();
  return residual_;
}

Status CocktailCodec::RestoreResidual(const Shape& shape, Span<const float> values) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) return InvalidArgument("residual.shape[" + std::to_string(d) + "]: negative");
  }
  if (static_cast<uint64_t>(NumElements(shape)) != values.size()) {
    return InvalidArgument("residual: " + std::to_string(values.size()) +
                           " values for shape " + ShapeString(shape));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return InvalidArgument("residual[" + std::to_string(i) + "]: not finite");
    }
  }
  residual_.assign(values.begin(), values.end());
  residual_shape_ = shape;
  pending_coords_.clear();
  pending_sent_.clear();
  return OkStatus();
}

StatusOr<double> CocktailCodec::SampleInput(const CocktailMask& mask, const float* x, int64_t n,
                                            bool feedback) {
  const bool rolling = mask.mode() == MaskMode::kRolling;
  // Cleared, not resized: capacity from earlier calls is reused without zero-filling it.
  sampled_values_.clear();
  sampled_index_.clear();
  const double expected = rolling ? static_cast<double>(mask.SampledCount(n))
                                  : static_cast<double>(mask.threshold()) * 0x1.0p-32 * n * 1.01;
  sampled_values_.reserve(static_cast<size_t>(std::min<double>(expected, n)) + kChunk);
  if (!rolling) sampled_index_.reserve(sampled_values_.capacity());

  double squares[kSquareLanes] = {0};
  uint64_t next = mask.offset();  // rolling: the next sampled coordinate
  size_t pending = 0;             // the next pending send to subtract
  uint32_t index[kChunk];
  float values[kChunk];
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t end = std::min(n, begin + kChunk);
    const float* v = x + begin;
    if (feedback) {
      // residual = (v_prev - sent) + x, the same operations in the same order as subtracting
      // the send at once, so the lazy subtraction changes no bit.
      float* r = residual_.data();
      for (; pending < pending_coords_.size() && pending_coords_[pending] < end; ++pending) {
        r[pending_coords_[pending]] -= pending_sent_[pending];
      }
      r += begin;
      for (int64_t i = 0; i < end - begin; ++i) r[i] += v[i];
      v = r;
    }
    AddSquares(v, end - begin, squares);
    size_t count = 0;
    if (rolling) {
      // Strided gather; `next` cannot overflow: RollingStride caps strides at 2^62.
      for (; next < static_cast<uint64_t>(end); next += mask.stride()) {
        values[count++] = v[next - begin];
      }
    } else {
      count = mask.SampleRange(begin, end, index);
      for (size_t j = 0; j < count; ++j) values[j] = v[index[j] - begin];
      sampled_index_.insert(sampled_index_.end(), index, index + count);
    }
    sampled_values_.insert(sampled_values_.end(), values, values + count);
  }

  double norm_sq = 0;
  for (double lane : squares) norm_sq += lane;
  if (std::isfinite(norm_sq)) return norm_sq;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      return InvalidArgument("input[" + std::to_string(i) +
                             "]: NaN or infinity cannot be compressed");
    }
  }
  return InvalidArgument("input: adding the error-feedback residual overflows float32");
}

void CocktailCodec::SelectTopK(int64_t k, uint8_t* bitmap) {
  const int64_t m = static_cast<int64_t>(sampled_values_.size());
  // One spare slot: the compaction below writes a candidate before deciding to keep it.
  kept_pos_.resize(k + 1);
  kept_values_.resize(k + 1);
  if (k > 0) {
    const float* v = sampled_values_.data();
    const MagnitudeThreshold threshold = FindMagnitudeThreshold(v, m, k, &select_scratch_);
    const float tau = threshold.magnitude;
    // Usually every value equal to the threshold is kept (continuous data has one) and the
    // decision is a plain comparison; otherwise the first `ties` equal ones are taken in order.
    const bool keep_all_equal = threshold.ties == threshold.equal;
    int64_t ties = threshold.ties;
    uint32_t* pos = kept_pos_.data();
    float* kept = kept_values_.data();
    int64_t count = 0;
    constexpr int64_t kBlock = 256;  // a multiple of 8: whole bitmap bytes per block
    uint8_t keep[kBlock];
    for (int64_t begin = 0; begin < m; begin += kBlock) {
      const int64_t len = std::min(kBlock, m - begin);
      const float* vb = v + begin;
      if (keep_all_equal) {
        for (int64_t j = 0; j < len; ++j) keep[j] = std::fabs(vb[j]) >= tau;
      } else {
        for (int64_t j = 0; j < len; ++j) {
          const float a = std::fabs(vb[j]);
          const bool take_tie = a == tau && ties > 0;
          ties -= take_tie;
          keep[j] = a > tau || take_tie;
        }
      }
      uint8_t* bytes = bitmap + begin / 8;
      for (int64_t b = 0; b < len / 8; ++b) {
        const uint8_t* f = keep + 8 * b;
        bytes[b] = static_cast<uint8_t>(f[0] << 7 | f[1] << 6 | f[2] << 5 | f[3] << 4 |
                                        f[4] << 3 | f[5] << 2 | f[6] << 1 | f[7]);
      }
      if (len % 8 != 0) {
        uint8_t last = 0;
        for (int64_t j = len / 8 * 8; j < len; ++j) last |= keep[j] << (7 - j % 8);
        bytes[len / 8] = last;
      }
      for (int64_t j = 0; j < len; ++j) {
        pos[count] = static_cast<uint32_t>(begin + j);
        kept[count] = vb[j];
        count += keep[j];
      }
    }
  }
  kept_pos_.resize(k);
  kept_values_.resize(k);
}

Status CocktailCodec::Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                             ErrorSums* error) {
  const int64_t n = in.elements;
  if (n < 0 || static_cast<uint64_t>(n) > CocktailMask::kMaxElements) {
    return InvalidArgument("input.elements: " + std::to_string(n) +
                           " is outside 0..2^32-1 (cocktail indexes coordinates with 32 bits; "
                           "compress smaller chunks)");
  }
  if (n > 0 && in.data == nullptr) return InvalidArgument("input.data: null");
  GEOTRAIN_ASSIGN_OR_RETURN(const CocktailMask mask, CocktailMask::ForStep(config_, in.step));

  const bool feedback = config_.error_feedback;
  if (feedback && (residual_shape_ != in.shape || residual_.size() != static_cast<size_t>(n))) {
    ResetResidual();
    residual_.assign(n, 0.0f);  // a new shape starts from no error
    residual_shape_ = in.shape;
  }
  StatusOr<double> norm_sq = SampleInput(mask, in.data, n, feedback);
  pending_coords_.clear();  // SampleInput has subtracted them
  pending_sent_.clear();
  if (!norm_sq.ok()) {
    if (feedback) std::fill(residual_.begin(), residual_.end(), 0.0f);  // partly folded
    return norm_sq.status();
  }

  const int64_t m = static_cast<int64_t>(sampled_values_.size());
  const int64_t k =
      m == 0 ? 0 : std::clamp<int64_t>(std::llround(config_.topk_ratio * m), 1, m);
  mask.Write(params);
  params->Put<uint64_t>(static_cast<uint64_t>(k));
  PutQuantParams(params, ScaleMode::kPerTile, config_.quant_group, config_.quant_bits);

  SelectTopK(k, payload->Extend(PackedBytes(m, 1)));
  kept_decoded_.resize(k);
  if (k > 0) {
    const QuantLayout layout{1, k, ScaleMode::kPerTile, config_.quant_group};
    QuantizeOptions options;
    options.bits = config_.quant_bits;
    options.rounding = config_.rounding;
    options.seed = config_.seed;
    options.stream = in.step;
    // Cannot fail: the values are finite and the config valid. Were it to, the residual would
    // hold v without the send subtracted, which is what "nothing was sent" means.
    GEOTRAIN_RETURN_IF_ERROR(EncodeFixpointBlock(kept_values_.data(), layout, options, payload,
                                                 kept_decoded_.data(), nullptr));
  }

  // Unkept coordinates decode to 0: Σ(v - x̂)² = Σv² - Σ_kept v² + Σ_kept (v - x̂)².
  if (error != nullptr) {
    double kept_norm_sq = 0, kept_error_sq = 0;
    AddKeptSums(kept_values_.data(), kept_decoded_.data(), k, &kept_norm_sq, &kept_error_sq);
    error->error_sq += std::max(0.0, *norm_sq - kept_norm_sq) + kept_error_sq;
    error->norm_sq += *norm_sq;
  }
  if (feedback) {
    // The residual holds v; what was sent leaves it at the next pass over it (see the header).
    pending_coords_.resize(k);
    for (int64_t c = 0; c < k; ++c) pending_coords_[c] = SampledCoordinate(mask, kept_pos_[c]);
    pending_sent_.swap(kept_decoded_);
  }
  return OkStatus();
}

Status CocktailCodec::Decode(const FrameContent& frame, float* out) {
  ByteReader params(frame.params);
  GEOTRAIN_ASSIGN_OR_RETURN(const CocktailMask mask, CocktailMask::Read(&params));
  uint64_t k = 0;
  GEOTRAIN_RETURN_IF_ERROR(params.Get(&k, "cocktail.kept"));
  ScaleMode scale_mode;
  int64_t group = 0;
  int bits = 0;
  GEOTRAIN_RETURN_IF_ERROR(GetQuantParams(&params, &scale_mode, &group, &bits));
  if (scale_mode != ScaleMode::kPerTile) {
    return DataLoss(std::string("cocktail.scale_mode: ") + ScaleModeName(scale_mode) +
                    " (cocktail frames use tile)");
  }
  if (bits < 2) return DataLoss("cocktail.bits: " + std::to_string(bits) + " is outside 2..8");
  GEOTRAIN_RETURN_IF_ERROR(params.ExpectEnd("cocktail.params"));

  const int64_t n = frame.elements;
  if (n < 0 || static_cast<uint64_t>(n) > CocktailMask::kMaxElements) {
    return DataLoss("cocktail: frame of " + std::to_string(n) +
                    " elements is outside 0..2^32-1");
  }
  uint64_t m;
  if (mask.mode() == MaskMode::kRolling) {
    m = mask.SampledCount(n);
  } else {
    mask.SampledIndices(n, &sampled_index_);
    m = sampled_index_.size();
  }
  if (k > m) {
    return DataLoss("cocktail.kept: " + std::to_string(k) + " exceeds the " + std::to_string(m) +
                    " sampled coordinates");
  }
  if (k == 0 && m > 0) {
    return DataLoss("cocktail.kept: 0 of " + std::to_string(m) +
                    " sampled coordinates (an encoder keeps at least one)");
  }

  ByteReader payload(frame.payload);
  Span<const uint8_t> bitmap;
  GEOTRAIN_RETURN_IF_ERROR(payload.GetSpan(PackedBytes(m, 1), &bitmap, "cocktail.bitmap"));
  if (m % 8 != 0 && (bitmap[bitmap.size() - 1] & ((1u << (8 - m % 8)) - 1)) != 0) {
    return DataLoss("cocktail.bitmap: padding bits after the last sampled coordinate are set");
  }
  const uint64_t ones = BitmapPopcount(bitmap.data(), bitmap.size());
  if (ones != k) {
    return DataLoss("cocktail.bitmap: " + std::to_string(ones) + " positions set, params say " +
                    std::to_string(k) + " kept values");
  }
  kept_decoded_.resize(k);
  if (k > 0) {
    const QuantLayout layout{1, static_cast<int64_t>(k), ScaleMode::kPerTile, group};
    GEOTRAIN_RETURN_IF_ERROR(DecodeFixpointBlock(&payload, layout, bits, kept_decoded_.data()));
  }
  GEOTRAIN_RETURN_IF_ERROR(payload.ExpectEnd("cocktail.payload"));

  kept_coords_.resize(k);
  uint32_t* coord = kept_coords_.data();
  ForEachSetBit(bitmap.data(), bitmap.size(),
                [&](uint64_t j) { *coord++ = SampledCoordinate(mask, j); });
  // Zero the output chunk by chunk and drop each chunk's kept values in while it is in cache.
  const uint32_t* coords = kept_coords_.data();
  const float* kept = kept_decoded_.data();
  uint64_t c = 0;
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t end = std::min(n, begin + kChunk);
    std::fill(out + begin, out + end, 0.0f);
    for (; c < k && coords[c] < end; ++c) out[coords[c]] = kept[c];
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<Codec>> NewCocktailCodec(const CodecConfig& config) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<CocktailCodec> codec, CocktailCodec::Create(config));
  return std::unique_ptr<Codec>(std::move(codec));
}

}  // namespace geotrain::compression
