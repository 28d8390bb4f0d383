#include "runtime/step_result.h"

namespace geotrain::runtime {

const char* TrafficKindName(TrafficKind kind) {
  for (const auto& [name, value] : kTrafficKindNames) {
    if (value == kind) return name;
  }
  return "unknown";
}

}  // namespace geotrain::runtime
