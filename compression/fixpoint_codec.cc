// fixpoint: the AC-SGD quantizer (fixpoint_block.h) over a tensor viewed as [rows, last dim].
#include "compression/codecs.h"
#include "compression/fixpoint_block.h"

namespace geotrain::compression {
namespace {

class FixpointCodec final : public Codec {
 public:
  using Codec::Codec;

  Status Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                ErrorSums* error) override {
    QuantLayout layout;
    MatrixView(in.shape, in.elements, &layout.rows, &layout.cols);
    layout.mode = config_.scale_mode;
    layout.tile = config_.tile_size;
    PutQuantParams(params, layout.mode, layout.tile, config_.bits);
    QuantizeOptions options;
    options.bits = config_.bits;
    options.rounding = config_.rounding;
    options.seed = config_.seed;
    options.stream = in.step;
    options.threads = config_.threads;
    return EncodeFixpointBlock(in.data, layout, options, payload, nullptr, error);
  }

  Status Decode(const FrameContent& frame, float* out) override {
    ByteReader params(frame.params);
    QuantLayout layout;
    int bits;
    GEOTRAIN_RETURN_IF_ERROR(GetQuantParams(&params, &layout.mode, &layout.tile, &bits));
    GEOTRAIN_RETURN_IF_ERROR(params.ExpectEnd("fixpoint.params"));
    MatrixView(frame.shape, frame.elements, &layout.rows, &layout.cols);
    ByteReader payload(frame.payload);
    GEOTRAIN_RETURN_IF_ERROR(DecodeFixpointBlock(&payload, layout, bits, out, config_.threads));
    return payload.ExpectEnd("fixpoint.payload");
  }
};

}  // namespace

StatusOr<std::unique_ptr<Codec>> NewFixpointCodec(const CodecConfig& config) {
  return std::unique_ptr<Codec>(new FixpointCodec(config));
}

}  // namespace geotrain::compression
