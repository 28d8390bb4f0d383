// What the coordinator reads from a parsed job spec: the figures behind progress (tokens per
// step, total steps) and the restart limit.
//
// Plain functions over values; thread-safe.
#pragma once

#include "coordinator/step_aggregator.h"
#include "runtime/job_spec.h"

namespace geotrain::coordinator {

StepFigures StepFiguresOf(const runtime::JobSpec& spec);
// training.max_restarts: re-placements after failures before the job fails.
int MaxRestartsOf(const runtime::JobSpec& spec);

}  // namespace geotrain::coordinator
