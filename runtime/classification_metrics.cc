#include "runtime/classification_metrics.h"

#include <cmath>

namespace geotrain::runtime {

ClassificationMetrics ConfusionCounts::Metrics() const {
  const int64_t n = num_labels_;
  std::vector<double> true_of(static_cast<size_t>(n), 0), predicted_as(static_cast<size_t>(n), 0);
  double correct = 0, total = 0;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t p = 0; p < n; ++p) {
      true_of[static_cast<size_t>(t)] += At(t, p);
      predicted_as[static_cast<size_t>(p)] += At(t, p);
      total += At(t, p);
    }
    correct += At(t, t);
  }
  ClassificationMetrics metrics;
  if (total == 0) return metrics;
  metrics.accuracy = correct / total;

  const auto f1_of = [&](int64_t k) {
    const size_t i = static_cast<size_t>(k);
    const double denominator = true_of[i] + predicted_as[i];
    return denominator == 0 ? 0.0 : 2 * At(k, k) / denominator;
  };
  if (n == 2) {
    metrics.f1 = f1_of(1);
  } else {
    for (int64_t k = 0; k < n; ++k) metrics.f1 += f1_of(k) / static_cast<double>(n);
  }

  // R_K = (c s - sum_k p_k t_k) / sqrt((s^2 - sum p_k^2)(s^2 - sum t_k^2)).
  double pt = 0, pp = 0, tt = 0;
  for (int64_t k = 0; k < n; ++k) {
    pt += predicted_as[static_cast<size_t>(k)] * true_of[static_cast<size_t>(k)];
    pp += predicted_as[static_cast<size_t>(k)] * predicted_as[static_cast<size_t>(k)];
    tt += true_of[static_cast<size_t>(k)] * true_of[static_cast<size_t>(k)];
  }
  const double denominator = std::sqrt((total * total - pp) * (total * total - tt));
  metrics.mcc = denominator == 0 ? 0.0 : (correct * total - pt) / denominator;
  return metrics;
}

}  // namespace geotrain::runtime
