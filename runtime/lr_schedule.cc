#include "runtime/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace geotrain::runtime {

double LearningRate(const OptimizerSettings& settings, int64_t step, int64_t total_steps) {
  const double t = static_cast<double>(std::max<int64_t>(step, 0) + 1);  // steps done after this
  const double warmup = static_cast<double>(settings.lr_warmup_steps);
  if (settings.lr_warmup_steps > 0 && t <= warmup) return settings.lr * t / warmup;
  if (settings.lr_decay == LrDecay::kConstant) return settings.lr;
  const double decay_steps = std::max(1.0, static_cast<double>(total_steps) - warmup);
  const double progress = std::min(1.0, (t - warmup) / decay_steps);
  const double factor = settings.lr_decay == LrDecay::kLinear
                            ? 1.0 - progress
                            : 0.5 * (1.0 + std::cos(M_PI * progress));
  return settings.min_lr + (settings.lr - settings.min_lr) * factor;
}

}  // namespace geotrain::runtime
