#include "coordinator/job_state_machine.h"

namespace geotrain::coordinator {

using v1::JobState;

bool IsTerminalJobState(JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

bool HoldsPlacement(JobState state) {
  return state == v1::JOB_STATE_PLACING || state == v1::JOB_STATE_RUNNING ||
         state == v1::JOB_STATE_RECOVERING;
}

bool IsAllowedTransition(JobState from, JobState to) {
  switch (from) {
    case v1::JOB_STATE_QUEUED:
      return to == v1::JOB_STATE_PLACING || to == v1::JOB_STATE_CANCELLED;
    case v1::JOB_STATE_PLACING:
      // Straight to succeeded is not allowed: a placement that finishes at once still passes
      // through running, so started_unix_ms and the event history stay meaningful.
      return to == v1::JOB_STATE_RUNNING || to == v1::JOB_STATE_RECOVERING ||
             to == v1::JOB_STATE_FAILED || to == v1::JOB_STATE_CANCELLED;
    case v1::JOB_STATE_RUNNING:
      return to == v1::JOB_STATE_SUCCEEDED || to == v1::JOB_STATE_FAILED ||
             to == v1::JOB_STATE_RECOVERING || to == v1::JOB_STATE_CANCELLED;
    case v1::JOB_STATE_RECOVERING:
      // Failed: a rank reported a permanent (configuration) error while the others stopped.
      return to == v1::JOB_STATE_PLACING || to == v1::JOB_STATE_FAILED ||
             to == v1::JOB_STATE_CANCELLED;
    default:
      return false;
  }
}

const char* JobStateName(JobState state) {
  switch (state) {
    case v1::JOB_STATE_QUEUED:
      return "queued";
    case v1::JOB_STATE_PLACING:
      return "placing";
    case v1::JOB_STATE_RUNNING:
      return "running";
    case v1::JOB_STATE_RECOVERING:
      return "recovering";
    case v1::JOB_STATE_SUCCEEDED:
      return "succeeded";
    case v1::JOB_STATE_FAILED:
      return "failed";
    case v1::JOB_STATE_CANCELLED:
      return "cancelled";
    default:
      return "unspecified";
  }
}

}  // namespace geotrain::coordinator
