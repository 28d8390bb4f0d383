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
    const QuantLayout layout = FixpointCodecLayout(config_, in.shape, in.elements);
    PutQuantParams(params, layout.mode, layout.tile, config_.bits);
    QuantizeOptions options = FixpointCodecOptions(config_, in.step);
    options.threads = config_.threads;
    return EncodeFixpointBlock(in.data, layout, options, payload, nullptr, error);
  }

  Status Decode(const FrameContent& frame, float* out) override {
    QuantLayout layout;
    int bits;
    GEOTRAIN_RETURN_IF_ERROR(ReadFixpointCodecParams(frame, &layout, &bits));
    ByteReader payload(frame.payload);
    GEOTRAIN_RETURN_IF_ERROR(DecodeFixpointBlock(&payload, layout, bits, out, config_.threads));
    return payload.ExpectEnd("fixpoint.payload");
  }
};

}  // namespace

QuantLayout FixpointCodecLayout(const CodecConfig& config, const Shape& shape, int64_t elements) {
  QuantLayout layout;
  MatrixView(shape, elements, &layout.rows, &layout.cols);
  layout.mode = config.scale_mode;
  layout.tile = config.tile_size;
  return layout;
}

QuantizeOptions FixpointCodecOptions(const CodecConfig& config, uint64_t step) {
  QuantizeOptions options;
  options.bits = config.bits;
  options.rounding = config.rounding;
  options.seed = config.seed;
  options.stream = step;
  return options;
}

Status ReadFixpointCodecParams(const FrameContent& frame, QuantLayout* layout, int* bits) {
  ByteReader params(frame.params);
  GEOTRAIN_RETURN_IF_ERROR(GetQuantParams(&params, &layout->mode, &layout->tile, bits));
  GEOTRAIN_RETURN_IF_ERROR(params.ExpectEnd("fixpoint.params"));
  MatrixView(frame.shape, frame.elements, &layout->rows, &layout->cols);
  return OkStatus();
}

StatusOr<std::unique_ptr<Codec>> NewFixpointCodec(const CodecConfig& config) {
  return std::unique_ptr<Codec>(new FixpointCodec(config));
}

}  // namespace geotrain::compression
