#include "runtime/dp_buckets.h"

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
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const at::Tensor& p = parameters_[i].tensor;
    p.add_(flat.narrow(0, offsets_[i], p.numel()).view(p.sizes()).to(p.device(), p.scalar_type()));
  }
}

at::Tensor FlattenToCpu(const std::vector<at::Tensor>& tensors) {
  int64_t elements = 0;
  for (const at::Tensor& t : tensors) elements += t.numel();
  at::Tensor flat = at::empty({elements}, at::kFloat);
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    flat.narrow(0, offset, t.numel()).copy_(t.reshape(-1));
    offset += t.numel();
  }
  return flat;
}

void CopyFromFlat(const at::Tensor& flat, const std::vector<at::Tensor>& tensors) {
  at::NoGradGuard no_grad;
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
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
