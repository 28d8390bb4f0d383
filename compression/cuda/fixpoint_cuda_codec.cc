// fixpoint on a CUDA device: the block of fixpoint_device.h with the CPU codec's params.
#include "compression/cuda/cuda_codecs.h"
#include "compression/cuda/fixpoint_device.h"

namespace geotrain::compression::cuda {
namespace {

class FixpointCudaCodec final : public CudaCodec {
 public:
  FixpointCudaCodec(const CodecConfig& config, Stream stream) : CudaCodec(config, stream) {}

  Status Encode(const EncodeInput& in, ByteWriter* params, ByteWriter* payload,
                ErrorSums* error) override {
    const QuantLayout layout = FixpointCodecLayout(config_, in.shape, in.elements);
    PutQuantParams(params, layout.mode, layout.tile, config_.bits);
    const QuantizeOptions options = FixpointCodecOptions(config_, in.step);
    GEOTRAIN_ASSIGN_OR_RETURN(const uint64_t size,
                              EncodeFixpointBlockOnDevice(in.data, layout, options, &workspace_,
                                                          &block_, nullptr, error, stream_));
    return AppendFromDevice(block_.data(), size, payload);
  }

  Status Decode(const FrameContent& frame, float* out) override {
    QuantLayout layout;
    int bits;
    GEOTRAIN_RETURN_IF_ERROR(ReadFixpointCodecParams(frame, &layout, &bits));
    ByteReader payload(frame.payload);
    Span<const uint8_t> host_block;
    GEOTRAIN_RETURN_IF_ERROR(CheckFixpointBlock(&payload, layout, bits, &host_block));
    GEOTRAIN_RETURN_IF_ERROR(payload.ExpectEnd("fixpoint.payload"));
    GEOTRAIN_RETURN_IF_ERROR(block_.Reserve(std::max<size_t>(host_block.size(), 1)));
    GEOTRAIN_RETURN_IF_ERROR(
        CopyToDevice(block_.data(), host_block.data(), host_block.size(), stream_));
    return DecodeFixpointBlockOnDevice(static_cast<const uint8_t*>(block_.data()), layout, bits,
                                       &workspace_, out, stream_);
  }

 private:
  FixpointWorkspace workspace_;
  DeviceBytes block_;
};

}  // namespace

StatusOr<std::unique_ptr<CudaCodec>> NewFixpointCudaCodec(const CodecConfig& config,
                                                          Stream stream) {
  return std::unique_ptr<CudaCodec>(new FixpointCudaCodec(config, stream));
}

}  // namespace geotrain::compression::cuda
