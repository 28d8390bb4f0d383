// ParseStepLine: one line of a task's stdout -> the StepReport it carries.
//
// The task child prints one JSON object per step (runtime::StepResultJson: step, total_steps, lr,
// grad_norm, compressed, checkpointed, forward_relative_error, backward_relative_error, tokens,
// *_seconds, raw_bytes{forward,backward,dp,embedding}, wire_bytes{same}, phases{forward,
// backward,encode,decode,send,recv,sync,optimizer,data,eval,checkpoint}, traffic[{peer_stage,
// peer_replica, kind: activation|gradient|data_parallel|embedding, direction: sent|received,
// raw_bytes, wire_bytes, seconds, bits, relative_error, latency_seconds when known}], and loss /
// eval_loss when present). Any other line is a log line.
//
// Every key but "step" is optional, so lines of older builds (without phases, tokens, traffic)
// still parse; a traffic entry must name its peer, kind and direction. A key that is present
// with a wrong type or value is an error naming it. The line comes from a process that may be
// broken, so nothing here trusts it: every failure is a Status, never an exception or a crash.
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
