// none: values as they are, or cast to fp16/bf16 on the wire (the "fp16 all-reduce" baseline).
#include <cmath>
#include <vector>

#include "compression/codecs.h"
#include "compression/float_sums.h"
#include "compression/frame.h"

namespace geotrain::compression {
namespace {

class NoneCodec final : public Codec {
 public:
  using Codec::Codec;

  Status Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                ErrorSums* error) override {
    const DType wire = config_.wire_dtype;
    params->Put<uint8_t>(static_cast<uint8_t>(wire));
    uint8_t* out = payload->Extend(in.elements * DTypeSize(wire));
    ConvertFromFloat(in.data, wire, out, in.elements);
    const double norm = SumSquares(in.data, in.elements);
    if (!std::isfinite(norm)) return InvalidArgument("input: contains NaN or infinity");
    error->norm_sq += norm;
    if (wire != DType::kFloat32) {
      std::vector<float> back(in.elements);
      ConvertToFloat(out, wire, back.data(), in.elements);
      error->error_sq += SumSquaredDifferences(in.data, back.data(), in.elements);
    }
    return OkStatus();
  }

  Status Decode(const FrameContent& frame, float* out) override {
    ByteReader params(frame.params);
    uint8_t wire = 0;
    GEOTRAIN_RETURN_IF_ERROR(params.Get(&wire, "none.wire_dtype"));
    GEOTRAIN_RETURN_IF_ERROR(params.ExpectEnd("none.params"));
    if (wire >= kNumDTypes) return DataLoss("none.wire_dtype: unknown id " + std::to_string(wire));
    const DType dtype = static_cast<DType>(wire);
    const uint64_t expected = static_cast<uint64_t>(frame.elements) * DTypeSize(dtype);
    if (frame.payload.size() != expected) {
      return DataLoss("none.payload: " + std::to_string(frame.payload.size()) +
                      " bytes, expected " + std::to_string(expected));
    }
    ConvertToFloat(frame.payload.data(), dtype, out, frame.elements);
    return OkStatus();
  }
};

}  // namespace

StatusOr<std::unique_ptr<Codec>> NewNoneCodec(const CodecConfig& config) {
  return std::unique_ptr<Codec>(new NoneCodec(config));
}

}  // namespace geotrain::compression
