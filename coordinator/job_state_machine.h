// The job state machine (proto JobState): which transitions exist, in one pure function, so the
// coordinator core can refuse an impossible one as the broken invariant it would be.
//
//   queued -> placing -> running -> succeeded | failed | cancelled
//   placing | running -> recovering -> placing
//   any non-terminal state -> cancelled; placing | running | recovering -> failed
//
// Plain functions over values; thread-safe.
#pragma once

#include "geotrain/v1/job.pb.h"

namespace geotrain::coordinator {

// Succeeded, failed or cancelled: nothing happens to the job any more.
bool IsTerminalJobState(v1::JobState state);
// Placing, running or recovering: the job has (or is leaving) a placement on workers.
bool HoldsPlacement(v1::JobState state);
bool IsAllowedTransition(v1::JobState from, v1::JobState to);
// "queued", "placing", ... ("unspecified" for anything else).
const char* JobStateName(v1::JobState state);

}  // namespace geotrain::coordinator
