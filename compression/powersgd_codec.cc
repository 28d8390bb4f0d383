// powersgd: one rank-r PowerSGD step per frame (powersgd.h), Optimus-CC's compressed
// backpropagation (arXiv 2301.09830) after Vogels et al. 2019.
//
//   params:  u32 rank r (0 only for an empty tensor), u8 factor dtype (0 = f32; the only one)
//   payload: P [n, r] then Q [m, r], f32 row-major, for the tensor viewed as [n, m] =
//            [all but the last dimension, last dimension]
//
// The sender keeps the error buffer E and the warm-started Q between frames (PowerSgdState), so
// one codec instance must encode one link's consecutive tensors: that continuity is Optimus-CC's
// lazy error propagation. A frame of another shape resets the state (powersgd.h). Reconfigure
// may change the rank (Q is re-initialised, E kept), error_feedback (E is dropped while off) or
// the seed (used the next time Q is initialised). Decoding is stateless. One thread per
// instance (codec.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "compression/codecs.h"
#include "compression/powersgd.h"

namespace geotrain::compression {
namespace {

constexpr uint8_t kFactorsF32 = 0;

// Reads `count` f32 factor values, each of which must be finite; returns the largest magnitude.
Status ReadFactor(ByteReader* payload, int64_t count, const char* field, std::vector<float>* out,
                  float* max_abs) {
  Span<const uint8_t> bytes;
  GEOTRAIN_RETURN_IF_ERROR(payload->GetSpan(4 * static_cast<size_t>(count), &bytes, field));
  out->resize(count);
  if (count > 0) std::memcpy(out->data(), bytes.data(), bytes.size());
  float largest = 0;
  for (int64_t i = 0; i < count; ++i) {
    const float v = (*out)[i];
    if (!std::isfinite(v)) {
      return DataLoss(std::string(field) + "[" + std::to_string(i) + "]: not a finite number");
    }
    largest = std::max(largest, std::fabs(v));
  }
  *max_abs = largest;
  return OkStatus();
}

class PowerSgdCodec final : public Codec {
 public:
  using Codec::Codec;

  Status Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                ErrorSums* error) override {
    int64_t n, m;
    MatrixView(in.shape, in.elements, &n, &m);
    GEOTRAIN_RETURN_IF_ERROR(PowerSgdStep(in.data, n, m, config_.rank, config_.seed,
                                          config_.error_feedback, &state_, &p_, &q_, error));
    params->Put<uint32_t>(static_cast<uint32_t>(EffectiveRank(config_.rank, n, m)));
    params->Put<uint8_t>(kFactorsF32);
    payload->PutBytes(p_.data(), 4 * p_.size());
    payload->PutBytes(q_.data(), 4 * q_.size());
    return OkStatus();
  }

  Status Decode(const FrameContent& frame, float* out) override {
    ByteReader params(frame.params);
    uint32_t rank = 0;
    uint8_t dtype = 0;
    GEOTRAIN_RETURN_IF_ERROR(params.Get(&rank, "powersgd.rank"));
    GEOTRAIN_RETURN_IF_ERROR(params.Get(&dtype, "powersgd.factor_dtype"));
    GEOTRAIN_RETURN_IF_ERROR(params.ExpectEnd("powersgd.params"));
    if (dtype != kFactorsF32) {
      return DataLoss("powersgd.factor_dtype: " + std::to_string(dtype) + " is not f32 (0)");
    }
    int64_t n, m;
    MatrixView(frame.shape, frame.elements, &n, &m);
    const int64_t r = rank;
    if (r != EffectiveRank(r, n, m) || (r == 0 && frame.elements > 0)) {
      return DataLoss("powersgd.rank: " + std::to_string(r) + " does not fit a [" +
                      std::to_string(n) + ", " + std::to_string(m) +
                      "] matrix (1..min(rows, cols))");
    }
    ByteReader payload(frame.payload);
    // r <= min(n, m), so (n + m) r <= 2 n m = 2 elements: no overflow for any frame.
    const uint64_t expected = 4 * static_cast<uint64_t>(n + m) * static_cast<uint64_t>(r);
    if (payload.remaining() != expected) {
      return DataLoss("powersgd.payload: " + std::to_string(payload.remaining()) + " bytes, rank " +
                      std::to_string(r) + " factors of a [" + std::to_string(n) + ", " +
                      std::to_string(m) + "] matrix need " + std::to_string(expected));
    }
    float p_max = 0, q_max = 0;
    GEOTRAIN_RETURN_IF_ERROR(ReadFactor(&payload, n * r, "powersgd.p", &p_, &p_max));
    GEOTRAIN_RETURN_IF_ERROR(ReadFactor(&payload, m * r, "powersgd.q", &q_, &q_max));
    GEOTRAIN_RETURN_IF_ERROR(payload.ExpectEnd("powersgd.payload"));
    if (r == 0) return OkStatus();
    Reconstruct(p_.data(), q_.data(), n, m, r, out);
    // |x̂| <= r max|P| max|Q|: only factors beyond what a sender produces can overflow, and
    // then the output is checked rather than trusted.
    const double bound = static_cast<double>(r) * p_max * q_max;
    if (bound >= 0.5 * std::numeric_limits<float>::max()) {
      for (int64_t i = 0; i < frame.elements; ++i) {
        if (!std::isfinite(out[i])) {
          return DataLoss("powersgd.payload: P Qᵀ overflows float32 at element " +
                          std::to_string(i));
        }
      }
    }
    return OkStatus();
  }

 private:
  PowerSgdState state_;
  std::vector<float> p_, q_;  // scratch factors, kept to reuse their capacity
};

}  // namespace

StatusOr<std::unique_ptr<Codec>> NewPowerSgdCodec(const CodecConfig& config) {
  return std::unique_ptr<Codec>(new PowerSgdCodec(config));
}

}  // namespace geotrain::compression
