#include "compression/cocktail_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compression/bitpack.h"
#include "compression/cocktail_frame.h"
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
  GEOTRAIN_RETURN_IF_ERROR(CheckCocktailConfig(config));
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
  GEOTRAIN_RETURN_IF_ERROR(CheckCocktailResidual(shape, values));
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
    if (!std::isfinite(x[i])) return CocktailInputNotFinite(i);
  }
  return CocktailResidualOverflow();
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
        bytes[b] = static_cast<uint8_t>(f[0] << 7 | f[1] << 6 | f[2] << 5 | f[3] << 4 | f[4] << 3 |
                                        f[5] << 2 | f[6] << 1 | f[7]);
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
  GEOTRAIN_RETURN_IF_ERROR(CheckCocktailInput(in));
  const int64_t n = in.elements;
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
  const int64_t k = CocktailKeptCount(config_.topk_ratio, m);
  PutCocktailParams(mask, k, config_, params);

  SelectTopK(k, payload->Extend(PackedBytes(m, 1)));
  kept_decoded_.resize(k);
  if (k > 0) {
    // Cannot fail: the values are finite and the config valid. Were it to, the residual would
    // hold v without the send subtracted, which is what "nothing was sent" means.
    GEOTRAIN_RETURN_IF_ERROR(EncodeFixpointBlock(
        kept_values_.data(), CocktailKeptLayout(k, config_.quant_group),
        CocktailQuantizeOptions(config_, in.step), payload, kept_decoded_.data(), nullptr));
  }

  if (error != nullptr) {
    double kept_norm_sq = 0, kept_error_sq = 0;
    AddKeptSums(kept_values_.data(), kept_decoded_.data(), k, &kept_norm_sq, &kept_error_sq);
    AddCocktailErrorSums(*norm_sq, kept_norm_sq, kept_error_sq, error);
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
  GEOTRAIN_ASSIGN_OR_RETURN(const CocktailFrameParams f, ReadCocktailParams(frame));
  const CocktailMask& mask = f.mask;
  const uint64_t k = f.kept;
  const int64_t n = frame.elements;
  uint64_t m;
  if (mask.mode() == MaskMode::kRolling) {
    m = mask.SampledCount(n);
  } else {
    mask.SampledIndices(n, &sampled_index_);
    m = sampled_index_.size();
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckCocktailKept(k, m));

  ByteReader payload(frame.payload);
  Span<const uint8_t> bitmap;
  GEOTRAIN_RETURN_IF_ERROR(ReadCocktailBitmap(&payload, m, k, &bitmap));
  kept_decoded_.resize(k);
  if (k > 0) {
    GEOTRAIN_RETURN_IF_ERROR(
        DecodeFixpointBlock(&payload, CocktailKeptLayout(static_cast<int64_t>(k), f.group), f.bits,
                            kept_decoded_.data()));
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
