// topk (MCBench, arXiv 2301.02654): keep the k = max(1, round(density * n)) values of largest
// magnitude and send them with their positions (sparse_values.h); all else decodes to zero.
// Selection is exact and deterministic (topk_selection.h). Stateless between frames apart from
// scratch buffers; one thread per instance (codec.h).
#include <cmath>

#include "compression/codecs.h"
#include "compression/float_sums.h"
#include "compression/sparse_values.h"
#include "compression/topk_selection.h"

namespace geotrain::compression {
namespace {

class TopKCodec final : public Codec {
 public:
  using Codec::Codec;

  Status Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                ErrorSums* error) override {
    GEOTRAIN_RETURN_IF_ERROR(CheckSparseElements("topk", in.elements));
    const int64_t k = SparseCount(config_.density, in.elements);
    const double norm_sq = selector_.Select(in.data, in.elements, k, &indices_);
    if (!std::isfinite(norm_sq)) return CheckFinite(in.data, in.elements, "topk.input");
    EncodeSparseValues(in.data, in.elements, indices_, config_.value_dtype, norm_sq, params,
                       payload, error);
    return OkStatus();
  }

  Status Decode(const FrameContent& frame, float* out) override {
    return DecodeSparseValues("topk", frame, out);
  }

 private:
  TopKSelector selector_;
  std::vector<uint32_t> indices_;
};

}  // namespace

StatusOr<std::unique_ptr<Codec>> NewTopKCodec(const CodecConfig& config) {
  return std::unique_ptr<Codec>(new TopKCodec(config));
}

}  // namespace geotrain::compression
