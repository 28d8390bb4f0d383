// The step line: one JSON object per step and rank, which geotrain-run and the worker's task child
// print on stdout and the worker daemon reads back (docs/operations.md lists its keys).
//
// One description of the line (BindStepLine in step_line.cc) drives both the writer and the
// reader, as the job YAML's does (job_spec.cc): each key is declared once with its member, its
// kind and its rule (required, written only when set, non-negative, a score's range), so a key
// cannot be written but not read, or read under another name. Adding a figure to the step report
// is one line there plus its use.
//
// Reading: every key but "step" (and a traffic entry's peer, kind and direction) is optional, so
// lines of older builds still read; absent or null keys keep their defaults; unknown keys are
// ignored, so lines of newer builds read too. A key present with a wrong type or value is an
// error naming it and the reason ("step line: traffic[2].kind: \"x\" is not one of activation,
// ..."). The line comes from a process that may be broken, so nothing here trusts it: every
// failure is a Status, never an exception or a crash.
//
// LibTorch-free (library geotrain_runtime_config). Free functions; thread-safe.
#pragma once

#include <string>

#include "common/status.h"
#include "runtime/stage_assignment.h"
#include "runtime/step_result.h"

namespace geotrain::runtime {

// One step line: which rank reports, and its step.
struct StepLine {
  int rank = 0;  // StageAssignment::global_rank()
  int stage = 0;
  int replica = 0;
  StepResult result;
  // false: the line had no "phases" (a child of an older build); result.phases is then zero.
  bool has_phases = true;
};

// The line of `result`, reported by the rank `assignment` describes.
StepLine StepLineOf(const StageAssignment& assignment, const StepResult& result);

// One line of compact JSON without the newline. Keys in alphabetical order; "loss" only when
// finite, the optional figures only when set.
std::string StepLineText(const StepLine& line);

// NotFound: not a step line (not JSON, not an object, no "step" key): a log line.
// InvalidArgument: a step line with a bad value, naming the key ("step line: lr: expected a
// number, got string").
StatusOr<StepLine> ParseStepLine(const std::string& text);

}  // namespace geotrain::runtime
