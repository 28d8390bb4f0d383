#include "worker/backoff.h"

#include <algorithm>

namespace geotrain::worker {

Backoff::Backoff(const BackoffOptions& options)
    : options_(options), nominal_(options.initial), random_(options.seed) {
  options_.jitter = std::clamp(options_.jitter, 0.0, 1.0);
  options_.max = std::max(options_.max, options_.initial);
}

std::chrono::milliseconds Backoff::Next() {
  const std::chrono::milliseconds nominal = nominal_;
  nominal_ = std::min(options_.max, nominal_ * 2);
  if (options_.jitter == 0) return nominal;
  const double low = static_cast<double>(nominal.count()) * (1.0 - options_.jitter);
  std::uniform_real_distribution<double> draw(low, static_cast<double>(nominal.count()));
  return std::chrono::milliseconds(static_cast<int64_t>(draw(random_)));
}

void Backoff::Reset() { nominal_ = options_.initial; }

}  // namespace geotrain::worker
