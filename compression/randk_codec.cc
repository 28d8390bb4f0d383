// randk (MCBench, arXiv 2301.02654, "random-k with indices"): keep k = max(1, round(density * n))
// uniformly random positions drawn from (config.seed, input.step) (random_subset.h) and send
// them with their positions (sparse_values.h); all else decodes to zero.
//
// The kept values are sent as they are, not rescaled by n/k: the decoded tensor is the input
// masked, as in MCBench, so E[x̂] = (k/n) x is biased towards zero. Rescaling would make it
// unbiased at the price of an (n/k)-fold larger error; a caller that wants that scales itself.
// The positions travel explicitly, so a receiver never needs the seed or the step.
// Stateless between frames apart from scratch buffers; one thread per instance (codec.h).
#include <cmath>

#include "compression/codecs.h"
#include "compression/float_sums.h"
#include "compression/random_subset.h"
#include "compression/sparse_values.h"

namespace geotrain::compression {
namespace {

class RandKCodec final : public Codec {
 public:
  using Codec::Codec;

  Status Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                ErrorSums* error) override {
    GEOTRAIN_RETURN_IF_ERROR(CheckSparseElements("randk", in.elements));
    const double norm_sq = SumSquares(in.data, in.elements);
    if (!std::isfinite(norm_sq)) return CheckFinite(in.data, in.elements, "randk.input");
    SampleSubset(config_.seed, in.step, in.elements, SparseCount(config_.density, in.elements),
                 &indices_);
    EncodeSparseValues(in.data, in.elements, indices_, config_.value_dtype, norm_sq, params,
                       payload, error);
    return OkStatus();
  }

  Status Decode(const FrameContent& frame, float* out) override {
    return DecodeSparseValues("randk", frame, out);
  }

 private:
  std::vector<uint32_t> indices_;
};

}  // namespace

StatusOr<std::unique_ptr<Codec>> NewRandKCodec(const CodecConfig& config) {
  return std::unique_ptr<Codec>(new RandKCodec(config));
}

}  // namespace geotrain::compression
