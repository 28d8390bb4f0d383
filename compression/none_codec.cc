// none: values as they are, or cast to fp16/bf16 on the wire (the "fp16 all-reduce" baseline).
#include <cstring>

#include "compression/codecs.h"
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
    double norm = 0, err = 0;
    if (wire == DType::kFloat32) {
      for (int64_t i = 0; i < in.elements; ++i) norm += static_cast<double>(in.data[i]) * in.data[i];
    } else {
      std::vector<float> back(in.elements);
      ConvertToFloat(out, wire, back.data(), in.elements);
      for (int64_t i = 0; i < in.elements; ++i) {
        norm += static_cast<double>(in.data[i]) * in.data[i];
        err += static_cast<double>(in.data[i] - back[i]) * (in.data[i] - back[i]);
      }
    }
    error->norm_sq += norm;
    error->error_sq += err;
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
