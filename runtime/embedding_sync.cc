#include "runtime/embedding_sync.h"

// 2.x: at::NoGradGuard lives in ATen/core/grad_mode.h, which <ATen/ATen.h> brings in with
// LibTorch 1.13 but no longer with 2.x; both versions have the header.
#include <ATen/core/grad_mode.h>

#include "compression/torch/tensor_frames.h"

namespace geotrain::runtime {
namespace {

at::Tensor GradientOrZeros(const at::Tensor& parameter) {
  const at::Tensor& grad = parameter.grad();
  return grad.defined() ? grad.to(at::kCPU, at::kFloat).contiguous()
                        : at::zeros(parameter.sizes(), at::kFloat);
}

void SetGradient(const at::Tensor& parameter, const at::Tensor& grad) {
  parameter.mutable_grad() = grad.to(parameter.device(), parameter.scalar_type());
}

}  // namespace

Status SyncTiedEmbeddingGradient(net::Transport& group, const at::Tensor& parameter, double divisor,
                                 net::Timeout timeout) {
  at::NoGradGuard no_grad;
  at::Tensor sum = GradientOrZeros(parameter).clone();
  Status status = group.AllReduceSum(Span<float>(sum.data_ptr<float>(), sum.numel()), timeout);
  if (!status.ok()) return status.WithContext("tied embedding sync");
  if (divisor != 1) sum.div_(divisor);
  SetGradient(parameter, sum);
  return OkStatus();
}

StatusOr<std::unique_ptr<CompressedEmbeddingSync>> CompressedEmbeddingSync::Create(
    compression::CodecConfig config) {
  config.error_feedback = true;
  GEOTRAIN_ASSIGN_OR_RETURN(auto codec, compression::MakeCodec(config));
  return std::unique_ptr<CompressedEmbeddingSync>(
      new CompressedEmbeddingSync(std::move(codec), config));
}

Status CompressedEmbeddingSync::Sync(net::Transport& pair, const at::Tensor& parameter,
                                     uint64_t step, net::Timeout timeout, uint64_t* wire_bytes) {
  at::NoGradGuard no_grad;
  GEOTRAIN_RETURN_IF_ERROR(
      compression::EncodeTensor(*codec_, GradientOrZeros(parameter), {}, step, &frame_)
          .WithContext("tied embedding sync: encode"));
  auto frames = pair.AllGather(frame_, timeout);
  if (!frames.ok()) return frames.status().WithContext("tied embedding sync: all-gather");
  *wire_bytes += frame_.size() * (pair.size() - 1);
  at::Tensor sum;
  for (const std::vector<uint8_t>& frame : *frames) {
    auto part = compression::DecodeTensor(decoder_, frame);
    if (!part.ok()) return part.status().WithContext("tied embedding sync: decode");
    sum = sum.defined() ? sum.add_(*part) : *part;
  }
  SetGradient(parameter, sum.view(parameter.sizes()));
  return OkStatus();
}

}  // namespace geotrain::runtime
