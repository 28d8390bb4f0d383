// ParseStepLine: one line of a task's stdout -> the StepReport it carries.
//
// The task child prints one JSON object per step (runtime::StepResultJson: step, total_steps, lr,
// grad_norm, compressed, checkpointed, forward_relative_error, *_seconds, raw_bytes{forward,
// backward,dp,embedding}, wire_bytes{same}, and loss / eval_loss when present). Any other line is
// a log line. The line comes from a process that may be broken, so nothing here trusts it: every
// failure is a Status, never an exception or a crash.
//
// Free functions; thread-safe.
#pragma once

#include <string>

#include "common/status.h"
#include "geotrain/v1/job.pb.h"

namespace geotrain::worker {

// The report of a step line, with job_id, generation, stage and replica left for the caller (the
// task they come from). NotFound: not a step line (not JSON, not an object, no "step" key).
// InvalidArgument: a step line with a bad value, naming the key ("step line: lr: expected a
// number, got string").
StatusOr<geotrain::v1::StepReport> ParseStepLine(const std::string& line);

}  // namespace geotrain::worker
