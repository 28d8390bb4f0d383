#include "compression/torch/device_codecs.h"

#include "compression/torch/tensor_frames.h"

#if defined(GEOTRAIN_TORCH_CUDA) && defined(GEOTRAIN_WITH_CUDA_CODECS)
#define GEOTRAIN_DEVICE_CODECS 1
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "compression/cuda/cuda_codec.h"
#endif

namespace geotrain::compression {

#ifdef GEOTRAIN_DEVICE_CODECS
namespace {

cuda::Stream CurrentStream(const at::Device& device) {
  return reinterpret_cast<cuda::Stream>(c10::cuda::getCurrentCUDAStream(device.index()).stream());
}

class CudaTensorEncoder final : public DeviceTensorEncoder {
 public:
  CudaTensorEncoder(std::unique_ptr<cuda::CudaCodec> codec, at::Device device)
      : codec_(std::move(codec)), device_(device) {}

  Status Encode(const at::Tensor& tensor, Span<const uint64_t> sample_ids, uint64_t step,
                std::vector<uint8_t>* frame, EncodeStats* stats) override {
    GEOTRAIN_ASSIGN_OR_RETURN(const DType dtype, DTypeOf(tensor));
    if (tensor.device() != device_) {
      return InvalidArgument("tensor.device: " + tensor.device().str() + ", the codec's is " +
                             device_.str());
    }
    try {
      c10::cuda::CUDAGuard guard(device_);
      const at::Tensor values = tensor.detach().contiguous();
      TensorView view;
      view.data = values.data_ptr();
      view.dtype = dtype;
      view.shape.assign(values.sizes().begin(), values.sizes().end());
      view.sample_ids = sample_ids;
      view.step = step;
      return cuda::EncodeDeviceFrame(*codec_, view, frame, stats);
    } catch (const std::exception& e) {
      return Internal(std::string("encoding a device tensor: ") + e.what());
    }
  }

  Status Reconfigure(const CodecConfig& config) override { return codec_->Reconfigure(config); }
  const CodecConfig& config() const override { return codec_->config(); }

 private:
  std::unique_ptr<cuda::CudaCodec> codec_;
  at::Device device_;
};

class CudaTensorDecoder final : public DeviceTensorDecoder {
 public:
  CudaTensorDecoder(CodecConfig receiver_config, at::Device device)
      : receiver_config_(receiver_config), device_(device), host_(std::move(receiver_config)) {}

  StatusOr<at::Tensor> Decode(Span<const uint8_t> frame) override {
    FrameContent content;
    GEOTRAIN_RETURN_IF_ERROR(ParseFrame(frame, FrameLimits(), &scratch_, &content));
    if (!cuda::HasCudaKernels(content.codec)) return DecodeTensor(host_, frame);
    try {
      c10::cuda::CUDAGuard guard(device_);
      std::unique_ptr<cuda::CudaCodec>& codec = codecs_[static_cast<int>(content.codec)];
      if (!codec) {
        CodecConfig config = receiver_config_;
        config.codec = content.codec;
        GEOTRAIN_ASSIGN_OR_RETURN(codec, cuda::MakeCudaCodec(config, CurrentStream(device_)));
      }
      at::Tensor out =
          at::empty(content.shape, at::TensorOptions().dtype(at::kFloat).device(device_));
      GEOTRAIN_RETURN_IF_ERROR(
          codec->Decode(content, out.data_ptr<float>())
              .WithContext(std::string("decoding ") + CodecName(content.codec) + " frame"));
      return out.to(ScalarTypeOf(content.dtype));  // queued after the kernels, on the same stream
    } catch (const std::exception& e) {
      return Internal(std::string("decoding into a device tensor: ") + e.what());
    }
  }

 private:
  CodecConfig receiver_config_;
  at::Device device_;
  LinkDecoder host_;  // codecs without kernels
  std::vector<uint8_t> scratch_;
  std::array<std::unique_ptr<cuda::CudaCodec>, kNumCodecs> codecs_;
};

}  // namespace

bool DeviceCodecsFor(const at::Device& device) { return device.is_cuda(); }
bool DeviceCodecHasKernels(CodecId codec) { return cuda::HasCudaKernels(codec); }

StatusOr<std::unique_ptr<DeviceTensorEncoder>> DeviceTensorEncoder::Create(
    const CodecConfig& config, const at::Device& device) {
  if (!device.is_cuda())
    return InvalidArgument("device: " + device.str() + " is not a CUDA device");
  try {
    c10::cuda::CUDAGuard guard(device);
    GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<cuda::CudaCodec> codec,
                              cuda::MakeCudaCodec(config, CurrentStream(device)));
    return std::unique_ptr<DeviceTensorEncoder>(new CudaTensorEncoder(std::move(codec), device));
  } catch (const std::exception& e) {
    return Internal(std::string("creating a CUDA codec: ") + e.what());
  }
}

StatusOr<std::unique_ptr<DeviceTensorDecoder>> DeviceTensorDecoder::Create(
    CodecConfig receiver_config, const at::Device& device) {
  if (!device.is_cuda())
    return InvalidArgument("device: " + device.str() + " is not a CUDA device");
  return std::unique_ptr<DeviceTensorDecoder>(
      new CudaTensorDecoder(std::move(receiver_config), device));
}

#else  // no CUDA LibTorch or no CUDA codecs in this build

bool DeviceCodecsFor(const at::Device&) { return false; }
bool DeviceCodecHasKernels(CodecId) { return false; }

StatusOr<std::unique_ptr<DeviceTensorEncoder>> DeviceTensorEncoder::Create(const CodecConfig&,
                                                                           const at::Device&) {
  return FailedPrecondition("this build has no CUDA codecs for tensors (docs/gpu.md)");
}

StatusOr<std::unique_ptr<DeviceTensorDecoder>> DeviceTensorDecoder::Create(CodecConfig,
                                                                           const at::Device&) {
  return FailedPrecondition("this build has no CUDA codecs for tensors (docs/gpu.md)");
}

#endif

}  // namespace geotrain::compression
