#include "common/backoff.h"

#include <algorithm>

namespace geotrain {

Backoff::Backoff(const BackoffOptions& options, Clock& clock)
    : options_(options),
      clock_(clock),
      nominal_(options.initial),
      random_(options.seed ? *options.seed : std::random_device{}()) {
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

std::chrono::milliseconds Backoff::Wait(std::chrono::milliseconds at_most) {
  const std::chrono::milliseconds delay =
      std::max(std::chrono::milliseconds(0), std::min(Next(), at_most));
  clock_.SleepMs(delay.count());
  return delay;
}

void Backoff::Reset() { nominal_ = options_.initial; }

}  // namespace geotrain
