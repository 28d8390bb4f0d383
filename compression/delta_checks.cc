#include "compression/delta_checks.h"

namespace geotrain::compression {

Status GetSampleGeometry(const Shape& shape, int64_t elements, const char* field, bool from_wire,
                         SampleGeometry* g) {
  auto fail = [&](const std::string& why) {
    const std::string m = std::string(field) + ": " + ShapeString(shape) + " " + why;
    return from_wire ? DataLoss(m) : InvalidArgument(m);
  };
  if (shape.empty()) return fail("has no leading sample dimension");
  for (int64_t d : shape) {
    if (d < 0) return fail("has a negative dimension");
  }
  g->samples = shape[0];
  g->cols = shape.size() >= 2 ? shape.back() : 1;
  g->rows = 1;
  for (size_t i = 1; i + 1 < shape.size(); ++i) {
    if (__builtin_mul_overflow(g->rows, shape[i], &g->rows)) return fail("overflows");
  }
  int64_t total = 0;
  if (__builtin_mul_overflow(g->rows, g->cols, &total) ||
      __builtin_mul_overflow(total, g->samples, &total)) {
    return fail("overflows");
  }
  if (g->samples > 0 && g->elements() == 0) return fail("has empty samples");
  if (total != elements) {
    return fail("holds " + std::to_string(total) + " values, not " + std::to_string(elements));
  }
  return OkStatus();
}

std::string Indexed(const char* field, size_t i) {
  return std::string(field) + "[" + std::to_string(i) + "]";
}

const char* CacheFullPolicyName(CacheFullPolicy policy) {
  return policy == CacheFullPolicy::kError ? "error" : "evict-least-recent";
}

}  // namespace geotrain::compression
