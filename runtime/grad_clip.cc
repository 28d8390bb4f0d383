#include "runtime/grad_clip.h"

namespace geotrain::runtime {

double SquaredGradNorm(const std::vector<models::NamedParameter>& parameters) {
  at::NoGradGuard no_grad;
  double sum = 0;
  for (const models::NamedParameter& p : parameters) {
    const at::Tensor& grad = p.tensor.grad();
    if (!grad.defined()) continue;
    const at::Tensor g = grad.reshape({-1}).to(at::kDouble);
    sum += at::dot(g, g).item<double>();
  }
  return sum;
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
