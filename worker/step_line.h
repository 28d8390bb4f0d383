// ParseStepLine: one line of a task's stdout -> the StepReport it carries.
//
// The task child prints one step line per step (runtime/step_line.h, which describes the keys
// once for the writer and the reader); any other line is a log line. This reads it with
// runtime::ParseStepLine and copies the step's figures into the proto: loss when present (the
// last stage), phases only when the line had them (a child of an older build has none),
// eval_scores with the evaluation of a classifier. The line's rank, stage and replica are not
// copied (the task they come from says which), nor checkpoint_error (the task's log has it).
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
// number, got string", "step line: traffic[2].kind: \"x\" is not one of activation, ...").
StatusOr<geotrain::v1::StepReport> ParseStepLine(const std::string& line);

}  // namespace geotrain::worker
