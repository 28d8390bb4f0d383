#include "common/link_estimate.h"

#include <cmath>
#include <sstream>

namespace geotrain {

std::optional<double> PassiveThroughputSample(uint64_t bytes, double seconds) {
  if (bytes < kMinPassiveSampleBytes || !(seconds > 0) || !std::isfinite(seconds)) {
    return std::nullopt;
  }
  return static_cast<double>(bytes) / seconds;
}

LinkEstimate::LinkEstimate(double decay) : decay_(decay) {}

Status LinkEstimate::CheckDecay(const std::string& name, double decay) {
  if (!(decay >= 0 && decay < 1)) {
    std::ostringstream text;
    text << name << ": " << decay << " is outside [0, 1)";
    return InvalidArgument(text.str());
  }
  return OkStatus();
}

bool LinkEstimate::Add(double sample) {
  if (!std::isfinite(sample) || sample < 0) return false;
  weighted_sum_ = decay_ * weighted_sum_ + sample;
  weight_ = decay_ * weight_ + 1;
  ++samples_;
  return true;
}

double LinkEstimate::value() const {
  if (samples_ == 0) return 0;
  return weighted_sum_ / weight_;
}

}  // namespace geotrain
