// tah on a CUDA device: TahCodec's params and payload (tah_codec.cc) from device input, and its
// frames decoded into device memory. Kernels in tah_device.cu; frame checks are TahCodec's own
// (compression/tah_frame_check.h).
#include "compression/codecs.h"
#include "compression/cuda/cuda_codecs.h"
#include "compression/cuda/tah_device.h"
#include "compression/tah_format.h"
#include "compression/tah_frame_check.h"

namespace geotrain::compression::cuda {
namespace {

class TahCudaCodec final : public CudaCodec {
 public:
  TahCudaCodec(const CodecConfig& config, Stream stream) : CudaCodec(config, stream) {}

  Status Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                ErrorSums* error) override {
    TahGeometry geo;
    GEOTRAIN_RETURN_IF_ERROR(
        TahGeometry::Make(in.shape, in.elements, config_.tile_size, config_.entropy_unit, &geo));
    TahEncodeSettings settings;
    settings.high_bits = config_.high_bits;
    settings.low_bits = config_.low_bits;
    settings.high_ratio = config_.high_ratio;
    settings.outlier_threshold = config_.outlier_threshold;
    TahParams p;
    GEOTRAIN_ASSIGN_OR_RETURN(
        const uint64_t size,
        EncodeTahOnDevice(in.data, geo, settings, &workspace_, &p, error, stream_));
    PutTahParams(p, params);
    if (size == 0) return OkStatus();
    return AppendFromDevice(workspace_.payload.data(), size, payload);
  }

  Status Decode(const FrameContent& frame, float* out) override {
    TahFrameLayout layout;
    GEOTRAIN_RETURN_IF_ERROR(CheckTahFrame(frame, &layout));
    return DecodeTahOnDevice(layout, frame.payload, &workspace_, out, stream_);
  }

 private:
  TahDeviceWorkspace workspace_;
};

}  // namespace

StatusOr<std::unique_ptr<CudaCodec>> NewTahCudaCodec(const CodecConfig& config, Stream stream) {
  return std::unique_ptr<CudaCodec>(new TahCudaCodec(config, stream));
}

}  // namespace geotrain::compression::cuda
