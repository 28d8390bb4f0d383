#include "runtime/grad_clip.h"

// 2.x: at::NoGradGuard lives in ATen/core/grad_mode.h, which <ATen/ATen.h> brings in with
// LibTorch 1.13 but no longer with 2.x; both versions have the header.
#include <ATen/core/grad_mode.h>

namespace geotrain::runtime {

double SquaredGradNorm(const std::vector<models::NamedParameter>& parameters) {
  at::NoGradGuard no_grad;
  // Summed where the gradients live and read once: on a GPU, one host synchronisation per call
  // instead of one per tensor. The same additions in the same order as a host loop.
  at::Tensor sum;
  for (const models::NamedParameter& p : parameters) {
    const at::Tensor& grad = p.tensor.grad();
    if (!grad.defined()) continue;
    const at::Tensor g = grad.reshape({-1}).to(at::kDouble);
    const at::Tensor square = at::dot(g, g);
    sum = sum.defined() ? sum.add_(square) : square;
  }
  return sum.defined() ? sum.item<double>() : 0.0;
}

double ClipCoefficient(double total_norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  const double coefficient = max_norm / (total_norm + 1e-6);
  // Written so that NaN passes through, like torch.clamp(max=1).
  return coefficient > 1.0 ? 1.0 : coefficient;
}

void ScaleGrads(const std::vector<models::NamedParameter>& parameters, double coefficient) {
  if (coefficient == 1.0) return;
  at::NoGradGuard no_grad;
  for (const models::NamedParameter& p : parameters) {
    at::Tensor grad = p.tensor.grad();
    if (grad.defined()) grad.mul_(coefficient);
  }
}

}  // namespace geotrain::runtime
