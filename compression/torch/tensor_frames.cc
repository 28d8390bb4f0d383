#include "compression/torch/tensor_frames.h"

namespace geotrain::compression {

StatusOr<DType> DTypeOf(const at::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case at::kFloat:
      return DType::kFloat32;
    case at::kHalf:
      return DType::kFloat16;
    case at::kBFloat16:
      return DType::kBFloat16;
    default:
      return InvalidArgument(std::string("tensor.dtype: ") + c10::toString(tensor.scalar_type()) +
                             " cannot be encoded (float32, float16 or bfloat16)");
  }
}

at::ScalarType ScalarTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return at::kFloat;
    case DType::kFloat16:
      return at::kHalf;
    case DType::kBFloat16:
      return at::kBFloat16;
  }
  return at::kFloat;
}

Status EncodeTensor(Codec& codec, const at::Tensor& tensor, Span<const uint64_t> sample_ids,
                    uint64_t step, std::vector<uint8_t>* frame, EncodeStats* stats) {
  GEOTRAIN_ASSIGN_OR_RETURN(const DType dtype, DTypeOf(tensor));
  try {
    const at::Tensor cpu = tensor.detach().to(at::kCPU).contiguous();
    TensorView view;
    view.data = cpu.data_ptr();
    view.dtype = dtype;
    view.shape.assign(cpu.sizes().begin(), cpu.sizes().end());
    view.sample_ids = sample_ids;
    view.step = step;
    return EncodeFrame(codec, view, frame, stats);
  } catch (const std::exception& e) {
    return Internal(std::string("encoding tensor: ") + e.what());
  }
}

StatusOr<at::Tensor> DecodeTensor(LinkDecoder& decoder, Span<const uint8_t> frame) {
  DecodedTensor decoded;
  GEOTRAIN_RETURN_IF_ERROR(decoder.Decode(frame, &decoded));
  try {
    at::Tensor out =
        at::empty(decoded.shape, at::TensorOptions().dtype(ScalarTypeOf(decoded.dtype)));
    ConvertFromFloat(decoded.values.data(), decoded.dtype, out.data_ptr(), decoded.values.size());
    return out;
  } catch (const std::exception& e) {
    return Internal(std::string("building decoded tensor: ") + e.what());
  }
}

}  // namespace geotrain::compression
