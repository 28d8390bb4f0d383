#include "runtime/adamw.h"

// 2.x: at::NoGradGuard lives in ATen/core/grad_mode.h, which <ATen/ATen.h> brings in with
// LibTorch 1.13 but no longer with 2.x; both versions have the header.
#include <ATen/core/grad_mode.h>

#include <cmath>

namespace geotrain::runtime {

AdamW::AdamW(std::vector<models::NamedParameter> parameters, AdamWOptions options)
    : parameters_(std::move(parameters)), options_(options) {
  exp_avg_.reserve(parameters_.size());
  exp_avg_sq_.reserve(parameters_.size());
  for (const models::NamedParameter& p : parameters_) {
    exp_avg_.push_back(at::zeros_like(p.tensor, p.tensor.options().dtype(at::kFloat)));
    exp_avg_sq_.push_back(at::zeros_like(p.tensor, p.tensor.options().dtype(at::kFloat)));
  }
}

void AdamW::Step(double lr) {
  UpdateMoments();
  ApplyUpdate(lr);
}

void AdamW::UpdateMoments() {
  at::NoGradGuard no_grad;
  ++step_;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const at::Tensor& grad = parameters_[i].tensor.grad();
    if (!grad.defined()) continue;
    const at::Tensor g = grad.to(at::kFloat);
    exp_avg_[i].mul_(options_.beta1).add_(g, 1.0 - options_.beta1);
    exp_avg_sq_[i].mul_(options_.beta2).addcmul_(g, g, 1.0 - options_.beta2);
  }
}

void AdamW::ApplyUpdate(double lr) {
  at::NoGradGuard no_grad;
  const double correction1 = 1.0 - std::pow(options_.beta1, static_cast<double>(step_));
  const double correction2 = 1.0 - std::pow(options_.beta2, static_cast<double>(step_));
  const double step_size = lr / correction1;
  const double sqrt_correction2 = std::sqrt(correction2);
  for (size_t i = 0; i < parameters_.size(); ++i) {
    at::Tensor& p = parameters_[i].tensor;
    if (!p.grad().defined()) continue;
    const bool decays = options_.decay_one_dim || p.dim() > 1;
    if (decays && options_.weight_decay != 0) p.mul_(1.0 - lr * options_.weight_decay);
    // torch.optim.AdamW: denom = sqrt(v) / sqrt(1 - b2^t) + eps; p -= lr / (1 - b1^t) * m / denom.
    const at::Tensor denom = (exp_avg_sq_[i].sqrt() / sqrt_correction2).add_(options_.eps);
    p.addcdiv_(exp_avg_[i].to(p.scalar_type()), denom.to(p.scalar_type()), -step_size);
  }
}

std::map<std::string, at::Tensor> AdamW::StateTensors() const {
  std::map<std::string, at::Tensor> state;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    state[parameters_[i].name + ".exp_avg"] = exp_avg_[i];
    state[parameters_[i].name + ".exp_avg_sq"] = exp_avg_sq_[i];
  }
  state["adamw.step"] = at::scalar_tensor(step_, at::kLong);
  return state;
}

Status AdamW::LoadStateTensors(const std::map<std::string, at::Tensor>& state) {
  auto find = [&](const std::string& name, at::IntArrayRef shape) -> StatusOr<at::Tensor> {
    auto it = state.find(name);
    if (it == state.end()) return InvalidArgument("optimizer state: " + name + ": missing");
    if (it->second.sizes() != shape) {
      return InvalidArgument("optimizer state: " + name + ": shape " +
                             c10::str(it->second.sizes()) + " differs from the parameter's " +
                             c10::str(shape));
    }
    return it->second;
  };
  std::vector<at::Tensor> exp_avg, exp_avg_sq;
  for (const models::NamedParameter& p : parameters_) {
    GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor m, find(p.name + ".exp_avg", p.tensor.sizes()));
    GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor v, find(p.name + ".exp_avg_sq", p.tensor.sizes()));
    exp_avg.push_back(m.to(p.tensor.device(), at::kFloat).clone());
    exp_avg_sq.push_back(v.to(p.tensor.device(), at::kFloat).clone());
  }
  GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor step, find("adamw.step", {}));
  if (step.scalar_type() != at::kLong || step.item<int64_t>() < 0) {
    return InvalidArgument("optimizer state: adamw.step: not a non-negative int64");
  }
  exp_avg_ = std::move(exp_avg);
  exp_avg_sq_ = std::move(exp_avg_sq);
  step_ = step.item<int64_t>();
  return OkStatus();
}

}  // namespace geotrain::runtime
