// ScopedPhase: the step loop's one way of timing something. It adds the seconds between its
// construction and its destruction to up to two sums (a StepPhases field and the step's compute
// or comm total) and, given a TraceSpan, records the same interval in the --profile trace, so a
// phase's figure and its span in Perfetto are one measurement.
//
// The clock is the trace's (TraceWriter::Clock), so timed spans and the links' trace events
// agree. A null sum is skipped, so one call site serves a timed training pass and an untimed
// evaluation. The step report's phases are disjoint intervals of the step (StepPhases): timers
// that add to the same sums must not overlap; a timer with no sums (a span only) may enclose
// others.
//
// A ScopedPhase belongs to the thread that made it; the sums must outlive it.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "runtime/trace_writer.h"

namespace geotrain::runtime {

// A span of the trace: `trace` null or disabled records nothing. `name` and `category` must
// outlive the timer (string literals in practice).
struct TraceSpan {
  TraceWriter* trace = nullptr;
  std::string_view name;
  std::string_view category;
  nlohmann::json args = nullptr;  // shown in the viewer's details; null: none
};

class ScopedPhase {
 public:
  explicit ScopedPhase(double* phase, double* total = nullptr);
  ScopedPhase(TraceSpan span, double* phase, double* total = nullptr);
  ~ScopedPhase();
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  TraceSpan span_;
  double* phase_;
  double* total_;
  TraceWriter::Clock::time_point start_;
};

}  // namespace geotrain::runtime
