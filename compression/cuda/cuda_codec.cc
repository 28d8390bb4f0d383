#include "compression/cuda/cuda_codec.h"

#include <cstring>

#include "compression/cuda/cuda_codecs.h"
#include "compression/cuda/device_convert.h"

namespace geotrain::compression::cuda {

Status CudaCodec::Reconfigure(const CodecConfig& config) {
  if (config.codec != config_.codec) {
    return InvalidArgument(std::string("codec: cannot change a ") + CodecName(config_.codec) +
                           " codec into " + CodecName(config.codec));
  }
  GEOTRAIN_RETURN_IF_ERROR(config.Validate());
  config_ = config;
  return OkStatus();
}

Status CudaCodec::AppendFromDevice(const void* device, size_t bytes, ByteWriter* payload) {
  GEOTRAIN_RETURN_IF_ERROR(staging_.Reserve(bytes));
  GEOTRAIN_RETURN_IF_ERROR(CopyToHost(staging_.data(), device, bytes, stream_));
  GEOTRAIN_RETURN_IF_ERROR(Synchronize(stream_, "copying the payload to the host"));
  payload->PutBytes(staging_.data(), bytes);
  return OkStatus();
}

bool HasCudaKernels(CodecId codec) {
  switch (codec) {
    case CodecId::kFixpoint:
    case CodecId::kDelta:
    case CodecId::kTah:
    case CodecId::kCocktail:
      return true;
    default:
      return false;
  }
}

StatusOr<std::unique_ptr<CudaCodec>> MakeCudaCodec(const CodecConfig& config, Stream stream) {
  GEOTRAIN_RETURN_IF_ERROR(config.Validate());
  switch (config.codec) {
    case CodecId::kFixpoint:
      return NewFixpointCudaCodec(config, stream);
    case CodecId::kDelta:
      return NewDeltaCudaCodec(config, stream);
    case CodecId::kTah:
      return NewTahCudaCodec(config, stream);
    case CodecId::kCocktail:
      return NewCocktailCudaCodec(config, stream);
    default:
      return FailedPrecondition(std::string("codec: ") + CodecName(config.codec) +
                                " has no CUDA kernels (fixpoint, delta, tah and cocktail do); "
                                "encode it with the CPU codec");
  }
}

Status EncodeDeviceFrame(CudaCodec& codec, const TensorView& device_input,
                         std::vector<uint8_t>* frame, EncodeStats* stats) {
  TensorView as_float = device_input;
  DeviceArray<float> widened;
  if (device_input.dtype != DType::kFloat32) {
    const int64_t n = NumElements(device_input.shape);
    GEOTRAIN_RETURN_IF_ERROR(widened.Reserve(std::max<int64_t>(n, 1)));
    GEOTRAIN_RETURN_IF_ERROR(
        WidenToFloat(device_input.data, device_input.dtype, n, widened.data(), codec.stream()));
    as_float.data = widened.data();
  }
  return EncodeFrameWith(
      codec.id(), codec.config().zstd_level, as_float,
      [&codec](const EncodeInput& in, ByteWriter* params, ByteWriter* payload, ErrorSums* error) {
        return codec.Encode(in, params, payload, error);
      },
      frame, stats);
}

Status DecodeDeviceFrame(CudaCodec& codec, Span<const uint8_t> frame, const FrameLimits& limits,
                         DeviceDecodedTensor* out) {
  std::vector<uint8_t> scratch;
  FrameContent content;
  GEOTRAIN_RETURN_IF_ERROR(ParseFrame(frame, limits, &scratch, &content));
  if (content.codec != codec.id()) {
    return FailedPrecondition(std::string("frame.codec: ") + CodecName(content.codec) +
                              " frame given to a " + CodecName(codec.id()) + " decoder");
  }
  out->dtype = content.dtype;
  out->shape = content.shape;
  GEOTRAIN_RETURN_IF_ERROR(out->values.Reserve(std::max<int64_t>(content.elements, 1)));
  GEOTRAIN_RETURN_IF_ERROR(codec.Decode(content, out->values.data())
                               .WithContext(std::string("decoding ") + CodecName(content.codec) +
                                            " frame on the device"));
  return Synchronize(codec.stream(), "decoding a frame on the device");
}

}  // namespace geotrain::compression::cuda
