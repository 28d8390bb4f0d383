#include "runtime/dp_buckets.h"

// 2.x: at::NoGradGuard lives in ATen/core/grad_mode.h, which <ATen/ATen.h> brings in with
// LibTorch 1.13 but no longer with 2.x; both versions have the header.
#include <ATen/core/grad_mode.h>

namespace geotrain::runtime {

ParameterBucket::ParameterBucket(std::vector<models::NamedParameter> parameters)
    : parameters_(std::move(parameters)) {
  offsets_.reserve(parameters_.size());
  for (const models::NamedParameter& p : parameters_) {
    offsets_.push_back(elements_);
    elements_ += p.tensor.numel();
  }
}

void ParameterBucket::DefineMissingGrads() const {
  for (const models::NamedParameter& p : parameters_) {
    at::Tensor& grad = p.tensor.mutable_grad();
    if (!grad.defined()) grad = at::zeros_like(p.tensor);
  }
}

at::Tensor ParameterBucket::GatherGrads() const {
  std::vector<at::Tensor> grads;
  grads.reserve(parameters_.size());
  for (const models::NamedParameter& p : parameters_) grads.push_back(p.tensor.grad());
  return FlattenToCpu(grads);
}

at::Tensor ParameterBucket::GatherGradsOnDevice() const {
  std::vector<at::Tensor> grads;
  grads.reserve(parameters_.size());
  for (const models::NamedParameter& p : parameters_) grads.push_back(p.tensor.grad());
  return FlattenOn(grads, grads.empty() ? at::Device(at::kCPU) : grads.front().device());
}

void ParameterBucket::ScatterGrads(const at::Tensor& flat) const {
  std::vector<at::Tensor> grads;
  grads.reserve(parameters_.size());
  for (const models::NamedParameter& p : parameters_) grads.push_back(p.tensor.grad());
  CopyFromFlat(flat, grads);
}

at::Tensor ParameterBucket::GatherParams() const {
  std::vector<at::Tensor> values;
  values.reserve(parameters_.size());
  for (const models::NamedParameter& p : parameters_) values.push_back(p.tensor.detach());
  return FlattenToCpu(values);
}

void ParameterBucket::AddToParams(const at::Tensor& flat) const {
  at::NoGradGuard no_grad;
  // One copy to the parameters' GPU rather than one synchronising copy per tensor.
  const bool to_gpu =
      !parameters_.empty() && parameters_.front().tensor.is_cuda() && !flat.is_cuda();
  const at::Tensor source = to_gpu ? flat.to(parameters_.front().tensor.device()) : flat;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const at::Tensor& p = parameters_[i].tensor;
    p.add_(
        source.narrow(0, offsets_[i], p.numel()).view(p.sizes()).to(p.device(), p.scalar_type()));
  }
}

at::Tensor FlattenOn(const std::vector<at::Tensor>& tensors, at::Device device) {
  int64_t elements = 0;
  for (const at::Tensor& t : tensors) elements += t.numel();
  at::Tensor flat = at::empty({elements}, at::TensorOptions().dtype(at::kFloat).device(device));
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    flat.narrow(0, offset, t.numel()).copy_(t.reshape(-1));
    offset += t.numel();
  }
  return flat;
}

at::Tensor FlattenToCpu(const std::vector<at::Tensor>& tensors) {
  const bool on_gpu = !tensors.empty() && tensors.front().is_cuda();
  if (!on_gpu) return FlattenOn(tensors, at::kCPU);
  return FlattenOn(tensors, tensors.front().device()).to(at::kCPU);
}

void CopyFromFlat(const at::Tensor& flat, const std::vector<at::Tensor>& tensors) {
  at::NoGradGuard no_grad;
  const bool to_gpu = !tensors.empty() && tensors.front().is_cuda() && !flat.is_cuda();
  const at::Tensor source = to_gpu ? flat.to(tensors.front().device()) : flat;
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    t.copy_(source.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

ChunkRange ChunkOf(int64_t elements, int replicas, int index) {
  const int64_t begin = elements * index / replicas;
  const int64_t end = elements * (index + 1) / replicas;
  return {begin, end - begin};
}

uint64_t RingAllReduceBytes(int64_t elements, int replicas) {
  return 2ull * (replicas - 1) * 4ull * static_cast<uint64_t>(elements) / replicas;
}

}  // namespace geotrain::runtime
