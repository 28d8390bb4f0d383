#include "runtime/scoped_phase.h"

#include <chrono>
#include <utility>

namespace geotrain::runtime {

ScopedPhase::ScopedPhase(double* phase, double* total) : ScopedPhase(TraceSpan{}, phase, total) {}

ScopedPhase::ScopedPhase(TraceSpan span, double* phase, double* total)
    : span_(std::move(span)), phase_(phase), total_(total), start_(TraceWriter::Clock::now()) {}

ScopedPhase::~ScopedPhase() {
  const TraceWriter::Clock::time_point end = TraceWriter::Clock::now();
  const double seconds = std::chrono::duration<double>(end - start_).count();
  if (phase_ != nullptr) *phase_ += seconds;
  if (total_ != nullptr) *total_ += seconds;
  if (span_.trace != nullptr) {
    span_.trace->Complete(span_.name, span_.category, start_, end, std::move(span_.args));
  }
}

}  // namespace geotrain::runtime
