#include "common/hash_random.h"

#include <cmath>

namespace geotrain {

float SplitMix64::Normal() {
  // u1 in (0, 1] so the log is finite.
  const double u1 = (static_cast<double>(Next() >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(Next() >> 11) * 0x1.0p-53;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

}  // namespace geotrain
